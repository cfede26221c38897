package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekv/ratekv/shards"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestRedisCliReshard: three ratekv primaries made a cluster by redis-cli
// --cluster create; while a go-redis ClusterClient writes, redis-cli
// --cluster reshard moves 100 slots and rebalance moves them back. Every
// write the client saw acknowledged is there afterwards, on its slot's
// owner, and a CL.THROTTLE key that moved keeps its state: its burst is
// spent across the move, not granted again.
func TestRedisCliReshard(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl := newCliCluster(t, ctx, 2000)
	var addrs []string
	for range 3 {
		addr, _ := startRatekv(t, cl.bin, t.TempDir(), cl.nodeArgs()...)
		addrs = append(addrs, addr)
	}
	redisCli := cl.redisCli
	var err error
	out := redisCli(append(append([]string{"create"}, addrs...), "--cluster-replicas", "0", "--cluster-yes")...)
	require.Contains(t, out, "[OK] All 16384 slots covered.")
	ids := make([]string, len(addrs))
	for i, a := range addrs {
		rdb := redis.NewClient(&redis.Options{Addr: a})
		ids[i], err = rdb.ClusterMyID(ctx).Result()
		rdb.Close()
		require.NoError(t, err)
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, MaxRedirects: 16})
	defer cc.Close()
	require.Eventually(t, func() bool { return cc.Set(ctx, "probe", "1", 0).Err() == nil }, 10*time.Second, 50*time.Millisecond)

	// Rate limits on 100 keys, half their burst of 10 spent before the
	// move; 50 of them in slots 0-99, which reshard moves first.
	const limits = 100
	var limitKeys []string
	for k, low := 0, 0; len(limitKeys) < limits; k++ {
		key := "rl:" + strconv.Itoa(k)
		if shards.KeySlot([]byte(key)) < 100 {
			if low == limits/2 {
				continue
			}
			low++
		} else if len(limitKeys)-low == limits/2 {
			continue
		}
		limitKeys = append(limitKeys, key)
	}
	throttle := func(k int) int64 {
		r, err := cc.Do(ctx, "CL.THROTTLE", limitKeys[k], 9, 1, 3600, 1).Slice()
		require.NoError(t, err)
		return r[0].(int64)
	}
	for k := range limits {
		for range 5 {
			require.Equal(t, int64(0), throttle(k))
		}
	}
	slotOwner := func(slot int64) string {
		slots, err := cc.ClusterSlots(ctx).Result()
		require.NoError(t, err)
		for _, s := range slots {
			if int64(s.Start) <= slot && slot <= int64(s.End) {
				return s.Nodes[0].ID
			}
		}
		return ""
	}
	before := map[int]string{}
	for k := range limits {
		before[k] = slotOwner(int64(shards.KeySlot([]byte(limitKeys[k]))))
	}

	// A writer runs through both moves, some 2,000 writes a second; it
	// keeps what was acknowledged.
	var acked sync.Map
	var writes, failures atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(500 * time.Microsecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			k := "key:" + strconv.Itoa(i)
			if err := cc.Set(ctx, k, i, 0).Err(); err != nil {
				failures.Add(1)
				continue
			}
			acked.Store(k, strconv.Itoa(i))
			writes.Add(1)
		}
	}()
	time.Sleep(200 * time.Millisecond)
	out = redisCli("reshard", addrs[0], "--cluster-from", ids[0], "--cluster-to", ids[1], "--cluster-slots", "100", "--cluster-yes")
	require.NotContains(t, out, "ERR", out)
	out = redisCli("check", addrs[2])
	require.Contains(t, out, "[OK] All nodes agree about slots configuration.", out)
	require.Contains(t, out, "[OK] All 16384 slots covered.", out)

	// The moved limits: exactly the other half of the burst is left.
	cc.ReloadState(ctx)
	moved := 0
	for k := range limits {
		owner := slotOwner(int64(shards.KeySlot([]byte(limitKeys[k]))))
		if owner != before[k] {
			moved++
		}
		allowed := 0
		for range 10 {
			if throttle(k) == 0 {
				allowed++
			}
		}
		require.Equal(t, 5, allowed, "%s (moved: %v) keeps its TAT", limitKeys[k], owner != before[k])
	}
	require.GreaterOrEqual(t, moved, limits/2, "the limits in slots 0-99 moved with them")

	out = redisCli("rebalance", addrs[0], "--cluster-yes")
	require.NotContains(t, out, "ERR", out)
	close(stop)
	<-done
	out = redisCli("check", addrs[1])
	require.Contains(t, out, "[OK] All nodes agree about slots configuration.", out)
	require.Contains(t, out, "[OK] All 16384 slots covered.", out)
	t.Logf("%d writes acknowledged during the moves, %d refused; %d of %d limits moved", writes.Load(), failures.Load(), moved, limits)
	require.Greater(t, writes.Load(), int64(100))

	// Every acknowledged write is there, on its slot's owner only.
	cc.ReloadState(ctx)
	var lost []string
	acked.Range(func(k, v any) bool {
		got, err := cc.Get(ctx, k.(string)).Result()
		if err != nil || got != v.(string) {
			lost = append(lost, fmt.Sprintf("%s=%q (%v)", k, got, err))
		}
		return len(lost) < 10
	})
	require.Empty(t, lost, "acknowledged writes lost by the reshard")
	var total int64
	for _, a := range addrs {
		rdb := redis.NewClient(&redis.Options{Addr: a})
		n, err := rdb.DBSize(ctx).Result()
		rdb.Close()
		require.NoError(t, err)
		total += n
	}
	require.Equal(t, writes.Load()+limits+1, total, "each key once, on its slot's owner")
}
