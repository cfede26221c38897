// Package gcra implements the generic cell rate algorithm exactly as
// redis-cell's CL.THROTTLE computes it, as a pure function of
// (stored state, now, parameters) in integer nanoseconds.
//
// The package does no I/O, takes no locks and never reads the clock: the
// server reads the key, passes the stored value and its own clock in, and
// applies what [Result] says (write, expire or delete). The functions are
// therefore safe for concurrent use; serialising calls for one key is the
// caller's job (ratekv runs each command under its key's shard lock, so no
// compare-and-swap loop is needed).
//
// # The model
//
// Think of a nominal schedule of equally spaced requests.
//
//   - The emission interval (ei) is the spacing of that schedule: period /
//     count, the time it takes the limiter to forget one request. If you like
//     leaky buckets, it is how often the bucket leaks one unit.
//   - The theoretical arrival time (TAT) is when the schedule would have
//     caught up with every request allowed so far. It is the only state kept
//     per key: a Unix time in nanoseconds. A missing key, or a TAT in the
//     past, means the schedule is idle and the bucket is empty.
//   - The delay variation tolerance (dvt = ei × limit, limit = max_burst+1)
//     is the flexibility: how far ahead of now the TAT may run. In bucket
//     terms it is the size of the bucket.
//
// A request of quantity n costs n×ei. It is allowed when the TAT it would
// produce, max(TAT, now) + n×ei, is no more than dvt ahead of now; the key
// is then set to that new TAT and expires when the TAT is reached, because
// at that moment the state is indistinguishable from a missing key. A
// limited request changes nothing.
//
// # The five reply integers
//
// CL.THROTTLE replies [limited, limit, remaining, retry_after, reset_after]:
//
//   - limited is 1 when the request was refused.
//   - limit is max_burst+1, the number of unit requests an idle key allows at
//     once.
//   - remaining is how many more unit requests would be allowed right now:
//     the unused part of the bucket, (dvt − (TAT−now)) / ei, with TAT the
//     state after this call.
//   - retry_after is how long until this same request would be allowed:
//     (new TAT − now) − dvt. It is −1 when the request was allowed, and also
//     when quantity > limit, because such a request can never fit.
//   - reset_after is how long until the key is idle again (remaining ==
//     limit): TAT − now, which is also the key's time to live.
//
// Both durations are sent in seconds, rounded up at millisecond granularity
// like redis-cell ≥ 0.4: a remainder of at least 1 ms counts as a whole
// second, a smaller remainder is dropped, so 999 µs → 0, 1 ms → 1,
// 1.0004 s → 1 and exactly 2 s → 2. A limited reply can therefore carry
// retry_after 0 when less than a millisecond is left.
//
// CL.THROTTLEMS ([Params.Millis]) takes the period in milliseconds and sends
// both durations in milliseconds, rounded up from nanoseconds: 1 ns → 1,
// exactly 2 ms → 2, so a limited reply always carries a retry_after of at
// least 1. Its TAT is the same Unix nanosecond value, so CL.THROTTLE and
// CL.THROTTLEMS with the same rate (count 10 per period 1 vs 1000) share
// one key and agree on everything but the unit of the durations.
//
// # Differences from redis-cell
//
// For every sane input (max_burst ≥ 0, count > 0, period > 0,
// quantity ≥ 0, no int64 overflow) and every state redis-cell can reach,
// the reply is redis-cell's, with one documented exception: remaining is
// computed exactly in nanoseconds and so never exceeds limit. redis-cell
// truncates both operands to whole microseconds first, which reports
// remaining > limit when ei is not a whole number of microseconds (for
// example 6000 6000 1 gives 6024; redis-cell issue #50). With a whole
// number of microseconds, which every realistic configuration has, the two
// agree.
//
// Where redis-cell wraps around, panics or corrupts the key, this package
// returns an error instead and asks the caller to change nothing:
// [ErrNegative] for a negative max_burst, count or period and [ErrOverflow]
// for arithmetic that does not fit in int64 nanoseconds. [ErrZeroRate] is
// redis-cell's own "Zero rates are not supported".
//
// A negative quantity is a refund: the TAT moves back by |quantity|×ei but
// never below now, and the key is deleted when nothing is left.
//
// A stored TAT in the past is treated exactly like a missing key. redis-cell
// agrees except for one reply it can only give for a key set by hand (SET
// key 123): a limited call would report a negative reset_after and a
// remaining above limit; here it reports the idle state (reset_after 0,
// remaining = limit).
package gcra
