package command

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratekv/ratekv/internal/nodeid"
	"github.com/ratekv/ratekv/shards"
	"github.com/stretchr/testify/require"
)

// Three nodes for routing tests: a, the node under test unless a table
// says otherwise; b, another primary; c, a replica of a.
var (
	routeA = NodeAddr{ID: strings.Repeat("a", 40), IP: "10.0.0.1", Port: 7001}
	routeB = NodeAddr{ID: strings.Repeat("b", 40), IP: "10.0.0.2", Port: 7002}
	routeC = NodeAddr{ID: strings.Repeat("c", 40), IP: "10.0.0.3", Port: 7003, Primary: strings.Repeat("a", 40)}
)

// routeTable returns a table of routeA, routeB and routeC where self is
// this node's index, every slot is a's but those of the keys in owners
// (hash tags), which go to the node given (-1: none).
func routeTable(self int32, owners map[string]int32) *SlotTable {
	t := &SlotTable{Nodes: []NodeAddr{routeA, routeB, routeC}, Self: self, Epoch: 1}
	for s := range t.Owner {
		t.Owner[s] = 0
	}
	for key, n := range owners {
		t.Owner[shards.KeySlotString(key)] = n
	}
	return t
}

func slotOf(key string) string { return strconv.Itoa(int(shards.KeySlotString(key))) }

func moved(key string, n NodeAddr) string {
	return svErr(sprintf(errMoved, shards.KeySlotString(key), n.IP, n.Port))
}

