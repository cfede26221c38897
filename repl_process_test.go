package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ratekv/ratekv/internal/resptest"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// Replication between ratekv processes: a full sync, the stream, a
// primary killed with SIGKILL while it streams and restarted, a replica
// restarted cleanly that continues with a partial resync, and peers that
// are not ratekv.

// node is a ratekv process whose log the test reads.
type node struct {
	t    *testing.T
	bin  string
	dir  string
	port string
	args []string
	cmd  *exec.Cmd
	mu   sync.Mutex
	log  strings.Builder
	c    *redis.Client
}

func startNode(t *testing.T, bin string, args ...string) *node {
	n := &node{t: t, bin: bin, dir: t.TempDir(), port: freePort(t), args: args}
	n.start()
	return n
}

func (n *node) addr() string { return net.JoinHostPort("127.0.0.1", n.port) }

func (n *node) start() {
	t := n.t
	t.Helper()
	args := append([]string{"--port", n.port, "--dir", n.dir}, n.args...)
	n.cmd = exec.Command(n.bin, args...)
	pipe, err := n.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, n.cmd.Start())
	cmd := n.cmd
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pipe)
		once := sync.Once{}
		for sc.Scan() {
			n.mu.Lock()
			n.log.WriteString(sc.Text() + "\n")
			n.mu.Unlock()
			if readyLine.MatchString(sc.Text()) {
				once.Do(func() { close(ready) })
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(20 * time.Second):
		t.Fatalf("ratekv not ready after 20 s:\n%s", n.logText())
	}
	n.c = redis.NewClient(&redis.Options{Addr: n.addr(), MaxRetries: -1})
	t.Cleanup(func() { n.c.Close() })
}

func (n *node) logText() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.log.String()
}

func (n *node) info(field string) string {
	info := n.c.Info(context.Background(), "replication").Val()
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	return ""
}

// caughtUp waits until r streams from p and has applied all it wrote.
func caughtUp(t *testing.T, p, r *node) {
	t.Helper()
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if r.info("master_link_status") == "up" && p.info("master_repl_offset") == r.info("master_repl_offset") {
			return
		}
		if time.Now().After(end) { // with both processes' goroutines
			p.cmd.Process.Signal(syscall.SIGQUIT)
			r.cmd.Process.Signal(syscall.SIGQUIT)
			time.Sleep(time.Second)
			t.Fatalf("replica never caught up:\nprimary:\n%s\nreplica:\n%s", p.logText(), r.logText())
		}
	}
}

// dumpAll returns every key with its DUMP, sorted.
func dumpAll(t *testing.T, c *redis.Client) []string {
	ctx := context.Background()
	keys := c.Keys(ctx, "*").Val()
	sort.Strings(keys)
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = fmt.Sprintf("%s=%q", k, c.Dump(ctx, k).Val())
	}
	return out
}

