package command

import (
	"math/bits"
	"strconv"
	"sync/atomic"
)

// Per-command latency histograms (latency-tracking: INFO latencystats,
// LATENCY HISTOGRAM, and Engine.LatencyHistogram for metrics).
//
// A histogram has fixed memory: log-linear buckets of nanoseconds, 16 per
// power of two (within 6.25 % of the value, as an HDR histogram with one
// significant digit and a half), from 0 to 2^36 ns (about 69 s; longer
// durations count in the last bucket). A command's histogram is allocated
// on its first tracked call. A connection counts the durations of a run of
// the same command in a few pending buckets and adds them to the shared
// counters when the run ends (flushCmdStats), as it does the calls and
// time of INFO commandstats, so that cores running the same command do not
// contend on one counter per call.

// LatencyBuckets is the number of buckets of a command's latency histogram.
const LatencyBuckets = 33 * 16

// latencyMaxNs is the largest duration with a bucket of its own.
const latencyMaxNs = 1<<36 - 1

// latencyBucket returns the bucket of a duration of ns nanoseconds.
func latencyBucket(ns int64) int {
	if ns <= 0 {
		return 0
	}
	if ns > latencyMaxNs {
		ns = latencyMaxNs
	}
	e := bits.Len64(uint64(ns)) - 5
	if e < 0 {
		e = 0
	}
	return e*16 + int(ns>>e)
}

// LatencyBucketBound returns the largest duration, in nanoseconds, that
// bucket i of a latency histogram counts.
func LatencyBucketBound(i int) int64 {
	if i < 32 {
		return int64(i)
	}
	e := i/16 - 1
	m := int64(i%16 + 16)
	return (m+1)<<e - 1
}

// latencyHist is one command's histogram; safe for concurrent use.
type latencyHist struct {
	counts [LatencyBuckets]atomic.Uint64
}

// latencyPending counts a connection's durations of its current command
// (Client.statCmd) before they are published: a direct-mapped cache of
// buckets, slot b%8 for bucket b, so that counting one is a compare and an
// increment, and neighbouring buckets never evict each other.
type latencyPending struct {
	bucket [8]uint16 // the bucket each slot counts
	count  [8]uint32 // 0: the slot is free
	n      uint8     // slots in use
}

// add counts one duration of ns of cmd, publishing a slot's count to cmd's
// histogram first when another bucket holds it.
func (p *latencyPending) add(ns int64, cmd *Command) {
	b := uint16(latencyBucket(ns))
	s := b & 7
	switch {
	case p.count[s] == 0:
		p.n++
	case p.bucket[s] == b:
		p.count[s]++
		return
	default:
		cmd.histogram().counts[p.bucket[s]].Add(uint64(p.count[s]))
	}
	p.bucket[s], p.count[s] = b, 1
}

// flush adds the pending counts to h and empties p.
func (p *latencyPending) flush(h *latencyHist) {
	for s := range p.count {
		if p.count[s] != 0 {
			h.counts[p.bucket[s]].Add(uint64(p.count[s]))
		}
	}
	p.reset()
}

// reset drops the pending counts.
func (p *latencyPending) reset() { *p = latencyPending{} }

// histogram returns cmd's histogram, allocating it on first use.
func (cmd *Command) histogram() *latencyHist {
	if h := cmd.hist.Load(); h != nil {
		return h
	}
	cmd.hist.CompareAndSwap(nil, new(latencyHist))
	return cmd.hist.Load()
}

// snapshot copies h's counts into dst and returns their total.
func (h *latencyHist) snapshot(dst *[LatencyBuckets]uint64) uint64 {
	var total uint64
	for i := range h.counts {
		dst[i] = h.counts[i].Load()
		total += dst[i]
	}
	return total
}

