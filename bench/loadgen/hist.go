package main

// Latency histogram: log-linear buckets in the style of HdrHistogram.
//
// Values (nanoseconds) below 2^(subBits+1) get one bucket each; above that
// every power of two is split into 2^subBits equal sub-buckets, so a bucket
// is never wider than 1/2^subBits (0.8 % for subBits = 7) of its values.
// Recording is an index computation and an increment: no allocation, no
// locking. Each connection owns a histogram; they are merged at the end.

import "math/bits"

const (
	subBits    = 7
	subCount   = 1 << subBits
	numBuckets = (64-subBits)*subCount + subCount // index of 1<<63 is below this
)

// histogram counts values in log-linear buckets. The zero value is empty and
// ready to use. It is not safe for concurrent use.
type histogram struct {
	counts [numBuckets]uint64
	total  uint64
	min    uint64
	max    uint64
	sum    float64
}

// bucketIndex maps v to its bucket.
func bucketIndex(v uint64) int {
	shift := bits.Len64(v) - subBits - 1
	if shift <= 0 {
		return int(v) // v < 2^(subBits+1): exact buckets
	}
	// v>>shift is in [subCount, 2*subCount).
	return shift*subCount + int(v>>uint(shift))
}

// bucketRange returns the smallest and largest value of bucket i.
func bucketRange(i int) (lo, hi uint64) {
	if i < 2*subCount {
		return uint64(i), uint64(i)
	}
	shift := uint(i>>subBits) - 1
	m := uint64(i) - uint64(shift)*subCount
	lo = m << shift
	return lo, lo + (1 << shift) - 1
}

// recordN adds n observations of value v.
func (h *histogram) recordN(v uint64, n uint64) {
	if n == 0 {
		return
	}
	h.counts[bucketIndex(v)] += n
	if h.total == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.total += n
	h.sum += float64(v) * float64(n)
}

// merge adds o's observations to h.
func (h *histogram) merge(o *histogram) {
	if o.total == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.total == 0 || o.min < h.min {
		h.min = o.min
	}
	if o.max > h.max {
		h.max = o.max
	}
	h.total += o.total
	h.sum += o.sum
}

// percentile returns the value at or below which p percent (0..100) of the
// observations fall, reported as the highest value of its bucket (never above
// the maximum seen), like HdrHistogram's highestEquivalentValue. It returns 0
// for an empty histogram.
func (h *histogram) percentile(p float64) uint64 {
	if h.total == 0 {
		return 0
	}
	if p <= 0 {
		return h.min
	}
	// rank = ceil(p/100 * total), at least 1. The tiny relative slack
	// keeps float error (99.9/100*1000 = 999.0000000000001) from adding one.
	x := p / 100 * float64(h.total)
	x -= x * 1e-12
	rank := uint64(x)
	if float64(rank) < x {
		rank++
	}
	if rank < 1 {
		rank = 1
	}
	if rank > h.total {
		rank = h.total
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			_, hi := bucketRange(i)
			if hi > h.max {
				hi = h.max
			}
			if hi < h.min {
				hi = h.min
			}
			return hi
		}
	}
	return h.max
}

// mean returns the average observation, 0 if empty.
func (h *histogram) mean() float64 {
	if h.total == 0 {
		return 0
	}
	return h.sum / float64(h.total)
}
