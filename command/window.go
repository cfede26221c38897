package command

import (
	"github.com/ratekv/ratekv/internal/redisnum"
	"github.com/ratekv/ratekv/shards"
)

// Native sliding-window limiters: the algorithms of the popular Redis
// recipes, in one round trip and a fraction of the memory.
//
//	SL.THROTTLE key max window_ms [MINGAP ms] [QUANTITY q] [RECORDBLOCKED]
//
// is the exact sliding log, the MULTI recipe ZREMRANGEBYSCORE key 0
// now-window / ZADD key now member / ZCARD key / PEXPIRE key window: it
// drops the entries older than the window, refuses when the entries left
// plus q exceed max (or, with MINGAP, when the newest entry is younger than
// MINGAP ms), and otherwise records q entries at now. RECORDBLOCKED records
// refused calls too, the "keep punishing while they hammer" variant. The
// log keeps microsecond timestamps only, delta-encoded (shards.SlidingLog):
// about 2 bytes per entry where a sorted set takes 20 to 100+. TYPE
// reports "sllog".
//
//	SW.THROTTLE key max window_ms [QUANTITY q]
//
// is the sliding-window counter (shards.SlidingWindow): the current fixed
// window's count plus the previous one's weighted by its overlap with the
// sliding window; O(1) memory per key. TYPE reports "swcounter".
//
// Both reply like CL.THROTTLE: [limited (0/1), max, remaining,
// retry_after_ms (-1 when allowed, or when q > max can never pass),
// reset_after_ms (until the key holds nothing)], with times rounded up to
// the millisecond, so that a call made after retry_after_ms passes. The
// key's deadline is kept at the moment it would hold nothing, so it expires
// by itself. Every argument is checked before the key is touched: max and
// QUANTITY are integers in [1, 2^53] and [0, 2^53], window_ms and MINGAP in
// [1, 2^40] and [0, 2^40]; a bad one gets "ERR <name> must be an integer
// between <lo> and <hi>". Each call reads the clock once (c.now).

func init() {
	register(
		&Command{Name: "sl.throttle", Arity: -4, Flags: FlagWrite | FlagDenyOOM | FlagFast, FirstKey: 1, LastKey: 1, Step: 1,
			Handler: cmdSlThrottle, Group: "ratelimit",
			Summary: "Exact sliding-log rate limit: SL.THROTTLE key max window_ms [MINGAP ms] [QUANTITY q] [RECORDBLOCKED] → [limited, max, remaining, retry_after_ms, reset_after_ms]."},
		&Command{Name: "sw.throttle", Arity: -4, Flags: FlagWrite | FlagDenyOOM | FlagFast, FirstKey: 1, LastKey: 1, Step: 1,
			Handler: cmdSwThrottle, Group: "ratelimit",
			Summary: "Sliding-window counter rate limit: SW.THROTTLE key max window_ms [QUANTITY q] → [limited, max, remaining, retry_after_ms, reset_after_ms]."},
	)
}

// Argument bounds. 2^53 keeps counts exact as doubles in any client; 2^40
// ms (about 34 years) keeps now + window far from overflowing in µs.
const (
	maxWindowCount = 1 << 53
	maxWindowMs    = 1 << 40
)

// windowOpts are the parsed arguments of SL.THROTTLE and SW.THROTTLE.
type windowOpts struct {
	max, window, minGap, quantity int64 // window and minGap in ms
	recordBlocked                 bool
}

// windowInt parses an integer argument in [lo, hi].
func windowInt(b []byte, name string, lo, hi int64) (int64, string) {
	n, ok := redisnum.ParseInt(b)
	if !ok || n < lo || n > hi {
		return 0, sprintf(errWindowArg, name, lo, hi)
	}
	return n, ""
}

// parseWindow parses "key max window_ms [options]"; sl allows SL.THROTTLE's
// MINGAP and RECORDBLOCKED. Options may repeat (the last wins).
func parseWindow(args [][]byte, sl bool) (windowOpts, string) {
	o := windowOpts{quantity: 1}
	var msg string
	if o.max, msg = windowInt(args[2], "max", 1, maxWindowCount); msg != "" {
		return o, msg
	}
	if o.window, msg = windowInt(args[3], "window_ms", 1, maxWindowMs); msg != "" {
		return o, msg
	}
	for i := 4; i < len(args); i++ {
		a := args[i]
		more := i+1 < len(args)
		switch {
		case equalFold(a, "quantity") && more:
			i++
			if o.quantity, msg = windowInt(args[i], "QUANTITY", 0, maxWindowCount); msg != "" {
				return o, msg
			}
		case sl && equalFold(a, "mingap") && more:
			i++
			if o.minGap, msg = windowInt(args[i], "MINGAP", 0, maxWindowMs); msg != "" {
				return o, msg
			}
		case sl && equalFold(a, "recordblocked"):
			o.recordBlocked = true
		default:
			return o, errSyntax
		}
	}
	return o, ""
}

