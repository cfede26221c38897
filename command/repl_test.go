package command

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/shards"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// replPair is a primary and a replica of it, in-process, with clocks that
// read the same time.
type replPair struct {
	p, r   *testServer
	pc, rc *redis.Client
}

func newReplPair(t *testing.T, conf ...string) *replPair {
	t.Helper()
	p := newTestServer(t, append([]string{"dir", t.TempDir()}, conf...)...)
	r := newTestServer(t, append([]string{"dir", t.TempDir()}, conf...)...)
	r.clock.ns.Store(p.clock.ns.Load())
	return &replPair{p: p, r: r, pc: p.client(t, 2), rc: r.client(t, 2)}
}

// attach makes r a replica of p and waits until it streams.
func (rp *replPair) attach(t *testing.T) {
	t.Helper()
	host, port, _ := net.SplitHostPort(rp.p.addr)
	ctx := context.Background()
	require.Equal(t, "OK", rp.rc.Do(ctx, "REPLICAOF", host, port).Val())
	rp.waitLinked(t)
}

func (rp *replPair) waitLinked(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	require.Eventually(t, func() bool {
		role, _ := rp.rc.Do(ctx, "ROLE").Slice()
		return len(role) == 5 && role[3] == "connected"
	}, 10*time.Second, 5*time.Millisecond, "the replica never connected")
}

// caughtUp waits until the replica's offset is the primary's.
func (rp *replPair) caughtUp(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool {
		return infoField(t, rp.pc, "master_repl_offset") == infoField(t, rp.rc, "master_repl_offset")
	}, 10*time.Second, 2*time.Millisecond, "the replica never caught up")
}

func infoField(t *testing.T, c *redis.Client, name string) string {
	info := c.Info(context.Background(), "replication").Val()
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return v
		}
	}
	return ""
}

// keyspace returns every key with its DUMP and PTTL, sorted.
func keyspace(t *testing.T, c *redis.Client) []string {
	ctx := context.Background()
	keys := c.Keys(ctx, "*").Val()
	sort.Strings(keys)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		dump := c.Dump(ctx, k).Val()
		ttl := c.PTTL(ctx, k).Val()
		out = append(out, fmt.Sprintf("%s=%q ttl>0:%v", k, dump, ttl > 0))
	}
	return out
}

func fillEveryType(t *testing.T, c *redis.Client, prefix string) {
	ctx := context.Background()
	for _, cmd := range [][]any{
		{"SET", prefix + "str", "hello"},
		{"SET", prefix + "ttl", "v", "PX", "100000"},
		{"INCRBY", prefix + "counter", "42"},
		{"ZADD", prefix + "z", "1", "a", "2", "b"},
		{"HSET", prefix + "h", "f", "v", "g", "w"},
		{"RPUSH", prefix + "l", "x", "y", "z"},
		{"CL.THROTTLE", prefix + "rl", "10", "5", "60", "1"},
		{"MULTI"}, {"INCR", prefix + "tx1"}, {"LPUSH", prefix + "tx2", "q"}, {"EXEC"},
	} {
		require.NoError(t, c.Do(ctx, cmd...).Err(), "%v", cmd)
	}
}

func TestReplicaFullSyncAndStream(t *testing.T) {
	rp := newReplPair(t)
	ctx := context.Background()
	fillEveryType(t, rp.pc, "a:")
	rp.attach(t)
	rp.caughtUp(t)
	require.Equal(t, keyspace(t, rp.pc), keyspace(t, rp.rc), "after the full sync")

	fillEveryType(t, rp.pc, "b:")
	for i := 0; i < 20; i++ {
		rp.pc.Do(ctx, "CL.THROTTLE", "b:rl", "10", "5", "60", "1")
	}
	rp.pc.Do(ctx, "DEL", "a:str")
	rp.caughtUp(t)
	require.Equal(t, keyspace(t, rp.pc), keyspace(t, rp.rc), "after streaming")
	want := rp.pc.Do(ctx, "CL.PEEK", "b:rl", "10", "5", "60").Val()
	// The replica never ran CL.THROTTLE: its CL.PEEK reads the primary's TAT.
	require.Equal(t, want, rp.rc.Do(ctx, "CL.PEEK", "b:rl", "10", "5", "60").Val())

	// INFO and ROLE on both sides.
	require.Equal(t, "slave", infoField(t, rp.rc, "role"))
	require.Equal(t, "up", infoField(t, rp.rc, "master_link_status"))
	require.Equal(t, "1", infoField(t, rp.pc, "connected_slaves"))
	require.Regexp(t, `^ip=127\.0\.0\.1,port=\d+,state=online,offset=\d+,lag=\d+$`, infoField(t, rp.pc, "slave0"))
	require.Equal(t, infoField(t, rp.pc, "master_replid"), infoField(t, rp.rc, "master_replid"))
	role := rp.pc.Do(ctx, "ROLE").Val().([]any)
	require.Equal(t, "master", role[0])
	require.Len(t, role[2], 1)
}

