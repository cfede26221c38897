package cluster

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func node(id string, epoch uint64) *Node {
	return &Node{ID: id, IP: "127.0.0.1", Port: 7000, BusPort: 17000, ConfigEpoch: epoch}
}

func slots(from, to int) []uint16 {
	var out []uint16
	for i := from; i <= to; i++ {
		out = append(out, uint16(i))
	}
	return out
}

// TestApply: each entry from a known state, its error or its effect.
func TestApply(t *testing.T) {
	// three nodes a, b, c; a serves 0-99, b 100-199; c is a replica of b.
	three := func() *State {
		s := NewState()
		require.NoError(t, s.Apply(Entry{Op: OpAddNode, Node: node("a", 1)}))
		require.NoError(t, s.Apply(Entry{Op: OpAssign, ID: "a", Slots: slots(0, 99)}))
		require.NoError(t, s.Apply(Entry{Op: OpAddNode, Node: node("b", 2), Slots: slots(100, 199)}))
		require.NoError(t, s.Apply(Entry{Op: OpAddNode, Node: node("c", 3)}))
		require.NoError(t, s.Apply(Entry{Op: OpReplicate, ID: "c", Primary: "b"}))
		return s
	}
	for i, tc := range []struct {
		e     Entry
		err   string
		check func(*State)
	}{
		{e: Entry{Op: OpAssign, ID: "a", Slots: []uint16{150}}, err: "ERR Slot 150 is already busy"},
		{e: Entry{Op: OpAssign, ID: "a", Slots: []uint16{300, 300}}, err: "ERR Slot 300 specified multiple times"},
		{e: Entry{Op: OpAssign, ID: "a", Slots: []uint16{300, 300, 5}}, err: "ERR Slot 300 specified multiple times"},
		{e: Entry{Op: OpAssign, ID: "a", Slots: []uint16{5, 300, 300}}, err: "ERR Slot 5 is already busy"},
		{e: Entry{Op: OpUnassign, Slots: []uint16{5, 5}}, err: "ERR Slot 5 specified multiple times"},
		{e: Entry{Op: OpAssign, ID: "a", Slots: []uint16{16384}}, err: "ERR Invalid or out of range slot"},
		{e: Entry{Op: OpAssign, ID: "x", Slots: []uint16{1}}, err: "ERR Unknown node x"},
		{e: Entry{Op: OpAssign, ID: "a", Slots: []uint16{300, 301}}, check: func(s *State) {
			require.Equal(t, 102, s.SlotsOf("a"))
		}},
		{e: Entry{Op: OpUnassign, Slots: []uint16{500}}, err: "ERR Slot 500 is already unassigned"},
		{e: Entry{Op: OpUnassign, Slots: []uint16{5, 150}}, check: func(s *State) {
			require.Equal(t, "", s.Owner[5])
			require.Equal(t, "", s.Owner[150])
			require.Equal(t, 99, s.SlotsOf("b"))
		}},
		{e: Entry{Op: OpAddNode, Node: node("d", 9), Slots: []uint16{50}}, err: "ERR the joining node serves slot 50, which node a serves"},
		{e: Entry{Op: OpAddNode, Node: node("d", 1)}, check: func(s *State) {
			require.Equal(t, uint64(4), s.Nodes["d"].ConfigEpoch, "an epoch taken already: a new one")
			require.Equal(t, uint64(4), s.CurrentEpoch)
		}},
		{e: Entry{Op: OpAddNode, Node: &Node{ID: "b", IP: "10.0.0.2", Port: 7001, BusPort: 17001}}, check: func(s *State) {
			require.Equal(t, "10.0.0.2", s.Nodes["b"].IP)
			require.Equal(t, uint64(2), s.Nodes["b"].ConfigEpoch, "an address update keeps the epoch")
			require.Equal(t, 100, s.SlotsOf("b"))
		}},
		{e: Entry{Op: OpForget, ID: "x"}, err: "ERR Unknown node x"},
		{e: Entry{Op: OpForget, ID: "b"}, check: func(s *State) {
			require.Nil(t, s.Nodes["b"])
			require.Equal(t, "", s.Owner[100])
			require.Equal(t, "", s.Nodes["c"].Primary, "its replica is a primary now")
			require.True(t, s.WasForgotten("b"))
		}},
		{e: Entry{Op: OpSetSlotNode, Slot: 5, ID: "x"}, err: "ERR I don't know about node x"},
		{e: Entry{Op: OpSetSlotNode, Slot: 5, ID: "c"}, err: "ERR Target node is not a master"},
		{e: Entry{Op: OpSetSlotNode, Slot: 5, ID: "b"}, check: func(s *State) {
			require.Equal(t, "b", s.Owner[5])
			require.Equal(t, uint64(4), s.Nodes["b"].ConfigEpoch, "a slot taken from another: the epoch bumps")
		}},
		{e: Entry{Op: OpSetSlotNode, Slot: 500, ID: "b"}, check: func(s *State) {
			require.Equal(t, uint64(2), s.Nodes["b"].ConfigEpoch, "a free slot: no bump")
		}},
		{e: Entry{Op: OpSetConfigEpoch, ID: "a", Epoch: 7}, err: "ERR The user can assign a config epoch only when the node does not know any other node."},
		{e: Entry{Op: OpReplicate, ID: "a", Primary: "x"}, err: "ERR Unknown node x"},
		{e: Entry{Op: OpReplicate, ID: "a", Primary: "a"}, err: "ERR Can't replicate myself"},
		{e: Entry{Op: OpReplicate, ID: "a", Primary: "c"}, err: "ERR I can only replicate a master, not a replica."},
		{e: Entry{Op: OpReplicate, ID: "a", Primary: "b"}, err: "ERR To set a master the node must be empty and without assigned slots."},
		{e: Entry{Op: OpReplicate, ID: "c", Primary: "a"}, check: func(s *State) {
			require.Equal(t, "a", s.Nodes["c"].Primary, "a replica may change primary")
		}},
		{e: Entry{Op: OpFailover, ID: "c"}, check: func(s *State) {
			require.Equal(t, "", s.Nodes["c"].Primary)
			require.Equal(t, "c", s.Nodes["b"].Primary, "the old primary replicates the new one")
			require.Equal(t, 100, s.SlotsOf("c"))
			require.Equal(t, 0, s.SlotsOf("b"))
			require.Equal(t, uint64(4), s.Nodes["c"].ConfigEpoch)
		}},
		{e: Entry{Op: OpReset, ID: "a", Hard: true}, check: func(s *State) {
			require.Equal(t, []string{"a"}, s.IDs())
			require.Equal(t, 0, s.SlotsOf("a"))
			require.Equal(t, uint64(0), s.Nodes["a"].ConfigEpoch)
			require.NotNil(t, s.Table("a"), "after a reset the node serves no slot, explicitly")
		}},
		{e: Entry{Op: OpSetFail, ID: "b", Fail: true}, check: func(s *State) {
			require.True(t, s.Nodes["b"].Fail)
		}},
		{e: Entry{Op: 99}, err: "ERR unknown cluster topology entry 99"},
	} {
		s := three()
		before, err := s.Marshal()
		require.NoError(t, err)
		err = s.Apply(tc.e)
		if tc.err != "" {
			require.EqualError(t, err, tc.err, "step %d", i)
			after, err := s.Marshal()
			require.NoError(t, err)
			require.JSONEq(t, string(before), string(after), "step %d: a refused entry changes nothing", i)
			continue
		}
		require.NoError(t, err, "step %d", i)
		tc.check(s)
	}
}

