package command

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMemoryUsage(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	usage := func(k string) int64 {
		reply := r.do("MEMORY", "USAGE", k)
		n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(reply, ":"), "\r\n"), 10, 64)
		require.NoError(t, err, "%q", reply)
		return n
	}
	r.do("SET", "i", "12")
	r.do("SET", "short", "abc")
	r.do("SET", "long", strings.Repeat("x", 1000))
	r.do("SET", "a-key-longer-than-twelve", "abc")
	for i, s := range []struct {
		k        string
		lo, hi   int64
		encoding string
	}{
		0: {"i", 32, 32, "int"},
		1: {"short", 32, 32, "embstr"},
		2: {"long", 1032, 1200, "raw"},
		3: {"a-key-longer-than-twelve", 32 + 24, 32 + 24, "embstr"},
	} {
		n := usage(s.k)
		require.True(t, n >= s.lo && n <= s.hi, "step %d: %s uses %d, want %d..%d", i, s.k, n, s.lo, s.hi)
		require.Equal(t, "$"+strconv.Itoa(len(s.encoding))+"\r\n"+s.encoding+"\r\n", r.do("OBJECT", "ENCODING", s.k), "step %d", i)
	}
	stats := r.do("MEMORY", "STATS")
	for _, f := range []string{"peak.allocated", "total.allocated", "keys.count\r\n:4\r\n", "db.0", "dataset.bytes", "fragmentation"} {
		require.Contains(t, stats, f)
	}
	require.Contains(t, r.do("MEMORY", "DOCTOR"), "Sam")
	require.Contains(t, memoryReport(memOverhead{total: 100 << 20, peak: 200 << 20}), " * Peak memory:")
	require.Contains(t, memoryReport(memOverhead{total: 100 << 20, peak: 100 << 20}), "I can't find any memory issue")
	require.Contains(t, memoryReport(memOverhead{total: 1 << 20}), "this instance is empty")
}
