package command

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/internal/nodeid"
	"github.com/ratekv/ratekv/shards"
	"github.com/stretchr/testify/require"
)

// clusterReplies: the CLUSTER subcommands of a node in cluster mode, in
// the reply shapes of Redis 7 (checked against a redis-server with
// cluster-enabled yes and all slots added), with the address the client
// connected to unless cluster-announce-* say otherwise.
func TestClusterReplies(t *testing.T) {
	ts := newTestServer(t, "cluster-enabled", "yes")
	id := strings.Repeat("5e", 20)
	ts.srv.SetNode(nodeid.Identity{ID: id, ConfigEpoch: 3})
	_, port, _ := net.SplitHostPort(ts.addr)
	p := ":" + port + "\r\n"
	info := "cluster_state:ok\r\ncluster_slots_assigned:16384\r\ncluster_slots_ok:16384\r\ncluster_slots_pfail:0\r\n" +
		"cluster_slots_fail:0\r\ncluster_known_nodes:1\r\ncluster_size:1\r\ncluster_current_epoch:3\r\ncluster_my_epoch:3\r\n" +
		"cluster_stats_messages_sent:0\r\ncluster_stats_messages_received:0\r\ntotal_cluster_links_buffer_limit_exceeded:0\r\n"
	nodes := id + " 127.0.0.1:" + port + "@0 myself,master - 0 0 3 connected 0-16383\n"
	verb := func(s string) string { return "=" + strconv.Itoa(len(s)+4) + "\r\ntxt:" + s + "\r\n" }
	for i, tt := range []struct {
		conf         []string // CONFIG SET before the step
		args         []string
		resp2, resp3 string // resp3 "": as resp2
	}{
		0: {args: []string{"CLUSTER", "INFO"}, resp2: svBulk(info), resp3: verb(info)},
		1: {args: []string{"CLUSTER", "MYID"}, resp2: svBulk(id)},
		2: {args: []string{"CLUSTER", "NODES"}, resp2: svBulk(nodes), resp3: verb(nodes)},
		3: {args: []string{"CLUSTER", "SLOTS"},
			resp2: "*1\r\n*3\r\n:0\r\n:16383\r\n*4\r\n$9\r\n127.0.0.1\r\n" + p + svBulk(id) + "*0\r\n",
			resp3: "*1\r\n*3\r\n:0\r\n:16383\r\n*4\r\n$9\r\n127.0.0.1\r\n" + p + svBulk(id) + "%0\r\n"},
		4: {args: []string{"CLUSTER", "SHARDS"},
			resp2: "*1\r\n*4\r\n$5\r\nslots\r\n*2\r\n:0\r\n:16383\r\n$5\r\nnodes\r\n*1\r\n*14\r\n$2\r\nid\r\n" + svBulk(id) +
				"$4\r\nport\r\n" + p + "$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.1\r\n$4\r\nrole\r\n$6\r\nmaster\r\n" +
				"$18\r\nreplication-offset\r\n:0\r\n$6\r\nhealth\r\n$6\r\nonline\r\n",
			resp3: "*1\r\n%2\r\n$5\r\nslots\r\n*2\r\n:0\r\n:16383\r\n$5\r\nnodes\r\n*1\r\n%7\r\n$2\r\nid\r\n" + svBulk(id) +
				"$4\r\nport\r\n" + p + "$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.1\r\n$4\r\nrole\r\n$6\r\nmaster\r\n" +
				"$18\r\nreplication-offset\r\n:0\r\n$6\r\nhealth\r\n$6\r\nonline\r\n"},
		5: {args: []string{"CLUSTER", "LINKS"}, resp2: "*0\r\n"},
		6: {conf: []string{"cluster-announce-ip", "10.0.0.1", "cluster-announce-port", "7000", "cluster-announce-hostname", "node1.example"},
			args:  []string{"CLUSTER", "SLOTS"},
			resp2: "*1\r\n*3\r\n:0\r\n:16383\r\n*4\r\n$8\r\n10.0.0.1\r\n:7000\r\n" + svBulk(id) + "*2\r\n$8\r\nhostname\r\n$13\r\nnode1.example\r\n",
			resp3: "*1\r\n*3\r\n:0\r\n:16383\r\n*4\r\n$8\r\n10.0.0.1\r\n:7000\r\n" + svBulk(id) + "%1\r\n$8\r\nhostname\r\n$13\r\nnode1.example\r\n"},
		7: {args: []string{"CLUSTER", "NODES"},
			resp2: svBulk(id + " 10.0.0.1:7000@0,node1.example myself,master - 0 0 3 connected 0-16383\n"),
			resp3: verb(id + " 10.0.0.1:7000@0,node1.example myself,master - 0 0 3 connected 0-16383\n")},
		8: {args: []string{"CLUSTER", "SHARDS"},
			resp2: "*1\r\n*4\r\n$5\r\nslots\r\n*2\r\n:0\r\n:16383\r\n$5\r\nnodes\r\n*1\r\n*16\r\n$2\r\nid\r\n" + svBulk(id) +
				"$4\r\nport\r\n:7000\r\n$2\r\nip\r\n$8\r\n10.0.0.1\r\n$8\r\nendpoint\r\n$8\r\n10.0.0.1\r\n$8\r\nhostname\r\n$13\r\nnode1.example\r\n" +
				"$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\nreplication-offset\r\n:0\r\n$6\r\nhealth\r\n$6\r\nonline\r\n",
			resp3: "*1\r\n%2\r\n$5\r\nslots\r\n*2\r\n:0\r\n:16383\r\n$5\r\nnodes\r\n*1\r\n%8\r\n$2\r\nid\r\n" + svBulk(id) +
				"$4\r\nport\r\n:7000\r\n$2\r\nip\r\n$8\r\n10.0.0.1\r\n$8\r\nendpoint\r\n$8\r\n10.0.0.1\r\n$8\r\nhostname\r\n$13\r\nnode1.example\r\n" +
				"$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\nreplication-offset\r\n:0\r\n$6\r\nhealth\r\n$6\r\nonline\r\n"},
		9: {conf: []string{"cluster-announce-ip", "", "cluster-announce-port", "0", "cluster-announce-hostname", ""},
			args: []string{"CLUSTER", "NODES"}, resp2: svBulk(nodes), resp3: verb(nodes)},
		10: {args: []string{"READONLY"}, resp2: "+OK\r\n"},
		11: {args: []string{"READWRITE"}, resp2: "+OK\r\n"},
		12: {args: []string{"ASKING"}, resp2: "+OK\r\n"},
		13: {args: []string{"SELECT", "0"}, resp2: "+OK\r\n"},
		14: {args: []string{"SELECT", "1"}, resp2: svErr(errSelectCluster)},
		15: {args: []string{"SELECT", "x"}, resp2: svErr(errNotInt)},
		16: {args: []string{"INFO", "cluster"}, resp2: svBulk("# Cluster\r\ncluster_enabled:1\r\n"), resp3: verb("# Cluster\r\ncluster_enabled:1\r\n")},
		17: {args: []string{"CLUSTER", "MYID", "x"}, resp2: svErr("ERR wrong number of arguments for 'cluster|myid' command")},
	} {
		for _, proto := range []int{2, 3} {
			r := ts.raw(t)
			if proto == 3 {
				r.do("HELLO", "3")
			}
			for j := 0; j+1 < len(tt.conf); j += 2 {
				require.Equal(t, "+OK\r\n", r.do("CONFIG", "SET", tt.conf[j], tt.conf[j+1]))
			}
			want := tt.resp2
			if proto == 3 && tt.resp3 != "" {
				want = tt.resp3
			}
			if have := r.do(tt.args...); have != want {
				t.Errorf("step %d RESP%d %q:\nhave %q\nwant %q", i, proto, tt.args, have, want)
			}
		}
	}
	r := ts.raw(t)
	require.Regexp(t, `(?m)^redis_mode:cluster\r$`, r.do("INFO", "server"))
	require.Contains(t, r.do("HELLO", "3"), "$4\r\nmode\r\n$7\r\ncluster\r\n")
}

