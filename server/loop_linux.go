//go:build linux

package server

import (
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/ratekv/ratekv/command"
	"github.com/ratekv/ratekv/persist"
)

// Event loops (event-loop yes, the default on Linux).
//
// With a goroutine per connection, every reply at pipeline 1 costs two
// reads: the one that brings the request, and the one after the reply
// that finds the socket empty (EAGAIN) before the goroutine parks in Go's
// netpoller, which offers no way to wait for readiness without reading
// first. Redis reads each ready socket once per turn of its epoll loop.
// Where syscalls are expensive (a VM) a server at pipeline 1 spends most
// of its time in the kernel, and the extra read is the gap to Redis
// (bench/README.md, Design notes).
//
// So each loop does what Redis's does: it owns an epoll set of client
// sockets, waits for readiness, reads every ready socket once, runs the
// requests read, settles the journal once for the whole turn (one fsync
// serves every client of the turn under appendfsync always), and writes
// every reply at the end of the turn. A loop runs in an ordinary
// goroutine and never blocks its thread in epoll_wait: the epoll set's own
// descriptor is registered in Go's netpoller, which wakes the loop when
// the set has something to report (epoll sets nest), so timers, the
// journal's writer and the other loops keep running on the same cores.
// There is one loop per P; connections are spread over them by id.
//
// A client that does not read its replies gets no more of its requests
// run: once its unwritten replies pass flushAt, the loop stops reading
// its socket until they drain (as TCP back pressure stops a goroutine).
type eventLoop struct {
	srv   *Server
	epfd  int
	file  *os.File        // epfd as Go's netpoller knows it
	rc    syscall.RawConn // file's, for waiting
	wakeR int             // read end of the wake pipe (in the epoll set)
	wakeW int

	mu       sync.Mutex  // guards adds, pokes, unparks, stopped and the wake pipe's use
	adds     []*Conn     // connections handed over, not yet registered
	pokes    []*Conn     // connections poked (poke), to schedule
	unparks  []unpark    // parked connections whose journal wait ended
	stopped  bool        // the loop has ended: no more adds, no more wakes
	woken    atomic.Bool // the wake pipe holds a byte the loop has not read
	kills    atomic.Bool // some connection of the loop has killReq set
	sweepDue atomic.Bool // tick asks for a look for idle clients (timeout set)
	running  atomic.Bool // between enterTurn and the end of the turn's requests (Server.Pause waits)
	quit     atomic.Bool // stop was called: end even if the server is not closing

	// waitTurn's hand-shake: a waiter takes turned (making it if nil)
	// and sets wanted; at the end of its next turn the loop closes
	// turned and sets it to nil, releasing every waiter at once (the
	// active expiry and a snapshot's capture may wait together).
	wanted atomic.Bool
	turnMu sync.Mutex
	turned chan struct{} // guarded by turnMu

	// Owned by the loop goroutine.
	conns  map[int]*Conn // by descriptor
	events []syscall.EpollEvent
	turn   []*Conn // connections that have something to run this turn
	again  []*Conn // connections with requests left over for the next turn
	spare  []*Conn // the pokes list woke took last, reused (guarded by mu while it is pokes)
	turnMs int64   // with timeout set, the wall clock at the turn's start (Unix ms), else 0
	done   chan struct{}
}

// newEventLoops starts n event loops, or returns nil and an error when the
// system refuses (the server then runs a goroutine per connection).
func newEventLoops(s *Server, n int) ([]*eventLoop, error) {
	var loops []*eventLoop
	for range n {
		l, err := newEventLoop(s)
		if err != nil {
			for _, l := range loops {
				l.stop()
			}
			return nil, err
		}
		loops = append(loops, l)
	}
	return loops, nil
}