func TestReplicationProcesses(t *testing.T) {
	bin, err := buildBinary()
	require.NoError(t, err)
	ctx := context.Background()
	p := startNode(t, bin, "--appendonly", "yes")
	for i := 0; i < 200; i++ {
		p.c.Do(ctx, "CL.THROTTLE", fmt.Sprintf("rl:%d", i%7), "5", "10", "60")
		p.c.Do(ctx, "ZADD", "z", strconv.Itoa(i), fmt.Sprint("m", i))
		p.c.Do(ctx, "HSET", "h", fmt.Sprint("f", i%13), i)
		p.c.Do(ctx, "RPUSH", "l", i)
		p.c.Do(ctx, "INCR", "n")
	}
	r := startNode(t, bin, "--replicaof", "127.0.0.1 "+p.port, "--appendonly", "yes")
	caughtUp(t, p, r)
	require.Equal(t, dumpAll(t, p.c), dumpAll(t, r.c), "after the full sync")
	require.Equal(t, "READONLY You can't write against a read only replica.", r.c.Set(ctx, "x", "1", 0).Err().Error())

	// Writes stream while the primary is killed.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		c := redis.NewClient(&redis.Options{Addr: p.addr(), MaxRetries: -1})
		defer c.Close()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			c.Do(ctx, "CL.THROTTLE", fmt.Sprintf("rl:%d", i%7), "5", "10", "60")
			c.Do(ctx, "INCR", "n")
		}
	}()
	require.Eventually(t, func() bool { return r.c.Get(ctx, "n").Val() > "250" }, 10*time.Second, time.Millisecond)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	p.cmd.Wait()
	close(stop)
	<-done
	require.Eventually(t, func() bool { return r.info("master_link_status") == "down" }, 10*time.Second, 5*time.Millisecond)
	p.start()
	caughtUp(t, p, r)
	require.Equal(t, dumpAll(t, p.c), dumpAll(t, r.c), "after the primary's restart")
	for i := 0; i < 7; i++ {
		k := fmt.Sprintf("rl:%d", i)
		require.Equal(t, p.c.Do(ctx, "CL.PEEK", k, "5", "10", "60").Val(), r.c.Do(ctx, "CL.PEEK", k, "5", "10", "60").Val(), k)
	}

	// A clean restart of the replica continues where it stopped.
	require.NoError(t, r.cmd.Process.Signal(syscall.SIGTERM))
	r.cmd.Wait()
	p.c.Do(ctx, "INCR", "n")
	r.start()
	caughtUp(t, p, r)
	require.Contains(t, r.logText(), "partial resynchronization with the primary accepted")
	require.Equal(t, dumpAll(t, p.c), dumpAll(t, r.c), "after the replica's restart")

	// WAIT counts the replica.
	p.c.Do(ctx, "INCR", "n")
	require.Equal(t, int64(1), p.c.Do(ctx, "WAIT", "1", "5000").Val())
}

// TestReplicationForeignPeers: a Redis replica of ratekv gets one clear
// error and retries about once a second; a ratekv replica of Redis logs
// one line per cause and retries no faster.
func TestReplicationForeignPeers(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not installed")
	}
	bin, err := buildBinary()
	require.NoError(t, err)
	ctx := context.Background()
	// A primary serving a goroutine per client hands PSYNC's connection
	// over as its event loops do.
	p := startNode(t, bin, "--event-loop", "no")
	require.NoError(t, p.c.Set(ctx, "k", "v", 0).Err())
	r := startNode(t, bin, "--replicaof", "127.0.0.1 "+p.port)
	caughtUp(t, p, r)
	require.Equal(t, "v", r.c.Get(ctx, "k").Val())
	r.cmd.Process.Kill()

	// redis-server as a replica of ratekv.
	rport := freePort(t)
	redisCmd := exec.Command("redis-server", "--port", rport, "--save", "", "--appendonly", "no", "--repl-diskless-sync", "no",
		"--replicaof", "127.0.0.1", p.port, "--dir", t.TempDir())
	require.NoError(t, redisCmd.Start())
	t.Cleanup(func() { redisCmd.Process.Kill(); redisCmd.Wait() })
	time.Sleep(2 * time.Second)
	calls := 0
	for _, line := range strings.Split(p.c.Info(ctx, "commandstats").Val(), "\r\n") {
		if v, ok := strings.CutPrefix(line, "cmdstat_psync:calls="); ok {
			calls, _ = strconv.Atoi(strings.Split(v, ",")[0])
		}
	}
	require.Positive(t, calls, "the Redis replica never asked")
	require.LessOrEqual(t, calls, 4, "a Redis replica retried %d times in 2 s", calls)
	require.Equal(t, 1, strings.Count(p.logText(), "refusing a replica that is not ratekv"), p.logText())

	// ratekv as a replica of redis-server.
	rc := redis.NewClient(&redis.Options{Addr: net.JoinHostPort("127.0.0.1", rport)})
	defer rc.Close()
	require.NoError(t, rc.Do(ctx, "REPLICAOF", "NO", "ONE").Err())
	require.NoError(t, p.c.Do(ctx, "REPLICAOF", "127.0.0.1", rport).Err())
	require.Eventually(t, func() bool {
		return strings.Contains(p.logText(), "it is a Redis server, and ratekv replicates only from ratekv")
	}, 20*time.Second, 50*time.Millisecond, p.logText())
	time.Sleep(1500 * time.Millisecond)
	log := p.logText()
	require.LessOrEqual(t, strings.Count(log, "replication from the primary failed"), 1, log)
	syncs := 0
	for _, line := range strings.Split(rc.Info(ctx, "stats").Val(), "\r\n") {
		if v, ok := strings.CutPrefix(line, "sync_full:"); ok {
			syncs, _ = strconv.Atoi(v)
		}
	}
	require.LessOrEqual(t, syncs, 3, "ratekv asked Redis for %d full syncs", syncs)
}

