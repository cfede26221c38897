package gcra

// Design notes.
//
// Everything is int64 nanoseconds, like the TAT stored in the key. All
// parameters are validated and every product or sum that could leave the
// int64 range is checked once, up front or where it is first computed, with
// the helpers in arith.go; no expression here relies on wrapping.
//
// The emission interval is computed the way redis-cell computes it, with a
// float64 division truncated toward zero, not with an integer division,
// of period·1e9 taken exactly (redis-cell's i128), so a period beyond
// int64 nanoseconds is fine when count brings the interval back in range. For
// period·1e9 < 2^53 ns (periods under about 104 days) the two are identical;
// above that they can differ by a nanosecond (a one-year period with count
// 1091402 gives 28894944301 ns in float64, 28894944300 in integers), and
// redis-cell compatibility wins.
//
// With Params.Millis (CL.THROTTLEMS) the period is in milliseconds and the
// emission interval is the exact integer quotient period·1e6/count, taken in
// 128 bits and truncated: there is no redis-cell behaviour to copy. It equals
// the float64 one of the same period in seconds whenever period·1e6 < 2^53 ns
// (periods under about 104 days; see TestEmissionIntervalMillis), so
// CL.THROTTLE k 5 10 1 and CL.THROTTLEMS k 5 10 1000 share one TAT schedule.
//
// An interval must be at least one nanosecond, the resolution of the TAT. A
// rate above one request per nanosecond (count > period·1e9, or count >
// period_ms·1e6 with Millis) truncates to zero and is ErrZeroRate, as in
// redis-cell ("5 2000000000 1"); it is not rounded up to 1 ns, which would
// silently allow a slower rate than asked. Between 1 and 2 ns the truncation
// can allow up to twice the rate asked (1.5 ns becomes 1 ns), as it does
// for CL.THROTTLE.
//
// The check order gives redis-cell's own error whenever redis-cell has one:
// a zero rate is reported before ratekv's stricter negative and overflow
// checks, so "5 -2000000000 1" is a zero rate, as in redis-cell.

import (
	"errors"
	"math"
	"math/bits"
)

// Errors returned by Throttle and Peek. The server maps each to its wire
// text; a call that returns an error must not touch the key.
var (
	// ErrZeroRate means the emission interval is zero nanoseconds: count or
	// period is 0, or period/count is below one nanosecond (more than one
	// request per nanosecond). redis-cell's text for it is "Zero rates are
	// not supported".
	ErrZeroRate = errors.New("gcra: zero rates are not supported")

	// ErrNegative means max_burst, count or period is negative. redis-cell
	// feeds such values into its arithmetic; ratekv refuses them.
	ErrNegative = errors.New("gcra: max_burst, count and period must not be negative")

	// ErrOverflow means a value the algorithm needs (period in nanoseconds,
	// limit, the delay variation tolerance, the quantity's cost, or the new
	// TAT an allowed call stores) does not fit in an int64 of nanoseconds.
	// redis-cell wraps around or crashes there, except for the new TAT,
	// which it stores as a u64. A limited call needs no new TAT, so it
	// replies however far beyond int64 that TAT would be.
	ErrOverflow = errors.New("gcra: value out of range of int64 nanoseconds")
)

const (
	nsPerSecond      = 1_000_000_000
	nsPerMillisecond = 1_000_000
)

// Params are the CL.THROTTLE arguments, as given: Period in whole seconds,
// or in whole milliseconds with Millis (CL.THROTTLEMS). Nothing but the TAT
// is stored, so they may differ from call to call for the same key. The
// zero value is invalid (ErrZeroRate).
type Params struct {
	// MaxBurst is max_burst: the limit is MaxBurst+1 unit requests at once.
	MaxBurst int64
	// Count is the number of requests allowed per Period.
	Count int64
	// Period is the length of the period in whole seconds, or whole
	// milliseconds with Millis.
	Period int64
	// Quantity is the cost of this request in units (CL.THROTTLE's default
	// is 1). 0 peeks and refreshes, a negative value refunds.
	Quantity int64
	// Millis selects CL.THROTTLEMS's unit: Period in milliseconds, the
	// emission interval an exact integer quotient, and RetryAfter and
	// ResetAfter in milliseconds rounded up from nanoseconds.
	Millis bool
}

// Validate returns the error Throttle and Peek return for p whatever the
// key holds: ErrZeroRate, ErrNegative or ErrOverflow when the parameters
// are out of range, nil otherwise (an allowed call may still overflow on
// its new TAT). redis-cell checks the rate before it reads the key, so a
// server reports this before any error of the key's own.
func (p Params) Validate() error {
	_, err := newRates(p)
	return err
}

