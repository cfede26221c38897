package command

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/internal/resptest"
	"github.com/ratekv/ratekv/resp"
	"github.com/ratekv/ratekv/shards"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// The command layer's tests drive it over loopback through testServer: a
// goroutine per connection that parses requests, runs them on the
// connection's Client, settles the journal and writes the replies. It is
// the smallest runtime the command layer can have; package server's (event
// loops, flushers, pause and shutdown) is tested there.

// fakeClock is a settable clock for tests: they advance it instead of
// sleeping.
type fakeClock struct{ ns atomic.Int64 }

func (f *fakeClock) Now() int64              { return f.ns.Load() }
func (f *fakeClock) Advance(d time.Duration) { f.ns.Add(int64(d)) }

// testServer serves an Engine on a free loopback port, in-process. It is
// the engine's Host.
type testServer struct {
	srv   *Engine
	store *shards.Store
	clock *fakeClock
	addr  string
	cfg   *config.Config

	ln        net.Listener
	mu        sync.Mutex
	conns     map[int64]*testConn
	wg        sync.WaitGroup
	nextID    atomic.Int64
	closing   atomic.Bool
	shutdowns chan *ShutdownRequest
	received  atomic.Int64
	netIn     atomic.Int64
	netOut    atomic.Int64
}

// testConn is one connection of a testServer; it is its Client's Peer.
type testConn struct {
	Client
	nc    net.Conn
	woken atomic.Bool
}

func (c *testConn) Kill() { c.nc.Close() }

// Wake interrupts serve's read, so that it writes what was published to
// the client (as the server's goroutine mode does).
func (c *testConn) Wake() {
	c.woken.Store(true)
	c.nc.SetReadDeadline(time.Now())
}

func (c *testConn) Buffers() (int64, int64) { return 0, 16 * 1024 }
func (c *testConn) Fd() int                 { return -1 }

// newTestServer starts a server with a fake clock (starting at the real
// time) and optional config as name, value pairs. It stops with the test.
func newTestServer(t testing.TB, conf ...string) *testServer {
	t.Helper()
	return newJournaledServer(t, nil, conf...)
}

// newJournaledServer is newTestServer with journal j (if not nil).
func newJournaledServer(t testing.TB, j Journal, conf ...string) *testServer {
	t.Helper()
	cfg := config.New()
	require.NoError(t, cfg.Set("port", "0"))
	require.NoError(t, cfg.Set("bind", "127.0.0.1"))
	for i := 0; i+1 < len(conf); i += 2 {
		require.NoError(t, cfg.Set(conf[i], conf[i+1]))
	}
	clock := &fakeClock{}
	clock.ns.Store(time.Now().UnixNano())
	store := shards.New(shards.Options{Shards: 8, Now: clock.Now})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	t.Cleanup(store.Close)
	eng := NewEngine(store, cfg, log)
	if j != nil {
		eng.SetJournal(j)
	}
	return serveEngine(t, eng, store, clock, cfg)
}

// serveEngine serves eng on a free loopback port until stop, which runs
// with the test's cleanup at the latest.
func serveEngine(t testing.TB, eng *Engine, store *shards.Store, clock *fakeClock, cfg *config.Config) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ts := &testServer{srv: eng, store: store, clock: clock, addr: ln.Addr().String(), cfg: cfg, ln: ln,
		conns: map[int64]*testConn{}, shutdowns: make(chan *ShutdownRequest, 64)}
	eng.SetHost(ts)
	eng.SetDialer(func(addr string, timeout time.Duration) (io.ReadWriteCloser, error) {
		return net.DialTimeout("tcp", addr, timeout)
	})
	eng.StartReplication()
	go ts.acceptAll()
	t.Cleanup(ts.stop)
	return ts
}

