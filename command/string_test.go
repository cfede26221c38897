package command

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekv/ratekv/shards"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestSetOptions runs SET with every option combination that matters
// against a key that is missing, a persistent string, a string with a
// deadline, or a value of another kind, and checks the reply, the value
// and the deadline afterwards.
func TestSetOptions(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	nowMs := ts.clock.Now() / 1e6
	const (
		missing = iota
		plain   // "old", persistent
		ttl     // "old", PTTL 100000
		zset
	)
	invalid := errReply("ERR invalid expire time in 'set' command")
	syntax := errReply("ERR syntax error")
	tests := []struct {
		before   int
		args     []string // after SET k
		want     string
		wantGet  string // raw GET k afterwards
		wantPTTL int64
	}{
		0:  {missing, a("v"), "+OK\r\n", bulk("v"), -1},
		1:  {ttl, a("v"), "+OK\r\n", bulk("v"), -1},  // a plain SET clears the deadline
		2:  {zset, a("v"), "+OK\r\n", bulk("v"), -1}, // and replaces any kind
		3:  {ttl, a("v", "KEEPTTL"), "+OK\r\n", bulk("v"), 100000},
		4:  {missing, a("v", "keepttl"), "+OK\r\n", bulk("v"), -1},
		5:  {missing, a("v", "NX"), "+OK\r\n", bulk("v"), -1},
		6:  {plain, a("v", "NX"), nullBulk, bulk("old"), -1},
		7:  {zset, a("v", "NX"), nullBulk, wrongTypeReply, -1},
		8:  {missing, a("v", "XX"), nullBulk, nullBulk, -2},
		9:  {ttl, a("v", "XX"), "+OK\r\n", bulk("v"), -1},
		10: {plain, a("v", "nx", "NX"), nullBulk, bulk("old"), -1}, // repeats are fine
		11: {plain, a("v", "NX", "XX"), syntax, bulk("old"), -1},
		12: {plain, a("v", "XX", "NX"), syntax, bulk("old"), -1},
		13: {missing, a("v", "GET"), nullBulk, bulk("v"), -1},
		14: {ttl, a("v", "GET"), bulk("old"), bulk("v"), -1},
		15: {zset, a("v", "GET"), wrongTypeReply, wrongTypeReply, -1},
		16: {plain, a("v", "NX", "GET"), bulk("old"), bulk("old"), -1},
		17: {missing, a("v", "GET", "NX"), nullBulk, bulk("v"), -1},
		18: {missing, a("v", "XX", "GET"), nullBulk, nullBulk, -2},
		19: {ttl, a("v", "GET", "KEEPTTL"), bulk("old"), bulk("v"), 100000},
		20: {missing, a("v", "EX", "100"), "+OK\r\n", bulk("v"), 100000},
		21: {missing, a("v", "px", "1234"), "+OK\r\n", bulk("v"), 1234},
		22: {missing, a("v", "EXAT", strconv.FormatInt(nowMs/1000+100, 10)), "+OK\r\n", bulk("v"), (nowMs/1000+100)*1000 - nowMs},
		23: {missing, a("v", "PXAT", strconv.FormatInt(nowMs+777, 10)), "+OK\r\n", bulk("v"), 777},
		24: {missing, a("v", "EX", "10", "EX", "20"), "+OK\r\n", bulk("v"), 20000}, // the last wins
		25: {ttl, a("v", "EX", "10", "PX", "10"), syntax, bulk("old"), 100000},
		26: {ttl, a("v", "PX", "10", "EX", "10"), syntax, bulk("old"), 100000},
		27: {ttl, a("v", "EXAT", "10", "PXAT", "10"), syntax, bulk("old"), 100000},
		28: {ttl, a("v", "PXAT", "10", "EX", "10"), syntax, bulk("old"), 100000},
		29: {ttl, a("v", "EX", "10", "KEEPTTL"), syntax, bulk("old"), 100000},
		30: {ttl, a("v", "KEEPTTL", "PX", "10"), syntax, bulk("old"), 100000},
		31: {ttl, a("v", "EX"), syntax, bulk("old"), 100000},
		32: {ttl, a("v", "PERSIST"), syntax, bulk("old"), 100000},
		33: {ttl, a("v", "FOO"), syntax, bulk("old"), 100000},
		34: {ttl, a("v", "EX", "0", "FOO"), syntax, bulk("old"), 100000}, // syntax before values
		35: {ttl, a("v", "EX", "0"), invalid, bulk("old"), 100000},
		36: {ttl, a("v", "EX", "-1"), invalid, bulk("old"), 100000},
		37: {ttl, a("v", "PX", "0"), invalid, bulk("old"), 100000},
		38: {ttl, a("v", "EXAT", "0"), invalid, bulk("old"), 100000},
		39: {ttl, a("v", "PXAT", "-5"), invalid, bulk("old"), 100000},
		40: {ttl, a("v", "EX", "abc"), errReply(errNotInt), bulk("old"), 100000},
		41: {ttl, a("v", "EX", "1.5"), errReply(errNotInt), bulk("old"), 100000},
		42: {ttl, a("v", "EX", "9223372036854776"), invalid, bulk("old"), 100000},
		43: {ttl, a("v", "EX", "9223372036854775"), invalid, bulk("old"), 100000}, // now + that overflows
		44: {ttl, a("v", "PX", "9223372036854775807"), invalid, bulk("old"), 100000},
		45: {zset, a("v", "EX", "0", "GET"), invalid, wrongTypeReply, -1}, // expire before GET
		46: {plain, a("v", "EX", "0", "NX"), invalid, bulk("old"), -1},
		47: {missing, a("v", "PXAT", "9223372036854775807"), "+OK\r\n", bulk("v"), 9223372036854775807 - nowMs},
		48: {missing, a("v", "EXAT", "9223372036854775"), "+OK\r\n", bulk("v"), 9223372036854775000 - nowMs},
		49: {plain, a("v", "EXAT", "1"), "+OK\r\n", nullBulk, -2},    // a deadline in the past
		50: {plain, a("v", "nx\x00junk"), nullBulk, bulk("old"), -1}, // options are C strings
		51: {missing, a("12345"), "+OK\r\n", bulk("12345"), -1},
		52: {missing, a("-0"), "+OK\r\n", bulk("-0"), -1},
		53: {missing, a(""), "+OK\r\n", bulk(""), -1},
	}
	for i, tc := range tests {
		r.do("DEL", "k")
		switch tc.before {
		case plain:
			require.Equal(t, "+OK\r\n", r.do("SET", "k", "old"))
		case ttl:
			require.Equal(t, "+OK\r\n", r.do("SET", "k", "old", "PX", "100000"))
		case zset:
			putOtherKind(t, ts, "k", shards.KindZSet)
		}
		args := append(a("SET", "k"), tc.args...)
		if have := r.do(args...); have != tc.want {
			t.Errorf("case %d: %q: have %q, want %q", i, args, have, tc.want)
		}
		if have := r.do("GET", "k"); have != tc.wantGet {
			t.Errorf("case %d: %q: GET afterwards: have %q, want %q", i, args, have, tc.wantGet)
		}
		if have, want := r.do("PTTL", "k"), ":"+strconv.FormatInt(tc.wantPTTL, 10)+"\r\n"; have != want {
			t.Errorf("case %d: %q: PTTL afterwards: have %q, want %q", i, args, have, want)
		}
	}
}