func TestReplicaReadOnly(t *testing.T) {
	rp := newReplPair(t)
	ctx := context.Background()
	rp.attach(t)
	for i, tt := range []struct {
		cmd  []any
		want string
	}{
		{[]any{"SET", "k", "v"}, "READONLY You can't write against a read only replica."},
		{[]any{"CL.THROTTLE", "k", "1", "1", "1"}, "READONLY You can't write against a read only replica."},
		{[]any{"GET", "k"}, "redis: nil"},
		{[]any{"EVAL", "return redis.call('SET', KEYS[1], 'v')", "1", "k"}, "READONLY You can't write against a read only replica. script: 219bb33e7c6773035c720850383aa2ebb63d9904, on @user_script:1."},
		{[]any{"WAIT", "0", "0"}, "ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated."},
	} {
		err := rp.rc.Do(ctx, tt.cmd...).Err()
		require.Error(t, err, "step %d", i)
		require.Equal(t, tt.want, err.Error(), "step %d", i)
	}
	// MULTI with a write: EXECABORT.
	r := rp.r.raw(t)
	require.Equal(t, "+OK\r\n", r.do("MULTI"))
	require.Equal(t, "-READONLY You can't write against a read only replica.\r\n", r.do("SET", "k", "v"))
	require.Equal(t, "-EXECABORT Transaction discarded because of previous errors.\r\n", r.do("EXEC"))
	require.NoError(t, rp.rc.ConfigSet(ctx, "replica-read-only", "no").Err())
	require.NoError(t, rp.rc.Set(ctx, "local", "1", 0).Err())
}

func TestReplicaExpiry(t *testing.T) {
	rp := newReplPair(t)
	ctx := context.Background()
	rp.attach(t)
	require.NoError(t, rp.pc.Set(ctx, "e", "v", time.Second).Err())
	rp.caughtUp(t)
	// The replica's clock passes the deadline: the key reads as missing,
	// but the replica keeps it until its primary deletes it.
	rp.r.clock.Advance(2 * time.Second)
	require.Equal(t, redis.Nil, rp.rc.Get(ctx, "e").Err())
	n := 0
	rp.r.store.Lock(rp.r.store.ShardIndex([]byte("e")))
	if rp.r.store.Peek([]byte("e"), 0) != nil {
		n = 1
	}
	rp.r.store.Unlock(rp.r.store.ShardIndex([]byte("e")))
	require.Equal(t, 1, n, "the replica deleted an expired key itself")
	// The primary's expiry deletes it and sends the DEL.
	rp.p.clock.Advance(2 * time.Second)
	rp.p.store.ExpireCycle(rp.p.clock.Now()/1e6, time.Second)
	rp.caughtUp(t)
	rp.r.store.Lock(rp.r.store.ShardIndex([]byte("e")))
	gone := rp.r.store.Peek([]byte("e"), 0) == nil
	rp.r.store.Unlock(rp.r.store.ShardIndex([]byte("e")))
	require.True(t, gone, "the primary's expiry did not reach the replica")
}

