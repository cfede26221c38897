package gcra

import (
	"errors"
	"math"
	"testing"
)

// FuzzThrottle calls Throttle and Peek twice per input: once with the raw
// int64s (anything may happen, but nothing may panic and errors must be
// clean), and once with the inputs folded into the sane domain, where the
// algorithm's invariants and redis-cell's replies are checked (with millis,
// CL.THROTTLEMS's: the decisions of the same rate in seconds).
func FuzzThrottle(f *testing.F) {
	f.Add(int64(0), false, t0, int64(4), int64(1), int64(1), int64(1), false)
	f.Add(t0+5*nsPerSecond, true, t0, int64(4), int64(1), int64(1), int64(1), false)
	f.Add(t0+3600*nsPerSecond, true, t0+nsPerMillisecond, int64(9), int64(10), int64(3600), int64(10), false)
	f.Add(t0, true, t0, int64(6000), int64(6000), int64(1), int64(1), false)
	f.Add(t0+nsPerSecond, true, t0, int64(5), int64(1), int64(60), int64(-3), false)
	f.Add(int64(math.MaxInt64), true, int64(math.MinInt64), int64(-1), int64(0), int64(9e18), int64(math.MinInt64), false)
	f.Add(int64(0), false, int64(math.MaxInt64), int64(math.MaxInt64), int64(-1), int64(-1), int64(math.MaxInt64), false)
	f.Add(int64(0), false, t0, int64(5), int64(math.MaxInt64), int64(math.MaxInt64), int64(1), false)
	f.Add(t0+360*nsPerSecond, true, t0, int64(5), int64(1), int64(60), int64(153722867), false)
	f.Add(int64(0), false, t0, int64(5), int64(1000), int64(1), int64(1), true)
	f.Add(t0+6000, true, t0, int64(5), int64(1000), int64(1), int64(1), true)
	f.Add(int64(0), false, t0, int64(0), int64(1000001), int64(1), int64(1), true)
	f.Add(int64(0), false, t0, int64(0), int64(1), int64(9223372036855), int64(0), true)
	f.Fuzz(func(t *testing.T, tat int64, hasTAT bool, now, maxBurst, count, period, quantity int64, millis bool) {
		p := Params{MaxBurst: maxBurst, Count: count, Period: period, Quantity: quantity, Millis: millis}
		checkCall(t, tat, hasTAT, now, p)

		// Fold into the sane domain: now near t0, the TAT within ±1e6 s of
		// it, rates from 1/1e6 s to 1e6/s (1/1e6 ms to 1e6/ms with
		// millis: up to one per nanosecond), quantities around the limit.
		sane := Params{
			MaxBurst: int64(uint64(maxBurst) % 1000),
			Count:    1 + int64(uint64(count)%1_000_000),
			Period:   1 + int64(uint64(period)%1_000_000),
			Millis:   millis,
		}
		sane.Quantity = quantity % (sane.MaxBurst + 3)
		saneNow := t0 + now%(1_000_000*nsPerSecond)
		checkCall(t, saneNow+tat%(1_000_000*nsPerSecond), hasTAT, saneNow, sane)
	})
}

// checkCall checks the invariants of one call.
func checkCall(t *testing.T, tat int64, hasTAT bool, now int64, p Params) {
	t.Helper()
	r, err := Throttle(tat, hasTAT, now, p)
	pk, perr := Peek(tat, hasTAT, now, p)
	if err != perr {
		t.Fatalf("%d %v %d %+v: Throttle error %v, Peek error %v", tat, hasTAT, now, p, err, perr)
	}
	if err != nil {
		if !errors.Is(err, ErrZeroRate) && !errors.Is(err, ErrNegative) && !errors.Is(err, ErrOverflow) {
			t.Fatalf("%d %v %d %+v: unexpected error %v", tat, hasTAT, now, p, err)
		}
		if r != (Result{}) {
			t.Fatalf("%d %v %d %+v: error %v with non-zero result %+v", tat, hasTAT, now, p, err, r)
		}
		if p.MaxBurst >= 0 && p.Count > 0 && p.Period > 0 && interval(p) > 0 && !errors.Is(err, ErrOverflow) {
			t.Fatalf("%d %v %d %+v: sane parameters rejected: %v", tat, hasTAT, now, p, err)
		}
		return
	}
	if p.MaxBurst < 0 || p.Count <= 0 || p.Period <= 0 {
		t.Fatalf("%d %v %d %+v: invalid parameters accepted: %+v", tat, hasTAT, now, p, r)
	}
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%d %v %d %+v -> %+v: "+format, append([]any{tat, hasTAT, now, p, r}, args...)...)
	}

	// Peek replies what Throttle replies and asks for nothing.
	if reply(pk) != reply(r) {
		fail("Peek replies %v", reply(pk))
	}
	if pk.Write || pk.Delete || pk.NewTAT != 0 || pk.TTL != 0 {
		fail("Peek asks for a change: %+v", pk)
	}

	if r.Limit != p.MaxBurst+1 {
		fail("limit is not max_burst+1")
	}
	if r.Remaining < 0 || r.Remaining > r.Limit {
		fail("remaining outside [0, limit]")
	}
	if r.ResetAfter < 0 {
		fail("negative reset_after")
	}
	if (r.RetryAfter == -1) != (!r.Limited || p.Quantity > r.Limit) {
		fail("retry_after == -1 must mean allowed or quantity > limit")
	}
	if r.RetryAfter < -1 {
		fail("retry_after below -1")
	}
	if r.Write && r.Delete {
		fail("both Write and Delete")
	}
	if r.Limited && (r.Write || r.Delete) {
		fail("a limited call changes the key")
	}
	if !r.Limited && p.Quantity >= 0 && !r.Write {
		fail("an allowed call does not write")
	}
	if p.Quantity < 0 && (r.Limited || r.Write == r.Delete) {
		fail("a refund must be allowed and either write or delete")
	}
	if r.Write {
		if d, ok := sub(r.NewTAT, now); !ok || d != r.TTL || r.TTL < 0 {
			fail("TTL is not NewTAT-now")
		}
		if r.ResetAfter != p.replyUnits(r.TTL) {
			fail("reset_after is not the new TTL in the reply's unit")
		}
	}
	base := now
	if hasTAT && tat > now {
		base = tat
	}
	switch {
	case p.Quantity > 0 && r.Write:
		// The TAT never moves backwards on an allowed call, and moves
		// forward by at least the cost.
		ei := interval(p)
		if r.NewTAT < base || r.NewTAT-base != ei*p.Quantity {
			fail("new TAT is not max(TAT, now) + ei*quantity")
		}
	case p.Quantity == 0 && r.Write:
		if r.NewTAT != base {
			fail("quantity 0 moved the TAT")
		}
	case p.Quantity < 0 && r.Write:
		if r.NewTAT <= now || r.NewTAT >= base {
			fail("a refund must move the TAT back but stay after now")
		}
	}
	if p.Millis {
		// The same rate in seconds, where one exists and the two
		// intervals are equal (below 2^53 ns).
		if p.Period%1000 == 0 && p.Period < (1<<53)/nsPerMillisecond {
			sp := p
			sp.Period, sp.Millis = p.Period/1000, false
			checkMillisAgainstSeconds(t, tat, hasTAT, now, p, sp)
		}
		return
	}
	checkAgainstReference(t, tat, hasTAT, now, p, r, err)
}
