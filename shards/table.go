package shards

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"unsafe"
)

// A shard's keys live in a table built for a rate limiter's keyspace —
// millions of small keys, most holding one integer — and for Go's garbage
// collector, which must not see a pointer per key (it would scan every one
// on every cycle, and 10M keys mean 10M pointers to chase):
//
//   - entries: 32-byte Entry values in chunks of chunkLen, allocated as
//     pointer-free arrays (the GC never looks inside) and never moved, so an
//     *Entry stays valid while its key exists. Freed entries are chained into
//     a free list through their num field.
//   - index: an open-addressed hash table of uint64 words, each the high 32
//     bits of the key's hash and the entry's id + 1 (0 = empty), with linear
//     probing and backward-shift deletion (no tombstones). A lookup costs one
//     cache miss in the index and one in the entry, whose inline key settles
//     the comparison, where Go's map[string]*Entry costs three (bucket, key
//     bytes, entry).
//     Growing rehashes from the stored hash bits, never touching the entries,
//     a slice at a time (see grow).
//   - arena: the bytes of keys longer than keyInline, compacted when more
//     than half of it is garbage.
//   - refs: the Go values (sorted sets, long strings) that do need pointers,
//     one slot per key that has one, named by the entry's num.
//
// A home position is the hash scaled to the index length, so positions are
// ordered by hash: Scan walks hash ranges, which stay valid when the index
// grows.
type table struct {
	chunks   []*[chunkLen]Entry
	live     []uint16 // used entries per chunk, so compact skips empty ones
	nextID   uint32   // entries ever allocated (ids below it exist)
	freeHead uint32   // first free id + 1; 0 = none

	index []uint64
	count int // used entries

	// While the index grows (see grow): the index before, which still
	// holds every key whose hash is bound or above, and bound. nil when
	// not growing.
	old     []uint64
	bound   uint64
	oldUsed int // non-empty words in old, moved ones included

	arena        []byte
	arenaGarbage int

	refs    []refVal
	refFree []uint32
}

// refVal is what a formRef entry names: an object or a long string.
type refVal struct {
	obj any
	str []byte
}

const (
	chunkLen     = 256 // entries per chunk: 8 KiB, one size class, no waste
	minIndexSize = 16
	// The index grows by half when more than 4/5 full: linear probing
	// stays short (3 probes for a hit, in one or two cache lines) and the
	// index costs 10-15 bytes per key. Doubling instead would cost up to
	// 21 (a CL.THROTTLE key is 32 bytes of entry plus this).
	maxLoadNum, maxLoadDen = 4, 5
)

// home returns the position a hash starts probing at in an index of n
// words: h scaled to n (Lemire's fastrange), so positions are in hash
// order for any length, which Scan and grow rely on.
func home(n int, h uint32) int {
	return int(uint64(h) * uint64(n) >> 32)
}

// indexOf returns the index that holds (or would hold) the keys of hash h,
// and the offset find adds to its positions: while the index grows, the
// keys at or above bound are still in the old one.
func (t *table) indexOf(h uint32) ([]uint64, int) {
	if t.old != nil && uint64(h) >= t.bound {
		return t.old, len(t.index)
	}
	return t.index, 0
}

var hashSeed = maphash.MakeSeed()

// hashKey returns the 32 hash bits the index stores and positions by.
func hashKey(key []byte) uint32 {
	return uint32(maphash.Bytes(hashSeed, key) >> 32)
}

func (t *table) entry(id uint32) *Entry {
	return &t.chunks[id/chunkLen][id%chunkLen]
}

// keyOf returns e's key. The slice aliases the entry or the arena: valid
// until the shard next changes.
func (t *table) keyOf(e *Entry) []byte {
	if k, ok := e.inlineKey(); ok {
		return k
	}
	off, n := e.arenaKey()
	return t.arena[off : off+n : off+n]
}

func (t *table) keyEqual(e *Entry, key []byte) bool {
	if k, ok := e.inlineKey(); ok {
		return string(k) == string(key)
	}
	off, n := e.arenaKey()
	return int(n) == len(key) && bytes.Equal(t.arena[off:off+n], key)
}

