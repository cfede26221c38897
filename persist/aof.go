package persist

// The append-only file (AOF): the writer of the log that the command layer
// hands its effect records to (it implements command.Journal).
//
// Append runs with shard locks held, so it only copies the record into an
// in-memory buffer under the log's mutex and numbers it; it never touches
// the disk. One writer goroutine owns the file: it takes the whole buffer,
// writes it with one pwrite and, per appendfsync, fsyncs:
//
//   - always: after every write. Sync(seq) waits until seq is fsynced;
//     everyone who waits while an fsync is running is served by the next
//     one (group commit), so the cost is one fsync per batch of batches.
//     The writer keeps zeros written ahead of the data (prezero), so that
//     an fsync need not make a new file size durable; a file may therefore
//     end in zeros, which the loader skips (recordsEnd).
//   - everysec: Sync hands the records to the writer and returns; the
//     writer writes them at once and fsyncs once a second, so a crash of
//     the machine loses at most about a second of acknowledged writes, and
//     a crash of the process (kill -9) only what was not yet written,
//     typically nothing.
//   - no: written at once, fsynced by the kernel when it likes.
//
// With everysec and no the writer allocates the file's space ahead of the
// data, a few megabytes at a time (reserve), which makes each write
// cheaper; so a file may end in zeros under every policy. A clean Close
// and a switch to a new file cut them off (trim).
//
// A failed write or fsync is never ignored. The error is logged and made
// sticky: Err returns it, and the dispatcher refuses writes (MISCONF)
// while reads go on. The writer keeps the unwritten bytes, and the bytes
// written since the last good fsync (after a failed fsync the kernel may
// have dropped them), and retries once a second, rewriting from the last
// durable offset; when a write and an fsync succeed again the error is
// cleared. With always, Sync keeps waiting through the outage: no reply
// leaves before its write is durable. (An event loop calls SyncOrFailing,
// which returns instead, and waits in Sync on another goroutine, so that
// the loop's other clients go on meanwhile.)
//
// The copy is complete under always and everysec: while an fsync runs,
// writes from Sync's callers stop once it holds maxKept bytes, so that a
// slow disk slows writers down instead of growing it. It is missing only
// for bytes written under no (before a CONFIG SET to always or everysec).
// An fsync that fails while it is missing leaves the file with records
// that may be gone and cannot be written again, and a later fsync that
// succeeds proves nothing (Linux reports a writeback error once). The log
// then stays refusing writes, the records waiting under always get
// ErrLost instead of a durable answer, and the manager rewrites the
// append-only file from the keyspace, which holds them all; Rebased, once
// the new base is named in the manifest, ends the state.
//
// For snapshots the log can also copy every appended record into a
// Capture, and switch to a new file at an exact sequence number (Rotate);
// see capture.go and rewrite.go for how snapshots and rewrites use them.

import (
	"errors"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratekv/ratekv/config"
)

// Policy is the appendfsync setting, as package config parses it.
type Policy = config.FsyncPolicy

// The appendfsync policies.
const (
	FsyncEverysec = config.FsyncEverysec
	FsyncAlways   = config.FsyncAlways
	FsyncNo       = config.FsyncNo
)

// ErrClosed is returned by Sync once the log is closed.
var ErrClosed = errors.New("persist: log closed")

// ErrFailing is returned by SyncOrFailing under always while a write or
// fsync error keeps the records from the disk: they are not durable yet,
// and Sync would wait until they are.
var ErrFailing = errors.New("persist: the append-only file cannot be written; the records wait for the disk to recover")

// ErrLost is returned by Sync under always for records a failed fsync may
// have lost from the file (see the file comment): they are applied, but
// not durable until a rewrite of the append-only file holds them.
var ErrLost = errors.New("persist: a failed fsync may have lost these records from the append-only file; they are durable again once it is rewritten")

// aofFile is what an AOF writes to: an *os.File, or a fault-injecting fake
// in tests.
type aofFile interface {
	WriteAt(p []byte, off int64) (int, error)
	Sync() error
	Close() error
}

// wrapFile, when a test sets it, wraps every file a Manager's log writes
// to (fault injection). It is nil in production.
var wrapFile func(aofFile) aofFile

// osFile is an *os.File whose Sync is fdatasync (on Linux).
type osFile struct{ *os.File }

func (f osFile) Sync() error { return datasync(f.File) }

// wrapped returns what the log writes to for an open file.
func wrapped(f *os.File) aofFile {
	var lf aofFile = osFile{f}
	if wrapFile != nil {
		return wrapFile(lf)
	}
	return lf
}

