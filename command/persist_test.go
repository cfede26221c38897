package command

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/persist"
	"github.com/ratekv/ratekv/shards"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// persistServer is a test server with persistence in dir, wired as main
// wires it.
type persistServer struct {
	*testServer
	mgr  *persist.Manager
	stop func()
}

// startPersistServer opens dir (loading what is there) and serves. Extra
// config comes as name, value pairs; appendfsync defaults to always and
// save rules to none.
func startPersistServer(t *testing.T, dir string, clock *fakeClock, conf ...string) *persistServer {
	t.Helper()
	cfg := config.New()
	for _, kv := range [][2]string{{"port", "0"}, {"bind", "127.0.0.1"}, {"dir", dir}, {"save", ""}, {"appendfsync", "always"}} {
		require.NoError(t, cfg.Set(kv[0], kv[1]))
	}
	for i := 0; i+1 < len(conf); i += 2 {
		require.NoError(t, cfg.Set(conf[i], conf[i+1]))
	}
	store := shards.New(shards.Options{Shards: 8, Now: clock.Now})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := NewEngine(store, cfg, log)
	mgr, err := persist.Open(persist.Options{Config: cfg, Store: store, Replay: srv.Replay, Keys: RecordKeys, Resets: RecordResets, Logger: log})
	require.NoError(t, err)
	if j := mgr.AOF(); j != nil {
		srv.SetJournal(j)
	}
	srv.SetPersistence(mgr)
	ts := serveEngine(t, srv, store, clock, cfg)
	var once sync.Once
	stop := func() {
		once.Do(func() {
			ts.stop()
			require.NoError(t, mgr.Close())
			store.Close()
		})
	}
	t.Cleanup(stop)
	return &persistServer{testServer: ts, mgr: mgr, stop: stop}
}

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Now().UnixNano())
	return c
}

// state lists every key as "key type dump pexpiretime".
func state(t *testing.T, c *redis.Client) []string {
	t.Helper()
	keys, err := c.Keys(ctx, "*").Result()
	require.NoError(t, err)
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		typ := c.Type(ctx, k).Val()
		dump, err := c.Dump(ctx, k).Result()
		require.NoError(t, err)
		at := c.PExpireTime(ctx, k).Val()
		out = append(out, strings.Join([]string{k, typ, strconv.Quote(dump), strconv.FormatInt(int64(at/time.Millisecond), 10)}, " "))
	}
	return out
}

// dumpOf returns the DUMP payload of the value set puts into an entry of a
// scratch store.
func dumpOf(set func(st *shards.Store, key []byte, e *shards.Entry)) []byte {
	st := shards.New(shards.Options{Shards: 1})
	st.Lock(0)
	defer st.Unlock(0)
	key := []byte("k")
	e, _ := st.Put(key, 0)
	set(st, key, e)
	return st.AppendDump(nil, e)
}

// objectPayload returns the DUMP payload of an object value.
func objectPayload(k shards.Kind, obj any) string {
	return string(dumpOf(func(st *shards.Store, key []byte, e *shards.Entry) { st.SetObject(key, e, k, obj) }))
}

// stringPayload returns the DUMP payload of a string value.
func stringPayload(s string) []byte {
	return dumpOf(func(st *shards.Store, key []byte, e *shards.Entry) { st.SetBytes(key, e, []byte(s)) })
}

