package main

// Fill mode (-fill KIND): write a known amount of rate-limit state as fast as
// possible, then stop, so that bench/memory.sh can measure what the server
// holds per key or per entry. One connection, -pipeline requests per write,
// in this order: entry 0 of every key, then entry 1 of every key, and so on,
// the way a log grows when many clients call in turn.
//
//	gcra_cell  CL.THROTTLE rl:<k> 10 1 3600 1                   (one call per key)
//	gcra_lua   EVALSHA <gcra.lua> 1 rl:<k> 10 1 3600 1          (one call per key)
//	zset       ZADD z:<k> <score> <36-byte UUID>                (-fill-entries per key)
//	sl         SL.THROTTLE sl:<k> <fill-entries> 3600000        (-fill-entries per key)
//
// The GCRA limit (burst 10, 1 per hour) makes each key live an hour after
// its call, so none expires while memory is measured. -fill-ttl D makes it
// 1 per D instead (whole seconds), so each key expires D after its call:
// keys expire in the order and at the pace they were written (bench/scale.sh
// measures the server while they do). ZADD scores are microsecond
// timestamps: the start time plus 1 ms per entry, plus k mod 1000 µs.
// SL.THROTTLE records the server's clock; max is the number of entries per
// key and the window an hour, so every call is recorded. -duration bounds
// the fill; the report says whether it finished.

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/ratekv/ratekv/bench"
)

// fillReport is the JSON line -fill prints.
type fillReport struct {
	Kind     string  `json:"kind"`
	Keys     uint64  `json:"keys"`
	Entries  uint64  `json:"entries"` // per key
	Sent     uint64  `json:"sent"`    // requests answered
	Errors   uint64  `json:"errors"`
	Limited  uint64  `json:"limited"` // sl, gcra: refused calls (nothing stored)
	Complete bool    `json:"complete"`
	Seconds  float64 `json:"seconds"`
	TTLs     int64   `json:"ttl_s,omitempty"` // -fill-ttl: each key's lifetime
	FirstErr string  `json:"first_error,omitempty"`
}

// fillKinds lists the -fill kinds and whether they take -fill-entries.
var fillKinds = map[string]bool{"gcra_cell": false, "gcra_lua": false, "zset": true, "sl": true}

// fillBuilder returns the request builder for kind; e is the entry number.
func fillBuilder(c *client, cfg *config, kind string) (func(b []byte, k, e uint64, rng *rand.Rand) []byte, error) {
	throttleTail := appendThrottleArgs(nil, &config{burst: 10, count: 1, period: fillPeriod(cfg.fillTTL), quantity: 1})
	switch kind {
	case "gcra_cell":
		return func(b []byte, k, _ uint64, _ *rand.Rand) []byte {
			b = append(b, "*6\r\n$11\r\nCL.THROTTLE\r\n"...)
			b = appendKey(b, "rl:", k)
			return append(b, throttleTail...)
		}, nil
	case "gcra_lua":
		cfg.script = bench.GCRALua
		if err := loadScript(c, cfg, 8); err != nil {
			return nil, err
		}
		head := cfg.evalHead
		return func(b []byte, k, _ uint64, _ *rand.Rand) []byte {
			b = append(b, head...)
			b = appendKey(b, "rl:", k)
			return append(b, throttleTail...)
		}, nil
	case "zset":
		start := time.Now().UnixMicro()
		return func(b []byte, k, e uint64, rng *rand.Rand) []byte {
			b = append(b, "*4\r\n$4\r\nZADD\r\n"...)
			b = appendKey(b, "z:", k)
			b = appendBulkInt(b, start+int64(e)*1000+int64(k%1000))
			b = append(b, "$36\r\n"...)
			b = appendUUID(b, rng.Uint64(), rng.Uint64())
			return append(b, "\r\n"...)
		}, nil
	case "sl":
		tail := appendBulk(nil, strconv.FormatUint(cfg.fillEntries, 10))
		tail = appendBulk(tail, "3600000")
		return func(b []byte, k, _ uint64, _ *rand.Rand) []byte {
			b = append(b, "*4\r\n$11\r\nSL.THROTTLE\r\n"...)
			b = appendKey(b, "sl:", k)
			return append(b, tail...)
		}, nil
	}
	return nil, fmt.Errorf("unknown -fill kind %q (have gcra_cell, gcra_lua, zset, sl)", kind)
}

