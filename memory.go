package main

import (
	"runtime"
	"time"
)

// releaseMemory lets the Go runtime see, soon after it happens, that the
// keyspace has let go of its storage, so that the memory goes back to the
// operating system instead of staying in the process's RSS.
//
// The keyspace is mostly pointer-free (shards/table.go) and its command
// path does not allocate, so under a steady load the runtime may not
// collect for minutes: after FLUSHALL or the compaction that follows a
// mass expiry (dropped: the bytes of storage let go), the 430 MiB of 10M
// expired keys stayed resident. Once a second releaseMemory checks
// dropped; when it grew by more than 8 MiB it runs a collection, and one
// more a second later. The heap goal then falls to what is live, and the
// runtime's background scavenger returns the pages above it a few at a
// time: 10M expired GCRA keys, RSS 520 -> 30 MiB within 6 s, at 50k
// CL.THROTTLE/s with no pause over 8 ms.
//
// Why the second collection: the scavenger leaves alone the memory that
// was densely used during the last GC cycle (runtime/mgcscavenge.go,
// shouldScavenge), and the pages the first collection freed were in use
// until it swept them. Without another cycle, which a keyspace that
// hardly allocates may not start for minutes, they stayed resident: after
// 10M keys expired and one collection, RSS stayed at 529 MiB for 25 s
// (used_memory 17 MB); where the compaction's drops happened to start two
// collections, the second freeing most of the memory, it fell to 141 MiB
// and stayed there.
//
// It does not call debug.FreeOSMemory, which returns every free page at
// once with the heap locked: 75-80 us per MiB here, so on a one-core
// server (GOMAXPROCS=1) 18-37 ms during which no request was answered
// after a mass expiry; the 76 MiB of garbage a 10M-key fill leaves is 6 ms
// by that rate. Garbage no drop explains (an index's old array after it
// grew, a log rewrite's buffers) is reused by later allocations or
// returned by the scavenger as the heap goal allows; MEMORY PURGE returns
// it at once, and bench/memory.sh reads RSS after it.
func releaseMemory(stop <-chan struct{}, dropped func() int64) {
	releaseMemoryEvery(stop, dropped, time.Second)
}

// releaseMemoryEvery is releaseMemory checking every period.
func releaseMemoryEvery(stop <-chan struct{}, dropped func() int64, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	last := dropped()
	again := false // a collection ran for a drop: one more is due (see above)
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if d := dropped(); d-last > 8<<20 {
				runtime.GC()
				last, again = d, true
			} else if again {
				runtime.GC()
				again = false
			}
		}
	}
}
