package command

import (
	"math"
	"strconv"

	"github.com/ratekv/ratekv/internal/glob"
	"github.com/ratekv/ratekv/internal/redisnum"
	"github.com/ratekv/ratekv/shards"
	"github.com/tidwall/redcon"
)

// Sorted-set commands, with Redis 7.2's semantics, replies and error texts
// (src/t_zset.c). The data structure is shards.ZSet; these handlers parse,
// check in Redis's order (which error a client gets depends on it: option
// syntax, then numbers, then the key's type, then the values), and write
// replies. Ranges are resolved to ranks [lo, hi) first (ScoreSpan,
// LexSpan), so every range command shares one walk.
//
// Replies follow Redis 7's RESP3 shapes: scores are doubles (,1.5) in RESP3
// and bulk strings in RESP2, formatted by AppendFloat (integers in full:
// 1795307408539667); WITHSCORES gives a flat [member, score, ...] array in
// RESP2 and an array of [member, score] pairs in RESP3, except for ZPOPMIN
// and ZPOPMAX without a count, which stay flat in both, and ZSCAN, whose
// scores are bulk strings in both. A set emptied by a command is deleted.
//
// Writes are journaled verbatim: their effect depends only on their
// arguments and the set before them.

func init() {
	const w, r = FlagWrite, FlagReadOnly
	key1 := keyed("sorted-set")
	register(
		key1(&Command{Name: "zadd", Arity: -4, Flags: w | FlagDenyOOM | FlagFast, Persist: PersistVerbatim, Handler: cmdZadd,
			Summary: "Adds one or more members to a sorted set, or updates their scores. Creates the key if it doesn't exist."}),
		key1(&Command{Name: "zincrby", Arity: 4, Flags: w | FlagDenyOOM | FlagFast, Persist: PersistVerbatim, Handler: cmdZincrby,
			Summary: "Increments the score of a member in a sorted set."}),
		key1(&Command{Name: "zrem", Arity: -3, Flags: w | FlagFast, Persist: PersistVerbatim, Handler: cmdZrem,
			Summary: "Removes one or more members from a sorted set. Deletes the sorted set if all members were removed."}),
		key1(&Command{Name: "zcard", Arity: 2, Flags: r | FlagFast, Handler: cmdZcard,
			Summary: "Returns the number of members in a sorted set."}),
		key1(&Command{Name: "zcount", Arity: 4, Flags: r | FlagFast, Handler: cmdZcount,
			Summary: "Returns the count of members in a sorted set that have scores within a range."}),
		key1(&Command{Name: "zlexcount", Arity: 4, Flags: r | FlagFast, Handler: cmdZlexcount,
			Summary: "Returns the number of members in a sorted set within a lexicographical range."}),
		key1(&Command{Name: "zscore", Arity: 3, Flags: r | FlagFast, Handler: cmdZscore,
			Summary: "Returns the score of a member in a sorted set."}),
		key1(&Command{Name: "zmscore", Arity: -3, Flags: r | FlagFast, Handler: cmdZmscore,
			Summary: "Returns the score of one or more members in a sorted set."}),
		key1(&Command{Name: "zrank", Arity: -3, Flags: r | FlagFast, Handler: cmdZrank,
			Summary: "Returns the index of a member in a sorted set ordered by ascending scores."}),
		key1(&Command{Name: "zrevrank", Arity: -3, Flags: r | FlagFast, Handler: cmdZrevrank,
			Summary: "Returns the index of a member in a sorted set ordered by descending scores."}),
		key1(&Command{Name: "zrange", Arity: -4, Flags: r, Handler: cmdZrange,
			Summary: "Returns members in a sorted set within a range of indexes."}),
		key1(&Command{Name: "zrevrange", Arity: -4, Flags: r, Handler: cmdZrevrange,
			Summary: "Returns members in a sorted set within a range of indexes in reverse order."}),
		key1(&Command{Name: "zrangebyscore", Arity: -4, Flags: r, Handler: cmdZrangebyscore,
			Summary: "Returns members in a sorted set within a range of scores."}),
		key1(&Command{Name: "zrevrangebyscore", Arity: -4, Flags: r, Handler: cmdZrevrangebyscore,
			Summary: "Returns members in a sorted set within a range of scores in reverse order."}),
		key1(&Command{Name: "zrangebylex", Arity: -4, Flags: r, Handler: cmdZrangebylex,
			Summary: "Returns members in a sorted set within a lexicographical range."}),
		key1(&Command{Name: "zrevrangebylex", Arity: -4, Flags: r, Handler: cmdZrevrangebylex,
			Summary: "Returns members in a sorted set within a lexicographical range in reverse order."}),
		key1(&Command{Name: "zremrangebyscore", Arity: 4, Flags: w, Persist: PersistVerbatim, Handler: cmdZremrangebyscore,
			Summary: "Removes members in a sorted set within a range of scores. Deletes the sorted set if all members were removed."}),
		key1(&Command{Name: "zremrangebyrank", Arity: 4, Flags: w, Persist: PersistVerbatim, Handler: cmdZremrangebyrank,
			Summary: "Removes members in a sorted set within a range of indexes. Deletes the sorted set if all members were removed."}),
		key1(&Command{Name: "zremrangebylex", Arity: 4, Flags: w, Persist: PersistVerbatim, Handler: cmdZremrangebylex,
			Summary: "Removes members in a sorted set within a lexicographical range. Deletes the sorted set if all members were removed."}),
		key1(&Command{Name: "zpopmin", Arity: -2, Flags: w | FlagFast, Persist: PersistVerbatim, Handler: cmdZpopmin,
			Summary: "Returns the lowest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped."}),
		key1(&Command{Name: "zpopmax", Arity: -2, Flags: w | FlagFast, Persist: PersistVerbatim, Handler: cmdZpopmax,
			Summary: "Returns the highest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped."}),
		key1(&Command{Name: "zrandmember", Arity: -2, Flags: r, Handler: cmdZrandmember,
			Summary: "Returns one or more random members from a sorted set."}),
		key1(&Command{Name: "zscan", Arity: -3, Flags: r, Handler: cmdZscan,
			Summary: "Iterates over members and scores of a sorted set."}),
	)
}

