package command

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// windowStep is one call at a clock offset from the start.
type windowStep struct {
	at   time.Duration
	args []any // after the command name
	want []int64
}

func runWindowSteps(t *testing.T, ts *testServer, rdb *redis.Client, cmd string, steps []windowStep) {
	t.Helper()
	start := ts.clock.Now()
	for i, st := range steps {
		ts.clock.ns.Store(start + int64(st.at))
		got, err := rdb.Do(ctx, append([]any{cmd}, st.args...)...).Int64Slice()
		if err != nil {
			t.Errorf("step %d %v: %v", i, st.args, err)
			continue
		}
		if fmt.Sprint(got) != fmt.Sprint(st.want) {
			t.Errorf("step %d %v: have %v, want %v", i, st.args, got, st.want)
		}
	}
}

// TestSlThrottleSequence: max 3 per second, then MINGAP, QUANTITY and
// RECORDBLOCKED, in both protocols.
func TestSlThrottleSequence(t *testing.T) {
	ms := time.Millisecond
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			ts := newTestServer(t)
			// Start on a millisecond boundary so that the µs log and the ms
			// replies line up exactly.
			ts.clock.ns.Store(ts.clock.Now() / 1e6 * 1e6)
			rdb := ts.client(t, proto)
			runWindowSteps(t, ts, rdb, "SL.THROTTLE", []windowStep{
				0:  {0, []any{"k", 3, 1000}, []int64{0, 3, 2, -1, 1000}},
				1:  {100 * ms, []any{"k", 3, 1000}, []int64{0, 3, 1, -1, 1000}},
				2:  {200 * ms, []any{"k", 3, 1000}, []int64{0, 3, 0, -1, 1000}},
				3:  {300 * ms, []any{"k", 3, 1000}, []int64{1, 3, 0, 700, 900}},
				4:  {999 * ms, []any{"k", 3, 1000}, []int64{1, 3, 0, 1, 201}},
				5:  {1000 * ms, []any{"k", 3, 1000}, []int64{0, 3, 0, -1, 1000}}, // the entry at 0 left exactly now
				6:  {1050 * ms, []any{"k", 3, 1000, "QUANTITY", 2}, []int64{1, 3, 0, 150, 950}},
				7:  {1050 * ms, []any{"k", 3, 1000, "QUANTITY", 0}, []int64{0, 3, 0, -1, 950}},
				8:  {1050 * ms, []any{"k", 3, 1000, "QUANTITY", 4}, []int64{1, 3, 0, -1, 950}}, // never possible
				9:  {1050 * ms, []any{"k", 3, 1000, "QUANTITY", 2, "RECORDBLOCKED"}, []int64{1, 3, 0, 1000, 1000}},
				10: {3000 * ms, []any{"k", 3, 1000, "MINGAP", 50}, []int64{0, 3, 2, -1, 1000}},
				11: {3010 * ms, []any{"k", 3, 1000, "MINGAP", 50}, []int64{1, 3, 2, 40, 990}},
				12: {3050 * ms, []any{"k", 3, 1000, "mingap", 50, "quantity", 1}, []int64{0, 3, 1, -1, 1000}},
				13: {3050*ms + 500*time.Microsecond, []any{"k", 3, 1000, "MINGAP", 50}, []int64{1, 3, 1, 50, 1000}}, // 49.5 ms rounds up
			})
		})
	}
}