func newEventLoop(s *Server) (*eventLoop, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_NONBLOCK|syscall.O_CLOEXEC); err != nil {
		syscall.Close(epfd)
		return nil, os.NewSyscallError("pipe2", err)
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(p[0])}
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, p[0], &ev); err != nil {
		syscall.Close(epfd)
		syscall.Close(p[0])
		syscall.Close(p[1])
		return nil, os.NewSyscallError("epoll_ctl", err)
	}
	// Non-blocking, so that os.NewFile registers it in the netpoller.
	syscall.SetNonblock(epfd, true)
	f := os.NewFile(uintptr(epfd), "epoll")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		syscall.Close(p[0])
		syscall.Close(p[1])
		return nil, err
	}
	l := &eventLoop{
		srv: s, epfd: epfd, file: f, rc: rc, wakeR: p[0], wakeW: p[1],
		conns:  make(map[int]*Conn),
		events: make([]syscall.EpollEvent, 256),
		done:   make(chan struct{}),
	}
	go l.run()
	go l.tick()
	return l, nil
}

// claim makes c, whose connection is nc, the loop's: c gets its own
// descriptor for the socket, and nc is closed. It returns false, leaving c
// and nc as they were, when nc is not a socket the loop can own (c then
// gets its own goroutine). The server calls it before it publishes c, so
// that whoever finds c among the clients sees c.loop; add then hands it
// over.
func (l *eventLoop) claim(c *Conn, nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	// The loop gets its own descriptor for the socket (close-on-exec, and
	// non-blocking since the flag belongs to the shared open file); closing
	// nc then takes the original out of Go's netpoller.
	fd := -1
	var derr error
	rc.Control(func(s uintptr) {
		r, _, e := syscall.Syscall(syscall.SYS_FCNTL, s, syscall.F_DUPFD_CLOEXEC, 0)
		if e != 0 {
			derr = e
			return
		}
		fd = int(r)
	})
	if derr != nil || fd < 0 {
		return false
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return false
	}
	nc.Close()
	c.loop, c.fd = l, fd
	return true
}

// add gives a claimed connection to the loop goroutine.
func (l *eventLoop) add(c *Conn) {
	l.mu.Lock()
	if l.stopped { // the server closed meanwhile
		l.mu.Unlock()
		syscall.Close(c.fd)
		c.fd = -1
		c.srv.removeConn(c)
		return
	}
	l.adds = append(l.adds, c)
	l.mu.Unlock()
	l.wake()
}

// wake makes the loop run a turn soon (new connections, a kill, shutdown).
func (l *eventLoop) wake() {
	if l.woken.CompareAndSwap(false, true) {
		l.mu.Lock()
		if !l.stopped { // else the descriptor may already be another file's
			syscall.Write(l.wakeW, []byte{1})
		}
		l.mu.Unlock()
	}
}

// kill asks the loop to close c at the end of its next turn.
func (l *eventLoop) kill(c *Conn) {
	c.killReq.Store(true)
	l.kills.Store(true)
	l.wake()
}

// poke makes c run what it has buffered (see Server.Pause) and write the
// messages published to it. The loop schedules the connections poked
// since its last turn from a list, so that a PUBLISH to a few of many
// clients does not make it look at every one.
func (c *Conn) poke() {
	if l := c.loop; l != nil && !c.poked.Swap(true) {
		l.mu.Lock()
		l.pokes = append(l.pokes, c)
		l.mu.Unlock()
		l.wake()
	}
}

// enterTurn marks the loop running before a turn, waiting first while
// the server is paused: the loops' enterBatch. A turn reads and runs
// requests; its journal Sync and writes come after running is cleared
// (runTurn), so Pause waits for neither: the records are in the journal,
// and under appendfsync always their replies wait through a disk outage
// (park), the very case where the final save fails and the server must go
// on. It reports false once the server is closing: requests read but not
// run are not run (Shutdown resumes a paused server after it set closing).
func (l *eventLoop) enterTurn() bool {
	l.srv.markRunning(&l.running)
	if l.ending() {
		l.running.Store(false)
		return false
	}
	return true
}

// runsRequests reports whether the loop may be running requests.
func (l *eventLoop) runsRequests() bool { return l.running.Load() }

