package command

import (
	"github.com/ratekv/ratekv/internal/redisnum"
	"github.com/ratekv/ratekv/journal"
	"github.com/ratekv/ratekv/shards"
)

// The journal hook: how write commands reach the append-only log.
//
// The log records effects, not time-dependent commands, so that replaying
// it at any later time rebuilds the same state. After a write command has
// run, and while its shard locks are still held (so records of one key are
// appended in the order the writes happened), the dispatcher checks the
// change counters of the shards it holds; a command that changed nothing
// (a refused CL.THROTTLE, SET NX on an existing key) logs nothing. What a
// command that did change something logs depends on Command.Persist:
//
//   - PersistImage (the default): for every key of the command, its state
//     afterwards: DEL when gone, else a command that recreates it with an
//     absolute deadline (the binary SETINT for integers, SET key value
//     [PXAT ms] for other strings, the value's RESTORE form for other
//     types). Always correct; used for strings, counters and CL.THROTTLE,
//     whose images are small.
//   - PersistVerbatim: the command as sent, for commands whose effect
//     depends only on their arguments and the prior state (ZADD, ZREM,
//     DEL, FLUSHALL), where an image could be large. A PersistImage
//     command called with Command.PlainArgs arguments (SET key value) is
//     logged the same way when its request arrived as canonical RESP.
//     Either is appended as the request's own bytes when they are exactly
//     the record (Client.rawRecord), so a pipelined write is copied once.
//     A command logged as sent that began without its key (it created it,
//     or found it expired) gets a DEL before it, since nothing expires
//     while the log replays (see Replay); one with several keys (LMOVE)
//     gets a DEL of each key that did not exist before it.
//   - PersistTTL: for every key, only its deadline afterwards (PEXPIREAT,
//     PERSIST or DEL): EXPIRE and friends, without re-logging a big value.
//   - PersistCustom: the handler calls c.journalAppend itself (no command
//     does at present: SL.THROTTLE logs its image, as PersistImage).
//
// Records are RESP arrays (package journal encodes them), replayed
// through the same command table as live traffic. Durability is settled
// per pipeline batch: before any reply of the batch leaves, the
// connection waits for the journal per the appendfsync policy.
//
// The journal can be attached and detached while serving (CONFIG SET
// appendonly; persist/aof_switch.go). A write command loads it once, with
// its shards locked (Client.call), and uses what it loaded to the end: so a
// snapshot that locks a shard after the journal was attached sees every
// earlier write to that shard, and every later one is in the journal; and
// once the journal is detached, locking every shard once (drainJournal)
// waits out the commands still appending to it. The load is one atomic
// load per write command, no lock. A client remembers which journal its
// batch's sequence number belongs to (Client.Journaled) and settles that
// one.

// Journal receives effect records. Package persist implements it.
type Journal interface {
	// Append adds RESP-encoded records, one or more back to back (a
	// transaction's, which it keeps together: one write, one sequence
	// number), and returns their sequence number. It is called with
	// shard locks held and must not block on I/O.
	Append(rec []byte) uint64
	// Sync makes records up to seq as durable as the policy demands
	// (appendfsync always: fsynced) and returns the write error if that
	// cannot be done.
	Sync(seq uint64) error
	// Err returns the error that makes the journal refuse writes (a failed
	// write or fsync not yet recovered), or nil.
	Err() error
}

// outageJournal is a Journal whose Sync can report a disk outage instead
// of waiting through it (persist.AOF.SyncOrFailing): an event loop must not
// wait for the disk, or every client it serves waits with it.
type outageJournal interface {
	SyncOrFailing(seq uint64) error
}

// writtenNotifier is a Journal that reports the records its file holds
// (persist.AOF.OnWritten): a replication stream publishes them only then.
type writtenNotifier interface {
	OnWritten(f func(seq uint64))
}

// pendingJournal is a Journal that can say which records a reply must
// wait for before it leaves (persist.AOF.Pending): under appendfsync
// always, the last record appended while it is not yet fsynced.
type pendingJournal interface {
	Pending() uint64
}

// memoryJournal is a Journal that can say how much memory its buffers
// hold (persist.AOF.Memory): maxmemory leaves it out, as Redis leaves out
// its AOF buffer.
type memoryJournal interface {
	Memory() int64
}

