package cluster

// The topology as a pure state machine: State is what every node holds,
// Entry one change a CLUSTER command asks for, and Apply the only way from
// one state to the next. Apply is deterministic (no clock, no randomness,
// no I/O), so every node that applies the same entries in the same order
// holds the same State: that is what the Raft log guarantees.
//
// A node alone that no slot or join entry has touched yet is "implicit":
// it serves every slot (the one-node cluster mode), and publishes no slot
// table. Its first ADDSLOTS ends that (it then serves only the slots it is
// given, as a fresh Redis Cluster node that owns none), its first DELSLOTS
// makes the ownership of every slot explicit, and a join (MEET) makes it
// own none until ADDSLOTS.

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/ratekv/ratekv/command"
	"github.com/ratekv/ratekv/shards"
)

// NumSlots is the number of hash slots.
const NumSlots = shards.NumSlots

// Node is one node of the topology. Primary is the id of the node it
// replicates ("" for a primary).
type Node struct {
	ID          string `json:"id"`
	IP          string `json:"ip,omitempty"`
	Port        int    `json:"port"`
	TLSPort     int    `json:"tls_port,omitempty"`
	BusPort     int    `json:"bus_port"`
	Hostname    string `json:"hostname,omitempty"`
	Primary     string `json:"primary,omitempty"`
	ConfigEpoch uint64 `json:"config_epoch"`
	Fail        bool   `json:"fail,omitempty"` // the leader found it unreachable
}

// State is the topology. The zero value is an empty topology; use
// NewState. A State is not safe for concurrent use: the FSM applies
// entries to its own and publishes copies.
type State struct {
	Nodes        map[string]*Node
	Owner        [NumSlots]string // the id of the node serving each slot; "": none
	CurrentEpoch uint64
	// Explicit is false while the one node serves every slot implicitly.
	Explicit bool
	// Forgotten lists the last ids FORGET removed, so that redis-cli,
	// which sends FORGET to every node, hears OK from the nodes that
	// learnt it through the log.
	Forgotten []string
}

// maxForgotten bounds State.Forgotten.
const maxForgotten = 64

// NewState returns an empty topology.
func NewState() *State { return &State{Nodes: map[string]*Node{}} }

// Op is the kind of an Entry.
type Op uint8

const (
	OpAddNode        Op = iota + 1 // add Node (or update its address), giving it Slots
	OpForget                       // remove ID; its slots become unassigned
	OpAssign                       // give Slots to ID (ADDSLOTS)
	OpUnassign                     // unassign Slots (DELSLOTS)
	OpSetSlotNode                  // give Slot to ID (SETSLOT … NODE)
	OpSetConfigEpoch               // set ID's config epoch to Epoch
	OpReplicate                    // make ID a replica of Primary
	OpFailover                     // promote replica ID in its primary's place
	OpReset                        // ID forgets every other node and its slots (Hard: epochs to 0)
	OpSetFail                      // mark ID failed (Fail) or reachable
	OpNoop                         // changes nothing: a node's barrier (it has applied what committed before)
)

// Entry is one change of the topology, as the Raft log holds it (JSON).
type Entry struct {
	Op       Op       `json:"op"`
	ID       string   `json:"id,omitempty"`
	Node     *Node    `json:"node,omitempty"`
	Slots    []uint16 `json:"slots,omitempty"`
	Slot     uint16   `json:"slot,omitempty"`
	Epoch    uint64   `json:"epoch,omitempty"`
	Primary  string   `json:"primary,omitempty"`
	Hard     bool     `json:"hard,omitempty"`
	Fail     bool     `json:"fail,omitempty"`
	Explicit bool     `json:"explicit,omitempty"` // OpAddNode of a node alone: its slots are explicit
}

func errf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// Apply applies e to s, or returns the Redis-style error that refuses it
// and leaves s unchanged.
func (s *State) Apply(e Entry) error {
	switch e.Op {
	case OpAddNode:
		return s.addNode(e)
	case OpForget:
		return s.forget(e.ID)
	case OpAssign:
		return s.assign(e.ID, e.Slots)
	case OpUnassign:
		return s.unassign(e.Slots)
	case OpSetSlotNode:
		return s.setSlotNode(e.Slot, e.ID)
	case OpSetConfigEpoch:
		return s.setConfigEpoch(e.ID, e.Epoch)
	case OpReplicate:
		return s.replicate(e.ID, e.Primary)
	case OpFailover:
		return s.failover(e.ID)
	case OpReset:
		return s.reset(e.ID, e.Hard)
	case OpSetFail:
		n := s.Nodes[e.ID]
		if n == nil {
			return errf(command.ErrUnknownNode, e.ID)
		}
		n.Fail = e.Fail
		return nil
	case OpNoop:
		return nil
	}
	return errors.New("ERR unknown cluster topology entry " + strconv.Itoa(int(e.Op)))
}

// only returns the one node of a topology of one node, else nil.
func (s *State) only() *Node {
	if len(s.Nodes) != 1 {
		return nil
	}
	for _, n := range s.Nodes {
		return n
	}
	return nil
}