func TestReplicaPartialResync(t *testing.T) {
	rp := newReplPair(t)
	rp.attach(t)
	fillEveryType(t, rp.pc, "a:")
	rp.caughtUp(t)
	full := infoField(t, rp.rc, "master_replid")
	// Drop the link from the primary's side; writes go on meanwhile.
	killReplicaLinks(rp.p)
	fillEveryType(t, rp.pc, "b:")
	rp.waitLinked(t)
	rp.caughtUp(t)
	require.Equal(t, keyspace(t, rp.pc), keyspace(t, rp.rc))
	require.Equal(t, full, infoField(t, rp.rc, "master_replid"))
	require.Equal(t, int64(1), rp.p.srv.repl.partials.Load(), "the reconnection was not a partial resync")
}

func killReplicaLinks(ts *testServer) {
	r := ts.srv.repl
	r.mu.Lock()
	for l := range r.links {
		l.close()
	}
	r.mu.Unlock()
}

func TestWait(t *testing.T) {
	rp := newReplPair(t)
	ctx := context.Background()
	require.Equal(t, int64(0), rp.pc.Do(ctx, "WAIT", "0", "0").Val())
	start := time.Now()
	require.Equal(t, int64(0), rp.pc.Do(ctx, "WAIT", "1", "100").Val())
	require.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond, "WAIT did not wait for its timeout")
	rp.attach(t)
	require.NoError(t, rp.pc.Set(ctx, "k", "v", 0).Err())
	require.Equal(t, int64(1), rp.pc.Do(ctx, "WAIT", "1", "0").Val())
	// Two replicas wanted, one there: the timeout answers 1.
	require.Equal(t, int64(1), rp.pc.Do(ctx, "WAIT", "2", "50").Val())
	for i, tt := range []struct {
		args []any
		want string
	}{
		{[]any{"WAIT", "x", "0"}, "ERR value is not an integer or out of range"},
		{[]any{"WAIT", "1", "x"}, "ERR timeout is not an integer or out of range"},
		{[]any{"WAIT", "1", "-1"}, "ERR timeout is negative"},
	} {
		require.EqualError(t, rp.pc.Do(ctx, tt.args...).Err(), tt.want, "step %d", i)
	}
}

func TestMinReplicasToWrite(t *testing.T) {
	rp := newReplPair(t)
	ctx := context.Background()
	require.NoError(t, rp.pc.ConfigSet(ctx, "min-replicas-to-write", "1").Err())
	require.Eventually(t, func() bool {
		return rp.pc.Set(ctx, "k", "v", 0).Err() != nil
	}, 5*time.Second, 10*time.Millisecond)
	require.EqualError(t, rp.pc.Set(ctx, "k", "v", 0).Err(), "NOREPLICAS Not enough good replicas to write.")
	rp.attach(t)
	require.Eventually(t, func() bool {
		return rp.pc.Set(ctx, "k", "v", 0).Err() == nil
	}, 5*time.Second, 10*time.Millisecond)
}

func TestReplicaofErrors(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	for i, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"REPLICAOF", "127.0.0.1", "x"}, "-ERR Invalid master port\r\n"},
		{[]string{"REPLICAOF", "127.0.0.1", "70000"}, "-ERR Invalid master port\r\n"},
		{[]string{"REPLICAOF", "NO", "ONE"}, "+OK\r\n"},
		{[]string{"REPLCONF", "listening-port"}, "-ERR syntax error\r\n"},
		{[]string{"REPLCONF", "foo", "bar"}, "-ERR Unrecognized REPLCONF option: foo\r\n"},
		{[]string{"REPLCONF", "listening-port", "6380", "capa", "eof"}, "+OK\r\n"},
		{[]string{"PSYNC", "?", "-1"}, "-" + errReplicaNotRatekv + "\r\n"},
		{[]string{"ROLE"}, "*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n"},
	} {
		require.Equal(t, tt.want, r.do(tt.args...), "step %d", i)
	}
}

// replicaOf points ts at primary p and waits until it streams.
func replicaOf(t *testing.T, ts, p *testServer) {
	t.Helper()
	host, port, _ := net.SplitHostPort(p.addr)
	c := ts.client(t, 2)
	require.Equal(t, "OK", c.Do(context.Background(), "REPLICAOF", host, port).Val())
	(&replPair{p: p, r: ts, pc: p.client(t, 2), rc: c}).waitLinked(t)
}

