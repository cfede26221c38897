package gcra

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"
)

// prms is pr for CL.THROTTLEMS: period in milliseconds.
func prms(maxBurst, count, periodMs, quantity int64) Params {
	return Params{MaxBurst: maxBurst, Count: count, Period: periodMs, Quantity: quantity, Millis: true}
}

// interval is p's emission interval in nanoseconds, truncated or saturated,
// whatever the other parameters.
func interval(p Params) int64 {
	if p.Millis {
		ei, _ := emissionIntervalMillis(p.Period, p.Count)
		return ei
	}
	return emissionInterval(p.Period, p.Count)
}

const us = time.Microsecond

// millisSequences are CL.THROTTLEMS calls on a virtual clock, one key per
// sequence. The key is kept without expiry: the server keeps it until its
// TAT, and a TAT in the past is a missing key.
var millisSequences = []struct {
	name  string
	steps []step
}{
	{"10 per second, burst 5", []step{
		{at: 0, p: prms(5, 10, 1000, 1), want: [5]int64{0, 6, 5, -1, 100}},
		{at: 0, p: prms(5, 10, 1000, 1), want: [5]int64{0, 6, 4, -1, 200}},
		{at: 0, p: prms(5, 10, 1000, 1), want: [5]int64{0, 6, 3, -1, 300}},
		{at: 0, p: prms(5, 10, 1000, 1), want: [5]int64{0, 6, 2, -1, 400}},
		{at: 0, p: prms(5, 10, 1000, 1), want: [5]int64{0, 6, 1, -1, 500}},
		{at: 0, p: prms(5, 10, 1000, 1), want: [5]int64{0, 6, 0, -1, 600}},
		{at: 0, p: prms(5, 10, 1000, 1), want: [5]int64{1, 6, 0, 100, 600}},
		{at: 50 * ms, p: prms(5, 10, 1000, 1), want: [5]int64{1, 6, 0, 50, 550}},
		{at: 100 * ms, p: prms(5, 10, 1000, 1), want: [5]int64{0, 6, 0, -1, 600}},
		{at: 400 * ms, p: prms(5, 10, 1000, 2), want: [5]int64{0, 6, 1, -1, 500}},
	}},
	// 1,000,000 per second: an emission interval of 1 µs, durations far
	// below a millisecond, rounded up to 1.
	{"1M per second, burst 5", []step{
		{at: 0, p: prms(5, 1000, 1, 1), want: [5]int64{0, 6, 5, -1, 1}},
		{at: 0, p: prms(5, 1000, 1, 4), want: [5]int64{0, 6, 1, -1, 1}},
		{at: 0, p: prms(5, 1000, 1, 1), want: [5]int64{0, 6, 0, -1, 1}},
		{at: 0, p: prms(5, 1000, 1, 1), want: [5]int64{1, 6, 0, 1, 1}},
		{at: 500, p: prms(5, 1000, 1, 1), want: [5]int64{1, 6, 0, 1, 1}},
		{at: 1 * us, p: prms(5, 1000, 1, 1), want: [5]int64{0, 6, 0, -1, 1}},
		{at: 1 * us, p: prms(5, 1000, 1, 1), want: [5]int64{1, 6, 0, 1, 1}},
		{at: 3 * us, p: prms(5, 1000, 1, 0), want: [5]int64{0, 6, 2, -1, 1}},
		{at: 7 * us, p: prms(5, 1000, 1, 0), want: [5]int64{0, 6, 6, -1, 0}},
		{at: 7 * us, p: prms(5, 1000, 1, 6), want: [5]int64{0, 6, 0, -1, 1}},
		{at: 7 * us, p: prms(5, 1000, 1, 7), want: [5]int64{1, 6, 0, -1, 1}},
	}},
	// 1,000,000 per second with a bucket of a whole millisecond.
	{"1M per second, burst 999", []step{
		{at: 0, p: prms(999, 1000, 1, 1000), want: [5]int64{0, 1000, 0, -1, 1}},
		{at: 0, p: prms(999, 1000, 1, 1), want: [5]int64{1, 1000, 0, 1, 1}},
		{at: 250 * us, p: prms(999, 1000, 1, 250), want: [5]int64{0, 1000, 0, -1, 1}},
		{at: 250 * us, p: prms(999, 1000, 1, 1), want: [5]int64{1, 1000, 0, 1, 1}},
		{at: 900 * us, p: prms(999, 1000, 1, 0), want: [5]int64{0, 1000, 650, -1, 1}},
		{at: 2 * ms, p: prms(999, 1000, 1, 1), want: [5]int64{0, 1000, 999, -1, 1}},
	}},
	// Durations are rounded up from nanoseconds; whole milliseconds stay.
	{"rounding, 1 per 3 ms", []step{
		{at: 0, p: prms(0, 1, 3, 1), want: [5]int64{0, 1, 0, -1, 3}},
		{at: 0, p: prms(0, 1, 3, 1), want: [5]int64{1, 1, 0, 3, 3}},
		{at: 1, p: prms(0, 1, 3, 1), want: [5]int64{1, 1, 0, 3, 3}},
		{at: 1 * ms, p: prms(0, 1, 3, 1), want: [5]int64{1, 1, 0, 2, 2}},
		{at: 1*ms + 1, p: prms(0, 1, 3, 1), want: [5]int64{1, 1, 0, 2, 2}},
		{at: 2*ms - 1, p: prms(0, 1, 3, 1), want: [5]int64{1, 1, 0, 2, 2}},
		{at: 2 * ms, p: prms(0, 1, 3, 1), want: [5]int64{1, 1, 0, 1, 1}},
		{at: 3*ms - 1, p: prms(0, 1, 3, 1), want: [5]int64{1, 1, 0, 1, 1}},
		{at: 3 * ms, p: prms(0, 1, 3, 1), want: [5]int64{0, 1, 0, -1, 3}},
	}},
	// An interval of 333333 ns: not a whole number of anything.
	{"3 per millisecond", []step{
		{at: 0, p: prms(2, 3, 1, 1), want: [5]int64{0, 3, 2, -1, 1}},
		{at: 0, p: prms(2, 3, 1, 2), want: [5]int64{0, 3, 0, -1, 1}},
		{at: 0, p: prms(2, 3, 1, 1), want: [5]int64{1, 3, 0, 1, 1}},
		{at: 333333, p: prms(2, 3, 1, 1), want: [5]int64{0, 3, 0, -1, 1}},
		{at: 2 * ms, p: prms(2, 3, 1, 0), want: [5]int64{0, 3, 3, -1, 0}},
	}},
	// The fastest rate: one per nanosecond.
	{"1 per ns", []step{
		{at: 0, p: prms(0, 1000000, 1, 1), want: [5]int64{0, 1, 0, -1, 1}},
		{at: 0, p: prms(0, 1000000, 1, 1), want: [5]int64{1, 1, 0, 1, 1}},
		{at: 1, p: prms(0, 1000000, 1, 1), want: [5]int64{0, 1, 0, -1, 1}},
	}},
	{"refund", []step{
		{at: 0, p: prms(5, 1, 60000, 3), want: [5]int64{0, 6, 3, -1, 180000}},
		{at: 0, p: prms(5, 1, 60000, -1), want: [5]int64{0, 6, 4, -1, 120000}},
		{at: 30 * time.Second, p: prms(5, 1, 60000, -5), want: [5]int64{0, 6, 6, -1, 0}, key: absent},
	}},
}

