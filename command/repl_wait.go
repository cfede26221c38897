package command

import (
	"strconv"
	"time"
)

// WAIT and the runtime's hold on a client that waits (for WAIT's replicas
// or for its SHUTDOWN's outcome): the runtime runs nothing more of the
// client's until Unblocked is closed, then calls BlockOutcome.

// waitReq is one WAIT waiting for its replicas.
type waitReq struct {
	c        *Client
	off      int64     // the offset the replicas must have acknowledged
	num      int64     // how many
	deadline time.Time // zero: none
	n        int64     // the reply, set before done is closed
	done     chan struct{}
	reply    func(*Client) // another reply than n (a cluster change, await), set before done is closed
}

// WAIT numreplicas timeout
func cmdWait(c *Client, args [][]byte) {
	r := c.eng.repl
	num, err := strconv.ParseInt(string(args[1]), 10, 64)
	if err != nil {
		c.WriteError(errNotInt)
		return
	}
	ms, err := strconv.ParseInt(string(args[2]), 10, 64)
	if err != nil {
		c.WriteError(errTimeout)
		return
	}
	if ms < 0 {
		c.WriteError(errTimeoutNegative)
		return
	}
	r.mu.Lock()
	if r.masterHost != "" {
		r.mu.Unlock()
		c.WriteError(errWaitReplica)
		return
	}
	off := r.offsetLocked()
	n := r.ackedLocked(off)
	if n >= num || c.inExec {
		r.mu.Unlock()
		c.WriteInt(n)
		return
	}
	w := &waitReq{c: c, off: off, num: num, done: make(chan struct{})}
	if ms > 0 {
		w.deadline = time.Now().Add(time.Duration(ms) * time.Millisecond)
	}
	r.waits = append(r.waits, w)
	bl := r.bl
	r.mu.Unlock()
	c.wait = w
	if bl != nil {
		bl.appendStream(getackRecord, false) // the replicas acknowledge at once
	}
}

// ackedLocked counts the replicas that acknowledged off. Requires r.mu.
func (r *replication) ackedLocked(off int64) int64 {
	var n int64
	for l := range r.links {
		if l.state.Load() == linkOnline && l.ack.Load() >= off {
			n++
		}
	}
	return n
}

// acked runs when a replica acknowledged an offset.
func (r *replication) acked() {
	r.mu.Lock()
	empty := len(r.waits) == 0
	r.mu.Unlock()
	if !empty {
		r.checkWaits(time.Now())
	}
}

// checkWaits answers the WAITs that have their replicas, or whose time is
// up.
func (r *replication) checkWaits(now time.Time) {
	r.mu.Lock()
	var ready []*waitReq
	keep := r.waits[:0]
	for _, w := range r.waits {
		n := r.ackedLocked(w.off)
		if n >= w.num || !w.deadline.IsZero() && now.After(w.deadline) {
			w.n = n
			ready = append(ready, w)
			continue
		}
		keep = append(keep, w)
	}
	clear(r.waits[len(keep):])
	r.waits = keep
	r.mu.Unlock()
	for _, w := range ready {
		close(w.done)
		if p := w.c.Peer; p != nil {
			p.Wake()
		}
	}
}

// Blocked reports whether the client waits (WAIT, SHUTDOWN, MIGRATE and
// the commands behind its fence, SETSLOT NODE): the runtime
// runs nothing more of it until Unblocked is closed, then BlockOutcome.
func (c *Client) Blocked() bool { return c.Shutdown != nil || c.wait != nil || c.async != nil }

// Unblocked returns a channel closed once the wait is over.
func (c *Client) Unblocked() <-chan struct{} {
	if c.async != nil {
		return c.async.done
	}
	if c.wait != nil {
		return c.wait.done
	}
	return c.Shutdown.Decided()
}

// BlockOutcome writes the reply of a wait that is over and clears it; it
// returns false while the client still waits.
func (c *Client) BlockOutcome() bool {
	if a := c.async; a != nil {
		select {
		case <-a.done:
		default:
			return false
		}
		c.async = nil
		a.reply(c)
		return c.async == nil // a command run again may wait again
	}
	if w := c.wait; w != nil {
		select {
		case <-w.done:
		default:
			return false
		}
		c.wait = nil
		if w.reply != nil {
			w.reply(c)
		} else {
			c.WriteInt(w.n)
		}
		return true
	}
	return c.ShutdownOutcome()
}

// dropWait forgets the WAIT of a client that closed.
func (r *replication) dropWait(w *waitReq) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, x := range r.waits {
		if x == w {
			r.waits = append(r.waits[:i], r.waits[i+1:]...)
			return
		}
	}
}
