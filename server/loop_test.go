package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Connection handling in both modes: event loops (event-loop yes, the
// default on Linux) and a goroutine per client (no). Most other tests run
// in the default mode only; these cover what differs between the two.
var connModes = []string{"yes", "no"}

// TestEventLoopIsUsed: on Linux the default mode really serves clients from
// the event loops (so the rest of the suite exercises them), and "no"
// really does not.
func TestEventLoopIsUsed(t *testing.T) {
	for _, mode := range connModes {
		t.Run(mode, func(t *testing.T) {
			ts := newTestServer(t, "event-loop", mode)
			r := ts.raw(t)
			require.Equal(t, "+PONG\r\n", r.send("PING\r\n"))
			looped := 0
			for _, c := range ts.srv.clients() {
				if c.loop != nil {
					looped++
				}
			}
			ts.srv.mu.Lock()
			loops := len(ts.srv.loops)
			ts.srv.mu.Unlock()
			if mode == "yes" && runtime.GOOS == "linux" {
				require.Equal(t, 1, looped)
				require.Equal(t, runtime.GOMAXPROCS(0), loops)
			} else {
				require.Zero(t, looped)
			}
		})
	}
}

// TestLongPipelineInOrder: a pipeline whose replies pass flushAt many times
// over, sent in one write and read only afterwards, gets every reply, in
// order (the loop stops running it while the replies wait for the socket,
// then resumes where it stopped).
func TestLongPipelineInOrder(t *testing.T) {
	for _, mode := range connModes {
		t.Run(mode, func(t *testing.T) {
			ts := newTestServer(t, "event-loop", mode)
			val := strings.Repeat("x", 200)
			r := ts.raw(t)
			require.Equal(t, "+OK\r\n", r.do("SET", "v", val))
			const n = 20000 // ~4.5 MB of replies
			var b strings.Builder
			for range n {
				b.WriteString("*2\r\n$4\r\nINCR\r\n$1\r\nc\r\n*2\r\n$3\r\nGET\r\n$1\r\nv\r\n")
			}
			nc, err := net.Dial("tcp", ts.addr)
			require.NoError(t, err)
			defer nc.Close()
			nc.SetDeadline(time.Now().Add(20 * time.Second))
			errc := make(chan error, 1)
			go func() { _, err := io.WriteString(nc, b.String()); errc <- err }()
			time.Sleep(100 * time.Millisecond) // let the server stall on a full socket
			rd := bufio.NewReader(nc)
			want := "$200\r\n" + val + "\r\n"
			for i := 1; i <= n; i++ {
				line, err := rd.ReadString('\n')
				require.NoError(t, err)
				require.Equal(t, ":"+strconv.Itoa(i)+"\r\n", line)
				buf := make([]byte, len(want))
				_, err = io.ReadFull(rd, buf)
				require.NoError(t, err)
				require.Equal(t, want, string(buf), "reply %d", i)
			}
			require.NoError(t, <-errc)
		})
	}
}

// TestRequestSplitAcrossReads: requests that arrive a few bytes at a time
// are assembled across reads (and loop turns).
func TestRequestSplitAcrossReads(t *testing.T) {
	for _, mode := range connModes {
		t.Run(mode, func(t *testing.T) {
			ts := newTestServer(t, "event-loop", mode)
			r := ts.raw(t)
			req := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"
			r.nc.SetDeadline(time.Now().Add(5 * time.Second))
			for i := 0; i < len(req); i += 3 {
				_, err := io.WriteString(r.nc, req[i:min(i+3, len(req))])
				require.NoError(t, err)
				time.Sleep(time.Millisecond)
			}
			require.Equal(t, "+OK\r\n", r.reply())
			require.Equal(t, "$5\r\nhello\r\n", r.reply())
		})
	}
}

// TestClientKill: CLIENT KILL closes another client's connection (and only
// that one), by id and by address; a client kills itself only with SKIPME
// no (filters skip the caller by default, as in Redis); TYPE and USER
// filters.
func TestClientKill(t *testing.T) {
	for _, mode := range connModes {
		t.Run(mode, func(t *testing.T) {
			ts := newTestServer(t, "event-loop", mode)
			a, b, c := ts.raw(t), ts.raw(t), ts.raw(t)
			id := func(r *rawConn) string {
				rep := r.send("CLIENT ID\r\n")
				return strings.TrimSuffix(strings.TrimPrefix(rep, ":"), "\r\n")
			}
			closed := func(r *rawConn) {
				t.Helper()
				r.nc.SetDeadline(time.Now().Add(5 * time.Second))
				_, err := r.rd.ReadByte()
				require.Error(t, err, "killed connection still open")
			}
			require.Equal(t, ":1\r\n", a.do("CLIENT", "KILL", "ID", id(b)))
			closed(b)
			require.Equal(t, "+PONG\r\n", c.send("PING\r\n"), "an innocent bystander")
			require.Equal(t, "+OK\r\n", a.do("CLIENT", "KILL", c.nc.LocalAddr().String()))
			closed(c)
			require.Equal(t, ":0\r\n", a.do("CLIENT", "KILL", "ID", "999999"))
			require.Equal(t, "+PONG\r\n", a.send("PING\r\n"))
			require.Equal(t, ":0\r\n", a.do("CLIENT", "KILL", "ID", id(a)), "SKIPME yes by default, as Redis")
			require.Equal(t, ":0\r\n", a.do("CLIENT", "KILL", "TYPE", "pubsub"))
			require.Equal(t, "-ERR Unknown client type 'x'\r\n", a.do("CLIENT", "KILL", "TYPE", "x"))
			require.Equal(t, "-ERR No such user 'bob'\r\n", a.do("CLIENT", "KILL", "USER", "bob"))
			require.Equal(t, "+PONG\r\n", a.send("PING\r\n"))
			a.do("CLIENT", "KILL", "ID", id(a), "SKIPME", "no")
			closed(a)
		})
	}
}

// TestManyClientsConcurrent: many clients, each with its own pipeline of
// increments on its own counter and on a shared one, all get their replies
// in order, and the shared counter sees every increment once.
func TestManyClientsConcurrent(t *testing.T) {
	for _, mode := range connModes {
		t.Run(mode, func(t *testing.T) {
			ts := newTestServer(t, "event-loop", mode)
			const clients, rounds, depth = 40, 50, 8
			var wg sync.WaitGroup
			errs := make(chan error, clients)
			for i := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs <- func() error {
						nc, err := net.Dial("tcp", ts.addr)
						if err != nil {
							return err
						}
						defer nc.Close()
						nc.SetDeadline(time.Now().Add(20 * time.Second))
						rd := bufio.NewReader(nc)
						key := fmt.Sprintf("own:%d", i)
						req := strings.Repeat(fmt.Sprintf("INCR %s\r\nINCR shared\r\n", key), depth)
						next := 1
						for range rounds {
							if _, err := io.WriteString(nc, req); err != nil {
								return err
							}
							for range depth {
								line, err := rd.ReadString('\n')
								if err != nil {
									return err
								}
								if line != ":"+strconv.Itoa(next)+"\r\n" {
									return fmt.Errorf("%s: got %q, want %d", key, line, next)
								}
								next++
								if _, err := rd.ReadString('\n'); err != nil {
									return err
								}
							}
						}
						return nil
					}()
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			r := ts.raw(t)
			require.Equal(t, fmt.Sprintf(":%d\r\n", clients*rounds*depth+1), r.do("INCR", "shared"))
		})
	}
}

// TestStalledClientIsDropped: a client that stops reading while its
// replies wait for the socket, then goes away, is dropped (and stays
// bounded meanwhile); the others are served throughout.
func TestStalledClientIsDropped(t *testing.T) {
	for _, mode := range connModes {
		t.Run(mode, func(t *testing.T) {
			ts := newTestServer(t, "event-loop", mode)
			other := ts.raw(t)
			require.Equal(t, "+OK\r\n", other.do("SET", "big", strings.Repeat("v", 64<<10)))
			nc, err := net.Dial("tcp", ts.addr)
			require.NoError(t, err)
			nc.SetWriteDeadline(time.Now().Add(2 * time.Second))
			io.WriteString(nc, strings.Repeat("GET big\r\n", 2000)) // ~128 MB of replies, never read
			time.Sleep(200 * time.Millisecond)
			require.Equal(t, "+PONG\r\n", other.send("PING\r\n"))
			require.Len(t, ts.srv.clients(), 2)
			nc.Close()
			require.Eventually(t, func() bool { return len(ts.srv.clients()) == 1 }, 5*time.Second, 10*time.Millisecond)
			require.Equal(t, "+PONG\r\n", other.send("PING\r\n"))
		})
	}
}