const (
	// maxBuffered bounds the records waiting for the writer; beyond it,
	// Sync waits for the writer to catch up (a slow disk slows writers
	// down instead of growing memory without bound).
	maxBuffered = 64 << 20
	// linger is how long the writer waits, with everysec and no, after
	// being woken, so that one write carries the records of many batches
	// (Redis writes once per event-loop turn). Writes reach the OS within
	// about this much of their reply; fsyncs follow once a second.
	linger = time.Millisecond
	// writeInline: with everysec and no, once this much is buffered, Sync
	// writes it from the caller's goroutine (see Sync).
	writeInline = 64 << 10
)

// retryEvery is how often a failed write or fsync is retried (and how
// often the writer checks whether the everysec fsync is due). A variable
// so that tests need not wait a second per retry.
var retryEvery = time.Second

// retryGate is how long after a failed attempt the writer tries again:
// less than retryEvery, so that every tick retries (a tick may come a
// little less than retryEvery after the attempt of the tick before, when
// that one started late, and a gate of a whole retryEvery would skip it),
// and long enough that the wake-ups between ticks do not hammer a failing
// disk.
func retryGate() time.Duration { return retryEvery * 3 / 4 }

// AOF is the writer of an append-only file, fed by Append. It implements
// command.Journal. Create it with openAOF (the zero value is not usable);
// it is safe for concurrent use.
type AOF struct {
	logger  *slog.Logger
	latency LatencyMonitor // nil: none (Options.Latency)
	name    string         // file name, for messages
	policy  atomic.Int32
	errp    atomic.Pointer[error] // sticky error, for the lock-free Err
	full    atomic.Bool           // len(buf) > maxBuffered, for Sync's lock-free check
	ample   atomic.Bool           // len(buf) >= writeInline, for Sync's lock-free check
	syncs   atomic.Int64          // fsyncs done, for the log at Close and Fsyncs
	syncNs  atomic.Int64          // time spent in them
	writes  atomic.Int64          // writes done
	kept    atomic.Int64          // capacity of the writer's buffers (pend, unsynced), for Memory

	onWritten atomic.Pointer[func(seq uint64)] // OnWritten's f

	mu       sync.Mutex
	cond     sync.Cond
	buf      []byte // records appended, not yet taken by the writer
	size     int64  // bytes of the current file, written or buffered
	file     string // the current file's name (name, as of the last switch)
	seq      uint64 // last record appended
	written  uint64 // last record written to the file
	synced   uint64 // last record known durable
	err      error
	captures []*Capture
	rot      *rotation // requested, not yet taken by the writer
	rotating bool      // a rotation was requested and has not switched yet
	lost     bool      // records may be lost from the file until Rebased
	closed   bool

	// wmu is held by whoever runs cycle: the writer goroutine, or a Sync
	// caller writing inline. It guards the fields below.
	wmu sync.Mutex
	// ended is set once the writer's final flush is done (under wmu):
	// the file is about to close, so nobody may write inline after it.
	ended bool
	// fsyncing is set while the writer's everysec fsync runs without wmu.
	fsyncing bool

	// Group commit under always (see gather): taken is the last record
	// the writer has taken; joining counts the Sync callers waiting for
	// records after it (they need the next fsync), riding those waiting
	// for the fsync in progress; crowd is how many were waiting in all
	// when the last fsync ended, the size the next one waits to reach.
	taken   uint64
	joining int
	riding  int
	crowd   int

	wake chan struct{}
	stop chan struct{}
	done chan struct{}

	// Guarded by wmu (the writer goroutine, or Sync writing inline).
	f           aofFile
	off         int64  // end of the data in f
	zeroed      int64  // end of the zeros written ahead of the data (prezero)
	reserved    int64  // end of the space allocated ahead of the data (reserve)
	noReserve   bool   // the file system cannot allocate ahead
	syncedOff   int64  // end of the durable data in f
	pend        []byte // taken from buf, not yet written
	pendSeq     uint64 // last record in pend (or written)
	unsynced    []byte // copy of the bytes written to f since the last good fsync
	lastSync    time.Time
	lastTry     time.Time
	rotPending  *rotation
	gatherTimer *time.Timer
}

// rotation is a request to continue in a new file after record seq.
type rotation struct {
	f    aofFile
	name string
	size int64
	off  int // records before buf[off] go to the old file
	seq  uint64
	done chan error // receives nil once switched, or the first failure
}

// openAOF starts an AOF appending to f, whose current size is size. Its
// records are numbered from 1.
func openAOF(f aofFile, name string, size int64, policy Policy, logger *slog.Logger) *AOF {
	a := &AOF{
		logger:    logger,
		name:      name,
		wake:      make(chan struct{}, 1),
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
		f:         f,
		off:       size,
		zeroed:    size,
		syncedOff: size,
		lastSync:  time.Now(),
	}
	a.cond.L = &a.mu
	a.policy.Store(int32(policy))
	a.size, a.file = size, name
	go a.run()
	return a
}

