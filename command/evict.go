package command

import (
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/journal"
	"github.com/ratekv/ratekv/shards"
)

// The memory limit (maxmemory) and eviction, as Redis's evict.c.
//
// used_memory is what the process has mapped from the operating system and
// not returned, by the Go runtime's own accounting (runtime/metrics: heap
// objects, free heap not yet returned, stacks, the runtime's metadata).
// Reading it costs microseconds, so a sampler reads it every
// memSampleEvery while a limit is set, never a command; between two
// readings it is corrected by the store's own count of its live bytes
// (shards.Store.Live, one atomic load), so that a burst of new keys is
// seen at once.
//
// Not all of that memory is in use. A deleted key's slot and arena bytes
// wait for the next key (shards.Store.Slack); the Go heap keeps freed pages
// for its next allocations; what deleted keys held, and the buffers of the
// log and the replies, are garbage until the collector runs; the log's
// buffers are the log's. Counted, they would make each eviction look as if
// it had freed nothing, and the next reading would evict again until every
// key was gone. They are mem_not_counted_for_evict (Redis leaves its AOF
// buffer out the same way), and the limit applies to the rest: the heap
// the last collection found live, less the store's slack and the log's
// buffers, plus what is not heap, with the store's live bytes brought up
// to now (see sample).
//
// What keeps the reusable memory from growing the process's RSS is the Go
// memory limit (GoMemoryLimit, applied by main's memory.go): maxmemory plus
// a margin, so that the runtime collects and returns pages before the
// garbage between two collections takes the process far past maxmemory.
//
// Before a command that may use more memory (denyoom) runs or is queued,
// and before its shards are locked, performEvictions deletes keys until
// the count is under the limit, one shard locked at a time, each key
// journaled as a DEL (the log replays the same keyspace). It stops after
// its time budget (maxmemory-eviction-tenacity) and leaves the rest to a
// background job, as Redis's evictionTimeProc, so that one command never
// stalls the server; the command then runs. When the policy forbids
// eviction or nothing is left that it may take, denyoom commands are
// refused with -OOM; reads and deletes go on.

// memSampleEvery is how often the sampler reads the runtime's memory.
const memSampleEvery = 5 * time.Millisecond

// Results of performEvictions, as Redis's EVICT_OK, EVICT_RUNNING and
// EVICT_FAIL.
const (
	evictOK      = iota // under the limit
	evictRunning        // over it, and the background job evicts
	evictFail           // over it, and nothing may be evicted
)

// memState is the Engine's memory accounting and eviction state. The zero
// value is "no limit"; it is safe for concurrent use.
type memState struct {
	maxmemory atomic.Int64
	policy    atomic.Uint32 // shards.EvictPolicy; EvictNone for noeviction
	samples   atomic.Int64
	tenacity  atomic.Int64

	// The last reading (see sample).
	overhead   atomic.Int64 // used for eviction minus the store's live bytes
	mapped     atomic.Int64 // used_memory at the reading
	liveAt     atomic.Int64 // the store's live bytes at the reading
	notCounted atomic.Int64 // mem_not_counted_for_evict at the reading

	goLimit atomic.Int64 // see GoMemoryLimit

	bgRunning atomic.Bool         // the background eviction job runs
	pool      shards.EvictionPool // the pooled policies' candidates

	mu   sync.Mutex    // guards stop
	stop chan struct{} // closes the sampler; nil when it does not run

	// The sampler's own (sample), guarded by sampleMu: a sampler being
	// stopped may still be taking its last reading when the next starts.
	sampleMu        sync.Mutex
	sampled         bool
	gcs             uint64 // collections completed at the last reading
	liveGC, slackGC int64  // the store's live bytes and slack after the last collection
}

// evictPolicies maps maxmemory-policy's values to the store's policies;
// config refuses any other.
var evictPolicies = map[string]shards.EvictPolicy{
	"noeviction":      shards.EvictNone,
	"allkeys-random":  shards.EvictAllKeysRandom,
	"volatile-random": shards.EvictVolatileRandom,
	"volatile-ttl":    shards.EvictVolatileTTL,
	"allkeys-lru":     shards.EvictAllKeysLRU,
	"volatile-lru":    shards.EvictVolatileLRU,
	"allkeys-lfu":     shards.EvictAllKeysLFU,
	"volatile-lfu":    shards.EvictVolatileLFU,
}

