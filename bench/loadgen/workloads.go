package main

// Workloads: a table of name -> request builder. Adding a workload is one
// entry in the workloads map below: a builder that appends one request for
// key number n to a buffer (no allocation: append into the reused buffer),
// and, if the workload needs it, a setup step (run once on a spare
// connection before the warm-up) and a populate flag (for reads that need
// existing keys).

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
)

// workload describes one kind of request.
type workload struct {
	desc string
	// setup runs once before the load, on its own connection, and may fill
	// in cfg (e.g. a script SHA). It may be nil.
	setup func(c *client, cfg *config) error
	// build appends one request for key number n to b.
	build func(b []byte, n uint64, cfg *config) []byte
	// populate: write every key with SET before the run (when -populate).
	populate bool
	// throttle: replies are CL.THROTTLE-style arrays; count limited ones.
	throttle bool
}

var workloads = map[string]workload{
	"ping": {
		desc:  "PING (RESP array)",
		build: func(b []byte, _ uint64, _ *config) []byte { return append(b, "*1\r\n$4\r\nPING\r\n"...) },
	},
	"ping_inline": {
		desc:  "PING (inline command)",
		build: func(b []byte, _ uint64, _ *config) []byte { return append(b, "PING\r\n"...) },
	},
	"set": {
		desc: "SET key:<n> <datasize bytes of 'x'>",
		build: func(b []byte, n uint64, cfg *config) []byte {
			b = append(b, "*3\r\n$3\r\nSET\r\n"...)
			b = appendKey(b, "key:", n)
			return appendBulk(b, cfg.value)
		},
	},
	"get": {
		desc:     "GET key:<n> (keys populated with SET first)",
		populate: true,
		build: func(b []byte, n uint64, _ *config) []byte {
			b = append(b, "*2\r\n$3\r\nGET\r\n"...)
			return appendKey(b, "key:", n)
		},
	},
	"incr": {
		desc: "INCR counter:<n>",
		build: func(b []byte, n uint64, _ *config) []byte {
			b = append(b, "*2\r\n$4\r\nINCR\r\n"...)
			return appendKey(b, "counter:", n)
		},
	},
	"throttle_cell": {
		desc:     "CL.THROTTLE rl:<n> <burst> <count> <period> <quantity>",
		throttle: true,
		setup: func(_ *client, cfg *config) error {
			cfg.throttleTail = appendThrottleArgs(nil, cfg)
			return nil
		},
		build: func(b []byte, n uint64, cfg *config) []byte {
			b = append(b, "*6\r\n$11\r\nCL.THROTTLE\r\n"...)
			b = appendKey(b, "rl:", n)
			return append(b, cfg.throttleTail...)
		},
	},
	"throttle_lua": {
		desc:     "EVALSHA <gcra.lua> 1 rl:<n> <burst> <count> <period> <quantity>",
		throttle: true,
		setup: func(c *client, cfg *config) error {
			reply, err := c.do("SCRIPT", "LOAD", cfg.script)
			if err != nil {
				return fmt.Errorf("SCRIPT LOAD: %w", err)
			}
			sha, ok := bulkString(reply)
			if !ok || len(sha) != 40 {
				return fmt.Errorf("SCRIPT LOAD: unexpected reply %q", reply)
			}
			var h []byte
			h = append(h, "*8\r\n$7\r\nEVALSHA\r\n"...)
			h = appendBulk(h, sha)
			h = appendBulk(h, "1")
			cfg.evalHead = h
			cfg.throttleTail = appendThrottleArgs(nil, cfg)
			return nil
		},
		build: func(b []byte, n uint64, cfg *config) []byte {
			b = append(b, cfg.evalHead...)
			b = appendKey(b, "rl:", n)
			return append(b, cfg.throttleTail...)
		},
	},
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
