package command

import (
	"math"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// parseCellInt accepts exactly what strconv.ParseInt(s, 10, 64) accepts
// (redis-cell's Rust i64::from_str rules), at any length, with the same
// value.
func FuzzParseCellInt(f *testing.F) {
	for _, s := range []string{"0", "+0", "-0", "007", "+15", "-15", "", "+", "-", " 1", "1 ", "1_0", "0x10",
		"9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
		"+9223372036854775807", "18446744073709551616", "99999999999999999999", "00000000000000000001",
		"000000000000000000005", "+00000000000000000005", "-0000000000000000000000009223372036854775808", "0000000000000000000000009223372036854775808"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseCellInt([]byte(s))
		want, err := strconv.ParseInt(s, 10, 64)
		wantOK := err == nil
		if ok != wantOK || ok && got != want {
			t.Fatalf("parseCellInt(%q) = %d, %v; strconv: %d, %v", s, got, ok, want, err)
		}
	})
}

func TestWriteIntMatchesRedcon(t *testing.T) {
	for _, n := range []int64{0, 1, 9, 10, -1, -9, 42, 1 << 40, math.MaxInt64, math.MinInt64} {
		c := &Client{}
		c.WriteInt(n)
		require.Equal(t, ":"+strconv.FormatInt(n, 10)+"\r\n", string(c.Out))
	}
}
