package command

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekv/ratekv/internal/sdsargs"

	"github.com/stretchr/testify/require"
)

// recordingPeer counts the Kill and Wake calls of a Client's runtime.
type recordingPeer struct {
	nopPeer
	kills, wakes atomic.Int32
}

func (p *recordingPeer) Kill() { p.kills.Add(1) }
func (p *recordingPeer) Wake() { p.wakes.Add(1) }

func TestMonitorSlowReaderDisconnected(t *testing.T) {
	defer func(n int) { monitorLimit = n }(monitorLimit)
	monitorLimit = 4096
	ts := newTestServer(t)
	peer := &recordingPeer{}
	mon := &Client{}
	ts.srv.InitClient(mon, peer, 999, "10.0.0.2:1", "127.0.0.1:6380")
	require.Equal(t, "+OK\r\n", ts.run(mon, 0, "MONITOR"))
	require.Equal(t, "", ts.run(mon, 0, "MONITOR"), "a second MONITOR is ignored")
	c := ts.direct()
	ts.run(c, 0, "SET", "k", "v")
	require.EqualValues(t, 1, peer.wakes.Load(), "woken for its first line")
	ts.run(c, 0, "GET", "k")
	require.EqualValues(t, 1, peer.wakes.Load(), "not again while lines wait")
	mon.Out = mon.Out[:0]
	mon.EndBatch()
	require.Regexp(t, `^\+\d+\.\d{6} \[0 10\.0\.0\.1:5000\] "SET" "k" "v"\r\n\+\d+\.\d{6} \[0 10\.0\.0\.1:5000\] "GET" "k"\r\n$`, string(mon.Out))
	// It stops reading: its lines pile up to the limit, and it is closed.
	for range 200 {
		ts.run(c, 0, "SET", "k", strings.Repeat("x", 100))
	}
	require.EqualValues(t, 1, peer.kills.Load())
	n, _ := mon.monitor.Load().pending()
	require.Zero(t, n, "its lines are dropped")
	mon.Close()
	require.Zero(t, ts.srv.monitors.n.Load())
	ts.run(c, time.Millisecond, "PING") // no monitor: nothing to feed
}

func TestMonitorInMulti(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	require.Equal(t, "+OK\r\n", r.do("MULTI"))
	require.Equal(t, "+QUEUED\r\n", r.do("MONITOR"))
	require.Equal(t, "*1\r\n"+errReply(errMonitorDenyBlocking), r.do("EXEC"))
}

func TestReprQuoting(t *testing.T) {
	require.Equal(t, `"a\\b\"c\n\r\t\a\b\x00\xff~"`, string(sdsargs.AppendRepr(nil, []byte("a\\b\"c\n\r\t\a\b\x00\xff~"))))
}

// CLIENT PAUSE pauses the active expiry with the clients, as Redis; the
// runtime holds the requests back (server's TestClientPause).
func TestClientPauseExpiry(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	require.Equal(t, "+OK\r\n", r.do("CLIENT", "PAUSE", "100000", "WRITE"))
	require.True(t, ts.store.ExpiryPaused())
	require.Equal(t, "+OK\r\n", r.do("CLIENT", "PAUSE", "10", "ALL"), "a shorter pause keeps the longer one")
	require.True(t, ts.srv.pause.all.Load(), "and the stricter mode")
	require.NotNil(t, ts.srv.PauseEnded())
	require.Equal(t, "+OK\r\n", r.do("CLIENT", "UNPAUSE"))
	require.False(t, ts.store.ExpiryPaused())
	require.Nil(t, ts.srv.PauseEnded())
	require.Equal(t, "+OK\r\n", r.do("CLIENT", "UNPAUSE"), "no pause: still OK")
}