// TestClusterDisabled: outside cluster mode the cluster-only commands
// refuse as a Redis without cluster-enabled does, and Redis Cluster's
// rules do not apply.
func TestClusterDisabled(t *testing.T) {
	r := newTestServer(t).raw(t)
	runSvSteps(t, r, []svStep{
		{[]string{"ASKING"}, svErr(errClusterDisabled)},
		{[]string{"CLUSTER", "COUNTKEYSINSLOT", "1"}, svErr(errClusterDisabled)},
		{[]string{"CLUSTER", "GETKEYSINSLOT", "1", "1"}, svErr(errClusterDisabled)},
		{[]string{"CLUSTER", "LINKS"}, svErr(errClusterDisabled)},
		{[]string{"CLUSTER", "MYID"}, svErr(errClusterDisabled)},
		{[]string{"MSET", "a", "1", "b", "2"}, "+OK\r\n"},
		{[]string{"SELECT", "1"}, svErr(errDBIndex)},
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"GET", "a"}, "+QUEUED\r\n"},
		{[]string{"GET", "b"}, "+QUEUED\r\n"},
		{[]string{"EXEC"}, "*2\r\n$1\r\n1\r\n$1\r\n2\r\n"},
		{[]string{"EVAL", "#!lua flags=no-cluster\nreturn redis.call('get','a')..redis.call('get','b')", "0"}, svBulk("12")},
	})
}

