package command

import (
	"bytes"
	"math"
	"strconv"

	"github.com/ratekv/ratekv/internal/glob"
	"github.com/ratekv/ratekv/internal/redisnum"
	"github.com/ratekv/ratekv/shards"
	"github.com/tidwall/redcon"
)

// Keyspace commands: existence, type, deadlines, renaming and iteration,
// for keys of any kind.
//
// Deadlines are absolute Unix milliseconds, as in Redis: EXPIRE and friends
// turn their argument into one with the command's clock reading (c.nowMs),
// with Redis's overflow checks, and a deadline that is already due deletes
// the key on the spot (and still replies 1). TTL rounds to the nearest
// second as Redis does.
//
// SCAN's cursor is a shard index (high 32 bits) and a hash position
// within that shard (see shards.Store.Scan), not Redis's reverse-binary
// table cursor: both are opaque to clients, and a hash-range cursor keeps
// the guarantee that a full iteration returns every key that was present
// throughout, even when a shard's index grows between calls. Keys come in
// no particular order (nor do they in Redis). Cursors are parsed with
// strtoul's rules as in Redis, so any cursor Redis accepts is accepted;
// one naming a shard past the last ends the iteration.
//
// Options are matched as Redis matches them, with strcasecmp on the C
// string: an argument is cut at its first NUL byte before comparing (see
// cstr).

func init() {
	register(
		&Command{Name: "del", Arity: -2, Flags: FlagWrite, FirstKey: 1, LastKey: -1, Step: 1, Handler: cmdDel,
			Summary: "Deletes one or more keys.", Group: "generic"},
		&Command{Name: "unlink", Arity: -2, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: -1, Step: 1, Handler: cmdDel,
			Summary: "Asynchronously deletes one or more keys.", Group: "generic"},
		&Command{Name: "exists", Arity: -2, Flags: FlagReadOnly | FlagFast, FirstKey: 1, LastKey: -1, Step: 1, Handler: cmdExists,
			Summary: "Determines whether one or more keys exist.", Group: "generic"},
		&Command{Name: "touch", Arity: -2, Flags: FlagReadOnly | FlagFast, FirstKey: 1, LastKey: -1, Step: 1, Handler: cmdTouch,
			Summary: "Returns the number of existing keys out of those specified after updating the time they were last accessed.", Group: "generic"},
		&Command{Name: "type", Arity: 2, Flags: FlagReadOnly | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Handler: cmdType,
			Summary: "Determines the type of value stored at a key.", Group: "generic"},
		&Command{Name: "expire", Arity: -3, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Persist: PersistTTL,
			Handler: cmdExpire,
			Summary: "Sets the expiration time of a key in seconds.", Group: "generic"},
		&Command{Name: "pexpire", Arity: -3, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Persist: PersistTTL,
			Handler: cmdPexpire,
			Summary: "Sets the expiration time of a key in milliseconds.", Group: "generic"},
		&Command{Name: "expireat", Arity: -3, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Persist: PersistTTL,
			Handler: cmdExpireat,
			Summary: "Sets the expiration time of a key to a Unix timestamp.", Group: "generic"},
		&Command{Name: "pexpireat", Arity: -3, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Persist: PersistTTL,
			Handler: cmdPexpireat,
			Summary: "Sets the expiration time of a key to a Unix milliseconds timestamp.", Group: "generic"},
		&Command{Name: "ttl", Arity: 2, Flags: FlagReadOnly | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Handler: cmdTTL,
			Summary: "Returns the expiration time in seconds of a key.", Group: "generic"},
		&Command{Name: "pttl", Arity: 2, Flags: FlagReadOnly | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Handler: cmdPTTL,
			Summary: "Returns the expiration time in milliseconds of a key.", Group: "generic"},
		&Command{Name: "expiretime", Arity: 2, Flags: FlagReadOnly | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Handler: cmdExpiretime,
			Summary: "Returns the expiration time of a key as a Unix timestamp.", Group: "generic"},
		&Command{Name: "pexpiretime", Arity: 2, Flags: FlagReadOnly | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Handler: cmdPexpiretime,
			Summary: "Returns the expiration time of a key as a Unix milliseconds timestamp.", Group: "generic"},
		&Command{Name: "persist", Arity: 2, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Persist: PersistTTL,
			Handler: cmdPersist,
			Summary: "Removes the expiration time of a key.", Group: "generic"},
		&Command{Name: "keys", Arity: 2, Flags: FlagReadOnly | FlagAllShards, Handler: cmdKeys,
			Summary: "Returns all key names that match a pattern.", Group: "generic"},
		&Command{Name: "scan", Arity: -2, Flags: FlagReadOnly | FlagAllShards, Handler: cmdScan,
			Summary: "Iterates over the key names in the database.", Group: "generic"},
		&Command{Name: "randomkey", Arity: 1, Flags: FlagReadOnly | FlagAllShards, Handler: cmdRandomkey,
			Summary: "Returns a random key name from the database.", Group: "generic"},
		&Command{Name: "rename", Arity: 3, Flags: FlagWrite, FirstKey: 1, LastKey: 2, Step: 1, Handler: cmdRename,
			Summary: "Renames a key and overwrites the destination.", Group: "generic"},
		&Command{Name: "renamenx", Arity: 3, Flags: FlagWrite | FlagFast, FirstKey: 1, LastKey: 2, Step: 1, Handler: cmdRenamenx,
			Summary: "Renames a key only when the target key name doesn't exist.", Group: "generic"},
	)
	register(&Command{Name: "object", Arity: -2, Handler: cmdObject,
		Summary: "A container for object introspection commands.", Group: "generic"})
	registerSubcommands("object",
		&Command{Name: "object|freq", Arity: 3, Flags: FlagReadOnly, FirstKey: 2, LastKey: 2, Step: 1, Handler: cmdObjectFreq,
			Summary: "Returns the logarithmic access frequency counter of a Redis object.", Group: "generic"},
		&Command{Name: "object|idletime", Arity: 3, Flags: FlagReadOnly, FirstKey: 2, LastKey: 2, Step: 1, Handler: cmdObjectIdletime,
			Summary: "Returns the time since the last access to a Redis object.", Group: "generic"},
		&Command{Name: "object|help", Arity: 2, Flags: FlagLoading | FlagStale, Handler: cmdObjectHelp,
			Summary: "Returns helpful text about the different subcommands.", Group: "generic"},
	)
}

