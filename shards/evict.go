package shards

import (
	"math"
	"math/rand/v2"
	"sync"
	"unsafe"
)

// Memory accounting and eviction.
//
// The store counts its live bytes (Live): for every key its Entry, the
// bytes of a key kept in the arena, and for a value kept by reference its
// slot and the capacity of a long string or of a compact hash's or list's
// bytes. The counter changes with every
// key created or deleted and every long string written, so that a server
// whose memory limit is read from the Go runtime every few milliseconds
// also sees a burst of new keys between two readings. What it does not
// count — the index, objects' growth after creation, connections — the
// server measures as the rest of the process's memory at each reading.
//
// Memory that deleted keys leave behind is of two kinds: entry slots and
// arena bytes the shard reuses for the next keys (Slack), and values the Go
// collector frees (Dropped). Neither counts against the limit again.
//
// Eviction takes one key at a time from one shard, as Redis's
// performEvictions does from one database: a random one (EvictIn), or the
// best of those an EvictionPool gathered by sampling a few keys of a shard
// per eviction (PoolFill, Pop, EvictKeyIn). The caller picks the shards,
// and locks one at a time.

const (
	entryBytes = int64(unsafe.Sizeof(Entry{}))
	refBytes   = int64(unsafe.Sizeof(refVal{}))
)

// keyBytes is what a key of n bytes costs in Live besides its value.
func keyBytes(n int) int64 {
	if n <= keyInline {
		return entryBytes
	}
	return entryBytes + int64(n)
}

// valueBytes estimates the memory a reference's value holds, for Dropped
// when it is let go of.
func valueBytes(r refVal) int64 {
	n := int64(cap(r.str))
	switch o := r.obj.(type) {
	case *SlidingLog:
		n += int64(o.Size())
	case *ZSet:
		n += 48 + int64(cap(o.lp))
		if o.big != nil {
			n += int64(o.big.len()) * 96 // a tree item, an index slot and a zentry with its member
		}
	case *SlidingWindow:
		n += int64(unsafe.Sizeof(*o))
	case *hbig:
		n += 32 + int64(cap(o.slots))*16 // the table's header and slots
		for _, s := range o.slots {
			n += int64(len(s)) // the slot's string (its size class not counted)
		}
	case *qlist:
		n += 32 + int64(cap(o.nodes))*24
		for _, nd := range o.nodes {
			n += int64(cap(nd))
		}
	}
	return n
}

// releaseRef frees reference slot i, whose value is let go of: it leaves
// Live and is counted in Dropped. Requires sh.mu held.
func (sh *Shard) releaseRef(i uint32) {
	r := sh.refs[i]
	sh.live.Add(-refBytes - int64(cap(r.str)))
	sh.dropped.Add(valueBytes(r))
	sh.freeRef(i)
}

// Live returns the bytes the keys hold, as counted above. It is one atomic
// load, cheap enough for every command.
func (s *Store) Live() int64 { return s.live.Load() }

// Slack returns the bytes of storage the shards hold for keys to come:
// free entry slots and arena bytes of deleted keys. New keys take them
// before the shards allocate more. It locks each shard in turn; the caller
// must hold none.
func (s *Store) Slack() int64 {
	var n int64
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += sh.slack()
		sh.mu.Unlock()
	}
	return n
}

// EvictPolicy says which keys eviction may take and which of the sampled
// ones it takes. The zero value evicts nothing.
type EvictPolicy uint8

// The eviction policies, as Redis's maxmemory-policy values.
const (
	EvictNone           EvictPolicy = iota
	EvictAllKeysRandom              // any key, at random
	EvictVolatileRandom             // a key with a deadline, at random
	EvictVolatileTTL                // the key with the nearest deadline (pool)
	EvictAllKeysLRU                 // the key idle longest (pool)
	EvictVolatileLRU                // the key with a deadline idle longest (pool)
	EvictAllKeysLFU                 // the key used least often (pool)
	EvictVolatileLFU                // the key with a deadline used least often (pool)
)

// volatileOnly reports whether p only takes keys that have a deadline.
func (p EvictPolicy) volatileOnly() bool {
	return p == EvictVolatileRandom || p == EvictVolatileTTL || p == EvictVolatileLRU || p == EvictVolatileLFU
}

// Pooled reports whether p picks its keys through an EvictionPool
// (PoolFill, EvictKeyIn) rather than at random (EvictIn).
func (p EvictPolicy) Pooled() bool { return p >= EvictVolatileTTL }

