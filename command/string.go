package command

import (
	"math"
	"strconv"

	"github.com/ratekv/ratekv/internal/redisnum"
	"github.com/ratekv/ratekv/shards"
)

// String commands. Counters are the hot path of a rate-limit server: an
// entry holding a canonical decimal integer is kept as an int64, so INCR on
// an existing counter is a map lookup, an add and an integer reply, with no
// allocation; GET of such an entry formats the number straight into the
// output buffer.
//
// Every command follows Redis 7.2's order of checks, because that order is
// visible in which error a client gets: option syntax first, then number
// arguments, then the key's type, then the values. SET's options are
// parsed by parseSetOptions, a transcription of Redis's
// parseExtendedStringArgumentsOrReply: an option repeated is allowed, an
// option that conflicts with an earlier one is a syntax error.

func init() {
	register(
		&Command{Name: "get", Arity: 2, Flags: FlagReadOnly | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Handler: cmdGet,
			Summary: "Returns the string value of a key.", Group: "string"},
		&Command{Name: "set", Arity: -3, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: 1, Step: 1, PlainArgs: 3, Handler: cmdSet,
			Summary: "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.", Group: "string"},
		&Command{Name: "setex", Arity: 4, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: 1, Step: 1, Handler: cmdSetex,
			Summary: "Sets the string value and expiration time of a key. Creates the key if it doesn't exist.", Group: "string"},
		&Command{Name: "psetex", Arity: 4, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: 1, Step: 1, Handler: cmdPsetex,
			Summary: "Sets both string value and expiration time in milliseconds of a key. The key is created if it doesn't exist.", Group: "string"},
		&Command{Name: "setnx", Arity: 3, Flags: FlagWrite | FlagDenyOOM | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Handler: cmdSetnx,
			Summary: "Set the string value of a key only when the key doesn't exist.", Group: "string"},
		&Command{Name: "getdel", Arity: 2, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Handler: cmdGetdel,
			Summary: "Returns the string value of a key after deleting the key.", Group: "string"},
		&Command{Name: "getex", Arity: -2, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Persist: PersistTTL,
			Handler: cmdGetex,
			Summary: "Returns the string value of a key after setting its expiration time.", Group: "string"},
		&Command{Name: "getset", Arity: 3, Flags: FlagWrite | FlagDenyOOM | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Handler: cmdGetset,
			Summary: "Returns the previous string value of a key after setting it to a new value.", Group: "string"},
		&Command{Name: "mget", Arity: -2, Flags: FlagReadOnly | FlagFast, FirstKey: 1, LastKey: -1, Step: 1, Handler: cmdMget,
			Summary: "Atomically returns the string values of one or more keys.", Group: "string"},
		&Command{Name: "mset", Arity: -3, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: -1, Step: 2, Handler: cmdMset,
			Summary: "Atomically creates or modifies the string values of one or more keys.", Group: "string"},
		&Command{Name: "msetnx", Arity: -3, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: -1, Step: 2, Handler: cmdMsetnx,
			Summary: "Atomically modifies the string values of one or more keys only when all keys don't exist.", Group: "string"},
		&Command{Name: "incr", Arity: 2, Flags: FlagWrite | FlagDenyOOM | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Handler: cmdIncr,
			Summary: "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", Group: "string"},
		&Command{Name: "incrby", Arity: 3, Flags: FlagWrite | FlagDenyOOM | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Handler: cmdIncrby,
			Summary: "Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist.", Group: "string"},
		&Command{Name: "decr", Arity: 2, Flags: FlagWrite | FlagDenyOOM | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Handler: cmdDecr,
			Summary: "Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", Group: "string"},
		&Command{Name: "decrby", Arity: 3, Flags: FlagWrite | FlagDenyOOM | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Handler: cmdDecrby,
			Summary: "Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist.", Group: "string"},
		&Command{Name: "incrbyfloat", Arity: 3, Flags: FlagWrite | FlagDenyOOM | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Handler: cmdIncrbyfloat,
			Summary: "Increment the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist.", Group: "string"},
		&Command{Name: "append", Arity: 3, Flags: FlagWrite | FlagDenyOOM | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Handler: cmdAppend,
			Summary: "Appends a string to the value of a key. Creates the key if it doesn't exist.", Group: "string"},
		&Command{Name: "strlen", Arity: 2, Flags: FlagReadOnly | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Handler: cmdStrlen,
			Summary: "Returns the length of a string value.", Group: "string"},
		&Command{Name: "getrange", Arity: 4, Flags: FlagReadOnly, FirstKey: 1, LastKey: 1, Step: 1, Handler: cmdGetrange,
			Summary: "Returns a substring of the string stored at a key.", Group: "string"},
		&Command{Name: "substr", Arity: 4, Flags: FlagReadOnly, FirstKey: 1, LastKey: 1, Step: 1, Handler: cmdGetrange,
			Summary: "Returns a substring from a string value.", Group: "string"},
		&Command{Name: "setrange", Arity: 4, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: 1, Step: 1, Handler: cmdSetrange,
			Summary: "Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist.", Group: "string"},
	)
}

