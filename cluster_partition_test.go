package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ratekv/ratekv/shards"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// netLab is a bridge in the root network namespace and a namespace per
// node, joined to the bridge by a veth pair, with its own 10.x.y.n
// address. Names are unique per test process, so that what a killed run
// left behind cannot break the next; t.Cleanup removes them.
type netLab struct {
	t      *testing.T
	tag    string // prefix of the namespaces' and links' names
	subnet string // "10.x.y."
	n      int
}

// newNetLab makes a lab of n namespaces; it skips the test when the
// process is not root or the kernel refuses namespaces or bridges.
func newNetLab(t *testing.T, n int) *netLab {
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("no ip command")
	}
	pid := os.Getpid()
	l := &netLab{t: t, tag: fmt.Sprintf("rk%d", pid), subnet: fmt.Sprintf("10.%d.%d.", 100+pid%100, pid/100%250), n: n}
	t.Cleanup(l.remove) // registered first: it runs after the nodes are killed
	if out, err := l.ip("link", "add", l.tag+"br", "type", "bridge"); err != nil {
		t.Skipf("cannot make a bridge: %v %s", err, out)
	}
	l.must("addr", "add", l.subnet+"254/24", "dev", l.tag+"br")
	l.must("link", "set", l.tag+"br", "up")
	for i := range n {
		if out, err := l.ip("netns", "add", l.ns(i)); err != nil {
			t.Skipf("cannot make a network namespace: %v %s", err, out)
		}
		host, peer := l.link(i), fmt.Sprintf("%sc%d", l.tag, i)
		l.must("link", "add", host, "type", "veth", "peer", "name", peer)
		l.must("link", "set", peer, "netns", l.ns(i))
		l.must("link", "set", host, "master", l.tag+"br", "up")
		l.must("-n", l.ns(i), "addr", "add", l.addr(i)+"/24", "dev", peer)
		l.must("-n", l.ns(i), "link", "set", peer, "up")
		l.must("-n", l.ns(i), "link", "set", "lo", "up")
	}
	return l
}

func (l *netLab) ns(i int) string   { return fmt.Sprintf("%sn%d", l.tag, i) }
func (l *netLab) link(i int) string { return fmt.Sprintf("%sh%d", l.tag, i) } // node i's link on the bridge
func (l *netLab) addr(i int) string { return l.subnet + strconv.Itoa(i+1) }
func (l *netLab) via(i int) []string {
	return []string{"ip", "netns", "exec", l.ns(i)}
}

func (l *netLab) ip(args ...string) ([]byte, error) {
	return exec.Command("ip", args...).CombinedOutput()
}

func (l *netLab) must(args ...string) {
	l.t.Helper()
	out, err := l.ip(args...)
	require.NoError(l.t, err, "ip %s: %s", strings.Join(args, " "), out)
}

// cut takes node i's link down (up: back up).
func (l *netLab) cut(i int, up bool) {
	state := "down"
	if up {
		state = "up"
	}
	l.must("link", "set", l.link(i), state)
}

// cli runs redis-cli args inside node i's namespace, against node i.
func (l *netLab) cli(i int, port string, args ...string) string {
	l.t.Helper()
	argv := append(append(l.via(i), "redis-cli", "-h", l.addr(i), "-p", port), args...)
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	require.NoError(l.t, err, "%s: %s", strings.Join(argv, " "), out)
	return strings.TrimSpace(string(out))
}

func (l *netLab) remove() {
	for i := range l.n {
		l.ip("netns", "del", l.ns(i)) // takes the veth pair with it
		l.ip("link", "del", l.link(i))
	}
	l.ip("link", "del", l.tag+"br")
}