// Access returns what accesses must record for p (SetAccess).
func (p EvictPolicy) Access() AccessMode {
	switch p {
	case EvictAllKeysLRU, EvictVolatileLRU:
		return AccessLRU
	case EvictAllKeysLFU, EvictVolatileLFU:
		return AccessLFU
	}
	return AccessNone
}

// evictProbe is how many entry ids a sample looks at, from a random one
// on, for a used entry (with a deadline, for the volatile policies),
// before it gives up on that sample.
const evictProbe = 64

// Candidates reports whether shard i may hold a key that policy p can
// evict: a key, or a key with a deadline. Requires shard i held.
func (s *Store) Candidates(i int, p EvictPolicy) bool {
	sh := &s.shards[i]
	if p.volatileOnly() {
		return sh.volatile > 0
	}
	return p != EvictNone && sh.count > 0
}

// EvictIn deletes a random key of shard i that policy p (a random one:
// allkeys-random, volatile-random) may take, as Redis's performEvictions
// picks one. The volatile policies never take a key without a deadline.
//
// It returns the key, appended to buf[:0], and the bytes it held in Live;
// ok is false when the shard has no key p may take. The deletion counts as
// a change for WATCH; a key whose deadline has passed counts as expired
// rather than evicted. Requires shard i held.
func (s *Store) EvictIn(i int, p EvictPolicy, nowMs int64, buf []byte) (key []byte, freed int64, expired, ok bool) {
	sh := &s.shards[i]
	if !s.Candidates(i, p) {
		return buf[:0], 0, false, false
	}
	e := sh.sample(p.volatileOnly())
	if e == nil {
		return buf[:0], 0, false, false
	}
	key = append(buf[:0], sh.keyOf(e)...)
	freed, expired = sh.evict(key, e, nowMs)
	return key, freed, expired, true
}

// sample returns a random used entry (with a deadline when vol), or nil
// when there is none.
func (sh *Shard) sample(vol bool) *Entry {
	if e := sh.probe(rand.Uint32N(sh.nextID), vol, evictProbe); e != nil {
		return e
	}
	// A sparse shard: the probe fell on free slots only.
	return sh.probe(rand.Uint32N(sh.nextID), vol, int(sh.nextID))
}

// evict deletes e, the entry of key, for eviction, and returns the bytes
// it held in Live and whether its deadline had passed (it then counts as
// expired). Requires sh.mu held.
func (sh *Shard) evict(key []byte, e *Entry, nowMs int64) (freed int64, expired bool) {
	freed = keyBytes(len(key))
	if e.form() == formRef {
		freed += refBytes + int64(cap(sh.refs[uint32(e.num)].str))
	}
	expired = e.expireAt != 0 && e.expireAt <= nowMs
	sh.removeEntry(key, e, -1)
	if expired {
		sh.expiredKeys.Add(1)
		sh.fresh++
		sh.dirty.Add(1)
	} else {
		sh.evicted.Add(1)
	}
	return freed, expired
}

// evictPoolSize is how many candidates an EvictionPool keeps (Redis's
// EVPOOL_SIZE).
const evictPoolSize = 16

// EvictionPool is the pooled policies' memory of good candidates, as
// Redis's EvictionPoolLRU: each eviction samples a few keys of one shard
// into it (PoolFill) and takes the best it holds (Pop), so that a key seen
// in an earlier sample, of any shard, can still be the one to go. Scores
// are the policy's: idle time (LRU), 255 minus the counter (LFU), the
// nearness of the deadline (TTL). The zero value is empty; it is safe for
// concurrent use.
type EvictionPool struct {
	mu      sync.Mutex
	n       int
	entries [evictPoolSize]poolEntry // ascending score, the best last
}

type poolEntry struct {
	score uint64
	shard int
	key   []byte
}

// Clear empties the pool (the policy changed: its scores mean nothing).
func (pl *EvictionPool) Clear() {
	pl.mu.Lock()
	pl.n = 0
	pl.mu.Unlock()
}

// insert adds a candidate when the pool has room or it beats the worst,
// reusing key buffers. Requires pl.mu held.
func (pl *EvictionPool) insert(score uint64, shard int, key []byte) {
	k := 0
	for k < pl.n && pl.entries[k].score < score {
		k++
	}
	if pl.n == evictPoolSize {
		if k == 0 {
			return // worse than every candidate held
		}
		// Drop the worst: the entries before k move down one.
		buf := pl.entries[0].key
		copy(pl.entries[:k-1], pl.entries[1:k])
		pl.entries[k-1] = poolEntry{score, shard, append(buf[:0], key...)}
		return
	}
	buf := pl.entries[pl.n].key
	copy(pl.entries[k+1:pl.n+1], pl.entries[k:pl.n])
	pl.entries[k] = poolEntry{score, shard, append(buf[:0], key...)}
	pl.n++
}