// ceilDiv divides a non-negative a by b, rounding up.
func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// writeWindowReply writes [limited, max, remaining, retry_after, reset_after].
func (c *Client) writeWindowReply(limited bool, max, remaining, retry, reset int64) {
	c.WriteArray(5)
	if limited {
		c.WriteInt(1)
	} else {
		c.WriteInt(0)
	}
	c.WriteInt(max)
	c.WriteInt(remaining)
	c.WriteInt(retry)
	c.WriteInt(reset)
}

// SL.THROTTLE key max window_ms [MINGAP ms] [QUANTITY q] [RECORDBLOCKED]
func cmdSlThrottle(c *Client, args [][]byte) {
	o, msg := parseWindow(args, true)
	if msg != "" {
		c.WriteError(msg)
		return
	}
	st, key := c.eng.store, args[1]
	sh := c.keyShard(key)
	e := st.LookupIn(sh, key, c.nowMs)
	var l *shards.SlidingLog
	if e != nil {
		if e.Kind() != shards.KindSlidingLog {
			c.WriteError(errWrongType)
			return
		}
		l, _ = st.Object(e).(*shards.SlidingLog)
	}
	if l == nil {
		l = &shards.SlidingLog{}
		if e != nil {
			st.SetObject(key, e, shards.KindSlidingLog, l)
		}
	}
	windowUs := o.window * 1000
	r := l.Throttle(c.now/1000, shards.SLParams{
		Max: o.max, Window: windowUs, MinGap: o.minGap * 1000,
		Quantity: o.quantity, RecordBlocked: o.recordBlocked,
	})
	switch {
	case l.Len() == 0:
		if e != nil {
			st.Delete(key, c.nowMs)
		}
	default:
		// Expire when the newest entry leaves the window: entries at or
		// before now-window are dropped, so at that millisecond none is left.
		at := ceilDiv(l.Newest()+windowUs, 1000)
		switch {
		case e == nil:
			e, _ = st.PutIn(sh, key, c.nowMs)
			st.SetObject(key, e, shards.KindSlidingLog, l)
			st.SetExpireIn(sh, key, e, at)
		case r.Changed:
			st.RewrittenIn(sh, key, e, at)
		default:
			st.SetExpireIn(sh, key, e, at)
		}
	}
	retry := int64(-1)
	if r.RetryAfter >= 0 {
		retry = ceilDiv(r.RetryAfter, 1000)
	}
	c.countDecision(rlSlThrottle, key, r.Limited, o.max, r.Remaining)
	c.writeWindowReply(r.Limited, o.max, r.Remaining, retry, ceilDiv(r.ResetAfter, 1000))
}

// SW.THROTTLE key max window_ms [QUANTITY q]
func cmdSwThrottle(c *Client, args [][]byte) {
	o, msg := parseWindow(args, false)
	if msg != "" {
		c.WriteError(msg)
		return
	}
	st, key := c.eng.store, args[1]
	sh := c.keyShard(key)
	e := st.LookupIn(sh, key, c.nowMs)
	var w *shards.SlidingWindow
	if e != nil {
		if e.Kind() != shards.KindSlidingWindow {
			c.WriteError(errWrongType)
			return
		}
		w, _ = st.Object(e).(*shards.SlidingWindow)
	}
	if w == nil {
		w = &shards.SlidingWindow{}
		if e != nil {
			st.SetObject(key, e, shards.KindSlidingWindow, w)
		}
	}
	before := *w
	r := w.Throttle(c.nowMs, shards.SWParams{Max: o.max, Window: o.window, Quantity: o.quantity})
	switch {
	case r.ResetAfter == 0: // both windows empty: nothing to keep
		if e != nil {
			st.Delete(key, c.nowMs)
		}
	default:
		at := c.nowMs + r.ResetAfter
		switch {
		case e == nil:
			e, _ = st.PutIn(sh, key, c.nowMs)
			st.SetObject(key, e, shards.KindSlidingWindow, w)
			st.SetExpireIn(sh, key, e, at)
		case *w != before:
			st.RewrittenIn(sh, key, e, at)
		default:
			st.SetExpireIn(sh, key, e, at)
		}
	}
	c.countDecision(rlSwThrottle, key, r.Limited, o.max, r.Remaining)
	c.writeWindowReply(r.Limited, o.max, r.Remaining, r.RetryAfter, r.ResetAfter)
}