// TestImplicitOwnership: a node alone serves every slot until its first
// slot entry or join, as the one-node cluster mode.
func TestImplicitOwnership(t *testing.T) {
	s := NewState()
	require.NoError(t, s.Apply(Entry{Op: OpAddNode, Node: node("a", 0)}))
	require.Nil(t, s.Table("a"), "implicit: no table, the one-node path")
	require.Equal(t, NumSlots, s.SlotsOf("a"))
	require.NoError(t, s.Apply(Entry{Op: OpSetConfigEpoch, ID: "a", Epoch: 5}))
	require.EqualError(t, s.Apply(Entry{Op: OpSetConfigEpoch, ID: "a", Epoch: 6}), "ERR Node config epoch is already non-zero")

	add := s.Clone()
	require.NoError(t, add.Apply(Entry{Op: OpAssign, ID: "a", Slots: slots(0, 5460)}), "the first ADDSLOTS ends the implicit ownership")
	require.Equal(t, 5461, add.SlotsOf("a"))
	tab := add.Table("a")
	require.Equal(t, int32(0), tab.Owner[5460])
	require.Equal(t, int32(-1), tab.Owner[5461])
	require.Equal(t, uint64(5), tab.Epoch)

	del := s.Clone()
	require.NoError(t, del.Apply(Entry{Op: OpUnassign, Slots: []uint16{7}}))
	require.Equal(t, NumSlots-1, del.SlotsOf("a"))

	join := s.Clone()
	require.NoError(t, join.Apply(Entry{Op: OpAddNode, Node: node("b", 0)}))
	require.Equal(t, NumSlots, join.SlotsOf("a"), "a join makes the one node's ownership explicit")
	require.Equal(t, int32(1), join.Table("b").Self, "nodes sorted by id")
	require.Equal(t, int32(0), join.Table("b").Owner[16383])
}

// TestSnapshotRoundTrip: Marshal then Unmarshal gives the same state, and
// damaged snapshots are refused.
func TestSnapshotRoundTrip(t *testing.T) {
	s := NewState()
	require.NoError(t, s.Apply(Entry{Op: OpAddNode, Node: node("a", 1), Slots: slots(0, 8000)}))
	require.NoError(t, s.Apply(Entry{Op: OpAddNode, Node: node("b", 2), Slots: slots(8001, 16383)}))
	require.NoError(t, s.Apply(Entry{Op: OpAddNode, Node: node("c", 3)}))
	require.NoError(t, s.Apply(Entry{Op: OpReplicate, ID: "c", Primary: "a"}))
	require.NoError(t, s.Apply(Entry{Op: OpUnassign, Slots: []uint16{100}}))
	require.NoError(t, s.Apply(Entry{Op: OpForget, ID: "c"}))
	b, err := s.Marshal()
	require.NoError(t, err)
	got, err := Unmarshal(b)
	require.NoError(t, err)
	require.Equal(t, s, got)

	for i, bad := range []string{
		`{`,
		`{"version":2}`,
		`{"version":1,"nodes":[{"id":"a"},{"id":"a"}]}`,
		`{"version":1,"nodes":[{"id":"a"}],"slots":{"b":[[0,1]]}}`,
		`{"version":1,"nodes":[{"id":"a"}],"slots":{"a":[[5,1]]}}`,
		`{"version":1,"nodes":[{"id":"a"}],"slots":{"a":[[0,16384]]}}`,
		`{"version":1,"nodes":[{"id":"a"},{"id":"b"}],"slots":{"a":[[0,5]],"b":[[5,6]]}}`,
	} {
		_, err := Unmarshal([]byte(bad))
		require.Error(t, err, "case %d", i)
	}
}
