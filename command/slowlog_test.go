package command

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// nopPeer is the Peer of a Client driven directly by a test.
type nopPeer struct{}

func (nopPeer) Kill()                   {}
func (nopPeer) Wake()                   {}
func (nopPeer) Buffers() (int64, int64) { return 0, 0 }
func (nopPeer) Fd() int                 { return -1 }

// direct returns a Client of ts's engine that a test drives with run,
// advancing the fake clock between commands to give them durations.
func (ts *testServer) direct() *Client {
	c := &Client{}
	ts.srv.InitClient(c, nopPeer{}, 1000+ts.nextID.Add(1), "10.0.0.1:5000", "127.0.0.1:6380")
	return c
}

// run runs args as one command that takes d, and returns its reply.
func (ts *testServer) run(c *Client, d time.Duration, args ...string) string {
	bs := make([][]byte, len(args))
	for i, a := range args {
		bs[i] = []byte(a)
	}
	c.Out = c.Out[:0]
	c.dispatch(bs)
	ts.clock.Advance(d)
	c.EndBatch()
	return string(c.Out)
}

func TestSlowlog(t *testing.T) {
	ts := newTestServer(t, "slowlog-log-slower-than", "5000")
	c := ts.direct()
	require.Equal(t, "+OK\r\n", ts.run(c, 6*time.Millisecond, "CLIENT", "SETNAME", "worker"))
	ts.run(c, 4999*time.Microsecond, "GET", "fast")
	ts.run(c, 5*time.Millisecond, "SET", "k", strings.Repeat("v", 130))
	args := []string{"DEL"}
	for i := range 40 {
		args = append(args, fmt.Sprint("k", i))
	}
	ts.run(c, 7*time.Millisecond, args...)
	ts.run(c, 8*time.Millisecond, "AUTH", "user", "secret")
	r := ts.raw(t)
	require.Equal(t, ":4\r\n", r.do("SLOWLOG", "LEN"))
	now := ts.clock.Now() / 1e9
	_ = now
	got := r.do("SLOWLOG", "GET", "3")
	del := "*32\r\n$3\r\nDEL\r\n"
	for i := range 30 {
		del += fmt.Sprintf("$%d\r\nk%d\r\n", len(fmt.Sprint("k", i)), i)
	}
	del += "$23\r\n... (10 more arguments)\r\n"
	want := []string{
		"*6\r\n:3\r\n:" + fmt.Sprint(entryTime(t, got, 0)) + "\r\n:8000\r\n*3\r\n$4\r\nAUTH\r\n$10\r\n(redacted)\r\n$10\r\n(redacted)\r\n$13\r\n10.0.0.1:5000\r\n$6\r\nworker\r\n",
		"*6\r\n:2\r\n:" + fmt.Sprint(entryTime(t, got, 1)) + "\r\n:7000\r\n" + del + "$13\r\n10.0.0.1:5000\r\n$6\r\nworker\r\n",
		"*6\r\n:1\r\n:" + fmt.Sprint(entryTime(t, got, 2)) + "\r\n:5000\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$146\r\n" + strings.Repeat("v", 128) + "... (2 more bytes)\r\n$13\r\n10.0.0.1:5000\r\n$6\r\nworker\r\n",
	}
	require.Equal(t, "*3\r\n"+strings.Join(want, ""), got)
	for i, s := range []struct {
		args []string
		want string
	}{
		0: {a("SLOWLOG", "GET", "-1"), "*4\r\n"},
		1: {a("SLOWLOG", "GET", "0"), "*0\r\n"},
		2: {a("SLOWLOG", "GET", "-2"), errReply(errSlowlogCount)},
		3: {a("SLOWLOG", "GET", "x"), errReply(errSlowlogCount)},
		4: {a("SLOWLOG", "LEN", "x"), "-ERR wrong number of arguments for 'slowlog|len' command\r\n"},
		5: {a("SLOWLOG", "FOO"), "-ERR unknown subcommand 'FOO'. Try SLOWLOG HELP.\r\n"},
		6: {a("CONFIG", "SET", "slowlog-max-len", "2"), "+OK\r\n"},
		7: {a("SLOWLOG", "LEN"), ":4\r\n"}, // trimmed at the next entry, as Redis
	} {
		have := r.do(s.args...)
		if i == 0 {
			have = have[:4]
		}
		require.Equal(t, s.want, have, "step %d: %q", i, s.args)
	}
	ts.run(c, 9*time.Millisecond, "PING")
	require.Equal(t, ":2\r\n", r.do("SLOWLOG", "LEN"))
	require.Contains(t, r.do("SLOWLOG", "GET", "1"), "*6\r\n:4\r\n")
	require.Equal(t, "+OK\r\n", r.do("SLOWLOG", "RESET"))
	require.Equal(t, ":0\r\n", r.do("SLOWLOG", "LEN"))
	// Off: nothing is logged, however slow.
	require.Equal(t, "+OK\r\n", r.do("CONFIG", "SET", "slowlog-log-slower-than", "-1"))
	ts.run(c, time.Second, "PING")
	require.Equal(t, ":0\r\n", r.do("SLOWLOG", "LEN"))
}