// OnWritten has f called, from the goroutine that wrote them, with the
// sequence number of the last record the file holds after each write:
// written (write(2)) under everysec and no, written and fsynced under
// always. What a replica receives must not get ahead of it, as Redis
// writes its AOF before its replicas' sockets. nil removes f.
func (a *AOF) OnWritten(f func(seq uint64)) {
	if f == nil {
		a.onWritten.Store(nil)
		return
	}
	a.onWritten.Store(&f)
}

// SetPolicy changes the appendfsync policy.
func (a *AOF) SetPolicy(p Policy) {
	a.policy.Store(int32(p))
	a.kick()
}

// Policy returns the appendfsync policy.
func (a *AOF) Policy() Policy { return Policy(a.policy.Load()) }

// Append adds one record, or several back to back (a transaction's), and
// returns their sequence number. What one call appends stays together:
// the writer takes it in one piece (never part of it in one write and the
// rest in a later one), and a rotation or capture never splits it. It
// never blocks on I/O; it runs with the writing command's shard locks
// held.
//
// It runs once per write command, so it does the least it can: one
// uncontended mutex and a copy into a.buf, which the writer hands back
// after each write, so the copy lands in memory that is still in cache.
// (Keeping the written buffers until the next fsync instead would make
// every copy a cache miss.)
func (a *AOF) Append(rec []byte) uint64 {
	a.mu.Lock()
	a.buf = append(a.buf, rec...)
	a.seq++
	seq := a.seq
	for _, c := range a.captures {
		c.add(rec)
	}
	a.size += int64(len(rec))
	if len(a.buf) > maxBuffered && !a.full.Load() {
		a.full.Store(true)
	}
	if len(a.buf) >= writeInline && !a.ample.Load() {
		a.ample.Store(true)
	}
	a.mu.Unlock()
	return seq
}

// LastSeq returns the sequence number of the last record appended.
func (a *AOF) LastSeq() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.seq
}

// Pending returns, under appendfsync always, the sequence number of the
// last record appended when it is not yet fsynced; otherwise 0: under
// everysec and no, when every record is fsynced, and while a write or
// fsync error keeps records from the disk (or the log is closed). A reply
// that may show what those records wrote waits for them (the command
// layer's read barrier); during an outage it must not wait, so that reads go on
// being answered.
func (a *AOF) Pending() uint64 {
	if Policy(a.policy.Load()) != FsyncAlways || a.errp.Load() != nil {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.synced >= a.seq || a.closed || a.lost || a.err != nil {
		return 0
	}
	return a.seq
}

// Sync makes the records up to seq as durable as the policy demands: with
// always it returns once they are fsynced (waiting through a disk outage);
// otherwise once they are handed to the writer, which keeps them through an
// outage (reported by Err, not here). It fails only once the log is closed.
//
// With everysec and no, once writeInline bytes wait, Sync writes them
// itself (unless the writer is busy), as Redis's event loop writes its AOF
// buffer at the end of every turn; the fsync stays with the writer. Why: a
// pipelined load keeps an event loop running without a pause, so a writer
// sharing its P would take the buffer only when the scheduler preempts the
// loop (every 10 ms); by then the buffer has grown large, and Append's
// copies run into fresh pages. Writing writeInline bytes at a time keeps
// the two buffers small and in cache.
func (a *AOF) Sync(seq uint64) error { return a.sync(seq, true) }

// SyncOrFailing is Sync, except that under always it returns ErrFailing
// instead of waiting while a write or fsync error keeps the records from
// the disk. An event loop calls it, and waits for the outage in Sync on
// another goroutine: waiting in the loop would hold up every client it
// serves, reads and refused writes included, for as long as the outage
// lasts.
func (a *AOF) SyncOrFailing(seq uint64) error { return a.sync(seq, false) }

// sync is Sync; wait says whether to wait through a write or fsync error.
func (a *AOF) sync(seq uint64, wait bool) error {
	if Policy(a.policy.Load()) != FsyncAlways {
		if a.ample.Load() {
			a.writeNow()
		}
		a.kick()
		if a.full.Load() {
			a.mu.Lock()
			for len(a.buf) > maxBuffered && !a.closed {
				a.cond.Wait()
			}
			a.mu.Unlock()
		}
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.synced >= seq {
		return nil
	}
	// Count ourselves for gather: joining until the writer takes our
	// records (it then moves every joiner to riding), riding after.
	if seq > a.taken {
		a.joining++
	} else {
		a.riding++
	}
	for a.synced < seq && !a.closed && !a.lost && (wait || a.err == nil) {
		a.kick()
		a.cond.Wait()
	}
	if seq > a.taken && a.joining > 0 {
		a.joining--
	} else {
		a.riding--
	}
	switch {
	case a.synced >= seq:
		return nil
	case a.lost:
		return ErrLost
	case a.closed:
		return ErrClosed
	}
	return ErrFailing
}

// Flush writes and fsyncs every record appended so far, whatever the
// policy, in the caller's goroutine, and returns the error that keeps them
// from the disk (one attempt; the writer retries as usual). A shutdown
// calls it before it stops serving: while it fails, the server goes on.
func (a *AOF) Flush() error {
	a.wmu.Lock()
	defer a.wmu.Unlock()
	for a.fsyncing {
		// The writer's fsync runs without wmu; its bookkeeping
		// afterwards assumes nobody fsynced meanwhile.
		a.wmu.Unlock()
		time.Sleep(time.Millisecond)
		a.wmu.Lock()
	}
	if a.ended {
		return ErrClosed
	}
	for i := 0; i < 2 && a.cycle(true, true); i++ {
	}
	return a.Err()
}

// Err returns the write or fsync error the log has not recovered from, or
// nil. It is cheap: the dispatcher calls it before every write command.
func (a *AOF) Err() error {
	if p := a.errp.Load(); p != nil {
		return *p
	}
	return nil
}

// Lost reports whether a failed fsync may have lost records from the file
// that the log could not write again (see the file comment): only a
// rewrite of the append-only file ends that state.
func (a *AOF) Lost() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lost
}

// Rebased tells the log that a new base holding every record up to seq is
// named in the manifest, so that what a failed fsync may have lost before
// it no longer matters: records up to seq count as durable, and the log
// accepts writes again once its next fsync succeeds.
func (a *AOF) Rebased(seq uint64) {
	a.mu.Lock()
	if a.lost {
		a.lost = false
		a.logger.Warn("the append-only file was rewritten; records lost by the failed fsync are in the new base")
	}
	if a.synced < seq && seq <= a.written {
		a.synced = seq
	}
	a.cond.Broadcast()
	a.mu.Unlock()
	a.kick()
}

// Size returns the bytes of the current file, including records not yet
// written.
func (a *AOF) Size() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.size
}

