package persist

// The Manager ties the pieces together: it loads the data at start-up,
// owns the AOF, takes snapshots (SAVE, BGSAVE, the save rules) and
// rewrites the log (BGREWRITEAOF, auto-aof-rewrite-*).
//
// # Snapshots without stopping traffic
//
// A snapshot captures the shards one at a time: lock shard i, encode its
// keys into a buffer, note the journal's last sequence number cut[i],
// unlock, write the buffer to the file. No shard is locked for longer than
// it takes to encode its own keys, and the file I/O happens outside every
// lock. Each shard is thus captured at its own instant; to make the whole
// snapshot a single instant, the journal copies every record appended
// while the capture runs (a Capture), and once the last shard is captured
// the snapshot gets those records whose shards were captured before them
// (seq > cut[i] for every shard i the record touches) as a block of log
// records, replayed after the keys when the snapshot is loaded. A record's
// effects on one shard are either in that shard's capture or after it,
// because records are appended while the writing command holds its shard
// locks. (A multi-key command's or a transaction's records are judged one
// by one.) A FLUSHALL that ran in the middle of the capture touches shards
// captured on both sides of it: it goes to the block with every record
// after it, whatever their shards, so that replayed after the keys it
// empties the shards captured before it, as it did, and those captured
// after it, which the records after it then fill again (Options.Resets).
// That holds only if every write before the last shard's capture was
// journaled: once appendonly is switched off during the capture, such a
// FLUSHALL is a mixed record like any other (Manager.journaling).
// Any other record that touches shards captured on both sides of it
// cannot be split, so the snapshot is retried.
// Without a journal (appendonly no) each shard is consistent in itself but
// shards are captured at instants up to the length of the pass apart.
//
// # Rewriting the log
//
// The log is a base snapshot followed by incremental files, named by the
// manifest (Redis 7's multi-part AOF). BGREWRITEAOF writes a new base
// while traffic goes on: it creates the next incremental file and adds it
// to the manifest, captures as above, then switches the journal to it at
// an exact sequence number C, ending the capture at C. The base
// gets the captured records up to C, the new file everything after C, so
// every record is in exactly one of them. Only then does the manifest name
// the new base and new file alone, and the old files are deleted. A crash
// at any point leaves a manifest naming a complete chain.
//
// # Loading
//
// At start-up the manifest's base is loaded, then its incremental files
// are replayed in order through the command table. Keys whose absolute
// deadline has passed are skipped. A torn tail of the last file that holds
// records (a record cut short by a crash; files after it can only be
// empty) is truncated with a log line when aof-load-truncated is yes (the
// default, as in Redis). Any other damage
// refuses to start, naming the file and offset, unless aof-load-corrupt is
// truncate: the file is then cut there (the rest kept beside it as
// <file>.corrupt) and later files are set aside. With appendonly no, the
// dump file is loaded if there is one.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/journal"
	"github.com/ratekv/ratekv/shards"
)

// Options configure Open.
type Options struct {
	// Config supplies dir, appendonly, appendfsync, appendfilename,
	// appenddirname, dbfilename, save, auto-aof-rewrite-percentage,
	// auto-aof-rewrite-min-size, aof-load-truncated and aof-load-corrupt;
	// Open registers the change hook of appendfsync on it.
	Config *config.Config
	Store  *shards.Store
	// Replay runs log records through the command table, in order, and
	// returns how many it ran; next returns io.EOF at the end, and its
	// other errors must be returned (wrapped or not). server.Server.Replay.
	Replay func(next func() ([][]byte, error)) (int, error)
	// Keys returns the indexes of a record's key arguments and whether it
	// touches the whole keyspace (server.RecordKeys). Nil treats every
	// record as touching the whole keyspace.
	Keys func(args [][]byte, dst []int) ([]int, bool)
	// Resets reports whether a record empties the whole keyspace, so that
	// the records after it do not depend on what came before it
	// (server.RecordResets: FLUSHALL, FLUSHDB). Nil: no record does.
	Resets func(args [][]byte) bool
	Logger *slog.Logger
}