// entryTime returns the unix time of the i-th entry of a SLOWLOG GET reply.
func entryTime(t *testing.T, reply string, i int) int64 {
	t.Helper()
	parts := strings.Split(reply, "*6\r\n")
	require.Greater(t, len(parts), i+1)
	var id, unix int64
	_, err := fmt.Sscanf(parts[i+1], ":%d\r\n:%d\r\n", &id, &unix)
	require.NoError(t, err)
	return unix
}

func TestLatencyMonitor(t *testing.T) {
	ts := newTestServer(t)
	c := ts.direct()
	r := ts.raw(t)
	require.Equal(t, "*0\r\n", r.do("LATENCY", "LATEST"))
	require.Contains(t, r.do("LATENCY", "DOCTOR"), "I'm sorry, Dave, I can't do that.")
	ts.run(c, 50*time.Millisecond, "PING") // threshold 0: not recorded
	require.Equal(t, "*0\r\n", r.do("LATENCY", "LATEST"))
	require.Equal(t, "+OK\r\n", r.do("CONFIG", "SET", "latency-monitor-threshold", "10"))
	ts.run(c, 9*time.Millisecond, "PING")
	ts.run(c, 30*time.Millisecond, "PING")
	ts.run(c, 20*time.Millisecond, "KEYS", "*")
	ts.srv.LatencyEvent("aof-write", 5*time.Millisecond) // under the threshold
	ts.srv.LatencyEvent("aof-write", 15*time.Millisecond)
	latest := r.do("LATENCY", "LATEST")
	require.Regexp(t, `^\*3\r\n\*4\r\n\$12\r\nfast-command\r\n:\d+\r\n:30\r\n:30\r\n\*4\r\n\$7\r\ncommand\r\n:\d+\r\n:20\r\n:20\r\n\*4\r\n\$9\r\naof-write\r\n:\d+\r\n:15\r\n:15\r\n$`, latest)
	require.Regexp(t, `^\*1\r\n\*2\r\n:\d+\r\n:30\r\n$`, r.do("LATENCY", "HISTORY", "fast-command"))
	require.Equal(t, "*0\r\n", r.do("LATENCY", "HISTORY", "nope"))
	require.Equal(t, errReply(sprintf(errLatencyNoSamples, "nope")), r.do("LATENCY", "GRAPH", "nope"))
	graph := r.do("LATENCY", "GRAPH", "command")
	require.Contains(t, graph, "command - high 20 ms, low 20 ms (all time high 20 ms)\n"+strings.Repeat("-", 80)+"\n")
	doctor := r.do("LATENCY", "DOCTOR")
	require.Contains(t, doctor, "1. fast-command: 1 latency spikes (average 30ms, mean deviation 0ms, period 1.00 sec). Worst all time event 30ms.")
	require.Contains(t, doctor, "- Check your Slow Log")
	require.Equal(t, ":2\r\n", r.do("LATENCY", "RESET", "COMMAND", "aof-write", "nope"))
	require.Equal(t, ":1\r\n", r.do("LATENCY", "RESET"))
	require.Equal(t, "*0\r\n", r.do("LATENCY", "LATEST"))
	require.Equal(t, "-ERR unknown subcommand 'x'. Try LATENCY HELP.\r\n", r.do("LATENCY", "x"))
	require.Equal(t, "-ERR wrong number of arguments for 'latency|history' command\r\n", r.do("LATENCY", "HISTORY"))
}

func TestLatencyHistogramBuckets(t *testing.T) {
	prev := int64(-1)
	for i := range LatencyBuckets {
		b := LatencyBucketBound(i)
		require.Greater(t, b, prev, "bucket %d", i)
		require.Equal(t, i, latencyBucket(b), "bound of bucket %d", i)
		require.Equal(t, i, latencyBucket(prev+1), "first value of bucket %d", i)
		if b > 64 {
			require.LessOrEqual(t, float64(b-prev)/float64(prev+1), 1/16.0, "bucket %d width", i)
		}
		prev = b
	}
	require.Equal(t, LatencyBuckets-1, latencyBucket(1<<62))
	require.Equal(t, 0, latencyBucket(-5))
}