// Result is what a call replies and what the caller must do to the key.
//
// The first five fields are the CL.THROTTLE reply, in order. The rest say
// how to update storage: at most one of Write and Delete is true, and when
// neither is, the key (value and TTL) must be left as it is. The zero value
// is not a meaningful result; a Result that comes with a non-nil error is
// always the zero value.
type Result struct {
	// Limited is true when the request was refused (reply 1).
	Limited bool
	// Limit is max_burst+1.
	Limit int64
	// Remaining is how many unit requests would be allowed right now, in
	// [0, Limit].
	Remaining int64
	// RetryAfter is the seconds (milliseconds with Params.Millis) until
	// this request would be allowed; -1 when it was allowed or when
	// quantity > limit (it can never be allowed).
	RetryAfter int64
	// ResetAfter is the seconds (milliseconds with Params.Millis) until the
	// key is idle again (Remaining == Limit).
	ResetAfter int64

	// Write is true when the key must be set to NewTAT with a TTL of TTL
	// (allowed calls, including quantity 0 and partial refunds).
	Write bool
	// NewTAT is the value to store, in Unix nanoseconds; valid when Write.
	NewTAT int64
	// TTL is NewTAT-now in nanoseconds, valid when Write. CL.THROTTLE sets
	// PEXPIRE to TTL truncated to whole milliseconds, as redis-cell does;
	// 0 (quantity 0 on a missing key) makes the key expire at once.
	// CL.THROTTLEMS keeps a key with a TTL above 0 until NewTAT rounded up
	// to a whole millisecond, since its intervals may be far below one.
	TTL int64
	// Delete is true when a refund leaves the TAT at or before now, so the
	// key holds nothing and must be removed (a no-op if it is missing).
	Delete bool
}

// Throttle runs one CL.THROTTLE call. tat is the stored TAT in Unix
// nanoseconds and hasTAT whether the key exists; now is the server's clock
// in Unix nanoseconds. It is a pure function: the caller reads the key,
// calls Throttle and applies Result.Write or Result.Delete, all under the
// key's lock. It never allocates.
func Throttle(tat int64, hasTAT bool, now int64, p Params) (Result, error) {
	return throttle(tat, hasTAT, now, p)
}

// Peek returns exactly the reply Throttle would give for the same
// arguments, but asks for no change: Write and Delete are always false and
// NewTAT and TTL are 0. It serves CL.PEEK, which has no side effects.
func Peek(tat int64, hasTAT bool, now int64, p Params) (Result, error) {
	r, err := throttle(tat, hasTAT, now, p)
	r.Write, r.Delete, r.NewTAT, r.TTL = false, false, 0, 0
	return r, err
}

// rates holds the per-call quantities derived from Params, all in
// nanoseconds except limit.
type rates struct {
	ei    int64 // emission interval
	limit int64 // max_burst+1
	dvt   int64 // delay variation tolerance, ei*limit
	inc   int64 // cost of this request, ei*quantity (negative for refunds)
}

// newRates validates p and derives rates from it. It is the only place that
// rejects parameters.
func newRates(p Params) (rates, error) {
	if p.Count == 0 || p.Period == 0 {
		return rates{}, ErrZeroRate
	}
	var ei int64
	fits := true
	if p.Millis {
		ei, fits = emissionIntervalMillis(p.Period, p.Count)
	} else {
		ei = emissionInterval(p.Period, p.Count)
		// Saturated: period/count is beyond int64 nanoseconds (a
		// quotient below 2^63 truncates to at most 2^63-1024).
		fits = ei != math.MaxInt64
	}
	if ei == 0 {
		return rates{}, ErrZeroRate // below one nanosecond
	}
	if p.MaxBurst < 0 || p.Count < 0 || p.Period < 0 {
		return rates{}, ErrNegative
	}
	if !fits {
		return rates{}, ErrOverflow
	}
	limit, ok := add(p.MaxBurst, 1)
	if !ok {
		return rates{}, ErrOverflow
	}
	dvt, ok := mul(ei, limit)
	if !ok {
		return rates{}, ErrOverflow
	}
	inc, ok := mul(ei, p.Quantity)
	if !ok {
		return rates{}, ErrOverflow
	}
	return rates{ei: ei, limit: limit, dvt: dvt, inc: inc}, nil
}

// emissionInterval is redis-cell's Rate::per_period: the float64 quotient
// period·1e9/count (period in seconds, the product exact, as redis-cell's
// i128) truncated toward zero and saturated to int64, like Rust's
// `as i64`. count must not be 0.
func emissionInterval(period, count int64) int64 {
	const twoTo63 = float64(1 << 63)
	q := periodFloat(period) / float64(count)
	switch {
	case q >= twoTo63:
		return math.MaxInt64
	case q < -twoTo63:
		return math.MinInt64
	}
	return int64(q)
}

// emissionIntervalMillis is CL.THROTTLEMS's emission interval: period·1e6/count
// in integer nanoseconds (period in milliseconds), the product exact in 128
// bits, truncated toward zero. fits is false when the quotient is beyond
// int64; ei is then saturated, with the quotient's sign. count must not be 0.
func emissionIntervalMillis(period, count int64) (ei int64, fits bool) {
	hi, lo := bits.Mul64(abs(period), nsPerMillisecond)
	c := abs(count)
	q := uint64(math.MaxUint64) // the quotient needs more than 64 bits
	if hi < c {
		q, _ = bits.Div64(hi, lo, c)
	}
	negative := (period < 0) != (count < 0)
	switch {
	case q > math.MaxInt64 && negative:
		return math.MinInt64, q == 1<<63
	case q > math.MaxInt64:
		return math.MaxInt64, false
	case negative:
		return -int64(q), true
	}
	return int64(q), true
}

