package server

import (
	"errors"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ratekv/ratekv/command"
	"github.com/ratekv/ratekv/resp"
	"github.com/ratekv/ratekv/shards"
)

// Conn is one client connection: its socket, its read buffer and how the
// runtime serves it; the command layer's state of the client is the
// embedded command.Client. Its fields are owned by the connection's
// goroutine (or its event loop), except the atomics.
type Conn struct {
	command.Client
	srv    *Server
	nc     net.Conn
	raw    syscall.RawConn // nc's file descriptor, for replyWriter; nil: write directly
	writer *replyWriter    // nil: write directly
	wrote  chan int        // how much the writer wrote of Out

	buf  []byte   // read buffer; unread data is buf[r:w]
	r, w int      // read and write positions in buf
	args [][]byte // argument slices of the request being run, reused

	writeDeadline bool // write set a write deadline (goroutine mode)

	// Shutting down (shutdown.go).
	busy  atomic.Bool // a goroutine connection is running a batch (Pause waits)
	poked atomic.Bool // the event loop is to run what c has buffered

	pre          []preReq // requests prefetch parsed ahead; pre[preNext:] are still to run
	preNext      int
	preArgs      [][]byte            // their arguments, one after the other
	touchKeys    [][]byte            // the keys of the requests parsed ahead
	touchScratch shards.TouchScratch // Touch's working memory
	touchSink    uint64              // Touch's results, kept so its loads stay
	// waiting says the request at the head of buf was found incomplete;
	// part is how far it was checked since (see resp.Partial).
	waiting bool
	part    resp.Partial

	// Event-loop mode (loop_linux.go): the loop that owns the socket, and
	// the socket's descriptor (-1 once closed); nc is closed then. The
	// flags are the loop goroutine's.
	loop    *eventLoop
	fd      int
	inTurn  bool                // in the loop's list for this turn
	waitOut bool                // replies wait for room in the socket; reading waits for them
	pending bool                // runBuffered stopped with requests left in buf (also serve's)
	parked  bool                // its replies wait for the disk to recover (see eventLoop.park); its socket is not watched
	parkSeq uint64              // with parked: the journal sequence number its replies wait for
	parkRef *command.JournalRef // with parked: the journal of parkSeq
	killReq atomic.Bool         // CLIENT KILL or the server asked the loop to close it (goroutine mode: CLIENT KILL, see serve)

	qbuf atomic.Int64 // bytes buffered, for CLIENT LIST

	// woken: Wake asked a goroutine connection, waiting in a read, to
	// write what was published to it (see readGoroutine).
	woken  atomic.Bool
	sockFD int // the socket's descriptor when accepted, for CLIENT LIST
	// held says runBuffered stopped at a request CLIENT PAUSE holds back
	// (command.Client.Postponed): the runtime runs it once woken.
	held       bool
	handedOver bool // the connection is a replica's link now (handOver)
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
		if len(c.Out) > 0 {
			if err := c.flushRound(); err != nil {
				return
			}
		}
		if c.CloseAfter || c.srv.closing.Load() {
			return
		}
		if c.Handoff != nil {
			c.handOver()
			return
		}
		if c.pending {
			continue // the rest of the batch, its replies written
		}
		if c.held {
			c.held = false
			if ch := c.PauseEnded(); ch != nil {
				select {
				case <-ch:
				case <-c.srv.closed:
					return
				}
			}
			continue
		}
		if c.Blocked() {
			select {
			case <-c.Unblocked():
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
		// again. No runtime.Gosched first: it would let the client answer
		// meanwhile, but yielded goroutines sit in the global run queue,
		// which the scheduler serves before it polls the network, so the
		// connections that did park would wait. Tail latency matters more.
		if err := c.read(); err != nil {
			if err == errWoken {
				continue // woken: published messages, MONITOR lines or a pause's end
			}
			if c.srv.closing.Load() {
				return
			}
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					c.srv.log.Debug("closing idle client", "id", c.ID, "addr", c.Addr)
				} else {
					c.srv.log.Debug("client read error", "id", c.ID, "addr", c.Addr, "err", err)
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
	if c.Blocked() && !c.BlockOutcome() || c.Handoff != nil {
		return true // what it sent after SHUTDOWN or WAIT waits for the outcome
	}
	for c.r < c.w {
		if c.waiting && c.part.Incomplete(c.buf[c.r:c.w], resp.Limits{MaxBulk: c.srv.MaxBulk(), Authed: c.Authed}) {
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
			lim := resp.Limits{MaxBulk: c.srv.MaxBulk(), Authed: c.Authed}
			var perr string
			args, n, perr, _ = resp.ParseRequest(c.buf[c.r:c.w], c.args, lim)
			if perr != "" {
				c.srv.log.Info("protocol error, closing client", "id", c.ID, "addr", c.Addr, "err", perr)
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
		var raw []byte
		if c.buf[c.r-n] == '*' {
			raw = c.buf[c.r-n : c.r]
		}
		var cmd *command.Command
		if pre != nil {
			cmd = pre.cmd
		} else {
			cmd = c.Lookup(args[0])
		}
		if c.Postponed(cmd) {
			// CLIENT PAUSE: the request stays buffered until the pause
			// ends (the engine wakes every client then).
			c.r -= n
			if pre != nil {
				c.preNext--
			}
			c.held = true
			break
		}
		c.Run(cmd, args, raw)
		if c.CloseAfter {
			return false
		}
		if c.Blocked() || c.Handoff != nil {
			break // SHUTDOWN, WAIT: nothing more runs until they end; PSYNC: nothing more at all
		}
		if len(c.Out) >= flushAt {
			// The loop (or serve) writes the replies, and runs the
			// rest once the socket has taken them (back pressure).
			// Not here: the write waits for the client, and a
			// goroutine connection waiting for it must not hold
			// Pause back (serve writes between batches).
			c.pending = c.r < c.w
			break
		}
	}
	c.EndBatch()
	c.TakePushes()
	c.qbuf.Store(int64(c.w - c.r))
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
	for end := c.readEnd(c.srv.QueryLimit()); c.w < end; {
		// A deadline already past would fail the read before it looks.
		c.nc.SetReadDeadline(time.Now().Add(time.Millisecond))
		n, err := c.nc.Read(c.buf[c.w:end])
		c.w += n
		c.qbuf.Store(int64(c.w - c.r))
		c.srv.netIn.Add(int64(n))
		c.srv.reads.Add(1)
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
	limit := c.srv.QueryLimit()
	if c.w >= c.readEnd(limit) {
		_, _, _, need := resp.ParseRequest(c.buf[c.r:c.w], c.args, resp.Limits{MaxBulk: c.srv.MaxBulk(), Authed: true})
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
		n, err = c.readGoroutine(c.buf[c.w:end])
	}
	c.w += n
	c.qbuf.Store(int64(c.w - c.r))
	c.srv.netIn.Add(int64(n))
	c.srv.reads.Add(1)
	if n > 0 && int64(c.w-c.r) > c.srv.QueryLimit() {
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

// errWoken is what read returns when Wake interrupted it.
var errWoken = errors.New("woken")

// readGoroutine reads into b from c's socket (goroutine mode), with the
// idle deadline when timeout is set (not for a Pub/Sub client, which
// Redis never takes for idle). Wake interrupts it by moving the deadline
// to the past: a timeout that is not a full idle period is a wake-up
// (errWoken), whether its flag is seen or was taken by an earlier call.
func (c *Conn) readGoroutine(b []byte) (int, error) {
	t := time.Duration(c.srv.idleTimeout.Load()) * time.Second
	var start time.Time
	if t > 0 && !c.PubSub() {
		start = time.Now()
		c.nc.SetReadDeadline(start.Add(t))
	}
	if c.woken.Swap(false) {
		return 0, errWoken
	}
	n, err := c.nc.Read(b)
	var ne net.Error
	if n == 0 && errors.As(err, &ne) && ne.Timeout() && (start.IsZero() || time.Since(start) < t) {
		if start.IsZero() {
			c.nc.SetReadDeadline(time.Time{})
		}
		return 0, errWoken
	}
	return n, err
}

// overQueryLimit refuses the request that took the query buffer past
// client-query-buffer-limit: Redis's error, then the connection closes
// (read's caller sees io.EOF).
func (c *Conn) overQueryLimit() error {
	c.srv.log.Warn("client query buffer over limit, closing", "id", c.ID, "addr", c.Addr, "bytes", c.w-c.r)
	c.WriteError(resp.ErrQueryBufLimit)
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
	if len(c.Out) == 0 {
		return nil
	}
	if err := c.SyncJournal(); err != nil {
		return err
	}
	if c.loop != nil {
		return c.writeSome() // what the socket does not take now, the loop writes later
	}
	n, err := c.write(c.Out)
	c.srv.netOut.Add(int64(n))
	c.srv.writes.Add(1)
	c.ResetOut()
	return err
}

// write writes b to c's connection (goroutine mode). With timeout set, a
// client that takes none of it for that long is closed, as an idle one
// is (and as the event loops close it), so that a client that never reads
// does not keep its goroutine and its replies for good. The deadline is
// renewed every flushAt bytes, so that a client reading a big reply slowly
// is not taken for idle.
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

func (c *Conn) close() {
	if c.handedOver {
		return // handOver removed it
	}
	c.Client.Close()
	if c.loop != nil {
		c.closeSocket()
	} else {
		c.nc.Close()
	}
	c.srv.removeConn(c)
}

// Prefetching a pipeline batch (prefetch-batch auto or yes).
//
// Under a pipelined load over many keys a command's time goes mostly to
// cache misses: its key's index word, then its entry (and for a sliding
// log three more), each waited for in turn. prefetch parses the requests
// already buffered before any of them runs, and shards.Store.Touch loads
// what their lookups will read, one step of the chain for all keys at a
// time, so that the misses overlap; the commands then run as usual, on
// the requests parsed ahead. Transactions of key commands are parsed ahead
// through their EXEC, and sorted sets' headers and listpacks are touched
// too. It pays because each request is still parsed only once and Touch
// locks each shard once for the whole batch (bench/README.md, Design
// notes).

// prefetch-batch settings.
const (
	prefetchNo int32 = iota
	prefetchAuto
	prefetchYes
)

// prefetchMinKeys is where prefetch-batch auto starts touching keys. With
// the keyspace in cache the loads ahead only cost; 4096 keys (about 200 KB
// of entries and index) is where a core's L2 starts to run short.
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
	n    int              // bytes it took in the buffer
	args [][]byte         // aliasing the buffer
	cmd  *command.Command // args[0]'s command; nil when unknown or no args
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
	lim := resp.Limits{MaxBulk: c.srv.MaxBulk(), Authed: c.Authed}
	// A transaction opened by a MULTI parsed here, with only key commands
	// queued since, changes nothing about parsing when its EXEC (or
	// DISCARD) runs, so parsing goes on past them: a pipeline of MULTI
	// recipes is prefetched many transactions at a time.
	inTx, txHere := c.InMulti(), false
	for len(c.pre) < maxPrefetch {
		args, n, perr, _ := resp.ParseRequest(b, c.args, lim)
		c.args = args
		if perr != "" || n == 0 {
			break
		}
		var cmd *command.Command
		if len(args) > 0 {
			cmd = c.Lookup(args[0])
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
		if cmd == nil || cmd.FirstKey <= 0 || cmd.Keys != nil || cmd.Flags&(command.FlagAllShards|command.FlagTxControl) != 0 {
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

// handOver gives the connection to c.Handoff (after PSYNC: the primary's
// side of a replica's link) with the bytes read and not run, and forgets
// it. Its replies are written.
func (c *Conn) handOver() {
	h := c.Handoff
	c.Handoff = nil
	unread := append([]byte(nil), c.buf[c.r:c.w]...)
	c.r = c.w
	nc := c.nc
	if c.loop != nil {
		var err error
		if nc, err = c.loop.release(c); err != nil {
			c.srv.log.Warn("cannot hand a replica's connection over", "id", c.ID, "addr", c.Addr, "err", err)
			c.Client.Close()
			c.srv.removeConn(c)
			return
		}
	}
	c.handedOver = true
	c.Client.Close()
	c.srv.removeConn(c)
	go h(nc, unread)
}
