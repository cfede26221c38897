package shards

import (
	"math"
	"runtime"
	"sync/atomic"
	"time"
)

// Active expiry, modelled on Redis's activeExpireCycle: each tick visits every
// shard and checks its entries for passed deadlines, expireBatch entries at a
// time in id order (entries sit in dense pointer-free chunks, so a batch is a
// sequential read of 8 KiB), continuing from where the last tick stopped.
// It moves on to the next shard when a batch found a quarter or fewer of its
// keys expired or the shard's time budget is spent; while many keys expire
// it keeps going, so 10M keys that all expire at once are reclaimed in a few
// ticks without the long pauses a single sweep would cause. The lock is held
// for one batch at a time, so a request waits at most one batch's work
// (a few microseconds).

const (
	expireBatch = 256
	expireTick  = 100 * time.Millisecond // Redis's default hz 10
	// expireTickBudget is the time all shards together may spend per tick:
	// 25%, Redis's ACTIVE_EXPIRE_CYCLE_SLOW_TIME_PERC.
	expireTickBudget = expireTick / 4
	// expireSlice is how long the cycle works before it lets the event
	// loops run a turn (see ExpireCycle). It must be well under the time
	// between two requests of one connection: a turn answers at most one
	// request per connection at pipeline 1, so with longer slices (Redis's
	// fast expire cycle runs 1 ms) each connection's next request is due
	// before the slice and the turn after it have ended, and a backlog
	// builds up for as long as a tick's budget lasts. The extra yields (a
	// pipe write and a poll each, up to 1000 a second) cost little beside
	// the tick's 25 ms of work (bench/README.md, Design notes).
	expireSlice = 250 * time.Microsecond
	// expireQuietSteps is how many entries a shard's turn may pass over in
	// batches that found few deadlines to check (see ExpireCycle): 16 of
	// the 4*expireBatch entries a batch looks at, a sequential read of
	// 512 KiB of entries. Stopping after one such batch, as after a batch
	// with few keys expired, the cursor would crawl 1024 ids per tick
	// through a shard left sparse by a mass expiry, and the keys that
	// expired behind it would be reclaimed slowly.
	expireQuietSteps = 16 * 4 * expireBatch
)

// ExpireCycle runs one active-expiry pass over every shard, spending at most
// budget per shard, and returns how many keys it deleted. nowMs is the clock
// reading the deadlines are compared with.
//
// It lets the connections run while it works: after every batch it yields
// (runtime.Gosched), or, when a yield function is set (SetYield), calls it
// after every expireSlice of work, not counting the time spent in it
// against the budget.
func (s *Store) ExpireCycle(nowMs int64, budget time.Duration) int {
	total, keys, sampledAll, capped := 0, 0, 0, false
	var ttl ttlSample
	slice := time.Now()
	for i := range s.shards {
		sh := &s.shards[i]
		start := time.Now()
		var yielded time.Duration
		for visited, quiet := 0, 0; ; {
			sh.mu.Lock()
			n := sh.nextID
			steps, sampled, expired := s.expireBatchLocked(sh, nowMs, &ttl)
			sh.mu.Unlock()
			total += expired
			sampledAll += sampled
			visited += steps
			now := time.Now()
			done := expired*4 <= sampled
			if done && steps > 0 && sampled < expireBatch/4 {
				// A batch that found few deadlines to check at all: ids
				// mostly free after a mass expiry. Passing over them is
				// cheap, and the keys that expired behind the cursor are
				// further on: go on for up to expireQuietSteps of them.
				quiet += steps
				done = quiet >= expireQuietSteps
			}
			if done || visited >= int(n) {
				break
			}
			if now.Sub(start)-yielded > budget {
				capped = true
				break
			}
			if y := s.yield.Load(); y == nil {
				// With one core (GOMAXPROCS=1) a cycle that never
				// yields would hold every request back for its whole
				// budget (a goroutine per client).
				runtime.Gosched()
			} else if now.Sub(slice) >= expireSlice {
				(*y)()
				slice = time.Now()
				yielded += slice.Sub(now)
			}
		}
		// Give back the storage of keys that are gone (expired, deleted)
		// once few are left: see table.compact.
		sh.mu.Lock()
		compacted := sh.sparse()
		if compacted {
			before := sh.storageBytes()
			sh.compact()
			sh.expireNext = 0
			sh.dropped.Add(before - sh.storageBytes())
		}
		keys += sh.count
		sh.mu.Unlock()
		// A compaction takes a millisecond or two (BenchmarkCompact),
		// and a mass expiry makes every shard sparse in the same tick:
		// without a turn between them the loops would wait for all of
		// them.
		if y := s.yield.Load(); y != nil && compacted {
			(*y)()
			slice = time.Now()
		}
	}
	s.keysApprox.Store(int64(keys))
	// INFO's expired_stale_perc and expired_time_cap_reached_count, as
	// Redis's activeExpireCycle keeps them.
	perc := 0.0
	if sampledAll > 0 {
		perc = float64(total) / float64(sampledAll)
	}
	stale := math.Float64frombits(s.expireStale.Load())
	s.expireStale.Store(math.Float64bits(perc*0.05 + stale*0.95))
	if capped {
		s.expireCapped.Add(1)
	}
	if ttl.n > 0 {
		// Redis's db->avg_ttl: a moving average of the sampled TTLs.
		avg, cur := s.avgTTL.Load(), ttl.sum/ttl.n
		if avg == 0 {
			avg = cur
		}
		s.avgTTL.Store(avg/50*49 + cur/50)
	}
	return total
}

