package command

import (
	"bufio"
	"context"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekv/ratekv/shards"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// hostPort splits a test server's address for MIGRATE's arguments.
func hostPort(t *testing.T, addr string) (string, string) {
	t.Helper()
	h, p, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	return h, p
}

// TestMigrate: MIGRATE between two ratekv servers outside cluster mode,
// in RESP2 and RESP3: its argument errors in Redis's order, NOKEY, the
// move with the remaining TTL, COPY, REPLACE, KEYS, AUTH, the target's
// errors passed through, and a connection refused.
func TestMigrate(t *testing.T) {
	for _, proto := range []int{2, 3} {
		src := newTestServer(t)
		dst := newTestServer(t, "requirepass", "pw")
		dst.clock.ns.Store(src.clock.Now())
		host, port := hostPort(t, dst.addr)
		r, d := src.raw(t), dst.raw(t)
		if proto == 3 {
			r.do("HELLO", "3")
		}
		require.Equal(t, "+OK\r\n", d.do("AUTH", "pw"))
		closed, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		_, deadPort := hostPort(t, closed.Addr().String())
		closed.Close()
		mig := func(rest ...string) []string { return append([]string{"MIGRATE", host, port}, rest...) }
		for i, s := range []svStep{
			{mig("k", "0", "1000", "COPY", "FOO"), svErr(errSyntax)},
			{mig("k", "0", "1000", "AUTH"), svErr(errSyntax)},
			{mig("k", "0", "1000", "AUTH2", "u"), svErr(errSyntax)},
			{mig("k", "0", "1000", "KEYS", "a"), svErr(errMigrateKeysArg)},
			{mig("k", "x", "y"), svErr(errNotInt)},
			{mig("k", "0", "y"), svErr(errNotInt)},
			{mig("k", "x", "1000"), svErr(errNotInt)},
			{mig("k", "0", "1000"), "+NOKEY\r\n"},
			{[]string{"SET", "k", "v", "PX", "100000"}, "+OK\r\n"},
			{mig("k", "0", "1000"), svErr(sprintf(errMigrateTarget, "NOAUTH Authentication required."))},
			{mig("k", "0", "1000", "AUTH", "bad"), svErr(sprintf(errMigrateTarget, "WRONGPASS invalid username-password pair or user is disabled."))},
			// The SELECT fails, the RESTORE runs: the target has a copy, the
			// source keeps its key, as with Redis.
			{[]string{"SET", "z", "1"}, "+OK\r\n"},
			{mig("z", "1", "1000", "AUTH", "pw"), svErr(sprintf(errMigrateTarget, "ERR DB index is out of range"))},
			{[]string{"EXISTS", "z"}, ":1\r\n"},
			{mig("k", "0", "1000", "COPY", "AUTH", "pw"), "+OK\r\n"},
			{[]string{"GET", "k"}, svBulk("v")},
			{mig("k", "0", "1000", "AUTH2", "default", "pw"), svErr(sprintf(errMigrateTarget, errBusyKey))},
			{[]string{"SET", "k", "w", "PX", "100000"}, "+OK\r\n"},
			{mig("k", "0", "0", "REPLACE", "AUTH", "pw"), "+OK\r\n"},
			{[]string{"EXISTS", "k"}, ":0\r\n"},
			{[]string{"MSET", "a", "1", "b", "2"}, "+OK\r\n"},
			{mig("", "0", "1000", "AUTH", "pw", "KEYS", "a", "nokey", "b"), "+OK\r\n"},
			{[]string{"EXISTS", "a", "b"}, ":0\r\n"},
			{mig("", "0", "1000", "KEYS", "a"), "+NOKEY\r\n"},
			{[]string{"SET", "c", "3"}, "+OK\r\n"},
			{[]string{"MIGRATE", "127.0.0.1", deadPort, "c", "0", "1000"}, svErr(sprintf(errMigrateIO, "writing"))},
			{[]string{"MIGRATE", "no-such-host.invalid", deadPort, "c", "0", "1000"}, svErr(errMigrateConnect)},
			{[]string{"GET", "c"}, svBulk("3")},
		} {
			if have := r.do(s.args...); have != s.want {
				t.Errorf("RESP%d step %d %q:\nhave %q\nwant %q", proto, i, s.args, have, s.want)
			}
		}
		require.Equal(t, svBulk("w"), d.do("GET", "k"))
		pttl, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(d.do("PTTL", "k"), ":")))
		require.NoError(t, err)
		require.InDelta(t, 100000, pttl, 1000)
		require.Equal(t, "*2\r\n$1\r\n1\r\n$1\r\n2\r\n", d.do("MGET", "a", "b"))
	}
}

