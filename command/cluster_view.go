package command

// The command layer's view of a multi-node cluster's topology: which node
// serves each hash slot, and where each node is. The cluster's control
// plane (the Raft-held topology) publishes a new SlotTable whenever the
// topology changes; the request path only loads the pointer and indexes
// Owner, so routing a key costs the same however large the cluster.
//
// A nil table is the one-node cluster: this node serves every slot.

import "github.com/ratekv/ratekv/shards"

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
}

// SetClusterControl wires the topology's control plane (main, at start).
func (e *Engine) SetClusterControl(ctl ClusterControl) { e.clusterCtl = ctl }
