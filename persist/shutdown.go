package persist

// Shutting down. PrepareShutdown persists everything while the manager
// still runs, so that the server can go on serving when that fails, as
// Redis does when its final save fails; CloseSave then stops the
// background work, takes the final snapshot SaveMode asks for and closes
// the AOF.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// Close stops the background work (a running BGSAVE or rewrite is
// abandoned unless it is already switching files), takes a final snapshot
// when save rules are set (as Redis does at shutdown), and writes, fsyncs
// and closes the log. Call it after the server stopped serving.
func (m *Manager) Close() error { return m.CloseSave(SaveAsConfigured) }

// SaveMode says whether closing takes a final snapshot (SHUTDOWN's
// SAVE/NOSAVE).
type SaveMode int

// Save modes for CloseSave.
const (
	// SaveAsConfigured saves when the save rules are set, as Redis does on
	// a plain SHUTDOWN or SIGTERM.
	SaveAsConfigured SaveMode = iota
	// SaveNever skips the final snapshot (SHUTDOWN NOSAVE); the log is
	// still flushed and fsynced.
	SaveNever
	// SaveAlways saves even without save rules (SHUTDOWN SAVE).
	SaveAlways
)

// PrepareShutdown persists everything before a shutdown while the
// manager keeps running: it waits for a BGSAVE in progress, takes the
// final snapshot per mode, and writes and fsyncs the log. The server is
// paused meanwhile (nothing writes), so on success CloseSave(SaveNever)
// after the server stopped has nothing left to save; on failure the
// server goes on, as Redis does when its final save fails.
//
// While the initial append-only file is written (appendonly was switched
// on and its first rewrite has not completed) it fails with
// ErrFirstRewrite, as Redis refuses to exit then: the log is no copy of
// the data yet. It does so after the final snapshot, which SHUTDOWN FORCE
// (exiting on that error) needs, as Redis exits from AOF_WAIT_REWRITE
// with FORCE once its RDB file is saved; checked before it, FORCE would
// skip the snapshot and lose every write since the last one.
func (m *Manager) PrepareShutdown(mode SaveMode) error {
	if m.finalSave(mode) {
		m.mu.Lock()
		for m.bgsaving || m.saving {
			// Its capture may predate the last writes; Redis kills its
			// child here, ours finishes in moments.
			m.mu.Unlock()
			time.Sleep(10 * time.Millisecond)
			m.mu.Lock()
		}
		if m.closed {
			m.mu.Unlock()
			return ErrClosing
		}
		m.saving = true
		m.mu.Unlock()
		m.logger.Info("saving the final snapshot before exiting", "file", m.dumpPath)
		err := m.saveDump(context.Background(), false)
		m.mu.Lock()
		m.saving = false
		m.savedAtShutdown = err == nil
		m.mu.Unlock()
		if err != nil {
			return fmt.Errorf("final snapshot: %w", err)
		}
	}
	m.mu.Lock()
	aof, first := m.aof, m.first
	m.mu.Unlock()
	if first {
		return ErrFirstRewrite
	}
	if aof != nil {
		if err := aof.Flush(); err != nil {
			return fmt.Errorf("append-only file: %w", err)
		}
	}
	return nil
}

// finalSave reports whether a shutdown with mode takes a snapshot.
func (m *Manager) finalSave(mode SaveMode) bool {
	switch mode {
	case SaveNever:
		return false
	case SaveAlways:
		return true
	}
	return len(m.cfg.SaveRules()) > 0
}

// CloseSave is Close with an explicit choice about the final snapshot.
func (m *Manager) CloseSave(mode SaveMode) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrClosing
	}
	m.closed = true
	m.mu.Unlock()
	close(m.stop)
	m.cancel()
	m.jobs.Wait()
	var errs []error
	if m.finalSave(mode) {
		m.logger.Info("saving the final snapshot before exiting", "file", m.dumpPath)
		if err := m.saveDump(context.Background(), false); err != nil {
			errs = append(errs, fmt.Errorf("final snapshot: %w", err))
		}
	}
	// Taken, so that a switch of appendonly after this finds none to close.
	m.mu.Lock()
	aof, first := m.aof, m.first
	m.aof, m.first = nil, false
	m.mu.Unlock()
	if aof != nil {
		if err := aof.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing the append-only file: %w", err))
		} else {
			m.logger.Info("append-only file flushed and fsynced")
		}
		if first {
			os.Remove(m.tempIncrPath()) // no manifest names it
		}
	}
	return errors.Join(errs...)
}
