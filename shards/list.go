package shards

// Lists, in two encodings as in Redis 7.2.
//
// Elements live in nodes, byte slices that are the counterpart of
// listpacks: an element count (2 bytes, little-endian), then the elements
// (elem.go), each followed by its backlen so that a node walks both ways.
// A small list is one node, kept as the key's reference itself
// (refVal.str, with no object), as Redis keeps a small list in one
// listpack. A list whose node would outgrow list-max-listpack-size
// converts to a sequence of nodes (qlist, Redis's quicklist): pushes at an
// end go to the end node while it has room, and to a new node when it has
// not; an element inserted or replaced in the middle splits a node that
// outgrows the limit. Nodes that deletions leave small are merged with a
// neighbour when the two fit in one, and a large list that shrinks to one
// node of half the limit becomes a small one again, as Redis's does.
//
// A List is a handle on a key's list, valid while the key's shard is
// locked and the key holds the list.

import (
	"encoding/binary"
	"math"
	"slices"
	"sync/atomic"
	"unsafe"
)

// listFill is list-max-listpack-size: a node holds at most fill elements
// when positive (and 8 KiB, Redis's SIZE_SAFETY_LIMIT), at most 4 KiB <<
// (-fill-1) bytes when negative (-1 to -5: 4 to 64 KiB).
var listFill atomic.Int64

func init() { SetListFill(-2) }

// SetListFill sets list-max-listpack-size. It is safe for concurrent use.
// Lists already stored keep their nodes.
func SetListFill(fill int64) { listFill.Store(fill) }

// nodeLimits returns the most bytes and elements a node may hold, as
// Redis's quicklistNodeLimit.
func nodeLimits() (size, count int) {
	fill := listFill.Load()
	if fill < 0 {
		return 4096 << min(-fill-1, 4), math.MaxInt
	}
	return 8192, int(min(max(fill, 1), math.MaxInt32))
}

// nodeExceeds reports whether a node of size bytes and count elements is
// over the limits.
func nodeExceeds(size, count int) bool {
	ls, lc := nodeLimits()
	return size > ls || count > lc
}

// lnHeader is the size of a node's element count.
const lnHeader = 2

func nodeCount(nd []byte) int {
	if len(nd) < lnHeader {
		return 0
	}
	return int(binary.LittleEndian.Uint16(nd))
}

func setNodeCount(nd []byte, n int) { binary.LittleEndian.PutUint16(nd, uint16(n)) }

// nodeEntry decodes the element at off and returns it with the offset of
// the next.
func nodeEntry(nd []byte, off int) (Elem, int) {
	e, end := decodeElem(nd, off)
	return e, end + backlenSize(end-off)
}

// nodeSkip returns the offset of the element after the one at off.
func nodeSkip(nd []byte, off int) int {
	end := skipElem(nd, off)
	return end + backlenSize(end-off)
}

// nodeSeek returns the offset of element i of a node (i == count: the
// end), walking from the nearer end.
func nodeSeek(nd []byte, i int) int {
	n := nodeCount(nd)
	if i <= n/2 {
		off := lnHeader
		for ; i > 0; i-- {
			off = nodeSkip(nd, off)
		}
		return off
	}
	off := len(nd)
	for k := n; k > i; k-- {
		off = readBacklen(nd, off)
	}
	return off
}

// entrySize is the size of an element of encoded size es with its backlen.
func entrySize(es int) int { return es + backlenSize(es) }

// newNode returns an empty node with room for extra more bytes.
func newNode(extra int) []byte {
	nd := resized(nil, 0, 0, lnHeader+extra)[:lnHeader]
	setNodeCount(nd, 0)
	return nd
}

// nodeInsert inserts p's element at off.
func nodeInsert(nd []byte, off int, p *probe) []byte {
	es := p.size()
	t := entrySize(es)
	nd = resized(nd, off, off, t)
	p.put(nd[off:])
	putBacklen(nd[off+es:off+t], es)
	setNodeCount(nd, nodeCount(nd)+1)
	return nd
}