// Current returns the name of the file records are appended to and its
// size, written or buffered (Size), as one consistent pair.
func (a *AOF) Current() (file string, size int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.file, a.size
}

// Memory returns the bytes the log's buffers hold: the records appended
// and not yet written, and the copy of those written since the last fsync
// kept to write again should it fail. The memory limit leaves it out, as
// Redis leaves out its AOF buffer (mem_not_counted_for_evict).
func (a *AOF) Memory() int64 {
	a.mu.Lock()
	n := cap(a.buf)
	a.mu.Unlock()
	return int64(n) + a.kept.Load()
}

// Buffered returns the bytes appended and not yet taken by the writer
// (INFO's aof_buffer_length).
func (a *AOF) Buffered() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.buf)
}

// writeNow runs a cycle from the caller's goroutine, without the writer's
// linger, unless the writer is in one. The fsync, if one is due, is left to
// the writer (kicked by the caller): an fsync here would stall the caller.
// Rotations and failures are left to the writer too.
func (a *AOF) writeNow() {
	if !a.wmu.TryLock() {
		return
	}
	defer a.wmu.Unlock()
	if a.ended || a.rotPending != nil || a.Err() != nil || len(a.unsynced) >= maxKept {
		// With maxKept bytes written during an fsync in progress, the
		// records wait in buf (and Sync, once buf is full, for the fsync).
		return
	}
	a.cycle(false, false)
}

func (a *AOF) kick() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// Capture collects copies of the records appended while it is active.
type Capture struct {
	first uint64 // sequence number of the first record
	data  []byte
	ends  []int // end offset in data of each record
	limit int
	over  bool // limit exceeded: the capture is incomplete
}

func (c *Capture) add(rec []byte) {
	if c.over {
		return
	}
	if len(c.data)+len(rec) > c.limit {
		c.over, c.data, c.ends = true, nil, nil
		return
	}
	c.data = append(c.data, rec...)
	c.ends = append(c.ends, len(c.data))
}

