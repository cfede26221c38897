package command

import (
	"fmt"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/ratekv/ratekv/shards"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// rawStep is one command sent over a raw connection and the exact reply
// bytes expected.
type rawStep struct {
	args []string
	want string
}

// runRawSteps sends each step in order on one connection and compares the
// raw replies byte for byte.
func runRawSteps(t *testing.T, r *rawConn, steps []rawStep) {
	t.Helper()
	for i, s := range steps {
		if have := r.do(s.args...); have != s.want {
			t.Errorf("step %d: %q: have %q, want %q", i, s.args, have, s.want)
		}
	}
}

// a builds an argument list.
func a(args ...string) []string { return args }

// errReply is the raw form of an error text.
func errReply(msg string) string { return "-" + msg + "\r\n" }

// bulk is the raw form of a bulk string.
func bulk(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }

// putOtherKind stores a non-string value of kind k at key, straight into the
// store, so that WRONGTYPE paths can be tested without other command
// families.
func putOtherKind(t testing.TB, ts *testServer, key string, k shards.Kind) {
	t.Helper()
	st := ts.store
	i := st.ShardIndex([]byte(key))
	st.Lock(i)
	defer st.Unlock(i)
	e, _ := st.Put([]byte(key), st.Now()/1e6)
	st.SetObject([]byte(key), e, k, nil)
}

const (
	wrongTypeReply = "-" + errWrongType + "\r\n"
	nullBulk       = "$-1\r\n"
)

func TestDelExistsTouchType(t *testing.T) {
	ts := newTestServer(t)
	putOtherKind(t, ts, "z", shards.KindZSet)
	runRawSteps(t, ts.raw(t), []rawStep{
		0:  {a("SET", "a", "1"), "+OK\r\n"},
		1:  {a("SET", "b", "x"), "+OK\r\n"},
		2:  {a("EXISTS", "a"), ":1\r\n"},
		3:  {a("EXISTS", "a", "a", "b", "nope"), ":3\r\n"},
		4:  {a("TOUCH", "a", "b", "nope", "b"), ":3\r\n"},
		5:  {a("TYPE", "a"), "+string\r\n"},
		6:  {a("TYPE", "z"), "+zset\r\n"},
		7:  {a("TYPE", "nope"), "+none\r\n"},
		8:  {a("EXISTS", "z"), ":1\r\n"},
		9:  {a("DEL", "a", "a", "nope"), ":1\r\n"},
		10: {a("EXISTS", "a"), ":0\r\n"},
		11: {a("UNLINK", "b", "z"), ":2\r\n"},
		12: {a("UNLINK", "b"), ":0\r\n"},
		13: {a("DEL"), errReply("ERR wrong number of arguments for 'del' command")},
		14: {a("EXISTS"), errReply("ERR wrong number of arguments for 'exists' command")},
		15: {a("TYPE", "a", "b"), errReply("ERR wrong number of arguments for 'type' command")},
	})
}

func TestExpireErrors(t *testing.T) {
	ts := newTestServer(t)
	runRawSteps(t, ts.raw(t), []rawStep{
		0:  {a("SET", "k", "v"), "+OK\r\n"},
		1:  {a("EXPIRE", "k", "10", "NX", "XX"), errReply("ERR NX and XX, GT or LT options at the same time are not compatible")},
		2:  {a("EXPIRE", "k", "10", "nx", "gt"), errReply(errExpireNXCompat)},
		3:  {a("PEXPIRE", "k", "10", "LT", "NX"), errReply(errExpireNXCompat)},
		4:  {a("EXPIREAT", "k", "10", "GT", "LT"), errReply("ERR GT and LT options at the same time are not compatible")},
		5:  {a("EXPIRE", "k", "10", "foo"), errReply("ERR Unsupported option foo")},
		6:  {a("EXPIRE", "k", "10", "NX", "bar\r\nx"), errReply("ERR Unsupported option bar  x")},
		7:  {a("EXPIRE", "k", "10", "gt\x00junk", "NX"), errReply(errExpireNXCompat)}, // C string compare
		8:  {a("EXPIRE", "k", "abc", "foo"), errReply("ERR Unsupported option foo")},  // options first
		9:  {a("EXPIRE", "k", "abc"), errReply(errNotInt)},
		10: {a("EXPIRE", "k", "1.5"), errReply(errNotInt)},
		11: {a("EXPIRE", "k", "9223372036854775807"), errReply("ERR invalid expire time in 'expire' command")},
		12: {a("EXPIRE", "k", "9223372036854776"), errReply("ERR invalid expire time in 'expire' command")},
		13: {a("EXPIREAT", "k", "-9223372036854776"), errReply("ERR invalid expire time in 'expireat' command")},
		14: {a("PEXPIRE", "k", "9223372036854775807"), errReply("ERR invalid expire time in 'pexpire' command")},
		15: {a("PEXPIREAT", "k", "-9223372036854775808"), ":1\r\n"}, // valid, in the past: deleted
		16: {a("EXISTS", "k"), ":0\r\n"},
		17: {a("EXPIRE", "nope", "abc"), errReply(errNotInt)}, // arguments before the key
		18: {a("EXPIRE", "nope", "10"), ":0\r\n"},
		19: {a("EXPIRE", "k"), errReply("ERR wrong number of arguments for 'expire' command")},
		20: {a("TTL"), errReply("ERR wrong number of arguments for 'ttl' command")},
	})
}

func TestTTLFamily(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	now := ts.clock.Now() / 1e6
	runRawSteps(t, r, []rawStep{
		0:  {a("TTL", "nope"), ":-2\r\n"},
		1:  {a("PTTL", "nope"), ":-2\r\n"},
		2:  {a("EXPIRETIME", "nope"), ":-2\r\n"},
		3:  {a("PEXPIRETIME", "nope"), ":-2\r\n"},
		4:  {a("SET", "k", "v"), "+OK\r\n"},
		5:  {a("TTL", "k"), ":-1\r\n"},
		6:  {a("PTTL", "k"), ":-1\r\n"},
		7:  {a("EXPIRETIME", "k"), ":-1\r\n"},
		8:  {a("PEXPIRETIME", "k"), ":-1\r\n"},
		9:  {a("PEXPIRE", "k", "10499"), ":1\r\n"},
		10: {a("PTTL", "k"), ":10499\r\n"},
		11: {a("TTL", "k"), ":10\r\n"}, // rounded: 10.499 s
		12: {a("PEXPIRETIME", "k"), ":" + strconv.FormatInt(now+10499, 10) + "\r\n"},
		13: {a("EXPIRETIME", "k"), ":" + strconv.FormatInt((now+10499+500)/1000, 10) + "\r\n"},
		14: {a("PEXPIRE", "k", "10500"), ":1\r\n"},
		15: {a("TTL", "k"), ":11\r\n"}, // rounded up from 10.5 s
		16: {a("PERSIST", "k"), ":1\r\n"},
		17: {a("PERSIST", "k"), ":0\r\n"},
		18: {a("PERSIST", "nope"), ":0\r\n"},
		19: {a("TTL", "k"), ":-1\r\n"},
		20: {a("PEXPIREAT", "k", "9223372036854775807"), ":1\r\n"},
		21: {a("EXPIRETIME", "k"), ":9223372036854776\r\n"}, // no overflow in the rounding
		22: {a("TTL", "k"), ":" + strconv.FormatInt((9223372036854775807-now-500)/1000+1, 10) + "\r\n"},
		23: {a("PERSIST", "k"), ":1\r\n"},
	})

	// The clock moves: the TTL counts down and the key disappears at its
	// deadline, with no sleep.
	runRawSteps(t, r, []rawStep{{a("EXPIRE", "k", "100"), ":1\r\n"}})
	ts.clock.Advance(40 * time.Second)
	runRawSteps(t, r, []rawStep{
		{a("TTL", "k"), ":60\r\n"},
		{a("PTTL", "k"), ":60000\r\n"},
	})
	ts.clock.Advance(60*time.Second - time.Millisecond)
	runRawSteps(t, r, []rawStep{
		{a("PTTL", "k"), ":1\r\n"},
		{a("TTL", "k"), ":0\r\n"},
	})
	ts.clock.Advance(time.Millisecond)
	runRawSteps(t, r, []rawStep{
		{a("TTL", "k"), ":-2\r\n"},
		{a("GET", "k"), nullBulk},
		{a("EXISTS", "k"), ":0\r\n"},
	})
}

// TestExpireFlags checks NX, XX, GT and LT against persistent and volatile
// keys, including Redis's rule that a persistent key has an infinite TTL.
func TestExpireFlags(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	const none = -1 // persistent
	tests := []struct {
		ttl     int64 // initial TTL in seconds, or none
		cmd     []string
		want    string
		wantTTL int64 // TTL afterwards; -2 means deleted
	}{
		0:  {none, a("EXPIRE", "k", "100"), ":1\r\n", 100},
		1:  {none, a("EXPIRE", "k", "100", "NX"), ":1\r\n", 100},
		2:  {50, a("EXPIRE", "k", "100", "NX"), ":0\r\n", 50},
		3:  {none, a("EXPIRE", "k", "100", "XX"), ":0\r\n", none},
		4:  {50, a("EXPIRE", "k", "100", "XX"), ":1\r\n", 100},
		5:  {none, a("EXPIRE", "k", "100", "GT"), ":0\r\n", none}, // infinite is greater
		6:  {50, a("EXPIRE", "k", "100", "GT"), ":1\r\n", 100},
		7:  {50, a("EXPIRE", "k", "50", "GT"), ":0\r\n", 50},
		8:  {50, a("EXPIRE", "k", "20", "GT"), ":0\r\n", 50},
		9:  {none, a("EXPIRE", "k", "100", "LT"), ":1\r\n", 100}, // anything is less than infinite
		10: {50, a("EXPIRE", "k", "100", "LT"), ":0\r\n", 50},
		11: {50, a("EXPIRE", "k", "50", "LT"), ":0\r\n", 50},
		12: {50, a("EXPIRE", "k", "20", "LT"), ":1\r\n", 20},
		13: {50, a("EXPIRE", "k", "20", "XX", "LT"), ":1\r\n", 20},
		14: {none, a("EXPIRE", "k", "20", "XX", "LT"), ":0\r\n", none},
		15: {50, a("EXPIRE", "k", "100", "xx", "gt", "XX"), ":1\r\n", 100},
		16: {none, a("EXPIRE", "k", "0"), ":1\r\n", -2},
		17: {none, a("EXPIRE", "k", "-5"), ":1\r\n", -2},
		18: {50, a("PEXPIRE", "k", "0", "LT"), ":1\r\n", -2},
		19: {50, a("EXPIRE", "k", "-1", "GT"), ":0\r\n", 50},
		20: {none, a("EXPIREAT", "k", "1"), ":1\r\n", -2},
		21: {none, a("PEXPIREAT", "k", strconv.FormatInt(ts.clock.Now()/1e6, 10)), ":1\r\n", -2}, // due now
		22: {none, a("PEXPIREAT", "k", strconv.FormatInt(ts.clock.Now()/1e6+1, 10)), ":1\r\n", 0},
		23: {none, a("EXPIREAT", "k", strconv.FormatInt(ts.clock.Now()/1e9+1000, 10), "NX"), ":1\r\n", 1000},
	}
	for i, tc := range tests {
		runRawSteps(t, r, []rawStep{{a("SET", "k", "v"), "+OK\r\n"}})
		if tc.ttl != none {
			runRawSteps(t, r, []rawStep{{a("EXPIRE", "k", strconv.FormatInt(tc.ttl, 10)), ":1\r\n"}})
		}
		if have := r.do(tc.cmd...); have != tc.want {
			t.Errorf("case %d: %q: have %q, want %q", i, tc.cmd, have, tc.want)
		}
		// TTL rounds to the second, so compare whole seconds (EXPIREAT is
		// at a whole second, up to 1 s away from now).
		reply := r.do("TTL", "k")
		have, err := strconv.ParseInt(reply[1:len(reply)-2], 10, 64)
		require.NoError(t, err)
		if have != tc.wantTTL && !(i == 23 && (have == 999 || have == 1000)) {
			t.Errorf("case %d: %q: TTL afterwards: have %d, want %d", i, tc.cmd, have, tc.wantTTL)
		}
	}
}

func TestKeysCommand(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	runRawSteps(t, r, []rawStep{
		0: {a("KEYS", "*"), "*0\r\n"},
		1: {a("MSET", "one", "1", "two", "2", "three", "3", "h*llo", "x"), "+OK\r\n"},
		2: {a("KEYS", "t[w]?"), "*1\r\n" + bulk("two")},
		3: {a("KEYS", "h\\*llo"), "*1\r\n" + bulk("h*llo")},
		4: {a("KEYS", "nomatch*"), "*0\r\n"},
		5: {a("PEXPIRE", "one", "10"), ":1\r\n"},
	})
	rdb := ts.client(t, 3)
	keys, err := rdb.Keys(ctx, "*").Result()
	require.NoError(t, err)
	sort.Strings(keys)
	require.Equal(t, []string{"h*llo", "one", "three", "two"}, keys)
	keys, err = rdb.Keys(ctx, "t*").Result()
	require.NoError(t, err)
	sort.Strings(keys)
	require.Equal(t, []string{"three", "two"}, keys)

	ts.clock.Advance(10 * time.Millisecond) // "one" expires: KEYS skips it
	keys, err = ts.client(t, 2).Keys(ctx, "*").Result()
	require.NoError(t, err)
	sort.Strings(keys)
	require.Equal(t, []string{"h*llo", "three", "two"}, keys)
}

func TestScanErrors(t *testing.T) {
	ts := newTestServer(t)
	runRawSteps(t, ts.raw(t), []rawStep{
		0:  {a("SCAN", "abc"), errReply("ERR invalid cursor")},
		1:  {a("SCAN", " 1"), errReply(errCursor)},
		2:  {a("SCAN", "1 "), errReply(errCursor)},
		3:  {a("SCAN", "+"), errReply(errCursor)},
		4:  {a("SCAN", "0x10"), errReply(errCursor)},
		5:  {a("SCAN", "18446744073709551616"), errReply(errCursor)},
		6:  {a("SCAN", "abc", "COUNT", "0"), errReply(errCursor)}, // cursor first
		7:  {a("SCAN", "0", "COUNT", "0"), errReply(errSyntax)},
		8:  {a("SCAN", "0", "COUNT", "-1"), errReply(errSyntax)},
		9:  {a("SCAN", "0", "COUNT", "x"), errReply(errNotInt)},
		10: {a("SCAN", "0", "COUNT"), errReply(errSyntax)},
		11: {a("SCAN", "0", "MATCH"), errReply(errSyntax)},
		12: {a("SCAN", "0", "TYPE"), errReply(errSyntax)},
		13: {a("SCAN", "0", "FOO", "bar"), errReply(errSyntax)},
		14: {a("SCAN", "0", "COUNT", "x", "FOO"), errReply(errNotInt)},
		15: {a("SCAN", "0", "FOO", "bar", "COUNT", "x"), errReply(errSyntax)},
		16: {a("SCAN"), errReply("ERR wrong number of arguments for 'scan' command")},
		// Cursors Redis accepts: empty, signed, past the end (a cursor's high
		// 32 bits name a shard; -1 names one past the last).
		17: {a("SCAN", ""), "*2\r\n$1\r\n0\r\n*0\r\n"},
		18: {a("SCAN", "-1"), "*2\r\n$1\r\n0\r\n*0\r\n"},
		19: {a("SCAN", "+16384", "count", "5", "MATCH", "*", "type", "string"), "*2\r\n$1\r\n0\r\n*0\r\n"},
		20: {a("SCAN", "18446744073709551615"), "*2\r\n$1\r\n0\r\n*0\r\n"},
		21: {a("SCAN", "5\x00junk"), "*2\r\n$1\r\n0\r\n*0\r\n"},
	})
}

func TestParseCursor(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		ok   bool
	}{
		0:  {"0", 0, true},
		1:  {"", 0, true},
		2:  {"16383", 16383, true},
		3:  {"007", 7, true},
		4:  {"+7", 7, true},
		5:  {"-1", 1<<64 - 1, true},
		6:  {"-18446744073709551615", 1, true},
		7:  {"18446744073709551615", 1<<64 - 1, true},
		8:  {"18446744073709551616", 0, false},
		9:  {" 1", 0, false},
		10: {"\t1", 0, false},
		11: {"1 ", 0, false},
		12: {"-", 0, false},
		13: {"+-1", 0, false},
		14: {"1x", 0, false},
		15: {"12\x00x", 12, true},
		16: {"\x00", 0, true},
	}
	for i, tc := range tests {
		have, ok := parseCursor([]byte(tc.in))
		if have != tc.want || ok != tc.ok {
			t.Errorf("case %d: parseCursor(%q): have %d, %v, want %d, %v", i, tc.in, have, ok, tc.want, tc.ok)
		}
	}
}

