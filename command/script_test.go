package command

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekv/ratekv/journal"
	"github.com/ratekv/ratekv/resp"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestScriptReplies: replies and errors of scripts, RESP2 and RESP3, on
// a bare server (the differential test checks the same against Redis).
func TestScriptReplies(t *testing.T) {
	ts := newTestServer(t)
	tests := []struct {
		args   []string
		resp2  string
		resp3  string // "" when the same
		prefix bool   // compare only the start
	}{
		{[]string{"EVAL", "return 1", "-1"}, "-ERR Number of keys can't be negative\r\n", "", false},
		{[]string{"EVAL", "return 1", "1"}, "-ERR Number of keys can't be greater than number of args\r\n", "", false},
		{[]string{"EVAL", "return 1", "x"}, "-ERR value is not an integer or out of range\r\n", "", false},
		{[]string{"EVALSHA", "abc", "0"}, "-NOSCRIPT No matching script. Please use EVAL.\r\n", "", false},
		{[]string{"EVAL", "return 1+", "0"}, "-ERR Error compiling script (new function): user_script:1: unexpected symbol near '<eof>'\r\n", "", false},
		{[]string{"EVAL", "error('x')", "0"}, "-ERR user_script:1: x script: 9851144f39f03a0d597a980c5aa79c80cb696891, on @user_script:1.\r\n", "", false},
		{[]string{"EVAL", "return redis.call('nosuch')", "0"}, "-ERR Unknown Redis command called from script script: ", "", true},
		{[]string{"EVAL", "return redis.call('get')", "0"}, "-ERR Wrong number of args calling Redis command from script script: ", "", true},
		{[]string{"EVAL", "return redis.call('multi')", "0"}, "-ERR This Redis command is not allowed from script script: ", "", true},
		{[]string{"EVAL_RO", "return redis.call('set','a','b')", "0"}, "-ERR Write commands are not allowed from read-only scripts. script: ", "", true},
		{[]string{"EVAL", "x = 1", "0"}, "-ERR user_script:1: Attempt to modify a readonly table script: ", "", true},
		{[]string{"EVAL", "return nope", "0"}, "-ERR user_script:1: Script attempted to access nonexistent global variable 'nope' script: ", "", true},
		{[]string{"EVAL", "return 3.99", "0"}, ":3\r\n", "", false},
		{[]string{"EVAL", "return -3.99", "0"}, ":-3\r\n", "", false},
		{[]string{"EVAL", "return 'x'", "0"}, "$1\r\nx\r\n", "", false},
		{[]string{"EVAL", "return true", "0"}, ":1\r\n", "", false},
		{[]string{"EVAL", "return false", "0"}, "$-1\r\n", "_\r\n", false},
		{[]string{"EVAL", "return nil", "0"}, "$-1\r\n", "_\r\n", false},
		{[]string{"EVAL", "return {1,2,nil,3}", "0"}, "*2\r\n:1\r\n:2\r\n", "", false},
		{[]string{"EVAL", "return {ok='fine'}", "0"}, "+fine\r\n", "", false},
		{[]string{"EVAL", "return {err='My Error'}", "0"}, "-My Error\r\n", "", false},
		{[]string{"EVAL", "return redis.error_reply('foo')", "0"}, "-ERR foo\r\n", "", false},
		{[]string{"EVAL", "return {double=1.5}", "0"}, "$3\r\n1.5\r\n", ",1.5\r\n", false},
		{[]string{"EVAL", "return {map={a=1}}", "0"}, "*2\r\n$1\r\na\r\n:1\r\n", "%1\r\n$1\r\na\r\n:1\r\n", false},
		{[]string{"EVAL", "return {set={a=true}}", "0"}, "*1\r\n$1\r\na\r\n", "~1\r\n$1\r\na\r\n", false},
		{[]string{"EVAL", "return {big_number='123'}", "0"}, "$3\r\n123\r\n", "(123\r\n", false},
		{[]string{"EVAL", "redis.setresp(3) return false", "0"}, ":0\r\n", "#f\r\n", false},
		{[]string{"EVAL", "redis.setresp(3) return redis.call('get', 'nokey') == nil", "0"}, ":1\r\n", "#t\r\n", false},
		{[]string{"EVAL", "return redis.call('get', 'nokey')", "0"}, "$-1\r\n", "_\r\n", false},
		{[]string{"EVAL", "return KEYS[2] .. ARGV[1]", "2", "a", "b", "c"}, "$2\r\nbc\r\n", "", false},
		{[]string{"EVAL", "return {tostring(1/3), tostring(0.1), tostring(2^53)}", "0"},
			"*3\r\n$16\r\n0.33333333333333\r\n$3\r\n0.1\r\n$18\r\n9.007199254741e+15\r\n", "", false},
		{[]string{"EVAL", "return redis.call('set', 'n', 0.1) and redis.call('get', 'n')", "0"}, "$19\r\n0.10000000000000001\r\n", "", false},
		{[]string{"EVAL", "local t = {} t[1] = t return t", "0"}, "*1\r\n*1\r\n", "", true},
		{[]string{"EVAL", "return string.rep('x', 2^30)", "0"}, "-ERR user_script:1: resulting string too large script: ", "", true},
		{[]string{"EVAL", "local function f(n) return f(n + 1) + 1 end return f(1)", "0"}, "-ERR ", "", true},
		{[]string{"SCRIPT", "KILL"}, "-NOTBUSY No scripts in execution right now.\r\n", "", false},
		{[]string{"SCRIPT", "FLUSH", "x"}, "-ERR SCRIPT FLUSH only support SYNC|ASYNC option\r\n", "", false},
	}
	for _, proto := range []int{2, 3} {
		r := ts.raw(t)
		if proto == 3 {
			require.True(t, strings.HasPrefix(r.do("HELLO", "3"), "%"))
		}
		for i, tt := range tests {
			want := tt.resp2
			if proto == 3 && tt.resp3 != "" {
				want = tt.resp3
			}
			have := r.do(tt.args...)
			if tt.prefix {
				require.True(t, strings.HasPrefix(have, want), "step %d RESP%d %q:\nhave %q\nwant %q…", i, proto, tt.args, have, want)
			} else {
				require.Equal(t, want, have, "step %d RESP%d %q", i, proto, tt.args)
			}
		}
	}
}

