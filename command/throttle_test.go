package command

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// throttleStep is one CL.THROTTLE call at a clock offset from the start.
type throttleStep struct {
	at   time.Duration // since the first call
	args []any         // after the command name
	want []int64
	err  string
}

func runThrottleSteps(t *testing.T, rdb *redis.Client, ts *testServer, steps []throttleStep) {
	t.Helper()
	runThrottleStepsOf(t, rdb, ts, "CL.THROTTLE", steps)
}

// runThrottleStepsOf is runThrottleSteps for command cmd.
func runThrottleStepsOf(t *testing.T, rdb *redis.Client, ts *testServer, cmd string, steps []throttleStep) {
	t.Helper()
	start := ts.clock.Now()
	for i, st := range steps {
		ts.clock.ns.Store(start + int64(st.at))
		got, err := rdb.Do(ctx, append([]any{cmd}, st.args...)...).Int64Slice()
		if st.err != "" {
			if err == nil || err.Error() != st.err {
				t.Errorf("step %d %v: have err %v, want %q", i, st.args, err, st.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("step %d %v: unexpected error %v", i, st.args, err)
			continue
		}
		if fmt.Sprint(got) != fmt.Sprint(st.want) {
			t.Errorf("step %d %v: have %v, want %v", i, st.args, got, st.want)
		}
	}
}

func TestClThrottleSpecVectors(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			ts := newTestServer(t)
			rdb := ts.client(t, proto)
			s := time.Second
			// §7 A: burst 5, 1 per 60 s.
			runThrottleSteps(t, rdb, ts, []throttleStep{
				{0, []any{"a", 5, 1, 60}, []int64{0, 6, 5, -1, 60}, ""},
				{0, []any{"a", 5, 1, 60}, []int64{0, 6, 4, -1, 120}, ""},
				{0, []any{"a", 5, 1, 60}, []int64{0, 6, 3, -1, 180}, ""},
				{0, []any{"a", 5, 1, 60}, []int64{0, 6, 2, -1, 240}, ""},
				{0, []any{"a", 5, 1, 60}, []int64{0, 6, 1, -1, 300}, ""},
				{0, []any{"a", 5, 1, 60}, []int64{0, 6, 0, -1, 360}, ""},
				{0, []any{"a", 5, 1, 60}, []int64{1, 6, 0, 60, 360}, ""},
				{0, []any{"a", 5, 1, 60}, []int64{1, 6, 0, 60, 360}, ""},
				{60 * s, []any{"a", 5, 1, 60}, []int64{0, 6, 0, -1, 360}, ""},
			})
			// §7 B: burst 9, 10 per hour, quantities.
			runThrottleSteps(t, rdb, ts, []throttleStep{
				{0, []any{"b", 9, 10, 3600, 3}, []int64{0, 10, 7, -1, 1080}, ""},
				{0, []any{"b", 9, 10, 3600, 0}, []int64{0, 10, 7, -1, 1080}, ""},
				{0, []any{"b", 9, 10, 3600, 7}, []int64{0, 10, 0, -1, 3600}, ""},
				{0, []any{"b", 9, 10, 3600, 1}, []int64{1, 10, 0, 360, 3600}, ""},
				{0, []any{"b", 9, 10, 3600, 0}, []int64{0, 10, 0, -1, 3600}, ""},
				{0, []any{"b", 9, 10, 3600, 10}, []int64{1, 10, 0, 3600, 3600}, ""},
				{0, []any{"b", 9, 10, 3600, 11}, []int64{1, 10, 0, -1, 3600}, ""},
			})
			// §7 C.
			runThrottleSteps(t, rdb, ts, []throttleStep{
				{0, []any{"c", 4, 1, 60, 6}, []int64{1, 5, 5, -1, 0}, ""},
				{0, []any{"c", 4, 1, 60, 5}, []int64{0, 5, 0, -1, 300}, ""},
				{0, []any{"c", 4, 1, 60, 1}, []int64{1, 5, 0, 60, 300}, ""},
				{0, []any{"c", 4, 1, 60, 6}, []int64{1, 5, 0, -1, 300}, ""},
			})
			// §7 D: documentation examples.
			runThrottleSteps(t, rdb, ts, []throttleStep{
				{0, []any{"user123", 15, 30, 60}, []int64{0, 16, 15, -1, 2}, ""},
				{0, []any{"u37", 5, 5, 3600}, []int64{0, 6, 5, -1, 720}, ""},
				{0, []any{"e2e", 0, 1, 2, 1}, []int64{0, 1, 0, -1, 2}, ""},
				{0, []any{"e2e", 0, 1, 2, 1}, []int64{1, 1, 0, 2, 2}, ""},
				{2 * s, []any{"e2e", 0, 1, 2, 1}, []int64{0, 1, 0, -1, 2}, ""},
			})
			// §7 E: redis-cell's virtual-clock sequence (limit 5, 1/s).
			runThrottleSteps(t, rdb, ts, []throttleStep{
				{0, []any{"e", 4, 1, 1, 6}, []int64{1, 5, 5, -1, 0}, ""},
				{0, []any{"e", 4, 1, 1}, []int64{0, 5, 4, -1, 1}, ""},
				{0, []any{"e", 4, 1, 1}, []int64{0, 5, 3, -1, 2}, ""},
				{0, []any{"e", 4, 1, 1}, []int64{0, 5, 2, -1, 3}, ""},
				{0, []any{"e", 4, 1, 1}, []int64{0, 5, 1, -1, 4}, ""},
				{0, []any{"e", 4, 1, 1}, []int64{0, 5, 0, -1, 5}, ""},
				{0, []any{"e", 4, 1, 1}, []int64{1, 5, 0, 1, 5}, ""},
				{3 * s, []any{"e", 4, 1, 1}, []int64{0, 5, 2, -1, 3}, ""},
				{3100 * time.Millisecond, []any{"e", 4, 1, 1}, []int64{0, 5, 1, -1, 4}, ""},
				{4 * s, []any{"e", 4, 1, 1}, []int64{0, 5, 1, -1, 4}, ""},
				{8 * s, []any{"e", 4, 1, 1}, []int64{0, 5, 4, -1, 1}, ""},
				{9500 * time.Millisecond, []any{"e", 4, 1, 1}, []int64{0, 5, 4, -1, 1}, ""},
				{9500 * time.Millisecond, []any{"e", 4, 1, 1, 0}, []int64{0, 5, 4, -1, 1}, ""},
				{9500 * time.Millisecond, []any{"e", 4, 1, 1, 2}, []int64{0, 5, 2, -1, 3}, ""},
				{9500 * time.Millisecond, []any{"e", 4, 1, 1, 5}, []int64{1, 5, 2, 3, 3}, ""},
			})
			// §6 edge cases that ratekv keeps identical.
			runThrottleSteps(t, rdb, ts, []throttleStep{
				{0, []any{"f1", 6000, 6000, 1}, []int64{0, 6001, 6000, -1, 0}, ""}, // redis-cell says 6024 (its issue #50)
				{0, []any{"f2", 4, 500000, 1, 2}, []int64{0, 5, 3, -1, 0}, ""},
			})
		})
	}
}

