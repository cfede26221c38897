package command

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratekv/ratekv/persist"
)

// The replication stream and its backlog.
//
// The stream is what replicas apply: the journal's effect records (the
// append-only file's records, see journal.go), with the primary's PINGs
// and REPLCONF GETACKs between them, as Redis's replication stream is its
// AOF's commands. Its offset counts bytes, as Redis's master_repl_offset.
//
// It is kept in a chain of fixed-size blocks. The backlog is the chain's
// last repl-backlog-size bytes, from which a replica that reconnects
// continues (+CONTINUE); a replica's link reads the chain from its own
// position (a cursor), so a replica that lags holds the blocks it has not
// sent yet, and only those, until it catches up or is dropped
// (client-output-buffer-limit replica). Blocks are appended under the backlog's mutex, with
// the writing command's shard locks held (as the append-only file's
// records); readers read the bytes below the published end without it.
//
// With an append-only file, the end is published once the file has the
// records (written, or fsynced under appendfsync always; see
// persist.AOF.OnWritten), as Redis writes its AOF before it writes to
// its replicas' sockets: a replica never holds a write that the
// primary's file does not, and so never one a restarted primary lost.
//
// A block that leaves the backlog is reused for the stream's next bytes
// once no reader can read it any more: every link registers a hold, the
// offset below which it reads nothing again, and a block is reused when
// it ends below every hold. So a primary under load writes its stream
// into the same few blocks instead of allocating a new one per 64 KiB
// (garbage for the collector) and zeroing it. A reused block is not
// zeroed: readers read only bytes below the published end.

const blockSize = 64 << 10

// maxFree is how many blocks a backlog keeps for reuse beyond the ones it
// holds; the rest go to the garbage collector (after a lagging replica was
// dropped, say).
const maxFree = 16

// block is one piece of the stream: data holds the bytes from offset off.
type block struct {
	off  int64
	next atomic.Pointer[block]
	data [blockSize]byte
}

// backlog is the replication stream of one server. Safe for concurrent
// use.
type backlog struct {
	mu       sync.Mutex
	oldest   *block // oldest block a reader may still read (head or before it)
	head     *block // oldest block kept for partial resynchronizations
	tail     *block
	free     *block  // blocks to reuse, linked by next
	nfree    int     // blocks in free
	holds    []*hold // the readers' holds
	size     int64   // repl-backlog-size
	seq      uint64  // effect records appended (the captures' sequence numbers)
	captures []*persist.Capture
	end      atomic.Int64    // offset after the last byte: master_repl_offset
	pub      atomic.Int64    // offset up to which readers read: end, or less while the log has not the records
	gatedBy  writtenNotifier // the append-only file whose writes publish logged records (logged); nil: none
	marks    []mark          // the records logged but not yet published, in order

	wake     atomic.Pointer[[]*waker] // the links to wake on an append
	sleepers atomic.Int32             // wakers of this stream asleep (waker.sleeping set)
}

// mark is where the stream ends after the record of sequence number seq
// in the append-only file.
type mark struct {
	seq uint64
	end int64
}

// waker wakes a link's writer that waits for the stream to grow: while no
// writer sleeps, an append costs one atomic load (backlog.sleepers).
type waker struct {
	ch       chan struct{} // capacity 1
	sleeping atomic.Bool   // set by the writer; cleared by whoever wins the CAS, who then counts it off sleepers
}

func newWaker() *waker { return &waker{ch: make(chan struct{}, 1)} }

// wait blocks until the stream grows past pos (cu's), tick fires or done
// is closed.
func (w *waker) wait(cu *cursor, tick <-chan time.Time, done <-chan struct{}) {
	w.sleeping.Store(true)
	cu.b.sleepers.Add(1)
	// An append after the Add sees the sleeper; one before it is seen
	// here.
	if cu.lag() <= 0 {
		select {
		case <-w.ch:
		case <-tick:
		case <-done:
		}
	}
	if w.sleeping.CompareAndSwap(true, false) {
		cu.b.sleepers.Add(-1)
	}
}

// newBacklog returns an empty backlog whose stream continues at off.
func newBacklog(off, size int64) *backlog {
	b := &backlog{size: size}
	b.head = &block{off: off}
	b.tail, b.oldest = b.head, b.head
	b.end.Store(off)
	b.pub.Store(off)
	return b
}

// appendStream adds rec to the stream: effect records (effects true, which
// snapshots capture) or a PING or REPLCONF GETACK.
func (b *backlog) appendStream(rec []byte, effects bool) { b.appendLog(rec, effects, nil) }

