package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ratekv/ratekv/resp"
	"github.com/ratekv/ratekv/shards"
)

// Conn is one client connection. Its fields are owned by the connection's
// goroutine, except those other clients read for CLIENT LIST (guarded by mu
// or atomic).
type Conn struct {
	srv     *Server
	nc      net.Conn
	raw     syscall.RawConn // nc's file descriptor, for replyWriter; nil: write directly
	writer  *replyWriter    // nil: write directly
	wrote   chan int        // how much the writer wrote of out
	id      int64
	addr    string
	laddr   string
	created time.Time

	buf  []byte   // read buffer; unread data is buf[r:w]
	r, w int      // read and write positions in buf
	args [][]byte // argument slices of the request being run, reused
	out  []byte   // replies not yet written

	proto  int  // 2 or 3
	authed bool // passed AUTH (or no password is set)

	// Per-command state set by the dispatcher.
	now       int64 // clock reading for this command (Unix ns)
	nowMs     int64
	cmdFailed bool
	held      []int // shard indexes locked for this command, ascending
	heldAll   bool
	inExec    bool // running EXEC's queued commands: shards already locked
	keyBuf    []int

	names nameCache // the command names this connection sent last (see lookup)

	timing      *Command // command whose duration is being measured
	timingStart int64

	// Command statistics are gathered per connection and added to the
	// shared atomics once per run of the same command (in practice once
	// per pipeline batch): an atomic add on a counter every connection
	// shares costs more than a GET when several cores contend for it.
	statCmd   *Command
	statCalls int64
	statNs    int64
	batchCmds int64

	tx       txState
	watching []watchedKey
	// watchSet indexes watching by key once it holds more than
	// watchScanMax keys (nil before), so that WATCH finds a key it
	// already watches without comparing it with every other.
	watchSet map[string]struct{}

	closeAfter bool // close once the current batch's replies are flushed

	writeDeadline bool // write set a write deadline (goroutine mode)

	// Shutting down (shutdown.go).
	shutReq *ShutdownRequest // this client's SHUTDOWN, waiting for main's outcome
	busy    atomic.Bool      // a goroutine connection is running a batch (Pause waits)
	poked   atomic.Bool      // the event loop is to run what c has buffered

	// Journal state: the sequence number of this batch's last record and
	// the journal it belongs to, a failure to settle records of a journal
	// detached during the batch (see appendTo), the journal the running
	// write command loaded (nil: it logs nothing; see call), and reusable
	// buffers for building records.
	journalSeq uint64
	jref       *journalRef
	jerr       error
	jcur       *journalRef
	recBuf     []byte
	valBuf     []byte
	replaying  bool // replaying the log at start-up: journal nothing
	grouping   bool // collecting a multi-key command's records into one append (journalEffects)
	// req is the request being run as it arrived (a slice of buf), when it
	// arrived as a RESP array; nil otherwise. See rawRecord.
	req []byte

	pre          []preReq // requests prefetch parsed ahead; pre[preNext:] are still to run
	preNext      int
	preArgs      [][]byte            // their arguments, one after the other
	touchKeys    [][]byte            // the keys of the requests parsed ahead
	touchScratch shards.TouchScratch // Touch's working memory
	touchSink    uint64              // Touch's results, kept so its loads stay
	// written is the entry a single-key write command left its key as,
	// when the handler says so (noteWritten); the journal's image of the
	// key then needs no second lookup. Reset before every command.
	written *shards.Entry
	// waiting says the request at the head of buf was found incomplete;
	// part is how far it was checked since (see partial).
	waiting bool
	part    resp.Partial
	// freshBefore is the journal's shards.Store.Fresh count of the held
	// shards before a command logged as sent ran (see journalEffects).
	freshBefore uint64

	mu      sync.Mutex // guards name, libName, libVer, and proto's writes (its owner reads it without)
	name    string
	libName string
	libVer  string

	// Event-loop mode (loop_linux.go): the loop that owns the socket, and
	// the socket's descriptor (-1 once closed); nc is closed then. The
	// flags are the loop goroutine's.
	loop    *eventLoop
	fd      int
	inTurn  bool        // in the loop's list for this turn
	waitOut bool        // replies wait for room in the socket; reading waits for them
	pending bool        // runBuffered stopped with requests left in buf (also serve's)
	parked  bool        // its replies wait for the disk to recover (see eventLoop.park); its socket is not watched
	parkSeq uint64      // with parked: the journal sequence number its replies wait for
	parkRef *journalRef // with parked: the journal of parkSeq
	killReq atomic.Bool // CLIENT KILL or the server asked the loop to close it (goroutine mode: CLIENT KILL, see serve)

	lastCmd  atomic.Pointer[Command]
	lastSeen atomic.Int64 // Unix ms of the last command
	qbuf     atomic.Int64 // bytes buffered, for CLIENT LIST
}

