package server

import (
	"context"
	"net"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ratekv/ratekv/command"
	"github.com/stretchr/testify/require"
)

// End-to-end checks with the real Redis tools (apt-get install redis-tools):
// redis-cli over RESP2 and RESP3 and redis-benchmark must work against
// ratekv with no error lines. Skipped when the tools are not installed.

// lookTools returns the paths of the named tools, or skips the test.
func lookTools(t *testing.T, names ...string) []string {
	t.Helper()
	paths := make([]string, len(names))
	for i, n := range names {
		p, err := exec.LookPath(n)
		if err != nil {
			t.Skipf("%s not installed (apt-get install redis-tools)", n)
		}
		paths[i] = p
	}
	return paths
}

// runTool runs a tool and returns its combined output, failing the test if
// it exits with an error or prints an error or warning line.
func runTool(t *testing.T, path string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, args...).CombinedOutput()
	text := string(out)
	require.NoError(t, err, "%s %q:\n%s", path, args, text)
	for _, line := range strings.FieldsFunc(text, func(r rune) bool { return r == '\n' || r == '\r' }) {
		lower := strings.ToLower(line)
		if strings.Contains(line, "ERR") || strings.Contains(lower, "error") || strings.Contains(lower, "warning") {
			t.Errorf("%s %q printed %q", path, args, line)
		}
	}
	return text
}

func TestRedisCli(t *testing.T) {
	cli := lookTools(t, "redis-cli")[0]
	ts := newTestServer(t)
	_, port, _ := net.SplitHostPort(ts.addr)
	tests := []struct {
		args []string
		want string // the whole output, or "~regexp"
	}{
		{[]string{"ping"}, "PONG\n"},
		{[]string{"-3", "hello", "3"}, "~^server redis\nversion " + regexp.QuoteMeta(command.RedisVersion) + "\nproto 3\n"},
		{[]string{"set", "a", "b"}, "OK\n"},
		{[]string{"get", "a"}, "b\n"},
		{[]string{"-3", "get", "a"}, "b\n"},
		{[]string{"info", "server"}, "~(?m)^redis_version:" + regexp.QuoteMeta(command.RedisVersion) + "\r$"},
		{[]string{"-3", "info", "server"}, "~(?m)^redis_mode:standalone\r$"},
		{[]string{"config", "get", "maxclients"}, "maxclients\n10000\n"},
		{[]string{"-3", "config", "get", "maxclients"}, "maxclients 10000\n"}, // RESP3 maps print a pair per line
		{[]string{"dbsize"}, "1\n"},
		{[]string{"command", "count"}, "~^[1-9][0-9]*\n$"},
		{[]string{"cluster", "keyslot", "somekey"}, "11058\n"},
	}
	for i, tt := range tests {
		args := append([]string{"-p", port}, tt.args...)
		have := runTool(t, cli, args...)
		if re, ok := strings.CutPrefix(tt.want, "~"); ok {
			if !regexp.MustCompile(re).MatchString(have) {
				t.Errorf("step %d redis-cli %q: have %q, want match %s", i, tt.args, have, re)
			}
		} else if have != tt.want {
			t.Errorf("step %d redis-cli %q: have %q, want %q", i, tt.args, have, tt.want)
		}
	}
}

func TestRedisBenchmark(t *testing.T) {
	bench := lookTools(t, "redis-benchmark")[0]
	ts := newTestServer(t)
	_, port, _ := net.SplitHostPort(ts.addr)
	for _, pipeline := range []string{"1", "16"} {
		out := runTool(t, bench, "-p", port, "-t", "ping,set,get,incr", "-n", "2000", "-q", "-P", pipeline)
		for _, test := range []string{"PING_INLINE", "PING_MBULK", "SET", "GET", "INCR"} {
			require.Regexp(t, `(?m)`+test+`: [0-9.]+ requests per second`, out, "-P %s", pipeline)
		}
		t.Logf("redis-benchmark -P %s:\n%s", pipeline, out)
	}
	// Every request was served: 5 tests × 2000 requests × 2 runs.
	rdb := ts.client(t, 2)
	text, err := rdb.Info(ctx, "stats").Result()
	require.NoError(t, err)
	f := infoFields(t, text)
	require.Equal(t, "0", f["total_error_replies"])
}

// redis-cli's keyspace scans: --bigkeys (TYPE and the size commands),
// --memkeys (MEMORY USAGE) and, under an LFU policy, --hotkeys (OBJECT
// FREQ) find the biggest and hottest keys.
func TestRedisCliKeyScans(t *testing.T) {
	cli := lookTools(t, "redis-cli")[0]
	ts := newTestServer(t)
	_, port, _ := net.SplitHostPort(ts.addr)
	r := ts.raw(t)
	require.Equal(t, "+OK\r\n", r.do("CONFIG", "SET", "maxmemory", "1gb", "maxmemory-policy", "allkeys-lfu"))
	r.do("SET", "small", "x")
	r.do("SET", "big", strings.Repeat("v", 5000))
	r.do("RPUSH", "list", "a", "b", "c")
	r.do("HSET", "hash", "f1", "v", "f2", "v")
	r.do("ZADD", "zset", "1", "m")
	r.do("CL.THROTTLE", "limit", "10", "10", "60")
	for range 20 {
		r.do("GET", "small")
	}
	for i, tt := range []struct {
		flag string
		want []string
	}{
		{"--bigkeys", []string{`Biggest string found '"big"' has 5000 bytes`, `Biggest   list found '"list"' has 3 items`,
			`Biggest   hash found '"hash"' has 2 fields`, `Biggest   zset found '"zset"' has 1 members`, "Sampled 6 keys in the keyspace!"}},
		{"--memkeys", []string{`Biggest string found '"big"' has `, `Biggest   list found '"list"' has `, "Sampled 6 keys in the keyspace!"}},
		{"--hotkeys", []string{`keyname: "small"`, "Sampled 6 keys in the keyspace!"}},
	} {
		have := runTool(t, cli, "-p", port, tt.flag)
		for _, w := range tt.want {
			require.Contains(t, have, w, "step %d %s", i, tt.flag)
		}
	}
}