// lookupKind returns the live entry of key, nil when the key does not
// exist. When key holds a kind other than k it replies WRONGTYPE and
// returns ok false. A read's lookup counts as a keyspace hit or miss; a
// write's (write set) does not, as Redis's lookupKeyWrite.
func (c *Client) lookupKind(key []byte, k shards.Kind, write bool) (e *shards.Entry, ok bool) {
	sh := c.keyShard(key)
	if write {
		e = c.eng.store.LookupWriteIn(sh, key, c.nowMs)
	} else {
		e = c.eng.store.LookupIn(sh, key, c.nowMs)
	}
	if e != nil && e.Kind() != k {
		c.WriteError(errWrongType)
		return nil, false
	}
	return e, true
}

// lookupZSet returns the live sorted set of key (nil when the key does not
// exist). When key holds another kind it replies WRONGTYPE and returns ok
// false. The lookup, a read's, counts as a keyspace hit or miss.
func (c *Client) lookupZSet(key []byte) (z *shards.ZSet, ok bool) {
	return c.zsetOf(c.lookupKind(key, shards.KindZSet, false))
}

// lookupZSetToWrite is lookupZSet for a command that writes key.
func (c *Client) lookupZSetToWrite(key []byte) (z *shards.ZSet, ok bool) {
	return c.zsetOf(c.lookupKind(key, shards.KindZSet, true))
}

// zsetOf is the sorted set of a lookupKind result (nil for nil).
func (c *Client) zsetOf(e *shards.Entry, ok bool) (*shards.ZSet, bool) {
	if e == nil {
		return nil, ok
	}
	z, _ := c.eng.store.Object(e).(*shards.ZSet) // never nil for KindZSet; if it were, the key reads as missing
	return z, true
}

// zsetChanged records a change made in place to the set of key: it deletes
// the key when the set is empty, as Redis never keeps an empty set.
func (c *Client) zsetChanged(key []byte, z *shards.ZSet) {
	if z.Len() == 0 {
		c.eng.store.Delete(key, c.nowMs)
		return
	}
	c.eng.store.TouchedIn(c.keyShard(key), key)
}

// writeMember writes a member as a bulk string.
func (c *Client) writeMember(m *shards.ZMember) {
	if m.IsInt {
		c.WriteBulkInt(m.Int)
		return
	}
	c.WriteBulk(m.Member)
}

// writeScored writes a member followed by its score: in RESP3 as a
// two-element array when pairs is set.
func (c *Client) writeScored(m *shards.ZMember, pairs bool) {
	if pairs {
		c.WriteArray(2)
	}
	c.writeMember(m)
	c.WriteDouble(m.Score)
}

// ---- argument parsing ----

