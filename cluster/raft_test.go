package cluster

import (
	"context"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/internal/nodeid"
	"github.com/ratekv/ratekv/server"
	"github.com/ratekv/ratekv/shards"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

var ctx = context.Background()

// testNode is one in-process cluster node: a server and its Control.
type testNode struct {
	srv  *server.Server
	ctl  *Control
	rdb  *redis.Client
	port int
	id   string
	down bool
}

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startNode starts a cluster-mode server on loopback with its topology in
// Raft (node timeout 2 s: heartbeats of 200 ms), serving no slot. The
// tests' clusters cover only some slots, so it serves without full
// coverage.
func startNode(t *testing.T) *testNode {
	t.Helper()
	cfg := config.New()
	for _, kv := range [][2]string{{"port", "0"}, {"save", ""}, {"appendonly", "no"}, {"dir", t.TempDir()}, {"cluster-enabled", "yes"}, {"cluster-require-full-coverage", "no"}} {
		require.NoError(t, cfg.Set(kv[0], kv[1]))
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	store := shards.New(shards.Options{Shards: 4})
	t.Cleanup(store.Close)
	srv := server.New(store, cfg, log)
	require.NoError(t, srv.Listen())
	srv.StartReplication()
	id := nodeid.New()
	id.ConfigEpoch = 0
	srv.SetNode(id)
	n := &testNode{srv: srv, port: srv.Addr().(*net.TCPAddr).Port, id: id.ID}
	ctl, err := Open(Options{Dir: t.TempDir(), Self: Node{ID: id.ID, IP: "127.0.0.1", Port: n.port, BusPort: freePort(t)},
		BindIP: "127.0.0.1", NodeTimeout: 2 * time.Second, Engine: srv.Engine, Config: cfg, Logger: log, Explicit: true})
	require.NoError(t, err)
	srv.SetClusterControl(ctl)
	go srv.Serve()
	n.ctl = ctl
	// READONLY: a replica serves its primary's slots to this client.
	n.rdb = redis.NewClient(&redis.Options{Addr: srv.Addr().String(), MaxRetries: -1, ReadTimeout: 20 * time.Second,
		OnConnect: func(ctx context.Context, cn *redis.Conn) error { return cn.ReadOnly(ctx).Err() }})
	t.Cleanup(func() {
		n.rdb.Close()
		n.kill()
	})
	return n
}

// kill ends the node: its Raft and its server.
func (n *testNode) kill() {
	if n.down {
		return
	}
	n.down = true
	n.stop()
	c, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	n.srv.Shutdown(c)
}

// stop ends the node's Raft (as a crash does, for the others).
func (n *testNode) stop() { n.ctl.Close() }

// do sends a command and returns its reply or error as text.
func (n *testNode) do(args ...any) string {
	v, err := n.rdb.Do(ctx, args...).Result()
	if err != nil {
		return "error: " + err.Error()
	}
	switch v := v.(type) {
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	}
	return "?"
}

// view is a node's CLUSTER NODES without what differs between nodes
// (myself, the pong times): one "id addr flags primary epoch slots" line
// per node, sorted by id.
func (n *testNode) view(t *testing.T) string {
	t.Helper()
	out, err := n.rdb.ClusterNodes(ctx).Result()
	require.NoError(t, err)
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		f[2] = strings.TrimPrefix(f[2], "myself,")
		lines = append(lines, strings.Join(append([]string{f[0], f[1], f[2], f[3], f[6]}, f[8:]...), " "))
	}
	return strings.Join(lines, "\n")
}

// agree waits until every node's view is the same and has want nodes,
// and returns it.
func agree(t *testing.T, want int, nodes ...*testNode) string {
	t.Helper()
	var views []string
	require.Eventually(t, func() bool {
		views = views[:0]
		for _, n := range nodes {
			views = append(views, n.view(t))
		}
		for _, v := range views {
			if v != views[0] || strings.Count(v, "\n")+1 != want {
				return false
			}
		}
		return true
	}, 10*time.Second, 20*time.Millisecond, "the nodes do not agree: %q", views)
	return views[0]
}

// TestRaftGroup: three nodes meet into one Raft group and agree on every
// change whichever node it is sent to; errors come back from the leader
// as Redis's; two clusters cannot meet; the group survives its leader's
// loss and forgets it.
func TestRaftGroup(t *testing.T) {
	a, b, c := startNode(t), startNode(t), startNode(t)
	require.Equal(t, "OK", a.do("cluster", "addslotsrange", 0, 8191))
	require.Equal(t, "OK", b.do("cluster", "addslotsrange", 8192, 16383))
	require.Equal(t, "OK", b.do("cluster", "meet", "127.0.0.1", a.port))
	require.Equal(t, "OK", c.do("cluster", "meet", "127.0.0.1", a.port))
	v := agree(t, 3, a, b, c)
	require.Contains(t, v, a.id+" 127.0.0.1:")
	require.Contains(t, v, " 0-8191")
	require.Contains(t, v, " 8192-16383")
	require.Equal(t, "OK", a.do("cluster", "meet", "127.0.0.1", c.port), "known already")

	// Every node publishes the same table to its request path.
	for _, n := range []*testNode{a, b, c} {
		tab := n.srv.SlotTable()
		require.NotNil(t, tab)
		require.Equal(t, n.id, tab.Nodes[tab.Self].ID)
		require.Equal(t, a.id, tab.Nodes[tab.Owner[0]].ID)
		require.Equal(t, b.id, tab.Nodes[tab.Owner[16383]].ID)
	}

	// Changes sent to any node; errors from the leader's apply.
	for i, tc := range []struct {
		n    *testNode
		args []any
		want string
	}{
		{c, []any{"cluster", "addslots", 5}, "error: ERR Slot 5 is already busy"},
		{b, []any{"cluster", "addslots", 16384}, "error: ERR Invalid or out of range slot"},
		{c, []any{"cluster", "replicate", "f00"}, "error: ERR Unknown node f00"},
		{c, []any{"cluster", "replicate", c.id}, "error: ERR Can't replicate myself"},
		{a, []any{"cluster", "replicate", b.id}, "error: ERR To set a master the node must be empty and without assigned slots."},
		{c, []any{"cluster", "set-config-epoch", 9}, "error: ERR The user can assign a config epoch only when the node does not know any other node."},
		{c, []any{"cluster", "forget", c.id}, "error: ERR I tried hard but I can't forget myself..."},
		{c, []any{"cluster", "meet", "nohost", 7000}, "error: ERR Invalid node address specified: nohost:7000"},
		{c, []any{"cluster", "meet", "127.0.0.1", "x"}, "error: ERR Invalid base port specified: x"},
		{c, []any{"replicaof", "127.0.0.1", a.port}, "error: ERR REPLICAOF not allowed in cluster mode."},
		{c, []any{"cluster", "failover", "nope"}, "error: ERR syntax error"},
		{c, []any{"cluster", "replicate", b.id}, "OK"}, // c loads b's data for a moment: -LOADING
		{b, []any{"cluster", "failover"}, "error: ERR You should send CLUSTER FAILOVER to a replica"},
		{a, []any{"cluster", "delslots", 5}, "OK"},
		{b, []any{"cluster", "delslots", 5}, "error: ERR Slot 5 is already unassigned"},
		{a, []any{"cluster", "count-failure-reports", b.id}, "0"},
	} {
		require.Equal(t, tc.want, tc.n.do(tc.args...), "step %d: %v", i, tc.args)
	}
	// SETSLOT NODE commits once; the same again, as redis-cli sends it
	// to every primary, adds no entry.
	require.Equal(t, "OK", a.do("cluster", "setslot", 8191, "node", b.id))
	agree(t, 3, a, b, c)
	applied := b.ctl.raft().AppliedIndex()
	require.Equal(t, "OK", b.do("cluster", "setslot", 8191, "node", b.id))
	require.Equal(t, applied, b.ctl.raft().AppliedIndex())
	require.Equal(t, "OK", a.do("cluster", "setslot", 8191, "node", a.id), "and back")
	v = agree(t, 3, a, b, c)
	require.Contains(t, v, c.id+" 127.0.0.1:"+strconv.Itoa(c.port))
	require.Contains(t, v, "slave "+b.id)
	require.Contains(t, v, " 0-4 6-8191")
	info, err := b.rdb.ClusterInfo(ctx).Result()
	require.NoError(t, err)
	require.Contains(t, info, "cluster_state:ok\r\n", "slot 5 has no node, but full coverage is not required")
	require.NoError(t, b.rdb.ConfigSet(ctx, "cluster-require-full-coverage", "yes").Err())
	info, err = b.rdb.ClusterInfo(ctx).Result()
	require.NoError(t, err)
	require.Contains(t, info, "cluster_state:fail\r\n", "slot 5 has no node")
	require.NoError(t, b.rdb.ConfigSet(ctx, "cluster-require-full-coverage", "no").Err())
	require.Contains(t, info, "cluster_slots_assigned:16383\r\ncluster_slots_ok:16383\r\n")
	require.Contains(t, info, "cluster_known_nodes:3\r\ncluster_size:2\r\n")
	require.Regexp(t, "ratekv_topology:ok\r\nratekv_topology_leader:[0-9a-f]{40}\r\n", info)
	reps, err := a.rdb.Do(ctx, "cluster", "replicas", b.id).StringSlice()
	require.NoError(t, err)
	require.Len(t, reps, 1)
	require.True(t, strings.HasPrefix(reps[0], c.id+" "), reps[0])
	require.Eventually(t, func() bool {
		role, err := c.rdb.Do(ctx, "role").Slice()
		return err == nil && role[0] == "slave" && role[2] == int64(b.port)
	}, 5*time.Second, 20*time.Millisecond, "the replica replicates its primary")

	// Two clusters of several nodes cannot meet.
	d, e := startNode(t), startNode(t)
	require.Equal(t, "OK", e.do("cluster", "meet", "127.0.0.1", d.port))
	agree(t, 2, d, e)
	require.Equal(t, "error: ERR both nodes are already in clusters of several nodes: CLUSTER FORGET or RESET one side first", a.do("cluster", "meet", "127.0.0.1", d.port))
	require.Equal(t, "error: ERR both nodes are already in clusters of several nodes: CLUSTER FORGET or RESET one side first", d.do("cluster", "meet", "127.0.0.1", b.port))

	// The leader leaves: the others elect one and go on, and forget it.
	var leader *testNode
	var rest []*testNode
	for _, n := range []*testNode{a, b, c} {
		if n.ctl.IsLeader() {
			leader = n
		} else {
			rest = append(rest, n)
		}
	}
	require.NotNil(t, leader)
	leader.stop()
	require.Eventually(t, func() bool { return rest[0].ctl.IsLeader() || rest[1].ctl.IsLeader() }, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, "OK", rest[0].do("cluster", "forget", leader.id))
	require.Equal(t, "OK", rest[1].do("cluster", "forget", leader.id), "forgotten already: OK, as redis-cli sends it to every node")
	v = agree(t, 2, rest...)
	require.NotContains(t, v, leader.id)

	// The group of two loses one more: no majority, the topology is
	// frozen and CLUSTER INFO says so; the node still serves.
	rest[1].stop()
	require.Eventually(t, func() bool {
		return strings.Contains(rest[0].rdb.ClusterInfo(ctx).Val(), "ratekv_topology:frozen\r\nratekv_topology_leader:\r\n")
	}, 10*time.Second, 20*time.Millisecond)
	// It serves its slots: writes when it is a primary, reads of its
	// primary's slots when a replica.
	tab := rest[0].srv.SlotTable()
	owner := tab.Self
	if p := tab.Nodes[tab.Self].Primary; p != "" {
		for i := range tab.Nodes {
			if tab.Nodes[i].ID == p {
				owner = int32(i)
			}
		}
	}
	slot := slices.Index(tab.Owner[:], owner)
	require.GreaterOrEqual(t, slot, 0)
	key := keyInSlot(slot)
	if tab.Nodes[tab.Self].Primary == "" {
		require.NoError(t, rest[0].rdb.Set(ctx, key, "served", 0).Err())
	} else {
		require.ErrorIs(t, rest[0].rdb.Get(ctx, key).Err(), redis.Nil)
	}
	require.Equal(t, "error: ERR the cluster topology has no leader (a majority of its voters is unreachable): it cannot change now",
		func() string {
			start := time.Now()
			defer func() {
				t.Logf("a change without a leader gave up after %v", time.Since(start).Round(time.Millisecond))
			}()
			return rest[0].do("cluster", "addslots", 5)
		}())
}

// TestRaftRestart: a node restarts into its group with the topology it
// had, and RESET takes a node out of its group.
func TestRaftRestart(t *testing.T) {
	a, b := startNode(t), startNode(t)
	require.Equal(t, "OK", b.do("cluster", "meet", "127.0.0.1", a.port))
	require.Equal(t, "OK", a.do("cluster", "addslotsrange", 0, 100))
	agree(t, 2, a, b)

	// b restarts its Raft from its directory.
	require.NoError(t, b.ctl.Close())
	b.ctl.o.Self.Hostname = "b.example" // a new cluster-announce-hostname
	require.NoError(t, b.ctl.start(nil, true))
	require.Equal(t, "OK", b.do("cluster", "addslots", 200))
	require.Eventually(t, func() bool { return strings.Contains(a.view(t), ",b.example master") }, 5*time.Second, 20*time.Millisecond,
		"the restart's new address is committed")
	v := agree(t, 2, a, b)
	require.Regexp(t, b.id+" .* 200\n", v+"\n")
	require.Contains(t, v, " 0-100")

	// RESET: b leaves, alone with no slot; a forgets it.
	require.Equal(t, "OK", a.do("cluster", "addslots", 300))
	require.Equal(t, "error: ERR CLUSTER RESET can't be called with master nodes containing keys", func() string {
		require.NoError(t, a.rdb.Set(ctx, "k126", "v", 0).Err()) // slot 58: a's
		defer a.rdb.Del(ctx, "k126")
		return a.do("cluster", "reset")
	}())
	require.Equal(t, "OK", b.do("cluster", "reset", "hard"))
	agree(t, 1, a)
	agree(t, 1, b)
	require.NotEqual(t, b.id, b.do("cluster", "myid"), "a hard reset gives a new id")
	require.Equal(t, "OK", b.do("cluster", "meet", "127.0.0.1", a.port), "and it can join again")
	agree(t, 2, a, b)
}

// TestRaftFailover: CLUSTER FAILOVER on a replica swaps it with its
// primary with every acknowledged write; then the new primary dies and
// the leader promotes its replica after the node timeout, with the keys.
func TestRaftFailover(t *testing.T) {
	a, b, c := startNode(t), startNode(t), startNode(t)
	require.Equal(t, "OK", a.do("cluster", "addslotsrange", 0, 8191))
	require.Equal(t, "OK", c.do("cluster", "addslotsrange", 8192, 16383))
	require.Equal(t, "OK", b.do("cluster", "meet", "127.0.0.1", a.port))
	require.Equal(t, "OK", c.do("cluster", "meet", "127.0.0.1", a.port))
	require.Equal(t, "OK", b.do("cluster", "replicate", a.id))
	agree(t, 3, a, b, c)
	for i := range 200 {
		require.NoError(t, a.rdb.Set(ctx, "{b}k"+strconv.Itoa(i), i, 0).Err()) // slot 3300: a's
	}

	// Manual: b takes a's place with all 200 keys; a follows b.
	require.Equal(t, "OK", b.do("cluster", "failover"))
	require.Equal(t, int64(200), b.rdb.DBSize(ctx).Val())
	v := agree(t, 3, a, b, c)
	require.Regexp(t, b.id+" \\S+ master - \\d+ 0-8191", v)
	require.Contains(t, v, a.id+" 127.0.0.1:"+strconv.Itoa(a.port)+"@")
	require.Contains(t, v, "slave "+b.id)
	require.Eventually(t, func() bool {
		role, err := a.rdb.Do(ctx, "role").Slice()
		return err == nil && role[0] == "slave" && role[2] == int64(b.port) && role[3] == "connected"
	}, 10*time.Second, 20*time.Millisecond, "the old primary replicates the new one")
	require.NoError(t, b.rdb.Set(ctx, "{b}after", "1", 0).Err())
	require.Eventually(t, func() bool { return a.rdb.Get(ctx, "{b}after").Val() == "1" }, 5*time.Second, 20*time.Millisecond)
	// What the leader ranks replicas by, and their data age.
	off, age, ok := replicaData(a.rdb, time.Second)
	require.True(t, ok)
	require.Positive(t, off)
	require.Less(t, age, 2*time.Second)
	require.Less(t, a.srv.Engine.ReplDataAge(), 2*time.Second)
	_, _, ok = replicaData(b.rdb, time.Second)
	require.False(t, ok, "a primary is no candidate")
	require.Zero(t, b.srv.Engine.ReplDataAge())

	// Automatic: b dies; after the node timeout (2 s) a serves its slots,
	// but not while a's data is too old for cluster-replica-validity-factor:
	// with 1, and repl-ping-replica-period 1, a link down 1 s + 2 s beyond
	// the node timeout. a's link stays down 3.5 s before b dies.
	for _, n := range []*testNode{a, b, c} {
		require.NoError(t, n.rdb.ConfigSet(ctx, "cluster-replica-validity-factor", "1").Err())
		require.NoError(t, n.rdb.ConfigSet(ctx, "repl-ping-replica-period", "1").Err())
	}
	require.NoError(t, b.rdb.Do(ctx, "acl", "setuser", "default", "-psync", "-sync").Err())
	require.NoError(t, b.rdb.Do(ctx, "client", "kill", "type", "replica").Err())
	linked := func() bool {
		role, err := a.rdb.Do(ctx, "role").Slice()
		return err == nil && role[3] == "connected"
	}
	require.Eventually(t, func() bool { return !linked() }, 5*time.Second, 20*time.Millisecond)
	require.Never(t, linked, 3500*time.Millisecond, 50*time.Millisecond)
	b.kill()
	owns := func(n *testNode) bool {
		tab := n.srv.SlotTable()
		return tab != nil && tab.Nodes[tab.Owner[0]].ID == a.id
	}
	require.Never(t, func() bool { return owns(a) || owns(c) }, 3*time.Second, 50*time.Millisecond, "a replica with old data is not promoted")
	for _, n := range []*testNode{a, c} {
		require.NoError(t, n.rdb.ConfigSet(ctx, "cluster-replica-validity-factor", "0").Err())
	}
	require.Eventually(t, func() bool {
		for _, n := range []*testNode{a, c} {
			if !strings.Contains(n.view(t), a.id+" 127.0.0.1:"+strconv.Itoa(a.port)+"@") {
				return false
			}
			tab := n.srv.SlotTable()
			if tab == nil || tab.Nodes[tab.Owner[0]].ID != a.id {
				return false
			}
		}
		return true
	}, 15*time.Second, 50*time.Millisecond, "a replaces b")
	v = agree(t, 3, a, c)
	require.Contains(t, v, b.id+" 127.0.0.1:"+strconv.Itoa(b.port)+"@")
	require.Regexp(t, b.id+" \\S+ slave,fail "+a.id, v)
	role, err := a.rdb.Do(ctx, "role").Slice()
	require.NoError(t, err)
	require.Equal(t, "master", role[0])
	require.Equal(t, int64(201), a.rdb.DBSize(ctx).Val(), "every key the replica had")
	require.NoError(t, a.rdb.Set(ctx, "{b}k0", "new", 0).Err(), "it takes writes")
}

// TestRaftSeedAfterCrash: a node that stops before its new group applied
// its own record applies it when it restarts, and takes changes then.
func TestRaftSeedAfterCrash(t *testing.T) {
	n := startNode(t)
	o := n.ctl.o
	o.Dir, o.Self.BusPort, o.Self.ID = t.TempDir(), freePort(t), nodeid.New().ID
	ctl, err := Open(o)
	require.NoError(t, err)
	require.NoError(t, ctl.Close()) // before the election: nothing applied
	ctl, err = Open(o)
	require.NoError(t, err)
	defer ctl.Close()
	require.NoError(t, ctl.AddSlots([]uint16{1, 2}))
	st := ctl.State()
	require.Equal(t, []string{o.Self.ID}, st.IDs())
	require.Equal(t, 2, st.SlotsOf(o.Self.ID))
}

// TestRaftMeetRefused: a join the leader refuses (a slot served on both
// sides) leaves the joining node alone with what it had.
func TestRaftMeetRefused(t *testing.T) {
	a, b := startNode(t), startNode(t)
	require.Equal(t, "OK", a.do("cluster", "addslots", 7))
	require.Equal(t, "OK", b.do("cluster", "addslots", 7, 8))
	require.Equal(t, "error: ERR the joining node serves slot 7, which node "+a.id+" serves", b.do("cluster", "meet", "127.0.0.1", a.port))
	v := agree(t, 1, b)
	require.Regexp(t, b.id+" .* 7-8$", v)
	require.Equal(t, "OK", b.do("cluster", "delslots", 7), "its own group again")
	require.Equal(t, "OK", b.do("cluster", "meet", "127.0.0.1", a.port))
	v = agree(t, 2, a, b)
	require.Regexp(t, b.id+" .* 8\n", v+"\n")
}

// fiveNodes starts primaries a, b and c, which cover every slot, and d
// and e, replicas of a and b.
func fiveNodes(t *testing.T) (a, b, c, d, e *testNode) {
	t.Helper()
	a, b, c, d, e = startNode(t), startNode(t), startNode(t), startNode(t), startNode(t)
	require.Equal(t, "OK", a.do("cluster", "addslotsrange", 0, 5000))
	require.Equal(t, "OK", b.do("cluster", "addslotsrange", 5001, 10000))
	require.Equal(t, "OK", c.do("cluster", "addslotsrange", 10001, 16383))
	for _, n := range []*testNode{b, c, d, e} {
		require.Equal(t, "OK", n.do("cluster", "meet", "127.0.0.1", a.port))
	}
	require.Equal(t, "OK", d.do("cluster", "replicate", a.id))
	require.Equal(t, "OK", e.do("cluster", "replicate", b.id))
	agree(t, 5, a, b, c, d, e)
	return a, b, c, d, e
}

// TestRaftFrozenServes: with a majority of the voters gone the topology
// is frozen, but a node that reaches most primaries keeps serving past
// the node timeout; once it reaches too few, it answers -CLUSTERDOWN.
func TestRaftFrozenServes(t *testing.T) {
	a, b, c, d, e := fiveNodes(t)
	key := keyInSlot(0) // a's

	// Three voters of five go, one of them primary c: a reaches a and b.
	for _, n := range []*testNode{c, d, e} {
		n.kill()
	}
	require.Eventually(t, func() bool {
		return strings.Contains(a.rdb.ClusterInfo(ctx).Val(), "ratekv_topology:frozen\r\n")
	}, 10*time.Second, 20*time.Millisecond)
	require.Never(t, func() bool { return a.srv.Engine.ClusterDown() }, 3*time.Second, 50*time.Millisecond,
		"a node that reaches most primaries serves past the node timeout (2 s)")
	require.NoError(t, a.rdb.Set(ctx, key, "served", 0).Err())
	require.Contains(t, a.rdb.ClusterInfo(ctx).Val(), "cluster_state:ok\r\n")

	// b goes too: a alone is cut off.
	b.kill()
	require.Eventually(t, func() bool { return a.srv.Engine.ClusterDown() }, 10*time.Second, 50*time.Millisecond)
	require.EqualError(t, a.rdb.Set(ctx, key, "refused", 0).Err(), "CLUSTERDOWN The cluster is down")
	require.Contains(t, a.rdb.ClusterInfo(ctx).Val(), "cluster_state:fail\r\n")
}

// TestRaftNoFailoverOfMostPrimaries: with two primaries of three out of
// the leader's reach, the leader promotes no one: they may be alive on
// the other side of a partition, serving their slots (as in Redis, where
// a failover needs the votes of most primaries).
func TestRaftNoFailoverOfMostPrimaries(t *testing.T) {
	a, b, c, d, e := fiveNodes(t)
	for _, n := range []*testNode{a, b, c, d, e} {
		require.NoError(t, n.rdb.ConfigSet(ctx, "cluster-replica-validity-factor", "0").Err())
	}
	// Three voters of five are left: b, d and e elect a leader.
	a.kill()
	c.kill()
	require.Eventually(t, func() bool { return b.ctl.Leader() != "" }, 10*time.Second, 20*time.Millisecond)
	require.Never(t, func() bool { return d.srv.Engine.SlotTable().Owner[0] == d.srv.Engine.SlotTable().Self },
		3500*time.Millisecond, 50*time.Millisecond, "no failover while one primary of three answers")
}

// keyInSlot returns a key of the hash slot.
func keyInSlot(slot int) string {
	for i := 0; ; i++ {
		if k := "k" + strconv.Itoa(i); int(shards.KeySlot([]byte(k))) == slot {
			return k
		}
	}
}