// TestMigrateThrottleKeepsState: a CL.THROTTLE key moved by MIGRATE keeps
// its TAT: the target allows no more than what the source had left.
func TestMigrateThrottleKeepsState(t *testing.T) {
	src, dst := newTestServer(t), newTestServer(t)
	dst.clock.ns.Store(src.clock.Now())
	host, port := hostPort(t, dst.addr)
	r, d := src.raw(t), dst.raw(t)
	allowed := func(c *rawConn, n int) int {
		ok := 0
		for range n {
			if strings.HasPrefix(c.do("CL.THROTTLE", "t", "4", "1", "60"), "*5\r\n:0\r\n") {
				ok++
			}
		}
		return ok
	}
	require.Equal(t, 3, allowed(r, 3))
	require.Equal(t, "+OK\r\n", r.do("MIGRATE", host, port, "t", "0", "1000"))
	require.Equal(t, ":0\r\n", r.do("EXISTS", "t"))
	// A burst of 5 a minute: 2 left after the source's 3.
	require.Equal(t, 2, allowed(d, 10))
	require.Equal(t, 5, allowed(r, 10), "a fresh key on the source has the whole burst")
}

// stallTarget is a MIGRATE target that reads requests and answers +OK to
// each RESTORE only when release is closed.
func stallTarget(t *testing.T) (addr string, got chan struct{}, release chan struct{}) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	got, release = make(chan struct{}, 16), make(chan struct{})
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				rd := bufio.NewReader(nc)
				for {
					line, err := rd.ReadString('\n')
					if err != nil {
						return
					}
					if strings.EqualFold(strings.TrimSpace(line), "RESTORE") || strings.EqualFold(strings.TrimSpace(line), "SELECT") {
						got <- struct{}{}
						<-release
						nc.Write([]byte("+OK\r\n"))
					}
				}
			}()
		}
	}()
	return ln.Addr().String(), got, release
}

// TestMigrateTimeout: a target that does not answer in time gives
// IOERR and leaves the key; the next MIGRATE dials again.
func TestMigrateTimeout(t *testing.T) {
	src := newTestServer(t)
	addr, got, release := stallTarget(t)
	host, port := hostPort(t, addr)
	m := src.raw(t)
	require.Equal(t, "+OK\r\n", m.do("SET", "k", "v"))
	require.Equal(t, svErr(sprintf(errMigrateIO, "reading")), m.do("MIGRATE", host, port, "k", "0", "50"))
	<-got // its SELECT
	require.Equal(t, svBulk("v"), m.do("GET", "k"))
	close(release)
	require.Equal(t, "+OK\r\n", m.do("MIGRATE", host, port, "k", "0", "5000"))
	require.Equal(t, ":0\r\n", m.do("EXISTS", "k"))
}

// TestMigrateWaitsBehindFence: a client whose transaction writes a key
// in flight gets no reply until the MIGRATE ends, then runs on the key's
// new state; reads go on meanwhile.
func TestMigrateWaitsBehindFence(t *testing.T) {
	src := newTestServer(t)
	addr, got, release := stallTarget(t)
	host, port := hostPort(t, addr)
	m, w, o := src.raw(t), src.raw(t), src.raw(t)
	require.Equal(t, "+OK\r\n", m.do("SET", "k", "v"))
	_, err := m.nc.Write([]byte(multibulk("MIGRATE", host, port, "k", "0", "5000")))
	require.NoError(t, err)
	<-got // SELECT: the MIGRATE is in flight
	_, err = w.nc.Write([]byte(multibulk("MULTI") + multibulk("GET", "k") + multibulk("INCR", "k") + multibulk("EXEC")))
	require.NoError(t, err)
	require.Equal(t, "+OK\r\n", w.reply())
	require.Equal(t, "+QUEUED\r\n", w.reply())
	require.Equal(t, "+QUEUED\r\n", w.reply())
	require.Equal(t, "+OK\r\n", o.do("SET", "other", "1"))
	require.Equal(t, svBulk("v"), o.do("GET", "k"), "a read goes on")
	w.nc.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	_, err = w.rd.ReadByte()
	require.Error(t, err, "EXEC answered while its key was in flight")
	close(release)
	require.Equal(t, "+OK\r\n", m.reply())
	require.Equal(t, "*2\r\n$-1\r\n:1\r\n", w.reply())
}