func TestPersistRestartRestoresEveryWrite(t *testing.T) {
	dir := t.TempDir()
	clock := newFakeClock()
	ps := startPersistServer(t, dir, clock)
	c := ps.client(t, 3)
	nowMs := clock.Now() / 1e6
	z := shards.NewZSet(3, 1)
	z.Add(1, []byte("a"), 0)
	z.Add(2.5, []byte("b"), 0)
	z.Add(-3, []byte("12"), 0)
	sl := &shards.SlidingLog{}
	sl.Add(nowMs*1000, 1)
	sl.Add(nowMs*1000+500, 3)
	sw := &shards.SlidingWindow{Start: nowMs - nowMs%60_000, Cur: 4, Prev: 9}
	for i, cmd := range [][]any{
		{"SET", "s", "hello"},
		{"SET", "n", "10"}, {"INCR", "n"}, {"INCRBY", "n", "5"}, {"DECR", "n"},
		{"SET", "ttl", "v", "PX", "60000"},
		{"SET", "gone", "v"}, {"DEL", "gone"},
		{"SET", "exp", "v", "EX", "100"}, {"PERSIST", "exp"},
		{"SET", "e2", "v"}, {"PEXPIRE", "e2", "30000"}, {"EXPIRE", "e2", "40", "GT"},
		{"MSET", "m1", "a", "m2", "b"}, {"RENAME", "m1", "m3"},
		{"APPEND", "s", " world"}, {"SETRANGE", "s", "0", "J"},
		{"INCRBYFLOAT", "f", "1.5"}, {"GETDEL", "m2"}, {"GETEX", "ttl", "PX", "50000"},
		{"SET", "007", "007"},
		{"CL.THROTTLE", "limit", "10", "5", "60"}, {"CL.THROTTLE", "limit", "10", "5", "60", "3"},
		{"CL.THROTTLEMS", "limitms", "10", "5", "60000"}, {"CL.THROTTLEMS", "limitms", "10", "5", "60000", "3"},
		{"RESTORE", "z", "0", objectPayload(shards.KindZSet, z)},
		{"RESTORE", "sl", "120000", objectPayload(shards.KindSlidingLog, sl)},
		{"RESTORE", "sw", strconv.FormatInt(nowMs+90_000, 10), objectPayload(shards.KindSlidingWindow, sw), "ABSTTL"},
		{"HSET", "h", "tokens", "9", "ts", "1795307408539"}, {"HINCRBY", "h", "tokens", "-1"},
		{"HINCRBYFLOAT", "h", "f", "0.1"}, {"HINCRBYFLOAT", "h", "f", "0.2"}, {"HDEL", "h", "ts"}, {"PEXPIRE", "h", "60000"},
		{"RPUSH", "l", "a", "b", "c", "1795307408539667"}, {"LPUSH", "l", "z"}, {"LTRIM", "l", "0", "3"}, {"LSET", "l", "0", "Z"},
		{"LINSERT", "l", "BEFORE", "b", "a2"}, {"LREM", "l", "1", "a"}, {"LMOVE", "l", "l2", "RIGHT", "LEFT"}, {"RPOP", "l"},
	} {
		require.NoError(t, c.Do(ctx, cmd...).Err(), "step %d: %v", i, cmd)
	}
	tx := c.TxPipeline()
	tx.Set(ctx, "tx", "1", 0)
	tx.Incr(ctx, "tx")
	_, err := tx.Exec(ctx)
	require.NoError(t, err)
	want := state(t, c)
	require.Len(t, want, 17)

	ps.stop()
	ps = startPersistServer(t, dir, clock)
	c = ps.client(t, 3)
	require.Equal(t, want, state(t, c), "after replaying the log")

	// A rewrite, more writes in the new log, and a restart again.
	require.Equal(t, "Background append only file rewriting started", c.BgRewriteAOF(ctx).Val())
	require.Eventually(t, func() bool { return ps.mgr.Stats().Rewrites == 1 }, 5*time.Second, time.Millisecond)
	require.NoError(t, c.Incr(ctx, "n").Err())
	require.NoError(t, c.Do(ctx, "CL.THROTTLE", "limit", "10", "5", "60").Err())
	require.NoError(t, c.Do(ctx, "CL.THROTTLEMS", "limitms", "10", "5", "60000").Err())
	require.NoError(t, c.Del(ctx, "s").Err())
	require.NoError(t, c.HSet(ctx, "h", "x", "1").Err())
	require.NoError(t, c.RPopLPush(ctx, "l", "l2").Err())
	want = state(t, c)
	ps.stop()
	ps = startPersistServer(t, dir, clock)
	require.Equal(t, want, state(t, ps.client(t, 2)), "after loading the base and replaying the new log")
}

func TestPersistFlushallAndExpiryWhileDown(t *testing.T) {
	dir := t.TempDir()
	clock := newFakeClock()
	ps := startPersistServer(t, dir, clock)
	c := ps.client(t, 2)
	require.NoError(t, c.Set(ctx, "before", "1", 0).Err())
	require.NoError(t, c.FlushAll(ctx).Err())
	require.NoError(t, c.Set(ctx, "short", "1", time.Second).Err())
	require.NoError(t, c.Set(ctx, "long", "1", time.Hour).Err())
	require.NoError(t, c.Do(ctx, "CL.THROTTLE", "rl", "0", "1", "2").Err()) // its key expires in ~2 s
	ps.stop()
	clock.Advance(3 * time.Second) // down for 3 s
	ps = startPersistServer(t, dir, clock)
	keys, err := ps.client(t, 2).Keys(ctx, "*").Result()
	require.NoError(t, err)
	require.Equal(t, []string{"long"}, keys)
}