func TestClThrottleErrors(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	usage := "-Cell error: Store error: Usage: cl.throttle <key> <max_burst> <count per period> <period> [<quantity>]\r\n"
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"CL.THROTTLE"}, usage},
		{[]string{"CL.THROTTLE", "k", "x", "y"}, usage},
		{[]string{"cl.throttle", "k", "1", "2", "3", "4", "5"}, usage},
		{[]string{"CL.THROTTLE", "k", "abc", "1", "60"}, "-Cell error: Store error: Couldn't parse as integer: abc\r\n"},
		{[]string{"CL.THROTTLE", "k", "abc", "def", "60"}, "-Cell error: Store error: Couldn't parse as integer: abc\r\n"},
		{[]string{"CL.THROTTLE", "k", "5", "0", "x"}, "-Cell error: Store error: Couldn't parse as integer: x\r\n"},
		{[]string{"CL.THROTTLE", "k", "", "1", "60"}, "-Cell error: Store error: Couldn't parse as integer: \r\n"},
		{[]string{"CL.THROTTLE", "k", " 5", "1", "60"}, "-Cell error: Store error: Couldn't parse as integer:  5\r\n"},
		{[]string{"CL.THROTTLE", "k", "9223372036854775808", "1", "60"}, "-Cell error: Store error: Couldn't parse as integer: 9223372036854775808\r\n"},
		{[]string{"CL.THROTTLE", "k", "1.5", "1", "60"}, "-Cell error: Store error: Couldn't parse as integer: 1.5\r\n"},
		{[]string{"CL.THROTTLE", "k", "5", "0", "60"}, "-Cell error: Store error: Zero rates are not supported\r\n"},
		{[]string{"CL.THROTTLE", "k", "5", "1", "0"}, "-Cell error: Store error: Zero rates are not supported\r\n"},
		{[]string{"CL.THROTTLE", "k", "5", "2000000000", "1"}, "-Cell error: Store error: Zero rates are not supported\r\n"},
		{[]string{"CL.THROTTLE", "k", "-5", "1", "60"}, "-" + errCellNegative + "\r\n"},
		{[]string{"CL.THROTTLE", "k", "5", "1", "9000000000000000000"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"CL.THROTTLE", "k", "+5", "007", "60"}, "*5\r\n:0\r\n:6\r\n:5\r\n:-1\r\n:9\r\n"},
	}
	for i, tt := range tests {
		if got := r.do(tt.args...); got != tt.want {
			t.Errorf("step %d %q: have %q, want %q", i, tt.args, got, tt.want)
		}
	}
	// No error created a key ("k" was created only by the last, valid call).
	require.Equal(t, ":1\r\n", r.do("DBSIZE"))
	// Wrong type and corrupt values never crash.
	require.Equal(t, ":1\r\n", r.do("ZADD", "z", "1", "m"))
	require.Equal(t, "-"+errWrongType+"\r\n", r.do("CL.THROTTLE", "z", "5", "1", "60"))
	require.Equal(t, "+OK\r\n", r.do("SET", "s", "notanumber"))
	require.Equal(t, "-Cell error: invalid digit found in string\r\n", r.do("CL.THROTTLE", "s", "5", "1", "60"))
	require.Equal(t, "$10\r\nnotanumber\r\n", r.do("GET", "s"))
}

func TestClThrottleKeyVisibility(t *testing.T) {
	ts := newTestServer(t)
	rdb := ts.client(t, 3)
	for i := 0; i < 6; i++ {
		require.NoError(t, rdb.Do(ctx, "CL.THROTTLE", "v", 5, 1, 60).Err())
	}
	require.Equal(t, "string", rdb.Type(ctx, "v").Val())
	tat, err := strconv.ParseInt(rdb.Get(ctx, "v").Val(), 10, 64)
	require.NoError(t, err)
	require.Equal(t, ts.clock.Now()+360e9, tat)
	require.Equal(t, 360*time.Second, rdb.PTTL(ctx, "v").Val())
	// A limited call leaves value and TTL alone.
	ts.clock.Advance(time.Second)
	got, _ := rdb.Do(ctx, "CL.THROTTLE", "v", 5, 1, 60).Int64Slice()
	require.Equal(t, []int64{1, 6, 0, 59, 359}, got)
	require.Equal(t, 359*time.Second, rdb.PTTL(ctx, "v").Val())
	require.Equal(t, strconv.FormatInt(tat, 10), rdb.Get(ctx, "v").Val())
	// DEL resets the limiter.
	require.Equal(t, int64(1), rdb.Del(ctx, "v").Val())
	got, _ = rdb.Do(ctx, "CL.THROTTLE", "v", 5, 1, 60).Int64Slice()
	require.Equal(t, []int64{0, 6, 5, -1, 60}, got)
	// The key expires at its TAT.
	ts.clock.Advance(60 * time.Second)
	require.Equal(t, int64(0), rdb.Exists(ctx, "v").Val())
	// A plain integer string is accepted as a TAT far in the past.
	require.NoError(t, rdb.Set(ctx, "n", 123, 0).Err())
	got, _ = rdb.Do(ctx, "CL.THROTTLE", "n", 5, 1, 60).Int64Slice()
	require.Equal(t, []int64{0, 6, 5, -1, 60}, got)
	// Quantity 0 on a fresh key creates nothing that survives.
	got, _ = rdb.Do(ctx, "CL.THROTTLE", "q0", 4, 1, 60, 0).Int64Slice()
	require.Equal(t, []int64{0, 5, 5, -1, 0}, got)
	require.Equal(t, int64(0), rdb.Exists(ctx, "q0").Val())
}

func TestClPeekHasNoSideEffects(t *testing.T) {
	ts := newTestServer(t)
	rdb := ts.client(t, 2)
	got, err := rdb.Do(ctx, "CL.PEEK", "p", 5, 1, 60).Int64Slice()
	require.NoError(t, err)
	require.Equal(t, []int64{0, 6, 5, -1, 60}, got)
	require.Equal(t, int64(0), rdb.Exists(ctx, "p").Val(), "CL.PEEK must not create the key")
	rdb.Do(ctx, "CL.THROTTLE", "p", 5, 1, 60)
	ttl := rdb.PTTL(ctx, "p").Val()
	val := rdb.Get(ctx, "p").Val()
	ts.clock.Advance(10 * time.Second)
	got, _ = rdb.Do(ctx, "CL.PEEK", "p", 5, 1, 60).Int64Slice()
	require.Equal(t, []int64{0, 6, 4, -1, 110}, got)
	require.Equal(t, val, rdb.Get(ctx, "p").Val())
	require.Equal(t, ttl-10*time.Second, rdb.PTTL(ctx, "p").Val(), "CL.PEEK must not refresh the TTL")
	require.EqualError(t, rdb.Do(ctx, "CL.PEEK", "p").Err(), "Cell error: Store error: Usage: cl.peek <key> <max_burst> <count per period> <period> [<quantity>]")
}

