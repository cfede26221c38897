package cluster

// Failover without Sentinel or gossip. The Raft leader asks every other
// node for its ROLE over RESP, all at once, every fifth of
// cluster-node-timeout: the reply says the node serves clients. A node
// that has not answered for cluster-node-timeout is marked failed (one
// entry); a failed primary that serves slots is replaced by its replica
// with the highest replication offset (INFO replication) among those that
// answer and whose data is recent enough for
// cluster-replica-validity-factor, unless most primaries fail to answer
// the leader (one entry: every
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
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ratekv/ratekv/command"
	"github.com/ratekv/ratekv/config"
	"github.com/redis/go-redis/v9"
)

// probe is what the leader knows of one node's liveness.
type probe struct {
	lastOK time.Time
	up     bool // its last ROLE was answered
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
				if p.up = askRole(rdb, every); p.up {
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
		probes[self] = &probe{lastOK: now, up: true}
		c.judge(st, probes, now, func(id string) (int64, time.Duration, bool) {
			if id == self {
				return c.selfData()
			}
			n := st.Nodes[id]
			return replicaData(clients[net.JoinHostPort(n.IP, strconv.Itoa(n.Port))], every)
		})
	}
}

// askRole asks a node's ROLE within d: whether it answered.
func askRole(rdb *redis.Client, d time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	role, err := rdb.Do(ctx, "role").Slice()
	return err == nil && len(role) > 0
}

// replicaData asks a replica's INFO replication within d: its offset and
// its data age, as Redis's clusterHandleSlaveFailover counts it (the time
// since it last heard from its primary, or since its link went down).
func replicaData(rdb *redis.Client, d time.Duration) (int64, time.Duration, bool) {
	if rdb == nil {
		return 0, 0, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	info, err := rdb.Info(ctx, "replication").Result()
	if err != nil {
		return 0, 0, false
	}
	f := map[string]string{}
	for _, line := range strings.Split(info, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			f[k] = v
		}
	}
	off, err := strconv.ParseInt(f["slave_repl_offset"], 10, 64)
	if err != nil {
		return 0, 0, false
	}
	secs := f["master_last_io_seconds_ago"]
	if f["master_link_status"] != "up" {
		secs = f["master_link_down_since_seconds"]
	}
	age, err := strconv.ParseInt(secs, 10, 64)
	if err != nil || age < 0 { // never linked
		return off, time.Duration(math.MaxInt64), true
	}
	return off, time.Duration(age) * time.Second, true
}

// selfData is replicaData of this node.
func (c *Control) selfData() (int64, time.Duration, bool) {
	_, off, _ := c.o.Engine.ReplState()
	return off, c.o.Engine.ReplDataAge(), true
}

// validReplica reports whether a replica whose data is age old may be
// promoted automatically: as Redis's clusterHandleSlaveFailover, the age
// beyond cluster-node-timeout must not exceed repl-ping-replica-period
// plus cluster-node-timeout × cluster-replica-validity-factor (0: any).
func validReplica(age, nodeTimeout, ping time.Duration, factor int64) bool {
	if factor == 0 || factor > int64(math.MaxInt64/4)/int64(nodeTimeout) {
		return true
	}
	if age > nodeTimeout {
		age -= nodeTimeout
	}
	return age <= ping+time.Duration(factor)*nodeTimeout
}

// replPing is repl-ping-replica-period.
func (c *Control) replPing() time.Duration {
	if c.o.Config == nil {
		return 10 * time.Second
	}
	return time.Duration(c.o.Config.Int(config.ReplPingPeriod)) * time.Second
}

// validityFactor is cluster-replica-validity-factor.
func (c *Control) validityFactor() int64 {
	if c.o.Config == nil {
		return 10
	}
	return int64(c.o.Config.Int(config.ClusterValidityFactor))
}

// judge commits what the probes show: nodes failed or back, and the
// promotion of a failed primary's best replica, among those data (a
// replica's offset and data age) finds valid.
func (c *Control) judge(st *State, probes map[string]*probe, now time.Time, data func(id string) (int64, time.Duration, bool)) {
	// The primaries that do not answer may be alive on the other side of
	// a partition, and keep serving there if they are most of them
	// (health.go): then the leader promotes no one. So one side of a
	// partition serves each slot, as in Redis, where a failover needs
	// the votes of most primaries.
	primaries, answering := 0, 0
	for _, id := range st.IDs() {
		if n := st.Nodes[id]; n.Primary != "" || st.SlotsOf(id) == 0 {
			continue
		}
		primaries++
		if p := probes[id]; p != nil && now.Sub(p.lastOK) <= c.o.NodeTimeout {
			answering++
		}
	}
	quorum := primaries-answering < primaries/2+1
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
		if !quorum {
			c.log.Debug("cluster: no failover while most primaries do not answer", "primary", id, "answering", answering, "primaries", primaries)
			continue
		}
		best, bestOff := "", int64(-1)
		for _, rid := range st.IDs() {
			r, rp := st.Nodes[rid], probes[rid]
			if r.Primary != id || rp == nil || !rp.up {
				continue
			}
			off, age, ok := data(rid)
			if !ok {
				continue
			}
			if !validReplica(age, c.o.NodeTimeout, c.replPing(), c.validityFactor()) {
				c.log.Warn("cluster: a replica's data is too old to replace its failed primary (cluster-replica-validity-factor)", "primary", id, "replica", rid, "age", age)
				continue
			}
			if off > bestOff {
				best, bestOff = rid, off
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
	if force {
		return c.propose(Entry{Op: OpFailover, ID: c.selfID()})
	}
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
	if err := c.propose(Entry{Op: OpFailover, ID: c.selfID()}); err != nil {
		return err
	}
	// The writes paused on the old primary run once it has applied
	// the promotion too, as Redis's resetManualFailover when the
	// master learns of it: they are redirected then, not taken by a
	// node that is a replica now.
	for deadline := time.Now().Add(c.applyTimeout()); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if role, err := rdb.Do(ctx, "role").Slice(); err == nil && len(role) > 0 && role[0] == "slave" {
			break
		}
	}
	return nil
}