func TestSetVariants(t *testing.T) {
	ts := newTestServer(t)
	putOtherKind(t, ts, "z", shards.KindZSet)
	runRawSteps(t, ts.raw(t), []rawStep{
		0:  {a("SETEX", "k", "100", "v"), "+OK\r\n"},
		1:  {a("PTTL", "k"), ":100000\r\n"},
		2:  {a("SETEX", "k", "0", "v"), errReply("ERR invalid expire time in 'setex' command")},
		3:  {a("SETEX", "k", "-1", "v"), errReply("ERR invalid expire time in 'setex' command")},
		4:  {a("SETEX", "k", "x", "v"), errReply(errNotInt)},
		5:  {a("SETEX", "z", "10", "v"), "+OK\r\n"},
		6:  {a("PSETEX", "k", "1500", "w"), "+OK\r\n"},
		7:  {a("PTTL", "k"), ":1500\r\n"},
		8:  {a("GET", "k"), bulk("w")},
		9:  {a("PSETEX", "k", "0", "v"), errReply("ERR invalid expire time in 'psetex' command")},
		10: {a("PSETEX", "k", "9223372036854775807", "v"), errReply("ERR invalid expire time in 'psetex' command")},
		11: {a("SETEX", "k", "10"), errReply("ERR wrong number of arguments for 'setex' command")},
		12: {a("SETNX", "n", "1"), ":1\r\n"},
		13: {a("SETNX", "n", "2"), ":0\r\n"},
		14: {a("GET", "n"), bulk("1")},
		15: {a("SETNX", "z", "2"), ":0\r\n"},
		16: {a("SETNX", "n"), errReply("ERR wrong number of arguments for 'setnx' command")},
		17: {a("SET", "k"), errReply("ERR wrong number of arguments for 'set' command")},
	})
}