// appendLog is appendStream that also appends the effect records rec to
// log (when not nil) and returns their sequence number there; while the
// backlog is gated, they are published once log has them (logged).
// Appending to both under b.mu keeps them in one order.
func (b *backlog) appendLog(rec []byte, effects bool, log Journal) uint64 {
	b.mu.Lock()
	if effects {
		b.seq++
		for _, c := range b.captures {
			c.Add(rec)
		}
	}
	off := b.end.Load()
	if t := b.tail; off-t.off+int64(len(rec)) <= blockSize {
		copy(t.data[off-t.off:], rec) // the usual case: it fits in the tail
		off += int64(len(rec))
	} else {
		off = b.spanLocked(rec, off)
	}
	b.end.Store(off)
	seq, publish := uint64(1), len(b.marks) == 0
	if log != nil {
		seq = log.Append(rec)
		if b.gatedBy != nil {
			b.marks = append(b.marks, mark{seq, off})
			publish = false
		}
	}
	if publish {
		b.pub.Store(off)
	}
	b.mu.Unlock()
	if publish && b.sleepers.Load() != 0 {
		b.wakeLinks()
	}
	return seq
}

// logged publishes the stream up to the records the append-only file has
// up to seq (and what follows them without a record of its own, as
// PINGs). It is the file's OnWritten.
func (b *backlog) logged(seq uint64) {
	b.mu.Lock()
	k := 0
	for k < len(b.marks) && b.marks[k].seq <= seq {
		k++
	}
	if k == 0 {
		b.mu.Unlock()
		return
	}
	pub := b.marks[k-1].end
	if k == len(b.marks) {
		pub = b.end.Load()
	}
	b.marks = b.marks[:copy(b.marks, b.marks[k:])]
	b.pub.Store(pub)
	b.mu.Unlock()
	if b.sleepers.Load() != 0 {
		b.wakeLinks()
	}
}

// gate makes the stream wait for log's writes (logged), when log reports
// them. A change of file publishes everything: the old file's pending
// records would never be reported.
func (b *backlog) gate(log Journal) {
	w, _ := log.(writtenNotifier)
	b.mu.Lock()
	if b.gatedBy == w {
		b.mu.Unlock()
		return
	}
	b.gatedBy = w
	b.marks = b.marks[:0]
	b.pub.Store(b.end.Load())
	b.mu.Unlock()
	if b.sleepers.Load() != 0 {
		b.wakeLinks()
	}
}

// spanLocked copies rec from off on into the tail block and new ones, and
// returns the offset after it. Requires b.mu held.
func (b *backlog) spanLocked(rec []byte, off int64) int64 {
	for len(rec) > 0 {
		t := b.tail
		used := off - t.off
		if used == blockSize {
			nb := b.newBlockLocked(off)
			t.next.Store(nb)
			b.tail, t, used = nb, nb, 0
			b.trimLocked(off)
		}
		n := copy(t.data[used:], rec)
		rec = rec[n:]
		off += int64(n)
	}
	return off
}

// trimLocked lets go of the blocks the backlog no longer needs. Requires
// b.mu held.
func (b *backlog) trimLocked(end int64) {
	for b.head != b.tail {
		next := b.head.next.Load()
		if end-next.off < b.size {
			return
		}
		b.head = next
	}
}

// newBlockLocked returns a block for the stream from off on: a reused one
// when a block has left the backlog and every reader. Requires b.mu held.
func (b *backlog) newBlockLocked(off int64) *block {
	b.reclaimLocked()
	nb := b.free
	if nb == nil {
		return &block{off: off}
	}
	b.free = nb.next.Load()
	b.nfree--
	nb.off = off
	nb.next.Store(nil)
	return nb
}

// reclaimLocked moves the blocks that left the backlog and that no hold
// can reach to the free list (up to maxFree; the garbage collector takes
// the others). A block that ends at a hold's offset is still read: its
// reader steps to the next block through it. Requires b.mu held.
func (b *backlog) reclaimLocked() {
	low := b.head.off
	for _, h := range b.holds {
		low = min(low, h.pos.Load())
	}
	for b.oldest != b.head && b.oldest.off+blockSize < low {
		blk := b.oldest
		b.oldest = blk.next.Load()
		if b.nfree < maxFree {
			blk.next.Store(b.free)
			b.free = blk
			b.nfree++
		}
	}
}

// hold is a reader's claim on the stream: it reads nothing below pos
// again. A reader raises pos as it goes (cursor.settle), never lowers it.
type hold struct{ pos atomic.Int64 }

// holdLocked registers a hold at off. Requires b.mu held.
func (b *backlog) holdLocked(off int64) *hold {
	h := &hold{}
	h.pos.Store(off)
	b.holds = append(b.holds, h)
	return h
}

// holdEnd registers a hold at the end of the stream: a link that begins
// with a full resynchronization reads from a later offset.
func (b *backlog) holdEnd() *hold {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.holdLocked(b.end.Load())
}

// release drops h: its reader reads nothing more.
func (b *backlog) release(h *hold) {
	if h == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, x := range b.holds {
		if x == h {
			b.holds = append(b.holds[:i], b.holds[i+1:]...)
			break
		}
	}
}

func (b *backlog) wakeLinks() {
	if ws := b.wake.Load(); ws != nil {
		for _, w := range *ws {
			if w.sleeping.Load() && w.sleeping.CompareAndSwap(true, false) {
				b.sleepers.Add(-1)
				select {
				case w.ch <- struct{}{}:
				default:
				}
			}
		}
	}
}