// A deadline extended (EXPIRE) or removed (PERSIST) before it passed holds
// after a restart that comes after the first deadline, whether the first
// one is in the log or in the base of a rewrite (replayed on the real
// clock, the first record would leave the key expired and the second
// would find none). Keys whose deadline did pass stay gone, and INFO
// counts them.
func TestDeadlineChangedBeforeItPassedSurvivesARestart(t *testing.T) {
	for _, rewrite := range []bool{false, true} {
		t.Run(fmt.Sprint("first deadline in the base: ", rewrite), func(t *testing.T) {
			dir := t.TempDir()
			clock := newFakeClock()
			ps := startPersistServer(t, dir, clock)
			c := ps.client(t, 2)
			require.NoError(t, c.Set(ctx, "extended", "v", time.Second).Err())
			require.NoError(t, c.Set(ctx, "persisted", "v", time.Second).Err())
			require.NoError(t, c.Do(ctx, "CL.THROTTLE", "rl", "0", "1", "2").Err())
			require.NoError(t, c.ZAdd(ctx, "log", redis.Z{Score: 1, Member: "a"}).Err())
			require.NoError(t, c.PExpire(ctx, "log", time.Second).Err())
			require.NoError(t, c.Set(ctx, "gone", "v", time.Second).Err())
			if rewrite {
				require.NoError(t, c.BgRewriteAOF(ctx).Err())
				require.Eventually(t, func() bool {
					return c.Info(ctx, "persistence").Val() != "" && !strings.Contains(c.Info(ctx, "persistence").Val(), "aof_rewrite_in_progress:1")
				}, 5*time.Second, time.Millisecond)
			}
			require.NoError(t, c.Expire(ctx, "extended", time.Hour).Err())
			require.NoError(t, c.Persist(ctx, "persisted").Err())
			require.NoError(t, c.Expire(ctx, "rl", time.Hour).Err())
			require.NoError(t, c.ZAdd(ctx, "log", redis.Z{Score: 2, Member: "b"}).Err())
			require.NoError(t, c.Expire(ctx, "log", time.Hour).Err())
			ps.stop()
			clock.Advance(3 * time.Second) // every first deadline has passed
			ps = startPersistServer(t, dir, clock)
			c = ps.client(t, 2)
			keys, err := c.Keys(ctx, "*").Result()
			require.NoError(t, err)
			require.ElementsMatch(t, []string{"extended", "persisted", "rl", "log"}, keys)
			require.Equal(t, int64(4), c.DBSize(ctx).Val(), "the expired key was deleted, not only hidden")
			require.InDelta(t, time.Hour.Seconds(), c.TTL(ctx, "extended").Val().Seconds(), 5)
			require.Equal(t, time.Duration(-1), c.TTL(ctx, "persisted").Val())
			require.Equal(t, []string{"a", "b"}, c.ZRange(ctx, "log", 0, -1).Val())
			require.Contains(t, c.Info(ctx, "persistence").Val(), "rdb_last_load_keys_expired:1\r\n")
		})
	}
}