// nodeReplace replaces the element at off with p's.
func nodeReplace(nd []byte, off int, p *probe) []byte {
	end := nodeSkip(nd, off)
	es := p.size()
	t := entrySize(es)
	if t != end-off {
		nd = resized(nd, off, end, t)
	}
	p.put(nd[off:])
	putBacklen(nd[off+es:off+t], es)
	return nd
}

// nodeCut removes the k elements in nd[from:to].
func nodeCut(nd []byte, from, to, k int) []byte {
	nd = resized(nd, from, to, 0)
	setNodeCount(nd, nodeCount(nd)-k)
	return nd
}

// nodeOf returns a new node holding the elements in b, count of them.
func nodeOf(b []byte, count int) []byte {
	nd := resized(nil, 0, 0, lnHeader+len(b))
	setNodeCount(nd, count)
	copy(nd[lnHeader:], b)
	return nd
}

// qlist is the large encoding: the nodes in order and the element count.
type qlist struct {
	nodes [][]byte
	n     int
}

// List is a handle on a list: the reference slot that holds it (see
// slotRef). Not safe for concurrent use.
type List struct{ slotRef }

// List returns the list of e, which must be of KindList. Requires e's
// shard held.
func (s *Store) List(e *Entry) List { return List{s.slotOf(e)} }

// NewList makes e, the entry of key, an empty list and returns it. The
// caller pushes an element before it unlocks: no key holds an empty list.
// Requires key's shard held.
func (s *Store) NewList(key []byte, e *Entry) List { return List{s.newSlot(key, e, KindList)} }

// newListValue returns a list that belongs to no key, for the decoder.
func newListValue() List { return List{looseSlot()} }

// lview is a list being read or changed: its reference and, in the large
// encoding, its qlist.
type lview struct {
	r *refVal
	q *qlist // nil: the compact encoding, whose one node is r.str
}

func (l List) view() lview {
	r := l.r()
	q, _ := r.obj.(*qlist)
	return lview{r, q}
}

func (v *lview) len() int {
	if v.q != nil {
		return v.q.n
	}
	return nodeCount(v.r.str)
}

// nodes returns the nodes. A compact list's one node is r.str itself, so
// storing a node through the slice stores it in the reference.
func (v *lview) nodes() [][]byte {
	if v.q != nil {
		return v.q.nodes
	}
	if len(v.r.str) == 0 {
		return nil
	}
	return unsafe.Slice(&v.r.str, 1)
}

// added counts k elements added to (or, negative, removed from) the nodes.
func (v *lview) added(k int) {
	if v.q != nil {
		v.q.n += k
	}
}

// big converts a compact list to the large encoding and returns it.
func (v *lview) big() *qlist {
	if v.q == nil {
		v.q = &qlist{nodes: [][]byte{v.r.str}, n: nodeCount(v.r.str)}
		v.r.obj, v.r.str = v.q, nil
	}
	return v.q
}

// locate returns the node of element i (0 <= i < n) and its index there,
// counting from the nearer end.
func locate(nodes [][]byte, n, i int) (ni, idx int) {
	if i < n/2 {
		for ni = 0; ; ni++ {
			c := nodeCount(nodes[ni])
			if i < c {
				return ni, i
			}
			i -= c
		}
	}
	back := n - 1 - i // elements after i
	for ni = len(nodes) - 1; ; ni-- {
		c := nodeCount(nodes[ni])
		if back < c {
			return ni, c - 1 - back
		}
		back -= c
	}
}

// Encoding returns the OBJECT ENCODING name: "listpack" or "quicklist".
func (l List) Encoding() string {
	if _, ok := l.r().obj.(*qlist); ok {
		return "quicklist"
	}
	return "listpack"
}

// Len returns the number of elements.
func (l List) Len() int {
	v := l.view()
	return v.len()
}

