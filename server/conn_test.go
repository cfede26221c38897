package server

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratekv/ratekv/resp"
	"github.com/stretchr/testify/require"
)

func TestProtoMaxBulkLen(t *testing.T) {
	ts := newTestServer(t, "proto-max-bulk-len", "1kb")
	good := ts.raw(t)
	require.Equal(t, "+OK\r\n", good.do("SET", "kept", "v"))
	bad := ts.raw(t)
	got := bad.send("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2000\r\n")
	require.Equal(t, "-ERR Protocol error: invalid bulk length\r\n", got)
	_, err := bad.rd.ReadByte()
	require.Error(t, err, "connection must be closed after a protocol error")
	require.Equal(t, "$1\r\nv\r\n", good.do("GET", "kept"))
}

func TestQueryBufferLimit(t *testing.T) {
	ts := newTestServer(t, "client-query-buffer-limit", "64kb")
	good := ts.raw(t)
	require.Equal(t, "+OK\r\n", good.do("SET", "kept", "v"))
	// A complete command bigger than the limit.
	bad := ts.raw(t)
	big := strings.Repeat("x", 100_000)
	bad.nc.SetDeadline(time.Now().Add(5 * time.Second))
	go io.WriteString(bad.nc, fmt.Sprintf("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n%s\r\n", len(big), big))
	require.Equal(t, "-"+resp.ErrQueryBufLimit+"\r\n", bad.reply())
	// Many small arguments that add up past the limit.
	bad2 := ts.raw(t)
	var b strings.Builder
	b.WriteString("*100000\r\n$4\r\nMSET\r\n")
	for b.Len() < 100_000 {
		b.WriteString("$1\r\na\r\n")
	}
	bad2.nc.SetDeadline(time.Now().Add(5 * time.Second))
	go io.WriteString(bad2.nc, b.String())
	require.Equal(t, "-"+resp.ErrQueryBufLimit+"\r\n", bad2.reply())
	require.Equal(t, "$1\r\nv\r\n", good.do("GET", "kept"))
	require.Equal(t, "$-1\r\n", good.do("GET", "k"))
}

// TestQueryBufferLimitBelowReadBuffer: client-query-buffer-limit may be set
// below the 16 KiB a connection first reads into (down to 1 KiB). A request
// over it is refused all the same, one under it runs, and a long pipeline
// of small requests is read a limit's worth at a time, never refused.
func TestQueryBufferLimitBelowReadBuffer(t *testing.T) {
	for _, mode := range []string{"yes", "no"} {
		t.Run("event-loop "+mode, func(t *testing.T) {
			ts := newTestServer(t, "client-query-buffer-limit", "1kb", "event-loop", mode)
			ok := ts.raw(t)
			require.Equal(t, "+OK\r\n", ok.do("SET", "small", strings.Repeat("x", 900)))
			const n = 3000 // 42 KB of PINGs, sent at once
			ok.nc.SetDeadline(time.Now().Add(10 * time.Second))
			go io.WriteString(ok.nc, strings.Repeat("*1\r\n$4\r\nPING\r\n", n))
			for i := 0; i < n; i++ {
				line, err := ok.rd.ReadString('\n')
				require.NoError(t, err, "reply %d of the pipeline", i)
				require.Equal(t, "+PONG\r\n", line, "reply %d of the pipeline", i)
			}
			bad := ts.raw(t)
			require.Equal(t, "-"+resp.ErrQueryBufLimit+"\r\n", bad.do("SET", "big", strings.Repeat("x", 1500)))
			_, err := bad.rd.ReadByte()
			require.Error(t, err, "connection must be closed")
			require.Equal(t, "$-1\r\n", ok.do("GET", "big"))
		})
	}
}

func TestMaxClients(t *testing.T) {
	ts := newTestServer(t, "maxclients", "2")
	a, b := ts.raw(t), ts.raw(t)
	require.Equal(t, "+PONG\r\n", a.send("PING\r\n"))
	require.Equal(t, "+PONG\r\n", b.send("PING\r\n"))
	c := ts.raw(t)
	c.nc.SetDeadline(time.Now().Add(5 * time.Second))
	line, err := c.rd.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "-ERR max number of clients reached\r\n", line)
	require.Equal(t, "+PONG\r\n", a.send("PING\r\n"))
}

