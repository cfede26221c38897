package persist

// Rewriting the log.
//
// The log is a base snapshot followed by incremental files, named by the
// manifest (Redis 7's multi-part AOF). BGREWRITEAOF writes a new base
// while traffic goes on: it creates the next incremental file and adds it
// to the manifest, captures the shards as capture.go describes, then
// switches the AOF to it at an exact sequence number C, ending the capture
// at C. The base gets the captured records up to C, the new file
// everything after C, so every record is in exactly one of them. Only then does the manifest name
// the new base and new file alone, and the old files are deleted. A crash
// at any point leaves a manifest naming a complete chain.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"time"
)

// BGRewrite starts rewriting the append-only file in the background
// (BGREWRITEAOF), or schedules it while a BGSAVE runs.
func (m *Manager) BGRewrite() (scheduled bool, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.closed:
		return false, ErrClosing
	case m.aof == nil:
		return false, ErrAOFDisabled
	case m.rewriting:
		return false, ErrRewriteInProgress
	case m.bgsaving || m.saving:
		m.rewriteSched = true
		return true, nil
	}
	m.startRewriteLocked()
	return false, nil
}

// startRewriteLocked starts a BGREWRITEAOF of the current log, which
// must not be nil. Requires m.mu held.
func (m *Manager) startRewriteLocked() {
	m.rewriting, m.rewriteSched = true, false
	m.rewriteStart = time.Now()
	// The job keeps the log it started with: switching appendonly off
	// meanwhile cancels it (SetAppendOnly) and closes that log.
	aof, first := m.aof, m.first
	ctx, cancel := context.WithCancel(m.ctx)
	m.rewriteCancel = cancel
	m.jobs.Add(1)
	go func() {
		defer m.jobs.Done()
		defer cancel()
		err := m.rewrite(ctx, aof, first)
		m.mu.Lock()
		m.rewriting = false
		m.rewriteCancel = nil
		took := time.Since(m.rewriteStart)
		m.lastRewriteDur = took
		m.lastRewriteOK = err == nil
		switch {
		case err != nil && m.aof != aof:
			// Cancelled by a switch of appendonly: not a failure.
			m.lastRewriteOK = true
		case err != nil:
			m.rewriteFailedAt = time.Now()
			m.rewriteFails++
		default:
			m.rewrites++
			m.rewriteFails = 0
		}
		m.startScheduledLocked()
		m.mu.Unlock()
		if err != nil {
			m.logger.Error("append-only file rewrite failed", "err", err)
		} else {
			m.logger.Info("append-only file rewritten", "seconds", fmt.Sprintf("%.3f", took.Seconds()))
		}
	}()
}

// rewrite writes a new base of the append-only file and switches aof to a
// new incremental file; see the file comment. At start-up (aof nil) it
// creates the first base and incremental file. first says appendonly was
// switched on and aof appends to the temporary file (aof_switch.go): the
// new base and file are then named alone, replacing whatever manifest an
// earlier time with appendonly yes left.
func (m *Manager) rewrite(ctx context.Context, aof *AOF, first bool) error {
	var err error
	for try := 0; try < attempts; try++ {
		if err = m.rewriteOnce(ctx, aof, first); !errors.Is(err, errMixed) {
			return err
		}
		m.logger.Info("a multi-shard write ran during the rewrite's capture; retrying")
	}
	return err
}

