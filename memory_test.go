package main

import (
	"runtime/debug"
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

// TestLimitMemory: the Go memory limit follows what limit returns, and
// goes back to the process's own limit when it returns 0 and at stop.
func TestLimitMemory(t *testing.T) {
	initial := debug.SetMemoryLimit(-1)
	var want atomic.Int64
	want.Store(3 << 30)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		limitMemoryEvery(stop, want.Load, 5*time.Millisecond)
	}()
	require.Eventually(t, func() bool { return debug.SetMemoryLimit(-1) == 3<<30 }, 5*time.Second, time.Millisecond)
	want.Store(5 << 30)
	require.Eventually(t, func() bool { return debug.SetMemoryLimit(-1) == 5<<30 }, 5*time.Second, time.Millisecond)
	want.Store(0)
	require.Eventually(t, func() bool { return debug.SetMemoryLimit(-1) == initial }, 5*time.Second, time.Millisecond)
	want.Store(4 << 30)
	require.Eventually(t, func() bool { return debug.SetMemoryLimit(-1) == 4<<30 }, 5*time.Second, time.Millisecond)
	close(stop)
	<-done
	require.Equal(t, initial, debug.SetMemoryLimit(-1), "restored at stop")
}