func (ts *testServer) acceptAll() {
	for {
		nc, err := ts.ln.Accept()
		if err != nil {
			return
		}
		c := &testConn{nc: nc}
		ts.srv.InitClient(&c.Client, c, ts.nextID.Add(1), nc.RemoteAddr().String(), nc.LocalAddr().String())
		ts.mu.Lock()
		if ts.closing.Load() {
			ts.mu.Unlock()
			nc.Close()
			return
		}
		ts.conns[c.ID] = c
		ts.received.Add(1)
		ts.wg.Add(1)
		ts.mu.Unlock()
		go func() {
			defer ts.wg.Done()
			ts.serve(c)
		}()
	}
}

// stop closes the listener and every connection and waits for them.
func (ts *testServer) stop() {
	ts.mu.Lock()
	ts.closing.Store(true)
	ts.ln.Close()
	for _, c := range ts.conns {
		c.nc.Close()
	}
	ts.mu.Unlock()
	ts.srv.StopReplication()
	ts.wg.Wait()
}

// serve runs one connection: each read's complete requests are a batch,
// whose replies leave once its journal records are settled.
func (ts *testServer) serve(c *testConn) {
	defer func() {
		c.nc.Close()
		c.Close()
		ts.mu.Lock()
		delete(ts.conns, c.ID)
		ts.mu.Unlock()
	}()
	buf := make([]byte, 0, 64*1024)
	tmp := make([]byte, 64*1024)
	var part resp.Partial
	for {
		if c.woken.Swap(false) {
			c.TakePushes()
			if !ts.writeOut(c) {
				return
			}
		}
		n, err := c.nc.Read(tmp)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			// A Wake: its flag was seen above, or is seen next.
			c.nc.SetReadDeadline(time.Time{})
			c.TakePushes()
			if !ts.writeOut(c) {
				return
			}
			continue
		}
		if err != nil {
			return
		}
		ts.netIn.Add(int64(n))
		buf = append(buf, tmp[:n]...)
		// A request still incomplete is checked only where it grew, as
		// the server does, so that a huge one is not parsed again per read.
		if part.Incomplete(buf, resp.Limits{MaxBulk: ts.srv.MaxBulk(), Authed: c.Authed}) {
			continue
		}
		part = resp.Partial{}
		used := 0
		for {
			m, perr := runRequests(&c.Client, buf[used:])
			used += m
			if perr != "" {
				c.Out = append(c.Out, "-"+perr+"\r\n"...)
				c.CloseAfter = true
			}
			if c.Handoff != nil {
				// PSYNC: the connection is a replica's link now.
				h := c.Handoff
				c.Handoff = nil
				ts.writeOut(c)
				unread := append([]byte(nil), buf[used:]...)
				ts.mu.Lock()
				delete(ts.conns, c.ID)
				ts.mu.Unlock()
				c.Close()
				h(c.nc, unread)
				return
			}
			if !c.Blocked() || c.CloseAfter {
				break
			}
			// SHUTDOWN, WAIT: nothing more runs until they end.
			ts.writeOut(c)
			select {
			case <-c.Unblocked():
				c.BlockOutcome()
			case <-time.After(10 * time.Second):
				return
			}
		}
		buf = append(buf[:0], buf[used:]...)
		c.EndBatch()
		c.TakePushes()
		if err := c.SyncJournal(); err != nil {
			return
		}
		if !ts.writeOut(c) || c.CloseAfter {
			return
		}
	}
}

func (ts *testServer) writeOut(c *testConn) bool {
	if len(c.Out) == 0 {
		return true
	}
	n, err := c.nc.Write(c.Out)
	ts.netOut.Add(int64(n))
	c.ResetOut()
	return err == nil
}

func (ts *testServer) Clients() []*Client {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	out := make([]*Client, 0, len(ts.conns))
	for id := int64(1); id <= ts.nextID.Load(); id++ {
		if c, ok := ts.conns[id]; ok {
			out = append(out, &c.Client)
		}
	}
	return out
}

func (ts *testServer) NewClientID() int64 { return ts.nextID.Add(1) }

func (ts *testServer) RequestShutdown(r *ShutdownRequest) bool {
	select {
	case ts.shutdowns <- r:
		return true
	default:
		return false
	}
}

func (ts *testServer) ConnStats() ConnStats {
	return ConnStats{Received: ts.received.Load(), NetIn: ts.netIn.Load(), NetOut: ts.netOut.Load()}
}

