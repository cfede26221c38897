package shards

import (
	"math/rand/v2"
	"unsafe"
)

// Memory accounting and eviction.
//
// The store counts its live bytes (Live): for every key its Entry, the
// bytes of a key kept in the arena, and for a value kept by reference its
// slot and the capacity of a long string. The counter changes with every
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
// Eviction takes one key at a time from one shard (EvictIn), as Redis's
// performEvictions does from one database: it samples a few keys and
// deletes the one the policy picks. The caller picks the shard, and locks
// only that one.

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

// The eviction policies that need no per-key metadata.
const (
	EvictNone           EvictPolicy = iota
	EvictAllKeysRandom              // any key, at random
	EvictVolatileRandom             // a key with a deadline, at random
	EvictVolatileTTL                // the key with the nearest deadline among the sampled ones
)

// volatileOnly reports whether p only takes keys that have a deadline.
func (p EvictPolicy) volatileOnly() bool { return p == EvictVolatileRandom || p == EvictVolatileTTL }

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

// EvictIn deletes one key of shard i that policy p picks among samples
// sampled keys, as Redis's performEvictions picks one: a random key (the
// random policies look at one), or the nearest deadline among the sample
// (volatile-ttl). The volatile policies never take a key without a
// deadline. A sampled key whose deadline has passed is taken first, and
// counted as expired rather than evicted.
//
// It returns the key, appended to buf[:0], and the bytes it held in Live;
// ok is false when the shard has no key p may take. The deletion counts as
// a change for WATCH. Requires shard i held.
func (s *Store) EvictIn(i int, p EvictPolicy, samples int, nowMs int64, buf []byte) (key []byte, freed int64, expired, ok bool) {
	sh := &s.shards[i]
	if !s.Candidates(i, p) {
		return buf[:0], 0, false, false
	}
	vol := p.volatileOnly()
	if p != EvictVolatileTTL {
		samples = 1
	}
	var best *Entry
	for range max(samples, 1) {
		e := sh.probe(rand.Uint32N(sh.nextID), vol, evictProbe)
		if e == nil {
			continue
		}
		if e.expireAt != 0 && e.expireAt <= nowMs {
			best = e
			break
		}
		if best == nil || p == EvictVolatileTTL && e.expireAt < best.expireAt {
			best = e
		}
	}
	if best == nil { // a sparse shard: every probe fell on free slots
		best = sh.probe(rand.Uint32N(sh.nextID), vol, int(sh.nextID))
	}
	if best == nil {
		return buf[:0], 0, false, false
	}
	key = append(buf[:0], sh.keyOf(best)...)
	freed = keyBytes(len(key))
	if best.form() == formRef {
		freed += refBytes + int64(cap(sh.refs[uint32(best.num)].str))
	}
	expired = best.expireAt != 0 && best.expireAt <= nowMs
	sh.removeEntry(key, best, -1)
	if expired {
		sh.expiredKeys.Add(1)
		sh.fresh++
		sh.dirty.Add(1)
	} else {
		sh.evicted.Add(1)
	}
	return key, freed, expired, true
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