// DEL key [key ...]
//
// UNLINK key [key ...] is the same: values are freed by the garbage
// collector either way.
func cmdDel(c *Client, args [][]byte) {
	st := c.eng.store
	var n int64
	for _, k := range args[1:] {
		if st.Delete(k, c.nowMs) {
			n++
		}
	}
	c.WriteInt(n)
}

// EXISTS key [key ...]
//
// TOUCH key [key ...] replies the same count, and counts as an access to
// each key for the LRU and LFU policies, which EXISTS does not. A key
// named twice is counted twice.
func cmdExists(c *Client, args [][]byte) { existsGeneric(c, args, false) }

func cmdTouch(c *Client, args [][]byte) { existsGeneric(c, args, true) }

func existsGeneric(c *Client, args [][]byte, touch bool) {
	st := c.eng.store
	var n int64
	for _, k := range args[1:] {
		lookup := st.LookupNoTouchIn
		if touch {
			lookup = st.LookupIn
		}
		if lookup(c.keyShard(k), k, c.nowMs) != nil {
			n++
		}
	}
	c.WriteInt(n)
}

// TYPE key
func cmdType(c *Client, args [][]byte) {
	e := c.eng.store.LookupNoTouchIn(c.keyShard(args[1]), args[1], c.nowMs)
	if e == nil {
		c.WriteSimple("none")
		return
	}
	c.WriteSimple(e.Kind().String())
}

// expireFlags are the NX|XX|GT|LT options of EXPIRE and its variants.
type expireFlags uint8

const (
	expireNX expireFlags = 1 << iota
	expireXX
	expireGT
	expireLT
)

// parseExpireFlags parses the options after EXPIRE's time argument, as
// Redis's parseExtendedExpireArgumentsOrReply: every word must be NX, XX, GT
// or LT (repeats allowed); NX excludes the others, GT excludes LT. It
// returns the error text to reply, or "".
func parseExpireFlags(opts [][]byte) (expireFlags, string) {
	var f expireFlags
	for _, o := range opts {
		w := cstr(o)
		switch {
		case equalFold(w, "nx"):
			f |= expireNX
		case equalFold(w, "xx"):
			f |= expireXX
		case equalFold(w, "gt"):
			f |= expireGT
		case equalFold(w, "lt"):
			f |= expireLT
		default:
			return 0, sprintf(errUnsupportedOpt, sanitizeErr(w))
		}
	}
	if f&expireNX != 0 && f&(expireXX|expireGT|expireLT) != 0 {
		return 0, errExpireNXCompat
	}
	if f&expireGT != 0 && f&expireLT != 0 {
		return 0, errExpireGTLT
	}
	return f, ""
}

