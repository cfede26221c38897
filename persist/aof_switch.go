package persist

// Switching appendonly while running (CONFIG SET appendonly), as Redis 7.0
// does it (aof.c startAppendOnly and stopAppendOnly, config.c
// updateAppendonly).
//
// Switched on, the log starts at once, appending to a temporary file
// (temp-<appendfilename>.incr) that no manifest names, and a rewrite is
// started (or scheduled, while a save or an earlier rewrite runs): it
// captures the keyspace as BGREWRITEAOF does, switches the log to a new
// incremental file at the capture's cut, and only then writes a manifest
// naming the new base and that file alone, replacing the one an earlier
// time with appendonly yes may have left (whose files it deletes, with the
// temporary file). Until then the log is no copy of the data (Redis's
// AOF_WAIT_REWRITE): a crash loses what the dump file, or that earlier
// manifest, does not hold, and a shutdown is refused (ErrFirstRewrite). A
// first rewrite that fails is retried by the cron.
//
// Every write applied after the switch is in the capture or in the log:
// a write command loads the journal after it has locked its shards
// (Hooks.Attach), and the capture locks each shard after the log was
// attached. So once the first rewrite is done, every write acknowledged
// after CONFIG SET returned is in the base or the new incremental file.
//
// Switched off, the log is detached (writes are no longer journaled, and
// its errors no longer refuse writes), the commands that loaded it before
// run to the end of their append (Hooks.Drain), a rewrite in progress is
// cancelled, and the log is closed: written and fsynced whatever
// appendfsync says, its files left on disk. Replies that waited for its
// records get the outcome of that last write: sent once durable, the
// connection closed without them when it failed.
//
// Switches are serialized (switchMu), from the first step to the last.

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/ratekv/ratekv/config"
)

// Hooks connect a switch of appendonly to the command layer that journals
// the writes (package command).
type Hooks struct {
	// Attach makes every write command that locks its shards from now on
	// log to aof, or to nothing when aof is nil.
	Attach func(aof *AOF)
	// Drain returns once no command that loaded the journal before
	// Attach(nil) is still appending to it.
	Drain func()
}

// ErrFirstRewrite is PrepareShutdown's error while the initial
// append-only file is written.
var ErrFirstRewrite = errors.New("persist: writing the initial append-only file (appendonly was switched on); shut down once INFO shows no rewrite scheduled or in progress, or with FORCE")

// tempIncrPath is the file the log appends to between a switch to
// appendonly yes and the end of the first rewrite.
func (m *Manager) tempIncrPath() string { return filepath.Join(m.aofDir, "temp-"+m.aofName+".incr") }

// AppendOnly reports whether the append-only log is on (also while its
// first rewrite is pending).
func (m *Manager) AppendOnly() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.aof != nil
}

// SetAppendOnly switches the append-only log on or off (see the file
// comment) and sets the appendonly parameter to match. Switching to the
// current state does nothing. Switching on fails, leaving it off, when
// the log's directory or temporary file cannot be created, or once the
// manager is closed. It may wait for an fsync; the caller must hold no
// shard lock (h.Drain locks them all).
func (m *Manager) SetAppendOnly(on bool, h Hooks) error {
	m.switchMu.Lock()
	defer m.switchMu.Unlock()
	if on {
		if err := m.startAOF(h); err != nil {
			return err
		}
		m.cfg.Set(config.AppendOnly.Name(), "yes")
		return nil
	}
	m.stopAOF(h)
	m.cfg.Set(config.AppendOnly.Name(), "no")
	return nil
}

func (m *Manager) startAOF(h Hooks) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.closed:
		return ErrClosing
	case m.aof != nil:
		return nil
	}
	if err := os.MkdirAll(m.aofDir, 0o755); err != nil {
		return err
	}
	path := m.tempIncrPath()
	f, err := createIncr(path)
	if err != nil {
		return err
	}
	aof := openAOF(wrapped(f), filepath.Base(path), 0, m.cfg.Fsync(), m.logger)
	aof.latency = m.opts.Latency
	m.aof, m.first = aof, true
	m.rewriteBaseSize = 0
	h.Attach(aof)
	if m.rewriting || m.bgsaving || m.saving {
		// A rewrite being cancelled, or a save: once it ends.
		m.rewriteSched = true
		m.logger.Info("appendonly switched on; the initial append-only file is written once the job in progress ends")
	} else {
		m.startRewriteLocked()
		m.logger.Info("appendonly switched on; writing the initial append-only file in the background")
	}
	return nil
}

func (m *Manager) stopAOF(h Hooks) {
	m.mu.Lock()
	aof, first := m.aof, m.first
	if aof == nil {
		m.mu.Unlock()
		return
	}
	m.aof, m.first, m.rewriteSched = nil, false, false
	if m.rewriteCancel != nil {
		m.rewriteCancel() // a rewrite that switched files already ends with a valid chain
	}
	m.mu.Unlock()
	h.Attach(nil)
	h.Drain()
	if err := aof.Close(); err != nil {
		m.logger.Warn("appendonly switched off; the last records could not be written to the append-only file", "err", err)
	} else {
		m.logger.Info("appendonly switched off; the append-only file is flushed, fsynced and closed")
	}
	if first {
		os.Remove(m.tempIncrPath()) // no manifest names it
	}
}

// firstDone ends the wait for the first rewrite after a switch to
// appendonly yes, once it named its files in the manifest, unless aof was
// switched off meanwhile.
func (m *Manager) firstDone(aof *AOF) {
	m.switchMu.Lock()
	defer m.switchMu.Unlock()
	m.mu.Lock()
	same := m.aof == aof
	if same {
		m.first = false
	}
	m.mu.Unlock()
	if same {
		// The log left the temporary file when it switched files; a
		// failed earlier try may have left a file no manifest names.
		m.removeStale(true)
		m.logger.Info("the initial append-only file is written; appendonly is on")
	}
}
