// Package bench holds the benchmark assets shared by the load generator
// (bench/loadgen) and its tests: Lua scripts that reproduce ratekv's native
// rate-limit commands on a stock redis-server.
//
// See bench/README.md for how to run the comparison against redis-server.
package bench

import _ "embed"

// GCRALua is bench/gcra.lua: EVAL/EVALSHA it with one key and the
// CL.THROTTLE arguments <max_burst> <count per period> <period> [<quantity>]
// to get CL.THROTTLE's five-integer reply.
//
//go:embed gcra.lua
var GCRALua string

// SlidingLua is bench/sliding.lua: EVAL/EVALSHA it with one key and the
// SL.THROTTLE arguments <max> <window_ms> to get SL.THROTTLE's five-integer
// reply, [limited, max, remaining, retry_after_ms, reset_after_ms], from a
// sliding log kept in a sorted set.
//
//go:embed sliding.lua
var SlidingLua string
