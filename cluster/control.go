package cluster

// The CLUSTER commands that change the topology (command.ClusterControl),
// and the membership of the Raft group: MEET, the join it sends, FORGET
// and RESET.
//
// MEET is Redis's handshake made into a move between Raft groups: the
// node that is alone (redis-cli create has every node MEET the first;
// add-node has the new node MEET one of the cluster) discards its own
// group, starts an empty Raft, and asks the other node (CLUSTER
// RATEKV-JOIN, forwarded to the leader) to add it with the slots it
// served. The leader commits the node's record, then adds it to the group
// as a voter while there are fewer than MaxVoters, else as a non-voter.
// When neither side is alone, MEET is refused: Raft cannot merge logs.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
	"github.com/ratekv/ratekv/command"
	"github.com/ratekv/ratekv/internal/nodeid"
	"github.com/redis/go-redis/v9"
)

// joinRequest is what the joining node sends (CLUSTER RATEKV-JOIN).
type joinRequest struct {
	Node     Node     `json:"node"`
	Slots    []uint16 `json:"slots,omitempty"`
	TargetIP string   `json:"target_ip,omitempty"` // the address the joiner reached the target at
}

func (c *Control) selfID() string { return c.fsm.selfID() }

// SetSlotNode gives slot to node id (CLUSTER SETSLOT slot NODE id).
func (c *Control) SetSlotNode(slot uint16, id string) error {
	// redis-cli sends SETSLOT NODE to every primary once a slot has
	// moved: after the first commits, the others add no entry.
	c.fsm.mu.Lock()
	done := c.fsm.st.Explicit && c.fsm.st.Owner[slot] == id
	c.fsm.mu.Unlock()
	if done {
		return nil
	}
	return c.propose(Entry{Op: OpSetSlotNode, Slot: slot, ID: id})
}

// AddSlots gives slots to this node (CLUSTER ADDSLOTS).
func (c *Control) AddSlots(slots []uint16) error {
	return c.propose(Entry{Op: OpAssign, ID: c.selfID(), Slots: slots})
}

// DelSlots unassigns slots (CLUSTER DELSLOTS).
func (c *Control) DelSlots(slots []uint16) error {
	return c.propose(Entry{Op: OpUnassign, Slots: slots})
}

// SetConfigEpoch sets this node's config epoch (CLUSTER SET-CONFIG-EPOCH).
func (c *Control) SetConfigEpoch(epoch uint64) error {
	return c.propose(Entry{Op: OpSetConfigEpoch, ID: c.selfID(), Epoch: epoch})
}

// Replicate makes this node a replica of primary (CLUSTER REPLICATE).
func (c *Control) Replicate(primary string) error {
	return c.propose(Entry{Op: OpReplicate, ID: c.selfID(), Primary: primary})
}

// Forget removes node id from the topology and the Raft group (CLUSTER
// FORGET). A node FORGET removed recently is forgotten already: OK, as
// redis-cli sends FORGET to every node.
func (c *Control) Forget(id string) error {
	c.waitReady()
	self := c.selfID()
	st := c.State()
	switch {
	case st.Nodes[id] == nil && st.WasForgotten(id):
		return nil
	case st.Nodes[id] == nil:
		return fmt.Errorf(command.ErrUnknownNode, id)
	case id == self:
		return errors.New(command.ErrForgetMyself)
	case st.Nodes[self] != nil && st.Nodes[self].Primary == id:
		return errors.New(command.ErrForgetMaster)
	}
	return c.forgetOnLeader(id)
}

// forgetOnLeader commits the removal of id and takes it out of the Raft
// group, on the leader; it returns once both are committed.
func (c *Control) forgetOnLeader(id string) error {
	r := c.raft()
	if r == nil || r.State() != raft.Leader {
		return c.retry(func() error {
			return c.toLeader(func(ctx context.Context, rdb *redis.Client) error {
				return rdb.Do(ctx, "cluster", "ratekv-forget", id).Err()
			})
		})
	}
	if err := c.applyLocal(r, Entry{Op: OpForget, ID: id}); err != nil {
		if st := c.State(); !st.WasForgotten(id) {
			return err
		}
	}
	if err := r.RemoveServer(raft.ServerID(id), 0, c.applyTimeout()).Error(); err != nil {
		return c.raftErr(err)
	}
	c.balanceVoters(r)
	return nil
}

