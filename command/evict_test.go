package command

import (
	"fmt"
	"net"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const (
	oomReply      = "-OOM command not allowed when used memory > 'maxmemory'.\r\n"
	oomExecReply  = "-EXECABORT Transaction discarded because of: OOM command not allowed when used memory > 'maxmemory'.\r\n"
	execAbortPrev = "-EXECABORT Transaction discarded because of previous errors.\r\n"
)

// oomSteps is the noeviction scenario: writes refused with -OOM once used
// memory is over maxmemory (1 byte is below any server's), reads and
// deletes served, MULTI refused at queue time and at EXEC, as Redis 7
// does. conn 1 is a second connection, for CONFIG SET while conn 0 is in
// a transaction.
var oomSteps = []struct {
	conn int
	args []string
	want string
}{
	{0, []string{"SET", "k", "v"}, "+OK\r\n"},
	{0, []string{"SET", "vol", "x", "PX", "100000"}, "+OK\r\n"},
	{0, []string{"MULTI"}, "+OK\r\n"},
	{0, []string{"SET", "q", "1"}, "+QUEUED\r\n"},
	{1, []string{"CONFIG", "SET", "maxmemory", "1"}, "+OK\r\n"},
	{0, []string{"EXEC"}, oomExecReply},
	{0, []string{"EXISTS", "q"}, ":0\r\n"},
	{0, []string{"SET", "k2", "v"}, oomReply},
	{0, []string{"INCR", "n"}, oomReply},
	{0, []string{"SETNX", "n", "1"}, oomReply},
	{0, []string{"GET", "k"}, "$1\r\nv\r\n"},
	{0, []string{"PING"}, "+PONG\r\n"},
	{0, []string{"EXPIRE", "k", "100"}, ":1\r\n"},
	{0, []string{"MULTI"}, "+OK\r\n"},
	{0, []string{"GET", "k"}, oomReply},
	{0, []string{"EXEC"}, execAbortPrev},
	{0, []string{"MULTI"}, "+OK\r\n"},
	{0, []string{"DISCARD"}, "+OK\r\n"},
	{0, []string{"DEL", "k"}, ":1\r\n"},
	{0, []string{"EXISTS", "vol"}, ":1\r\n"},
	{1, []string{"CONFIG", "SET", "maxmemory", "0"}, "+OK\r\n"},
	{0, []string{"MULTI"}, "+OK\r\n"},
	{0, []string{"GET", "vol"}, "+QUEUED\r\n"},
	{1, []string{"CONFIG", "SET", "maxmemory", "1"}, "+OK\r\n"},
	{0, []string{"EXEC"}, "*1\r\n$1\r\nx\r\n"}, // reads only: EXEC runs
	{1, []string{"CONFIG", "SET", "maxmemory", "0"}, "+OK\r\n"},
	{0, []string{"SET", "k2", "v"}, "+OK\r\n"},
}

// runOOMSteps runs oomSteps on two connections to the same server.
func runOOMSteps(t *testing.T, conns [2]*rawConn) {
	t.Helper()
	for i, st := range oomSteps {
		require.Equal(t, st.want, conns[st.conn].do(st.args...), "step %d: %q", i, st.args)
	}
}

func TestOOMNoeviction(t *testing.T) {
	ts := newTestServer(t)
	runOOMSteps(t, [2]*rawConn{ts.raw(t), ts.raw(t)})
	// ratekv's own denyoom commands are refused the same way.
	r := ts.raw(t)
	require.Equal(t, "+OK\r\n", r.do("CONFIG", "SET", "maxmemory", "1"))
	for i, args := range [][]string{
		{"CL.THROTTLE", "rl", "10", "10", "60"},
		{"CL.THROTTLEMS", "rl", "10", "10", "60000"},
		{"SL.THROTTLE", "sl", "10", "1000"},
		{"SW.THROTTLE", "sw", "10", "1000"},
		{"ZADD", "z", "1", "a"},
	} {
		require.Equal(t, oomReply, r.do(args...), "step %d: %q", i, args)
	}
	require.Equal(t, r.do("CL.PEEK", "fresh", "10", "10", "60"), r.do("CL.PEEK", "rl", "10", "10", "60"), "reads go on; nothing was written")
	info := rawInfo(t, r, "memory")
	require.Equal(t, "1", info["maxmemory"])
	require.Equal(t, "1B", info["maxmemory_human"])
	require.Equal(t, "noeviction", info["maxmemory_policy"])
	require.Regexp(t, `^[1-9][0-9]*$`, info["mem_not_counted_for_evict"])
	require.Equal(t, "count=9", rawInfo(t, r, "errorstats")["errorstat_OOM"], "4 in oomSteps, 5 here")
}

// TestOOMNoevictionDiffRedis runs oomSteps on a redis-server of its own
// (maxmemory is server-wide: the shared one of the other differential
// tests must not see it), when differential tests are on.
func TestOOMNoevictionDiffRedis(t *testing.T) {
	addr := privateRedis(t)
	runOOMSteps(t, [2]*rawConn{dialRaw(t, addr), dialRaw(t, addr)})
}

// privateRedis starts a redis-server of the test's own, when differential
// tests are on, and returns its address.
func privateRedis(t *testing.T) string {
	t.Helper()
	redisAddr(t)
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("no redis-server binary to start")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	ln.Close()
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	require.Eventually(t, func() bool {
		nc, err := net.Dial("tcp", addr)
		if err == nil {
			nc.Close()
		}
		return err == nil
	}, 10*time.Second, 20*time.Millisecond, "redis-server on %s", addr)
	return addr
}

// TestDenyOOMFlagsDiffRedis: every command Redis knows has Redis's denyoom
// flag (COMMAND INFO), which decides what -OOM refuses.
func TestDenyOOMFlagsDiffRedis(t *testing.T) {
	real := dialRaw(t, redisAddr(t))
	checked := 0
	for _, cmd := range sortedCommands() {
		reply := real.do("COMMAND", "INFO", cmd.Name)
		if reply == "*1\r\n*-1\r\n" || strings.HasPrefix(reply, "*1\r\n$-1") {
			continue // not a Redis command
		}
		require.Equal(t, strings.Contains(reply, "denyoom"), cmd.Flags&FlagDenyOOM != 0, "%s: %q", cmd.Name, reply)
		checked++
	}
	require.Greater(t, checked, 80)
}

// rawInfo returns the fields of INFO section, asked on r.
func rawInfo(t *testing.T, r *rawConn, section string) map[string]string {
	t.Helper()
	reply := r.do("INFO", section)
	_, text, ok := strings.Cut(reply, "\r\n") // the bulk string's header
	require.True(t, ok, reply)
	return infoFields(t, strings.TrimSuffix(text, "\r\n"))
}

// keysOf returns the keys of a KEYS * reply, sorted.
func keysOf(t *testing.T, reply string) []string {
	t.Helper()
	var out []string
	lines := strings.Split(reply, "\r\n")
	for i := 1; i+1 < len(lines); i += 2 {
		out = append(out, lines[i+1])
	}
	sort.Strings(out)
	return out
}

// TestEvictVolatileKeepsPersistent: over maxmemory, the volatile policies
// evict every key with a deadline and none without, then refuse writes;
// allkeys-random takes the rest. evicted_keys counts them.
func TestEvictVolatileKeepsPersistent(t *testing.T) {
	for _, policy := range []string{"volatile-ttl", "volatile-random"} {
		t.Run(policy, func(t *testing.T) {
			ts := newTestServer(t)
			r := ts.raw(t)
			for i := range 50 {
				require.Equal(t, "+OK\r\n", r.do("SET", fmt.Sprintf("p%d", i), "v"))
				require.Equal(t, "+OK\r\n", r.do("SET", fmt.Sprintf("v%d", i), "v", "EX", fmt.Sprint(100+i)))
			}
			// Tenacity 100: no time limit, so the command waits for every
			// eviction (under the race detector 16 keys can take longer
			// than the default 500 µs, and the background job would go on).
			require.Equal(t, "+OK\r\n", r.do("CONFIG", "SET", "maxmemory-policy", policy, "maxmemory-eviction-tenacity", "100", "maxmemory", "1"))
			require.Equal(t, oomReply, r.do("SET", "new", "v"), "every volatile key evicted, and still over")
			require.Equal(t, ":50\r\n", r.do("DBSIZE"))
			keys := keysOf(t, r.do("KEYS", "*"))
			for i, k := range keys {
				require.True(t, strings.HasPrefix(k, "p"), "key %d: %s", i, k)
			}
			require.Equal(t, "50", rawInfo(t, r, "stats")["evicted_keys"])
			require.Equal(t, "+OK\r\n", r.do("CONFIG", "SET", "maxmemory-policy", "allkeys-random"))
			require.Equal(t, oomReply, r.do("CL.THROTTLE", "rl", "1", "1", "1"))
			require.Equal(t, ":0\r\n", r.do("DBSIZE"))
			require.Equal(t, "100", rawInfo(t, r, "stats")["evicted_keys"])
			require.Equal(t, "+OK\r\n", r.do("CONFIG", "RESETSTAT"))
			require.Equal(t, "0", rawInfo(t, r, "stats")["evicted_keys"])
		})
	}
}

// TestEvictionJournaledAsDel: every eviction is in the journal as a DEL,
// so that replaying it rebuilds the keyspace the server has.
func TestEvictionJournaledAsDel(t *testing.T) {
	clock := &fakeClock{}
	clock.ns.Store(time.Now().UnixNano())
	j := &recordingJournal{}
	s := newSocketless(t, clock, j)
	for i := range 40 {
		require.Equal(t, "+OK\r\n", s.send("SET", fmt.Sprintf("p%d", i), "v"))
		require.Equal(t, "+OK\r\n", s.send("SET", fmt.Sprintf("v%d", i), "v", "PX", "100000"))
	}
	before := len(j.recs)
	require.NoError(t, s.srv.cfg.Set("maxmemory-policy", "volatile-random"))
	require.NoError(t, s.srv.cfg.Set("maxmemory-eviction-tenacity", "100")) // see TestEvictVolatileKeepsPersistent
	require.NoError(t, s.srv.cfg.Set("maxmemory", "1"))
	t.Cleanup(func() { s.srv.cfg.Set("maxmemory", "0") }) // stops the sampler: this engine has no host to close
	require.Equal(t, oomReply, s.send("SET", "new", "v"))
	dels := 0
	for _, rec := range j.recs[before:] {
		args, err := splitRecord(rec)
		require.NoError(t, err)
		require.Equal(t, "DEL", string(args[0]))
		require.True(t, strings.HasPrefix(string(args[1]), "v"), "%q", args[1])
		dels++
	}
	require.Equal(t, 40, dels)
	require.Equal(t, uint64(len(j.recs)), s.c.Journaled.Seq, "the client's batch settles the DELs too")

	fresh := newSocketless(t, clock, nil)
	_, err := fresh.replay(t, j.recs)
	require.NoError(t, err)
	require.Equal(t, keysOf(t, s.send("KEYS", "*")), keysOf(t, fresh.send("KEYS", "*")))
	require.Equal(t, ":40\r\n", fresh.send("DBSIZE"))
}

// TestEvictionTimeLimit is Redis's evictionTimeLimitUs.
func TestEvictionTimeLimit(t *testing.T) {
	for i, tt := range []struct {
		tenacity int64
		want     time.Duration
	}{
		{0, 0}, {1, 50 * time.Microsecond}, {10, 500 * time.Microsecond},
		{11, 575 * time.Microsecond}, {20, 2022 * time.Microsecond},
	} {
		require.Equal(t, tt.want, evictionTimeLimit(tt.tenacity), "step %d", i)
	}
	require.Greater(t, evictionTimeLimit(99), 100*time.Second)
	require.Greater(t, evictionTimeLimit(100), 1000*time.Hour)
}

// objectSteps are OBJECT FREQ and IDLETIME under each family of policy,
// as Redis answers them (the LFU errors' texts, null for a missing key).
var objectSteps = []struct {
	args []string
	want string
}{
	{[]string{"SET", "k", "v"}, "+OK\r\n"},
	{[]string{"OBJECT", "FREQ", "k"}, "-" + errObjectNoLFU + "\r\n"},
	{[]string{"OBJECT", "FREQ", "nosuch"}, "$-1\r\n"},
	{[]string{"CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"}, "+OK\r\n"},
	{[]string{"OBJECT", "IDLETIME", "k"}, "-" + errObjectLFU + "\r\n"},
	{[]string{"OBJECT", "IDLETIME", "nosuch"}, "$-1\r\n"},
	{[]string{"SET", "fresh", "v"}, "+OK\r\n"},
	{[]string{"OBJECT", "FREQ", "fresh"}, ":5\r\n"}, // a new key's counter
	{[]string{"OBJECT", "FREQ", "fresh", "x"}, "-ERR wrong number of arguments for 'object|freq' command\r\n"},
	{[]string{"CONFIG", "SET", "maxmemory-policy", "noeviction"}, "+OK\r\n"},
}

func TestObjectFreqIdletime(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	for i, st := range objectSteps {
		require.Equal(t, st.want, r.do(st.args...), "step %d: %q", i, st.args)
	}
	// Under an LRU policy the idle time follows the store's clock.
	require.Equal(t, "-"+errObjectNoLRU+"\r\n", r.do("OBJECT", "IDLETIME", "k"))
	require.Equal(t, "+OK\r\n", r.do("CONFIG", "SET", "maxmemory-policy", "volatile-lru"))
	require.Equal(t, "$1\r\nv\r\n", r.do("GET", "k"))
	ts.clock.Advance(42 * time.Second)
	require.Equal(t, ":42\r\n", r.do("OBJECT", "IDLETIME", "k"))
	require.Equal(t, ":42\r\n", r.do("OBJECT", "IDLETIME", "k"), "OBJECT is no access")
	// TYPE, EXISTS and the TTL family read without an access (Redis's
	// LOOKUP_NOTOUCH); TOUCH is one.
	for _, args := range [][]string{{"TYPE", "k"}, {"EXISTS", "k"}, {"TTL", "k"}, {"PTTL", "k"}, {"EXPIRETIME", "k"}} {
		r.do(args...)
		require.Equal(t, ":42\r\n", r.do("OBJECT", "IDLETIME", "k"), "after %q", args)
	}
	require.Equal(t, ":1\r\n", r.do("TOUCH", "k"))
	require.Equal(t, ":0\r\n", r.do("OBJECT", "IDLETIME", "k"))
	ts.clock.Advance(5 * time.Second)
	require.Equal(t, "$1\r\nv\r\n", r.do("GET", "k"))
	require.Equal(t, ":0\r\n", r.do("OBJECT", "IDLETIME", "k"))
	// Under LFU with lfu-log-factor 0 every access counts one.
	require.Equal(t, "+OK\r\n", r.do("CONFIG", "SET", "maxmemory-policy", "allkeys-lfu", "lfu-log-factor", "0"))
	require.Equal(t, "+OK\r\n", r.do("SET", "f", "v"))
	for range 7 {
		require.Equal(t, "$1\r\nv\r\n", r.do("GET", "f"))
	}
	require.Equal(t, ":12\r\n", r.do("OBJECT", "FREQ", "f"))
	ts.clock.Advance(3 * time.Minute)
	require.Equal(t, ":9\r\n", r.do("OBJECT", "FREQ", "f"), "lfu-decay-time 1: one less a minute")
	// RESTORE's FREQ and IDLETIME set them, each under its policy.
	dump := r.do("DUMP", "f")
	_, payload, _ := strings.Cut(strings.TrimSuffix(dump, "\r\n"), "\r\n")
	require.Equal(t, "+OK\r\n", r.do("RESTORE", "r1", "0", payload, "FREQ", "77"))
	require.Equal(t, ":77\r\n", r.do("OBJECT", "FREQ", "r1"))
	require.Equal(t, "+OK\r\n", r.do("CONFIG", "SET", "maxmemory-policy", "allkeys-lru"))
	require.Equal(t, "+OK\r\n", r.do("RESTORE", "r2", "0", payload, "IDLETIME", "1000"))
	require.Equal(t, ":1000\r\n", r.do("OBJECT", "IDLETIME", "r2"))
	require.Equal(t, "*2\r\n$1\r\nf\r\n$1\r\nk\r\n", r.do("COMMAND", "GETKEYS", "MGET", "f", "k"))
	require.Equal(t, "*1\r\n$1\r\nf\r\n", r.do("COMMAND", "GETKEYS", "OBJECT", "FREQ", "f"))
}

func TestObjectFreqIdletimeDiffRedis(t *testing.T) {
	r := dialRaw(t, privateRedis(t))
	for i, st := range objectSteps {
		require.Equal(t, st.want, r.do(st.args...), "step %d: %q", i, st.args)
	}
	require.Equal(t, "*1\r\n$1\r\nf\r\n", r.do("COMMAND", "GETKEYS", "OBJECT", "FREQ", "f"))
}

// TestEvictLRUAndLFU: the LRU and LFU policies evict over maxmemory, the
// volatile ones never a persistent key, and each eviction is journaled.
func TestEvictLRUAndLFU(t *testing.T) {
	for _, policy := range []string{"allkeys-lru", "volatile-lru", "allkeys-lfu", "volatile-lfu"} {
		t.Run(policy, func(t *testing.T) {
			ts := newTestServer(t)
			r := ts.raw(t)
			require.Equal(t, "+OK\r\n", r.do("CONFIG", "SET", "maxmemory-policy", policy))
			for i := range 30 {
				require.Equal(t, "+OK\r\n", r.do("SET", fmt.Sprintf("p%d", i), "v"))
				require.Equal(t, "+OK\r\n", r.do("SET", fmt.Sprintf("v%d", i), "v", "EX", "100"))
			}
			require.Equal(t, "+OK\r\n", r.do("CONFIG", "SET", "maxmemory-eviction-tenacity", "100", "maxmemory", "1")) // see TestEvictVolatileKeepsPersistent
			require.Equal(t, oomReply, r.do("SET", "new", "v"))
			want := ":0\r\n"
			if strings.HasPrefix(policy, "volatile-") {
				want = ":30\r\n"
			}
			require.Equal(t, want, r.do("DBSIZE"))
			for _, k := range keysOf(t, r.do("KEYS", "*")) {
				require.True(t, strings.HasPrefix(k, "p"), k)
			}
		})
	}
}

// TestGoMemoryLimit: while maxmemory is set the Go runtime is to keep to
// it plus a margin (at least 4 MiB), never under what is live; without
// it, to its own limit (0).
func TestGoMemoryLimit(t *testing.T) {
	ts := newTestServer(t)
	require.Zero(t, ts.srv.GoMemoryLimit())
	require.NoError(t, ts.cfg.SetRuntime("maxmemory", "64mb"))
	l64 := ts.srv.GoMemoryLimit()
	require.GreaterOrEqual(t, l64, int64(64<<20+4<<20), "from the reading taken at once")
	require.NoError(t, ts.cfg.SetRuntime("maxmemory", "1"))
	require.Eventually(t, func() bool {
		l := ts.srv.GoMemoryLimit()
		return l > 4<<20 && l != l64
	}, 5*time.Second, time.Millisecond, "at the next reading: never under what is live")
	require.NoError(t, ts.cfg.SetRuntime("maxmemory", "0"))
	require.Zero(t, ts.srv.GoMemoryLimit())
}
