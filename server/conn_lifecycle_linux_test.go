package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ratekv/ratekv/internal/resptest"
	"github.com/stretchr/testify/require"
)

// A connection's life at its edges: closing after a reply, idleness,
// accepting without descriptors, shutting down, a kill before the loop
// registers it. Each test runs both connection modes where both apply (the
// event loops are Linux's default).

// dialSmallRcvBuf dials with a tiny receive buffer, so that the kernel
// cannot take a 60 KB reply while the client does not read.
func dialSmallRcvBuf(t *testing.T, addr string) net.Conn {
	d := net.Dialer{Control: func(network, address string, c syscall.RawConn) error {
		c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		return nil
	}}
	nc, err := d.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	return nc
}

// A reply still waiting for the socket when QUIT, a protocol error or
// CLIENT KILL of itself closes the connection is delivered in full, then
// the connection closes (Redis: close-after-reply).
func TestCloseAfterReplyDeliversEveryReply(t *testing.T) {
	val := strings.Repeat("v", 60<<10)
	want := fmt.Sprintf("$%d\r\n%s\r\n", len(val), val)
	cases := map[string]struct{ req, tail string }{
		"quit":     {"GET med\r\nQUIT\r\n", "+OK\r\n"},
		"protoerr": {"GET med\r\n*1\r\n$x\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		"killself": {"GET med\r\nCLIENT KILL ID %d SKIPME no\r\n", ":1\r\n"},
	}
	for _, mode := range connModes {
		for name, tc := range cases {
			t.Run(mode+"/"+name, func(t *testing.T) {
				ts := newTestServer(t, "event-loop", mode)
				require.Equal(t, "+OK\r\n", ts.raw(t).do("SET", "med", val))
				nc := dialSmallRcvBuf(t, ts.addr)
				rd := bufio.NewReader(nc)
				io.WriteString(nc, "CLIENT ID\r\n")
				line, err := rd.ReadString('\n')
				require.NoError(t, err)
				var id int
				fmt.Sscanf(line, ":%d", &id)
				// Stand-in for a slow remote client whose socket is full:
				// a small send buffer on the server's side of the socket.
				for _, c := range ts.srv.clients() {
					if c.ID != int64(id) {
						continue
					}
					if c.loop != nil {
						require.NoError(t, syscall.SetsockoptInt(c.fd, syscall.SOL_SOCKET, syscall.SO_SNDBUF, 4096))
						c.loop.waitTurn() // orders the read of c.fd before the loop's next write of it
					} else {
						rc, err := c.nc.(syscall.Conn).SyscallConn()
						require.NoError(t, err)
						rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF, 4096) })
					}
				}
				req := tc.req
				if strings.Contains(req, "%d") {
					req = fmt.Sprintf(req, id)
				}
				_, err = io.WriteString(nc, req)
				require.NoError(t, err)
				time.Sleep(300 * time.Millisecond) // do not read meanwhile
				nc.SetReadDeadline(time.Now().Add(5 * time.Second))
				got, _ := io.ReadAll(rd)
				require.Equal(t, len(want)+len(tc.tail), len(got), "reply truncated")
				require.Equal(t, want+tc.tail, string(got))
			})
		}
	}
}

// A client with timeout 1 that keeps sending for 2 s is not idle, whether
// it uploads one request slowly (Redis updates lastinteraction on every
// read; goroutine mode renews its read deadline on every read) or sends
// requests that run no command: idleness is not judged by the last
// command run.
func TestIdleTimeoutSparesActiveClients(t *testing.T) {
	for _, mode := range connModes {
		for name, talk := range map[string]func(t *testing.T, nc net.Conn, rd *bufio.Reader){
			"slow upload": func(t *testing.T, nc net.Conn, rd *bufio.Reader) {
				io.WriteString(nc, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$8\r\n")
				for i := 0; i < 8; i++ { // one byte every 250 ms
					time.Sleep(250 * time.Millisecond)
					_, err := nc.Write([]byte{'x'})
					require.NoError(t, err, "closed during the upload after %d bytes", i)
				}
				io.WriteString(nc, "\r\n")
				line, err := rd.ReadString('\n')
				require.NoError(t, err, "dropped as idle while the client was sending")
				require.Equal(t, "+OK\r\n", line)
			},
			"unknown commands": func(t *testing.T, nc net.Conn, rd *bufio.Reader) {
				for i := 0; i < 8; i++ {
					time.Sleep(250 * time.Millisecond)
					_, err := io.WriteString(nc, "NOSUCHCMD\r\n")
					require.NoError(t, err)
					line, err := rd.ReadString('\n')
					require.NoError(t, err, "dropped as idle after %d requests", i)
					require.True(t, strings.HasPrefix(line, "-ERR unknown command"), line)
				}
			},
		} {
			t.Run(mode+"/"+name, func(t *testing.T) {
				t.Parallel() // each waits 2 s
				ts := newTestServer(t, "event-loop", mode, "timeout", "1")
				nc, err := net.Dial("tcp", ts.addr)
				require.NoError(t, err)
				defer nc.Close()
				nc.SetDeadline(time.Now().Add(10 * time.Second))
				talk(t, nc, bufio.NewReader(nc))
			})
		}
	}
}

// CLIENT LIST reads another connection's protocol while its owner changes
// it (HELLO) without a data race (run with -race).
func TestClientListWhileHelloSwitchesProtocols(t *testing.T) {
	ts := newTestServer(t)
	a, b := ts.raw(t), ts.raw(t)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 200; i++ {
			a.nc.SetDeadline(time.Now().Add(5 * time.Second))
			io.WriteString(a.nc, "HELLO 3\r\nHELLO 2\r\n")
			var sb strings.Builder
			resptest.ReadReply(a.rd, &sb)
			resptest.ReadReply(a.rd, &sb)
		}
	}()
	for i := 0; i < 200; i++ {
		b.do("CLIENT", "LIST")
	}
	wg.Wait()
}