// find returns the entry of key and its index position, or nil and the
// empty position where key would go. Positions in the old index while it
// grows are offset by the new one's length (see indexOf).
func (t *table) find(key []byte, h uint32) (*Entry, int) {
	idx, base := t.indexOf(h)
	n := len(idx)
	if n == 0 {
		return nil, -1
	}
	p := home(n, h)
	for {
		w := idx[p]
		if w == 0 {
			return nil, base + p
		}
		if uint32(w>>32) == h {
			if e := t.entry(uint32(w) - 1); t.keyEqual(e, key) {
				return e, base + p
			}
		}
		if p++; p == n {
			p = 0
		}
	}
}

// at returns the index and the position in it of a position find returned.
func (t *table) at(p int) ([]uint64, int) {
	if p >= len(t.index) {
		return t.old, p - len(t.index)
	}
	return t.index, p
}

// lookup returns the entry of key or nil.
func (t *table) lookup(key []byte) *Entry {
	e, _ := t.find(key, hashKey(key))
	return e
}

// insert adds key, which must be absent, and returns its new entry (used,
// KindNone, no deadline).
func (t *table) insert(key []byte) *Entry {
	h := hashKey(key)
	if (t.count+1)*maxLoadDen > len(t.index)*maxLoadNum {
		t.grow()
	}
	if t.old != nil {
		t.migrate(growStep)
		if t.old != nil && uint64(h) >= t.bound && (t.oldUsed+1)*8 > len(t.old)*7 {
			t.finishGrow() // only when growStep is tiny (tests)
		}
	}
	_, p := t.find(key, h)
	id := t.alloc()
	e := t.entry(id)
	if len(key) <= keyInline {
		copy(e.key[:], key)
		e.klen = uint8(len(key))
	} else {
		t.compactArena()
		binary.LittleEndian.PutUint32(e.key[0:4], uint32(len(t.arena)))
		binary.LittleEndian.PutUint32(e.key[4:8], uint32(len(key)))
		e.klen = keyInArena
		t.arena = append(t.arena, key...)
	}
	e.meta = metaUsed
	idx, q := t.at(p)
	idx[q] = uint64(h)<<32 | uint64(id+1)
	if p >= len(t.index) { // in the old index
		t.oldUsed++
	}
	t.count++
	return e
}

// alloc takes an entry id from the free list or a chunk.
func (t *table) alloc() uint32 {
	if t.freeHead != 0 {
		id := t.freeHead - 1
		t.freeHead = uint32(t.entry(id).num)
		t.live[id/chunkLen]++
		return id
	}
	if t.nextID%chunkLen == 0 && int(t.nextID/chunkLen) == len(t.chunks) {
		t.chunks = append(t.chunks, new([chunkLen]Entry))
		t.live = append(t.live, 0)
	}
	id := t.nextID
	t.nextID++
	t.live[id/chunkLen]++
	return id
}

// remove deletes e (whose references the caller has released) from the
// index and frees it. p is e's index position when the caller found e
// with find, or -1 to look it up again.
func (t *table) remove(e *Entry, p int) {
	key := t.keyOf(e)
	var idx []uint64
	inOld := p >= len(t.index) // a position find returned
	if p < 0 {
		h := hashKey(key) // only here: the caller's position saves a hash
		var base int
		idx, base = t.indexOf(h)
		inOld = base != 0
		for p = home(len(idx), h); ; p = (p + 1) % len(idx) {
			if w := idx[p]; uint32(w>>32) == h && t.entry(uint32(w)-1) == e {
				break
			}
		}
	} else {
		idx, p = t.at(p)
	}
	if inOld {
		t.oldUsed--
	}
	n := len(idx)
	next := func(p int) int {
		if p++; p == n {
			return 0
		}
		return p
	}
	id := uint32(idx[p]) - 1
	// Backward-shift deletion: pull later words of the probe run into the
	// hole when the hole lies between their home and their position.
	dist := func(from, to int) int { // steps from from to to, wrapping
		if d := to - from; d >= 0 {
			return d
		}
		return to - from + n
	}
	for q := next(p); ; q = next(q) {
		w := idx[q]
		if w == 0 {
			break
		}
		if dist(home(n, uint32(w>>32)), q) >= dist(p, q) {
			idx[p] = w
			p = q
		}
	}
	idx[p] = 0
	if e.klen&0x0f == keyInArena {
		t.arenaGarbage += len(key)
	}
	*e = Entry{num: int64(t.freeHead)}
	t.freeHead = id + 1
	t.live[id/chunkLen]--
	t.count--
}

