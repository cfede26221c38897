package command

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ratekv/ratekv/shards"
	"github.com/stretchr/testify/require"
)

// Differential test: the same commands go to a real redis-server and to
// ratekv over raw connections, and the raw replies must be byte-equal.
//
//	RATEKV_REDIS_ADDR=127.0.0.1:6379 go test ./command/ -run TestDiffRedis -v
//
// The redis-server's data is flushed. RATEKV_DIFF_SEED replays a seed; the
// seed in use is logged. Without RATEKV_REDIS_ADDR the test is skipped.
//
// ratekv's clock in tests is a fake clock frozen at the real time the
// server started, while redis-server's moves on; so the generator uses
// relative deadlines far longer than the test runs (nothing expires by
// the passage of time on either side), absolute deadlines far from now or
// in the past, and no GT comparison between two relative deadlines (whose
// outcome depends on the time elapsed between them). Replies that report a
// remaining time or a deadline (TTL, PTTL, EXPIRETIME, PEXPIRETIME) are
// compared within the time elapsed since the test started; every other
// reply must be byte-equal. SCAN cursors are server-specific, so SCAN is
// sent only in forms that finish in one call (a COUNT above the key count)
// or fail; KEYS only with patterns that match at most one key, since the
// two servers order keys differently.

// diffCommandsRandom is how many random commands each protocol gets.
const diffCommandsRandom = 4000

func TestDiffRedis(t *testing.T) {
	addr := redisAddr(t)
	seed := diffSeed(t, "RATEKV_DIFF_SEED")

	ts := newTestServer(t)
	start := time.Now()
	hasZset := commands["zadd"] != nil
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			d := &differ{t: t, real: dialRaw(t, addr), ours: ts.raw(t), maxFails: 30}
			d.normalize = func(args []string, have, want string) (string, string) {
				if timeClose(start, args[0], have, want) || comparedClose(d, start, args, have, want) {
					return want, want
				}
				return have, want
			}
			for _, r := range []*rawConn{d.real, d.ours} {
				require.Equal(t, "+OK\r\n", r.do("FLUSHALL"))
				if proto == 3 {
					require.True(t, strings.HasPrefix(r.do("HELLO", "3"), "%"))
				}
			}
			for _, args := range fixedEmpty() {
				d.check(args)
			}
			// Keys of another type, for WRONGTYPE: sorted sets on both sides
			// (put straight into ratekv's store when it has no ZADD).
			for _, k := range []string{"zk", "zk2"} {
				require.Equal(t, ":1\r\n", d.real.do("ZADD", k, "1", "m"))
				if hasZset {
					require.Equal(t, ":1\r\n", d.ours.do("ZADD", k, "1", "m"))
				} else {
					putOtherKind(t, ts, k, shards.KindZSet)
				}
			}
			g := &cmdGen{rng: rand.New(rand.NewPCG(seed, uint64(proto))), nowS: start.Unix(), zset: hasZset}
			for _, args := range g.fixed() {
				d.check(args)
			}
			for i := 0; i < diffCommandsRandom; i++ {
				d.check(g.next())
			}
			// Compare the final state of every key the generator uses.
			for _, k := range diffAllKeys {
				d.check(a("TYPE", k))
				d.check(a("MGET", k))
				d.check(a("PTTL", k))
			}
			t.Logf("%d commands compared", d.steps)
		})
	}
}

// timeClose reports whether the replies of a time-reporting command differ
// only by the time elapsed since the test started: both integers, equal if
// either is a -1/-2 marker.
func timeClose(start time.Time, cmd, have, want string) bool {
	var secs bool
	switch strings.ToLower(cmd) {
	case "ttl", "expiretime":
		secs = true
	case "pttl", "pexpiretime":
	default:
		return false
	}
	h, err1 := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(have, ":"), "\r\n"), 10, 64)
	w, err2 := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(want, ":"), "\r\n"), 10, 64)
	if err1 != nil || err2 != nil || h < 0 || w < 0 {
		return false
	}
	slack := time.Since(start).Milliseconds() + 50
	if secs {
		slack = slack/1000 + 2
	}
	return max(h-w, w-h) <= slack
}