// TestScanIteration walks the keyspace with SCAN over RESP2 and RESP3 and
// checks that every key is returned exactly once, with MATCH, TYPE and
// COUNT honoured.
func TestScanIteration(t *testing.T) {
	ts := newTestServer(t)
	rdb := ts.client(t, 2)
	const n = 1000
	for i := 0; i < n; i++ {
		require.NoError(t, rdb.Set(ctx, fmt.Sprintf("key:%d", i), i, 0).Err())
	}
	putOtherKind(t, ts, "zkey", shards.KindZSet)
	putOtherKind(t, ts, "key:z", shards.KindZSet)

	scanAll := func(t *testing.T, rdb *redis.Client, match string, count int64, typ string) []string {
		var all []string
		var cursor uint64
		for calls := 0; ; calls++ {
			require.Less(t, calls, 20000, "SCAN does not terminate")
			var keys []string
			var err error
			if typ != "" {
				keys, cursor, err = rdb.ScanType(ctx, cursor, match, count, typ).Result()
			} else {
				keys, cursor, err = rdb.Scan(ctx, cursor, match, count).Result()
			}
			require.NoError(t, err)
			all = append(all, keys...)
			if cursor == 0 {
				return all
			}
		}
	}
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			rdb := ts.client(t, proto)
			tests := []struct {
				match string
				count int64
				typ   string
				want  int
			}{
				0: {"", 10, "", n + 2},
				1: {"*", 1, "", n + 2},
				2: {"key:1*", 100, "", 111},
				3: {"", 10000, "zset", 2},
				4: {"key:*", 7, "string", n},
				5: {"key:*", 7, "STRING", n},
				6: {"", 10, "nosuchtype", 0},
				7: {"zk*", 3, "zset", 1},
			}
			for i, tc := range tests {
				keys := scanAll(t, rdb, tc.match, tc.count, tc.typ)
				seen := map[string]bool{}
				for _, k := range keys {
					if seen[k] {
						t.Errorf("case %d: key %q returned twice", i, k)
					}
					seen[k] = true
				}
				if len(seen) != tc.want {
					t.Errorf("case %d: match %q type %q: have %d keys, want %d", i, tc.match, tc.typ, len(seen), tc.want)
				}
			}
		})
	}

	// One call with a small COUNT stops early and returns a cursor that
	// resumes where it stopped.
	keys, cursor, err := rdb.Scan(ctx, 0, "", 5).Result()
	require.NoError(t, err)
	require.NotZero(t, cursor)
	require.GreaterOrEqual(t, len(keys), 5)

	// A cursor naming a shard past the last ends the iteration.
	keys, cursor, err = rdb.Scan(ctx, uint64(ts.store.NumShards())<<32, "", 1000).Result()
	require.NoError(t, err)
	require.Zero(t, cursor)
	require.Empty(t, keys)
}

