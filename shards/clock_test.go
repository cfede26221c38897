package shards

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWallClockFollowsTimeNow: the default clock reads the wall clock
// (within scheduling noise), never goes backwards between recalibrations,
// and a recalibration keeps it on the wall clock.
func TestWallClockFollowsTimeNow(t *testing.T) {
	c := newWallClock()
	prev := c.now()
	for i := 0; i < 1000; i++ {
		before := time.Now().UnixNano()
		got := c.now()
		after := time.Now().UnixNano()
		require.GreaterOrEqual(t, got, prev)
		require.InDelta(t, float64(before+after)/2, float64(got), float64(after-before)/2+float64(time.Millisecond))
		prev = got
		if i%100 == 0 {
			c.recalibrate()
		}
	}
	// A store without Options.Now uses it.
	s := New(Options{Shards: 1})
	require.InDelta(t, float64(time.Now().UnixNano()), float64(s.Now()), float64(time.Second))
}
