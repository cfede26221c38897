package cluster

// A node's own view of whether it is cut off from the cluster, Redis's
// cluster_state:fail for a node in a minority partition. Raft alone
// cannot tell: losing the majority of the voters freezes the topology
// everywhere, while the data path should keep serving the slots each node
// owns. So the rule is, checked every fifth of cluster-node-timeout:
//
//   - a node that has a Raft leader (it leads, or it heard from the leader
//     within a heartbeat timeout or two) is in the cluster;
//   - a node that has had no leader for cluster-node-timeout asks every
//     primary that serves slots for PING on its client port; when fewer
//     than a majority of them (itself included) have answered within
//     cluster-node-timeout, it is down: commands with keys get
//     -CLUSTERDOWN (reads are served with cluster-allow-reads-when-down).
//
// A node that is down comes back once it reaches a majority of the
// primaries again or hears from a leader; in the second case only after
// it has applied every entry the leader committed meanwhile (a no-op
// entry through the leader, which it waits to apply), so that an old
// primary whose slots failed over never serves them again: it learns
// first that it is a replica now.

import (
	"context"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// health runs until stop closes and keeps the engine's down state.
func (c *Control) health(stop <-chan struct{}) {
	every := max(c.o.NodeTimeout/5, 50*time.Millisecond)
	tick := time.NewTicker(every)
	defer tick.Stop()
	clients := map[string]*redis.Client{}
	defer func() {
		for _, rdb := range clients {
			rdb.Close()
		}
	}()
	seen := map[string]time.Time{} // primary id → its last PING answered
	lastLeader := time.Now()
	down := false
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		now := time.Now()
		leader := c.Leader() != ""
		if leader {
			lastLeader = now
			clear(seen)
		}
		cut := false
		if !leader {
			reached, needed := c.pingPrimaries(seen, clients, now, every)
			cut = now.Sub(lastLeader) > c.o.NodeTimeout && reached < needed
		}
		switch {
		case cut && !down:
			down = true
			c.o.Engine.SetClusterDown(true)
			c.log.Warn("cluster: this node reaches neither a Raft leader nor a majority of the primaries: cluster state fail")
		case !cut && down:
			if leader && c.propose(Entry{Op: OpNoop}) != nil {
				continue // not caught up with the leader yet: stay down
			}
			down = false
			c.o.Engine.SetClusterDown(false)
			c.log.Warn("cluster: this node reaches the cluster again: cluster state ok")
		}
	}
}

// pingPrimaries pings, all at once within d, every other primary that
// serves slots, and returns how many primaries (this node included) have
// answered within cluster-node-timeout, and how many make a majority.
// A primary first seen now counts as answered now.
func (c *Control) pingPrimaries(seen map[string]time.Time, clients map[string]*redis.Client, now time.Time, d time.Duration) (reached, needed int) {
	st := c.State()
	self := c.selfID()
	var mu sync.Mutex // guards answered
	var answered []string
	var wg sync.WaitGroup
	primaries := map[string]bool{}
	for _, id := range st.IDs() {
		n := st.Nodes[id]
		if n.Primary != "" || st.SlotsOf(id) == 0 {
			continue
		}
		primaries[id] = true
		if id == self {
			seen[id] = now
			continue
		}
		if _, ok := seen[id]; !ok {
			seen[id] = now
		}
		ip := n.IP
		if ip == "" {
			ip = "127.0.0.1"
		}
		addr := net.JoinHostPort(ip, strconv.Itoa(n.Port))
		rdb := clients[addr]
		if rdb == nil {
			rdb = c.client(ip, n.Port)
			clients[addr] = rdb
		}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), d)
			defer cancel()
			if rdb.Ping(ctx).Err() == nil {
				mu.Lock()
				answered = append(answered, id)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, id := range answered {
		seen[id] = now
	}
	for id, t := range seen {
		if !primaries[id] {
			delete(seen, id)
		} else if now.Sub(t) <= c.o.NodeTimeout {
			reached++
		}
	}
	if len(primaries) == 0 {
		return 1, 1 // no primary serves slots: nothing to be cut off from
	}
	return reached, len(primaries)/2 + 1
}