// A command logged as sent (ZADD, ZREM, ZPOPMIN, ZINCRBY) on a key a
// deadline had ended, lazily or by the active expiry, replays on the same
// state: nothing expires during the replay, so without the DEL logged
// before it, it would find the old key and add to it (or fail on a
// string, and the server refuse to start).
// Each case runs its steps, compares the state before and after a
// restart, and the restart must succeed. A time.Duration step advances
// the clock (a negative one steps it back); "expire" runs the active
// expiry; "rewrite" a BGREWRITEAOF.
func TestReplayAfterADeadlineEnded(t *testing.T) {
	for name, steps := range map[string][][]any{
		"zadd after lazy expiry": {{"ZADD", "z", "1", "a"}, {"PEXPIRE", "z", "100"}, {time.Second},
			{"ZADD", "z", "2", "b"}},
		"zadd after active expiry": {{"ZADD", "z", "1", "a"}, {"PEXPIRE", "z", "100"}, {time.Second}, {"expire"},
			{"ZADD", "z", "2", "b"}},
		"zincrby after expiry": {{"ZADD", "z", "1", "a"}, {"PEXPIRE", "z", "100"}, {time.Second},
			{"ZINCRBY", "z", "5", "a"}},
		"zadd over an expired string": {{"SET", "k", "v", "PX", "100"}, {time.Second},
			{"ZADD", "k", "1", "a"}},
		"zrem on an expired string": {{"SET", "k", "v", "PX", "100"}, {time.Second},
			{"ZREM", "k", "a"}},
		"zpopmin after a recreation": {{"ZADD", "z", "1", "a"}, {"PEXPIRE", "z", "100"}, {time.Second},
			{"ZADD", "z", "5", "b", "6", "c"}, {"EXPIRE", "z", "3600"}, {"ZPOPMIN", "z"}},
		"old set in the base": {{"ZADD", "z", "1", "a"}, {"PEXPIRE", "z", "2000"}, {"rewrite"}, {3 * time.Second},
			{"ZADD", "z", "2", "b"}},
		"recipe in a transaction": {{"ZADD", "z", "1", "a"}, {"PEXPIRE", "z", "100"}, {time.Second}, {"expire"},
			{"MULTI"}, {"ZREMRANGEBYSCORE", "z", "0", "0"}, {"ZADD", "z", "2", "b"}, {"PEXPIRE", "z", "60000"}, {"EXEC"}},
		// The rewrite's capture reads the clock at its deadline; the
		// commands after it read it a millisecond earlier (a command reads
		// it before it locks its shard, and the wall clock's recalibration
		// can move it back): the key is live for them.
		"zadd on a key live behind the capture's clock": {{"ZADD", "z", "1", "a"}, {"PEXPIRE", "z", "1000"}, {time.Second},
			{"rewrite"}, {-time.Millisecond}, {"ZADD", "z", "2", "b"}},
		"expire on a key live behind the capture's clock": {{"SET", "k", "v", "PX", "1000"}, {time.Second},
			{"rewrite"}, {-time.Millisecond}, {"EXPIRE", "k", "3600"}},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			clock := newFakeClock()
			ps := startPersistServer(t, dir, clock)
			c := ps.client(t, 2)
			for _, s := range steps {
				switch s[0] {
				case "expire":
					ps.store.ExpireCycle(clock.Now()/1e6, time.Second)
				case "rewrite":
					require.NoError(t, c.BgRewriteAOF(ctx).Err())
					require.Eventually(t, func() bool { return ps.mgr.Stats().Rewrites == 1 }, 5*time.Second, time.Millisecond)
				default:
					if d, ok := s[0].(time.Duration); ok {
						clock.Advance(d)
						continue
					}
					if err := c.Do(ctx, s...).Err(); err != nil && err != redis.Nil {
						t.Fatalf("%v: %v", s, err)
					}
				}
			}
			want := state(t, c)
			ps.stop()
			ps = startPersistServer(t, dir, clock)
			require.Equal(t, want, state(t, ps.client(t, 2)))
		})
	}
}

func TestDumpRestore(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t, 3)
	require.NoError(t, c.Set(ctx, "s", "bytes\x00\r\n", 0).Err())
	require.NoError(t, c.Set(ctx, "n", "-42", 0).Err())
	nowMs := ts.clock.Now() / 1e6
	z := shards.NewZSet(2, 1)
	z.Add(1, []byte("m"), 0)
	z.Add(2, []byte("n"), 0)
	payloads := map[string]string{
		"z":  objectPayload(shards.KindZSet, z),
		"sl": objectPayload(shards.KindSlidingLog, func() *shards.SlidingLog { l := &shards.SlidingLog{}; l.Add(nowMs*1000, 2); return l }()),
		"sw": objectPayload(shards.KindSlidingWindow, &shards.SlidingWindow{Start: 60_000, Cur: 1}),
	}
	for k, p := range payloads {
		require.Equal(t, "OK", c.Restore(ctx, k, 0, p).Val(), k)
		require.Equal(t, p, c.Dump(ctx, k).Val(), "DUMP of %s gives back the payload", k)
	}
	require.Equal(t, "zset", c.Type(ctx, "z").Val())
	require.Equal(t, "sllog", c.Type(ctx, "sl").Val())
	require.Equal(t, "swcounter", c.Type(ctx, "sw").Val())
	for _, k := range []string{"s", "n"} {
		p := c.Dump(ctx, k).Val()
		v := c.Get(ctx, k).Val()
		require.Equal(t, "OK", c.RestoreReplace(ctx, k+"2", 0, p).Val())
		require.Equal(t, v, c.Get(ctx, k+"2").Val())
	}
	require.NoError(t, c.HSet(ctx, "h", "tokens", "9", "ts", "1795307408539", "name", "bucket").Err())
	p := c.Dump(ctx, "h").Val()
	require.Equal(t, "OK", c.Restore(ctx, "h2", 0, p).Val())
	require.Equal(t, "hash", c.Type(ctx, "h2").Val())
	require.Equal(t, c.HGetAll(ctx, "h").Val(), c.HGetAll(ctx, "h2").Val())
	require.Equal(t, c.HKeys(ctx, "h").Val(), c.HKeys(ctx, "h2").Val(), "in the same order")
	require.NoError(t, c.RPush(ctx, "l", "a", "1795307408539667", "b").Err())
	p = c.Dump(ctx, "l").Val()
	require.Equal(t, "OK", c.Restore(ctx, "l2", 0, p).Val())
	require.Equal(t, "list", c.Type(ctx, "l2").Val())
	require.Equal(t, []string{"a", "1795307408539667", "b"}, c.LRange(ctx, "l2", 0, -1).Val())
	_, err := c.Dump(ctx, "missing").Result()
	require.ErrorIs(t, err, redis.Nil)
	r := ts.raw(t)
	require.Equal(t, "$-1\r\n", r.do("DUMP", "missing"))
}

