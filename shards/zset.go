package shards

// Sorted sets, in two encodings as in Redis.
//
// Small sets (at most zset-max-listpack-entries members, each at most
// zset-max-listpack-value bytes) live in one byte slice of entries sorted by
// (score, member), the counterpart of Redis's listpack. Every operation on it
// is a linear walk, which for a hundred entries costs less than chasing
// pointers would, and the slice is the only allocation. An entry is
//
//	header byte | score | member
//
// The header's top two bits say how the score is stored: as the 8 bytes of
// the float64; as a zigzag varint when it is an integer (integral and below
// 2^55 in magnitude, so never more than 8 bytes); or as a uvarint delta
// from the previous entry's score when both are integers. Sorted
// microsecond timestamps, the scores of the sliding-log recipe, thus take
// 1–3 bytes instead of 8. The low six bits hold the member's length when it
// is below 55; 55 to 62 mark a member that is a canonical decimal integer,
// stored zigzag-encoded in 1 to 8 little-endian bytes (a timestamp used as
// member: 7 bytes instead of 16); 63 a uvarint length that follows. Because
// of the deltas the slice decodes only forwards, and removing or inserting
// an entry re-encodes the entry after it. As in listpack, -0 is stored as
// the integer 0.
//
// A set that outgrows the limits converts, once and for good as in Redis, to
// a B-tree of entries ordered by (score, member) (tidwall/btree, NoLocks:
// the shard lock already serialises access) plus a hash index from member
// to entry for O(1) ZSCORE. Both hold pointers to one zentry {score,
// member}. The index is a small open-addressing table (zindex) rather than
// a Go map[string]float64: the map costs about 55 bytes an entry plus its
// own copy of the key's header, which would put large sets of UUIDs above
// Redis's skiplist (bench/memory.sh). Ranks come from the tree's per-node
// counts (GetAt), so ZRANK and the start of a range are found by a binary
// search over GetAt, O(log² n).
//
// Ties between equal scores are ordered by member bytes, as Redis compares
// with memcmp; -0 and 0 compare equal. NaN is never stored: Add refuses it.
//
// A ZSet belongs to its shard: use it only with the shard's lock held.

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"unsafe"

	"github.com/tidwall/btree"
)

// zsetLimits are zset-max-listpack-entries and zset-max-listpack-value.
var zsetLimits compactLimits

func init() { SetZSetLimits(128, 64) }

// SetZSetLimits sets the largest number of members and the longest member
// (in bytes) a sorted set may have and still use the compact encoding. It is
// safe for concurrent use. Sets already converted stay converted.
func SetZSetLimits(maxEntries, maxValue int64) { zsetLimits.set(maxEntries, maxValue) }

// ZSet is a sorted set. The zero value is an empty set in the compact
// encoding. It is not safe for concurrent use.
type ZSet struct {
	lp  []byte // compact encoding: entries sorted by (score, member)
	n   int    // members in lp
	big *zbig  // non-nil once converted; lp is then unused
}

// zbig is the large encoding: an ordered tree of entries plus a hash index
// from member to entry. Both hold pointers to the same zentry.
type zbig struct {
	tree  *btree.BTreeG[*zentry]
	index zindex
}

// zentry is one member of a large set.
type zentry struct {
	score  float64
	member string
}

func zentryLess(a, b *zentry) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return a.member < b.member
}

func newZbig(hint int) *zbig {
	b := &zbig{tree: btree.NewBTreeGOptions(zentryLess, btree.Options{NoLocks: true})}
	b.index.init(hint)
	return b
}

func (b *zbig) len() int { return b.index.n }

// add inserts a member known to be absent.
func (b *zbig) add(score float64, member string) {
	e := &zentry{score, member}
	b.tree.Set(e)
	b.index.insert(e)
}

// setScore moves e to a new score.
func (b *zbig) setScore(e *zentry, score float64) {
	b.tree.Delete(e)
	e.score = score
	b.tree.Set(e)
}

// remove deletes the member of index slot i.
func (b *zbig) remove(e *zentry, slot int) {
	b.tree.Delete(e)
	b.index.removeAt(slot)
}

