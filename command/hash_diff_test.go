package command

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// Differential test of the hash commands: a random command sequence goes to
// a real redis-server and to ratekv over raw connections, and the raw
// replies must be byte-equal.
//
//	RATEKV_REDIS_ADDR=127.0.0.1:6379 go test ./command/ -run TestHashDiffRedis -v
//
// It runs with hash-max-listpack-entries 512 (the default; both servers
// list fields in insertion order), 3 (hashes convert in the middle of the
// sequence, and values longer than hash-max-listpack-value are written too)
// and 0 (always the table), set on both servers, in RESP2 and RESP3. The
// redis-server's data is flushed and its limit restored afterwards.
// RATEKV_HDIFF_SEED replays a seed; the seed in use is logged.
//
// What may differ is normalised rather than compared: HRANDFIELD's picks
// (only the reply's length is compared), and the order of a converted
// hash's fields (HGETALL, HKEYS, HVALS and HSCAN, whose COUNT then covers
// the hash, are compared as sets).

const hdiffCommands = 3000

func TestHashDiffRedis(t *testing.T) {
	addr := redisAddr(t)
	seed := diffSeed(t, "RATEKV_HDIFF_SEED")
	normalize := func(entries string) func(args []string, have, want string) (string, string) {
		return func(args []string, have, want string) (string, string) {
			return hdiffNormalize(args, have, want, entries != "512")
		}
	}
	diffOverLimits(t, addr, "hash-max-listpack-entries", []string{"512", "3", "0"}, normalize, func(t *testing.T, d *differ, entries string, proto int) {
		d.check([]string{"SET", "str", "v"})
		d.check([]string{"ZADD", "z", "1", "m"})
		g := &hgen{rng: rand.New(rand.NewPCG(seed, uint64(proto)<<8|uint64(len(entries)))), big: entries != "512"}
		for i := 0; i < hdiffCommands; i++ {
			d.check(g.next())
		}
		for _, k := range hdiffKeys {
			d.check([]string{"HGETALL", k})
		}
	})
}

// hdiffNormalize maps the replies that may legitimately differ onto what
// must agree: HRANDFIELD's length, and a converted hash's fields as a set.
func hdiffNormalize(args []string, have, want string, big bool) (string, string) {
	switch cmd := strings.ToUpper(args[0]); {
	case cmd == "HRANDFIELD" && len(args) == 2 && want[0] == '$' && have[0] == '$':
		return "$", "$" // one random field
	case cmd == "HRANDFIELD":
		return firstLine(have), firstLine(want)
	case !big:
	case cmd == "HGETALL", cmd == "HSCAN":
		return unordered(have, 2, cmd == "HSCAN"), unordered(want, 2, cmd == "HSCAN")
	case cmd == "HKEYS", cmd == "HVALS":
		return unordered(have, 1, false), unordered(want, 1, false)
	}
	return have, want
}

var (
	hdiffKeys   = []string{"h1", "h2", "h3"}
	hdiffFields = []string{"a", "b", "c", "d", "e", "tokens", "ts", "1", "-2", "10", "007", "", "f\x00g",
		"c2f5b3d2-8d1e-4f7a-9b3c-1a2b3c4d5e6f", "1795307408539"}
	hdiffValues = []string{"0", "1", "-1", "9", "63", "64", "1795307408539", "9223372036854775807", "-9223372036854775808",
		"9223372036854775808", "1.5", "-0.25", "007", "-0", " 1", "abc", "", "inf", "1e3", "0x10", "nan"}
	hdiffIncrs  = []string{"1", "-1", "5", "0", "100", "-100", "9223372036854775807", "-9223372036854775808", "abc", "1.5", ""}
	hdiffFloats = []string{"0.1", "0.2", "-0.3", "1", "1.5", "-2.25", "1e3", "5.0e3", "99971", "-697.55", "0x10", "abc",
		"inf", "-inf", "nan", "", " 1", "1e5000", "3.0e-5"}
)

type hgen struct {
	rng *rand.Rand
	big bool // long values too, and HSCAN with a COUNT that finishes in one call
}