// TestScriptGlobalsDoNotLeak: nothing a script stores, even with rawset,
// is seen by the next script run (interpreters are pooled).
func TestScriptGlobalsDoNotLeak(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	require.Equal(t, ":1\r\n", r.do("EVAL", "rawset(_G, 'leak', 1) rawset(string, 'leak', 2) return leak", "0"))
	for i := 0; i < 3; i++ {
		require.Equal(t, "$-1\r\n", r.do("EVAL", "return rawget(_G, 'leak')", "0"), "step %d", i)
		require.Equal(t, "$-1\r\n", r.do("EVAL", "return string.leak", "0"), "step %d", i)
		require.True(t, strings.HasPrefix(r.do("EVAL", "return leak", "0"), "-ERR user_script:1: Script attempted to access nonexistent global variable 'leak'"))
	}
	// KEYS and ARGV are the run's own.
	require.Equal(t, "*1\r\n$1\r\na\r\n", r.do("EVAL", "return KEYS", "1", "a"))
	require.Equal(t, "*0\r\n", r.do("EVAL", "return KEYS", "0"))
}

// TestScriptGoRedis drives scripting through go-redis, in RESP2 and RESP3:
// Eval, EvalSha, ScriptLoad, ScriptExists, ScriptFlush and redis.Script's
// EVALSHA-then-EVAL fallback.
func TestScriptGoRedis(t *testing.T) {
	ts := newTestServer(t)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprint("RESP", proto), func(t *testing.T) {
			c := ts.client(t, proto)
			require.NoError(t, c.FlushAll(ctx).Err())
			require.NoError(t, c.ScriptFlush(ctx).Err())
			v, err := c.Eval(ctx, "return redis.call('incrby', KEYS[1], ARGV[1])", []string{"n"}, 5).Result()
			require.NoError(t, err)
			require.Equal(t, int64(5), v)
			sha, err := c.ScriptLoad(ctx, "return {KEYS[1], ARGV[1], 7}").Result()
			require.NoError(t, err)
			require.Equal(t, sha1hex([]byte("return {KEYS[1], ARGV[1], 7}")), sha)
			v, err = c.EvalSha(ctx, sha, []string{"k"}, "a").Result()
			require.NoError(t, err)
			require.Equal(t, []any{"k", "a", int64(7)}, v)
			ex, err := c.ScriptExists(ctx, sha, "0000000000000000000000000000000000000000").Result()
			require.NoError(t, err)
			require.Equal(t, []bool{true, false}, ex)
			v, err = c.EvalRO(ctx, "return redis.call('get', KEYS[1])", []string{"n"}).Result()
			require.NoError(t, err)
			require.Equal(t, "5", v)
			_, err = c.EvalRO(ctx, "return redis.call('del', KEYS[1])", []string{"n"}).Result()
			require.ErrorContains(t, err, "Write commands are not allowed from read-only scripts.")
			_, err = c.Eval(ctx, "return redis.call('get', KEYS[1])", []string{"missing"}).Result()
			require.Equal(t, redis.Nil, err)
			require.NoError(t, c.ScriptFlush(ctx).Err())
			ex, err = c.ScriptExists(ctx, sha).Result()
			require.NoError(t, err)
			require.Equal(t, []bool{false}, ex)
			_, err = c.EvalSha(ctx, sha, nil).Result()
			require.ErrorContains(t, err, "NOSCRIPT")
			s := redis.NewScript("return ARGV[1] * 2")
			v, err = s.Run(ctx, c, nil, 21).Result()
			require.NoError(t, err)
			require.Equal(t, int64(42), v)
			v, err = s.Run(ctx, c, nil, 4).Result()
			require.NoError(t, err)
			require.Equal(t, int64(8), v)
		})
	}
}

