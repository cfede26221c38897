package command

import (
	"math"

	"github.com/ratekv/ratekv/internal/redisnum"
	"github.com/ratekv/ratekv/shards"
)

// List commands, with Redis 7.2's semantics, replies and error texts
// (src/t_list.c), without the blocking variants. The data structure is
// shards.List; these handlers parse, check in Redis's order (which differs
// from command to command: LRANGE, LTRIM, LREM and LINSERT read their
// arguments before the key, LINDEX and LSET the key first) and write
// replies. Indexes count from the head, negative ones from the tail. A
// list emptied by a command is deleted.
//
// Writes are journaled verbatim: their effect depends only on their
// arguments and the lists before them. LMOVE and RPOPLPUSH, of two keys,
// replay after a DEL of each key they found absent (see journal.go).

func init() {
	const w, r = FlagWrite, FlagReadOnly
	key1 := keyed("list")
	key2 := func(c *Command) *Command {
		c.FirstKey, c.LastKey, c.Step, c.Group = 1, 2, 1, "list"
		return c
	}
	register(
		key1(&Command{Name: "lpush", Arity: -3, Flags: w | FlagDenyOOM | FlagFast, Persist: PersistVerbatim, Handler: cmdLpush,
			Summary: "Prepends one or more elements to a list. Creates the key if it doesn't exist."}),
		key1(&Command{Name: "rpush", Arity: -3, Flags: w | FlagDenyOOM | FlagFast, Persist: PersistVerbatim, Handler: cmdRpush,
			Summary: "Appends one or more elements to a list. Creates the key if it doesn't exist."}),
		key1(&Command{Name: "lpushx", Arity: -3, Flags: w | FlagDenyOOM | FlagFast, Persist: PersistVerbatim, Handler: cmdLpushx,
			Summary: "Prepends one or more elements to a list only when the list exists."}),
		key1(&Command{Name: "rpushx", Arity: -3, Flags: w | FlagDenyOOM | FlagFast, Persist: PersistVerbatim, Handler: cmdRpushx,
			Summary: "Appends an element to a list only when the list exists."}),
		key1(&Command{Name: "lpop", Arity: -2, Flags: w | FlagFast, Persist: PersistVerbatim, Handler: cmdLpop,
			Summary: "Returns the first elements in a list after removing it. Deletes the list if the last element was popped."}),
		key1(&Command{Name: "rpop", Arity: -2, Flags: w | FlagFast, Persist: PersistVerbatim, Handler: cmdRpop,
			Summary: "Returns and removes the last elements of a list. Deletes the list if the last element was popped."}),
		key1(&Command{Name: "llen", Arity: 2, Flags: r | FlagFast, Handler: cmdLlen,
			Summary: "Returns the length of a list."}),
		key1(&Command{Name: "lindex", Arity: 3, Flags: r, Handler: cmdLindex,
			Summary: "Returns an element from a list by its index."}),
		key1(&Command{Name: "lrange", Arity: 4, Flags: r, Handler: cmdLrange,
			Summary: "Returns a range of elements from a list."}),
		key1(&Command{Name: "ltrim", Arity: 4, Flags: w, Persist: PersistVerbatim, Handler: cmdLtrim,
			Summary: "Removes elements from both ends a list. Deletes the list if all elements were trimmed."}),
		key1(&Command{Name: "lset", Arity: 4, Flags: w | FlagDenyOOM, Persist: PersistVerbatim, Handler: cmdLset,
			Summary: "Sets the value of an element in a list by its index."}),
		key1(&Command{Name: "lrem", Arity: 4, Flags: w, Persist: PersistVerbatim, Handler: cmdLrem,
			Summary: "Removes elements from a list. Deletes the list if the last element was removed."}),
		key1(&Command{Name: "linsert", Arity: 5, Flags: w | FlagDenyOOM, Persist: PersistVerbatim, Handler: cmdLinsert,
			Summary: "Inserts an element before or after another element in a list."}),
		key1(&Command{Name: "lpos", Arity: -3, Flags: r, Handler: cmdLpos,
			Summary: "Returns the index of matching elements in a list."}),
		key2(&Command{Name: "lmove", Arity: 5, Flags: w | FlagDenyOOM, Persist: PersistVerbatim, Handler: cmdLmove,
			Summary: "Returns an element after popping it from one list and pushing it to another. Deletes the list if the last element was moved."}),
		key2(&Command{Name: "rpoplpush", Arity: 3, Flags: w | FlagDenyOOM, Persist: PersistVerbatim, Handler: cmdRpoplpush,
			Summary: "Returns the last element of a list after removing and pushing it to another list. Deletes the list if the last element was popped."}),
	)
}