// each calls fn for every captured record with its sequence number.
func (c *Capture) each(fn func(seq uint64, rec []byte) error) error {
	start := 0
	for i, end := range c.ends {
		if err := fn(c.first+uint64(i), c.data[start:end]); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// errCaptureOverflow: more records arrived during a snapshot than the
// capture may hold.
var errCaptureOverflow = errors.New("persist: too many writes during the snapshot (capture buffer full)")

// BeginCapture starts copying appended records (at most limit bytes).
func (a *AOF) BeginCapture(limit int) *Capture {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := &Capture{first: a.seq + 1, limit: limit}
	a.captures = append(a.captures, c)
	return c
}

// EndCapture stops c and returns the sequence number of the last record
// it holds.
func (a *AOF) EndCapture(c *Capture) (uint64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.dropCapture(c)
	if c.over {
		return 0, errCaptureOverflow
	}
	return a.seq, nil
}

// dropCapture removes c from the active captures. Requires a.mu held.
func (a *AOF) dropCapture(c *Capture) {
	for i, x := range a.captures {
		if x == c {
			a.captures = append(a.captures[:i], a.captures[i+1:]...)
			break
		}
	}
}

// Rotate makes the log continue in f (of the given size) after the last
// record appended so far, which it returns, ending capture c (if not nil)
// at the same record. The records up to it are written and fsynced to the
// old file, which is then closed; done receives nil once that happened, or
// the first error (the switch is then retried with the writes).
func (a *AOF) Rotate(f aofFile, name string, size int64, c *Capture) (last uint64, done <-chan error, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return 0, nil, ErrClosed
	}
	if a.rot != nil || a.rotating {
		// One whose switch failed stays pending until the disk recovers;
		// a second would wait behind it with nobody to tell it.
		return 0, nil, errors.New("persist: the switch to the last rewrite's file is still pending (see the last write error)")
	}
	if c != nil {
		a.dropCapture(c)
		if c.over {
			return 0, nil, errCaptureOverflow
		}
	}
	r := &rotation{f: f, name: name, size: size, off: len(a.buf), seq: a.seq, done: make(chan error, 1)}
	a.rot = r
	a.rotating = true
	a.kick()
	return r.seq, r.done, nil
}

// Close writes and fsyncs every record appended, stops the writer and
// closes the file. It returns the error that left records undurable.
func (a *AOF) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return ErrClosed
	}
	a.mu.Unlock()
	close(a.stop)
	<-a.done
	// A switch the final flush could not make: its file is closed too
	// (it stays on disk, named in no manifest or as an empty file).
	a.wmu.Lock()
	if r := a.rotPending; r != nil {
		notify(r.done, ErrClosed) // unless the final flush's error is there
		r.f.Close()
	}
	a.wmu.Unlock()
	a.mu.Lock()
	if r := a.rot; r != nil {
		notify(r.done, ErrClosed)
		r.f.Close()
	}
	a.closed = true
	err := a.err
	records := a.seq
	a.cond.Broadcast()
	a.mu.Unlock()
	if cerr := a.f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	a.logger.Debug("append-only log closed", "records", records, "writes", a.writes.Load(), "fsyncs", a.syncs.Load())
	return err
}

// run is the writer goroutine.
func (a *AOF) run() {
	defer close(a.done)
	tick := time.NewTicker(retryEvery)
	defer tick.Stop()
	for {
		select {
		case <-a.wake:
		case <-tick.C:
		case <-a.stop:
			// Final flush: everything, fsynced, whatever the policy.
			a.wmu.Lock()
			for i := 0; i < 2 && a.cycle(true, true); i++ {
			}
			if a.Err() == nil {
				a.trim()
			}
			a.ended = true
			a.wmu.Unlock()
			return
		}
		if Policy(a.policy.Load()) != FsyncAlways {
			if a.Err() == nil {
				select {
				case <-time.After(linger):
				case <-a.stop: // the final flush takes everything
				}
			}
		} else {
			a.gather()
		}
		a.wmu.Lock()
		for a.cycle(false, true) {
		}
		a.wmu.Unlock()
	}
}

// gatherWait bounds how long an fsync under always waits for its crowd.
// Go's timers are only as fine as the netpoller's millisecond timeout when
// the process is otherwise idle, so this is the shortest that means
// anything; it is reached only when clients have gone away. A variable so
// that a test can make it long enough to be deterministic.
var gatherWait = time.Millisecond

// gather, under always, holds the next fsync until as many clients wait for
// it as waited in all when the last one ended (or gatherWait passes).
//
// Why: with N clients each sending one write at a time, starting every
// fsync at once splits them into two groups that alternate, one waiting
// for the fsync in progress while the other's requests arrive, so each
// fsync serves N/2. Waiting for the clients just answered to come back (a
// round trip, much shorter than an fsync) lets one fsync serve all N. That
// is what Redis's event loop does by construction (one fsync per loop
// turn, after reading every client that is ready); yielding once
// (runtime.Gosched) before the fsync is not enough to get there.
func (a *AOF) gather() {
	a.mu.Lock()
	ready := a.joining >= a.crowd || a.closed
	a.mu.Unlock()
	if ready {
		runtime.Gosched() // let connections already runnable append first
		return
	}
	if a.gatherTimer == nil {
		a.gatherTimer = time.NewTimer(gatherWait)
	} else {
		a.gatherTimer.Reset(gatherWait)
	}
	defer a.gatherTimer.Stop()
	for {
		select {
		case <-a.wake:
		case <-a.gatherTimer.C:
			return
		case <-a.stop:
			return
		}
		a.mu.Lock()
		ready := a.joining >= a.crowd || a.closed
		a.mu.Unlock()
		if ready {
			return
		}
	}
}

