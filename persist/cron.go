package persist

// The background loop. Once a second cron starts what is due, one job at a
// time: a BGSAVE or rewrite that was scheduled while another job ran, a
// save rule's BGSAVE, the first rewrite after appendonly was switched on,
// a rewrite that replaces a file a failed fsync may have lost records
// from, and the automatic rewrite once the file has grown past
// auto-aof-rewrite-min-size and by auto-aof-rewrite-percentage since the
// last rewrite. A failed BGSAVE is retried after bgsaveRetry, a failed
// rewrite after rewriteRetry.

import (
	"math"
	"time"

	"github.com/ratekv/ratekv/config"
)

const (
	bgsaveRetry  = 5 * time.Second  // Redis's CONFIG_BGSAVE_RETRY_DELAY
	rewriteRetry = 10 * time.Second // wait after a failed automatic rewrite
)

// Start starts the background work: the save rules and automatic
// rewrites, checked every second.
func (m *Manager) Start() {
	m.jobs.Add(1)
	go func() {
		defer m.jobs.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-m.stop:
				return
			case <-t.C:
				m.cron(time.Now())
			}
		}
	}()
}

// cron starts scheduled and due background jobs.
func (m *Manager) cron(now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	// Nothing starts while a SAVE runs either: a save rule's BGSAVE would
	// write the same temporary file at the same time, and could leave a
	// corrupt dump file after SAVE replied OK.
	if m.closed || m.bgsaving || m.rewriting || m.saving {
		return
	}
	m.startScheduledLocked()
	if m.bgsaving || m.rewriting {
		return
	}
	changes := m.store.Dirty() - m.dirtyBase
	for _, r := range m.cfg.SaveRules() {
		if changes >= r.Changes && now.Sub(m.lastSave) > saveAfter(r) &&
			(m.lastBgsaveOK || now.Sub(m.lastBgsaveTry) > bgsaveRetry) {
			m.logger.Info("save rule met, saving in the background", "changes", changes, "seconds", int64(saveAfter(r)/time.Second))
			m.startBgsaveLocked()
			return
		}
	}
	if m.aof == nil || m.saving || now.Sub(m.rewriteFailedAt) < rewriteRetry {
		return
	}
	if m.first {
		// appendonly was switched on and the first rewrite failed (or
		// has not run): try again, as Redis reschedules it.
		m.logger.Info("writing the initial append-only file (appendonly was switched on)")
		m.startRewriteLocked()
		return
	}
	if m.aof.Lost() {
		// Only a new base repairs a file a failed fsync may have lost
		// records from (see aof.go); the keyspace still holds them.
		m.logger.Warn("rewriting the append-only file: a failed fsync may have lost records from it")
		m.startRewriteLocked()
		return
	}
	perc := m.cfg.Int(config.AutoAOFRewritePercentage)
	if perc <= 0 {
		return
	}
	cur, base := m.aofSize(), max(m.rewriteBaseSize, 1)
	if cur > m.cfg.Int(config.AutoAOFRewriteMinSize) && cur*100/base-100 >= perc {
		m.logger.Info("append-only file grew past the rewrite threshold, rewriting", "size", cur, "base_size", base, "growth_percent", cur*100/base-100)
		m.startRewriteLocked()
	}
}

// saveAfter returns how long after the last save rule r is due. Seconds
// past what a Duration holds (292 years) never come due; multiplied, they
// would wrap negative and be due at once.
func saveAfter(r config.SaveRule) time.Duration {
	if r.Seconds >= math.MaxInt64/int64(time.Second) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(r.Seconds) * time.Second
}

// startScheduledLocked starts a scheduled rewrite or BGSAVE when nothing
// runs. Requires m.mu held.
func (m *Manager) startScheduledLocked() {
	if m.closed || m.bgsaving || m.rewriting {
		return
	}
	switch {
	case m.rewriteSched && m.aof != nil && !m.saving:
		m.startRewriteLocked()
	case m.bgsaveScheduled && !m.saving:
		m.startBgsaveLocked()
	}
}
