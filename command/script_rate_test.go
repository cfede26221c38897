package command

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// go-redis/redis_rate v10, unchanged, against ratekv: its GCRA scripts
// (EVALSHA, falling back to EVAL) give the results the algorithm defines
// at virtual times, and the same results as against a real redis-server.

// TestRedisRateVirtualTime: with ratekv's clock stopped and advanced by
// the test, redis_rate's results are exact.
func TestRedisRateVirtualTime(t *testing.T) {
	ts := newTestServer(t)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprint("RESP", proto), func(t *testing.T) {
			c := ts.client(t, proto)
			require.NoError(t, c.FlushAll(ctx).Err())
			require.NoError(t, c.ScriptFlush(ctx).Err()) // the first call falls back to EVAL
			lim := redis_rate.NewLimiter(c)
			// Times and rates in binary fractions of a second, so that the
			// script's float arithmetic is exact and so are the results.
			ts.clock.ns.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
			limit := redis_rate.Limit{Rate: 4, Burst: 4, Period: time.Second} // one every 250ms
			for i := 0; i < 4; i++ {
				res, err := lim.Allow(ctx, "k", limit)
				require.NoError(t, err)
				require.Equal(t, 1, res.Allowed, "step %d", i)
				require.Equal(t, 3-i, res.Remaining, "step %d", i)
				require.Equal(t, time.Duration(-1), res.RetryAfter, "step %d", i)
				require.Equal(t, 250*time.Millisecond*time.Duration(i+1), res.ResetAfter, "step %d", i)
			}
			res, err := lim.Allow(ctx, "k", limit)
			require.NoError(t, err)
			require.Equal(t, redis_rate.Result{Limit: limit, Allowed: 0, Remaining: 0, RetryAfter: 250 * time.Millisecond, ResetAfter: time.Second}, *res)

			ts.clock.Advance(625 * time.Millisecond) // two and a half intervals
			res, err = lim.AllowN(ctx, "k", limit, 2)
			require.NoError(t, err)
			require.Equal(t, redis_rate.Result{Limit: limit, Allowed: 2, Remaining: 0, RetryAfter: -1, ResetAfter: 875 * time.Millisecond}, *res)
			res, err = lim.AllowN(ctx, "k", limit, 1)
			require.NoError(t, err)
			require.Equal(t, redis_rate.Result{Limit: limit, Allowed: 0, Remaining: 0, RetryAfter: 125 * time.Millisecond, ResetAfter: 875 * time.Millisecond}, *res)

			ts.clock.Advance(time.Second)
			res, err = lim.AllowAtMost(ctx, "k", limit, 25)
			require.NoError(t, err)
			require.Equal(t, redis_rate.Result{Limit: limit, Allowed: 4, Remaining: 0, RetryAfter: -1, ResetAfter: time.Second}, *res)

			// The key's deadline is the reset time (SET … EX ceil(reset_after)).
			ttl, err := c.TTL(ctx, "rate:k").Result()
			require.NoError(t, err)
			require.Equal(t, time.Second, ttl)
			require.NoError(t, lim.Reset(ctx, "k"))
		})
	}
}