const (
	// flushAt bounds the reply buffer: once a batch's replies pass it, they
	// are written out before the next command runs. A client that does not
	// read its replies therefore blocks its own connection (TCP back
	// pressure) instead of making the server buffer without bound.
	flushAt = 64 * 1024
	// shrinkAt: buffers grown past this for a large request are released
	// when the request is done.
	shrinkAt = 256 * 1024
	// defaultReadBytes is a connection's read buffer to begin with.
	defaultReadBytes = 16 * 1024
)

// maxReplyBytes bounds the reply of one MGET, and of one EXEC: a few bytes
// of request can ask for one value many times over (MGET naming a 512 MB
// key a million times, a transaction of GETs of it), and such a reply is
// built in memory before its first byte leaves, which the flushes between
// a pipeline's commands (flushAt) cannot bound. Redis streams it into the
// client's output buffer, which client-output-buffer-limit (by default
// none for normal clients) may cut off. A variable so that a test can
// lower it.
var maxReplyBytes = 512 << 20

// serve runs the connection until it is closed by either side.
func (c *Conn) serve() {
	defer c.close()
	for {
		if !c.enterBatch() {
			return
		}
		ok := c.runBuffered()
		c.busy.Store(false)
		if !ok {
			c.flush() // the replies up to QUIT or the error, then close
			return
		}
		if len(c.out) > 0 {
			if err := c.flushRound(); err != nil {
				return
			}
		}
		if c.closeAfter || c.srv.closing.Load() {
			return
		}
		if c.pending {
			continue // the rest of the batch, its replies written
		}
		if c.shutReq != nil {
			select {
			case <-c.shutReq.done:
				if c.killReq.Load() || c.hungUp() {
					return // killed or gone meanwhile: what it sent after SHUTDOWN never runs
				}
				continue // refused: runBuffered replies and goes on
			case <-c.srv.closed:
				return
			}
		}
		// At pipeline 1 this read usually finds the socket empty (the
		// client has not answered yet): EAGAIN, park in the netpoller, read
		// again. Yielding first (runtime.Gosched) would let the client
		// answer meanwhile: measured 170-187k -> 208k SET/s with 50 clients
		// on one core, but yielded goroutines sit in the global run queue,
		// which the scheduler serves before it polls the network, so the
		// connections that did park waited: p99 0.7-0.8 -> 1.6-1.9 ms,
		// p99.9 1.2-1.8 -> 4.8-5.7 ms. Tail latency matters more here.
		if err := c.read(); err != nil {
			if c.srv.closing.Load() {
				return
			}
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					c.srv.log.Debug("closing idle client", "id", c.id, "addr", c.addr)
				} else {
					c.srv.log.Debug("client read error", "id", c.id, "addr", c.addr, "err", err)
				}
			}
			return
		}
	}
}