// lookupString returns the live entry of key, nil when the key does not
// exist. When key holds another kind of value it replies WRONGTYPE and
// returns ok false. The lookup counts as a keyspace hit or miss: it is a
// read's, or that of a write that replies the value (GETSET, GETDEL).
func (c *Client) lookupString(key []byte) (e *shards.Entry, ok bool) {
	return c.stringEntry(c.eng.store.LookupIn(c.keyShard(key), key, c.nowMs))
}

// lookupStringToWrite is lookupString for a command that writes key
// without replying its value: not counted in keyspace_hits or
// keyspace_misses, as Redis's lookupKeyWrite.
func (c *Client) lookupStringToWrite(key []byte) (e *shards.Entry, ok bool) {
	return c.stringEntry(c.eng.store.LookupWriteIn(c.keyShard(key), key, c.nowMs))
}

// stringEntry is e when it is a string (or nil); else it replies
// WRONGTYPE and returns ok false.
func (c *Client) stringEntry(e *shards.Entry) (*shards.Entry, bool) {
	if e != nil && e.Kind() != shards.KindString {
		c.WriteError(errWrongType)
		return nil, false
	}
	return e, true
}

// writeStringEntry writes the value of the string entry e as a bulk string,
// formatting it straight into the output buffer.
func (c *Client) writeStringEntry(e *shards.Entry) {
	st := c.eng.store
	c.Out = append(c.Out, '$')
	c.Out = strconv.AppendInt(c.Out, int64(st.StrLen(e)), 10)
	c.Out = append(c.Out, '\r', '\n')
	c.Out = st.AppendBytes(c.Out, e)
	c.Out = append(c.Out, '\r', '\n')
}

// writeEmptyBulk writes "$0\r\n\r\n".
func (c *Client) writeEmptyBulk() { c.Out = append(c.Out, "$0\r\n\r\n"...) }

// GET key
func cmdGet(c *Client, args [][]byte) {
	e, ok := c.lookupString(args[1])
	if !ok {
		return
	}
	if e == nil {
		c.WriteNull()
		return
	}
	c.writeStringEntry(e)
}

// setFlags are the options of SET and GETEX.
type setFlags uint16

const (
	setNX setFlags = 1 << iota
	setXX
	setGet
	setKeepTTL
	setPersist // GETEX only
	setEX
	setPX
	setEXAT
	setPXAT

	setExpireAny = setEX | setPX | setEXAT | setPXAT
)

// setOpts are the parsed options of SET (or GETEX).
type setOpts struct {
	flags  setFlags
	expire []byte // the argument of EX, PX, EXAT or PXAT, not yet parsed
}