// PersistMode says how a write command is journaled; see the file comment.
type PersistMode uint8

// Persist modes.
const (
	PersistImage PersistMode = iota
	PersistVerbatim
	PersistTTL
	PersistCustom
)

// Mark is how far a client's batch journaled: the sequence number of its
// last record (0: none) and the journal it belongs to, and a failure to
// settle records of a journal detached during the batch (see appendTo).
// The runtime settles it before the batch's replies leave.
type Mark struct {
	Seq uint64
	Ref *JournalRef
	Err error
}

// JournalRef is an attached journal. A new one is made for every
// attachment, so that two attachments of the same journal still differ.
type JournalRef struct {
	j      Journal
	outage outageJournal // j, when it can report an outage instead of waiting; nil otherwise
	// pending is j when it is a pendingJournal; nil otherwise. See
	// Engine.ReadBarrier.
	pending pendingJournal
	memory  memoryJournal // j, when it is a memoryJournal; nil otherwise
}

// SetJournal attaches the journal that write commands log to; nil
// detaches. Called while serving, it applies to every write command that
// locks its shards afterwards (see the file comment).
func (s *Engine) SetJournal(j Journal) {
	s.repl.mu.Lock()
	defer s.repl.mu.Unlock()
	if w, ok := s.aofJ.(writtenNotifier); ok && s.aofJ != j {
		w.OnWritten(nil)
	}
	s.aofJ = j
	s.repl.attachJournalsLocked()
}

// newJournalRef returns a new attachment of j (nil: none), whose records
// are durable when aof's are (aof is j, or the file a teeJournal j writes
// to, or nil).
func newJournalRef(j, aof Journal) *JournalRef {
	if j == nil {
		return nil
	}
	r := &JournalRef{j: j}
	r.outage, _ = aof.(outageJournal) // once, not per event-loop turn
	r.pending, _ = aof.(pendingJournal)
	r.memory, _ = aof.(memoryJournal)
	return r
}

// Sync makes the records up to seq as durable as the policy demands (see
// Journal.Sync).
func (r *JournalRef) Sync(seq uint64) error { return r.j.Sync(seq) }

// DurableNow reports whether the records up to seq are durable now,
// without waiting; false when the journal cannot tell (no outage
// reporting).
func (r *JournalRef) DurableNow(seq uint64) bool {
	return r.outage != nil && r.outage.SyncOrFailing(seq) == nil
}

// AttachedJournal returns the journal write commands log to now; nil when
// none is attached.
func (s *Engine) AttachedJournal() *JournalRef { return s.jr.Load() }

// SyncOrFailing settles the records up to seq without waiting through a
// disk outage when the journal can report one (persist.ErrFailing, see
// outageJournal), else as Sync does.
func (r *JournalRef) SyncOrFailing(seq uint64) error {
	if r.outage != nil {
		return r.outage.SyncOrFailing(seq)
	}
	return r.j.Sync(seq)
}

// ReadBarrier returns the journal and the sequence number that replies
// about to leave must wait for, although they acknowledge no write of
// their own: under appendfsync always, every record appended so far (by
// any connection) while it is not yet fsynced. (0 and nil: none, or no
// journal attached.) A reply may show what those records wrote (a GET of
// a key another client just SET, a CL.THROTTLE refused because of calls
// just allowed); sent before their fsync, it would show a client state
// that a crash could then take back. Redis's event loop fsyncs before it
// writes any reply of a turn, so none of its replies gets ahead of an
// earlier write.
//
// It is called once per event-loop turn, or per batch of a connection
// served by its own goroutine, after the requests ran: the last record
// appended then is at or past every record they could have read. Waiting
// for it is safe: records reach the disk in order. During a disk outage
// there is nothing to wait for (persist.AOF.Pending returns 0), so reads
// go on being answered, as they must; they may then show writes that are
// not yet durable, whose own replies wait.
func (s *Engine) ReadBarrier() (*JournalRef, uint64) {
	r := s.jr.Load()
	if r == nil || r.pending == nil {
		return nil, 0
	}
	if seq := r.pending.Pending(); seq != 0 {
		return r, seq
	}
	return nil, 0
}

