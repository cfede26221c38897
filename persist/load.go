package persist

// Loading.
//
// At start-up the manifest's base is loaded, then its incremental files
// are replayed in order through the command table; without a manifest the
// dump file is loaded and a new log is created from it. Keys whose
// deadline has passed are loaded too, since a later record may extend or
// remove the deadline, and deleted once everything is loaded
// (purgeExpired). A torn tail of the last file that holds records (a
// record cut short by a crash; files after it can only be empty) is
// truncated with a log line when aof-load-truncated is yes (the default,
// as in Redis). Any other damage refuses to start, naming the file and
// offset, unless aof-load-corrupt is truncate: the file is then cut there
// (the rest kept beside it as <file>.corrupt-<time>) and later files are
// set aside (repair.go). With appendonly no, the dump file is loaded if
// there is one.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/journal"
	"github.com/ratekv/ratekv/shards"
)

// loadOrCreateAOF loads the append-only file (or creates it from the dump
// file, or empty) and opens its last incremental file for appending.
func (m *Manager) loadOrCreateAOF() error {
	if err := os.MkdirAll(m.aofDir, 0o755); err != nil {
		return err
	}
	manPath := m.manifestPath()
	man, ok, err := readManifest(manPath)
	if err != nil {
		return err
	}
	if ok {
		if len(man.incrs) == 0 {
			// Damaged (ratekv always names one). Refused before
			// removeStale, which would take every file of the log for
			// a leftover of a rewrite and delete it.
			return fmt.Errorf("%s names no incremental file, so it is damaged: restore it (from a backup, or by naming the base and the incremental files of %s in it), or, to start from the dump file instead, move %s away",
				manPath, m.aofDir, m.aofDir)
		}
		m.man = man
		m.removeStale(true)
		if err := m.loadAOF(); err != nil {
			return err
		}
	} else {
		if _, err := os.Stat(m.dumpPath); err == nil {
			if err := m.loadSnapshotFile(m.dumpPath); err != nil {
				return err
			}
		}
		m.removeStale(true)
		m.purgeExpired()
		// Create the log: a base holding what was loaded, and an empty
		// incremental file.
		if err := m.rewrite(m.ctx, nil, false); err != nil {
			return fmt.Errorf("creating the append-only file: %w", err)
		}
	}
	last := m.man.incrs[len(m.man.incrs)-1].name
	f, err := os.OpenFile(filepath.Join(m.aofDir, last), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	m.aof = openAOF(wrapped(f), last, st.Size(), m.cfg.Fsync(), m.logger)
	m.aof.latency = m.opts.Latency
	m.rewriteBaseSize = m.aofSize()
	return nil
}

// purgeExpired deletes the loaded keys whose deadline has passed. Loading
// keeps them until the end, because a later record may extend or remove a
// deadline (see command.Engine.Replay); deleting them before the server
// answers anyone is what keeps them from being resurrected.
func (m *Manager) purgeExpired() {
	m.loadedExpired += int64(m.store.PurgeExpired(m.store.Now() / 1e6))
}

// loadAOF loads the manifest's base and replays its incremental files.
func (m *Manager) loadAOF() error {
	if b := m.man.base; b != nil {
		if err := m.loadSnapshotFile(filepath.Join(m.aofDir, b.name)); err != nil {
			return m.missing(b.name, err)
		}
	}
	// The log ends in the last file that holds records: a rewrite names
	// the next file in the manifest before the AOF switches to it,
	// so a crash in between leaves the tail, torn or not, in the file
	// before an empty one.
	end := 0
	for i := len(m.man.incrs) - 1; i > 0; i-- {
		has, err := holdsRecords(filepath.Join(m.aofDir, m.man.incrs[i].name))
		if err != nil {
			return m.missing(m.man.incrs[i].name, err)
		}
		if has {
			end = i
			break
		}
	}
	for i := 0; i < len(m.man.incrs); i++ {
		if err := m.replayFile(i, i >= end); err != nil {
			return err
		}
	}
	return nil
}

// missing explains err when it says that name, a file the manifest
// names, does not exist: the log cannot be loaded without it (its records,
// and every later one, build on it), and the operator decides what to do.
// Any other error is returned as it is.
func (m *Manager) missing(name string, err error) error {
	if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return fmt.Errorf("%s names %s, which does not exist: restore it (from a backup), or, to start from the dump file instead, move %s away (with appendonly yes ratekv then creates a new log from the dump file): %w",
		m.manifestPath(), name, m.aofDir, err)
}

// holdsRecords says whether a log file holds anything but zeros.
func holdsRecords(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	end, _, err := fileRecordsEnd(f)
	return end > 0, err
}

// fileRecordsEnd returns where the records of a log file end (recordsEnd)
// and the file's size.
func fileRecordsEnd(f *os.File) (end, size int64, err error) {
	st, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	end, err = recordsEnd(f, st.Size())
	return end, st.Size(), err
}

// loadSnapshotFile loads a snapshot into the store.
func (m *Manager) loadSnapshotFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	store := m.store
	h := snapshotHandler{
		// Keys whose deadline has passed are loaded too: a record after
		// the snapshot may have extended or removed it (see
		// command.Engine.Replay).
		// purgeExpired deletes the rest once everything is loaded.
		key: func(key []byte, exp int64, v *shards.Value) error {
			restoreKey(store, key, exp, v)
			m.loadedKeys++
			return nil
		},
		records: func(data []byte, n int) error {
			n, err := m.opts.Replay(recordsOf(data))
			m.replayed += int64(n)
			if err != nil {
				return fmt.Errorf("%s: replaying its log records: %w", path, err)
			}
			return nil
		},
	}
	if _, err := loadSnapshot(f, path, st.Size(), h); err != nil {
		var ce *CorruptError
		if errors.As(err, &ce) {
			return fmt.Errorf("%w; refusing to start (move the file away to start without it)", err)
		}
		return err
	}
	return nil
}