// stop ends the loop once it has closed its connections and released its
// descriptors.
func (l *eventLoop) stop() {
	l.quit.Store(true)
	l.wake()
	<-l.done
}

// sweepEvery is how often a loop looks for clients idle past timeout:
// Redis's clientsCron looks at each of a few clients every 100 ms (hz 10),
// so an idle client goes within a tenth of a second of its timeout.
const sweepEvery = 100 * time.Millisecond

// tick asks the loop for a look for idle clients every sweepEvery while
// timeout is set, until the loop stops. Each tick gets its look: comparing
// the time since the last look with the period instead would skip about
// every other one (the look starts a little after its tick) and close idle
// clients late.
func (l *eventLoop) tick() {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if l.srv.idleTimeout.Load() > 0 {
				l.sweepDue.Store(true)
				l.wake()
			}
		case <-l.done:
			return
		}
	}
}

func (l *eventLoop) run() {
	defer func() {
		l.mu.Lock()
		l.stopped = true
		adds := l.adds
		l.adds = nil
		syscall.Close(l.wakeR)
		syscall.Close(l.wakeW)
		l.mu.Unlock()
		for _, c := range adds {
			syscall.Close(c.fd)
			c.fd = -1
			c.srv.removeConn(c)
		}
		for _, c := range l.conns {
			c.close()
		}
		l.file.Close()
		close(l.done)
	}()
	for !l.ending() {
		n := l.wait()
		if !l.enterTurn() {
			l.drain()
			continue
		}
		l.turnMs = 0
		if l.srv.idleTimeout.Load() > 0 {
			l.turnMs = time.Now().UnixMilli() // see lastSeen below
		}
		// Scheduled, not copied: a connection left over is in the
		// turn once, even when its socket is also ready (or a parked
		// connection was finished and poked in the same wake-up).
		// Twice in a turn, its second entry would write the replies that
		// its first had parked to wait for the disk (see park).
		l.turn = l.turn[:0]
		for _, c := range l.again {
			l.schedule(c)
		}
		clear(l.again)
		l.again = l.again[:0]
		for i := range n {
			ev := &l.events[i]
			fd := int(ev.Fd)
			if fd == l.wakeR {
				l.woke()
				continue
			}
			c := l.conns[fd]
			if c == nil {
				continue
			}
			if c.waitOut {
				switch {
				case ev.Events&(syscall.EPOLLHUP|syscall.EPOLLERR) != 0 && !c.inTurn:
					l.drop(c) // gone while its replies waited
				case ev.Events&syscall.EPOLLOUT != 0:
					l.writeOut(c) // schedules c once drained, if requests wait
				}
				continue // its requests wait for its replies to drain
			}
			if ev.Events&(syscall.EPOLLIN|syscall.EPOLLHUP|syscall.EPOLLERR|syscall.EPOLLRDHUP) != 0 && !c.pending {
				switch err := c.read(); err {
				case nil:
					// With timeout set, any bytes count as activity, as
					// in Redis: a request uploaded slowly, or requests
					// that run no command, keep the client.
					c.seen(l.turnMs)
				case errAgain:
				default:
					l.readFailed(c, err)
					continue
				}
			}
			l.schedule(c)
		}
		l.runTurn()
		if l.ending() {
			l.drain()
		}
		if l.wanted.Load() {
			l.releaseTurn()
			// Hand the P over now: the waiters, readied by the close,
			// run next. Under a pipelined load the loop never parks,
			// so without this a waiter would run only when the
			// scheduler preempts the loop, once per slice: an
			// append-only rewrite's capture would crawl, and the
			// journal would copy every record appended meanwhile to
			// replay into the new base (bench/README.md, Design notes).
			runtime.Gosched()
		}
	}
}

// releaseTurn releases every waitTurn waiter.
func (l *eventLoop) releaseTurn() {
	l.turnMu.Lock()
	ch := l.turned
	l.turned = nil
	l.wanted.Store(false)
	l.turnMu.Unlock()
	if ch != nil {
		close(ch)
	}
}