func TestPromotionContinuesPartially(t *testing.T) {
	ctx := context.Background()
	p := newTestServer(t, "dir", t.TempDir())
	r1 := newTestServer(t, "dir", t.TempDir())
	r2 := newTestServer(t, "dir", t.TempDir())
	replicaOf(t, r1, p)
	replicaOf(t, r2, p)
	pc := p.client(t, 2)
	fillEveryType(t, pc, "a:")
	rp1 := &replPair{p: p, r: r1, pc: pc, rc: r1.client(t, 2)}
	rp2 := &replPair{p: p, r: r2, pc: pc, rc: r2.client(t, 2)}
	rp1.caughtUp(t)
	rp2.caughtUp(t)
	old := infoField(t, pc, "master_replid")

	// r1 is promoted; r2 and the old primary follow it and continue.
	require.Equal(t, "OK", rp1.rc.Do(ctx, "REPLICAOF", "NO", "ONE").Val())
	require.Equal(t, old, infoField(t, rp1.rc, "master_replid2"))
	require.NoError(t, rp1.rc.Set(ctx, "after", "promotion", 0).Err())
	replicaOf(t, r2, r1)
	replicaOf(t, p, r1)
	rp := &replPair{p: r1, r: r2, pc: rp1.rc, rc: rp2.rc}
	rp.caughtUp(t)
	(&replPair{p: r1, r: p, pc: rp1.rc, rc: pc}).caughtUp(t)
	require.Equal(t, int64(2), r1.srv.repl.partials.Load(), "a replica resynchronized fully")
	require.Equal(t, int64(0), r1.srv.repl.fulls.Load())
	require.Equal(t, keyspace(t, rp1.rc), keyspace(t, rp2.rc))
	require.Equal(t, keyspace(t, rp1.rc), keyspace(t, pc))
}

func TestOldPrimaryWithOwnWritesResyncsFully(t *testing.T) {
	ctx := context.Background()
	rp := newReplPair(t)
	rp.attach(t)
	fillEveryType(t, rp.pc, "a:")
	rp.caughtUp(t)
	require.Equal(t, "OK", rp.rc.Do(ctx, "REPLICAOF", "NO", "ONE").Val())
	// The old primary wrote what the new one never had: it must not keep it.
	require.NoError(t, rp.pc.Set(ctx, "lost", "1", 0).Err())
	replicaOf(t, rp.p, rp.r)
	(&replPair{p: rp.r, r: rp.p, pc: rp.rc, rc: rp.pc}).caughtUp(t)
	require.Equal(t, int64(1), rp.r.srv.repl.fulls.Load())
	require.Equal(t, redis.Nil, rp.pc.Get(ctx, "lost").Err())
	require.Equal(t, keyspace(t, rp.rc), keyspace(t, rp.pc))
}

func TestBacklogOverflowResyncsFully(t *testing.T) {
	rp := newReplPair(t, "repl-backlog-size", "16kb")
	ctx := context.Background()
	rp.attach(t)
	rp.caughtUp(t)
	rp.r.srv.PauseReplication()
	big := strings.Repeat("x", 1000)
	for i := 0; i < 300; i++ {
		require.NoError(t, rp.pc.Set(ctx, fmt.Sprint("k", i), big, 0).Err())
	}
	rp.r.srv.ResumeReplication()
	rp.waitLinked(t)
	rp.caughtUp(t)
	require.Equal(t, int64(2), rp.p.srv.repl.fulls.Load(), "the backlog cannot have held the writes")
	require.Equal(t, keyspace(t, rp.pc), keyspace(t, rp.rc))
}