func TestGetFamily(t *testing.T) {
	ts := newTestServer(t)
	putOtherKind(t, ts, "z", shards.KindZSet)
	nowMs := ts.clock.Now() / 1e6
	runRawSteps(t, ts.raw(t), []rawStep{
		0:  {a("GET", "k"), nullBulk},
		1:  {a("SET", "k", "v", "PX", "5000"), "+OK\r\n"},
		2:  {a("GET", "k"), bulk("v")},
		3:  {a("GET", "z"), wrongTypeReply},
		4:  {a("GETEX", "k"), bulk("v")},
		5:  {a("PTTL", "k"), ":5000\r\n"},
		6:  {a("GETEX", "k", "EX", "100"), bulk("v")},
		7:  {a("PTTL", "k"), ":100000\r\n"},
		8:  {a("GETEX", "k", "PX", "100", "PX", "200"), bulk("v")},
		9:  {a("PTTL", "k"), ":200\r\n"},
		10: {a("GETEX", "k", "PERSIST"), bulk("v")},
		11: {a("PTTL", "k"), ":-1\r\n"},
		12: {a("GETEX", "k", "PERSIST"), bulk("v")},
		13: {a("GETEX", "k", "PXAT", strconv.FormatInt(nowMs+2500, 10)), bulk("v")},
		14: {a("PTTL", "k"), ":2500\r\n"},
		15: {a("GETEX", "k", "EXAT", strconv.FormatInt(nowMs/1000+50, 10)), bulk("v")},
		16: {a("PEXPIRETIME", "k"), ":" + strconv.FormatInt((nowMs/1000+50)*1000, 10) + "\r\n"},
		17: {a("GETEX", "k", "NX"), errReply(errSyntax)},
		18: {a("GETEX", "k", "KEEPTTL"), errReply(errSyntax)},
		19: {a("GETEX", "k", "GET"), errReply(errSyntax)},
		20: {a("GETEX", "k", "EX", "10", "PERSIST"), errReply(errSyntax)},
		21: {a("GETEX", "k", "PERSIST", "EX", "10"), errReply(errSyntax)},
		22: {a("GETEX", "k", "EX", "10", "PX", "10"), errReply(errSyntax)},
		23: {a("GETEX", "k", "EX"), errReply(errSyntax)},
		24: {a("GETEX", "k", "EX", "0"), errReply("ERR invalid expire time in 'getex' command")},
		25: {a("GETEX", "k", "EX", "x"), errReply(errNotInt)},
		26: {a("GETEX", "nope", "EX", "0"), nullBulk}, // the key before the value
		27: {a("GETEX", "z", "EX", "0"), wrongTypeReply},
		28: {a("GETEX", "z", "FOO"), errReply(errSyntax)}, // syntax before the key
		29: {a("GETEX", "k", "EXAT", "1"), bulk("v")},     // in the past: deleted
		30: {a("EXISTS", "k"), ":0\r\n"},
		31: {a("GETEX"), errReply("ERR wrong number of arguments for 'getex' command")},
		32: {a("SET", "k", "v"), "+OK\r\n"},
		33: {a("GETDEL", "k"), bulk("v")},
		34: {a("GETDEL", "k"), nullBulk},
		35: {a("GETDEL", "z"), wrongTypeReply},
		36: {a("TYPE", "z"), "+zset\r\n"},
		37: {a("GETSET", "k", "1"), nullBulk},
		38: {a("GETSET", "k", "2"), bulk("1")},
		39: {a("EXPIRE", "k", "10"), ":1\r\n"},
		40: {a("GETSET", "k", "3"), bulk("2")},
		41: {a("TTL", "k"), ":-1\r\n"}, // GETSET clears the deadline
		42: {a("GETSET", "z", "3"), wrongTypeReply},
		43: {a("MGET", "k", "z", "nope", "k"), "*4\r\n" + bulk("3") + nullBulk + nullBulk + bulk("3")},
		44: {a("MGET"), errReply("ERR wrong number of arguments for 'mget' command")},
	})
}

func TestMset(t *testing.T) {
	ts := newTestServer(t)
	putOtherKind(t, ts, "z", shards.KindZSet)
	runRawSteps(t, ts.raw(t), []rawStep{
		0:  {a("MSET", "a", "1", "b"), errReply("ERR wrong number of arguments for 'mset' command")},
		1:  {a("MSET", "a"), errReply("ERR wrong number of arguments for 'mset' command")},
		2:  {a("SET", "a", "0", "EX", "100"), "+OK\r\n"},
		3:  {a("MSET", "a", "1", "b", "2", "a", "3"), "+OK\r\n"},
		4:  {a("MGET", "a", "b"), "*2\r\n" + bulk("3") + bulk("2")},
		5:  {a("TTL", "a"), ":-1\r\n"},
		6:  {a("MSETNX", "c", "1", "a", "2"), ":0\r\n"},
		7:  {a("EXISTS", "c"), ":0\r\n"},
		8:  {a("MSETNX", "c", "1", "z", "2"), ":0\r\n"},
		9:  {a("MSETNX", "c", "1", "d", "2", "c", "3"), ":1\r\n"},
		10: {a("MGET", "c", "d"), "*2\r\n" + bulk("3") + bulk("2")},
		11: {a("MSETNX", "e", "1", "f"), errReply("ERR wrong number of arguments for 'msetnx' command")},
		12: {a("MSET", "z", "x"), "+OK\r\n"},
		13: {a("TYPE", "z"), "+string\r\n"},
	})
}

