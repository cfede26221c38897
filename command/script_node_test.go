package command

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// rate-limiter-flexible (Node.js), unchanged, over ioredis and node-redis:
// clients/node/rate-limiter-flexible.js runs its RateLimiterRedis (an EVAL
// script with SET NX EX, INCRBY, PTTL and EXPIRE; MULTI for get, block
// and the no-expiry limiter), RateLimiterRedisNonAtomic and
// BurstyRateLimiter, and prints one JSON line per step.

// clientStep is one JSON line of a client script's output.
type clientStep struct {
	Client string          `json:"client"`
	Step   string          `json:"step"`
	V      json.RawMessage `json:"v"`
}

// runNodeScript runs a script of clients/node against addr, calling
// advance (and then answering) each time the script prints "advance".
func runNodeScript(t *testing.T, script, addr string, advance func(), args ...string) []clientStep {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed")
	}
	dir, err := filepath.Abs("../clients/node")
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
		t.Skip("clients/node/node_modules missing (npm ci in clients/node)")
	}
	return runClientScript(t, dir, advance, node, append([]string{script, addr}, args...)...)
}

// runClientScript runs prog with args in dir and returns the JSON lines it
// prints, calling advance (and then answering) at each "advance" line.
func runClientScript(t *testing.T, dir string, advance func(), prog string, args ...string) []clientStep {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var steps []clientStep
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		if line == "advance" {
			advance()
			_, err := io.WriteString(stdin, "go\n")
			require.NoError(t, err)
			continue
		}
		var s clientStep
		require.NoError(t, json.Unmarshal([]byte(line), &s), "line %q", line)
		steps = append(steps, s)
	}
	require.NoError(t, cmd.Wait(), "stderr:\n%s", stderr.String())
	return steps
}

// rlfResult is a RateLimiterRes as the script prints it.
type rlfResult struct {
	Consumed  int    `json:"consumed"`
	Remaining int    `json:"remaining"`
	First     bool   `json:"first"`
	Ms        int64  `json:"ms"`
	Error     string `json:"error"`
}

// rlfOutcome is a step's value: resolved (Ok) or rejected.
type rlfOutcome struct {
	Ok       *rlfResult `json:"ok"`
	Rejected *rlfResult `json:"rejected"`
}

// rlfWant is a step's expected outcome with ratekv's clock stopped: the
// whole window is left (ms), except after the 11 s advance.
var rlfWant = map[string]string{
	"consume1":       `{"ok":{"consumed":1,"remaining":4,"first":true,"ms":10000}}`,
	"consume2":       `{"ok":{"consumed":2,"remaining":3,"first":false,"ms":10000}}`,
	"consume3":       `{"ok":{"consumed":3,"remaining":2,"first":false,"ms":10000}}`,
	"consume4":       `{"ok":{"consumed":4,"remaining":1,"first":false,"ms":10000}}`,
	"consume5":       `{"ok":{"consumed":5,"remaining":0,"first":false,"ms":10000}}`,
	"consume6":       `{"rejected":{"consumed":6,"remaining":0,"first":false,"ms":10000}}`,
	"get":            `{"ok":{"consumed":6,"remaining":0,"first":false,"ms":10000}}`,
	"penalty":        `{"ok":{"consumed":8,"remaining":0,"first":false,"ms":10000}}`,
	"reward":         `{"ok":{"consumed":5,"remaining":0,"first":false,"ms":10000}}`,
	"consume-points": `{"ok":{"consumed":4,"remaining":1,"first":true,"ms":10000}}`,
	"consume-over":   `{"rejected":{"consumed":6,"remaining":0,"first":false,"ms":10000}}`,
	"block":          `{"ok":{"consumed":6,"remaining":0,"first":false,"ms":20000}}`,
	"get-blocked":    `{"ok":{"consumed":6,"remaining":0,"first":false,"ms":20000}}`,
	"delete":         `true`,
	"delete-missing": `false`,
	"get-deleted":    `{"ok":null}`,
	"bad-points":     `{"rejected":{"error":"Consuming decimal number of points is not supported by this package"}}`,
	"blocking1":      `{"ok":{"consumed":1,"remaining":1,"first":true,"ms":5000}}`,
	"blocking2":      `{"ok":{"consumed":2,"remaining":0,"first":false,"ms":5000}}`,
	"blocking3":      `{"rejected":{"consumed":3,"remaining":0,"first":false,"ms":30000}}`,
	"blocking-get":   `{"ok":{"consumed":3,"remaining":0,"first":false,"ms":30000}}`,
	"forever1":       `{"ok":{"consumed":1,"remaining":2,"first":true,"ms":-1}}`,
	"forever2":       `{"ok":{"consumed":2,"remaining":1,"first":false,"ms":-1}}`,
	"forever3":       `{"ok":{"consumed":3,"remaining":0,"first":false,"ms":-1}}`,
	"forever4":       `{"rejected":{"consumed":4,"remaining":0,"first":false,"ms":-1}}`,
	"nonatomic1":     `{"ok":{"consumed":1,"remaining":1,"first":true,"ms":10000}}`,
	"nonatomic2":     `{"ok":{"consumed":2,"remaining":0,"first":false,"ms":10000}}`,
	"nonatomic3":     `{"rejected":{"consumed":3,"remaining":0,"first":false,"ms":10000}}`,
	"bursty1":        `{"ok":{"consumed":1,"remaining":1,"first":true,"ms":1000}}`,
	"bursty2":        `{"ok":{"consumed":2,"remaining":0,"first":false,"ms":1000}}`,
	"bursty3":        `{"ok":{"consumed":3,"remaining":0,"first":false,"ms":1000}}`,
	"bursty4":        `{"rejected":{"consumed":4,"remaining":0,"first":false,"ms":1000}}`,
	// 11 s later: the 10 s window is over, the 20 s block has 9 s left,
	// the 30 s block 19 s, and the limiter without expiry still counts.
	"after-consume":  `{"ok":{"consumed":1,"remaining":4,"first":true,"ms":10000}}`,
	"after-blocked":  `{"ok":{"consumed":6,"remaining":0,"first":false,"ms":9000}}`,
	"after-blocking": `{"rejected":{"consumed":4,"remaining":0,"first":false,"ms":19000}}`,
	"after-forever":  `{"ok":{"consumed":4,"remaining":0,"first":false,"ms":-1}}`,
}

