package resp

import (
	"strconv"
	"testing"
)

// BenchmarkAppendBulkInt formats a CL.THROTTLE record's two numbers.
func BenchmarkAppendBulkInt(b *testing.B) {
	buf := make([]byte, 0, 64)
	for i := 0; i < b.N; i++ {
		buf = AppendBulkInt(buf[:0], 1795307408539667000+int64(i))
		buf = AppendBulkInt(buf, 1795307408539+int64(i))
	}
}

// BenchmarkAppendBulkIntStrconv is the same with strconv, for comparison.
func BenchmarkAppendBulkIntStrconv(b *testing.B) {
	buf := make([]byte, 0, 64)
	var num [20]byte
	for i := 0; i < b.N; i++ {
		buf = AppendBulk(buf[:0], strconv.AppendInt(num[:0], 1795307408539667000+int64(i), 10))
		buf = AppendBulk(buf, strconv.AppendInt(num[:0], 1795307408539+int64(i), 10))
	}
}
