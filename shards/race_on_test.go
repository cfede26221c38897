//go:build race

package shards

// raceEnabled: the race detector changes allocation sizes and timing, so
// memory-ceiling tests skip themselves under it; .ci/run runs the shards
// package once more without -race so that they still run in CI.
const raceEnabled = true