// TestClusterRouting: each redirection and refusal of getNodeByQuery, in
// RESP2 and RESP3, on a node that owns {l}, migrates {m} to b, imports
// {i} from b (b's), while {b} is b's and {u} nobody's (so without
// cluster-require-full-coverage, which would refuse every key).
func TestClusterRouting(t *testing.T) {
	for _, tag := range []string{"{b}", "{u}", "{m}", "{i}"} {
		require.NotEqual(t, slotOf("{l}"), slotOf(tag))
	}
	ask := svErr(sprintf(errAsk, shards.KeySlotString("{m}"), routeB.IP, routeB.Port))
	for _, proto := range []int{2, 3} {
		ts := newTestServer(t, "cluster-enabled", "yes", "cluster-require-full-coverage", "no")
		ts.srv.SetNode(nodeIdentity(routeA.ID))
		ts.srv.SetSlotTable(routeTable(0, map[string]int32{"{b}": 1, "{u}": -1, "{i}": 1}))
		r := ts.raw(t)
		nilBulk := "$-1\r\n"
		if proto == 3 {
			r.do("HELLO", "3")
			nilBulk = "_\r\n"
		}
		for i, s := range []struct {
			args []string
			want string
		}{
			0:  {[]string{"SET", "{l}k", "1"}, "+OK\r\n"},
			1:  {[]string{"GET", "{l}k"}, svBulk("1")},
			2:  {[]string{"GET", "{b}k"}, moved("{b}", routeB)},
			3:  {[]string{"SET", "{b}k", "1"}, moved("{b}", routeB)},
			4:  {[]string{"GET", "{u}k"}, svErr(errSlotUnbound)},
			5:  {[]string{"MSET", "{l}k", "1", "{b}k", "2"}, svErr(errCrossSlot)},
			6:  {[]string{"MGET", "{b}k", "{b}j"}, moved("{b}", routeB)},
			7:  {[]string{"PING"}, "+PONG\r\n"}, // no keys: not routed
			8:  {[]string{"CL.THROTTLE", "{b}t", "10", "10", "60"}, moved("{b}", routeB)},
			9:  {[]string{"OBJECT", "ENCODING", "{b}k"}, moved("{b}", routeB)},
			10: {[]string{"EVAL", "return 1", "1", "{b}k"}, moved("{b}", routeB)},
			11: {[]string{"EVAL", "return 1", "0"}, ":1\r\n"},
			12: {[]string{"EVAL", "return redis.call('get', KEYS[1])", "1", "{l}k"}, svBulk("1")},
			// A migrating slot: served while the keys are here.
			13: {[]string{"SET", "{m}k1", "v"}, "+OK\r\n"},
			14: {[]string{"CLUSTER", "SETSLOT", slotOf("{m}"), "MIGRATING", routeB.ID}, "+OK\r\n"},
			15: {[]string{"GET", "{m}k1"}, svBulk("v")},
			16: {[]string{"GET", "{m}k2"}, ask},
			17: {[]string{"SET", "{m}k2", "x"}, ask},
			18: {[]string{"MGET", "{m}k1", "{m}k2"}, svErr(errTryAgain)},
			19: {[]string{"MGET", "{m}k2", "{m}k3"}, ask},
			20: {[]string{"EXISTS", "{m}k1", "{m}k1"}, ":2\r\n"},
			// An importing slot: served after ASKING, for one command.
			21: {[]string{"CLUSTER", "SETSLOT", slotOf("{i}"), "IMPORTING", routeB.ID}, "+OK\r\n"},
			22: {[]string{"GET", "{i}k1"}, moved("{i}", routeB)},
			23: {[]string{"ASKING"}, "+OK\r\n"},
			24: {[]string{"SET", "{i}k1", "w"}, "+OK\r\n"},
			25: {[]string{"GET", "{i}k1"}, moved("{i}", routeB)},
			26: {[]string{"ASKING"}, "+OK\r\n"},
			27: {[]string{"GET", "{i}k1"}, svBulk("w")},
			28: {[]string{"ASKING"}, "+OK\r\n"},
			29: {[]string{"MGET", "{i}k1", "{i}k2"}, svErr(errTryAgain)},
			30: {[]string{"ASKING"}, "+OK\r\n"},
			31: {[]string{"MGET", "{i}k2", "{i}k2"}, "*2\r\n" + nilBulk + nilBulk}, // one key, twice
			32: {[]string{"ASKING"}, "+OK\r\n"},
			33: {[]string{"PING"}, "+PONG\r\n"},
			34: {[]string{"GET", "{i}k1"}, moved("{i}", routeB)}, // ASKING was PING's
			// MULTI: each command routed as queued, EXEC its whole queue.
			35: {[]string{"MULTI"}, "+OK\r\n"},
			36: {[]string{"GET", "{b}k"}, moved("{b}", routeB)},
			37: {[]string{"EXEC"}, svErr(errExecAbort)},
			38: {[]string{"MULTI"}, "+OK\r\n"},
			39: {[]string{"ASKING"}, "+QUEUED\r\n"},
			40: {[]string{"GET", "{l}k"}, "+QUEUED\r\n"},
			41: {[]string{"EXEC"}, "*2\r\n+OK\r\n" + svBulk("1")},
			42: {[]string{"ASKING"}, "+OK\r\n"},
			43: {[]string{"MULTI"}, "+OK\r\n"},
			44: {[]string{"GET", "{i}k1"}, "+QUEUED\r\n"},
			45: {[]string{"EXEC"}, "*1\r\n" + svBulk("w")},
			46: {[]string{"GET", "{i}k1"}, moved("{i}", routeB)},
			// A script's undeclared key in another node's slot.
			47: {[]string{"EVAL", "#!lua\nreturn redis.call('get', '{b}k')", "0"}, "-ERR " + errScriptNonLocalKey + " script: "},
			// READONLY: a primary still redirects.
			48: {[]string{"READONLY"}, "+OK\r\n"},
			49: {[]string{"GET", "{b}k"}, moved("{b}", routeB)},
			50: {[]string{"RESET"}, "+RESET\r\n"},
			// A shard channel stays where its slot is while it moves.
			51: {[]string{"SPUBLISH", "{m}ch", "hi"}, ":0\r\n"},
			52: {[]string{"SPUBLISH", "{b}ch", "hi"}, moved("{b}", routeB)},
		} {
			have := r.do(s.args...)
			if strings.HasSuffix(s.want, "script: ") {
				have = have[:min(len(have), len(s.want))]
			}
			if have != s.want {
				t.Errorf("RESP%d step %d %q:\nhave %q\nwant %q", proto, i, s.args, have, s.want)
			}
		}
		// RESTORE-ASKING needs no ASKING in a slot being imported.
		dump := r.do("DUMP", "{l}k")
		payload := dump[strings.Index(dump, "\r\n")+2 : len(dump)-2]
		require.Equal(t, "+OK\r\n", r.do("RESTORE-ASKING", "{i}k9", "0", payload))
		require.Equal(t, moved("{i}", routeB), r.do("RESTORE", "{i}k8", "0", payload))
		require.Equal(t, moved("{b}", routeB), r.do("RESTORE-ASKING", "{b}k9", "0", payload))
		require.Equal(t, ask, r.do("RESTORE-ASKING", "{m}k9", "0", payload))
	}
}

