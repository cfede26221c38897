package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekv/ratekv/command"
	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/internal/resptest"
	"github.com/ratekv/ratekv/shards"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// fakeClock is a settable clock for tests: they advance it instead of
// sleeping.
type fakeClock struct{ ns atomic.Int64 }

func (f *fakeClock) Now() int64              { return f.ns.Load() }
func (f *fakeClock) Advance(d time.Duration) { f.ns.Add(int64(d)) }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Now().UnixNano())
	return c
}

// testServer is a ratekv server on a free loopback port, in-process.
type testServer struct {
	srv   *Server
	store *shards.Store
	clock *fakeClock
	addr  string
}

// newTestServer starts a server with a fake clock (starting at the real
// time) and optional config as name, value pairs. It stops with the test.
func newTestServer(t testing.TB, conf ...string) *testServer {
	t.Helper()
	return newJournaledServer(t, nil, conf...)
}

// newJournaledServer is newTestServer with journal j (if not nil).
func newJournaledServer(t testing.TB, j command.Journal, conf ...string) *testServer {
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
	srv := New(store, cfg, log)
	if j != nil {
		srv.SetJournal(j)
	}
	require.NoError(t, srv.Listen())
	go srv.Serve()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		store.Close()
	})
	return &testServer{srv: srv, store: store, clock: clock, addr: srv.Addr().String()}
}

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

func contextWithTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

// socketlessConn returns an authenticated connection of s with no socket,
// for driving runBuffered and prefetch directly.
func socketlessConn(s *Server) *Conn {
	c := &Conn{srv: s, buf: make([]byte, defaultReadBytes), fd: -1}
	s.InitClient(&c.Client, c, s.nextID.Add(1), "test", "test")
	c.Authed = true
	return c
}

// infoFields parses INFO text into its fields.
func infoFields(t *testing.T, text string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, line := range strings.Split(text, "\r\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		require.True(t, ok, "line %q", line)
		out[k] = v
	}
	return out
}
