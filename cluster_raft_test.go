package main

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestRedisCliCluster: six ratekv processes on loopback become a cluster
// of three primaries and three replicas with redis-cli --cluster create,
// as Redis nodes do; redis-cli --cluster check passes, every node's
// CLUSTER NODES agree, go-redis's ClusterClient reads back keys of every
// slot, add-node and del-node change the cluster, and after a kill -9 of
// a primary (the Raft leader too) its replica takes over its slots, the
// ClusterClient reads every key again, and the old primary comes back as
// a replica of the new one.
func TestRedisCliCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl := newCliCluster(t, ctx, 1000)
	procs := map[string]*exec.Cmd{}
	args := map[string][]string{} // each node's directory and arguments, for a restart
	startIn := func(dir string, a ...string) string {
		addr, cmd := startRatekv(t, cl.bin, dir, a...)
		procs[addr], args[addr] = cmd, append([]string{dir}, a...)
		return addr
	}
	start := func() string {
		return startIn(t.TempDir(), cl.nodeArgs()...)
	}
	var addrs []string
	for range 6 {
		addrs = append(addrs, start())
	}
	redisCli := cl.redisCli
	out := redisCli(append(append([]string{"create"}, addrs...), "--cluster-replicas", "1", "--cluster-yes")...)
	require.Contains(t, out, "[OK] All 16384 slots covered.")
	out = redisCli("check", addrs[4])
	require.Contains(t, out, "[OK] All nodes agree about slots configuration.")
	require.Contains(t, out, "[OK] All 16384 slots covered.")
	require.Equal(t, 3, strings.Count(out, "1 additional replica(s)"), out)

	clients := map[string]*redis.Client{}
	for _, a := range addrs {
		clients[a] = redis.NewClient(&redis.Options{Addr: a})
		defer clients[a].Close()
	}
	agreed := func(addrs []string) string {
		var first string
		require.Eventually(t, func() bool {
			for i, a := range addrs {
				v := nodesView(t, clients[a])
				if i == 0 {
					first = v
				} else if v != first {
					return false
				}
			}
			return true
		}, 10*time.Second, 50*time.Millisecond, "the nodes' CLUSTER NODES differ")
		return first
	}
	view := agreed(addrs)
	require.Equal(t, 3, strings.Count(view, " master "), view)
	require.Equal(t, 3, strings.Count(view, " slave "), view)

	// A cluster client writes and reads keys of every slot.
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs[:1]})
	defer cc.Close()
	const keys = 3000
	for i := range keys {
		require.NoError(t, cc.Set(ctx, fmt.Sprintf("key:%d", i), i, 0).Err())
	}
	for i := range keys {
		require.Equal(t, strconv.Itoa(i), cc.Get(ctx, fmt.Sprintf("key:%d", i)).Val(), "key:%d", i)
	}
	var total int64
	for _, a := range addrs {
		role, err := clients[a].Do(ctx, "role").Slice()
		require.NoError(t, err)
		if role[0] == "master" {
			n, err := clients[a].DBSize(ctx).Result()
			require.NoError(t, err)
			require.Greater(t, n, int64(keys/5), "%s serves its share", a)
			total += n
		}
	}
	require.Equal(t, int64(keys), total, "each key on its slot's primary only")

	// add-node: a seventh node joins, as a replica of the first primary.
	extra := start()
	clients[extra] = redis.NewClient(&redis.Options{Addr: extra})
	defer clients[extra].Close()
	out = redisCli("add-node", extra, addrs[0])
	require.Contains(t, out, "[OK] New node added correctly.")
	all := append(append([]string(nil), addrs...), extra)
	view = agreed(all)
	require.Equal(t, 7, strings.Count(view, "\n")+1)

	// del-node: it leaves; the six others forget it.
	id, err := clients[extra].ClusterMyID(ctx).Result()
	require.NoError(t, err)
	redisCli("del-node", addrs[0], id)
	view = agreed(addrs)
	require.NotContains(t, view, id)
	out = redisCli("check", addrs[0])
	require.Contains(t, out, "[OK] All nodes agree about slots configuration.")
	require.Contains(t, out, "[OK] All 16384 slots covered.")

	// kill -9 of the first primary, which leads the Raft group too.
	deadID, err := clients[addrs[0]].ClusterMyID(ctx).Result()
	require.NoError(t, err)
	require.NoError(t, procs[addrs[0]].Process.Kill())
	procs[addrs[0]].Wait()
	killed := time.Now()
	rest := addrs[1:]
	require.Eventually(t, func() bool {
		v := nodesView(t, clients[rest[0]])
		return strings.Contains(v, deadID+" ") && strings.Contains(v, " slave,fail ") && strings.Count(v, " master ") == 3
	}, 20*time.Second, 50*time.Millisecond, "a replica replaces the killed primary")
	t.Logf("failover %v after the kill -9 (node timeout 1 s)", time.Since(killed).Round(100*time.Millisecond))
	view = agreed(rest)
	require.Regexp(t, deadID+" \\S+ slave,fail ", view)
	// Until the request path answers -MOVED, a node serves any key it
	// gets, so the client must learn the new owner from CLUSTER SLOTS.
	cc.ReloadState(ctx)
	for i := range keys {
		v, err := cc.Get(ctx, fmt.Sprintf("key:%d", i)).Result()
		require.NoError(t, err, "key:%d after the failover", i)
		require.Equal(t, strconv.Itoa(i), v, "key:%d after the failover", i)
	}

	// The old primary comes back (on another client port): it commits
	// its new address and replicates the primary that replaced it.
	back := startIn(args[addrs[0]][0], args[addrs[0]][1:]...)
	rdb := redis.NewClient(&redis.Options{Addr: back})
	defer rdb.Close()
	var newPrimary string
	for _, l := range strings.Split(view, "\n") {
		if f := strings.Fields(l); f[0] == deadID {
			newPrimary = f[3]
		}
	}
	require.Eventually(t, func() bool {
		v := nodesView(t, clients[rest[0]])
		_, port, _ := net.SplitHostPort(back)
		return strings.Contains(v, deadID+" 127.0.0.1:"+port+"@") && strings.Contains(v, deadID+" 127.0.0.1:"+port+"@"+args[addrs[0]][8]+" slave "+newPrimary)
	}, 20*time.Second, 50*time.Millisecond, "the old primary is back, as a replica of %s", newPrimary)
	require.Eventually(t, func() bool {
		role, err := rdb.Do(ctx, "role").Slice()
		return err == nil && role[0] == "slave" && role[3] == "connected"
	}, 20*time.Second, 50*time.Millisecond, "it replicates its new primary")
	require.Eventually(t, func() bool { return rdb.DBSize(ctx).Val() > keys/5 }, 10*time.Second, 50*time.Millisecond, "with its keys")
}

