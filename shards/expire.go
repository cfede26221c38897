package shards

import "time"

// Active expiry, modelled on Redis's activeExpireCycle: each tick visits every
// shard, samples up to expireSample keys that carry a deadline, deletes the
// expired ones and repeats while more than a quarter of the sample had
// expired, until the per-shard budget is spent. The lock is held for one
// sample at a time, so a request waits at most one sample's work.

const (
	expireSample      = 20
	expireTick        = 100 * time.Millisecond // Redis's default hz 10
	expireShardBudget = time.Millisecond
)

// ExpireCycle runs one active-expiry pass over every shard, spending at most
// budget per shard, and returns how many keys it deleted. nowMs is the clock
// reading the deadlines are compared with.
func (s *Store) ExpireCycle(nowMs int64, budget time.Duration) int {
	total := 0
	for i := range s.shards {
		sh := &s.shards[i]
		start := time.Now()
		for {
			sh.mu.Lock()
			sampled, expired := s.expireSampleLocked(sh, nowMs)
			sh.mu.Unlock()
			total += expired
			if sampled == 0 || expired*4 <= sampled || time.Since(start) > budget {
				break
			}
		}
	}
	return total
}

// expireSampleLocked checks up to expireSample volatile keys of sh and deletes
// the expired ones. Go's map iteration starts at a random position, which
// gives the random sample. Requires sh.mu held.
func (s *Store) expireSampleLocked(sh *Shard, nowMs int64) (sampled, expired int) {
	for k := range sh.volatile {
		if sampled == expireSample {
			break
		}
		sampled++
		e := sh.data[k]
		if e == nil { // cannot happen: volatile mirrors the map
			delete(sh.volatile, k)
			continue
		}
		if e.expireAt <= nowMs {
			sh.remove(e)
			expired++
		}
	}
	if expired > 0 {
		sh.expiredKeys.Add(int64(expired))
		sh.dirty.Add(int64(expired))
	}
	return sampled, expired
}

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
				s.ExpireCycle(s.now()/1e6, expireShardBudget)
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