func TestLatencyTracking(t *testing.T) {
	ts := newTestServer(t)
	ts.srv.resetStats()
	c := ts.direct()
	for i := range 100 {
		ts.run(c, time.Duration(i+1)*time.Microsecond, "GET", "k")
	}
	ts.run(c, 10*time.Millisecond, "SET", "k", "v")
	r := ts.raw(t)
	text := r.do("INFO", "latencystats")
	f := infoFields(t, text[strings.Index(text, "\r\n")+2:])
	require.Equal(t, "p50=51.199,p99=102.399,p99.9=102.399", f["latency_percentiles_usec_get"])
	require.Equal(t, "p50=10485.759,p99=10485.759,p99.9=10485.759", f["latency_percentiles_usec_set"])
	require.Equal(t, "+OK\r\n", r.do("CONFIG", "SET", "latency-tracking-info-percentiles", "0 100"))
	require.Contains(t, r.do("INFO", "latencystats"), "latency_percentiles_usec_get:p0=1.023,p100=102.399\r\n")
	require.Equal(t, errReply(sprintf(errConfigSet, "latency-tracking-info-percentiles", "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]")),
		r.do("CONFIG", "SET", "latency-tracking-info-percentiles", "101"))
	h := r.do("LATENCY", "HISTOGRAM", "set", "nope", "SET")
	require.Equal(t, "*2\r\n$3\r\nset\r\n*4\r\n$5\r\ncalls\r\n:1\r\n$14\r\nhistogram_usec\r\n*2\r\n:17825\r\n:1\r\n", h)
	counts := ts.srv.LatencyHistogram("get", nil)
	require.Len(t, counts, LatencyBuckets)
	var total uint64
	for _, n := range counts {
		total += n
	}
	require.EqualValues(t, 100, total)
	require.Nil(t, ts.srv.LatencyHistogram("nope", nil))
	var names []string
	ts.srv.EachLatencyHistogram(func(name string, counts []uint64) {
		require.Len(t, counts, LatencyBuckets)
		names = append(names, name)
	})
	require.Contains(t, names, "get")
	require.Contains(t, names, "set")
	// Off: nothing more is counted; RESETSTAT clears the histograms.
	require.Equal(t, "+OK\r\n", r.do("CONFIG", "SET", "latency-tracking", "no"))
	ts.run(c, time.Microsecond, "GET", "k")
	require.Len(t, ts.srv.LatencyHistogram("get", nil), LatencyBuckets)
	require.Equal(t, "+OK\r\n", r.do("CONFIG", "RESETSTAT"))
	require.Nil(t, ts.srv.LatencyHistogram("get", nil))
	require.NotContains(t, r.do("INFO", "latencystats"), "usec_get")
}

// LATENCY GRAPH draws as Redis's sparkline: 4 rows, "_o#" and '|' fill,
// a blank line, then the ages written downwards.
func TestLatencyGraph(t *testing.T) {
	var ts latencySeries
	ts.samples[0] = latencySample{995, 10}
	ts.samples[1] = latencySample{999, 20}
	ts.idx, ts.max = 2, 20
	want := "command - high 20 ms, low 10 ms (all time high 20 ms)\n" + strings.Repeat("-", 80) + "\n" +
		" #\n |\n |\n_|\n  \n51\nss\n"
	require.Equal(t, want, latencyGraph("command", &ts, 1000))
}

// TestRedactionsMatchRedis: the arguments SLOWLOG shows for commands with
// credentials are the ones redis-server shows (MONITOR hides the same).
func TestRedactionsMatchRedis(t *testing.T) {
	r := dialRaw(t, redisAddr(t))
	require.Equal(t, "+OK\r\n", r.do("CONFIG", "SET", "slowlog-log-slower-than", "0"))
	defer r.do("CONFIG", "SET", "slowlog-log-slower-than", "10000")
	for _, args := range [][]string{
		{"AUTH", "pw"},
		{"AUTH", "user", "pw"},
		{"AUTH", "a", "b", "c"},
		{"HELLO", "2", "AUTH", "user", "pw", "SETNAME", "x"},
		{"HELLO", "2", "SETNAME", "auth", "AUTH", "user", "pw"},
		{"HELLO", "2", "AUTH", "user"},
		{"HELLO", "2", "BOGUS", "AUTH", "user", "pw"},
		{"MIGRATE", "127.0.0.1", "1", "", "0", "100", "COPY", "AUTH", "pw", "KEYS", "a", "b"},
		{"MIGRATE", "127.0.0.1", "1", "", "0", "100", "AUTH2", "user", "pw", "REPLACE", "KEYS", "a"},
		{"MIGRATE", "127.0.0.1", "1", "k", "0", "100", "AUTH"},
		{"MIGRATE", "127.0.0.1", "1", "k", "0", "100", "AUTH", "pw", "BOGUS", "AUTH", "pw2"},
	} {
		require.Equal(t, "+OK\r\n", r.do("SLOWLOG", "RESET"))
		r.do(args...)
		bs := make([][]byte, len(args))
		for i, a := range args {
			bs[i] = []byte(a)
		}
		want := fmt.Sprintf("*%d\r\n", len(args))
		for i, a := range args {
			if slices.Contains(redactions(bs), i) {
				a = "(redacted)"
			}
			want += fmt.Sprintf("$%d\r\n%s\r\n", len(a), a)
		}
		require.Contains(t, r.do("SLOWLOG", "GET", "1"), want, "%q", args)
	}
}