func TestThrottleMillisSequences(t *testing.T) {
	for _, seq := range millisSequences {
		t.Run(seq.name, func(t *testing.T) {
			var (
				tat int64
				has bool
			)
			for i, s := range seq.steps {
				now := t0 + int64(s.at)
				r, err := Throttle(tat, has, now, s.p)
				if err != nil {
					t.Fatalf("step %d: throttle %+v: %v", i, s.p, err)
				}
				if have := reply(r); have != s.want {
					t.Errorf("step %d: throttle %+v: have %v, want %v", i, s.p, have, s.want)
				}
				if pk, err := Peek(tat, has, now, s.p); err != nil || reply(pk) != reply(r) {
					t.Errorf("step %d: peek: have %v, %v, want %v", i, reply(pk), err, reply(r))
				}
				switch {
				case r.Write:
					tat, has = r.NewTAT, true
				case r.Delete:
					tat, has = 0, false
				}
				if s.key.check && has != s.key.exists {
					t.Errorf("step %d: key exists: have %v, want %v", i, has, s.key.exists)
				}
			}
		})
	}
}

func TestMilliseconds(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want int64
	}{
		{0, 0},
		{1, 1},
		{1 * us, 1},
		{999999, 1},
		{1 * ms, 1},
		{1*ms + 1, 2},
		{2 * ms, 2},
		{time.Second, 1000},
		{time.Second + 1, 1001},
		{time.Duration(math.MaxInt64), 9223372036855},
	}
	for i, tt := range tests {
		if have := milliseconds(int64(tt.d)); have != tt.want {
			t.Errorf("step %d: milliseconds(%v): have %d, want %d", i, tt.d, have, tt.want)
		}
	}
}