// TestSlowReaderIsBounded: a client that pipelines without reading its
// replies blocks only itself; the server does not buffer its replies
// without bound, and other clients are served.
func TestSlowReaderIsBounded(t *testing.T) {
	ts := newTestServer(t)
	other := ts.raw(t)
	big := strings.Repeat("v", 1<<20)
	require.Equal(t, "+OK\r\n", other.do("SET", "big", big))

	nc, err := net.Dial("tcp", ts.addr)
	require.NoError(t, err)
	defer nc.Close()
	req := []byte(strings.Repeat("GET big\r\n", 1000)) // ~1 GB of replies, never read
	done := make(chan struct{})
	go func() {
		defer close(done)
		nc.SetWriteDeadline(time.Now().Add(2 * time.Second))
		for i := 0; i < 10; i++ {
			if _, err := nc.Write(req); err != nil {
				return
			}
		}
	}()
	time.Sleep(500 * time.Millisecond)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	require.Less(t, ms.HeapAlloc, uint64(256<<20), "server buffered replies for a client that does not read")
	require.Equal(t, "+PONG\r\n", other.send("PING\r\n"))
	nc.Close()
	<-done
}

// TestGracefulShutdown: replies to a batch already read are delivered.
func TestGracefulShutdown(t *testing.T) {
	ts := newTestServer(t)
	nc, err := net.Dial("tcp", ts.addr)
	require.NoError(t, err)
	defer nc.Close()
	rd := bufio.NewReader(nc)
	_, err = nc.Write([]byte("PING\r\n"))
	require.NoError(t, err)
	line, err := rd.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "+PONG\r\n", line)

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c, cancel := contextWithTimeout(5 * time.Second)
		defer cancel()
		require.NoError(t, ts.srv.Shutdown(c))
	}()
	wg.Wait()
	_, err = rd.ReadByte()
	require.Error(t, err, "connection closed after shutdown")
	_, err = net.DialTimeout("tcp", ts.addr, time.Second)
	require.Error(t, err, "listener closed after shutdown")
}

func TestIdleTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a 1 s idle timeout")
	}
	ts := newTestServer(t, "timeout", "1")
	r := ts.raw(t)
	require.Equal(t, "+PONG\r\n", r.send("PING\r\n"))
	r.nc.SetDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	_, err := r.rd.ReadByte()
	require.Error(t, err)
	require.Less(t, time.Since(start), 4*time.Second)
}

// TestIdleTimeoutChangedWhileAClientWaits: CONFIG SET timeout applies to
// a client already idle, in both connection modes: set to 0, or raised,
// the client is not closed when the old timeout runs out (a goroutine
// connection's read started with the old deadline), and lowered, it is
// closed by the new one.
func TestIdleTimeoutChangedWhileAClientWaits(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a 1 s idle timeout")
	}
	type result struct {
		name     string
		wantOpen bool
		timedOut chan bool
	}
	var results []result
	// Every case at once: each waits 2.5 s.
	for _, mode := range connModes {
		for _, change := range []struct{ from, to string }{{"1", "0"}, {"1", "60"}, {"60", "1"}} {
			ts := newTestServer(t, "event-loop", mode, "timeout", change.from)
			idle := ts.raw(t)
			require.Equal(t, "+PONG\r\n", idle.send("PING\r\n"))
			require.Equal(t, "+OK\r\n", ts.raw(t).do("CONFIG", "SET", "timeout", change.to))
			r := result{mode + " " + change.from + " to " + change.to, change.to != "1", make(chan bool, 1)}
			results = append(results, r)
			go func() {
				idle.nc.SetReadDeadline(time.Now().Add(2500 * time.Millisecond))
				_, err := idle.rd.ReadByte()
				var ne net.Error
				r.timedOut <- errors.As(err, &ne) && ne.Timeout() // still open: the client's own deadline passed
			}()
		}
	}
	for _, r := range results {
		require.Equal(t, r.wantOpen, <-r.timedOut, "event-loop %s: idle client open 2.5 s after the change", r.name)
	}
}

// TestQueryLimitLoweredMidRequest: a request whose buffer grew before
// CONFIG SET lowered client-query-buffer-limit does not go on filling it
// and run (a 1 MB SET after the limit went down to 64 KB): as in Redis,
// the client is closed once it buffers more than the limit.
func TestQueryLimitLoweredMidRequest(t *testing.T) {
	for _, loop := range []string{"yes", "no"} {
		ts := newTestServer(t, "event-loop", loop)
		admin := ts.raw(t)
		nc, err := net.Dial("tcp", ts.addr)
		require.NoError(t, err)
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(5 * time.Second))
		const size = 1 << 20
		head := fmt.Sprintf("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n", size)
		_, err = io.WriteString(nc, head+strings.Repeat("v", 300<<10))
		require.NoError(t, err)
		// Wait until the server holds what was sent (CLIENT LIST's qbuf).
		for deadline := time.Now().Add(5 * time.Second); ; {
			if strings.Contains(admin.do("CLIENT", "LIST"), fmt.Sprintf("qbuf=%d ", len(head)+300<<10)) {
				break
			}
			require.True(t, time.Now().Before(deadline), "the server never buffered the first part")
			time.Sleep(5 * time.Millisecond)
		}
		require.Equal(t, "+OK\r\n", admin.do("CONFIG", "SET", "client-query-buffer-limit", "64kb"))
		io.WriteString(nc, strings.Repeat("v", size-300<<10)+"\r\n") // may fail: the server closes
		reply, _ := io.ReadAll(bufio.NewReader(nc))                  // the error, or a reset before it
		require.NotEqual(t, "+OK\r\n", string(reply), loop)
		require.Equal(t, ":0\r\n", admin.do("EXISTS", "k"), "event-loop %s: the request over the lowered limit ran", loop)
	}
}

