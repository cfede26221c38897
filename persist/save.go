package persist

// The dump file: SAVE writes it in the caller's goroutine, BGSAVE in a
// background job; both capture the shards while traffic goes on
// (capture.go). While background saves fail, writes are refused, as in
// Redis (BgsaveErr, stop-writes-on-bgsave-error).

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ratekv/ratekv/config"
)

// Save writes the dump file now, in the caller's goroutine (SAVE).
func (m *Manager) Save() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrClosing
	}
	if m.saving || m.bgsaving {
		m.mu.Unlock()
		return ErrSaveInProgress
	}
	m.saving = true
	m.mu.Unlock()
	err := m.saveDump(context.Background(), false)
	m.mu.Lock()
	m.saving = false
	m.startScheduledLocked()
	m.mu.Unlock()
	return err
}

// BGSave starts writing the dump file in the background (BGSAVE). While a
// rewrite runs it fails with ErrRewriteInProgress, or with schedule
// reports that the save will start once the rewrite is done.
func (m *Manager) BGSave(schedule bool) (scheduled bool, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.closed:
		return false, ErrClosing
	case m.saving || m.bgsaving:
		return false, ErrSaveInProgress
	case m.rewriting && schedule:
		m.bgsaveScheduled = true
		return true, nil
	case m.rewriting:
		return false, ErrRewriteInProgress
	}
	m.startBgsaveLocked()
	return false, nil
}

// startBgsaveLocked starts a BGSAVE. Requires m.mu held.
func (m *Manager) startBgsaveLocked() {
	m.bgsaving, m.bgsaveScheduled = true, false
	m.bgsaveStart = time.Now()
	m.jobs.Add(1)
	go func() {
		defer m.jobs.Done()
		err := m.saveDump(m.ctx, true)
		m.mu.Lock()
		m.bgsaving = false
		m.startScheduledLocked()
		m.mu.Unlock()
		if err != nil {
			m.logger.Error("background save failed", "file", m.dumpPath, "err", err)
		}
	}()
}

// saveDump writes the dump file and records the outcome.
func (m *Manager) saveDump(ctx context.Context, background bool) error {
	start := time.Now()
	d0 := m.store.Dirty()
	var size int64
	var err error
	for try := 0; try < attempts; try++ {
		if size, err = m.writeSnapshot(ctx, m.dumpPath, background); !errors.Is(err, errMixed) {
			break
		}
	}
	if lm := m.opts.Latency; lm != nil && err == nil && lm.LatencyOn() {
		lm.LatencyEvent("rdb-save", time.Since(start))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if background {
		m.lastBgsaveTry = time.Now()
		m.lastBgsaveOK = err == nil
		m.lastBgsaveDur = time.Since(start)
		if stopsWrites(err) {
			m.bgsaveFailed.Store(true)
		}
	}
	if err != nil {
		return err
	}
	m.bgsaveFailed.Store(false)
	m.dirtyBase = d0
	m.lastSave = time.Now()
	// Any save that succeeds shows the disk works again, as Redis's
	// rdbSave does: a SAVE after fixing it ends rdb_last_bgsave_status err
	// (and the retry delay of the save rules), a failed one changes neither.
	m.lastBgsaveOK = true
	m.saves++
	m.logger.Info("snapshot saved", "file", m.dumpPath, "bytes", size, "seconds", fmt.Sprintf("%.3f", time.Since(start).Seconds()))
	return nil
}

// stopsWrites says whether a background save's failure refuses writes
// (BgsaveErr): one of the disk's, yes; one that says nothing about the
// disk, no. A capture that overflowed, or kept meeting multi-shard writes,
// failed because of the write load (only with appendonly yes, whose log
// holds every write anyway), and refusing writes for it would turn a busy
// server into one that accepts none; a save cancelled at shutdown ends
// with the server.
func stopsWrites(err error) bool {
	return err != nil && !errors.Is(err, errCaptureOverflow) && !errors.Is(err, errMixed) &&
		!errors.Is(err, context.Canceled)
}

// ErrBgsaveFailed is BgsaveErr's error.
var ErrBgsaveFailed = errors.New("persist: the last background save failed")

// BgsaveErr returns ErrBgsaveFailed while writes are to be refused because
// snapshots cannot be written: the last background save failed, no save
// succeeded since, save rules are set and stop-writes-on-bgsave-error is
// yes, as in Redis. Otherwise nil. The dispatcher calls it before every
// write command; it is one atomic load while saves succeed.
//
// Why: with appendonly no the snapshots are all there is, so on a full
// disk every write acknowledged after the failure would be lost at the
// next restart, while the server went on as if nothing happened. A due save
// rule retries a failed BGSAVE every bgsaveRetry (cron), so writes resume
// by themselves once the disk has room again, or at once after a SAVE.
func (m *Manager) BgsaveErr() error {
	if !m.bgsaveFailed.Load() {
		return nil // inlined: the common case costs the load alone
	}
	return m.bgsaveErr()
}

func (m *Manager) bgsaveErr() error {
	if !m.cfg.Bool(config.StopWritesOnBgsaveError) || len(m.cfg.SaveRules()) == 0 {
		return nil
	}
	return ErrBgsaveFailed
}