// Errors of the save and rewrite requests.
var (
	ErrSaveInProgress    = errors.New("persist: a save is in progress")
	ErrRewriteInProgress = errors.New("persist: an append-only file rewrite is in progress")
	ErrAOFDisabled       = errors.New("persist: the append-only file is disabled (appendonly no)")
	ErrClosing           = errors.New("persist: shutting down")
	errMixed             = errors.New("persist: a multi-shard write ran in the middle of the capture")
)

const (
	captureLimit = 512 << 20        // bytes of records a snapshot may capture
	bgsaveRetry  = 5 * time.Second  // Redis's CONFIG_BGSAVE_RETRY_DELAY
	rewriteRetry = 10 * time.Second // wait after a failed automatic rewrite
	attempts     = 3                // captures tried before giving up on errMixed
)

// Manager is the persistence of one store. Create it with Open; it is safe
// for concurrent use.
type Manager struct {
	cfg    *config.Config
	store  *shards.Store
	opts   Options
	logger *slog.Logger

	dumpPath string
	aofDir   string
	aofName  string

	// switchMu serializes the switches of appendonly (SetAppendOnly),
	// from the first step to the last (closing a log included).
	switchMu sync.Mutex

	ctx    context.Context
	cancel context.CancelFunc
	stop   chan struct{}
	jobs   sync.WaitGroup

	// bgsaveFailed is set while the last background save failed (and no
	// save succeeded since): for BgsaveErr, on every write command.
	bgsaveFailed atomic.Bool

	mu              sync.Mutex // guards everything below; rewrites (one at a time) change man
	aof             *AOF       // nil with appendonly no
	first           bool       // log appends to the temporary file until the first rewrite (see aof_switch.go)
	rewriteCancel   context.CancelFunc
	usedSeq         int64 // the highest file number a rewrite has used
	man             manifest
	closed          bool
	saving          bool // SAVE running
	bgsaving        bool // BGSAVE running
	rewriting       bool
	bgsaveScheduled bool
	rewriteSched    bool
	dirtyBase       int64
	lastSave        time.Time
	lastBgsaveOK    bool
	lastBgsaveTry   time.Time
	lastBgsaveDur   time.Duration
	bgsaveStart     time.Time
	saves           int64
	lastRewriteOK   bool
	lastRewriteDur  time.Duration
	rewriteStart    time.Time
	rewriteFailedAt time.Time
	rewrites        int64
	rewriteFails    int64
	rewriteBaseSize int64 // aof size right after the last rewrite
	loadedKeys      int64
	loadedExpired   int64
	replayed        int64 // log records run at start-up
}

// Open loads the persisted data into opts.Store (which must be empty) and
// opens the append-only log when appendonly is yes. Call Start to begin
// the background work, and Close at shutdown.
func Open(opts Options) (*Manager, error) {
	cfg := opts.Config
	m := &Manager{
		cfg:           cfg,
		store:         opts.Store,
		opts:          opts,
		logger:        opts.Logger,
		stop:          make(chan struct{}),
		lastSave:      time.Now(),
		lastBgsaveOK:  true,
		lastRewriteOK: true,
	}
	if m.logger == nil {
		m.logger = slog.New(slog.DiscardHandler)
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	dir := cfg.String(config.Dir)
	m.dumpPath = filepath.Join(dir, cfg.String(config.DBFilename))
	m.aofDir = filepath.Join(dir, cfg.String(config.AppendDirname))
	m.aofName = cfg.String(config.AppendFilename)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	os.Remove(m.dumpPath + ".tmp")
	os.Remove(m.tempIncrPath()) // a switch to appendonly yes that a crash interrupted
	start := time.Now()
	var err error
	if cfg.Bool(config.AppendOnly) {
		err = m.loadOrCreateAOF()
	} else if _, serr := os.Stat(m.dumpPath); serr == nil {
		err = m.loadSnapshotFile(m.dumpPath)
	}
	if err != nil {
		if m.aof != nil {
			m.aof.Close()
		}
		return nil, err
	}
	m.purgeExpired()
	m.store.ResetDirty()
	cfg.OnChange(config.AppendFsync, m.applyFsync)
	m.logger.Info("data loaded", "snapshot_keys", m.loadedKeys, "expired_skipped", m.loadedExpired,
		"log_records", m.replayed, "seconds", fmt.Sprintf("%.3f", time.Since(start).Seconds()),
		"fsync", fsyncMethod())
	return m, nil
}

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
			// Damaged (ratekv always names one): before this check
			// removeStale took every file of the log for a leftover of
			// a rewrite and deleted it, and the start then refused.
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
	m.rewriteBaseSize = m.aofSize()
	return nil
}