// expireDeadline turns EXPIRE's time argument into an absolute deadline in
// Unix ms: t in seconds (sec) or milliseconds, plus base (the clock for
// EXPIRE and PEXPIRE, 0 for the *AT variants). ok is false when the
// result would overflow, which Redis reports as an invalid expire time.
// Deadlines in the past, including negative ones, are valid.
func expireDeadline(t int64, sec bool, base int64) (at int64, ok bool) {
	if sec {
		if t > math.MaxInt64/1000 || t < math.MinInt64/1000 {
			return 0, false
		}
		t *= 1000
	}
	if t > math.MaxInt64-base {
		return 0, false
	}
	return t + base, true
}

// EXPIRE key seconds [NX|XX|GT|LT]
func cmdExpire(c *Client, args [][]byte) { c.expireGeneric(args, true, c.nowMs, "expire") }

// PEXPIRE key milliseconds [NX|XX|GT|LT]
func cmdPexpire(c *Client, args [][]byte) { c.expireGeneric(args, false, c.nowMs, "pexpire") }

// EXPIREAT key unix-time-seconds [NX|XX|GT|LT]
func cmdExpireat(c *Client, args [][]byte) { c.expireGeneric(args, true, 0, "expireat") }

// PEXPIREAT key unix-time-milliseconds [NX|XX|GT|LT]
func cmdPexpireat(c *Client, args [][]byte) { c.expireGeneric(args, false, 0, "pexpireat") }

// expireGeneric implements the four EXPIRE commands (Redis's
// expireGenericCommand). A persistent key counts as having an infinite
// TTL: GT never applies to it, LT always does.
func (c *Client) expireGeneric(args [][]byte, sec bool, base int64, name string) {
	flags, msg := parseExpireFlags(args[3:])
	if msg != "" {
		c.WriteError(msg)
		return
	}
	t, ok := redisnum.ParseInt(args[2])
	if !ok {
		c.WriteError(errNotInt)
		return
	}
	at, ok := expireDeadline(t, sec, base)
	if !ok {
		c.WriteError(sprintf(errInvalidExpire, name))
		return
	}
	st := c.eng.store
	key := args[1]
	sh := c.keyShard(key)
	e := st.LookupWriteIn(sh, key, c.nowMs)
	if e == nil {
		c.WriteInt(0)
		return
	}
	cur := e.ExpireAt() // 0: persistent
	switch {
	case flags&expireNX != 0 && cur != 0,
		flags&expireXX != 0 && cur == 0,
		flags&expireGT != 0 && (cur == 0 || at <= cur),
		flags&expireLT != 0 && cur != 0 && at >= cur:
		c.WriteInt(0)
		return
	}
	switch {
	case at <= c.nowMs:
		st.Delete(key, c.nowMs)
	case at == cur:
		// The deadline it had: still a change (WATCH, the change count,
		// the journal), as Redis's setExpire and signalModifiedKey.
		st.TouchedIn(sh, key)
	default:
		st.SetExpireIn(sh, key, e, at)
	}
	c.WriteInt(1)
}

// TTL key
func cmdTTL(c *Client, args [][]byte) { c.ttlGeneric(args[1], false, false) }

// PTTL key
func cmdPTTL(c *Client, args [][]byte) { c.ttlGeneric(args[1], true, false) }

// EXPIRETIME key
func cmdExpiretime(c *Client, args [][]byte) { c.ttlGeneric(args[1], false, true) }

// PEXPIRETIME key
func cmdPexpiretime(c *Client, args [][]byte) { c.ttlGeneric(args[1], true, true) }

// ttlGeneric replies -2 for a missing key, -1 for a persistent one, else
// the remaining time (or, with abs, the deadline) in ms or rounded seconds.
func (c *Client) ttlGeneric(key []byte, ms, abs bool) {
	e := c.eng.store.LookupNoTouchIn(c.keyShard(key), key, c.nowMs)
	if e == nil {
		c.WriteInt(-2)
		return
	}
	at := e.ExpireAt()
	if at == 0 {
		c.WriteInt(-1)
		return
	}
	t := at
	if !abs {
		t = max(at-c.nowMs, 0)
	}
	if !ms {
		// (t+500)/1000, Redis's rounding, without overflowing near
		// MaxInt64 (a PXAT deadline can be that far): Redis replies the
		// exact quotient there too.
		t = t/1000 + (t%1000+500)/1000
	}
	c.WriteInt(t)
}