// TestClusterPartition: a primary cut off from a 3+3 cluster in network
// namespaces (its link taken down) keeps acknowledging writes for less
// than cluster-node-timeout, then answers -CLUSTERDOWN, while on the
// majority side its replica takes over its slots; when the link is back,
// the old primary replicates the new one, drops the write it took alone,
// and redirects with -MOVED.
func TestClusterPartition(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lab := newNetLab(t, 6)
	begin := time.Now()
	const nodeTimeout = 1000
	cl := newCliCluster(t, ctx, nodeTimeout)
	var addrs []string
	for i := range 6 {
		addr, _ := startRatekvVia(t, lab.via(i), cl.bin, t.TempDir(), append(cl.nodeArgs(), "--bind", lab.addr(i), "--protected-mode", "no")...)
		addrs = append(addrs, addr)
	}
	out := cl.redisCli(append(append([]string{"create"}, addrs...), "--cluster-replicas", "1", "--cluster-yes")...)
	require.Contains(t, out, "[OK] All 16384 slots covered.")
	t.Logf("the cluster is created %v after the start", time.Since(begin).Round(50*time.Millisecond))
	clients := map[string]*redis.Client{}
	for _, a := range addrs {
		clients[a] = redis.NewClient(&redis.Options{Addr: a, DialTimeout: 500 * time.Millisecond, ReadTimeout: time.Second, MaxRetries: -1,
			OnConnect: func(ctx context.Context, cn *redis.Conn) error { return cn.ReadOnly(ctx).Err() }})
		defer clients[a].Close()
	}
	require.Eventually(t, func() bool {
		first := nodesView(t, clients[addrs[0]])
		for _, a := range addrs[1:] {
			if nodesView(t, clients[a]) != first {
				return false
			}
		}
		return strings.Count(first, " slave ") == 3
	}, 10*time.Second, 50*time.Millisecond, "the nodes agree")

	// The primary to cut off: the Raft leader, so that the majority must
	// elect another first.
	info := clients[addrs[0]].ClusterInfo(ctx).Val()
	_, leader, _ := strings.Cut(info, "ratekv_topology_leader:")
	leader = strings.TrimSpace(leader)
	nodes := clusterNodes(t, clients[addrs[0]])
	p := nodes[leader]
	if !strings.Contains(p.flags, "master") {
		for _, n := range nodes {
			if strings.Contains(n.flags, "master") {
				p = n
				break
			}
		}
	}
	var r clusterNode
	for _, n := range nodes {
		if n.primary == p.id {
			r = n
		}
	}
	require.NotEmpty(t, r.id, "the primary's replica")
	pi := -1
	for i, a := range addrs {
		if a == p.addr {
			pi = i
		}
	}
	require.GreaterOrEqual(t, pi, 0, "%s among %v", p.addr, addrs)
	_, pport, _ := strings.Cut(p.addr, ":")
	tag := ""
	for i := 0; tag == ""; i++ {
		if k := fmt.Sprintf("{t%d}", i); p.owns(int(shards.KeySlotString(k))) {
			tag = k
		}
	}

	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, DialTimeout: 500 * time.Millisecond, ReadTimeout: time.Second})
	defer cc.Close()
	const keys = 300
	for i := range keys {
		require.NoError(t, cc.Set(ctx, fmt.Sprintf("key:%d", i), i, 0).Err())
	}
	require.NoError(t, cc.Set(ctx, tag+"before", "1", 0).Err())
	require.Eventually(t, func() bool { // replicated
		return clients[r.addr].Exists(ctx, tag+"before").Val() == 1
	}, 5*time.Second, 20*time.Millisecond)

	// The cut: the primary alone still takes a write, which no replica
	// receives, then refuses writes and reads after the node timeout.
	lab.cut(pi, false)
	cut := time.Now()
	require.Equal(t, "OK", lab.cli(pi, pport, "SET", tag+"lost", "1"))
	require.Eventually(t, func() bool {
		return lab.cli(pi, pport, "SET", tag+"x", "1") == "CLUSTERDOWN The cluster is down"
	}, 10*time.Second, 50*time.Millisecond, "the cut-off primary refuses writes")
	t.Logf("the cut-off primary refuses writes %v after the cut (node timeout %d ms)", time.Since(cut).Round(50*time.Millisecond), nodeTimeout)
	require.Equal(t, "CLUSTERDOWN The cluster is down", lab.cli(pi, pport, "GET", tag+"before"))
	require.Contains(t, lab.cli(pi, pport, "CLUSTER", "INFO"), "cluster_state:fail")
	require.Equal(t, "OK", lab.cli(pi, pport, "CONFIG", "SET", "cluster-allow-reads-when-down", "yes"))
	require.Equal(t, "1", lab.cli(pi, pport, "GET", tag+"before"))
	require.Equal(t, "CLUSTERDOWN The cluster is down and only accepts read commands", lab.cli(pi, pport, "SET", tag+"x", "1"))

	// The majority side: the replica has the slots, the client writes.
	require.Eventually(t, func() bool {
		n := clusterNodes(t, clients[r.addr])
		return strings.Contains(n[r.id].flags, "master") && n[r.id].owns(int(shards.KeySlotString(tag))) &&
			strings.Contains(n[p.id].flags, "fail")
	}, 15*time.Second, 50*time.Millisecond, "the replica replaces the cut-off primary")
	t.Logf("failover %v after the cut", time.Since(cut).Round(50*time.Millisecond))
	cc.ReloadState(ctx)
	require.Eventually(t, func() bool { return cc.Set(ctx, tag+"after", "1", 0).Err() == nil }, 5*time.Second, 50*time.Millisecond)
	for _, a := range addrs {
		if a != p.addr {
			require.Contains(t, clients[a].ClusterInfo(ctx).Val(), "cluster_state:ok", a)
		}
	}

	// The link is back: the old primary follows the new one, without the
	// write it took alone, and redirects its old slots.
	lab.cut(pi, true)
	healed := time.Now()
	old := clients[p.addr]
	require.Eventually(t, func() bool {
		err := old.Set(ctx, tag+"before", "2", 0).Err()
		return err != nil && strings.HasPrefix(err.Error(), fmt.Sprintf("MOVED %d %s", shards.KeySlotString(tag), r.addr))
	}, 15*time.Second, 50*time.Millisecond, "the old primary redirects to the new one")
	require.Eventually(t, func() bool {
		role, err := old.Do(ctx, "role").Slice()
		return err == nil && role[0] == "slave" && role[3] == "connected" && old.Exists(ctx, tag+"after").Val() == 1
	}, 15*time.Second, 50*time.Millisecond, "the old primary replicates the new one")
	t.Logf("the old primary replicates the new one %v after the link is back (%v after the start)",
		time.Since(healed).Round(50*time.Millisecond), time.Since(begin).Round(50*time.Millisecond))
	require.Contains(t, old.ClusterInfo(ctx).Val(), "cluster_state:ok")
	require.Equal(t, int64(0), old.Exists(ctx, tag+"lost").Val(), "the write the cut-off primary took alone is dropped")
	require.ErrorIs(t, cc.Get(ctx, tag+"lost").Err(), redis.Nil)
	for i := range keys {
		v, err := cc.Get(ctx, fmt.Sprintf("key:%d", i)).Result()
		require.NoError(t, err, "key:%d", i)
		require.Equal(t, strconv.Itoa(i), v)
	}
	out = cl.redisCli("check", addrs[(pi+1)%6])
	require.Contains(t, out, "[OK] All nodes agree about slots configuration.")
	require.Contains(t, out, "[OK] All 16384 slots covered.")
	require.False(t, errors.Is(ctx.Err(), context.DeadlineExceeded))
}