// clusterSlotsOf turns a slot table into go-redis's slot ranges.
func clusterSlotsOf(t *SlotTable) []redis.ClusterSlot {
	var out []redis.ClusterSlot
	for s := 0; s < len(t.Owner); {
		e := s
		for e+1 < len(t.Owner) && t.Owner[e+1] == t.Owner[s] {
			e++
		}
		if n := t.Owner[s]; n >= 0 {
			addr := net.JoinHostPort(t.Nodes[n].IP, strconv.Itoa(t.Nodes[n].Port))
			out = append(out, redis.ClusterSlot{Start: s, End: e, Nodes: []redis.ClusterNode{{ID: t.Nodes[n].ID, Addr: addr}}})
		}
		s = e + 1
	}
	return out
}

// TestClusterReshard moves one slot between two nodes under a writing
// client, as redis-cli --cluster reshard does: SETSLOT IMPORTING on the
// target, MIGRATING on the source, GETKEYSINSLOT and MIGRATE … KEYS in
// batches, then the new tables. No key is lost or left on both nodes, no
// INCR is lost, and a go-redis ClusterClient reads every key through
// MOVED and ASK; a CL.THROTTLE key keeps its TAT across the move.
func TestClusterReshard(t *testing.T) {
	a := newTestServer(t, "cluster-enabled", "yes")
	b := newTestServer(t, "cluster-enabled", "yes")
	b.clock.ns.Store(a.clock.Now())
	aID, bID := strings.Repeat("a", 40), strings.Repeat("b", 40)
	a.srv.SetNode(nodeIdentity(aID))
	b.srv.SetNode(nodeIdentity(bID))
	ah, ap := hostPort(t, a.addr)
	bh, bp := hostPort(t, b.addr)
	apn, _ := strconv.Atoi(ap)
	bpn, _ := strconv.Atoi(bp)
	nodes := []NodeAddr{{ID: aID, IP: ah, Port: apn}, {ID: bID, IP: bh, Port: bpn}}
	slot := shards.KeySlotString("{r}")
	publish := func(owner int32) {
		for self, ts := range []*testServer{a, b} {
			tab := &SlotTable{Nodes: nodes, Self: int32(self), Epoch: uint64(owner) + 1}
			tab.Owner[slot] = owner
			ts.srv.SetSlotTable(tab)
		}
	}
	publish(0)
	ctx := context.Background()
	cc := redis.NewClusterClient(&redis.ClusterOptions{
		ClusterSlots: func(context.Context) ([]redis.ClusterSlot, error) { return clusterSlotsOf(a.srv.SlotTable()), nil },
		MaxRedirects: 8,
	})
	t.Cleanup(func() { cc.Close() })
	const pre, counters = 300, 20
	for i := range pre {
		require.NoError(t, cc.Set(ctx, "{r}:k"+strconv.Itoa(i), i, 0).Err())
	}
	for i := range counters {
		require.NoError(t, cc.Set(ctx, "{r}:c"+strconv.Itoa(i), 0, 0).Err())
	}
	throttle := func(n int) int {
		ok := 0
		for range n {
			v, err := cc.Do(ctx, "CL.THROTTLE", "{r}:t", "4", "1", "60").Slice()
			require.NoError(t, err)
			if v[0].(int64) == 0 {
				ok++
			}
		}
		return ok
	}
	require.Equal(t, 3, throttle(3))

	// The writer: new keys, and INCRs of the counters.
	stop := make(chan struct{})
	done := make(chan error, 1)
	incrs := make([]int, counters)
	var writes atomic.Int64
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if err := cc.Set(ctx, "{r}:w"+strconv.Itoa(i), i, 0).Err(); err != nil {
				done <- err
				return
			}
			writes.Add(1)
			if err := cc.Incr(ctx, "{r}:c"+strconv.Itoa(i%counters)).Err(); err != nil {
				done <- err
				return
			}
			incrs[i%counters]++
		}
	}()

	ra, rb := a.raw(t), b.raw(t)
	s := strconv.Itoa(int(slot))
	require.Equal(t, "+OK\r\n", rb.do("CLUSTER", "SETSLOT", s, "IMPORTING", aID))
	require.Equal(t, "+OK\r\n", ra.do("CLUSTER", "SETSLOT", s, "MIGRATING", bID))
	batches := 0
	for {
		keys := rawStrings(t, ra.do("CLUSTER", "GETKEYSINSLOT", s, "25"))
		if len(keys) == 0 {
			break
		}
		args := append([]string{"MIGRATE", bh, bp, "", "0", "5000", "KEYS"}, keys...)
		require.Equal(t, "+OK\r\n", ra.do(args...))
		batches++
		// Let the writer write between two batches.
		for w, end := writes.Load(), time.Now().Add(5*time.Second); writes.Load() == w && time.Now().Before(end); {
			runtime.Gosched()
		}
	}
	require.Greater(t, batches, 10)
	movedWhile := writes.Load()
	publish(1)
	require.Equal(t, ":0\r\n", ra.do("CLUSTER", "COUNTKEYSINSLOT", s))
	close(stop)
	require.NoError(t, <-done)
	require.GreaterOrEqual(t, movedWhile, int64(batches), "the writer wrote during the move")
	written := int(writes.Load())
	require.Equal(t, "", string(a.srv.AppendSlotMigrations(nil)))
	require.Equal(t, "", string(b.srv.AppendSlotMigrations(nil)))

	require.Equal(t, ":0\r\n", ra.do("CLUSTER", "COUNTKEYSINSLOT", s), "keys left on the source")
	want := pre + counters + written + 1
	require.Equal(t, ":"+strconv.Itoa(want)+"\r\n", rb.do("CLUSTER", "COUNTKEYSINSLOT", s))
	for i := range pre {
		v, err := cc.Get(ctx, "{r}:k"+strconv.Itoa(i)).Int()
		require.NoError(t, err)
		require.Equal(t, i, v)
	}
	for i := range written {
		require.NoError(t, cc.Get(ctx, "{r}:w"+strconv.Itoa(i)).Err())
	}
	for i, n := range incrs {
		v, err := cc.Get(ctx, "{r}:c"+strconv.Itoa(i)).Int()
		require.NoError(t, err)
		require.Equal(t, n, v, "counter %d lost INCRs", i)
	}
	// A burst of 5 a minute: the target allows the 2 the source left.
	require.Equal(t, 2, throttle(10))
}

