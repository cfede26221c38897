package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekv/ratekv/command"
	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/resp"
	"github.com/ratekv/ratekv/shards"
	"github.com/stretchr/testify/require"
)

// nextShutdown returns the SHUTDOWN request main would receive.
func nextShutdown(t *testing.T, ts *testServer) *command.ShutdownRequest {
	t.Helper()
	select {
	case r := <-ts.srv.Shutdowns():
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("SHUTDOWN did not reach main")
		return nil
	}
}

// noReply checks that nothing arrives on r for a moment.
func noReply(t *testing.T, r *rawConn) {
	t.Helper()
	r.nc.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	b, err := r.rd.ReadByte()
	require.Error(t, err, "have reply byte %q", b)
}

// TestPauseStopsRequests: while paused, what clients send is not run (a
// SET does not reach the keyspace, its reply does not come); after Resume
// it runs. Both connection modes, since each pauses differently.
func TestPauseStopsRequests(t *testing.T) {
	for _, mode := range connModes {
		t.Run(mode, func(t *testing.T) {
			ts := newTestServer(t, "event-loop", mode)
			r := ts.raw(t)
			require.Equal(t, "+OK\r\n", r.do("SET", "before", "1"))
			ts.srv.Pause()
			_, err := r.nc.Write([]byte("*3\r\n$3\r\nSET\r\n$6\r\nduring\r\n$1\r\n2\r\n"))
			require.NoError(t, err)
			late := ts.raw(t) // a connection accepted during the pause waits too
			_, err = late.nc.Write([]byte("*3\r\n$3\r\nSET\r\n$4\r\nlate\r\n$1\r\n3\r\n"))
			require.NoError(t, err)
			noReply(t, r)
			noReply(t, late)
			require.Nil(t, ts.store.Peek([]byte("during"), 0))
			require.Nil(t, ts.store.Peek([]byte("late"), 0))
			require.NotNil(t, ts.store.Peek([]byte("before"), 0))
			ts.srv.Resume()
			require.Equal(t, "+OK\r\n", r.reply())
			require.Equal(t, "+OK\r\n", late.reply())
			require.Equal(t, "$1\r\n2\r\n", r.do("GET", "during"))
		})
	}
}

// TestShutdownRefused: SHUTDOWN waits for main's outcome without a reply,
// and what the client pipelined after it waits too; refused, the client
// gets Redis's error and its later requests run. Accepted (the server
// shuts down), the client's connection closes without a reply, and a
// paused server's requests never run.
func TestShutdownRefused(t *testing.T) {
	for _, mode := range connModes {
		t.Run(mode, func(t *testing.T) {
			ts := newTestServer(t, "event-loop", mode)
			r := ts.raw(t)
			_, err := r.nc.Write([]byte("*2\r\n$8\r\nSHUTDOWN\r\n$5\r\nFORCE\r\n*3\r\n$3\r\nSET\r\n$5\r\nafter\r\n$1\r\n1\r\n"))
			require.NoError(t, err)
			req := nextShutdown(t, ts)
			require.True(t, req.Force)
			require.Equal(t, 0, req.Save)
			noReply(t, r)
			require.Nil(t, ts.store.Peek([]byte("after"), 0), "a request after SHUTDOWN ran before the outcome")
			other := ts.raw(t)
			require.Equal(t, "+PONG\r\n", other.do("PING"), "other clients go on")

			ts.srv.Pause()
			ts.srv.Resume()
			req.Refuse()
			require.Equal(t, "-"+"ERR Errors trying to SHUTDOWN. Check logs."+"\r\n", r.reply())
			require.Equal(t, "+OK\r\n", r.reply())
			require.Equal(t, "$1\r\n1\r\n", r.do("GET", "after"))

			// Again, and this time the shutdown goes ahead.
			_, err = r.nc.Write([]byte("*2\r\n$8\r\nSHUTDOWN\r\n$6\r\nNOSAVE\r\n*3\r\n$3\r\nSET\r\n$5\r\nnever\r\n$1\r\n1\r\n"))
			require.NoError(t, err)
			req = nextShutdown(t, ts)
			require.Equal(t, -1, req.Save)
			require.False(t, req.Force)
			ts.srv.Pause()
			_, err = other.nc.Write([]byte("*3\r\n$3\r\nSET\r\n$6\r\nnever3\r\n$1\r\n1\r\n"))
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			require.NoError(t, ts.srv.Shutdown(ctx))
			r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			b, err := r.rd.ReadByte()
			require.Error(t, err, "have reply byte %q", b)
			require.Nil(t, ts.store.Peek([]byte("never"), 0))
			require.Nil(t, ts.store.Peek([]byte("never3"), 0))
		})
	}
}