// cutProxy forwards TCP connections to target. cut stops forwarding in
// both directions without closing anything, as a network partition does;
// heal resumes. holdAfter cuts by itself once n more bytes have gone from
// target to the client, which freezes a full sync mid-transfer.
type cutProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cond   *sync.Cond
	cut    bool
	hold   int64 // bytes towards the client before the next cut (-1: none)
	conns  []net.Conn
	closed bool
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &cutProxy{ln: ln, target: target, hold: -1}
	p.cond = sync.NewCond(&p.mu)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *cutProxy) port() string {
	_, port, _ := net.SplitHostPort(p.ln.Addr().String())
	return port
}

func (p *cutProxy) accept() {
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			down.Close()
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			up.Close()
			down.Close()
			return
		}
		p.conns = append(p.conns, up, down)
		p.mu.Unlock()
		go p.forward(down, up, true)
		go p.forward(up, down, false)
	}
}

// forward copies src to dst, holding each piece while the proxy is cut.
func (p *cutProxy) forward(dst, src net.Conn, toClient bool) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		chunk := buf[:n]
		for len(chunk) > 0 {
			p.mu.Lock()
			for p.cut && !p.closed {
				p.cond.Wait()
			}
			m := len(chunk)
			if toClient && p.hold >= 0 {
				m = int(min(int64(m), p.hold))
				p.hold -= int64(m)
				if p.hold == 0 {
					p.cut, p.hold = true, -1
				}
			}
			closed := p.closed
			p.mu.Unlock()
			if closed {
				return
			}
			if _, werr := dst.Write(chunk[:m]); werr != nil {
				return
			}
			chunk = chunk[m:]
		}
		if err != nil { // a close is held while cut, as any other byte
			p.mu.Lock()
			for p.cut && !p.closed {
				p.cond.Wait()
			}
			p.mu.Unlock()
			return
		}
	}
}

func (p *cutProxy) setCut(cut bool) {
	p.mu.Lock()
	p.cut, p.hold = cut, -1
	p.cond.Broadcast()
	p.mu.Unlock()
}

func (p *cutProxy) isCut() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut
}

// holdAfter makes the proxy cut once n more bytes reached the client.
func (p *cutProxy) holdAfter(n int64) {
	p.mu.Lock()
	p.hold = n
	p.mu.Unlock()
}

func (p *cutProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	p.closed = true
	for _, c := range p.conns {
		c.Close()
	}
	p.cond.Broadcast()
	p.mu.Unlock()
}

func (n *node) kill() {
	require.NoError(n.t, n.cmd.Process.Signal(syscall.SIGKILL))
	n.cmd.Wait()
}