// rawStrings parses a raw RESP array of bulk strings.
func rawStrings(t *testing.T, reply string) []string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(reply, "\r\n"), "\r\n")
	require.True(t, strings.HasPrefix(lines[0], "*"), reply)
	var out []string
	for i := 2; i < len(lines); i += 2 {
		out = append(out, lines[i])
	}
	return out
}

// TestMigrateDiff: MIGRATE's argument errors and NOKEY as redis-server's,
// and a ratekv key sent to redis-server refused as the docs say (its DUMP
// payload is ratekv's).
func TestMigrateDiff(t *testing.T) {
	addr := redisAddr(t)
	host, port := hostPort(t, addr)
	ts := newTestServer(t)
	r := ts.raw(t)
	red, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer red.Close()
	rr := &rawConn{t: t, nc: red, rd: bufio.NewReader(red)}
	for _, args := range [][]string{
		{"MIGRATE", host, port, "k", "0", "1000", "COPY", "FOO"},
		{"MIGRATE", host, port, "k", "0", "1000", "AUTH"},
		{"MIGRATE", host, port, "k", "0", "1000", "AUTH2", "u"},
		{"MIGRATE", host, port, "k", "0", "1000", "KEYS", "a"},
		{"MIGRATE", host, port, "k", "x", "y"},
		{"MIGRATE", host, port, "k", "0", "y"},
		{"MIGRATE", host, port, "ratekv-migrate-diff-nokey", "0", "1000"},
		{"MIGRATE", host, port, "", "0", "1000", "KEYS", "ratekv-migrate-diff-nokey"},
	} {
		require.Equal(t, rr.do(args...), r.do(args...), "%q", args)
	}
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	_, deadPort := hostPort(t, closed.Addr().String())
	closed.Close()
	for _, c := range []*rawConn{r, rr} {
		require.Equal(t, "+OK\r\n", c.do("SET", "ratekv-migrate-diff", "v"))
	}
	args := []string{"MIGRATE", "127.0.0.1", deadPort, "ratekv-migrate-diff", "0", "1000"}
	require.Equal(t, rr.do(args...), r.do(args...))
	require.Equal(t, ":1\r\n", rr.do("DEL", "ratekv-migrate-diff"))
	require.Equal(t, svErr(sprintf(errMigrateTarget, errDumpPayload)), r.do("MIGRATE", host, port, "ratekv-migrate-diff", "0", "1000"))
	require.Equal(t, ":0\r\n", rr.do("EXISTS", "ratekv-migrate-diff"))
}

