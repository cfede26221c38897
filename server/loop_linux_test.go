//go:build linux

package server

import (
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLoopStoppedRefusesCleanly: a connection handed to a loop that has
// ended (the server closing under an accept) is closed and forgotten, not
// leaked; wakes after the end touch no descriptor.
func TestLoopStoppedRefusesCleanly(t *testing.T) {
	ts := newTestServer(t)
	l, err := newEventLoop(ts.srv)
	require.NoError(t, err)
	l.stop()
	l.wake() // must not write to the closed pipe

	client, nc := tcpPair(t)

	c := socketlessConn(ts.srv)
	c.ID = 1 << 40
	require.True(t, l.claim(c, nc))
	require.GreaterOrEqual(t, c.fd, 0)
	ts.srv.mu.Lock()
	ts.srv.conns[c.ID] = c
	ts.srv.wg.Add(1)
	ts.srv.mu.Unlock()
	l.add(c)
	require.Equal(t, -1, c.fd, "descriptor closed")
	ts.srv.mu.Lock()
	_, still := ts.srv.conns[c.ID]
	ts.srv.mu.Unlock()
	require.False(t, still, "connection forgotten")
	client.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err = client.Read(make([]byte, 1))
	require.Error(t, err, "peer sees the close")
}

// waitTurn (the active expiry's yield, installed by Serve: see
// shards.Store.SetYield) wakes the loop and returns once the loop has run
// a turn; once the loop has ended it returns at once.
func TestLoopWaitTurn(t *testing.T) {
	ts := newTestServer(t)
	l, err := newEventLoop(ts.srv)
	require.NoError(t, err)
	// waiters runs n waitTurn calls at once and reports whether all
	// returned within 10 s.
	waiters := func(n int) bool {
		var wg sync.WaitGroup
		for w := 0; w < n; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l.waitTurn()
			}()
		}
		done := make(chan struct{})
		go func() {
			wg.Wait()
			close(done)
		}()
		select {
		case <-done:
			return true
		case <-time.After(10 * time.Second):
			return false
		}
	}
	for i := 0; i < 3; i++ {
		require.True(t, waiters(1), "waitTurn did not return: the loop ran no turn")
		require.False(t, l.wanted.Load(), "the loop took the request")
	}
	// Several waiters at once (the active expiry and a snapshot's
	// capture): one turn releases them all, none waits until someone
	// else asks for a turn.
	for round := 0; round < 20; round++ {
		require.True(t, waiters(4), "round %d: a waitTurn did not return while others waited beside it", round)
	}
	l.stop()
	l.waitTurn()
}

// tcpPair returns both ends of a loopback TCP connection, closed with the
// test: the client's and the one a server accepted.
func tcpPair(t *testing.T) (client, accepted net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { client.Close() })
	accepted, err = ln.Accept()
	require.NoError(t, err)
	t.Cleanup(func() { accepted.Close() })
	return client, accepted
}