// TestClusterCrossSlot: in cluster mode a request whose keys lie in more
// than one slot is refused before it runs or is queued; EXEC checks its
// whole queue, and refused discards the transaction.
func TestClusterCrossSlot(t *testing.T) {
	ts := newTestServer(t, "cluster-enabled", "yes")
	r := ts.raw(t)
	cross := svErr(errCrossSlot)
	runSvSteps(t, r, []svStep{
		0:  {[]string{"MSET", "a", "1", "b", "2"}, cross},
		1:  {[]string{"MSET", "{u}a", "1", "{u}b", "2"}, "+OK\r\n"},
		2:  {[]string{"MGET", "{u}a", "{u}b"}, "*2\r\n$1\r\n1\r\n$1\r\n2\r\n"},
		3:  {[]string{"MGET", "{u}a", "b"}, cross},
		4:  {[]string{"DEL", "a", "b"}, cross},
		5:  {[]string{"EXISTS", "{u}a", "{u}b", "{u}c"}, ":2\r\n"},
		6:  {[]string{"RENAME", "{u}a", "c"}, cross},
		7:  {[]string{"LMOVE", "x", "y", "LEFT", "LEFT"}, cross},
		8:  {[]string{"CL.THROTTLEALL", "2", "a", "10", "1", "1", "b", "10", "1", "1"}, cross},
		9:  {[]string{"CL.THROTTLEALL", "2", "{u}x", "10", "1", "1", "{u}y", "10", "1", "1"}, "*3\r\n:0\r\n*5\r\n:0\r\n:11\r\n:10\r\n:-1\r\n:1\r\n*5\r\n:0\r\n:11\r\n:10\r\n:-1\r\n:1\r\n"},
		10: {[]string{"EVAL", "return 1", "2", "a", "b"}, cross},
		11: {[]string{"EVAL", "return 1", "2", "{u}a", "{u}b"}, ":1\r\n"},
		12: {[]string{"WATCH", "a", "b"}, cross},
		13: {[]string{"SET", "a", "1"}, "+OK\r\n"}, // single-key commands are never checked
		// A transaction over two slots is refused at EXEC, which discards it.
		14: {[]string{"MULTI"}, "+OK\r\n"},
		15: {[]string{"SET", "a", "1"}, "+QUEUED\r\n"},
		16: {[]string{"SET", "b", "1"}, "+QUEUED\r\n"},
		17: {[]string{"EXEC"}, cross},
		18: {[]string{"EXEC"}, svErr(errExecNoMulti)},
		// A queued command over two slots makes EXEC abort.
		19: {[]string{"MULTI"}, "+OK\r\n"},
		20: {[]string{"MSET", "a", "1", "b", "2"}, cross},
		21: {[]string{"EXEC"}, svErr(errExecAbort)},
		// Hash tags keep a transaction in one slot.
		22: {[]string{"MULTI"}, "+OK\r\n"},
		23: {[]string{"SET", "{r}a", "1"}, "+QUEUED\r\n"},
		24: {[]string{"INCR", "{r}b"}, "+QUEUED\r\n"},
		25: {[]string{"PING"}, "+QUEUED\r\n"},
		26: {[]string{"EXEC"}, "*3\r\n+OK\r\n:1\r\n+PONG\r\n"},
		27: {[]string{"MULTI"}, "+OK\r\n"},
		28: {[]string{"EXEC"}, "*0\r\n"},
	})
	// EXEC refused for CROSSSLOT unwatches: a later transaction runs even
	// though the watched key changed.
	require.Equal(t, "+OK\r\n", r.do("WATCH", "w"))
	require.Equal(t, "+OK\r\n", r.do("MULTI"))
	require.Equal(t, "+QUEUED\r\n", r.do("GET", "a"))
	require.Equal(t, "+QUEUED\r\n", r.do("GET", "b"))
	require.Equal(t, cross, r.do("EXEC"))
	require.Equal(t, "+OK\r\n", ts.raw(t).do("SET", "w", "changed"))
	require.Equal(t, "+OK\r\n", r.do("MULTI"))
	require.Equal(t, "+QUEUED\r\n", r.do("GET", "w"))
	require.Equal(t, "*1\r\n$7\r\nchanged\r\n", r.do("EXEC"))
	require.Regexp(t, `(?m)^errorstat_CROSSSLOT:count=\d+\r$`, r.do("INFO", "errorstats"))
}

