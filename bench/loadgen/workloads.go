package main

// Workloads: a table of name -> request builder. Adding a workload is one
// entry in the workloads map below: a builder that appends one request for
// key number n to a buffer (no allocation: append into the reused buffer),
// and, if the workload needs it, a setup step (run once on a spare
// connection before the warm-up) and a populate flag (for reads that need
// existing keys).
//
// A request may be several commands (zset_recipe sends MULTI ... EXEC, six
// commands, as one request): replies says how many replies it gets, and the
// request counts once, as an error if any of its replies is one.

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"

	"github.com/ratekv/ratekv/bench"
)

// workload describes one kind of request.
type workload struct {
	desc string
	// setup runs once before the load, on its own connection, and may fill
	// in cfg (e.g. a script SHA). It may be nil.
	setup func(c *client, cfg *config) error
	// build appends one request for key number n to b. st is the
	// connection's random source and clock.
	build func(b []byte, n uint64, cfg *config, st *reqState) []byte
	// populate: write every key with SET before the run (when -populate).
	populate bool
	// throttle: count and print "limited" requests, as decided by check.
	throttle bool
	// replies per request (0 means 1).
	replies int
	// check, if set, inspects the last reply of each request when it is
	// not an error reply: limited for a refused call, or the text of an
	// error nested inside it (an EXEC reply's element).
	check func(reply []byte, cfg *config) (limited bool, errText []byte)
	// lua is the default script of an EVALSHA workload (-script overrides).
	lua string
	// key is the prefix of the one key each request names (key:<n>); ""
	// for requests without a key. -cluster routes by it.
	key string
}

// reqState is what a builder may use besides its key: the connection's
// random source and the generator's clock in microseconds since the Unix
// epoch, read once per batch (requests of one batch share a timestamp, as
// calls made in the same microsecond would).
type reqState struct {
	rng   *rand.Rand
	nowUs int64
}

// repliesPerRequest returns how many replies one request gets.
func (w workload) repliesPerRequest() int { return max(w.replies, 1) }