// Compaction: entries never move while their keys exist, so the chunks of
// keys that are gone stay allocated (on the free list) for new keys. After
// a mass expiry — 10M rate-limit keys whose windows ended — that is all of
// the memory. compact gives it back: it moves the few live entries into
// fresh storage sized for them, and the old chunks, index and arena become
// garbage. It invalidates every *Entry and entry id of the shard, so only
// the active expiry cycle calls it, between batches, with the shard locked
// and no entry held (sparse says when).
const (
	// compactMaxLive and compactMaxChunks bound the time one compaction
	// holds the shard lock to a millisecond or two (BenchmarkCompact
	// runs one at both limits). 16 shards x 16384 lets a compaction
	// follow a mass expiry that leaves ~250k keys.
	compactMaxLive = 16384
	// compactMaxChunks bounds the chunks it reads (those with a live
	// entry): 20 MiB of entries, all that a shard of 10M keys in 16 has.
	compactMaxChunks = 2560
	// compactMinIDs: tables smaller than this are not worth compacting.
	compactMinIDs = 4 * chunkLen
)

// sparse reports whether compact would free most of the table's storage
// (at least 3/4 of the entries ever allocated are free) within its bounds:
// at most compactMaxLive moves from at most compactMaxChunks chunks.
func (t *table) sparse() bool {
	if t.nextID < compactMinIDs || t.count > compactMaxLive || t.count*4 >= int(t.nextID) {
		return false
	}
	n := 0
	for _, l := range t.live {
		if l > 0 {
			if n++; n > compactMaxChunks {
				return false
			}
		}
	}
	return true
}

// compact rebuilds the table with only its live entries (see above).
// Reference slots are renumbered too; the high half of a reference's num
// (the shard index) is kept.
func (t *table) compact() {
	old := *t
	*t = table{}
	// Sized so that inserting old.count keys never grows it.
	t.index = make([]uint64, max(minIndexSize, (old.count+1)*maxLoadDen/maxLoadNum+1))
	for ci, c := range old.chunks {
		if old.live[ci] == 0 {
			continue
		}
		for i := range c {
			e := &c[i]
			if !e.used() {
				continue
			}
			ne := t.insert(old.keyOf(e))
			arenaOff := [4]byte(ne.key[0:4])
			*ne = *e
			if e.klen&0x0f == keyInArena {
				copy(ne.key[0:4], arenaOff[:])
			}
			if e.form() == formRef {
				slot := t.newRef(old.refs[uint32(e.num)])
				ne.num = e.num&^0xffffffff | int64(slot)
			}
		}
	}
}

// grow makes the index half as large again (or creates it). The words
// move from the old index to the new one a slice at a time, growStep
// positions per insert (migrate), in hash order: keys whose hash is below
// bound are in the new index, the others still in the old one, and
// lookups go to the one that holds their hash (indexOf). Moved words stay
// in the old index as dead weight (their hash is below bound, so no lookup
// there matches them) until the last slice drops it.
//
// Why: rehashing a big shard at once holds its lock for milliseconds, and
// on a one-core server every connection waits for it, once per growth of
// each shard (BenchmarkGrow; bench/README.md, Design notes). Redis
// rehashes its dictionaries incrementally for the same reason. The old
// index is 4/5 full when growth starts and gains at most one key per
// insert meanwhile, len(old)/growStep of them, so it does not fill up
// (insert makes sure: oldUsed).
func (t *table) grow() {
	t.finishGrow() // a no-op in practice: the new index is 1.5x the old
	if len(t.index) == 0 {
		t.index = make([]uint64, minIndexSize)
		return
	}
	t.old, t.oldUsed = t.index, t.count
	t.bound = 0
	t.index = make([]uint64, len(t.old)+len(t.old)/2)
}