// cycle takes what was appended, writes it, and fsyncs per policy (only
// when mayFsync; otherwise it leaves a due fsync to the next cycle). It
// reports whether it should run again at once (a rotation completed and
// records for the new file are waiting). The caller holds a.wmu.
func (a *AOF) cycle(final, mayFsync bool) (again bool) {
	now := time.Now()
	a.mu.Lock()
	failing := a.err != nil
	if failing && !final && now.Sub(a.lastTry) < retryGate() {
		a.mu.Unlock()
		return false
	}
	if a.rotPending == nil {
		if r := a.rot; r != nil {
			a.rot = nil
			a.rotPending = r
			a.pend = append(a.pend, a.buf[:r.off]...)
			a.buf = a.buf[:copy(a.buf, a.buf[r.off:])]
			a.full.Store(len(a.buf) > maxBuffered)
			a.ample.Store(len(a.buf) >= writeInline)
			a.pendSeq = r.seq
		} else if len(a.buf) > 0 {
			if len(a.pend) == 0 {
				// The two buffers swap: the one just written (still
				// in cache) takes the next records.
				a.pend, a.buf = a.buf, a.pend[:0]
			} else {
				a.pend = append(a.pend, a.buf...)
				a.buf = a.buf[:0]
			}
			a.full.Store(false)
			a.ample.Store(false)
			a.pendSeq = a.seq
		}
	}
	if a.taken < a.pendSeq {
		a.taken = a.pendSeq
		a.riding += a.joining
		a.joining = 0
	}
	policy := Policy(a.policy.Load())
	a.mu.Unlock()

	a.lastTry = now
	var err error
	if len(a.pend) > 0 {
		if policy == FsyncAlways {
			a.prezero(len(a.pend))
		} else {
			a.reserve(len(a.pend))
		}
		err = a.write(policy != FsyncNo)
	}
	rot := a.rotPending
	dirty := a.off > a.syncedOff
	needSync := dirty && mayFsync && (final || failing || rot != nil || policy == FsyncAlways ||
		policy == FsyncEverysec && (now.Sub(a.lastSync) >= time.Second || len(a.unsynced) > syncEarly))
	synced := false        // everything written is durable
	durable := false       // the records up to syncedSeq are
	lost := false          // this fsync failed with bytes the log cannot write again
	syncedSeq := a.pendSeq // (pend is empty whenever err is nil)
	if err == nil && needSync {
		a.syncs.Add(1)
		target, kept := a.off, len(a.unsynced)
		if final || rot != nil || policy == FsyncAlways || failing {
			var d time.Duration
			d, err = a.timedSync()
			if lm := a.latency; lm != nil && policy == FsyncAlways && lm.LatencyOn() {
				lm.LatencyEvent("aof-fsync-always", d)
			}
		} else {
			// Sync callers may write inline while the disk works, as
			// Redis's event loop writes while its bio thread fsyncs;
			// holding wmu here would let the buffer grow for as long
			// as an fsync of up to syncEarly bytes takes.
			// Inline writes (writeNow) do not fsync; Flush, which
			// does, waits for this one (fsyncing).
			a.fsyncing = true
			a.wmu.Unlock()
			_, err = a.timedSync()
			a.wmu.Lock()
			a.fsyncing = false
		}
		if err == nil {
			durable = true
			synced = a.off == target
			if int64(kept) == target-a.syncedOff {
				// Keep the copy of what was written since.
				a.unsynced = a.unsynced[:copy(a.unsynced, a.unsynced[kept:])]
			} else {
				a.unsynced = a.unsynced[:0]
			}
			a.syncedOff = target
			if cap(a.unsynced) > maxKept && len(a.unsynced) == 0 {
				a.unsynced = nil // what remains is not yet durable: keep it
			}
			a.kept.Store(int64(cap(a.pend) + cap(a.unsynced)))
			a.lastSync = now
		} else {
			err = &syncError{err}
			if int64(len(a.unsynced)) == a.off-a.syncedOff {
				// The kernel may have dropped the pages: write them again.
				a.pend = append(append([]byte(nil), a.unsynced...), a.pend...)
				a.off = a.syncedOff
				a.zeroed = a.off // the zeros may be gone too
			} else {
				lost = true // written under no: there is no copy
			}
			a.recycle()
		}
	} else if err == nil && !dirty {
		synced, durable = true, true
	}
	switched := false
	if err == nil && rot != nil && len(a.pend) == 0 && a.off == a.syncedOff {
		a.trim()
		if cerr := a.f.Close(); cerr != nil {
			a.logger.Warn("closing the old append-only file failed", "file", a.name, "err", cerr)
		}
		a.f, a.name, a.off, a.syncedOff, a.zeroed, a.reserved = rot.f, rot.name, rot.size, rot.size, rot.size, rot.size
		a.recycle()
		a.rotPending = nil
		switched = true
	}

	a.mu.Lock()
	if len(a.pend) == 0 && a.written < a.pendSeq {
		a.written = a.pendSeq
	}
	if lost {
		a.lost = true
	}
	if le := (*lostError)(nil); err != nil && a.lost && !errors.As(err, &le) {
		err = &lostError{err} // INFO and MISCONF say what ends it
	}
	if durable && !a.lost && a.synced < syncedSeq {
		a.synced = syncedSeq
		a.crowd = a.riding + a.joining
	}
	if err != nil && len(a.pend) > 0 {
		a.written = a.synced
	}
	recovered := false
	if err == nil && a.err != nil && synced && len(a.pend) == 0 && !a.lost {
		a.err = nil
		a.errp.Store(nil)
		recovered = true
	}
	if err != nil {
		a.err = err
		a.errp.Store(&err)
	}
	if switched {
		a.size = rot.size + int64(len(a.buf))
		a.file = rot.name
		a.rotating = false
	}
	again = switched && len(a.buf) > 0
	out := a.written
	if policy == FsyncAlways {
		out = min(out, a.synced)
	}
	a.cond.Broadcast()
	a.mu.Unlock()
	if f := a.onWritten.Load(); f != nil && out > 0 {
		(*f)(out)
	}

	switch {
	case err != nil:
		a.logger.Error("append-only file write failed; refusing writes until it succeeds (retrying every second)",
			"file", a.name, "err", err)
		if rot != nil {
			notify(rot.done, err)
		}
	case recovered:
		a.logger.Warn("append-only file writes succeed again; accepting writes", "file", a.name)
	}
	if switched {
		notify(rot.done, nil)
	}
	return again
}