// zindex is the hash index of a large set's entries by member (see
// oaTable).
type zindex = oaTable[*zentry]

func (e *zentry) oaKey() string { return e.member }

// NewZSet returns an empty set in the encoding Redis would pick for a ZADD
// of sizeHint members whose first member is valueLen bytes long.
func NewZSet(sizeHint, valueLen int) *ZSet {
	z := &ZSet{}
	if int64(sizeHint) > zsetLimits.entries.Load() || int64(valueLen) > zsetLimits.value.Load() {
		z.big = newZbig(sizeHint)
	}
	return z
}

// Reserve converts the set to the large encoding if adding sizeHint members
// would outgrow the compact one (Redis's zsetTypeMaybeConvert).
func (z *ZSet) Reserve(sizeHint int) {
	if z.big == nil && int64(sizeHint) > zsetLimits.entries.Load() {
		z.convert(sizeHint)
	}
}

// Encoding returns the OBJECT ENCODING name: "listpack" or "skiplist" (the
// names Redis uses, so that tools reading them keep working).
func (z *ZSet) Encoding() string {
	if z.big != nil {
		return "skiplist"
	}
	return "listpack"
}

// Len returns the number of members.
func (z *ZSet) Len() int {
	if z.big != nil {
		return z.big.len()
	}
	return z.n
}

// ZMember is one member with its score, as the walks yield it. A member that
// is a canonical decimal integer may come as Int (IsInt set) rather than as
// bytes, which saves formatting it when it is only written out. Member
// aliases the set's memory: it is valid until the set changes and must not
// be modified.
type ZMember struct {
	Score  float64
	Member []byte // the member's bytes, unless IsInt
	Int    int64  // the member, when IsInt
	IsInt  bool
}

// AppendTo appends the member's bytes to dst.
func (m *ZMember) AppendTo(dst []byte) []byte {
	if m.IsInt {
		return strconv.AppendInt(dst, m.Int, 10)
	}
	return append(dst, m.Member...)
}

// String returns a copy of the member's bytes as a string.
func (m *ZMember) String() string {
	if m.IsInt {
		return strconv.FormatInt(m.Int, 10)
	}
	return string(m.Member)
}

// compare compares the member with q, as bytes.Compare.
func (m *ZMember) compare(q []byte) int {
	if m.IsInt {
		var buf [20]byte
		return bytes.Compare(strconv.AppendInt(buf[:0], m.Int, 10), q)
	}
	return bytes.Compare(m.Member, q)
}

// cmpEntry orders the member m against (score, member).
func (m *ZMember) cmpEntry(score float64, member []byte) int {
	switch {
	case m.Score < score:
		return -1
	case m.Score > score:
		return 1
	}
	return m.compare(member)
}

// ---- compact encoding ----

const (
	lpScoreFloat = 0 << 6
	lpScoreDelta = 1 << 6
	lpScoreInt   = 2 << 6
	lpScoreMask  = 3 << 6
	lpMemberInt  = 55 // 55+k-1: an integer member in k = 1..8 bytes
	lpMemberLong = 63
)

// lpState is what encoding or decoding an entry needs to know about the
// entry before it: whether its score was an integer, and which.
type lpState struct {
	prev  int64
	isInt bool
}

// lpPos is the offset of an entry and the state before it: enough to decode
// it again, or to splice the slice there.
type lpPos struct {
	off int
	st  lpState
}

// scoreInt reports whether score is stored as an integer: integral and
// below 2^55 in magnitude, so that its varint never outgrows the 8 bytes of
// a float64. -0 becomes 0, as listpack's double2ll makes it.
func scoreInt(score float64) (int64, bool) {
	if !(score > -(1<<55) && score < 1<<55) {
		return 0, false
	}
	i := int64(score)
	return i, float64(i) == score
}

// lpAppend appends an entry for (score, member) to dst.
func lpAppend(dst []byte, st *lpState, score float64, member []byte) []byte {
	if n, ok := canonicalInt(member); ok {
		return lpAppendEntry(dst, st, score, nil, n, true)
	}
	return lpAppendEntry(dst, st, score, member, 0, false)
}

