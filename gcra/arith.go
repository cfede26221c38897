package gcra

// Checked int64 arithmetic. Each helper tests the bounds before operating,
// so no result ever wraps; ok is false when the exact result does not fit.

import (
	"math"
	"math/bits"
)

// add returns a+b, or ok == false if it overflows int64.
func add(a, b int64) (sum int64, ok bool) {
	if (b > 0 && a > math.MaxInt64-b) || (b < 0 && a < math.MinInt64-b) {
		return 0, false
	}
	return a + b, true
}

// sub returns a-b, or ok == false if it overflows int64.
func sub(a, b int64) (diff int64, ok bool) {
	if (b < 0 && a > math.MaxInt64+b) || (b > 0 && a < math.MinInt64+b) {
		return 0, false
	}
	return a - b, true
}

// mul returns a*b, or ok == false if it overflows int64.
func mul(a, b int64) (prod int64, ok bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	hi, lo := bits.Mul64(abs(a), abs(b))
	negative := (a < 0) != (b < 0)
	switch {
	case hi != 0 || lo > 1<<63:
		return 0, false
	case lo == 1<<63:
		if negative {
			return math.MinInt64, true
		}
		return 0, false
	case negative:
		return -int64(lo), true
	}
	return int64(lo), true
}

// abs returns |a| as a uint64, which holds it even for math.MinInt64.
func abs(a int64) uint64 {
	if a >= 0 {
		return uint64(a)
	}
	return uint64(-(a + 1)) + 1
}