// parseScoreBound parses one end of a score interval as Redis's
// zslParseRange: an optional "(" makes it exclusive, then C's strtod reads
// the rest, which it must use up to the end of the C string. Unlike a
// score argument (ParseFloat), leading white space is skipped, an empty
// bound is 0 and overflow gives ±inf; NaN is refused.
func parseScoreBound(b []byte) (v float64, ex, ok bool) {
	b = cstr(b)
	if len(b) > 0 && b[0] == '(' {
		ex, b = true, b[1:]
	}
	v, ok = redisnum.ParseStrtod(b)
	return v, ex, ok
}

// parseScoreRange parses ZRANGEBYSCORE's min and max.
func parseScoreRange(min, max []byte) (shards.ScoreRange, bool) {
	var r shards.ScoreRange
	var ok1, ok2 bool
	r.Min, r.MinEx, ok1 = parseScoreBound(min)
	r.Max, r.MaxEx, ok2 = parseScoreBound(max)
	return r, ok1 && ok2
}

// parseLexBound parses one end of a ZRANGEBYLEX interval as Redis's
// zslParseLexRangeItem: "-", "+", "(value" or "[value". Value aliases b.
func parseLexBound(b []byte) (shards.LexBound, bool) {
	if len(b) == 0 {
		return shards.LexBound{}, false
	}
	switch b[0] {
	case '+', '-':
		if len(b) > 1 && b[1] != 0 { // Redis tests the next C character
			return shards.LexBound{}, false
		}
		if b[0] == '+' {
			return shards.LexBound{Inf: 1, Ex: true}, true
		}
		return shards.LexBound{Inf: -1, Ex: true}, true
	case '(':
		return shards.LexBound{Value: b[1:], Ex: true}, true
	case '[':
		return shards.LexBound{Value: b[1:]}, true
	}
	return shards.LexBound{}, false
}

func parseLexRange(min, max []byte) (shards.LexRange, bool) {
	lo, ok1 := parseLexBound(min)
	hi, ok2 := parseLexBound(max)
	return shards.LexRange{Min: lo, Max: hi}, ok1 && ok2
}

// ---- ZADD, ZINCRBY ----

// zaddOpts are ZADD's parsed arguments.
type zaddOpts struct {
	flags    shards.ZAddFlags
	ch       bool
	first    int // index of the first score
	elements int // score-member pairs
}

// parseZadd parses ZADD's options as zaddGenericCommand: flags until the
// first word that is not one, then score-member pairs, then the
// compatibility checks. Scores are parsed separately.
func parseZadd(args [][]byte, incr bool) (zaddOpts, string) {
	o := zaddOpts{first: 2}
	if incr {
		o.flags |= shards.ZAddIncr
	}
loop:
	for ; o.first < len(args); o.first++ {
		switch a := cstr(args[o.first]); {
		case equalFold(a, "nx"):
			o.flags |= shards.ZAddNX
		case equalFold(a, "xx"):
			o.flags |= shards.ZAddXX
		case equalFold(a, "ch"):
			o.ch = true
		case equalFold(a, "incr"):
			o.flags |= shards.ZAddIncr
		case equalFold(a, "gt"):
			o.flags |= shards.ZAddGT
		case equalFold(a, "lt"):
			o.flags |= shards.ZAddLT
		default:
			break loop
		}
	}
	n := len(args) - o.first
	if n == 0 || n%2 != 0 {
		return o, errSyntax
	}
	o.elements = n / 2
	f := o.flags
	nx, xx, gt, lt := f&shards.ZAddNX != 0, f&shards.ZAddXX != 0, f&shards.ZAddGT != 0, f&shards.ZAddLT != 0
	switch {
	case nx && xx:
		return o, errZaddNXXX
	case gt && nx || lt && nx || gt && lt:
		return o, errGTLTNX
	case f&shards.ZAddIncr != 0 && o.elements > 1:
		return o, errZaddIncrPair
	}
	return o, ""
}

// ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]
func cmdZadd(c *Client, args [][]byte) { zaddGeneric(c, args, false) }

// ZINCRBY key increment member
func cmdZincrby(c *Client, args [][]byte) { zaddGeneric(c, args, true) }