// parseSetOptions parses the options of SET (getex false) or GETEX (true)
// as Redis's parseExtendedStringArgumentsOrReply does: NX, XX, GET and
// KEEPTTL are SET's, PERSIST is GETEX's, EX/PX/EXAT/PXAT take the next
// argument. An option may repeat (the last value wins); one that conflicts
// with an earlier option, belongs to the other command, or lacks its
// argument is a syntax error (ok false). The expire argument is not
// parsed here: Redis checks it after the syntax, in setDeadline.
func parseSetOptions(opts [][]byte, getex bool) (o setOpts, ok bool) {
	for j := 0; j < len(opts); j++ {
		w := cstr(opts[j])
		hasNext := j+1 < len(opts)
		f := o.flags
		switch {
		case !getex && equalFold(w, "nx") && f&setXX == 0:
			o.flags |= setNX
		case !getex && equalFold(w, "xx") && f&setNX == 0:
			o.flags |= setXX
		case !getex && equalFold(w, "get"):
			o.flags |= setGet
		case !getex && equalFold(w, "keepttl") && f&(setPersist|setExpireAny) == 0:
			o.flags |= setKeepTTL
		case getex && equalFold(w, "persist") && f&(setExpireAny|setKeepTTL) == 0:
			o.flags |= setPersist
		case equalFold(w, "ex") && hasNext && f&(setKeepTTL|setPersist|setEXAT|setPX|setPXAT) == 0:
			o.flags |= setEX
			o.expire = opts[j+1]
			j++
		case equalFold(w, "px") && hasNext && f&(setKeepTTL|setPersist|setEX|setEXAT|setPXAT) == 0:
			o.flags |= setPX
			o.expire = opts[j+1]
			j++
		case equalFold(w, "exat") && hasNext && f&(setKeepTTL|setPersist|setEX|setPX|setPXAT) == 0:
			o.flags |= setEXAT
			o.expire = opts[j+1]
			j++
		case equalFold(w, "pxat") && hasNext && f&(setKeepTTL|setPersist|setEX|setEXAT|setPX) == 0:
			o.flags |= setPXAT
			o.expire = opts[j+1]
			j++
		default:
			return setOpts{}, false
		}
	}
	return o, true
}

// setDeadline turns the expire argument of o into an absolute deadline in
// Unix ms, as Redis's getExpireMillisecondsOrReply: the number must be
// positive, seconds are multiplied by 1000 without overflow, EX and PX are
// relative to nowMs, and a sum that overflows is invalid. It returns the
// error text to reply (name is the command's, for the message), or "".
// An EXAT or PXAT deadline in the past is valid.
func setDeadline(o setOpts, nowMs int64, name string) (int64, string) {
	t, ok := redisnum.ParseInt(o.expire)
	if !ok {
		return 0, errNotInt
	}
	sec := o.flags&(setEX|setEXAT) != 0
	if t <= 0 || (sec && t > math.MaxInt64/1000) {
		return 0, sprintf(errInvalidExpire, name)
	}
	if sec {
		t *= 1000
	}
	if o.flags&(setEX|setPX) != 0 {
		t += nowMs // wraps on overflow, caught below as in Redis
	}
	if t <= 0 {
		return 0, sprintf(errInvalidExpire, name)
	}
	return t, ""
}

// SET key value [NX|XX] [GET] [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds|KEEPTTL]
func cmdSet(c *Client, args [][]byte) {
	o, ok := parseSetOptions(args[3:], false)
	if !ok {
		c.WriteError(errSyntax)
		return
	}
	c.setGeneric(args[1], args[2], o, "set", false)
}

// SETEX key seconds value
func cmdSetex(c *Client, args [][]byte) {
	c.setGeneric(args[1], args[3], setOpts{flags: setEX, expire: args[2]}, "setex", false)
}

// PSETEX key milliseconds value
func cmdPsetex(c *Client, args [][]byte) {
	c.setGeneric(args[1], args[3], setOpts{flags: setPX, expire: args[2]}, "psetex", false)
}

// SETNX key value
func cmdSetnx(c *Client, args [][]byte) {
	c.setGeneric(args[1], args[2], setOpts{flags: setNX}, "setnx", true)
}

