package main

import (
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// releaseMemory returns the heap's garbage to the operating system soon
// after it appears, instead of when the Go runtime gets to it.
//
// The keyspace is mostly pointer-free (shards/table.go), so a garbage
// collection costs little, but what a fill or a mass expiry leaves behind
// (old index arrays, freed objects) would otherwise stay in the process's
// RSS: with GOGC=100 the runtime only collects when the heap doubles and
// its scavenger keeps up to the heap goal resident. Measured with
// bench/memory.sh (1M CL.THROTTLE keys): RSS 58.3 B per key against 44.8 B
// of live heap without this. Once a second it compares the heap the
// runtime holds with what was live at the last collection; when the excess
// is over a quarter of it (and over 8 MiB) it runs debug.FreeOSMemory, a
// collection that hands the free pages back. It does the same when the
// keyspace has dropped more than 8 MiB of storage since the last check
// (dropped: FLUSHALL, compaction after a mass expiry), which no collection
// has seen yet: without it the 430 MiB of 10M expired keys stayed resident.
//
// The excess must be seen twice in a row, and is handed back at most every
// excessEvery: a log rewrite under write load frees tens of MiB every
// second or so, and a forced collection plus scavenge every second held a
// one-core server up each time (FreeOSMemory returns pages with the heap
// locked).
func releaseMemory(stop <-chan struct{}, dropped func() int64) {
	samples := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/gc/heap/live:bytes"},
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	lastDropped := dropped()
	var seen bool // the excess was there at the last check too
	var lastExcess time.Time
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			metrics.Read(samples)
			held := samples[0].Value.Uint64() + samples[1].Value.Uint64()
			live := samples[2].Value.Uint64()
			excess := held > live+live/4 && held-live > 8<<20
			d := dropped()
			switch {
			case d-lastDropped > 8<<20:
				debug.FreeOSMemory()
			case excess && seen && now.Sub(lastExcess) >= excessEvery:
				debug.FreeOSMemory()
				lastExcess, excess = now, false
			}
			seen, lastDropped = excess, d
		}
	}
}

// excessEvery is how often at most releaseMemory hands back garbage that
// no drop of the keyspace explains.
const excessEvery = 10 * time.Second