// makeExplicit turns the implicit ownership of every slot by the one node
// into explicit entries of Owner.
func (s *State) makeExplicit() {
	if s.Explicit {
		return
	}
	s.Explicit = true
	if n := s.only(); n != nil {
		for i := range s.Owner {
			s.Owner[i] = n.ID
		}
	}
}

func (s *State) addNode(e Entry) error {
	if e.Node == nil || e.Node.ID == "" {
		return errors.New("ERR a node record without an id")
	}
	for _, sl := range e.Slots {
		if int(sl) >= NumSlots {
			return errors.New(command.ErrSlotOutOfRange)
		}
		if o := s.Owner[sl]; o != "" && o != e.Node.ID {
			return errf(command.ErrMeetConflict, sl, o)
		}
	}
	if old := s.Nodes[e.Node.ID]; old != nil {
		// A known node: a new address (it learnt its IP, or restarted
		// with other ports); its role and epoch stay the log's.
		old.IP, old.Port, old.TLSPort, old.BusPort, old.Hostname = e.Node.IP, e.Node.Port, e.Node.TLSPort, e.Node.BusPort, e.Node.Hostname
		return nil
	}
	n := *e.Node
	n.Fail = false
	if len(s.Nodes) > 0 {
		s.makeExplicit()
		// Two nodes with one epoch would claim slots with equal weight:
		// as Redis's collision handling, the newcomer takes a new one.
		for _, o := range s.Nodes {
			if o.ConfigEpoch == n.ConfigEpoch && n.ConfigEpoch != 0 {
				s.CurrentEpoch++
				n.ConfigEpoch = s.CurrentEpoch
				break
			}
		}
	} else if e.Explicit || len(e.Slots) > 0 {
		s.Explicit = true
	}
	if n.Primary != "" && s.Nodes[n.Primary] == nil {
		n.Primary = ""
	}
	s.Nodes[n.ID] = &n
	for _, sl := range e.Slots {
		s.Owner[sl] = n.ID
	}
	s.CurrentEpoch = max(s.CurrentEpoch, n.ConfigEpoch)
	s.Forgotten = slices.DeleteFunc(s.Forgotten, func(id string) bool { return id == n.ID })
	return nil
}

func (s *State) forget(id string) error {
	if s.Nodes[id] == nil {
		return errf(command.ErrUnknownNode, id)
	}
	s.makeExplicit()
	delete(s.Nodes, id)
	for i, o := range s.Owner {
		if o == id {
			s.Owner[i] = ""
		}
	}
	for _, n := range s.Nodes {
		if n.Primary == id {
			n.Primary = ""
		}
	}
	s.Forgotten = append(s.Forgotten, id)
	if len(s.Forgotten) > maxForgotten {
		s.Forgotten = s.Forgotten[len(s.Forgotten)-maxForgotten:]
	}
	return nil
}

// WasForgotten reports whether FORGET removed id recently.
func (s *State) WasForgotten(id string) bool { return slices.Contains(s.Forgotten, id) }

// checkSlots checks slots in order as Redis's ADDSLOTS and DELSLOTS:
// each in range, then busy (unassigned, for del) in s, then not named
// before.
func (s *State) checkSlots(slots []uint16, del bool) error {
	var seen [NumSlots]bool
	owned := func(sl uint16) bool { return s.Owner[sl] != "" }
	if !s.Explicit {
		one := s.only() != nil
		owned = func(uint16) bool { return del && one }
	}
	for _, sl := range slots {
		switch {
		case int(sl) >= NumSlots:
			return errors.New(command.ErrSlotOutOfRange)
		case del && !owned(sl):
			return errf(command.ErrSlotUnassigned, sl)
		case !del && owned(sl):
			return errf(command.ErrSlotBusy, sl)
		case seen[sl]:
			return errf(command.ErrSlotTwice, sl)
		}
		seen[sl] = true
	}
	return nil
}

func (s *State) assign(id string, slots []uint16) error {
	if s.Nodes[id] == nil {
		return errf(command.ErrUnknownNode, id)
	}
	if err := s.checkSlots(slots, false); err != nil {
		return err
	}
	s.Explicit = true // the implicit ownership ends here
	for _, sl := range slots {
		s.Owner[sl] = id
	}
	return nil
}

func (s *State) unassign(slots []uint16) error {
	if err := s.checkSlots(slots, true); err != nil {
		return err
	}
	s.makeExplicit()
	for _, sl := range slots {
		s.Owner[sl] = ""
	}
	return nil
}

func (s *State) setSlotNode(slot uint16, id string) error {
	if int(slot) >= NumSlots {
		return errors.New(command.ErrSlotOutOfRange)
	}
	n := s.Nodes[id]
	if n == nil {
		return errf(command.ErrSetSlotUnknownNode, id)
	}
	if n.Primary != "" {
		return errors.New(command.ErrSetSlotNotMaster)
	}
	s.makeExplicit()
	if prev := s.Owner[slot]; prev != id {
		// The new owner's claim must outweigh the old one's everywhere:
		// as Redis's bump without consensus when a migration ends.
		if prev != "" {
			s.CurrentEpoch++
			n.ConfigEpoch = s.CurrentEpoch
		}
		s.Owner[slot] = id
	}
	return nil
}