// setGeneric is Redis's setGenericCommand: it checks the expire argument,
// replies the old value for GET (WRONGTYPE if it is not a string, and then
// nothing is set), applies NX/XX, and stores val with the new deadline,
// the old one (KEEPTTL) or none. intReply selects SETNX's :1/:0 replies
// instead of OK/null.
func (c *Client) setGeneric(key, val []byte, o setOpts, name string, intReply bool) {
	var at int64
	if o.flags&setExpireAny != 0 {
		var msg string
		if at, msg = setDeadline(o, c.nowMs, name); msg != "" {
			c.WriteError(msg)
			return
		}
	}
	st := c.eng.store
	sh := c.keyShard(key)
	if o.flags&(setNX|setXX|setGet) != 0 {
		var e *shards.Entry
		if o.flags&setGet != 0 {
			e = st.LookupIn(sh, key, c.nowMs) // a read: it replies the value
		} else {
			e = st.LookupWriteIn(sh, key, c.nowMs)
		}
		if o.flags&setGet != 0 {
			switch {
			case e == nil:
				c.WriteNull()
			case e.Kind() != shards.KindString:
				c.WriteError(errWrongType)
				return
			default:
				c.writeStringEntry(e)
			}
		}
		if (o.flags&setNX != 0 && e != nil) || (o.flags&setXX != 0 && e == nil) {
			if o.flags&setGet == 0 {
				if intReply {
					c.WriteInt(0)
				} else {
					c.WriteNull()
				}
			}
			return
		}
	}
	e, _ := st.PutIn(sh, key, c.nowMs)
	st.SetBytes(key, e, val)
	switch {
	case o.flags&setExpireAny != 0:
		st.SetExpireIn(sh, key, e, at)
	case o.flags&setKeepTTL == 0:
		st.SetExpireIn(sh, key, e, 0)
	}
	c.noteWritten(e)
	switch {
	case o.flags&setGet != 0:
	case intReply:
		c.WriteInt(1)
	default:
		c.WriteOK()
	}
}

// GETEX key [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds|PERSIST]
func cmdGetex(c *Client, args [][]byte) {
	o, ok := parseSetOptions(args[2:], true)
	if !ok {
		c.WriteError(errSyntax)
		return
	}
	key := args[1]
	e, ok := c.lookupString(key)
	if !ok {
		return
	}
	if e == nil {
		c.WriteNull()
		return
	}
	var at int64
	if o.flags&setExpireAny != 0 {
		var msg string
		if at, msg = setDeadline(o, c.nowMs, "getex"); msg != "" {
			c.WriteError(msg)
			return
		}
	}
	c.writeStringEntry(e)
	st := c.eng.store
	switch {
	case o.flags&(setEXAT|setPXAT) != 0 && at <= c.nowMs:
		st.Delete(key, c.nowMs)
	case o.flags&setExpireAny != 0 && at == e.ExpireAt():
		st.Touched(key) // still a change, as in EXPIRE
	case o.flags&setExpireAny != 0:
		st.SetExpire(key, e, at)
	case o.flags&setPersist != 0 && e.ExpireAt() != 0:
		st.SetExpire(key, e, 0)
	}
}

// GETDEL key
func cmdGetdel(c *Client, args [][]byte) {
	e, ok := c.lookupString(args[1])
	if !ok {
		return
	}
	if e == nil {
		c.WriteNull()
		return
	}
	c.writeStringEntry(e)
	c.eng.store.Delete(args[1], c.nowMs)
}

// GETSET key value
func cmdGetset(c *Client, args [][]byte) {
	e, ok := c.lookupString(args[1])
	if !ok {
		return
	}
	if e == nil {
		c.WriteNull()
	} else {
		c.writeStringEntry(e)
	}
	st := c.eng.store
	e, _ = st.Put(args[1], c.nowMs)
	st.SetBytes(args[1], e, args[2])
	st.SetExpire(args[1], e, 0)
}

// MGET key [key ...]
//
// A missing key and a key of another kind both give a null. A reply past
// maxReplyBytes is refused with an error instead.
func cmdMget(c *Client, args [][]byte) {
	st := c.eng.store
	start := len(c.Out)
	c.WriteArray(len(args) - 1)
	for _, k := range args[1:] {
		e := st.Lookup(k, c.nowMs)
		if e == nil || e.Kind() != shards.KindString {
			c.WriteNull()
			continue
		}
		c.writeStringEntry(e)
		if len(c.Out)-start > maxReplyBytes {
			c.Out = c.Out[:start]
			c.WriteError(sprintf(errMgetTooBig, maxReplyBytes>>20))
			return
		}
	}
}

// MSET key value [key value ...]
func cmdMset(c *Client, args [][]byte) {
	if len(args)%2 == 0 {
		c.WriteError(sprintf(errWrongArgs, "mset"))
		return
	}
	c.msetPairs(args)
	c.WriteOK()
}