func zaddGeneric(c *Client, args [][]byte, incr bool) {
	o, msg := parseZadd(args, incr)
	if msg != "" {
		c.WriteError(msg)
		return
	}
	var buf [8]float64
	scores := buf[:0]
	for i := 0; i < o.elements; i++ {
		s, ok := redisnum.ParseFloat(args[o.first+2*i])
		if !ok {
			c.WriteError(errNotFloat)
			return
		}
		scores = append(scores, s)
	}
	key := args[1]
	st := c.eng.store
	z, ok := c.lookupZSetToWrite(key)
	if !ok {
		return
	}
	isIncr := o.flags&shards.ZAddIncr != 0
	if z == nil {
		if o.flags&shards.ZAddXX != 0 {
			if isIncr {
				c.WriteNull()
			} else {
				c.WriteInt(0)
			}
			return
		}
		z = shards.NewZSet(o.elements, len(args[o.first+1]))
		e, _ := st.Put(key, c.nowMs)
		st.SetObject(key, e, shards.KindZSet, z)
	} else {
		z.Reserve(o.elements)
	}
	added, updated, processed := 0, 0, 0
	var score float64
	for i, s := range scores {
		res, ns := z.Add(s, args[o.first+2*i+1], o.flags)
		switch res {
		case shards.ZAddNaN:
			if added+updated > 0 {
				st.Touched(key)
			}
			c.WriteError(errZsetNaN)
			return
		case shards.ZAdded:
			added++
		case shards.ZUpdated:
			updated++
		}
		if res != shards.ZAddRefused {
			processed++
		}
		score = ns
	}
	if added+updated > 0 {
		st.TouchedIn(c.keyShard(key), key)
	}
	switch {
	case isIncr && processed > 0:
		c.WriteDouble(score)
	case isIncr:
		c.WriteNull()
	case o.ch:
		c.WriteInt(int64(added + updated))
	default:
		c.WriteInt(int64(added))
	}
}

// ZREM key member [member ...]
func cmdZrem(c *Client, args [][]byte) {
	z, ok := c.lookupZSetToWrite(args[1])
	if !ok {
		return
	}
	deleted := 0
	if z != nil {
		for _, m := range args[2:] {
			if z.Remove(m) {
				deleted++
			}
			if z.Len() == 0 {
				break
			}
		}
		if deleted > 0 {
			c.zsetChanged(args[1], z)
		}
	}
	c.WriteInt(int64(deleted))
}

// ---- single-member reads ----

// ZCARD key
func cmdZcard(c *Client, args [][]byte) {
	z, ok := c.lookupZSet(args[1])
	if !ok {
		return
	}
	if z == nil {
		c.WriteInt(0)
		return
	}
	c.WriteInt(int64(z.Len()))
}

// ZSCORE key member
func cmdZscore(c *Client, args [][]byte) {
	z, ok := c.lookupZSet(args[1])
	if !ok {
		return
	}
	if z != nil {
		if s, found := z.Score(args[2]); found {
			c.WriteDouble(s)
			return
		}
	}
	c.WriteNull()
}

// ZMSCORE key member [member ...]
func cmdZmscore(c *Client, args [][]byte) {
	z, ok := c.lookupZSet(args[1])
	if !ok {
		return
	}
	c.WriteArray(len(args) - 2)
	for _, m := range args[2:] {
		if z != nil {
			if s, found := z.Score(m); found {
				c.WriteDouble(s)
				continue
			}
		}
		c.WriteNull()
	}
}

// ZRANK key member [WITHSCORE]
func cmdZrank(c *Client, args [][]byte) { zrankGeneric(c, args, false, "zrank") }

// ZREVRANK key member [WITHSCORE]
func cmdZrevrank(c *Client, args [][]byte) { zrankGeneric(c, args, true, "zrevrank") }

func zrankGeneric(c *Client, args [][]byte, rev bool, name string) {
	if len(args) > 4 {
		c.WriteError(sprintf(errWrongArgs, name))
		return
	}
	withScore := false
	if len(args) == 4 {
		if !equalFold(cstr(args[3]), "withscore") {
			c.WriteError(errSyntax)
			return
		}
		withScore = true
	}
	z, ok := c.lookupZSet(args[1])
	if !ok {
		return
	}
	if z != nil {
		if rank, score, found := z.Rank(args[2], rev); found {
			if withScore {
				c.WriteArray(2)
				c.WriteInt(int64(rank))
				c.WriteDouble(score)
			} else {
				c.WriteInt(int64(rank))
			}
			return
		}
	}
	if withScore {
		c.WriteNullArray()
	} else {
		c.WriteNull()
	}
}

// ---- counts ----

// ZCOUNT key min max
func cmdZcount(c *Client, args [][]byte) {
	r, ok := parseScoreRange(args[2], args[3])
	if !ok {
		c.WriteError(errMinMaxFloat)
		return
	}
	zcountGeneric(c, args[1], func(z *shards.ZSet) (int, int) { return z.ScoreSpan(r) })
}