func TestRestoreTTL(t *testing.T) {
	ts := newTestServer(t)
	c := ts.client(t, 2)
	r := ts.raw(t)
	p := c.Dump(ctx, "x").Val()
	require.NoError(t, c.Set(ctx, "src", "v", 0).Err())
	p = c.Dump(ctx, "src").Val()
	nowMs := ts.clock.Now() / 1e6
	for i, tt := range []struct {
		args     []string
		reply    string
		deadline int64 // PEXPIRETIME after: -2 absent, -1 persistent
	}{
		{[]string{"RESTORE", "a", "0", p}, "+OK\r\n", -1},
		{[]string{"RESTORE", "a", "0", p}, "-" + errBusyKey + "\r\n", -1},
		{[]string{"RESTORE", "a", "5000", p, "REPLACE"}, "+OK\r\n", nowMs + 5000},
		{[]string{"RESTORE", "a", strconv.FormatInt(nowMs+7000, 10), p, "REPLACE", "ABSTTL"}, "+OK\r\n", nowMs + 7000},
		{[]string{"RESTORE", "a", strconv.FormatInt(nowMs-1, 10), p, "ABSTTL", "REPLACE"}, "+OK\r\n", -2}, // past: deleted
		{[]string{"RESTORE", "b", strconv.FormatInt(nowMs-1, 10), p, "ABSTTL"}, "+OK\r\n", -2},            // past: not created
		{[]string{"RESTORE", "c", "1", p, "IDLETIME", "10"}, "+OK\r\n", nowMs + 1},
		{[]string{"RESTORE", "d", "0", p, "FREQ", "255", "ABSTTL"}, "+OK\r\n", -1},
		// A relative TTL that overflows once the clock is added is
		// refused and leaves the key alone (Redis 7.0 wraps it into the
		// past: OK, nothing stored, the old key deleted with REPLACE).
		{[]string{"RESTORE", "e", "5000", p}, "+OK\r\n", nowMs + 5000},
		{[]string{"RESTORE", "e", "9223372036854775807", p, "REPLACE"}, "-ERR invalid expire time in 'restore' command\r\n", nowMs + 5000},
		{[]string{"RESTORE", "e", strconv.FormatInt(math.MaxInt64-nowMs+1, 10), p, "REPLACE"}, "-ERR invalid expire time in 'restore' command\r\n", nowMs + 5000},
		{[]string{"RESTORE", "f", "9223372036854775807", p}, "-ERR invalid expire time in 'restore' command\r\n", -2},
		{[]string{"RESTORE", "f", strconv.FormatInt(math.MaxInt64-nowMs, 10), p}, "+OK\r\n", math.MaxInt64},
		{[]string{"RESTORE", "g", "9223372036854775807", p, "ABSTTL"}, "+OK\r\n", math.MaxInt64},
	} {
		require.Equal(t, tt.reply, r.do(tt.args...), "step %d: %v", i, tt.args[:3])
		require.Equal(t, ":"+strconv.FormatInt(tt.deadline, 10)+"\r\n", r.do("PEXPIRETIME", tt.args[1]), "step %d", i)
	}
	ts.clock.Advance(2 * time.Millisecond)
	require.Equal(t, ":0\r\n", r.do("EXISTS", "c"), "expires on the fake clock")
}

