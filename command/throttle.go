package command

import (
	"errors"
	"strings"

	"github.com/ratekv/ratekv/gcra"
	"github.com/ratekv/ratekv/internal/redisnum"
	"github.com/ratekv/ratekv/shards"
)

// GCRA rate limiting, redis-cell compatible. The algorithm is the pure
// gcra package; this file parses arguments, reads and writes the TAT under
// the key's shard lock (so no CAS loop is needed), and formats replies.
//
// Storage is redis-cell's: the key is a plain string holding the TAT in
// Unix nanoseconds (kept as an int64), with a TTL of the time until the
// TAT truncated to milliseconds. GET, TYPE, PTTL, DEL and EXPIRE therefore
// see what they see under redis-cell.
//
// CL.THROTTLEMS is CL.THROTTLE with the period and the reply's durations in
// milliseconds, for rates up to one request per nanosecond. It stores the
// same TAT, so it shares keys with CL.THROTTLE and CL.PEEK, but keeps the
// key until its TAT (see tatDeadline).

func init() {
	register(
		&Command{Name: "cl.throttle", Arity: -1, Flags: FlagWrite | FlagDenyOOM | FlagFast, FirstKey: 1, LastKey: 1, Step: 1,
			Handler: cmdClThrottle, Group: "ratelimit",
			Summary: "GCRA rate limit (redis-cell): CL.THROTTLE key max_burst count period [quantity] → [limited, limit, remaining, retry_after, reset_after]."},
		&Command{Name: "cl.throttlems", Arity: -1, Flags: FlagWrite | FlagDenyOOM | FlagFast, FirstKey: 1, LastKey: 1, Step: 1,
			Handler: cmdClThrottleMs, Group: "ratelimit",
			Summary: "CL.THROTTLE in milliseconds: CL.THROTTLEMS key max_burst count period_ms [quantity] → [limited, limit, remaining, retry_after_ms, reset_after_ms]."},
		&Command{Name: "cl.peek", Arity: -1, Flags: FlagReadOnly | FlagFast, FirstKey: 1, LastKey: 1, Step: 1,
			Handler: cmdClPeek, Group: "ratelimit",
			Summary: "The reply CL.THROTTLE would give, with no side effects: CL.PEEK key max_burst count period [quantity]."},
		&Command{Name: "cl.throttleall", Arity: -6, Flags: FlagWrite | FlagDenyOOM, Keys: throttleAllKeys, KeyNum: &KeyNum{Begin: 1, NumIdx: 0, First: 1, Step: 4},
			Handler: cmdClThrottleAll, Group: "ratelimit",
			Summary: "Checks several GCRA limits atomically; consumes all or none: CL.THROTTLEALL numlimits key max_burst count period [...] [QUANTITY q]."},
	)
}

// parseCellInt parses a CL.THROTTLE number as redis-cell does (Rust's
// i64::from_str: an optional '+' or '-', then one or more ASCII digits,
// leading zeros allowed, any number of them, within the int64 range),
// which is what strconv.ParseInt(s, 10, 64) accepts too (no length limit:
// "000000000000000000005" is 5). Hand-written because it runs
// four times per CL.THROTTLE: strconv needs a string (a copy) and goes
// through ParseUint.
func parseCellInt(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	neg := false
	switch b[0] {
	case '-':
		neg = true
		b = b[1:]
	case '+':
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, false
	}
	var u uint64
	for _, ch := range b {
		d := uint64(ch - '0')
		if d > 9 {
			return 0, false
		}
		if u > (1<<63)/10 {
			return 0, false // u*10 alone exceeds any int64 magnitude
		}
		u = u*10 + d
		if u > 1<<63 {
			return 0, false
		}
	}
	if neg {
		return -int64(u), true // -(1<<63) wraps to MinInt64, the one magnitude only a negative has
	}
	if u > 1<<63-1 {
		return 0, false
	}
	return int64(u), true
}

// parseThrottle parses "max_burst count period [quantity]" (args after the
// key). It returns the error reply for the first unparsable argument.
func parseThrottle(args [][]byte) (gcra.Params, string) {
	var v [4]int64
	v[3] = 1
	for i, a := range args {
		n, ok := parseCellInt(a)
		if !ok {
			return gcra.Params{}, sprintf(errCellParseInt, sanitizeErr(a))
		}
		v[i] = n
	}
	return gcra.Params{MaxBurst: v[0], Count: v[1], Period: v[2], Quantity: v[3]}, ""
}

// cellError maps gcra errors onto wire texts.
func cellError(err error) string {
	switch {
	case errors.Is(err, gcra.ErrZeroRate):
		return errCellZeroRate
	case errors.Is(err, gcra.ErrNegative):
		return errCellNegative
	}
	return errNotInt // overflow, as Dragonfly replies
}

