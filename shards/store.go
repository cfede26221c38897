package shards

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"strconv"
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
	now    func() int64
	wall   *wallClock // the default clock, when Options.Now is nil

	stopExpire chan struct{}
	expireHook atomic.Pointer[func(time.Duration)] // OnExpireCycle
	expireOff  atomic.Bool                         // PauseExpiry
	expireDone chan struct{}
	yield      atomic.Pointer[func()] // see SetYield
	exp        expiryCtl              // see SetExpireHook and KeepExpired

	keysApprox atomic.Int64 // keys at the last active-expiry tick; see KeysApprox
	// Expiry cycle statistics (Stats): the float64 bits of the stale
	// share, and the cycles cut short by their time budget.
	expireStale  atomic.Uint64
	expireCapped atomic.Int64
	avgTTL       atomic.Int64 // see AvgTTL
	access       accessState  // what accesses record; see SetAccess

	_    [56]byte
	live atomic.Int64 // see Live; written by every shard, on a cache line of its own
	_    [56]byte
}

// Shard is one lock and the keys routed to it, in a table (see table.go).
type Shard struct {
	mu sync.Mutex
	table
	idx        uint32        // the shard's index in the store, part of its references
	live       *atomic.Int64 // the store's Live counter
	exp        *expiryCtl    // the store's
	volatile   int           // keys with a deadline
	expireNext uint32        // next entry id the active expiry cycle looks at
	watched    map[string]*watchState
	changes    uint64 // writes to this shard's keys, see Changes
	fresh      uint64 // keys commands created or found expired, see Fresh

	// Counters for INFO and the save rules, kept per shard so that cores
	// working on different shards never write the same cache line; the
	// Store's accessors sum them.
	dirty       atomic.Int64 // changes since the last snapshot (rdb_changes_since_last_save)
	expiredKeys atomic.Int64 // keys removed because their deadline passed
	evicted     atomic.Int64 // keys removed by Evict (evicted_keys)
	hits        atomic.Int64
	misses      atomic.Int64
	dropped     atomic.Int64 // bytes of storage let go by Flush and compaction
	_           [32]byte     // keep neighbouring shards' locks off one cache line
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
		now:    opts.Now,
	}
	if s.now == nil {
		s.wall = newWallClock()
		s.now = s.wall.now
	}
	for i := range s.shards {
		s.shards[i].idx = uint32(i)
		s.shards[i].live = &s.live
		s.shards[i].exp = &s.exp
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

// TryLock locks shard i if no one holds it, and reports whether it did.
func (s *Store) TryLock(i int) bool { return s.shards[i].mu.TryLock() }

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

func (s *Store) shardOf(key []byte) *Shard {
	return &s.shards[uint32(KeySlot(key))&s.mask]
}

// Shard returns shard i, for the methods ending in "In": they are the
// Store's methods of the same name for a caller that already knows the
// key's shard (the dispatcher found it to lock it), and skip hashing the
// key again to find it: a CRC16 over the key, which a CL.THROTTLE would
// otherwise compute four times (lock, lookup, touch, deadline), an INCR
// three. sh must be the shard of the key (ShardIndex).
func (s *Store) Shard(i int) *Shard { return &s.shards[i] }

// Lookup returns the live entry for key, or nil when the key does not exist
// or has expired (an expired key is deleted on the spot). nowMs is the
// command's clock reading in Unix milliseconds. Requires key's shard held.
func (s *Store) Lookup(key []byte, nowMs int64) *Entry {
	return s.LookupIn(s.shardOf(key), key, nowMs)
}

// LookupIn is Lookup in sh, key's shard (see Shard).
func (s *Store) LookupIn(sh *Shard, key []byte, nowMs int64) *Entry {
	e := s.LookupNoTouchIn(sh, key, nowMs)
	if e != nil {
		s.touchAccess(e, nowMs)
	}
	return e
}

// LookupNoTouchIn is LookupIn for a command that must not count as an
// access for the LRU and LFU policies (TYPE, EXISTS, TTL: Redis's
// LOOKUP_NOTOUCH).
func (s *Store) LookupNoTouchIn(sh *Shard, key []byte, nowMs int64) *Entry {
	e, p := sh.find(key, hashKey(key))
	if e == nil {
		sh.misses.Add(1)
		return nil
	}
	if e.expireAt != 0 && e.expireAt <= nowMs {
		sh.reclaim(key, e, p)
		sh.misses.Add(1)
		return nil
	}
	sh.hits.Add(1)
	return e
}

// LookupWrite is Lookup for a command that writes key: the same entry,
// but not counted as a keyspace hit or miss, as Redis counts only the
// lookups of reads (lookupKeyRead, not lookupKeyWrite). A write that
// replies the value it read (GETSET, GETDEL) uses Lookup. Requires key's
// shard held.
func (s *Store) LookupWrite(key []byte, nowMs int64) *Entry {
	return s.LookupWriteIn(s.shardOf(key), key, nowMs)
}

// LookupWriteIn is LookupWrite in sh, key's shard (see Shard).
func (s *Store) LookupWriteIn(sh *Shard, key []byte, nowMs int64) *Entry {
	e, p := sh.find(key, hashKey(key))
	if e == nil {
		return nil
	}
	if e.expireAt != 0 && e.expireAt <= nowMs {
		sh.reclaim(key, e, p)
		return nil
	}
	s.touchAccess(e, nowMs)
	return e
}

// LookupAny is Lookup for a command that is about to overwrite the value:
// it returns the entry even when it has expired (live false) instead of
// deleting it, so that the caller can reuse it with Reuse — no index
// delete, re-insert and key copy, which is what a rate limiter whose keys
// expire between bursts pays on almost every call. An expired entry the
// caller does not reuse stays logically absent and is reclaimed later.
// Requires key's shard held.
func (s *Store) LookupAny(key []byte, nowMs int64) (e *Entry, live bool) {
	return s.LookupAnyIn(s.shardOf(key), key, nowMs)
}

// LookupAnyIn is LookupAny in sh, key's shard (see Shard).
func (s *Store) LookupAnyIn(sh *Shard, key []byte, nowMs int64) (e *Entry, live bool) {
	e = sh.lookup(key)
	if e == nil {
		sh.misses.Add(1)
		return nil, false
	}
	if e.expireAt != 0 && e.expireAt <= nowMs {
		sh.misses.Add(1)
		return e, false
	}
	sh.hits.Add(1)
	s.touchAccess(e, nowMs)
	return e, true
}

// Reuse turns e, the expired entry of key returned by LookupAny, into a
// new empty entry, as if the old key had been deleted and a new one
// created: the expiry is counted and WATCHers see a change. Its old
// deadline stays until the caller sets the new one with SetExpire, which
// it must do before unlocking. Requires key's shard held.
func (s *Store) Reuse(key []byte, e *Entry) {
	s.reuseIn(s.shardOf(key), key, e)
}

func (s *Store) reuseIn(sh *Shard, key []byte, e *Entry) {
	s.clearValue(e)
	if s.access.mode.Load() != uint32(AccessNone) { // spare the clock reading otherwise
		s.newAccess(e, s.now()/1e6)
	}
	sh.expiredKeys.Add(1)
	sh.fresh++
	sh.touch(key)
	sh.dirty.Add(1)
}

// DropExpired deletes key if its deadline has passed, as a lookup would,
// without touching hit/miss statistics: for WATCH, which must see a key
// that expired before it as absent. Requires key's shard held.
func (s *Store) DropExpired(key []byte, nowMs int64) {
	sh := s.shardOf(key)
	if e, p := sh.find(key, hashKey(key)); e != nil && e.expireAt != 0 && e.expireAt <= nowMs {
		sh.reclaim(key, e, p)
	}
}

// reclaim deletes e, key's entry at index position p, whose deadline has
// passed, for a command that looked it up: counted as expired, as a change
// (dirty) and for the journal (Fresh). Requires sh.mu held.
func (sh *Shard) reclaim(key []byte, e *Entry, p int) {
	if sh.exp.keep.Load() {
		return // a replica: its primary deletes the key (KeepExpired)
	}
	if fn := sh.exp.hook.Load(); fn != nil {
		(*fn)(key)
	}
	sh.removeEntry(key, e, p)
	sh.expiredKeys.Add(1)
	sh.fresh++
	sh.dirty.Add(1)
}

// Peek is Lookup without touching hit/miss statistics or deleting an
// expired key: for introspection (TYPE of SCAN, DEBUG) and WATCH.
// Requires key's shard held.
func (s *Store) Peek(key []byte, nowMs int64) *Entry {
	if e := s.shardOf(key).lookup(key); e != nil && (e.expireAt == 0 || e.expireAt > nowMs) {
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
	return s.PutIn(s.shardOf(key), key, nowMs)
}

// PutIn is Put in sh, key's shard (see Shard).
func (s *Store) PutIn(sh *Shard, key []byte, nowMs int64) (e *Entry, existed bool) {
	e = sh.lookup(key)
	switch {
	case e == nil:
		e = sh.insert(key)
		sh.live.Add(keyBytes(len(key)))
		s.newAccess(e, nowMs)
		sh.fresh++
	case e.expireAt != 0 && e.expireAt <= nowMs:
		// An expired key is replaced in place, as by Reuse, and starts
		// without a deadline: no index delete, re-insert or key copy.
		s.reuseIn(sh, key, e)
		sh.volatile--
		e.expireAt = 0
		return e, false
	default:
		existed = true
		s.touchAccess(e, nowMs)
	}
	sh.touch(key)
	sh.dirty.Add(1)
	return e, existed
}

// Touched records that the entry of key was changed in place (after Lookup):
// WATCHers of key see it and the dirty counter grows. Requires key's shard
// held.
func (s *Store) Touched(key []byte) {
	s.TouchedIn(s.shardOf(key), key)
}

// TouchedIn is Touched in sh, key's shard (see Shard).
func (s *Store) TouchedIn(sh *Shard, key []byte) {
	sh.touch(key)
	sh.dirty.Add(1)
}

// RewrittenIn is TouchedIn and SetExpire in one: e, the live entry of key in
// sh, was changed in place and its deadline is now atMs. It counts one
// change, as Redis counts one for a command that sets a value and its TTL.
func (s *Store) RewrittenIn(sh *Shard, key []byte, e *Entry, atMs int64) {
	if atMs != e.expireAt {
		if atMs != 0 && e.expireAt == 0 {
			sh.volatile++
		} else if atMs == 0 {
			sh.volatile--
		}
		e.expireAt = atMs
	}
	sh.touch(key)
	sh.dirty.Add(1)
}

// SetExpire sets the deadline of e, the entry of key, to atMs (Unix ms; 0
// makes the key persistent). Requires key's shard held.
func (s *Store) SetExpire(key []byte, e *Entry, atMs int64) {
	if atMs == e.expireAt {
		return
	}
	s.setExpireIn(s.shardOf(key), key, e, atMs)
}

// SetExpireIn is SetExpire in sh, key's shard (see Shard).
func (s *Store) SetExpireIn(sh *Shard, key []byte, e *Entry, atMs int64) {
	if atMs == e.expireAt {
		return
	}
	s.setExpireIn(sh, key, e, atMs)
}

func (s *Store) setExpireIn(sh *Shard, key []byte, e *Entry, atMs int64) {
	if atMs != 0 && e.expireAt == 0 {
		sh.volatile++
	} else if atMs == 0 {
		sh.volatile--
	}
	e.expireAt = atMs
	sh.touch(key)
	sh.dirty.Add(1)
}

// Delete removes key and reports whether it existed (an expired key counts
// as absent). Requires key's shard held.
func (s *Store) Delete(key []byte, nowMs int64) bool {
	sh := s.shardOf(key)
	e, p := sh.find(key, hashKey(key))
	if e == nil {
		return false
	}
	expired := e.expireAt != 0 && e.expireAt <= nowMs
	sh.removeEntry(key, e, p)
	if expired {
		sh.expiredKeys.Add(1)
		sh.fresh++
		return false
	}
	sh.dirty.Add(1)
	return true
}

// removeEntry deletes e, the entry of key, from the shard, releasing its
// reference; p is its index position, or -1 (see table.remove). Requires
// sh.mu held.
func (sh *Shard) removeEntry(key []byte, e *Entry, p int) {
	if e.expireAt != 0 {
		sh.volatile--
	}
	if e.form() == formRef {
		sh.releaseRef(uint32(e.num))
	}
	sh.live.Add(-keyBytes(len(key)))
	sh.touch(key)
	sh.remove(e, p)
}

// Rename moves the value of src to dst (replacing dst), keeping its
// deadline. Requires both shards held. Reports false if src is absent.
func (s *Store) Rename(src, dst []byte, nowMs int64) bool {
	e := s.LookupWrite(src, nowMs)
	if e == nil {
		return false
	}
	if string(src) == string(dst) {
		return true
	}
	s.Delete(dst, nowMs)
	from, to := s.shardOf(src), s.shardOf(dst)
	val, exp := *e, e.expireAt
	if e.form() == formRef { // move the reference to dst's shard
		r := from.refs[uint32(e.num)]
		from.freeRef(uint32(e.num))
		val.num = int64(uint64(to.idx)<<32 | uint64(to.newRef(r)))
	}
	e.meta = metaUsed // nothing left to release
	s.Delete(src, nowMs)
	d := to.insert(dst)
	to.live.Add(keyBytes(len(dst)))
	d.meta, d.num, d.access = val.meta, val.num, val.access
	d.klen = d.klen&0x0f | val.klen&0xf0
	if exp != 0 {
		d.expireAt = exp
		to.volatile++
	}
	to.touch(dst)
	to.dirty.Add(1)
	return true
}

// clearValue releases e's reference, if any, and makes it an empty entry
// (KindNone), keeping key and deadline.
func (s *Store) clearValue(e *Entry) {
	if e.form() == formRef {
		s.shards[uint64(e.num)>>32].releaseRef(uint32(e.num))
	}
	e.meta, e.num = metaUsed, 0
	e.klen &= 0x0f
}

// ref returns the reference slot a formRef entry names.
func (s *Store) ref(e *Entry) *refVal {
	return &s.shards[uint64(e.num)>>32].refs[uint32(e.num)]
}

// slotRef names a reference slot by its shard's reference table and its
// index: the handle of the values that live in the slot itself (Hash,
// List). It stays valid while the shard is locked and the key keeps its
// value, even when the table grows and moves: slots keep their index.
// live is the store's Live counter (nil for a value of no key), which
// counts the capacity of the slot's bytes (see evict.go): a method that
// may change it calls account.
type slotRef struct {
	refs *[]refVal
	i    uint32
	live *atomic.Int64
}

// slotOf returns the slot of a formRef entry.
func (s *Store) slotOf(e *Entry) slotRef {
	sh := &s.shards[uint64(e.num)>>32]
	return slotRef{&sh.refs, uint32(e.num), sh.live}
}

// account adds to Live the change of the slot's bytes' capacity since it
// was before.
func (h slotRef) account(before int) {
	if d := cap(h.r().str) - before; d != 0 && h.live != nil {
		h.live.Add(int64(d))
	}
}

// newSlot makes e, the entry of key, of kind k with an empty value in its
// reference slot, and returns the slot.
func (s *Store) newSlot(key []byte, e *Entry, k Kind) slotRef {
	s.setRefVal(key, e, k, refVal{})
	return s.slotOf(e)
}

// looseSlot returns a slot of no key, for values being decoded.
func looseSlot() slotRef {
	refs := make([]refVal, 1)
	return slotRef{&refs, 0, nil}
}

func (h slotRef) r() *refVal { return &(*h.refs)[h.i] }

// SetInt makes e a string holding the decimal integer n.
func (s *Store) SetInt(e *Entry, n int64) {
	if e.form() == formRef {
		s.clearValue(e)
	}
	e.klen &= 0x0f
	e.num = n
	e.setMeta(KindString, formInt)
}

// SetBytes makes e, the entry of key, a string holding a copy of b. A
// canonical decimal integer (as INCR would print it) is stored as an int64
// and a string of up to 8 bytes inside the entry; longer strings take a
// reference (reusing e's buffer when it already holds a string).
func (s *Store) SetBytes(key []byte, e *Entry, b []byte) {
	if n, ok := canonicalInt(b); ok {
		s.SetInt(e, n)
		return
	}
	if len(b) <= strInline {
		if e.form() == formRef {
			s.clearValue(e)
		}
		e.setInline(b)
		return
	}
	if e.form() == formRef {
		if r := s.ref(e); r.obj == nil {
			was := int64(cap(r.str))
			r.str = append(r.str[:0], b...)
			s.live.Add(int64(cap(r.str)) - was)
			e.setMeta(KindString, formRef)
			return
		}
		s.clearValue(e)
	}
	s.setRef(key, e, KindString, refVal{str: append([]byte(nil), b...)})
}

// SetObject makes e, the entry of key, hold obj, of kind k (a sorted set, a
// sliding log, …).
func (s *Store) SetObject(key []byte, e *Entry, k Kind, obj any) {
	s.setRefVal(key, e, k, refVal{obj: obj})
}

// setRefVal makes e, the entry of key, a reference of kind k to v, reusing
// e's reference slot when it has one.
func (s *Store) setRefVal(key []byte, e *Entry, k Kind, v refVal) {
	if e.form() == formRef {
		r := s.ref(e)
		s.live.Add(int64(cap(v.str)) - int64(cap(r.str)))
		s.shards[uint64(e.num)>>32].dropped.Add(valueBytes(*r))
		*r = v
		e.setMeta(k, formRef)
		return
	}
	s.setRef(key, e, k, v)
}

// setRef stores v in a new reference of key's shard and points e at it.
func (s *Store) setRef(key []byte, e *Entry, k Kind, v refVal) {
	sh := s.shardOf(key)
	e.num = int64(uint64(sh.idx)<<32 | uint64(sh.newRef(v)))
	sh.live.Add(refBytes + int64(cap(v.str)))
	e.klen &= 0x0f
	e.setMeta(k, formRef)
}

// Object returns the object of a non-string entry (nil for a string).
func (s *Store) Object(e *Entry) any {
	if e.form() != formRef {
		return nil
	}
	return s.ref(e).obj
}

// AppendBytes appends e's string value to dst (an integer in decimal).
func (s *Store) AppendBytes(dst []byte, e *Entry) []byte {
	switch e.form() {
	case formInt:
		if e.Kind() == KindNone {
			return dst
		}
		return strconv.AppendInt(dst, e.num, 10)
	case formInline:
		var buf [strInline]byte
		return append(dst, e.inlineString(&buf)...)
	}
	return append(dst, s.ref(e).str...)
}

// StrLen returns the length in bytes of e's string value.
func (s *Store) StrLen(e *Entry) int {
	switch e.form() {
	case formInt:
		if e.Kind() == KindNone {
			return 0
		}
		return intLen(e.num)
	case formInline:
		return int(e.klen >> 4)
	}
	return len(s.ref(e).str)
}

// KeysApprox returns how many keys the store held at the last active-expiry
// tick (StartExpiry; every 100 ms, 0 before the first): the keyspace's
// order of magnitude without taking a lock, for heuristics such as
// whether it still fits in the CPU cache.
func (s *Store) KeysApprox() int64 { return s.keysApprox.Load() }

// Len returns the number of keys, including expired keys not yet reclaimed
// (as Redis's DBSIZE). Requires all shards held.
func (s *Store) Len() int {
	n := 0
	for i := range s.shards {
		n += s.shards[i].count
	}
	return n
}

// Dropped returns the bytes of keyspace storage (entries, indexes, arenas)
// that FLUSHALL and compaction after mass expiry have let go of since the
// store was created, and the values (long strings, sorted sets, logs) of
// the keys deleted, evicted or overwritten since. The memory is garbage from then on, but the Go runtime
// only learns so at its next collection, which a quiet heap may not reach
// for a long time; main's releaseMemory collects when this grows.
func (s *Store) Dropped() int64 {
	var n int64
	for i := range s.shards {
		n += s.shards[i].dropped.Load()
	}
	return n
}

// Expires returns how many keys carry a deadline. Requires all shards held.
func (s *Store) Expires() int {
	n := 0
	for i := range s.shards {
		n += s.shards[i].volatile
	}
	return n
}

// Flush deletes every key. Requires all shards held.
func (s *Store) Flush() {
	s.avgTTL.Store(0)
	for i := range s.shards {
		sh := &s.shards[i]
		if sh.count > 0 {
			sh.dirty.Add(int64(sh.count))
		}
		// WATCHers of keys that exist see a change; of keys that do not,
		// none (Redis's touchAllWatchedKeysInDb).
		for k, w := range sh.watched {
			if sh.lookup([]byte(k)) != nil {
				w.version++
			}
		}
		sh.dropped.Add(sh.storageBytes())
		sh.reset()
		sh.volatile = 0
		sh.expireNext = 0
		sh.changes++
	}
	s.live.Store(0)
}

// Each calls fn for every live key, shard by shard, until fn returns false.
// The key slice is only valid during the call; fn must not add keys.
// Requires all shards held.
func (s *Store) Each(nowMs int64, fn func(key []byte, e *Entry) bool) {
	for i := range s.shards {
		sh := &s.shards[i]
		more := true
		sh.each(func(e *Entry) bool {
			if e.expireAt == 0 || e.expireAt > nowMs {
				more = fn(sh.keyOf(e), e)
			}
			return more
		})
		if !more {
			return
		}
	}
}

// SlotShard returns the index of the shard that holds the keys of hash
// slot slot (in [0, NumSlots)).
func (s *Store) SlotShard(slot uint16) int { return int(uint32(slot) & s.mask) }

// EachInSlot calls fn for every live key of hash slot slot, until fn
// returns false (CLUSTER COUNTKEYSINSLOT, GETKEYSINSLOT). It walks the
// slot's shard, which holds 1/NumShards of the keyspace. The key slice is
// only valid during the call. Requires shard SlotShard(slot) held.
func (s *Store) EachInSlot(slot uint16, nowMs int64, fn func(key []byte) bool) {
	sh := &s.shards[s.SlotShard(slot)]
	sh.each(func(e *Entry) bool {
		if e.expireAt != 0 && e.expireAt <= nowMs {
			return true
		}
		k := sh.keyOf(e)
		return KeySlot(k) != slot || fn(k)
	})
}

// Scan calls fn for the live keys of a part of the keyspace, about count of
// them, and returns the cursor for the next part, 0 at the end.
//
// A cursor is a shard index (high 32 bits) and a 32-bit hash position
// within it: each call reports the keys whose hash lies in [position,
// next position), which it finds between the index positions those hashes
// map to and the end of the probe run after them (see table). Because the
// parts are ranges of hashes, not of index positions, a full scan returns
// every key present throughout exactly once even when indexes grow
// between calls. Requires all shards held.
func (s *Store) Scan(cursor uint64, count int, nowMs int64, fn func(key []byte, e *Entry)) uint64 {
	seen := 0
	si, from := cursor>>32, uint64(uint32(cursor))
	for ; si < uint64(len(s.shards)); si, from = si+1, 0 {
		sh := &s.shards[si]
		// Hash ranges are sized by index words, some of which belong to
		// neighbouring ranges: take ranges until count keys are seen.
		for sh.count > 0 && from <= math.MaxUint32 && seen < count {
			from = sh.scanRange(from, count-seen, func(e *Entry) {
				seen++
				if e.expireAt == 0 || e.expireAt > nowMs {
					fn(sh.keyOf(e), e)
				}
			})
		}
		if seen >= count {
			switch {
			case from <= math.MaxUint32 && sh.count > 0:
				return si<<32 | from
			case si+1 < uint64(len(s.shards)):
				return (si + 1) << 32
			}
			return 0
		}
	}
	return 0
}

// scanRange calls fn for the entries whose hash lies in [from, to), with to
// chosen so that about count index words are covered, and returns to
// (1<<32 when the range reaches the end of the hash space).
func (t *table) scanRange(from uint64, count int, fn func(e *Entry)) uint64 {
	t.finishGrow()
	n := len(t.index)
	start := home(n, uint32(from))
	end, seen := start, 0
	for end < n && seen < count {
		if t.index[end] != 0 {
			seen++
		}
		end++
	}
	// to is the least hash whose home is end: ceil(end * 2^32 / n).
	to := (uint64(end)<<32 + uint64(n) - 1) / uint64(n)
	for i := 0; i < n; i++ {
		p := (start + i) % n
		w := t.index[p]
		if w == 0 {
			if start+i >= end {
				break
			}
			continue
		}
		if h := uint64(w >> 32); h >= from && h < to {
			fn(t.entry(uint32(w) - 1))
		}
	}
	return to
}

// RandomKey returns a random live key, or nil when the store is empty.
// Requires all shards held.
func (s *Store) RandomKey(nowMs int64) []byte {
	if s.Len() == 0 {
		return nil
	}
	first := rand.IntN(len(s.shards))
	for i := range s.shards {
		sh := &s.shards[(first+i)%len(s.shards)]
		if sh.count == 0 {
			continue
		}
		sh.finishGrow()
		n := len(sh.index)
		p := rand.IntN(n)
		for j := 0; j < n; j++ {
			w := sh.index[(p+j)%n]
			if w == 0 {
				continue
			}
			if e := sh.entry(uint32(w) - 1); e.expireAt == 0 || e.expireAt > nowMs {
				return append([]byte(nil), sh.keyOf(e)...)
			}
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
	ExpiredKeys, EvictedKeys, Hits, Misses int64
	// ExpiredStale is the share of the keys with a deadline that the
	// expiry cycles found expired, a moving average (expired_stale_perc).
	ExpiredStale float64
	// ExpireTimeCapped counts the expiry cycles that ran out of time
	// before they were done (expired_time_cap_reached_count).
	ExpireTimeCapped int64
}

// Stats returns the keyspace counters.
func (s *Store) Stats() Stats {
	var st Stats
	for i := range s.shards {
		sh := &s.shards[i]
		st.ExpiredKeys += sh.expiredKeys.Load()
		st.EvictedKeys += sh.evicted.Load()
		st.Hits += sh.hits.Load()
		st.Misses += sh.misses.Load()
	}
	st.ExpiredStale = math.Float64frombits(s.expireStale.Load())
	st.ExpireTimeCapped = s.expireCapped.Load()
	return st
}

// ResetStats zeroes the counters CONFIG RESETSTAT clears.
func (s *Store) ResetStats() {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.expiredKeys.Store(0)
		sh.evicted.Store(0)
		sh.hits.Store(0)
		sh.misses.Store(0)
	}
	s.expireStale.Store(0)
	s.expireCapped.Store(0)
}