// ForgetForwarded is FORGET sent by another node to the leader (CLUSTER
// RATEKV-FORGET).
func (c *Control) ForgetForwarded(id string) error {
	r := c.raft()
	if r == nil || r.State() != raft.Leader {
		return errRetry
	}
	return c.forgetOnLeader(id)
}

// balanceVoters promotes non-voters until the group has MaxVoters voters
// (or every node votes).
func (c *Control) balanceVoters(r *raft.Raft) {
	f := r.GetConfiguration()
	if f.Error() != nil {
		return
	}
	voters := 0
	for _, s := range f.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			voters++
		}
	}
	for _, s := range f.Configuration().Servers {
		if voters >= MaxVoters {
			return
		}
		if s.Suffrage != raft.Voter {
			if r.AddVoter(s.ID, s.Address, 0, c.applyTimeout()).Error() == nil {
				voters++
			}
		}
	}
}

// selfRecord returns this node's record in st (or, when st has
// forgotten it, the last one applied) with the IP it has, or ip when it
// has none yet.
func (c *Control) selfRecord(st *State, ip string) Node {
	var n Node
	if p := st.Nodes[c.selfID()]; p != nil {
		n = *p
	} else {
		c.fsm.mu.Lock()
		n = c.fsm.last
		c.fsm.mu.Unlock()
	}
	if n.IP == "" {
		n.IP = ip
	}
	n.Fail = false
	return n
}