func (g *hgen) pick(s ...string) string { return s[g.rng.IntN(len(s))] }
func (g *hgen) chance(n int) bool       { return g.rng.IntN(n) == 0 }
func (g *hgen) key() string             { return g.pick(append([]string{"str", "z", "nokey"}, hdiffKeys...)...) }
func (g *hgen) wkey() string            { return g.pick(append([]string{"str", "z"}, hdiffKeys...)...) }
func (g *hgen) field() string           { return g.pick(hdiffFields...) }

func (g *hgen) value() string {
	if g.big && g.chance(20) {
		return strings.Repeat("v", 60+g.rng.IntN(10)) // around hash-max-listpack-value
	}
	return g.pick(hdiffValues...)
}

func (g *hgen) fields(n int) []string {
	var out []string
	for i := 0; i < n; i++ {
		out = append(out, g.field())
	}
	return out
}

// next returns a random command. Writes go to h1-h3 (and str and z, for
// WRONGTYPE), reads also to nokey, which stays missing.
func (g *hgen) next() []string {
	k, w := g.key(), g.wkey()
	switch g.rng.IntN(22) {
	case 0, 1, 2, 3:
		args := []string{g.pick("HSET", "HSET", "HMSET"), w}
		for n := 1 + g.rng.IntN(3); n > 0; n-- {
			args = append(args, g.field(), g.value())
		}
		if g.chance(30) {
			args = args[:len(args)-1] // an odd count
		}
		return args
	case 4:
		return []string{"HSETNX", w, g.field(), g.value()}
	case 5, 6:
		return []string{"HGET", k, g.field()}
	case 7:
		return append([]string{"HMGET", k}, g.fields(1+g.rng.IntN(3))...)
	case 8, 9:
		return append([]string{"HDEL", w}, g.fields(1+g.rng.IntN(3))...)
	case 10:
		return []string{g.pick("HEXISTS", "HSTRLEN"), k, g.field()}
	case 11:
		return []string{g.pick("HLEN", "TYPE", "EXISTS", "HGETALL", "HKEYS", "HVALS"), k}
	case 12, 13:
		return []string{"HINCRBY", w, g.field(), g.pick(hdiffIncrs...)}
	case 14, 15:
		incr := g.pick(hdiffFloats...)
		if g.big && g.chance(10) {
			incr = "1e400" // beyond float64, and a sum too long for the compact encoding
		}
		return []string{"HINCRBYFLOAT", w, g.field(), incr}
	case 16:
		args := []string{"HRANDFIELD", k}
		if g.chance(3) {
			return args
		}
		args = append(args, g.pick("0", "1", "3", "-3", "100", "-100", "x", "-9223372036854775808"))
		if g.chance(2) {
			args = append(args, g.pick("WITHVALUES", "withvalues", "x"))
		}
		return args
	case 17:
		args := []string{"HSCAN", k, g.pick("0", "0", "0", "x")}
		if g.chance(3) {
			args = append(args, "MATCH", g.pick("*", "a*", "?", "1*", "[a-c]", "t*"))
		}
		switch {
		case g.big: // without COUNT, both would stop after about ten
			args = append(args, "COUNT", g.pick("1000", "1000", "1000", "0", "x"))
		case g.chance(3):
			args = append(args, "COUNT", g.pick("100", "0", "x"))
		}
		return args
	case 18:
		// String and sorted-set commands on a hash.
		h := g.pick(hdiffKeys...)
		return g.pick2([]string{"GET", h}, []string{"INCR", h}, []string{"APPEND", h, "x"}, []string{"ZADD", h, "1", "m"},
			[]string{"ZSCORE", h, "m"}, []string{"STRLEN", h}, []string{"SETRANGE", h, "0", "x"})
	case 19:
		// Wrong arity.
		return g.pick2([]string{"HSET", w}, []string{"HSET", w, "f"}, []string{"HGET", k}, []string{"HSETNX", w, "f"},
			[]string{"HINCRBY", w, "f"}, []string{"HLEN"}, []string{"HSCAN", k}, []string{"HRANDFIELD"})
	case 20:
		return []string{g.pick("PEXPIRE", "EXPIRE"), g.pick(hdiffKeys...), strconv.Itoa(100000 + g.rng.IntN(1000))}
	}
	return []string{g.pick("DEL", "UNLINK"), g.pick(hdiffKeys...)}
}

func (g *hgen) pick2(opts ...[]string) []string { return opts[g.rng.IntN(len(opts))] }