// TestClusterScripts: Redis Cluster's rules for scripts (Redis 7.2's
// scriptVerifyClusterState): one command's keys must share a slot; a
// script with a shebang keeps to the slot of its declared or first keys
// unless allow-cross-slot-keys; a script without one (the old style) may
// touch any slot; no-cluster refuses to run.
func TestClusterScripts(t *testing.T) {
	r := newTestServer(t, "cluster-enabled", "yes").raw(t)
	two := "redis.call('set','a','1'); return redis.call('set','b','1')"
	errAt := func(msg string) string { return "-ERR " + msg + " script: " }
	for i, tt := range []struct {
		args []string
		want string // a prefix of the reply
	}{
		0: {[]string{"EVAL", two, "0"}, "+OK\r\n"},
		1: {[]string{"EVAL", "#!lua\n" + two, "0"}, errAt(errScriptCrossSlot)},
		2: {[]string{"EVAL", "#!lua flags=allow-cross-slot-keys\n" + two, "0"}, "+OK\r\n"},
		3: {[]string{"EVAL", "#!lua\nreturn redis.call('set','a','1')", "1", "b"}, errAt(errScriptCrossSlot)},
		4: {[]string{"EVAL", "#!lua\nreturn redis.call('set','{b}x','1')", "1", "{b}y"}, "+OK\r\n"},
		5: {[]string{"EVAL", "return redis.call('mset','a','1','b','2')", "0"}, errAt(errScriptNonLocalKey)},
		6: {[]string{"EVAL", "#!lua flags=allow-cross-slot-keys\nreturn redis.call('mset','a','1','b','2')", "0"}, errAt(errScriptNonLocalKey)},
		7: {[]string{"EVAL", "return redis.pcall('mget','a','b')", "0"}, "-ERR " + errScriptNonLocalKey + "\r\n"},
		8: {[]string{"EVAL", "#!lua flags=no-cluster\nreturn 1", "0"}, svErr(errScriptNoCluster)},
		9: {[]string{"EVAL", "#!lua\nredis.call('get','{t}1'); return redis.call('get','{t}2')", "0"}, "$-1\r\n"},
	} {
		if have := r.do(tt.args...); !strings.HasPrefix(have, tt.want) {
			t.Errorf("step %d %q: have %q, want prefix %q", i, tt.args, have, tt.want)
		}
	}
}