// restoreKey puts a snapshot's key into store, its shard locked.
func restoreKey(store *shards.Store, key []byte, exp int64, v *shards.Value) {
	i := store.ShardIndex(key)
	store.Lock(i)
	store.Restore(key, v, exp, 0)
	store.Unlock(i)
}

// replayFile replays incremental file i of the manifest. A torn tail of
// the last file (with aof-load-truncated yes) and, with aof-load-corrupt
// truncate, corruption anywhere are cut off; anything else is an error
// that names the file and offset.
func (m *Manager) replayFile(i int, last bool) error {
	name := m.man.incrs[i].name
	path := filepath.Join(m.aofDir, name)
	f, err := os.Open(path)
	if err != nil {
		return m.missing(name, err)
	}
	defer f.Close()
	size, fileSize, err := fileRecordsEnd(f)
	if err != nil {
		return err
	}
	tr := journal.NewTxReader(journal.NewReader(io.LimitReader(f, size), path, size))
	n, err := m.opts.Replay(tr.Read)
	at := tr.At()
	m.replayed += int64(n)
	var torn *TornError
	var corrupt *CorruptError
	switch {
	case err == nil:
		m.logger.Debug("replayed append-only file", "file", name, "records", n)
		if size < fileSize {
			// Zeros written or allocated ahead (AOF.prezero,
			// AOF.reserve): the log goes on right after its last
			// record.
			return truncateFile(path, size)
		}
		return nil
	case errors.As(err, &torn) && last && m.cfg.Bool(config.AOFLoadTruncated):
		m.logger.Warn("the append-only file ends with an incomplete record (torn write after a crash); truncating it",
			"file", path, "offset", torn.Offset, "bytes_dropped", torn.Size-torn.Offset, "records_loaded", n)
		return truncateFile(path, torn.Offset)
	case errors.As(err, &torn) && last:
		return fmt.Errorf("%w; refusing to start: restart with --aof-load-truncated yes to truncate the file there", err)
	case errors.As(err, &torn):
		corrupt = &CorruptError{File: torn.File, Offset: torn.Offset, Size: torn.Size, Reason: "incomplete record in a file that is not the last one"}
	case errors.As(err, &corrupt):
	default:
		return fmt.Errorf("%s: record at offset %d: %w", path, at, err)
	}
	if m.cfg.String(config.AOFLoadCorrupt) != "truncate" {
		return fmt.Errorf("%w; refusing to start: restart with --aof-load-corrupt truncate to keep the %d bytes before offset %d and move the rest aside (later append-only files too)",
			corrupt, corrupt.Offset, corrupt.Offset)
	}
	aside := asideName(fmt.Sprintf("%s.corrupt-%d", path, time.Now().Unix()))
	m.logger.Warn("the append-only file is corrupt; truncating it as aof-load-corrupt allows",
		"file", path, "offset", corrupt.Offset, "reason", corrupt.Reason, "bytes_moved_to", aside, "records_loaded", n)
	return m.repair(i, path, corrupt.Offset, aside)
}

// recordsEnd returns where the records of a log file of the given size end:
// after its last byte that is not zero. The writer keeps space written or
// allocated ahead of its data, which reads as zeros (AOF.prezero,
// AOF.reserve), and a record never ends in a zero (its last byte is the
// '\n' of a CRLF), so what follows is free space, not a torn tail (which
// the reader would warn about, and refuse with aof-load-truncated no). A
// torn record may lose its zero bytes at the end; it is torn either way.
// Zeros followed by more records are not skipped: the reader finds them
// corrupt, with their offset.
func recordsEnd(f io.ReaderAt, size int64) (int64, error) {
	var buf [64 << 10]byte
	end := size
	for end > 0 {
		n := min(int64(len(buf)), end)
		if _, err := f.ReadAt(buf[:n], end-n); err != nil {
			return 0, err
		}
		for i := n - 1; i >= 0; i-- {
			if buf[i] != 0 {
				return end - n + i + 1, nil
			}
		}
		end -= n
	}
	return 0, nil
}
