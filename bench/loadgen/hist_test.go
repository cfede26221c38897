package main

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestBucketIndexAndRange(t *testing.T) {
	values := []uint64{0, 1, 2, 127, 128, 255, 256, 257, 511, 512, 1000, 1023, 1024, 4095,
		1e6, 1e9, 123456789, math.MaxUint32, 1 << 40, math.MaxInt64, math.MaxUint64}
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		values = append(values, r.Uint64()>>r.UintN(64))
	}
	for i, v := range values {
		idx := bucketIndex(v)
		if idx < 0 || idx >= numBuckets {
			t.Fatalf("%d: bucketIndex(%d) = %d, outside [0,%d)", i, v, idx, numBuckets)
		}
		lo, hi := bucketRange(idx)
		if v < lo || v > hi {
			t.Errorf("%d: value %d in bucket %d = [%d,%d]", i, v, idx, lo, hi)
		}
		if width := hi - lo; v >= 2*subCount && float64(width) > float64(lo)/subCount {
			t.Errorf("%d: bucket %d = [%d,%d] wider than 1/%d of its start", i, idx, lo, hi, subCount)
		}
	}
	// Buckets tile the range with no gap or overlap.
	for idx := 1; idx < numBuckets; idx++ {
		_, prevHi := bucketRange(idx - 1)
		lo, _ := bucketRange(idx)
		if lo != prevHi+1 {
			t.Fatalf("bucket %d starts at %d, previous ends at %d", idx, lo, prevHi)
		}
	}
	if _, hi := bucketRange(numBuckets - 1); hi != math.MaxUint64 {
		t.Fatalf("last bucket ends at %d, want MaxUint64", hi)
	}
}

func TestPercentiles(t *testing.T) {
	cases := []struct {
		name   string
		fill   func(h *histogram)
		p      float64
		want   uint64
		relTol float64
	}{
		{"empty", func(h *histogram) {}, 99, 0, 0},
		{"single value", func(h *histogram) { h.recordN(42_000, 1) }, 50, 42_000, 0},
		{"single value p99.9 clamps to max", func(h *histogram) { h.recordN(100_001, 1) }, 99.9, 100_001, 0},
		{"small exact values", func(h *histogram) {
			for v := uint64(1); v <= 100; v++ {
				h.recordN(v, 1)
			}
		}, 50, 50, 0},
		{"1..100000 p50", fillRange(1, 100_000), 50, 50_000, 1.0 / subCount},
		{"1..100000 p99", fillRange(1, 100_000), 99, 99_000, 1.0 / subCount},
		{"1..100000 p99.9", fillRange(1, 100_000), 99.9, 99_900, 1.0 / subCount},
		{"1..100000 p100", fillRange(1, 100_000), 100, 100_000, 0},
		{"1..100000 p0 is min", fillRange(1, 100_000), 0, 1, 0},
		{"batch counts: 999 fast + 1 slow, p99.9", func(h *histogram) {
			h.recordN(10_000, 999)
			h.recordN(5_000_000, 1)
		}, 99.9, 10_000, 1.0 / subCount},
		{"batch counts: 998 fast + 2 slow, p99.9", func(h *histogram) {
			h.recordN(10_000, 998)
			h.recordN(5_000_000, 2)
		}, 99.9, 5_000_000, 0},
		{"merged halves", func(h *histogram) {
			var a, b histogram
			fillRange(1, 50_000)(&a)
			fillRange(50_001, 100_000)(&b)
			h.merge(&a)
			h.merge(&b)
		}, 99, 99_000, 1.0 / subCount},
	}
	for i, tc := range cases {
		var h histogram
		tc.fill(&h)
		have := h.percentile(tc.p)
		if diff := math.Abs(float64(have) - float64(tc.want)); diff > tc.relTol*float64(tc.want) {
			t.Errorf("%d %s: p%g = %d, want %d (tolerance %.2f%%)", i, tc.name, tc.p, have, tc.want, 100*tc.relTol)
		}
	}
}

func TestHistogramStats(t *testing.T) {
	var h histogram
	h.recordN(100, 3)
	h.recordN(400, 1)
	h.recordN(7, 0) // no-op
	if h.total != 4 || h.min != 100 || h.max != 400 || h.mean() != 175 {
		t.Fatalf("have total=%d min=%d max=%d mean=%g, want 4 100 400 175", h.total, h.min, h.max, h.mean())
	}
	var m histogram
	m.merge(&histogram{})
	m.merge(&h)
	if m.total != 4 || m.min != 100 || m.max != 400 {
		t.Fatalf("merged: have total=%d min=%d max=%d", m.total, m.min, m.max)
	}
}

func fillRange(lo, hi uint64) func(h *histogram) {
	return func(h *histogram) {
		for v := lo; v <= hi; v++ {
			h.recordN(v, 1)
		}
	}
}

func BenchmarkHistogramRecord(b *testing.B) {
	h := new(histogram)
	v := uint64(12345)
	b.ReportAllocs()
	for b.Loop() {
		h.recordN(v, 32)
		v = v*2862933555777941757 + 3037000493
		v >>= 40
	}
}
