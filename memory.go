package main

import (
	"runtime"
	"runtime/debug"
	"time"
)

// releaseMemory lets the Go runtime see, soon after it happens, that the
// keyspace has let go of its storage, so that the memory goes back to the
// operating system instead of staying in the process's RSS.
//
// The keyspace is mostly pointer-free (shards/table.go) and its command
// path does not allocate, so under a steady load the runtime may not
// collect for minutes, and the storage FLUSHALL or the compaction after a
// mass expiry let go of (dropped) would stay resident. Once a second
// releaseMemory checks dropped; when it grew by more than 8 MiB it runs a
// collection, and one more a second later. The heap goal then falls to
// what is live, and the runtime's background scavenger returns the pages
// above it a few at a time, without a pause.
//
// Why the second collection: the scavenger leaves alone the memory that
// was densely used during the last GC cycle (runtime/mgcscavenge.go,
// shouldScavenge), and the pages the first collection freed were in use
// until it swept them. Without another cycle, which a keyspace that
// hardly allocates may not start for minutes, they would stay resident.
//
// It does not call debug.FreeOSMemory, which returns every free page at
// once with the heap locked: on a one-core server (GOMAXPROCS=1) no
// request would be answered meanwhile. Garbage no drop explains (an
// index's old array after it grew, a log rewrite's buffers) is reused by
// later allocations or returned by the scavenger as the heap goal allows;
// MEMORY PURGE returns it at once, and bench/memory.sh reads RSS after it.
// bench/README.md, Design notes, has the measurements.
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

// limitMemory keeps the Go runtime's memory limit at what limit returns
// (the command layer's GoMemoryLimit: maxmemory and a margin; 0 for none,
// which restores the limit the process started with, GOMEMLIMIT's).
//
// Why: evicting a key frees nothing the runtime can see until it
// collects, and with GOGC=100 it collects only when the heap has doubled
// since the last collection: the garbage of a busy server (the log's
// buffers, deleted values) would take the process to twice maxmemory.
// Under the limit the runtime collects sooner and returns free pages to
// the operating system to stay under it.
func limitMemory(stop <-chan struct{}, limit func() int64) {
	limitMemoryEvery(stop, limit, 100*time.Millisecond)
}

// limitMemoryEvery is limitMemory checking every period.
func limitMemoryEvery(stop <-chan struct{}, limit func() int64, period time.Duration) {
	initial := debug.SetMemoryLimit(-1)
	t := time.NewTicker(period)
	defer t.Stop()
	var last int64
	for {
		if l := limit(); l != last {
			if l > 0 {
				debug.SetMemoryLimit(l)
			} else {
				debug.SetMemoryLimit(initial)
			}
			last = l
		}
		select {
		case <-stop:
			debug.SetMemoryLimit(initial)
			return
		case <-t.C:
		}
	}
}