// TestEmissionIntervalMillis checks period·1e6/count against exact
// big-integer division, and against CL.THROTTLE's float64 interval of the
// same period in seconds below 2^53 ns (the claim in the design notes).
func TestEmissionIntervalMillis(t *testing.T) {
	tests := []struct {
		period, count int64
		want          int64
		fits          bool
	}{
		{1000, 10, 100_000_000, true},
		{1, 1000, 1000, true}, // 1M/s: 1 µs
		{1, 1_000_000, 1, true},
		{1, 1_000_001, 0, true}, // below 1 ns
		{1, 3, 333333, true},
		{-1000, 10, -100_000_000, true},
		{1000, -10, -100_000_000, true},
		{9223372036854, 1, 9223372036854000000, true},
		{9223372036855, 1, math.MaxInt64, false},
		{math.MaxInt64, 1, math.MaxInt64, false},
		{math.MaxInt64, math.MaxInt64, 1_000_000, true},
		{math.MinInt64, 1, math.MinInt64, false},
		{math.MinInt64, math.MinInt64, 1_000_000, true},
	}
	for i, tt := range tests {
		have, fits := emissionIntervalMillis(tt.period, tt.count)
		if have != tt.want || fits != tt.fits {
			t.Errorf("step %d: emissionIntervalMillis(%d, %d): have %d, %v, want %d, %v", i, tt.period, tt.count, have, fits, tt.want, tt.fits)
		}
	}

	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 3))
	for i := range 100_000 {
		period, count := int64(rng.Uint64()), int64(rng.Uint64())
		if rng.IntN(2) == 0 {
			period, count = 1+rng.Int64N(1<<40), 1+rng.Int64N(1<<30)
		}
		if count == 0 {
			continue
		}
		exact := new(big.Int).Mul(big.NewInt(period), big.NewInt(nsPerMillisecond))
		exact.Quo(exact, big.NewInt(count)) // truncates toward zero
		have, fits := emissionIntervalMillis(period, count)
		if fits != exact.IsInt64() || fits && have != exact.Int64() {
			t.Fatalf("step %d (seed %d): emissionIntervalMillis(%d, %d): have %d, %v, want %v", i, seed, period, count, have, fits, exact)
		}
	}
	for i := range 100_000 {
		period := 1 + rng.Int64N((1<<53)/nsPerSecond)
		count := 1 + rng.Int64N(period*nsPerSecond)
		if rng.IntN(2) == 0 {
			count = 1 + rng.Int64N(1_000_000)
		}
		ms, _ := emissionIntervalMillis(period*1000, count)
		if s := emissionInterval(period, count); ms != s {
			t.Fatalf("step %d (seed %d): period %d s, count %d: have %d in ms, %d in s", i, seed, period, count, ms, s)
		}
	}
}