// MSETNX key value [key value ...]
func cmdMsetnx(c *Client, args [][]byte) {
	if len(args)%2 == 0 {
		c.WriteError(sprintf(errWrongArgs, "msetnx"))
		return
	}
	st := c.eng.store
	for i := 1; i < len(args); i += 2 {
		if st.LookupWrite(args[i], c.nowMs) != nil {
			c.WriteInt(0)
			return
		}
	}
	c.msetPairs(args)
	c.WriteInt(1)
}

// msetPairs stores every key/value pair of args[1:], clearing deadlines.
// A key named twice takes its last value.
func (c *Client) msetPairs(args [][]byte) {
	st := c.eng.store
	for i := 1; i+1 < len(args); i += 2 {
		e, _ := st.Put(args[i], c.nowMs)
		st.SetBytes(args[i], e, args[i+1])
		st.SetExpire(args[i], e, 0)
	}
}

// INCR key
func cmdIncr(c *Client, args [][]byte) { c.incrBy(args[1], 1) }

// DECR key
func cmdDecr(c *Client, args [][]byte) { c.incrBy(args[1], -1) }

// INCRBY key increment
func cmdIncrby(c *Client, args [][]byte) {
	n, ok := redisnum.ParseInt(args[2])
	if !ok {
		c.WriteError(errNotInt)
		return
	}
	c.incrBy(args[1], n)
}

// DECRBY key decrement
func cmdDecrby(c *Client, args [][]byte) {
	n, ok := redisnum.ParseInt(args[2])
	if !ok {
		c.WriteError(errNotInt)
		return
	}
	if n == math.MinInt64 { // cannot be negated
		c.WriteError(errDecrOverflow)
		return
	}
	c.incrBy(args[1], -n)
}

// incrBy adds by to the integer at key (0 when missing), keeping the
// key's deadline. An existing counter is updated in place: no allocation.
func (c *Client) incrBy(key []byte, by int64) {
	st := c.eng.store
	sh := c.keyShard(key)
	e := st.LookupWriteIn(sh, key, c.nowMs)
	if e == nil {
		e, _ = st.PutIn(sh, key, c.nowMs)
		st.SetInt(e, by)
		c.noteWritten(e)
		c.WriteInt(by)
		return
	}
	if e.Kind() != shards.KindString {
		c.WriteError(errWrongType)
		return
	}
	v, ok := e.Int()
	if !ok {
		c.WriteError(errNotInt)
		return
	}
	if (by < 0 && v < 0 && by < math.MinInt64-v) || (by > 0 && v > 0 && by > math.MaxInt64-v) {
		c.WriteError(errOverflow)
		return
	}
	v += by
	st.SetInt(e, v)
	st.TouchedIn(sh, key)
	c.noteWritten(e)
	c.WriteInt(v)
}

// INCRBYFLOAT key increment
//
// The value and the increment are checked as Redis's string2ld
// (ParseLongDouble); the sum is computed and formatted as Redis's 80-bit
// long double arithmetic does (AppendLongDoubleSum), keeping the key's
// deadline.
func cmdIncrbyfloat(c *Client, args [][]byte) {
	key := args[1]
	e, ok := c.lookupStringToWrite(key)
	if !ok {
		return
	}
	// Redis adds in 80-bit long double; AppendLongDoubleSum emulates that
	// exactly, so replies match Redis digit for digit (0.1+0.2 is "0.3").
	st := c.eng.store
	var cur []byte
	if e != nil {
		var buf [64]byte
		cur = st.AppendBytes(buf[:0], e)
		if _, ok := redisnum.ParseLongDouble(cur); !ok {
			c.WriteError(errNotFloat)
			return
		}
	}
	if _, ok := redisnum.ParseLongDouble(args[2]); !ok {
		c.WriteError(errNotFloat)
		return
	}
	var buf [320]byte
	v, valid, finite := redisnum.AppendLongDoubleSum(buf[:0], cur, args[2])
	switch {
	case !valid:
		c.WriteError(errNotFloat)
		return
	case !finite:
		c.WriteError(errIncrFloatNaN)
		return
	}
	e, _ = st.Put(key, c.nowMs) // keeps the deadline
	st.SetBytes(key, e, v)
	c.WriteBulk(v)
}

// checkStringLength reports whether a string of size bytes grown by add
// bytes stays within proto-max-bulk-len; if not it replies the error.
func (c *Client) checkStringLength(size, add int64) bool {
	total := size + add
	if total > c.eng.maxBulk.Load() || total < size || total < add {
		c.WriteError(errStringTooLong)
		return false
	}
	return true
}