// TestClusterKeysInSlot: COUNTKEYSINSLOT and GETKEYSINSLOT see the live
// keys of one slot, and check their arguments as Redis does.
func TestClusterKeysInSlot(t *testing.T) {
	ts := newTestServer(t, "cluster-enabled", "yes")
	r := ts.raw(t)
	for i := range 5 {
		require.Equal(t, "+OK\r\n", r.do("SET", fmt.Sprintf("{s}%d", i), "v"))
	}
	require.Equal(t, "+OK\r\n", r.do("SET", "{s}gone", "v", "PX", "10"))
	ts.clock.Advance(time.Second)
	require.Equal(t, ":3828\r\n", r.do("CLUSTER", "KEYSLOT", "{s}x"))
	runSvSteps(t, r, []svStep{
		{[]string{"CLUSTER", "COUNTKEYSINSLOT", "3828"}, ":5\r\n"},
		{[]string{"CLUSTER", "COUNTKEYSINSLOT", "3829"}, ":0\r\n"},
		{[]string{"CLUSTER", "COUNTKEYSINSLOT", "16384"}, svErr(errInvalidSlot)},
		{[]string{"CLUSTER", "COUNTKEYSINSLOT", "-1"}, svErr(errInvalidSlot)},
		{[]string{"CLUSTER", "COUNTKEYSINSLOT", "x"}, svErr(errNotInt)},
		{[]string{"CLUSTER", "GETKEYSINSLOT", "3828", "0"}, "*0\r\n"},
		{[]string{"CLUSTER", "GETKEYSINSLOT", "3828", "-1"}, svErr(errInvalidSlotOrCount)},
		{[]string{"CLUSTER", "GETKEYSINSLOT", "16384", "1"}, svErr(errInvalidSlotOrCount)},
		{[]string{"CLUSTER", "GETKEYSINSLOT", "x", "-1"}, svErr(errNotInt)},
		{[]string{"CLUSTER", "GETKEYSINSLOT", "1", "x"}, svErr(errNotInt)},
	})
	have := r.do("CLUSTER", "GETKEYSINSLOT", "3828", "100")
	require.True(t, strings.HasPrefix(have, "*5\r\n"), have)
	for i := range 5 {
		require.Contains(t, have, svBulk(fmt.Sprintf("{s}%d", i)))
	}
	require.True(t, strings.HasPrefix(r.do("CLUSTER", "GETKEYSINSLOT", "3828", "2"), "*2\r\n"))
	// Inside MULTI and from a script, where the shards are held already.
	require.Equal(t, "+OK\r\n", r.do("MULTI"))
	require.Equal(t, "+QUEUED\r\n", r.do("SET", "{s}x", "v"))
	require.Equal(t, "+QUEUED\r\n", r.do("CLUSTER", "COUNTKEYSINSLOT", "3828"))
	require.Equal(t, "*2\r\n+OK\r\n:6\r\n", r.do("EXEC"))
	require.Equal(t, ":6\r\n", r.do("EVAL", "return redis.call('cluster','countkeysinslot',3828)", "0"))
}