func nodeIdentity(id string) nodeid.Identity { return nodeid.Identity{ID: id, ConfigEpoch: 1} }

// TestClusterReadonlyReplica: a replica of the slot's owner serves reads
// to a client that sent READONLY, redirects its writes, and redirects
// everything again after READWRITE.
func TestClusterReadonlyReplica(t *testing.T) {
	ts := newTestServer(t, "cluster-enabled", "yes")
	ts.srv.SetNode(nodeIdentity(routeC.ID))
	ts.srv.SetSlotTable(routeTable(2, map[string]int32{"{b}": 1}))
	r := ts.raw(t)
	runSvSteps(t, r, []svStep{
		{[]string{"GET", "{l}k"}, moved("{l}", routeA)},
		{[]string{"SPUBLISH", "{l}ch", "hi"}, ":0\r\n"}, // shard channels need no READONLY
		{[]string{"READONLY"}, "+OK\r\n"},
		{[]string{"GET", "{l}k"}, "$-1\r\n"},
		{[]string{"EXISTS", "{l}k"}, ":0\r\n"},
		{[]string{"SET", "{l}k", "1"}, moved("{l}", routeA)},
		{[]string{"GET", "{b}k"}, moved("{b}", routeB)}, // not its primary's
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"GET", "{l}k"}, "+QUEUED\r\n"},
		{[]string{"EXEC"}, "*1\r\n$-1\r\n"},
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"GET", "{l}k"}, "+QUEUED\r\n"},
		{[]string{"DEL", "{l}k"}, moved("{l}", routeA)},
		{[]string{"DISCARD"}, "+OK\r\n"},
		{[]string{"READWRITE"}, "+OK\r\n"},
		{[]string{"GET", "{l}k"}, moved("{l}", routeA)},
		{[]string{"CLUSTER", "SETSLOT", "1", "STABLE"}, svErr(errSetslotReplica)},
	})
}