func TestReplicaOutputLimit(t *testing.T) {
	ts := newTestServer(t, "dir", t.TempDir(), "client-output-buffer-limit", "replica 2mb 1mb 60")
	ctx := context.Background()
	// A replica that never reads what it asked for.
	r := ts.raw(t)
	require.Equal(t, "+OK\r\n", r.do("REPLCONF", "capa", "ratekv"))
	r.send(multibulk("PSYNC", "?", "-1"))
	require.Eventually(t, func() bool { return infoField(t, ts.client(t, 2), "connected_slaves") == "1" }, 5*time.Second, time.Millisecond)
	c := ts.client(t, 2)
	big := strings.Repeat("x", 64<<10)
	require.Eventually(t, func() bool {
		for i := 0; i < 16; i++ {
			c.Set(ctx, fmt.Sprint("k", i), big, 0)
		}
		return infoField(t, c, "connected_slaves") == "0"
	}, 20*time.Second, time.Millisecond, "the replica that does not read was never dropped")
	// Dropped at the 2 MB limit (plus what the socket holds), not later.
	off, err := strconv.ParseInt(infoField(t, c, "master_repl_offset"), 10, 64)
	require.NoError(t, err)
	require.Less(t, off, int64(64<<20))
}

func TestReplicaofConfig(t *testing.T) {
	rp := newReplPair(t)
	ctx := context.Background()
	require.Equal(t, map[string]string{"replicaof": ""}, rp.rc.ConfigGet(ctx, "replicaof").Val())
	rp.attach(t)
	host, port, _ := net.SplitHostPort(rp.p.addr)
	require.Equal(t, map[string]string{"replicaof": host + " " + port}, rp.rc.ConfigGet(ctx, "replicaof").Val())
	require.Equal(t, "OK Already connected to specified master", rp.rc.Do(ctx, "REPLICAOF", host, port).Val())
	require.EqualError(t, rp.rc.ConfigSet(ctx, "replicaof", "no one").Err(),
		"ERR CONFIG SET failed (possibly related to argument 'replicaof') - can't set immutable config")
	require.Equal(t, "OK", rp.rc.Do(ctx, "REPLICAOF", "NO", "ONE").Val())
	require.Equal(t, map[string]string{"replicaof": ""}, rp.rc.ConfigGet(ctx, "replicaof").Val())
	require.Equal(t, "master", infoField(t, rp.rc, "role"))
	require.NoError(t, rp.rc.Set(ctx, "k", "v", 0).Err())
}

func TestReplicaMasterauth(t *testing.T) {
	rp := newReplPair(t)
	ctx := context.Background()
	require.NoError(t, rp.pc.ConfigSet(ctx, "requirepass", "secret").Err())
	pc := redis.NewClient(&redis.Options{Addr: rp.p.addr, Password: "secret"})
	defer pc.Close()
	rp.pc = pc
	host, port, _ := net.SplitHostPort(rp.p.addr)
	require.Equal(t, "OK", rp.rc.Do(ctx, "REPLICAOF", host, port).Val())
	require.Never(t, func() bool { return infoField(t, rp.rc, "master_link_status") == "up" }, 300*time.Millisecond, 20*time.Millisecond)
	require.NoError(t, rp.rc.ConfigSet(ctx, "masterauth", "wrong").Err())
	require.Never(t, func() bool { return infoField(t, rp.rc, "master_link_status") == "up" }, 300*time.Millisecond, 20*time.Millisecond)
	require.NoError(t, rp.rc.ConfigSet(ctx, "masterauth", "secret").Err())
	rp.waitLinked(t)
	require.NoError(t, pc.Set(ctx, "k", "v", 0).Err())
	rp.caughtUp(t)
	require.Equal(t, "v", rp.rc.Get(ctx, "k").Val())
}

func TestReplicaStaleData(t *testing.T) {
	ts := newTestServer(t, "dir", t.TempDir(), "replica-serve-stale-data", "no")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close() // nothing listens there: the link stays down
	r := ts.raw(t)
	require.Equal(t, "+OK\r\n", r.do("REPLICAOF", "127.0.0.1", port))
	for i, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"GET", "k"}, "-MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.\r\n"},
		{[]string{"PING"}, "+PONG\r\n"},
		{[]string{"CONFIG", "SET", "replica-serve-stale-data", "yes"}, "+OK\r\n"},
		{[]string{"GET", "k"}, "$-1\r\n"},
		{[]string{"PSYNC", "?", "-1"}, "-" + errReplicaNotRatekv + "\r\n"},
		{[]string{"REPLCONF", "capa", "ratekv"}, "+OK\r\n"},
		{[]string{"PSYNC", "?", "-1"}, "-NOMASTERLINK Can't SYNC while not connected with my master\r\n"},
	} {
		require.Equal(t, tt.want, r.do(tt.args...), "step %d", i)
	}
	role := ts.client(t, 2).Do(context.Background(), "ROLE").Val().([]any)
	require.Equal(t, "slave", role[0])
	require.Equal(t, int64(-1), role[4])
	require.Equal(t, "down", infoField(t, ts.client(t, 2), "master_link_status"))
}

