package command

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// Differential test of the list commands: a random command sequence goes to
// a real redis-server and to ratekv over raw connections, and the raw
// replies must be byte-equal.
//
//	RATEKV_REDIS_ADDR=127.0.0.1:6379 go test ./command/ -run TestListDiffRedis -v
//
// It runs with list-max-listpack-size -2 (the default; elements of a few KB
// now and then make lists convert, split and merge), 1 and 3, set on both
// servers, in RESP2 and RESP3. Nothing is normalised: a list's replies do
// not depend on its encoding. LPOS RANK -9223372036854775808 is not sent
// (Redis 7.0 wraps it, 7.2 refuses it). RATEKV_LDIFF_SEED replays a seed;
// the seed in use is logged.

const ldiffCommands = 3000

func TestListDiffRedis(t *testing.T) {
	addr := redisAddr(t)
	seed := diffSeed(t, "RATEKV_LDIFF_SEED")
	same := func(string) func(args []string, have, want string) (string, string) { return nil }
	diffOverLimits(t, addr, "list-max-listpack-size", []string{"-2", "1", "3"}, same, func(t *testing.T, d *differ, size string, proto int) {
		d.check([]string{"SET", "str", "v"})
		d.check([]string{"HSET", "h", "f", "v"})
		g := &lgen{rng: rand.New(rand.NewPCG(seed, uint64(proto)<<8|uint64(len(size))))}
		for i := 0; i < ldiffCommands; i++ {
			d.check(g.next())
		}
		for _, k := range ldiffKeys {
			d.check([]string{"LRANGE", k, "0", "-1"})
		}
	})
}

var (
	ldiffKeys  = []string{"l1", "l2", "l3"}
	ldiffElems = []string{"a", "b", "c", "", "1", "-2", "10", "007", "63", "1795307408539667", "9223372036854775807",
		"c2f5b3d2-8d1e-4f7a-9b3c-1a2b3c4d5e6f", "x\x00y"}
)

type lgen struct{ rng *rand.Rand }

func (g *lgen) pick(s ...string) string { return s[g.rng.IntN(len(s))] }
func (g *lgen) chance(n int) bool       { return g.rng.IntN(n) == 0 }
func (g *lgen) key() string             { return g.pick(append([]string{"str", "h", "nokey"}, ldiffKeys...)...) }
func (g *lgen) wkey() string            { return g.pick(append([]string{"str", "h"}, ldiffKeys...)...) }
func (g *lgen) index() string           { return strconv.Itoa(g.rng.IntN(15) - 7) }

func (g *lgen) elem() string {
	if g.chance(40) {
		return strings.Repeat(g.pick("p", "q"), 2000+g.rng.IntN(2000)) // a few fill a node
	}
	return g.pick(ldiffElems...)
}

func (g *lgen) intArg() string {
	if g.chance(10) {
		return g.pick("x", "", "1.5", "9223372036854775807", "-9223372036854775808")
	}
	return g.index()
}

func (g *lgen) end() string {
	if g.chance(30) {
		return "up"
	}
	return g.pick("LEFT", "RIGHT", "left", "right")
}

// next returns a random command. Writes go to l1-l3 (and str and h, for
// WRONGTYPE), reads also to nokey, which stays missing.
func (g *lgen) next() []string {
	k, w := g.key(), g.wkey()
	switch g.rng.IntN(24) {
	case 0, 1, 2, 3:
		args := []string{g.pick("LPUSH", "RPUSH", "LPUSH", "RPUSH", "LPUSHX", "RPUSHX"), w}
		for n := 1 + g.rng.IntN(3); n > 0; n-- {
			args = append(args, g.elem())
		}
		return args
	case 4, 5:
		args := []string{g.pick("LPOP", "RPOP"), w}
		if g.chance(2) {
			args = append(args, g.pick("0", "1", "2", "5", "-1", "x"))
		}
		return args
	case 6:
		return []string{g.pick("LLEN", "TYPE", "EXISTS"), k}
	case 7, 8:
		return []string{"LINDEX", k, g.intArg()}
	case 9, 10:
		return []string{"LRANGE", k, g.intArg(), g.intArg()}
	case 11:
		return []string{"LTRIM", w, g.intArg(), g.intArg()}
	case 12:
		return []string{"LSET", w, g.intArg(), g.elem()}
	case 13:
		return []string{"LREM", w, g.pick("0", "1", "-1", "2", "-2", "x", "9223372036854775807", "-9223372036854775808"), g.elem()}
	case 14:
		return []string{"LINSERT", w, g.pick("BEFORE", "AFTER", "before", "middle"), g.elem(), g.elem()}
	case 15, 16:
		args := []string{"LPOS", k, g.elem()}
		for n := g.rng.IntN(3); n > 0; n-- {
			switch g.rng.IntN(4) {
			case 0:
				args = append(args, "RANK", g.pick("1", "2", "-1", "-2", "0", "x", "9223372036854775807"))
			case 1:
				args = append(args, "COUNT", g.pick("0", "1", "2", "-1", "x"))
			case 2:
				args = append(args, "MAXLEN", g.pick("0", "1", "3", "-1", "x"))
			default:
				args = append(args, g.pick("FOO", "RANK"))
			}
		}
		return args
	case 17, 18:
		if g.chance(3) {
			return []string{"RPOPLPUSH", g.pick(append([]string{"str"}, ldiffKeys...)...), w}
		}
		return []string{"LMOVE", g.pick(append([]string{"str", "nokey"}, ldiffKeys...)...), w, g.end(), g.end()}
	case 19:
		// String and hash commands on a list.
		l := g.pick(ldiffKeys...)
		return g.pick2([]string{"GET", l}, []string{"INCR", l}, []string{"APPEND", l, "x"}, []string{"HSET", l, "f", "v"},
			[]string{"HGET", l, "f"}, []string{"ZADD", l, "1", "m"}, []string{"SETRANGE", l, "0", "x"})
	case 20:
		// Wrong arity.
		return g.pick2([]string{"LPUSH", w}, []string{"LPOP", w, "1", "2"}, []string{"LINDEX", k}, []string{"LSET", w, "0"},
			[]string{"LMOVE", w, k, "LEFT"}, []string{"RPOPLPUSH", w}, []string{"LPOS", k}, []string{"LINSERT", w, "BEFORE", "a"})
	case 21:
		return []string{g.pick("PEXPIRE", "EXPIRE"), g.pick(ldiffKeys...), strconv.Itoa(100000 + g.rng.IntN(1000))}
	case 22:
		return []string{"RENAME", g.pick(ldiffKeys...), g.pick(ldiffKeys...)}
	}
	return []string{g.pick("DEL", "UNLINK"), g.pick(ldiffKeys...)}
}

func (g *lgen) pick2(opts ...[]string) []string { return opts[g.rng.IntN(len(opts))] }
