package main

import (
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// forcedGCs returns how many collections runtime.GC has started.
func forcedGCs() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestReleaseMemory: a drop of the keyspace's storage over 8 MiB starts a
// collection, and one more at the next check (so that the scavenger may
// return what the first freed); smaller drops add up until they pass it.
func TestReleaseMemory(t *testing.T) {
	var dropped atomic.Int64
	started := make(chan struct{})
	var reads atomic.Int64
	read := func() int64 {
		if reads.Add(1) == 1 {
			close(started) // its baseline is taken
		}
		return dropped.Load()
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		releaseMemoryEvery(stop, read, 10*time.Millisecond)
	}()
	defer func() { close(stop); <-done }()
	<-started

	before := forcedGCs()
	dropped.Add(4 << 20)
	time.Sleep(100 * time.Millisecond)
	require.Equal(t, before, forcedGCs(), "4 MiB dropped: no collection yet")

	dropped.Add(5 << 20) // 9 MiB since the start
	require.Eventually(t, func() bool { return forcedGCs() >= before+2 }, 5*time.Second, 5*time.Millisecond,
		"9 MiB dropped: a collection, and a second one a check later")
	time.Sleep(100 * time.Millisecond)
	require.Equal(t, before+2, forcedGCs(), "nothing dropped since: no more collections")
}