// lookupList returns the list of key and whether there is one. When key
// holds another kind it replies WRONGTYPE and returns ok false. write says
// the lookup is a write's (see lookupKind).
func (c *Client) lookupList(key []byte, write bool) (l shards.List, exists, ok bool) {
	e, ok := c.lookupKind(key, shards.KindList, write)
	if e == nil {
		return shards.List{}, false, ok
	}
	return c.eng.store.List(e), true, true
}

// createList makes key, which holds nothing, an empty list; the caller
// pushes an element.
func (c *Client) createList(key []byte) shards.List {
	st := c.eng.store
	e, _ := st.PutIn(c.keyShard(key), key, c.nowMs)
	return st.NewList(key, e)
}

// listIndex turns an index (negative: from the tail) into a position in a
// list of n elements, and reports whether it names one.
func listIndex(i int64, n int) (int, bool) {
	if i < 0 {
		i += int64(n)
	}
	return int(i), i >= 0 && i < int64(n)
}

// LPUSH key element [element ...]
func cmdLpush(c *Client, args [][]byte) { pushGeneric(c, args, true, false) }

// RPUSH key element [element ...]
func cmdRpush(c *Client, args [][]byte) { pushGeneric(c, args, false, false) }

// LPUSHX key element [element ...]
func cmdLpushx(c *Client, args [][]byte) { pushGeneric(c, args, true, true) }

// RPUSHX key element [element ...]
func cmdRpushx(c *Client, args [][]byte) { pushGeneric(c, args, false, true) }

// pushGeneric pushes the elements one by one at the head (front) or the
// tail; with xx only onto an existing list.
func pushGeneric(c *Client, args [][]byte, front, xx bool) {
	key := args[1]
	l, exists, ok := c.lookupList(key, true)
	if !ok {
		return
	}
	if !exists {
		if xx {
			c.WriteInt(0)
			return
		}
		l = c.createList(key)
	}
	for _, e := range args[2:] {
		l.Push(e, front)
	}
	c.eng.store.TouchedIn(c.keyShard(key), key)
	c.WriteInt(int64(l.Len()))
}

// LPOP key [count]
func cmdLpop(c *Client, args [][]byte) { popGeneric(c, args, true, "lpop") }

// RPOP key [count]
func cmdRpop(c *Client, args [][]byte) { popGeneric(c, args, false, "rpop") }

// popGeneric is Redis's popGenericCommand: without a count it replies one
// element (or null), with one an array of up to count (or a null array
// for a missing key, an empty one for count 0).
func popGeneric(c *Client, args [][]byte, front bool, name string) {
	if len(args) > 3 {
		c.WriteError(sprintf(errWrongArgs, name))
		return
	}
	count := int64(-1) // no count
	if len(args) == 3 {
		n, ok := redisnum.ParseInt(args[2])
		if !ok || n < 0 {
			c.WriteError(errMustPositive)
			return
		}
		count = n
	}
	key := args[1]
	l, exists, ok := c.lookupList(key, true)
	if !ok {
		return
	}
	switch {
	case !exists && count < 0:
		c.WriteNull()
		return
	case !exists:
		c.WriteNullArray()
		return
	case count == 0:
		c.WriteArray(0)
		return
	}
	n := l.Len()
	k := 1
	if count > 0 {
		k = int(min(count, int64(n)))
		c.WriteArray(k)
	}
	from := 0
	if !front {
		from = n - 1
	}
	c.writeElems(l, from, k, !front)
	if front {
		l.DeleteRange(0, k)
	} else {
		l.DeleteRange(n-k, k)
	}
	c.collectionChanged(key, n-k)
}

// LLEN key
func cmdLlen(c *Client, args [][]byte) {
	l, exists, ok := c.lookupList(args[1], false)
	if !ok {
		return
	}
	if !exists {
		c.WriteInt(0)
		return
	}
	c.WriteInt(int64(l.Len()))
}

// LINDEX key index
func cmdLindex(c *Client, args [][]byte) {
	l, pos, in, ok := c.listAt(args[1], args[2], false, "")
	switch {
	case !ok:
	case !in:
		c.WriteNull()
	default:
		c.writeElem(l.Index(pos))
	}
}