// TestShutdownQueueFull: SHUTDOWN requests beyond what main has taken are
// refused at once rather than waiting forever.
func TestShutdownQueueFull(t *testing.T) {
	ts := newTestServer(t)
	for range shutdownQueue {
		ts.srv.shutdowns <- &command.ShutdownRequest{}
	}
	r := ts.raw(t)
	require.Equal(t, "-"+"ERR Errors trying to SHUTDOWN. Check logs."+"\r\n", r.do("SHUTDOWN"))
	require.Equal(t, "+PONG\r\n", r.do("PING"))
}

// peekInt reads key's integer value with its shard locked (0 when absent).
func peekInt(t *testing.T, st *shards.Store, key string) int64 {
	t.Helper()
	i := st.ShardIndex([]byte(key))
	st.Lock(i)
	defer st.Unlock(i)
	e := st.Peek([]byte(key), 0)
	if e == nil {
		return 0
	}
	n, ok := e.Int()
	require.True(t, ok)
	return n
}

// pauseWithin runs Pause and fails the test when it has not returned
// within d.
func pauseWithin(t *testing.T, srv *Server, d time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		srv.Pause()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("Pause did not return within %v", d)
	}
}

// TestPauseWhileAClientDoesNotRead: a client whose pipeline's replies fill
// its socket, and that does not read them, does not hold Pause (and so
// SIGTERM or SHUTDOWN) back; what it sent runs no further while paused,
// and the rest runs, in order, after Resume.
func TestPauseWhileAClientDoesNotRead(t *testing.T) {
	for _, mode := range connModes {
		t.Run(mode, func(t *testing.T) {
			ts := newTestServer(t, "event-loop", mode)
			val := strings.Repeat("x", flushAt)
			r := ts.raw(t)
			require.Equal(t, "+OK\r\n", r.do("SET", "v", val))
			const n = 400 // ~26 MB of replies, more than the sockets hold
			r.nc.SetDeadline(time.Now().Add(30 * time.Second))
			_, err := io.WriteString(r.nc, strings.Repeat("*2\r\n$4\r\nINCR\r\n$1\r\nc\r\n*2\r\n$3\r\nGET\r\n$1\r\nv\r\n", n))
			require.NoError(t, err)
			require.Eventually(t, func() bool { return peekInt(t, ts.store, "c") > 0 }, 5*time.Second, time.Millisecond)
			time.Sleep(200 * time.Millisecond) // the server stalls on the full socket

			pauseWithin(t, ts.srv, 5*time.Second)
			at := peekInt(t, ts.store, "c")
			require.Less(t, at, int64(n), "the whole pipeline ran before the sockets filled")
			// Read every reply meanwhile (in event-loop mode those of a
			// parked loop wait for Resume): nothing more runs while
			// paused.
			want := "$65536\r\n" + val + "\r\n"
			errc := make(chan error, 1)
			go func() {
				errc <- func() error {
					buf := make([]byte, len(want))
					for i := 1; i <= n; i++ {
						line, err := r.rd.ReadString('\n')
						if err != nil {
							return err
						}
						if line != ":"+strconv.Itoa(i)+"\r\n" {
							return fmt.Errorf("reply %d: %q", i, line)
						}
						if _, err := io.ReadFull(r.rd, buf); err != nil {
							return err
						}
						if string(buf) != want {
							return fmt.Errorf("reply %d: not the value", i)
						}
					}
					return nil
				}()
			}()
			time.Sleep(300 * time.Millisecond)
			require.Equal(t, at, peekInt(t, ts.store, "c"), "requests ran after Pause returned")
			ts.srv.Resume()
			require.NoError(t, <-errc)
			require.Equal(t, int64(n), peekInt(t, ts.store, "c"))
		})
	}
}

// TestPauseBeforeTheLoopsStart: a Pause that comes before Serve has made
// its event loops (main's signal right after start-up) holds them too: a
// request that arrives meanwhile waits for Resume, and the loop that parks
// without Pause knowing of it does not crash the server.
func TestPauseBeforeTheLoopsStart(t *testing.T) {
	cfg := config.New()
	require.NoError(t, cfg.Set("port", "0"))
	require.NoError(t, cfg.Set("bind", "127.0.0.1"))
	store := shards.New(shards.Options{Shards: 8})
	srv := New(store, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, srv.Listen())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		store.Close()
	})
	srv.Pause()
	go srv.Serve()
	ts := &testServer{srv: srv, store: store, addr: srv.Addr().String()}
	r := ts.raw(t)
	_, err := r.nc.Write([]byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\n1\r\n"))
	require.NoError(t, err)
	noReply(t, r)
	require.Zero(t, peekInt(t, store, "k"), "a request ran while paused")
	srv.Resume()
	require.Equal(t, "+OK\r\n", r.reply())
	require.Equal(t, "+PONG\r\n", r.do("PING"))
}

