package gcra

import (
	"math"
	"math/big"
	"testing"
)

func TestCheckedArithmetic(t *testing.T) {
	values := []int64{math.MinInt64, math.MinInt64 + 1, -3037000500, -3037000499, -2, -1, 0, 1, 2,
		3037000499, 3037000500, 1 << 32, nsPerSecond, math.MaxInt64 - 1, math.MaxInt64}
	ops := []struct {
		name string
		fn   func(a, b int64) (int64, bool)
		big  func(z, a, b *big.Int) *big.Int
	}{
		{"add", add, (*big.Int).Add},
		{"sub", sub, (*big.Int).Sub},
		{"mul", mul, (*big.Int).Mul},
	}
	i := 0
	for _, op := range ops {
		for _, a := range values {
			for _, b := range values {
				exact := op.big(new(big.Int), big.NewInt(a), big.NewInt(b))
				have, ok := op.fn(a, b)
				if ok != exact.IsInt64() || (ok && have != exact.Int64()) {
					t.Errorf("step %d: %s(%d, %d): have %d, %v, want %v", i, op.name, a, b, have, ok, exact)
				}
				i++
			}
		}
	}
}