var workloads = map[string]workload{
	"ping": {
		desc:  "PING (RESP array)",
		build: func(b []byte, _ uint64, _ *config, _ *reqState) []byte { return append(b, "*1\r\n$4\r\nPING\r\n"...) },
	},
	"ping_inline": {
		desc:  "PING (inline command)",
		build: func(b []byte, _ uint64, _ *config, _ *reqState) []byte { return append(b, "PING\r\n"...) },
	},
	"set": {
		desc: "SET key:<n> <datasize bytes of 'x'>",
		key:  "key:",
		build: func(b []byte, n uint64, cfg *config, _ *reqState) []byte {
			b = append(b, "*3\r\n$3\r\nSET\r\n"...)
			b = appendKey(b, "key:", n)
			return appendBulk(b, cfg.value)
		},
	},
	"set_ex": {
		desc: "SET key:<n> <datasize bytes of 'x'> EX 3600 (a key with a deadline, which the volatile maxmemory policies may evict)",
		key:  "key:",
		build: func(b []byte, n uint64, cfg *config, _ *reqState) []byte {
			b = append(b, "*5\r\n$3\r\nSET\r\n"...)
			b = appendKey(b, "key:", n)
			b = appendBulk(b, cfg.value)
			return append(b, "$2\r\nEX\r\n$4\r\n3600\r\n"...)
		},
	},
	"get": {
		desc:     "GET key:<n> (keys populated with SET first)",
		key:      "key:",
		populate: true,
		build: func(b []byte, n uint64, _ *config, _ *reqState) []byte {
			b = append(b, "*2\r\n$3\r\nGET\r\n"...)
			return appendKey(b, "key:", n)
		},
	},
	"incr": {
		desc: "INCR counter:<n>",
		key:  "counter:",
		build: func(b []byte, n uint64, _ *config, _ *reqState) []byte {
			b = append(b, "*2\r\n$4\r\nINCR\r\n"...)
			return appendKey(b, "counter:", n)
		},
	},
	"throttle_cell": {
		desc:     "CL.THROTTLE rl:<n> <burst> <count> <period> <quantity>",
		key:      "rl:",
		throttle: true,
		check:    throttleCheck,
		setup: func(_ *client, cfg *config) error {
			cfg.throttleTail = appendThrottleArgs(nil, cfg)
			return nil
		},
		build: func(b []byte, n uint64, cfg *config, _ *reqState) []byte {
			b = append(b, "*6\r\n$11\r\nCL.THROTTLE\r\n"...)
			b = appendKey(b, "rl:", n)
			return append(b, cfg.throttleTail...)
		},
	},
	"throttle_lua": {
		desc:     "EVALSHA <gcra.lua> 1 rl:<n> <burst> <count> <period> <quantity>",
		key:      "rl:",
		throttle: true,
		check:    throttleCheck,
		lua:      bench.GCRALua,
		setup: func(c *client, cfg *config) error {
			if err := loadScript(c, cfg, 8); err != nil {
				return err
			}
			cfg.throttleTail = appendThrottleArgs(nil, cfg)
			return nil
		},
		build: func(b []byte, n uint64, cfg *config, _ *reqState) []byte {
			b = append(b, cfg.evalHead...)
			b = appendKey(b, "rl:", n)
			return append(b, cfg.throttleTail...)
		},
	},
	"zset_recipe": {
		desc: "MULTI; ZREMRANGEBYSCORE log:<n> 0 <now_us-window_us>; ZADD log:<n> <now_us> <uuid>; " +
			"ZCARD log:<n> (-recipe-range: ZRANGE log:<n> 0 -1 WITHSCORES); PEXPIRE log:<n> <window_ms>; EXEC",
		key:      "log:",
		throttle: true, // limited: the count after ZADD is above -max
		replies:  6,
		check:    recipeCheck,
		setup: func(_ *client, cfg *config) error {
			cfg.windowTail = appendBulk(nil, strconv.FormatInt(cfg.window, 10))
			return nil
		},
		build: appendRecipe,
	},
	"sl_lua": {
		desc:     "EVALSHA <sliding.lua> 1 log:<n> <max> <window_ms> (a sliding log in a sorted set)",
		key:      "log:",
		throttle: true,
		check:    throttleCheck,
		lua:      bench.SlidingLua,
		setup: func(c *client, cfg *config) error {
			if err := loadScript(c, cfg, 6); err != nil {
				return err
			}
			cfg.windowTail = appendWindowArgs(nil, cfg)
			return nil
		},
		build: func(b []byte, n uint64, cfg *config, _ *reqState) []byte {
			b = append(b, cfg.evalHead...)
			b = appendKey(b, "log:", n)
			return append(b, cfg.windowTail...)
		},
	},
	"sl_throttle": {
		desc:     "SL.THROTTLE sl:<n> <max> <window_ms>",
		key:      "sl:",
		throttle: true,
		check:    throttleCheck,
		setup: func(_ *client, cfg *config) error {
			cfg.windowTail = appendWindowArgs(nil, cfg)
			return nil
		},
		build: func(b []byte, n uint64, cfg *config, _ *reqState) []byte {
			b = append(b, "*4\r\n$11\r\nSL.THROTTLE\r\n"...)
			b = appendKey(b, "sl:", n)
			return append(b, cfg.windowTail...)
		},
	},
	"sw_throttle": {
		desc:     "SW.THROTTLE sw:<n> <max> <window_ms>",
		key:      "sw:",
		throttle: true,
		check:    throttleCheck,
		setup: func(_ *client, cfg *config) error {
			cfg.windowTail = appendWindowArgs(nil, cfg)
			return nil
		},
		build: func(b []byte, n uint64, cfg *config, _ *reqState) []byte {
			b = append(b, "*4\r\n$11\r\nSW.THROTTLE\r\n"...)
			b = appendKey(b, "sw:", n)
			return append(b, cfg.windowTail...)
		},
	},
}

