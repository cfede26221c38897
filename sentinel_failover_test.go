package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// Failover under real Redis Sentinel: a ratekv primary with two replicas,
// three redis-sentinel processes (quorum 2) and go-redis's failover client
// writing through them. The primary is killed with SIGKILL under load;
// Sentinel promotes a replica, the client goes on, writes acknowledged by
// WAIT survive, and the old primary, restarted, rejoins as a replica.

// fnode is a ratekv process started from a config file, so that Sentinel's
// CONFIG REWRITE has a file to rewrite and a restart comes back as what
// Sentinel made it.
type fnode struct {
	port int
	conf string
	dir  string
	cmd  *exec.Cmd
}

func (n *fnode) addr() string { return fmt.Sprintf("127.0.0.1:%d", n.port) }

// start runs the node; bin is ratekv, or redis-server (the test's
// expectations are Redis's: RATEKV_SENTINEL_REDIS=1 runs it on Redis).
func (n *fnode) start(t *testing.T, bin string) {
	t.Helper()
	if filepath.Base(bin) != "redis-server" {
		_, n.cmd = startRatekv(t, bin, n.dir, n.conf)
		return
	}
	n.cmd = exec.Command(bin, n.conf)
	require.NoError(t, n.cmd.Start())
	cmd := n.cmd
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	eventually(t, 10*time.Second, "redis-server up", func() bool { return role(n.addr()) != "" })
}

func newFailoverNode(t *testing.T, extra string) *fnode {
	t.Helper()
	dir := t.TempDir()
	port, err := strconv.Atoi(freePort(t))
	require.NoError(t, err)
	n := &fnode{port: port, dir: dir, conf: filepath.Join(dir, "ratekv.conf")}
	conf := fmt.Sprintf("bind 127.0.0.1\nport %d\ndir %s\nsave \"\"\nappendonly yes\nappendfsync always\n%s", n.port, dir, extra)
	require.NoError(t, os.WriteFile(n.conf, []byte(conf), 0o644))
	return n
}

// startSentinel runs redis-sentinel on a port of its own, monitoring
// primary as "rk" with quorum 2.
func startSentinel(t *testing.T, bin string, primary *fnode) string {
	t.Helper()
	dir := t.TempDir()
	port := freePort(t)
	conf := filepath.Join(dir, "sentinel.conf")
	require.NoError(t, os.WriteFile(conf, []byte(fmt.Sprintf(`bind 127.0.0.1
port %s
dir %s
sentinel monitor rk 127.0.0.1 %d 2
sentinel down-after-milliseconds rk 1000
sentinel failover-timeout rk 4000
sentinel parallel-syncs rk 2
`, port, dir, primary.port)), 0o644))
	cmd := exec.Command(bin, conf)
	out, err := os.Create(filepath.Join(dir, "log"))
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "log"))
			t.Logf("sentinel %s log:\n%s", port, b)
		}
	})
	return "127.0.0.1:" + port
}

// eventually polls cond every 100 ms until it holds or within passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", within, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// role is the first element of ROLE's reply at addr ("" when unreachable).
func role(addr string) string {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	v, err := c.Do(context.Background(), "ROLE").Slice()
	if err != nil || len(v) == 0 {
		return ""
	}
	s, _ := v[0].(string)
	return s
}