func TestRandomkey(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	runRawSteps(t, r, []rawStep{
		0: {a("RANDOMKEY"), nullBulk},
		1: {a("SET", "only", "1"), "+OK\r\n"},
		2: {a("RANDOMKEY"), bulk("only")},
		3: {a("PEXPIRE", "only", "5"), ":1\r\n"},
		4: {a("RANDOMKEY", "x"), errReply("ERR wrong number of arguments for 'randomkey' command")},
	})
	ts.clock.Advance(5 * time.Millisecond)
	runRawSteps(t, r, []rawStep{{a("RANDOMKEY"), nullBulk}})
	r3 := ts.raw(t)
	require.Equal(t, "%7\r\n", r3.do("HELLO", "3")[:4])
	runRawSteps(t, r3, []rawStep{{a("RANDOMKEY"), "_\r\n"}})

	rdb := ts.client(t, 2)
	want := map[string]bool{}
	for i := 0; i < 20; i++ {
		k := "k" + strconv.Itoa(i)
		want[k] = true
		require.NoError(t, rdb.Set(ctx, k, "v", 0).Err())
	}
	for i := 0; i < 50; i++ {
		k, err := rdb.RandomKey(ctx).Result()
		require.NoError(t, err)
		require.True(t, want[k], "RANDOMKEY returned %q", k)
	}
}

