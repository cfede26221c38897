package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratekv/ratekv/shards"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestClusterClientsFailover: redis-py's RedisCluster and ioredis's
// Cluster (clients/python/cluster_writer.py, clients/node/cluster_writer.js)
// write unique keys into three primaries and three replicas made a cluster
// by redis-cli --cluster create, while redis-cli --cluster reshard moves
// slots to one primary, which is then killed with kill -9. Both clients go
// on writing into its slots once its replica has replaced it. Afterwards
// every acknowledged write is there, on its slot's owner only, except
// writes to the killed primary that its replica had not confirmed: the
// test samples both nodes' replication offsets every 10 ms and allows a
// loss only of writes acknowledged after the replica's last sampled
// offset had been reached. A write may be refused only during the
// failover (redis-py retries a dead node for 1.25 s before it asks for
// the topology again). Skipped without python3-redis or ioredis.
func TestClusterClientsFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs seven processes")
	}
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import redis.cluster").Run(); err != nil {
		t.Skip("redis-py is not installed for /usr/bin/python3 (apt-get install python3-redis)")
	}
	node, modules := nodeClients(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl := newCliCluster(t, ctx, 2000) // Raft keeps its leader on a busy machine
	procs := map[string]*exec.Cmd{}
	clients := map[string]*redis.Client{}
	var addrs []string
	for range 6 {
		addr, cmd := startRatekv(t, cl.bin, t.TempDir(), cl.nodeArgs()...)
		addrs, procs[addr] = append(addrs, addr), cmd
		clients[addr] = redis.NewClient(&redis.Options{Addr: addr})
		defer clients[addr].Close()
	}
	out := cl.redisCli(append(append([]string{"create"}, addrs...), "--cluster-replicas", "1", "--cluster-yes")...)
	require.Contains(t, out, "[OK] All 16384 slots covered.")

	// src gives slots to dst, the primary that is killed; rep replicates dst.
	var nodes map[string]clusterNode
	require.Eventually(t, func() bool {
		nodes = clusterNodes(t, clients[addrs[0]])
		return len(nodes) == 6 && strings.Count(nodesView(t, clients[addrs[0]]), " slave ") == 3
	}, 10*time.Second, 50*time.Millisecond, "three primaries with a replica each")
	owners := slotOwners(t, clients[addrs[0]])
	src, dst := nodes[owners[0]], nodes[owners[16383]]
	var rep clusterNode
	for _, n := range nodes {
		if n.primary == dst.id {
			rep = n
		}
	}
	require.NotEmpty(t, rep.id, "a replica of %s", dst.addr)

	rate := "1000"
	if r := os.Getenv("RATEKV_CLUSTER_WRITE_RATE"); r != "" {
		rate = r // writes a second, each client
	}
	startup := strings.Join(addrs, ",")
	writers := []*clusterWriter{
		startClusterWriter(t, "redis-py", nil, python, filepath.Join("clients", "python", "cluster_writer.py"), startup, "py", rate),
		startClusterWriter(t, "ioredis", []string{"NODE_PATH=" + modules}, node, filepath.Join("clients", "node", "cluster_writer.js"), startup, "js", rate),
	}
	dstOwners := owners // until the reshard is over
	inDst := func(key string) bool { return dstOwners[shards.KeySlotString(key)] == dst.id }
	waitAcks := func(since time.Time, keys func(string) bool, n int, what string) {
		for _, w := range writers {
			require.Eventually(t, func() bool { return w.acksSince(since, keys) >= n }, 20*time.Second, 20*time.Millisecond,
				"%s: %d writes %s\n%s", w.name, n, what, w.tail())
		}
	}
	all := func(string) bool { return true }
	waitAcks(time.Time{}, all, 200, "before the reshard")
	t.Logf("writing; resharding 300 slots from %s to %s", src.addr, dst.addr)

	// The reshard, under both clients' writes.
	out = cl.redisCli("reshard", src.addr, "--cluster-from", src.id, "--cluster-to", dst.id, "--cluster-slots", "300", "--cluster-yes")
	require.NotContains(t, out, "ERR", out)
	out = cl.redisCli("check", rep.addr)
	require.Contains(t, out, "[OK] All nodes agree about slots configuration.", out)
	require.Contains(t, out, "[OK] All 16384 slots covered.", out)
	dstOwners = slotOwners(t, clients[src.addr])
	require.Equal(t, dst.id, dstOwners[0], "slot 0 moved")

	// Replication offsets of dst and rep every 10 ms until the kill.
	var samples []replSample
	stopSampling, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-tick.C:
			}
			s := replSample{at: time.Now()}
			var err1, err2 error
			s.primary, err1 = infoInt(clients[dst.addr], "master_repl_offset")
			s.replica, err2 = infoInt(clients[rep.addr], "slave_repl_offset")
			if err1 == nil && err2 == nil {
				samples = append(samples, s)
			}
		}
	}()
	reshardDone := time.Now()
	waitAcks(reshardDone, inDst, 300, "into the resharded primary")
	close(stopSampling)
	<-sampled
	killAt := time.Now()
	require.NoError(t, procs[dst.addr].Process.Kill())
	procs[dst.addr].Wait()
	require.NotEmpty(t, samples)
	// What the replica has once its primary is gone: the kernel still
	// delivers what the primary had written to the replica's socket.
	received, err := infoInt(clients[rep.addr], "master_repl_offset")
	require.NoError(t, err)

	t.Logf("killed %s", dst.addr)
	var promotedAt time.Time
	require.Eventually(t, func() bool {
		n := clusterNodes(t, clients[src.addr])
		promotedAt = time.Now()
		return n[rep.id].primary == "" && strings.Contains(n[dst.id].flags, "fail")
	}, 20*time.Second, 20*time.Millisecond, "%s replaces the killed %s", rep.addr, dst.addr)
	waitAcks(promotedAt, inDst, 50, "into the killed primary's slots after the failover")
	t.Logf("%s promoted", rep.addr)
	for _, w := range writers {
		w.stop(t)
	}

	// Where every key is: on its slot's owner, one only.
	owners = slotOwners(t, clients[src.addr])
	for s, id := range owners {
		require.NotEqual(t, dst.id, id, "slot %d still on the killed node", s)
	}
	holder := map[string]string{} // key → the primary's id
	for _, n := range clusterNodes(t, clients[src.addr]) {
		if n.primary != "" || n.id == dst.id {
			continue
		}
		keys, err := clients[n.addr].Keys(ctx, "*").Result()
		require.NoError(t, err)
		for _, k := range keys {
			require.Empty(t, holder[k], "%s on two primaries", k)
			require.Equal(t, owners[shards.KeySlotString(k)], n.id, "%s not on its slot's owner", k)
			holder[k] = n.id
		}
		// The values of the SETs.
		pipe := clients[n.addr].Pipeline()
		gets := map[string]*redis.StringCmd{}
		for _, k := range keys {
			if !strings.Contains(k, ":rl:") {
				gets[k] = pipe.Get(ctx, k)
			}
		}
		_, err = pipe.Exec(ctx)
		require.NoError(t, err)
		for k, c := range gets {
			require.Equal(t, k[strings.IndexByte(k, ':')+1:], c.Val(), "the value of %s", k)
		}
	}

	// The writes the replica had confirmed by its last sampled offset are
	// those acknowledged before the last sample of the primary's offset
	// that it reached. The margin covers the clients' clock resolution.
	const margin = 2 * time.Millisecond
	last := samples[len(samples)-1]
	confirmed := samples[0].at
	maxLag := int64(0)
	for _, s := range samples {
		if s.primary <= last.replica {
			confirmed = s.at
		}
		maxLag = max(maxLag, s.primary-s.replica)
	}
	lostTotal, window, recent, recentDst := 0, 0, 0, 0
	for _, w := range writers {
		var lost []string
		for _, a := range w.all() {
			if a.at.After(killAt.Add(-time.Second)) && !a.at.After(killAt) {
				recent++
				if inDst(a.key) {
					recentDst++
				}
			}
			if inDst(a.key) && !a.at.Before(confirmed) && a.at.Before(promotedAt) {
				window++
			}
		}
		for key, at := range w.firstAcks() {
			if holder[key] != "" {
				continue
			}
			lost = append(lost, key)
			require.True(t, inDst(key), "%s: %s lost, not in the killed primary's slots", w.name, key)
			require.False(t, at.Before(confirmed.Add(-margin)), "%s: %s lost, acknowledged %v before the replica's confirmed offset",
				w.name, key, confirmed.Sub(at))
			require.True(t, at.Before(promotedAt), "%s: %s lost, acknowledged after the failover", w.name, key)
		}
		for _, e := range w.refused() {
			require.False(t, e.at.Before(killAt) || e.at.After(promotedAt.Add(4*time.Second)),
				"%s: %s refused %v after the kill, outside the failover (%v): %s", w.name, e.key, e.at.Sub(killAt), promotedAt.Sub(killAt), e.msg)
		}
		lostTotal += len(lost)
		t.Logf("%s: %d writes acknowledged, %s; lost: %v", w.name, len(w.all()), w.refusals(killAt), lost)
	}
	t.Logf("kill -9 with %d writes/s (%d/s into the killed primary); replication lag at the last sample %d bytes (max %d), "+
		"%d bytes more received after it; confirmed %v before the kill; %d writes into the killed primary acknowledged since; "+
		"%d lost; failover %v after the kill",
		recent, recentDst, max(0, last.primary-last.replica), maxLag, received-last.replica, killAt.Sub(confirmed).Round(time.Millisecond),
		window, lostTotal, promotedAt.Sub(killAt).Round(10*time.Millisecond))
}

