// Package bench holds the benchmark assets shared by the load generator
// (bench/loadgen) and its tests: the Lua GCRA script that reproduces
// CL.THROTTLE on a stock redis-server.
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