// watchMemory keeps the memory parameters' copies current, and runs the
// sampler while a limit is set.
func (e *Engine) watchMemory() {
	m, cfg := &e.mem, e.cfg
	// The LRU and LFU policies have every access recorded in the key's
	// entry, the others nothing; the pool's candidates were scored for
	// the policy before.
	policy := func() {
		p := evictPolicies[cfg.String(config.MaxMemoryPolicy)]
		e.store.SetAccess(p.Access(), cfg.Int(config.LFULogFactor), cfg.Int(config.LFUDecayTime))
		m.policy.Store(uint32(p))
		m.pool.Clear()
	}
	for _, w := range []struct {
		key   config.Key
		apply func()
	}{
		{config.MaxMemoryPolicy, policy},
		{config.LFULogFactor, policy},
		{config.LFUDecayTime, policy},
		{config.MaxMemorySamples, func() { m.samples.Store(cfg.Int(config.MaxMemorySamples)) }},
		{config.MaxMemoryEvictionTenacity, func() { m.tenacity.Store(cfg.Int(config.MaxMemoryEvictionTenacity)) }},
		{config.MaxMemory, func() {
			limit := cfg.Int(config.MaxMemory)
			m.maxmemory.Store(limit)
			if limit > 0 {
				e.startSampler() // takes a reading at once
			}
			if limit == 0 {
				e.stopSampler()
				m.goLimit.Store(0) // the Go runtime's own limit again
			}
		}},
	} {
		w.apply()
		cfg.OnChange(w.key, func(string) { w.apply() })
	}
}

// startSampler takes a reading and starts the sampler, if it does not run.
// The reading follows a collection: what the last one found live is the
// base of every reading (see sample), and the store may have grown since
// it, or been filled without one.
func (e *Engine) startSampler() {
	m := &e.mem
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stop != nil {
		return
	}
	stop := make(chan struct{})
	m.stop = stop
	runtime.GC()
	e.sample()
	go func() {
		t := time.NewTicker(memSampleEvery)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if e.host != nil && e.host.Closing() {
					return
				}
				e.sample()
			}
		}
	}()
}

// stopSampler stops the sampler, if it runs.
func (e *Engine) stopSampler() {
	m := &e.mem
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stop != nil {
		close(m.stop)
		m.stop = nil
	}
}

// memReading is one reading of the runtime's memory.
type memReading struct {
	mapped   int64  // mapped and not returned: used_memory
	heapFree int64  // free heap pages not returned
	objects  int64  // heap objects, live or not yet collected
	heapLive int64  // heap objects the last collection found live
	gcs      uint64 // collections completed
}

var memMetrics = []string{
	"/memory/classes/total:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/objects:bytes",
	"/gc/heap/live:bytes",
	"/gc/cycles/total:gc-cycles",
}

// readMemory reads the runtime's memory accounting.
func readMemory() memReading {
	s := make([]metrics.Sample, len(memMetrics))
	for i, n := range memMetrics {
		s[i].Name = n
	}
	metrics.Read(s)
	r := memReading{
		mapped:   int64(s[0].Value.Uint64() - s[1].Value.Uint64()),
		heapFree: int64(s[2].Value.Uint64()),
		objects:  int64(s[3].Value.Uint64()),
		heapLive: int64(s[4].Value.Uint64()),
		gcs:      s[5].Value.Uint64(),
	}
	if r.gcs == 0 { // no collection yet: count every object
		r.heapLive = r.objects
	}
	return r
}