// TestShutdownWaiterKilled: a client killed (CLIENT KILL) while its
// SHUTDOWN waits for main's outcome runs nothing more when the SHUTDOWN is
// refused: what it pipelined after SHUTDOWN never runs, as for any killed
// client.
func TestShutdownWaiterKilled(t *testing.T) {
	for _, mode := range connModes {
		t.Run(mode, func(t *testing.T) {
			ts := newTestServer(t, "event-loop", mode)
			r := ts.raw(t)
			id := strings.TrimSuffix(strings.TrimPrefix(r.do("CLIENT", "ID"), ":"), "\r\n")
			_, err := r.nc.Write([]byte("*1\r\n$8\r\nSHUTDOWN\r\n*2\r\n$4\r\nINCR\r\n$5\r\nafter\r\n"))
			require.NoError(t, err)
			req := nextShutdown(t, ts)
			other := ts.raw(t)
			require.Equal(t, ":1\r\n", other.do("CLIENT", "KILL", "ID", id))

			ts.srv.Pause()
			ts.srv.Resume()
			req.Refuse()
			r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, err = io.Copy(io.Discard, r.rd) // the connection closes
			var ne net.Error
			require.False(t, errors.As(err, &ne) && ne.Timeout(), "the killed connection stayed open")
			// Gone from the server: it has run all it will.
			require.Eventually(t, func() bool { return len(ts.srv.clients()) == 1 }, 5*time.Second, time.Millisecond)
			require.Equal(t, "+PONG\r\n", other.do("PING"))
			require.Zero(t, peekInt(t, ts.store, "after"), "a killed client's request ran")
		})
	}
}

// stuckJournal is persist.AOF under appendfsync always while the disk
// fails: Sync waits through the outage (until release is closed).
type stuckJournal struct {
	n       atomic.Uint64
	syncing chan struct{} // closed by the first Sync that waits
	once    sync.Once
	release chan struct{}
}

func (j *stuckJournal) Append([]byte) uint64 { return j.n.Add(1) }
func (j *stuckJournal) Err() error           { return nil }
func (j *stuckJournal) Sync(uint64) error {
	j.once.Do(func() { close(j.syncing) })
	<-j.release
	return nil
}

// TestShutdownWaiterHungUp: a client that sends SHUTDOWN and a write after
// it, then closes its connection while main decides, never gets the write
// run once the shutdown is refused (in Redis, a client blocked in SHUTDOWN
// while it waits for replicas is freed when it hangs up, and what it
// queued never runs). The event loop drops the client when its socket
// reports the hang-up; a goroutine per connection, which does not read
// while it waits, looks before it runs what it had read.
func TestShutdownWaiterHungUp(t *testing.T) {
	for _, mode := range connModes {
		t.Run(mode, func(t *testing.T) {
			ts := newTestServer(t, "event-loop", mode)
			r := ts.raw(t)
			_, err := r.nc.Write([]byte("*1\r\n$8\r\nSHUTDOWN\r\n*2\r\n$4\r\nINCR\r\n$5\r\nafter\r\n"))
			require.NoError(t, err)
			req := nextShutdown(t, ts)
			require.NoError(t, r.nc.Close())
			time.Sleep(50 * time.Millisecond) // the hang-up reaches the server

			ts.srv.Pause()
			ts.srv.Resume()
			req.Refuse()
			require.Eventually(t, func() bool { return len(ts.srv.clients()) == 0 }, 5*time.Second, time.Millisecond)
			other := ts.raw(t)
			require.Equal(t, "+PONG\r\n", other.do("PING"))
			require.Zero(t, peekInt(t, ts.store, "after"), "a write sent by a client that hung up ran")
		})
	}
}