// ZLEXCOUNT key min max
func cmdZlexcount(c *Client, args [][]byte) {
	r, ok := parseLexRange(args[2], args[3])
	if !ok {
		c.WriteError(errMinMaxLex)
		return
	}
	zcountGeneric(c, args[1], func(z *shards.ZSet) (int, int) { return z.LexSpan(r) })
}

// zcountGeneric replies how many members of key's set lie in the ranks
// span returns (0 for a missing key).
func zcountGeneric(c *Client, key []byte, span func(*shards.ZSet) (lo, hi int)) {
	z, ok := c.lookupZSet(key)
	if !ok {
		return
	}
	if z == nil {
		c.WriteInt(0)
		return
	}
	lo, hi := span(z)
	c.WriteInt(int64(hi - lo))
}

// ---- ZRANGE and its older forms ----

type zrangeKind uint8

const (
	zrangeAuto zrangeKind = iota
	zrangeRank
	zrangeScore
	zrangeLex
)

type zrangeDir uint8

const (
	zdirAuto zrangeDir = iota
	zdirForward
	zdirReverse
)

// zrangeOpts are the parsed arguments of the ZRANGE family.
type zrangeOpts struct {
	kind          zrangeKind
	rev           bool
	withScores    bool
	offset, limit int64 // limit -1: no limit
	start, end    int64 // rank ranges
	score         shards.ScoreRange
	lex           shards.LexRange
}

// parseZrange parses the ZRANGE family's arguments as zrangeGenericCommand
// does: options left to right (the first bad one is the error), then
// conflicts, then the range itself, min and max swapped for a reverse
// BYSCORE or BYLEX. kind and dir are fixed by the older commands and Auto
// for ZRANGE.
func parseZrange(args [][]byte, kind zrangeKind, dir zrangeDir) (zrangeOpts, string) {
	o := zrangeOpts{limit: -1}
	for j := 4; j < len(args); j++ {
		left := len(args) - j - 1
		a := cstr(args[j])
		switch {
		case equalFold(a, "withscores"):
			o.withScores = true
		case equalFold(a, "limit") && left >= 2:
			off, ok1 := redisnum.ParseInt(args[j+1])
			if !ok1 {
				return o, errNotInt
			}
			lim, ok2 := redisnum.ParseInt(args[j+2])
			if !ok2 {
				return o, errNotInt
			}
			o.offset, o.limit = off, lim
			j += 2
		case dir == zdirAuto && equalFold(a, "rev"):
			dir = zdirReverse
		case kind == zrangeAuto && equalFold(a, "bylex"):
			kind = zrangeLex
		case kind == zrangeAuto && equalFold(a, "byscore"):
			kind = zrangeScore
		default:
			return o, errSyntax
		}
	}
	if kind == zrangeAuto {
		kind = zrangeRank
	}
	o.kind, o.rev = kind, dir == zdirReverse
	if o.limit != -1 && kind == zrangeRank {
		return o, errZrangeLimit
	}
	if o.withScores && kind == zrangeLex {
		return o, errZrangeLexWS
	}
	min, max := args[2], args[3]
	if o.rev && kind != zrangeRank {
		min, max = max, min
	}
	switch kind {
	case zrangeRank:
		var ok1, ok2 bool
		o.start, ok1 = redisnum.ParseInt(min)
		if !ok1 {
			return o, errNotInt
		}
		o.end, ok2 = redisnum.ParseInt(max)
		if !ok2 {
			return o, errNotInt
		}
	case zrangeScore:
		var ok bool
		if o.score, ok = parseScoreRange(min, max); !ok {
			return o, errMinMaxFloat
		}
	case zrangeLex:
		var ok bool
		if o.lex, ok = parseLexRange(min, max); !ok {
			return o, errMinMaxLex
		}
	}
	return o, ""
}

// rankSpan turns Redis's inclusive start and end indexes (negative from the
// end) into ranks [lo, hi) of a set of n members.
func rankSpan(start, end int64, n int) (lo, hi int) {
	ln := int64(n)
	if start < 0 {
		start += ln
	}
	if end < 0 {
		end += ln
	}
	start = max(start, 0)
	if start > end || start >= ln {
		return 0, 0
	}
	end = min(end, ln-1)
	return int(start), int(end + 1)
}

// ZRANGE key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count] [WITHSCORES]
func cmdZrange(c *Client, args [][]byte) { zrangeGeneric(c, args, zrangeAuto, zdirAuto) }

// ZREVRANGE key start stop [WITHSCORES]
func cmdZrevrange(c *Client, args [][]byte) { zrangeGeneric(c, args, zrangeRank, zdirReverse) }