func TestClThrottleRefund(t *testing.T) {
	ts := newTestServer(t)
	rdb := ts.client(t, 3)
	for i := 0; i < 3; i++ {
		rdb.Do(ctx, "CL.THROTTLE", "r", 5, 1, 60)
	}
	got, err := rdb.Do(ctx, "CL.THROTTLE", "r", 5, 1, 60, -1).Int64Slice()
	require.NoError(t, err)
	require.Equal(t, []int64{0, 6, 4, -1, 120}, got)
	got, _ = rdb.Do(ctx, "CL.THROTTLE", "r", 5, 1, 60, -10).Int64Slice()
	require.Equal(t, []int64{0, 6, 6, -1, 0}, got)
	require.Equal(t, int64(0), rdb.Exists(ctx, "r").Val(), "a full refund removes the key")
}

func TestClThrottleAll(t *testing.T) {
	ts := newTestServer(t)
	rdb := ts.client(t, 3)
	do := func(args ...any) []any {
		t.Helper()
		v, err := rdb.Do(ctx, append([]any{"CL.THROTTLEALL"}, args...)...).Slice()
		require.NoError(t, err)
		return v
	}
	// 2 per minute (burst 1) and 3 per hour (burst 2) on two keys.
	v := do(2, "{u1}:min", 1, 2, 60, "{u1}:hour", 2, 3, 3600)
	require.Equal(t, "[0 [0 2 1 -1 30] [0 3 2 -1 1200]]", fmt.Sprint(v))
	v = do(2, "{u1}:min", 1, 2, 60, "{u1}:hour", 2, 3, 3600)
	require.Equal(t, "[0 [0 2 0 -1 60] [0 3 1 -1 2400]]", fmt.Sprint(v))
	// The minute limit bites: nothing is consumed from the hour limit.
	hourBefore := rdb.Get(ctx, "{u1}:hour").Val()
	v = do(2, "{u1}:min", 1, 2, 60, "{u1}:hour", 2, 3, 3600)
	require.Equal(t, "[1 [1 2 0 30 60] [0 3 0 -1 3600]]", fmt.Sprint(v)) // each limit as CL.PEEK sees it
	require.Equal(t, hourBefore, rdb.Get(ctx, "{u1}:hour").Val())
	// Keys in different shards, with QUANTITY.
	v = do(2, "a", 9, 10, 60, "b", 4, 5, 60, "QUANTITY", 5)
	require.Equal(t, "[0 [0 10 5 -1 30] [0 5 0 -1 60]]", fmt.Sprint(v))
	v = do(2, "a", 9, 10, 60, "b", 4, 5, 60, "QUANTITY", 1)
	require.Equal(t, "[1 [0 10 4 -1 36] [1 5 0 12 60]]", fmt.Sprint(v))
	require.Equal(t, "[0 [0 10 5 -1 30]]", fmt.Sprint(do(1, "a", 9, 10, 60, "QUANTITY", 0)))

	r := ts.raw(t)
	for i, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"CL.THROTTLEALL", "x", "k", "1", "1", "1"}, "-" + errCellNumLimits + "\r\n"},
		{[]string{"CL.THROTTLEALL", "0", "k", "1", "1", "1"}, "-" + errCellNumLimits + "\r\n"},
		{[]string{"CL.THROTTLEALL", "2", "k", "1", "1", "1"}, "-" + errCellAllUsage + "\r\n"},
		{[]string{"CL.THROTTLEALL", "1", "k", "1", "1", "1", "QTY", "2"}, "-" + errCellAllUsage + "\r\n"},
		{[]string{"CL.THROTTLEALL", "1", "k", "1", "1", "x"}, "-Cell error: Store error: Couldn't parse as integer: x\r\n"},
		{[]string{"CL.THROTTLEALL", "1", "k", "1", "0", "1"}, "-Cell error: Store error: Zero rates are not supported\r\n"},
	} {
		if got := r.do(tt.args...); got != tt.want {
			t.Errorf("step %d %q: have %q, want %q", i, tt.args, got, tt.want)
		}
	}
	require.Equal(t, ":0\r\n", r.do("EXISTS", "k"))
}

// TestClThrottleConcurrent: 64 goroutines over several connections hammer
// one key; exactly the GCRA allowance (limit, at a frozen clock) passes.
func TestClThrottleConcurrent(t *testing.T) {
	ts := newTestServer(t)
	var allowed atomic.Int64
	var wg sync.WaitGroup
	clients := []*redis.Client{ts.client(t, 2), ts.client(t, 3), ts.client(t, 3), ts.client(t, 2)}
	for g := 0; g < 64; g++ {
		wg.Add(1)
		go func(rdb *redis.Client) {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				v, err := rdb.Do(ctx, "CL.THROTTLE", "hot", 99, 10, 60).Int64Slice()
				if err != nil {
					t.Error(err)
					return
				}
				if v[0] == 0 {
					allowed.Add(1)
				}
			}
		}(clients[g%len(clients)])
	}
	wg.Wait()
	require.Equal(t, int64(100), allowed.Load(), "1280 calls against limit 100 at one instant")
}

// Leading zeros, any number of them, as redis-cell's i64::from_str takes
// them (also 21 bytes and more).
func TestClThrottleLongLeadingZeros(t *testing.T) {
	r := newTestServer(t).raw(t)
	want := "*5\r\n:0\r\n:6\r\n:5\r\n:-1\r\n:60\r\n"
	require.Equal(t, want, r.do("CL.THROTTLE", "a", "000000000000000000005", "1", "60"))
	require.Equal(t, want, r.do("CL.THROTTLE", "b", "+00000000000000000005", "0000000000000000000000001", "60"))
}

// CL.THROTTLEALL with one key named twice, refused: the second limit's
// reply shows it bit (peeking at the stored state would show neither),
// and nothing is consumed.
func TestClThrottleAllRepeatedKeyShowsWhichBit(t *testing.T) {
	r := newTestServer(t).raw(t)
	want := "*3\r\n:1\r\n*5\r\n:0\r\n:1\r\n:0\r\n:-1\r\n:60\r\n*5\r\n:1\r\n:1\r\n:0\r\n:60\r\n:60\r\n"
	require.Equal(t, want, r.do("CL.THROTTLEALL", "2", "k", "0", "1", "60", "k", "0", "1", "60"))
	require.Equal(t, "*5\r\n:0\r\n:1\r\n:0\r\n:-1\r\n:60\r\n", r.do("CL.THROTTLE", "k", "0", "1", "60"), "nothing was consumed")
}

// throttleReply is the raw RESP reply of CL.THROTTLE's integers.
func throttleReply(v ...int64) string {
	s := fmt.Sprintf("*%d\r\n", len(v))
	for _, n := range v {
		s += fmt.Sprintf(":%d\r\n", n)
	}
	return s
}