// Pop takes the best candidate: its shard and its key, appended to
// buf[:0]; ok is false when the pool is empty.
func (pl *EvictionPool) Pop(buf []byte) (shard int, key []byte, ok bool) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.n == 0 {
		return 0, buf[:0], false
	}
	pl.n--
	e := &pl.entries[pl.n]
	return e.shard, append(buf[:0], e.key...), true
}

// PoolFill samples samples keys of shard i that the pooled policy p may
// take into pool, and reports false when the shard has none. A key whose
// deadline has passed scores best. Requires shard i held.
//
// The samples are consecutive entries from a random one, as Redis's
// dictGetSomeKeys takes consecutive buckets: a few cache lines instead of
// a miss per sample. Entry ids follow no order of access, so neighbours
// are as good a sample as any.
func (s *Store) PoolFill(pool *EvictionPool, i int, p EvictPolicy, samples int, nowMs int64) bool {
	if !s.Candidates(i, p) {
		return false
	}
	sh := &s.shards[i]
	vol := p.volatileOnly()
	samples = max(samples, 1)
	pool.mu.Lock()
	defer pool.mu.Unlock()
	n := sh.nextID
	id := rand.Uint32N(n)
	taken := 0
	for range min(evictProbe*samples, int(n)) {
		if e := sh.entry(id); e.used() && (!vol || e.expireAt != 0) {
			pool.insert(s.score(e, p, nowMs), i, sh.keyOf(e))
			if taken++; taken == samples {
				break
			}
		}
		if id++; id == n {
			id = 0
		}
	}
	if taken == 0 {
		// A sparse shard: the scan fell on free slots only.
		e := sh.sample(vol)
		if e == nil {
			return false
		}
		pool.insert(s.score(e, p, nowMs), i, sh.keyOf(e))
	}
	return true
}

// score is how good a candidate e is for p at nowMs: higher goes first.
func (s *Store) score(e *Entry, p EvictPolicy, nowMs int64) uint64 {
	if e.expireAt != 0 && e.expireAt <= nowMs {
		return math.MaxUint64
	}
	switch p {
	case EvictAllKeysLRU, EvictVolatileLRU:
		return uint64(idleMs(e.access, nowMs))
	case EvictAllKeysLFU, EvictVolatileLFU:
		return 255 - uint64(s.lfuCounter(e.access, nowMs))
	case EvictVolatileTTL:
		return math.MaxUint64 - 1 - uint64(e.expireAt)
	}
	return 0
}

// EvictKeyIn evicts key, a candidate Pop returned for shard i, unless it
// is gone or (for a volatile policy) lost its deadline since it was
// sampled: ok is then false, and the caller pops the next. It returns
// what EvictIn does. Requires shard i held.
func (s *Store) EvictKeyIn(i int, key []byte, p EvictPolicy, nowMs int64) (freed int64, expired, ok bool) {
	sh := &s.shards[i]
	e := sh.lookup(key)
	if e == nil || p.volatileOnly() && e.expireAt == 0 {
		return 0, false, false
	}
	freed, expired = sh.evict(key, e, nowMs)
	return freed, expired, true
}

// probe returns the first used entry (with a deadline when vol) at or
// after id, wrapping at the end, looking at up to steps ids; nil if none.
func (sh *Shard) probe(id uint32, vol bool, steps int) *Entry {
	n := sh.nextID
	for range min(steps, int(n)) {
		if e := sh.entry(id); e.used() && (!vol || e.expireAt != 0) {
			return e
		}
		if id++; id == n {
			id = 0
		}
	}
	return nil
}

// SlackHeld is Slack for a caller that holds every shard (INFO).
func (s *Store) SlackHeld() int64 {
	var n int64
	for i := range s.shards {
		n += s.shards[i].slack()
	}
	return n
}

// slack is the shard's part of Slack. Requires sh.mu held.
func (sh *Shard) slack() int64 {
	return int64(len(sh.chunks)*chunkLen-sh.count)*entryBytes + int64(sh.arenaGarbage)
}