// readTAT reads the TAT stored at key. It returns the key's entry, which
// may be an expired one kept for reuse (live false: the key is absent),
// and an error reply for a key of another type or a string that is not an
// integer.
func readTAT(st *shards.Store, sh *shards.Shard, key []byte, nowMs int64) (e *shards.Entry, live bool, tat int64, errReply string) {
	e, live = st.LookupAnyIn(sh, key, nowMs)
	if !live {
		return e, false, 0, ""
	}
	if e.Kind() != shards.KindString {
		return nil, false, 0, errWrongType
	}
	v, ok := e.Int()
	if !ok {
		// Not spelled as a canonical integer: redis-cell's u64 parse also
		// takes a '+' and leading zeros ("0123" is 123). Read only here,
		// off the common path.
		var buf [24]byte
		v, ok = parseCellInt(st.AppendBytes(buf[:0], e))
	}
	if !ok {
		return nil, false, 0, errCellBadTAT
	}
	return e, true, v, ""
}

// applyTAT stores the outcome of an allowed call: the new TAT with the
// deadline tatDeadline gives, or the key's removal after a full refund. e
// and live come from readTAT: the entry (live or expired) is written in
// place, so the common case costs one map lookup, not two. It returns the
// written entry (nil if none).
func applyTAT(st *shards.Store, sh *shards.Shard, key []byte, e *shards.Entry, live bool, nowMs int64, res gcra.Result, untilTAT bool) *shards.Entry {
	switch {
	case res.Write:
		at := tatDeadline(nowMs, res, untilTAT)
		switch {
		case e == nil:
			e, _ = st.PutIn(sh, key, nowMs)
			st.SetExpireIn(sh, key, e, at)
		case !live:
			st.Reuse(key, e)
			st.SetExpireIn(sh, key, e, at)
		default:
			st.RewrittenIn(sh, key, e, at)
		}
		st.SetInt(e, res.NewTAT)
		return e
	case res.Delete:
		st.Delete(key, nowMs)
	}
	return nil
}

// tatDeadline is the deadline, in Unix ms, of a key written with res at
// nowMs (a key is gone once the millisecond clock reaches its deadline).
// CL.THROTTLE's is nowMs plus res.TTL truncated to whole milliseconds, as
// redis-cell's PEXPIRE, so the key can go up to 2 ms before its TAT. That
// would break CL.THROTTLEMS (untilTAT), whose intervals can be 1 µs: a TTL
// under 1 ms would expire the key at once and every call would find it
// fresh. Its deadline is the TAT rounded up to a whole millisecond, the
// earliest that never drops a TAT still ahead of now. A TTL of 0 holds
// nothing and expires at once either way.
func tatDeadline(nowMs int64, res gcra.Result, untilTAT bool) int64 {
	if !untilTAT || res.TTL == 0 {
		return nowMs + res.TTL/1e6
	}
	at := res.NewTAT / 1e6
	if res.NewTAT%1e6 > 0 {
		at++
	}
	return at
}

func (c *Client) writeThrottle(r gcra.Result) {
	c.WriteArray(5)
	limited := int64(0)
	if r.Limited {
		limited = 1
	}
	c.WriteInt(limited)
	c.WriteInt(r.Limit)
	c.WriteInt(r.Remaining)
	c.WriteInt(r.RetryAfter)
	c.WriteInt(r.ResetAfter)
}

// CL.THROTTLE key max_burst count period [quantity]
func cmdClThrottle(c *Client, args [][]byte) { c.throttle(args, "cl.throttle", false, false) }

// CL.THROTTLEMS key max_burst count period_ms [quantity]
func cmdClThrottleMs(c *Client, args [][]byte) { c.throttle(args, "cl.throttlems", false, true) }

// CL.PEEK key max_burst count period [quantity]
func cmdClPeek(c *Client, args [][]byte) { c.throttle(args, "cl.peek", true, false) }

// throttle runs CL.THROTTLE, CL.PEEK (peek) or CL.THROTTLEMS (millis); name
// is the command's, for its usage error.
func (c *Client) throttle(args [][]byte, name string, peek, millis bool) {
	if len(args) != 5 && len(args) != 6 {
		c.WriteError(sprintf(errCellUsage, name))
		return
	}
	p, errReply := parseThrottle(args[2:])
	if errReply != "" {
		c.WriteError(errReply)
		return
	}
	p.Millis = millis
	st := c.eng.store
	key := args[1]
	sh := c.keyShard(key)
	e, live, tat, errReply := readTAT(st, sh, key, c.nowMs)
	if errReply != "" {
		if err := p.Validate(); err != nil {
			errReply = cellError(err) // redis-cell checks the rate first
		}
		c.WriteError(errReply)
		return
	}
	var res gcra.Result
	var err error
	if peek {
		res, err = gcra.Peek(tat, live, c.now, p)
	} else {
		res, err = gcra.Throttle(tat, live, c.now, p)
	}
	if err != nil {
		c.WriteError(cellError(err))
		return
	}
	if w := applyTAT(st, sh, key, e, live, c.nowMs, res, millis); w != nil {
		c.noteWritten(w)
	}
	if !peek {
		cmd := rlClThrottle
		if millis {
			cmd = rlClThrottleMs
		}
		c.countDecision(cmd, key, res.Limited, res.Limit, res.Remaining)
	}
	c.writeThrottle(res)
}

