package gcra

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"
)

// refReply is a literal transliteration of spec §3 and §4 (redis-cell
// ≥ 0.4's rate_limit and reply conversion) in exact big-integer arithmetic,
// with redis-cell's float64 steps done in float64. It is independent of the
// package's checked int64 code. ok is false when redis-cell would leave the
// int64 range somewhere (its reply is undefined there) or reports an error.
// Only sane parameters (count, period > 0) may be passed.
func refReply(tat int64, hasTAT bool, now int64, p Params) (reply [5]int64, ok bool) {
	b := big.NewInt
	fits := func(xs ...*big.Int) bool {
		for _, x := range xs {
			if !x.IsInt64() {
				return false
			}
		}
		return true
	}
	ei, ok := refInterval(p)
	if !ok || ei == 0 {
		return reply, false
	}
	limit := new(big.Int).Add(b(p.MaxBurst), b(1))
	dvt := new(big.Int).Mul(b(ei), limit)
	inc := new(big.Int).Mul(b(ei), b(p.Quantity))
	t := b(now)
	if hasTAT {
		t = b(tat)
	}
	newTAT := new(big.Int).Add(bigMax(b(now), t), inc)
	allowAt := new(big.Int).Sub(newTAT, dvt)
	diff := new(big.Int).Sub(b(now), allowAt)
	if !fits(limit, dvt, inc, newTAT, allowAt, diff) {
		return reply, false
	}
	minusOneSecond := b(-nsPerSecond)
	retry, ttl := minusOneSecond, new(big.Int)
	if diff.Sign() < 0 {
		reply[0] = 1
		if inc.Cmp(dvt) <= 0 {
			retry = new(big.Int).Neg(diff)
		}
		ttl.Sub(t, b(now))
	} else {
		ttl.Sub(newTAT, b(now))
	}
	next := new(big.Int).Sub(dvt, ttl)
	if !fits(retry, ttl, next) {
		return reply, false
	}
	var remaining int64
	if next.Cmp(b(-ei)) > 0 {
		// whole_microseconds() truncates toward zero, as Go's / does.
		remaining = saturate(float64(next.Int64()/1000) / float64(ei/1000))
	}
	return [5]int64{reply[0], limit.Int64(), remaining, refSeconds(retry.Int64()), refSeconds(ttl.Int64())}, true
}

// refInterval is redis-cell's emission interval: period·1e9 exact (its
// i128), converted to float64 to nearest, ties to even (Rust's `as f64`,
// big.Float's Float64), divided by count and truncated. ok is false when
// the quotient saturates int64.
func refInterval(p Params) (ei int64, ok bool) {
	ns := new(big.Int).Mul(big.NewInt(p.Period), big.NewInt(nsPerSecond))
	f, _ := new(big.Float).SetInt(ns).Float64()
	q := f / float64(p.Count)
	if q >= 1<<63 || q < -(1<<63) {
		return 0, false
	}
	return int64(q), true
}

func bigMax(a, b *big.Int) *big.Int {
	if a.Cmp(b) >= 0 {
		return a
	}
	return b
}

// saturate is Rust's `f as i64`.
func saturate(f float64) int64 {
	switch {
	case math.IsNaN(f):
		return 0
	case f >= 1<<63:
		return math.MaxInt64
	case f < -(1 << 63):
		return math.MinInt64
	}
	return int64(f)
}

// refSeconds is redis-cell's `d.as_seconds_f64() as i64 +
// (d.subsec_milliseconds() > 0) as i64`; the time crate keeps seconds and
// nanoseconds with the same sign, like Go's / and %.
func refSeconds(d int64) int64 {
	whole, sub := d/nsPerSecond, d%nsPerSecond
	s := saturate(float64(whole) + float64(sub)/1e9)
	if sub/nsPerMillisecond > 0 {
		s++
	}
	return s
}

// sane reports whether p is in the domain where ratekv promises
// redis-cell's reply.
func sane(p Params) bool {
	return p.MaxBurst >= 0 && p.Count > 0 && p.Period > 0 && p.Quantity >= 0
}

// checkAgainstReference compares Throttle with refReply where ratekv
// promises the same reply (doc.go): sane parameters, an emission interval
// of whole microseconds (otherwise remaining differs by design), and
// durations below 2^24 s (beyond which redis-cell's float64 seconds can be
// one higher). A stored TAT in the past is compared as a missing key, which
// is ratekv's documented reading of it.
func checkAgainstReference(t *testing.T, tat int64, hasTAT bool, now int64, p Params, have Result, haveErr error) {
	t.Helper()
	if !sane(p) {
		return
	}
	if hasTAT && tat < now {
		hasTAT = false
	}
	want, ok := refReply(tat, hasTAT, now, p)
	if !ok {
		return
	}
	if haveErr != nil {
		t.Fatalf("Throttle(%d, %v, %d, %+v): have error %v, want %v", tat, hasTAT, now, p, haveErr, want)
	}
	ei, _ := refInterval(p) // fits: refReply checked it
	// Every reply duration is at most held+inc or dvt, which all fit in
	// int64 because refReply succeeded.
	const durationBound = (1 << 24) * nsPerSecond
	var held int64
	if hasTAT {
		held = tat - now
	}
	if ei%1000 != 0 || ei*(p.MaxBurst+1) >= durationBound || held >= durationBound || ei*p.Quantity >= durationBound-held {
		return
	}
	if reply(have) != want {
		t.Fatalf("Throttle(%d, %v, %d, %+v): have %v, want redis-cell's %v", tat, hasTAT, now, p, reply(have), want)
	}
}