func TestRename(t *testing.T) {
	ts := newTestServer(t)
	putOtherKind(t, ts, "z", shards.KindZSet)
	r := ts.raw(t)
	runRawSteps(t, r, []rawStep{
		0:  {a("RENAME", "nope", "x"), errReply("ERR no such key")},
		1:  {a("RENAMENX", "nope", "x"), errReply(errNoSuchKey)},
		2:  {a("RENAME", "nope", "nope"), errReply(errNoSuchKey)},
		3:  {a("SET", "a", "1"), "+OK\r\n"},
		4:  {a("RENAME", "a", "a"), "+OK\r\n"},
		5:  {a("RENAMENX", "a", "a"), ":0\r\n"},
		6:  {a("PEXPIRE", "a", "100000"), ":1\r\n"},
		7:  {a("RENAME", "a", "b"), "+OK\r\n"},
		8:  {a("EXISTS", "a"), ":0\r\n"},
		9:  {a("GET", "b"), bulk("1")},
		10: {a("PTTL", "b"), ":100000\r\n"}, // the deadline moves with the key
		11: {a("SET", "c", "3"), "+OK\r\n"},
		12: {a("RENAMENX", "b", "c"), ":0\r\n"},
		13: {a("GET", "b"), bulk("1")},
		14: {a("RENAMENX", "b", "d"), ":1\r\n"},
		15: {a("RENAME", "d", "c"), "+OK\r\n"}, // overwrites, and takes d's deadline
		16: {a("GET", "c"), bulk("1")},
		17: {a("PTTL", "c"), ":100000\r\n"},
		18: {a("RENAME", "z", "{z}2"), "+OK\r\n"}, // any kind, across shards
		19: {a("TYPE", "{z}2"), "+zset\r\n"},
		20: {a("RENAME", "c"), errReply("ERR wrong number of arguments for 'rename' command")},
	})
	ts.clock.Advance(100 * time.Second)
	runRawSteps(t, r, []rawStep{{a("RENAME", "c", "e"), errReply(errNoSuchKey)}})
}

