package main

// Differential test of the sliding log: bench/sliding.lua on a stock
// redis-server and ratekv's native SL.THROTTLE must give the same replies,
// gated by environment variables:
//
//	RATEKV_REDIS_ADDR=127.0.0.1:PORT  a stock redis-server: runs bench/sliding.lua
//	RATEKV_SL_ADDR=127.0.0.1:PORT     a server with SL.THROTTLE (ratekv)
//
// The log's entries carry the server's own clock, which a client cannot move
// for SL.THROTTLE, so time-dependent fields are checked within a tolerance,
// and time passing is real: the one vector that waits uses a 300 ms window.

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ratekv/ratekv/bench"
)

// slStep is one call of a sliding-log vector. want is "[a,b,c,d,e]", where
// an element "~N" means "in [N-slack, N]" (a time that shrinks while the
// test runs) and "*" anything, or "-<error text>" (a trailing * matches any
// rest).
type slStep struct {
	key, args, want string
	// waitRetry: before this call, sleep for the previous reply's
	// retry_after_ms (plus a little).
	waitRetry bool
	// pttl: after the call, the key's PTTL must be in [pttl-slack, pttl+1]
	// (the key expires at the first whole millisecond at which its newest
	// entry has left the window, up to 1 ms after now+window in whole ms).
	pttl int64
}

const (
	slMaxErr    = "-ERR max must be an integer between 1 and 9007199254740992"
	slWindowErr = "-ERR window_ms must be an integer between 1 and 1099511627776"
	slSlackMs   = 2000
)

var slVectors = []struct {
	name  string
	steps []slStep
}{
	{"max 3 in 60 s", []slStep{
		{key: "a", args: "3 60000", want: "[0,3,2,-1,60000]", pttl: 60000},
		{key: "a", args: "3 60000", want: "[0,3,1,-1,60000]"},
		{key: "a", args: "3 60000", want: "[0,3,0,-1,60000]"},
		{key: "a", args: "3 60000", want: "[1,3,0,~60000,~60000]", pttl: 60000},
		{key: "a", args: "3 60000", want: "[1,3,0,~60000,~60000]"},
		// A larger max on the same log lets one more in.
		{key: "a", args: "4 60000", want: "[0,4,0,-1,60000]"},
		// A smaller one: 4 entries, max 2: the 3rd oldest must leave.
		{key: "a", args: "2 60000", want: "[1,2,0,~60000,~60000]"},
	}},
	{"max 1", []slStep{
		{key: "b", args: "1 1000", want: "[0,1,0,-1,1000]", pttl: 1000},
		{key: "b", args: "1 1000", want: "[1,1,0,~1000,~1000]"},
	}},
	{"window passes", []slStep{
		{key: "c", args: "2 300", want: "[0,2,1,-1,300]"},
		{key: "c", args: "2 300", want: "[0,2,0,-1,300]"},
		{key: "c", args: "2 300", want: "[1,2,0,~300,~300]"},
		{key: "c", args: "2 300", want: "[0,2,*,-1,300]", waitRetry: true},
	}},
	{"largest arguments", []slStep{
		{key: "d", args: "9007199254740992 1099511627776", want: "[0,9007199254740992,9007199254740991,-1,1099511627776]"},
	}},
	{"argument errors", []slStep{
		{key: "e", args: "0 1000", want: slMaxErr},
		{key: "e", args: "-1 1000", want: slMaxErr},
		{key: "e", args: "abc 1000", want: slMaxErr},
		{key: "e", args: "+5 1000", want: slMaxErr},
		{key: "e", args: "05 1000", want: slMaxErr},
		{key: "e", args: "5.0 1000", want: slMaxErr},
		{key: "e", args: "9007199254740993 1000", want: slMaxErr},
		{key: "e", args: "99999999999999999999 1000", want: slMaxErr},
		{key: "e", args: "abc 0", want: slMaxErr}, // max is checked first
		{key: "e", args: "5 0", want: slWindowErr},
		{key: "e", args: "5 -1000", want: slWindowErr},
		{key: "e", args: "5 1099511627777", want: slWindowErr},
		{key: "e", args: "5 1s", want: slWindowErr},
		{key: "e", args: "5 1000 FOO", want: "-ERR syntax error"},
		{key: "e", args: "5", want: "-ERR wrong number of arguments for 'sl.throttle' command"},
		{key: "e", args: "5 1000", want: "[0,5,4,-1,1000]"}, // nothing was written before
	}},
}