// notify sends err on a one-slot channel unless it is full.
func notify(c chan error, err error) {
	select {
	case c <- err:
	default:
	}
}

// write writes a.pend at the end of the file. keep retains a copy of the
// bytes until the next good fsync, to write them again if that fsync
// fails. (The copy is one sequential memmove by the writer; keeping the
// buffers themselves instead would make Append fill cold memory.)
func (a *AOF) write(keep bool) error {
	a.writes.Add(1)
	var n int
	var err error
	if lm := a.latency; lm != nil && lm.LatencyOn() {
		start := time.Now()
		n, err = a.f.WriteAt(a.pend, a.off)
		lm.LatencyEvent("aof-write", time.Since(start))
	} else {
		n, err = a.f.WriteAt(a.pend, a.off)
	}
	if err == nil && n < len(a.pend) {
		err = errors.New("short write")
	}
	if err != nil {
		// Nothing counts as written: the retry rewrites from a.off,
		// overwriting whatever part made it.
		return &writeError{err}
	}
	if keep && int64(len(a.unsynced)) == a.off-a.syncedOff {
		a.unsynced = append(a.unsynced, a.pend...)
	}
	if cap(a.pend) > maxKept {
		a.pend = nil // a burst grew it: do not pin the memory
	} else {
		a.pend = a.pend[:0]
	}
	a.off += int64(n)
	a.kept.Store(int64(cap(a.pend) + cap(a.unsynced)))
	return nil
}

// prezeroChunk is how far ahead of the log's end prezero writes zeros, at
// most (see aheadOf). Each extension costs one slower fsync (it writes this
// much and the new size), so a chunk holds hundreds of batches of small
// records.
const prezeroChunk = 1 << 20

// minAhead is the least space prezero and reserve make ahead of the data.
const minAhead = 64 << 10

// aheadOf is how much space to make ahead of a file holding off bytes of
// records: as much as it holds, between minAhead and limit. A file that
// fills quickly soon gets whole chunks (from 64 KiB to 8 MiB takes seven
// allocations), while a quiet server's file does not end in megabytes of
// zeros that a listing or a backup of the directory would show.
func aheadOf(off, limit int64) int64 {
	return min(max(off, minAhead), limit)
}

// zeroBlock is what prezero writes.
var zeroBlock [64 << 10]byte

// prezero tries to make the next n bytes of the log land in space that
// already holds zeros, written ahead a chunk at a time. Under always only.
// It fails quietly: on a full disk the records may still fit where a chunk
// of zeros does not, and their own write reports what goes wrong.
//
// Why: fdatasync after an append must also make the file's new size and
// block mapping durable (an inode write, or a journal commit); after
// overwriting blocks that are already allocated and written, it flushes the
// data alone, which is markedly shorter and is what bounds the throughput
// of appendfsync always. The price is that a file can end in zeros, which
// recordsEnd tells from records at load time.
func (a *AOF) prezero(n int) {
	need := a.off + int64(n)
	if need <= a.zeroed {
		return
	}
	at := max(a.zeroed, need)
	end := need + aheadOf(a.off, prezeroChunk)
	for at < end {
		m := min(int64(len(zeroBlock)), end-at)
		w, err := a.f.WriteAt(zeroBlock[:m], at)
		if err != nil || int64(w) < m {
			return
		}
		at += m
		a.zeroed = at
	}
}

