//go:build !race

package shards

const raceEnabled = false