func TestIncrDecr(t *testing.T) {
	ts := newTestServer(t)
	putOtherKind(t, ts, "z", shards.KindZSet)
	notInt := errReply("ERR value is not an integer or out of range")
	overflow := errReply("ERR increment or decrement would overflow")
	runRawSteps(t, ts.raw(t), []rawStep{
		0:  {a("INCR", "n"), ":1\r\n"},
		1:  {a("INCR", "n"), ":2\r\n"},
		2:  {a("INCRBY", "n", "40"), ":42\r\n"},
		3:  {a("DECR", "n"), ":41\r\n"},
		4:  {a("DECRBY", "n", "-9"), ":50\r\n"},
		5:  {a("INCRBY", "n", "-100"), ":-50\r\n"},
		6:  {a("GET", "n"), bulk("-50")},
		7:  {a("DECR", "m"), ":-1\r\n"},
		8:  {a("DECRBY", "m2", "5"), ":-5\r\n"},
		9:  {a("SET", "n", "9223372036854775806"), "+OK\r\n"},
		10: {a("INCR", "n"), ":9223372036854775807\r\n"},
		11: {a("INCR", "n"), overflow},
		12: {a("INCRBY", "n", "-9223372036854775808"), ":-1\r\n"},
		13: {a("INCRBY", "n", "-9223372036854775808"), overflow},
		14: {a("GET", "n"), bulk("-1")},
		15: {a("DECRBY", "n", "-9223372036854775808"), errReply("ERR decrement would overflow")},
		16: {a("DECRBY", "n", "9223372036854775807"), ":-9223372036854775808\r\n"},
		17: {a("DECR", "n"), overflow},
		18: {a("INCRBY", "n", "abc"), notInt},
		19: {a("INCRBY", "n", "1.5"), notInt},
		20: {a("INCRBY", "n", "9223372036854775808"), notInt},
		21: {a("DECRBY", "n", "+1"), notInt},
		22: {a("INCRBY", "z", "x"), notInt}, // the increment before the key
		23: {a("INCR", "z"), wrongTypeReply},
		24: {a("DECRBY", "z", "1"), wrongTypeReply},
		25: {a("SET", "s", " 1"), "+OK\r\n"},
		26: {a("INCR", "s"), notInt},
		27: {a("SET", "s", "01"), "+OK\r\n"},
		28: {a("INCR", "s"), notInt},
		29: {a("SET", "s", "-0"), "+OK\r\n"},
		30: {a("INCR", "s"), notInt},
		31: {a("SET", "s", ""), "+OK\r\n"},
		32: {a("INCR", "s"), notInt},
		33: {a("SET", "s", "99999999999999999999"), "+OK\r\n"},
		34: {a("INCR", "s"), notInt},
		35: {a("SET", "s", "0"), "+OK\r\n"},
		36: {a("INCR", "s"), ":1\r\n"},
		37: {a("PEXPIRE", "s", "5000"), ":1\r\n"},
		38: {a("INCRBY", "s", "10"), ":11\r\n"},
		39: {a("PTTL", "s"), ":5000\r\n"}, // INCR keeps the deadline
		40: {a("INCR"), errReply("ERR wrong number of arguments for 'incr' command")},
		41: {a("INCRBY", "s"), errReply("ERR wrong number of arguments for 'incrby' command")},
	})
}

func TestIncrbyfloat(t *testing.T) {
	ts := newTestServer(t)
	putOtherKind(t, ts, "z", shards.KindZSet)
	notFloat := errReply("ERR value is not a valid float")
	runRawSteps(t, ts.raw(t), []rawStep{
		0:  {a("INCRBYFLOAT", "f", "10.5"), bulk("10.5")},
		1:  {a("INCRBYFLOAT", "f", "0.1"), bulk("10.6")},
		2:  {a("INCRBYFLOAT", "f", "-5"), bulk("5.6")},
		3:  {a("GET", "f"), bulk("5.6")},
		4:  {a("SET", "f", "5.0e3"), "+OK\r\n"},
		5:  {a("INCRBYFLOAT", "f", "2.0e2"), bulk("5200")},
		6:  {a("INCRBYFLOAT", "i", "3"), bulk("3")},
		7:  {a("INCR", "i"), ":4\r\n"}, // an integral result is an integer
		8:  {a("INCRBYFLOAT", "f", "abc"), notFloat},
		9:  {a("INCRBYFLOAT", "nope", "abc"), notFloat},
		10: {a("EXISTS", "nope"), ":0\r\n"},
		11: {a("INCRBYFLOAT", "f", "inf"), errReply("ERR increment would produce NaN or Infinity")},
		12: {a("SET", "s", "abc"), "+OK\r\n"},
		13: {a("INCRBYFLOAT", "s", "1"), notFloat},
		14: {a("SET", "s", " 1"), "+OK\r\n"},
		15: {a("INCRBYFLOAT", "s", "1"), notFloat},
		16: {a("INCRBYFLOAT", "z", "1"), wrongTypeReply},
		17: {a("INCRBYFLOAT", "z", "abc"), wrongTypeReply}, // the key before the increment
		18: {a("PEXPIRE", "f", "5000"), ":1\r\n"},
		19: {a("INCRBYFLOAT", "f", "1"), bulk("5201")},
		20: {a("PTTL", "f"), ":5000\r\n"},
		21: {a("INCRBYFLOAT", "f"), errReply("ERR wrong number of arguments for 'incrbyfloat' command")},
	})
}

