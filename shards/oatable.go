package shards

import (
	"cmp"
	"hash/maphash"
	"math"
	"slices"
)

// oaTable is an open-addressing hash table of items found by a string key,
// with linear probing and backward-shift deletion: one word a slot at a
// load factor between 3/16 and 3/4, where a Go map spends three or more
// words a slot and a separately allocated key. It indexes the members of
// large sorted sets (zindex) and holds the fields of large hashes; their
// memory targets (no more than Redis's skiplist and dict) depend on it.
// The zero item is an empty slot. Not safe for concurrent use.
type oaTable[T oaItem] struct {
	slots []T // power-of-two length
	n     int
}

// oaItem is what an oaTable holds: a comparable value whose zero value is
// never stored, found by its key.
type oaItem interface {
	comparable
	oaKey() string
}

var oaSeed = maphash.MakeSeed()

func oaHash(key string) uint64 { return maphash.String(oaSeed, key) }

func (x *oaTable[T]) init(hint int) {
	size := 8
	for size*3 < hint*4 {
		size *= 2
	}
	x.slots, x.n = make([]T, size), 0
}

// find returns the item of key and its slot, or the zero item and -1.
func (x *oaTable[T]) find(key []byte) (T, int) {
	k := tmpString(key)
	mask := len(x.slots) - 1
	var zero T
	for i := int(oaHash(k)) & mask; ; i = (i + 1) & mask {
		it := x.slots[i]
		if it == zero {
			return zero, -1
		}
		if it.oaKey() == k {
			return it, i
		}
	}
}

// insert adds an item whose key is absent.
func (x *oaTable[T]) insert(it T) {
	if (x.n+1)*4 > len(x.slots)*3 {
		x.resize(len(x.slots) * 2)
	}
	x.place(it)
	x.n++
}

func (x *oaTable[T]) place(it T) {
	mask := len(x.slots) - 1
	var zero T
	i := int(oaHash(it.oaKey())) & mask
	for x.slots[i] != zero {
		i = (i + 1) & mask
	}
	x.slots[i] = it
}

func (x *oaTable[T]) resize(size int) {
	old := x.slots
	x.slots = make([]T, size)
	var zero T
	for _, it := range old {
		if it != zero {
			x.place(it)
		}
	}
}

// removeAt empties slot i and shifts back the items of the probe run
// after it that may move closer to their home slot.
func (x *oaTable[T]) removeAt(i int) {
	mask := len(x.slots) - 1
	var zero T
	x.slots[i] = zero
	x.n--
	for j := (i + 1) & mask; x.slots[j] != zero; j = (j + 1) & mask {
		home := int(oaHash(x.slots[j].oaKey())) & mask
		// The item at j stays if its home lies cyclically in (i, j].
		if i <= j && i < home && home <= j || i > j && (i < home || home <= j) {
			continue
		}
		x.slots[i], x.slots[j] = x.slots[j], zero
		i = j
	}
	if len(x.slots) > 8 && x.n*16 < len(x.slots)*3 {
		x.resize(len(x.slots) / 2)
	}
}

// scan calls fn for a batch of items in the order of their keys' hashes,
// from the hash cursor on, and returns the cursor to resume from, 0 when
// the iteration is complete. Because the cursor is a hash, not a slot, a
// full iteration returns every item present throughout exactly once, even
// while the table grows, shrinks or changes. Each call visits the whole
// table to pick the next batch, so a batch is at least a sixteenth of the
// items: a full scan costs at most about sixteen passes, whatever count is.
func (x *oaTable[T]) scan(cursor uint64, count int, fn func(T)) uint64 {
	count = max(count, x.n/16, 1)
	type hit struct {
		h  uint64
		it T
	}
	var zero T
	// The count smallest hashes >= cursor, in a max-heap.
	heap := make([]hit, 0, min(count, x.n))
	less := func(i, j int) bool { return heap[i].h > heap[j].h }
	for _, it := range x.slots {
		if it == zero {
			continue
		}
		h := oaHash(it.oaKey())
		switch {
		case h < cursor:
		case len(heap) < count:
			heap = append(heap, hit{h, it})
			for i := len(heap) - 1; i > 0; {
				p := (i - 1) / 2
				if !less(i, p) {
					break
				}
				heap[i], heap[p] = heap[p], heap[i]
				i = p
			}
		case h < heap[0].h:
			heap[0] = hit{h, it}
			for i := 0; ; {
				c := 2*i + 1
				if c >= len(heap) {
					break
				}
				if c+1 < len(heap) && less(c+1, c) {
					c++
				}
				if !less(c, i) {
					break
				}
				heap[i], heap[c] = heap[c], heap[i]
				i = c
			}
		}
	}
	next := uint64(0)
	if len(heap) == count && heap[0].h != math.MaxUint64 {
		next = heap[0].h + 1
	}
	slices.SortFunc(heap, func(a, b hit) int { return cmp.Compare(a.h, b.h) })
	for _, h := range heap {
		fn(h.it)
	}
	if next != 0 {
		// Is anything left past the batch? If not, say so now rather than
		// make the client come back for an empty page.
		more := false
		for _, it := range x.slots {
			if it != zero && oaHash(it.oaKey()) >= next {
				more = true
				break
			}
		}
		if !more {
			next = 0
		}
	}
	return next
}
