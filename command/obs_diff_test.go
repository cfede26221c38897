package command

import (
	"fmt"
	"strings"
	"testing"
)

// TestDiffObservability compares with a real redis-server the replies of
// the introspection commands that do not depend on timing: help texts,
// errors, settings, and the parts of SLOWLOG, LATENCY, OBJECT and MEMORY
// that are the same on any server.
func TestDiffObservability(t *testing.T) {
	addr := redisAddr(t)
	ts := newTestServer(t)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			d := &differ{t: t, real: dialRaw(t, addr), ours: ts.raw(t), maxFails: 30}
			for _, r := range []*rawConn{d.real, d.ours} {
				r.do("HELLO", fmt.Sprint(proto))
			}
			for _, args := range obsDiffCases() {
				d.check(args)
			}
		})
	}
}

func obsDiffCases() [][]string {
	cases := [][]string{
		a("SLOWLOG", "HELP"), a("SLOWLOG"), a("SLOWLOG", "FOO"), a("SLOWLOG", "GET", "-2"),
		a("SLOWLOG", "GET", "x"), a("SLOWLOG", "GET", "1", "2"), a("SLOWLOG", "LEN", "x"), a("SLOWLOG", "RESET", "x"),
		a("LATENCY", "HELP"), a("LATENCY"), a("LATENCY", "FOO"), a("LATENCY", "HISTORY"),
		a("LATENCY", "HISTORY", "obs-none"), a("LATENCY", "GRAPH", "obs-none"), a("LATENCY", "RESET", "obs-none"),
		a("LATENCY", "HISTOGRAM", "obs-none"), a("LATENCY", "LATEST", "x"), a("LATENCY", "DOCTOR", "x"),
		a("CONFIG", "GET", "slowlog-log-slower-than"), a("CONFIG", "GET", "slowlog-max-len"),
		a("CONFIG", "GET", "latency-monitor-threshold"), a("CONFIG", "GET", "latency-tracking"),
		a("CONFIG", "GET", "latency-tracking-info-percentiles"),
		a("CONFIG", "SET", "slowlog-log-slower-than", "-2"), a("CONFIG", "SET", "slowlog-max-len", "-1"),
		a("CONFIG", "SET", "latency-monitor-threshold", "-1"), a("CONFIG", "SET", "latency-tracking", "maybe"),
		a("CONFIG", "SET", "latency-tracking-info-percentiles", "50 x"),
		a("CONFIG", "SET", "latency-tracking-info-percentiles", "100.1"),
		a("CONFIG", "SET", "latency-tracking-info-percentiles", "99.90 50.0"),
		a("CONFIG", "GET", "latency-tracking-info-percentiles"),
		a("CONFIG", "SET", "latency-tracking-info-percentiles", "50 99 99.9"),
		a("CLIENT", "PAUSE", "abc"), a("CLIENT", "PAUSE", "-1"), a("CLIENT", "PAUSE", "10", "foo"),
		a("CLIENT", "PAUSE", "10", "write", "all"), a("CLIENT", "UNPAUSE", "x"),
		a("CLIENT", "KILL", "TYPE", "x"), a("CLIENT", "KILL", "USER", "nobody"), a("CLIENT", "KILL", "1.2.3.4:5"),
		a("CLIENT", "KILL", "ID", "0"), a("CLIENT", "KILL", "ID", "999999999"), a("CLIENT", "KILL", "ID"),
		a("CLIENT", "KILL", "SKIPME", "maybe"), a("CLIENT", "KILL", "TYPE", "master", "ID", "1"),
		a("CLIENT", "NO-EVICT", "maybe"), a("CLIENT", "LIST", "TYPE", "x"), a("CLIENT", "LIST", "ID", "0"), a("CLIENT", "LIST", "ID", "-5"), a("CLIENT", "LIST", "ID", "x"),
		a("MULTI"), a("MONITOR"), a("EXEC"),
	}
	long := strings.Repeat("s", 45)
	big := []string{"RPUSH", "obs:biglist"}
	for i := range 1000 {
		big = append(big, fmt.Sprintf("element-%04d", i))
	}
	bighash := []string{"HSET", "obs:bighash"}
	for i := range 200 {
		bighash = append(bighash, fmt.Sprint("f", i), "v")
	}
	cases = append(cases,
		a("DEL", "obs:int", "obs:int2", "obs:neg", "obs:str", "obs:s44", "obs:long", "obs:biglist", "obs:hash", "obs:bighash", "obs:z"),
		a("SET", "obs:int", "123"), a("SET", "obs:int2", "12345"), a("SET", "obs:neg", "-5"), a("SET", "obs:str", "hello"),
		a("SET", "obs:s44", long[:44]), a("SET", "obs:long", long), big, a("HSET", "obs:hash", "f", "v"), bighash,
		a("ZADD", "obs:z", "1", "m"),
	)
	for _, k := range []string{"obs:int", "obs:int2", "obs:neg", "obs:str", "obs:s44", "obs:long", "obs:biglist", "obs:hash", "obs:bighash", "obs:z", "obs:none"} {
		cases = append(cases, a("OBJECT", "ENCODING", k), a("OBJECT", "REFCOUNT", k))
	}
	cases = append(cases,
		a("OBJECT", "ENCODING"), a("OBJECT", "REFCOUNT", "a", "b"), a("MEMORY", "USAGE", "obs:none"),
		a("MEMORY", "USAGE", "obs:str", "SAMPLES", "x"), a("MEMORY", "USAGE", "obs:str", "SAMPLES", "-1"),
		a("MEMORY", "USAGE", "obs:str", "foo", "1"), a("MEMORY", "USAGE", "obs:str", "SAMPLES"),
		a("MEMORY", "USAGE", "obs:none", "SAMPLES", "0"), a("MEMORY", "USAGE"), a("MEMORY", "STATS", "x"),
		a("MEMORY", "DOCTOR", "x"),
		a("DEL", "obs:int", "obs:int2", "obs:neg", "obs:str", "obs:s44", "obs:long", "obs:biglist", "obs:hash", "obs:bighash", "obs:z"),
	)
	return cases
}
