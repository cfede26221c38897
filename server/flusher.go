package server

import (
	"runtime"
	"sync"
	"syscall"
)

// Replies are written in rounds, as Redis writes them. (This is the
// goroutine-per-client mode, event-loop no; the event loops of
// loop_linux.go write in rounds by construction.)
//
// Redis runs every request that arrived in one turn of its event loop and
// writes all the replies just before it sleeps again (beforeSleep). A
// goroutine per connection would instead write each connection's replies
// as soon as its batch ran, one write in between two batches of work, and
// every write to a client that had gone idle wakes it: on a VM an
// interprocessor interrupt, paid by the server (sock_def_readable, waking
// the reader). The client, woken for one reply, answers it and sleeps
// again before the next one comes.
//
// So a connection that has run its batch hands its replies to a
// replyWriter and waits. The writer, woken by the first of them, yields
// (runtime.Gosched puts it on the global run queue, which the scheduler
// serves once the connections already runnable have run, and before it
// polls the network again) and then writes the replies of every
// connection that queued meanwhile, back to back: the client is woken once
// per round and finds all of them. The price is the wait for the round,
// which raises tail latency at saturation (bench/README.md, Design notes).
// batch-replies no turns it off.
//
// The writer never waits on a socket: it writes what the socket takes at
// once, and a connection whose client reads slowly finishes its own write
// (blocking only itself). There is one writer per P, so that writes run on
// every core.
type replyWriter struct {
	mu      sync.Mutex
	queue   []*Conn // connections waiting for the next round
	spare   []*Conn // the previous round's slice, reused
	due     bool    // a round is due: the writer has been woken
	stopped bool
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

func newReplyWriter() *replyWriter {
	w := &replyWriter{wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

// enqueue adds c to the next round. It returns false when the writer has
// stopped: the caller writes itself.
func (w *replyWriter) enqueue(c *Conn) bool {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return false
	}
	w.queue = append(w.queue, c)
	wake := !w.due
	w.due = true
	w.mu.Unlock()
	if wake {
		w.wake <- struct{}{} // buffered and drained before due is cleared: never blocks
	}
	return true
}

func (w *replyWriter) run() {
	defer close(w.done)
	for {
		select {
		case <-w.wake:
		case <-w.stop:
			w.mu.Lock()
			w.stopped = true
			w.mu.Unlock()
			w.round() // whoever queued before stopped was set
			return
		}
		runtime.Gosched() // let the connections already runnable queue too
		w.round()
	}
}

// round writes the replies of every queued connection.
func (w *replyWriter) round() {
	w.mu.Lock()
	list := w.queue
	w.queue = w.spare[:0]
	w.due = false
	w.mu.Unlock()
	for i, c := range list {
		c.wrote <- c.writeNow()
		list[i] = nil
	}
	w.spare = list[:0]
}

// close stops the writer once it has served everyone queued; later
// enqueues return false. Shutdown may call it more than once.
func (w *replyWriter) close() {
	w.once.Do(func() { close(w.stop) })
	<-w.done
}

// writeNow writes as much of c.Out as the socket takes without waiting and
// returns how much that was. Errors are left for the connection's own
// write of the rest to find.
func (c *Conn) writeNow() int {
	n := 0
	c.raw.Write(func(fd uintptr) bool {
		for n < len(c.Out) {
			m, err := writeFD(fd, c.Out[n:])
			if err == syscall.EINTR {
				continue
			}
			if err != nil || m <= 0 {
				break
			}
			n += m
		}
		return true // never wait for the socket
	})
	return n
}

// flushRound writes c.Out in the next round of c's writer (see above), or
// at once when replies are not batched or c's socket is not a plain one.
func (c *Conn) flushRound() error {
	w := c.writer
	if w == nil || !c.srv.batchReplies.Load() {
		return c.flush()
	}
	if err := c.SyncJournal(); err != nil {
		return err
	}
	if !w.enqueue(c) {
		return c.flush()
	}
	n := <-c.wrote
	c.srv.netOut.Add(int64(n))
	c.srv.writes.Add(1)
	if n < len(c.Out) {
		c.Out = c.Out[n:] // the client reads slowly: wait for it here
		err := c.flush()
		c.Out = nil // the slice no longer starts at its array's start
		return err
	}
	c.ResetOut()
	return nil
}