// loadScript loads cfg.script with SCRIPT LOAD and sets cfg.evalHead to
// "EVALSHA <sha> 1" as the head of an array of argc elements.
func loadScript(c *client, cfg *config, argc int) error {
	reply, err := c.do("SCRIPT", "LOAD", cfg.script)
	if err != nil {
		return fmt.Errorf("SCRIPT LOAD: %w", err)
	}
	sha, ok := bulkString(reply)
	if !ok || len(sha) != 40 {
		return fmt.Errorf("SCRIPT LOAD: unexpected reply %q", reply)
	}
	h := append([]byte("*"), strconv.Itoa(argc)...)
	h = append(h, "\r\n$7\r\nEVALSHA\r\n"...)
	h = appendBulk(h, sha)
	cfg.evalHead = appendBulk(h, "1")
	return nil
}

// appendWindowArgs appends <max> <window_ms> as bulk strings.
func appendWindowArgs(b []byte, cfg *config) []byte {
	b = appendBulk(b, strconv.FormatInt(cfg.max, 10))
	return appendBulk(b, strconv.FormatInt(cfg.window, 10))
}

// appendRecipe appends the sliding-log recipe as one transaction: MULTI,
// ZREMRANGEBYSCORE key 0 now-window, ZADD key now <uuid>, ZCARD key (or
// ZRANGE key 0 -1 WITHSCORES), PEXPIRE key window_ms, EXEC. Scores are
// microseconds, like the libraries that send it.
func appendRecipe(b []byte, n uint64, cfg *config, st *reqState) []byte {
	b = append(b, "*1\r\n$5\r\nMULTI\r\n*4\r\n$16\r\nZREMRANGEBYSCORE\r\n"...)
	b = appendKey(b, "log:", n)
	b = append(b, "$1\r\n0\r\n"...)
	b = appendBulkInt(b, st.nowUs-cfg.window*1000)
	b = append(b, "*4\r\n$4\r\nZADD\r\n"...)
	b = appendKey(b, "log:", n)
	b = appendBulkInt(b, st.nowUs)
	b = append(b, "$36\r\n"...)
	b = appendUUID(b, st.rng.Uint64(), st.rng.Uint64())
	b = append(b, "\r\n"...)
	if cfg.recipeRange {
		b = append(b, "*5\r\n$6\r\nZRANGE\r\n"...)
		b = appendKey(b, "log:", n)
		b = append(b, "$1\r\n0\r\n$2\r\n-1\r\n$10\r\nWITHSCORES\r\n"...)
	} else {
		b = append(b, "*2\r\n$5\r\nZCARD\r\n"...)
		b = appendKey(b, "log:", n)
	}
	b = append(b, "*3\r\n$7\r\nPEXPIRE\r\n"...)
	b = appendKey(b, "log:", n)
	b = append(b, cfg.windowTail...)
	return append(b, "*1\r\n$4\r\nEXEC\r\n"...)
}

// appendUUID appends hi and lo as a version 4 UUID
// (xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx), 36 bytes.
func appendUUID(b []byte, hi, lo uint64) []byte {
	const hex = "0123456789abcdef"
	hi = hi&^(0xf<<12) | 4<<12   // version 4
	lo = lo&^(0x3<<62) | 0x2<<62 // variant 10
	var u [16]byte
	for i := 0; i < 8; i++ {
		u[i] = byte(hi >> (56 - 8*i))
		u[8+i] = byte(lo >> (56 - 8*i))
	}
	for i, x := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b = append(b, '-')
		}
		b = append(b, hex[x>>4], hex[x&0xf])
	}
	return b
}