// drain, once the server closes, writes out the replies still waiting for
// their clients' sockets, until all are out or the server's drainBy
// passes; it reads and runs nothing more, so that a client reading a big
// reply slowly gets all of it, as a goroutine connection's write does.
func (l *eventLoop) drain() {
	l.finishParked()
	for _, c := range l.conns {
		if !c.waitOut {
			l.drop(c) // nothing to write: its requests would only wake the poll
		}
	}
	l.file.SetReadDeadline(time.Unix(0, l.srv.drainBy.Load()))
	defer l.file.SetReadDeadline(time.Time{})
	for len(l.conns) > 0 {
		n := 0
		if err := l.rc.Read(func(uintptr) bool { n = l.poll(); return n > 0 }); err != nil {
			return // drainBy passed
		}
		for i := range n {
			ev := &l.events[i]
			if int(ev.Fd) == l.wakeR {
				l.woke()
				continue
			}
			c := l.conns[int(ev.Fd)]
			switch {
			case c == nil:
			case ev.Events&(syscall.EPOLLHUP|syscall.EPOLLERR) != 0:
				l.drop(c)
			case ev.Events&syscall.EPOLLOUT != 0 && l.writeOut(c) && !c.waitOut:
				l.drop(c) // all written
			}
		}
	}
}

// waitTurn wakes the loop and returns once it has run a turn (or ended).
// Background work that shares the loop's P calls it between slices
// (shards.Store.SetYield): the loop sits in Go's netpoller, which the
// scheduler consults only when no goroutine is runnable, so yielding the
// P alone does not let it run.
//
// Any number may wait at once, and one turn releases them all: with a
// single token, one of two waiters (the active expiry and a rewrite's
// capture) would wait until someone asked again, the expiry's next tick
// 100 ms later.
func (l *eventLoop) waitTurn() {
	l.turnMu.Lock()
	if l.turned == nil {
		l.turned = make(chan struct{})
	}
	ch := l.turned
	l.turnMu.Unlock()
	l.wanted.Store(true)
	if l.srv.pause.Load() != nil {
		// Paused: the loop runs no request to make way for, and may
		// wait long for the journal (see enterTurn). Pause released
		// the waiters that came before it.
		return
	}
	l.wake()
	select {
	case <-ch:
	case <-l.done:
	}
}

// ending reports whether the loop should close its connections and end.
func (l *eventLoop) ending() bool { return l.srv.closing.Load() || l.quit.Load() }

// wait returns the number of events in l.events, waiting in Go's netpoller
// while there are none and nothing is left over from the last turn.
func (l *eventLoop) wait() int {
	n := l.poll()
	if n > 0 || len(l.again) > 0 {
		return n
	}
	l.rc.Read(func(uintptr) bool {
		n = l.poll()
		return n > 0 || l.ending()
	})
	return n
}

// poll collects the events ready now, without waiting.
func (l *eventLoop) poll() int {
	for {
		r, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_WAIT, uintptr(l.epfd),
			uintptr(unsafe.Pointer(&l.events[0])), uintptr(len(l.events)), 0, 0, 0)
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			return 0
		}
		return int(r)
	}
}

// The loop's reads, writes and polls never wait (the sockets are
// non-blocking, the poll's timeout is 0), so they are raw syscalls: Go's
// syscall wrappers tell the scheduler that the thread may block, and
// sysmon, seeing the loop in syscalls back to back, would keep taking its
// P away and handing it to another thread (futex wakeups and context
// switches).
func rawRead(fd int, b []byte) (int, syscall.Errno) {
	if len(b) == 0 {
		return 0, 0
	}
	r, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	return int(r), e
}

func rawWrite(fd int, b []byte) (int, syscall.Errno) {
	if len(b) == 0 {
		return 0, 0
	}
	r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	return int(r), e
}

