package command

// The command layer's view of a multi-node cluster's topology: which node
// serves each hash slot, and where each node is. The cluster's control
// plane (the Raft-held topology) publishes a new SlotTable whenever the
// topology changes; the request path only loads the pointer and indexes
// Owner, so routing a key costs the same however large the cluster.
//
// A nil table is the one-node cluster: this node serves every slot.

import (
	"math"
	"strconv"
	"time"

	"github.com/ratekv/ratekv/internal/nodeid"
	"github.com/ratekv/ratekv/shards"
)

// NodeAddr is one node of the cluster as clients are told of it.
type NodeAddr struct {
	ID          string
	IP          string
	Port        int
	TLSPort     int
	BusPort     int
	Hostname    string
	Primary     string // the primary's id, for a replica; "" for a primary
	ConfigEpoch uint64
	Fail        bool // the topology's leader found it unreachable
}

// SlotTable is one published state of the topology; it is never changed
// after SetSlotTable, only replaced.
type SlotTable struct {
	Owner [shards.NumSlots]int32 // index into Nodes; -1: no node serves it
	Nodes []NodeAddr
	Self  int32 // this node's index in Nodes
	Epoch uint64
}

// SetSlotTable publishes a new topology to the request path (nil: the
// one-node cluster).
func (e *Engine) SetSlotTable(t *SlotTable) {
	e.slots.Store(t)
	e.setRoutes(t)
	e.slotsMoved(t)
	e.rt.uncovered.Store(t != nil && !t.covered())
	e.updateDown()
}

// SlotTable returns the topology the request path routes by (nil: the
// one-node cluster).
func (e *Engine) SlotTable() *SlotTable { return e.slots.Load() }

// ClusterControl changes the topology of a multi-node cluster: each method
// returns once the change is committed (applied by this node), so that a
// CLUSTER command's OK means every node will see it. main wires the
// Raft-held topology; without one (a one-node cluster) the commands that
// need it are refused.
type ClusterControl interface {
	// SetSlotNode assigns slot to the node with id (CLUSTER SETSLOT
	// slot NODE id).
	SetSlotNode(slot uint16, id string) error

	// Meet joins this node and the node at ip:port (CLUSTER MEET).
	Meet(ip string, port, busPort int) error
	// AddSlots gives slots to this node (CLUSTER ADDSLOTS[RANGE]).
	AddSlots(slots []uint16) error
	// DelSlots unassigns slots (CLUSTER DELSLOTS[RANGE]).
	DelSlots(slots []uint16) error
	// SetConfigEpoch sets this node's epoch (CLUSTER SET-CONFIG-EPOCH).
	SetConfigEpoch(epoch uint64) error
	// Forget removes node id from the cluster (CLUSTER FORGET).
	Forget(id string) error
	// Reset makes this node leave the cluster (CLUSTER RESET).
	Reset(hard bool) error
	// Replicate makes this node a replica of primary (CLUSTER
	// REPLICATE).
	Replicate(primary string) error
	// Failover promotes this replica in its primary's place (CLUSTER
	// FAILOVER); unless force, coordinated with the primary so that no
	// acknowledged write is lost.
	Failover(force bool) error

	// Leader returns the id of the node that leads the topology's Raft
	// group, "" while there is none (a majority of the voters is out of
	// reach: the topology is frozen, the slots are still served).
	Leader() string

	// The requests nodes send each other over RESP (CLUSTER RATEKV-*).
	Join(req []byte) error
	MeetBack(ip string, port, busPort int) error
	ApplyForwarded(entry []byte) (index int64, err error)
	ForgetForwarded(id string) error
}

// SetClusterControl wires the topology's control plane (main, at start).
func (e *Engine) SetClusterControl(ctl ClusterControl) { e.clusterCtl = ctl }

// FollowPrimary sets this node's replication role as the cluster's
// topology says: replicate host:port, or ("") be a primary. It is
// REPLICAOF without the client, which cluster mode refuses to users;
// nothing happens when the role is already that.
func (e *Engine) FollowPrimary(host string, port int) {
	r := e.repl
	r.mu.Lock()
	defer r.mu.Unlock()
	if host == "" {
		if r.masterHost != "" {
			r.unsetMasterLocked()
			r.log.Info("MASTER MODE enabled (cluster topology)")
		}
		return
	}
	p := strconv.Itoa(port)
	if r.masterHost == host && r.masterPort == p {
		return
	}
	r.setMasterLocked(host, p)
	r.log.Info("REPLICAOF enabled (cluster topology)", "host", host, "port", p)
}

// replOffset is this node's replication offset.
func (e *Engine) replOffset() int64 {
	e.repl.mu.Lock()
	defer e.repl.mu.Unlock()
	return e.repl.offsetLocked()
}

// Node returns the cluster node's identity (SetNode).
func (e *Engine) Node() nodeid.Identity { return *e.node.Load() }

// ReplDataAge is how old this replica's data may be, as Redis's
// clusterHandleSlaveFailover counts it: the time since the last byte from
// its primary while the link is up, else since the link went down (the
// largest Duration when it never was up); 0 for a primary.
func (e *Engine) ReplDataAge() time.Duration {
	r := e.repl
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.masterHost == "" {
		return 0
	}
	u := r.link
	if u == nil {
		return math.MaxInt64
	}
	if u.up.Load() {
		return time.Since(time.Unix(0, u.lastIO.Load()))
	}
	if t := u.downSince.Load(); t != 0 {
		return time.Since(time.Unix(0, t))
	}
	return math.MaxInt64
}