func lpAppendEntry(dst []byte, st *lpState, score float64, member []byte, iv int64, isInt bool) []byte {
	hpos := len(dst)
	dst = append(dst, 0)
	var h byte
	if i, ok := scoreInt(score); ok {
		if st.isInt && i >= st.prev {
			h = lpScoreDelta
			dst = binary.AppendUvarint(dst, uint64(i)-uint64(st.prev))
		} else {
			h = lpScoreInt
			dst = binary.AppendVarint(dst, i)
		}
		st.prev, st.isInt = i, true
	} else {
		h = lpScoreFloat
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(score))
		st.isInt = false
	}
	switch {
	case isInt:
		u := uint64(iv<<1) ^ uint64(iv>>63) // zigzag
		k := max(1, (bits.Len64(u)+7)/8)
		h |= byte(lpMemberInt + k - 1)
		for ; k > 0; k-- {
			dst = append(dst, byte(u))
			u >>= 8
		}
	case len(member) < lpMemberInt:
		h |= byte(len(member))
		dst = append(dst, member...)
	default:
		h |= lpMemberLong
		dst = binary.AppendUvarint(dst, uint64(len(member)))
		dst = append(dst, member...)
	}
	dst[hpos] = h
	return dst
}

// lpDecode decodes the entry at b[off:] into m and returns the offset of the
// next entry. st is the state before the entry and becomes the state after.
func lpDecode(b []byte, off int, st *lpState, m *ZMember) int {
	h := b[off]
	off++
	switch h & lpScoreMask {
	case lpScoreFloat:
		m.Score = math.Float64frombits(binary.LittleEndian.Uint64(b[off:]))
		off += 8
		st.isInt = false
	case lpScoreDelta:
		var d uint64
		d, off = uvarint(b, off)
		st.prev = int64(uint64(st.prev) + d)
		m.Score = float64(st.prev)
	default:
		var u uint64
		u, off = uvarint(b, off)
		st.prev, st.isInt = int64(u>>1)^-int64(u&1), true
		m.Score = float64(st.prev)
	}
	switch l := int(h &^ lpScoreMask); {
	case l < lpMemberInt:
		m.Member, m.IsInt = b[off:off+l], false
		off += l
	case l < lpMemberLong:
		k := l - lpMemberInt + 1
		m.Int, m.IsInt, m.Member = getZigzag(b, off, k), true, nil
		off += k
	default:
		var u uint64
		u, off = uvarint(b, off)
		m.Member, m.IsInt = b[off:off+int(u)], false
		off += int(u)
	}
	return off
}

// uvarint decodes the uvarint at b[off:] and returns it with the offset
// after it. The slice holds only what lpAppend wrote, so it is well formed.
func uvarint(b []byte, off int) (uint64, int) {
	c := b[off]
	if c < 0x80 {
		return uint64(c), off + 1
	}
	v := uint64(c & 0x7f)
	for shift := uint(7); ; shift += 7 {
		off++
		c = b[off]
		if c < 0x80 {
			return v | uint64(c)<<shift, off + 1
		}
		v |= uint64(c&0x7f) << shift
	}
}

// lpFind finds member in the compact encoding: its position, the offset
// after it and the state there, its rank and its score.
func (z *ZSet) lpFind(member []byte) (pos lpPos, end int, endSt lpState, rank int, m ZMember, ok bool) {
	pos, end, endSt, rank, m, ok, _ = z.lpLocate(member, 0, false)
	return
}