// Push adds an element at the head (front) or the tail.
func (l List) Push(b []byte, front bool) {
	v := l.view()
	defer l.account(cap(v.r.str))
	p := newProbe(b)
	t := entrySize(p.size())
	nodes := v.nodes()
	if len(nodes) == 0 {
		v.r.str = nodeInsert(newNode(t), lnHeader, &p)
		return
	}
	i := len(nodes) - 1
	if front {
		i = 0
	}
	if nd := nodes[i]; !nodeExceeds(len(nd)+t, nodeCount(nd)+1) {
		off := len(nd)
		if front {
			off = lnHeader
		}
		nodes[i] = nodeInsert(nd, off, &p)
		v.added(1)
		return
	}
	q := v.big()
	nd := nodeInsert(newNode(t), lnHeader, &p)
	if front {
		q.nodes = slices.Insert(q.nodes, 0, nd)
	} else {
		q.nodes = append(q.nodes, nd)
	}
	q.n++
}

// Walk calls fn for the elements from index from on, towards the tail, or
// towards the head when rev, until fn returns false. The list must not
// change during the walk. fn gets the element by value (see ZSet.Walk).
func (l List) Walk(from int, rev bool, fn func(e Elem) bool) {
	v := l.view()
	nodes, n := v.nodes(), v.len()
	if from < 0 || from >= n {
		return
	}
	ni, idx := locate(nodes, n, from)
	off := nodeSeek(nodes[ni], idx)
	for {
		nd := nodes[ni]
		if !rev {
			for off < len(nd) {
				e, next := nodeEntry(nd, off)
				if !fn(e) {
					return
				}
				off = next
			}
			if ni++; ni == len(nodes) {
				return
			}
			off = lnHeader
			continue
		}
		for {
			e, _ := nodeEntry(nd, off)
			if !fn(e) {
				return
			}
			if off == lnHeader {
				break
			}
			off = readBacklen(nd, off)
		}
		if ni--; ni < 0 {
			return
		}
		off = readBacklen(nodes[ni], len(nodes[ni]))
	}
}

// Index returns element i (0 <= i < Len).
func (l List) Index(i int) Elem {
	var e Elem
	l.Walk(i, false, func(x Elem) bool { e = x; return false })
	return e
}

// Set replaces element i (0 <= i < Len).
func (l List) Set(i int, b []byte) {
	v := l.view()
	defer l.account(cap(v.r.str))
	nodes := v.nodes()
	ni, idx := locate(nodes, v.len(), i)
	p := newProbe(b)
	nodes[ni] = nodeReplace(nodes[ni], nodeSeek(nodes[ni], idx), &p)
	v.split(ni)
	v.tidy(ni, ni)
}

// Insert inserts an element before (or, with after, after) the first
// element equal to pivot, and reports whether there was one.
func (l List) Insert(pivot, b []byte, after bool) bool {
	v := l.view()
	defer l.account(cap(v.r.str))
	nodes := v.nodes()
	pp := newProbe(pivot)
	for ni, nd := range nodes {
		for off := lnHeader; off < len(nd); {
			e, next := nodeEntry(nd, off)
			if !pp.matches(e) {
				off = next
				continue
			}
			if after {
				off = next
			}
			p := newProbe(b)
			nodes[ni] = nodeInsert(nd, off, &p)
			v.added(1)
			v.split(ni)
			return true
		}
	}
	return false
}

// split splits node ni in halves, and the halves again, while it is over
// the limits and holds more than one element (one element may be larger
// than a node's limit on its own, as in Redis).
func (v *lview) split(ni int) {
	nd := v.nodes()[ni]
	c := nodeCount(nd)
	if c <= 1 || !nodeExceeds(len(nd), c) {
		return
	}
	q := v.big()
	mid := nodeSeek(nd, c/2)
	q.nodes[ni] = nodeOf(nd[lnHeader:mid], c/2)
	q.nodes = slices.Insert(q.nodes, ni+1, nodeOf(nd[mid:], c-c/2))
	v.split(ni + 1)
	v.split(ni)
}

// DeleteRange removes count elements from index start on (0 <= start,
// start+count <= Len).
func (l List) DeleteRange(start, count int) {
	v := l.view()
	defer l.account(cap(v.r.str))
	n := v.len()
	if count <= 0 {
		return
	}
	if count == n {
		*v.r = refVal{} // the caller deletes the key
		return
	}
	nodes := v.nodes()
	first, idx := locate(nodes, n, start)
	ni := first
	for left := count; left > 0; ni, idx = ni+1, 0 {
		nd := nodes[ni]
		k := min(left, nodeCount(nd)-idx)
		from := nodeSeek(nd, idx)
		to := from
		for j := 0; j < k; j++ {
			to = nodeSkip(nd, to)
		}
		nodes[ni] = nodeCut(nd, from, to, k)
		left -= k
	}
	v.added(-count)
	v.tidy(first, ni-1)
}

