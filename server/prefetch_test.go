package server

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ratekv/ratekv/config"
	"github.com/stretchr/testify/require"
)

// pipelineOutput sends data in one write and returns everything the
// server sent back: until it closed the connection (after a protocol
// error), or, once it has been quiet for a moment, through its reply to a
// QUIT sent then.
func pipelineOutput(t *testing.T, addr string, data string) string {
	out, _ := pipelineReply(t, addr, data)
	return out
}

// pipelineReply is pipelineOutput, and whether the connection ended in a
// reset: a server that closes with input unread resets it, and what it
// wrote just before may then be lost in transit.
func pipelineReply(t *testing.T, addr string, data string) (string, bool) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer nc.Close()
	_, err = io.WriteString(nc, data)
	require.NoError(t, err)
	var out []byte
	buf := make([]byte, 64*1024)
	quit := time.Now().Add(10 * time.Second)
	for sent := false; ; {
		nc.SetReadDeadline(time.Now().Add(30 * time.Millisecond))
		n, err := nc.Read(buf)
		out = append(out, buf[:n]...)
		var ne net.Error
		switch {
		case err == nil:
		case errors.As(err, &ne) && ne.Timeout() && !sent:
			_, err := io.WriteString(nc, "*1\r\n$4\r\nQUIT\r\n")
			require.NoError(t, err)
			sent = true
		case errors.As(err, &ne) && ne.Timeout():
			// QUIT sent, its reply not here yet (a loaded machine): wait on.
		case errors.Is(err, io.EOF):
			return string(out), false
		case errors.Is(err, syscall.ECONNRESET):
			// A server that closes with input unread (the rest of the
			// pipeline after a protocol error) resets the connection.
			return string(out), true
		default:
			require.NoError(t, err)
		}
		require.True(t, time.Now().Before(quit), "no end of output")
	}
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

// randomPipeline mixes key commands (which prefetch parses ahead) with
// everything that must stop it: commands that change how later requests
// parse (AUTH, RESET, CONFIG SET proto-max-bulk-len), transactions,
// unknown and malformed commands, inline and empty requests, requests
// over the unauthenticated limits, and now and then a protocol error.
func randomPipeline(rnd *rand.Rand) string {
	key := func() string { return fmt.Sprintf("k%d", rnd.IntN(6)) }
	var b strings.Builder
	n := 1 + rnd.IntN(60)
	for range n {
		switch rnd.IntN(25) {
		case 0:
			b.WriteString(multibulk("SET", key(), fmt.Sprint(rnd.IntN(100))))
		case 1:
			b.WriteString(multibulk("SET", key(), "v", "PX", "100000"))
		case 2:
			b.WriteString(multibulk("GET", key()))
		case 3:
			b.WriteString(multibulk("INCR", key()))
		case 4:
			b.WriteString(multibulk("CL.THROTTLE", "rl"+key(), "3", "10", "60"))
		case 5:
			b.WriteString(multibulk("SL.THROTTLE", "sl"+key(), "3", "1000"))
		case 6:
			b.WriteString(multibulk("ZADD", "z"+key(), fmt.Sprint(rnd.IntN(9)), fmt.Sprint("m", rnd.IntN(4))))
		case 7:
			b.WriteString(multibulk("ZRANGE", "z"+key(), "0", "-1", "WITHSCORES"))
		case 8:
			b.WriteString(multibulk("DEL", key(), key()))
		case 9:
			b.WriteString(multibulk("MSET", key(), "1", key(), "2", key(), "3", key(), "4", key(), "5", key(), "6"))
		case 10:
			b.WriteString(multibulk("GET")) // wrong arity
		case 11:
			b.WriteString(multibulk("GET", "z"+key())) // WRONGTYPE, or nil
		case 12:
			b.WriteString(multibulk("MULTI"))
		case 13:
			b.WriteString(multibulk("EXEC"))
		case 14:
			b.WriteString(multibulk("PING"))
		case 15:
			b.WriteString("PING inline\r\n")
		case 16:
			b.WriteString("\r\n")
		case 17:
			b.WriteString(multibulk("AUTH", []string{"pw", "wrong"}[rnd.IntN(2)]))
		case 18:
			b.WriteString(multibulk("HELLO", []string{"2", "3"}[rnd.IntN(2)]))
		case 19:
			b.WriteString(multibulk("CONFIG", "SET", "proto-max-bulk-len", []string{"1mb", "1024"}[rnd.IntN(2)]))
		case 20:
			b.WriteString(multibulk("SET", key(), strings.Repeat("x", 17000))) // over the unauthenticated 16384
		case 21:
			b.WriteString(multibulk("SET", key(), strings.Repeat("y", 2000))) // over a 1024-byte proto-max-bulk-len
		case 22:
			b.WriteString(multibulk("NOSUCH", key()))
		case 24:
			b.WriteString(multibulk("RESET")) // unauthenticates when there is a password
		case 23:
			if rnd.IntN(8) == 0 {
				b.WriteString("*2\r\n$3\r\nGET\r\n$x\r\n") // protocol error: the connection closes
			} else {
				b.WriteString(multibulk("DISCARD"))
			}
		}
	}
	return b.String()
}

