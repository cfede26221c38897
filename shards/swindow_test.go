package shards

import (
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSlidingWindowTable walks one counter through a scripted sequence
// (window 1000 ms, max 10).
func TestSlidingWindowTable(t *testing.T) {
	const start = 1_795_307_408_000 // a multiple of 1000
	p := func(q int64) SWParams { return SWParams{Max: 10, Window: 1000, Quantity: q} }
	tests := []struct {
		at   int64
		p    SWParams
		want SWResult
		cur  int64
		prev int64
	}{
		0: {0, p(4), SWResult{Remaining: 6, RetryAfter: -1, ResetAfter: 2000}, 4, 0},
		1: {500, p(6), SWResult{Remaining: 0, RetryAfter: -1, ResetAfter: 1500}, 10, 0},
		2: {999, p(1), SWResult{Limited: true, Remaining: 0, RetryAfter: 101, ResetAfter: 1001}, 10, 0},  // next window: 10×(1000−t)/1000+1 <= 10 at t=100
		3: {1000, p(1), SWResult{Limited: true, Remaining: 0, RetryAfter: 100, ResetAfter: 1000}, 0, 10}, // estimate 10 at the boundary
		4: {1100, p(1), SWResult{Remaining: 0, RetryAfter: -1, ResetAfter: 1900}, 1, 10},                 // 10×0.9 + 1 = 10
		5: {1100, p(11), SWResult{Limited: true, Remaining: 0, RetryAfter: -1, ResetAfter: 1900}, 1, 10}, // more than max: never
		6: {1150, p(0), SWResult{Remaining: 0, RetryAfter: -1, ResetAfter: 1850}, 1, 10},                 // 8.5 + 1: 0 more
		7: {1550, p(2), SWResult{Remaining: 2, RetryAfter: -1, ResetAfter: 1450}, 3, 10},                 // 10×0.45 + 1 = 5.5: 2 fit, 2 more remain
		8: {5000, p(3), SWResult{Remaining: 7, RetryAfter: -1, ResetAfter: 2000}, 3, 0},                  // long idle: both windows empty
	}
	w := &SlidingWindow{}
	for i, tt := range tests {
		have := w.Throttle(start+tt.at, tt.p)
		if have != tt.want {
			t.Errorf("step %d: have %+v, want %+v", i, have, tt.want)
		}
		if w.Cur != tt.cur || w.Prev != tt.prev {
			t.Errorf("step %d: have cur %d prev %d, want %d %d", i, w.Cur, w.Prev, tt.cur, tt.prev)
		}
	}
}

// swFits is the decision in exact rational arithmetic.
func swFits(prev, cur, q, max, window, el int64) bool {
	est := new(big.Rat).SetFrac64(prev*(window-el), window)
	est.Add(est, big.NewRat(cur+q, 1))
	return est.Cmp(big.NewRat(max, 1)) <= 0
}

// TestSlidingWindowRetry checks decisions against rational arithmetic and
// that retry times are exact to the millisecond.
func TestSlidingWindowRetry(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewPCG(seed, 3))
	for round := 0; round < 300; round++ {
		w := &SlidingWindow{}
		now := int64(1_795_307_408_539)
		p := SWParams{Max: 1 + rnd.Int64N(20), Window: 1 + rnd.Int64N(5000)}
		for step := 0; step < 60; step++ {
			now += rnd.Int64N(p.Window/2 + 1)
			if rnd.IntN(8) == 0 {
				// A small clock step back: retry_after still holds (it
				// was short by the step).
				now -= rnd.Int64N(p.Window)
			}
			p.Quantity = rnd.Int64N(p.Max/2 + 2)
			before := *w
			r := w.Throttle(now, p)
			el := max(now-w.Start, 0) // the decision's
			require.True(t, el < p.Window, "round %d step %d: elapsed %d", round, step, el)
			// Decide on the rolled state, before the call's own events.
			want := swFits(w.Prev, w.Cur-boolInt(!r.Limited)*p.Quantity, p.Quantity, p.Max, p.Window, el)
			require.Equal(t, !want, r.Limited, "round %d step %d: %+v before %+v", round, step, p, before)
			// Remaining is the most that fits now (0 when nothing does: after
			// a step back the previous window weighs more than it did).
			require.True(t, r.Remaining == 0 || swFits(w.Prev, w.Cur, r.Remaining, p.Max, p.Window, el), "round %d step %d: remaining %d", round, step, r.Remaining)
			require.False(t, r.Remaining < p.Max && swFits(w.Prev, w.Cur, r.Remaining+1, p.Max, p.Window, el), "round %d step %d: remaining %d too small", round, step, r.Remaining)
			if !r.Limited || p.Quantity > p.Max {
				require.Equal(t, int64(-1), r.RetryAfter)
				continue
			}
			require.Positive(t, r.RetryAfter)
			early, onTime := *w, *w
			probe := p
			require.True(t, early.Throttle(now+r.RetryAfter-1, probe).Limited, "round %d step %d: allowed before retry %d", round, step, r.RetryAfter)
			require.False(t, onTime.Throttle(now+r.RetryAfter, probe).Limited, "round %d step %d: refused at retry %d (%+v, state %+v)", round, step, r.RetryAfter, p, *w)
		}
	}
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// TestSlidingWindowOverflow: huge counts and windows must not overflow.
func TestSlidingWindowOverflow(t *testing.T) {
	const maxInt = 1<<63 - 1
	w := &SlidingWindow{}
	r := w.Throttle(1_795_307_408_539, SWParams{Max: maxInt, Window: 1 << 40, Quantity: maxInt})
	require.False(t, r.Limited)
	r = w.Throttle(1_795_307_408_540, SWParams{Max: maxInt, Window: 1 << 40, Quantity: 1})
	require.True(t, r.Limited)
	require.Positive(t, r.RetryAfter)
}