// drainJournal returns once no write command that loaded the journal
// before it was detached is still appending to it: records are appended
// with the command's shards locked, so locking each shard once waits them
// out. The caller must hold no shard.
func (s *Engine) drainJournal() {
	st := s.store
	for i := 0; i < st.NumShards(); i++ {
		st.Lock(i)
		st.Unlock(i)
	}
}

// changeCount sums the change counters of the shards this command holds.
// It runs twice per write command, so the usual case, one shard, reads its
// counter directly rather than through sumHeld's function value.
func (c *Client) changeCount() uint64 {
	if len(c.held) == 1 && !c.heldAll {
		return c.eng.store.Changes(c.held[0])
	}
	return c.sumHeld((*shards.Store).Changes)
}

// freshCount is the sum of the shards.Store.Fresh counters of the shards
// held (see journalEffects).
func (c *Client) freshCount() uint64 {
	if len(c.held) == 1 && !c.heldAll {
		return c.eng.store.Fresh(c.held[0])
	}
	return c.sumHeld((*shards.Store).Fresh)
}

// sumHeld sums count over the shards the command holds.
func (c *Client) sumHeld(count func(*shards.Store, int) uint64) uint64 {
	st := c.eng.store
	var n uint64
	if c.heldAll {
		for i := 0; i < st.NumShards(); i++ {
			n += count(st, i)
		}
		return n
	}
	for _, i := range c.held {
		n += count(st, i)
	}
	return n
}

// journalArgs appends the record of a command logged as sent: the request
// itself when it arrived as exactly that record (journalRaw), else one
// built from args.
func (c *Client) journalArgs(args [][]byte) {
	if !c.journalRaw(args) {
		c.journalAppend(args...)
	}
}

// journalRaw appends the request being run as the record of args, and
// reports whether it could (see rawRecord).
func (c *Client) journalRaw(args [][]byte) bool {
	j := c.jcur
	if j == nil || c.replaying {
		return false
	}
	raw := c.rawRecord(args)
	if raw == nil {
		return false
	}
	c.appendRecord(j, raw)
	return true
}

// rawRecord returns the request being run, as it arrived, when it is
// byte for byte the record of args (journal.Canonical); otherwise, and for
// a command run by another (EXEC's queued commands, whose arguments are
// copies), nil.
func (c *Client) rawRecord(args [][]byte) []byte {
	if !journal.Canonical(c.req, args) {
		return nil
	}
	return c.req
}

// journalAppend appends one record made of args. Handlers with
// PersistCustom call it; requires the command's shards held.
func (c *Client) journalAppend(args ...[]byte) {
	j := c.jcur
	if j == nil || c.replaying {
		return
	}
	c.recBuf = journal.AppendCommand(c.recBuf[:0], args...)
	c.appendRecord(j, c.recBuf)
}

// journalSetImage appends the image of a string key: SETINT for an
// integer (a counter, a CL.THROTTLE TAT; see record.go), else SET key
// value [PXAT ms]. This is the record of nearly every write of a rate
// limiter, so it is built piece by piece rather than from an argument
// list.
func (c *Client) journalSetImage(key []byte, e *shards.Entry) {
	j := c.jcur
	if j == nil || c.replaying {
		return
	}
	if n, ok := e.Int(); ok {
		c.recBuf = journal.AppendSetInt(c.recBuf[:0], key, n, e.ExpireAt())
	} else {
		c.valBuf = c.eng.store.AppendBytes(c.valBuf[:0], e)
		c.recBuf = journal.AppendSet(c.recBuf[:0], key, c.valBuf, e.ExpireAt())
	}
	c.appendRecord(j, c.recBuf)
}

// appendRecord hands one record to the journal, or, while EXEC runs its
// queued commands, adds it to the transaction's records, which EXEC
// appends together (endTxRecords): the log takes them as one unit, so the
// writer never writes part of a transaction in one write and the rest in
// a later one (a crash in between would leave half of it in the file,
// replayed as a state that never was, while under everysec the client had
// its reply). The records of one multi-key command are collected the same way
// (grouping; see journalEffects).
func (c *Client) appendRecord(j *JournalRef, rec []byte) {
	if c.inExec || c.grouping {
		if c.tx.nrecs == 0 {
			c.tx.recs = append(c.tx.recs[:0], journal.Multi...)
		}
		c.tx.recs = append(c.tx.recs, rec...)
		c.tx.nrecs++
		return
	}
	c.appendTo(j, rec)
}