// TestKeysGoRedis drives the keyspace commands through go-redis over both
// protocols.
func TestKeysGoRedis(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			ts := newTestServer(t)
			rdb := ts.client(t, proto)
			require.NoError(t, rdb.Set(ctx, "a", "1", 0).Err())
			require.NoError(t, rdb.Set(ctx, "b", "2", 0).Err())
			require.Equal(t, int64(2), rdb.Exists(ctx, "a", "b", "c").Val())
			require.Equal(t, "string", rdb.Type(ctx, "a").Val())
			require.Equal(t, "none", rdb.Type(ctx, "c").Val())
			require.True(t, rdb.Expire(ctx, "a", time.Minute).Val())
			require.False(t, rdb.ExpireNX(ctx, "a", time.Hour).Val())
			require.True(t, rdb.ExpireGT(ctx, "a", time.Hour).Val())
			require.False(t, rdb.ExpireLT(ctx, "a", 2*time.Hour).Val())
			require.True(t, rdb.ExpireXX(ctx, "a", 30*time.Minute).Val())
			require.Equal(t, 30*time.Minute, rdb.TTL(ctx, "a").Val())
			require.Equal(t, 30*time.Minute, rdb.PTTL(ctx, "a").Val())
			at := time.Unix(0, ts.clock.Now()).Add(30 * time.Minute)
			require.Equal(t, at.Truncate(time.Millisecond).UnixMilli(), rdb.PExpireTime(ctx, "a").Val().Milliseconds())
			require.True(t, rdb.ExpireAt(ctx, "b", time.Unix(4102444800, 0)).Val())
			require.Equal(t, 4102444800*time.Second, rdb.ExpireTime(ctx, "b").Val())
			require.True(t, rdb.Persist(ctx, "a").Val())
			require.Equal(t, time.Duration(-1), rdb.TTL(ctx, "a").Val())
			require.Equal(t, time.Duration(-2), rdb.TTL(ctx, "zz").Val())
			require.Equal(t, "OK", rdb.Rename(ctx, "a", "c").Val())
			require.False(t, rdb.RenameNX(ctx, "c", "b").Val())
			require.Equal(t, int64(2), rdb.Touch(ctx, "b", "c").Val())
			require.Equal(t, int64(2), rdb.Del(ctx, "b", "c", "d").Val())
			require.Equal(t, int64(0), rdb.Unlink(ctx, "b").Val())
			require.ErrorContains(t, rdb.Rename(ctx, "nope", "x").Err(), "ERR no such key")
		})
	}
}