// comparedClose reports whether an EXPIRE-family command with GT or LT
// answered differently only because the two servers' clocks differ: the
// new deadline is relative to each one's clock (ratekv's test clock stands
// still while redis-server's runs), so against a deadline within the test's
// run time of it the comparison may go either way. It holds when the
// deadlines the two servers keep afterwards are that close.
func comparedClose(d *differ, start time.Time, args []string, have, want string) bool {
	if len(args) < 3 || !strings.HasSuffix(strings.ToLower(args[0]), "expire") {
		return false
	}
	if (have != ":0\r\n" || want != ":1\r\n") && (have != ":1\r\n" || want != ":0\r\n") {
		return false
	}
	gtlt := false
	for _, a := range args[3:] {
		if o := strings.ToUpper(a); o == "GT" || o == "LT" {
			gtlt = true
		}
	}
	return gtlt && timeClose(start, "pexpiretime", d.ours.do("PEXPIRETIME", args[1]), d.real.do("PEXPIRETIME", args[1]))
}

// diffKeys are the keys the generator works on; "{t}" keys share a slot.
// "flt" is INCRBYFLOAT's, written only with values whose sums float64
// represents exactly (see floatArg); the others take any command.
var (
	diffKeys    = []string{"k1", "k2", "k3", "{t}a", "{t}b", "num", "big"}
	diffAllKeys = append(append([]string(nil), diffKeys...), "flt")
)

// cmdGen generates commands, valid and not, over diffKeys.
type cmdGen struct {
	rng  *rand.Rand
	nowS int64 // Unix seconds at the start
	zset bool  // ratekv has ZADD: keys of another type can be made
}

func (g *cmdGen) pick(s ...string) string { return s[g.rng.IntN(len(s))] }
func (g *cmdGen) key() string             { return diffKeys[g.rng.IntN(len(diffKeys))] }

// value is a string argument: numbers, almost-numbers and text.
func (g *cmdGen) value() string {
	return g.pick("", "0", "1", "-1", "10", "42", "abc", "3.5", "-2.25", "1e3", " 1", "01", "-0", "+1",
		"9223372036854775807", "-9223372036854775808", "9223372036854775808", "hello world", "a\x00b", "1.0",
		"0x10", "inf", "nan", strings.Repeat("z", 100))
}

// intArg is an integer argument, sometimes not one.
func (g *cmdGen) intArg() string {
	return g.pick("0", "1", "-1", "5", "-5", "100", "-100", "abc", "1.5", "",
		"9223372036854775807", "-9223372036854775808", "9223372036854775808", strconv.Itoa(g.rng.IntN(2000)-1000))
}

// floatArg is an INCRBYFLOAT increment. Sums of these stay exact in binary
// (Redis adds long doubles, ratekv float64s; num.go documents where that
// shows), except for the invalid and infinite ones.
func (g *cmdGen) floatArg() string {
	return g.pick("0", "1", "-1", "0.5", "-0.25", "1.5", "2.75", "1e3", "5.0e3", "-1024", "abc", "", " 1",
		"inf", "-inf", "nan", "0x10", "1.5e2", "+2", "100")
}

// relSecs is a relative time in seconds (or, with ms, milliseconds):
// long enough never to expire during the test, or invalid.
func (g *cmdGen) rel(ms bool) string {
	long := g.pick("1000", "5000", "20000", "86400")
	if ms {
		long = g.pick("1000000", "5000000", "20000000", "86400000")
	}
	if g.rng.IntN(4) == 0 {
		return g.pick("0", "-1", "abc", "1.5", "9223372036854775807", "-9223372036854775808",
			"9223372036854775", "9223372036854776", "")
	}
	return long
}

// abs is an absolute Unix time in seconds (or ms): in the past, far ahead,
// or invalid.
func (g *cmdGen) abs(ms bool) string {
	v := g.pick("past", "future", "future", "bad")
	switch v {
	case "past":
		return g.pick("1", "100", "0", "-5")
	case "future":
		s := g.nowS + int64(g.pick2(3600, 7200, 100000))
		if ms {
			return strconv.FormatInt(s*1000+int64(g.rng.IntN(1000)), 10)
		}
		return strconv.FormatInt(s, 10)
	}
	return g.pick("abc", "9223372036854775807", "-9223372036854775808", "9223372036854776", "")
}

func (g *cmdGen) pick2(v ...int) int { return v[g.rng.IntN(len(v))] }