// listAt looks up the list of key, then reads an index into it, in
// Redis's order for LINDEX and LSET. ok is false when it replied: WRONGTYPE,
// missingErr (or null, when "") for a missing key, or a bad index; in is
// false for an index outside the list.
func (c *Client) listAt(key, index []byte, write bool, missingErr string) (l shards.List, pos int, in, ok bool) {
	l, exists, ok := c.lookupList(key, write)
	switch {
	case !ok:
		return l, 0, false, false
	case !exists && missingErr == "":
		c.WriteNull()
		return l, 0, false, false
	case !exists:
		c.WriteError(missingErr)
		return l, 0, false, false
	}
	i, ok := redisnum.ParseInt(index)
	if !ok {
		c.WriteError(errNotInt)
		return l, 0, false, false
	}
	pos, in = listIndex(i, l.Len())
	return l, pos, in, true
}

// parseRange reads LRANGE's and LTRIM's start and stop.
func parseRange(args [][]byte) (start, stop int64, ok bool) {
	start, ok1 := redisnum.ParseInt(args[2])
	stop, ok2 := redisnum.ParseInt(args[3])
	return start, stop, ok1 && ok2
}

// LRANGE key start stop
func cmdLrange(c *Client, args [][]byte) {
	start, stop, ok := parseRange(args)
	if !ok {
		c.WriteError(errNotInt)
		return
	}
	l, exists, ok := c.lookupList(args[1], false)
	if !ok {
		return
	}
	if !exists {
		c.WriteArray(0)
		return
	}
	lo, hi := rankSpan(start, stop, l.Len())
	c.WriteArray(hi - lo)
	c.writeElems(l, lo, hi-lo, false)
}

// writeElems writes count elements of l from index from on, towards the
// head when rev.
func (c *Client) writeElems(l shards.List, from, count int, rev bool) {
	if count <= 0 {
		return
	}
	l.Walk(from, rev, func(e shards.Elem) bool {
		c.writeElem(e)
		count--
		return count > 0
	})
}

// LTRIM key start stop
func cmdLtrim(c *Client, args [][]byte) {
	start, stop, ok := parseRange(args)
	if !ok {
		c.WriteError(errNotInt)
		return
	}
	key := args[1]
	l, exists, ok := c.lookupList(key, true)
	if !ok {
		return
	}
	if exists {
		n := l.Len()
		lo, hi := rankSpan(start, stop, n)
		l.DeleteRange(hi, n-hi)
		l.DeleteRange(0, lo)
		c.collectionChanged(key, hi-lo) // a change even when nothing went, as in Redis
	}
	c.WriteOK()
}

// LSET key index element
func cmdLset(c *Client, args [][]byte) {
	key := args[1]
	l, pos, in, ok := c.listAt(key, args[2], true, errNoSuchKey)
	switch {
	case !ok:
	case !in:
		c.WriteError(errIndexRange)
	default:
		l.Set(pos, args[3])
		c.eng.store.TouchedIn(c.keyShard(key), key)
		c.WriteOK()
	}
}

// LREM key count element
func cmdLrem(c *Client, args [][]byte) {
	count, ok := redisnum.ParseInt(args[2])
	if !ok {
		c.WriteError(errNotInt)
		return
	}
	key := args[1]
	l, exists, ok := c.lookupList(key, true)
	if !ok {
		return
	}
	removed := 0
	if exists {
		n := l.Len()
		// A count beyond the list is as good as 0 (remove all).
		if count > int64(n) || count < -int64(n) {
			count = 0
		}
		if removed = l.Remove(args[3], int(count)); removed > 0 {
			c.collectionChanged(key, n-removed)
		}
	}
	c.WriteInt(int64(removed))
}

// LINSERT key BEFORE|AFTER pivot element
func cmdLinsert(c *Client, args [][]byte) {
	var after bool
	switch w := cstr(args[2]); {
	case equalFold(w, "after"):
		after = true
	case equalFold(w, "before"):
	default:
		c.WriteError(errSyntax)
		return
	}
	key := args[1]
	l, exists, ok := c.lookupList(key, true)
	if !ok {
		return
	}
	if !exists {
		c.WriteInt(0)
		return
	}
	if !l.Insert(args[3], args[4], after) {
		c.WriteInt(-1)
		return
	}
	c.eng.store.TouchedIn(c.keyShard(key), key)
	c.WriteInt(int64(l.Len()))
}

// lposOpts are LPOS's options.
type lposOpts struct {
	rank   int64 // not 0; negative: from the tail
	count  int64 // -1: not given
	maxlen int64 // 0: no limit
}