// appendBulkInt appends v in decimal as a bulk string.
func appendBulkInt(b []byte, v int64) []byte {
	l := digits(uint64(v))
	if v < 0 {
		l = 1 + digits(uint64(-v))
	}
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(l), 10)
	b = append(b, "\r\n"...)
	b = strconv.AppendInt(b, v, 10)
	return append(b, "\r\n"...)
}

// workloadNames returns the workload names, sorted.
func workloadNames() []string {
	names := make([]string, 0, len(workloads))
	for name := range workloads {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// appendThrottleArgs appends <burst> <count> <period> <quantity> as bulk
// strings.
func appendThrottleArgs(b []byte, cfg *config) []byte {
	for _, v := range []int64{cfg.burst, cfg.count, cfg.period, cfg.quantity} {
		b = appendBulk(b, strconv.FormatInt(v, 10))
	}
	return b
}

// appendKey appends the bulk string prefix+n.
func appendKey(b []byte, prefix string, n uint64) []byte {
	l := len(prefix) + digits(n)
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(l), 10)
	b = append(b, "\r\n"...)
	b = append(b, prefix...)
	b = strconv.AppendUint(b, n, 10)
	return append(b, "\r\n"...)
}

// appendBulk appends s as a bulk string.
func appendBulk(b []byte, s string) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, "\r\n"...)
	b = append(b, s...)
	return append(b, "\r\n"...)
}

// appendCommand appends args as a RESP array of bulk strings.
func appendCommand(b []byte, args ...string) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, "\r\n"...)
	for _, a := range args {
		b = appendBulk(b, a)
	}
	return b
}

// digits returns the number of decimal digits of n.
func digits(n uint64) int {
	d := 1
	for n >= 10 {
		n /= 10
		d++
	}
	return d
}

// bulkString returns the payload of a '$' reply.
func bulkString(reply []byte) (string, bool) {
	if len(reply) < 4 || reply[0] != '$' {
		return "", false
	}
	i := bytes.IndexByte(reply, '\n')
	if i < 0 || i+1 > len(reply)-2 {
		return "", false
	}
	return string(reply[i+1 : len(reply)-2]), true
}

// throttleLimited reports whether a CL.THROTTLE-style reply says "limited":
// an array whose first element is :1.
func throttleLimited(reply []byte) bool {
	return bytes.HasPrefix(reply, []byte("*5\r\n:1\r\n"))
}

// throttleCheck is the check of the CL.THROTTLE-style workloads.
func throttleCheck(reply []byte, _ *config) (bool, []byte) { return throttleLimited(reply), nil }

// recipeCheck inspects the EXEC reply of zset_recipe: a null reply (the
// transaction did not run) or an error element is an error; otherwise the
// request is "limited" when the set holds more than -max entries after the
// ZADD (the count the application compares with its limit).
func recipeCheck(reply []byte, cfg *config) (bool, []byte) {
	if reply[0] == '_' {
		return false, []byte("EXEC returned null (transaction aborted)")
	}
	n, next, err := header(reply, 0)
	if err != nil || next == 0 || reply[0] != '*' {
		return false, []byte("unexpected EXEC reply")
	}
	if n < 0 {
		return false, []byte("EXEC returned null (transaction aborted)")
	}
	if n != 4 {
		return false, []byte("EXEC reply does not have 4 elements")
	}
	pos := next
	var count int64 = -1
	for i := int64(0); i < n; i++ {
		m, err := skipValue(reply[pos:])
		if m == 0 || err != nil {
			return false, []byte("malformed EXEC reply")
		}
		elem := reply[pos : pos+m]
		if isErrorKind(elem[0]) {
			return false, errorText(elem)
		}
		if i == 2 {
			switch elem[0] {
			case ':': // ZCARD
				count, _ = parseInt(elem[1 : len(elem)-2])
			case '*': // ZRANGE WITHSCORES (RESP2: member, score, ...)
				if c, _, err := header(elem, 0); err == nil {
					count = c / 2
				}
			}
		}
		pos += m
	}
	return count > cfg.max, nil
}