// fillPeriod returns the GCRA period, in seconds, that makes a fill's key
// live ttl after its one call: ttl rounded up to whole seconds, or an hour
// when ttl is 0.
func fillPeriod(ttl time.Duration) int64 {
	if ttl <= 0 {
		return 3600
	}
	return int64((ttl + time.Second - 1) / time.Second)
}

// runFill writes the state and prints one JSON line. It returns the exit
// status: 0 when complete without errors, 1 otherwise.
func runFill(cfg *config, kind string, stdout, stderr io.Writer) int {
	takesEntries, ok := fillKinds[kind]
	if !ok {
		fmt.Fprintf(stderr, "loadgen: unknown -fill kind %q (have gcra_cell, gcra_lua, zset, sl)\n", kind)
		return 2
	}
	if !takesEntries {
		cfg.fillEntries = 1
	}
	if cfg.fillTTL != 0 && (cfg.fillTTL < 0 || (kind != "gcra_cell" && kind != "gcra_lua")) {
		fmt.Fprintln(stderr, "loadgen: -fill-ttl needs -fill gcra_cell or gcra_lua and a duration > 0")
		return 2
	}
	if cfg.keys < 1 || cfg.fillEntries < 1 || cfg.pipeline < 1 || cfg.duration <= 0 {
		fmt.Fprintln(stderr, "loadgen: -fill needs -keys, -fill-entries, -pipeline >= 1 and -duration > 0")
		return 2
	}
	c, err := dial(cfg.addr, 3*time.Second)
	if err != nil {
		fmt.Fprintln(stderr, "loadgen:", err)
		return 1
	}
	defer c.Close()
	begin := time.Now()
	end := begin.Add(cfg.duration)
	_ = c.conn.SetDeadline(end.Add(10 * time.Second))
	build, err := fillBuilder(c, cfg, kind)
	if err != nil {
		fmt.Fprintln(stderr, "loadgen:", err)
		return 1
	}
	rep := fillReport{Kind: kind, Keys: cfg.keys, Entries: cfg.fillEntries}
	if !takesEntries {
		rep.Entries = 0
	}
	if cfg.fillTTL > 0 {
		rep.TTLs = fillPeriod(cfg.fillTTL)
	}
	rng := rand.New(rand.NewPCG(cfg.seed, 0x6d656d))
	total := cfg.keys * cfg.fillEntries
	var b []byte
	for i := uint64(0); i < total && time.Now().Before(end); {
		b = b[:0]
		n := min(uint64(cfg.pipeline), total-i)
		for j := uint64(0); j < n; j++ {
			b = build(b, (i+j)%cfg.keys, (i+j)/cfg.keys, rng)
		}
		if _, err := c.conn.Write(b); err != nil {
			fmt.Fprintln(stderr, "loadgen:", err)
			return 1
		}
		for j := uint64(0); j < n; j++ {
			reply, kind, err := c.readReply()
			if err != nil {
				fmt.Fprintln(stderr, "loadgen:", err)
				return 1
			}
			switch {
			case isErrorKind(kind):
				rep.Errors++
				if rep.FirstErr == "" {
					rep.FirstErr = string(errorText(reply))
				}
			case throttleLimited(reply):
				rep.Limited++
			}
		}
		i += n
		rep.Sent = i
	}
	rep.Complete = rep.Sent == total
	rep.Seconds = math.Round(time.Since(begin).Seconds()*100) / 100
	if err := json.NewEncoder(stdout).Encode(rep); err != nil {
		fmt.Fprintln(stderr, "loadgen:", err)
		return 1
	}
	if !rep.Complete || rep.Errors > 0 {
		return 1
	}
	return 0
}