// periodFloat returns period·1e9 as a float64 rounded once from the
// exact 128-bit product, as redis-cell's `whole_nanoseconds() as f64`
// (i128 to f64: to nearest, ties to even). Below 2^63 ns this is just
// float64(period*1e9).
func periodFloat(period int64) float64 {
	hi, lo := bits.Mul64(abs(period), nsPerSecond)
	f := float64(lo)
	if hi != 0 {
		// Keep the top 64 bits with the bits shifted out folded into the
		// lowest one, a sticky bit well below float64's rounding bit, so
		// the one conversion rounds as the whole product would.
		n := uint(bits.Len64(hi))
		m := hi<<(64-n) | lo>>n
		if lo<<(64-n) != 0 {
			m |= 1
		}
		f = math.Ldexp(float64(m), int(n))
	}
	if period < 0 {
		return -f
	}
	return f
}

func throttle(tat int64, hasTAT bool, now int64, p Params) (Result, error) {
	rt, err := newRates(p)
	if err != nil {
		return Result{}, err
	}

	// held is how far the schedule runs ahead of now: 0 for a missing key
	// or a TAT in the past (an idle key), TAT-now otherwise.
	var held int64
	if hasTAT && tat > now {
		var ok bool
		if held, ok = sub(tat, now); !ok {
			return Result{}, ErrOverflow
		}
	}

	r := Result{Limit: rt.limit, RetryAfter: -1}
	var ttl int64 // TTL of the state after this call, for the reply
	if rt.inc < 0 {
		// Refund: move the TAT back by |inc| but not below now. held >= 0
		// and inc < 0, so the sum cannot overflow.
		ttl = held + rt.inc
		if ttl <= 0 {
			ttl = 0
			r.Delete = true
		} else {
			// now < now+ttl <= TAT, so this cannot overflow either.
			r.Write, r.NewTAT, r.TTL = true, now+ttl, ttl
		}
	} else {
		// redis-cell: new_tat = max(now, tat) + inc; limited when
		// now - (new_tat - dvt) < 0, i.e. when held + inc > dvt. That is
		// tested as inc > dvt - held (both non-negative: no overflow), so
		// a limited call needs no new TAT: it stores nothing, and one
		// beyond int64 (redis-cell keeps it in an OffsetDateTime) is no
		// reason for an error.
		if rt.inc > rt.dvt-held {
			r.Limited = true
			if rt.inc <= rt.dvt {
				// held + inc - dvt > 0, with 0 <= dvt - inc <= dvt.
				r.RetryAfter = p.replyUnits(held - (rt.dvt - rt.inc))
			}
			ttl = held // a limited call leaves the key as it is
		} else {
			ttl = held + rt.inc // <= dvt
			newTAT, ok := add(now, ttl)
			if !ok {
				return Result{}, ErrOverflow // the TAT to store
			}
			r.Write, r.NewTAT, r.TTL = true, newTAT, ttl
		}
	}
	r.Remaining = remaining(rt, ttl)
	r.ResetAfter = p.replyUnits(ttl)
	return r, nil
}

// remaining is the number of unit requests that fit in the bucket when the
// schedule runs ttl ahead of now: (dvt-ttl)/ei, computed exactly (not in
// redis-cell's whole microseconds) and never negative. dvt and ttl are both
// non-negative, so the difference cannot overflow, and it is at most dvt, so
// the result is at most limit.
func remaining(rt rates, ttl int64) int64 {
	next := rt.dvt - ttl
	if next <= 0 {
		return 0
	}
	return next / rt.ei
}

// seconds converts a non-negative duration to reply seconds like redis-cell
// ≥ 0.4: whole seconds, plus one when the sub-second remainder is at least a
// millisecond. (redis-cell sums the parts in float64, which can add a second
// more for durations above 2^24 s whose remainder is within ~2 ns of a
// whole second; this integer form does not.)
func seconds(d int64) int64 {
	s := d / nsPerSecond
	if d%nsPerSecond >= nsPerMillisecond {
		s++
	}
	return s
}

// replyUnits converts a non-negative duration to the reply's unit: seconds
// or, with Millis, milliseconds.
func (p Params) replyUnits(d int64) int64 {
	if p.Millis {
		return milliseconds(d)
	}
	return seconds(d)
}

// milliseconds converts a non-negative duration to CL.THROTTLEMS's reply
// milliseconds, rounded up from nanoseconds: 1 ns → 1, exactly 2 ms → 2. A
// limited call therefore never replies retry_after 0.
func milliseconds(d int64) int64 {
	ms := d / nsPerMillisecond
	if d%nsPerMillisecond != 0 {
		ms++
	}
	return ms
}