func TestSlidingVectors(t *testing.T) {
	ran := false
	if addr := os.Getenv("RATEKV_REDIS_ADDR"); addr != "" {
		ran = true
		t.Run("lua", func(t *testing.T) {
			c := mustDial(t, addr)
			sha, err := c.do("SCRIPT", "LOAD", bench.SlidingLua)
			if err != nil {
				t.Fatal(err)
			}
			s, _ := bulkString(sha)
			runSlVectors(t, c, func(key string, args []string) ([]byte, byte, error) {
				return rawCall(c, append([]string{"EVALSHA", s, "1", key}, args...)...)
			})
		})
	}
	if addr := os.Getenv("RATEKV_SL_ADDR"); addr != "" {
		ran = true
		t.Run("native", func(t *testing.T) {
			c := mustDial(t, addr)
			runSlVectors(t, c, func(key string, args []string) ([]byte, byte, error) {
				return rawCall(c, append([]string{"SL.THROTTLE", key}, args...)...)
			})
		})
	}
	if !ran {
		t.Skip("set RATEKV_REDIS_ADDR (redis-server, sliding.lua) and/or RATEKV_SL_ADDR (a server with SL.THROTTLE)")
	}
}

func runSlVectors(t *testing.T, c *client, call func(key string, args []string) ([]byte, byte, error)) {
	prefix := fmt.Sprintf("ratekv-bench-sl-test:%d:", time.Now().UnixNano())
	for vi, v := range slVectors {
		var prev []string
		for si, s := range v.steps {
			key := prefix + s.key
			where := fmt.Sprintf("vector %d %q step %d (%s %s)", vi, v.name, si, s.key, s.args)
			if s.waitRetry {
				ms, err := strconv.Atoi(prev[3])
				if err != nil || ms < 0 {
					t.Fatalf("%s: previous reply %v has no retry_after_ms", where, prev)
				}
				time.Sleep(time.Duration(ms)*time.Millisecond + 20*time.Millisecond)
			}
			reply, kind, err := call(key, strings.Fields(s.args))
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			have := formatReply(reply, kind)
			if isErrorKind(kind) {
				have = "-" + string(errorText(reply))
			}
			if !slMatch(have, s.want) {
				t.Errorf("%s: have %s, want %s", where, have, s.want)
			}
			prev = strings.Split(strings.Trim(have, "[]"), ",")
			if s.pttl != 0 {
				r, err := c.do("PTTL", key)
				if err != nil {
					t.Fatalf("%s: PTTL: %v", where, err)
				}
				ms, _ := strconv.ParseInt(strings.TrimSpace(string(r[1:])), 10, 64)
				if ms > s.pttl+1 || ms < s.pttl-slSlackMs {
					t.Errorf("%s: PTTL %d, want in [%d, %d]", where, ms, s.pttl-slSlackMs, s.pttl+1)
				}
			}
		}
		for _, s := range v.steps {
			_, _ = c.do("DEL", prefix+s.key)
		}
	}
}

// slMatch reports whether have matches the pattern want (see slStep).
func slMatch(have, want string) bool {
	if strings.HasPrefix(want, "-") {
		if p, ok := strings.CutSuffix(want, "*"); ok {
			return strings.HasPrefix(have, p)
		}
		return have == want
	}
	h := strings.Split(strings.Trim(have, "[]"), ",")
	w := strings.Split(strings.Trim(want, "[]"), ",")
	if !strings.HasPrefix(have, "[") || len(h) != len(w) {
		return false
	}
	for i := range w {
		switch {
		case w[i] == "*":
		case strings.HasPrefix(w[i], "~"):
			hi, _ := strconv.ParseInt(w[i][1:], 10, 64)
			v, err := strconv.ParseInt(h[i], 10, 64)
			if err != nil || v > hi || v < max(hi-slSlackMs, 0) {
				return false
			}
		case h[i] != w[i]:
			return false
		}
	}
	return true
}

func TestSlMatch(t *testing.T) {
	for i, tc := range []struct {
		have, want string
		ok         bool
	}{
		0:  {"[0,3,2,-1,60000]", "[0,3,2,-1,60000]", true},
		1:  {"[0,3,2,-1,60000]", "[0,3,1,-1,60000]", false},
		2:  {"[1,3,0,59990,59990]", "[1,3,0,~60000,~60000]", true},
		3:  {"[1,3,0,60001,59990]", "[1,3,0,~60000,~60000]", false},
		4:  {"[1,3,0,57999,59990]", "[1,3,0,~60000,~60000]", false},
		5:  {"[0,2,7,-1,300]", "[0,2,*,-1,300]", true},
		6:  {"[0,2,7,-1]", "[0,2,*,-1,300]", false},
		7:  {"-ERR max must be", "-ERR max must be", true},
		8:  {"-WRONGTYPE x script: y", "-WRONGTYPE*", true},
		9:  {"-ERR other", "-WRONGTYPE*", false},
		11: {"[0,1,0,-1,1000]", "-ERR x", false},
		10: {`"+OK\r\n"`, "[0]", false},
	} {
		if have := slMatch(tc.have, tc.want); have != tc.ok {
			t.Errorf("%d: slMatch(%q, %q) = %v, want %v", i, tc.have, tc.want, have, tc.ok)
		}
	}
}