func TestAppendStrlenRange(t *testing.T) {
	ts := newTestServer(t, "proto-max-bulk-len", "2048")
	putOtherKind(t, ts, "z", shards.KindZSet)
	tooBig := errReply("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
	big := strings.Repeat("x", 2000)
	runRawSteps(t, ts.raw(t), []rawStep{
		0:  {a("APPEND", "s", "Hello"), ":5\r\n"},
		1:  {a("APPEND", "s", " World"), ":11\r\n"},
		2:  {a("GET", "s"), bulk("Hello World")},
		3:  {a("STRLEN", "s"), ":11\r\n"},
		4:  {a("STRLEN", "nope"), ":0\r\n"},
		5:  {a("STRLEN", "z"), wrongTypeReply},
		6:  {a("APPEND", "z", "x"), wrongTypeReply},
		7:  {a("SET", "n", "-12"), "+OK\r\n"},
		8:  {a("STRLEN", "n"), ":3\r\n"},
		9:  {a("APPEND", "n", "3"), ":4\r\n"},
		10: {a("INCR", "n"), ":-122\r\n"},
		11: {a("APPEND", "s", ""), ":11\r\n"},
		12: {a("SET", "b", big, "EX", "100"), "+OK\r\n"},
		13: {a("APPEND", "b", strings.Repeat("y", 48)), ":2048\r\n"},
		14: {a("APPEND", "b", "y"), tooBig},
		15: {a("TTL", "b"), ":100\r\n"}, // APPEND keeps the deadline
		16: {a("GETRANGE", "s", "0", "4"), bulk("Hello")},
		17: {a("GETRANGE", "s", "-5", "-1"), bulk("World")},
		18: {a("GETRANGE", "s", "0", "-1"), bulk("Hello World")},
		19: {a("GETRANGE", "s", "-100", "100"), bulk("Hello World")},
		20: {a("GETRANGE", "s", "5", "3"), bulk("")},
		21: {a("GETRANGE", "s", "-1", "-5"), bulk("")},
		22: {a("GETRANGE", "s", "20", "30"), bulk("")},
		23: {a("GETRANGE", "s", "10", "100"), bulk("d")},
		24: {a("GETRANGE", "s", "-9223372036854775808", "9223372036854775807"), bulk("Hello World")},
		25: {a("GETRANGE", "n", "1", "2"), bulk("12")},
		26: {a("GETRANGE", "nope", "0", "-1"), bulk("")},
		27: {a("GETRANGE", "z", "0", "-1"), wrongTypeReply},
		28: {a("GETRANGE", "z", "x", "-1"), errReply(errNotInt)},
		29: {a("GETRANGE", "s", "0", "1.0"), errReply(errNotInt)},
		30: {a("SUBSTR", "s", "6", "-1"), bulk("World")},
		31: {a("SET", "e", ""), "+OK\r\n"},
		32: {a("GETRANGE", "e", "0", "-1"), bulk("")},
		33: {a("SETRANGE", "s", "0", "J"), ":11\r\n"},
		34: {a("SETRANGE", "s", "6", "Wxrld!"), ":12\r\n"},
		35: {a("GET", "s"), bulk("Jello Wxrld!")},
		36: {a("SETRANGE", "s", "0", ""), ":12\r\n"},
		37: {a("SETRANGE", "new", "3", "ab"), ":5\r\n"},
		38: {a("GET", "new"), bulk("\x00\x00\x00ab")},
		39: {a("SETRANGE", "none", "10", ""), ":0\r\n"},
		40: {a("EXISTS", "none"), ":0\r\n"},
		41: {a("SETRANGE", "s", "-1", "x"), errReply("ERR offset is out of range")},
		42: {a("SETRANGE", "z", "-1", "x"), errReply(errOffsetRange)},
		43: {a("SETRANGE", "s", "x", "x"), errReply(errNotInt)},
		44: {a("SETRANGE", "z", "0", ""), wrongTypeReply},
		45: {a("SETRANGE", "z", "0", "x"), wrongTypeReply},
		46: {a("SETRANGE", "s", "2047", "x"), ":2048\r\n"},
		47: {a("SETRANGE", "s", "2047", "xy"), tooBig},
		48: {a("SETRANGE", "s2", "2048", "x"), tooBig},
		49: {a("SETRANGE", "s2", "9223372036854775807", "x"), tooBig},
		50: {a("SET", "i", "12345"), "+OK\r\n"},
		51: {a("SETRANGE", "i", "2", "x"), ":5\r\n"},
		52: {a("GET", "i"), bulk("12x45")},
		53: {a("SETRANGE", "b", "0", "z"), ":2048\r\n"},
		54: {a("TTL", "b"), ":100\r\n"}, // SETRANGE keeps the deadline
		55: {a("GETRANGE", "b", "0", "1"), bulk("zx")},
		56: {a("GETRANGE", "b", "-2", "-1"), bulk("yy")},
		57: {a("SET", "h", "Hello World"), "+OK\r\n"},
		58: {a("GETRANGE", "h", "-50", "-100"), bulk("")}, // both before the start, reversed
		59: {a("GETRANGE", "h", "-50", "-12"), bulk("H")}, // both before the start: the first byte
	})
}

// TestWrongType checks that every string command refuses a key of another
// kind without changing it (MGET replies a null instead).
func TestWrongType(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	cmds := [][]string{
		a("GET", "z"), a("SET", "z", "v", "GET"), a("GETEX", "z"), a("GETEX", "z", "PERSIST"),
		a("GETDEL", "z"), a("GETSET", "z", "v"), a("INCR", "z"), a("DECR", "z"),
		a("INCRBY", "z", "1"), a("DECRBY", "z", "1"), a("INCRBYFLOAT", "z", "1"),
		a("APPEND", "z", "x"), a("STRLEN", "z"), a("GETRANGE", "z", "0", "1"),
		a("SUBSTR", "z", "0", "1"), a("SETRANGE", "z", "0", "x"),
	}
	for _, kind := range []shards.Kind{shards.KindZSet, shards.KindSlidingLog, shards.KindSlidingWindow} {
		putOtherKind(t, ts, "z", kind)
		for i, cmd := range cmds {
			if have := r.do(cmd...); have != wrongTypeReply {
				t.Errorf("%v case %d: %q: have %q, want WRONGTYPE", kind, i, cmd, have)
			}
			if have, want := r.do("TYPE", "z"), "+"+kind.String()+"\r\n"; have != want {
				t.Errorf("%v case %d: %q changed the key: TYPE %q", kind, i, cmd, have)
			}
		}
		require.Equal(t, "*1\r\n"+nullBulk, r.do("MGET", "z"))
	}
}

// TestStringGoRedis drives the string commands through go-redis over both
// protocols.
func TestStringGoRedis(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			ts := newTestServer(t)
			rdb := ts.client(t, proto)
			require.Equal(t, redis.Nil, rdb.Get(ctx, "k").Err())
			require.NoError(t, rdb.Set(ctx, "k", "v", time.Minute).Err())
			require.Equal(t, "v", rdb.Get(ctx, "k").Val())
			require.Equal(t, time.Minute, rdb.TTL(ctx, "k").Val())
			require.False(t, rdb.SetNX(ctx, "k", "w", 0).Val())
			require.True(t, rdb.SetXX(ctx, "k", "w", 0).Val())
			require.Equal(t, time.Duration(-1), rdb.TTL(ctx, "k").Val())
			require.Equal(t, redis.Nil, rdb.SetArgs(ctx, "k", "x", redis.SetArgs{Mode: "NX"}).Err())
			old, err := rdb.SetArgs(ctx, "k", "x", redis.SetArgs{Get: true, KeepTTL: true}).Result()
			require.NoError(t, err)
			require.Equal(t, "w", old)
			require.Equal(t, "x", rdb.GetEx(ctx, "k", 10*time.Second).Val())
			require.Equal(t, 10*time.Second, rdb.TTL(ctx, "k").Val())
			require.Equal(t, "x", rdb.GetDel(ctx, "k").Val())
			require.Equal(t, redis.Nil, rdb.GetDel(ctx, "k").Err())
			require.NoError(t, rdb.MSet(ctx, "a", "1", "b", "2").Err())
			require.Equal(t, []any{"1", "2", nil}, rdb.MGet(ctx, "a", "b", "c").Val())
			require.False(t, rdb.MSetNX(ctx, "c", "3", "a", "4").Val())
			require.True(t, rdb.MSetNX(ctx, "c", "3", "d", "4").Val())
			require.Equal(t, int64(2), rdb.Incr(ctx, "a").Val())
			require.Equal(t, int64(12), rdb.IncrBy(ctx, "a", 10).Val())
			require.Equal(t, int64(11), rdb.Decr(ctx, "a").Val())
			require.Equal(t, int64(1), rdb.DecrBy(ctx, "a", 10).Val())
			require.Equal(t, 1.5, rdb.IncrByFloat(ctx, "a", 0.5).Val())
			require.Equal(t, int64(5), rdb.Append(ctx, "a", "00").Val())
			require.Equal(t, int64(5), rdb.StrLen(ctx, "a").Val())
			require.Equal(t, ".500", rdb.GetRange(ctx, "a", 1, -1).Val())
			require.Equal(t, int64(5), rdb.SetRange(ctx, "a", 0, "2").Val())
			require.Equal(t, "2.500", rdb.GetSet(ctx, "a", "z").Val())
			require.NoError(t, rdb.SetEx(ctx, "e", "v", time.Hour).Err())
			require.Equal(t, time.Hour, rdb.TTL(ctx, "e").Val())
			require.ErrorContains(t, rdb.Incr(ctx, "a").Err(), "ERR value is not an integer or out of range")
		})
	}
	// RESP3 nulls are "_".
	ts := newTestServer(t)
	r := ts.raw(t)
	require.Equal(t, "%7\r\n", r.do("HELLO", "3")[:4])
	runRawSteps(t, r, []rawStep{
		0: {a("GET", "k"), "_\r\n"},
		1: {a("SET", "k", "v", "XX"), "_\r\n"},
		2: {a("SET", "k", "v", "GET"), "_\r\n"},
		3: {a("MGET", "k", "x"), "*2\r\n" + bulk("v") + "_\r\n"},
		4: {a("GETDEL", "x"), "_\r\n"},
		5: {a("GETEX", "x"), "_\r\n"},
		6: {a("GETSET", "x", "1"), "_\r\n"},
	})
}