// PERSIST key
func cmdPersist(c *Client, args [][]byte) {
	st := c.eng.store
	e := st.LookupWrite(args[1], c.nowMs)
	if e == nil || e.ExpireAt() == 0 {
		c.WriteInt(0)
		return
	}
	st.SetExpire(args[1], e, 0)
	c.WriteInt(1)
}

// KEYS pattern
func cmdKeys(c *Client, args [][]byte) {
	pattern := args[1]
	all := len(pattern) == 1 && pattern[0] == '*'
	mark := len(c.Out)
	n := 0
	c.eng.store.Each(c.nowMs, func(k []byte, _ *shards.Entry) bool {
		if all || glob.Match(pattern, k, false) {
			c.Out = redcon.AppendBulk(c.Out, k)
			n++
		}
		return true
	})
	c.insertArrayHeader(mark, n)
}

// insertArrayHeader inserts the header of an n-element array at c.Out[mark:],
// in front of the elements already written there: for replies whose length
// is only known once written (Redis's deferred length).
func (c *Client) insertArrayHeader(mark, n int) {
	var buf [24]byte
	h := redcon.AppendArray(buf[:0], n)
	end := len(c.Out)
	c.Out = append(c.Out, h...) // grow by len(h)
	copy(c.Out[mark+len(h):], c.Out[mark:end])
	copy(c.Out[mark:], h)
}

// scanOpts are SCAN's parsed arguments.
type scanOpts struct {
	cursor  uint64
	count   int64
	pattern []byte // nil: every key
	typ     []byte // nil: every kind (compared as a C string)
}

// parseScan parses SCAN's arguments after the command name, as Redis's
// parseScanCursorOrReply and scanGenericCommand: the cursor first, then
// COUNT n (n >= 1), MATCH pattern and TYPE type in any order, each
// repeatable (the last wins). It returns the error text to reply, or "".
// A TYPE naming no kind is not an error: it matches nothing.
func parseScan(args [][]byte) (scanOpts, string) {
	o := scanOpts{count: 10}
	cur, ok := parseCursor(args[0])
	if !ok {
		return o, errCursor
	}
	o.cursor = cur
	for i := 1; i < len(args); i += 2 {
		w := cstr(args[i])
		if i+1 >= len(args) {
			return o, errSyntax
		}
		switch {
		case equalFold(w, "count"):
			n, ok := redisnum.ParseInt(args[i+1])
			if !ok {
				return o, errNotInt
			}
			if n < 1 {
				return o, errSyntax
			}
			o.count = n
		case equalFold(w, "match"):
			o.pattern = args[i+1]
			if len(o.pattern) == 1 && o.pattern[0] == '*' {
				o.pattern = nil
			}
		case equalFold(w, "type"):
			o.typ = cstr(args[i+1])
		default:
			return o, errSyntax
		}
	}
	return o, ""
}