// TestReplicaLoadingRefuses: while a replica loads its primary's
// snapshot, commands without FlagLoading get -LOADING, after READONLY in
// Redis's order.
func TestReplicaLoadingRefuses(t *testing.T) {
	ts := newTestServer(t, "dir", t.TempDir())
	r := ts.raw(t)
	require.Equal(t, "+OK\r\n", r.do("SET", "k", "v"))
	setLoading := func(on bool) {
		ts.srv.repl.mu.Lock()
		ts.srv.repl.loading = on
		ts.srv.repl.mu.Unlock()
		ts.srv.repl.updateGate()
	}
	setLoading(true)
	for i, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"GET", "k"}, "-LOADING Redis is loading the dataset in memory\r\n"},
		{[]string{"SET", "k", "w"}, "-LOADING Redis is loading the dataset in memory\r\n"},
		{[]string{"PING"}, "+PONG\r\n"},
		{[]string{"CLIENT", "SETNAME", "x"}, "+OK\r\n"},
	} {
		require.Equal(t, tt.want, r.do(tt.args...), "step %d", i)
	}
	require.Contains(t, r.do("INFO", "replication"), "role:master")
	ts.srv.repl.mu.Lock()
	ts.srv.repl.masterHost = "127.0.0.1" // a replica, without a link
	ts.srv.repl.gateLocked()
	ts.srv.repl.mu.Unlock()
	require.Equal(t, "-READONLY You can't write against a read only replica.\r\n", r.do("SET", "k", "w"))
	require.Equal(t, "-LOADING Redis is loading the dataset in memory\r\n", r.do("GET", "k"))
	ts.srv.repl.mu.Lock()
	ts.srv.repl.masterHost = ""
	ts.srv.repl.mu.Unlock()
	setLoading(false)
	require.Equal(t, "$1\r\nv\r\n", r.do("GET", "k"))
}

func TestBacklogFreedWithoutReplicas(t *testing.T) {
	defer func(d time.Duration) { backlogTTL = d }(backlogTTL)
	backlogTTL = 200 * time.Millisecond
	rp := newReplPair(t)
	ctx := context.Background()
	rp.attach(t)
	require.Equal(t, "1", infoField(t, rp.pc, "repl_backlog_active"))
	rp.r.srv.PauseReplication()
	killReplicaLinks(rp.p)
	require.Eventually(t, func() bool { return infoField(t, rp.pc, "repl_backlog_active") == "0" }, 5*time.Second, 10*time.Millisecond)
	off := infoField(t, rp.pc, "master_repl_offset")
	require.NoError(t, rp.pc.Set(ctx, "k", "v", 0).Err())
	require.Nil(t, rp.p.srv.AttachedJournal(), "writes still go to a stream")
	require.Equal(t, off, infoField(t, rp.pc, "master_repl_offset"))
	_, _, ok := rp.p.srv.ReplState()
	require.False(t, ok)
}

func TestPartialResyncOfAnIdlePrimary(t *testing.T) {
	rp := newReplPair(t)
	rp.attach(t)
	// The first PING goes out at once, the next in 10 s.
	require.Eventually(t, func() bool { return infoField(t, rp.pc, "master_repl_offset") != "0" }, 5*time.Second, time.Millisecond)
	rp.caughtUp(t)
	killReplicaLinks(rp.p)
	// Nothing is written: +CONTINUE alone must reach the replica.
	require.Eventually(t, func() bool { return rp.p.srv.repl.partials.Load() == 1 }, 10*time.Second, 5*time.Millisecond)
	// The replica asked again, so it saw its link down: up again means it
	// read the answer.
	require.Eventually(t, func() bool {
		r := rp.r.srv.repl
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.link != nil && r.link.up.Load()
	}, 3*time.Second, 5*time.Millisecond, "the replica never read +CONTINUE")
}