// TestReferenceModel pins the reference itself to spec §6's redis-cell
// replies, including the one where ratekv deliberately differs.
func TestReferenceModel(t *testing.T) {
	tests := []struct {
		p    Params
		want [5]int64
	}{
		{pr(6000, 6000, 1, 1), [5]int64{0, 6001, 6024, -1, 0}},
		{pr(4, 500000, 1, 2), [5]int64{0, 5, 3, -1, 0}},
		{pr(15, 30, 60, 1), [5]int64{0, 16, 15, -1, 2}},
		{pr(4, 1, 60, 6), [5]int64{1, 5, 5, -1, 0}},
		{pr(5, math.MaxInt64, math.MaxInt64, 1), [5]int64{0, 6, 5, -1, 1}},
		{pr(0, 2, 9223372037, 1), [5]int64{0, 1, 0, -1, 4611686019}},
	}
	for i, tt := range tests {
		have, ok := refReply(0, false, t0, tt.p)
		if !ok || have != tt.want {
			t.Errorf("step %d: refReply(%+v): have %v, %v, want %v", i, tt.p, have, ok, tt.want)
		}
	}
}

// TestThrottleMatchesRedisCell drives random keys through random call
// sequences on a virtual clock (with the server's millisecond expiry) and
// compares every reply with the reference.
func TestThrottleMatchesRedisCell(t *testing.T) {
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 0))
	defer func() {
		if t.Failed() {
			t.Logf("seed %d", seed)
		}
	}()
	periods := []int64{1, 2, 10, 60, 3600, 86400}
	for range 2000 {
		period := periods[rng.IntN(len(periods))]
		// Mostly counts that give whole microseconds, sometimes not.
		count := 1 + rng.Int64N(1000)
		if rng.IntN(4) == 0 {
			count = 1 + rng.Int64N(10_000_000)
		}
		burst := rng.Int64N(50)
		ei := emissionInterval(period, count)
		var c cell
		now := t0 + rng.Int64N(nsPerSecond)
		for range 50 {
			now += rng.Int64N(2*ei + 1)
			p := Params{MaxBurst: burst, Count: count, Period: period, Quantity: 1}
			switch rng.IntN(8) {
			case 0:
				p.Quantity = 0
			case 1:
				p.Quantity = rng.Int64N(burst + 3)
			}
			tat, has := c.get(now)
			r, err := Throttle(tat, has, now, p)
			checkAgainstReference(t, tat, has, now, p, r, err)
			if err == nil && ei%1000 != 0 {
				// remaining differs from redis-cell by design; it must be
				// exact instead.
				want := max(0, (ei*(burst+1)-ttlAfter(r, tat, has, now))/ei)
				if r.Remaining != want {
					t.Fatalf("%+v: remaining: have %d, want %d", p, r.Remaining, want)
				}
			}
			c.apply(now, r)
		}
	}
}

// ttlAfter is the key's time to live after r, in nanoseconds.
func ttlAfter(r Result, tat int64, has bool, now int64) int64 {
	switch {
	case r.Write:
		return r.TTL
	case r.Delete || !has || tat < now:
		return 0
	}
	return tat - now
}

// TestEmissionIntervalIntegerEquivalence checks the documented claim that
// redis-cell's float64 division equals integer division while period·1e9 is
// below 2^53, and that it may not above.
func TestEmissionIntervalIntegerEquivalence(t *testing.T) {
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 1))
	for i := range 100_000 {
		period := 1 + rng.Int64N((1<<53)/nsPerSecond)
		ns := period * nsPerSecond
		count := 1 + rng.Int64N(ns)
		if rng.IntN(2) == 0 {
			count = 1 + rng.Int64N(1_000_000)
		}
		if have, want := emissionInterval(period, count), ns/count; have != want {
			t.Fatalf("step %d (seed %d): emissionInterval(%d, %d): have %d, want %d", i, seed, period, count, have, want)
		}
	}
	const yearNs = 31536000 * nsPerSecond
	if have, integer := emissionInterval(31536000, 1091402), int64(yearNs/1091402); have != integer+1 {
		t.Errorf("one-year period: have %v, want float64's %v (integer %v)", time.Duration(have), integer+1, integer)
	}
}