// parseCursor parses a SCAN cursor with the rules of C's strtoul as Redis
// applies them: the C string (up to a NUL byte) must not start with white
// space, may carry a sign ("-1" wraps around, as in C), must be all digits
// after it and must fit 64 bits. The empty string is cursor 0.
func parseCursor(b []byte) (uint64, bool) {
	b = cstr(b)
	if len(b) == 0 {
		return 0, true
	}
	switch b[0] {
	case ' ', '\t', '\n', '\v', '\f', '\r':
		return 0, false
	}
	neg := false
	if b[0] == '+' || b[0] == '-' {
		neg = b[0] == '-'
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, false
	}
	var n uint64
	for _, ch := range b {
		if ch < '0' || ch > '9' {
			return 0, false
		}
		d := uint64(ch - '0')
		if n > (math.MaxUint64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	if neg {
		n = -n
	}
	return n, true
}

// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]
func cmdScan(c *Client, args [][]byte) {
	o, msg := parseScan(args[1:])
	if msg != "" {
		c.WriteError(msg)
		return
	}
	count := int(min(o.count, math.MaxInt32))
	c.WriteArray(2)
	// The next cursor is only known after the walk: write the keys first,
	// then insert the cursor and the array header in front of them.
	mark := len(c.Out)
	n := 0
	next := c.eng.store.Scan(o.cursor, count, c.nowMs, func(k []byte, e *shards.Entry) {
		if o.pattern != nil && !glob.Match(o.pattern, k, false) {
			return
		}
		if o.typ != nil && !equalFold(o.typ, e.Kind().String()) {
			return
		}
		c.Out = redcon.AppendBulk(c.Out, k)
		n++
	})
	c.insertArrayHeader(mark, n)
	var buf [24]byte
	var num [20]byte
	h := redcon.AppendBulk(buf[:0], strconv.AppendUint(num[:0], next, 10))
	end := len(c.Out)
	c.Out = append(c.Out, h...)
	copy(c.Out[mark+len(h):], c.Out[mark:end])
	copy(c.Out[mark:], h)
}

// RANDOMKEY
func cmdRandomkey(c *Client, args [][]byte) {
	k := c.eng.store.RandomKey(c.nowMs)
	if k == nil {
		c.WriteNull()
		return
	}
	c.WriteBulk(k)
}

// RENAME key newkey
func cmdRename(c *Client, args [][]byte) { c.renameGeneric(args[1], args[2], false) }

// RENAMENX key newkey
func cmdRenamenx(c *Client, args [][]byte) { c.renameGeneric(args[1], args[2], true) }

// renameGeneric moves src to dst with its deadline. Renaming a key to
// itself succeeds (RENAME) or replies 0 (RENAMENX) when the key exists.
func (c *Client) renameGeneric(src, dst []byte, nx bool) {
	st := c.eng.store
	if st.LookupWrite(src, c.nowMs) == nil {
		c.WriteError(errNoSuchKey)
		return
	}
	same := bytes.Equal(src, dst)
	if same || (nx && st.LookupWrite(dst, c.nowMs) != nil) {
		if nx {
			c.WriteInt(0)
		} else {
			c.WriteOK()
		}
		return
	}
	st.Rename(src, dst, c.nowMs)
	if nx {
		c.WriteInt(1)
	} else {
		c.WriteOK()
	}
}

// cstr returns b up to its first NUL byte: the C string Redis sees when it
// compares an option with strcasecmp.
func cstr(b []byte) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}

// equalFold reports whether b equals the lower-case ASCII word s, ignoring
// ASCII case (strcasecmp), without allocating.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		ch := b[i]
		if ch >= 'A' && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		if ch != s[i] {
			return false
		}
	}
	return true
}

// OBJECT subcommand [argument ...]
func cmdObject(c *Client, args [][]byte) { runSubcommand(c, "object", args) }

// objectLookup finds the key of OBJECT's subcommand without counting it
// as an access, as Redis's objectCommandLookup: nil (and a null reply
// written) when it does not exist. It also returns what accesses record
// under the policy set.
func objectLookup(c *Client, args [][]byte) (*shards.Entry, shards.AccessMode) {
	e := c.eng.store.Peek(args[2], c.nowMs)
	if e == nil {
		c.WriteNull()
	}
	return e, shards.EvictPolicy(c.eng.mem.policy.Load()).Access()
}

// OBJECT FREQ key: the key's LFU counter, under an LFU policy only (the
// counter is kept only then; shards/access.go).
func cmdObjectFreq(c *Client, args [][]byte) {
	e, mode := objectLookup(c, args)
	switch {
	case e == nil:
	case mode != shards.AccessLFU:
		c.WriteError(errObjectNoLFU)
	default:
		c.WriteInt(c.eng.store.Freq(e, c.nowMs))
	}
}

// OBJECT IDLETIME key: seconds since the key's last access, under an LRU
// policy only: Redis keeps the clock under every policy but LFU, ratekv
// only under LRU (the clock is written on every access; shards/access.go).
func cmdObjectIdletime(c *Client, args [][]byte) {
	e, mode := objectLookup(c, args)
	switch {
	case e == nil:
	case mode == shards.AccessLFU:
		c.WriteError(errObjectLFU)
	case mode == shards.AccessNone:
		c.WriteError(errObjectNoLRU)
	default:
		c.WriteInt(c.eng.store.IdleTime(e, c.nowMs))
	}
}

// OBJECT HELP
func cmdObjectHelp(c *Client, args [][]byte) {
	c.writeHelp(args[0], []string{
		"ENCODING <key>",
		"    Return the kind of internal representation used in order to store the value",
		"    associated with a <key>.",
		"FREQ <key>",
		"    Return the access frequency index of the <key>. The returned integer is",
		"    proportional to the logarithm of the recent access frequency of the key.",
		"IDLETIME <key>",
		"    Return the idle time of the <key>, that is the approximated number of",
		"    seconds elapsed since the last access to the key.",
		"REFCOUNT <key>",
		"    Return the number of references of the value associated with the specified",
		"    <key>.",
	})
}
