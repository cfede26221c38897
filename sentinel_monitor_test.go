package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestSentinelMonitorsPrimary runs two real redis-sentinel processes over
// a ratekv primary without replicas, with a password (one sentinel sends
// AUTH password, the other AUTH default password): each connects,
// subscribes to __sentinel__:hello, reports ratekv as the master with its
// run_id and flags=master (neither s_down nor disconnected), and the two
// find each other through the hello channel. go-redis's failover client
// then finds ratekv through them. Skipped without redis-sentinel.
func TestSentinelMonitorsPrimary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	sentinelBin, err := exec.LookPath("redis-sentinel")
	if err != nil {
		t.Skip("redis-sentinel not installed")
	}
	bin, err := buildBinary()
	require.NoError(t, err)
	conf := filepath.Join(t.TempDir(), "ratekv.conf")
	require.NoError(t, os.WriteFile(conf, []byte("# managed by Sentinel\nappendonly no\nrequirepass s3cret\n"), 0o644))
	addr, _, _ := startArgs(t, bin, nil, conf, "--port", "0", "--dir", t.TempDir(), "--save", "")
	host, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	rk := redis.NewClient(&redis.Options{Addr: addr, Password: "s3cret"})
	defer rk.Close()
	ctx := context.Background()
	info, err := rk.Info(ctx, "server").Result()
	require.NoError(t, err)
	runID := sentinelInfoField(info, "run_id")
	require.Len(t, runID, 40)

	var sentinels []*redis.SentinelClient
	var sentinelAddrs []string
	for i := range 2 {
		sp := monitorFreePort(t)
		dir := t.TempDir()
		sc := filepath.Join(dir, "sentinel.conf")
		auth := "sentinel auth-pass mymaster s3cret\n"
		if i == 1 {
			auth += "sentinel auth-user mymaster default\n"
		}
		require.NoError(t, os.WriteFile(sc, []byte(fmt.Sprintf(
			"port %s\nbind 127.0.0.1\ndir %s\nlogfile %s\n"+
				"sentinel monitor mymaster %s %s 2\nsentinel down-after-milliseconds mymaster 3000\n%s",
			sp, dir, filepath.Join(dir, "sentinel.log"), host, port, auth)), 0o644))
		cmd := exec.Command(sentinelBin, sc)
		require.NoError(t, cmd.Start(), "sentinel %d", i)
		t.Cleanup(func() {
			cmd.Process.Kill()
			cmd.Wait()
			if t.Failed() {
				log, _ := os.ReadFile(filepath.Join(dir, "sentinel.log"))
				t.Logf("sentinel %d log:\n%s", i, log)
			}
		})
		sentinelAddrs = append(sentinelAddrs, net.JoinHostPort("127.0.0.1", sp))
		s := redis.NewSentinelClient(&redis.Options{Addr: sentinelAddrs[i]})
		defer s.Close()
		sentinels = append(sentinels, s)
	}

	// Within a few hello periods (2 s): the master is up, as ratekv, and
	// each sentinel knows the other.
	var last string
	ok := func() bool {
		for i, s := range sentinels {
			a, err := s.GetMasterAddrByName(ctx, "mymaster").Result()
			if err != nil || len(a) != 2 || a[0] != host || a[1] != port {
				last = fmt.Sprintf("sentinel %d: master address %v %v", i, a, err)
				return false
			}
			m, err := s.Master(ctx, "mymaster").Result()
			if err != nil || m["flags"] != "master" || m["runid"] != runID || m["role-reported"] != "master" {
				last = fmt.Sprintf("sentinel %d: master %v %v", i, m, err)
				return false
			}
			others, err := s.Sentinels(ctx, "mymaster").Result()
			if err != nil || len(others) != 1 {
				last = fmt.Sprintf("sentinel %d: sentinels %v %v", i, others, err)
				return false
			}
		}
		n, err := rk.PubSubNumSub(ctx, "__sentinel__:hello").Result()
		if err != nil || n["__sentinel__:hello"] != 2 {
			last = fmt.Sprintf("hello subscribers %v %v", n, err)
			return false
		}
		return true
	}
	deadline := time.Now().Add(20 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("Sentinel does not see ratekv as a healthy master: %s", last)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Sentinel's connections are named, and one of each is in Pub/Sub
	// mode.
	list, err := rk.ClientList(ctx).Result()
	require.NoError(t, err)
	require.Equal(t, 2, strings.Count(list, "-pubsub "), list)
	require.Equal(t, 2, strings.Count(list, "-cmd "), list)

	// A client that finds its primary through Sentinel.
	fc := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "mymaster", SentinelAddrs: sentinelAddrs, Password: "s3cret"})
	defer fc.Close()
	require.NoError(t, fc.Set(ctx, "k", "v", 0).Err())
	v, err := rk.Get(ctx, "k").Result()
	require.NoError(t, err)
	require.Equal(t, "v", v)
}

// monitorFreePort returns a loopback TCP port free a moment ago.
func monitorFreePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	_, p, _ := net.SplitHostPort(ln.Addr().String())
	return p
}

// sentinelInfoField returns field's value in an INFO reply.
func sentinelInfoField(info, field string) string {
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return v
		}
	}
	return ""
}