// woke drains the wake pipe and registers the connections handed over.
func (l *eventLoop) woke() {
	var b [64]byte
	for {
		if n, _ := syscall.Read(l.wakeR, b[:]); n < len(b) {
			break
		}
	}
	l.woken.Store(false)
	l.mu.Lock()
	adds, done, pokes := l.adds, l.unparks, l.pokes
	l.adds, l.unparks, l.pokes = nil, nil, l.spare[:0]
	l.mu.Unlock()
	l.unparkAll(done)
	for _, c := range adds {
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(c.fd)}
		if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, c.fd, &ev); err != nil {
			l.srv.log.Warn("cannot watch client socket, closing it", "id", c.ID, "addr", c.Addr, "err", err)
			c.close()
			continue
		}
		l.conns[c.fd] = c
		if c.killReq.Load() {
			// Killed between being published and handed over: the
			// kill's wake-up found it in neither adds nor conns.
			l.schedule(c)
		}
	}
	for i, c := range pokes {
		// A SHUTDOWN refused (reply, run the rest), or messages
		// published to it.
		c.poked.Store(false)
		if c.fd >= 0 {
			l.schedule(c)
		}
		pokes[i] = nil
	}
	l.spare = pokes[:0]
	// Killed connections and, with timeout set, idle ones.
	now := time.Now()
	t := l.srv.idleTimeout.Load()
	sweep := l.sweepDue.Swap(false) && t > 0
	if !l.kills.Swap(false) && !sweep {
		return
	}
	for _, c := range l.conns {
		switch {
		case c.killReq.Load():
			l.schedule(c)
		// A parked client is not idle: it waits for the disk, as a
		// goroutine connection waits in its journal sync (and as
		// Redis spares a blocked client).
		// Nor is a Pub/Sub client, as in Redis.
		case sweep && !c.parked && !c.PubSub() && now.UnixMilli()-c.LastSeen.Load() > t*1000:
			l.srv.log.Debug("closing idle client", "id", c.ID, "addr", c.Addr)
			l.drop(c)
		}
	}
}

// schedule puts c in this turn's list once.
func (l *eventLoop) schedule(c *Conn) {
	if !c.inTurn {
		c.inTurn = true
		l.turn = append(l.turn, c)
	}
}

func (l *eventLoop) readFailed(c *Conn, err error) {
	if !errors.Is(err, io.EOF) {
		l.srv.log.Debug("client read error", "id", c.ID, "addr", c.Addr, "err", err)
	}
	l.closeSoon(c)
}

// closeSoon closes c: at the end of this turn when c is in its list (the
// turn still holds it), else now. It reports whether c is still open.
func (l *eventLoop) closeSoon(c *Conn) bool {
	if c.inTurn {
		c.CloseAfter = true
		return true
	}
	l.drop(c)
	return false
}

// drop closes c now (it is in no list).
func (l *eventLoop) drop(c *Conn) {
	if c.fd < 0 {
		return
	}
	delete(l.conns, c.fd)
	c.close()
}