// setSize changes repl-backlog-size.
func (b *backlog) setSize(n int64) {
	b.mu.Lock()
	b.size = n
	b.trimLocked(b.end.Load())
	b.reclaimLocked()
	b.mu.Unlock()
}

// outputMemory is what the stream holds besides the backlog: the blocks
// that left it and that lagging replicas still read, and the spare ones.
// Like Redis's replicas' output buffers, eviction does not count it.
func (b *backlog) outputMemory() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	// Every block but the tail is full.
	return b.head.off - b.oldest.off + int64(b.nfree)*blockSize
}

// span returns the offsets of the first byte held and of the end.
func (b *backlog) span() (start, end int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.head.off, b.end.Load()
}

// cursorAt returns a cursor at off, with a hold there that its reader
// releases when done, and false when the backlog does not hold the stream
// from there.
func (b *backlog) cursorAt(off int64) (cursor, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if off < b.head.off || off > b.end.Load() {
		return cursor{}, false
	}
	blk := b.head
	for off-blk.off >= blockSize && blk != b.tail {
		blk = blk.next.Load()
	}
	return cursor{b: b, blk: blk, pos: off, h: b.holdLocked(off)}, true
}

// LastSeq, BeginCapture and EndCapture make the backlog a
// persist.CaptureLog, for a full resynchronization's snapshot
// (syncCapture).
func (b *backlog) LastSeq() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.seq
}

func (b *backlog) BeginCapture(limit int) *persist.Capture {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := persist.NewCapture(b.seq+1, limit)
	b.captures = append(b.captures, c)
	return c
}

// endCapture stops c and returns its last sequence number and a cursor
// after its last record, which reads under h (a hold at or below it).
func (b *backlog) endCapture(c *persist.Capture, h *hold) (uint64, cursor) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, x := range b.captures {
		if x == c {
			b.captures = append(b.captures[:i], b.captures[i+1:]...)
			break
		}
	}
	cu := cursor{b: b, blk: b.tail, pos: b.end.Load(), h: h}
	cu.settle()
	return b.seq, cu
}

// cursor is a reader's position in the stream. The zero cursor is not
// usable. A cursor is not safe for concurrent use.
type cursor struct {
	b   *backlog
	blk *block
	pos int64
	h   *hold // its reader's; the blocks from pos on stay while it is registered
}

// settle tells the backlog the reader is done with the bytes before the
// cursor (what next returned is no longer used).
func (cu *cursor) settle() { cu.h.pos.Store(cu.pos) }

// next returns the published stream from the cursor on, at most max bytes
// and within one block, and advances the cursor past them. They are the
// block's own bytes, not a copy: the stream below its end never changes,
// and the block is not reused before the reader settles past them.
func (cu *cursor) next(max int) []byte {
	end := cu.b.pub.Load()
	if cu.pos >= end || max <= 0 {
		return nil
	}
	if cu.pos-cu.blk.off == blockSize {
		cu.blk = cu.blk.next.Load()
	}
	hi := min(end, cu.blk.off+blockSize, cu.pos+int64(max))
	p := cu.blk.data[cu.pos-cu.blk.off : hi-cu.blk.off]
	cu.pos = hi
	return p
}

// read appends to dst the stream from the cursor on, at most max bytes
// in all, and advances the cursor.
func (cu *cursor) read(dst []byte, max int) []byte {
	for len(dst) < max {
		p := cu.next(max - len(dst))
		if len(p) == 0 {
			break
		}
		dst = append(dst, p...)
	}
	return dst
}

// lag is how many bytes of the published stream the cursor has not read
// (negative: it stands past them, at the end of a snapshot's capture).
func (cu *cursor) lag() int64 { return cu.b.pub.Load() - cu.pos }

// syncCapture is the backlog as a persist.CaptureLog for one snapshot: it
// keeps the cursor after the last record of the capture that ended last,
// where the replica's stream begins.
type syncCapture struct {
	b   *backlog
	h   *hold // the link's
	cur cursor
}

func (s *syncCapture) LastSeq() uint64 { return s.b.LastSeq() }

func (s *syncCapture) BeginCapture(limit int) *persist.Capture { return s.b.BeginCapture(limit) }

func (s *syncCapture) EndCapture(c *persist.Capture) (uint64, error) {
	seq, cur := s.b.endCapture(c, s.h)
	s.cur = cur
	return seq, persist.CaptureErr(c)
}

// teeJournal is the journal of a server with a replication stream: every
// record goes to the append-only file (when on) and to the stream.
type teeJournal struct {
	aof Journal // nil: appendonly no
	b   *backlog
}

func (t *teeJournal) Append(rec []byte) uint64 {
	// Without a file, 1: nothing to wait for (see Mark: 0 would mean
	// nothing journaled).
	return t.b.appendLog(rec, true, t.aof)
}

func (t *teeJournal) Sync(seq uint64) error {
	if t.aof != nil {
		return t.aof.Sync(seq)
	}
	return nil
}

func (t *teeJournal) Err() error {
	if t.aof != nil {
		return t.aof.Err()
	}
	return nil
}
