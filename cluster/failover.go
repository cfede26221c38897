package cluster

// Failover without Sentinel or gossip. The Raft leader asks every other
// node for its ROLE over RESP, all at once, every fifth of
// cluster-node-timeout: the reply says the node serves clients, and a
// replica's offset. A node that has not answered for cluster-node-timeout
// is marked failed (one entry);
// a failed primary that serves slots is replaced by its replica with the
// highest replication offset among those that answer (one entry: every
// node applies the promotion at once, the new primary with REPLICAOF NO
// ONE, the others by following it). The old primary, when it returns,
// reads the log and becomes a replica of the new one. A new leader starts
// its count from its election, so a failover takes at most one election
// plus cluster-node-timeout.
//
// CLUSTER FAILOVER on a replica is coordinated as Redis's manual
// failover: the primary's writes pause, the replica catches up with its
// offset, then the promotion commits; FORCE and TAKEOVER skip the wait.

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/ratekv/ratekv/command"
	"github.com/redis/go-redis/v9"
)

// probe is what the leader knows of one node's liveness.
type probe struct {
	lastOK time.Time
	offset int64 // a replica's replication offset (-1: not connected)
	up     bool  // its last ROLE was answered
}

// monitor runs until stop closes, probing the nodes while this node leads.
func (c *Control) monitor(stop <-chan struct{}) {
	every := max(c.o.NodeTimeout/5, 50*time.Millisecond)
	tick := time.NewTicker(every)
	defer tick.Stop()
	probes := map[string]*probe{}
	clients := map[string]*redis.Client{}
	defer func() {
		for _, rdb := range clients {
			rdb.Close()
		}
	}()
	leading := false
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		if !c.IsLeader() {
			leading = false
			continue
		}
		now := time.Now()
		if !leading {
			leading = true
			clear(probes) // a new leader counts from its election
		}
		st := c.State()
		self := c.selfID()
		var wg sync.WaitGroup
		for id, n := range st.Nodes {
			if id == self {
				continue
			}
			p := probes[id]
			if p == nil {
				p = &probe{lastOK: now}
				probes[id] = p
			}
			addr := net.JoinHostPort(n.IP, strconv.Itoa(n.Port))
			rdb := clients[addr]
			if rdb == nil {
				rdb = c.client(n.IP, n.Port)
				clients[addr] = rdb
			}
			wg.Go(func() { // every node at once: a silent one costs no more
				if p.up, p.offset = askRole(rdb, every); p.up {
					p.lastOK = now
				}
			})
		}
		wg.Wait()
		for id := range probes {
			if st.Nodes[id] == nil || id == self {
				delete(probes, id)
			}
		}
		// This node is a candidate too, when it is a replica.
		_, off, _ := c.o.Engine.ReplState()
		probes[self] = &probe{lastOK: now, offset: off, up: true}
		c.judge(st, probes, now)
	}
}

// askRole asks a node's ROLE within d: whether it answered, and its
// replication offset when it is a replica.
func askRole(rdb *redis.Client, d time.Duration) (bool, int64) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	role, err := rdb.Do(ctx, "role").Slice()
	if err != nil || len(role) == 0 {
		return false, -1
	}
	if len(role) >= 5 && role[0] == "slave" {
		if off, ok := role[4].(int64); ok {
			return true, off
		}
	}
	return true, -1
}

// judge commits what the probes show: nodes failed or back, and the
// promotion of a failed primary's best replica.
func (c *Control) judge(st *State, probes map[string]*probe, now time.Time) {
	for _, id := range st.IDs() {
		p, n := probes[id], st.Nodes[id]
		if p == nil {
			continue
		}
		failed := now.Sub(p.lastOK) > c.o.NodeTimeout
		if failed != n.Fail {
			if err := c.propose(Entry{Op: OpSetFail, ID: id, Fail: failed}); err != nil {
				c.log.Warn("cluster: cannot mark a node", "id", id, "fail", failed, "err", err)
				continue
			}
			c.log.Warn("cluster: node state changed", "id", id, "fail", failed)
		}
		if !failed || n.Primary != "" || st.SlotsOf(id) == 0 {
			continue
		}
		best, bestOff := "", int64(-2)
		for _, rid := range st.IDs() {
			r, rp := st.Nodes[rid], probes[rid]
			if r.Primary != id || rp == nil || !rp.up {
				continue
			}
			if rp.offset > bestOff {
				best, bestOff = rid, rp.offset
			}
		}
		if best == "" {
			continue // no replica to promote: its slots stay down
		}
		if err := c.propose(Entry{Op: OpFailover, ID: best}); err != nil {
			c.log.Warn("cluster: cannot promote a replica", "primary", id, "replica", best, "err", err)
			continue
		}
		c.log.Warn("cluster: failover: a replica replaces its failed primary", "primary", id, "replica", best, "offset", bestOff)
	}
}

// Failover promotes this replica in its primary's place (CLUSTER
// FAILOVER). Unless force, the primary's writes pause first and this
// replica catches up with its offset, so that no acknowledged write is
// lost.
func (c *Control) Failover(force bool) error {
	c.waitReady()
	st := c.State()
	me := st.Nodes[c.selfID()]
	if me == nil || me.Primary == "" {
		return errors.New(command.ErrFailoverMaster)
	}
	if !force {
		p := st.Nodes[me.Primary]
		if p == nil {
			return errors.New("ERR I'm a replica but my master is unknown to me")
		}
		rdb := c.client(p.IP, p.Port)
		defer rdb.Close()
		ctx := context.Background()
		pause := 2 * c.applyTimeout()
		if err := rdb.Do(ctx, "client", "pause", pause.Milliseconds(), "write").Err(); err != nil {
			return redisErr(err)
		}
		defer rdb.Do(ctx, "client", "unpause")
		role, err := rdb.Do(ctx, "role").Slice()
		if err != nil {
			return redisErr(err)
		}
		target, _ := role[1].(int64)
		deadline := time.Now().Add(c.applyTimeout())
		for {
			if _, off, _ := c.o.Engine.ReplState(); off >= target {
				break
			}
			if time.Now().After(deadline) {
				return errors.New("ERR Manual failover timed out: the replica did not catch up with its master")
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return c.propose(Entry{Op: OpFailover, ID: c.selfID()})
}