// TestClThrottleLimitedHugeQuantity: a huge quantity whose cost still fits
// in int64 (ei×quantity) is limited with retry_after -1 (spec §3), on a
// fresh key and on a limited one, and touches nothing; only a cost that
// overflows is an error (§11.3), not a new TAT past the int64 range,
// which a limited call never stores.
func TestClThrottleLimitedHugeQuantity(t *testing.T) {
	r := newTestServer(t).raw(t)
	rp, notInt := throttleReply, errReply(errNotInt)
	// First call on a fresh key: limited, no key created.
	runRawSteps(t, r, []rawStep{
		{a("CL.THROTTLE", "h", "5", "1", "60", "150000000"), rp(1, 6, 6, -1, 0)},
		{a("CL.THROTTLE", "h", "5", "1", "60", "153722867"), rp(1, 6, 6, -1, 0)},
		{a("CL.PEEK", "h", "5", "1", "60", "153722867"), rp(1, 6, 6, -1, 0)},
		{a("EXISTS", "h"), ":0\r\n"},
		{a("CL.THROTTLE", "h", "5", "1", "60", "153722868"), notInt}, // 60 s × quantity overflows
		{a("CL.THROTTLE", "h", "5", "1", "60", "6"), rp(0, 6, 0, -1, 360)},
	})
	// The same quantities on the now limited key.
	tat := r.do("GET", "h")
	runRawSteps(t, r, []rawStep{
		{a("CL.THROTTLE", "h", "5", "1", "60", "150000000"), rp(1, 6, 0, -1, 360)},
		{a("CL.THROTTLE", "h", "5", "1", "60", "153722867"), rp(1, 6, 0, -1, 360)},
		{a("CL.PEEK", "h", "5", "1", "60", "153722867"), rp(1, 6, 0, -1, 360)},
		{a("CL.THROTTLE", "h", "5", "1", "60", "153722868"), notInt},
		{a("GET", "h"), tat},
		{a("PTTL", "h"), ":360000\r\n"},
		// A huge bucket (dvt 9223372020 s): quantity <= limit, so a real
		// retry_after, far beyond what int64 nanoseconds reach from now.
		{a("CL.THROTTLE", "d", "153722866", "1", "60", "100000000"), rp(0, 153722867, 53722867, -1, 6000000000)},
		{a("CL.THROTTLE", "d", "153722866", "1", "60", "60000000"), rp(1, 153722867, 53722867, 376627980, 6000000000)},
		{a("PTTL", "d"), ":6000000000000\r\n"},
		// CL.THROTTLEALL: the same quantity is refused, not an error.
		{a("CL.THROTTLEALL", "2", "h", "5", "1", "60", "a", "5", "1", "60", "QUANTITY", "150000000"),
			"*3\r\n:1\r\n" + rp(1, 6, 0, -1, 360) + rp(1, 6, 6, -1, 0)},
		{a("EXISTS", "a"), ":0\r\n"},
		{a("GET", "h"), tat},
	})
}

// TestClThrottleHugePeriod: redis-cell takes period·1e9 exactly (i128)
// before its float64 division (spec §3), so a period beyond int64
// nanoseconds is a sane input when count brings the interval back into
// range (§11.1). An interval that itself passes int64 is ERR value is not
// an integer or out of range (§6, §11.3).
func TestClThrottleHugePeriod(t *testing.T) {
	r := newTestServer(t).raw(t)
	rp, notInt := throttleReply, errReply(errNotInt)
	runRawSteps(t, r, []rawStep{
		{a("CL.THROTTLE", "p1", "5", "9223372036854775807", "9223372036854775807"), rp(0, 6, 5, -1, 1)},
		{a("PTTL", "p1"), ":1000\r\n"},
		// ei = float64(9223372037e9)/2 = 4611686018499999744 ns.
		{a("CL.THROTTLE", "p2", "0", "2", "9223372037"), rp(0, 1, 0, -1, 4611686019)},
		{a("PTTL", "p2"), ":4611686018499\r\n"},
		{a("CL.PEEK", "p2", "0", "2", "9223372037"), rp(1, 1, 0, 4611686019, 4611686019)},
		{a("CL.THROTTLEALL", "1", "p3", "5", "9223372036854775807", "9223372036854775807"), "*2\r\n:0\r\n" + rp(0, 6, 5, -1, 1)},
		// The interval itself past int64 (redis-cell saturates it).
		{a("CL.THROTTLE", "p4", "0", "1", "9223372037", "0"), notInt},
		{a("CL.THROTTLE", "p4", "0", "2", "18446744074", "0"), notInt},
		{a("CL.THROTTLE", "p4", "-1", "9223372036854775807", "9223372036854775807"), errReply(errCellNegative)},
		{a("EXISTS", "p4"), ":0\r\n"},
	})
}

// TestClThrottleParamsBeforeKey: redis-cell checks the rate before it
// reads the key (spec §2: its zero-rate check comes first in rate_limit,
// then get_with_time), so a zero rate on a key of another type or holding
// a non-integer is the zero-rate error; ratekv's own parameter errors
// (§11.3) come before the key's too.
func TestClThrottleParamsBeforeKey(t *testing.T) {
	r := newTestServer(t).raw(t)
	zero := "-Cell error: Store error: Zero rates are not supported\r\n"
	runRawSteps(t, r, []rawStep{
		{a("ZADD", "z", "1", "m"), ":1\r\n"},
		{a("SET", "s", "notanumber"), "+OK\r\n"},
		{a("CL.THROTTLE", "z", "5", "0", "60"), zero},
		{a("CL.THROTTLE", "s", "5", "1", "0"), zero},
		{a("CL.THROTTLE", "s", "5", "2000000000", "1"), zero},
		{a("CL.PEEK", "z", "5", "0", "60"), zero},
		{a("CL.THROTTLE", "z", "-1", "1", "60"), errReply(errCellNegative)},
		{a("CL.THROTTLE", "s", "5", "1", "9000000000000000000"), errReply(errNotInt)},
		{a("CL.THROTTLEALL", "2", "z", "5", "1", "60", "k", "5", "0", "60"), zero},
		// Sane parameters: the key's own error.
		{a("CL.THROTTLE", "z", "5", "1", "60"), errReply(errWrongType)},
		{a("CL.THROTTLE", "s", "5", "1", "60"), errReply(errCellBadTAT)},
		{a("CL.THROTTLEALL", "2", "k", "5", "1", "60", "z", "5", "1", "60"), errReply(errWrongType)},
		{a("GET", "s"), bulk("notanumber")},
		{a("EXISTS", "k"), ":0\r\n"},
	})
}

// TestClThrottleTATSpelling: redis-cell reads the stored TAT with Rust's
// u64 parse (spec §5), which takes a leading '+' and leading zeros, so
// "0123" is an integer string like "123": a TAT far in the past, not
// "Cell error: invalid digit found in string".
func TestClThrottleTATSpelling(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	rp := throttleReply
	future := "0" + strconv.FormatInt(ts.clock.Now()+360e9, 10) // a full bucket of 5 1 60
	runRawSteps(t, r, []rawStep{
		{a("SET", "a", "0123"), "+OK\r\n"},
		{a("CL.THROTTLE", "a", "5", "1", "60"), rp(0, 6, 5, -1, 60)},
		{a("PTTL", "a"), ":60000\r\n"},
		{a("GET", "a"), bulk(strconv.FormatInt(ts.clock.Now()+60e9, 10))},
		{a("SET", "b", "+123"), "+OK\r\n"},
		{a("CL.PEEK", "b", "5", "1", "60"), rp(0, 6, 5, -1, 60)},
		{a("SET", "c", "+000000000000000000000000000000000000000000000123"), "+OK\r\n"},
		{a("CL.THROTTLE", "c", "5", "1", "60"), rp(0, 6, 5, -1, 60)},
		{a("SET", "d", future), "+OK\r\n"},
		{a("CL.THROTTLE", "d", "5", "1", "60"), rp(1, 6, 0, 60, 360)},
		{a("GET", "d"), bulk(future)}, // a limited call writes nothing
		// Still not integers.
		{a("SET", "e", " 12"), "+OK\r\n"},
		{a("CL.THROTTLE", "e", "5", "1", "60"), errReply(errCellBadTAT)},
		{a("SET", "e", "1.5"), "+OK\r\n"},
		{a("CL.THROTTLE", "e", "5", "1", "60"), errReply(errCellBadTAT)},
		{a("SET", "e", "+"), "+OK\r\n"},
		{a("CL.THROTTLE", "e", "5", "1", "60"), errReply(errCellBadTAT)},
		{a("GET", "e"), bulk("+")},
	})
}