// TestStringTransaction: queued string commands run with their shards
// locked, and a failing one does not stop the others.
func TestStringTransaction(t *testing.T) {
	ts := newTestServer(t)
	runRawSteps(t, ts.raw(t), []rawStep{
		0: {a("SET", "s", "abc"), "+OK\r\n"},
		1: {a("MULTI"), "+OK\r\n"},
		2: {a("INCR", "c"), "+QUEUED\r\n"},
		3: {a("INCR", "s"), "+QUEUED\r\n"},
		4: {a("SET", "c", "1", "NX", "XX"), "+QUEUED\r\n"},
		5: {a("INCRBY", "c", "5"), "+QUEUED\r\n"},
		6: {a("EXEC"), "*4\r\n:1\r\n" + errReply(errNotInt) + errReply(errSyntax) + ":6\r\n"},
	})
}

// TestWritesTouchWatchedKeys: every command that changes a key, including
// in-place changes (INCR on a counter, APPEND, SETRANGE, deadline changes),
// makes a transaction WATCHing the key fail; commands that change nothing
// do not.
func TestWritesTouchWatchedKeys(t *testing.T) {
	ts := newTestServer(t)
	tests := []struct {
		setup   []string
		cmd     []string
		changes bool
	}{
		0:  {a("SET", "k", "1"), a("INCR", "k"), true},
		1:  {a("SET", "k", "1"), a("DECRBY", "k", "5"), true},
		2:  {a("SET", "k", "1"), a("INCRBYFLOAT", "k", "0.5"), true},
		3:  {a("SET", "k", "ab"), a("APPEND", "k", "c"), true},
		4:  {a("SET", "k", "ab"), a("SETRANGE", "k", "1", "x"), true},
		5:  {a("SET", "k", "ab"), a("EXPIRE", "k", "100"), true},
		6:  {a("SET", "k", "ab", "EX", "100"), a("PERSIST", "k"), true},
		7:  {a("SET", "k", "ab", "EX", "100"), a("GETEX", "k", "PERSIST"), true},
		8:  {a("SET", "k", "ab"), a("GETEX", "k", "PX", "100000"), true},
		9:  {a("SET", "k", "ab"), a("GETDEL", "k"), true},
		10: {a("SET", "k", "ab"), a("RENAME", "k", "k2"), true},
		11: {a("SET", "k2", "ab"), a("RENAME", "k2", "k"), true},
		12: {a("SET", "k", "ab"), a("SET", "k", "ab"), true},
		13: {a("SET", "k", "ab"), a("MSET", "x", "1", "k", "2"), true},
		14: {a("SET", "k", "ab"), a("EXPIRE", "k", "0"), true},
		15: {a("SET", "k", "1"), a("GET", "k"), false},
		16: {a("SET", "k", "ab"), a("SET", "k", "x", "NX"), false},
		17: {a("SET", "k", "ab"), a("PERSIST", "k"), false},
		18: {a("SET", "k", "ab"), a("EXPIRE", "k", "100", "XX"), false},
		19: {a("SET", "k", "ab"), a("INCR", "k"), false}, // an error
		20: {a("SET", "k", "ab"), a("GETEX", "k"), false},
		21: {a("SET", "k", "ab"), a("SETRANGE", "k", "0", ""), false},
		22: {a("SET", "k", "ab"), a("RENAME", "k", "k"), false},
	}
	w, o := ts.raw(t), ts.raw(t)
	for i, tc := range tests {
		require.Equal(t, "+OK\r\n", o.do(tc.setup...), "case %d", i)
		require.Equal(t, "+OK\r\n", w.do("WATCH", "k"), "case %d", i)
		o.do(tc.cmd...)
		require.Equal(t, "+OK\r\n", w.do("MULTI"), "case %d", i)
		require.Equal(t, "+QUEUED\r\n", w.do("PING"), "case %d", i)
		aborted := w.do("EXEC") == "*-1\r\n"
		if aborted != tc.changes {
			t.Errorf("case %d: %q: transaction aborted %v, want %v", i, tc.cmd, aborted, tc.changes)
		}
		o.do("DEL", "k", "k2")
	}
}

