package shards

// The sliding-window counter behind SW.THROTTLE: two fixed-window counts
// stand in for the log. The estimate of the events in the last window is
// the current fixed window's count plus the previous window's count weighted
// by how much of it the sliding window still overlaps:
//
//	estimate = prev × (window − elapsed) / window + cur
//
// where elapsed is the time since the current fixed window began. It needs
// 24 bytes per key whatever the rate, at the price of assuming the previous
// window's events were evenly spread. Windows are aligned to multiples of
// the window length since the Unix epoch. The arithmetic is exact: products
// are compared in 128 bits, so a retry time is exact to the millisecond.

import "math/bits"

// SlidingWindow is the state of one sliding-window counter, in
// milliseconds. The zero value is an unused counter. It is not safe for
// concurrent use; it belongs to its shard.
type SlidingWindow struct {
	Start int64 // start of the current fixed window
	Cur   int64 // events in the current fixed window
	Prev  int64 // events in the previous fixed window
}

// SWParams are the arguments of one SW.THROTTLE call, in milliseconds.
type SWParams struct {
	Max      int64 // events allowed per window
	Window   int64 // window length (> 0)
	Quantity int64 // events the call adds (>= 0)
}

// SWResult is the outcome of a Throttle call, in milliseconds.
type SWResult struct {
	Limited    bool
	Remaining  int64 // events that could still be added now (>= 0)
	RetryAfter int64 // wait until the same call would be allowed; -1 when allowed or never possible
	ResetAfter int64 // wait until the estimate is 0; 0 when it is
}

// roll moves the counter to the fixed window that contains now.
func (w *SlidingWindow) roll(now, window int64) {
	el := now - w.Start
	switch {
	case w.Cur == 0 && w.Prev == 0 || el < 0 && -el >= window:
		// Unused, or the clock stepped far back: start afresh.
		w.Start, w.Cur, w.Prev = now-floorMod(now, window), 0, 0
	case el < window: // still the current window (or a small step back)
	case el < 2*window:
		w.Start, w.Prev, w.Cur = w.Start+window, w.Cur, 0
	default:
		w.Start, w.Prev, w.Cur = w.Start+el/window*window, 0, 0
	}
}

func floorMod(a, m int64) int64 {
	r := a % m
	if r < 0 {
		r += m
	}
	return r
}

// fits reports whether prev×rest + (cur+q)×window <= limit×window,
// computed without overflow (all terms are non-negative).
func fits(prev, rest, cur, q, limit, window int64) bool {
	h1, l1 := bits.Mul64(uint64(prev), uint64(rest))
	h2, l2 := bits.Mul64(uint64(cur)+uint64(q), uint64(window))
	l, c := bits.Add64(l1, l2, 0)
	h, _ := bits.Add64(h1, h2, c)
	hm, lm := bits.Mul64(uint64(limit), uint64(window))
	return h < hm || h == hm && l <= lm
}

// remaining returns the largest q with prev×rest + (cur+q)×window <=
// limit×window, or 0: floor((limit×window − prev×rest) / window) − cur.
func remaining(prev, rest, cur, limit, window int64) int64 {
	ph, pl := bits.Mul64(uint64(prev), uint64(rest))
	mh, ml := bits.Mul64(uint64(limit), uint64(window))
	if ph > mh || ph == mh && pl > ml {
		return 0
	}
	dl, b := bits.Sub64(ml, pl, 0)
	dh, _ := bits.Sub64(mh, ph, b)
	q, _ := bits.Div64(dh, dl, uint64(window)) // <= limit: no overflow
	return max(int64(q)-cur, 0)
}

// span returns the least t in [0, window] with a×(window−t) <= b×window, or
// -1 when b < 0 (never). a > 0.
func span(a, b, window int64) int64 {
	if b < 0 {
		return -1
	}
	if b >= a {
		return 0
	}
	// window − t <= floor(b×window / a)
	hi, lo := bits.Mul64(uint64(b), uint64(window))
	q, _ := bits.Div64(hi, lo, uint64(a))
	return window - int64(q)
}

// Throttle runs one sliding-window decision at now: it refuses when the
// estimate plus Quantity exceeds Max, and otherwise adds Quantity to the
// current window. It is a pure function of the state, now and p.
func (w *SlidingWindow) Throttle(now int64, p SWParams) SWResult {
	W := p.Window
	w.roll(now, W)
	el := max(now-w.Start, 0)
	var r SWResult
	r.Limited = !fits(w.Prev, W-el, w.Cur, p.Quantity, p.Max, W)
	if !r.Limited {
		w.Cur += p.Quantity
	}
	r.Remaining = remaining(w.Prev, W-el, w.Cur, p.Max, W)
	r.RetryAfter = -1
	if r.Limited && p.Quantity <= p.Max {
		r.RetryAfter = w.retry(el, p)
		if back := w.Start - now; back > 0 && r.RetryAfter >= 0 {
			// A small clock step back: the decision counts now as the
			// window's start, which the clock reaches back ms later.
			r.RetryAfter += back
		}
	}
	switch {
	case w.Cur > 0:
		r.ResetAfter = w.Start + 2*W - now
	case w.Prev > 0:
		r.ResetAfter = w.Start + W - now
	}
	return r
}

// retry returns the wait until the same call would fit, given that it does
// not fit now, el into the current window.
func (w *SlidingWindow) retry(el int64, p SWParams) int64 {
	W := p.Window
	// Later in this window: prev×(W−t) <= (max−q−cur)×W.
	if w.Prev > 0 {
		if t := span(w.Prev, p.Max-p.Quantity-w.Cur, W); t >= 0 && t < W && t > el {
			return t - el
		}
	}
	// In the next window, where prev is today's cur and cur is 0.
	next := W - el
	if w.Cur == 0 {
		return next
	}
	t := span(w.Cur, p.Max-p.Quantity, W)
	if t < 0 {
		return -1
	}
	return next + t
}