// Running out of descriptors (accept: EMFILE) does not stop the server
// accepting for good: as Redis, it logs and goes on.
func TestAcceptSurvivesRunningOutOfDescriptors(t *testing.T) {
	for _, mode := range connModes {
		t.Run(mode, func(t *testing.T) {
			ts := newTestServer(t, "event-loop", mode)
			var old syscall.Rlimit
			require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old))
			ents, _ := os.ReadDir("/proc/self/fd")
			lim := syscall.Rlimit{Cur: uint64(len(ents) + 30), Max: old.Max}
			require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim))
			var conns []net.Conn
			for i := 0; i < 40; i++ {
				nc, err := net.DialTimeout("tcp", ts.addr, time.Second)
				if err != nil {
					break
				}
				conns = append(conns, nc)
			}
			time.Sleep(200 * time.Millisecond)
			for _, nc := range conns {
				nc.Close()
			}
			require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old))
			time.Sleep(200 * time.Millisecond)
			nc, err := net.DialTimeout("tcp", ts.addr, time.Second)
			require.NoError(t, err)
			defer nc.Close()
			nc.SetDeadline(time.Now().Add(2 * time.Second))
			io.WriteString(nc, "PING\r\n")
			line, err := bufio.NewReader(nc).ReadString('\n')
			require.NoError(t, err, "server no longer accepts after EMFILE")
			require.Equal(t, "+PONG\r\n", line)
		})
	}
}

// Shutdown lets every connection finish its batch, replies flushed, also
// a reply still waiting for a slow client's socket.
func TestShutdownWritesOutWaitingReplies(t *testing.T) {
	for _, mode := range connModes {
		t.Run(mode, func(t *testing.T) {
			ts := newTestServer(t, "event-loop", mode)
			val := strings.Repeat("v", 6<<20)
			require.Equal(t, "+OK\r\n", ts.raw(t).do("SET", "big", val))
			nc, err := net.Dial("tcp", ts.addr)
			require.NoError(t, err)
			defer nc.Close()
			io.WriteString(nc, "GET big\r\n")
			time.Sleep(300 * time.Millisecond) // the reply fills the socket
			go func() {
				c, cancel := contextWithTimeout(5 * time.Second)
				defer cancel()
				ts.srv.Shutdown(c)
			}()
			time.Sleep(300 * time.Millisecond)
			nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			got, _ := io.ReadAll(nc)
			require.Equal(t, len(fmt.Sprintf("$%d\r\n%s\r\n", len(val), val)), len(got), "reply truncated at shutdown")
		})
	}
}

// A CLIENT KILL that lands after a connection is published among the
// clients and before its loop has registered it is not lost: the loop
// closes the connection when it registers it, not when the client next
// sends something. (startConn's steps, with the kill in between.)
func TestKillBeforeTheLoopRegistersTheConnection(t *testing.T) {
	ts := newTestServer(t, "event-loop", "yes")
	client, nc := tcpPair(t)
	s := ts.srv
	c := socketlessConn(s)
	c.nc = nc
	var l *eventLoop
	require.Eventually(t, func() bool { // Serve starts the loops
		s.mu.Lock()
		defer s.mu.Unlock()
		if len(s.loops) > 0 {
			l = s.loops[0]
		}
		return l != nil
	}, 5*time.Second, time.Millisecond)
	require.True(t, l.claim(c, nc))
	s.mu.Lock()
	s.conns[c.ID] = c
	s.wg.Add(1)
	s.mu.Unlock()
	l.kill(c)
	l.waitTurn() // the kill's wake-up is handled before the hand-over
	l.add(c)
	client.SetReadDeadline(time.Now().Add(3 * time.Second))
	_, err := client.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF, "closed without the client sending anything")
}