func (m *Manager) rewriteOnce(ctx context.Context, aof *AOF, first bool) error {
	if first {
		// Started with appendonly no, the manager has not read the
		// manifest an earlier run may have left: its files are deleted
		// once the new one replaces it.
		if man, ok, err := readManifest(m.manifestPath()); err != nil {
			m.logger.Warn("cannot read the manifest an earlier append-only file left; it is replaced", "err", err)
		} else if ok {
			m.mu.Lock()
			m.man = man
			m.mu.Unlock()
		}
	}
	m.mu.Lock()
	old := m.man
	// A first rewrite's file is named in no manifest until it is done,
	// and the log may still switch to it after a failure: never reuse
	// a number.
	seq := max(old.maxSeq(), m.usedSeq) + 1
	m.usedSeq = seq
	m.mu.Unlock()
	baseName := fmt.Sprintf("%s.%d.base.rkv", m.aofName, seq)
	incrName := fmt.Sprintf("%s.%d.incr.aof", m.aofName, seq)
	w, err := createSnapshot(filepath.Join(m.aofDir, baseName))
	if err != nil {
		return err
	}
	if aof == nil {
		// At start-up nothing is appended meanwhile: the new files are
		// named in the manifest once both are complete, so that a crash
		// in between leaves the old manifest (or none, and the dump file
		// is loaded again).
		if _, err := m.capture(ctx, w, true, nil); err != nil {
			w.abort()
			return err
		}
		f, err := createIncr(filepath.Join(m.aofDir, incrName))
		if err != nil {
			w.abort()
			return err
		}
		f.Close()
		return m.finishRewrite(w, old, baseName, incrName, seq, nil)
	}
	// The next incremental file comes first, named in the manifest after
	// the old ones, before any record goes to it. Creating it takes two
	// fsyncs and a manifest write; made after the capture, every record
	// of that time would be captured too, and parsed into the base's
	// tail.
	// A first rewrite's new file is named in the manifest only with its
	// base: the one on disk names the files of an earlier time.
	var f *os.File
	if first {
		f, err = createIncr(filepath.Join(m.aofDir, incrName))
	} else {
		f, err = m.newIncr(old, incrName, seq)
	}
	if err != nil {
		w.abort()
		return err
	}
	c := aof.BeginCapture(captureLimit)
	// undo, before the switch, puts the old manifest back (the log still
	// appends to the old file) and removes the new file.
	undo := func(err error) error {
		aof.EndCapture(c) // if Rotate has not
		w.abort()
		f.Close()
		if first {
			os.Remove(filepath.Join(m.aofDir, incrName))
			return err
		}
		werr := writeManifest(m.manifestPath(), &old)
		if werr == nil || manifestRenamed(werr) {
			m.mu.Lock()
			m.man = old
			m.mu.Unlock()
		}
		if werr != nil {
			// Keep the file: a manifest on disk may still name it.
			m.logger.Warn("could not restore the manifest after a failed rewrite; it names an empty file, which is harmless",
				"file", incrName, "err", werr)
			return err
		}
		os.Remove(filepath.Join(m.aofDir, incrName))
		return err
	}
	t0 := time.Now()
	cuts, err := m.capture(ctx, w, true, aof)
	if err != nil {
		return undo(err)
	}
	whole := m.journaling(aof)
	t1 := time.Now()
	last, done, err := aof.Rotate(wrapped(f), incrName, 0, c)
	if err != nil {
		return undo(err)
	}
	if err := <-done; err != nil {
		// The switch happens once the disk recovers; the manifest already
		// names the new file after the old ones.
		w.abort()
		return fmt.Errorf("switching to %s: %w", incrName, err)
	}
	t2 := time.Now()
	if err := m.writeTail(w, c, cuts, whole); err != nil {
		w.abort()
		return err
	}
	m.logger.Debug("append-only file rewrite: base captured, log switched",
		"capture", t1.Sub(t0), "switch", t2.Sub(t1), "tail", time.Since(t2), "tail_bytes", len(c.data))
	if err := m.finishRewrite(w, old, baseName, incrName, seq, aof); err != nil {
		return err
	}
	aof.Rebased(last)
	if first {
		m.firstDone(aof)
	}
	return nil
}

// newIncr creates the incremental file name and writes a manifest naming
// it after the files of old.
func (m *Manager) newIncr(old manifest, name string, seq int64) (*os.File, error) {
	path := filepath.Join(m.aofDir, name)
	f, err := createIncr(path)
	if err != nil {
		return nil, err
	}
	chain := manifest{base: old.base, incrs: append(slices.Clone(old.incrs), manifestFile{name, seq})}
	if err := writeManifest(m.manifestPath(), &chain); err != nil {
		f.Close()
		if manifestRenamed(err) {
			// The manifest names the file now: keep it (empty, it is
			// harmless, and the next rewrite replaces it).
			m.mu.Lock()
			m.man = chain
			m.mu.Unlock()
		} else {
			os.Remove(path)
		}
		return nil, err
	}
	m.mu.Lock()
	m.man = chain
	m.mu.Unlock()
	return f, nil
}