// expireFlagsArgs returns 0-2 EXPIRE options. For relative commands a
// lone GT (with or without XX) is dropped: its outcome against another
// relative deadline depends on the time between the two.
func (g *cmdGen) expireFlagsArgs(relative bool) []string {
	var opts []string
	for n := g.rng.IntN(3); n > 0; n-- {
		opts = append(opts, g.pick("NX", "XX", "GT", "LT", "nx", "gt", "FOO"))
	}
	if relative {
		f, msg := parseExpireFlags(bs(opts...))
		if msg == "" && f&expireGT != 0 {
			return nil
		}
	}
	return opts
}

// setOptions returns random SET (or GETEX) options, valid or not.
func (g *cmdGen) setOptions(getex bool) []string {
	var opts []string
	for n := g.rng.IntN(4); n > 0; n-- {
		var o string
		if getex {
			o = g.pick("EX", "PX", "EXAT", "PXAT", "PERSIST", "NX", "KEEPTTL", "FOO")
		} else {
			o = g.pick("NX", "XX", "GET", "KEEPTTL", "EX", "PX", "EXAT", "PXAT", "PERSIST", "FOO", "nx", "get")
		}
		opts = append(opts, o)
		switch o {
		case "EX":
			opts = append(opts, g.rel(false))
		case "PX":
			opts = append(opts, g.rel(true))
		case "EXAT":
			opts = append(opts, g.abs(false))
		case "PXAT":
			opts = append(opts, g.abs(true))
		}
		if g.rng.IntN(20) == 0 { // a missing argument
			opts = opts[:len(opts)-1]
		}
	}
	return opts
}

// pattern is a KEYS/SCAN pattern matching at most one of diffKeys.
func (g *cmdGen) pattern() string {
	k := g.key()
	return g.pick(k, "nomatch*", "k[1]", "k?x", "\\{t\\}a", "{t}[b]", "big*", "n?m")
}

