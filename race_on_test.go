//go:build race

package main

// raceEnabled: the race detector slows the attack test's client (not the
// server it runs) so much that the keyspace never passes maxmemory; the
// test skips itself under it, and .ci/run runs it once more without -race.
const raceEnabled = true
