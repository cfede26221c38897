package shards

// Touch loads what looking up keys will read into the CPU cache, so that
// the commands of a pipeline batch, run one by one afterwards, find it
// there. The point is overlap. A lookup is a chain of dependent cache
// misses (index word, entry; for a sliding log also its reference slot,
// its header and the end of its timestamps; for a sorted set its
// reference slot, header and listpack; for a compact hash or list its
// reference slot and bytes), and a batch run one command
// at a time waits for each miss in turn. Here every step of the chain is
// one loop over all the keys: the loads of a loop do not depend on each
// other, so the CPU keeps many of them in flight at once, and the next
// loop finds their results in cache.
//
// The shards are locked once each, in ascending order, before the first
// load and unlocked after the last: a lock is a fence, and taking one per
// key would serialise the loads again. Nothing is changed; the returned
// sum only keeps the loads from being optimised away.
func (s *Store) Touch(keys [][]byte, sc *TouchScratch) uint64 {
	if len(keys) == 0 {
		return 0
	}
	sc.hash, sc.shard, sc.held = sc.hash[:0], sc.shard[:0], sc.held[:0]
	sc.entry, sc.obj, sc.zset, sc.packed = sc.entry[:0], sc.obj[:0], sc.zset[:0], sc.packed[:0]
	for _, k := range keys {
		i := s.ShardIndex(k)
		sc.hash = append(sc.hash, hashKey(k))
		sc.shard = append(sc.shard, uint32(i))
		sc.held = AddLockOrder(sc.held, i)
	}
	for _, i := range sc.held {
		s.shards[i].mu.Lock()
	}
	var sink uint64
	// Index words.
	for j, h := range sc.hash {
		if idx, _ := s.shards[sc.shard[j]].indexOf(h); len(idx) != 0 {
			sink += idx[home(len(idx), h)]
		}
	}
	// Entries: the first word of the probe whose hash matches (the entry
	// the lookup will compare first).
	for j, h := range sc.hash {
		t := &s.shards[sc.shard[j]].table
		idx, _ := t.indexOf(h)
		if len(idx) == 0 {
			continue
		}
		if w := idx[home(len(idx), h)]; w != 0 && uint32(w>>32) == h {
			e := t.entry(uint32(w) - 1)
			sink += uint64(e.meta)
			sc.entry = append(sc.entry, e)
		}
	}
	// Reference slots. A reference lives in its key's shard (Rename moves
	// it along), which Touch holds, as every reader of Object assumes.
	for _, e := range sc.entry {
		if e.form() != formRef {
			continue
		}
		r := s.ref(e)
		switch o := r.obj.(type) {
		case *SlidingLog:
			sc.obj = append(sc.obj, o)
		case *ZSet:
			sc.zset = append(sc.zset, o)
		case nil:
			if e.Kind() != KindString && len(r.str) > 0 { // a compact hash or list
				sc.packed = append(sc.packed, r.str)
			}
		}
	}
	// Compact hashes and lists: the start of their bytes, where every walk
	// begins.
	for _, b := range sc.packed {
		sink += uint64(b[0])
	}
	// Sorted sets in the compact encoding: the header, then the start of
	// the listpack, where every range walk begins.
	for _, z := range sc.zset {
		sink += uint64(len(z.lp))
	}
	for _, z := range sc.zset {
		if len(z.lp) > 0 {
			sink += uint64(z.lp[0])
		}
	}
	// Sliding logs: the header, then the end of the timestamps, where the
	// next one is appended.
	for _, l := range sc.obj {
		sink += uint64(len(l.buf))
	}
	for _, l := range sc.obj {
		if n := len(l.buf); n > 0 {
			sink += uint64(l.buf[n-1])
		}
	}
	for _, i := range sc.held {
		s.shards[i].mu.Unlock()
	}
	clear(sc.entry)
	clear(sc.obj)
	clear(sc.zset)
	clear(sc.packed)
	return sink
}

// TouchScratch is Touch's working memory, reused between calls.
type TouchScratch struct {
	hash   []uint32
	shard  []uint32
	held   []int
	entry  []*Entry
	obj    []*SlidingLog
	zset   []*ZSet
	packed [][]byte
}

// AddLockOrder adds shard index i to held, an ascending list without
// duplicates: the order in which a caller that needs several shards must
// lock them.
func AddLockOrder(held []int, i int) []int {
	j := len(held)
	for j > 0 && held[j-1] > i {
		j--
	}
	if j > 0 && held[j-1] == i {
		return held
	}
	held = append(held, 0)
	copy(held[j+1:], held[j:])
	held[j] = i
	return held
}
