package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

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
	require.Eventually(t, func() bool {
		return r.info("master_link_status") == "up" && p.info("master_repl_offset") == r.info("master_repl_offset")
	}, 20*time.Second, 5*time.Millisecond, "replica never caught up:\nprimary:\n%s\nreplica:\n%s", p.logText(), r.logText())
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