// Prefetching a batch is invisible: the same pipelines get byte-identical
// replies and leave the same state with prefetch-batch yes and no.
func TestPrefetchBatchIsInvisible(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewPCG(seed, 7))
	for _, pass := range []string{"", "pw"} {
		conf := func(prefetch string) []string {
			c := []string{"prefetch-batch", prefetch}
			if pass != "" {
				c = append(c, "requirepass", pass)
			}
			return c
		}
		on, off := newTestServer(t, conf("yes")...), newTestServer(t, conf("no")...)
		off.clock.ns.Store(on.clock.ns.Load())
		auth := ""
		if pass != "" {
			auth = multibulk("AUTH", pass)
		}
		fixed := []string{
			// A transaction that changes the limits: what follows its EXEC
			// must be parsed under the new ones.
			auth + multibulk("MULTI") + multibulk("CONFIG", "SET", "proto-max-bulk-len", "1024") + multibulk("EXEC") +
				multibulk("SET", "big", strings.Repeat("z", 2000)),
			auth + multibulk("CONFIG", "SET", "proto-max-bulk-len", "1mb") + multibulk("MULTI") + multibulk("SET", "a", "1") +
				multibulk("EXEC") + multibulk("MULTI") + multibulk("INCR", "a") + multibulk("DISCARD") + multibulk("GET", "a"),
		}
		for trial := range 100 + len(fixed) {
			var p string
			if trial < len(fixed) {
				p = fixed[trial]
			} else {
				p = randomPipeline(rnd)
			}
			// A reply lost to a reset is retried: both servers run the
			// whole pipeline again, so they stay alike.
			var got, want string
			for try := 0; try < 5; try++ {
				var gotReset bool
				done := make(chan struct{})
				go func() { defer close(done); got, gotReset = pipelineReply(t, on.addr, p) }()
				var wantReset bool
				want, wantReset = pipelineReply(t, off.addr, p)
				<-done
				if got == want || !gotReset && !wantReset {
					break
				}
			}
			require.Equal(t, want, got, "requirepass %q, trial %d, pipeline %q", pass, trial, p)
		}
		state := pipelineOutput(t, on.addr, multibulk("AUTH", "pw")+multibulk("CONFIG", "SET", "proto-max-bulk-len", "1mb")+multibulk("KEYS", "*")+multibulk("DBSIZE"))
		require.Equal(t, pipelineOutput(t, off.addr, multibulk("AUTH", "pw")+multibulk("CONFIG", "SET", "proto-max-bulk-len", "1mb")+multibulk("KEYS", "*")+multibulk("DBSIZE")), state)
	}
}