// runTurn runs the requests of every connection of the turn, settles the
// journal for all of them, and writes their replies.
//
// In the turn of a switch of appendonly, connections may hold records of
// two journals: the turn settles the attached one (or the first it met)
// once, and each connection of another on its own; that one is closed by
// then, so its Sync returns at once (see command.Mark).
func (l *eventLoop) runTurn() {
	var seq uint64
	var ref *command.JournalRef
	for _, c := range l.turn {
		if c.fd < 0 || c.killReq.Load() || c.CloseAfter || c.waitOut || c.parked {
			continue
		}
		if !c.runBuffered() {
			c.CloseAfter = true
		}
		if c.Journaled.Seq != 0 && c.Journaled.Ref != ref && (ref == nil || c.Journaled.Ref == l.srv.AttachedJournal()) {
			ref, seq = c.Journaled.Ref, 0
		}
		if c.Journaled.Ref == ref {
			seq = max(seq, c.Journaled.Seq)
		}
	}
	// The replies wait for the records they may show, too (readBarrier);
	// in the turn of a switch of appendonly, only for the writes' journal.
	if r, rseq := l.srv.ReadBarrier(); rseq > seq && (ref == nil || ref == r) {
		ref, seq = r, rseq
	}
	l.running.Store(false) // see enterTurn
	var failed error
	outage := false
	if seq != 0 {
		failed = ref.SyncOrFailing(seq)
		outage = errors.Is(failed, persist.ErrFailing)
	}
	var parked []*Conn
	for i, c := range l.turn {
		l.turn[i] = nil
		c.inTurn = false
		held := c.Journaled.Seq != 0 && c.Journaled.Ref == ref
		own := c.Journaled.Err // see command.Mark
		if c.Journaled.Seq != 0 && c.Journaled.Ref != ref {
			if err := c.Journaled.Ref.Sync(c.Journaled.Seq); own == nil {
				own = err
			}
		}
		c.Journaled.Seq, c.Journaled.Ref, c.Journaled.Err = 0, nil, nil // nil: a closed log is not kept alive
		if c.fd < 0 {
			continue
		}
		if c.parked {
			if c.killReq.Load() {
				l.drop(c) // its replies never leave: the outcome is unknown
			}
			continue
		}
		if outage && held && own == nil {
			parked = append(parked, c)
			continue
		}
		if failed != nil && held && own == nil {
			own = failed
		}
		if own != nil {
			// As Client.SyncJournal: no reply to writes that are not as
			// durable as appendfsync demands.
			c.DropReplies(own)
			l.drop(c)
			continue
		}
		if len(c.Out) > 0 && !c.waitOut && !l.writeOut(c) {
			continue // closed: the write failed, or it was the last
		}
		if c.killReq.Load() || c.CloseAfter && !c.waitOut {
			l.drop(c)
			continue
		}
		if c.CloseAfter {
			continue // QUIT, a protocol error: writeOut closes c once its replies are out
		}
		if c.Handoff != nil {
			if !c.waitOut {
				delete(l.conns, c.fd)
				c.handOver()
			}
			continue
		}
		if c.pending && !c.waitOut {
			l.again = append(l.again, c)
		}
	}
	l.turn = l.turn[:0]
	if len(parked) > 0 {
		l.park(parked, ref, seq)
	}
}

// unpark is a batch of parked connections and the outcome of their wait.
type unpark struct {
	conns []*Conn
	err   error
}

// park holds the replies of conns, whose writes (up to seq) a failing disk
// keeps from being durable under appendfsync always, and stops reading
// their sockets, while a goroutine waits for the journal; the loop goes on
// serving its other clients (reads are answered, writes refused with
// MISCONF). woke finishes them once the wait ends: it writes their replies,
// or closes them without when the records cannot be made durable.
func (l *eventLoop) park(conns []*Conn, j *command.JournalRef, seq uint64) {
	for _, c := range conns {
		c.parked, c.parkSeq, c.parkRef = true, seq, j
		syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, c.fd, nil)
	}
	go func() {
		err := j.Sync(seq)
		l.mu.Lock()
		l.unparks = append(l.unparks, unpark{conns, err})
		l.mu.Unlock()
		l.wake()
	}()
}

// unparkAll finishes the connections whose journal wait ended (see park).
func (l *eventLoop) unparkAll(done []unpark) {
	for _, u := range done {
		for _, c := range u.conns {
			if !c.parked || c.fd < 0 {
				continue // finished by finishParked, or killed or closed meanwhile
			}
			c.parked, c.parkRef = false, nil
			if u.err != nil {
				c.DropReplies(u.err)
				l.drop(c)
				continue
			}
			ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(c.fd)}
			if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, c.fd, &ev); err != nil {
				l.srv.log.Warn("cannot watch client socket, closing it", "id", c.ID, "addr", c.Addr, "err", err)
				l.drop(c)
				continue
			}
			// As the end of runTurn, for a connection out of the turn.
			if len(c.Out) > 0 && !l.writeOut(c) {
				continue
			}
			switch {
			case c.killReq.Load() || c.CloseAfter && !c.waitOut:
				l.drop(c)
			case c.CloseAfter:
			case (c.pending || c.Blocked() || c.PushesWaiting()) && !c.waitOut:
				l.again = append(l.again, c) // a SHUTDOWN refused meanwhile poked it in vain
			}
		}
	}
}

