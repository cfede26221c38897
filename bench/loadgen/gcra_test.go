package main

// Differential test of CL.THROTTLE replies against the spec's test vectors
// (/work/shared/spec/cl-throttle.md §6, §7), gated by environment variables:
//
//	RATEKV_REDIS_ADDR=127.0.0.1:PORT  a stock redis-server: runs bench/gcra.lua
//	RATEKV_CELL_ADDR=127.0.0.1:PORT   a server with CL.THROTTLE (ratekv, or
//	                                  redis-server with redis-cell loaded)
//
// Time passing is simulated by moving the stored TAT back (GET, subtract,
// SET), which is exactly what the algorithm sees when the clock moves
// forward, so the vectors run in milliseconds without sleeping.

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ratekv/ratekv/bench"
)

// step is one action of a vector.
type step struct {
	op   string // "call", "shift", "del", "exists", "pttl", "tat"
	key  string
	args string        // call: "<burst> <count> <period> [<quantity>]"
	want string        // call: "[a,b,c,d,e]" or "ERR <exact error text>"; exists: "0"/"1"
	d    time.Duration // shift: how far the clock moves forward; pttl/tat: expected value
}

func call(key, args, want string) step { return step{op: "call", key: key, args: args, want: want} }
func shift(key string, d time.Duration) step {
	return step{op: "shift", key: key, d: d}
}
func exists(key, want string) step { return step{op: "exists", key: key, want: want} }

type vector struct {
	name string
	// cellOnly: the reply is redis-cell's and ratekv deliberately differs
	// (spec §11): run it against the Lua script only.
	cellOnly bool
	steps    []step
}

const (
	usageErr    = "ERR Cell error: Store error: Usage: cl.throttle <key> <max_burst> <count per period> <period> [<quantity>]"
	parseErr    = "ERR Cell error: Store error: Couldn't parse as integer: "
	zeroRateErr = "ERR Cell error: Store error: Zero rates are not supported"
)