// TestMigrateJournal: the keys MIGRATE moved are deleted in the journal
// (and so on replicas), whether it ran on its own or inside EXEC; COPY
// logs nothing.
func TestMigrateJournal(t *testing.T) {
	j := &lockedJournal{}
	src, dst := newJournaledServer(t, j), newTestServer(t)
	host, port := hostPort(t, dst.addr)
	r := src.raw(t)
	require.Equal(t, "+OK\r\n", r.do("MSET", "a", "1", "b", "2", "c", "3"))
	logged := func() string {
		j.mu.Lock()
		defer j.mu.Unlock()
		var b strings.Builder
		for _, rec := range j.recs {
			b.Write(rec)
		}
		return b.String()
	}
	before := logged()
	require.Equal(t, "+OK\r\n", r.do("MIGRATE", host, port, "c", "0", "1000", "COPY"))
	require.Equal(t, before, logged())
	require.Equal(t, "+OK\r\n", r.do("MIGRATE", host, port, "a", "0", "1000"))
	require.Contains(t, logged()[len(before):], multibulk("DEL", "a"))
	before = logged()
	require.Equal(t, "+OK\r\n", r.do("MULTI"))
	require.Equal(t, "+QUEUED\r\n", r.do("MIGRATE", host, port, "b", "0", "1000", "REPLACE"))
	require.Equal(t, "*1\r\n+OK\r\n", r.do("EXEC"))
	require.Contains(t, logged()[len(before):], multibulk("DEL", "b"))
	require.Equal(t, ":1\r\n", r.do("EXISTS", "c"))
	require.Equal(t, "*3\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n", dst.raw(t).do("MGET", "a", "b", "c"))
}

// TestMigrateConnectionCached: MIGRATEs to one target share a connection
// (and its SELECT), as Redis's cached sockets, also after the target's
// error.
func TestMigrateConnectionCached(t *testing.T) {
	src, dst := newTestServer(t), newTestServer(t)
	host, port := hostPort(t, dst.addr)
	r := src.raw(t)
	require.Equal(t, "+OK\r\n", r.do("MSET", "a", "1", "b", "2", "c", "3"))
	require.Equal(t, "+OK\r\n", r.do("MIGRATE", host, port, "a", "0", "1000"))
	require.Equal(t, "+OK\r\n", r.do("MIGRATE", host, port, "b", "0", "1000"))
	require.Equal(t, int64(1), dst.received.Load())
	require.Equal(t, svErr(sprintf(errMigrateTarget, "ERR DB index is out of range")), r.do("MIGRATE", host, port, "c", "1", "1000"))
	require.Equal(t, "+OK\r\n", r.do("MIGRATE", host, port, "c", "0", "1000", "REPLACE")) // the failed SELECT's RESTORE ran
	require.Equal(t, int64(1), dst.received.Load(), "a target's error keeps the connection")
}
