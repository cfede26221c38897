package command

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLatencyPendingCounts: whatever the order of durations, what the
// pending slots publish (on collisions and at flush) is each bucket's
// exact count.
func TestLatencyPendingCounts(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	cmd := &Command{Name: "x"}
	want := make([]uint64, LatencyBuckets)
	var p latencyPending
	for i := 0; i < 100000; i++ {
		ns := int64(rng.IntN(5000))
		if i%7 == 0 {
			ns = rng.Int64N(1 << 40) // far buckets, which collide
		}
		want[latencyBucket(ns)]++
		p.add(ns, cmd)
	}
	p.flush(cmd.histogram())
	require.Zero(t, p.n)
	for b := range want {
		require.Equal(t, want[b], cmd.histogram().counts[b].Load(), "bucket %d", b)
	}
}