// ZRANGEBYSCORE key min max [WITHSCORES] [LIMIT offset count]
func cmdZrangebyscore(c *Client, args [][]byte) { zrangeGeneric(c, args, zrangeScore, zdirForward) }

// ZREVRANGEBYSCORE key max min [WITHSCORES] [LIMIT offset count]
func cmdZrevrangebyscore(c *Client, args [][]byte) {
	zrangeGeneric(c, args, zrangeScore, zdirReverse)
}

// ZRANGEBYLEX key min max [LIMIT offset count]
func cmdZrangebylex(c *Client, args [][]byte) { zrangeGeneric(c, args, zrangeLex, zdirForward) }

// ZREVRANGEBYLEX key max min [LIMIT offset count]
func cmdZrevrangebylex(c *Client, args [][]byte) { zrangeGeneric(c, args, zrangeLex, zdirReverse) }

func zrangeGeneric(c *Client, args [][]byte, kind zrangeKind, dir zrangeDir) {
	o, msg := parseZrange(args, kind, dir)
	if msg != "" {
		c.WriteError(msg)
		return
	}
	z, ok := c.lookupZSet(args[1])
	if !ok {
		return
	}
	if z == nil {
		c.WriteArray(0)
		return
	}
	n := z.Len()
	var lo, hi int
	switch o.kind {
	case zrangeRank:
		lo, hi = rankSpan(o.start, o.end, n)
		if o.rev { // reverse indexes count from the highest score
			lo, hi = n-hi, n-lo
		}
	default:
		if o.kind == zrangeScore {
			lo, hi = z.ScoreSpan(o.score)
		} else {
			lo, hi = z.LexSpan(o.lex)
		}
		lo, hi = limitSpan(lo, hi, n, o.offset, o.limit, o.rev)
	}
	count := hi - lo
	pairs := o.withScores && c.proto == 3
	if o.withScores && !pairs {
		c.WriteArray(2 * count)
	} else {
		c.WriteArray(count)
	}
	z.Walk(lo, hi, o.rev, func(m shards.ZMember) bool {
		if o.withScores {
			c.writeScored(&m, pairs)
		} else {
			c.writeMember(&m)
		}
		return true
	})
}

// limitSpan applies LIMIT offset count to the ranks [lo, hi) of a range,
// walked backwards when rev, as genericZrangebyscoreCommand: a negative
// offset, or one past the set's size, gives nothing; a negative count
// means no limit.
func limitSpan(lo, hi, n int, offset, limit int64, rev bool) (int, int) {
	if offset < 0 || offset > 0 && offset >= int64(n) || lo >= hi {
		return 0, 0
	}
	size := int64(hi - lo)
	if offset >= size {
		return 0, 0
	}
	size -= offset
	if limit >= 0 && limit < size {
		size = limit
	}
	if rev {
		return hi - int(offset) - int(size), hi - int(offset)
	}
	return lo + int(offset), lo + int(offset) + int(size)
}

// ---- removals ----

// ZREMRANGEBYSCORE key min max
func cmdZremrangebyscore(c *Client, args [][]byte) {
	r, ok := parseScoreRange(args[2], args[3])
	if !ok {
		c.WriteError(errMinMaxFloat)
		return
	}
	zremrangeGeneric(c, args[1], func(z *shards.ZSet) (int, int) { return z.ScoreSpan(r) })
}

// ZREMRANGEBYLEX key min max
func cmdZremrangebylex(c *Client, args [][]byte) {
	r, ok := parseLexRange(args[2], args[3])
	if !ok {
		c.WriteError(errMinMaxLex)
		return
	}
	zremrangeGeneric(c, args[1], func(z *shards.ZSet) (int, int) { return z.LexSpan(r) })
}

// ZREMRANGEBYRANK key start stop
func cmdZremrangebyrank(c *Client, args [][]byte) {
	start, ok1 := redisnum.ParseInt(args[2])
	end, ok2 := redisnum.ParseInt(args[3])
	if !ok1 || !ok2 {
		c.WriteError(errNotInt)
		return
	}
	zremrangeGeneric(c, args[1], func(z *shards.ZSet) (int, int) { return rankSpan(start, end, z.Len()) })
}

func zremrangeGeneric(c *Client, key []byte, span func(*shards.ZSet) (int, int)) {
	z, ok := c.lookupZSetToWrite(key)
	if !ok {
		return
	}
	if z == nil {
		c.WriteInt(0)
		return
	}
	lo, hi := span(z)
	n := z.RemoveRanks(lo, hi)
	if n > 0 {
		c.zsetChanged(key, z)
	}
	c.WriteInt(int64(n))
}