// Remove deletes elements equal to b: the first count from the head when
// count > 0, the last -count from the tail when count < 0, all when 0. It
// returns how many it deleted.
func (l List) Remove(b []byte, count int) int {
	v := l.view()
	defer l.account(cap(v.r.str))
	nodes, n := v.nodes(), v.len()
	p := newProbe(b)
	limit := count
	if limit < 0 {
		limit = -limit
	}
	removed := 0
	var buf [32]int
	first, last := len(nodes), -1
	for k := range nodes {
		ni := k
		if count < 0 {
			ni = len(nodes) - 1 - k
		}
		nd := nodes[ni]
		// The offsets of the matches, in the walk's direction.
		offs := buf[:0]
		for i, off := 0, 0; i < nodeCount(nd) && (limit == 0 || removed+len(offs) < limit); i++ {
			if i == 0 {
				off = lnHeader
				if count < 0 {
					off = readBacklen(nd, len(nd))
				}
			}
			e, next := nodeEntry(nd, off)
			if p.matches(e) {
				offs = append(offs, off)
			}
			if count < 0 {
				if off > lnHeader {
					off = readBacklen(nd, off)
				}
			} else {
				off = next
			}
		}
		if len(offs) == 0 {
			continue
		}
		if count < 0 {
			slices.Reverse(offs)
		}
		nodes[ni] = nodeCutAt(nd, offs)
		removed += len(offs)
		first, last = min(first, ni), max(last, ni)
		if limit != 0 && removed == limit {
			break
		}
	}
	if removed == n {
		*v.r = refVal{} // the caller deletes the key
		return removed
	}
	if removed > 0 {
		v.added(-removed)
		v.tidy(first, last)
	}
	return removed
}

// nodeCutAt removes the elements at the ascending offsets offs in one pass.
func nodeCutAt(nd []byte, offs []int) []byte {
	w := offs[0]
	for i, off := range offs {
		end := nodeSkip(nd, off)
		next := len(nd)
		if i+1 < len(offs) {
			next = offs[i+1]
		}
		w += copy(nd[w:], nd[end:next])
	}
	setNodeCount(nd, nodeCount(nd)-len(offs))
	return resized(nd[:w], w, w, 0)
}

// tidy restores the encoding's shape after elements left nodes lo to hi:
// it drops the nodes left empty, merges each of them and its neighbours
// with the next when the two fit in one node, and turns a large list left
// with one node of at most half the limits into a compact one.
func (v *lview) tidy(lo, hi int) {
	q := v.q
	if q == nil {
		return
	}
	lo, hi = max(lo-1, 0), min(hi+1, len(q.nodes)-1)
	for i := lo; i <= hi && i < len(q.nodes); {
		a := q.nodes[i]
		if nodeCount(a) == 0 {
			q.nodes = slices.Delete(q.nodes, i, i+1)
			hi--
			continue
		}
		if i+1 < len(q.nodes) {
			b := q.nodes[i+1]
			if ca, cb := nodeCount(a), nodeCount(b); cb > 0 && !nodeExceeds(len(a)+len(b)-lnHeader, ca+cb) {
				m := resized(a, len(a), len(a), len(b)-lnHeader)
				copy(m[len(a):], b[lnHeader:])
				setNodeCount(m, ca+cb)
				q.nodes[i] = m
				q.nodes = slices.Delete(q.nodes, i+1, i+2)
				hi--
				continue
			}
		}
		i++
	}
	if len(q.nodes) == 1 {
		ls, lc := nodeLimits()
		if nd := q.nodes[0]; len(nd) <= ls/2 && nodeCount(nd) <= lc/2 {
			v.r.obj, v.r.str = nil, nd
			v.q = nil
		}
	}
}