// ttlSample sums the TTLs (ms) of the live keys an expiry cycle sampled.
type ttlSample struct{ sum, n int64 }

// AvgTTL returns the moving average of the TTLs, in ms, that the expiry
// cycles sampled (INFO keyspace's avg_ttl; 0 before any).
func (s *Store) AvgTTL() int64 { return s.avgTTL.Load() }

// expireBatchLocked checks the deadlines of up to expireBatch entries of sh
// that carry one, looking at no more than 4*expireBatch entries from
// sh.expireNext on (wrapping at the end), and deletes the expired ones.
// Requires sh.mu held.
func (s *Store) expireBatchLocked(sh *Shard, nowMs int64, ttl *ttlSample) (steps, sampled, expired int) {
	if sh.volatile == 0 || sh.nextID == 0 {
		return 0, 0, 0
	}
	id := sh.expireNext
	limit := min(int(sh.nextID), 4*expireBatch)
	for ; sampled < expireBatch && steps < limit; steps++ {
		if id >= sh.nextID {
			id = 0
		}
		e := sh.entry(id)
		id++
		if !e.used() || e.expireAt == 0 {
			continue
		}
		sampled++
		if e.expireAt <= nowMs {
			if fn := s.exp.hook.Load(); fn != nil {
				(*fn)(sh.keyOf(e))
			}
			sh.removeEntry(sh.keyOf(e), e, -1)
			expired++
		} else {
			ttl.sum += e.expireAt - nowMs
			ttl.n++
		}
	}
	sh.expireNext = id
	if expired > 0 {
		sh.expiredKeys.Add(int64(expired))
		sh.dirty.Add(int64(expired))
	}
	return steps, sampled, expired
}

// PurgeExpired deletes every key whose deadline is at or before nowMs and
// returns how many, visiting every entry of every shard. It is for the end
// of loading, before clients connect: while the log replays no key counts
// as expired (a later record may extend or remove its deadline), so the
// keys whose deadline passed while the server was down are deleted here.
// They are not counted as expired_keys, as Redis does not count the keys
// it skips while loading.
func (s *Store) PurgeExpired(nowMs int64) int {
	total := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for id := uint32(0); sh.volatile > 0 && id < sh.nextID; id++ {
			if e := sh.entry(id); e.used() && e.expireAt != 0 && e.expireAt <= nowMs {
				sh.removeEntry(sh.keyOf(e), e, -1)
				total++
			}
		}
		if sh.sparse() {
			before := sh.storageBytes()
			sh.compact()
			sh.expireNext = 0
			sh.dropped.Add(before - sh.storageBytes())
		}
		sh.mu.Unlock()
	}
	return total
}