// newDirectConn returns a connection object of a test server that tests and
// benchmarks drive by calling dispatch directly, with no socket: it measures
// the command path alone.
func newDirectConn(tb testing.TB, ts *testServer) *Client {
	return &Client{eng: ts.srv, proto: 2, Authed: true}
}

// directDo runs one command on c and returns its reply.
func directDo(c *Client, args ...[]byte) []byte {
	c.Out = c.Out[:0]
	c.dispatch(args)
	return c.Out
}

func bs(args ...string) [][]byte {
	out := make([][]byte, len(args))
	for i, s := range args {
		out[i] = []byte(s)
	}
	return out
}

// TestStringHotPathAllocs pins the allocation counts of the hot paths:
// GET, INCR and SET of an existing key allocate nothing (Entry.SetBytes
// reuses the entry's buffer when the new value fits).
func TestStringHotPathAllocs(t *testing.T) {
	ts := newTestServer(t)
	c := newDirectConn(t, ts)
	tests := []struct {
		args []string
		want string
		max  float64
	}{
		0: {a("SET", "counter", "41"), "+OK\r\n", 0},
		1: {a("INCR", "counter"), "", 0},
		2: {a("INCRBY", "counter", "3"), "", 0},
		3: {a("GET", "counter"), "", 0},
		4: {a("SET", "str", "hello"), "+OK\r\n", 0},
		5: {a("GET", "str"), bulk("hello"), 0},
		6: {a("GET", "missing"), nullBulk, 0},
		7: {a("SET", "counter", "7", "KEEPTTL"), "+OK\r\n", 0},
		8: {a("EXISTS", "counter"), ":1\r\n", 0},
		9: {a("TTL", "counter"), ":-1\r\n", 0},
	}
	for i, tc := range tests {
		args := bs(tc.args...)
		directDo(c, args...) // create the key and warm the buffers
		allocs := testing.AllocsPerRun(200, func() {
			out := directDo(c, args...)
			if tc.want != "" && string(out) != tc.want {
				t.Fatalf("case %d: %q: have %q, want %q", i, tc.args, out, tc.want)
			}
		})
		if allocs > tc.max {
			t.Errorf("case %d: %q: %.1f allocations per call, want at most %.0f", i, tc.args, allocs, tc.max)
		}
	}
}