// sample takes a reading (see the file comment). Only the sampler calls it
// (and startSampler, before the sampler starts); the caller holds no
// shard.
//
// The memory used for eviction is what is not heap (stacks, the
// runtime's metadata), plus what the last collection found live on the
// heap, less the store's live bytes and slack then, and the append-only
// file's buffers and the replication stream past its backlog now, plus
// the store's live bytes now. So the garbage made
// since (replies' buffers, the values of deleted keys) does not count,
// nor does the free heap; the Go memory limit (GoMemoryLimit) makes the
// runtime collect it before it grows the process much past maxmemory.
func (e *Engine) sample() {
	m, st := &e.mem, e.store
	m.sampleMu.Lock()
	defer m.sampleMu.Unlock()
	r := readMemory()
	if r.gcs != m.gcs || !m.sampled {
		// The store as the collection saw it (a few ms later).
		m.gcs, m.sampled = r.gcs, true
		m.liveGC, m.slackGC = st.Live(), st.Slack()
	}
	live := st.Live()
	overhead := r.mapped - r.heapFree - r.objects + r.heapLive - m.liveGC - m.slackGC
	if jr := e.jr.Load(); jr != nil && jr.memory != nil {
		overhead -= jr.memory.Memory()
	}
	overhead -= e.repl.outputMemory()
	m.mapped.Store(r.mapped)
	m.liveAt.Store(live)
	m.notCounted.Store(max(r.mapped-overhead-live, 0))
	m.overhead.Store(overhead)
	if limit := m.maxmemory.Load(); limit > 0 {
		// Room for the garbage between two collections, and never under
		// what is live (a collection running back to back would not free
		// anything).
		m.goLimit.Store(max(limit, r.mapped-r.heapFree-r.objects+r.heapLive) + max(limit/16, 4<<20))
	} else {
		m.goLimit.Store(0)
	}
}

// GoMemoryLimit is the memory limit the Go runtime should keep to while
// maxmemory is set, 0 otherwise; main's memory.go applies it. It is past
// maxmemory by a margin for the garbage the runtime lets grow between two
// collections.
func (e *Engine) GoMemoryLimit() int64 { return e.mem.goLimit.Load() }

// usedMemory returns used_memory and mem_not_counted_for_evict: the last
// reading corrected by the store's live bytes since.
func (e *Engine) usedMemory() (used, notCounted int64) {
	m := &e.mem
	return max(m.mapped.Load()+e.store.Live()-m.liveAt.Load(), 0), m.notCounted.Load()
}

// toFree returns how many bytes are over maxmemory (0: none, or no limit).
func (e *Engine) toFree() int64 {
	m := &e.mem
	limit := m.maxmemory.Load()
	if limit == 0 {
		return 0
	}
	return max(m.overhead.Load()+e.store.Live()-limit, 0)
}

// evictionTimeLimit is Redis's evictionTimeLimitUs: 50 µs per step of
// tenacity up to 10, then 15% more per step, and no limit at 100.
func evictionTimeLimit(tenacity int64) time.Duration {
	switch {
	case tenacity <= 10:
		return time.Duration(50*tenacity) * time.Microsecond
	case tenacity < 100:
		return time.Duration(500*math.Pow(1.15, float64(tenacity-10))) * time.Microsecond
	}
	return time.Duration(math.MaxInt64)
}

// performEvictions evicts keys until the memory used is under maxmemory,
// for at most the tenacity's time, and says how it went (evictOK,
// evictRunning, evictFail); when time runs out the background job goes on.
// c is the client whose command waits for it, so that its reply waits for
// the DELs' journal too. The caller holds no shard.
func (e *Engine) performEvictions(c *Client) int {
	if e.repl.replica.Load() {
		return evictOK // a replica's keyspace is its primary's (Redis's replica-ignore-maxmemory yes)
	}
	r := e.evictSlice(c, evictionTimeLimit(e.mem.tenacity.Load()), &c.evictBuf)
	if r == evictRunning {
		e.startEvictionJob()
	}
	return r
}

// evictSlice evicts keys until the memory used is under maxmemory, or for
// about limit (the clock is read every 16 keys, as in Redis); see
// performEvictions. c may be nil (the background job). buf is reused for
// the keys and their records.
func (e *Engine) evictSlice(c *Client, limit time.Duration, buf *[]byte) int {
	if e.toFree() == 0 {
		return evictOK
	}
	p := shards.EvictPolicy(e.mem.policy.Load())
	if p == shards.EvictNone {
		return evictFail
	}
	start := time.Now()
	defer func() { e.LatencyEvent("eviction-cycle", time.Since(start)) }()
	for keys := 1; e.toFree() > 0; keys++ {
		var ok bool
		if *buf, ok = e.evictOne(c, p, *buf); !ok {
			return evictFail
		}
		if keys%16 == 0 && time.Since(start) > limit {
			return evictRunning
		}
	}
	return evictOK
}