// appendTo appends rec to j's journal and notes its sequence number for
// the batch's settlement. When the batch's earlier records went to another
// journal (appendonly was switched off, and on again, meanwhile), those
// are settled first: that journal is closed by then (switches close the
// old log before the next one is attached), so Sync returns at once, and
// a failure is kept for the batch's settlement (Journaled.Err).
func (c *Client) appendTo(j *JournalRef, rec []byte) {
	if c.Journaled.Seq != 0 && c.Journaled.Ref != j {
		if err := c.Journaled.Ref.Sync(c.Journaled.Seq); err != nil && c.Journaled.Err == nil {
			c.Journaled.Err = err
		}
	}
	c.Journaled.Ref = j
	c.Journaled.Seq = j.j.Append(rec)
}

// endTxRecords appends the records of the transaction EXEC ran, or of a
// multi-key command, with its shards still held: one record alone, several
// between MULTI and EXEC. They go to the journal attached when the
// transaction ends, or nowhere when none is, as Redis propagates a
// transaction once it has run (a switch of appendonly in the middle: see
// the file comment and persist/aof_switch.go).
func (c *Client) endTxRecords() {
	n := c.tx.nrecs
	if n == 0 {
		return
	}
	switch j := c.eng.jr.Load(); {
	case j == nil:
	case n == 1:
		c.appendTo(j, c.tx.recs[len(journal.Multi):])
	default:
		c.tx.recs = append(c.tx.recs, journal.Exec...)
		c.appendTo(j, c.tx.recs)
	}
	c.tx.recs, c.tx.nrecs = c.tx.recs[:0], 0
	if cap(c.tx.recs) > shrinkAt { // a huge MSET's: don't keep the memory
		c.tx.recs = nil
	}
}

// journalEffects logs what cmd changed; see the file comment.
func (c *Client) journalEffects(cmd *Command, args [][]byte) {
	switch cmd.Persist {
	case PersistCustom:
		return
	case PersistVerbatim:
		// A command that began without its key (it created it, or found
		// it expired) replays after a DEL: nothing expires during the
		// replay, so the key a deadline or the active expiry ended is
		// still there, and ZADD would add to it (or ZREM fail on a
		// string). A command of one key began without it when it moved
		// the Fresh count; one of several (LMOVE) noted which of its keys
		// were absent before it ran (noteAbsent).
		if cmd.FirstKey > 0 && c.freshCount() != c.freshBefore {
			if cmd.LastKey == cmd.FirstKey {
				c.journalAppend(bDEL, args[cmd.FirstKey])
			} else {
				for _, i := range c.absentBefore {
					c.journalAppend(bDEL, args[i])
				}
			}
		}
		c.journalArgs(args)
		return
	}
	if cmd.Flags&FlagAllShards != 0 {
		c.journalAppend(args...)
		return
	}
	if cmd.PlainArgs == len(args) && c.journalRaw(args) {
		return
	}
	if k := cmd.FirstKey; cmd.Keys == nil && k > 0 && k == cmd.LastKey && k < len(args) {
		// One key, the usual case (CL.THROTTLE, INCR, SET ... EX): no
		// key list to build, nothing to group.
		c.journalImage(cmd, args[k], true)
		return
	}
	idx := cmd.keyIndexes(args, c.keyBuf[:0])
	c.keyBuf = idx
	// One record per key (RENAME's DEL and image, MSET's, DEL's,
	// CL.THROTTLEALL's), appended as one unit, as a transaction's:
	// appended one by one, the writer could take the first before the next
	// was there, and a crash between its writes (or a torn tail cut
	// between them) would leave the command half done at the next start:
	// RENAME's source deleted, its destination never written.
	c.grouping = len(idx) > 1 && !c.inExec
	for _, i := range idx {
		c.journalImage(cmd, args[i], len(idx) == 1)
	}
	if c.grouping {
		c.grouping = false
		c.endTxRecords()
	}
}