func (ts *testServer) ResetStats() {
	ts.received.Store(0)
	ts.netIn.Store(0)
	ts.netOut.Store(0)
}

func (ts *testServer) Port() string  { _, p, _ := net.SplitHostPort(ts.addr); return p }
func (ts *testServer) Closing() bool { return ts.closing.Load() }

// client returns a go-redis client speaking protocol 2 or 3.
func (ts *testServer) client(t testing.TB, proto int) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: ts.addr, Protocol: proto, MaxRetries: -1, DisableIdentity: false})
	t.Cleanup(func() { c.Close() })
	return c
}

// rawConn sends requests and returns raw reply bytes, for byte-exact tests.
type rawConn struct {
	t  testing.TB
	nc net.Conn
	rd *bufio.Reader
}

func (ts *testServer) raw(t testing.TB) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", ts.addr)
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc, rd: bufio.NewReader(nc)}
}

// do sends a command as a RESP array and returns its raw reply.
func (r *rawConn) do(args ...string) string {
	r.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return r.send(b.String())
}

// send writes raw bytes and returns one raw reply.
func (r *rawConn) send(data string) string {
	r.t.Helper()
	r.nc.SetDeadline(time.Now().Add(5 * time.Second))
	_, err := io.WriteString(r.nc, data)
	require.NoError(r.t, err)
	return r.reply()
}

// reply reads one complete raw reply.
func (r *rawConn) reply() string {
	r.t.Helper()
	r.nc.SetDeadline(time.Now().Add(5 * time.Second))
	var b strings.Builder
	require.NoError(r.t, resptest.ReadReply(r.rd, &b))
	return b.String()
}

// ctx is the context for go-redis calls in tests.
var ctx = context.Background()

// dispatch runs one request as Run does for a request that arrived
// inline (no raw bytes to log as they are).
func (c *Client) dispatch(args [][]byte) { c.dispatchCmd(c.Lookup(args[0]), args) }

// runRequests runs the complete requests at the front of buf on c, as a
// runtime does for one batch, and returns the bytes they took; perr is a
// protocol error that stopped it.
func runRequests(c *Client, buf []byte) (used int, perr string) {
	var args [][]byte
	for used < len(buf) && !c.CloseAfter && !c.Blocked() && c.Handoff == nil {
		a, m, perr, _ := resp.ParseRequest(buf[used:], args, resp.Limits{MaxBulk: c.eng.MaxBulk(), Authed: c.Authed})
		args = a
		if perr != "" || m == 0 {
			return used, perr
		}
		var raw []byte
		if buf[used] == '*' {
			raw = buf[used : used+m]
		}
		used += m
		if len(a) > 0 {
			c.Run(c.Lookup(a[0]), a, raw)
		}
	}
	return used, ""
}

// multibulk encodes args as a RESP array.
func multibulk(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

// scriptStep is one step of a recorded script: a command and the replies
// a real redis-server gave to it, byte for byte, in RESP2 and (when they
// differ) RESP3.
type scriptStep struct {
	args         []string
	resp2, resp3 string // resp3 "" means the same as resp2
}

// runScript sends a script's commands to a server configured with conf
// (name, value pairs), in protocol proto, and requires its replies.
// normalize, when set, maps the replies of a step that may legitimately
// differ onto the forms to compare, or skips the step.
func runScript(t *testing.T, script []scriptStep, proto int, conf []string,
	normalize func(st scriptStep, have, want string) (h, w string, skip bool)) {
	t.Helper()
	r := newTestServer(t, conf...).raw(t)
	if proto == 3 {
		r.do("HELLO", "3")
	}
	for i, st := range script {
		want := st.resp2
		if proto == 3 && st.resp3 != "" {
			want = st.resp3
		}
		have := r.do(st.args...)
		if normalize != nil {
			var skip bool
			if have, want, skip = normalize(st, have, want); skip {
				continue
			}
		}
		if have != want {
			t.Errorf("step %d %q:\nhave %q\nwant %q", i, st.args, have, want)
		}
	}
}