// evictOne evicts one key that policy p may take and journals it as a
// DEL: a random one from the first shard that has one, starting from a
// random shard, or for the pooled policies (LRU, LFU, TTL) the best
// candidate in the pool once a few keys of such a shard were sampled into
// it. It reports false when no shard has such a key. buf is reused for
// the key and the record.
func (e *Engine) evictOne(c *Client, p shards.EvictPolicy, buf []byte) ([]byte, bool) {
	st := e.store
	n := st.NumShards()
	first := rand.IntN(n)
	samples := int(e.mem.samples.Load())
	nowMs := st.Now() / 1e6
	for j := range n {
		i := (first + j) % n
		st.Lock(i)
		if !p.Pooled() {
			var ok bool
			if buf, _, _, ok = st.EvictIn(i, p, nowMs, buf); ok {
				buf = e.journalEviction(c, buf)
			}
			st.Unlock(i)
			if ok {
				return buf, true
			}
			continue
		}
		filled := st.PoolFill(&e.mem.pool, i, p, samples, nowMs)
		st.Unlock(i)
		if !filled {
			continue
		}
		// The best candidates first; those gone since they were
		// sampled (Redis's ghosts) are skipped.
		for {
			sh, key, ok := e.mem.pool.Pop(buf)
			buf = key
			if !ok {
				break
			}
			st.Lock(sh)
			if _, _, ok = st.EvictKeyIn(sh, key, p, nowMs); ok {
				buf = e.journalEviction(c, key)
			}
			st.Unlock(sh)
			if ok {
				return buf, true
			}
		}
	}
	return buf, false
}

// journalEviction appends key's DEL to the journal, with key's shard held
// as writes are journaled (journal.go), and returns the buffer to reuse.
// c, when not nil, is the client whose batch settles the record.
func (e *Engine) journalEviction(c *Client, key []byte) []byte {
	jr := e.jr.Load()
	if jr == nil {
		return key[:0]
	}
	rec := journal.AppendCommand(key[len(key):], bDEL, key)
	if c != nil {
		c.appendTo(jr, rec)
	} else {
		jr.j.Append(rec)
	}
	return rec[:0]
}

// startEvictionJob starts the background eviction job, if it does not run:
// it evicts in slices of the tenacity's time, letting the connections run
// between them (shards.Store.Yield), until the memory is under the limit
// or nothing is left to evict.
func (e *Engine) startEvictionJob() {
	m := &e.mem
	if !m.bgRunning.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer m.bgRunning.Store(false)
		var buf []byte
		for {
			if e.host != nil && e.host.Closing() {
				return
			}
			if e.evictSlice(nil, max(evictionTimeLimit(m.tenacity.Load()), 100*time.Microsecond), &buf) != evictRunning {
				return
			}
			e.store.Yield()
		}
	}()
}

// oomRefused runs the memory check of Redis's processCommand before cmd
// runs or is queued: when over maxmemory it evicts, and it refuses a
// command that may use more memory (denyoom, or EXEC of a transaction
// holding one) when nothing could be evicted, and then also any command
// but EXEC, DISCARD, QUIT and RESET inside MULTI (a queue grows too). It
// writes the refusal and reports whether it refused. The caller holds no
// shard.
func (c *Client) oomRefused(cmd *Command) bool {
	exec := cmd.Name == "exec" && c.tx.active
	refuse := cmd.Flags&FlagDenyOOM != 0 || exec && c.tx.denyOOM()
	if c.tx.active && !exec && cmd.Name != "discard" && cmd.Name != "quit" && cmd.Name != "reset" {
		refuse = true
	}
	if c.tx.active && cmd.Flags&FlagNoMulti != 0 {
		refuse = false // refused as no_multi, before the memory check
	}
	if !refuse || c.eng.performEvictions(c) != evictFail {
		return false
	}
	cmd.rejected.Add(1)
	if exec {
		// As Redis's rejectCommand: EXEC refused is execCommandAbort.
		c.tx.reset()
		c.unwatchAll()
		c.WriteError(errExecAbortBecause + errOOM)
		return true
	}
	c.flagTx()
	c.WriteError(errOOM)
	return true
}