// lpLocate is lpFind that also returns, when withIns is set and member is
// absent, where (score, member) would be inserted: the one walk ZADD needs.
func (z *ZSet) lpLocate(member []byte, score float64, withIns bool) (pos lpPos, end int, endSt lpState, rank int, m ZMember, ok bool, ins lpPos) {
	qi, qIsInt := canonicalInt(member)
	var st lpState
	insFound := !withIns
	off := 0
	for i := 0; off < len(z.lp); i++ {
		before := st
		next := lpDecode(z.lp, off, &st, &m)
		if m.IsInt == qIsInt && (qIsInt && m.Int == qi || !qIsInt && sameBytes(m.Member, member)) {
			return lpPos{off, before}, next, st, i, m, true, lpPos{}
		}
		if !insFound && m.cmpEntry(score, member) > 0 {
			ins, insFound = lpPos{off, before}, true
		}
		off = next
	}
	if !insFound {
		ins = lpPos{off, st}
	}
	return lpPos{}, 0, lpState{}, 0, ZMember{}, false, ins
}

// sameBytes is bytes.Equal with the first eight bytes compared inline: the
// walk of a compact set compares the member sought with every member, and
// random members (UUIDs, all 36 bytes long) differ in their first bytes,
// so most comparisons end without the call.
func sameBytes(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) >= 8 && binary.LittleEndian.Uint64(a) != binary.LittleEndian.Uint64(b) {
		return false
	}
	return bytes.Equal(a, b)
}

// lpSeek returns the position of the entry of rank r (r == n gives the end).
func (z *ZSet) lpSeek(r int) lpPos {
	var st lpState
	var m ZMember
	off := 0
	for i := 0; i < r; i++ {
		off = lpDecode(z.lp, off, &st, &m)
	}
	return lpPos{off, st}
}

// lpSplice replaces the entries in lp[p.off:end] (endSt is the state at end)
// by the entry (score, member) when insert is set, or by nothing, and
// re-encodes the entry that follows, whose delta base has changed.
func (z *ZSet) lpSplice(p lpPos, end int, endSt lpState, insert bool, score float64, member []byte) {
	var tmp [128]byte
	rep := tmp[:0]
	st := p.st
	if insert {
		rep = lpAppend(rep, &st, score, member)
	}
	if end < len(z.lp) {
		var next ZMember
		nend := lpDecode(z.lp, end, &endSt, &next)
		rep = lpAppendEntry(rep, &st, next.Score, next.Member, next.Int, next.IsInt)
		end = nend
	}
	z.lpReplace(p.off, end, rep)
}

// lpReplace replaces lp[start:end] by rep, growing or shrinking the slice.
func (z *ZSet) lpReplace(start, end int, rep []byte) {
	n := len(z.lp)
	delta := len(rep) - (end - start)
	switch {
	case delta > 0:
		if n+delta > cap(z.lp) {
			want := n + delta
			want += want/8 + 16
			nb := append([]byte(nil), make([]byte, want)...)
			copy(nb, z.lp)
			z.lp = nb
		}
		z.lp = z.lp[:n+delta]
		copy(z.lp[end+delta:], z.lp[end:n])
	case delta < 0:
		copy(z.lp[end+delta:], z.lp[end:n])
		z.lp = z.lp[:n+delta]
		if c := cap(z.lp); c >= 2*len(z.lp)+64 {
			z.lp = append(make([]byte, 0, len(z.lp)+len(z.lp)/8), z.lp...)
		}
	}
	copy(z.lp[start:], rep)
}

// lpInsert inserts a member known to be absent.
func (z *ZSet) lpInsert(score float64, member []byte) {
	var st lpState
	var m ZMember
	off := 0
	for off < len(z.lp) {
		before := st
		next := lpDecode(z.lp, off, &st, &m)
		if m.cmpEntry(score, member) > 0 {
			z.lpSplice(lpPos{off, before}, off, before, true, score, member)
			z.n++
			return
		}
		off = next
	}
	z.lp = lpAppend(z.lp, &st, score, member)
	z.n++
}

// convert moves the set to the large encoding.
func (z *ZSet) convert(hint int) {
	b := newZbig(max(hint, z.n))
	var st lpState
	var m ZMember
	for off := 0; off < len(z.lp); {
		off = lpDecode(z.lp, off, &st, &m)
		e := &zentry{m.Score, m.String()}
		b.tree.Load(e)
		b.index.insert(e)
	}
	z.big, z.lp, z.n = b, nil, 0
}