// reserveChunk is how much file space reserve allocates at a time, at most
// (see aheadOf): one fallocate per 8 MiB, a few a second even under a
// heavy pipelined load.
const reserveChunk = 8 << 20

// allocator is a log file that can allocate space ahead of its data
// (fallocate on Linux).
type allocator interface {
	Allocate(off, n int64) error
}

// reserve makes sure the next n bytes of the log land in space already
// allocated to the file, allocating up to reserveChunk more when they would
// not. Under everysec and no, where the writer writes tens of kilobytes at
// a time. It fails quietly, as prezero does; where the file system cannot
// allocate ahead at all it stops trying.
//
// Why: appending to a file makes ext4 reserve blocks and grow the file
// page by page inside every write; writing into space that fallocate has
// allocated (as unwritten extents, which read as zeros) skips that, and
// saves a good part of the writes' CPU under a pipelined load. The
// extents turn into written ones when the data reaches the disk, which the
// once-a-second fdatasync absorbs; under always, where an fsync follows
// every write, prezero's written zeros are what keeps it short.
func (a *AOF) reserve(n int) {
	need := a.off + int64(n)
	if need <= a.reserved || a.noReserve {
		return
	}
	al, ok := a.f.(allocator)
	if !ok {
		a.noReserve = true
		return
	}
	at := max(a.reserved, a.off)
	ahead := aheadOf(a.off, reserveChunk)
	switch err := al.Allocate(at, need-at+ahead); {
	case err == nil:
		a.reserved = need + ahead
	case errors.Is(err, errors.ErrUnsupported):
		a.noReserve = true
	}
}

// trimmer is a log file that can be cut to a size.
type trimmer interface {
	Truncate(size int64) error
}

// trim cuts the zeros written or allocated ahead of the data off the end of
// the file, once nothing more will be written to it (a clean close, a
// switch to the next file), so that it ends at its last record. After a
// crash the loader cuts them instead (recordsEnd). Writer only.
func (a *AOF) trim() {
	if max(a.zeroed, a.reserved) <= a.off {
		return
	}
	t, ok := a.f.(trimmer)
	if !ok {
		return
	}
	if err := t.Truncate(a.off); err != nil {
		a.logger.Warn("could not cut the space allocated ahead off the append-only file; the next start will",
			"file", a.name, "err", err)
		return
	}
	a.zeroed, a.reserved = a.off, a.off
}

// maxKept bounds the capacity of the buffers kept for reuse (the written
// buffer and the fsync-retry copy): a burst that grew one beyond this
// does not pin the memory.
const maxKept = 64 << 20

// syncEarly: with everysec, once this much has been written since the last
// fsync, the writer fsyncs without waiting for the second to pass, so the
// fsync-retry copy stays well below maxKept and is reused instead of being
// dropped and allocated afresh (and page-faulted in) every second, which
// under a heavy pipelined load costs a large share of the throughput; an
// fsync of 16 MiB is short.
const syncEarly = 16 << 20

// recycle forgets the bytes kept for an fsync retry. Writer only.
func (a *AOF) recycle() {
	if cap(a.unsynced) > maxKept {
		a.unsynced = nil
		return
	}
	a.unsynced = a.unsynced[:0]
}

type writeError struct{ err error }

func (e *writeError) Error() string { return e.err.Error() }
func (e *writeError) Unwrap() error { return e.err }

type syncError struct{ err error }

func (e *syncError) Error() string { return "fsync: " + e.err.Error() }
func (e *syncError) Unwrap() error { return e.err }

// lostError is a failed fsync after which records may be missing from the
// file (see the file comment).
type lostError struct{ err error }

func (e *lostError) Error() string {
	return e.err.Error() + " (records written under appendfsync no may be lost from the file; writes resume once the append-only file is rewritten, which starts by itself)"
}
func (e *lostError) Unwrap() error { return e.err }

// timedSync fsyncs the file, timing it for Fsyncs.
func (a *AOF) timedSync() (time.Duration, error) {
	t := time.Now()
	err := a.f.Sync()
	d := time.Since(t)
	a.syncNs.Add(int64(d))
	return d, err
}

// Fsyncs returns the number of fsyncs of the log so far and the time they
// took.
func (a *AOF) Fsyncs() (n int64, d time.Duration) {
	return a.syncs.Load(), time.Duration(a.syncNs.Load())
}