// growStep is how many positions of the old index an insert moves while
// the index grows, which bounds the pause of any one insert
// (BenchmarkGrow). A variable so that tests can make growth last many
// steps.
var growStep = 256

// migrate moves a slice of the old index to the new one: the words whose
// home is one of the next `positions` positions from bound's home,
// including those that collisions pushed further on, and then raises
// bound past their hashes. The last slice drops the old index.
func (t *table) migrate(positions int) {
	old := t.old
	n := len(old)
	lo := t.bound
	start := home(n, uint32(lo))
	end := min(start+positions, n)
	hi := uint64(1) << 32 // the least hash whose home is end or later
	if end < n {
		hi = (uint64(end)<<32 + uint64(n) - 1) / uint64(n)
	}
	// Every word of hash [lo, hi) sits between its home in [start, end)
	// and the first empty slot after end (wrapping at the end of the index).
	for p, wrapped := start, false; ; {
		w := old[p]
		if w == 0 && (p >= end || wrapped) {
			break
		}
		if h := w >> 32; w != 0 && h >= lo && h < hi {
			q := home(len(t.index), uint32(h))
			for t.index[q] != 0 {
				if q++; q == len(t.index) {
					q = 0
				}
			}
			t.index[q] = w
		}
		if p++; p == n {
			p, wrapped = 0, true
		}
		if wrapped && p >= start {
			break // the whole old index was one run
		}
	}
	if hi == 1<<32 {
		t.old, t.bound = nil, 0
		return
	}
	t.bound = hi
}

// finishGrow moves what is left of the old index, for the passes that read
// the index directly (Scan, RandomKey).
func (t *table) finishGrow() {
	if t.old != nil {
		t.migrate(len(t.old))
	}
}

// compactArena rewrites the arena without its garbage when that is more
// than half of it. Only insert calls it, so no caller holds a key slice
// into the old arena.
func (t *table) compactArena() {
	if t.arenaGarbage < 1<<16 || t.arenaGarbage*2 < len(t.arena) {
		return
	}
	fresh := make([]byte, 0, len(t.arena)-t.arenaGarbage)
	t.each(func(e *Entry) bool {
		if e.klen&0x0f == keyInArena {
			off, n := e.arenaKey()
			binary.LittleEndian.PutUint32(e.key[0:4], uint32(len(fresh)))
			fresh = append(fresh, t.arena[off:off+n]...)
		}
		return true
	})
	t.arena, t.arenaGarbage = fresh, 0
}

// each calls fn for every used entry in id order until it returns false.
func (t *table) each(fn func(e *Entry) bool) {
	for id := uint32(0); id < t.nextID; id++ {
		if e := t.entry(id); e.used() && !fn(e) {
			return
		}
	}
}

// newRef stores v in a free reference slot and returns the slot.
func (t *table) newRef(v refVal) uint32 {
	if n := len(t.refFree); n > 0 {
		i := t.refFree[n-1]
		t.refFree = t.refFree[:n-1]
		t.refs[i] = v
		return i
	}
	t.refs = append(t.refs, v)
	return uint32(len(t.refs) - 1)
}

// freeRef releases slot i.
func (t *table) freeRef(i uint32) {
	t.refs[i] = refVal{}
	t.refFree = append(t.refFree, i)
}

// storageBytes estimates the memory the table's storage holds (entries,
// index, arena, reference slots), for Store.Dropped.
func (t *table) storageBytes() int64 {
	return int64(len(t.chunks))*int64(unsafe.Sizeof([chunkLen]Entry{})) + int64(cap(t.index)+cap(t.old))*8 +
		int64(cap(t.arena)) + int64(cap(t.refs))*int64(unsafe.Sizeof(refVal{}))
}

// reset empties the table.
func (t *table) reset() {
	*t = table{}
}