// next returns one random command.
func (g *cmdGen) next() []string {
	k := g.key()
	switch g.rng.IntN(40) {
	case 0:
		return append(a("SET", k, g.value()), g.setOptions(false)...)
	case 1:
		return a("SET", k, g.value())
	case 2:
		return a("GET", k)
	case 3:
		return append(a("GETEX", k), g.setOptions(true)...)
	case 4:
		return a("GETDEL", k)
	case 5:
		return a("GETSET", k, g.value())
	case 6:
		return a("SETNX", k, g.value())
	case 7:
		return a("SETEX", k, g.rel(false), g.value())
	case 8:
		return a("PSETEX", k, g.rel(true), g.value())
	case 9:
		return a("MGET", k, g.key(), g.key())
	case 10:
		if g.rng.IntN(5) == 0 {
			return a("MSET", k, g.value(), g.key()) // odd: an arity error
		}
		return a("MSET", k, g.value(), g.key(), g.value())
	case 11:
		return a("MSETNX", k, g.value(), g.key(), g.value())
	case 12, 13:
		return a(g.pick("INCR", "DECR"), g.pick(k, "num"))
	case 14, 15:
		return a(g.pick("INCRBY", "DECRBY"), g.pick(k, "num"), g.intArg())
	case 16:
		if g.rng.IntN(6) == 0 {
			return a(g.pick("SET", "GETSET"), "flt", g.pick("1.5", "abc", "10", "-3.25", "1e3", "0x10", "inf", "", " 2"))
		}
		return a("INCRBYFLOAT", "flt", g.floatArg())
	case 17:
		return a("APPEND", k, g.pick("", "x", "12", "-", "abc"))
	case 18:
		return a("STRLEN", k)
	case 19:
		return a(g.pick("GETRANGE", "SUBSTR"), k, g.intArg(), g.intArg())
	case 20:
		off := g.pick("0", "1", "3", "10", "100", "-1", "abc", "536870912", "536870911", "9223372036854775807")
		if off == "536870911" { // would build a 512 MB string on both sides
			return a("SETRANGE", k, off, "")
		}
		return a("SETRANGE", k, off, g.pick("", "x", "hello", "\x00"))
	case 21:
		return a("DEL", k, g.key())
	case 22:
		return a("UNLINK", k)
	case 23:
		return a("EXISTS", k, g.key(), k)
	case 24:
		return a("TOUCH", k, g.key())
	case 25:
		return a("TYPE", k)
	case 26, 27:
		cmd := g.pick("EXPIRE", "PEXPIRE")
		return append(a(cmd, k, g.rel(cmd == "PEXPIRE")), g.expireFlagsArgs(true)...)
	case 28, 29:
		cmd := g.pick("EXPIREAT", "PEXPIREAT")
		return append(a(cmd, k, g.abs(cmd == "PEXPIREAT")), g.expireFlagsArgs(false)...)
	case 30, 31:
		return a(g.pick("TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME"), k)
	case 32:
		return a("PERSIST", k)
	case 33:
		return a(g.pick("RENAME", "RENAMENX"), k, g.pick(g.key(), k))
	case 34:
		return a("KEYS", g.pattern())
	case 35:
		// Always a MATCH: the servers order the keys of a reply differently.
		args := a("SCAN", g.pick("0", "0", "abc", "-1x", " 0"), "COUNT", g.pick("100000", "0", "x"), "MATCH", g.pattern())
		if g.rng.IntN(3) == 0 {
			args = append(args, "TYPE", g.pick("string", "STRING", "zset", "hash", "list", "none"))
		}
		if g.rng.IntN(8) == 0 {
			args = append(args, g.pick("MATCH", "FOO"))
		}
		return args
	case 36:
		// The sorted set "zk": string commands must refuse it and leave it.
		return g.pickArgs(a("GET", "zk"), a("SET", "zk", "v", "GET"), a("GETEX", "zk", "PERSIST"), a("GETDEL", "zk"),
			a("GETSET", "zk", "v"), a("INCR", "zk"), a("DECRBY", "zk", g.intArg()), a("INCRBYFLOAT", "zk", g.floatArg()),
			a("APPEND", "zk", "x"), a("STRLEN", "zk"), a("GETRANGE", "zk", g.intArg(), "-1"),
			a("SETRANGE", "zk", g.intArg(), g.pick("", "x")), a("MGET", k, "zk"), a("SETNX", "zk", "v"),
			a("MSETNX", k, "v", "zk", "v"), a("EXISTS", "zk", k), a("TYPE", "zk"), a("EXPIRE", "zk", g.rel(false)),
			a("TTL", "zk"), a("PERSIST", "zk"), a("KEYS", "zk"),
			a("SCAN", "0", "COUNT", "1000", "MATCH", "z*", "TYPE", g.pick("zset", "string")))
	case 37:
		// Wrong arity.
		return g.pickArgs(a("GET"), a("SET", k), a("GETRANGE", k, "0"), a("INCRBY", k), a("EXPIRE", k),
			a("TTL", k, k), a("RENAME", k), a("KEYS"), a("SETEX", k, "10"), a("GETDEL", k, k))
	default:
		return a("GET", k)
	}
}

func (g *cmdGen) pickArgs(opts ...[]string) []string { return opts[g.rng.IntN(len(opts))] }

// fixedEmpty is the start of the fixed sequence, on an empty keyspace and
// then with one key, where whole-keyspace replies do not depend on order.
func fixedEmpty() [][]string {
	return [][]string{
		a("RANDOMKEY"),
		a("KEYS", "*"),
		a("SCAN", "0"),
		a("SCAN", "0", "MATCH", "*", "TYPE", "string"),
		a("SET", "k1", "v"),
		a("RANDOMKEY"),
		a("KEYS", "*"),
		a("SCAN", "0", "COUNT", "1000"),
		a("SCAN", "0"),
		a("DEL", "k1"),
	}
}