// prefetch parses the key commands at the front of the buffer ahead,
// through the first command that may change how the rest parses, and
// runBuffered then runs them from there.
func TestPrefetchParsesAheadOnce(t *testing.T) {
	ts := newTestServer(t)
	c := socketlessConn(ts.srv)
	tail := "*1\r\n$3\r\nGE" // incomplete
	in := multibulk("SET", "a", "1") + multibulk("INCR", "a") + multibulk("GET", "a") +
		multibulk("HELLO", "3") + multibulk("GET", "a") + tail
	c.w = copy(c.buf, in)
	require.True(t, c.prefetch())
	var names []string
	for _, p := range c.pre {
		names = append(names, string(p.args[0]))
	}
	require.Equal(t, []string{"SET", "INCR", "GET", "HELLO"}, names)
	require.Equal(t, 0, c.r, "nothing consumed yet")
	require.True(t, c.runBuffered())
	out := string(c.Out)
	require.True(t, strings.HasPrefix(out, "+OK\r\n:2\r\n$1\r\n2\r\n%7\r\n"), "%q", out)
	require.True(t, strings.HasSuffix(out, "$1\r\n2\r\n"), "%q", out)
	require.Equal(t, len(in)-len(tail), c.r, "the incomplete tail stays buffered")
	require.Equal(t, 3, c.Proto())

	// Transactions of key commands are parsed ahead through their EXEC.
	c = socketlessConn(ts.srv)
	in = multibulk("MULTI") + multibulk("SET", "b", "1") + multibulk("EXEC") + multibulk("MULTI") +
		multibulk("INCR", "b") + multibulk("EXEC") + multibulk("MULTI") + multibulk("CONFIG", "GET", "port") + multibulk("EXEC") + multibulk("GET", "b")
	c.w = copy(c.buf, in)
	require.True(t, c.prefetch())
	require.Len(t, c.pre, 8, "through the CONFIG queued in the third transaction, which may change limits when its EXEC runs")
	require.True(t, c.runBuffered())
	require.True(t, strings.HasSuffix(string(c.Out), "$1\r\n2\r\n"), "%q", c.Out)

	// Off, nothing is parsed ahead.
	require.NoError(t, ts.srv.cfg.Set("prefetch-batch", "no"))
	c = socketlessConn(ts.srv)
	c.w = copy(c.buf, in)
	require.True(t, c.runBuffered())
	require.Empty(t, c.pre)
}

// prefetch-batch auto loads keys ahead only once the keyspace is too large
// for the CPU cache; yes always, no never.
func TestPrefetchTouchWanted(t *testing.T) {
	ts := newTestServer(t)
	set := func(v string) {
		require.NoError(t, ts.srv.cfg.Set("prefetch-batch", v))
	}
	require.Equal(t, "auto", ts.srv.cfg.String(config.PrefetchBatch))
	require.False(t, ts.srv.touchWanted(), "auto, empty keyspace")
	c := ts.client(t, 2)
	pipe := c.Pipeline()
	for i := range prefetchMinKeys {
		pipe.Set(ctx, fmt.Sprint("k", i), "v", 0)
	}
	_, err := pipe.Exec(ctx)
	require.NoError(t, err)
	require.False(t, ts.srv.touchWanted(), "auto: counted at the next expiry tick")
	ts.store.ExpireCycle(ts.clock.Now()/1e6, time.Millisecond)
	require.True(t, ts.srv.touchWanted(), "auto, %d keys", prefetchMinKeys)
	set("no")
	require.False(t, ts.srv.touchWanted())
	set("yes")
	require.True(t, ts.srv.touchWanted())
	require.NoError(t, c.FlushAll(ctx).Err())
	ts.store.ExpireCycle(ts.clock.Now()/1e6, time.Millisecond)
	set("auto")
	require.False(t, ts.srv.touchWanted(), "auto, after FLUSHALL")
	require.Error(t, c.ConfigSet(ctx, "prefetch-batch", "sometimes").Err())
}