// SetYield makes the active expiry call fn after every expireSlice of work
// (nil: runtime.Gosched after every batch). A server whose connections
// wait in event loops of its own sets a function that returns once each
// loop has run a turn.
//
// Why: runtime.Gosched puts the yielding goroutine on the global run
// queue, which the scheduler serves before it polls the network, and so
// does a short sleep (its timer is due again at once), so an event loop
// parked in the netpoller would wait for the whole cycle, and a mass
// expiry would show as tail latency. Redis alternates the same way: its
// fast expire cycle runs for at most 1 ms between two polls of its event
// loop.
func (s *Store) SetYield(fn func()) {
	if fn == nil {
		s.yield.Store(nil)
		return
	}
	s.yield.Store(&fn)
}

// Yield lets the connections run, as the active expiry does between
// slices of its work: it calls the yield function set with SetYield, or
// runtime.Gosched. For other background passes over the keyspace (a
// snapshot's capture, between shards).
func (s *Store) Yield() {
	if y := s.yield.Load(); y != nil {
		(*y)()
		return
	}
	runtime.Gosched()
}

// OnExpireCycle has f called with the duration of every background
// active-expiry pass (LATENCY's expire-cycle event).
func (s *Store) OnExpireCycle(f func(time.Duration)) { s.expireHook.Store(&f) }

// PauseExpiry stops the background active expiry while paused is true
// (CLIENT PAUSE, as Redis pauses it with the clients); keys past their
// deadline still read as absent.
func (s *Store) PauseExpiry(paused bool) { s.expireOff.Store(paused) }

// ExpiryPaused reports whether PauseExpiry paused the active expiry.
func (s *Store) ExpiryPaused() bool { return s.expireOff.Load() }

// expiryCtl is what a replicated store changes in expiry: on a primary a
// hook that sees every key deleted for its deadline, on a replica no
// deletion at all.
type expiryCtl struct {
	hook atomic.Pointer[func(key []byte)]
	keep atomic.Bool
}

// SetExpireHook makes the active expiry, and lookups that find a key past
// its deadline, call fn with the key before they delete it, with the
// key's shard held (nil: none). A primary tells its replicas (a DEL). fn
// may run on several goroutines at once.
func (s *Store) SetExpireHook(fn func(key []byte)) {
	if fn == nil {
		s.exp.hook.Store(nil)
		return
	}
	s.exp.hook.Store(&fn)
}

// KeepExpired stops (true) or resumes deleting keys for their deadline,
// by the active expiry and by lookups: a replica deletes keys only when
// its primary says so. Keys past their deadline still read as missing.
func (s *Store) KeepExpired(keep bool) { s.exp.keep.Store(keep) }

// StartExpiry starts the background active-expiry loop; Close stops it.
func (s *Store) StartExpiry() {
	if s.stopExpire != nil {
		return
	}
	s.stopExpire = make(chan struct{})
	s.expireDone = make(chan struct{})
	go func() {
		defer close(s.expireDone)
		t := time.NewTicker(expireTick)
		defer t.Stop()
		for {
			select {
			case <-s.stopExpire:
				return
			case <-t.C:
				if s.wall != nil {
					s.wall.recalibrate()
				}
				if s.expireOff.Load() || s.exp.keep.Load() {
					continue
				}
				hook := s.expireHook.Load()
				var start time.Time
				if hook != nil {
					start = time.Now()
				}
				s.ExpireCycle(s.now()/1e6, max(expireTickBudget/time.Duration(len(s.shards)), 50*time.Microsecond))
				if hook != nil {
					(*hook)(time.Since(start))
				}
			}
		}
	}()
}

// Close stops background work. The store stays readable.
func (s *Store) Close() {
	if s.stopExpire != nil {
		close(s.stopExpire)
		<-s.expireDone
		s.stopExpire = nil
	}
}