var vectors = []vector{
	{name: "A burst 5 count 1 period 60", steps: []step{
		call("a", "5 1 60", "[0,6,5,-1,60]"),
		call("a", "5 1 60", "[0,6,4,-1,120]"),
		call("a", "5 1 60", "[0,6,3,-1,180]"),
		call("a", "5 1 60", "[0,6,2,-1,240]"),
		call("a", "5 1 60", "[0,6,1,-1,300]"),
		call("a", "5 1 60", "[0,6,0,-1,360]"),
		call("a", "5 1 60", "[1,6,0,60,360]"),
		call("a", "5 1 60", "[1,6,0,60,360]"),
		exists("a", "1"),
		{op: "pttl", key: "a", d: 360 * time.Second},
		{op: "tat", key: "a", d: 360 * time.Second},
		shift("a", 60*time.Second),
		call("a", "5 1 60", "[0,6,0,-1,360]"),
		{op: "del", key: "a"},
		call("a", "5 1 60", "[0,6,5,-1,60]"),
	}},
	{name: "A one call 120 s after call 1", steps: []step{
		call("a2", "5 1 60", "[0,6,5,-1,60]"),
		call("a2", "5 1 60", "[0,6,4,-1,120]"),
		call("a2", "5 1 60", "[0,6,3,-1,180]"),
		call("a2", "5 1 60", "[0,6,2,-1,240]"),
		call("a2", "5 1 60", "[0,6,1,-1,300]"),
		call("a2", "5 1 60", "[0,6,0,-1,360]"),
		shift("a2", 120*time.Second),
		call("a2", "5 1 60", "[0,6,1,-1,300]"),
	}},
	{name: "B quantities", steps: []step{
		call("b", "9 10 3600 3", "[0,10,7,-1,1080]"),
		call("b", "9 10 3600 0", "[0,10,7,-1,1080]"),
		call("b", "9 10 3600 7", "[0,10,0,-1,3600]"),
		call("b", "9 10 3600 1", "[1,10,0,360,3600]"),
		call("b", "9 10 3600 0", "[0,10,0,-1,3600]"),
		call("b", "9 10 3600 10", "[1,10,0,3600,3600]"),
		call("b", "9 10 3600 11", "[1,10,0,-1,3600]"),
	}},
	{name: "C quantity above limit", steps: []step{
		call("c", "4 1 60 6", "[1,5,5,-1,0]"),
		exists("c", "0"),
		call("c", "4 1 60 5", "[0,5,0,-1,300]"),
		call("c", "4 1 60 1", "[1,5,0,60,300]"),
		call("c", "4 1 60 6", "[1,5,0,-1,300]"),
		call("c2", "4 1 60 0", "[0,5,5,-1,0]"),
		{op: "sleep", d: 5 * time.Millisecond},
		exists("c2", "0"),
	}},
	{name: "D README user123", steps: []step{call("d1", "15 30 60", "[0,16,15,-1,2]")}},
	{name: "D issue 37", steps: []step{call("d2", "5 5 3600", "[0,6,5,-1,720]")}},
	{name: "D e2e", steps: []step{
		call("d3", "0 1 2 1", "[0,1,0,-1,2]"),
		call("d3", "0 1 2 1", "[1,1,0,2,2]"),
		shift("d3", 2*time.Second),
		call("d3", "0 1 2 1", "[0,1,0,-1,2]"),
	}},
	{name: "E virtual clock", steps: []step{
		call("e", "4 1 1 6", "[1,5,5,-1,0]"),
		call("e", "4 1 1", "[0,5,4,-1,1]"),
		call("e", "4 1 1", "[0,5,3,-1,2]"),
		call("e", "4 1 1", "[0,5,2,-1,3]"),
		call("e", "4 1 1", "[0,5,1,-1,4]"),
		call("e", "4 1 1", "[0,5,0,-1,5]"),
		call("e", "4 1 1", "[1,5,0,1,5]"),
		shift("e", 3*time.Second),
		call("e", "4 1 1", "[0,5,2,-1,3]"),
		shift("e", 100*time.Millisecond),
		call("e", "4 1 1", "[0,5,1,-1,4]"),
		shift("e", 900*time.Millisecond),
		call("e", "4 1 1", "[0,5,1,-1,4]"),
		shift("e", 4*time.Second),
		call("e", "4 1 1", "[0,5,4,-1,1]"),
		shift("e", 1500*time.Millisecond),
		call("e", "4 1 1", "[0,5,4,-1,1]"),
		call("e", "4 1 1 0", "[0,5,4,-1,1]"),
		call("e", "4 1 1 2", "[0,5,2,-1,3]"),
		call("e", "4 1 1 5", "[1,5,2,3,3]"),
	}},
	{name: "F short period", steps: []step{
		call("f", "1 1 1", "[0,2,1,-1,1]"),
		call("f", "1 1 1", "[0,2,0,-1,2]"),
		call("f", "1 1 1", "[1,2,0,1,2]"),
		shift("f", 1100*time.Millisecond),
		call("f", "1 1 1", "[0,2,0,-1,2]"),
	}},
	{name: "6 whole-us interval, ttl under 1 ms", steps: []step{
		call("g1", "4 500000 1 2", "[0,5,3,-1,0]"),
	}},
	{name: "6 remaining above limit (redis-cell issue 50)", cellOnly: true, steps: []step{
		call("g2", "6000 6000 1", "[0,6001,6024,-1,0]"),
	}},
	{name: "6 negative values (redis-cell arithmetic)", cellOnly: true, steps: []step{
		call("g3", "-1 1 60", "[1,0,0,-1,0]"),
		call("g4", "-1 1 60 0", "[0,0,0,-1,0]"),
		call("g5", "5 -1 -60", "[0,6,5,-1,60]"),
		call("g6", "5 -1 60", "[1,6,0,-1,0]"),
	}},
	{name: "G errors", steps: []step{
		call("h", "5 2000000000 1", zeroRateErr),
		call("h", "abc 1 60", parseErr+"abc"),
		call("h", "abc def 60", parseErr+"abc"),
		call("h", "5 0 x", parseErr+"x"),
		call("h", "5 0 60", zeroRateErr),
		call("h", "5 1 0", zeroRateErr),
		call("h", "5 1.5 60", parseErr+"1.5"),
		call("h", "9223372036854775808 1 60", parseErr+"9223372036854775808"),
		call("h", "5 1 60 q", parseErr+"q"),
		call("h", "5 1", usageErr),
		call("h", "1 2 3 4 5", usageErr),
		exists("h", "0"),
		call("h", "+5 1 60", "[0,6,5,-1,60]"),
		call("h2", "007 1 60", "[0,8,7,-1,60]"),
	}},
}

// throttler sends one CL.THROTTLE-equivalent call.
type throttler func(c *client, key string, args []string) ([]byte, byte, error)

func TestThrottleVectors(t *testing.T) {
	ran := false
	if addr := os.Getenv("RATEKV_REDIS_ADDR"); addr != "" {
		ran = true
		t.Run("lua", func(t *testing.T) {
			c := mustDial(t, addr)
			sha, err := c.do("SCRIPT", "LOAD", bench.GCRALua)
			if err != nil {
				t.Fatal(err)
			}
			s, _ := bulkString(sha)
			runVectors(t, c, true, func(c *client, key string, args []string) ([]byte, byte, error) {
				return rawCall(c, append([]string{"EVALSHA", s, "1", key}, args...)...)
			})
		})
	}
	if addr := os.Getenv("RATEKV_CELL_ADDR"); addr != "" {
		ran = true
		t.Run("cell", func(t *testing.T) {
			c := mustDial(t, addr)
			runVectors(t, c, false, func(c *client, key string, args []string) ([]byte, byte, error) {
				return rawCall(c, append([]string{"CL.THROTTLE", key}, args...)...)
			})
		})
	}
	if !ran {
		t.Skip("set RATEKV_REDIS_ADDR (redis-server, Lua script) and/or RATEKV_CELL_ADDR (CL.THROTTLE server)")
	}
}