// freeTCPPort returns a loopback port that was free a moment ago.
func freeTCPPort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// nodesView is a node's CLUSTER NODES without what differs between
// nodes (myself, the pong times), its lines sorted.
func nodesView(t *testing.T, rdb *redis.Client) string {
	out, err := rdb.ClusterNodes(context.Background()).Result()
	require.NoError(t, err)
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		f[2] = strings.TrimPrefix(f[2], "myself,")
		lines = append(lines, strings.Join(append([]string{f[0], f[1], f[2], f[3], f[6]}, f[8:]...), " "))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// cliCluster starts cluster-mode ratekv processes that own no slot (as
// fresh Redis nodes) and runs redis-cli --cluster against them.
type cliCluster struct {
	t           *testing.T
	ctx         context.Context
	cli, bin    string
	nodeTimeout int // cluster-node-timeout, ms
}

// newCliCluster skips the test without redis-cli and builds ratekv once.
func newCliCluster(t *testing.T, ctx context.Context, nodeTimeout int) *cliCluster {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli not installed")
	}
	bin, err := buildBinary()
	require.NoError(t, err)
	return &cliCluster{t: t, ctx: ctx, cli: cli, bin: bin, nodeTimeout: nodeTimeout}
}

// nodeArgs are a fresh node's arguments, with a free cluster bus port.
func (c *cliCluster) nodeArgs() []string {
	return []string{"--cluster-enabled", "yes", "--cluster-solo-owns-all-slots", "no",
		"--cluster-node-timeout", strconv.Itoa(c.nodeTimeout), "--cluster-port", strconv.Itoa(freeTCPPort(c.t)),
		"--save", "", "--appendonly", "no"}
}

// redisCli runs redis-cli --cluster args and returns its output; it fails
// the test when redis-cli does.
func (c *cliCluster) redisCli(args ...string) string {
	out, err := exec.CommandContext(c.ctx, c.cli, append([]string{"--cluster"}, args...)...).CombinedOutput()
	require.NoError(c.t, err, "redis-cli --cluster %s:\n%s", strings.Join(args, " "), out)
	return string(out)
}

// clusterNode is one line of CLUSTER NODES.
type clusterNode struct {
	id, addr, flags string
	primary         string   // its primary's id, "" for a primary
	slots           []string // its slot ranges, as CLUSTER NODES gives them
}

// clusterNodes is a node's CLUSTER NODES by node id.
func clusterNodes(t *testing.T, rdb *redis.Client) map[string]clusterNode {
	out, err := rdb.ClusterNodes(context.Background()).Result()
	require.NoError(t, err)
	nodes := map[string]clusterNode{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		addr, _, _ := strings.Cut(f[1], "@")
		n := clusterNode{id: f[0], addr: addr, flags: f[2], slots: f[8:]}
		if f[3] != "-" {
			n.primary = f[3]
		}
		nodes[n.id] = n
	}
	return nodes
}

// owns reports whether a node's slot ranges hold slot.
func (n clusterNode) owns(slot int) bool {
	for _, r := range n.slots {
		lo, hi, ok := strings.Cut(r, "-")
		if !ok {
			hi = lo
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 == nil && err2 == nil && a <= slot && slot <= b {
			return true
		}
	}
	return false
}