// runBuffered runs every complete request in the buffer. It returns false
// when the connection must close (QUIT, a protocol error or a limit
// exceeded) once its replies are written: the caller writes them (the
// write, and the journal's Sync before it, may wait, which a Pause must
// not wait for: see serve and enterTurn).
func (c *Conn) runBuffered() bool {
	c.pending = false
	if c.shutReq != nil && !c.shutdownOutcome() {
		return true // what it sent after SHUTDOWN waits for the outcome
	}
	for c.r < c.w {
		if c.waiting && c.part.Incomplete(c.buf[c.r:c.w], resp.Limits{MaxBulk: c.srv.maxBulk.Load(), Authed: c.authed}) {
			break // the head request is still incomplete: see partial
		}
		var args [][]byte
		var n int
		var pre *preReq // the request prefetch parsed and looked up
		switch {
		case c.preNext < len(c.pre):
			pre = &c.pre[c.preNext]
			c.preNext++
			args, n = pre.args, pre.n
		case c.srv.prefetch.Load() != prefetchNo && c.prefetch():
			continue
		default:
			lim := resp.Limits{MaxBulk: c.srv.maxBulk.Load(), Authed: c.authed}
			var perr string
			args, n, perr, _ = resp.ParseRequest(c.buf[c.r:c.w], c.args, lim)
			if perr != "" {
				c.srv.log.Info("protocol error, closing client", "id", c.id, "addr", c.addr, "err", perr)
				c.WriteError(perr)
				return false
			}
			if n == 0 {
				c.waiting = true
				break
			}
			c.args = args
		}
		if n == 0 {
			break
		}
		c.r += n
		if c.waiting {
			c.waiting, c.part = false, resp.Partial{}
		}
		if len(args) == 0 {
			continue
		}
		if c.buf[c.r-n] == '*' {
			c.req = c.buf[c.r-n : c.r]
		}
		if pre != nil {
			c.dispatchCmd(pre.cmd, args)
		} else {
			c.dispatch(args)
		}
		c.req = nil
		if c.closeAfter {
			return false
		}
		if c.shutReq != nil {
			break // SHUTDOWN: nothing more runs unless it is refused
		}
		if len(c.out) >= flushAt {
			// The loop (or serve) writes the replies, and runs the
			// rest once the socket has taken them (back pressure).
			// Not here: the write waits for the client, and a
			// goroutine connection waiting for it must not hold
			// Pause back (serve writes between batches).
			c.pending = c.r < c.w
			break
		}
	}
	if c.timing != nil {
		c.settle(c.srv.store.Now())
	}
	c.flushStats()
	// A big value's journal record (APPEND, SETRANGE …) or DUMP payload
	// grew these: let them go, as the buffers below, rather than keep
	// them as long as the connection (ten idle clients that had each
	// dumped a 50 MB key held 500 MB).
	if cap(c.recBuf) > shrinkAt {
		c.recBuf = nil
	}
	if cap(c.valBuf) > shrinkAt {
		c.valBuf = nil
	}
	if c.r == c.w {
		c.r, c.w = 0, 0
		if len(c.buf) > shrinkAt {
			c.buf = make([]byte, defaultReadBytes)
			// The argument lists still point into the old buffer, and a
			// request with many arguments grew them: let both go.
			c.args, c.preArgs = nil, nil
		}
	}
	return true
}

// hungUp reads what the client sent while its SHUTDOWN waited (the
// goroutine does not read meanwhile), waiting at most a millisecond for
// more, and reports whether the client closed its connection in that
// time. Its requests after SHUTDOWN then never run, as with the event
// loop, which drops the client when its socket reports the hang-up (and
// as in Redis, which frees a client blocked in SHUTDOWN when it hangs
// up). With a full buffer, or client-query-buffer-limit's worth of bytes
// unparsed, it stops looking: those requests run (read refuses a request
// over the limit, as ever), and the next read finds the end.
func (c *Conn) hungUp() bool {
	defer c.nc.SetReadDeadline(time.Time{}) // read sets the idle deadline again
	for end := c.readEnd(c.srv.queryLimit.Load()); c.w < end; {
		// A deadline already past would fail the read before it looks.
		c.nc.SetReadDeadline(time.Now().Add(time.Millisecond))
		n, err := c.nc.Read(c.buf[c.w:end])
		c.w += n
		c.qbuf.Store(int64(c.w - c.r))
		c.srv.netIn.Add(int64(n))
		if err != nil {
			var ne net.Error
			return !errors.As(err, &ne) || !ne.Timeout()
		}
	}
	return false
}

// read reads more bytes from the socket, growing the buffer when a request
// does not fit, within client-query-buffer-limit: the unparsed bytes never
// pass the limit, even one below the first buffer's size (a request over
// it is refused, and a pipeline of small ones is read in pieces).
func (c *Conn) read() error {
	limit := c.srv.queryLimit.Load()
	if c.w >= c.readEnd(limit) {
		_, _, _, need := resp.ParseRequest(c.buf[c.r:c.w], c.args, resp.Limits{MaxBulk: c.srv.maxBulk.Load(), Authed: true})
		pending := c.w - c.r
		if int64(pending) >= limit || int64(need) > limit {
			return c.overQueryLimit()
		}
		want := max(pending*2, need, defaultReadBytes)
		if int64(want) > limit {
			want = int(limit)
		}
		if c.r > 0 && want <= len(c.buf) {
			copy(c.buf, c.buf[c.r:c.w])
		} else {
			nb := make([]byte, want)
			copy(nb, c.buf[c.r:c.w])
			c.buf = nb
		}
		c.w -= c.r
		c.r = 0
	}
	end := c.readEnd(limit)
	var n int
	var err error
	if c.loop != nil {
		n, err = c.readSome(c.buf[c.w:end])
	} else {
		if t := c.srv.idleTimeout.Load(); t > 0 {
			c.nc.SetReadDeadline(time.Now().Add(time.Duration(t) * time.Second))
		}
		n, err = c.nc.Read(c.buf[c.w:end])
	}
	c.w += n
	c.qbuf.Store(int64(c.w - c.r))
	c.srv.netIn.Add(int64(n))
	if n > 0 && int64(c.w-c.r) > c.srv.queryLimit.Load() {
		// A read that began before CONFIG SET lowered
		// client-query-buffer-limit (a goroutine waits in it) took
		// more than the limit now allows: as Redis, which checks the
		// limit after every read, refuse the request rather than let
		// it go on filling the buffer.
		return c.overQueryLimit()
	}
	if n > 0 {
		return nil
	}
	return err
}