func TestRestoreErrors(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	require.Equal(t, "+OK\r\n", r.do("SET", "k", "v"))
	good := string(stringPayload("v"))
	badCRC := good[:len(good)-1] + string(good[len(good)-1]^1)
	redisPayload := "\x00\x05hello\x0b\x00\x94\x0e\x07\x84\xbe\xd9\x1d\x04"
	for i, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"RESTORE", "k", "0", good}, errBusyKey},
		{[]string{"RESTORE", "k", "-1", "xx"}, errBusyKey}, // BUSYKEY is checked before the TTL
		{[]string{"RESTORE", "n", "-1", good}, errRestoreTTL},
		{[]string{"RESTORE", "n", "abc", good}, errNotInt},
		{[]string{"RESTORE", "n", "0", "xx"}, errDumpPayload},
		{[]string{"RESTORE", "n", "0", badCRC}, errDumpPayload},
		{[]string{"RESTORE", "n", "0", redisPayload}, errDumpPayload},
		{[]string{"RESTORE", "n", "0", good, "BOGUS"}, errSyntax},
		{[]string{"RESTORE", "n", "0", good, "IDLETIME"}, errSyntax},
		{[]string{"RESTORE", "n", "0", good, "IDLETIME", "-1"}, errRestoreIdle},
		{[]string{"RESTORE", "n", "0", good, "IDLETIME", "x"}, errNotInt},
		{[]string{"RESTORE", "n", "0", good, "FREQ", "256"}, errRestoreFreq},
		{[]string{"RESTORE", "n", "0", good, "IDLETIME", "1", "FREQ", "3"}, errSyntax},
		{[]string{"RESTORE", "k", "-1", good, "BOGUS"}, errSyntax}, // options are parsed first
		{[]string{"RESTORE", "n", "0"}, "ERR wrong number of arguments for 'restore' command"},
		{[]string{"DUMP"}, "ERR wrong number of arguments for 'dump' command"},
	} {
		require.Equal(t, "-"+tt.want+"\r\n", r.do(tt.args...), "step %d: %q", i, tt.args)
	}
	require.Equal(t, ":0\r\n", r.do("EXISTS", "n"), "no failed RESTORE created the key")
}

func TestRestoreBadDataFormat(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	nowMs := ts.clock.Now() / 1e6
	slLog := func(ts int64) string {
		l := &shards.SlidingLog{}
		l.Add(ts, 2)
		return objectPayload(shards.KindSlidingLog, l)
	}
	// Payloads whose footer and checksum are right around a body that is
	// not a value ratekv can hold.
	for i, tt := range []struct {
		name    string
		payload string
	}{
		{"zset with a NaN score", string(sealDump([]byte{0x03, 1, 0, 0, 0, 0, 0, 0, 0xf8, 0x7f, 1, 'm'}))},
		// Redis never keeps an empty sorted set and refuses to restore
		// one; stored, it would make ZRANDMEMBER and ZPOPMIN write no
		// reply, or an array header with nothing after it.
		{"zset with no member", string(sealDump([]byte{0x03, 0}))},
		// SL.THROTTLE on these would set the key's deadline to the
		// newest timestamp plus the window, which wraps negative: the
		// key and its log would be gone at once.
		{"sllog timestamp near MaxInt64", slLog(math.MaxInt64 - 10)},
		{"sllog timestamp a window from MaxInt64", slLog(math.MaxInt64 - 1_000_000)},
		{"sllog timestamp at MinInt64", slLog(math.MinInt64)}, // out of range the other way
		// now minus this start wraps to MinInt64: SW.THROTTLE would
		// reply a negative reset_after_ms and the key be gone at once.
		{"swindow start now-2^63", objectPayload(shards.KindSlidingWindow, &shards.SlidingWindow{Start: nowMs + math.MinInt64, Cur: 5, Prev: 5})},
		{"swindow start at MaxInt64", objectPayload(shards.KindSlidingWindow, &shards.SlidingWindow{Start: math.MaxInt64, Cur: 5})},
	} {
		require.Equal(t, "-"+errBadDataFormat+"\r\n", r.do("RESTORE", "k", "0", tt.payload), "step %d (%s)", i, tt.name)
		require.Equal(t, ":0\r\n", r.do("EXISTS", "k"), "step %d (%s)", i, tt.name)
	}
	// A log and a window far in the future but within range still load,
	// and a throttle keeps them until the newest entry leaves the window.
	require.Equal(t, "+OK\r\n", r.do("RESTORE", "sl", "0", slLog((nowMs+1e12)*1000)))
	require.Equal(t, "*5\r\n:1\r\n:2\r\n:0\r\n:1000000001000\r\n:1000000001000\r\n", r.do("SL.THROTTLE", "sl", "2", "1000"))
	require.Equal(t, ":"+strconv.FormatInt(nowMs+1e12+1000, 10)+"\r\n", r.do("PEXPIRETIME", "sl"))
}