// TestClusterDownState: a node cut off from the cluster answers commands
// with keys as Redis's getNodeByQuery in cluster_state:fail: CROSSSLOT and
// an unbound slot first, then CLUSTERDOWN; with
// cluster-allow-reads-when-down, reads are served (or redirected) and
// writes refused; shard channels and commands without keys are served.
func TestClusterDownState(t *testing.T) {
	ts := newTestServer(t, "cluster-enabled", "yes", "cluster-require-full-coverage", "no")
	ts.srv.SetNode(nodeIdentity(routeA.ID))
	ts.srv.SetSlotTable(routeTable(0, map[string]int32{"{b}": 1, "{u}": -1}))
	r := ts.raw(t)
	down, downRO := svErr(errClusterDown), svErr(errClusterDownRO)
	runSvSteps(t, r, []svStep{
		{[]string{"SET", "{l}k", "1"}, "+OK\r\n"},
		{[]string{"CONFIG", "GET", "cluster-allow-reads-when-down"}, "*2\r\n$29\r\ncluster-allow-reads-when-down\r\n$2\r\nno\r\n"},
	})
	require.Contains(t, r.do("CLUSTER", "INFO"), "cluster_state:ok\r\n")
	ts.srv.SetClusterDown(true)
	require.Contains(t, r.do("CLUSTER", "INFO"), "cluster_state:fail\r\n")
	runSvSteps(t, r, []svStep{
		0:  {[]string{"GET", "{l}k"}, down},
		1:  {[]string{"SET", "{l}k", "2"}, down},
		2:  {[]string{"CL.THROTTLE", "{l}t", "10", "10", "60"}, down},
		3:  {[]string{"GET", "{b}k"}, down}, // before MOVED
		4:  {[]string{"GET", "{u}k"}, svErr(errSlotUnbound)},
		5:  {[]string{"MGET", "{l}k", "{b}k"}, svErr(errCrossSlot)},
		6:  {[]string{"PING"}, "+PONG\r\n"},
		7:  {[]string{"SPUBLISH", "{l}ch", "hi"}, ":0\r\n"},
		8:  {[]string{"MULTI"}, "+OK\r\n"},
		9:  {[]string{"GET", "{l}k"}, down},
		10: {[]string{"EXEC"}, svErr("EXECABORT Transaction discarded because of previous errors.")},
		11: {[]string{"CONFIG", "SET", "cluster-allow-reads-when-down", "yes"}, "+OK\r\n"},
		12: {[]string{"GET", "{l}k"}, svBulk("1")},
		13: {[]string{"SET", "{l}k", "2"}, downRO},
		14: {[]string{"CL.THROTTLE", "{l}t", "10", "10", "60"}, downRO},
		15: {[]string{"GET", "{b}k"}, moved("{b}", routeB)},
		16: {[]string{"SET", "{b}k", "1"}, downRO},
		17: {[]string{"MULTI"}, "+OK\r\n"},
		18: {[]string{"GET", "{l}k"}, "+QUEUED\r\n"},
		19: {[]string{"EXEC"}, "*1\r\n$1\r\n1\r\n"},
		20: {[]string{"MULTI"}, "+OK\r\n"},
		21: {[]string{"INCR", "{l}k"}, downRO},
		22: {[]string{"DISCARD"}, "+OK\r\n"},
		23: {[]string{"CONFIG", "SET", "cluster-allow-reads-when-down", "no"}, "+OK\r\n"},
	})
	ts.srv.SetClusterDown(false)
	runSvSteps(t, r, []svStep{
		{[]string{"SET", "{l}k", "3"}, "+OK\r\n"},
		{[]string{"GET", "{l}k"}, svBulk("3")},
	})
}

// TestClusterFullCoverage: with cluster-require-full-coverage (the
// default), a slot without a node, or with a failed one, puts the node in
// cluster_state:fail and its keys get -CLUSTERDOWN, as Redis's
// clusterUpdateState; without it the other slots are served.
func TestClusterFullCoverage(t *testing.T) {
	ts := newTestServer(t, "cluster-enabled", "yes")
	ts.srv.SetNode(nodeIdentity(routeA.ID))
	ts.srv.SetSlotTable(routeTable(0, map[string]int32{"{b}": 1}))
	r := ts.raw(t)
	down := svErr(errClusterDown)
	require.Equal(t, "+OK\r\n", r.do("SET", "{l}k", "1"))
	require.Contains(t, r.do("CLUSTER", "INFO"), "cluster_state:ok\r\n")

	ts.srv.SetSlotTable(routeTable(0, map[string]int32{"{b}": 1, "{u}": -1}))
	require.Contains(t, r.do("CLUSTER", "INFO"), "cluster_state:fail\r\n")
	runSvSteps(t, r, []svStep{
		0: {[]string{"GET", "{l}k"}, down},
		1: {[]string{"GET", "{u}k"}, svErr(errSlotUnbound)},
		2: {[]string{"PING"}, "+PONG\r\n"},
		3: {[]string{"CONFIG", "SET", "cluster-require-full-coverage", "no"}, "+OK\r\n"},
		4: {[]string{"GET", "{l}k"}, svBulk("1")},
		5: {[]string{"GET", "{u}k"}, svErr(errSlotUnbound)},
		6: {[]string{"CONFIG", "SET", "cluster-require-full-coverage", "yes"}, "+OK\r\n"},
		7: {[]string{"GET", "{l}k"}, down},
	})

	failed := routeTable(0, map[string]int32{"{b}": 1})
	failed.Nodes[1].Fail = true
	ts.srv.SetSlotTable(failed)
	require.Contains(t, r.do("CLUSTER", "INFO"), "cluster_state:fail\r\n")
	require.Equal(t, down, r.do("GET", "{l}k"))
	require.Equal(t, "+OK\r\n", r.do("CONFIG", "SET", "cluster-require-full-coverage", "no"))
	require.Contains(t, r.do("CLUSTER", "INFO"), "cluster_state:ok\r\n")
	require.Equal(t, svBulk("1"), r.do("GET", "{l}k"))
	require.Equal(t, moved("{b}", routeB), r.do("GET", "{b}k"))
}