// ZPOPMIN key [count]
func cmdZpopmin(c *Client, args [][]byte) { zpopGeneric(c, args, false) }

// ZPOPMAX key [count]
func cmdZpopmax(c *Client, args [][]byte) { zpopGeneric(c, args, true) }

func zpopGeneric(c *Client, args [][]byte, max bool) {
	if len(args) > 3 {
		c.WriteError(errSyntax)
		return
	}
	count := int64(-1) // -1: no count given, a single flat pair
	if len(args) == 3 {
		n, ok := redisnum.ParseInt(args[2])
		if !ok || n < 0 {
			c.WriteError(errMustPositive)
			return
		}
		count = n
	}
	z, ok := c.lookupZSetToWrite(args[1])
	if !ok {
		return
	}
	if z == nil || count == 0 {
		c.WriteArray(0)
		return
	}
	k := 1
	if count > 0 {
		k = int(min(count, int64(z.Len())))
	}
	nested := c.proto == 3 && count != -1
	if nested {
		c.WriteArray(k)
	} else {
		c.WriteArray(2 * k)
	}
	lo, hi := 0, k
	if max {
		lo, hi = z.Len()-k, z.Len()
	}
	z.Walk(lo, hi, max, func(m shards.ZMember) bool {
		c.writeScored(&m, nested)
		return true
	})
	z.RemoveRanks(lo, hi)
	c.zsetChanged(args[1], z)
}

// ---- ZRANDMEMBER, ZSCAN ----

// maxRandReply bounds ZRANDMEMBER's negative count: Redis streams whatever
// is asked until the client's output buffer limit cuts it off, but ratekv
// builds a reply in memory first, so an absurd count is refused.
const maxRandReply = 1 << 26

// maxRandBytes bounds the bytes of that reply: 2^26 picks of members of a
// megabyte each would ask for 64 TiB, all built in memory before the first
// byte leaves. A variable so that a test can lower it.
var maxRandBytes = 512 << 20

// randArgs are the arguments of ZRANDMEMBER and HRANDFIELD after the key.
type randArgs struct {
	count    int64 // negative: picks may repeat
	hasCount bool
	with     bool // WITHSCORES, WITHVALUES
}

// parseRandArgs parses "[count [WITHSCORES]]" (with names the option) as
// Redis's zrandmemberCommand and hrandfieldCommand: the count and its
// range, then the option, then the range a reply of pairs allows.
func parseRandArgs(args [][]byte, with string) (randArgs, string) {
	var o randArgs
	if len(args) == 2 {
		return o, ""
	}
	l, ok := redisnum.ParseInt(args[2])
	if !ok {
		return o, errNotInt
	}
	if l == math.MinInt64 {
		return o, sprintf(errLongBetween, -math.MaxInt64, math.MaxInt64)
	}
	if len(args) > 4 || len(args) == 4 && !equalFold(cstr(args[3]), with) {
		return o, errSyntax
	}
	if len(args) == 4 {
		o.with = true
		if l < -math.MaxInt64/2 || l > math.MaxInt64/2 {
			return o, errValueRange
		}
	}
	o.count, o.hasCount = l, true
	return o, ""
}

// writeRandom writes the reply of ZRANDMEMBER or HRANDFIELD with a count,
// from a collection of n items (0 for a missing key). sample makes the
// picks (count of them, distinct when unique) and writes each one, as a
// pair when pairs is set, while room() says it fits: past maxRandBytes the
// reply becomes errRandTooBig.
func (c *Client) writeRandom(name, items string, o randArgs, n int, sample func(count int, unique, pairs bool, room func() bool)) {
	if n == 0 || o.count == 0 {
		c.WriteArray(0)
		return
	}
	unique := o.count > 0
	count := o.count
	if !unique {
		count = -o.count
		if count > maxRandReply {
			c.WriteError(errValueRange)
			return
		}
	} else {
		count = min(count, int64(n))
	}
	pairs := o.with && c.proto == 3
	start := len(c.Out)
	if o.with && !pairs {
		c.WriteArray(int(2 * count))
	} else {
		c.WriteArray(int(count))
	}
	over := false
	sample(int(count), unique, pairs, func() bool {
		over = over || len(c.Out)-start > maxRandBytes
		return !over
	})
	if over {
		c.Out = c.Out[:start]
		c.WriteError(sprintf(errRandTooBig, name, maxRandBytes>>20, items))
	}
}

