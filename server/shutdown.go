package server

import (
	"sync/atomic"
	"time"

	"github.com/ratekv/ratekv/command"
)

// Shutting down, as Redis does it: the final save happens while the
// server can still go on, so that a save that fails (a full or broken
// disk) leaves the server running with everything it holds, instead of
// exiting with acknowledged writes that never reached the disk.
//
// main owns the sequence. On SIGTERM, SIGINT or a SHUTDOWN request it
// pauses the server (Pause: no request runs any more, every write made so
// far is in the journal), asks persistence for the final snapshot and a
// flushed, fsynced log, and then either shuts the server down for good
// (Shutdown) or, when that failed and FORCE was not given, resumes it
// (Resume) and refuses the request: the client that sent SHUTDOWN gets
// "-ERR Errors trying to SHUTDOWN. Check logs." and its connection goes
// on with the requests it sent after SHUTDOWN.

// shutdownQueue bounds the SHUTDOWN requests waiting for main; a request
// beyond it is refused at once.
const shutdownQueue = 64

// Shutdowns delivers the SHUTDOWN requests, in the order they came.
func (s *Server) Shutdowns() <-chan *command.ShutdownRequest { return s.shutdowns }

// requestShutdown hands r to main, or reports false when too many wait.
func (s *Server) requestShutdown(r *command.ShutdownRequest) bool {
	select {
	case s.shutdowns <- r:
		return true
	default:
		return false
	}
}

// pauseState is one Pause: resume is closed when it ends.
type pauseState struct {
	resume chan struct{}
}

// Pause stops every request from running and returns once none runs:
// each event loop finishes running the requests of its turn and parks
// before the next (its replies go out once the journal has their records
// as durable as appendfsync demands), and goroutine-per-connection clients
// finish the batch they are running and wait before the next. Connections
// stay open and new ones are accepted; what they send waits. From its
// return until Resume or Shutdown nothing changes the keyspace except
// expiry, so every write made is already in the journal. Call it from
// outside any connection (main).
func (s *Server) Pause() {
	p := &pauseState{resume: make(chan struct{})}
	if !s.pause.CompareAndSwap(nil, p) {
		return // paused already
	}
	s.mu.Lock()
	loops := s.loops
	s.mu.Unlock()
	for _, l := range loops {
		l.releaseTurn() // later waiters return at once: see waitTurn
	}
	// Loops and goroutine connections mark themselves running before
	// they check pause (enterTurn, enterBatch), so one that missed the
	// pause is seen running here. A loop Serve publishes after the read
	// above has been handed no connection before the pause was set.
	for s.running(loops) {
		time.Sleep(100 * time.Microsecond)
	}
}

// running reports whether a loop or a goroutine connection may be
// running requests.
func (s *Server) running(loops []*eventLoop) bool {
	for _, l := range loops {
		if l.runsRequests() {
			return true
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		if c.loop == nil && c.busy.Load() {
			return true
		}
	}
	return false
}

// Resume lets a paused server go on.
func (s *Server) Resume() {
	if p := s.pause.Swap(nil); p != nil {
		close(p.resume)
	}
}

// markRunning sets running (a loop's or a goroutine connection's), first
// waiting while the server is paused. The flag is set before pause is
// read, so a Pause that this call missed sees it set (see Pause).
func (s *Server) markRunning(running *atomic.Bool) {
	for {
		running.Store(true)
		p := s.pause.Load()
		if p == nil {
			return
		}
		running.Store(false)
		<-p.resume
	}
}

// enterBatch marks a goroutine connection busy before it runs a batch,
// waiting first while the server is paused. It reports false once the
// server is closing: requests read but not run are not run.
func (c *Conn) enterBatch() bool {
	c.srv.markRunning(&c.busy)
	if c.srv.closing.Load() {
		c.busy.Store(false)
		return false
	}
	return true
}
