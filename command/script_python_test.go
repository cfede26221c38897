package command

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// limitsWant is clients/python/limits_check.py's transcript: the `limits`
// library's moving window (a list kept by Lua scripts), fixed window and
// elastic fixed window, five hits a minute.
var limitsWant = []string{
	`check true`,
	`moving-hits [true,true,true,true,true,false,false]`,
	`moving-test false`,
	`moving-remaining 0`,
	`moving-reset-within-window true`,
	`moving-cost [true,false]`,
	`moving-cost-remaining 2`,
	`moving-after-clear [true,true]`,
	`fixed-hits [true,true,true,true,true,false,false]`,
	`fixed-test false`,
	`fixed-remaining 0`,
	`fixed-reset-within-window true`,
	`fixed-cost [true,false]`,
	`fixed-cost-remaining 0`,
	`fixed-after-clear [true,true]`,
	`elastic-hits [true,true,true,true,true,false,false]`,
	`elastic-test false`,
	`elastic-remaining 0`,
	`elastic-reset-within-window true`,
	`elastic-cost [true,false]`,
	`elastic-cost-remaining 0`,
	`elastic-after-clear [true,true]`,
	`reset 6`,
}

// runLimits runs limits_check.py against addr; it skips without Debian's
// python3-limits.
func runLimits(t *testing.T, addr string) []string {
	t.Helper()
	const py = "/usr/bin/python3"
	if exec.Command(py, "-c", "import limits, redis").Run() != nil {
		t.Skip("python3-limits not installed (apt-get install python3-limits)")
	}
	dir, err := filepath.Abs("../clients/python")
	require.NoError(t, err)
	var lines []string
	for _, s := range runClientScript(t, dir, nil, py, "limits_check.py", addr) {
		lines = append(lines, s.Step+" "+strings.ReplaceAll(string(s.V), " ", ""))
	}
	return lines
}

// TestPythonLimits: the Python `limits` library, unchanged, over redis-py.
func TestPythonLimits(t *testing.T) {
	ts := newTestServer(t)
	ts.clock.ns.Store(time.Now().UnixNano()) // the library's moving window stamps entries with its own clock
	require.Equal(t, limitsWant, runLimits(t, ts.addr))
}

// TestPythonLimitsMatchesRedis: the same transcript from a real redis-server,
// so the expectations above are Redis's.
func TestPythonLimitsMatchesRedis(t *testing.T) {
	require.Equal(t, limitsWant, runLimits(t, redisAddr(t)))
}