// TestTimeoutClosesClientThatNeverReads: with timeout set, a client that
// pipelines without ever reading its replies is closed once the server
// has waited that long to write to it, as Redis does, in both connection
// modes (a goroutine connection's write has a deadline too).
func TestTimeoutClosesClientThatNeverReads(t *testing.T) {
	for _, loop := range []string{"yes", "no"} {
		ts := newTestServer(t, "event-loop", loop, "timeout", "1")
		admin := ts.raw(t)
		require.Equal(t, "+OK\r\n", admin.do("SET", "big", strings.Repeat("v", 1<<20)))
		nc, err := net.Dial("tcp", ts.addr)
		require.NoError(t, err)
		defer nc.Close()
		nc.(*net.TCPConn).SetReadBuffer(4096)
		var req strings.Builder
		req.WriteString("*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$5\r\nmuted\r\n")
		for range 32 {
			req.WriteString("*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n")
		}
		_, err = io.WriteString(nc, req.String())
		require.NoError(t, err)
		deadline := time.Now().Add(4 * time.Second)
		for !strings.Contains(admin.do("CLIENT", "LIST"), "name=muted") {
			require.True(t, time.Now().Before(deadline), "event-loop %s: CLIENT SETNAME never ran", loop)
			time.Sleep(5 * time.Millisecond)
		}
		for strings.Contains(admin.do("CLIENT", "LIST"), "name=muted") {
			require.True(t, time.Now().Before(deadline), "event-loop %s: a client that never reads is still connected 4 s into a 1 s timeout", loop)
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// TestIdleTimeoutPrompt: with timeout set, an idle client is closed soon
// after its timeout, as in Redis (clientsCron looks at each client about
// every 100 ms), whenever its last request came. Six clients, each idle
// from a different moment, so that a loop looking too seldom, or skipping
// looks, closes some late.
func TestIdleTimeoutPrompt(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a 1 s idle timeout")
	}
	for _, mode := range connModes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			ts := newTestServer(t, "event-loop", mode, "timeout", "1")
			var wg sync.WaitGroup
			took := make([]time.Duration, 6)
			for i := range took {
				idle := ts.raw(t)
				require.Equal(t, "+PONG\r\n", idle.send("PING\r\n"))
				start := time.Now()
				wg.Add(1)
				go func() {
					defer wg.Done()
					idle.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
					idle.rd.ReadByte()
					took[i] = time.Since(start)
				}()
				time.Sleep(170 * time.Millisecond) // the next one idle from elsewhere in the second
			}
			wg.Wait()
			for i, d := range took {
				require.GreaterOrEqual(t, d, 900*time.Millisecond, "client %d closed before its timeout: %v", i, took)
				require.Less(t, d, 1600*time.Millisecond, "client %d closed late: %v", i, took)
			}
		})
	}
}

// TestConfigSetReachesTheRuntime: CONFIG SET of the runtime's parameters
// reaches its hot-path copies (the change hooks of watchConfig).
func TestConfigSetReachesTheRuntime(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	require.Equal(t, "+OK\r\n", r.do("CONFIG", "SET", "maxclients", "50", "Timeout", "7"))
	require.Equal(t, int64(50), ts.srv.maxClients.Load())
	require.Equal(t, int64(7), ts.srv.idleTimeout.Load())
	require.Equal(t, "+OK\r\n", r.do("CONFIG", "SET", "prefetch-batch", "no", "batch-replies", "no"))
	require.Equal(t, prefetchNo, ts.srv.prefetch.Load())
	require.False(t, ts.srv.batchReplies.Load())
	require.Equal(t, "-ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument couldn't be parsed into an integer\r\n",
		r.do("CONFIG", "SET", "timeout", "9", "maxclients", "x"))
	require.Equal(t, int64(7), ts.srv.idleTimeout.Load(), "nothing of a refused CONFIG SET is applied")
}