// infoField returns field of INFO section at addr.
func infoField(addr, section, field string) string {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	info, err := c.Info(context.Background(), section).Result()
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func TestSentinelFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ratekv and redis-sentinel processes")
	}
	sentinelBin, err := exec.LookPath("redis-sentinel")
	if err != nil {
		t.Skip("redis-sentinel not installed (apt-get install redis-sentinel)")
	}
	bin, err := buildBinary()
	require.NoError(t, err)
	if os.Getenv("RATEKV_SENTINEL_REDIS") == "1" {
		bin, err = exec.LookPath("redis-server")
		require.NoError(t, err)
	}
	ctx := context.Background()
	throttle := filepath.Base(bin) != "redis-server"

	begin := time.Now()
	a := newFailoverNode(t, "")
	a.start(t, bin)
	b := newFailoverNode(t, fmt.Sprintf("replicaof 127.0.0.1 %d\n", a.port))
	c := newFailoverNode(t, fmt.Sprintf("replicaof 127.0.0.1 %d\nreplica-priority 50\n", a.port))
	b.start(t, bin)
	c.start(t, bin)
	eventually(t, 10*time.Second, "both replicas online", func() bool {
		return infoField(a.addr(), "replication", "connected_slaves") == "2"
	})

	var sentinels []string
	for range 3 {
		sentinels = append(sentinels, startSentinel(t, sentinelBin, a))
	}
	for _, s := range sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: s})
		defer sc.Close()
		eventually(t, 15*time.Second, "sentinel "+s+" sees two replicas and two other sentinels", func() bool {
			reps, err1 := sc.Replicas(ctx, "rk").Result()
			sens, err2 := sc.Sentinels(ctx, "rk").Result()
			return err1 == nil && err2 == nil && len(reps) == 2 && len(sens) == 2
		})
	}

	client := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName: "rk", SentinelAddrs: sentinels,
		DialTimeout: 500 * time.Millisecond, ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond,
		MaxRetries: -1,
	})
	defer client.Close()

	// The writer sets w:<n> and, every 50 writes, waits for a replica's
	// acknowledgement: those writes must survive the failover.
	var (
		mu        sync.Mutex
		acked     []string
		written   atomic.Int64
		failed    atomic.Int64
		afterKill atomic.Int64
		killed    atomic.Bool
		stop      = make(chan struct{})
		done      = make(chan struct{})
	)
	go func() {
		defer close(done)
		var pending []string
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			key := "w:" + strconv.Itoa(i)
			if err := client.Set(ctx, key, i, 0).Err(); err != nil {
				failed.Add(1)
				pending = nil
				time.Sleep(20 * time.Millisecond)
				continue
			}
			if throttle {
				if _, err := client.Do(ctx, "CL.THROTTLE", "rl", "10", "100", "1").Result(); err != nil {
					failed.Add(1)
				}
			}
			written.Add(1)
			if killed.Load() {
				afterKill.Add(1)
			}
			pending = append(pending, key)
			if len(pending) == 50 {
				if n, err := client.Do(ctx, "WAIT", "1", "1000").Int(); err == nil && n >= 1 {
					mu.Lock()
					acked = append(acked, pending...)
					mu.Unlock()
				}
				pending = nil
			}
		}
	}()
	t.Logf("sentinels ready after %s", time.Since(begin).Round(time.Millisecond))
	eventually(t, 10*time.Second, "writes through the failover client", func() bool { return written.Load() > 500 })

	killed.Store(true)
	require.NoError(t, a.cmd.Process.Kill())
	a.cmd.Wait()
	start := time.Now()
	var promoted string
	eventually(t, 30*time.Second, "Sentinel promotes a replica", func() bool {
		sc := redis.NewSentinelClient(&redis.Options{Addr: sentinels[0]})
		defer sc.Close()
		addr, err := sc.GetMasterAddrByName(ctx, "rk").Result()
		if err != nil || len(addr) != 2 || addr[1] == strconv.Itoa(a.port) {
			return false
		}
		promoted = addr[0] + ":" + addr[1]
		return role(promoted) == "master"
	})
	t.Logf("promoted %s after %s", promoted, time.Since(start).Round(time.Millisecond))
	eventually(t, 20*time.Second, "the client writes to the new primary", func() bool { return afterKill.Load() > 200 })

	// The old primary comes back from its config file and Sentinel turns it
	// into a replica of the new one.
	a.start(t, bin)
	eventually(t, 30*time.Second, "the old primary rejoins as a replica", func() bool {
		return role(a.addr()) == "slave" && infoField(a.addr(), "replication", "master_link_status") == "up"
	})
	t.Logf("the old primary rejoined %s after the kill", time.Since(start).Round(time.Millisecond))

	close(stop)
	<-done
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d writes, %d failed calls, %d acknowledged by WAIT", written.Load(), failed.Load(), len(acked))
	require.NotEmpty(t, acked)
	check := redis.NewClient(&redis.Options{Addr: promoted})
	defer check.Close()
	for _, k := range acked {
		require.NoError(t, check.Get(ctx, k).Err(), "acknowledged write %s lost", k)
	}
	// The rejoined node converges on the new primary's data.
	old := redis.NewClient(&redis.Options{Addr: a.addr()})
	defer old.Close()
	eventually(t, 10*time.Second, "the rejoined node holds the acknowledged writes", func() bool {
		n, err := old.Exists(ctx, acked[len(acked)-1]).Result()
		return err == nil && n == 1
	})
	_, err = old.Set(ctx, "x", 1, 0).Result()
	require.ErrorContains(t, err, "READONLY")
}
