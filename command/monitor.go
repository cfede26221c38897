package command

import (
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratekv/ratekv/internal/sdsargs"
)

// MONITOR, as Redis: every command a client runs, but admin commands, is
// shown to the monitors as
//
//	+1339518083.107412 [0 127.0.0.1:60866] "keys" "*"
//
// when it starts; the commands of a transaction when EXEC runs them, then
// EXEC; a script's commands with "lua" as the address, after EVAL.
//
// A monitor's lines wait in a sink of its own, which the client running
// the command fills and the monitor's connection empties into its
// replies at the end of its next batch (EndBatch; the runtime is woken
// through Peer.Wake when the sink was empty). A monitor that does not
// read its lines as fast as they come is disconnected once its sink holds
// monitorLimit bytes, rather than the server's memory growing with it
// (Redis's client-output-buffer-limit has no limit for normal clients by
// default).

// monitorLimit is the most bytes a monitor's sink holds; a variable for
// tests.
var monitorLimit = 32 << 20

// monitorSink holds the lines not yet handed to a monitor's connection.
type monitorSink struct {
	c      *Client
	mu     sync.Mutex
	buf    []byte
	chunks int64
	dead   bool
}

// pending returns the bytes and lines waiting (CLIENT LIST's omem, oll).
func (s *monitorSink) pending() (bytes, chunks int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int64(len(s.buf)), s.chunks
}

// monitors are the engine's MONITOR clients.
type monitors struct {
	n     atomic.Int32 // len(sinks), for the dispatcher's check
	mu    sync.Mutex
	sinks []*monitorSink
}

func init() {
	register(&Command{Name: "monitor", Arity: 1, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, Handler: cmdMonitor,
		Summary: "Listens for all requests received by the server in real-time.", Group: "server"})
}

// MONITOR
func cmdMonitor(c *Client, args [][]byte) {
	if c.inExec {
		c.WriteError(errMonitorDenyBlocking)
		return
	}
	if c.monitor.Load() != nil {
		return // as Redis: ignored, without a reply
	}
	s := &monitorSink{c: c}
	m := &c.eng.monitors
	m.mu.Lock()
	m.sinks = append(m.sinks, s)
	m.n.Store(int32(len(m.sinks)))
	m.mu.Unlock()
	c.monitor.Store(s)
	c.WriteOK()
}

// stopMonitor removes c from the monitors (RESET, the connection's end).
func (c *Client) stopMonitor() {
	s := c.monitor.Swap(nil)
	if s == nil {
		return
	}
	m := &c.eng.monitors
	m.mu.Lock()
	for i, o := range m.sinks {
		if o == s {
			m.sinks = append(m.sinks[:i], m.sinks[i+1:]...)
			break
		}
	}
	m.n.Store(int32(len(m.sinks)))
	m.mu.Unlock()
	s.mu.Lock()
	s.dead, s.buf = true, nil
	s.mu.Unlock()
}

// monitorCall shows cmd to the monitors unless it is an admin command.
func (c *Client) monitorCall(cmd *Command, args [][]byte) {
	flags := cmd.Flags
	if cmd.subs != nil {
		if sub, _ := cmd.subcommand(args); sub != nil {
			flags |= sub.Flags
		}
	}
	if flags&FlagAdmin == 0 {
		c.feedMonitors(args, c.inScript)
	}
}

// feedMonitors shows args, run by c (from a script when lua), to the
// monitors.
func (c *Client) feedMonitors(args [][]byte, lua bool) {
	now := time.Now()
	line := make([]byte, 0, 64)
	line = append(line, '+')
	line = strconv.AppendInt(line, now.Unix(), 10)
	line = append(line, '.')
	us := now.Nanosecond() / 1000
	for d := 100000; d > 1 && us < d; d /= 10 {
		line = append(line, '0')
	}
	line = strconv.AppendInt(line, int64(us), 10)
	line = append(line, " [0 "...)
	if lua {
		line = append(line, "lua"...)
	} else {
		line = append(line, c.Addr...)
	}
	line = append(line, ']')
	hide := redactions(args)
	for i, a := range args {
		line = append(line, ' ')
		if slices.Contains(hide, i) {
			line = append(line, `"(redacted)"`...)
			continue
		}
		line = sdsargs.AppendRepr(line, a)
	}
	line = append(line, '\r', '\n')
	m := &c.eng.monitors
	m.mu.Lock()
	sinks := m.sinks
	m.mu.Unlock()
	for _, s := range sinks {
		s.push(line)
	}
}

// push appends line to s, waking its connection when s was empty, or
// disconnects the monitor when s is full.
func (s *monitorSink) push(line []byte) {
	s.mu.Lock()
	if s.dead {
		s.mu.Unlock()
		return
	}
	if len(s.buf)+len(line) > monitorLimit {
		s.dead, s.buf = true, nil
		s.mu.Unlock()
		s.c.eng.log.Warn("monitor over its output limit, closing", "id", s.c.ID, "addr", s.c.Addr, "limit", monitorLimit)
		s.c.Peer.Kill()
		return
	}
	wake := len(s.buf) == 0
	s.buf = append(s.buf, line...)
	s.chunks++
	s.mu.Unlock()
	if wake {
		s.c.Peer.Wake()
	}
}

// drainMonitor moves the monitor's waiting lines to c.Out.
func (c *Client) drainMonitor(s *monitorSink) {
	s.mu.Lock()
	if len(s.buf) > 0 {
		c.Out = append(c.Out, s.buf...)
		if cap(s.buf) > shrinkAt {
			s.buf = nil
		} else {
			s.buf = s.buf[:0]
		}
		s.chunks = 0
	}
	s.mu.Unlock()
}