// purgeExpired deletes the loaded keys whose deadline has passed. Loading
// keeps them until the end, because a later record may extend or remove a
// deadline (see server.Replay); deleting them before the server answers
// anyone is what keeps them from being resurrected.
func (m *Manager) purgeExpired() {
	m.loadedExpired += int64(m.store.PurgeExpired(m.store.Now() / 1e6))
}

func (m *Manager) manifestPath() string {
	return filepath.Join(m.aofDir, m.aofName+".manifest")
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

// loadAOF loads the manifest's base and replays its incremental files.
func (m *Manager) loadAOF() error {
	if b := m.man.base; b != nil {
		if err := m.loadSnapshotFile(filepath.Join(m.aofDir, b.name)); err != nil {
			return m.missing(b.name, err)
		}
	}
	// The log ends in the last file that holds records: a rewrite names
	// the next file in the manifest before the journal switches to it,
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
		// the snapshot may have extended or removed it (see server.Replay).
		// purgeExpired deletes the rest once everything is loaded.
		key: func(key []byte, exp int64, v *shards.Value) error {
			i := store.ShardIndex(key)
			store.Lock(i)
			store.Restore(key, v, exp, 0)
			store.Unlock(i)
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

// replayFile replays incremental file i of the manifest. A torn tail of
// the last file and, with aof-load-corrupt truncate, corruption anywhere
// are cut off; anything else is an error that names the file and offset.
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
			// The zeros written ahead under always: the log goes on
			// right after its last record.
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

// repairStep, when set (tests), is called after each step of a repair
// and stops it with the error it returns, as a crash there would.
var repairStep func(step string) error

// repair cuts incremental file i at off, keeping the cut part in aside,
// and sets the files after it aside (aof-load-corrupt truncate). The steps
// go in an order that a crash between any two leaves a directory that the
// next start, with the same flag, loads as if the repair had finished,
// with every byte it set aside kept:
//
//  1. the corrupt part is copied to aside (the file is still whole);
//  2. each later file is copied to its aside name;
//  3. the manifest stops naming the later files: from here on no start
//     replays them, even if what follows does not happen (a start deletes
//     log files that no manifest names; their copies remain);
//  4. file i is cut at off;
//  5. the later files' own names are removed.
//
// Before (cut, rename the later files, then the manifest), a crash after
// the cut replayed the later files on top of the cut one at the next
// start, a state that never was, and a crash after a rename made the next
// start refuse, naming the file it had moved.
func (m *Manager) repair(i int, path string, off int64, aside string) error {
	step := func(name string) error {
		if repairStep != nil {
			return repairStep(name)
		}
		return nil
	}
	if err := copyTail(path, off, aside); err != nil {
		return err
	}
	if err := step("copied"); err != nil {
		return err
	}
	later := slices.Clone(m.man.incrs[i+1:])
	if len(later) > 0 {
		for _, f := range later {
			p := filepath.Join(m.aofDir, f.name)
			to := asideName(p + ".corrupt-later")
			// A copy, not a second link: removing a log file cuts it
			// down first (removeGradually), which a link would share.
			if err := copyTail(p, 0, to); err != nil {
				return err
			}
			m.logger.Warn("set aside an append-only file that followed the corruption", "file", p, "copied_to", to)
		}
		if err := step("copied later"); err != nil {
			return err
		}
		cut := m.man
		cut.incrs = slices.Clone(m.man.incrs[:i+1])
		if err := writeManifest(m.manifestPath(), &cut); err != nil {
			if manifestRenamed(err) {
				m.man = cut
			}
			return err
		}
		m.man = cut
		if err := step("manifest"); err != nil {
			return err
		}
	}
	if err := truncateFile(path, off); err != nil {
		return err
	}
	if err := step("truncated"); err != nil {
		return err
	}
	for _, f := range later {
		if err := removeFile(filepath.Join(m.aofDir, f.name)); err != nil {
			return err
		}
	}
	return nil
}

// asideName returns name, or else name-2, name-3, …: the first that no
// file has. What a repair sets aside is never overwritten by a later one:
// once files are set aside their numbers are used again (the next rewrite
// numbers on from the manifest), so the same name can be set aside twice,
// and two repairs can run within a second.
func asideName(name string) string {
	try := name
	for i := 2; ; i++ {
		if _, err := os.Lstat(try); err != nil {
			return try // free (or unreadable: the rename or create says why)
		}
		try = fmt.Sprintf("%s-%d", name, i)
	}
}

// recordsEnd returns where the records of a log file of the given size end:
// after its last byte that is not zero. Under appendfsync always the writer
// keeps zeros written ahead of its data (AOF.prezero), and a record never
// ends in a zero (its last byte is the '\n' of a CRLF), so what follows is
// free space, not a torn tail (which the reader would warn about, and
// refuse with aof-load-truncated no). A torn record may lose its zero bytes
// at the end; it is torn either way. Zeros followed by more records are not
// skipped: the reader finds them corrupt, with their offset.
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

// truncateFile cuts path at off and fsyncs it.
func truncateFile(path string, off int64) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(off); err != nil {
		return err
	}
	if err := fullSync(f); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// copyTail copies what follows off in the file at path to a new file,
// aside, and makes it durable.
func copyTail(path string, off int64, aside string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	a, err := os.OpenFile(aside, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(a, io.NewSectionReader(f, off, 1<<62))
	if err == nil {
		err = fullSync(a)
	}
	if cerr := a.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(filepath.Dir(aside))
	}
	if err != nil {
		return fmt.Errorf("setting aside %s from offset %d as %s: %w", path, off, aside, err)
	}
	return nil
}

// AOF returns the append-only file, to attach to the command layer as its
// journal, or nil with appendonly no.
func (m *Manager) AOF() *AOF {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.aof
}

// applyFsync is the change hook of appendfsync: the log follows it.
func (m *Manager) applyFsync(string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.aof != nil {
		m.aof.SetPolicy(m.cfg.Fsync())
	}
}

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
	// Nothing starts while a SAVE runs either: a save rule's BGSAVE wrote
	// the same temporary file at the same time (a corrupt dump.rkv in 2
	// of 3 runs of a review's test, once after SAVE had replied OK).
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
		// records from (see log.go); the keyspace still holds them.
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
// wrapped negative and were due at once.
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

// writeSnapshot writes a snapshot of the store to path.
func (m *Manager) writeSnapshot(ctx context.Context, path string, background bool) (int64, error) {
	w, err := createSnapshot(path)
	if err != nil {
		return 0, err
	}
	// The log as the save starts: appendonly may be switched meanwhile
	// (a log switched off ends the capture's records there, and the
	// shards captured later are each consistent in themselves).
	m.mu.Lock()
	aof := m.aof
	m.mu.Unlock()
	var c *Capture
	if aof != nil {
		c = aof.BeginCapture(captureLimit)
	}
	cuts, err := m.capture(ctx, w, background, aof)
	if c != nil {
		whole := m.journaling(aof)
		if _, cerr := aof.EndCapture(c); err == nil {
			err = cerr
		}
		if err == nil {
			err = m.writeTail(w, c, cuts, whole)
		}
	}
	if err != nil {
		w.abort()
		return 0, err
	}
	return w.commit()
}

// capture writes the keys of every shard to w, one shard at a time under
// its lock, and returns the last sequence number of aof (nil: none) at the
// capture of each shard. background says it runs beside the connections
// (not SAVE's, on a connection's own goroutine or event loop).
//
// Keys whose deadline has passed are written too, as Redis writes them to
// an RDB file; loading deletes them (purgeExpired). Left out by the
// capture's own reading of the clock, a key a later write still found live
// was missing under that write's record in the log: a command reads the
// clock before it locks its shard, and the wall clock's recalibration can
// move it back, so its reading may be older than the capture's. Replayed
// without the key, a ZADD recreated it without its deadline and an EXPIRE
// found nothing, and the key was lost.
func (m *Manager) capture(ctx context.Context, w *snapshotWriter, background bool, aof *AOF) ([]uint64, error) {
	st := m.store
	cuts := make([]uint64, st.NumShards())
	var buf []byte
	for i := range cuts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var n int
		st.Lock(i)
		buf, n = st.AppendShard(buf[:0], i, 0) // live at 0: every key
		if aof != nil {
			cuts[i] = aof.LastSeq()
		}
		st.Unlock(i)
		if n > 0 {
			if err := w.block(blockKeys, buf, n); err != nil {
				return nil, err
			}
		}
		if cap(buf) > 16<<20 {
			buf = nil
		}
		// Let the connections run between shards: with one core
		// (GOMAXPROCS=1) the pass otherwise runs until the scheduler
		// preempts it, 10 ms at a time, and every request waits. Only
		// in the background: SAVE runs on an event loop, which
		// Store.Yield would wait for.
		if background {
			st.Yield()
		} else {
			runtime.Gosched()
		}
	}
	return cuts, nil
}

// journaling reports whether aof is still the log that every write is
// journaled to, once a capture on it has taken its last shard. stopAOF
// clears m.log before it detaches the log from the server, so true means
// that every write to a shard before that shard's capture is in aof.
func (m *Manager) journaling(aof *AOF) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.aof == aof
}

// writeTail writes the captured records that came after the capture of
// every shard they touch, as a log-record block; see the file comment.
// whole says every write before the capture of the last shard is in c
// (the log was not switched off meanwhile, see journaling): only then may
// a reset that ran in the middle of the capture go to the tail with every
// record after it, since the records after it must rebuild every shard
// captured after it. Otherwise it is a mixed record like any other.
func (m *Manager) writeTail(w *snapshotWriter, c *Capture, cuts []uint64, whole bool) error {
	var keep []byte
	n := 0
	var args [][]byte
	var idx []int
	st := m.store
	// A reset (FLUSHALL) between the captures of two shards: from it on,
	// every record goes to the tail (see the file comment).
	reset := false
	err := c.each(func(seq uint64, rec []byte) error {
		// One append may hold several records (a transaction's, between
		// MULTI and EXEC), each judged on its own: a record of a shard
		// captured after it goes to the tail, one captured before is in
		// the base already.
		for rest := rec; len(rest) > 0; {
			var err error
			var size int
			args, size, err = journal.ParseRecord(rest, args)
			if err == nil && size == 0 {
				err = errors.New("incomplete record")
			}
			if err != nil {
				return fmt.Errorf("persist: captured record %d: %w", seq, err)
			}
			one := rest[:size]
			rest = rest[size:]
			if journal.IsMarker(args, "MULTI") || journal.IsMarker(args, "EXEC") {
				continue // the base is written whole: no torn tail to guard against
			}
			if reset {
				keep = append(keep, one...)
				n++
				continue
			}
			all := true
			if m.opts.Keys != nil {
				idx, all = m.opts.Keys(args, idx[:0])
				all = all || len(idx) == 0
			}
			before, after := false, false
			if all {
				for _, cut := range cuts {
					before, after = before || seq <= cut, after || seq > cut
				}
			} else {
				for _, k := range idx {
					cut := cuts[st.ShardIndex(args[k])]
					before, after = before || seq <= cut, after || seq > cut
				}
			}
			switch {
			case before && after && whole && m.opts.Resets != nil && m.opts.Resets(args):
				reset = true
				keep = append(keep, one...)
				n++
			case before && after:
				return errMixed
			case after:
				keep = append(keep, one...)
				n++
			}
		}
		return nil
	})
	if err != nil || n == 0 {
		return err
	}
	return w.block(blockRecords, keep, n)
}

// rewrite writes a new base of the append-only log aof and switches aof to a
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
	// fsyncs and a manifest write (50-75 ms here under load); made after
	// the capture, every record of that time was captured too, and parsed
	// into the base's tail (3.6-4.8 MB per rewrite with CL.THROTTLE at
	// pipeline 32).
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

// removeStep is how much of a file removeGradually frees at a time: about
// a millisecond of ext4's work here.
const removeStep = 4 << 20

// removeGradually deletes a file that may be large, for when removeFile
// cannot hand the job to a kernel worker. Unlinking a file frees all its
// blocks in one system call, and a Go thread blocked in it keeps the
// scheduler's processor: removing a rewritten 64 MB log took 13 ms, during
// which a one-core server answered nothing (p99.9 latency under everysec:
// 20 ms with rewrites, 10 without). Truncating it a few megabytes at a
// time, yielding in between, spreads the work.
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

// aofSize returns the size of the files of the append-only log: base,
// incremental files, and the one the log appends to by the size of its
// records, written or buffered (on disk it is longer by the space
// allocated ahead, AOF.reserve). During a rewrite the manifest already
// names the next file while the log still appends to the one before it.
// Requires m.mu held.
func (m *Manager) aofSize() int64 {
	var cur string
	var n int64
	if m.aof != nil {
		cur, n = m.aof.Current()
	}
	for _, name := range m.man.files() {
		if name == cur {
			continue
		}
		if st, err := os.Stat(filepath.Join(m.aofDir, name)); err == nil {
			n += st.Size()
		}
	}
	return n
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
// disk every write acknowledged after the failure was lost at the next
// restart, while the server went on as if nothing happened. A due save
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

// LastSave returns the Unix time of the last successful save (LASTSAVE);
// the start time until the first.
func (m *Manager) LastSave() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lastSave.Unix()
}

// Stats are the figures INFO persistence reports.
type Stats struct {
	ChangesSinceSave      int64
	LastSave              int64 // Unix seconds
	BgsaveInProgress      bool
	LastBgsaveOK          bool
	LastBgsaveSeconds     int64 // -1: none yet
	CurrentBgsaveSeconds  int64 // -1: none running
	Saves                 int64
	LoadedKeys            int64
	LoadedExpired         int64
	AOFEnabled            bool
	RewriteInProgress     bool
	RewriteScheduled      bool
	LastRewriteSeconds    int64 // -1: none yet
	CurrentRewriteSeconds int64 // -1: none running
	LastRewriteOK         bool
	Rewrites              int64
	RewriteFailures       int64 // consecutive
	WriteErr              error // the log's unrecovered write error
	AOFCurrentSize        int64
	AOFBaseSize           int64
	AOFBuffer             int64
	Fsync                 string
}

// Stats returns the current figures.
func (m *Manager) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	s := Stats{
		ChangesSinceSave:      m.store.Dirty() - m.dirtyBase,
		LastSave:              m.lastSave.Unix(),
		BgsaveInProgress:      m.bgsaving,
		LastBgsaveOK:          m.lastBgsaveOK,
		LastBgsaveSeconds:     -1,
		CurrentBgsaveSeconds:  -1,
		Saves:                 m.saves,
		LoadedKeys:            m.loadedKeys,
		LoadedExpired:         m.loadedExpired,
		AOFEnabled:            m.aof != nil,
		RewriteInProgress:     m.rewriting,
		RewriteScheduled:      m.rewriteSched || m.first && !m.rewriting,
		LastRewriteSeconds:    -1,
		CurrentRewriteSeconds: -1,
		LastRewriteOK:         m.lastRewriteOK,
		Rewrites:              m.rewrites,
		RewriteFailures:       m.rewriteFails,
	}
	if !m.lastBgsaveTry.IsZero() {
		s.LastBgsaveSeconds = int64(m.lastBgsaveDur.Round(time.Second) / time.Second)
	}
	if m.bgsaving {
		s.CurrentBgsaveSeconds = int64(now.Sub(m.bgsaveStart) / time.Second)
	}
	if m.rewrites > 0 || m.rewriteFails > 0 {
		s.LastRewriteSeconds = int64(m.lastRewriteDur.Round(time.Second) / time.Second)
	}
	if m.rewriting {
		s.CurrentRewriteSeconds = int64(now.Sub(m.rewriteStart) / time.Second)
	}
	if m.aof != nil {
		s.WriteErr = m.aof.Err()
		s.AOFCurrentSize = m.aofSize()
		s.AOFBaseSize = m.rewriteBaseSize
		s.AOFBuffer = int64(m.aof.Buffered())
		s.Fsync = m.aof.Policy().String()
	}
	return s
}

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
// with FORCE once its RDB file is saved; checked before, it skipped the
// snapshot and every write since the last one was lost.
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