func (s *State) setConfigEpoch(id string, epoch uint64) error {
	n := s.Nodes[id]
	if n == nil {
		return errf(command.ErrUnknownNode, id)
	}
	if len(s.Nodes) > 1 {
		return errors.New(command.ErrConfigEpochKnown)
	}
	if n.ConfigEpoch != 0 {
		return errors.New(command.ErrConfigEpochNonZero)
	}
	n.ConfigEpoch = epoch
	s.CurrentEpoch = max(s.CurrentEpoch, epoch)
	return nil
}

// SlotsOf returns how many slots id serves.
func (s *State) SlotsOf(id string) int {
	if !s.Explicit {
		if n := s.only(); n != nil && n.ID == id {
			return NumSlots
		}
		return 0
	}
	k := 0
	for _, o := range s.Owner {
		if o == id {
			k++
		}
	}
	return k
}

func (s *State) replicate(id, primary string) error {
	n, p := s.Nodes[id], s.Nodes[primary]
	if p == nil {
		return errf(command.ErrUnknownNode, primary)
	}
	if n == nil {
		return errf(command.ErrUnknownNode, id)
	}
	if id == primary {
		return errors.New(command.ErrReplicateMyself)
	}
	if p.Primary != "" {
		return errors.New(command.ErrReplicateReplica)
	}
	if n.Primary == "" && s.SlotsOf(id) > 0 {
		return errors.New(command.ErrReplicateNotEmpty)
	}
	n.Primary = primary
	return nil
}

func (s *State) failover(id string) error {
	n := s.Nodes[id]
	if n == nil {
		return errf(command.ErrUnknownNode, id)
	}
	old := n.Primary
	if old == "" {
		return nil // a primary already: nothing to do
	}
	s.makeExplicit()
	for i, o := range s.Owner {
		if o == old {
			s.Owner[i] = id
		}
	}
	for _, r := range s.Nodes {
		if r.Primary == old {
			r.Primary = id
		}
	}
	n.Primary = ""
	if p := s.Nodes[old]; p != nil {
		p.Primary = id
	}
	s.CurrentEpoch++
	n.ConfigEpoch = s.CurrentEpoch
	return nil
}

func (s *State) reset(id string, hard bool) error {
	n := s.Nodes[id]
	if n == nil {
		return errf(command.ErrUnknownNode, id)
	}
	for k := range s.Nodes {
		if k != id {
			delete(s.Nodes, k)
		}
	}
	s.Owner = [NumSlots]string{}
	s.Explicit = true
	s.Forgotten = nil
	n.Primary, n.Fail = "", false
	if hard {
		n.ConfigEpoch, s.CurrentEpoch = 0, 0
	}
	return nil
}

// SlotsOwnedBy returns the slots id serves, ascending.
func (s *State) SlotsOwnedBy(id string) []uint16 {
	var out []uint16
	if !s.Explicit {
		if n := s.only(); n != nil && n.ID == id {
			out = make([]uint16, NumSlots)
			for i := range out {
				out[i] = uint16(i)
			}
		}
		return out
	}
	for i, o := range s.Owner {
		if o == id {
			out = append(out, uint16(i))
		}
	}
	return out
}

// Clone returns a deep copy of s.
func (s *State) Clone() *State {
	c := *s
	c.Nodes = make(map[string]*Node, len(s.Nodes))
	for k, n := range s.Nodes {
		nn := *n
		c.Nodes[k] = &nn
	}
	c.Forgotten = slices.Clone(s.Forgotten)
	return &c
}

// IDs returns the node ids, sorted.
func (s *State) IDs() []string {
	ids := make([]string, 0, len(s.Nodes))
	for id := range s.Nodes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Table returns the slot table the request path routes by, as node self
// sees it: nil while one node serves every slot implicitly (the one-node
// cluster), or when self is not in the topology.
func (s *State) Table(self string) *command.SlotTable {
	if !s.Explicit || s.Nodes[self] == nil {
		return nil
	}
	ids := s.IDs()
	t := &command.SlotTable{Nodes: make([]command.NodeAddr, len(ids)), Epoch: s.CurrentEpoch}
	index := make(map[string]int32, len(ids))
	for i, id := range ids {
		n := s.Nodes[id]
		index[id] = int32(i)
		t.Nodes[i] = command.NodeAddr{ID: n.ID, IP: n.IP, Port: n.Port, TLSPort: n.TLSPort, BusPort: n.BusPort,
			Hostname: n.Hostname, Primary: n.Primary, ConfigEpoch: n.ConfigEpoch, Fail: n.Fail}
	}
	t.Self = index[self]
	for i, o := range s.Owner {
		if o == "" {
			t.Owner[i] = -1
		} else {
			t.Owner[i] = index[o]
		}
	}
	return t
}
