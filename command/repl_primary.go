package command

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/journal"
)

// The primary's side of a replication link: after PSYNC the runtime hands
// the connection over (Client.Handoff) and replLink.serve runs it.

// Link states, as INFO's slaveN state.
const (
	linkWaitBgsave = iota
	linkSendBulk
	linkOnline
)

var linkStateNames = [...]string{"wait_bgsave", "send_bulk", "online"}

var linkIDs atomic.Int64

// replLink is one replica's link on the primary.
type replLink struct {
	r        *replication
	id       int64
	ip       string
	port     int
	addr     string
	wantID   string // PSYNC's replication id ("?": none)
	wantOff  int64  // PSYNC's offset (the next byte wanted, 1-based as Redis's)
	state    atomic.Int32
	ack      atomic.Int64 // REPLCONF ACK offset
	sent     atomic.Int64 // offset up to which the stream was written (-1 before it streams)
	softAt   time.Time    // since when it lags past the soft limit (the cron's)
	ackTime  atomic.Int64 // Unix ns of the last ACK
	wake     *waker
	done     chan struct{}
	closeOne sync.Once
	conn     io.ReadWriteCloser
	cl       *Client // the replica's client as CLIENT LIST shows it (flags=S)
}

// deadliner is a connection with a write deadline (net.Conn).
type deadliner interface {
	SetWriteDeadline(t time.Time) error
	SetReadDeadline(t time.Time) error
}

func (l *replLink) close() {
	l.closeOne.Do(func() {
		close(l.done)
		if l.conn != nil {
			l.conn.Close()
		}
	})
}

// serve runs the link on conn until either side ends it. unread is what
// the replica sent after PSYNC, read already.
func (l *replLink) serve(conn io.ReadWriteCloser, unread []byte) {
	r := l.r
	l.id = linkIDs.Add(1)
	l.conn, l.wake, l.done = conn, newWaker(), make(chan struct{})
	l.ackTime.Store(time.Now().UnixNano())
	l.sent.Store(-1)
	l.cl.Peer = &linkPeer{kill: l.close, fd: connFd(conn)}
	defer conn.Close()

	r.mu.Lock()
	select {
	case <-r.stop:
		r.mu.Unlock()
		return
	default:
	}
	r.links[l] = struct{}{}
	cur, partial := r.partialLocked(l.wantID, l.wantOff)
	id, bl := r.replID, r.bl
	h := cur.h
	if partial {
		l.state.Store(linkOnline)
		l.ack.Store(cur.pos)
	} else {
		h = bl.holdEnd()
	}
	r.mu.Unlock()
	defer bl.release(h)
	defer r.dropLink(l)
	go l.readAcks(io.MultiReader(strings.NewReader(string(unread)), conn))

	w := bufio.NewWriterSize(conn, 64<<10)
	if partial {
		r.partials.Add(1)
		r.log.Info("partial resynchronization request accepted", "replica", l.addr, "offset", cur.pos)
		fmt.Fprintf(w, "+CONTINUE %s\r\n", id)
	} else {
		r.fulls.Add(1)
		if l.wantID != "?" {
			r.partialErrs.Add(1)
		}
		var err error
		if cur, err = l.fullSync(w, bl, h, id); err != nil {
			r.log.Warn("full resynchronization with a replica failed", "replica", l.addr, "err", err)
			return
		}
	}
	l.stream(w, cur)
}

// partialLocked returns a cursor at the offset a replica asks for when the
// backlog holds it under an id this server knows: its own, or its
// previous one up to second_repl_offset (see masterTryPartialResynchronization).
// Without a backlog it creates one for the full resynchronization.
// Requires r.mu held.
func (r *replication) partialLocked(id string, want int64) (cursor, bool) {
	bl := r.bl
	if bl == nil || id == "?" || want < 1 {
		r.ensureBacklogLocked()
		return cursor{}, false
	}
	if id != r.replID && (id != r.replID2 || want > r.secondOff) {
		return cursor{}, false
	}
	return bl.cursorAt(want - 1)
}