// TestClThrottleAllManyLimits: a call of 100,000 limits finds repeated
// keys without comparing each limit with every earlier one, so it takes a
// fraction of a second with its shards locked, not n²/2 comparisons; a
// key named again still starts from what its earlier limit consumed.
func TestClThrottleAllManyLimits(t *testing.T) {
	s := newSocketless(t, &fakeClock{}, nil)
	const n = 100_000
	args := []string{"CL.THROTTLEALL", strconv.Itoa(n)}
	for i := range n - 1 {
		args = append(args, "k"+strconv.Itoa(i), "1000", "1000", "60")
	}
	args = append(args, "k0", "1000", "1000", "60") // k0 again
	done := make(chan string, 1)
	go func() { done <- s.send(args...) }()
	var r string
	select {
	case r = <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("CL.THROTTLEALL of %d limits took over 5 s", n)
	}
	first := throttleReply(0, 1001, 1000, -1, 1)
	require.True(t, strings.HasPrefix(r, fmt.Sprintf("*%d\r\n:0\r\n", n+1)+first), r[:min(len(r), 200)])
	require.True(t, strings.HasSuffix(r, first+throttleReply(0, 1001, 999, -1, 1)), "the second limit on k0 sees the first's consumption")
	require.Equal(t, throttleReply(0, 1001, 998, -1, 1), s.send("CL.THROTTLE", "k0", "1000", "1000", "60"))
}

// TestClThrottleMsRates: CL.THROTTLEMS on the injected clock at 10 per
// second, 1,000,000 per second (an interval of 1 µs) and one per
// nanosecond, with the durations in milliseconds rounded up from
// nanoseconds.
func TestClThrottleMsRates(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			ts := newTestServer(t)
			rdb := ts.client(t, proto)
			ms, us := time.Millisecond, time.Microsecond
			// 10 per second, burst 5: ei 100 ms, dvt 600 ms.
			runThrottleStepsOf(t, rdb, ts, "CL.THROTTLEMS", []throttleStep{
				{0, []any{"a", 5, 10, 1000}, []int64{0, 6, 5, -1, 100}, ""},
				{0, []any{"a", 5, 10, 1000}, []int64{0, 6, 4, -1, 200}, ""},
				{0, []any{"a", 5, 10, 1000}, []int64{0, 6, 3, -1, 300}, ""},
				{0, []any{"a", 5, 10, 1000}, []int64{0, 6, 2, -1, 400}, ""},
				{0, []any{"a", 5, 10, 1000}, []int64{0, 6, 1, -1, 500}, ""},
				{0, []any{"a", 5, 10, 1000}, []int64{0, 6, 0, -1, 600}, ""},
				{0, []any{"a", 5, 10, 1000}, []int64{1, 6, 0, 100, 600}, ""},
				{50 * ms, []any{"a", 5, 10, 1000}, []int64{1, 6, 0, 50, 550}, ""},
				{100 * ms, []any{"a", 5, 10, 1000}, []int64{0, 6, 0, -1, 600}, ""},
				{400 * ms, []any{"a", 5, 10, 1000, 2}, []int64{0, 6, 1, -1, 500}, ""},
			})
			// 1,000,000 per second, burst 5: ei 1 µs, dvt 6 µs. Every
			// duration is under a millisecond and replies 1.
			runThrottleStepsOf(t, rdb, ts, "CL.THROTTLEMS", []throttleStep{
				{0, []any{"m", 5, 1000, 1}, []int64{0, 6, 5, -1, 1}, ""},
				{0, []any{"m", 5, 1000, 1, 4}, []int64{0, 6, 1, -1, 1}, ""},
				{0, []any{"m", 5, 1000, 1}, []int64{0, 6, 0, -1, 1}, ""},
				{0, []any{"m", 5, 1000, 1}, []int64{1, 6, 0, 1, 1}, ""},
				{500, []any{"m", 5, 1000, 1}, []int64{1, 6, 0, 1, 1}, ""},
				{1 * us, []any{"m", 5, 1000, 1}, []int64{0, 6, 0, -1, 1}, ""},
				{1 * us, []any{"m", 5, 1000, 1}, []int64{1, 6, 0, 1, 1}, ""},
				{3 * us, []any{"m", 5, 1000, 1, 0}, []int64{0, 6, 2, -1, 1}, ""},
				{7 * us, []any{"m", 5, 1000, 1, 0}, []int64{0, 6, 6, -1, 0}, ""},
				{7 * us, []any{"m", 5, 1000, 1, 6}, []int64{0, 6, 0, -1, 1}, ""},
				{7 * us, []any{"m", 5, 1000, 1, 7}, []int64{1, 6, 0, -1, 1}, ""},
			})
			// 1,000,000 per second with a 1 ms bucket.
			runThrottleStepsOf(t, rdb, ts, "CL.THROTTLEMS", []throttleStep{
				{0, []any{"b", 999, 1000, 1, 1000}, []int64{0, 1000, 0, -1, 1}, ""},
				{0, []any{"b", 999, 1000, 1}, []int64{1, 1000, 0, 1, 1}, ""},
				{250 * us, []any{"b", 999, 1000, 1, 250}, []int64{0, 1000, 0, -1, 1}, ""},
				{250 * us, []any{"b", 999, 1000, 1}, []int64{1, 1000, 0, 1, 1}, ""},
				{900 * us, []any{"b", 999, 1000, 1, 0}, []int64{0, 1000, 650, -1, 1}, ""},
				{2 * ms, []any{"b", 999, 1000, 1}, []int64{0, 1000, 999, -1, 1}, ""},
			})
			// One per nanosecond, the fastest rate there is.
			runThrottleStepsOf(t, rdb, ts, "CL.THROTTLEMS", []throttleStep{
				{0, []any{"n", 0, 1000000, 1}, []int64{0, 1, 0, -1, 1}, ""},
				{0, []any{"n", 0, 1000000, 1}, []int64{1, 1, 0, 1, 1}, ""},
				{1, []any{"n", 0, 1000000, 1}, []int64{0, 1, 0, -1, 1}, ""},
			})
			// Rounding up from nanoseconds: 1 per 3 ms, burst 0.
			runThrottleStepsOf(t, rdb, ts, "CL.THROTTLEMS", []throttleStep{
				{0, []any{"r", 0, 1, 3}, []int64{0, 1, 0, -1, 3}, ""},
				{0, []any{"r", 0, 1, 3}, []int64{1, 1, 0, 3, 3}, ""},
				{1, []any{"r", 0, 1, 3}, []int64{1, 1, 0, 3, 3}, ""},
				{1 * ms, []any{"r", 0, 1, 3}, []int64{1, 1, 0, 2, 2}, ""},
				{1*ms + 1, []any{"r", 0, 1, 3}, []int64{1, 1, 0, 2, 2}, ""},
				{2*ms - 1, []any{"r", 0, 1, 3}, []int64{1, 1, 0, 2, 2}, ""},
				{2 * ms, []any{"r", 0, 1, 3}, []int64{1, 1, 0, 1, 1}, ""},
				{3*ms - 1, []any{"r", 0, 1, 3}, []int64{1, 1, 0, 1, 1}, ""},
				{3 * ms, []any{"r", 0, 1, 3}, []int64{0, 1, 0, -1, 3}, ""},
			})
			// An interval of 333333 ns (3 per ms): remaining is exact.
			runThrottleStepsOf(t, rdb, ts, "CL.THROTTLEMS", []throttleStep{
				{0, []any{"t", 2, 3, 1}, []int64{0, 3, 2, -1, 1}, ""},
				{0, []any{"t", 2, 3, 1, 2}, []int64{0, 3, 0, -1, 1}, ""},
				{0, []any{"t", 2, 3, 1}, []int64{1, 3, 0, 1, 1}, ""},
				{333333, []any{"t", 2, 3, 1}, []int64{0, 3, 0, -1, 1}, ""},
			})
		})
	}
}

