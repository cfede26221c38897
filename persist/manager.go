package persist

// The Manager ties the pieces together: it loads the data at start-up,
// owns the AOF, takes snapshots (SAVE, BGSAVE, the save rules) and
// rewrites the log (BGREWRITEAOF, auto-aof-rewrite-*). Each job has its
// file: load.go and repair.go (start-up), save.go and capture.go
// (snapshots), rewrite.go, cron.go (the background loop), aof_switch.go
// (CONFIG SET appendonly) and shutdown.go.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratekv/ratekv/config"
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
	// other errors must be returned (wrapped or not). command.Engine.Replay.
	Replay func(next func() ([][]byte, error)) (int, error)
	// Keys returns the indexes of a record's key arguments and whether it
	// touches the whole keyspace (command.RecordKeys); a record with no
	// index that does not touch the whole keyspace is left out of
	// snapshots. Nil treats every record as touching the whole keyspace.
	Keys func(args [][]byte, dst []int) ([]int, bool)
	// Resets reports whether a record empties the whole keyspace, so that
	// the records after it do not depend on what came before it
	// (command.RecordResets: FLUSHALL, FLUSHDB). Nil: no record does.
	Resets func(args [][]byte) bool
	Logger *slog.Logger
	// Latency, when set, receives the durations of the log's writes
	// (aof-write), of its fsyncs under appendfsync always
	// (aof-fsync-always) and of snapshots (rdb-save) for LATENCY
	// (command.Engine).
	Latency LatencyMonitor
}

// LatencyMonitor receives the durations of persistence events.
type LatencyMonitor interface {
	// LatencyOn reports whether events are recorded at all, so that none
	// is timed when they are not.
	LatencyOn() bool
	LatencyEvent(event string, d time.Duration)
}

// Errors of the save and rewrite requests.
var (
	ErrSaveInProgress    = errors.New("persist: a save is in progress")
	ErrRewriteInProgress = errors.New("persist: an append-only file rewrite is in progress")
	ErrAOFDisabled       = errors.New("persist: the append-only file is disabled (appendonly no)")
	ErrClosing           = errors.New("persist: shutting down")
)

// Manager is the persistence of one store. Create it with Open (the zero
// value is not usable); it is safe for concurrent use.
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
	savedAtShutdown bool  // PrepareShutdown took the final snapshot (SaveReplState)
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

func (m *Manager) manifestPath() string {
	return filepath.Join(m.aofDir, m.aofName+".manifest")
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
	Fsyncs                int64         // fsyncs of the current log
	FsyncTime             time.Duration // the time they took
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
		s.Fsyncs, s.FsyncTime = m.aof.Fsyncs()
	}
	return s
}
