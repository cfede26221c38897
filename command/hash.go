package command

import (
	"math"

	"github.com/ratekv/ratekv/internal/redisnum"
	"github.com/ratekv/ratekv/shards"
)

// Hash commands, with Redis 7's semantics, replies and error texts
// (src/t_hash.c). The data structure is shards.Hash; these handlers parse,
// check in Redis's order (the arguments, then the key's type, then the
// stored values) and write replies.
//
// HGETALL is a map in RESP3 and a flat array in RESP2; HRANDFIELD
// WITHVALUES gives [field, value] pairs in RESP3 and a flat array in RESP2;
// HSCAN is flat in both. A compact hash lists its fields in the order they
// were added, as Redis's listpack does; a large one in an order of its own.
// A hash emptied by HDEL is deleted.
//
// Writes are journaled verbatim: their effect depends only on their
// arguments and the hash before them (HINCRBYFLOAT's sum too: it is
// computed from the stored decimal and the argument, never from a float
// kept aside).

func init() {
	const w, r = FlagWrite, FlagReadOnly
	key1 := keyed("hash")
	register(
		key1(&Command{Name: "hset", Arity: -4, Flags: w | FlagDenyOOM | FlagFast, Persist: PersistVerbatim, Handler: cmdHset,
			Summary: "Creates or modifies the value of a field in a hash."}),
		key1(&Command{Name: "hmset", Arity: -4, Flags: w | FlagDenyOOM | FlagFast, Persist: PersistVerbatim, Handler: cmdHmset,
			Summary: "Sets the values of multiple fields."}),
		key1(&Command{Name: "hsetnx", Arity: 4, Flags: w | FlagDenyOOM | FlagFast, Persist: PersistVerbatim, Handler: cmdHsetnx,
			Summary: "Sets the value of a field in a hash only when the field doesn't exist."}),
		key1(&Command{Name: "hget", Arity: 3, Flags: r | FlagFast, Handler: cmdHget,
			Summary: "Returns the value of a field in a hash."}),
		key1(&Command{Name: "hmget", Arity: -3, Flags: r | FlagFast, Handler: cmdHmget,
			Summary: "Returns the values of all fields in a hash."}),
		key1(&Command{Name: "hgetall", Arity: 2, Flags: r, Handler: cmdHgetall,
			Summary: "Returns all fields and values in a hash."}),
		key1(&Command{Name: "hkeys", Arity: 2, Flags: r, Handler: cmdHkeys,
			Summary: "Returns all fields in a hash."}),
		key1(&Command{Name: "hvals", Arity: 2, Flags: r, Handler: cmdHvals,
			Summary: "Returns all values in a hash."}),
		key1(&Command{Name: "hdel", Arity: -3, Flags: w | FlagFast, Persist: PersistVerbatim, Handler: cmdHdel,
			Summary: "Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain."}),
		key1(&Command{Name: "hexists", Arity: 3, Flags: r | FlagFast, Handler: cmdHexists,
			Summary: "Determines whether a field exists in a hash."}),
		key1(&Command{Name: "hlen", Arity: 2, Flags: r | FlagFast, Handler: cmdHlen,
			Summary: "Returns the number of fields in a hash."}),
		key1(&Command{Name: "hstrlen", Arity: 3, Flags: r | FlagFast, Handler: cmdHstrlen,
			Summary: "Returns the length of the value of a field."}),
		key1(&Command{Name: "hincrby", Arity: 4, Flags: w | FlagDenyOOM | FlagFast, Persist: PersistVerbatim, Handler: cmdHincrby,
			Summary: "Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the field doesn't exist."}),
		key1(&Command{Name: "hincrbyfloat", Arity: 4, Flags: w | FlagDenyOOM | FlagFast, Persist: PersistVerbatim, Handler: cmdHincrbyfloat,
			Summary: "Increments the floating point value of a field by a number. Uses 0 as initial value if the field doesn't exist."}),
		key1(&Command{Name: "hrandfield", Arity: -2, Flags: r, Handler: cmdHrandfield,
			Summary: "Returns one or more random fields from a hash."}),
		key1(&Command{Name: "hscan", Arity: -3, Flags: r, Handler: cmdHscan,
			Summary: "Iterates over fields and values of a hash."}),
	)
}

// lookupHash returns the hash of key and whether there is one. When key
// holds another kind it replies WRONGTYPE and returns ok false. write says
// the lookup is a write's (see lookupKind).
func (c *Client) lookupHash(key []byte, write bool) (h shards.Hash, exists, ok bool) {
	e, ok := c.lookupKind(key, shards.KindHash, write)
	if e == nil {
		return shards.Hash{}, false, ok
	}
	return c.eng.store.Hash(e), true, true
}