// TestThrottleMillisMatchesSeconds: with the same rate in both units, from
// the same state, CL.THROTTLEMS and CL.THROTTLE decide the same and store
// the same TAT; only the durations' unit differs.
func TestThrottleMillisMatchesSeconds(t *testing.T) {
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 4))
	defer func() {
		if t.Failed() {
			t.Logf("seed %d", seed)
		}
	}()
	periods := []int64{1, 2, 10, 60, 3600, 86400}
	for range 2000 {
		sp := Params{MaxBurst: rng.Int64N(50), Count: 1 + rng.Int64N(10_000_000), Period: periods[rng.IntN(len(periods))]}
		ei := interval(sp)
		var tat int64
		has := false
		now := t0 + rng.Int64N(nsPerSecond)
		for range 50 {
			now += rng.Int64N(2*ei + 1)
			sp.Quantity = 1
			switch rng.IntN(8) {
			case 0:
				sp.Quantity = 0
			case 1:
				sp.Quantity = rng.Int64N(sp.MaxBurst+3) - 1
			}
			mp := sp
			mp.Period, mp.Millis = sp.Period*1000, true
			checkMillisAgainstSeconds(t, tat, has, now, mp, sp)
			if r, err := Throttle(tat, has, now, sp); err == nil {
				switch {
				case r.Write:
					tat, has = r.NewTAT, true
				case r.Delete:
					tat, has = 0, false
				}
			}
		}
	}
}

// checkMillisAgainstSeconds compares a CL.THROTTLEMS call (mp) with the
// CL.THROTTLE call of the same rate (sp, period mp.Period/1000 s).
func checkMillisAgainstSeconds(t *testing.T, tat int64, hasTAT bool, now int64, mp, sp Params) {
	t.Helper()
	m, merr := Throttle(tat, hasTAT, now, mp)
	s, serr := Throttle(tat, hasTAT, now, sp)
	if merr != serr {
		t.Fatalf("%d %v %d %+v: error %v, in seconds %v", tat, hasTAT, now, mp, merr, serr)
	}
	if merr != nil {
		return
	}
	ms, ss := m, s
	ms.RetryAfter, ms.ResetAfter, ss.RetryAfter, ss.ResetAfter = 0, 0, 0, 0
	if ms != ss {
		t.Fatalf("%d %v %d %+v: have %+v, in seconds %+v", tat, hasTAT, now, mp, m, s)
	}
	// A duration of d ns is ceil(d / 1 ms) in milliseconds and, in
	// seconds, d truncated to whole milliseconds then rounded up to whole
	// seconds: so from m ms, d truncated is m or m-1 ms.
	for _, d := range [][2]int64{{m.RetryAfter, s.RetryAfter}, {m.ResetAfter, s.ResetAfter}} {
		inMs, inS := d[0], d[1]
		switch {
		case inMs == -1 && inS == -1:
		case inMs < 0 || inS < 0:
			t.Fatalf("%d %v %d %+v: durations %d ms, %d s", tat, hasTAT, now, mp, inMs, inS)
		case inS != (inMs+999)/1000 && (inMs == 0 || inS != (inMs-1+999)/1000):
			t.Fatalf("%d %v %d %+v: %d ms is not %d s", tat, hasTAT, now, mp, inMs, inS)
		}
	}
}

// TestWindowBoundMillis is TestWindowBound at CL.THROTTLEMS's rates, up to
// one per nanosecond: however calls arrive, no window of w ns holds more
// than limit + w/ei allowed calls.
func TestWindowBoundMillis(t *testing.T) {
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 5))
	for trial := range 500 {
		p := prms(rng.Int64N(10), 1+rng.Int64N(1_000_000), 1+rng.Int64N(3), 1)
		ei := interval(p)
		if ei == 0 {
			continue
		}
		limit := p.MaxBurst + 1
		var (
			tat     int64
			has     bool
			now     = t0
			allowed []int64
		)
		for range 400 {
			switch rng.IntN(3) {
			case 0:
			case 1:
				now += rng.Int64N(ei/4 + 1)
			default:
				now += rng.Int64N(3 * ei)
			}
			r, err := Throttle(tat, has, now, p)
			if err != nil {
				t.Fatalf("trial %d (seed %d): %v", trial, seed, err)
			}
			if r.Write {
				tat, has = r.NewTAT, true
				allowed = append(allowed, now)
			}
		}
		for _, w := range []int64{0, 1, ei - 1, ei, ei + 1, 10 * ei, rng.Int64N(50 * ei)} {
			for i, start := range allowed {
				n := int64(0)
				for _, a := range allowed[i:] {
					if a > start+w {
						break
					}
					n++
				}
				if bound := windowBound(limit, ei, w); n > bound {
					t.Fatalf("trial %d (seed %d) %+v: %d allowed in [%d, %d+%d], bound %d", trial, seed, p, n, start, start, w, bound)
				}
			}
		}
	}
}