// finishParked, as the loop ends, finishes the parked connections whose
// records are durable by now, so that drain writes their replies: the
// shutdown's final flush, while the loop was paused, makes them so once
// the disk has recovered, and the loop sees the server closing before it
// sees the wait end. The others are closed without replies, as any
// connection whose writes the journal could not make durable.
func (l *eventLoop) finishParked() {
	var done []*Conn
	for _, c := range l.conns {
		if c.parked && c.parkRef.DurableNow(c.parkSeq) {
			done = append(done, c)
		}
	}
	l.unparkAll([]unpark{{conns: done}})
}

// writeOut writes what the socket takes of c.Out. When some is left, it
// watches the socket for room (and stops reading it) until it has written
// the rest; once all is written it reads again, or, when c is to close
// after its replies (QUIT, a protocol error: Redis's close-after-reply),
// closes it. It returns false when it closed c.
func (l *eventLoop) writeOut(c *Conn) bool {
	c.seen(l.turnMs) // a client reading a long reply is not idle either
	err := c.writeSome()
	if err != nil {
		l.srv.log.Debug("client write error", "id", c.ID, "addr", c.Addr, "err", err)
		return l.closeSoon(c)
	}
	want := len(c.Out) > 0
	if !want && c.CloseAfter && !c.inTurn {
		l.drop(c)
		return false
	}
	if want != c.waitOut {
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(c.fd)}
		if want {
			ev.Events = syscall.EPOLLOUT
		}
		syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_MOD, c.fd, &ev)
		c.waitOut = want
		if !want && (c.pending || c.Blocked() || c.PushesWaiting() || c.Handoff != nil) {
			// Requests left over from before it stalled, its
			// SHUTDOWN's outcome, messages published meanwhile or a
			// replica's handoff (poked while it stalled).
			l.schedule(c)
		}
	}
	return true
}

// seen records activity on c at ms (0: not tracked, no timeout set).
func (c *Conn) seen(ms int64) {
	if ms != 0 {
		c.LastSeen.Store(ms)
	}
}

// errAgain is what readSome returns when the socket has nothing to read.
var errAgain = errors.New("resource temporarily unavailable")

// readSome reads into b from c's socket (event-loop mode).
func (c *Conn) readSome(b []byte) (int, error) {
	for {
		n, err := rawRead(c.fd, b)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return 0, errAgain
		case err != 0:
			return 0, err
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// writeSome writes what c's socket takes of c.Out without waiting, and
// keeps the rest in c.Out (event-loop mode).
func (c *Conn) writeSome() error {
	n := 0
	var err error
	for n < len(c.Out) {
		m, e := rawWrite(c.fd, c.Out[n:])
		if e == syscall.EINTR {
			continue
		}
		if e == syscall.EAGAIN {
			break
		}
		if e != 0 {
			err = e
			break
		}
		n += m
	}
	c.srv.netOut.Add(int64(n))
	c.srv.writes.Add(1)
	switch {
	case n == len(c.Out):
		c.ResetOut()
	case n > 0:
		c.Out = append(c.Out[:0], c.Out[n:]...)
	}
	return err
}

// release takes c's socket out of the loop and returns it as a net.Conn
// of its own (handOver).
func (l *eventLoop) release(c *Conn) (net.Conn, error) {
	fd := c.fd
	syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, fd, nil)
	delete(l.conns, fd)
	c.fd = -1
	f := os.NewFile(uintptr(fd), "replica")
	defer f.Close()
	return net.FileConn(f)
}

// closeSocket closes c's descriptor (event-loop mode; loop goroutine).
func (c *Conn) closeSocket() {
	syscall.EpollCtl(c.loop.epfd, syscall.EPOLL_CTL_DEL, c.fd, nil)
	syscall.Close(c.fd)
	c.fd = -1
}