// slotOwners is each slot's primary's id by a node's CLUSTER SLOTS.
func slotOwners(t *testing.T, rdb *redis.Client) []string {
	slots, err := rdb.ClusterSlots(context.Background()).Result()
	require.NoError(t, err)
	owners := make([]string, 16384)
	for _, s := range slots {
		for i := s.Start; i <= s.End; i++ {
			owners[i] = s.Nodes[0].ID
		}
	}
	return owners
}

// infoInt is a field of INFO replication.
func infoInt(rdb *redis.Client, field string) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	info, err := rdb.Info(ctx, "replication").Result()
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in INFO replication", field)
}

// replSample is a primary's and its replica's replication offsets; at is
// when the primary's was asked.
type replSample struct {
	at               time.Time
	primary, replica int64
}

// clusterWriter is a client program that writes keys and prints each
// one's outcome ("ok KEY µs" or "err KEY µs message"); it stops when its
// stdin closes.
type clusterWriter struct {
	name   string
	cmd    *exec.Cmd
	stdin  interface{ Close() error }
	stderr string // file
	done   chan struct{}

	mu     sync.Mutex
	acks   []clusterAck
	errs   []clusterAck
	broken string // a line that is neither
}

type clusterAck struct {
	key string
	at  time.Time
	msg string // a refusal's error
}