// TestRedisRateMatchesRedis runs the same random sequence of Allow, AllowN
// and AllowAtMost against redis-server and ratekv, with ratekv's clock set
// to the real time before each call: the allowed counts must match, and
// the remaining and the durations within what the time between the two
// calls can change (a remaining computed as 8.9999 on one server, 9.0001 on
// the other, is 8 there and 9 here).
func TestRedisRateMatchesRedis(t *testing.T) {
	addr := redisAddr(t)
	seed := diffSeed(t, "RATEKV_RATE_SEED")
	rng := rand.New(rand.NewPCG(seed, 7))
	ts := newTestServer(t)
	real := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { real.Close() })
	ours := ts.client(t, 2)
	require.NoError(t, real.Del(ctx, "rate:r1", "rate:r2").Err())
	lr, lo := redis_rate.NewLimiter(real), redis_rate.NewLimiter(ours)
	limits := []redis_rate.Limit{redis_rate.PerSecond(50), {Rate: 3, Burst: 5, Period: 200 * time.Millisecond}}
	const slack = 20 * time.Millisecond // time between the two calls, and between TIME and now
	mismatches := 0
	for i := 0; i < 300; i++ {
		key := []string{"r1", "r2"}[rng.IntN(2)]
		limit := limits[rng.IntN(len(limits))]
		n := 1 + rng.IntN(4)
		op := rng.IntN(3)
		call := func(l *redis_rate.Limiter) (*redis_rate.Result, error) {
			switch op {
			case 0:
				return l.Allow(ctx, key, limit)
			case 1:
				return l.AllowN(ctx, key, limit, n)
			}
			return l.AllowAtMost(ctx, key, limit, n)
		}
		ts.clock.ns.Store(time.Now().UnixNano())
		have, err := call(lo)
		require.NoError(t, err)
		want, err := call(lr)
		require.NoError(t, err)
		near := func(a, b time.Duration) bool { return a-b < slack && b-a < slack }
		off := have.Remaining - want.Remaining
		if have.Allowed != want.Allowed || off < -1 || off > 1 ||
			!near(have.RetryAfter, want.RetryAfter) || !near(have.ResetAfter, want.ResetAfter) {
			// The two servers read their clocks a little apart: at a
			// boundary one may allow what the other refuses. Tolerated
			// rarely, and then the keys are realigned.
			mismatches++
			t.Logf("step %d op %d n %d: redis %+v, ratekv %+v", i, op, n, *want, *have)
			require.LessOrEqual(t, mismatches, 10, "step %d op %d n %d %+v:\n  redis  %+v\n  ratekv %+v", i, op, n, limit, want, have)
			require.NoError(t, lr.Reset(ctx, key))
			require.NoError(t, lo.Reset(ctx, key))
		}
		if rng.IntN(4) == 0 {
			time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
		}
	}
	t.Logf("%d mismatches at boundaries", mismatches)
}

// redisRateScript and redisRateAtMostScript are go-redis/redis_rate v10's
// allowN and allowAtMost scripts, byte for byte as its Limiter sends them
// (Copyright (c) 2017 Pavel Pravosud; see TestRedisRateScriptIsNative for
// their SHA1s).
const redisRateAtMostScript = `
-- this script has side-effects, so it requires replicate commands mode
redis.replicate_commands()

local rate_limit_key = KEYS[1]
local burst = ARGV[1]
local rate = ARGV[2]
local period = ARGV[3]
local cost = tonumber(ARGV[4])

local emission_interval = period / rate
local burst_offset = emission_interval * burst

-- redis returns time as an array containing two integers: seconds of the epoch
-- time (10 digits) and microseconds (6 digits). for convenience we need to
-- convert them to a floating point number. the resulting number is 16 digits,
-- bordering on the limits of a 64-bit double-precision floating point number.
-- adjust the epoch to be relative to Jan 1, 2017 00:00:00 GMT to avoid floating
-- point problems. this approach is good until "now" is 2,483,228,799 (Wed, 09
-- Sep 2048 01:46:39 GMT), when the adjusted value is 16 digits.
local jan_1_2017 = 1483228800
local now = redis.call("TIME")
now = (now[1] - jan_1_2017) + (now[2] / 1000000)

local tat = redis.call("GET", rate_limit_key)

if not tat then
  tat = now
else
  tat = tonumber(tat)
end

tat = math.max(tat, now)

local diff = now - (tat - burst_offset)
local remaining = diff / emission_interval

if remaining < 1 then
  local reset_after = tat - now
  local retry_after = emission_interval - diff
  return {
    0, -- allowed
    0, -- remaining
    tostring(retry_after),
    tostring(reset_after),
  }
end

if remaining < cost then
  cost = remaining
  remaining = 0
else
  remaining = remaining - cost
end

local increment = emission_interval * cost
local new_tat = tat + increment

local reset_after = new_tat - now
if reset_after > 0 then
  redis.call("SET", rate_limit_key, new_tat, "EX", math.ceil(reset_after))
end

return {
  cost,
  remaining,
  tostring(-1),
  tostring(reset_after),
}
`