// percentile returns the upper bound, in ns, of the bucket where the
// cumulative count reaches p percent of total (Redis's
// hdr_value_at_percentile).
func percentile(counts *[LatencyBuckets]uint64, total uint64, p float64) int64 {
	want := uint64(p/100*float64(total) + 0.5)
	if want < 1 {
		want = 1
	}
	var cum uint64
	for i, n := range counts {
		cum += n
		if cum >= want {
			return LatencyBucketBound(i)
		}
	}
	return LatencyBucketBound(LatencyBuckets - 1)
}

// LatencyHistogram appends to dst the per-bucket counts of the latency
// histogram of the command named name ("set"; a subcommand counts on its
// container, as in INFO commandstats) and returns it; bucket i counts the
// calls that took at most LatencyBucketBound(i) ns (and more than bucket
// i-1's bound). It returns dst unchanged when the command is unknown or
// has no tracked call since the start or CONFIG RESETSTAT.
func (e *Engine) LatencyHistogram(name string, dst []uint64) []uint64 {
	cmd := commands[name]
	if cmd == nil {
		return dst
	}
	h := cmd.hist.Load()
	if h == nil {
		return dst
	}
	for i := range h.counts {
		dst = append(dst, h.counts[i].Load())
	}
	return dst
}

// EachLatencyHistogram calls fn with the name and per-bucket counts (as
// LatencyHistogram's) of every command with tracked calls, in name order.
// counts is reused between calls: fn must copy what it keeps.
func (e *Engine) EachLatencyHistogram(fn func(name string, counts []uint64)) {
	var buf [LatencyBuckets]uint64
	for _, cmd := range sortedCommands() {
		if h := cmd.hist.Load(); h != nil {
			h.snapshot(&buf)
			fn(cmd.Name, buf[:])
		}
	}
}

// infoLatencystats writes INFO latencystats: per command called since
// the reset, the percentiles of latency-tracking-info-percentiles in µs.
func infoLatencystats(c *Client, ib *infoBuilder) {
	ps := *c.eng.obs.percentiles.Load()
	var counts [LatencyBuckets]uint64
	for _, cmd := range sortedCommands() {
		h := cmd.hist.Load()
		if h == nil {
			continue
		}
		total := h.snapshot(&counts)
		if total == 0 {
			continue
		}
		ib.b = append(ib.b, "latency_percentiles_usec_"...)
		ib.b = append(ib.b, cmd.Name...)
		ib.b = append(ib.b, ':')
		for i, p := range ps {
			if i > 0 {
				ib.b = append(ib.b, ',')
			}
			ib.b = append(ib.b, 'p')
			ib.b = strconv.AppendFloat(ib.b, p, 'f', -1, 64)
			ib.b = append(ib.b, '=')
			ib.b = strconv.AppendFloat(ib.b, float64(percentile(&counts, total, p))/1000, 'f', 3, 64)
		}
		ib.b = append(ib.b, '\r', '\n')
	}
}

// writeLatencyHistogram writes one command's LATENCY HISTOGRAM entry: its
// calls and the cumulative counts at powers of two from 1024 ns, keyed by
// the bucket's bound in µs, where the count grew (as Redis's
// fillCommandCDF).
func (c *Client) writeLatencyHistogram(h *latencyHist) {
	var counts [LatencyBuckets]uint64
	total := h.snapshot(&counts)
	c.WriteMap(2)
	c.WriteBulkString("calls")
	c.WriteInt(int64(total))
	c.WriteBulkString("histogram_usec")
	type point struct{ us, cum int64 }
	var pts []point
	var cum, prev uint64
	next := int64(1024)
	for i, n := range counts {
		cum += n
		bound := LatencyBucketBound(i)
		if bound < next && i < LatencyBuckets-1 {
			continue
		}
		if cum > prev {
			pts = append(pts, point{bound / 1000, int64(cum)})
		}
		prev = cum
		for next <= bound {
			next *= 2
		}
		if cum == total {
			break
		}
	}
	c.WriteMap(len(pts))
	for _, p := range pts {
		c.WriteInt(p.us)
		c.WriteInt(p.cum)
	}
}
