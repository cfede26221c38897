package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestConfigRewriteRestart starts ratekv from a stock redis.conf, changes
// parameters with CONFIG SET, rewrites the file with CONFIG REWRITE, and
// restarts from it: the file keeps every comment and directive line it
// had, in order, and the restarted server has the values set.
func TestConfigRewriteRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin, err := buildBinary()
	require.NoError(t, err)
	stock, err := os.ReadFile(filepath.Join("config", "testdata", "redis.conf"))
	require.NoError(t, err)
	conf := filepath.Join(t.TempDir(), "redis.conf")
	require.NoError(t, os.WriteFile(conf, stock, 0o640))
	args := []string{conf, "--port", "0", "--dir", t.TempDir(), "--daemonize", "no", "--logfile", "", "--pidfile", ""}
	ctx := context.Background()

	addr, cmd, _ := startArgs(t, bin, nil, args...)
	c := redis.NewClient(&redis.Options{Addr: addr})
	set := map[string]string{
		"maxclients": "123", "timeout": "45", "maxmemory": "10485760", "maxmemory-policy": "allkeys-lru",
		"save": "100 5", "appendonly": "no", "lfu-log-factor": "20",
	}
	for k, v := range set {
		require.NoError(t, c.ConfigSet(ctx, k, v).Err(), k)
	}
	require.NoError(t, c.ConfigSet(ctx, "requirepass", "two words").Err())
	require.NoError(t, c.Do(ctx, "AUTH", "two words").Err())
	require.NoError(t, c.ConfigRewrite(ctx).Err())
	c.Close()
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait())

	got, err := os.ReadFile(conf)
	require.NoError(t, err)
	// Every comment and every line ratekv has no parameter for, in order.
	rest := string(got)
	for _, l := range strings.Split(string(stock), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || !strings.HasPrefix(l, "#") && !strings.HasPrefix(l, "daemonize") && !strings.HasPrefix(l, "databases") {
			continue
		}
		i := strings.Index(rest, l+"\n")
		require.GreaterOrEqual(t, i, 0, "line %q lost or out of order", l)
		rest = rest[i+len(l)+1:]
	}
	require.Contains(t, string(got), "\nmaxclients 123\n")
	fi, err := os.Stat(conf)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o640), fi.Mode().Perm())

	addr, _, _ = startArgs(t, bin, nil, args...)
	c = redis.NewClient(&redis.Options{Addr: addr, Password: "two words"})
	defer c.Close()
	set["requirepass"] = "two words"
	for k, v := range set {
		got, err := c.ConfigGet(ctx, k).Result()
		require.NoError(t, err)
		require.Equal(t, map[string]string{k: v}, got, k)
	}
}