// fakeControl is a control plane that commits SETSLOT NODE at once, by
// publishing the table with the slot moved (the Raft-held one is tested in
// cluster/ and by the subprocess tests); it has no other change to make.
type fakeControl struct {
	ClusterControl // nil: any other method panics
	mu             sync.Mutex
	eng            *Engine
	fail           error
	gate           chan struct{} // non-nil: SetSlotNode waits until it closes
	seen           []string
}

func (f *fakeControl) SetSlotNode(slot uint16, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen = append(f.seen, strconv.Itoa(int(slot))+" "+id)
	if f.gate != nil {
		<-f.gate
	}
	if f.fail != nil {
		return f.fail
	}
	old := f.eng.SlotTable()
	t := *old
	t.Owner[slot] = t.node(id)
	t.Epoch++
	f.eng.SetSlotTable(&t)
	return nil
}

// TestClusterSetslot: CLUSTER SETSLOT's checks and errors in Redis's
// order, the open slots in CLUSTER NODES, NODE through the control plane,
// and the migration state a new table ends.
func TestClusterSetslot(t *testing.T) {
	ts := newTestServer(t, "cluster-enabled", "yes")
	ts.srv.SetNode(nodeIdentity(routeA.ID))
	r := ts.raw(t)
	sb, sl := slotOf("{b}"), slotOf("{l}")
	// No table: a one-node cluster that knows only itself, and no
	// control plane.
	runSvSteps(t, r, []svStep{
		{[]string{"CLUSTER", "SETSLOT", "1", "MIGRATING", routeB.ID}, svErr(sprintf(errNodeUnknownTo, routeB.ID))},
		{[]string{"CLUSTER", "SETSLOT", "1", "IMPORTING", routeA.ID}, svErr(sprintf(errAlreadySlotOwner, 1))},
		{[]string{"CLUSTER", "SETSLOT", "1", "NODE", routeA.ID}, svErr(errClusterNoControl)},
		{[]string{"CLUSTER", "SETSLOT", "1", "MIGRATING", routeA.ID}, "+OK\r\n"},
		{[]string{"CLUSTER", "SETSLOT", "1", "STABLE"}, "+OK\r\n"},
	})
	ctl := &fakeControl{eng: ts.srv}
	ts.srv.SetClusterControl(ctl)
	ts.srv.SetSlotTable(routeTable(0, map[string]int32{"{b}": 1}))
	runSvSteps(t, r, []svStep{
		{[]string{"CLUSTER", "SETSLOT", "x", "STABLE"}, svErr(errSlotRange)},
		{[]string{"CLUSTER", "SETSLOT", "16384", "STABLE"}, svErr(errSlotRange)},
		{[]string{"CLUSTER", "SETSLOT", "-1", "STABLE"}, svErr(errSlotRange)},
		{[]string{"CLUSTER", "SETSLOT", "1", "STABLE", "x"}, svErr(errSetslotSyntax)},
		{[]string{"CLUSTER", "SETSLOT", "1", "MIGRATING"}, svErr(errSetslotSyntax)},
		{[]string{"CLUSTER", "SETSLOT", "1", "OWN", routeB.ID}, svErr(errSetslotSyntax)},
		{[]string{"CLUSTER", "SETSLOT", "1"}, svErr("ERR wrong number of arguments for 'cluster|setslot' command")},
		{[]string{"CLUSTER", "SETSLOT", sb, "MIGRATING", routeA.ID}, svErr(sprintf(errNotSlotOwner, shards.KeySlotString("{b}")))},
		{[]string{"CLUSTER", "SETSLOT", sl, "MIGRATING", "zz"}, svErr(sprintf(errNodeUnknownTo, "zz"))},
		{[]string{"CLUSTER", "SETSLOT", sl, "MIGRATING", routeC.ID}, svErr(errTargetNotPrimary)},
		{[]string{"CLUSTER", "SETSLOT", sl, "IMPORTING", routeB.ID}, svErr(sprintf(errAlreadySlotOwner, shards.KeySlotString("{l}")))},
		{[]string{"CLUSTER", "SETSLOT", sb, "IMPORTING", routeC.ID}, svErr(errTargetNotPrimary)},
		{[]string{"CLUSTER", "SETSLOT", sb, "NODE", "zz"}, svErr(sprintf(errNodeUnknown, "zz"))},
		{[]string{"CLUSTER", "SETSLOT", sb, "NODE", routeC.ID}, svErr(errTargetNotPrimary)},
		{[]string{"SET", "{l}k", "1"}, "+OK\r\n"},
		{[]string{"CLUSTER", "SETSLOT", sl, "NODE", routeB.ID}, svErr(sprintf(errSlotHasKeys, shards.KeySlotString("{l}")))},
		{[]string{"CLUSTER", "SETSLOT", sl, "MIGRATING", routeB.ID}, "+OK\r\n"},
		{[]string{"CLUSTER", "SETSLOT", sb, "IMPORTING", routeB.ID}, "+OK\r\n"},
	})
	a, b := atoi(sl), atoi(sb)
	parts := map[int]string{a: " [" + sl + "->-" + routeB.ID + "]", b: " [" + sb + "-<-" + routeB.ID + "]"}
	have := string(ts.srv.AppendSlotMigrations(nil))
	require.Equal(t, parts[min(a, b)]+parts[max(a, b)], have)
	require.Contains(t, r.do("CLUSTER", "NODES"), have+"\n")
	// The slot moves to b once its key is gone: a MIGRATING slot that
	// this node no longer owns stops migrating.
	runSvSteps(t, r, []svStep{
		{[]string{"DEL", "{l}k"}, ":1\r\n"},
		{[]string{"CLUSTER", "SETSLOT", sl, "NODE", routeB.ID}, "+OK\r\n"},
		{[]string{"GET", "{l}k"}, moved("{l}", routeB)},
		// The imported slot becomes this node's: it stops importing.
		{[]string{"CLUSTER", "SETSLOT", sb, "NODE", routeA.ID}, "+OK\r\n"},
		{[]string{"GET", "{b}k"}, "$-1\r\n"},
	})
	require.Equal(t, "", string(ts.srv.AppendSlotMigrations(nil)))
	require.Equal(t, []string{sl + " " + routeB.ID, sb + " " + routeA.ID}, ctl.seen)
	ctl.fail = errors.New("no quorum")
	require.Equal(t, svErr("ERR no quorum"), r.do("CLUSTER", "SETSLOT", sb, "NODE", routeB.ID))
	ctl.fail = errors.New(ErrClusterNoLeader)
	require.Equal(t, svErr(ErrClusterNoLeader), r.do("CLUSTER", "SETSLOT", sb, "NODE", routeB.ID))
	// A table published by the control plane alone ends an import into
	// a slot it gives this node, and a migration out of one it takes.
	ts.srv.SetSlotTable(routeTable(0, map[string]int32{"{i}": 1}))
	runSvSteps(t, r, []svStep{
		{[]string{"CLUSTER", "SETSLOT", slotOf("{i}"), "IMPORTING", routeB.ID}, "+OK\r\n"},
		{[]string{"CLUSTER", "SETSLOT", slotOf("{m}"), "MIGRATING", routeB.ID}, "+OK\r\n"},
	})
	ts.srv.SetSlotTable(routeTable(0, map[string]int32{"{i}": 1, "{b}": 1}))
	require.Contains(t, string(ts.srv.AppendSlotMigrations(nil)), "->-")
	require.Contains(t, string(ts.srv.AppendSlotMigrations(nil)), "-<-")
	ts.srv.SetSlotTable(routeTable(0, map[string]int32{"{m}": 1}))
	require.Equal(t, "", string(ts.srv.AppendSlotMigrations(nil)))
	// Outside cluster mode, as Redis.
	require.Equal(t, svErr(errClusterDisabled), newTestServer(t).raw(t).do("CLUSTER", "SETSLOT", "1", "STABLE"))
}