// TestScriptKill: a script past busy-reply-threshold makes other clients'
// commands fail with BUSY; SCRIPT KILL stops it when it has not written
// (pcall cannot catch the kill), and refuses with UNKILLABLE once it has.
func TestScriptKill(t *testing.T) {
	ts := newTestServer(t)
	other := ts.raw(t)
	require.Equal(t, "+OK\r\n", other.do("SET", "k", "v"))

	start := func(script string) chan string {
		r := ts.raw(t)
		done := make(chan string, 1)
		go func() {
			var b strings.Builder
			b.WriteString(multibulk("EVAL", script, "1", "k"))
			r.nc.Write([]byte(b.String()))
			r.nc.SetDeadline(time.Now().Add(20 * time.Second))
			var out strings.Builder
			if err := readReply(r, &out); err != nil {
				done <- err.Error()
				return
			}
			done <- out.String()
		}()
		// Wait until it runs.
		for ts.srv.scripts.nrun.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		return done
	}

	done := start("local ok = pcall(function() while true do end end) while true do end")
	// Before the threshold other commands wait; past it they get BUSY.
	ts.clock.Advance(6 * time.Second)
	require.Equal(t, "-"+errBusyScript+"\r\n", other.do("GET", "k"))
	require.Equal(t, "-"+errBusyScript+"\r\n", other.do("PING"))
	require.Equal(t, "+OK\r\n", other.do("MULTI"))
	require.Equal(t, "-"+errBusyScript+"\r\n", other.do("GET", "k"))
	require.Equal(t, "-EXECABORT Transaction discarded because of: "+errBusyScript+"\r\n", other.do("EXEC"))
	require.Equal(t, "+OK\r\n", other.do("SCRIPT", "KILL"))
	reply := <-done
	require.True(t, strings.HasPrefix(reply, "-ERR Script killed by user with SCRIPT KILL... script: "), reply)
	require.Equal(t, "$1\r\nv\r\n", other.do("GET", "k"))
	require.Equal(t, "-NOTBUSY No scripts in execution right now.\r\n", other.do("SCRIPT", "KILL"))
	// The interpreter is usable again.
	require.Equal(t, ":1\r\n", other.do("EVAL", "return 1", "0"))

	// A script that wrote cannot be killed; it ends by itself (when the
	// test lets TEST.STOPPED return 1).
	scriptStop.Store(false)
	done = start("redis.call('set', KEYS[1], 'w') local i = 0 while redis.call('test.stopped') == 0 do i = i + 1 end return i > 0")
	ts.clock.Advance(6 * time.Second)
	require.Equal(t, "-"+errUnkillable+"\r\n", other.do("SCRIPT", "KILL"))
	scriptStop.Store(true)
	require.Equal(t, ":1\r\n", <-done)
	require.Equal(t, "$1\r\nw\r\n", other.do("GET", "k"))
}