// TestSlThrottleKey: TYPE, the deadline, expiry when the log empties, and
// WRONGTYPE.
func TestSlThrottleKey(t *testing.T) {
	ts := newTestServer(t)
	ts.clock.ns.Store(ts.clock.Now() / 1e6 * 1e6)
	r := ts.raw(t)
	require.Equal(t, "*5\r\n:0\r\n:2\r\n:1\r\n:-1\r\n:5000\r\n", r.do("SL.THROTTLE", "k", "2", "5000"))
	require.Equal(t, "+sllog\r\n", r.do("TYPE", "k"))
	require.Equal(t, ":5000\r\n", r.do("PTTL", "k"))
	ts.clock.Advance(2 * time.Second)
	r.do("SL.THROTTLE", "k", "2", "5000")
	require.Equal(t, ":5000\r\n", r.do("PTTL", "k"), "the deadline follows the newest entry")
	ts.clock.Advance(5 * time.Second)
	require.Equal(t, ":0\r\n", r.do("EXISTS", "k"), "expired with its last entry")
	// A refused call on a missing key records nothing and creates nothing.
	require.Equal(t, "*5\r\n:1\r\n:1\r\n:1\r\n:-1\r\n:0\r\n", r.do("SL.THROTTLE", "k", "1", "5000", "QUANTITY", "2"))
	require.Equal(t, ":0\r\n", r.do("EXISTS", "k"))
	r.do("SET", "s", "v")
	require.Equal(t, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", r.do("SL.THROTTLE", "s", "1", "1000"))
	r.do("SW.THROTTLE", "w", "1", "1000")
	require.Equal(t, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", r.do("SL.THROTTLE", "w", "1", "1000"))
}

// TestSlThrottleNoOpChangesNothing: a refused call that neither trims nor
// records leaves the shard's change counter alone (the journal logs
// nothing for it).
func TestSlThrottleNoOpChangesNothing(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	r.do("SL.THROTTLE", "k", "1", "60000")
	changes := func() uint64 {
		i := ts.store.ShardIndex([]byte("k"))
		ts.store.Lock(i)
		defer ts.store.Unlock(i)
		return ts.store.Changes(i)
	}
	before := changes()
	require.True(t, strings.HasPrefix(r.do("SL.THROTTLE", "k", "1", "60000"), "*5\r\n:1\r\n"))
	require.Equal(t, before, changes())
	r.do("SL.THROTTLE", "k", "1", "60000", "RECORDBLOCKED")
	require.NotEqual(t, before, changes())
}

// TestSlThrottleConcurrent: 50 callers over several connections, max 10:
// exactly 10 pass.
func TestSlThrottleConcurrent(t *testing.T) {
	for _, cmd := range []string{"SL.THROTTLE", "SW.THROTTLE"} {
		for _, proto := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s/RESP%d", cmd, proto), func(t *testing.T) {
				ts := newTestServer(t)
				clients := make([]*redis.Client, 5)
				for i := range clients {
					clients[i] = ts.client(t, proto)
				}
				var allowed atomic.Int64
				var wg sync.WaitGroup
				for i := 0; i < 50; i++ {
					wg.Add(1)
					go func(i int) {
						defer wg.Done()
						res, err := clients[i%len(clients)].Do(ctx, cmd, "shared", 10, 60000).Int64Slice()
						if err != nil {
							t.Error(err)
							return
						}
						if res[0] == 0 {
							allowed.Add(1)
						}
					}(i)
				}
				wg.Wait()
				require.Equal(t, int64(10), allowed.Load())
			})
		}
	}
}

// TestWindowErrors: every argument is checked before the key is touched.
func TestWindowErrors(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	const maxErr = "-ERR max must be an integer between 1 and 9007199254740992\r\n"
	const winErr = "-ERR window_ms must be an integer between 1 and 1099511627776\r\n"
	const qErr = "-ERR QUANTITY must be an integer between 0 and 9007199254740992\r\n"
	const gapErr = "-ERR MINGAP must be an integer between 0 and 1099511627776\r\n"
	tests := []struct {
		args []string
		want string
	}{
		0:  {[]string{"SL.THROTTLE", "k", "10"}, "-ERR wrong number of arguments for 'sl.throttle' command\r\n"},
		1:  {[]string{"SL.THROTTLE", "k", "x", "1000"}, maxErr},
		2:  {[]string{"SL.THROTTLE", "k", "0", "1000"}, maxErr},
		3:  {[]string{"SL.THROTTLE", "k", "-1", "1000"}, maxErr},
		4:  {[]string{"SL.THROTTLE", "k", "9007199254740993", "1000"}, maxErr},
		5:  {[]string{"SL.THROTTLE", "k", "1.5", "1000"}, maxErr},
		6:  {[]string{"SL.THROTTLE", "k", "10", "0"}, winErr},
		7:  {[]string{"SL.THROTTLE", "k", "10", "-5"}, winErr},
		8:  {[]string{"SL.THROTTLE", "k", "10", "99999999999999999999"}, winErr},
		9:  {[]string{"SL.THROTTLE", "k", "10", "1099511627777"}, winErr},
		10: {[]string{"SL.THROTTLE", "k", "10", "1000", "QUANTITY"}, "-ERR syntax error\r\n"},
		11: {[]string{"SL.THROTTLE", "k", "10", "1000", "QUANTITY", "-1"}, qErr},
		12: {[]string{"SL.THROTTLE", "k", "10", "1000", "QUANTITY", "x"}, qErr},
		13: {[]string{"SL.THROTTLE", "k", "10", "1000", "MINGAP", "-1"}, gapErr},
		14: {[]string{"SL.THROTTLE", "k", "10", "1000", "MINGAP"}, "-ERR syntax error\r\n"},
		15: {[]string{"SL.THROTTLE", "k", "10", "1000", "BOGUS"}, "-ERR syntax error\r\n"},
		16: {[]string{"SL.THROTTLE", "k", "10", "1000", "RECORDBLOCKED", "QUANTITY", "1", "x"}, "-ERR syntax error\r\n"},
		17: {[]string{"SW.THROTTLE", "k", "10", "1000", "MINGAP", "5"}, "-ERR syntax error\r\n"},
		18: {[]string{"SW.THROTTLE", "k", "10", "1000", "RECORDBLOCKED"}, "-ERR syntax error\r\n"},
		19: {[]string{"SW.THROTTLE", "k", "0", "1000"}, maxErr},
		20: {[]string{"SW.THROTTLE", "k", "10", "0"}, winErr},
		21: {[]string{"SW.THROTTLE", "k", "10", "1000", "QUANTITY", "9007199254740993"}, qErr},
		22: {[]string{"SW.THROTTLE", "k"}, "-ERR wrong number of arguments for 'sw.throttle' command\r\n"},
	}
	for i, tt := range tests {
		if have := r.do(tt.args...); have != tt.want {
			t.Errorf("test %d %q: have %q, want %q", i, tt.args, have, tt.want)
		}
	}
	require.Equal(t, ":0\r\n", r.do("EXISTS", "k"), "no error created the key")
}