// fixed returns the fixed part of the sequence: the edge cases the unit
// tests check, re-checked against redis-server.
func (g *cmdGen) fixed() [][]string {
	future := strconv.FormatInt(g.nowS+100000, 10)
	cmds := [][]string{
		// Transactions: UNWATCH is queued, EXEC with arguments discards.
		a("MULTI"), a("UNWATCH"), a("GET", "k1"), a("EXEC"),
		a("MULTI"), a("SET", "k1", "q"), a("EXEC", "x"), a("GET", "k1"), a("EXEC"),
		a("EXEC", "x"),
		a("SET", "k1", "v", "NX", "XX"),
		a("SET", "k1", "v", "EX", "10", "PX", "10"),
		a("SET", "k1", "v", "EX", "0"),
		a("SET", "k1", "v", "EX", "-1"),
		a("SET", "k1", "v", "EX", "abc"),
		a("SET", "k1", "v", "EX", "9223372036854775"),
		a("SET", "k1", "v", "EX", "9223372036854776"),
		a("SET", "k1", "v", "PX", "9223372036854775807"),
		a("SET", "k1", "v", "PXAT", "9223372036854775807"),
		a("PEXPIRETIME", "k1"),
		a("SET", "k1", "v", "EX", "0", "FOO"),
		a("SET", "k1", "w", "GET"),
		a("SET", "k1", "x", "NX", "GET"),
		a("SET", "k1", "y", "XX", "GET", "KEEPTTL"),
		a("SET", "k1", "v", "nx\x00junk"),
		a("SET", "k1", "v", "EXAT", "1"),
		a("GET", "k1"),
		a("SET", "k1", "v", "KEEPTTL", "EX", "10"),
		a("SET", "k1", "v", "PERSIST"),
		a("SET", "k1", "v", "EX"),
		a("GETEX", "k1", "NX"),
		a("GETEX", "nokey", "EX", "0"),
		a("SET", "k1", "v"),
		a("GETEX", "k1", "EX", "0"),
		a("GETEX", "k1", "EX", "100000", "PERSIST"),
		a("GETEX", "k1", "EXAT", future),
		a("EXPIRETIME", "k1"),
		a("GETEX", "k1", "PERSIST"),
		a("TTL", "k1"),
		a("GETEX", "k1", "PXAT", "1"),
		a("EXISTS", "k1"),
		a("SET", "k1", "v"),
		a("EXPIRE", "k1", "10", "NX", "XX"),
		a("EXPIRE", "k1", "10", "GT", "LT"),
		a("EXPIRE", "k1", "10", "FOO"),
		a("EXPIRE", "k1", "10", "bar\r\nbaz"),
		a("EXPIRE", "k1", "abc", "FOO"),
		a("EXPIRE", "k1", "abc"),
		a("EXPIRE", "k1", "9223372036854776"),
		a("EXPIREAT", "k1", "-9223372036854776"),
		a("PEXPIRE", "k1", "9223372036854775807"),
		a("EXPIRE", "k1", "1000", "GT"),
		a("EXPIRE", "k1", "1000", "XX"),
		a("EXPIREAT", "k1", future, "LT"),
		a("EXPIREAT", "k1", future, "NX"),
		a("EXPIREAT", "k1", future, "GT"),
		a("EXPIRETIME", "k1"),
		a("PEXPIREAT", "k1", "-9223372036854775808"),
		a("EXISTS", "k1"),
		a("TTL", "k1"),
		a("PTTL", "k1"),
		a("PERSIST", "k1"),
		a("SET", "k1", "v"),
		a("PERSIST", "k1"),
		a("TTL", "k1"),
		a("EXPIRETIME", "k1"),
		a("RENAME", "nokey", "k2"),
		a("RENAME", "nokey", "nokey"),
		a("RENAME", "k1", "k1"),
		a("RENAMENX", "k1", "k1"),
		a("RENAME", "k1", "k2"),
		a("SET", "k1", "v"),
		a("RENAMENX", "k1", "k2"),
		a("RENAMENX", "k2", "k3"),
		a("SCAN", "abc"),
		a("SCAN", " 0"),
		a("SCAN", "", "MATCH", "k1"),
		// "SCAN -1" is left out: Redis masks a huge cursor with its table size, so which keys it returns depends on that size; in ratekv it names a shard past the last, which ends the scan.
		a("SCAN", "0", "COUNT", "0"),
		a("SCAN", "0", "COUNT", "-1"),
		a("SCAN", "0", "COUNT"),
		a("SCAN", "0", "MATCH", "k1", "COUNT", "1000"),
		a("SCAN", "0", "MATCH", "k1", "COUNT", "1000", "TYPE", "STRING"),
		a("SCAN", "0", "TYPE", "nosuchtype", "COUNT", "1000"),
		a("SCAN", "0", "FOO", "bar"),
		a("INCR", "num"),
		a("INCRBY", "num", "9223372036854775806"),
		a("INCR", "num"),
		a("DECRBY", "num", "-9223372036854775808"),
		a("DECRBY", "num", "9223372036854775807"),
		a("DECRBY", "num", "2"),
		a("INCRBY", "num", "1.5"),
		a("SET", "num", " 1"),
		a("INCR", "num"),
		a("SET", "num", "-0"),
		a("DECR", "num"),
		// Sums exact in binary: Redis adds long doubles and ratekv float64s,
		// whose rounding shows in the 17 places Redis prints (num.go).
		a("INCRBYFLOAT", "flt", "10.5"),
		a("INCRBYFLOAT", "flt", "0.25"),
		a("INCRBYFLOAT", "flt", "-5"),
		a("INCRBYFLOAT", "flt", "5.0e3"),
		a("INCRBYFLOAT", "flt", "0x1p-2"),
		a("INCRBYFLOAT", "flt", "inf"),
		a("INCRBYFLOAT", "flt", "abc"),
		a("INCRBYFLOAT", "nokey", "abc"),
		a("INCRBYFLOAT", "flt2", "3.0e-5"),
		a("INCRBYFLOAT", "flt3", "1e20"),
		a("INCRBYFLOAT", "flt4", "-1e-20"),
		a("DEL", "flt2", "flt3", "flt4"),
		a("SET", "big", "Hello World"),
		a("GETRANGE", "big", "-1", "-5"),
		a("GETRANGE", "big", "-5", "-1"),
		a("GETRANGE", "big", "0", "-100"),
		a("GETRANGE", "big", "-100", "100"),
		a("GETRANGE", "big", "-9223372036854775808", "9223372036854775807"),
		a("GETRANGE", "nokey", "0", "-1"),
		a("SETRANGE", "big", "-1", "x"),
		a("SETRANGE", "big", "536870912", "x"),
		a("SETRANGE", "big", "9223372036854775807", "x"),
		a("SETRANGE", "big", "15", "x"),
		a("GET", "big"),
		a("SETRANGE", "nokey", "5", ""),
		a("APPEND", "big", "!"),
		a("MSET", "k1"),
		a("MSET", "k1", "1", "k2"),
		a("MSETNX", "k1", "1", "k3"),
		a("MSETNX", "k1", "1", "new1", "2"),
		a("MSETNX", "new1x", "1", "new2", "2"),
		a("MGET", "k1", "new1x", "new2", "nokey"),
		a("DEL", "new1x", "new2"),
		a("GET"),
		a("SET", "k1"),
		a("MGET"),
		a("GETEX"),
		a("DEL"),
		a("EXPIRE", "k1"),
		a("KEYS", "k1"),
		a("KEYS", "nomatch*"),
	}
	// The sorted sets made at the start ("zk" stays one; "zk2" is
	// renamed and overwritten).
	cmds = append(cmds,
		a("TYPE", "zk"), a("GET", "zk"), a("SET", "zk", "v", "GET"), a("SET", "zk", "v", "EX", "0", "GET"),
		a("GETEX", "zk"), a("GETEX", "zk", "EX", "0"), a("GETDEL", "zk"), a("GETSET", "zk", "x"), a("INCR", "zk"),
		a("INCRBY", "zk", "x"), a("DECRBY", "zk", "1"), a("INCRBYFLOAT", "zk", "1"), a("INCRBYFLOAT", "zk", "abc"),
		a("APPEND", "zk", "x"), a("STRLEN", "zk"), a("GETRANGE", "zk", "0", "1"), a("GETRANGE", "zk", "x", "1"),
		a("SUBSTR", "zk", "0", "1"), a("SETRANGE", "zk", "0", ""), a("SETRANGE", "zk", "-1", "x"),
		a("MGET", "zk", "k1"), a("SETNX", "zk", "v"), a("MSETNX", "zk", "v", "fresh", "v"), a("EXISTS", "zk", "fresh"),
		a("SCAN", "0", "TYPE", "zset", "COUNT", "1000", "MATCH", "zk"), a("SCAN", "0", "TYPE", "ZSET", "MATCH", "*2", "COUNT", "1000"),
		a("RENAME", "zk2", "zk3"), a("TYPE", "zk3"), a("RENAMENX", "zk3", "zk"), a("RENAME", "zk3", "zk2"),
		a("EXPIRE", "zk2", "1000"), a("SET", "zk2", "v", "KEEPTTL"), a("TYPE", "zk2"), a("TTL", "zk2"),
		a("DEL", "zk2"))
	return cmds
}