func startClusterWriter(t *testing.T, name string, env []string, prog string, args ...string) *clusterWriter {
	w := &clusterWriter{name: name, done: make(chan struct{}), stderr: filepath.Join(t.TempDir(), "stderr")}
	w.cmd = exec.Command(prog, args...)
	w.cmd.Env = append(os.Environ(), env...)
	stderr, err := os.Create(w.stderr)
	require.NoError(t, err)
	defer stderr.Close()
	w.cmd.Stderr = stderr
	stdout, err := w.cmd.StdoutPipe()
	require.NoError(t, err)
	stdin, err := w.cmd.StdinPipe()
	require.NoError(t, err)
	w.stdin = stdin
	require.NoError(t, w.cmd.Start())
	t.Cleanup(func() { w.cmd.Process.Kill(); <-w.done })
	go func() {
		defer close(w.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			f := strings.SplitN(sc.Text(), " ", 4)
			us, err := strconv.ParseInt(f[min(2, len(f)-1)], 10, 64)
			w.mu.Lock()
			switch {
			case err != nil || len(f) < 3:
				w.broken = sc.Text()
			case f[0] == "ok":
				w.acks = append(w.acks, clusterAck{key: f[1], at: time.UnixMicro(us)})
			case f[0] == "err" && len(f) == 4:
				w.errs = append(w.errs, clusterAck{f[1], time.UnixMicro(us), f[3]})
			default:
				w.broken = sc.Text()
			}
			w.mu.Unlock()
		}
		w.cmd.Wait()
	}()
	return w
}

// stop closes the writer's stdin and waits for it to exit.
func (w *clusterWriter) stop(t *testing.T) {
	w.stdin.Close()
	select {
	case <-w.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not stop\n%s", w.name, w.tail())
	}
	w.mu.Lock()
	broken := w.broken
	w.mu.Unlock()
	require.Empty(t, broken, "%s printed a line that is not a write's outcome", w.name)
	require.True(t, w.cmd.ProcessState.Success(), "%s failed:\n%s", w.name, w.tail())
}

// acksSince counts the acknowledged writes of keys since t.
func (w *clusterWriter) acksSince(t time.Time, keys func(string) bool) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for i := len(w.acks) - 1; i >= 0 && w.acks[i].at.After(t); i-- {
		if keys(w.acks[i].key) {
			n++
		}
	}
	return n
}

func (w *clusterWriter) all() []clusterAck {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.acks
}

// firstAcks is each acknowledged key's first acknowledgement.
func (w *clusterWriter) firstAcks() map[string]time.Time {
	first := map[string]time.Time{}
	for _, a := range w.all() {
		if _, ok := first[a.key]; !ok {
			first[a.key] = a.at
		}
	}
	return first
}

func (w *clusterWriter) refused() []clusterAck {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.errs
}

// refusals sums up the refused writes: how many, when from the kill at
// t, the first one's error.
func (w *clusterWriter) refusals(t time.Time) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.errs) == 0 {
		return "none refused"
	}
	first, last := w.errs[0], w.errs[len(w.errs)-1]
	return fmt.Sprintf("%d refused from %v to %v after the kill, first %s: %s", len(w.errs),
		first.at.Sub(t).Round(time.Millisecond), last.at.Sub(t).Round(time.Millisecond), first.key, first.msg)
}

// tail is the end of the writer's output and its stderr, for a failure.
func (w *clusterWriter) tail() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "%d acknowledged, %d refused\n", len(w.acks), len(w.errs))
	for _, e := range w.errs[max(0, len(w.errs)-5):] {
		fmt.Fprintf(&b, "%s %s: %s\n", e.at.Format(time.StampMicro), e.key, e.msg)
	}
	stderr, _ := os.ReadFile(w.stderr)
	b.Write(stderr[max(0, len(stderr)-2000):])
	return b.String()
}