// Meet joins this node and the node at ip:port into one cluster (CLUSTER
// MEET ip port [bus-port]).
func (c *Control) Meet(ip string, port, busPort int) error {
	c.waitReady()
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.State()
	self := c.selfID()
	for _, n := range st.Nodes {
		if n.IP == ip && n.Port == port {
			return nil // known already, or this node itself
		}
	}
	// The address this node has as the other node sees it.
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(ip, strconv.Itoa(port)), 2*time.Second)
	if err != nil {
		return fmt.Errorf("ERR cannot reach the node %s:%d: %v", ip, port, err)
	}
	myIP, _, _ := net.SplitHostPort(conn.LocalAddr().String())
	conn.Close()
	me := c.selfRecord(st, myIP)
	if len(st.Nodes) > 1 {
		// This side is a cluster: the other node must be alone, and join.
		rdb := c.client(ip, port)
		defer rdb.Close()
		return redisErr(rdb.Do(context.Background(), "cluster", "ratekv-meetback", me.IP, me.Port, me.BusPort).Err())
	}
	req := joinRequest{Node: me, TargetIP: ip}
	if st.Explicit {
		req.Slots = st.SlotsOwnedBy(self)
	}
	data, err := json.Marshal(req)
	if err != nil {
		return err
	}
	// Leave the group of one for an empty Raft that the other group's
	// leader will fill; come back alone if the join fails.
	if err := c.stop(); err != nil {
		c.log.Warn("cluster: stopping Raft to join another group", "err", err)
	}
	if err := os.RemoveAll(c.o.Dir); err != nil {
		return c.rejoinAlone(st, fmt.Errorf("ERR cannot clear the Raft directory: %v", err))
	}
	c.fsm.mu.Lock()
	c.fsm.st = NewState()
	c.fsm.mu.Unlock()
	if err := c.start(nil, true); err != nil {
		return c.rejoinAlone(st, err)
	}
	rdb := c.client(ip, port)
	defer rdb.Close()
	if err := c.retry(func() error { return redisErr(rdb.Do(context.Background(), "cluster", "ratekv-join", data).Err()) }); err != nil {
		return c.rejoinAlone(st, err)
	}
	// Wait (bounded) until the group's log reached this node, so that its
	// next CLUSTER NODES shows the cluster it joined.
	deadline := time.Now().Add(c.applyTimeout())
	for time.Now().Before(deadline) {
		s := c.State()
		if s.Nodes[self] != nil && len(s.Nodes) > 1 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// rejoinAlone restarts a fresh group of this node alone with what it had
// in old, after a failed join, and returns cause.
func (c *Control) rejoinAlone(old *State, cause error) error {
	c.stop()
	os.RemoveAll(c.o.Dir)
	self := c.selfID()
	me := c.selfRecord(old, "")
	seed := Entry{Op: OpAddNode, Node: &me, Explicit: old.Explicit}
	if old.Explicit {
		seed.Slots = old.SlotsOwnedBy(self)
	}
	c.fsm.mu.Lock()
	c.fsm.st = NewState()
	c.fsm.mu.Unlock()
	if err := c.start(&seed, true); err != nil {
		c.log.Error("cluster: cannot restart this node's own Raft group after a failed MEET", "err", err)
	}
	return cause
}

// MeetBack is another cluster's node asking this node, alone, to join it
// (CLUSTER RATEKV-MEETBACK).
func (c *Control) MeetBack(ip string, port, busPort int) error {
	c.waitReady()
	if st := c.State(); len(st.Nodes) > 1 {
		for _, n := range st.Nodes {
			if n.IP == ip && n.Port == port {
				return nil
			}
		}
		return errors.New(command.ErrMeetTwoGroups)
	}
	return c.Meet(ip, port, busPort)
}

// Join adds the node a join request describes (CLUSTER RATEKV-JOIN): on
// the leader, its record and then its membership; elsewhere, sent on to
// the leader.
func (c *Control) Join(data []byte) error {
	c.waitReady()
	var req joinRequest
	if err := json.Unmarshal(data, &req); err != nil || req.Node.ID == "" || req.Node.IP == "" {
		return errors.New("ERR bad cluster join request")
	}
	self := c.selfID()
	if req.Node.ID == self {
		return errors.New("ERR a node cannot join itself")
	}
	// The joiner reached this node at TargetIP: learn it if this node
	// had no address yet.
	if st := c.State(); req.TargetIP != "" && st.Nodes[self] != nil && st.Nodes[self].IP == "" {
		me := c.selfRecord(st, req.TargetIP)
		if err := c.propose(Entry{Op: OpAddNode, Node: &me}); err != nil {
			return err
		}
	}
	req.TargetIP = ""
	r := c.raft()
	if r == nil || r.State() != raft.Leader {
		fwd, _ := json.Marshal(req)
		return c.retry(func() error {
			return c.toLeader(func(ctx context.Context, rdb *redis.Client) error {
				return rdb.Do(ctx, "cluster", "ratekv-join", fwd).Err()
			})
		})
	}
	slices.Sort(req.Slots)
	if err := c.applyLocal(r, Entry{Op: OpAddNode, Node: &req.Node, Slots: req.Slots}); err != nil {
		return err
	}
	f := r.GetConfiguration()
	if err := f.Error(); err != nil {
		return c.raftErr(err)
	}
	voters := 0
	for _, s := range f.Configuration().Servers {
		if s.ID == raft.ServerID(req.Node.ID) {
			voters = -1 // a member already (a repeated join): keep its suffrage
			break
		}
		if s.Suffrage == raft.Voter {
			voters++
		}
	}
	addr := raft.ServerAddress(net.JoinHostPort(req.Node.IP, strconv.Itoa(req.Node.BusPort)))
	var err error
	switch {
	case voters < 0:
	case voters < MaxVoters:
		err = r.AddVoter(raft.ServerID(req.Node.ID), addr, 0, c.applyTimeout()).Error()
	default:
		err = r.AddNonvoter(raft.ServerID(req.Node.ID), addr, 0, c.applyTimeout()).Error()
	}
	if err != nil {
		return c.raftErr(err)
	}
	return nil
}

// Reset makes this node forget the cluster (CLUSTER RESET): the group
// forgets it, and it starts a group of its own again, serving no slot, a
// primary; hard also gives it a new id and epoch 0.
func (c *Control) Reset(hard bool) error {
	c.waitReady()
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.State()
	self := c.selfID()
	if len(st.Nodes) > 1 {
		if err := c.forgetOnLeader(self); err != nil {
			return err
		}
	} else if !hard {
		return c.propose(Entry{Op: OpReset, ID: self})
	}
	me := c.selfRecord(st, "")
	me.Primary = ""
	if hard {
		me.ID = nodeid.New().ID
		me.ConfigEpoch = 0
		if c.o.SaveID != nil {
			if err := c.o.SaveID(me.ID); err != nil {
				return fmt.Errorf("ERR cannot save the new node id: %v", err)
			}
		}
	}
	c.stop()
	if err := os.RemoveAll(c.o.Dir); err != nil {
		return fmt.Errorf("ERR cannot clear the Raft directory: %v", err)
	}
	c.fsm.mu.Lock()
	c.fsm.st = NewState()
	c.fsm.self = me.ID
	c.fsm.mu.Unlock()
	return c.start(&Entry{Op: OpAddNode, Node: &me, Explicit: true}, true)
}