// overQueryLimit refuses the request that took the query buffer past
// client-query-buffer-limit: Redis's error, then the connection closes
// (read's caller sees io.EOF).
func (c *Conn) overQueryLimit() error {
	c.srv.log.Warn("client query buffer over limit, closing", "id", c.id, "addr", c.addr, "bytes", c.w-c.r)
	c.WriteError(errQueryBufLimit)
	c.flush()
	return io.EOF
}

// readEnd is where the next read must stop: the buffer's end, or sooner
// when the unparsed bytes would pass limit.
func (c *Conn) readEnd(limit int64) int {
	if int64(len(c.buf)-c.r) > limit {
		return c.r + int(limit)
	}
	return len(c.buf)
}

// flush writes the pending replies. Records the batch journaled are made
// durable first (per appendfsync), so no reply gets ahead of its write.
func (c *Conn) flush() error {
	if len(c.out) == 0 {
		return nil
	}
	if err := c.syncJournal(); err != nil {
		return err
	}
	if c.loop != nil {
		return c.writeSome() // what the socket does not take now, the loop writes later
	}
	n, err := c.write(c.out)
	c.srv.netOut.Add(int64(n))
	c.resetOut()
	return err
}

// write writes b to c's connection (goroutine mode). With timeout set, a
// client that takes none of it for that long is closed, as an idle one
// is (and as the event loops close it): without a deadline, a client that
// never read kept its goroutine and its replies, up to a 512 MB value,
// for good. The deadline is renewed every flushAt bytes, so that a client
// reading a big reply slowly is not taken for idle.
func (c *Conn) write(b []byte) (int, error) {
	t := c.srv.idleTimeout.Load()
	if t <= 0 {
		if c.writeDeadline { // timeout was turned off since
			c.nc.SetWriteDeadline(time.Time{})
			c.writeDeadline = false
		}
		return c.nc.Write(b)
	}
	n := 0
	for n < len(b) {
		c.nc.SetWriteDeadline(time.Now().Add(time.Duration(t) * time.Second))
		c.writeDeadline = true
		m, err := c.nc.Write(b[n:min(len(b), n+flushAt)])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// syncJournal waits until this connection's writes are as durable as
// appendfsync demands: replies must not leave before. When that cannot be
// done (the log closed under always while the disk failed, or a failed
// fsync lost the records: persist.ErrLost) the replies are dropped and the
// error returned, and the caller closes the connection: the client sees
// the outcome of its writes as unknown, never as a success that a crash
// could undo. Under always the replies also wait for the records of other
// clients they may show (Server.readBarrier): a batch that wrote nothing
// waits for them without failing (waitReadBarrier), one that wrote waits
// for them along with its own.
func (c *Conn) syncJournal() error {
	if c.journalSeq == 0 && c.jerr == nil {
		c.waitReadBarrier()
		return nil
	}
	err := c.jerr
	if seq := c.journalSeq; seq != 0 {
		if r, rseq := c.srv.readBarrier(); r == c.jref && rseq > seq {
			seq = rseq // records of others the batch may have read
		}
		if serr := c.jref.j.Sync(seq); err == nil {
			err = serr
		}
	}
	c.journalSeq, c.jref, c.jerr = 0, nil, nil // nil: a closed log is not kept alive
	if err != nil {
		c.dropReplies(err)
		c.closeAfter = true
	}
	return err
}

// waitReadBarrier waits until the records c's replies may show are as
// durable as appendfsync demands (see Server.readBarrier), for a batch
// that journaled nothing itself. A failure to get there is no reason to
// hold its replies back: they acknowledge no write (and during a disk
// outage reads are answered).
func (c *Conn) waitReadBarrier() {
	if r, seq := c.srv.readBarrier(); seq != 0 {
		r.syncOrFailing(seq)
	}
}

// dropReplies drops c's pending replies because the journal could not make
// its writes durable (err); the caller closes c.
func (c *Conn) dropReplies(err error) {
	c.srv.log.Error("journal sync failed; closing the client without the replies to its writes",
		"id", c.id, "addr", c.addr, "err", err)
	c.resetOut()
}

// resetOut empties the reply buffer once it has been written, dropping it
// when a big reply grew it.
func (c *Conn) resetOut() {
	if cap(c.out) > shrinkAt {
		c.out = nil
	} else {
		c.out = c.out[:0]
	}
}

func (c *Conn) close() {
	c.unwatchAll()
	if c.loop != nil {
		c.closeSocket()
	} else {
		c.nc.Close()
	}
	c.srv.removeConn(c)
}

// dispatch checks and runs (or queues) one request.
func (c *Conn) dispatch(args [][]byte) { c.dispatchCmd(c.lookup(args[0]), args) }

// dispatchCmd is dispatch for a request whose command has been looked up
// (nil: unknown).
func (c *Conn) dispatchCmd(cmd *Command, args [][]byte) {
	if cmd == nil {
		c.flagTx()
		c.WriteError(unknownCommand(args))
		return
	}
	if !cmd.arityOK(len(args)) {
		c.flagTx()
		cmd.rejected.Add(1)
		if cmd.Name != "exec" {
			c.WriteError(fmt.Sprintf(errWrongArgs, cmd.Name))
			return
		}
		// EXEC refused discards the transaction, as Redis's
		// execCommandAbort does, instead of leaving it open.
		c.tx.reset()
		c.unwatchAll()
		c.WriteError(errExecAbortBecause + strings.TrimPrefix(fmt.Sprintf(errWrongArgs, cmd.Name), "ERR "))
		return
	}
	if cmd.subs != nil && len(args) > 1 {
		// A container's subcommand is checked as the command is (and
		// before AUTH), so that MULTI refuses it instead of queuing it.
		if sub, msg := cmd.subcommand(args); msg != "" {
			c.flagTx()
			if sub != nil { // commandstats counts a subcommand's calls on its container
				cmd.rejected.Add(1)
			}
			c.WriteError(msg)
			return
		}
	}
	if !c.authed && cmd.Flags&FlagNoAuth == 0 {
		c.flagTx()
		cmd.rejected.Add(1)
		if cmd.Name == "exec" {
			// As Redis's rejectCommand: EXEC refused is execCommandAbort.
			c.WriteError(errExecAbortBecause + errNoAuth)
			return
		}
		c.WriteError(errNoAuth)
		return
	}
	if c.tx.active && cmd.Flags&FlagTxControl == 0 {
		if cmd.Flags&FlagNoMulti != 0 {
			c.flagTx()
			cmd.rejected.Add(1)
			c.WriteError(errNotInMulti)
			return
		}
		// Refused while the disk fails before it is queued, as in
		// Redis (processCommand checks the disk before queueing):
		// EXEC then discards the transaction for previous errors.
		// EXEC checks again, for a disk that failed after queueing.
		if cmd.Flags&(FlagWrite|FlagDiskSignal) != 0 && !c.replaying {
			if msg := c.diskError(); msg != "" {
				c.flagTx()
				cmd.rejected.Add(1)
				c.WriteError(msg)
				return
			}
		}
		c.queue(cmd, args)
		return
	}
	c.call(cmd, args)
}

// lookup is lookupCommand behind the connection's small cache of the
// names it sent last, byte for byte as the client spelled them: a client
// repeats a few commands (one for a pipeline of CL.THROTTLE, six for the
// MULTI sliding-log recipe), and comparing a name is cheaper than
// lower-casing and hashing it for the table (the map lookup and hash were
// 2.5 % of CL.THROTTLE's server profile at pipeline 32, 4.2 % of the
// recipe's).
func (c *Conn) lookup(name []byte) *Command {
	if cmd := c.names.get(name); cmd != nil {
		return cmd
	}
	cmd := lookupCommand(name)
	if cmd != nil {
		c.names.put(name, cmd)
	}
	return cmd
}

// nameCache maps up to eight command names, as sent, to their commands.
// Lookups scan from the slot of the last hit, so a repeated command hits
// at once and a repeated sequence (filled in its order) on the next slot.
type nameCache struct {
	names [8][24]byte
	lens  [8]uint8
	cmds  [8]*Command
	last  uint8 // slot of the last hit
	next  uint8 // slot the next miss fills
}

func (nc *nameCache) get(name []byte) *Command {
	i := nc.last
	for range len(nc.cmds) {
		if int(nc.lens[i]) == len(name) && nc.cmds[i] != nil && string(nc.names[i][:len(name)]) == string(name) {
			nc.last = i
			return nc.cmds[i]
		}
		i = (i + 1) % uint8(len(nc.cmds))
	}
	return nil
}

func (nc *nameCache) put(name []byte, cmd *Command) {
	if len(name) > len(nc.names[0]) {
		return
	}
	i := nc.next
	nc.next = (i + 1) % uint8(len(nc.cmds))
	nc.lens[i] = uint8(copy(nc.names[i][:], name))
	nc.cmds[i] = cmd
	nc.last = i
}

// call runs cmd with its shards locked, and accounts for it.
//
// The clock is read once per command (time.Now costs ~50-100 ns on this
// kind of VM, more than a GET): that reading is the command's time and
// also ends the timing of the previous command of the batch (settle); the
// batch's last command is settled by one more reading when the batch ends.
func (c *Conn) call(cmd *Command, args [][]byte) {
	if !c.inExec {
		c.now = c.srv.store.Now()
		if c.replaying {
			c.now = 0 // see Replay: no key is expired while the log loads
		}
		c.nowMs = c.now / 1e6
		c.settle(c.now)
		c.timing, c.timingStart = cmd, c.now
	}
	if cmd != c.statCmd {
		c.flushCmdStats()
		c.statCmd, c.statNs = cmd, 0
	}
	c.cmdFailed = false
	if cmd.Flags&(FlagWrite|FlagDiskSignal) != 0 && !c.replaying && !c.inExec { // EXEC checks once for all its commands
		if msg := c.diskError(); msg != "" {
			c.WriteError(msg)
			cmd.rejected.Add(1)
			return
		}
	}
	c.lock(cmd, args)
	// The journal is loaded with the shards locked, and kept to the end
	// of the command: see journal.go on switching appendonly.
	c.jcur = nil
	if cmd.Flags&FlagWrite != 0 && !c.replaying {
		c.jcur = c.srv.jr.Load()
	}
	journal := c.jcur != nil
	var before uint64
	if journal {
		before = c.changeCount()
		c.written = nil
		if cmd.Persist == PersistVerbatim {
			c.freshBefore = c.freshCount()
		}
	}
	func() {
		defer c.recoverPanic(cmd)
		cmd.Handler(c, args)
	}()
	if journal && c.changeCount() != before {
		c.journalEffects(cmd, args)
	}
	c.jcur = nil // as jref once settled: a detached log is not kept alive
	c.unlock()
	if cmd != c.statCmd {
		// EXEC ran other commands, each counted already: this call is
		// EXEC's, not the last of them.
		c.flushCmdStats()
		c.statCmd, c.statNs = cmd, 0
	}
	c.statCalls++
	// total_commands_processed, as Redis's call(): once the command ran
	// (INFO does not count itself), never for one refused before it ran
	// (unknown, wrong arity, NOAUTH, MISCONF) or only queued in MULTI.
	c.batchCmds++
	if c.cmdFailed && !c.replaying {
		// Counted once, on the command whose own reply failed: EXEC only
		// for its own error, not a queued command's.
		cmd.failed.Add(1)
		c.cmdFailed = false
	}
}

// diskError returns the MISCONF error that refuses writes while the disk
// fails, or "": first a failed background save's (with save rules set and
// stop-writes-on-bgsave-error yes), then the append-only file's, in
// Redis's order (writeCommandsDeniedByDiskError).
func (c *Conn) diskError() string {
	if p := c.srv.persist; p != nil && p.BgsaveErr() != nil {
		return errBgsaveDisk
	}
	if j := c.srv.jr.Load(); j != nil {
		if err := j.j.Err(); err != nil {
			return sprintf(errReadOnlyDisk, err.Error())
		}
	}
	return ""
}

// noteWritten tells the journal that e is now the live entry of the
// command's only key (see Conn.written).
func (c *Conn) noteWritten(e *shards.Entry) {
	if c.jcur != nil {
		c.written = e
	}
}

// settle charges the time since the pending command started to it.
func (c *Conn) settle(now int64) {
	if c.timing != nil {
		if d := now - c.timingStart; d > 0 && c.timing == c.statCmd {
			c.statNs += d
		}
		c.timing = nil
	}
}

// flushCmdStats adds the pending calls and time of statCmd to its shared
// counters.
//
// The log's replay at start-up publishes nothing: as in Redis, which runs
// the records it loads outside call(), INFO commandstats starts empty.
func (c *Conn) flushCmdStats() {
	if c.replaying {
		c.statCalls, c.statNs = 0, 0
		return
	}
	if cmd := c.statCmd; cmd != nil && (c.statCalls != 0 || c.statNs != 0) {
		cmd.calls.Add(c.statCalls)
		cmd.usec.Add(c.statNs / 1000)
		c.statCalls, c.statNs = 0, c.statNs%1000
	}
}

// flushStats publishes the connection's pending statistics: at the end of
// every batch, and before INFO reads them.
func (c *Conn) flushStats() {
	c.flushCmdStats()
	if c.batchCmds != 0 {
		c.srv.totalCommands.Add(c.batchCmds)
		c.batchCmds = 0
	}
	if c.statCmd != nil {
		c.lastCmd.Store(c.statCmd)
		c.lastSeen.Store(c.nowMs)
	}
}

// recoverPanic is the last line of defence: a panic inside a handler is
// logged with its stack, answered with an error, and the connection closed.
// The server keeps serving everyone else.
func (c *Conn) recoverPanic(cmd *Command) {
	if r := recover(); r != nil {
		c.srv.log.Error("panic in command handler", "cmd", cmd.Name, "id", c.id, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		c.WriteError(fmt.Sprintf(errPanic, cmd.Name))
		c.closeAfter = true
	}
}

// lock locks the shards cmd touches, in ascending order. Inside EXEC the
// shards are already held.
func (c *Conn) lock(cmd *Command, args [][]byte) {
	if c.inExec {
		return
	}
	st := c.srv.store
	if cmd.Flags&FlagAllShards != 0 {
		st.LockAll()
		c.heldAll = true
		return
	}
	idx := cmd.keyIndexes(args, c.keyBuf[:0])
	c.keyBuf = idx
	held := c.held[:0]
	for _, i := range idx {
		held = shards.AddLockOrder(held, st.ShardIndex(args[i]))
	}
	for _, s := range held {
		st.Lock(s)
	}
	c.held = held
}

// keyShard returns the shard of key, one of the keys of the running
// command, for the store's "In" methods (see shards.Store.Shard): the
// shard lock found it, so when the command (or the transaction) holds a
// single shard, every key it names lives there and the key need not be
// hashed again.
func (c *Conn) keyShard(key []byte) *shards.Shard {
	st := c.srv.store
	if len(c.held) == 1 && !c.heldAll {
		return st.Shard(c.held[0])
	}
	return st.Shard(st.ShardIndex(key))
}

func (c *Conn) unlock() {
	if c.inExec {
		return
	}
	st := c.srv.store
	if c.heldAll {
		st.UnlockAll()
		c.heldAll = false
		return
	}
	for i := len(c.held) - 1; i >= 0; i-- {
		st.Unlock(c.held[i])
	}
	c.held = c.held[:0]
}

// unknownCommand formats Redis's unknown-command error, quoting up to the
// first few arguments as Redis does (each as '%.128s', joined by spaces,
// with a trailing space).
func unknownCommand(args [][]byte) string {
	var b strings.Builder
	for _, a := range args[1:] {
		if b.Len() >= 128 {
			break
		}
		a = cstr(a)
		if room := 128 - b.Len(); len(a) > room {
			a = a[:room]
		}
		b.WriteByte('\'')
		b.Write(sanitizeErr(a))
		b.WriteString("' ")
	}
	name := cstr(args[0])
	if len(name) > 128 {
		name = name[:128]
	}
	return fmt.Sprintf(errUnknownCommand, sanitizeErr(name), b.String())
}

// errArg is an argument as Redis prints it into an error with %s: a C
// string, which ends at its first NUL byte, with CR and LF made spaces
// (sanitizeErr). Errors that redis-cell formats (Rust strings) keep the
// whole argument and use sanitizeErr alone.
func errArg(b []byte) []byte { return sanitizeErr(cstr(b)) }

// sanitizeErr replaces CR and LF, which would break an error line.
func sanitizeErr(b []byte) []byte {
	if bytes.IndexByte(b, '\r') < 0 && bytes.IndexByte(b, '\n') < 0 {
		return b
	}
	b = bytes.ReplaceAll(b, []byte("\r"), []byte(" "))
	return bytes.ReplaceAll(b, []byte("\n"), []byte(" "))
}

// sprintf is fmt.Sprintf, short for error formatting.
func sprintf(format string, a ...any) string { return fmt.Sprintf(format, a...) }

// Name returns the client's name (CLIENT SETNAME).
func (c *Conn) Name() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.name
}

// Prefetching a pipeline batch (prefetch-batch auto or yes).
//
// Under a pipelined load over many keys a command's time goes mostly to
// cache misses: its key's index word, then its entry (and for a sliding
// log three more), each waited for in turn. prefetch parses the requests
// already buffered before any of them runs, and shards.Store.Touch loads
// what their lookups will read, one step of the chain for all keys at a
// time, so that the misses overlap; the commands then run as before, on
// the requests parsed ahead (each is parsed once either way). Measured on
// the 2-core AMD EPYC VM (2026-11-25, server on one core, 50 clients at
// pipeline 32, 100k keys, A/B of one binary, prefetch on and off, 3
// alternating rounds, averages): CL.THROTTLE +11 %, SL.THROTTLE +32 %,
// SET +22 %, GET +10 %, INCR +14 %; PING and pipeline 1 unchanged. The
// MULTI recipe gained 3.5 % while MULTI and EXEC ended a batch, and 6-14 %
// more (two A/B runs) since transactions of key commands are parsed ahead
// through their EXEC and sorted sets' headers and listpacks are touched. (A first version that parsed every request twice
// and locked a shard per key gained 4 % here, and one like it lost 10-18 %
// on an Intel VM in 2026-11-22: the parse-once and the lock-once are what
// make it pay.)

// prefetch-batch settings.
const (
	prefetchNo int32 = iota
	prefetchAuto
	prefetchYes
)

// prefetchMinKeys is where prefetch-batch auto starts touching keys. With
// the keyspace in cache the loads ahead only cost: 1k keys, CL.THROTTLE
// -3 %, GET -5 %; 10k keys, CL.THROTTLE +11 % (same machine and method as
// above): the crossover lies between, and 4096 keys (about 200 KB of
// entries and index) is where a core's L2 starts to run short.
const prefetchMinKeys = 4096

// touchWanted reports whether prefetch should load the batch's keys.
func (s *Server) touchWanted() bool {
	switch s.prefetch.Load() {
	case prefetchYes:
		return true
	case prefetchAuto:
		return s.store.KeysApprox() >= prefetchMinKeys
	}
	return false
}

// preReq is a request parsed ahead by prefetch.
type preReq struct {
	n    int      // bytes it took in the buffer
	args [][]byte // aliasing the buffer
	cmd  *Command // args[0]'s command; nil when unknown or no args
}

// maxPrefetch bounds the requests parsed ahead at once.
const maxPrefetch = 64

// prefetch parses the complete requests at the front of the buffer ahead,
// for runBuffered to run, and has the store load what their keys will
// read (shards.Store.Touch). It stops after the first request that is not
// a plain key command, which might change how the next ones parse (AUTH,
// HELLO, RESET, CONFIG SET …): every request before it is a key command,
// which changes nothing of the kind, so parsing them ahead gives what
// parsing each just before it runs would. It stops before anything
// incomplete or malformed, which runBuffered parses (and reports) itself.
// It reports whether it parsed any request.
func (c *Conn) prefetch() bool {
	c.pre, c.preNext = c.pre[:0], 0
	flat := c.preArgs[:0]
	keys := c.touchKeys[:0]
	b := c.buf[c.r:c.w]
	lim := resp.Limits{MaxBulk: c.srv.maxBulk.Load(), Authed: c.authed}
	// A transaction opened by a MULTI parsed here, with only key commands
	// queued since, changes nothing about parsing when its EXEC (or
	// DISCARD) runs, so parsing goes on past them: a pipeline of MULTI
	// recipes is prefetched many transactions at a time.
	inTx, txHere := c.tx.active, false
	for len(c.pre) < maxPrefetch {
		args, n, perr, _ := resp.ParseRequest(b, c.args, lim)
		c.args = args
		if perr != "" || n == 0 {
			break
		}
		var cmd *Command
		if len(args) > 0 {
			cmd = c.lookup(args[0])
		}
		start := len(flat)
		flat = append(flat, args...)
		c.pre = append(c.pre, preReq{n: n, args: flat[start:len(flat):len(flat)], cmd: cmd})
		b = b[n:]
		if len(args) == 0 {
			continue
		}
		if cmd != nil && len(args) == 1 {
			switch {
			case cmd.Name == "multi" && !inTx:
				inTx, txHere = true, true
				continue
			case (cmd.Name == "exec" || cmd.Name == "discard") && txHere:
				inTx, txHere = false, false
				continue
			}
		}
		if cmd == nil || cmd.FirstKey <= 0 || cmd.Keys != nil || cmd.Flags&(FlagAllShards|FlagTxControl) != 0 {
			break // it runs last: it may change how what follows parses
		}
		if cmd.FirstKey < len(args) {
			keys = append(keys, args[cmd.FirstKey])
		}
	}
	c.preArgs = flat
	if len(keys) >= 2 && c.srv.touchWanted() {
		c.touchSink += c.srv.store.Touch(keys, &c.touchScratch)
	}
	clear(keys)
	c.touchKeys = keys[:0]
	return len(c.pre) > 0
}