// TestClThrottleMsQuantity: quantity 0, quantity == limit, quantity >
// limit and refunds, as CL.THROTTLE's.
func TestClThrottleMsQuantity(t *testing.T) {
	ts := newTestServer(t)
	rdb := ts.client(t, 3)
	runThrottleStepsOf(t, rdb, ts, "CL.THROTTLEMS", []throttleStep{
		{0, []any{"q", 5, 10, 1000, 0}, []int64{0, 6, 6, -1, 0}, ""},
		{0, []any{"q", 5, 10, 1000, 7}, []int64{1, 6, 6, -1, 0}, ""},
		{0, []any{"q", 5, 10, 1000, 6}, []int64{0, 6, 0, -1, 600}, ""},
		{0, []any{"q", 5, 10, 1000, 0}, []int64{0, 6, 0, -1, 600}, ""},
		{0, []any{"q", 5, 10, 1000, 1}, []int64{1, 6, 0, 100, 600}, ""},
		{0, []any{"q", 5, 10, 1000, 6}, []int64{1, 6, 0, 600, 600}, ""},
		{0, []any{"q", 5, 10, 1000, 7}, []int64{1, 6, 0, -1, 600}, ""},
		{0, []any{"q", 5, 10, 1000, -2}, []int64{0, 6, 2, -1, 400}, ""},
		{0, []any{"q", 5, 10, 1000, 3}, []int64{1, 6, 2, 100, 400}, ""},
		{0, []any{"q", 5, 10, 1000, -10}, []int64{0, 6, 6, -1, 0}, ""},
	})
	require.Equal(t, int64(0), rdb.Exists(ctx, "q").Val(), "a full refund removes the key")
	got, err := rdb.Do(ctx, "CL.THROTTLEMS", "q0", 5, 10, 1000, 0).Int64Slice()
	require.NoError(t, err)
	require.Equal(t, []int64{0, 6, 6, -1, 0}, got)
	require.Equal(t, int64(0), rdb.Exists(ctx, "q0").Val(), "quantity 0 on a fresh key creates nothing that survives")
}

// TestClThrottleMsMatchesClThrottle: the same key driven by CL.THROTTLE,
// CL.PEEK and CL.THROTTLEMS with the same rate (10 per 1 s and per 1000 ms)
// is one limiter; only the unit of the durations differs.
func TestClThrottleMsMatchesClThrottle(t *testing.T) {
	ts := newTestServer(t)
	rdb := ts.client(t, 3)
	start := ts.clock.Now()
	const S, MS, PEEK = "CL.THROTTLE", "CL.THROTTLEMS", "CL.PEEK"
	ms := time.Millisecond
	steps := []struct {
		at   time.Duration
		cmd  string
		args []any
		want []int64
	}{
		{0, MS, []any{5, 10, 1000}, []int64{0, 6, 5, -1, 100}},
		{0, S, []any{5, 10, 1}, []int64{0, 6, 4, -1, 1}},
		{0, PEEK, []any{5, 10, 1}, []int64{0, 6, 3, -1, 1}},
		{0, MS, []any{5, 10, 1000, 3}, []int64{0, 6, 1, -1, 500}},
		{0, S, []any{5, 10, 1}, []int64{0, 6, 0, -1, 1}},
		{0, MS, []any{5, 10, 1000}, []int64{1, 6, 0, 100, 600}},
		{0, S, []any{5, 10, 1}, []int64{1, 6, 0, 1, 1}},
		{250 * ms, MS, []any{5, 10, 1000}, []int64{0, 6, 1, -1, 450}},
		{250 * ms, S, []any{5, 10, 1, 2}, []int64{1, 6, 1, 1, 1}},
		{250 * ms, MS, []any{5, 10, 1000, 2}, []int64{1, 6, 1, 50, 450}},
		{250 * ms, PEEK, []any{5, 10, 1}, []int64{0, 6, 0, -1, 1}},
		{250 * ms, MS, []any{5, 10, 1000, 0}, []int64{0, 6, 1, -1, 450}},
	}
	for i, st := range steps {
		ts.clock.ns.Store(start + int64(st.at))
		got, err := rdb.Do(ctx, append([]any{st.cmd, "eq"}, st.args...)...).Int64Slice()
		if err != nil || fmt.Sprint(got) != fmt.Sprint(st.want) {
			t.Errorf("step %d %s %v: have %v, %v, want %v", i, st.cmd, st.args, got, err, st.want)
		}
	}
	require.Equal(t, strconv.FormatInt(start+700e6, 10), rdb.Get(ctx, "eq").Val(), "the TAT: 7 calls of 100 ms")

	// Twin keys, one per command, through the same calls: the same
	// decisions and the same stored TAT; whole-millisecond durations are
	// the same rounded up to seconds.
	ts.clock.ns.Store(start)
	for i, st := range []struct {
		at       time.Duration
		quantity int64
	}{{0, 1}, {0, 3}, {0, 2}, {10 * ms, 1}, {10 * ms, 0}, {150 * ms, 1}, {2 * time.Second, 6}, {2 * time.Second, 7}, {2333 * ms, -2}, {2333 * ms, 4}} {
		ts.clock.ns.Store(start + int64(st.at))
		s, err := rdb.Do(ctx, S, "tw:s", 5, 10, 1, st.quantity).Int64Slice()
		require.NoError(t, err)
		m, err := rdb.Do(ctx, MS, "tw:ms", 5, 10, 1000, st.quantity).Int64Slice()
		require.NoError(t, err)
		inSeconds := func(ms int64) int64 {
			if ms < 0 {
				return ms
			}
			return (ms + 999) / 1000
		}
		if want := []int64{m[0], m[1], m[2], inSeconds(m[3]), inSeconds(m[4])}; fmt.Sprint(s) != fmt.Sprint(want) {
			t.Errorf("step %d q%d: have %v in seconds, want %v (from %v in ms)", i, st.quantity, s, want, m)
		}
		if have, want := rdb.Get(ctx, "tw:ms").Val(), rdb.Get(ctx, "tw:s").Val(); have != want {
			t.Errorf("step %d q%d: have TAT %q, want CL.THROTTLE's %q", i, st.quantity, have, want)
		}
	}
}