// startClusterRedis starts a redis-server with cluster-enabled yes owning
// every slot, on a free port in a temporary directory, for the test; it
// skips when redis-server is not installed.
func startClusterRedis(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed: no cluster-mode Redis to compare with")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	dir := t.TempDir()
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--cluster-enabled", "yes",
		"--cluster-config-file", filepath.Join(dir, "nodes.conf"), "--dir", dir,
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning")
	log, err := os.Create(filepath.Join(dir, "redis.log"))
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		log.Close()
	})
	addr := "127.0.0.1:" + port
	var nc net.Conn
	for range 100 {
		if nc, err = net.Dial("tcp", addr); err == nil {
			nc.Close()
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.NoError(t, err, "redis-server did not start")
	r := dialRaw(t, addr)
	require.Equal(t, "+OK\r\n", r.do("CLUSTER", "ADDSLOTSRANGE", "0", "16383"))
	for range 100 {
		if strings.Contains(r.do("CLUSTER", "INFO"), "cluster_state:ok") {
			return addr
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("redis-server's cluster did not reach cluster_state:ok")
	return ""
}

// TestClusterDiff compares cluster mode with a real redis-server in
// cluster mode: KEYSLOT, COUNTKEYSINSLOT, GETKEYSINSLOT (as sets: the
// order is Redis's) and the CROSSSLOT rules of plain commands and
// transactions, byte for byte, in RESP2 and RESP3.
func TestClusterDiff(t *testing.T) {
	addr := startClusterRedis(t)
	ts := newTestServer(t, "cluster-enabled", "yes")
	keys := []string{"", "a", "b", "foo", "somekey", "{u}a", "{u}b", "x{u}y", "{}a", "{}b", "a{b}{c}", "{{x}}", "{x", "x}", "}{u}",
		"user:1000", "{user:1000}.following", "{user:1000}.followers", "\x00\xff", strings.Repeat("k", 300)}
	getkeys := func(args []string, have, want string) (string, string) {
		if strings.EqualFold(args[0], "CLUSTER") && strings.EqualFold(args[1], "GETKEYSINSLOT") {
			return sortedArray(have), sortedArray(want)
		}
		return have, want
	}
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			d := &differ{t: t, real: dialRaw(t, addr), ours: ts.raw(t), maxFails: 20, normalize: getkeys}
			for _, r := range []*rawConn{d.real, d.ours} {
				require.Equal(t, "+OK\r\n", r.do("FLUSHALL"))
				if proto == 3 {
					require.True(t, strings.HasPrefix(r.do("HELLO", "3"), "%"))
				}
			}
			for i, k := range keys {
				d.check([]string{"CLUSTER", "KEYSLOT", k})
				d.check([]string{"SET", k, strconv.Itoa(i)})
			}
			for i := range 200 {
				d.check([]string{"SET", fmt.Sprintf("{tag%d}%d", i%7, i), "v"})
			}
			slots := map[string]bool{"0": true, "16383": true}
			for _, k := range append(keys, "{tag0}", "{tag3}", "{tag6}") {
				slots[strings.Trim(d.real.do("CLUSTER", "KEYSLOT", k), ":\r\n")] = true
			}
			for s := range slots {
				d.check([]string{"CLUSTER", "COUNTKEYSINSLOT", s})
				d.check([]string{"CLUSTER", "GETKEYSINSLOT", s, "1000"})
				d.check([]string{"CLUSTER", "GETKEYSINSLOT", s, "0"})
			}
			for _, args := range [][]string{
				{"CLUSTER", "COUNTKEYSINSLOT", "16384"}, {"CLUSTER", "COUNTKEYSINSLOT", "-1"}, {"CLUSTER", "COUNTKEYSINSLOT", "x"},
				{"CLUSTER", "COUNTKEYSINSLOT", "99999999999999999999"},
				{"CLUSTER", "GETKEYSINSLOT", "1", "-1"}, {"CLUSTER", "GETKEYSINSLOT", "16384", "1"}, {"CLUSTER", "GETKEYSINSLOT", "x", "1"},
				{"CLUSTER", "GETKEYSINSLOT", "1", "x"}, {"CLUSTER", "GETKEYSINSLOT", "-1", "x"}, {"CLUSTER", "GETKEYSINSLOT", "x", "-1"},
				{"CLUSTER", "KEYSLOT"}, {"CLUSTER", "COUNTKEYSINSLOT"}, {"CLUSTER", "MYID", "x"}, {"CLUSTER", "LINKS"},
				{"MSET", "a", "1", "b", "2"}, {"MSET", "{u}a", "1", "{u}b", "2"}, {"MSET", "a", "1", "a", "2"},
				{"MGET", "{u}a", "{u}b"}, {"MGET", "{u}a", "b"}, {"MGET", "a"},
				{"DEL", "a", "b"}, {"DEL", "{u}a", "x{u}y"}, {"UNLINK", "a", "foo"}, {"EXISTS", "a", "{}a"}, {"TOUCH", "{}a", "{}b"},
				{"MSETNX", "{x}1", "1", "{x}2", "2"}, {"MSETNX", "p", "1", "q", "2"},
				{"RENAME", "a", "b"}, {"RENAME", "{u}a", "{u}c"}, {"RENAMENX", "foo", "bar"},
				{"RPOPLPUSH", "l1", "l2"}, {"LMOVE", "{l}1", "{l}2", "LEFT", "RIGHT"}, {"LMOVE", "l1", "l2", "LEFT", "RIGHT"},
				{"EVAL", "return 1", "2", "a", "b"}, {"EVAL", "return 1", "2", "{u}a", "{u}b"}, {"EVAL", "return 1", "0"},
				{"EVAL", "return redis.call('mset','a','1','b','2')", "0"},
				{"EVAL", "return redis.pcall('mget','a','b')", "0"},
				{"EVAL", "#!lua flags=no-cluster\nreturn 1", "0"},
				{"WATCH", "a", "b"}, {"WATCH", "{u}a", "{u}b"}, {"UNWATCH"},
				{"SELECT", "0"}, {"SELECT", "1"}, {"SELECT", "x"},
				{"READONLY"}, {"READWRITE"}, {"ASKING"},
				{"CONFIG", "GET", "cluster-allow-reads-when-down"}, {"CONFIG", "GET", "cluster-replica-validity-factor"},
				{"CONFIG", "GET", "cluster-slave-validity-factor"},
				{"CONFIG", "SET", "cluster-allow-reads-when-down", "maybe"}, {"CONFIG", "SET", "cluster-replica-validity-factor", "-1"},
				{"CONFIG", "SET", "cluster-replica-validity-factor", "x"}, {"CONFIG", "SET", "cluster-slave-validity-factor", "2147483648"},
				{"CONFIG", "SET", "cluster-allow-reads-when-down", "yes", "cluster-slave-validity-factor", "0"},
				{"CONFIG", "GET", "cluster-allow-reads-when-down"}, {"CONFIG", "GET", "cluster-replica-validity-factor"},
				{"CONFIG", "SET", "cluster-allow-reads-when-down", "no", "cluster-replica-validity-factor", "10"},
				{"MULTI"}, {"SET", "a", "1"}, {"SET", "b", "1"}, {"EXEC"}, {"EXEC"},
				{"MULTI"}, {"MSET", "a", "1", "b", "1"}, {"SET", "a", "1"}, {"EXEC"},
				{"MULTI"}, {"SET", "{m}a", "1"}, {"GET", "{m}b"}, {"MGET", "{m}a", "{m}b"}, {"EXEC"},
				{"MULTI"}, {"PING"}, {"EXEC"},
				{"MULTI"}, {"WATCH", "a", "b"}, {"SET", "a", "1"}, {"EXEC"},
				{"MULTI"}, {"SET", "a", "1"}, {"NOSUCH"}, {"SET", "b", "1"}, {"EXEC"},
				{"MULTI"}, {"SET", "a", "1"}, {"SELECT", "1"}, {"EXEC"},
			} {
				d.check(args)
			}
			t.Logf("%d commands compared", d.steps)
		})
	}
}