// TestExpireInTransaction: EXEC runs every queued command with one clock
// reading, so an EXPIRE and a TTL in the same transaction agree exactly.
func TestExpireInTransaction(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	runRawSteps(t, r, []rawStep{
		0: {a("SET", "k", "v"), "+OK\r\n"},
		1: {a("MULTI"), "+OK\r\n"},
		2: {a("PEXPIRE", "k", "1234"), "+QUEUED\r\n"},
		3: {a("PTTL", "k"), "+QUEUED\r\n"},
		4: {a("EXPIRE", "k", "10", "NX", "XX"), "+QUEUED\r\n"},
		5: {a("EXEC"), "*3\r\n:1\r\n:1234\r\n" + errReply(errExpireNXCompat)},
	})
}

// TestWrongTypeEverywhere: every command of a family, sent to a key of
// another kind, replies WRONGTYPE and leaves the key as it was.
func TestWrongTypeEverywhere(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	keys := map[string][]string{ // kind: the command that makes key "k" of it
		"string":    {"SET", "k", "v"},
		"zset":      {"ZADD", "k", "1", "m"},
		"hash":      {"HSET", "k", "f", "v"},
		"list":      {"RPUSH", "k", "a", "b"},
		"sllog":     {"SL.THROTTLE", "k", "3", "1000"},
		"swcounter": {"SW.THROTTLE", "k", "3", "1000"},
	}
	families := map[string][][]string{ // kind: commands that read or write it
		"string": {{"GET", "k"}, {"SET", "k", "v", "GET"}, {"GETSET", "k", "v"}, {"GETDEL", "k"}, {"GETEX", "k"}, {"INCR", "k"},
			{"DECRBY", "k", "1"}, {"INCRBYFLOAT", "k", "1"}, {"APPEND", "k", "x"}, {"STRLEN", "k"}, {"GETRANGE", "k", "0", "1"},
			{"SETRANGE", "k", "0", "x"}, {"CL.THROTTLE", "k", "1", "1", "1"}, {"CL.PEEK", "k", "1", "1", "1"}},
		"zset": {{"ZADD", "k", "1", "m"}, {"ZINCRBY", "k", "1", "m"}, {"ZREM", "k", "m"}, {"ZCARD", "k"}, {"ZSCORE", "k", "m"},
			{"ZMSCORE", "k", "m"}, {"ZRANK", "k", "m"}, {"ZRANGE", "k", "0", "-1"}, {"ZRANGEBYSCORE", "k", "0", "1"},
			{"ZCOUNT", "k", "0", "1"}, {"ZREMRANGEBYRANK", "k", "0", "1"}, {"ZPOPMIN", "k"}, {"ZRANDMEMBER", "k"}, {"ZSCAN", "k", "0"}},
		"hash": {{"HSET", "k", "f", "v"}, {"HMSET", "k", "f", "v"}, {"HSETNX", "k", "f", "v"}, {"HGET", "k", "f"}, {"HMGET", "k", "f"},
			{"HGETALL", "k"}, {"HKEYS", "k"}, {"HVALS", "k"}, {"HDEL", "k", "f"}, {"HEXISTS", "k", "f"}, {"HLEN", "k"},
			{"HSTRLEN", "k", "f"}, {"HINCRBY", "k", "f", "1"}, {"HINCRBYFLOAT", "k", "f", "1"}, {"HRANDFIELD", "k"},
			{"HRANDFIELD", "k", "2", "WITHVALUES"}, {"HSCAN", "k", "0"}},
		"list": {{"LPUSH", "k", "x"}, {"RPUSH", "k", "x"}, {"LPUSHX", "k", "x"}, {"RPUSHX", "k", "x"}, {"LPOP", "k"},
			{"RPOP", "k", "2"}, {"LLEN", "k"}, {"LINDEX", "k", "0"}, {"LRANGE", "k", "0", "-1"}, {"LTRIM", "k", "0", "1"},
			{"LSET", "k", "0", "x"}, {"LREM", "k", "0", "x"}, {"LINSERT", "k", "BEFORE", "a", "x"}, {"LPOS", "k", "a"},
			{"LMOVE", "k", "k", "LEFT", "RIGHT"}, {"RPOPLPUSH", "k", "k"}},
		"sllog":     {{"SL.THROTTLE", "k", "3", "1000"}},
		"swcounter": {{"SW.THROTTLE", "k", "3", "1000"}},
	}
	for kind, create := range keys {
		r.do("DEL", "k")
		require.NotEqual(t, byte('-'), r.do(create...)[0], "%s", kind)
		dump := r.do("DUMP", "k")
		for family, cmds := range families {
			if family == kind {
				continue
			}
			for _, c := range cmds {
				require.Equal(t, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", r.do(c...), "%q on a %s", c, kind)
			}
		}
		require.Equal(t, "+"+kind+"\r\n", r.do("TYPE", "k"), kind)
		require.Equal(t, dump, r.do("DUMP", "k"), "%s unchanged", kind)
	}
}