// TestClThrottleMsMillionPerSecond drives 1,000,000 per second for 2 ms
// of the injected clock. Burst 0, calls every 0.5 µs: exactly every other
// call is allowed. Burst 999: 1000 calls at one instant, then one per µs.
// The key must outlive its sub-millisecond TTL (with CL.THROTTLE's
// truncated TTL it would expire at once and every call be allowed).
func TestClThrottleMsMillionPerSecond(t *testing.T) {
	clock := newFakeClock()
	s := newSocketless(t, clock, nil)
	start := clock.Now()
	allowed := func(args ...string) bool {
		t.Helper()
		r := s.do(t, args...)
		require.True(t, strings.HasPrefix(r, "*5\r\n"), r)
		return strings.HasPrefix(r, "*5\r\n:0\r\n")
	}
	n := 0
	for i := range 4000 {
		clock.ns.Store(start + int64(i)*500)
		if allowed("CL.THROTTLEMS", "one", "0", "1000", "1") {
			n++
		}
	}
	require.Equal(t, 2000, n, "allowed in 2 ms at 1,000,000 per second")
	require.Equal(t, bulk(strconv.FormatInt(start+2000*1000, 10)), s.do(t, "GET", "one"))

	clock.ns.Store(start)
	n = 0
	for range 1001 {
		if allowed("CL.THROTTLEMS", "burst", "999", "1000", "1") {
			n++
		}
	}
	require.Equal(t, 1000, n, "a burst of limit 1000 at one instant")
	for i := int64(1); i <= 1000; i++ {
		clock.ns.Store(start + i*1000)
		require.True(t, allowed("CL.THROTTLEMS", "burst", "999", "1000", "1"), "µs %d", i)
		require.False(t, allowed("CL.THROTTLEMS", "burst", "999", "1000", "1"), "µs %d, again", i)
	}
}

// TestClThrottleMsKeyLivesUntilTAT: a CL.THROTTLEMS key expires at its
// TAT rounded up to a whole millisecond (tatDeadline), never before it;
// CL.THROTTLE's expires at now plus its TTL truncated, as redis-cell's.
func TestClThrottleMsKeyLivesUntilTAT(t *testing.T) {
	const T = 1_795_307_408_539_400_000 // ms 1795307408539 and 400 µs
	clock := &fakeClock{}
	s := newSocketless(t, clock, nil)
	rp := throttleReply
	at := func(ns int64) { clock.ns.Store(ns) }
	at(T)
	require.Equal(t, rp(0, 6, 5, -1, 1), s.do(t, "CL.THROTTLEMS", "a", "5", "1000", "1"))
	require.Equal(t, ":1795307408540\r\n", s.do(t, "PEXPIRETIME", "a"))
	require.Equal(t, ":1\r\n", s.do(t, "PTTL", "a"))
	require.Equal(t, rp(0, 6, 5, -1, 0), s.do(t, "CL.THROTTLE", "b", "5", "1000000", "1"))
	require.Equal(t, ":0\r\n", s.do(t, "EXISTS", "b"), "CL.THROTTLE: a TTL under 1 ms expires the key at once")
	for range 6 {
		s.do(t, "CL.THROTTLEMS", "c", "5", "10", "1000")
	}
	require.Equal(t, ":1795307409140\r\n", s.do(t, "PEXPIRETIME", "c"), "TAT T+600 ms, rounded up")
	at(T + 599_999)
	require.Equal(t, ":1\r\n", s.do(t, "EXISTS", "a"))
	at(T + 600_000)
	require.Equal(t, ":0\r\n", s.do(t, "EXISTS", "a"))

	// A TAT on a whole millisecond expires exactly then.
	const T0 = 1_795_307_408_539_000_000
	at(T0)
	require.Equal(t, rp(0, 1, 0, -1, 1), s.do(t, "CL.THROTTLEMS", "d", "0", "1", "1"))
	require.Equal(t, ":1795307408540\r\n", s.do(t, "PEXPIRETIME", "d"))
	at(T0 + 999_999)
	require.Equal(t, rp(1, 1, 0, 1, 1), s.do(t, "CL.THROTTLEMS", "d", "0", "1", "1"))
	at(T0 + 1_000_000)
	require.Equal(t, ":0\r\n", s.do(t, "EXISTS", "d"))
	require.Equal(t, rp(0, 1, 0, -1, 1), s.do(t, "CL.THROTTLEMS", "d", "0", "1", "1"))
	// Nothing held (quantity 0 on a fresh key): gone at once.
	require.Equal(t, rp(0, 6, 6, -1, 0), s.do(t, "CL.THROTTLEMS", "e", "5", "1000", "1", "0"))
	require.Equal(t, ":0\r\n", s.do(t, "EXISTS", "e"))
}

