// Package cluster is the control plane of a multi-node ratekv cluster: the
// topology (which node serves each hash slot, who replicates whom, the
// epochs) as a pure state machine (state.go), held in a Raft log that the
// nodes keep among themselves with hashicorp/raft (raft.go), and the
// CLUSTER commands that change it (command.ClusterControl).
//
// Raft is never on the request path: every applied entry publishes a new
// command.SlotTable, which the request path only loads.
package cluster
