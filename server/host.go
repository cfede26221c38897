package server

import (
	"cmp"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/ratekv/ratekv/command"
	"github.com/ratekv/ratekv/config"
)

// host is the Server as the command layer sees it (command.Host).
type host struct{ s *Server }

// clients returns the connections ordered by id.
func (s *Server) clients() []*Conn {
	s.mu.Lock()
	out := make([]*Conn, 0, len(s.conns))
	for _, c := range s.conns {
		out = append(out, c)
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b *Conn) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

func (h host) Clients() []*command.Client {
	conns := h.s.clients()
	out := make([]*command.Client, len(conns))
	for i, c := range conns {
		out[i] = &c.Client
	}
	return out
}

func (h host) NewClientID() int64 { return h.s.nextID.Add(1) }

func (h host) RequestShutdown(r *command.ShutdownRequest) bool { return h.s.requestShutdown(r) }

func (h host) ConnStats() command.ConnStats {
	s := h.s
	return command.ConnStats{
		Received: s.totalConns.Load(), Rejected: s.rejectedConns.Load(),
		NetIn: s.netIn.Load(), NetOut: s.netOut.Load(),
		Reads: s.reads.Load(), Writes: s.writes.Load(),
	}
}

func (h host) ResetStats() {
	s := h.s
	s.totalConns.Store(0)
	s.rejectedConns.Store(0)
	s.netIn.Store(0)
	s.netOut.Store(0)
	s.reads.Store(0)
	s.writes.Store(0)
}

func (h host) Closing() bool { return h.s.closing.Load() }

// Port is the port of the first plaintext listener (the configured one
// before Listen; with port 0, the one it picked; 0 without one).
func (h host) Port() string {
	s := h.s
	if s.plain > 0 { // set by Listen, before any client connects
		if _, p, err := net.SplitHostPort(s.listeners[0].Addr().String()); err == nil {
			return p
		}
	}
	return strconv.FormatInt(s.cfg.Int(config.Port), 10)
}

// Kill closes c for another client's CLIENT KILL: its read fails and its
// goroutine cleans up, or its event loop closes it at the end of its turn.
func (c *Conn) Kill() {
	if c.loop != nil {
		c.loop.kill(c)
		return
	}
	c.killReq.Store(true) // for serve, should c wait for its SHUTDOWN's outcome
	closeNow(c.nc)
}

// Wake has c run what it has buffered (a SHUTDOWN refused, a pause's end)
// and write what the command layer has for it (published messages,
// MONITOR's lines): its event loop schedules it, or its
// goroutine's read is interrupted (see readGoroutine).
func (c *Conn) Wake() {
	if c.loop != nil {
		c.poke()
		return
	}
	c.woken.Store(true)
	c.nc.SetReadDeadline(time.Now())
}

// Fd returns c's socket descriptor.
func (c *Conn) Fd() int { return c.sockFD }

// Buffers returns the bytes c has read and not yet run, and its read
// buffer's initial size.
func (c *Conn) Buffers() (query, read int64) { return c.qbuf.Load(), defaultReadBytes }