// redisRateScript is bench/redis_rate.lua, the allowN script byte for
// byte (the load generator sends the same file to both servers).
// It is read when first used, from the package's directory, where go test
// runs.
var redisRateScript = sync.OnceValue(func() string {
	b, err := os.ReadFile("../bench/redis_rate.lua")
	if err != nil {
		panic(err)
	}
	return string(b)
})

// BenchmarkEvalShaRedisRate runs redis_rate's GCRA script by EVALSHA
// through the dispatcher, over 1024 keys, one op per call: natively and
// interpreted.
func BenchmarkEvalShaRedisRate(b *testing.B) {
	for _, native := range []string{"yes", "no"} {
		b.Run("native="+native, func(b *testing.B) {
			srv := benchServer(b)
			if err := srv.cfg.Set("lua-native-scripts", native); err != nil {
				b.Fatal(err)
			}
			s, msg := srv.loadScript([]byte(redisRateScript()))
			if msg != "" {
				b.Fatal(msg)
			}
			reqs := make([][][]byte, 1024)
			for i := range reqs {
				reqs[i] = bs("EVALSHA", s.sha, "1", fmt.Sprintf("rate:%d", i), "100", "100", "1", "1")
			}
			c := benchConn(b, srv)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r := reqs[i&1023]
				c.dispatchCmd(c.Lookup(r[0]), r)
				if i == 0 && c.Out[0] != '*' {
					b.Fatalf("reply %q", c.Out)
				}
				c.Out = c.Out[:0]
			}
		})
	}
}

// TestRedisRateScriptIsNative: the scripts above are the ones
// script_native.go recognises, and redis_rate's Limiter runs natively.
func TestRedisRateScriptIsNative(t *testing.T) {
	require.Equal(t, redisRateAllowN, sha1hex([]byte(redisRateScript())))
	require.Equal(t, redisRateAllowAtMost, sha1hex([]byte(redisRateAtMostScript)))
	ts := newTestServer(t)
	lim := redis_rate.NewLimiter(ts.client(t, 2))
	before := ts.srv.scripts.nativeRuns.Load()
	_, err := lim.Allow(ctx, "n", redis_rate.PerSecond(5))
	require.NoError(t, err)
	_, err = lim.AllowAtMost(ctx, "n", redis_rate.PerSecond(5), 3)
	require.NoError(t, err)
	require.Equal(t, before+2, ts.srv.scripts.nativeRuns.Load())
}