// sortedArray sorts the elements of a flat array reply of bulk strings,
// for replies whose order is the server's own.
func sortedArray(reply string) string {
	m := regexp.MustCompile(`^\*(\d+)\r\n`).FindStringSubmatch(reply)
	if m == nil {
		return reply
	}
	var items []string
	rest := reply[len(m[0]):]
	for rest != "" {
		i := strings.Index(rest, "\r\n")
		n, err := strconv.Atoi(rest[1:i])
		if rest[0] != '$' || err != nil || i+2+n+2 > len(rest) {
			return reply
		}
		items = append(items, rest[:i+2+n+2])
		rest = rest[i+2+n+2:]
	}
	sort.Strings(items)
	return m[0] + strings.Join(items, "")
}

// TestKeySpecsMatchKeys: for every command, the keys COMMAND's key spec
// describes (what cluster clients route by) are the keys the server
// finds, on argument lists of several lengths; a movable-keys command
// has a keynum spec (only the test commands are left unknown).
func TestKeySpecsMatchKeys(t *testing.T) {
	specKeys := func(cmd *Command, args []string) []int {
		var idx []int
		if cmd.FirstKey > 0 {
			last := cmd.LastKey
			if last < 0 {
				last += len(args)
			}
			for i := cmd.FirstKey; i <= last && i < len(args); i += cmd.Step {
				idx = append(idx, i)
			}
		}
		if kn := cmd.KeyNum; kn != nil && kn.Begin+kn.NumIdx < len(args) {
			n, err := strconv.Atoi(args[kn.Begin+kn.NumIdx])
			if err != nil || n < 0 {
				return idx
			}
			for i, k := 0, kn.Begin+kn.First; i < n && k < len(args); i, k = i+1, k+kn.Step {
				idx = append(idx, k)
			}
		}
		return idx
	}
	checked := 0
	all := map[string]*Command{}
	for name, cmd := range commands {
		all[name] = cmd
	}
	for name, cmd := range subcommandIndex {
		all[name] = cmd // keyIndexes of a subcommand itself: OBJECT FREQ key
	}
	for name, cmd := range all {
		if cmd.subs != nil {
			continue
		}
		if cmd.Keys != nil && cmd.KeyNum == nil && cmd.KeyWord == "" {
			require.True(t, strings.HasPrefix(name, "test."), "%s has movable keys and no keynum spec", name)
			continue
		}
		for n := 1; n <= 14; n++ {
			if !cmd.arityOK(n) {
				continue
			}
			for _, numkeys := range []string{"0", "1", "2", "3"} {
				args := make([]string, n)
				argv := make([][]byte, n)
				for i := range args {
					args[i] = "a" + strconv.Itoa(i)
					if i > 0 && i <= 2 {
						args[i] = numkeys // where a keynum spec looks for the count
					}
					argv[i] = []byte(args[i])
				}
				n, err := strconv.Atoi(numkeys)
				if cmd.KeyNum != nil && (err != nil || cmd.KeyNum.Begin+cmd.KeyNum.First+(n-1)*cmd.KeyNum.Step >= len(args)) {
					continue // a count past the arguments: the command refuses it
				}
				have := cmd.keyIndexes(argv, nil)
				want := specKeys(cmd, args)
				if fmt.Sprint(have) != fmt.Sprint(want) {
					t.Errorf("%s %q: the server finds keys %v, COMMAND's key spec %v", name, args, have, want)
				}
				checked++
			}
		}
	}
	require.Greater(t, checked, 100)
}