// ZRANDMEMBER key [count [WITHSCORES]]
func cmdZrandmember(c *Client, args [][]byte) {
	o, msg := parseRandArgs(args, "withscores")
	if msg != "" {
		c.WriteError(msg)
		return
	}
	z, ok := c.lookupZSet(args[1])
	if !ok {
		return
	}
	if !o.hasCount {
		if z == nil {
			c.WriteNull()
			return
		}
		z.Sample(1, true, func(m shards.ZMember) { c.writeMember(&m) })
		return
	}
	n := 0
	if z != nil {
		n = z.Len()
	}
	c.writeRandom("ZRANDMEMBER", "members", o, n, func(count int, unique, pairs bool, room func() bool) {
		z.Sample(count, unique, func(m shards.ZMember) {
			switch {
			case !room():
			case o.with:
				c.writeScored(&m, pairs)
			default:
				c.writeMember(&m)
			}
		})
	})
}

// scanArgs are the options of ZSCAN and HSCAN after the cursor.
type scanArgs struct {
	count   int
	pattern []byte // nil: every item
}

// parseScanArgs parses "[MATCH pattern] [COUNT count]", in any order and
// repeated (the last wins), as Redis's scanGenericCommand.
func parseScanArgs(args [][]byte) (scanArgs, string) {
	o := scanArgs{count: 10}
	for i := 0; i < len(args); i += 2 {
		a := cstr(args[i])
		if i+1 >= len(args) {
			return o, errSyntax
		}
		switch {
		case equalFold(a, "count"):
			n, ok := redisnum.ParseInt(args[i+1])
			if !ok {
				return o, errNotInt
			}
			if n < 1 {
				return o, errSyntax
			}
			o.count = int(min(n, math.MaxInt32))
		case equalFold(a, "match"):
			o.pattern = args[i+1]
			if len(o.pattern) == 1 && o.pattern[0] == '*' {
				o.pattern = nil
			}
		default:
			return o, errSyntax
		}
	}
	return o, ""
}

// matches reports whether an item passes MATCH; buf formats an integer.
func (o *scanArgs) matches(e shards.Elem, buf *[20]byte) bool {
	if o.pattern == nil {
		return true
	}
	b := e.B
	if e.IsInt {
		b = e.AppendTo(buf[:0])
	}
	return glob.Match(o.pattern, b, false)
}

// ZSCAN key cursor [MATCH pattern] [COUNT count]
func cmdZscan(c *Client, args [][]byte) {
	var mbuf [20]byte
	var sbuf [32]byte
	c.scanCollection(args, shards.KindZSet, func(e *shards.Entry, cursor uint64, o *scanArgs) (next uint64, n int) {
		z, _ := c.eng.store.Object(e).(*shards.ZSet)
		next = z.Scan(cursor, o.count, func(m shards.ZMember) {
			if o.matches(shards.Elem{B: m.Member, Int: m.Int, IsInt: m.IsInt}, &mbuf) {
				c.writeMember(&m)
				c.Out = redcon.AppendBulk(c.Out, redisnum.AppendFloat(sbuf[:0], m.Score))
				n += 2
			}
		})
		return next, n
	})
}

// scanCollection runs ZSCAN or HSCAN on a key of kind k, as Redis: the
// cursor is checked first, then the key (a missing key is an empty,
// finished scan whatever the options), then the options. scan writes a
// batch of items from the cursor on and returns the next cursor and how
// many replies it wrote.
func (c *Client) scanCollection(args [][]byte, k shards.Kind, scan func(e *shards.Entry, cursor uint64, o *scanArgs) (next uint64, n int)) {
	cursor, ok := parseCursor(args[2])
	if !ok {
		c.WriteError(errCursor)
		return
	}
	e, ok := c.lookupKind(args[1], k, false)
	if !ok {
		return
	}
	if e == nil {
		c.Out = append(c.Out, "*2\r\n$1\r\n0\r\n*0\r\n"...)
		return
	}
	o, msg := parseScanArgs(args[3:])
	if msg != "" {
		c.WriteError(msg)
		return
	}
	// The cursor is known after the walk: write the items, then put the
	// cursor and the array headers in front of them.
	mark := len(c.Out)
	next, n := scan(e, cursor, &o)
	var head [64]byte
	var num [20]byte
	h := redcon.AppendArray(head[:0], 2)
	h = redcon.AppendBulk(h, strconv.AppendUint(num[:0], next, 10))
	h = redcon.AppendArray(h, n)
	end := len(c.Out)
	c.Out = append(c.Out, h...)
	copy(c.Out[mark+len(h):], c.Out[mark:end])
	copy(c.Out[mark:], h)
}