// TestStreamWriteAllocs: with a replication stream a write command still
// allocates nothing (the stream's blocks aside, one per 64 KiB).
func TestStreamWriteAllocs(t *testing.T) {
	store := shards.New(shards.Options{Shards: 8})
	t.Cleanup(store.Close)
	e := NewEngine(store, config.New(), slog.New(slog.DiscardHandler))
	e.repl.mu.Lock()
	e.repl.ensureBacklogLocked()
	e.repl.mu.Unlock()
	c := &Client{eng: e, proto: 2, Authed: true, Out: make([]byte, 0, 4096)}
	args := [][]byte{[]byte("CL.THROTTLE"), []byte("user:1"), []byte("100"), []byte("1000"), []byte("1")}
	cmd := c.Lookup(args[0])
	run := func() {
		c.Run(cmd, args, nil)
		c.Out = c.Out[:0]
		c.Journaled = Mark{}
	}
	run()
	require.Positive(t, e.repl.bl.end.Load(), "nothing reached the stream")
	require.Less(t, testing.AllocsPerRun(1000, run), 0.1)
}

func TestReplicaOfAReplica(t *testing.T) {
	p := newTestServer(t, "dir", t.TempDir())
	r1 := newTestServer(t, "dir", t.TempDir())
	r2 := newTestServer(t, "dir", t.TempDir())
	pc := p.client(t, 2)
	fillEveryType(t, pc, "a:")
	replicaOf(t, r1, p)
	replicaOf(t, r2, r1)
	fillEveryType(t, pc, "b:")
	rp2 := &replPair{p: p, r: r2, pc: pc, rc: r2.client(t, 2)}
	rp2.caughtUp(t)
	require.Equal(t, keyspace(t, pc), keyspace(t, rp2.rc))
}

func TestStartRemovesInterruptedSyncFiles(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"temp-sync-1.rkv", "temp-replica-sync-2.rkv", "temp-replica-sync-3.rkv.tmp", "dump.rkv"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644))
	}
	newTestServer(t, "dir", dir)
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	require.Equal(t, []string{filepath.Join(dir, "dump.rkv")}, left)
}

// TestReplicationLinksInClientList: a replica's link is a client of its
// primary with flags=S, the primary's link one of the replica with
// flags=M; CLIENT LIST TYPE filters them, CLIENT KILL TYPE replica|slave|
// master closes them and the replica reconnects with a partial resync.
func TestReplicationLinksInClientList(t *testing.T) {
	rp := newReplPair(t)
	ctx := context.Background()
	rp.attach(t)
	list := func(c *redis.Client, typ string) []string {
		t.Helper()
		s, err := c.Do(ctx, "CLIENT", "LIST", "TYPE", typ).Text()
		require.NoError(t, err)
		return strings.Fields(strings.TrimSpace(s))
	}
	field := func(line []string, name string) string {
		for _, f := range line {
			if v, ok := strings.CutPrefix(f, name+"="); ok {
				return v
			}
		}
		return ""
	}
	linkIDs := func(cmd string) (string, string) {
		t.Helper()
		var s, m []string
		require.Eventually(t, func() bool {
			s, m = list(rp.pc, "replica"), list(rp.rc, "master")
			return field(s, "cmd") != "" && strings.Contains(cmd, field(s, "cmd")+" ") && field(m, "flags") == "M"
		}, 10*time.Second, 5*time.Millisecond, "links not listed: %q %q", s, m)
		require.Equal(t, "S", field(s, "flags"))
		require.Equal(t, s, list(rp.pc, "slave"))
		require.Equal(t, rp.p.addr, field(m, "addr"))
		require.Equal(t, field(s, "addr"), field(m, "laddr"))
		require.Empty(t, list(rp.pc, "master"))
		require.Empty(t, list(rp.rc, "replica"))
		all, err := rp.pc.Do(ctx, "CLIENT", "LIST").Text()
		require.NoError(t, err)
		require.Contains(t, all, "id="+field(s, "id")+" ")
		return field(s, "id"), field(m, "id")
	}
	partials := func() string { return statField(t, rp.pc, "sync_partial_ok") }
	sid, mid := linkIDs("replconf ") // its ACKs
	require.Equal(t, int64(0), rp.pc.Do(ctx, "CLIENT", "KILL", "TYPE", "normal").Val())
	require.Equal(t, int64(0), rp.rc.Do(ctx, "CLIENT", "KILL", "TYPE", "normal").Val())
	require.Equal(t, int64(0), rp.pc.Do(ctx, "CLIENT", "KILL", "TYPE", "master").Val())
	was := partials()
	for i, kill := range []func() any{
		func() any { return rp.pc.Do(ctx, "CLIENT", "KILL", "TYPE", "replica").Val() },
		func() any { return rp.rc.Do(ctx, "CLIENT", "KILL", "TYPE", "master").Val() },
		func() any { return rp.rc.Do(ctx, "CLIENT", "KILL", "ID", mid).Val() },
	} {
		require.NoError(t, rp.pc.Incr(ctx, "n").Err())
		require.Equal(t, int64(1), kill(), "step %d", i)
		nsid, nmid := linkIDs("psync replconf ")
		require.NotEqual(t, sid, nsid, "step %d", i)
		require.NotEqual(t, mid, nmid, "step %d", i)
		sid, mid = nsid, nmid
		rp.caughtUp(t)
		require.Equal(t, strconv.Itoa(i+1), rp.rc.Get(ctx, "n").Val(), "step %d", i)
	}
	have, _ := strconv.Atoi(partials())
	before, _ := strconv.Atoi(was)
	require.Equal(t, before+3, have, "each reconnection continues partially")
}