// tmpString views b as a string without copying, for map and tree lookups
// that do not keep the key. b must not change while the string is in use.
func tmpString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// bytesOf views s as a read-only byte slice without copying.
func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// ---- operations ----

// ZAddFlags select ZADD's conditional behaviour.
type ZAddFlags uint8

// ZADD's options.
const (
	ZAddNX   ZAddFlags = 1 << iota // only add new members
	ZAddXX                         // only update existing members
	ZAddGT                         // only update when the new score is greater
	ZAddLT                         // only update when the new score is less
	ZAddIncr                       // add score to the current one (0 for a new member)
)

// ZAddResult tells what Add did.
type ZAddResult uint8

// Results of Add.
const (
	ZAddRefused ZAddResult = iota // NX, XX, GT or LT refused it: nothing changed
	ZAddSame                      // processed, but the score was already that
	ZAdded                        // a new member
	ZUpdated                      // an existing member's score changed
	ZAddNaN                       // the (resulting) score is NaN: nothing changed
)

// Add adds member with score, or updates its score, following flags as
// Redis's zsetAdd. It returns what happened and the member's score
// afterwards (meaningful unless the result is ZAddRefused or ZAddNaN).
func (z *ZSet) Add(score float64, member []byte, flags ZAddFlags) (ZAddResult, float64) {
	if math.IsNaN(score) {
		return ZAddNaN, 0
	}
	var cur float64
	var exists bool
	var pos, ins lpPos
	var end int
	var endSt lpState
	var ent *zentry
	if z.big != nil {
		ent, _ = z.big.index.find(member)
		if exists = ent != nil; exists {
			cur = ent.score
		}
	} else {
		var m ZMember
		pos, end, endSt, _, m, exists, ins = z.lpLocate(member, score, flags&ZAddIncr == 0)
		cur = m.Score
	}
	if exists {
		if flags&ZAddNX != 0 {
			return ZAddRefused, cur
		}
		if flags&ZAddIncr != 0 {
			score += cur
			if math.IsNaN(score) {
				return ZAddNaN, cur
			}
		}
		if flags&ZAddLT != 0 && score >= cur || flags&ZAddGT != 0 && score <= cur {
			return ZAddRefused, cur
		}
		if score == cur {
			return ZAddSame, score // Redis replies the sum even then (0 + -0 is 0)
		}
		if z.big != nil {
			z.big.setScore(ent, score)
		} else {
			z.lpSplice(pos, end, endSt, false, 0, nil)
			z.n--
			z.lpInsert(score, member)
		}
		return ZUpdated, score
	}
	if flags&ZAddXX != 0 {
		return ZAddRefused, 0
	}
	if z.big == nil && (int64(z.n)+1 > zsetLimits.entries.Load() || int64(len(member)) > zsetLimits.value.Load()) {
		z.convert(z.n + 1)
	}
	switch {
	case z.big != nil:
		z.big.add(score, string(member))
	case flags&ZAddIncr == 0: // ins was found by the same walk
		z.lpSplice(ins, ins.off, ins.st, true, score, member)
		z.n++
	default:
		z.lpInsert(score, member)
	}
	return ZAdded, score
}

// Remove deletes member and reports whether it was there.
func (z *ZSet) Remove(member []byte) bool {
	if z.big != nil {
		e, slot := z.big.index.find(member)
		if e == nil {
			return false
		}
		z.big.remove(e, slot)
		return true
	}
	pos, end, endSt, _, _, ok := z.lpFind(member)
	if ok {
		z.lpSplice(pos, end, endSt, false, 0, nil)
		z.n--
	}
	return ok
}

// Score returns the score of member.
func (z *ZSet) Score(member []byte) (float64, bool) {
	if z.big != nil {
		if e, _ := z.big.index.find(member); e != nil {
			return e.score, true
		}
		return 0, false
	}
	_, _, _, _, m, ok := z.lpFind(member)
	return m.Score, ok
}