// createHash makes key, which holds nothing, an empty hash; the caller adds
// a field.
func (c *Client) createHash(key []byte) shards.Hash {
	st := c.eng.store
	e, _ := st.PutIn(c.keyShard(key), key, c.nowMs)
	return st.NewHash(key, e)
}

// writeElem writes a field, value or list element as a bulk string.
func (c *Client) writeElem(e shards.Elem) {
	if e.IsInt {
		c.WriteBulkInt(e.Int)
		return
	}
	c.WriteBulk(e.B)
}

// HSET key field value [field value ...]
func cmdHset(c *Client, args [][]byte) { hsetGeneric(c, args, "hset") }

// HMSET key field value [field value ...]
func cmdHmset(c *Client, args [][]byte) { hsetGeneric(c, args, "hmset") }

func hsetGeneric(c *Client, args [][]byte, name string) {
	if len(args)%2 != 0 {
		c.WriteError(sprintf(errWrongArgs, name))
		return
	}
	key := args[1]
	h, exists, ok := c.lookupHash(key, true)
	if !ok {
		return
	}
	if !exists {
		h = c.createHash(key)
	}
	h.Reserve((len(args) - 2) / 2)
	added := 0
	for i := 2; i < len(args); i += 2 {
		if h.Set(args[i], args[i+1]) {
			added++
		}
	}
	c.eng.store.TouchedIn(c.keyShard(key), key)
	if name == "hmset" {
		c.WriteOK()
		return
	}
	c.WriteInt(int64(added))
}

// HSETNX key field value
func cmdHsetnx(c *Client, args [][]byte) {
	key := args[1]
	h, exists, ok := c.lookupHash(key, true)
	if !ok {
		return
	}
	if exists {
		if _, found := h.Get(args[2]); found {
			c.WriteInt(0)
			return
		}
	} else {
		h = c.createHash(key)
	}
	h.Set(args[2], args[3])
	c.eng.store.TouchedIn(c.keyShard(key), key)
	c.WriteInt(1)
}

// HGET key field
func cmdHget(c *Client, args [][]byte) {
	h, exists, ok := c.lookupHash(args[1], false)
	if !ok {
		return
	}
	if exists {
		if v, found := h.Get(args[2]); found {
			c.writeElem(v)
			return
		}
	}
	c.WriteNull()
}

// HMGET key field [field ...]
func cmdHmget(c *Client, args [][]byte) {
	h, exists, ok := c.lookupHash(args[1], false)
	if !ok {
		return
	}
	c.WriteArray(len(args) - 2)
	for _, f := range args[2:] {
		if exists {
			if v, found := h.Get(f); found {
				c.writeElem(v)
				continue
			}
		}
		c.WriteNull()
	}
}

// HGETALL key
func cmdHgetall(c *Client, args [][]byte) { hwalkGeneric(c, args[1], true, true) }

// HKEYS key
func cmdHkeys(c *Client, args [][]byte) { hwalkGeneric(c, args[1], true, false) }

// HVALS key
func cmdHvals(c *Client, args [][]byte) { hwalkGeneric(c, args[1], false, true) }

// hwalkGeneric writes the fields, the values or both (a map) of a hash.
func hwalkGeneric(c *Client, key []byte, fields, values bool) {
	h, exists, ok := c.lookupHash(key, false)
	if !ok {
		return
	}
	n := 0
	if exists {
		n = h.Len()
	}
	if fields && values {
		c.WriteMap(n)
	} else {
		c.WriteArray(n)
	}
	if !exists {
		return
	}
	h.Walk(func(f, v shards.Elem) bool {
		if fields {
			c.writeElem(f)
		}
		if values {
			c.writeElem(v)
		}
		return true
	})
}

// HDEL key field [field ...]
func cmdHdel(c *Client, args [][]byte) {
	key := args[1]
	h, exists, ok := c.lookupHash(key, true)
	if !ok {
		return
	}
	deleted := 0
	if exists {
		for _, f := range args[2:] {
			if h.Delete(f) {
				deleted++
				if h.Len() == 0 {
					break
				}
			}
		}
		if deleted > 0 {
			c.collectionChanged(key, h.Len())
		}
	}
	c.WriteInt(int64(deleted))
}

// collectionChanged records a change made in place to the hash or list of
// key, which now holds n items: it deletes the key when n is 0, as Redis
// never keeps an empty one.
func (c *Client) collectionChanged(key []byte, n int) {
	if n == 0 {
		c.eng.store.Delete(key, c.nowMs)
		return
	}
	c.eng.store.TouchedIn(c.keyShard(key), key)
}

// HEXISTS key field
func cmdHexists(c *Client, args [][]byte) {
	h, exists, ok := c.lookupHash(args[1], false)
	if !ok {
		return
	}
	found := false
	if exists {
		_, found = h.Get(args[2])
	}
	if found {
		c.WriteInt(1)
	} else {
		c.WriteInt(0)
	}
}

