package shards

import (
	"math/bits"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// NumSlots is the number of Redis Cluster hash slots.
const NumSlots = 16384

// Options configure a Store. The zero value is usable: shards sized for the
// machine and the wall clock.
type Options struct {
	// Shards is the number of shards, rounded up to a power of two between 1
	// and NumSlots. Zero picks 16 per CPU core.
	Shards int
	// Now returns the current time in Unix nanoseconds. Nil means the wall
	// clock. Tests pass a fake clock so that expiry never needs a sleep.
	Now func() int64
}

// Store is the sharded keyspace. It is safe for concurrent use as long as
// callers follow the locking rules in the package documentation.
type Store struct {
	shards []Shard
	mask   uint32
	shift  uint
	now    func() int64

	stopExpire chan struct{}
	expireDone chan struct{}
}

// Shard is one lock and the keys routed to it: one map for lookups, and for
// every hash slot the shard owns (slot = index<<shift | shard index) an
// intrusive list of its entries, so SCAN can walk slots in order.
//
// Why not one map per slot: Go maps of up to 8 entries compare a short
// lookup key against every stored key (no hashing), and each comparison is
// a cache miss on that key's bytes. With 100k keys over 16384 slots that
// cost ~700 ns per GET; one map per shard costs one comparison.
type Shard struct {
	mu       sync.Mutex
	data     map[string]*Entry
	slotHead []*Entry            // first entry of each of the shard's slots
	volatile map[string]struct{} // keys with a deadline, sampled by active expiry
	watched  map[string]*watchState
	count    int
	changes  uint64 // writes to this shard's keys, see Changes

	// Counters for INFO and the save rules, kept per shard so that cores
	// working on different shards never write the same cache line; the
	// Store's accessors sum them.
	dirty       atomic.Int64 // changes since the last snapshot (rdb_changes_since_last_save)
	expiredKeys atomic.Int64 // keys removed because their deadline passed
	hits        atomic.Int64
	misses      atomic.Int64
	_           [32]byte // keep neighbouring shards' locks off one cache line
}

// New returns an empty store.
func New(opts Options) *Store {
	n := opts.Shards
	if n <= 0 {
		n = 16 * runtime.GOMAXPROCS(0)
	}
	if n > NumSlots {
		n = NumSlots
	}
	n = 1 << bits.Len(uint(n-1)) // round up to a power of two
	s := &Store{
		shards: make([]Shard, n),
		mask:   uint32(n - 1),
		shift:  uint(bits.TrailingZeros(uint(n))),
		now:    opts.Now,
	}
	if s.now == nil {
		s.now = func() int64 { return time.Now().UnixNano() }
	}
	for i := range s.shards {
		s.shards[i].data = make(map[string]*Entry)
		s.shards[i].slotHead = make([]*Entry, NumSlots/n)
		s.shards[i].volatile = make(map[string]struct{})
	}
	return s
}

// Now returns the store's clock reading in Unix nanoseconds.
func (s *Store) Now() int64 { return s.now() }

// NumShards returns the number of shards.
func (s *Store) NumShards() int { return len(s.shards) }

// ShardIndex returns the index of the shard that owns key.
func (s *Store) ShardIndex(key []byte) int {
	return int(uint32(KeySlot(key)) & s.mask)
}

// Lock locks shard i. Callers that lock several shards must do so in
// ascending index order.
func (s *Store) Lock(i int) { s.shards[i].mu.Lock() }

// Unlock unlocks shard i.
func (s *Store) Unlock(i int) { s.shards[i].mu.Unlock() }

// LockAll locks every shard in ascending order.
func (s *Store) LockAll() {
	for i := range s.shards {
		s.shards[i].mu.Lock()
	}
}

// UnlockAll unlocks every shard.
func (s *Store) UnlockAll() {
	for i := range s.shards {
		s.shards[i].mu.Unlock()
	}
}

func (s *Store) locate(key []byte) (*Shard, int) {
	slot := uint32(KeySlot(key))
	return &s.shards[slot&s.mask], int(slot >> s.shift)
}

// link puts e, a new entry for key, into sh's map and its slot list j.
// Requires sh.mu held.
func (sh *Shard) link(key []byte, j int, e *Entry) {
	e.key = string(key)
	sh.data[e.key] = e
	e.slot = uint16(j)
	e.next = sh.slotHead[j]
	if e.next != nil {
		e.next.prev = e
	}
	e.prev = nil
	sh.slotHead[j] = e
	sh.count++
}

// unlink removes e from sh's map and slot list. Requires sh.mu held.
func (sh *Shard) unlink(e *Entry) {
	delete(sh.data, e.key)
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		sh.slotHead[e.slot] = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	}
	e.prev, e.next = nil, nil
	sh.count--
}

