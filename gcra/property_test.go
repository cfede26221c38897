package gcra

import (
	"math/rand/v2"
	"testing"
)

// The window bound. Let unit requests be allowed at times a_1 <= ... <= a_n,
// all inside a closed window [s, s+W]. Each allowed call sets
// TAT_k = max(a_k, TAT_{k-1}) + ei >= TAT_{k-1} + ei, and TAT_1 >= a_1 + ei,
// so TAT_n >= a_1 + n·ei (limited calls leave the TAT alone). The n-th call
// was allowed, so TAT_n - a_n <= dvt = limit·ei. Together:
//
//	n·ei <= a_n - a_1 + limit·ei <= W + limit·ei
//
// hence n <= limit + floor(W/ei), with no extra +1 for the boundary: both
// ends of the window are already included. The bound is tight: a burst of
// limit at s followed by one call every ei reaches it (checked below).
// The key is modelled without expiry; ratekv treats a TAT in the past as a
// missing key, so expiry changes nothing here.
func windowBound(limit, ei, w int64) int64 { return limit + w/ei }

func TestWindowBound(t *testing.T) {
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 2))
	for trial := range 500 {
		p := Params{
			MaxBurst: rng.Int64N(10),
			Count:    1 + rng.Int64N(10),
			Period:   1 + rng.Int64N(5),
			Quantity: 1,
		}
		ei := emissionInterval(p.Period, p.Count)
		limit := p.MaxBurst + 1

		// Requests at random times: clumps of simultaneous calls and gaps
		// around ei, so both the burst and the sustained rate are pushed.
		var (
			tat     int64
			has     bool
			now     = t0
			allowed []int64
		)
		for range 400 {
			switch rng.IntN(3) {
			case 0: // same instant
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

		// A window holding the most requests can be slid to start at an
		// allowed request, so checking those windows covers all of them.
		for _, w := range []int64{0, 1, ei - 1, ei, ei + 1, 3*ei + rng.Int64N(ei), 10 * ei, rng.Int64N(50 * ei)} {
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

// TestWindowBoundTight shows the bound is reached, so a limiter that is too
// strict fails too: a full burst, then one call every ei.
func TestWindowBoundTight(t *testing.T) {
	tests := []struct {
		p Params
		k int64 // calls after the burst
	}{
		{pr(4, 1, 1, 1), 10},
		{pr(0, 3, 2, 1), 7},
		{pr(9, 10, 3600, 1), 25},
	}
	for i, tt := range tests {
		ei := emissionInterval(tt.p.Period, tt.p.Count)
		limit := tt.p.MaxBurst + 1
		var (
			tat int64
			has bool
			n   int64
		)
		call := func(now int64) {
			r, err := Throttle(tat, has, now, tt.p)
			if err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			if r.Write {
				tat, has = r.NewTAT, true
				n++
			}
		}
		for range limit + 1 { // one more than fits
			call(t0)
		}
		for j := int64(1); j <= tt.k; j++ {
			call(t0 + j*ei)
		}
		if want := windowBound(limit, ei, tt.k*ei); n != want {
			t.Errorf("step %d: %+v: have %d allowed in %d·ei, want %d", i, tt.p, n, tt.k, want)
		}
	}
}