// TestClThrottleMsErrors: CL.THROTTLE's errors, texts and check order, for
// the same inputs; an interval below 1 ns (more than 1,000,000 per ms) is
// a zero rate, as CL.THROTTLE's "5 2000000000 1".
func TestClThrottleMsErrors(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	usage := "-Cell error: Store error: Usage: cl.throttlems <key> <max_burst> <count per period> <period> [<quantity>]\r\n"
	parse := func(arg string) string { return errReply(sprintf(errCellParseInt, arg)) }
	zero, negative, notInt := errReply(errCellZeroRate), errReply(errCellNegative), errReply(errNotInt)
	tests := []struct {
		args []string
		want string
	}{
		0:  {a("CL.THROTTLEMS"), usage},
		1:  {a("CL.THROTTLEMS", "k", "x", "y"), usage},
		2:  {a("cl.throttlems", "k", "1", "2", "3", "4", "5"), usage},
		3:  {a("CL.THROTTLEMS", "k", "abc", "1", "1000"), parse("abc")},
		4:  {a("CL.THROTTLEMS", "k", "abc", "def", "1000"), parse("abc")},
		5:  {a("CL.THROTTLEMS", "k", "5", "0", "x"), parse("x")},
		6:  {a("CL.THROTTLEMS", "k", "5", "1", "1000", "q"), parse("q")},
		7:  {a("CL.THROTTLEMS", "k", "", "1", "1000"), parse("")},
		8:  {a("CL.THROTTLEMS", "k", "1.5", "1", "1000"), parse("1.5")},
		9:  {a("CL.THROTTLEMS", "k", "5", "1", "1e3"), parse("1e3")},
		10: {a("CL.THROTTLEMS", "k", "9223372036854775808", "1", "1000"), parse("9223372036854775808")},
		11: {a("CL.THROTTLEMS", "k", "5", "0", "1000"), zero},
		12: {a("CL.THROTTLEMS", "k", "5", "1", "0"), zero},
		13: {a("CL.THROTTLEMS", "k", "5", "1000001", "1"), zero},
		14: {a("CL.THROTTLEMS", "k", "5", "2000000000", "1000"), zero},
		15: {a("CL.THROTTLE", "k", "5", "2000000000", "1"), zero},
		16: {a("CL.THROTTLEMS", "k", "-1", "0", "1000"), zero},
		17: {a("CL.THROTTLEMS", "k", "-5", "1", "1000"), negative},
		18: {a("CL.THROTTLEMS", "k", "5", "-1", "1000"), negative},
		19: {a("CL.THROTTLEMS", "k", "5", "1", "-1000"), negative},
		20: {a("CL.THROTTLEMS", "k", "5", "1", "9223372036855"), notInt},
		21: {a("CL.THROTTLEMS", "k", "5", "1", "1000", "9223372036854775807"), notInt},
		22: {a("CL.THROTTLEMS", "k", "0", "1", "9223372036854", "1"), notInt},
		23: {a("DBSIZE"), ":0\r\n"}, // no error created a key
		// Accepted: one per nanosecond, and the longest interval.
		24: {a("CL.THROTTLEMS", "k1", "0", "1000000", "1"), throttleReply(0, 1, 0, -1, 1)},
		25: {a("CL.THROTTLEMS", "k2", "0", "1", "9223372036854", "0"), throttleReply(0, 1, 1, -1, 0)},
		26: {a("CL.THROTTLEMS", "k", "+5", "007", "1000"), throttleReply(0, 6, 5, -1, 143)},
		27: {a("EXISTS", "k", "k1", "k2"), ":2\r\n"}, // k2 held nothing
	}
	for i, tt := range tests {
		if have := r.do(tt.args...); have != tt.want {
			t.Errorf("step %d %q: have %q, want %q", i, tt.args, have, tt.want)
		}
	}
	// Wrong type and corrupt values never crash; a parameter error comes
	// first.
	runRawSteps(t, r, []rawStep{
		{a("ZADD", "z", "1", "m"), ":1\r\n"},
		{a("SET", "s", "notanumber"), "+OK\r\n"},
		{a("CL.THROTTLEMS", "z", "5", "1", "1000"), errReply(errWrongType)},
		{a("CL.THROTTLEMS", "s", "5", "1", "1000"), errReply(errCellBadTAT)},
		{a("CL.THROTTLEMS", "z", "5", "0", "1000"), zero},
		{a("CL.THROTTLEMS", "s", "5", "1000001", "1"), zero},
		{a("CL.THROTTLEMS", "s", "5", "-1", "1000"), negative},
		{a("GET", "s"), bulk("notanumber")},
	})
}

// TestClThrottleMsJournal: CL.THROTTLEMS is journaled as CL.THROTTLE is,
// as the image of its key (SETINT with the TAT and the absolute deadline),
// nothing for a limited call; a replay restores the limiter exactly.
func TestClThrottleMsJournal(t *testing.T) {
	const T = 1_795_307_408_539_400_000
	clock := &fakeClock{}
	clock.ns.Store(T)
	j := &recordingJournal{}
	live := newSocketless(t, clock, j)
	for range 3 {
		live.do(t, "CL.THROTTLEMS", "rl", "5", "1000", "1")
	}
	require.Len(t, j.recs, 3)
	require.Equal(t, throttleReply(1, 6, 3, 1, 1), live.do(t, "CL.THROTTLEMS", "rl", "5", "1000", "1", "4"))
	require.Len(t, j.recs, 3, "a limited call logs nothing")
	require.Equal(t, "*3\r\n$6\r\nSETINT\r\n$2\r\nrl\r\n$16\r\n"+setIntPayload(T+3000, 1795307408540)+"\r\n", string(j.recs[2]))

	restored := newSocketless(t, clock, nil)
	n, err := restored.replay(t, j.recs)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	for _, cmd := range []string{"GET", "PEXPIRETIME"} {
		require.Equal(t, live.do(t, cmd, "rl"), restored.do(t, cmd, "rl"), cmd)
	}
	clock.ns.Store(T + 1000)
	for _, s := range []*socketless{live, restored} {
		require.Equal(t, throttleReply(0, 6, 3, -1, 1), s.do(t, "CL.THROTTLEMS", "rl", "5", "1000", "1"))
	}
}

// TestClThrottleMsCommandInfo: COMMAND INFO describes CL.THROTTLEMS as it
// does CL.THROTTLE, and COMMAND DOCS lists it in the ratelimit group.
func TestClThrottleMsCommandInfo(t *testing.T) {
	r := newTestServer(t).raw(t)
	info := r.do("COMMAND", "INFO", "cl.throttle")
	require.True(t, strings.HasPrefix(info, "*1\r\n*10\r\n"+svBulk("cl.throttle")+":-1\r\n"), info)
	require.Equal(t, strings.Replace(info, svBulk("cl.throttle"), svBulk("cl.throttlems"), 1), r.do("COMMAND", "INFO", "CL.THROTTLEMS"))
	require.Equal(t, "*2\r\n"+svBulk("cl.throttlems")+"*6\r\n"+svBulk("summary")+svBulk(commands["cl.throttlems"].Summary)+
		svBulk("since")+svBulk(Version)+svBulk("group")+svBulk("ratelimit"), r.do("COMMAND", "DOCS", "cl.throttlems"))
	require.Equal(t, "*1\r\n$1\r\nk\r\n", r.do("COMMAND", "GETKEYS", "CL.THROTTLEMS", "k", "5", "10", "1000"))
}

// TestClThrottleHotPathAllocs: CL.THROTTLE, CL.THROTTLEMS and CL.PEEK
// allocate nothing, allowed or limited.
func TestClThrottleHotPathAllocs(t *testing.T) {
	ts := newTestServer(t)
	c := newDirectConn(t, ts)
	for i, args := range [][]string{
		a("CL.THROTTLE", "s", "1000000", "1000000", "1"),
		a("CL.THROTTLE", "sl", "0", "1", "60"),
		a("CL.THROTTLEMS", "m", "1000000", "1000000", "1000"),
		a("CL.THROTTLEMS", "ml", "0", "1", "60000"),
		a("CL.PEEK", "m", "5", "1000", "1"),
	} {
		argv := bs(args...)
		directDo(c, argv...) // create the key and warm the buffers
		allocs := testing.AllocsPerRun(200, func() {
			if out := directDo(c, argv...); len(out) < 4 || string(out[:4]) != "*5\r\n" {
				t.Fatalf("case %d: %q: have %q", i, args, out)
			}
		})
		if allocs != 0 {
			t.Errorf("case %d: %q: %.1f allocations per call, want 0", i, args, allocs)
		}
	}
}

// BenchmarkClThrottleMs runs CL.THROTTLEMS through the dispatcher in
// parallel over 1024 keys, beside CL.THROTTLE at the same rate (1000 per
// second, burst 100): the command path without the network. Target: 0
// allocs/op for both.
func BenchmarkClThrottleMs(b *testing.B) {
	for _, bc := range []struct{ cmd, period string }{{"CL.THROTTLE", "1"}, {"CL.THROTTLEMS", "1000"}} {
		b.Run(bc.cmd, func(b *testing.B) {
			srv := benchServer(b)
			reqs := make([][][]byte, 1024)
			for i := range reqs {
				reqs[i] = [][]byte{[]byte(bc.cmd), benchKey(i), []byte("100"), []byte("1000"), []byte(bc.period)}
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