// TestNativeScriptsMatchInterpreter runs random calls of both redis_rate
// scripts (valid arguments and not, stored values of every kind, times
// advancing by random steps) on two servers with the same clock, one
// running the scripts natively and one interpreting them: replies and the
// keys' states must be byte-equal. RATEKV_NATIVE_SEED replays a seed.
func TestNativeScriptsMatchInterpreter(t *testing.T) {
	seed := diffSeed(t, "RATEKV_NATIVE_SEED")
	rng := rand.New(rand.NewPCG(seed, 3))
	native, interp := newTestServer(t), newTestServer(t, "lua-native-scripts", "no")
	base := time.Now().UnixNano()
	native.clock.ns.Store(base)
	interp.clock.ns.Store(base)
	a, b := native.raw(t), interp.raw(t)
	for _, r := range []*rawConn{a, b} {
		require.Equal(t, "$40\r\n"+redisRateAllowN+"\r\n", r.do("SCRIPT", "LOAD", redisRateScript()))
		require.Equal(t, "$40\r\n"+redisRateAllowAtMost+"\r\n", r.do("SCRIPT", "LOAD", redisRateAtMostScript))
	}
	pick := func(list ...string) string { return list[rng.IntN(len(list))] }
	number := func(plain ...string) string {
		if rng.IntN(8) == 0 {
			return pick("abc", "", " 5", "007", "0x10", "1e999", "-0", "-0.0", "inf", "nan", "5.", ".5", "1e", "+3", "1_0")
		}
		return pick(plain...)
	}
	keys := []string{"k0", "k1", "k2"}
	before := native.srv.scripts.nativeRuns.Load()
	for i := 0; i < 3000; i++ {
		step := time.Duration(rng.IntN(3)) * time.Duration(rng.IntN(800000)) * time.Microsecond
		if rng.IntN(5) == 0 {
			step += time.Duration(rng.IntN(1000))
		}
		native.clock.Advance(step)
		interp.clock.Advance(step)
		key := keys[rng.IntN(len(keys))]
		var args []string
		switch rng.IntN(20) {
		case 0: // a stored value the script may not read as a number
			args = []string{"SET", key, pick("abc", "-0", "1e999", "12.5", "0x10", " 7", "276771234.5")}
		case 1:
			args = []string{"DEL", key}
		case 2:
			args = []string{"ZADD", key, "1", "m"}
		default:
			cmd := "EVALSHA"
			if rng.IntN(15) == 0 {
				cmd = "EVALSHA_RO"
			}
			sha := redisRateAllowN
			if rng.IntN(2) == 0 {
				sha = redisRateAllowAtMost
			}
			args = []string{cmd, sha, "1", key,
				number("1", "5", "10", "100", "3", "2.5", "1e3", "0"),
				number("1", "5", "10", "1000", "7", "0.5", "3"),
				number("1", "60", "0.5", "3600", "2", "1e-3"),
				number("1", "2", "0", "5", "3", "0.25", "-1", "100")}
			if rng.IntN(25) == 0 {
				args = append(args, "extra")
			}
		}
		have, want := a.do(args...), b.do(args...)
		require.Equal(t, want, have, "step %d: %q", i, args)
		for _, c := range []string{"GET", "PTTL", "TYPE"} {
			require.Equal(t, b.do(c, key), a.do(c, key), "step %d: %s %s after %q", i, c, key, args)
		}
	}
	runs := native.srv.scripts.nativeRuns.Load() - before
	t.Logf("%d calls ran natively", runs)
	require.Greater(t, runs, int64(600))
}

// TestNativeScriptAllocs: redis_rate's scripts, run natively by EVALSHA,
// allocate nothing, allowed or limited, with the SHA1 in either case.
func TestNativeScriptAllocs(t *testing.T) {
	ts := newTestServer(t)
	c := newDirectConn(t, ts)
	for _, body := range []string{redisRateScript(), redisRateAtMostScript} {
		s, msg := ts.srv.loadScript([]byte(body))
		require.Empty(t, msg)
		for i, args := range [][]string{
			a("EVALSHA", s.sha, "1", "rate:a", "1000000", "1000000", "1", "1"),
			a("EVALSHA", strings.ToUpper(s.sha), "1", "rate:l", "0", "1", "1", "1"),
		} {
			argv := bs(args...)
			directDo(c, argv...)
			before := ts.srv.scripts.nativeRuns.Load()
			allocs := testing.AllocsPerRun(200, func() {
				if out := directDo(c, argv...); len(out) < 4 || string(out[:4]) != "*4\r\n" {
					t.Fatalf("case %d: %q: have %q", i, args, out)
				}
			})
			require.Greater(t, ts.srv.scripts.nativeRuns.Load(), before, "case %d ran natively", i)
			require.Zero(t, allocs, "case %d: %q: allocations per call", i, args)
		}
	}
}

// TestBenchScriptIsRedisRate: bench/redis_rate.lua, which these tests and
// the load generator (-script) use, is redis_rate's allowN script byte for
// byte, so that ratekv runs it natively.
func TestBenchScriptIsRedisRate(t *testing.T) {
	require.Equal(t, redisRateAllowN, sha1hex([]byte(redisRateScript())))
}