// APPEND key value
func cmdAppend(c *Client, args [][]byte) {
	key, val := args[1], args[2]
	e, ok := c.lookupStringToWrite(key)
	if !ok {
		return
	}
	st := c.eng.store
	if e == nil {
		e, _ = st.Put(key, c.nowMs)
		st.SetBytes(key, e, val)
		c.WriteInt(int64(len(val)))
		return
	}
	old := st.StrLen(e)
	if !c.checkStringLength(int64(old), int64(len(val))) {
		return
	}
	nb := st.AppendBytes(make([]byte, 0, old+len(val)), e)
	nb = append(nb, val...)
	e, _ = st.Put(key, c.nowMs) // the same entry; records the change
	st.SetBytes(key, e, nb)
	c.WriteInt(int64(len(nb)))
}

// STRLEN key
func cmdStrlen(c *Client, args [][]byte) {
	e, ok := c.lookupString(args[1])
	if !ok {
		return
	}
	if e == nil {
		c.WriteInt(0)
		return
	}
	c.WriteInt(int64(c.eng.store.StrLen(e)))
}

// GETRANGE key start end
//
// SUBSTR key start end is the same command.
func cmdGetrange(c *Client, args [][]byte) {
	start, ok := redisnum.ParseInt(args[2])
	if !ok {
		c.WriteError(errNotInt)
		return
	}
	end, ok := redisnum.ParseInt(args[3])
	if !ok {
		c.WriteError(errNotInt)
		return
	}
	e, ok := c.lookupString(args[1])
	if !ok {
		return
	}
	if e == nil {
		c.writeEmptyBulk()
		return
	}
	st := c.eng.store
	first, last, ok := strRange(start, end, int64(st.StrLen(e)))
	if !ok {
		c.writeEmptyBulk()
		return
	}
	// Format the whole value into the output buffer, then slide the range
	// down behind its header: no copy of the value elsewhere.
	n := last - first + 1
	var hb [24]byte
	h := append(strconv.AppendInt(append(hb[:0], '$'), n, 10), '\r', '\n')
	mark := len(c.Out)
	c.Out = st.AppendBytes(c.Out, e)
	c.Out = append(c.Out, h...) // room for the header when it is longer than first
	copy(c.Out[mark+len(h):], c.Out[mark+int(first):mark+int(last)+1])
	copy(c.Out[mark:], h)
	c.Out = append(c.Out[:mark+len(h)+int(n)], '\r', '\n')
}

// strRange resolves GETRANGE's inclusive start and end (negative counts
// from the end) against a string of length size, as Redis 7.2: it returns
// the first and last byte to reply, or ok false for an empty reply.
func strRange(start, end, size int64) (first, last int64, ok bool) {
	if start < 0 && end < 0 && start > end {
		return 0, 0, false
	}
	if start < 0 {
		start += size
	}
	if end < 0 {
		end += size
	}
	start = max(start, 0)
	end = max(end, 0)
	if end >= size {
		end = size - 1
	}
	if start > end || size == 0 {
		return 0, 0, false
	}
	return start, end, true
}

// SETRANGE key offset value
func cmdSetrange(c *Client, args [][]byte) {
	off, ok := redisnum.ParseInt(args[2])
	if !ok {
		c.WriteError(errNotInt)
		return
	}
	if off < 0 {
		c.WriteError(errOffsetRange)
		return
	}
	key, val := args[1], args[3]
	e, ok := c.lookupStringToWrite(key)
	if !ok {
		return
	}
	st := c.eng.store
	old := 0
	if e != nil {
		old = st.StrLen(e)
	}
	if len(val) == 0 { // nothing to write: the length as it is
		c.WriteInt(int64(old))
		return
	}
	if !c.checkStringLength(off, int64(len(val))) {
		return
	}
	size := max(old, int(off)+len(val))
	nb := make([]byte, 0, size)
	if e != nil {
		nb = st.AppendBytes(nb, e)
	}
	nb = nb[:size] // the gap, if any, is zero bytes as in Redis
	copy(nb[off:], val)
	e, _ = st.Put(key, c.nowMs)
	st.SetBytes(key, e, nb)
	c.WriteInt(int64(size))
}