// TestRateLimiterFlexible: with ratekv's clock stopped and advanced by the
// test, every step's result is exact, for both clients.
func TestRateLimiterFlexible(t *testing.T) {
	ts := newTestServer(t)
	ts.clock.ns.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	steps := runNodeScript(t, "rate-limiter-flexible.js", ts.addr, func() { ts.clock.Advance(11 * time.Second) })
	seen := map[string]int{}
	for _, s := range steps {
		seen[s.Client]++
		want, ok := rlfWant[s.Step]
		require.True(t, ok, "unexpected step %q", s.Step)
		require.JSONEq(t, want, string(s.V), "%s %s", s.Client, s.Step)
	}
	require.Equal(t, map[string]int{"ioredis": len(rlfWant), "node-redis": len(rlfWant)}, seen)
}

// TestRateLimiterFlexibleMatchesRedis runs the first phase against a real
// redis-server: the same outcomes, and the time left within the time the
// run took (redis-server's clock runs).
func TestRateLimiterFlexibleMatchesRedis(t *testing.T) {
	addr := redisAddr(t)
	ts := newTestServer(t)
	ts.clock.ns.Store(time.Now().UnixNano())
	start := time.Now()
	real := runNodeScript(t, "rate-limiter-flexible.js", addr, nil, "once")
	slack := time.Since(start).Milliseconds() + 1
	ours := runNodeScript(t, "rate-limiter-flexible.js", ts.addr, nil, "once")
	require.Equal(t, len(real), len(ours))
	for i := range real {
		r, o := real[i], ours[i]
		require.Equal(t, r.Client+" "+r.Step, o.Client+" "+o.Step)
		var ro, oo rlfOutcome
		if json.Unmarshal(r.V, &ro) != nil || (ro.Ok == nil && ro.Rejected == nil) {
			require.JSONEq(t, string(r.V), string(o.V), "%s %s", r.Client, r.Step)
			continue
		}
		require.NoError(t, json.Unmarshal(o.V, &oo))
		rr, or := ro.Ok, oo.Ok
		if rr == nil {
			rr, or = ro.Rejected, oo.Rejected
		}
		require.NotNil(t, or, "%s %s: redis %s, ratekv %s", r.Client, r.Step, r.V, o.V)
		require.GreaterOrEqual(t, or.Ms, rr.Ms, "%s %s", r.Client, r.Step)
		require.Less(t, or.Ms-rr.Ms, slack, "%s %s", r.Client, r.Step)
		rr.Ms, or.Ms = 0, 0
		require.Equal(t, *rr, *or, "%s %s", r.Client, r.Step)
	}
}