// sealDump adds the DUMP footer to a value body, via a round trip through
// a valid payload: the footer layout is the codec's business.
func sealDump(body []byte) []byte {
	p := stringPayload("x")
	footer := p[len(p)-7 : len(p)-4]
	out := append(append([]byte{}, body...), footer...)
	return binary.LittleEndian.AppendUint32(out, crc32.Checksum(out, crc32.MakeTable(crc32.Castagnoli)))
}

func TestPersistenceCommands(t *testing.T) {
	dir := t.TempDir()
	ps := startPersistServer(t, dir, newFakeClock())
	r := ps.raw(t)
	require.Equal(t, "+OK\r\n", r.do("SET", "k", "v"))
	require.Equal(t, "+OK\r\n", r.do("SAVE"))
	_, err := os.Stat(dir + "/dump.rkv")
	require.NoError(t, err)
	require.Zero(t, ps.mgr.Stats().ChangesSinceSave)
	require.Equal(t, "-"+errSyntax+"\r\n", r.do("BGSAVE", "NOW"))
	require.Equal(t, "-"+errSyntax+"\r\n", r.do("BGSAVE", "SCHEDULE", "x"))
	require.Equal(t, "+Background saving started\r\n", r.do("BGSAVE"))
	// savesDone(n): n dumps counted and none running. Saves counts the
	// dump before the save is over, so both are needed, or a following
	// BGREWRITEAOF finds the save running and is only scheduled.
	savesDone := func(n int64) func() bool {
		return func() bool { s := ps.mgr.Stats(); return s.Saves == n && !s.BgsaveInProgress }
	}
	require.Eventually(t, savesDone(2), 5*time.Second, time.Millisecond)
	require.Equal(t, "+Background saving started\r\n", r.do("bgsave", "schedule"))
	require.Eventually(t, savesDone(3), 5*time.Second, time.Millisecond)
	require.Equal(t, "+Background append only file rewriting started\r\n", r.do("BGREWRITEAOF"))
	require.Eventually(t, func() bool { return ps.mgr.Stats().Rewrites == 1 }, 5*time.Second, time.Millisecond)
	require.Equal(t, "-ERR wrong number of arguments for 'bgrewriteaof' command\r\n", r.do("BGREWRITEAOF", "x"))
	require.Equal(t, "-ERR wrong number of arguments for 'save' command\r\n", r.do("SAVE", "x"))
	// SAVE is refused inside a transaction, as in Redis (no_multi): at
	// once, and the transaction aborts.
	require.Equal(t, "+OK\r\n", r.do("MULTI"))
	require.Equal(t, "-"+errNotInMulti+"\r\n", r.do("SAVE"))
	require.Equal(t, "+QUEUED\r\n", r.do("SET", "in-aborted-multi", "v"))
	require.Equal(t, "-"+errExecAbort+"\r\n", r.do("EXEC"))
	require.Equal(t, ":0\r\n", r.do("EXISTS", "in-aborted-multi"))

	// A server without persistence says so.
	plain := newTestServer(t).raw(t)
	for _, cmd := range []string{"SAVE", "BGSAVE", "BGREWRITEAOF"} {
		require.Equal(t, "-"+errNoPersistence+"\r\n", plain.do(cmd), cmd)
	}
}

func TestBgrewriteaofWithAppendonlyNo(t *testing.T) {
	ps := startPersistServer(t, t.TempDir(), newFakeClock(), "appendonly", "no")
	require.Equal(t, "-"+errRewriteFailed+"\r\n", ps.raw(t).do("BGREWRITEAOF"))
}

func TestReplayErrors(t *testing.T) {
	ts := newTestServer(t)
	for i, tt := range []struct {
		records [][]string
		n       int
		want    string
	}{
		{[][]string{{"SET", "a", "1"}, {"NOSUCH", "x"}}, 1, `record 2: unknown command "NOSUCH"`},
		{[][]string{{"GET", "a"}}, 0, "get is not a write command"},
		{[][]string{{"SET", "a"}}, 0, "wrong number of arguments (2) for set"},
		{[][]string{{"SET", "a", "x"}, {"INCR", "a"}}, 1, "record 2: incr replied with an error: " + errNotInt},
		{[][]string{{"SET", "a", "1"}, {"INCR", "a"}, {"DEL", "a"}}, 3, ""},
	} {
		j := 0
		n, err := ts.srv.Replay(func() ([][]byte, error) {
			if j == len(tt.records) {
				return nil, io.EOF
			}
			var args [][]byte
			for _, a := range tt.records[j] {
				args = append(args, []byte(a))
			}
			j++
			return args, nil
		})
		require.Equal(t, tt.n, n, "step %d", i)
		if tt.want == "" {
			require.NoError(t, err, "step %d", i)
		} else {
			require.ErrorContains(t, err, tt.want, "step %d", i)
		}
	}
	sentinel := errors.New("reader failed")
	_, err := ts.srv.Replay(func() ([][]byte, error) { return nil, sentinel })
	require.ErrorIs(t, err, sentinel, "errors of the record source come back as they are")
}