// HLEN key
func cmdHlen(c *Client, args [][]byte) {
	h, exists, ok := c.lookupHash(args[1], false)
	if !ok {
		return
	}
	if !exists {
		c.WriteInt(0)
		return
	}
	c.WriteInt(int64(h.Len()))
}

// HSTRLEN key field
func cmdHstrlen(c *Client, args [][]byte) {
	h, exists, ok := c.lookupHash(args[1], false)
	if !ok {
		return
	}
	n := 0
	if exists {
		if v, found := h.Get(args[2]); found {
			n = v.Len()
		}
	}
	c.WriteInt(int64(n))
}

// HINCRBY key field increment
func cmdHincrby(c *Client, args [][]byte) {
	incr, ok := redisnum.ParseInt(args[3])
	if !ok {
		c.WriteError(errNotInt)
		return
	}
	key := args[1]
	h, exists, ok := c.lookupHash(key, true)
	if !ok {
		return
	}
	var cur int64
	if exists {
		if v, found := h.Get(args[2]); found {
			if cur, ok = v.Int, v.IsInt; !ok {
				if cur, ok = redisnum.ParseInt(v.B); !ok {
					c.WriteError(errHashNotInt)
					return
				}
			}
		}
	}
	if incr < 0 && cur < 0 && incr < math.MinInt64-cur || incr > 0 && cur > 0 && incr > math.MaxInt64-cur {
		c.WriteError(errOverflow)
		return
	}
	if !exists {
		h = c.createHash(key)
	}
	var buf [20]byte
	h.Set(args[2], redisnum.AppendInt(buf[:0], cur+incr))
	c.eng.store.TouchedIn(c.keyShard(key), key)
	c.WriteInt(cur + incr)
}

// HINCRBYFLOAT key field increment
//
// As INCRBYFLOAT: the increment and the stored value are read as Redis's
// string2ld reads them, and the sum is computed and printed as Redis's
// 80-bit long double arithmetic does (redisnum.AppendLongDoubleSum).
func cmdHincrbyfloat(c *Client, args [][]byte) {
	var buf [320]byte
	// 0 + increment: invalid, infinite (not merely past float64's range),
	// or a long double.
	switch _, valid, finite := redisnum.AppendLongDoubleSum(buf[:0], nil, args[3]); {
	case !valid:
		c.WriteError(errNotFloat)
		return
	case !finite:
		c.WriteError(errNaNOrInf)
		return
	}
	key := args[1]
	h, exists, ok := c.lookupHash(key, true)
	if !ok {
		return
	}
	var cur []byte
	var cbuf [64]byte
	if exists {
		if v, found := h.Get(args[2]); found {
			cur = v.AppendTo(cbuf[:0])
			if _, ok := redisnum.ParseLongDouble(cur); !ok {
				c.WriteError(errHashNotFloat)
				return
			}
		}
	}
	sum, _, finite := redisnum.AppendLongDoubleSum(buf[:0], cur, args[3])
	if !finite {
		c.WriteError(errIncrFloatNaN)
		return
	}
	if !exists {
		h = c.createHash(key)
	}
	h.Set(args[2], sum)
	c.eng.store.TouchedIn(c.keyShard(key), key)
	c.WriteBulk(sum)
}

// HRANDFIELD key [count [WITHVALUES]]
func cmdHrandfield(c *Client, args [][]byte) {
	o, msg := parseRandArgs(args, "withvalues")
	if msg != "" {
		c.WriteError(msg)
		return
	}
	h, exists, ok := c.lookupHash(args[1], false)
	if !ok {
		return
	}
	if !o.hasCount {
		if !exists {
			c.WriteNull()
			return
		}
		h.Sample(1, true, func(f, _ shards.Elem) { c.writeElem(f) })
		return
	}
	n := 0
	if exists {
		n = h.Len()
	}
	c.writeRandom("HRANDFIELD", "fields", o, n, func(count int, unique, pairs bool, room func() bool) {
		h.Sample(count, unique, func(f, v shards.Elem) {
			if !room() {
				return
			}
			if pairs {
				c.WriteArray(2)
			}
			c.writeElem(f)
			if o.with {
				c.writeElem(v)
			}
		})
	})
}

// HSCAN key cursor [MATCH pattern] [COUNT count]
func cmdHscan(c *Client, args [][]byte) {
	var buf [20]byte
	c.scanCollection(args, shards.KindHash, func(e *shards.Entry, cursor uint64, o *scanArgs) (next uint64, n int) {
		next = c.eng.store.Hash(e).Scan(cursor, o.count, func(f, v shards.Elem) {
			if o.matches(f, &buf) {
				c.writeElem(f)
				c.writeElem(v)
				n += 2
			}
		})
		return next, n
	})
}
