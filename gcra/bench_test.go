package gcra

import (
	"sync/atomic"
	"testing"
)

// benchSink keeps the compiler from discarding the benchmarked calls.
var benchSink atomic.Int64

// BenchmarkThrottle runs one key per goroutine at about 1.4× its rate
// (1000/s, a call every 700 µs), so calls mix allowed and limited. Target:
// 0 allocs/op (also enforced by TestThrottleDoesNotAllocate).
func BenchmarkThrottle(b *testing.B) {
	p := Params{MaxBurst: 100, Count: 1000, Period: 1, Quantity: 1}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var (
			tat       int64
			has       bool
			now       = t0
			remaining int64
		)
		for pb.Next() {
			now += 700_000
			r, err := Throttle(tat, has, now, p)
			if err != nil {
				b.Error(err)
				return
			}
			if r.Write {
				tat, has = r.NewTAT, true
			}
			remaining += r.Remaining
		}
		benchSink.Add(remaining)
	})
}