// Lookup returns the live entry for key, or nil when the key does not exist
// or has expired (an expired key is deleted on the spot). nowMs is the
// command's clock reading in Unix milliseconds. Requires key's shard held.
func (s *Store) Lookup(key []byte, nowMs int64) *Entry {
	sh, _ := s.locate(key)
	e := sh.data[string(key)]
	if e == nil {
		sh.misses.Add(1)
		return nil
	}
	if e.expireAt != 0 && e.expireAt <= nowMs {
		sh.remove(e)
		sh.expiredKeys.Add(1)
		sh.dirty.Add(1)
		sh.misses.Add(1)
		return nil
	}
	sh.hits.Add(1)
	return e
}

// LookupAny is Lookup for a command that is about to overwrite the value:
// it returns the entry even when it has expired (live false) instead of
// deleting it, so that the caller can reuse it with Reuse — no map delete,
// re-insert and allocation, which is what a rate limiter whose keys expire
// between bursts pays on almost every call. An expired entry the caller
// does not reuse stays logically absent and is reclaimed later. Requires
// key's shard held.
func (s *Store) LookupAny(key []byte, nowMs int64) (e *Entry, live bool) {
	sh, _ := s.locate(key)
	e = sh.data[string(key)]
	if e == nil {
		sh.misses.Add(1)
		return nil, false
	}
	if e.expireAt != 0 && e.expireAt <= nowMs {
		sh.misses.Add(1)
		return e, false
	}
	sh.hits.Add(1)
	return e, true
}

// Reuse turns e, the expired entry of key returned by LookupAny, into a
// new empty entry, as if the old key had been deleted and a new one
// created: the expiry is counted and WATCHers see a change. Its old
// deadline stays until the caller sets the new one with SetExpire, which
// it must do before unlocking. Requires key's shard held.
func (s *Store) Reuse(key []byte, e *Entry) {
	sh, _ := s.locate(key)
	e.kind, e.isNum, e.num, e.str, e.obj = KindNone, false, 0, nil, nil
	sh.expiredKeys.Add(1)
	sh.touch(key)
	sh.dirty.Add(1)
}

// Peek is Lookup without touching hit/miss statistics or deleting an
// expired key: for introspection (TYPE of SCAN, DEBUG) and WATCH.
// Requires key's shard held.
func (s *Store) Peek(key []byte, nowMs int64) *Entry {
	sh, _ := s.locate(key)
	if e := sh.data[string(key)]; e != nil && (e.expireAt == 0 || e.expireAt > nowMs) {
		return e
	}
	return nil
}

// Put returns the entry for key, ready to be written, creating an empty one
// (KindNone) when the key does not exist or has expired. It counts as a
// modification of key (WATCH, dirty counter). The deadline of an existing
// entry is kept; callers that replace a value clear it with SetExpire.
// Requires key's shard held.
func (s *Store) Put(key []byte, nowMs int64) (e *Entry, existed bool) {
	sh, j := s.locate(key)
	e = sh.data[string(key)]
	switch {
	case e == nil:
		e = &Entry{}
		sh.link(key, j, e)
	case e.expireAt != 0 && e.expireAt <= nowMs:
		// An expired key is replaced in place, as by Reuse, and starts
		// without a deadline: no map delete, re-insert or allocation.
		s.Reuse(key, e)
		delete(sh.volatile, e.key)
		e.expireAt = 0
		return e, false
	default:
		existed = true
	}
	sh.touch(key)
	sh.dirty.Add(1)
	return e, existed
}

// Touched records that the entry of key was changed in place (after Lookup):
// WATCHers of key see it and the dirty counter grows. Requires key's shard
// held.
func (s *Store) Touched(key []byte) {
	sh, _ := s.locate(key)
	sh.touch(key)
	sh.dirty.Add(1)
}

// SetExpire sets the deadline of e, the entry of key, to atMs (Unix ms; 0
// makes the key persistent). Requires key's shard held.
func (s *Store) SetExpire(key []byte, e *Entry, atMs int64) {
	sh, _ := s.locate(key)
	if atMs == e.expireAt {
		return
	}
	if atMs != 0 && e.expireAt == 0 {
		sh.volatile[string(key)] = struct{}{}
	} else if atMs == 0 {
		delete(sh.volatile, string(key))
	}
	e.expireAt = atMs
	sh.touch(key)
	sh.dirty.Add(1)
}

// Delete removes key and reports whether it existed (an expired key counts
// as absent). Requires key's shard held.
func (s *Store) Delete(key []byte, nowMs int64) bool {
	sh, _ := s.locate(key)
	e := sh.data[string(key)]
	if e == nil {
		return false
	}
	sh.remove(e)
	if e.expireAt != 0 && e.expireAt <= nowMs {
		sh.expiredKeys.Add(1)
		return false
	}
	sh.dirty.Add(1)
	return true
}