func benchmarkCommand(b *testing.B, setup []string, args ...string) {
	ts := newTestServer(b)
	var seq atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		c := newDirectConn(b, ts)
		// Each goroutine has its own key, so the benchmark measures the
		// command path rather than contention on one shard.
		key := []byte("bench:" + strconv.FormatInt(seq.Add(1), 10))
		argv := bs(args...)
		argv[1] = key
		if setup != nil {
			sv := bs(setup...)
			sv[1] = key
			directDo(c, sv...)
		}
		for pb.Next() {
			directDo(c, argv...)
		}
	})
}

func BenchmarkGet(b *testing.B) {
	benchmarkCommand(b, a("SET", "k", "some value"), "GET", "k")
}

func BenchmarkGetInt(b *testing.B) {
	benchmarkCommand(b, a("SET", "k", "123456"), "GET", "k")
}

func BenchmarkSetInt(b *testing.B) {
	benchmarkCommand(b, nil, "SET", "k", "123456")
}

func BenchmarkSetString(b *testing.B) {
	benchmarkCommand(b, nil, "SET", "k", "some value")
}

func BenchmarkSetEX(b *testing.B) {
	benchmarkCommand(b, nil, "SET", "k", "123456", "EX", "60")
}

func BenchmarkIncr(b *testing.B) {
	benchmarkCommand(b, nil, "INCR", "k")
}

func BenchmarkIncrSharedKey(b *testing.B) {
	ts := newTestServer(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		c := newDirectConn(b, ts)
		argv := bs("INCR", "hot")
		for pb.Next() {
			directDo(c, argv...)
		}
	})
}

// TestIncrbyfloatLongDouble: sums are computed as Redis's 80-bit long
// double and printed as Redis prints them.
func TestIncrbyfloatLongDouble(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	for i, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"INCRBYFLOAT", "a", "0.1"}, "$3\r\n0.1\r\n"},
		{[]string{"INCRBYFLOAT", "a", "0.2"}, "$3\r\n0.3\r\n"},
		{[]string{"SET", "b", "10.6"}, "+OK\r\n"},
		{[]string{"INCRBYFLOAT", "b", "5000"}, "$22\r\n5010.60000000000000009\r\n"}, // as redis-server 7.0.15 replies
		{[]string{"INCRBYFLOAT", "c", "1e30"}, "$31\r\n1000000000000000000024696061952\r\n"},
	} {
		if got := r.do(tt.args...); got != tt.want {
			t.Errorf("step %d %q: have %q, want %q", i, tt.args, got, tt.want)
		}
	}
}

// WATCH as Redis 7.0 keeps it: a key whose
// deadline passed before WATCH is absent, not a change to come when it is
// reclaimed; FLUSHALL touches only watched keys that exist; UNWATCH inside
// MULTI is queued, and runs at EXEC after the watch was checked.
func TestWatchEdges(t *testing.T) {
	ts := newTestServer(t)
	w, o := ts.raw(t), ts.raw(t)

	require.Equal(t, "+OK\r\n", o.do("SET", "k", "v", "PX", "20"))
	ts.clock.Advance(60 * time.Millisecond)
	require.Equal(t, "+OK\r\n", w.do("WATCH", "k"))
	require.Equal(t, ":0\r\n", o.do("EXISTS", "k")) // would reclaim it
	ts.store.ExpireCycle(ts.clock.Now()/1e6, time.Second)
	require.Equal(t, "+OK\r\n", w.do("MULTI"))
	require.Equal(t, "+QUEUED\r\n", w.do("GET", "k"))
	require.Equal(t, "*1\r\n$-1\r\n", w.do("EXEC"), "a key expired before WATCH is no change")

	require.Equal(t, "+OK\r\n", w.do("WATCH", "missing"))
	require.Equal(t, "+OK\r\n", o.do("FLUSHALL"))
	require.Equal(t, "+OK\r\n", w.do("MULTI"))
	require.Equal(t, "+QUEUED\r\n", w.do("GET", "missing"))
	require.Equal(t, "*1\r\n$-1\r\n", w.do("EXEC"), "FLUSHALL touched no existing watched key")

	require.Equal(t, "+OK\r\n", o.do("SET", "x", "1"))
	require.Equal(t, "+OK\r\n", w.do("WATCH", "x"))
	require.Equal(t, "+OK\r\n", o.do("FLUSHALL"))
	require.Equal(t, "+OK\r\n", w.do("MULTI"))
	require.Equal(t, "+QUEUED\r\n", w.do("GET", "x"))
	require.Equal(t, "*-1\r\n", w.do("EXEC"), "FLUSHALL deleted a watched key")

	require.Equal(t, "+OK\r\n", w.do("WATCH", "x"))
	require.Equal(t, "+OK\r\n", w.do("MULTI"))
	require.Equal(t, "+QUEUED\r\n", w.do("UNWATCH"))
	require.Equal(t, "+OK\r\n", o.do("SET", "x", "2"))
	require.Equal(t, "+QUEUED\r\n", w.do("GET", "x"))
	require.Equal(t, "*-1\r\n", w.do("EXEC"), "UNWATCH queued: the watch still held at EXEC")
}