// throttleAllKeys returns the key positions of CL.THROTTLEALL: 2, 6, 10, …
func throttleAllKeys(args [][]byte, dst []int) []int {
	n, ok := redisnum.ParseInt(args[1])
	if !ok || n <= 0 || n > int64(len(args)) {
		return dst
	}
	for i := int64(0); i < n; i++ {
		pos := 2 + 4*int(i)
		if pos >= len(args) {
			break
		}
		dst = append(dst, pos)
	}
	return dst
}

// scanLimits is the most limits CL.THROTTLEALL scans for an earlier limit
// on the same key; past it a map finds it (no allocation for the usual
// call of a few limits).
const scanLimits = 16

// CL.THROTTLEALL numlimits key max_burst count period [key max_burst count period ...] [QUANTITY quantity]
//
// Every limit is checked against the same clock reading. The request is
// allowed only if every limit allows it, and then all of them are
// consumed; if any limit refuses, nothing is written and each limit's
// reply is what CL.PEEK would reply for it, so the caller sees which limit
// bit (limited 1) and what the others would have allowed. A key named
// twice is consumed twice, in order. The reply is [limited, [reply of
// limit 1], …].
func cmdClThrottleAll(c *Client, args [][]byte) {
	n, ok := redisnum.ParseInt(args[1])
	if !ok || n <= 0 {
		c.WriteError(errCellNumLimits)
		return
	}
	rest := len(args) - 2 - 4*int(min(n, int64(len(args))))
	quantity := []byte("1")
	switch {
	case n > int64(len(args)) || rest < 0:
		c.WriteError(errCellAllUsage)
		return
	case rest == 2 && strings.EqualFold(string(args[len(args)-2]), "quantity"):
		quantity = args[len(args)-1]
	case rest != 0:
		c.WriteError(errCellAllUsage)
		return
	}
	type limit struct {
		key []byte
		p   gcra.Params
		tat int64
		has bool
		res gcra.Result
	}
	limits := make([]limit, n)
	for i := range limits {
		base := 2 + 4*i
		p, errReply := parseThrottle([][]byte{args[base+1], args[base+2], args[base+3], quantity})
		if errReply != "" {
			c.WriteError(errReply)
			return
		}
		limits[i].key, limits[i].p = args[base], p
	}
	st := c.eng.store
	for i := range limits {
		_, live, tat, errReply := readTAT(st, c.keyShard(limits[i].key), limits[i].key, c.nowMs)
		if errReply != "" {
			// Every limit's parameters are checked before a key's error.
			for j := range limits {
				if err := limits[j].p.Validate(); err != nil {
					errReply = cellError(err)
					break
				}
			}
			c.WriteError(errReply)
			return
		}
		limits[i].tat, limits[i].has = tat, live
	}
	// First pass: consume in order on a private copy of the TATs (a key
	// named twice sees its earlier consumption). A limit starts from the
	// state the last earlier limit on its key left. A call of a few limits
	// looks for it among them; a long one in a map, so that a call of many
	// limits (up to 262,143 in a request's 2^20 arguments) is not
	// quadratic with its shards locked.
	var last map[string]int // key -> index of the last limit on it so far
	if len(limits) > scanLimits {
		last = make(map[string]int, len(limits))
	}
	limited := false
	for i := range limits {
		l := &limits[i]
		j, ok := 0, false
		if last != nil {
			j, ok = last[string(l.key)]
		} else {
			for j = i - 1; j >= 0 && string(limits[j].key) != string(l.key); j-- {
			}
			ok = j >= 0
		}
		if ok {
			switch p := &limits[j]; {
			case p.res.Write:
				l.tat, l.has = p.res.NewTAT, true
			case p.res.Delete:
				l.tat, l.has = 0, false
			default:
				l.tat, l.has = p.tat, p.has // the state p started from
			}
		}
		if last != nil {
			last[string(l.key)] = i
		}
		res, err := gcra.Throttle(l.tat, l.has, c.now, l.p)
		if err != nil {
			c.WriteError(cellError(err))
			return
		}
		l.res = res
		limited = limited || res.Limited
	}
	// Refused, nothing is consumed, and each limit's reply is the first
	// pass's: what CL.PEEK would say for it, after the call's earlier
	// limits on the same key (a key named twice shows which of its two
	// limits bit; peeking at the stored state would show neither).
	if !limited {
		for i := range limits {
			// Look the entry up again: an earlier limit on the same key
			// may have created or deleted it.
			sh := c.keyShard(limits[i].key)
			e, live := st.LookupAnyIn(sh, limits[i].key, c.nowMs)
			applyTAT(st, sh, limits[i].key, e, live, c.nowMs, limits[i].res, false)
		}
	}
	for i := range limits {
		if r := &limits[i].res; !limited || r.Limited {
			c.countDecision(rlClThrottleAll, limits[i].key, r.Limited, r.Limit, r.Remaining)
		}
	}
	c.WriteArray(len(limits) + 1)
	if limited {
		c.WriteInt(1)
	} else {
		c.WriteInt(0)
	}
	for i := range limits {
		c.writeThrottle(limits[i].res)
	}
}