// parseLpos parses LPOS's options as Redis's lposCommand, left to right:
// RANK (not 0, and within ±(2^63-1) as Redis 7.2 checks), COUNT and
// MAXLEN (not negative), each needing an argument after it.
func parseLpos(args [][]byte) (lposOpts, string) {
	o := lposOpts{rank: 1, count: -1}
	for j := 3; j < len(args); j++ {
		opt, more := cstr(args[j]), j+1 < len(args)
		switch {
		case equalFold(opt, "rank") && more:
			j++
			n, ok := redisnum.ParseInt(args[j])
			switch {
			case !ok:
				return o, errNotInt
			case n == math.MinInt64:
				return o, sprintf(errLongBetween, -math.MaxInt64, math.MaxInt64)
			case n == 0:
				return o, errLposRank
			}
			o.rank = n
		case (equalFold(opt, "count") || equalFold(opt, "maxlen")) && more:
			j++
			dst, msg := &o.count, errLposCount
			if equalFold(opt, "maxlen") {
				dst, msg = &o.maxlen, errLposMaxlen
			}
			n, ok := redisnum.ParseInt(args[j])
			if !ok || n < 0 {
				return o, msg
			}
			*dst = n
		default:
			return o, errSyntax
		}
	}
	return o, ""
}

// LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len]
func cmdLpos(c *Client, args [][]byte) {
	o, msg := parseLpos(args)
	if msg != "" {
		c.WriteError(msg)
		return
	}
	l, exists, ok := c.lookupList(args[1], false)
	if !ok {
		return
	}
	if !exists {
		if o.count >= 0 {
			c.WriteArray(0)
		} else {
			c.WriteNull()
		}
		return
	}
	rev := o.rank < 0
	rank := o.rank
	if rev {
		rank = -rank
	}
	n := l.Len()
	from := 0
	if rev {
		from = n - 1
	}
	var buf [20]byte
	mark := len(c.Out)
	var matches, found, seen int64
	index := int64(-1)
	target := args[2]
	l.Walk(from, rev, func(e shards.Elem) bool {
		if o.maxlen != 0 && seen >= o.maxlen {
			return false
		}
		pos := seen
		if rev {
			pos = int64(n) - 1 - seen
		}
		seen++
		b := e.B
		if e.IsInt {
			b = e.AppendTo(buf[:0])
		}
		if string(b) != string(target) {
			return true
		}
		if matches++; matches < rank {
			return true
		}
		if o.count < 0 {
			index = pos
			return false
		}
		c.WriteInt(pos)
		found++
		return o.count == 0 || found < o.count
	})
	switch {
	case o.count >= 0:
		c.insertArrayHeader(mark, int(found))
	case index >= 0:
		c.WriteInt(index)
	default:
		c.WriteNull()
	}
}

// parseEnd reads LMOVE's LEFT or RIGHT: front for LEFT.
func parseEnd(b []byte) (front, ok bool) {
	switch w := cstr(b); {
	case equalFold(w, "left"):
		return true, true
	case equalFold(w, "right"):
		return false, true
	}
	return false, false
}

// LMOVE source destination LEFT|RIGHT LEFT|RIGHT
func cmdLmove(c *Client, args [][]byte) {
	from, ok1 := parseEnd(args[3])
	to, ok2 := parseEnd(args[4])
	if !ok1 || !ok2 {
		c.WriteError(errSyntax)
		return
	}
	moveGeneric(c, args[1], args[2], from, to)
}

// RPOPLPUSH source destination
func cmdRpoplpush(c *Client, args [][]byte) { moveGeneric(c, args[1], args[2], false, true) }

// moveGeneric pops an element from one end of src and pushes it at one end
// of dst, as Redis's lmoveGenericCommand: a missing src replies null
// without looking at dst; a dst of another kind refuses before anything
// moves. With src and dst the same key the list rotates, and a list of one
// element stays as it is.
func moveGeneric(c *Client, src, dst []byte, fromFront, toFront bool) {
	sl, exists, ok := c.lookupList(src, true)
	if !ok {
		return
	}
	if !exists {
		c.WriteNull()
		return
	}
	dl, dexists, ok := c.lookupList(dst, true)
	if !ok {
		return
	}
	if !dexists {
		dl = c.createList(dst)
	}
	n := sl.Len()
	i := 0
	if !fromFront {
		i = n - 1
	}
	// Copy the element out before the source changes under it.
	c.valBuf = sl.Index(i).AppendTo(c.valBuf[:0])
	sl.DeleteRange(i, 1)
	if string(src) == string(dst) && n == 1 {
		sl.Push(c.valBuf, toFront)
	} else {
		dl.Push(c.valBuf, toFront)
		c.collectionChanged(src, n-1)
	}
	c.eng.store.TouchedIn(c.keyShard(dst), dst)
	c.WriteBulk(c.valBuf)
}
