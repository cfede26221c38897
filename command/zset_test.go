package command

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekv/ratekv/internal/redisnum"
	"github.com/ratekv/ratekv/shards"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// zsetScript is a command sequence with the replies a real redis-server
// gave to it, byte for byte, in RESP2 and (where they differ) RESP3. It
// covers every error text of the sorted-set commands, option parsing and
// conflicts, range bounds, emptied sets disappearing and WRONGTYPE. The
// replies were recorded from Redis 7.0 and hold nothing where 7.0 and 7.2
// differ (score formatting beyond 2^52, ZRANK WITHSCORE).
var zsetScript = []scriptStep{
	0:   {[]string{"del", "k"}, ":0\r\n", ""},
	1:   {[]string{"zadd", "k", "nx", "xx", "1", "a"}, "-ERR XX and NX options at the same time are not compatible\r\n", ""},
	2:   {[]string{"zadd", "k", "gt", "lt", "1", "a"}, "-ERR GT, LT, and/or NX options at the same time are not compatible\r\n", ""},
	3:   {[]string{"zadd", "k", "nx", "gt", "1", "a"}, "-ERR GT, LT, and/or NX options at the same time are not compatible\r\n", ""},
	4:   {[]string{"zadd", "k", "incr", "1", "a", "2", "b"}, "-ERR INCR option supports a single increment-element pair\r\n", ""},
	5:   {[]string{"zadd", "k", "1"}, "-ERR wrong number of arguments for 'zadd' command\r\n", ""},
	6:   {[]string{"zadd", "k", "abc", "a"}, "-ERR value is not a valid float\r\n", ""},
	7:   {[]string{"zadd", "k", "nan", "a"}, "-ERR value is not a valid float\r\n", ""},
	8:   {[]string{"zadd", "k", "1", "a", "2"}, "-ERR syntax error\r\n", ""},
	9:   {[]string{"zadd", "k", "ch"}, "-ERR wrong number of arguments for 'zadd' command\r\n", ""},
	10:  {[]string{"zadd", "k", "inf", "a"}, ":1\r\n", ""},
	11:  {[]string{"zadd", "k", "incr", "-inf", "a"}, "-ERR resulting score is not a number (NaN)\r\n", ""},
	12:  {[]string{"zincrby", "k", "nan", "a"}, "-ERR value is not a valid float\r\n", ""},
	13:  {[]string{"zincrby", "k", "abc", "a"}, "-ERR value is not a valid float\r\n", ""},
	14:  {[]string{"zincrby", "k", "nx", "a"}, "-ERR syntax error\r\n", ""},
	15:  {[]string{"zcount", "k", "a", "b"}, "-ERR min or max is not a float\r\n", ""},
	16:  {[]string{"zcount", "k", "(", "("}, ":0\r\n", ""},
	17:  {[]string{"zcount", "k", "", "1", "2"}, "-ERR wrong number of arguments for 'zcount' command\r\n", ""},
	18:  {[]string{"zcount", "k", "1", "", "2"}, "-ERR wrong number of arguments for 'zcount' command\r\n", ""},
	19:  {[]string{"zcount", "k", "0x10", "100"}, ":0\r\n", ""},
	20:  {[]string{"zcount", "k", "1e400", "inf"}, ":1\r\n", ""},
	21:  {[]string{"zrangebylex", "k", "a", "b"}, "-ERR min or max not valid string range item\r\n", ""},
	22:  {[]string{"zrangebylex", "k", "-", "+x"}, "-ERR min or max not valid string range item\r\n", ""},
	23:  {[]string{"zrange", "k", "0", "-1", "limit", "0", "1"}, "-ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX\r\n", ""},
	24:  {[]string{"zrange", "k", "0", "-1", "limit", "0", "-1"}, "*1\r\n$1\r\na\r\n", ""},
	25:  {[]string{"zrange", "k", "0", "-1", "bylex", "withscores"}, "-ERR syntax error, WITHSCORES not supported in combination with BYLEX\r\n", ""},
	26:  {[]string{"zrange", "k", "a", "b"}, "-ERR value is not an integer or out of range\r\n", ""},
	27:  {[]string{"zrange", "k", "0", "1", "limit", "0"}, "-ERR syntax error\r\n", ""},
	28:  {[]string{"zrange", "k", "0", "1", "limit", "x", "1", "foo"}, "-ERR value is not an integer or out of range\r\n", ""},
	29:  {[]string{"zrevrange", "k", "0", "1", "rev"}, "-ERR syntax error\r\n", ""},
	30:  {[]string{"zrangebyscore", "k", "0", "1", "byscore"}, "-ERR syntax error\r\n", ""},
	31:  {[]string{"zrandmember", "k", "-9223372036854775808"}, "-ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807\r\n", ""},
	32:  {[]string{"zrandmember", "k", "9223372036854775807", "withscores"}, "-ERR value is out of range\r\n", ""},
	33:  {[]string{"zrandmember", "k", "1", "withscore"}, "-ERR syntax error\r\n", ""},
	34:  {[]string{"zrandmember", "k", "1", "withscores", "x"}, "-ERR syntax error\r\n", ""},
	35:  {[]string{"zrandmember", "k", "abc"}, "-ERR value is not an integer or out of range\r\n", ""},
	36:  {[]string{"zpopmin", "k", "-1"}, "-ERR value is out of range, must be positive\r\n", ""},
	37:  {[]string{"zpopmin", "k", "0"}, "*0\r\n", ""},
	38:  {[]string{"zpopmin", "k", "1", "2"}, "-ERR syntax error\r\n", ""},
	39:  {[]string{"zpopmin", "nokey", "-1"}, "-ERR value is out of range, must be positive\r\n", ""},
	40:  {[]string{"zpopmin", "k", "abc"}, "-ERR value is out of range, must be positive\r\n", ""},
	41:  {[]string{"zscan", "k", "abc"}, "-ERR invalid cursor\r\n", ""},
	42:  {[]string{"zscan", "k", "0", "count", "0"}, "-ERR syntax error\r\n", ""},
	43:  {[]string{"zscan", "nokey", "0", "count", "0"}, "*2\r\n$1\r\n0\r\n*0\r\n", ""},
	44:  {[]string{"zscan", "k", "0", "foo"}, "-ERR syntax error\r\n", ""},
	45:  {[]string{"zscan", "k", "0", "count"}, "-ERR syntax error\r\n", ""},
	46:  {[]string{"zscan", "k", "18446744073709551615"}, "*2\r\n$1\r\n0\r\n*2\r\n$1\r\na\r\n$3\r\ninf\r\n", ""},
	47:  {[]string{"zscan", "k", "18446744073709551616"}, "-ERR invalid cursor\r\n", ""},
	48:  {[]string{"zremrangebyrank", "k", "a", "1"}, "-ERR value is not an integer or out of range\r\n", ""},
	49:  {[]string{"zremrangebyscore", "k", "a", "1"}, "-ERR min or max is not a float\r\n", ""},
	50:  {[]string{"zremrangebylex", "k", "a", "1"}, "-ERR min or max not valid string range item\r\n", ""},
	51:  {[]string{"set", "s", "v"}, "+OK\r\n", ""},
	52:  {[]string{"zadd", "s", "1", "a"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	53:  {[]string{"zcard", "s"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	54:  {[]string{"zscore", "s", "a"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	55:  {[]string{"zrange", "s", "0", "-1"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	56:  {[]string{"zrangebyscore", "s", "0", "1"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	57:  {[]string{"zrandmember", "s"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	58:  {[]string{"zscan", "s", "0"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	59:  {[]string{"zpopmin", "s"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	60:  {[]string{"zrem", "s", "a"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	61:  {[]string{"zcount", "s", "0", "1"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	62:  {[]string{"zcount", "s", "x", "1"}, "-ERR min or max is not a float\r\n", ""},
	63:  {[]string{"zlexcount", "s", "-", "+"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	64:  {[]string{"zmscore", "s", "a"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	65:  {[]string{"zincrby", "s", "1", "a"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ""},
	66:  {[]string{"zadd", "k", "xx", "1", "nope"}, ":0\r\n", ""},
	67:  {[]string{"zadd", "k", "nx", "5", "a"}, ":0\r\n", ""},
	68:  {[]string{"zadd", "k", "gt", "0", "a"}, ":0\r\n", ""},
	69:  {[]string{"zadd", "k", "lt", "0", "a"}, ":0\r\n", ""},
	70:  {[]string{"zadd", "k", "gt", "ch", "10", "a"}, ":1\r\n", ""},
	71:  {[]string{"zadd", "k", "ch", "10", "a", "1", "z", "2", "y"}, ":2\r\n", ""},
	72:  {[]string{"zadd", "k", "incr", "5", "a"}, "$2\r\n15\r\n", ",15\r\n"},
	73:  {[]string{"zadd", "k", "nx", "incr", "5", "a"}, "$-1\r\n", "_\r\n"},
	74:  {[]string{"zadd", "k", "xx", "incr", "5", "nope"}, "$-1\r\n", "_\r\n"},
	75:  {[]string{"zrange", "k", "0", "-1", "withscores"}, "*6\r\n$1\r\nz\r\n$1\r\n1\r\n$1\r\ny\r\n$1\r\n2\r\n$1\r\na\r\n$2\r\n15\r\n", "*3\r\n*2\r\n$1\r\nz\r\n,1\r\n*2\r\n$1\r\ny\r\n,2\r\n*2\r\n$1\r\na\r\n,15\r\n"},
	76:  {[]string{"zrange", "k", "(1", "+inf", "byscore", "withscores"}, "*4\r\n$1\r\ny\r\n$1\r\n2\r\n$1\r\na\r\n$2\r\n15\r\n", "*2\r\n*2\r\n$1\r\ny\r\n,2\r\n*2\r\n$1\r\na\r\n,15\r\n"},
	77:  {[]string{"zrange", "k", "+inf", "(1", "byscore", "rev", "withscores", "limit", "1", "1"}, "*2\r\n$1\r\ny\r\n$1\r\n2\r\n", "*1\r\n*2\r\n$1\r\ny\r\n,2\r\n"},
	78:  {[]string{"zrangebyscore", "k", "-inf", "+inf", "limit", "0", "-5"}, "*3\r\n$1\r\nz\r\n$1\r\ny\r\n$1\r\na\r\n", ""},
	79:  {[]string{"zrevrangebyscore", "k", "+inf", "-inf", "withscores", "limit", "1", "-1"}, "*4\r\n$1\r\ny\r\n$1\r\n2\r\n$1\r\nz\r\n$1\r\n1\r\n", "*2\r\n*2\r\n$1\r\ny\r\n,2\r\n*2\r\n$1\r\nz\r\n,1\r\n"},
	80:  {[]string{"zrangebyscore", "k", "(1", "(2"}, "*0\r\n", ""},
	81:  {[]string{"zrangebyscore", "k", "2", "1"}, "*0\r\n", ""},
	82:  {[]string{"zcount", "k", "-inf", "+inf"}, ":3\r\n", ""},
	83:  {[]string{"zcount", "k", "(10", "10"}, ":0\r\n", ""},
	84:  {[]string{"zrank", "k", "a"}, ":2\r\n", ""},
	85:  {[]string{"zrevrank", "k", "a"}, ":0\r\n", ""},
	86:  {[]string{"zrank", "k", "nope"}, "$-1\r\n", "_\r\n"},
	87:  {[]string{"zrevrange", "k", "0", "0", "withscores"}, "*2\r\n$1\r\na\r\n$2\r\n15\r\n", "*1\r\n*2\r\n$1\r\na\r\n,15\r\n"},
	88:  {[]string{"zrange", "k", "-100", "100"}, "*3\r\n$1\r\nz\r\n$1\r\ny\r\n$1\r\na\r\n", ""},
	89:  {[]string{"zrange", "k", "5", "1"}, "*0\r\n", ""},
	90:  {[]string{"zrange", "k", "-1", "-2"}, "*0\r\n", ""},
	91:  {[]string{"zremrangebyrank", "k", "0", "0"}, ":1\r\n", ""},
	92:  {[]string{"zrange", "k", "0", "-1"}, "*2\r\n$1\r\ny\r\n$1\r\na\r\n", ""},
	93:  {[]string{"zpopmax", "k", "2"}, "*4\r\n$1\r\na\r\n$2\r\n15\r\n$1\r\ny\r\n$1\r\n2\r\n", "*2\r\n*2\r\n$1\r\na\r\n,15\r\n*2\r\n$1\r\ny\r\n,2\r\n"},
	94:  {[]string{"zpopmin", "k", "10"}, "*0\r\n", ""},
	95:  {[]string{"exists", "k"}, ":0\r\n", ""},
	96:  {[]string{"zadd", "lk", "0", "a", "0", "b", "0", "c", "0", "d", "0", "e"}, ":5\r\n", ""},
	97:  {[]string{"zrangebylex", "lk", "-", "+"}, "*5\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n$1\r\ne\r\n", ""},
	98:  {[]string{"zrangebylex", "lk", "[b", "(d"}, "*2\r\n$1\r\nb\r\n$1\r\nc\r\n", ""},
	99:  {[]string{"zrevrangebylex", "lk", "(d", "[b"}, "*2\r\n$1\r\nc\r\n$1\r\nb\r\n", ""},
	100: {[]string{"zrangebylex", "lk", "-", "+", "limit", "1", "2"}, "*2\r\n$1\r\nb\r\n$1\r\nc\r\n", ""},
	101: {[]string{"zrevrangebylex", "lk", "+", "-", "limit", "1", "2"}, "*2\r\n$1\r\nd\r\n$1\r\nc\r\n", ""},
	102: {[]string{"zlexcount", "lk", "[b", "+"}, ":4\r\n", ""},
	103: {[]string{"zlexcount", "lk", "+", "-"}, ":0\r\n", ""},
	104: {[]string{"zlexcount", "lk", "[c", "[c"}, ":1\r\n", ""},
	105: {[]string{"zlexcount", "lk", "(c", "[c"}, ":0\r\n", ""},
	106: {[]string{"zrange", "lk", "[e", "[a", "bylex", "rev"}, "*5\r\n$1\r\ne\r\n$1\r\nd\r\n$1\r\nc\r\n$1\r\nb\r\n$1\r\na\r\n", ""},
	107: {[]string{"zremrangebylex", "lk", "(a", "(e"}, ":3\r\n", ""},
	108: {[]string{"zrange", "lk", "0", "-1"}, "*2\r\n$1\r\na\r\n$1\r\ne\r\n", ""},
	109: {[]string{"zremrangebylex", "lk", "-", "+"}, ":2\r\n", ""},
	110: {[]string{"exists", "lk"}, ":0\r\n", ""},
}

// TestZsetScript runs zsetScript in both encodings (the compact one, and
// the tree with zset-max-listpack-entries 0) and both protocols.
func TestZsetScript(t *testing.T) {
	for _, enc := range []string{"128", "0"} {
		for _, proto := range []int{2, 3} {
			t.Run(fmt.Sprintf("entries=%s/RESP%d", enc, proto), func(t *testing.T) {
				runScript(t, zsetScript, proto, []string{"zset-max-listpack-entries", enc}, func(st scriptStep, have, want string) (string, string, bool) {
					// A dict's cursor: which members come depends on hashes.
					return have, want, enc == "0" && st.args[0] == "zscan" && st.args[2] != "0"
				})
			})
		}
	}
}

// TestZrankWithScore covers Redis 7.2's ZRANK/ZREVRANK ... WITHSCORE.
func TestZrankWithScore(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	r.do("ZADD", "k", "1795307408539667", "a", "2.5", "b")
	tests := []struct {
		args []string
		want string
	}{
		0: {[]string{"ZRANK", "k", "a", "WITHSCORE"}, "*2\r\n:1\r\n$16\r\n1795307408539667\r\n"},
		1: {[]string{"ZREVRANK", "k", "a", "withscore"}, "*2\r\n:0\r\n$16\r\n1795307408539667\r\n"},
		2: {[]string{"ZRANK", "k", "b", "WITHSCORE"}, "*2\r\n:0\r\n$3\r\n2.5\r\n"},
		3: {[]string{"ZRANK", "k", "x", "WITHSCORE"}, "*-1\r\n"},
		4: {[]string{"ZRANK", "nokey", "x", "WITHSCORE"}, "*-1\r\n"},
		5: {[]string{"ZRANK", "nokey", "x"}, "$-1\r\n"},
		6: {[]string{"ZRANK", "k", "a", "WITHSCORES"}, "-ERR syntax error\r\n"},
		7: {[]string{"ZRANK", "k", "a", "WITHSCORE", "x"}, "-ERR wrong number of arguments for 'zrank' command\r\n"},
		8: {[]string{"ZREVRANK", "k", "a", "WITHSCORE", "x"}, "-ERR wrong number of arguments for 'zrevrank' command\r\n"},
		9: {[]string{"ZRANK", "k"}, "-ERR wrong number of arguments for 'zrank' command\r\n"},
	}
	for i, tt := range tests {
		if have := r.do(tt.args...); have != tt.want {
			t.Errorf("test %d %q: have %q, want %q", i, tt.args, have, tt.want)
		}
	}
	r.do("HELLO", "3")
	require.Equal(t, "*2\r\n:1\r\n,1795307408539667\r\n", r.do("ZRANK", "k", "a", "WITHSCORE"))
	require.Equal(t, "_\r\n", r.do("ZRANK", "k", "x", "WITHSCORE"))
}

// TestZsetScoreFormat: microsecond timestamps print in full, never with an
// exponent, in every reply that carries a score.
func TestZsetScoreFormat(t *testing.T) {
	for _, enc := range []string{"128", "0"} {
		ts := newTestServer(t, "zset-max-listpack-entries", enc)
		r := ts.raw(t)
		r.do("ZADD", "k", "1795307408539667", "m1", "1795307408539667.5", "m2")
		tests := []struct {
			args []string
			want string
		}{
			0: {[]string{"ZSCORE", "k", "m1"}, "$16\r\n1795307408539667\r\n"},
			1: {[]string{"ZRANGE", "k", "0", "0", "WITHSCORES"}, "*2\r\n$2\r\nm1\r\n$16\r\n1795307408539667\r\n"},
			2: {[]string{"ZMSCORE", "k", "m1", "m2"}, "*2\r\n$16\r\n1795307408539667\r\n$18\r\n1795307408539667.5\r\n"},
			3: {[]string{"ZINCRBY", "k", "1", "m1"}, "$16\r\n1795307408539668\r\n"},
			4: {[]string{"ZPOPMIN", "k"}, "*2\r\n$2\r\nm2\r\n$18\r\n1795307408539667.5\r\n"},
			5: {[]string{"ZSCAN", "k", "0"}, "*2\r\n$1\r\n0\r\n*2\r\n$2\r\nm1\r\n$16\r\n1795307408539668\r\n"},
			6: {[]string{"ZADD", "k", "INCR", "0.25", "m1"}, "$18\r\n1795307408539668.2\r\n"}, // ...668.25 exactly; its shortest form
		}
		for i, tt := range tests {
			if have := r.do(tt.args...); have != tt.want {
				t.Errorf("entries=%s test %d %q: have %q, want %q", enc, i, tt.args, have, tt.want)
			}
		}
		r.do("HELLO", "3")
		require.Equal(t, "*1\r\n*2\r\n$2\r\nm1\r\n,1795307408539668.2\r\n", r.do("ZRANGE", "k", "0", "-1", "WITHSCORES"))
	}
}

// TestZsetNegativeZero: -0 survives in the tree encoding (as in Redis's
// skiplist) and becomes 0 in the compact one (as in listpack).
func TestZsetNegativeZero(t *testing.T) {
	for _, tt := range []struct{ enc, want string }{{"128", "$1\r\n0\r\n"}, {"0", "$2\r\n-0\r\n"}} {
		ts := newTestServer(t, "zset-max-listpack-entries", tt.enc)
		r := ts.raw(t)
		r.do("ZADD", "k", "-0", "a")
		require.Equal(t, tt.want, r.do("ZSCORE", "k", "a"), "entries=%s", tt.enc)
		require.Equal(t, "$1\r\n0\r\n", r.do("ZINCRBY", "k", "0", "a"), "entries=%s: 0 + -0 is 0", tt.enc)
		require.Equal(t, tt.want, r.do("ZSCORE", "k", "a"), "entries=%s: unchanged", tt.enc)
	}
}

// TestZsetConfig: the compact-encoding limits under both names, read at
// run time.
func TestZsetConfig(t *testing.T) {
	ts := newTestServer(t)
	defer shards.SetZSetLimits(128, 64)
	r := ts.raw(t)
	require.Equal(t, "*2\r\n$25\r\nzset-max-listpack-entries\r\n$3\r\n128\r\n", r.do("CONFIG", "GET", "zset-max-listpack-entries"))
	require.Equal(t, "+OK\r\n", r.do("CONFIG", "SET", "zset-max-ziplist-entries", "2"))
	require.Equal(t, "*2\r\n$25\r\nzset-max-listpack-entries\r\n$1\r\n2\r\n", r.do("CONFIG", "GET", "zset-max-listpack-entries"))
	require.Equal(t, "*2\r\n$24\r\nzset-max-ziplist-entries\r\n$1\r\n2\r\n", r.do("CONFIG", "GET", "zset-max-ziplist-entries"))
	require.Equal(t, "+OK\r\n", r.do("CONFIG", "SET", "zset-max-listpack-value", "3"))
	require.Equal(t, "*2\r\n$22\r\nzset-max-ziplist-value\r\n$1\r\n3\r\n", r.do("CONFIG", "GET", "zset-max-ziplist-value"))
	all := r.do("CONFIG", "GET", "zset-max-*")
	for _, name := range []string{"zset-max-listpack-entries", "zset-max-listpack-value", "zset-max-ziplist-entries", "zset-max-ziplist-value"} {
		require.Contains(t, all, "\r\n"+name+"\r\n")
	}
	require.True(t, strings.HasPrefix(all, "*8\r\n"), "have %q", all)
	require.Contains(t, r.do("CONFIG", "SET", "zset-max-listpack-entries", "-1"), "-ERR CONFIG SET failed")

	encoding := func(key string) string {
		st := ts.store
		i := st.ShardIndex([]byte(key))
		st.Lock(i)
		defer st.Unlock(i)
		e := st.Peek([]byte(key), ts.clock.Now()/1e6)
		require.NotNil(t, e)
		return st.Object(e).(*shards.ZSet).Encoding()
	}
	tests := []struct {
		args []string
		key  string
		want string
	}{
		0: {[]string{"ZADD", "a", "1", "x", "2", "y"}, "a", "listpack"},
		1: {[]string{"ZADD", "a", "3", "z"}, "a", "skiplist"},                     // 3 members > 2
		2: {[]string{"ZADD", "b", "1", "x", "2", "y", "3", "z"}, "b", "skiplist"}, // created big
		3: {[]string{"ZADD", "c", "1", "abcd"}, "c", "skiplist"},                  // member longer than 3
		4: {[]string{"ZADD", "d", "1", "abc"}, "d", "listpack"},
	}
	for i, tt := range tests {
		r.do(tt.args...)
		if have := encoding(tt.key); have != tt.want {
			t.Errorf("test %d: have %s, want %s", i, have, tt.want)
		}
	}
}

// TestZsetWrongType: every sorted-set command refuses another kind of key,
// and other commands refuse a sorted set.
func TestZsetWrongType(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	r.do("SET", "s", "v")
	r.do("ZADD", "z", "1", "a")
	const wrong = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
	for i, args := range [][]string{
		{"ZADD", "s", "1", "a"}, {"ZINCRBY", "s", "1", "a"}, {"ZREM", "s", "a"}, {"ZCARD", "s"},
		{"ZCOUNT", "s", "0", "1"}, {"ZLEXCOUNT", "s", "-", "+"}, {"ZSCORE", "s", "a"}, {"ZMSCORE", "s", "a"},
		{"ZRANK", "s", "a"}, {"ZREVRANK", "s", "a"}, {"ZRANGE", "s", "0", "1"}, {"ZREVRANGE", "s", "0", "1"},
		{"ZRANGEBYSCORE", "s", "0", "1"}, {"ZREVRANGEBYSCORE", "s", "1", "0"}, {"ZRANGEBYLEX", "s", "-", "+"},
		{"ZREVRANGEBYLEX", "s", "+", "-"}, {"ZREMRANGEBYSCORE", "s", "0", "1"}, {"ZREMRANGEBYRANK", "s", "0", "1"},
		{"ZREMRANGEBYLEX", "s", "-", "+"}, {"ZPOPMIN", "s"}, {"ZPOPMAX", "s", "2"}, {"ZRANDMEMBER", "s"},
		{"ZRANDMEMBER", "s", "2"}, {"ZSCAN", "s", "0"},
		{"GET", "z"}, {"INCR", "z"}, {"SL.THROTTLE", "z", "1", "1000"}, {"SW.THROTTLE", "z", "1", "1000"},
	} {
		if have := r.do(args...); have != wrong {
			t.Errorf("test %d %q: have %q", i, args, have)
		}
	}
	require.Equal(t, "+zset\r\n", r.do("TYPE", "z"))
}

// TestZsetRandmember checks ZRANDMEMBER's shapes and counts (the picks are
// random, so the test checks what they must satisfy).
func TestZsetRandmember(t *testing.T) {
	for _, enc := range []string{"128", "0"} {
		ts := newTestServer(t, "zset-max-listpack-entries", enc)
		for _, proto := range []int{2, 3} {
			rdb := ts.client(t, proto)
			members := map[string]float64{}
			var zs []any
			for i := 0; i < 20; i++ {
				m := "m" + strconv.Itoa(i)
				members[m] = float64(i) + 0.5
				zs = append(zs, members[m], m)
			}
			require.NoError(t, rdb.Do(ctx, append([]any{"ZADD", "k"}, zs...)...).Err())
			for _, count := range []int{1, 5, 19, 20, 25, -1, -5, -40} {
				got, err := rdb.ZRandMemberWithScores(ctx, "k", count).Result()
				require.NoError(t, err)
				want := count
				if count > 20 {
					want = 20
				}
				if count < 0 {
					want = -count
				}
				require.Len(t, got, want, "entries=%s RESP%d count %d", enc, proto, count)
				seen := map[string]bool{}
				for _, z := range got {
					m := z.Member.(string)
					require.Equal(t, members[m], z.Score, "member %s", m)
					require.False(t, count > 0 && seen[m], "count %d repeated %s", count, m)
					seen[m] = true
				}
				plain, err := rdb.ZRandMember(ctx, "k", count).Result()
				require.NoError(t, err)
				require.Len(t, plain, want)
			}
			one, err := rdb.Do(ctx, "ZRANDMEMBER", "k").Text()
			require.NoError(t, err)
			require.Contains(t, members, one)
		}
		r := ts.raw(t)
		require.Equal(t, "-ERR value is out of range\r\n", r.do("ZRANDMEMBER", "k", "-100000000000"))
	}
}

// TestZsetScanLarge: a full ZSCAN of a large set returns every member once,
// with MATCH filtering.
func TestZsetScanLarge(t *testing.T) {
	ts := newTestServer(t, "zset-max-listpack-entries", "0")
	rdb := ts.client(t, 2)
	for i := 0; i < 1000; i += 100 {
		var zs []any
		for j := i; j < i+100; j++ {
			zs = append(zs, j, "m"+strconv.Itoa(j))
		}
		require.NoError(t, rdb.Do(ctx, append([]any{"ZADD", "k"}, zs...)...).Err())
	}
	seen := map[string]int{}
	cursor, calls := uint64(0), 0
	for {
		keys, next, err := rdb.ZScan(ctx, "k", cursor, "m1*", 10).Result()
		require.NoError(t, err)
		require.Equal(t, 0, len(keys)%2)
		for i := 0; i < len(keys); i += 2 {
			seen[keys[i]]++
			require.Equal(t, keys[i][1:], keys[i+1], "score of %s", keys[i])
		}
		calls++
		if cursor = next; cursor == 0 {
			break
		}
	}
	require.LessOrEqual(t, calls, 18)
	require.Len(t, seen, 111) // m1, m10-m19, m100-m199
	for m, n := range seen {
		require.Equal(t, 1, n, m)
		require.True(t, strings.HasPrefix(m, "m1"))
	}
}

// TestZsetEmptiedSetDisappears: every removal path deletes the key with its
// last member, and a read of a missing key replies as Redis does.
func TestZsetEmptiedSetDisappears(t *testing.T) {
	for _, enc := range []string{"128", "0"} {
		ts := newTestServer(t, "zset-max-listpack-entries", enc)
		r := ts.raw(t)
		for i, args := range [][]string{
			{"ZREM", "k", "a", "b"}, {"ZREMRANGEBYSCORE", "k", "-inf", "+inf"}, {"ZREMRANGEBYRANK", "k", "0", "-1"},
			{"ZREMRANGEBYLEX", "k", "-", "+"}, {"ZPOPMIN", "k", "5"}, {"ZPOPMAX", "k", "2"},
		} {
			r.do("ZADD", "k", "1", "a", "1", "b")
			r.do(args...)
			if have := r.do("EXISTS", "k"); have != ":0\r\n" {
				t.Errorf("entries=%s test %d %q: key still there", enc, i, args)
			}
		}
	}
}

// TestZsetExpiredKey: a sorted set past its deadline is gone for every
// command, and ZADD makes a fresh one without the old deadline.
func TestZsetExpiredKey(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	r.do("ZADD", "k", "1", "a")
	r.do("PEXPIRE", "k", "100")
	ts.clock.Advance(100 * 1e6)
	require.Equal(t, ":0\r\n", r.do("ZCARD", "k"))
	require.Equal(t, ":1\r\n", r.do("ZADD", "k", "2", "b"))
	require.Equal(t, ":-1\r\n", r.do("PTTL", "k"))
	require.Equal(t, "*1\r\n$1\r\nb\r\n", r.do("ZRANGE", "k", "0", "-1"))
}

// TestParseScoreBound checks zslParseRange's strtod rules.
func TestParseScoreBound(t *testing.T) {
	inf := math.Inf(1)
	tests := []struct {
		in     string
		v      float64
		ex, ok bool
	}{
		0:  {"1", 1, false, true},
		1:  {"(1", 1, true, true},
		2:  {"", 0, false, true},        // strtod of "" is 0 and ends at the NUL
		3:  {"(", 0, true, true},        // likewise after "("
		4:  {" 1", 1, false, true},      // strtod skips leading white space
		5:  {"\t\n(1", 0, false, false}, // but "(" must come first
		6:  {"1 ", 0, false, false},     // trailing bytes
		7:  {" ", 0, false, false},      // nothing converted, not at the end
		8:  {"1e400", inf, false, true}, // overflow is HUGE_VAL, accepted
		9:  {"-1e400", -inf, false, true},
		10: {"1e-400", 0, false, true}, // underflow is accepted too
		11: {"nan", 0, false, false},
		12: {"(-nan", 0, false, false},
		13: {"+inf", inf, false, true},
		14: {"(-Infinity", -inf, true, true},
		15: {"0x10", 16, false, true},
		16: {"1\x00junk", 1, false, true}, // the C string ends at the NUL
		17: {"abc", 0, false, false},
		18: {"((1", 0, false, false},
		19: {"1.5e3", 1500, false, true},
		20: {".5", 0.5, false, true},
		21: {"-", 0, false, false},
	}
	for i, tt := range tests {
		v, ex, ok := parseScoreBound([]byte(tt.in))
		if ok != tt.ok || ok && (v != tt.v || ex != tt.ex) {
			t.Errorf("test %d %q: have %v %v %v, want %v %v %v", i, tt.in, v, ex, ok, tt.v, tt.ex, tt.ok)
		}
	}
}

// TestParseLexBound checks zslParseLexRangeItem's rules.
func TestParseLexBound(t *testing.T) {
	tests := []struct {
		in   string
		want shards.LexBound
		ok   bool
	}{
		0: {"-", shards.LexBound{Inf: -1, Ex: true}, true},
		1: {"+", shards.LexBound{Inf: 1, Ex: true}, true},
		2: {"+x", shards.LexBound{}, false},
		3: {"-\x00x", shards.LexBound{Inf: -1, Ex: true}, true}, // Redis looks at the next C character
		4: {"(a", shards.LexBound{Value: []byte("a"), Ex: true}, true},
		5: {"[a\x00b", shards.LexBound{Value: []byte("a\x00b")}, true}, // values are binary safe
		6: {"[", shards.LexBound{Value: []byte{}}, true},
		7: {"a", shards.LexBound{}, false},
		8: {"", shards.LexBound{}, false},
	}
	for i, tt := range tests {
		have, ok := parseLexBound([]byte(tt.in))
		if ok != tt.ok || ok && (have.Inf != tt.want.Inf || have.Ex != tt.want.Ex || string(have.Value) != string(tt.want.Value)) {
			t.Errorf("test %d %q: have %+v %v, want %+v %v", i, tt.in, have, ok, tt.want, tt.ok)
		}
	}
}

// FuzzZsetScoreBound: a bound accepted as a score (ParseFloat) is accepted
// as a range bound with the same value, "(" makes it exclusive, leading
// white space does not matter, and NaN never comes out.
func FuzzZsetScoreBound(f *testing.F) {
	for _, s := range []string{"1", "(1", "", "(", " 1", "1e400", "nan", "inf", "-inf", "0x1p3", "1\x00", "(-0", "-0", ".5e-3", "1795307408539667", "-123456789012345678", "1234567890123456789"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, ex, ok := parseScoreBound([]byte(s))
		if ok && math.IsNaN(v) {
			t.Fatalf("%q gave NaN", s)
		}
		if ok && !ex && len(s) > 0 && s[0] == '(' {
			t.Fatalf("%q not exclusive", s)
		}
		if f, fok := redisnum.ParseFloat([]byte(s)); fok {
			// The same value to the bit (a negative zero too), whether the
			// bound took the integer fast path or strtod's.
			if !ok || ex || math.Float64bits(v) != math.Float64bits(f) {
				t.Fatalf("%q: ParseFloat %v, bound %v %v %v", s, f, v, ex, ok)
			}
			v2, ex2, ok2 := parseScoreBound([]byte("(" + s))
			if !ok2 || !ex2 || v2 != f {
				t.Fatalf("(%q: %v %v %v", s, v2, ex2, ok2)
			}
		}
		if len(s) > 0 && s[0] != '(' && s[0] != 0 {
			v3, ex3, ok3 := parseScoreBound([]byte(" \t" + s))
			if ok3 != ok || ok && (v3 != v || ex3 != ex) {
				t.Fatalf("leading space changed %q: %v %v %v vs %v %v %v", s, v3, ex3, ok3, v, ex, ok)
			}
		}
	})
}

// FuzzZrangeOptions: option parsing never panics, and what it accepts is
// consistent: the kind is set, LIMIT only with BYSCORE/BYLEX, WITHSCORES
// never with BYLEX, and an error is one of the family's texts.
func FuzzZrangeOptions(f *testing.F) {
	f.Add("0 -1 BYSCORE REV LIMIT 0 10 WITHSCORES", uint8(0))
	f.Add("(1 +inf byscore limit 1 -1", uint8(0))
	f.Add("[a (b bylex withscores", uint8(0))
	f.Add("0 1 limit 0", uint8(1))
	f.Add("+inf -inf withscores limit x 1", uint8(2))
	f.Add("- + limit 0 1", uint8(3))
	f.Fuzz(func(t *testing.T, line string, form uint8) {
		words := strings.Fields(line)
		if len(words) < 2 {
			return
		}
		args := [][]byte{[]byte("zrange"), []byte("k")}
		for _, w := range words {
			args = append(args, []byte(w))
		}
		kinds := []struct {
			k zrangeKind
			d zrangeDir
		}{{zrangeAuto, zdirAuto}, {zrangeRank, zdirReverse}, {zrangeScore, zdirForward}, {zrangeLex, zdirReverse}}
		kd := kinds[int(form)%len(kinds)]
		o, msg := parseZrange(args, kd.k, kd.d)
		if msg != "" {
			switch msg {
			case errSyntax, errNotInt, errMinMaxFloat, errMinMaxLex, errZrangeLimit, errZrangeLexWS:
			default:
				t.Fatalf("unexpected error %q", msg)
			}
			return
		}
		if o.kind == zrangeAuto {
			t.Fatal("kind not resolved")
		}
		if kd.k != zrangeAuto && o.kind != kd.k {
			t.Fatalf("kind %v changed to %v", kd.k, o.kind)
		}
		if o.limit != -1 && o.kind == zrangeRank {
			t.Fatal("LIMIT accepted with a rank range")
		}
		if o.withScores && o.kind == zrangeLex {
			t.Fatal("WITHSCORES accepted with BYLEX")
		}
		if o.kind == zrangeScore && (math.IsNaN(o.score.Min) || math.IsNaN(o.score.Max)) {
			t.Fatal("NaN bound")
		}
	})
}

// FuzzZaddOptions: ZADD's option parsing never panics, and what it accepts
// has an even number of score-member words and compatible flags.
func FuzzZaddOptions(f *testing.F) {
	f.Add("nx ch 1 a")
	f.Add("xx gt incr 1 a")
	f.Add("nx xx 1 a")
	f.Add("incr 1 a 2 b")
	f.Add("gt lt ch")
	f.Fuzz(func(t *testing.T, line string) {
		args := [][]byte{[]byte("zadd"), []byte("k")}
		for _, w := range strings.Fields(line) {
			args = append(args, []byte(w))
		}
		o, msg := parseZadd(args, false)
		if msg != "" {
			switch msg {
			case errSyntax, errZaddNXXX, errGTLTNX, errZaddIncrPair:
			default:
				t.Fatalf("unexpected error %q", msg)
			}
			return
		}
		if o.elements < 1 || o.first+2*o.elements != len(args) {
			t.Fatalf("bad layout %+v for %d args", o, len(args))
		}
		f := o.flags
		if f&shards.ZAddNX != 0 && f&(shards.ZAddXX|shards.ZAddGT|shards.ZAddLT) != 0 || f&shards.ZAddGT != 0 && f&shards.ZAddLT != 0 {
			t.Fatalf("incompatible flags accepted: %b", f)
		}
		if f&shards.ZAddIncr != 0 && o.elements != 1 {
			t.Fatal("INCR with several pairs")
		}
	})
}

// recipe runs the sliding-log recipe of the popular libraries in one
// MULTI/EXEC through go-redis: trim what left the window, add now (a
// microsecond timestamp) under a random member, read the log, refresh the
// deadline. It returns the log as ZRANGE WITHSCORES gave it.
func recipe(t *testing.T, rdb *redis.Client, key string, nowUs, windowUs int64, member string) []redis.Z {
	t.Helper()
	var rng *redis.ZSliceCmd
	_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ZRemRangeByScore(ctx, key, "0", strconv.FormatInt(nowUs-windowUs, 10))
		p.ZAdd(ctx, key, redis.Z{Score: float64(nowUs), Member: member})
		rng = p.ZRangeWithScores(ctx, key, 0, -1)
		p.PExpire(ctx, key, time.Duration(windowUs)*time.Microsecond)
		return nil
	})
	require.NoError(t, err)
	return rng.Val()
}

// TestZsetRecipeTxPipelined: the recipe keeps exactly the entries of the
// window, with their microsecond scores intact, in RESP2 and RESP3.
func TestZsetRecipeTxPipelined(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			ts := newTestServer(t)
			rdb := ts.client(t, proto)
			const window = 10_000_000 // 10 s in µs
			start := int64(1795307408539667)
			for i := int64(0); i < 200; i++ {
				now := start + i*500_000 // every 0.5 s
				got := recipe(t, rdb, "rl:user", now, window, fmt.Sprintf("%08x-req-%d", i*2654435761, i))
				// Entries with score > now-window: the last 20 (or all of them).
				want := min(i+1, 20)
				require.Len(t, got, int(want), "call %d", i)
				for j, z := range got {
					require.Equal(t, float64(now-(want-1-int64(j))*500_000), z.Score, "call %d entry %d", i, j)
				}
			}
			ttl, err := rdb.PTTL(ctx, "rl:user").Result()
			require.NoError(t, err)
			require.Equal(t, 10*time.Second, ttl)
		})
	}
}

// TestZsetRecipeRaw checks the recipe's EXEC reply byte for byte: scores
// print as integers, never 1.79e+15.
func TestZsetRecipeRaw(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	step := func(now string) string {
		r.do("MULTI")
		r.do("ZREMRANGEBYSCORE", "k", "0", "1795307398539667")
		r.do("ZADD", "k", now, "c2f5b3d2-8d1e-4f7a-9b3c-1a2b3c4d5e6f")
		r.do("ZRANGE", "k", "0", "-1", "WITHSCORES")
		r.do("PEXPIRE", "k", "10000")
		return r.do("EXEC")
	}
	require.Equal(t, "*4\r\n:0\r\n:1\r\n*2\r\n$36\r\nc2f5b3d2-8d1e-4f7a-9b3c-1a2b3c4d5e6f\r\n$16\r\n1795307408539667\r\n:1\r\n", step("1795307408539667"))
	r.do("HELLO", "3")
	require.Equal(t, "*4\r\n:0\r\n:0\r\n*1\r\n*2\r\n$36\r\nc2f5b3d2-8d1e-4f7a-9b3c-1a2b3c4d5e6f\r\n,1795307408539668\r\n:1\r\n", step("1795307408539668"))
}

// TestZsetRecipeConcurrent: 50 callers on several connections run the
// MULTI recipe at once with a limit of 10; since each transaction is
// atomic, exactly 10 see a log of at most 10 entries.
func TestZsetRecipeConcurrent(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			ts := newTestServer(t)
			clients := make([]*redis.Client, 5)
			for i := range clients {
				clients[i] = ts.client(t, proto)
			}
			now := int64(1795307408539667)
			var allowed atomic.Int64
			var wg sync.WaitGroup
			for i := 0; i < 50; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					log := recipe(t, clients[i%len(clients)], "rl:shared", now+int64(i), 60_000_000, fmt.Sprintf("req-%d", i))
					if len(log) <= 10 {
						allowed.Add(1)
					}
				}(i)
			}
			wg.Wait()
			require.Equal(t, int64(10), allowed.Load())
			n, err := clients[0].ZCard(ctx, "rl:shared").Result()
			require.NoError(t, err)
			require.Equal(t, int64(50), n)
		})
	}
}

// TestZsetWatchRetry: the check-then-add variant with WATCH: read the
// count, add only when under the limit, retry when another client got
// there first. 50 callers, limit 10: exactly 10 entries, 10 admitted.
func TestZsetWatchRetry(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			ts := newTestServer(t)
			clients := make([]*redis.Client, 5)
			for i := range clients {
				clients[i] = ts.client(t, proto)
			}
			const key, limit = "rl:watch", 10
			var allowed, retries atomic.Int64
			var wg sync.WaitGroup
			for i := 0; i < 50; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					rdb := clients[i%len(clients)]
					for {
						admitted := false
						err := rdb.Watch(ctx, func(tx *redis.Tx) error {
							n, err := tx.ZCard(ctx, key).Result()
							if err != nil || n >= limit {
								return err
							}
							_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
								p.ZAdd(ctx, key, redis.Z{Score: float64(1795307408539667 + i), Member: fmt.Sprintf("req-%d", i)})
								return nil
							})
							admitted = err == nil
							return err
						}, key)
						if err == redis.TxFailedErr {
							retries.Add(1)
							continue
						}
						if err != nil {
							t.Error(err)
						}
						if admitted {
							allowed.Add(1)
						}
						return
					}
				}(i)
			}
			wg.Wait()
			require.Equal(t, int64(limit), allowed.Load())
			n, err := clients[0].ZCard(ctx, key).Result()
			require.NoError(t, err)
			require.Equal(t, int64(limit), n)
			t.Logf("%d retries", retries.Load())
		})
	}
}

// TestZsetGoRedis drives the commands through go-redis's typed API in both
// protocols, which parses RESP3 doubles and pairs.
func TestZsetGoRedis(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			ts := newTestServer(t)
			rdb := ts.client(t, proto)
			n, err := rdb.ZAdd(ctx, "z", redis.Z{Score: 1, Member: "a"}, redis.Z{Score: 2.5, Member: "b"}, redis.Z{Score: 1795307408539667, Member: "c"}).Result()
			require.NoError(t, err)
			require.Equal(t, int64(3), n)
			s, err := rdb.ZScore(ctx, "z", "c").Result()
			require.NoError(t, err)
			require.Equal(t, 1795307408539667.0, s)
			zs, err := rdb.ZRangeByScoreWithScores(ctx, "z", &redis.ZRangeBy{Min: "(1", Max: "+inf"}).Result()
			require.NoError(t, err)
			require.Equal(t, []redis.Z{{Score: 2.5, Member: "b"}, {Score: 1795307408539667, Member: "c"}}, zs)
			zs, err = rdb.ZRevRangeWithScores(ctx, "z", 0, 0).Result()
			require.NoError(t, err)
			require.Equal(t, []redis.Z{{Score: 1795307408539667, Member: "c"}}, zs)
			rk, err := rdb.ZRankWithScore(ctx, "z", "b").Result()
			require.NoError(t, err)
			require.Equal(t, redis.RankScore{Rank: 1, Score: 2.5}, rk)
			ms, err := rdb.ZMScore(ctx, "z", "a", "nope").Result()
			require.NoError(t, err)
			require.Equal(t, []float64{1, 0}, ms)
			inc, err := rdb.ZIncrBy(ctx, "z", 0.5, "a").Result()
			require.NoError(t, err)
			require.Equal(t, 1.5, inc)
			popped, err := rdb.ZPopMin(ctx, "z", 2).Result()
			require.NoError(t, err)
			require.Equal(t, []redis.Z{{Score: 1.5, Member: "a"}, {Score: 2.5, Member: "b"}}, popped)
			popped, err = rdb.ZPopMax(ctx, "z").Result()
			require.NoError(t, err)
			require.Equal(t, []redis.Z{{Score: 1795307408539667, Member: "c"}}, popped)
			ex, err := rdb.Exists(ctx, "z").Result()
			require.NoError(t, err)
			require.Equal(t, int64(0), ex)
		})
	}
}

// BenchmarkZsetRecipe runs the MULTI sliding-log recipe through the
// dispatcher in parallel over 1024 keys, a 100 ms window with an entry
// every millisecond or so per key (about 100 entries each, the compact
// encoding): MULTI, ZREMRANGEBYSCORE, ZADD, ZRANGE WITHSCORES, PEXPIRE,
// EXEC per op.
func BenchmarkZsetRecipe(b *testing.B) {
	srv := benchServer(b)
	var clock atomic.Int64
	clock.Store(1795307408539667)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		c := benchConn(b, srv)
		var nowBuf, cutBuf [20]byte
		// The requests are built once and filled in place, so that the
		// allocations reported are the server's, not the benchmark's.
		reqs := [][][]byte{
			{[]byte("MULTI")},
			{[]byte("ZREMRANGEBYSCORE"), nil, []byte("0"), nil},
			{[]byte("ZADD"), nil, nil, nil},
			{[]byte("ZRANGE"), nil, []byte("0"), []byte("-1"), []byte("WITHSCORES")},
			{[]byte("PEXPIRE"), nil, []byte("100")},
			{[]byte("EXEC")},
		}
		i := 0
		for pb.Next() {
			now := clock.Add(1) // µs: each key gets an entry about every ms
			key := benchKey(i)
			nowB := strconv.AppendInt(nowBuf[:0], now, 10)
			reqs[1][1], reqs[1][3] = key, strconv.AppendInt(cutBuf[:0], now-100_000, 10)
			reqs[2][1], reqs[2][2], reqs[2][3] = key, nowB, nowB
			reqs[3][1], reqs[4][1] = key, key
			for _, req := range reqs {
				c.dispatch(req)
			}
			c.Out = c.Out[:0]
			i++
		}
	})
}

// FuzzZsetLexBound: a lex bound parses exactly when Redis's rules accept
// it, and a "(" or "[" bound keeps every byte after the prefix.
func FuzzZsetLexBound(f *testing.F) {
	for _, s := range []string{"-", "+", "(a", "[a\x00b", "+x", "", "a", "[", "-\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, ok := parseLexBound([]byte(s))
		want := len(s) > 0 && (s[0] == '(' || s[0] == '[' ||
			(s[0] == '+' || s[0] == '-') && (len(s) == 1 || s[1] == 0))
		if ok != want {
			t.Fatalf("%q: ok %v, want %v", s, ok, want)
		}
		if !ok {
			return
		}
		switch s[0] {
		case '(', '[':
			if string(b.Value) != s[1:] || b.Ex != (s[0] == '(') || b.Inf != 0 {
				t.Fatalf("%q: %+v", s, b)
			}
		case '+', '-':
			if b.Inf == 0 || !b.Ex || (b.Inf > 0) != (s[0] == '+') {
				t.Fatalf("%q: %+v", s, b)
			}
		}
	})
}

// ZRANDMEMBER with a negative count builds its reply in memory: past
// maxRandBytes (512 MB; 4 here) it answers an error instead (2^26 picks of
// 1 MB members would ask for 64 TiB).
func TestZrandmemberReplyBound(t *testing.T) {
	old := maxRandBytes
	t.Cleanup(func() { maxRandBytes = old })
	maxRandBytes = 4 << 20
	r := newTestServer(t).raw(t)
	big := strings.Repeat("m", 1<<20)
	require.Equal(t, ":1\r\n", r.do("ZADD", "z", "1", big))
	require.Equal(t, "-ERR ZRANDMEMBER reply too large (over 4 MB): ask for fewer members\r\n", r.do("ZRANDMEMBER", "z", "-1000"))
	require.Equal(t, "*1\r\n$1048576\r\n"+big+"\r\n", r.do("ZRANDMEMBER", "z", "-1"))
}
