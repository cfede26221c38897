package command

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// hashBucket is the token bucket on a hash that many limiters ship (state
// in HMGET/HSET fields, the time passed in by the client): its float
// arithmetic, Lua's number-to-string conversions in HSET and tostring, and
// PEXPIRE must give Redis's bytes.
const hashBucket = `local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local requested = tonumber(ARGV[4])
local b = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(b[1]) or capacity
local ts = tonumber(b[2]) or now
tokens = math.min(capacity, tokens + math.max(0, now - ts) * rate)
local allowed = tokens >= requested
if allowed then tokens = tokens - requested end
redis.call('HSET', KEYS[1], 'tokens', tokens, 'ts', now)
redis.call('PEXPIRE', KEYS[1], math.ceil(capacity / rate * 1000))
return {allowed and 1 or 0, tostring(tokens), redis.call('HGETALL', KEYS[1])}`

// TestDiffHashTokenBucket runs the bucket with random capacities, rates,
// times and costs on redis-server and ratekv and compares every reply and
// the hash afterwards.
func TestDiffHashTokenBucket(t *testing.T) {
	addr := redisAddr(t)
	rng := rand.New(rand.NewPCG(diffSeed(t, "RATEKV_BUCKET_SEED"), 11))
	ts := newTestServer(t)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			d := &differ{t: t, real: dialRaw(t, addr), ours: ts.raw(t), maxFails: 10}
			for _, r := range []*rawConn{d.real, d.ours} {
				require.Equal(t, "+OK\r\n", r.do("FLUSHALL"))
				if proto == 3 {
					require.True(t, strings.HasPrefix(r.do("HELLO", "3"), "%"))
				}
			}
			sha := sha1hex([]byte(hashBucket))
			d.check([]string{"SCRIPT", "LOAD", hashBucket})
			now := 1_700_000_000.0
			for i := 0; i < 400; i++ {
				key := fmt.Sprintf("bucket:%d", rng.IntN(4))
				capacity := fmt.Sprint(1 + rng.IntN(20))
				rate := []string{"1", "0.5", "3", "0.1", "2.5", "7"}[rng.IntN(6)]
				now += []float64{0, 0.001, 0.1, 0.25, 1, 3.7}[rng.IntN(6)]
				cost := fmt.Sprint(rng.IntN(4))
				d.check([]string{"EVALSHA", sha, "1", key, capacity, rate, fmt.Sprintf("%.3f", now), cost})
				d.check([]string{"HGETALL", key})
			}
			t.Logf("%d commands compared", d.steps)
		})
	}
}