// TestSwThrottleSequence: max 10 per second (windows aligned to the epoch).
func TestSwThrottleSequence(t *testing.T) {
	ms := time.Millisecond
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			ts := newTestServer(t)
			ts.clock.ns.Store(ts.clock.Now() / 1e9 * 1e9) // a window boundary
			rdb := ts.client(t, proto)
			runWindowSteps(t, ts, rdb, "SW.THROTTLE", []windowStep{
				0: {0, []any{"k", 10, 1000, "QUANTITY", 4}, []int64{0, 10, 6, -1, 2000}},
				1: {500 * ms, []any{"k", 10, 1000, "QUANTITY", 6}, []int64{0, 10, 0, -1, 1500}},
				2: {999 * ms, []any{"k", 10, 1000}, []int64{1, 10, 0, 101, 1001}},
				3: {1000 * ms, []any{"k", 10, 1000}, []int64{1, 10, 0, 100, 1000}},
				4: {1100 * ms, []any{"k", 10, 1000}, []int64{0, 10, 0, -1, 1900}},
				5: {1550 * ms, []any{"k", 10, 1000, "QUANTITY", 2}, []int64{0, 10, 2, -1, 1450}},
				6: {5000 * ms, []any{"k", 10, 1000, "QUANTITY", 0}, []int64{0, 10, 10, -1, 0}},
			})
			r := ts.raw(t)
			require.Equal(t, ":0\r\n", r.do("EXISTS", "k"), "an empty counter is not kept")
			r.do("SW.THROTTLE", "k", "10", "1000")
			require.Equal(t, "+swcounter\r\n", r.do("TYPE", "k"))
			require.Equal(t, ":2000\r\n", r.do("PTTL", "k"))
			ts.clock.Advance(2 * time.Second)
			require.Equal(t, ":0\r\n", r.do("EXISTS", "k"))
		})
	}
}

// FuzzWindowArgs: argument parsing never panics, and what it accepts is
// within the documented bounds.
func FuzzWindowArgs(f *testing.F) {
	f.Add("10 1000 MINGAP 5 QUANTITY 2 RECORDBLOCKED", true)
	f.Add("10 1000 QUANTITY", false)
	f.Add("0 -1", true)
	f.Add("9007199254740992 1099511627776 quantity 9007199254740992", false)
	f.Fuzz(func(t *testing.T, line string, sl bool) {
		words := strings.Fields(line)
		if len(words) < 2 {
			return
		}
		args := [][]byte{[]byte("x.throttle"), []byte("k")}
		for _, w := range words {
			args = append(args, []byte(w))
		}
		o, msg := parseWindow(args, sl)
		if msg != "" {
			if msg != errSyntax && !strings.Contains(msg, " must be an integer between ") {
				t.Fatalf("unexpected error %q", msg)
			}
			return
		}
		if o.max < 1 || o.max > maxWindowCount || o.window < 1 || o.window > maxWindowMs ||
			o.quantity < 0 || o.quantity > maxWindowCount || o.minGap < 0 || o.minGap > maxWindowMs {
			t.Fatalf("out of bounds: %+v", o)
		}
		if !sl && (o.minGap != 0 || o.recordBlocked) {
			t.Fatalf("SL option accepted by SW: %+v", o)
		}
	})
}

// BenchmarkSlThrottle runs SL.THROTTLE through the dispatcher in parallel
// over 1024 keys (max 100 per second): the command path without the
// network. Compare with BenchmarkZsetRecipe, the MULTI recipe it replaces.
func BenchmarkSlThrottle(b *testing.B) {
	for _, cmd := range []string{"SL.THROTTLE", "SW.THROTTLE"} {
		b.Run(cmd, func(b *testing.B) {
			srv := benchServer(b)
			reqs := make([][][]byte, 1024)
			for i := range reqs {
				reqs[i] = [][]byte{[]byte(cmd), benchKey(i), []byte("100"), []byte("1000")}
			}
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				c := benchConn(b, srv)
				i := 0
				for pb.Next() {
					c.dispatch(reqs[i&1023])
					c.Out = c.Out[:0]
					i++
				}
			})
		})
	}
}

// RECORDBLOCKED with huge quantities: every call stays refused, also past
// 1024 calls, where the log's count would overflow int64.
func TestSlThrottleRecordBlockedHugeQuantity(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	for i := 1; i <= 1100; i++ {
		got := r.do("SL.THROTTLE", "k", "1", "100000", "QUANTITY", "9007199254740992", "RECORDBLOCKED")
		if !strings.HasPrefix(got, "*5\r\n:1\r\n:1\r\n:0\r\n") {
			t.Fatalf("call %d: %q, want limited with remaining 0", i, got)
		}
	}
}