// TestPauseWhileTheJournalWaits: a write whose record the journal cannot
// make durable yet (appendfsync always, the disk failing) does not hold
// Pause back, nor does the reply after which its client is closed (QUIT,
// a protocol error): the write ran and is in the journal, nothing more
// runs, and the final save is what decides (and fails, with the disk).
// The replies come once the journal has the write durable.
func TestPauseWhileTheJournalWaits(t *testing.T) {
	cases := []struct {
		name  string
		after string // sent with the write
		reply string // its reply, before the connection closes
	}{
		{name: "write"},
		{name: "then QUIT", after: "*1\r\n$4\r\nQUIT\r\n", reply: "+OK\r\n"},
		{name: "then a protocol error", after: "*x\r\n", reply: "-ERR Protocol error: invalid multibulk length\r\n"},
	}
	for _, mode := range connModes {
		for _, tc := range cases {
			t.Run(mode+"/"+tc.name, func(t *testing.T) {
				j := &stuckJournal{syncing: make(chan struct{}), release: make(chan struct{})}
				ts := newJournaledServer(t, j, "event-loop", mode)
				var release sync.Once
				heal := func() { release.Do(func() { close(j.release) }) }
				t.Cleanup(heal) // before the server's cleanup
				r := ts.raw(t)
				_, err := r.nc.Write([]byte("*2\r\n$4\r\nINCR\r\n$1\r\nk\r\n" + tc.after))
				require.NoError(t, err)
				select {
				case <-j.syncing:
				case <-time.After(5 * time.Second):
					t.Fatal("the write did not reach the journal")
				}
				pauseWithin(t, ts.srv, 5*time.Second)
				require.Equal(t, int64(1), peekInt(t, ts.store, "k"))
				other := ts.raw(t)
				_, err = other.nc.Write([]byte("*2\r\n$4\r\nINCR\r\n$1\r\nk\r\n"))
				require.NoError(t, err)
				noReply(t, other)
				require.Equal(t, int64(1), peekInt(t, ts.store, "k"), "a request ran while paused")
				ts.srv.Resume()
				heal()
				require.Equal(t, ":1\r\n", r.reply())
				if tc.reply != "" {
					require.Equal(t, tc.reply, r.reply())
					_, err := r.rd.ReadByte()
					require.ErrorIs(t, err, io.EOF, "the connection closes after the reply")
				}
				require.Equal(t, ":2\r\n", other.reply())
			})
		}
	}
}

// TestPauseWhileAClosingClientDoesNotRead: a goroutine client that is to
// be closed after its replies (QUIT) and does not read them does not hold
// Pause back; they are written, and the connection closed, once it reads.
func TestPauseWhileAClosingClientDoesNotRead(t *testing.T) {
	ts := newTestServer(t)
	client, server := net.Pipe() // no socket: a goroutine of its own; writes wait for the reader
	defer client.Close()
	ts.srv.startConn(server)
	client.SetDeadline(time.Now().Add(10 * time.Second))
	_, err := client.Write([]byte("PING\r\nQUIT\r\n")) // returns once the server has read it
	require.NoError(t, err)
	time.Sleep(100 * time.Millisecond) // it runs them and writes the replies
	pauseWithin(t, ts.srv, 5*time.Second)
	got, err := io.ReadAll(client)
	require.NoError(t, err)
	require.Equal(t, "+PONG\r\n+OK\r\n", string(got))
	ts.srv.Resume()
}

// TestShutdownWaiterQueryLimit: what a client sends while its SHUTDOWN
// waits is held to client-query-buffer-limit like any other read: a write
// over the limit sent behind the SHUTDOWN never runs, and the client is
// closed (the event loop, reading meanwhile, closes it at once, as Redis
// closes a blocked client whose query buffer passes the limit; a
// goroutine refuses it after the shutdown's refusal): the goroutine's look
// for a hang-up reads no further than the limit.
func TestShutdownWaiterQueryLimit(t *testing.T) {
	for _, mode := range connModes {
		t.Run(mode, func(t *testing.T) {
			ts := newTestServer(t, "event-loop", mode, "client-query-buffer-limit", "1kb")
			r := ts.raw(t)
			big := strings.Repeat("x", 4000)
			_, err := io.WriteString(r.nc, "*1\r\n$8\r\nSHUTDOWN\r\n"+
				fmt.Sprintf("*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$%d\r\n%s\r\n", len(big), big))
			require.NoError(t, err)
			req := nextShutdown(t, ts)
			time.Sleep(50 * time.Millisecond) // the write reaches the server
			req.Refuse()
			r.nc.SetDeadline(time.Now().Add(5 * time.Second))
			got, err := io.ReadAll(r.rd)
			var ne net.Error
			require.False(t, errors.As(err, &ne) && ne.Timeout(), "the connection closes; got %q", got)
			require.NotContains(t, string(got), "+OK")
			if mode == "no" {
				require.Contains(t, string(got), "-"+resp.ErrQueryBufLimit+"\r\n")
			}
			require.Equal(t, "$-1\r\n", ts.raw(t).do("GET", "big"), "a write over the query limit ran")
		})
	}
}