// createIncr creates an empty incremental file and makes it durable.
func createIncr(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	if err := fullSync(f); err != nil {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	return f, nil
}

// finishRewrite commits the new base w, names it and incrName alone in the
// manifest and deletes the files of old. aof is the log (nil at start-up).
func (m *Manager) finishRewrite(w *snapshotWriter, old manifest, baseName, incrName string, seq int64, aof *AOF) error {
	size, err := w.commit()
	if err != nil {
		return err
	}
	final := manifest{base: &manifestFile{baseName, seq}, incrs: []manifestFile{{incrName, seq}}}
	if err := writeManifest(m.manifestPath(), &final); err != nil {
		if manifestRenamed(err) {
			// The manifest names the new base now, but a crash may bring
			// back the one naming the old files: keep them all (the next
			// start, or the next rewrite, removes those its manifest does
			// not name).
			m.mu.Lock()
			m.man = final
			m.mu.Unlock()
			return err
		}
		os.Remove(filepath.Join(m.aofDir, baseName))
		return err
	}
	m.mu.Lock()
	m.man = final
	m.mu.Unlock()
	for _, name := range old.files() {
		if !slices.Contains(final.files(), name) {
			if err := removeFile(filepath.Join(m.aofDir, name)); err != nil {
				m.logger.Warn("could not delete an old append-only file", "file", name, "err", err)
			}
		}
	}
	// And what failed rewrites kept because a crash could have brought
	// back a manifest naming it: that manifest is gone for good now. Not
	// the temporary file of a switch to appendonly yes: a log made after
	// this rewrite was cancelled may append to it (aof_switch.go).
	m.removeStale(false)
	m.mu.Lock()
	if aof != nil {
		size += aof.Size()
	}
	m.rewriteBaseSize = size
	m.mu.Unlock()
	return nil
}

// removeStale deletes leftovers of interrupted or failed rewrites:
// temporary files and log files the manifest does not name. It runs at
// start-up and after each rewrite, which is the only writer of these files
// (see finishRewrite). tempToo says the temporary file of a switch to
// appendonly yes (aof_switch.go) is one, which it is unless a log appends
// to it.
func (m *Manager) removeStale(tempToo bool) {
	ents, err := os.ReadDir(m.aofDir)
	if err != nil {
		return
	}
	pat := regexp.MustCompile(`^` + regexp.QuoteMeta(m.aofName) + `\.[0-9]+\.(base\.rkv|incr\.aof)(\.tmp)?$`)
	keep := m.man.files()
	for _, e := range ents {
		name := e.Name()
		if (pat.MatchString(name) && !slices.Contains(keep, name)) || name == m.aofName+".manifest.tmp" ||
			name == filepath.Base(m.tempIncrPath()) && tempToo {
			if err := removeFile(filepath.Join(m.aofDir, name)); err == nil {
				what := "a leftover of an interrupted or failed rewrite"
				if name == filepath.Base(m.tempIncrPath()) {
					what = "the log of the switch to appendonly yes, now in the new base"
				}
				m.logger.Info("removed "+what, "file", name)
			}
		}
	}
}

// removeStep is how much of a file removeGradually frees at a time: little
// enough that one step does not hold up the connections for long.
const removeStep = 4 << 20

// removeGradually deletes a file that may be large, for when removeFile
// cannot hand the job to a kernel worker. Unlinking a file frees all its
// blocks in one system call, and a Go thread blocked in it keeps the
// scheduler's processor: removing a rewritten log of tens of megabytes
// takes milliseconds, during which a one-core server answers nothing.
// Truncating it a few megabytes at a time, yielding in between, spreads
// the work.
func removeGradually(path string) error {
	if f, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
		if fi, err := f.Stat(); err == nil {
			for size := fi.Size() - removeStep; size > 0; size -= removeStep {
				if f.Truncate(size) != nil {
					break
				}
				runtime.Gosched()
			}
		}
		f.Close()
	}
	return os.Remove(path)
}