// stat returns a field of INFO section sec.
func (n *node) stat(sec, field string) string {
	for _, line := range strings.Split(n.c.Info(context.Background(), sec).Val(), "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	return ""
}

// digest returns the number of keys and a SHA-256 of every key's name and
// value: MGET for fillBulk's strings, DUMP for the others. It reads the
// replies raw: go-redis objects for tens of thousands of values are slow
// under -race.
func digest(t *testing.T, c *redis.Client, addr string) string {
	t.Helper()
	keys, err := c.Keys(context.Background(), "*").Result()
	require.NoError(t, err)
	sort.Strings(keys)
	var bulk, other []string
	for _, k := range keys {
		if strings.HasPrefix(k, "bulk:") {
			bulk = append(bulk, k)
		} else {
			other = append(other, k)
		}
	}
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	br := bufio.NewReaderSize(conn, 1<<20)
	h := sha256.New()
	do := func(args ...string) {
		_, err := conn.Write(respCommand(nil, args...))
		require.NoError(t, err)
		var b strings.Builder
		require.NoError(t, resptest.ReadReply(br, &b))
		require.NotEqual(t, "-", b.String()[:1], b.String())
		io.WriteString(h, b.String())
	}
	for rest := bulk; len(rest) > 0; {
		batch := rest[:min(len(rest), 1000)]
		rest = rest[len(batch):]
		fmt.Fprintln(h, batch)
		do(append([]string{"MGET"}, batch...)...)
	}
	for _, k := range other {
		fmt.Fprintf(h, "%q=", k)
		do("DUMP", k)
	}
	return fmt.Sprintf("%d keys, sha256 %x", len(keys), h.Sum(nil))
}

// respCommand appends a RESP request.
func respCommand(b []byte, args ...string) []byte {
	b = fmt.Appendf(b, "*%d\r\n", len(args))
	for _, a := range args {
		b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b
}

// converged waits until r has caught up with p and compares their data.
func converged(t *testing.T, p, r *node, what string) {
	t.Helper()
	caughtUp(t, p, r)
	require.Equal(t, digest(t, p.c, p.addr()), digest(t, r.c, r.addr()), what)
}

// fillBulk writes n keys of 1 kB values.
func fillBulk(t *testing.T, addr string, n int) {
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	br := bufio.NewReader(conn)
	pad := strings.Repeat("v", 1000)
	for i := 0; i < n; {
		args := []string{"MSET"}
		for k := 0; k < 100 && i < n; k, i = k+1, i+1 {
			args = append(args, fmt.Sprintf("bulk:%07d", i), fmt.Sprint(i, pad))
		}
		_, err := conn.Write(respCommand(nil, args...))
		require.NoError(t, err)
		var b strings.Builder
		require.NoError(t, resptest.ReadReply(br, &b))
		require.Equal(t, "+OK\r\n", b.String())
	}
}

// writer runs writes on p until stopped: CL.THROTTLE, INCR n and RPUSH
// hist with n's new value, then WAIT 1 when wait is set.
type writer struct {
	stop  chan struct{}
	done  chan struct{}
	maxN  atomic.Int64 // the highest n the primary answered
	acked atomic.Int64 // the highest n a WAIT 1 acknowledged as replicated
}

func startWriter(addr string, wait bool) *writer {
	w := &writer{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		ctx := context.Background()
		c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
		defer c.Close()
		for i := 0; ; i++ {
			select {
			case <-w.stop:
				return
			default:
			}
			c.Do(ctx, "CL.THROTTLE", fmt.Sprintf("rl:%d", i%7), "5", "10", "60")
			v, err := c.Incr(ctx, "n").Result()
			if err != nil {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			if v > w.maxN.Load() {
				w.maxN.Store(v)
			}
			c.RPush(ctx, "hist", v)
			if wait && c.Do(ctx, "WAIT", "1", "1000").Val() == int64(1) {
				w.acked.Store(v)
			}
		}
	}()
	return w
}

func (w *writer) halt() {
	close(w.stop)
	<-w.done
}

// watchPrefix checks, until the returned function is called, that r holds
// nothing p never had: its counter n is never above the highest value p
// had (what p answered to w or to the watch, and the one INCR w may have
// in flight). When strict (p is not restarted meanwhile, so it keeps all
// it had) also that r's n is never above p's current one and never goes
// back while r runs, and that r's hist list is a prefix of p's.
func watchPrefix(t *testing.T, p, r *node, w *writer, strict bool) func() []string {
	stop := make(chan struct{})
	var bad []string
	done := make(chan struct{})
	ctx := context.Background()
	// Clients of its own: a restart replaces the nodes' clients.
	pc := redis.NewClient(&redis.Options{Addr: p.addr(), MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	rc := redis.NewClient(&redis.Options{Addr: r.addr(), MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	pmax, _ := pc.Get(ctx, "n").Int64()
	go func() {
		defer close(done)
		defer pc.Close()
		defer rc.Close()
		last := int64(0)
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			rn, err1 := rc.Get(ctx, "n").Int64()
			rl, err2 := rc.LLen(ctx, "hist").Result()
			var rv string
			if rl > 0 && err2 == nil {
				rv, err2 = rc.LIndex(ctx, "hist", rl-1).Result()
			}
			pn, err3 := pc.Get(ctx, "n").Int64()
			pv := pc.LIndex(ctx, "hist", rl-1).Val()
			if err3 == nil {
				pmax = max(pmax, pn)
			}
			if err1 != nil || err2 != nil {
				last = 0 // restarted, r may come back with less
				continue
			}
			switch {
			case rn > max(pmax, w.maxN.Load())+1:
				bad = append(bad, fmt.Sprintf("replica n=%d, the primary never above %d", rn, max(pmax, w.maxN.Load())))
			case !strict || err3 != nil:
			case rn > pn:
				bad = append(bad, fmt.Sprintf("replica n=%d above the primary's %d", rn, pn))
			case rn < last:
				bad = append(bad, fmt.Sprintf("replica n went back from %d to %d", last, rn))
			case rl > 0 && rv != pv:
				bad = append(bad, fmt.Sprintf("replica hist[%d]=%q, primary's %q", rl-1, rv, pv))
			}
			last = rn
		}
	}()
	var once sync.Once
	finish := func() []string {
		once.Do(func() { close(stop); <-done })
		return bad
	}
	t.Cleanup(func() { finish() })
	return finish
}

// noTempSync fails if a full sync left a temporary snapshot in n's dir.
func noTempSync(t *testing.T, n *node) {
	t.Helper()
	for _, pattern := range []string{"temp-sync-*", "temp-replica-sync-*"} {
		left, _ := filepath.Glob(filepath.Join(n.dir, pattern))
		require.Empty(t, left, "in %s", n.dir)
	}
}

// syncsDone counts the full syncs r completed.
func syncsDone(r *node) int {
	return strings.Count(r.logText(), "full resynchronization with the primary done")
}

// waitSyncPhase waits until r receives a full sync that px holds and p
// sends (send_bulk), with no more syncs done than before.
func waitSyncPhase(t *testing.T, p, r *node, px *cutProxy, before int) {
	t.Helper()
	require.Eventually(t, func() bool {
		return px.isCut() && r.info("master_sync_in_progress") == "1" && strings.Contains(p.info("slave0"), "state=send_bulk")
	}, 20*time.Second, time.Millisecond, "no full sync in progress:\n%s\n%s", p.logText(), r.logText())
	require.Equal(t, before, syncsDone(r), "the full sync was not held")
}

// TestReplicationFaults kills the primary and the replica with SIGKILL
// during a full sync and while they stream under writes, and cuts their
// link without closing it: each time the replica converges to exactly
// the primary's data, never holds what the primary did not, and writes
// acknowledged by WAIT 1 survive its promotion.
func TestReplicationFaults(t *testing.T) {
	bin, err := buildBinary()
	require.NoError(t, err)
	ctx := context.Background()
	fast := []string{"--repl-timeout", "2", "--repl-ping-replica-period", "1", "--appendonly", "yes"}
	p := startNode(t, bin, append(fast, "--repl-backlog-size", "64mb")...)
	fillBulk(t, p.addr(), 30_000) // a snapshot of 30 MB
	px := newCutProxy(t, p.addr())

	// The replica killed during a full sync.
	px.holdAfter(1 << 20)
	r := startNode(t, bin, append(fast, "--replicaof", "127.0.0.1 "+px.port())...)
	waitSyncPhase(t, p, r, px, 0)
	r.kill()
	px.setCut(false)
	r.start()
	converged(t, p, r, "after the replica's kill during a full sync")
	noTempSync(t, r)

	// The primary killed during a full sync (REPLICAOF NO ONE and back
	// makes the replica resynchronize fully).
	require.NoError(t, r.c.Do(ctx, "REPLICAOF", "NO", "ONE").Err())
	require.NoError(t, p.c.Set(ctx, "during", "1", 0).Err())
	px.holdAfter(1 << 20)
	before := syncsDone(r)
	require.NoError(t, r.c.Do(ctx, "REPLICAOF", "127.0.0.1", px.port()).Err())
	waitSyncPhase(t, p, r, px, before)
	p.kill()
	px.setCut(false)
	p.start()
	converged(t, p, r, "after the primary's kill during a full sync")
	noTempSync(t, p)
	noTempSync(t, r)
	require.NoError(t, p.c.FlushAll(ctx).Err()) // the streaming checks below need no bulk

	// The replica killed while streaming under writes, then the link cut
	// without a close and healed: the replica notices within repl-timeout
	// and continues with a partial resync.
	w := startWriter(p.addr(), false)
	check := watchPrefix(t, p, r, w, true)
	atLeast := func(n *node, v int64) {
		t.Helper()
		require.Eventually(t, func() bool { have, _ := n.c.Get(ctx, "n").Int64(); return have >= v }, 10*time.Second, time.Millisecond)
	}
	atLeast(r, 200)
	r.kill()
	atLeast(p, 400)
	r.start()
	atLeast(r, 600)
	partials, fulls := p.stat("stats", "sync_partial_ok"), p.stat("stats", "sync_full")
	px.setCut(true)
	cut := time.Now()
	require.Eventually(t, func() bool { return r.info("master_link_status") == "down" }, 10*time.Second, 5*time.Millisecond)
	require.Less(t, time.Since(cut), 3500*time.Millisecond, "the replica noticed the cut link late")
	px.setCut(false)
	atLeast(r, w.maxN.Load()+100)
	w.halt()
	converged(t, p, r, "after the link was healed")
	have, _ := strconv.Atoi(p.stat("stats", "sync_partial_ok"))
	was, _ := strconv.Atoi(partials)
	// More than one when the primary answers the PSYNC of an attempt the
	// replica gave up during the cut, which the proxy held.
	require.Greater(t, have, was, "the replica did not continue with a partial resync:\n%s\n%s", p.logText(), r.logText())
	require.Equal(t, fulls, p.stat("stats", "sync_full"), "a full resync after the cut:\n%s\n%s", p.logText(), r.logText())
	require.Empty(t, check())

	// The primary killed while streaming under writes.
	w = startWriter(p.addr(), false)
	check = watchPrefix(t, p, r, w, false)
	atLeast(r, w.maxN.Load()+200)
	p.kill()
	p.start()
	atLeast(r, w.maxN.Load()+200)
	w.halt()
	converged(t, p, r, "after the primary's kill while streaming")
	require.Empty(t, check())

	// Writes acknowledged by WAIT 1 survive the replica's promotion.
	w = startWriter(p.addr(), true)
	require.Eventually(t, func() bool { return w.acked.Load() > 100 }, 10*time.Second, time.Millisecond)
	p.kill()
	acked := w.acked.Load()
	w.halt()
	require.NoError(t, r.c.Do(ctx, "REPLICAOF", "NO", "ONE").Err())
	n, err := r.c.Get(ctx, "n").Int64()
	require.NoError(t, err)
	require.GreaterOrEqual(t, n, acked, "a write WAIT acknowledged was lost in the failover")
}

// TestReplicaCrashContinuesPartially: a replica killed with SIGKILL
// restarts from its append-only file, which says which offset of the
// primary's stream its data is at (REPLSTATE), and continues with a
// partial resync while the primary's backlog holds what it missed.
func TestReplicaCrashContinuesPartially(t *testing.T) {
	bin, err := buildBinary()
	require.NoError(t, err)
	ctx := context.Background()
	fast := []string{"--repl-timeout", "2", "--repl-ping-replica-period", "1", "--appendonly", "yes"}
	p := startNode(t, bin, fast...)
	r := startNode(t, bin, append(fast, "--replicaof", "127.0.0.1 "+p.port)...)
	for i := 0; i < 100; i++ {
		require.NoError(t, p.c.Incr(ctx, "n").Err())
		require.NoError(t, p.c.Do(ctx, "CL.THROTTLE", "rl", "5", "10", "60").Err())
	}
	caughtUp(t, p, r)
	require.Eventually(t, func() bool { return r.stat("persistence", "aof_buffer_length") == "0" }, 10*time.Second, 5*time.Millisecond)
	fulls, partials := p.stat("stats", "sync_full"), p.stat("stats", "sync_partial_ok")
	r.kill()
	for i := 0; i < 100; i++ {
		require.NoError(t, p.c.Incr(ctx, "n").Err())
	}
	r.start()
	converged(t, p, r, "after the replica's crash")
	require.Equal(t, "200", r.c.Get(ctx, "n").Val())
	require.Equal(t, fulls, p.stat("stats", "sync_full"), "a full resync after the crash:\n%s", r.logText())
	have, _ := strconv.Atoi(p.stat("stats", "sync_partial_ok"))
	was, _ := strconv.Atoi(partials)
	require.Equal(t, was+1, have)
}