// fullSync sends +FULLRESYNC and a snapshot; it returns the cursor where
// the stream continues, reading under h.
func (l *replLink) fullSync(w *bufio.Writer, bl *backlog, h *hold, id string) (cursor, error) {
	r := l.r
	l.state.Store(linkWaitBgsave)
	dir := r.eng.cfg.String(config.Dir)
	f, err := os.CreateTemp(dir, "temp-replica-sync-*.rkv")
	if err != nil {
		return cursor{}, err
	}
	path := f.Name()
	f.Close()
	defer os.Remove(path)
	defer os.Remove(path + ".tmp")
	start := time.Now()
	type result struct {
		size int64
		cur  cursor
		err  error
	}
	done := make(chan result, 1)
	go func() {
		size, cur, err := r.syncSnapshot(bl, h, path, l.done)
		done <- result{size, cur, err}
	}()
	// Newlines keep the link alive while the snapshot is taken, as Redis
	// sends them before its reply: the replica reads them as such.
	tick := time.NewTicker(time.Second)
	var res result
wait:
	for {
		select {
		case res = <-done:
			break wait
		case <-tick.C:
			l.deadline()
			l.conn.Write([]byte("\n"))
		}
	}
	tick.Stop()
	size, cur, err := res.size, res.cur, res.err
	if err != nil {
		return cursor{}, err
	}
	r.log.Info("starting a full resynchronization with a replica", "replica", l.addr, "offset", cur.pos,
		"snapshot_bytes", size, "capture_seconds", fmt.Sprintf("%.3f", time.Since(start).Seconds()))
	l.state.Store(linkSendBulk)
	l.deadline()
	fmt.Fprintf(w, "+FULLRESYNC %s %d\r\n$%d\r\n", id, cur.pos, size)
	f, err = os.Open(path)
	if err != nil {
		return cursor{}, err
	}
	defer f.Close()
	// Write in pieces, each with its deadline: a slow replica may take
	// longer than repl-timeout for the whole file.
	buf := make([]byte, 256<<10)
	for {
		n, rerr := f.Read(buf)
		if n > 0 {
			l.deadline()
			if _, err := w.Write(buf[:n]); err != nil {
				return cursor{}, err
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return cursor{}, rerr
		}
	}
	if err := w.Flush(); err != nil {
		return cursor{}, err
	}
	l.ack.Store(cur.pos)
	l.state.Store(linkOnline)
	return cur, nil
}

// deadline sets the write deadline of repl-timeout.
func (l *replLink) deadline() {
	if d, ok := l.conn.(deadliner); ok {
		d.SetWriteDeadline(time.Now().Add(time.Duration(l.r.eng.cfg.Int(config.ReplTimeout)) * time.Second))
	}
}

// stream sends the stream from cur on until the link ends, dropping a
// replica that falls behind past the output buffer limits.
func (l *replLink) stream(w *bufio.Writer, cur cursor) {
	r := l.r
	r.addWake(l.wake)
	defer r.removeWake(l.wake)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		l.sent.Store(cur.pos)
		cur.settle()
		if p := cur.next(1 << 20); len(p) > 0 {
			// Written from the stream's block itself, not copied.
			l.deadline()
			if err := w.Flush(); err != nil { // +CONTINUE first
				return
			}
			if _, err := l.conn.Write(p); err != nil {
				return
			}
			continue
		}
		if w.Buffered() > 0 { // +CONTINUE, with nothing after it yet
			l.deadline()
			if err := w.Flush(); err != nil {
				return
			}
		}
		l.wake.wait(&cur, tick.C, l.done)
		select {
		case <-l.done:
			return
		default:
		}
	}
}

// overLimit reports whether a streaming link has fallen behind past the
// output buffer limits (client-output-buffer-limit replica): the stream
// not yet written to it, whatever waits in the socket aside. The cron
// checks it, so a link blocked in a write is dropped too.
func (l *replLink) overLimit(end int64, now time.Time, lim outputLimit) bool {
	sent := l.sent.Load()
	if sent < 0 {
		return false
	}
	switch lag := end - sent; {
	case lim.hard > 0 && lag >= lim.hard:
		l.r.log.Warn("replica dropped: it fell behind past the output buffer's hard limit (client-output-buffer-limit replica); it will resynchronize", "replica", l.addr, "lag_bytes", lag)
		return true
	case lim.soft <= 0 || lag < lim.soft:
		l.softAt = time.Time{}
	case l.softAt.IsZero():
		l.softAt = now
	case now.Sub(l.softAt) >= time.Duration(lim.softNs):
		l.r.log.Warn("replica dropped: it stayed behind past the output buffer's soft limit (client-output-buffer-limit replica); it will resynchronize", "replica", l.addr, "lag_bytes", lag)
		return true
	}
	return false
}

// readAcks reads what the replica sends: REPLCONF ACK offset.
func (l *replLink) readAcks(rd io.Reader) {
	defer l.close()
	replconf := lookupCommand([]byte("replconf"))
	br := bufio.NewReader(rd)
	var buf []byte
	var args [][]byte
	tmp := make([]byte, 4096)
	for {
		if d, ok := l.conn.(deadliner); ok {
			d.SetReadDeadline(time.Now().Add(time.Duration(l.r.eng.cfg.Int(config.ReplTimeout)) * time.Second))
		}
		n, err := br.Read(tmp)
		if err != nil {
			return
		}
		buf = append(buf, tmp[:n]...)
		for len(buf) > 0 {
			var used int
			args, used, err = journal.ParseRecord(buf, args)
			if err != nil || used == 0 && len(buf) > 64<<10 {
				l.r.log.Warn("protocol error from a replica; closing its link", "replica", l.addr)
				return
			}
			if used == 0 {
				break
			}
			buf = buf[used:]
			if len(args) == 3 && strings.EqualFold(string(args[0]), "replconf") && strings.EqualFold(string(args[1]), "ack") {
				if off, err := strconv.ParseInt(string(args[2]), 10, 64); err == nil {
					now := time.Now()
					l.ack.Store(off)
					l.ackTime.Store(now.UnixNano())
					l.cl.LastSeen.Store(now.UnixMilli())
					l.cl.lastCmd.Store(replconf)
					l.r.acked()
				}
			}
		}
		if len(buf) == 0 {
			buf = buf[:0]
		}
	}
}

// dropLink forgets a link that ended.
func (r *replication) dropLink(l *replLink) {
	l.close()
	r.mu.Lock()
	delete(r.links, l)
	r.mu.Unlock()
	r.log.Info("connection with a replica lost", "replica", l.addr)
}

// addWake and removeWake maintain the backlog's list of links to wake.
func (r *replication) addWake(ch *waker) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.wakes = append(r.wakes, ch)
	r.publishWakesLocked()
}

func (r *replication) removeWake(ch *waker) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, c := range r.wakes {
		if c == ch {
			r.wakes = append(r.wakes[:i:i], r.wakes[i+1:]...)
			break
		}
	}
	r.publishWakesLocked()
}

func (r *replication) publishWakesLocked() {
	if r.bl == nil {
		return
	}
	w := append([]*waker(nil), r.wakes...)
	r.bl.wake.Store(&w)
}

// contextFrom returns a context cancelled when stop is closed.
func contextFrom(stop <-chan struct{}) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