// Rank returns the 0-based rank of member in ascending order (descending
// when rev) and its score.
func (z *ZSet) Rank(member []byte, rev bool) (rank int, score float64, ok bool) {
	if z.big != nil {
		e, _ := z.big.index.find(member)
		if e == nil {
			return 0, 0, false
		}
		score = e.score
		rank = z.big.search(func(it *zentry) bool { return zentryLess(it, e) })
	} else {
		var m ZMember
		_, _, _, rank, m, ok = z.lpFind(member)
		if !ok {
			return 0, 0, false
		}
		score = m.Score
	}
	if rev {
		rank = z.Len() - 1 - rank
	}
	return rank, score, true
}

// search returns the number of leading items for which before is true;
// before must be true for a prefix of the order and false after it.
func (b *zbig) search(before func(*zentry) bool) int {
	lo, hi := 0, b.tree.Len()
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		it, _ := b.tree.GetAt(mid)
		if before(it) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// ScoreRange is an interval of scores, as ZRANGEBYSCORE's min and max:
// each bound is inclusive unless its Ex flag is set (the "(" prefix).
type ScoreRange struct {
	Min, Max     float64
	MinEx, MaxEx bool
}

func (r *ScoreRange) gteMin(s float64) bool {
	if r.MinEx {
		return s > r.Min
	}
	return s >= r.Min
}

func (r *ScoreRange) lteMax(s float64) bool {
	if r.MaxEx {
		return s < r.Max
	}
	return s <= r.Max
}

func (r *ScoreRange) empty() bool {
	return r.Min > r.Max || r.Min == r.Max && (r.MinEx || r.MaxEx)
}

// LexBound is one end of a ZRANGEBYLEX interval: "-" (Inf -1), "+" (Inf 1),
// or a value, exclusive when Ex ("(value") and inclusive otherwise
// ("[value").
type LexBound struct {
	Value []byte
	Ex    bool
	Inf   int8
}

// LexRange is a ZRANGEBYLEX interval.
type LexRange struct{ Min, Max LexBound }

// lexCmpBound compares the bounds as Redis's sdscmplex: "-" is below and "+"
// above every value, and a sentinel equals only itself.
func lexCmpBound(a, b *LexBound) int {
	if a.Inf != 0 || b.Inf != 0 {
		if a.Inf == b.Inf {
			return 0
		}
		if a.Inf == -1 || b.Inf == 1 {
			return -1
		}
		return 1
	}
	return bytes.Compare(a.Value, b.Value)
}

func (r *LexRange) empty() bool {
	c := lexCmpBound(&r.Min, &r.Max)
	return c > 0 || c == 0 && (r.Min.Ex || r.Max.Ex)
}

func (r *LexRange) gteMin(v []byte) bool {
	switch r.Min.Inf {
	case -1:
		return true
	case 1:
		return false
	}
	c := bytes.Compare(v, r.Min.Value)
	return c > 0 || c == 0 && !r.Min.Ex
}

func (r *LexRange) lteMax(v []byte) bool {
	switch r.Max.Inf {
	case 1:
		return true
	case -1:
		return false
	}
	c := bytes.Compare(v, r.Max.Value)
	return c < 0 || c == 0 && !r.Max.Ex
}

// ScoreSpan returns the ranks [lo, hi) of the members whose scores lie in r.
func (z *ZSet) ScoreSpan(r ScoreRange) (lo, hi int) {
	if r.empty() {
		return 0, 0
	}
	if z.big != nil {
		lo = z.big.search(func(it *zentry) bool { return !r.gteMin(it.score) })
		hi = z.big.search(func(it *zentry) bool { return r.lteMax(it.score) })
		if lo >= hi {
			return 0, 0
		}
		return lo, hi
	}
	var st lpState
	var m ZMember
	i := 0
	lo = -1
	for off := 0; off < len(z.lp); i++ {
		off = lpDecode(z.lp, off, &st, &m)
		if lo < 0 {
			if !r.gteMin(m.Score) {
				continue
			}
			lo = i
		}
		if !r.lteMax(m.Score) {
			break
		}
	}
	if lo < 0 || lo == i {
		return 0, 0
	}
	return lo, i
}

// LexSpan returns the ranks [lo, hi) of the members in r. As in Redis the
// result is only meaningful when all members have the same score: the walk
// assumes the members are in lexicographic order.
func (z *ZSet) LexSpan(r LexRange) (lo, hi int) {
	n := z.Len()
	if r.empty() || n == 0 {
		return 0, 0
	}
	if z.big != nil {
		first, _ := z.big.tree.Min()
		last, _ := z.big.tree.Max()
		if !r.gteMin(bytesOf(last.member)) || !r.lteMax(bytesOf(first.member)) {
			return 0, 0
		}
		lo = z.big.search(func(it *zentry) bool { return !r.gteMin(bytesOf(it.member)) })
		hi = z.big.search(func(it *zentry) bool { return r.lteMax(bytesOf(it.member)) })
		if lo >= hi {
			return 0, 0
		}
		return lo, hi
	}
	// As listpack: the first member must be <= max and the last >= min;
	// the first member >= min starts the range (if it is also <= max) and
	// the first member > max after it ends it.
	var buf [20]byte
	var st lpState
	var m ZMember
	lo, hi = -1, -1
	i := 0
	for off := 0; off < len(z.lp); i++ {
		off = lpDecode(z.lp, off, &st, &m)
		v := m.AppendTo(buf[:0])
		switch {
		case i == 0 && !r.lteMax(v):
			return 0, 0
		case lo < 0:
			if r.gteMin(v) {
				if !r.lteMax(v) {
					return 0, 0
				}
				lo = i
			}
		case hi < 0 && !r.lteMax(v):
			hi = i
		}
	}
	if lo < 0 || !r.gteMin(m.AppendTo(buf[:0])) { // m is the last member
		return 0, 0
	}
	if hi < 0 {
		hi = n
	}
	return lo, hi
}

// Walk calls fn for the members of ranks [lo, hi), in ascending order, or in
// descending order (from hi-1 down to lo) when rev, until fn returns false.
// The set must not change during the walk. fn gets the member by value: a
// pointer to Walk's record, passed to a function value, would make the
// record escape to the heap, an allocation per ZRANGE.
//
// The member's bytes alias the set; copy them to keep them.
func (z *ZSet) Walk(lo, hi int, rev bool, fn func(m ZMember) bool) {
	lo, hi = max(lo, 0), min(hi, z.Len())
	if lo >= hi {
		return
	}
	var m ZMember
	if z.big != nil {
		// An iterator rather than Ascend/Descend: a callback handed to the
		// tree would make fn escape, and every caller's closure allocate.
		start, _ := z.big.tree.GetAt(lo)
		if rev {
			start, _ = z.big.tree.GetAt(hi - 1)
		}
		it := z.big.tree.Iter()
		defer it.Release()
		ok := it.Seek(start)
		for k := hi - lo; ok && k > 0; k-- {
			e := it.Item()
			m.Score, m.Member = e.score, bytesOf(e.member)
			if !fn(m) {
				return
			}
			if rev {
				ok = it.Prev()
			} else {
				ok = it.Next()
			}
		}
		return
	}
	p := z.lpSeek(lo)
	if !rev {
		for i := lo; i < hi; i++ {
			p.off = lpDecode(z.lp, p.off, &p.st, &m)
			if !fn(m) {
				return
			}
		}
		return
	}
	// Backwards: the deltas only decode forwards, so note where each entry
	// starts, then decode them in reverse.
	var stack [64]lpPos
	pos := stack[:0]
	for i := lo; i < hi; i++ {
		pos = append(pos, p)
		p.off = lpDecode(z.lp, p.off, &p.st, &m)
	}
	for i := len(pos) - 1; i >= 0; i-- {
		st := pos[i].st
		lpDecode(z.lp, pos[i].off, &st, &m)
		if !fn(m) {
			return
		}
	}
}

// RemoveRanks deletes the members of ranks [lo, hi) and returns how many
// it deleted.
func (z *ZSet) RemoveRanks(lo, hi int) int {
	lo, hi = max(lo, 0), min(hi, z.Len())
	if lo >= hi {
		return 0
	}
	k := hi - lo
	if z.big != nil {
		b := z.big
		switch {
		case lo == 0 && hi == b.len():
			b.tree.Clear()
			b.index.init(0)
		case k == 1:
			it, _ := b.tree.DeleteAt(lo)
			_, slot := b.index.find(bytesOf(it.member))
			b.index.removeAt(slot)
		default:
			start, _ := b.tree.GetAt(lo)
			left := k
			b.tree.DeleteAscend(start, func(it *zentry) btree.Action {
				if left == 0 {
					return btree.Stop
				}
				left--
				_, slot := b.index.find(bytesOf(it.member))
				b.index.removeAt(slot)
				return btree.Delete
			})
		}
		return k
	}
	p := z.lpSeek(lo)
	end, endSt := p.off, p.st
	var m ZMember
	for i := lo; i < hi; i++ {
		end = lpDecode(z.lp, end, &endSt, &m)
	}
	z.lpSplice(p, end, endSt, false, 0, nil)
	z.n -= k
	return k
}

// At returns the member of rank r (0 <= r < Len).
func (z *ZSet) At(r int) ZMember {
	var m ZMember
	z.Walk(r, r+1, false, func(x ZMember) bool { m = x; return false })
	return m
}

// Sample calls fn for count members picked at random: distinct members when
// unique (all of them, in order, when count >= Len), otherwise each pick
// independent of the others. The set must not change during the call.
func (z *ZSet) Sample(count int, unique bool, fn func(m ZMember)) {
	n := z.Len()
	if n == 0 || count <= 0 {
		return
	}
	if unique && count >= n {
		z.Walk(0, n, false, func(m ZMember) bool { fn(m); return true })
		return
	}
	if z.big != nil {
		if !unique {
			for ; count > 0; count-- {
				m := z.At(rand.IntN(n))
				fn(m)
			}
			return
		}
		if count*3 > n {
			// Most of the set: choose ranks, then one ordered walk.
			chosen := make([]bool, n)
			for _, r := range rand.Perm(n)[:count] {
				chosen[r] = true
			}
			i := 0
			z.Walk(0, n, false, func(m ZMember) bool {
				if chosen[i] {
					fn(m)
				}
				i++
				return true
			})
			return
		}
		seen := make(map[int]struct{}, count)
		for len(seen) < count {
			r := rand.IntN(n)
			if _, dup := seen[r]; dup {
				continue
			}
			seen[r] = struct{}{}
			m := z.At(r)
			fn(m)
		}
		return
	}
	// Compact: note every entry's position once, then pick.
	pos := make([]lpPos, 0, n)
	var st lpState
	var m ZMember
	for off := 0; off < len(z.lp); {
		pos = append(pos, lpPos{off, st})
		off = lpDecode(z.lp, off, &st, &m)
	}
	emit := func(i int) {
		st := pos[i].st
		lpDecode(z.lp, pos[i].off, &st, &m)
		fn(m)
	}
	if !unique {
		for ; count > 0; count-- {
			emit(rand.IntN(n))
		}
		return
	}
	// A partial Fisher-Yates shuffle of the positions.
	for i := 0; i < count; i++ {
		j := i + rand.IntN(n-i)
		pos[i], pos[j] = pos[j], pos[i]
		emit(i)
	}
}

// Scan calls fn for members from cursor on and returns the next cursor, 0
// when the iteration is complete. A compact set is returned whole in one
// call, whatever the cursor, as Redis does for a listpack; a large set is
// walked in the order of its members' hashes (see oaTable.scan).
func (z *ZSet) Scan(cursor uint64, count int, fn func(m ZMember)) uint64 {
	if z.big == nil {
		// Whatever the cursor, as Redis does for a listpack.
		z.Walk(0, z.n, false, func(m ZMember) bool { fn(m); return true })
		return 0
	}
	var m ZMember
	return z.big.index.scan(cursor, count, func(e *zentry) {
		m.Score, m.Member = e.score, bytesOf(e.member)
		fn(m)
	})
}