// TestClusterReplayAcrossSlots: a log written outside cluster mode (an
// MSET over two slots, a RENAME) replays in cluster mode: the
// CROSSSLOT rule is for clients (the dispatcher), not for the log (Replay
// runs records past it).
func TestClusterReplayAcrossSlots(t *testing.T) {
	store := shards.New(shards.Options{Shards: 4, Now: (&fakeClock{}).Now})
	t.Cleanup(store.Close)
	cfg := config.New()
	require.NoError(t, cfg.Set("cluster-enabled", "yes"))
	s := &socketless{srv: NewEngine(store, cfg, slog.New(slog.NewTextHandler(io.Discard, nil))), store: store, clock: &fakeClock{}}
	s.c = &Client{eng: s.srv, proto: 2, Authed: true}
	n, err := s.replay(t, [][]byte{
		[]byte(multibulk("MSET", "a", "1", "b", "2")),
		[]byte(multibulk("MSET", "c", "3", "x", "4")),
		[]byte(multibulk("RENAME", "x", "d")),
	})
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.Equal(t, svErr(errCrossSlot), s.send("MGET", "a", "b", "c", "d"))
	for k, v := range map[string]string{"a": "1", "b": "2", "c": "3", "d": "4"} {
		require.Equal(t, svBulk(v), s.send("GET", k))
	}
}