func statField(t *testing.T, c *redis.Client, name string) string {
	for _, line := range strings.Split(c.Info(context.Background(), "stats").Val(), "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return v
		}
	}
	return ""
}

// heldLog is an append-only file that holds its records until write:
// OnWritten reports them only then.
type heldLog struct {
	mu  sync.Mutex
	seq uint64
	out atomic.Pointer[func(uint64)]
}

func (h *heldLog) Append([]byte) uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	return h.seq
}

func (h *heldLog) Sync(uint64) error { return nil }
func (h *heldLog) Err() error        { return nil }

func (h *heldLog) OnWritten(f func(uint64)) {
	if f == nil {
		h.out.Store(nil)
		return
	}
	h.out.Store(&f)
}

// write writes every record appended so far.
func (h *heldLog) write() {
	h.mu.Lock()
	seq := h.seq
	h.mu.Unlock()
	if f := h.out.Load(); f != nil {
		(*f)(seq)
	}
}

// TestStreamWaitsForTheLog: a replica receives a write only once the
// primary's append-only file has it, as in Redis, where the AOF is
// written before the replicas' sockets; PINGs and WAIT's GETACK queue
// behind it.
func TestStreamWaitsForTheLog(t *testing.T) {
	log := &heldLog{}
	p := newJournaledServer(t, log, "dir", t.TempDir())
	r := newTestServer(t, "dir", t.TempDir())
	r.clock.ns.Store(p.clock.ns.Load())
	rp := &replPair{p: p, r: r, pc: p.client(t, 2), rc: r.client(t, 2)}
	ctx := context.Background()
	rp.attach(t)
	require.NoError(t, rp.pc.Set(ctx, "k", "v", 0).Err())
	require.Equal(t, int64(0), rp.pc.Do(ctx, "WAIT", "1", "200").Val(), "acknowledged before the log has it")
	require.Equal(t, redis.Nil, rp.rc.Get(ctx, "k").Err(), "the replica has it before the log")
	log.write()
	require.Equal(t, int64(1), rp.pc.Do(ctx, "WAIT", "1", "0").Val())
	require.Equal(t, "v", rp.rc.Get(ctx, "k").Val())

	// With nothing held, a PING goes out at once.
	require.NoError(t, rp.pc.Set(ctx, "k", "w", 0).Err())
	log.write()
	p.srv.repl.mu.Lock()
	bl := p.srv.repl.bl
	p.srv.repl.mu.Unlock()
	bl.appendStream(pingRecord, false)
	rp.caughtUp(t)
	require.Equal(t, "w", rp.rc.Get(ctx, "k").Val())
}