// TestClusterSetslotNodeClaims: while SETSLOT NODE that gives this node
// a slot it imports commits, every client is served in that slot, not
// only after ASKING, as by Redis's target, which owns it at once; a node
// that applied the change first already sends clients here, and a MOVED
// back would bounce them until this node has applied it too. A change
// that fails withdraws the claim.
func TestClusterSetslotNodeClaims(t *testing.T) {
	ts := newTestServer(t, "cluster-enabled", "yes")
	ts.srv.SetNode(nodeIdentity(routeA.ID))
	ctl := &fakeControl{eng: ts.srv, gate: make(chan struct{})}
	ts.srv.SetClusterControl(ctl)
	ts.srv.SetSlotTable(routeTable(0, map[string]int32{"{b}": 1, "{i}": 1}))
	sb, si := slotOf("{b}"), slotOf("{i}")
	r, other := ts.raw(t), ts.raw(t)
	get := []string{"EVAL", "return redis.call('get', KEYS[1])", "1", "{b}k"}
	runSvSteps(t, r, []svStep{
		{[]string{"CLUSTER", "SETSLOT", sb, "IMPORTING", routeB.ID}, "+OK\r\n"},
		{[]string{"CLUSTER", "SETSLOT", si, "IMPORTING", routeB.ID}, "+OK\r\n"},
		{[]string{"SET", "{b}k", "1"}, moved("{b}", routeB)},
		{get, moved("{b}", routeB)},
	})
	_, err := io.WriteString(r.nc, fmt.Sprintf("*5\r\n$7\r\nCLUSTER\r\n$7\r\nSETSLOT\r\n$%d\r\n%s\r\n$4\r\nNODE\r\n$40\r\n%s\r\n", len(sb), sb, routeA.ID))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return other.do("SET", "{b}k", "1") == "+OK\r\n" }, 5*time.Second, 5*time.Millisecond,
		"the slot is served while SETSLOT NODE commits")
	runSvSteps(t, other, []svStep{
		{get, svBulk("1")},
		{[]string{"GET", "{i}k"}, moved("{i}", routeB)}, // the other import is not claimed
	})
	close(ctl.gate)
	require.Equal(t, "+OK\r\n", r.reply())
	require.Equal(t, svBulk("1"), other.do("GET", "{b}k"))
	require.Equal(t, " ["+si+"-<-"+routeB.ID+"]", string(ts.srv.AppendSlotMigrations(nil)), "{b}'s import ended, {i}'s goes on")

	ctl.gate, ctl.fail = nil, errors.New("no quorum")
	runSvSteps(t, r, []svStep{
		{[]string{"CLUSTER", "SETSLOT", si, "NODE", routeA.ID}, svErr("ERR no quorum")},
	})
	runSvSteps(t, other, []svStep{
		{[]string{"GET", "{i}k"}, moved("{i}", routeB)},
		{[]string{"ASKING"}, "+OK\r\n"},
		{[]string{"GET", "{i}k"}, "$-1\r\n"},
	})
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }
