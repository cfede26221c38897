package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// snapshot is State on disk (JSON): the slots of each node as ranges.
type snapshot struct {
	Version      int                 `json:"version"`
	Nodes        []Node              `json:"nodes"`
	Slots        map[string][][2]int `json:"slots,omitempty"`
	CurrentEpoch uint64              `json:"current_epoch"`
	Explicit     bool                `json:"explicit"`
	Forgotten    []string            `json:"forgotten,omitempty"`
}

const snapshotVersion = 1

// Marshal encodes s for a Raft snapshot.
func (s *State) Marshal() ([]byte, error) {
	sn := snapshot{Version: snapshotVersion, Slots: map[string][][2]int{}, CurrentEpoch: s.CurrentEpoch, Explicit: s.Explicit, Forgotten: s.Forgotten}
	for _, id := range s.IDs() {
		sn.Nodes = append(sn.Nodes, *s.Nodes[id])
	}
	for i := 0; i < NumSlots; {
		o := s.Owner[i]
		j := i
		for j+1 < NumSlots && s.Owner[j+1] == o {
			j++
		}
		if o != "" {
			sn.Slots[o] = append(sn.Slots[o], [2]int{i, j})
		}
		i = j + 1
	}
	return json.Marshal(sn)
}

// Unmarshal decodes what Marshal wrote, refusing anything inconsistent.
func Unmarshal(b []byte) (*State, error) {
	var sn snapshot
	if err := json.Unmarshal(b, &sn); err != nil {
		return nil, fmt.Errorf("cluster snapshot: %w", err)
	}
	if sn.Version != snapshotVersion {
		return nil, fmt.Errorf("cluster snapshot: version %d, want %d", sn.Version, snapshotVersion)
	}
	s := NewState()
	s.CurrentEpoch, s.Explicit, s.Forgotten = sn.CurrentEpoch, sn.Explicit, slices.Clone(sn.Forgotten)
	for _, n := range sn.Nodes {
		if n.ID == "" || s.Nodes[n.ID] != nil {
			return nil, errors.New("cluster snapshot: a node without an id, or twice")
		}
		s.Nodes[n.ID] = &n
	}
	for id, ranges := range sn.Slots {
		if s.Nodes[id] == nil {
			return nil, fmt.Errorf("cluster snapshot: slots of unknown node %s", id)
		}
		for _, r := range ranges {
			if r[0] < 0 || r[1] >= NumSlots || r[0] > r[1] {
				return nil, fmt.Errorf("cluster snapshot: bad slot range %d-%d", r[0], r[1])
			}
			for i := r[0]; i <= r[1]; i++ {
				if s.Owner[i] != "" {
					return nil, fmt.Errorf("cluster snapshot: slot %d served twice", i)
				}
				s.Owner[i] = id
			}
		}
	}
	return s, nil
}