// scriptStop is what TEST.STOPPED returns: a way for a test to end a
// script that SCRIPT KILL may not stop.
var scriptStop atomic.Bool

func init() {
	register(&Command{Name: "test.stopped", Arity: 1, Flags: FlagReadOnly, Handler: func(c *Client, args [][]byte) {
		if scriptStop.Load() {
			c.WriteInt(1)
		} else {
			c.WriteInt(0)
		}
	}})
}

// readReply reads one raw reply from r.
func readReply(r *rawConn, b *strings.Builder) error {
	line, err := r.rd.ReadString('\n')
	if err != nil {
		return err
	}
	b.WriteString(line)
	switch line[0] {
	case '$':
		n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
		if n >= 0 {
			buf := make([]byte, n+2)
			if _, err := ioReadFull(r, buf); err != nil {
				return err
			}
			b.Write(buf)
		}
	case '*':
		n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
		for i := 0; i < n; i++ {
			if err := readReply(r, b); err != nil {
				return err
			}
		}
	}
	return nil
}

func ioReadFull(r *rawConn, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.rd.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// TestScriptAtomic: scripts that move units between two keys run while
// other clients read both keys and run the same scripts; no reader ever
// sees a total other than the start's (a script is never seen half done).
func TestScriptAtomic(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t, 2)
	require.NoError(t, c.MSet(ctx, "a{x}", 1000, "b{y}", 0).Err())
	move := redis.NewScript(`
local n = tonumber(ARGV[1])
redis.call('decrby', KEYS[1], n)
for i = 1, 50 do local _ = i * i end
redis.call('incrby', KEYS[2], n)
return redis.call('get', KEYS[2])`)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			cl := ts.client(t, 2)
			for i := 0; i < 200; i++ {
				keys := []string{"a{x}", "b{y}"}
				if (i+w)%2 == 1 {
					keys = []string{"b{y}", "a{x}"}
				}
				if err := move.Run(ctx, cl, keys, 1+i%3).Err(); err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := ts.client(t, 2)
			for i := 0; i < 300; i++ {
				vals, err := cl.MGet(ctx, "a{x}", "b{y}").Result()
				if err != nil {
					errs <- err
					return
				}
				a, _ := strconv.Atoi(vals[0].(string))
				b, _ := strconv.Atoi(vals[1].(string))
				if a+b != 1000 {
					errs <- fmt.Errorf("read %d + %d: a script was seen half done", a, b)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestScriptEffectsReplay: a script's writes are journaled as their
// effects, framed as one transaction, and replaying them (at another
// time) gives the live state; the log holds no EVAL.
func TestScriptEffectsReplay(t *testing.T) {
	clock := &fakeClock{}
	clock.ns.Store(time.Now().UnixNano())
	j := &recordingJournal{}
	live := newSocketless(t, clock, j)
	scripts := [][]string{
		{"EVAL", "redis.call('set', KEYS[1], ARGV[1], 'EX', 100) redis.call('incr', KEYS[2]) redis.call('zadd', KEYS[3], 1.5, 'm') return 1", "3", "a", "b", "z", "v"},
		{"EVAL", "local t = redis.call('time') redis.call('set', KEYS[1], t[1]) redis.call('pexpire', KEYS[1], 7200000) return 1", "1", "now"},
		{"EVAL", "redis.call('del', KEYS[1]) redis.call('incrbyfloat', KEYS[2], '0.5') return 1", "2", "a", "f"},
		{"EVAL", "redis.call('incr', KEYS[1]) return redis.call('nosuch')", "1", "b"},
		{"EVAL_RO", "return redis.call('get', KEYS[1])", "1", "b"},
	}
	for _, s := range scripts {
		live.send(s...)
		clock.Advance(time.Second)
	}
	// One MULTI … EXEC per script that wrote more than one record.
	var recs [][]byte
	multis := 0
	for _, app := range j.recs {
		for rest := app; len(rest) > 0; {
			args, n, perr, _ := resp.ParseRequest(rest, nil, resp.Limits{MaxBulk: 1 << 20, Authed: true})
			require.Empty(t, perr)
			require.NotEqual(t, "EVAL", strings.ToUpper(string(args[0])))
			switch r := string(rest[:n]); r {
			case journal.Multi:
				multis++
			case journal.Exec:
			default:
				recs = append(recs, rest[:n])
			}
			rest = rest[n:]
		}
	}
	require.Equal(t, 3, multis)
	clock.Advance(time.Hour) // replay later: effects carry absolute deadlines
	r := newSocketless(t, clock, nil)
	_, err := r.replay(t, recs)
	require.NoError(t, err)
	keys := func(s *socketless) []string {
		var ks []string
		for _, line := range strings.Split(s.do(t, "KEYS", "*"), "\r\n")[1:] {
			if line != "" && line[0] != '$' {
				ks = append(ks, line)
			}
		}
		sort.Strings(ks)
		return ks
	}
	require.Equal(t, []string{"b", "f", "now", "z"}, keys(live))
	require.Equal(t, keys(live), keys(r))
	for _, k := range keys(live) {
		for _, c := range []string{"DUMP", "PEXPIRETIME"} {
			require.Equal(t, live.do(t, c, k), r.do(t, c, k), "%s %s", c, k)
		}
	}
}

// TestScriptInfo: INFO's Memory section counts the cached scripts.
func TestScriptInfo(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t, 2)
	require.NoError(t, c.ScriptLoad(ctx, "return 1").Err())
	require.NoError(t, c.ScriptLoad(ctx, "return 22").Err())
	info, err := c.Info(ctx, "memory").Result()
	require.NoError(t, err)
	require.Contains(t, info, "number_of_cached_scripts:2\r\n")
	require.Contains(t, info, "used_memory_scripts_eval:17\r\n")
	require.Contains(t, info, "used_memory_lua:")
	require.NoError(t, c.ScriptFlush(ctx).Err())
	info, err = c.Info(ctx, "memory").Result()
	require.NoError(t, err)
	require.Contains(t, info, "number_of_cached_scripts:0\r\n")
}

// TestScriptInMulti: EVAL queued in a transaction runs inside EXEC with
// the transaction's locks, and commands refused in scripts stay refused.
func TestScriptInMulti(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	require.Equal(t, "+OK\r\n", r.do("MULTI"))
	require.Equal(t, "+QUEUED\r\n", r.do("SET", "a", "1"))
	require.Equal(t, "+QUEUED\r\n", r.do("EVAL", "return redis.call('incr', KEYS[1])", "1", "a"))
	require.Equal(t, "+QUEUED\r\n", r.do("GET", "a"))
	require.Equal(t, "*3\r\n+OK\r\n:2\r\n$1\r\n2\r\n", r.do("EXEC"))
}

// TestLuaVMSize checks luaVMBytes, INFO's estimate of an interpreter's
// memory, against the heap that building some takes.
func TestLuaVMSize(t *testing.T) {
	const n = 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	vms := make([]*luaVM, n)
	for i := range vms {
		vms[i] = newLuaVM()
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := int64(after.HeapAlloc-before.HeapAlloc) / n
	t.Logf("%d bytes per interpreter", per)
	require.InDelta(t, luaVMBytes, per, luaVMBytes/2)
	runtime.KeepAlive(vms)
}

// lockedJournal is a recordingJournal safe for appends from parallel
// commands (they hold different shards).
type lockedJournal struct {
	mu sync.Mutex
	recordingJournal
}

func (j *lockedJournal) Append(rec []byte) uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.recordingJournal.Append(rec)
}

// keysOnShards returns n keys named prefix<i> that live on n different
// shards, in ascending shard order.
func keysOnShards(t *testing.T, ts *testServer, prefix string, n int) []string {
	t.Helper()
	byShard := map[int]string{}
	for i := 0; len(byShard) < n && i < 10000; i++ {
		k := fmt.Sprintf("%s%d", prefix, i)
		if s := ts.store.ShardIndex([]byte(k)); byShard[s] == "" {
			byShard[s] = k
		}
	}
	var shardsSeen []int
	for s := range byShard {
		shardsSeen = append(shardsSeen, s)
	}
	sort.Ints(shardsSeen)
	var keys []string
	for _, s := range shardsSeen[:n] {
		keys = append(keys, byShard[s])
	}
	return keys
}

// TestScriptUndeclaredLowerShard: a script that holds a high shard and
// touches a key on a lower shard another client holds is undone and run
// again with every shard locked: its first write happened once.
func TestScriptUndeclaredLowerShard(t *testing.T) {
	ts := newTestServer(t)
	keys := keysOnShards(t, ts, "u", 2) // keys[0] on a lower shard than keys[1]
	low := ts.store.ShardIndex([]byte(keys[0]))
	c := ts.client(t, 2)
	ts.store.Lock(low) // another client holds the lower shard
	done := make(chan any, 1)
	go func() {
		v, err := c.Eval(ctx, "redis.call('incr', KEYS[1]) return redis.call('incr', ARGV[1])", []string{keys[1]}, keys[0]).Result()
		if err != nil {
			done <- err
			return
		}
		done <- v
	}()
	for ts.srv.scripts.reruns.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	// The first run's write is undone before the rerun waits for every shard.
	ts.store.Unlock(low)
	require.Equal(t, int64(1), <-done)
	require.Equal(t, "1", c.Get(ctx, keys[1]).Val())
	require.Equal(t, "1", c.Get(ctx, keys[0]).Val())

	// pcall cannot swallow the abort: a script catching the failed
	// redis.call still runs again whole.
	ts.store.Lock(low)
	go func() {
		v, err := c.Eval(ctx, "redis.call('incr', KEYS[1]) local ok = pcall(redis.call, 'incr', ARGV[1]) if not ok then redis.call('set', KEYS[1], 'caught') end return redis.call('get', KEYS[1])", []string{keys[1]}, keys[0]).Result()
		if err != nil {
			done <- err
			return
		}
		done <- v
	}()
	for ts.srv.scripts.reruns.Load() == 1 {
		time.Sleep(time.Millisecond)
	}
	ts.store.Unlock(low)
	require.Equal(t, "2", <-done)
	require.Equal(t, "2", c.Get(ctx, keys[0]).Val())
}

// TestScriptsParallel: scripts moving units between keys on different
// shards, declared or not, in any order, run in parallel with readers
// and plain writers; the total never changes in any reader's snapshot,
// every script's moves happen exactly once, and the journal replays to
// the live state.
func TestScriptsParallel(t *testing.T) {
	j := &lockedJournal{}
	ts := newJournaledServer(t, j)
	keys := keysOnShards(t, ts, "p", 8)
	c := ts.client(t, 2)
	for _, k := range keys {
		require.NoError(t, c.Set(ctx, k, 100, 0).Err())
	}
	const total = 800
	// move: ARGV[1] units from the first key to the second, the keys
	// named in KEYS or ARGV as the variant says.
	move := `
local a, b = KEYS[1] or ARGV[2], KEYS[2] or ARGV[3]
local n = tonumber(ARGV[1])
redis.call('decrby', a, n)
for i = 1, 20 do local _ = i * i end
redis.call('incrby', b, n)
redis.call('incr', 'moves{' .. ARGV[4] .. '}')
if ARGV[5] == 'scan' then return #redis.call('keys', 'p*') end
return 1`
	const workers, rounds = 4, 150
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			cl := ts.client(t, 2)
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for i := 0; i < rounds; i++ {
				a, b := keys[rng.IntN(len(keys))], keys[rng.IntN(len(keys))]
				if a == b {
					continue
				}
				n := fmt.Sprint(1 + rng.IntN(5))
				extra := ""
				if rng.IntN(10) == 0 {
					extra = "scan"
				}
				id := fmt.Sprint(w)
				var err error
				switch rng.IntN(3) {
				case 0: // both declared
					err = cl.Eval(ctx, move, []string{a, b}, n, "", "", id, extra).Err()
				case 1: // the first declared, the second not
					err = cl.Eval(ctx, move, []string{a}, n, "", b, id, extra).Err()
				default: // none declared
					err = cl.Eval(ctx, move, nil, n, a, b, id, extra).Err()
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := ts.client(t, 2)
			for i := 0; i < 200; i++ {
				vals, err := cl.MGet(ctx, keys...).Result()
				if err != nil {
					errs <- err
					return
				}
				sum := 0
				for _, v := range vals {
					n, _ := strconv.Atoi(v.(string))
					sum += n
				}
				if sum != total {
					errs <- fmt.Errorf("read a total of %d: a script was seen half done", sum)
					return
				}
				// A plain write between the scripts.
				if err := cl.Incr(ctx, "plain{"+keys[i%len(keys)]+"}").Err(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d of the scripts ran again with every shard locked", ts.srv.scripts.reruns.Load())
	vals, err := c.MGet(ctx, keys...).Result()
	require.NoError(t, err)
	sum := 0
	for _, v := range vals {
		n, _ := strconv.Atoi(v.(string))
		sum += n
	}
	require.Equal(t, total, sum)

	// The journal replays to the live state.
	j.mu.Lock()
	var recs [][]byte
	for _, app := range j.recs {
		for rest := app; len(rest) > 0; {
			_, n, perr, _ := resp.ParseRequest(rest, nil, resp.Limits{MaxBulk: 1 << 20, Authed: true})
			require.Empty(t, perr)
			if r := string(rest[:n]); r != journal.Multi && r != journal.Exec {
				recs = append(recs, rest[:n])
			}
			rest = rest[n:]
		}
	}
	j.mu.Unlock()
	r := newSocketless(t, ts.clock, nil)
	_, err = r.replay(t, recs)
	require.NoError(t, err)
	live := ts.raw(t)
	all := append([]string{"moves{0}", "moves{1}", "moves{2}", "moves{3}"}, keys...)
	for _, k := range keys {
		all = append(all, "plain{"+k+"}")
	}
	for _, k := range all {
		require.Equal(t, live.do("DUMP", k), r.do(t, "DUMP", k), k)
	}
}

// TestScriptFlushallRunsAgainWholeKeyspace: FLUSHALL in a script that
// holds only its keys' shards runs the script again with every shard
// locked (its image would be the keyspace): the first run's write is
// undone, and the outcome is the script's, once.
func TestScriptFlushallRunsAgainWholeKeyspace(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t, 2)
	require.NoError(t, c.Set(ctx, "other", "x", 0).Err())
	before := ts.srv.scripts.reruns.Load()
	v, err := c.Eval(ctx, "redis.call('incr', KEYS[1]) redis.call('flushall') return redis.call('incr', KEYS[1])", []string{"n"}).Result()
	require.NoError(t, err)
	require.Equal(t, int64(1), v)
	require.Equal(t, before+1, ts.srv.scripts.reruns.Load())
	require.Equal(t, int64(1), c.DBSize(ctx).Val())
	// A whole-keyspace read takes every shard without running again when
	// it can.
	v, err = c.Eval(ctx, "return #redis.call('keys', '*')", []string{"n"}).Result()
	require.NoError(t, err)
	require.Equal(t, int64(1), v)
	require.Equal(t, before+1, ts.srv.scripts.reruns.Load())
}

// brokenJournal is a journal whose disk has failed: writes are refused
// with MISCONF.
type brokenJournal struct{ recordingJournal }

func (j *brokenJournal) Err() error { return errors.New("No space left on device") }

// TestScriptDiskFailure: while the disk fails, a script's write command
// fails with MISCONF (the script's other work stands), a script declared
// with write flags is refused before it runs, with Redis's texts, and
// read-only scripts run.
func TestScriptDiskFailure(t *testing.T) {
	ts := newJournaledServer(t, &brokenJournal{})
	r := ts.raw(t)
	sha := sha1hex([]byte("return redis.call('set', KEYS[1], 'v')"))
	require.Equal(t, "-MISCONF Errors writing to the AOF file: No space left on device script: "+sha+", on @user_script:1.\r\n",
		r.do("EVAL", "return redis.call('set', KEYS[1], 'v')", "1", "k"))
	require.Equal(t, "-"+errScriptAOFDisk+"No space left on device\r\n", r.do("EVAL", "#!lua\nreturn 1", "0"))
	require.Equal(t, ":1\r\n", r.do("EVAL", "#!lua flags=no-writes\nreturn 1", "0"))
	require.Equal(t, "$-1\r\n", r.do("EVAL", "return redis.call('get', KEYS[1])", "1", "k"))
	require.Equal(t, "*2\r\n$4\r\nMISC\r\n$4\r\nMISC\r\n", r.do("EVAL", "local e = redis.pcall('incr', KEYS[1]) return {string.sub(e.err, 1, 4), string.sub(redis.pcall('del', KEYS[1])['err'], 1, 4)}", "1", "k"))
}