func TestRecordKeys(t *testing.T) {
	for i, tt := range []struct {
		args []string
		idx  []int
		all  bool
	}{
		{[]string{"SET", "k", "v", "PXAT", "1"}, []int{1}, false},
		{[]string{"del", "a", "b", "c"}, []int{1, 2, 3}, false},
		{[]string{"RESTORE", "k", "0", "p", "REPLACE", "ABSTTL"}, []int{1}, false},
		{[]string{"FLUSHALL"}, nil, true},
		{[]string{"NOSUCH", "k"}, nil, true},
		{[]string{"SET", "k"}, nil, true},
	} {
		var args [][]byte
		for _, a := range tt.args {
			args = append(args, []byte(a))
		}
		idx, all := RecordKeys(args, nil)
		require.Equal(t, tt.idx, idx, "step %d", i)
		require.Equal(t, tt.all, all, "step %d", i)
	}
}

func TestRecordResets(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want bool
	}{
		{[]string{"FLUSHALL"}, true},
		{[]string{"flushall", "ASYNC"}, true},
		{[]string{"FlushDB"}, true},
		{[]string{"DEL", "a", "b"}, false},
		{[]string{"SETINT", "k", "0123456789abcdef"}, false},
		{[]string{"NOSUCH"}, false},
		{nil, false},
	} {
		var args [][]byte
		for _, a := range tt.args {
			args = append(args, []byte(a))
		}
		require.Equal(t, tt.want, RecordResets(args), "%q", tt.args)
	}
}

// The same RESTORE mistakes get the same replies from redis-server, byte
// for byte (set RATEKV_REDIS_ADDR, as for TestDiffRedis).
func TestDiffRedisRestoreErrors(t *testing.T) {
	addr := redisAddr(t)
	ts := newTestServer(t)
	real, ours := dialRaw(t, addr), ts.raw(t)
	for _, r := range []*rawConn{real, ours} {
		require.Equal(t, "+OK\r\n", r.do("FLUSHALL"))
		require.Equal(t, "+OK\r\n", r.do("SET", "k", "v"))
	}
	for i, args := range [][]string{
		{"RESTORE", "k", "0", "xx"}, {"RESTORE", "k", "-1", "xx"}, {"RESTORE", "n", "-1", "xx"},
		{"RESTORE", "n", "abc", "xx"}, {"RESTORE", "n", "0", "xx"}, {"RESTORE", "n", "0", "xx", "BOGUS"},
		{"RESTORE", "n", "0", "xx", "IDLETIME"}, {"RESTORE", "n", "0", "xx", "IDLETIME", "-1"},
		{"RESTORE", "n", "0", "xx", "IDLETIME", "x"}, {"RESTORE", "n", "0", "xx", "FREQ", "256"},
		{"RESTORE", "n", "0", "xx", "FREQ", "-1"}, {"RESTORE", "n", "0", "xx", "IDLETIME", "1", "FREQ", "1"},
		{"RESTORE", "n", "0", "xx", "REPLACE", "ABSTTL", "REPLACE"}, {"RESTORE", "n", "0"},
		{"DUMP", "missing"}, {"DUMP"}, {"BGSAVE", "x"}, {"BGSAVE", "SCHEDULE", "x"},
	} {
		require.Equal(t, real.do(args...), ours.do(args...), "step %d: %q", i, args)
	}
}

// FuzzRestoreOptions: the option parser never panics, and accepts exactly
// the option lists it can describe.
func FuzzRestoreOptions(f *testing.F) {
	f.Add("REPLACE ABSTTL")
	f.Add("IDLETIME 10 FREQ 3")
	f.Add("freq 255 absttl idletime")
	f.Add("IDLETIME -1")
	f.Fuzz(func(t *testing.T, s string) {
		var args [][]byte
		for _, w := range strings.Fields(s) {
			args = append(args, []byte(w))
		}
		o, msg := parseRestoreOptions(args)
		if msg != "" {
			require.Contains(t, []string{errSyntax, errNotInt, errRestoreIdle, errRestoreFreq}, msg)
			return
		}
		require.False(t, o.idle >= 0 && o.freq >= 0, "IDLETIME and FREQ together")
		require.True(t, o.freq <= 255)
	})
}