func runVectors(t *testing.T, c *client, lua bool, throttle throttler) {
	prefix := fmt.Sprintf("ratekv-bench-test:%d:", time.Now().UnixNano())
	defer func() {
		for _, v := range vectors {
			for _, s := range v.steps {
				if s.key != "" {
					_, _ = c.do("DEL", prefix+s.key)
				}
			}
		}
	}()
	for vi, v := range vectors {
		if v.cellOnly && !lua {
			continue
		}
		for si, s := range v.steps {
			key := prefix + s.key
			where := fmt.Sprintf("vector %d %q step %d (%s %s %s)", vi, v.name, si, s.op, s.key, s.args)
			switch s.op {
			case "call":
				reply, kind, err := throttle(c, key, strings.Fields(s.args))
				if err != nil {
					t.Fatalf("%s: %v", where, err)
				}
				if have := formatReply(reply, kind); have != s.want {
					t.Errorf("%s: have %s, want %s", where, have, s.want)
				}
			case "shift":
				shiftTAT(t, c, key, s.d, where)
			case "del":
				if _, err := c.do("DEL", key); err != nil {
					t.Fatalf("%s: %v", where, err)
				}
			case "sleep":
				time.Sleep(s.d)
			case "exists":
				reply, err := c.do("EXISTS", key)
				if err != nil {
					t.Fatalf("%s: %v", where, err)
				}
				if have := string(bytes.TrimSpace(reply[1:])); have != s.want {
					t.Errorf("%s: EXISTS = %s, want %s", where, have, s.want)
				}
			case "pttl":
				reply, err := c.do("PTTL", key)
				if err != nil {
					t.Fatalf("%s: %v", where, err)
				}
				ms, _ := strconv.ParseInt(string(bytes.TrimSpace(reply[1:])), 10, 64)
				if want := s.d.Milliseconds(); ms > want || ms < want-1000 {
					t.Errorf("%s: PTTL = %d, want in [%d, %d]", where, ms, want-1000, want)
				}
			case "tat":
				tat := getTAT(t, c, key, where)
				now := uint64(time.Now().UnixNano())
				want := now + uint64(s.d)
				if tat > want+uint64(time.Second) || tat+uint64(time.Second) < want {
					t.Errorf("%s: TAT %d is not within 1 s of now+%s = %d", where, tat, s.d, want)
				}
			default:
				t.Fatalf("%s: unknown op", where)
			}
		}
	}
}

// shiftTAT simulates the clock moving forward by d: the stored TAT moves
// back by d.
func shiftTAT(t *testing.T, c *client, key string, d time.Duration, where string) {
	t.Helper()
	tat := getTAT(t, c, key, where)
	if _, err := c.do("SET", key, strconv.FormatUint(tat-uint64(d), 10)); err != nil {
		t.Fatalf("%s: %v", where, err)
	}
}

func getTAT(t *testing.T, c *client, key, where string) uint64 {
	t.Helper()
	reply, err := c.do("GET", key)
	if err != nil {
		t.Fatalf("%s: GET: %v", where, err)
	}
	s, ok := bulkString(reply)
	if !ok {
		t.Fatalf("%s: GET %s: have %q, want the TAT as a decimal string", where, key, reply)
	}
	tat, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("%s: GET %s: %v", where, key, err)
	}
	return tat
}

// rawCall sends a command and returns a copy of its reply, error replies
// included.
func rawCall(c *client, args ...string) ([]byte, byte, error) {
	if _, err := c.conn.Write(appendCommand(nil, args...)); err != nil {
		return nil, 0, err
	}
	reply, kind, err := c.readReply()
	return append([]byte(nil), reply...), kind, err
}

// formatReply renders an array of integers as "[a,b,...]" and an error as
// "ERR <text>"; anything else verbatim.
func formatReply(reply []byte, kind byte) string {
	if isErrorKind(kind) {
		return "ERR " + string(errorText(reply))
	}
	if kind != '*' {
		return fmt.Sprintf("%q", reply)
	}
	lines := strings.Split(strings.TrimSuffix(string(reply), "\r\n"), "\r\n")
	var ints []string
	for _, l := range lines[1:] {
		if !strings.HasPrefix(l, ":") {
			return fmt.Sprintf("%q", reply)
		}
		ints = append(ints, l[1:])
	}
	return "[" + strings.Join(ints, ",") + "]"
}

func mustDial(t *testing.T, addr string) *client {
	t.Helper()
	c, err := dial(addr, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.conn.SetDeadline(time.Now().Add(30 * time.Second))
	t.Cleanup(func() { c.Close() })
	return c
}