// remove deletes e from the shard. Requires sh.mu held.
func (sh *Shard) remove(e *Entry) {
	if e.expireAt != 0 {
		delete(sh.volatile, e.key)
	}
	sh.unlink(e)
	sh.touchString(e.key)
}

// Rename moves the entry of src to dst (replacing dst), keeping its
// deadline. Requires both shards held. Reports false if src is absent.
func (s *Store) Rename(src, dst []byte, nowMs int64) bool {
	e := s.Lookup(src, nowMs)
	if e == nil {
		return false
	}
	s.Delete(src, nowMs)
	s.Delete(dst, nowMs)
	sh, j := s.locate(dst)
	sh.link(dst, j, e)
	if e.expireAt != 0 {
		sh.volatile[string(dst)] = struct{}{}
	}
	sh.touch(dst)
	sh.dirty.Add(1)
	return true
}

// Len returns the number of keys, including expired keys not yet reclaimed
// (as Redis's DBSIZE). Requires all shards held.
func (s *Store) Len() int {
	n := 0
	for i := range s.shards {
		n += s.shards[i].count
	}
	return n
}

// Expires returns how many keys carry a deadline. Requires all shards held.
func (s *Store) Expires() int {
	n := 0
	for i := range s.shards {
		n += len(s.shards[i].volatile)
	}
	return n
}

// Flush deletes every key. Requires all shards held.
func (s *Store) Flush() {
	for i := range s.shards {
		sh := &s.shards[i]
		if sh.count > 0 {
			sh.dirty.Add(int64(sh.count))
		}
		sh.data = make(map[string]*Entry)
		for j := range sh.slotHead {
			sh.slotHead[j] = nil
		}
		sh.volatile = make(map[string]struct{})
		sh.count = 0
		sh.changes++
		for _, w := range sh.watched {
			w.version++
		}
	}
}

// Each calls fn for every live key in slot order until fn returns false.
// The key slice is only valid during the call. Requires all shards held.
func (s *Store) Each(nowMs int64, fn func(key []byte, e *Entry) bool) {
	for slot := 0; slot < NumSlots; slot++ {
		if !s.eachInSlot(slot, nowMs, fn) {
			return
		}
	}
}

func (s *Store) eachInSlot(slot int, nowMs int64, fn func(key []byte, e *Entry) bool) bool {
	for e := s.shards[uint32(slot)&s.mask].slotHead[slot>>s.shift]; e != nil; e = e.next {
		if e.expireAt != 0 && e.expireAt <= nowMs {
			continue
		}
		if !fn([]byte(e.key), e) {
			return false
		}
	}
	return true
}

// Scan calls fn for the live keys of the slots from cursor on, slot by slot,
// until at least count keys were visited (or the keyspace ends), and returns
// the cursor of the next slot, 0 at the end. Because a cursor is a slot
// number, a full scan returns every key present throughout exactly once.
// Requires all shards held.
func (s *Store) Scan(cursor uint64, count int, nowMs int64, fn func(key []byte, e *Entry)) uint64 {
	seen := 0
	slot := cursor
	for ; slot < NumSlots && seen < count; slot++ {
		s.eachInSlot(int(slot), nowMs, func(k []byte, e *Entry) bool {
			fn(k, e)
			seen++
			return true
		})
	}
	if slot >= NumSlots {
		return 0
	}
	return slot
}

// RandomKey returns a random live key, or nil when the store is empty.
// Requires all shards held.
func (s *Store) RandomKey(nowMs int64) []byte {
	if s.Len() == 0 {
		return nil
	}
	start := rand.IntN(NumSlots)
	for i := 0; i < NumSlots; i++ {
		var key []byte
		s.eachInSlot((start+i)%NumSlots, nowMs, func(k []byte, _ *Entry) bool {
			key = append([]byte(nil), k...)
			return false
		})
		if key != nil {
			return key
		}
	}
	return nil
}

// Dirty returns the number of changes since the counter was last reset.
func (s *Store) Dirty() int64 {
	var n int64
	for i := range s.shards {
		n += s.shards[i].dirty.Load()
	}
	return n
}

// ResetDirty sets the change counter back to zero (after a snapshot).
func (s *Store) ResetDirty() {
	for i := range s.shards {
		s.shards[i].dirty.Store(0)
	}
}

// Stats are keyspace counters for INFO.
type Stats struct {
	ExpiredKeys, Hits, Misses int64
}

// Stats returns the keyspace counters.
func (s *Store) Stats() Stats {
	var st Stats
	for i := range s.shards {
		sh := &s.shards[i]
		st.ExpiredKeys += sh.expiredKeys.Load()
		st.Hits += sh.hits.Load()
		st.Misses += sh.misses.Load()
	}
	return st
}

// ResetStats zeroes the counters CONFIG RESETSTAT clears.
func (s *Store) ResetStats() {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.expiredKeys.Store(0)
		sh.hits.Store(0)
		sh.misses.Store(0)
	}
}
