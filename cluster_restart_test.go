package main

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestClusterRollingRestart: every node of a 3+3 cluster restarts in
// place, as an operator does it, while a go-redis ClusterClient writes:
// each replica is restarted; each primary first hands its slots to its
// replica with CLUSTER FAILOVER, then restarts and comes back as a
// replica. No acknowledged write is lost, the client keeps writing, and
// the cluster ends with every slot covered and every node agreeing.
func TestClusterRollingRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl := newCliCluster(t, ctx, 1000)
	type node struct {
		addr, dir string
		args      []string
		cmd       *exec.Cmd
	}
	nodes := map[string]*node{}
	var addrs []string
	for range 6 {
		n := &node{dir: t.TempDir(), args: cl.nodeArgs()}
		n.addr, n.cmd = startRatekv(t, cl.bin, n.dir, n.args...)
		_, port, _ := net.SplitHostPort(n.addr)
		n.args = append(n.args, "--port", port) // the same port at every restart
		nodes[n.addr] = n
		addrs = append(addrs, n.addr)
	}
	out := cl.redisCli(append(append([]string{"create"}, addrs...), "--cluster-replicas", "1", "--cluster-yes")...)
	require.Contains(t, out, "[OK] All 16384 slots covered.")
	clients := map[string]*redis.Client{}
	for _, a := range addrs {
		clients[a] = redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1})
		defer clients[a].Close()
	}
	agreed := func() string {
		var first string
		require.Eventually(t, func() bool {
			for i, a := range addrs {
				v, err := clients[a].ClusterNodes(ctx).Result()
				if err != nil {
					return false
				}
				if v = nodesView(t, clients[a]); i == 0 {
					first = v
				} else if v != first {
					return false
				}
			}
			return strings.Count(first, " master ") == 3 && strings.Count(first, " slave ") == 3 && !strings.Contains(first, "fail")
		}, 20*time.Second, 50*time.Millisecond, "the nodes agree, none failed")
		return first
	}
	agreed()

	// The writer: every write it saw acknowledged must be there at the end.
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, MaxRedirects: 16})
	defer cc.Close()
	var mu sync.Mutex
	acked, failed := map[int]bool{}, 0
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			err := cc.Set(ctx, "key:"+strconv.Itoa(i), i, 0).Err()
			mu.Lock()
			if err == nil {
				acked[i] = true
			} else {
				failed++
			}
			mu.Unlock()
			if err != nil {
				time.Sleep(10 * time.Millisecond)
			}
		}
	}()
	progress := func(step string) {
		mu.Lock()
		from := len(acked)
		mu.Unlock()
		require.Eventually(t, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(acked) >= from+50
		}, 10*time.Second, 10*time.Millisecond, "the client writes after %s", step)
	}
	restart := func(addr string) {
		n := nodes[addr]
		require.NoError(t, n.cmd.Process.Signal(syscall.SIGTERM))
		n.cmd.Wait()
		var again string
		again, n.cmd = startRatekv(t, cl.bin, n.dir, n.args...)
		require.Equal(t, addr, again)
	}
	replicaOf := func(view, id string) string {
		for _, l := range strings.Split(view, "\n") {
			if f := strings.Fields(l); f[3] == id {
				return strings.Split(f[1], "@")[0]
			}
		}
		return ""
	}
	connected := func(addr string) {
		require.Eventually(t, func() bool {
			role, err := clients[addr].Do(ctx, "role").Slice()
			return err == nil && role[0] == "slave" && role[3] == "connected"
		}, 20*time.Second, 50*time.Millisecond, "%s replicates its primary", addr)
	}
	progress("the start")

	view := agreed()
	var primaries, replicas []string
	for _, l := range strings.Split(view, "\n") {
		f := strings.Fields(l)
		a := strings.Split(f[1], "@")[0]
		if f[2] == "master" {
			primaries = append(primaries, f[0]+" "+a)
		} else {
			replicas = append(replicas, a)
		}
	}
	for _, a := range replicas {
		restart(a)
		connected(a)
		agreed()
		progress("the restart of replica " + a)
	}
	for _, p := range primaries {
		id, addr, _ := strings.Cut(p, " ")
		r := replicaOf(agreed(), id)
		require.NotEmpty(t, r, "the replica of %s", addr)
		require.NoError(t, clients[r].Do(ctx, "cluster", "failover").Err())
		require.Eventually(t, func() bool {
			role, err := clients[addr].Do(ctx, "role").Slice()
			return err == nil && role[0] == "slave"
		}, 10*time.Second, 20*time.Millisecond, "%s hands its slots to %s", addr, r)
		progress("the failover to " + r)
		restart(addr)
		connected(addr)
		agreed()
		progress("the restart of primary " + addr)
	}
	close(stop)
	<-done

	out = cl.redisCli("check", addrs[0])
	require.Contains(t, out, "[OK] All nodes agree about slots configuration.")
	require.Contains(t, out, "[OK] All 16384 slots covered.")
	view = agreed()
	for _, p := range primaries { // each old primary now replicates
		id, _, _ := strings.Cut(p, " ")
		require.Regexp(t, id+" \\S+ slave ", view)
	}
	t.Logf("%d writes acknowledged, %d refused or failed during the restarts", len(acked), failed)
	lost := 0
	for i := range acked {
		v, err := cc.Get(ctx, "key:"+strconv.Itoa(i)).Result()
		if err != nil || v != strconv.Itoa(i) {
			lost++
			if lost <= 5 {
				t.Errorf("key:%d acknowledged, now %q %v", i, v, err)
			}
		}
	}
	require.Zero(t, lost, fmt.Sprintf("of %d acknowledged writes", len(acked)))
}