// noteAbsent notes which keys of a multi-key command logged as sent are
// absent (missing or expired) before it runs: their DELs precede its
// record when it creates or reclaims keys. Requires the keys' shards held.
func (c *Client) noteAbsent(cmd *Command, args [][]byte) {
	c.absentBefore = c.absentBefore[:0]
	idx := cmd.keyIndexes(args, c.keyBuf[:0])
	c.keyBuf = idx
	for _, i := range idx {
		if c.eng.store.Peek(args[i], c.nowMs) == nil {
			c.absentBefore = append(c.absentBefore, i)
		}
	}
}

// journalImage appends the record of key's state after cmd (see the file
// comment): its deadline alone for PersistTTL, else its image. only says
// key is the command's only key, whose entry the handler may have noted
// (Client.written).
func (c *Client) journalImage(cmd *Command, key []byte, only bool) {
	st := c.eng.store
	var e *shards.Entry
	if c.written != nil && only {
		e = c.written // the handler's entry: saves a second map lookup
	} else {
		e = st.Peek(key, c.nowMs)
	}
	var num [20]byte
	switch {
	case e == nil:
		c.journalAppend(bDEL, key)
	case cmd.Persist == PersistTTL && e.ExpireAt() == 0:
		c.journalAppend(bPERSIST, key)
	case cmd.Persist == PersistTTL:
		c.journalAppend(bPEXPIREAT, key, redisnum.AppendInt(num[:0], e.ExpireAt()))
	case e.Kind() == shards.KindString:
		c.journalSetImage(key, e)
	default: // objects: a RESTORE image (AppendDump panics on a kind without an encoding)
		c.valBuf = st.AppendDump(c.valBuf[:0], e)
		c.journalAppend(bRESTORE, key, redisnum.AppendInt(num[:0], e.ExpireAt()), c.valBuf, bREPLACE, bABSTTL)
	}
}

var (
	bDEL       = []byte("DEL")
	bPERSIST   = []byte("PERSIST")
	bPEXPIREAT = []byte("PEXPIREAT")
	bRESTORE   = []byte("RESTORE")
	bREPLACE   = []byte("REPLACE")
	bABSTTL    = []byte("ABSTTL")
)

// SyncJournal waits until this connection's writes are as durable as
// appendfsync demands: replies must not leave before. When that cannot be
// done (the log closed under always while the disk failed, or a failed
// fsync lost the records: persist.ErrLost) the replies are dropped and the
// error returned, and the caller closes the connection: the client sees
// the outcome of its writes as unknown, never as a success that a crash
// could undo. Under always the replies also wait for the records of other
// clients they may show (Engine.ReadBarrier): a batch that wrote nothing
// waits for them without failing (waitReadBarrier), one that wrote waits
// for them along with its own.
func (c *Client) SyncJournal() error {
	if c.Journaled.Seq == 0 && c.Journaled.Err == nil {
		c.waitReadBarrier()
		return nil
	}
	err := c.Journaled.Err
	if seq := c.Journaled.Seq; seq != 0 {
		if r, rseq := c.eng.ReadBarrier(); r == c.Journaled.Ref && rseq > seq {
			seq = rseq // records of others the batch may have read
		}
		if serr := c.Journaled.Ref.Sync(seq); err == nil {
			err = serr
		}
	}
	c.Journaled.Seq, c.Journaled.Ref, c.Journaled.Err = 0, nil, nil // nil: a closed log is not kept alive
	if err != nil {
		c.DropReplies(err)
		c.CloseAfter = true
	}
	return err
}

// waitReadBarrier waits until the records c's replies may show are as
// durable as appendfsync demands (see Engine.ReadBarrier), for a batch
// that journaled nothing itself. A failure to get there is no reason to
// hold its replies back: they acknowledge no write (and during a disk
// outage reads are answered).
func (c *Client) waitReadBarrier() {
	if r, seq := c.eng.ReadBarrier(); seq != 0 {
		r.SyncOrFailing(seq)
	}
}

// DropReplies drops c's pending replies because the journal could not make
// its writes durable (err); the caller closes c.
func (c *Client) DropReplies(err error) {
	c.eng.log.Error("journal sync failed; closing the client without the replies to its writes",
		"id", c.ID, "addr", c.Addr, "err", err)
	c.ResetOut()
}
