package shards

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestOnExpireCycle(t *testing.T) {
	s := New(Options{})
	var passes atomic.Int64
	s.OnExpireCycle(func(d time.Duration) {
		if d >= 0 {
			passes.Add(1)
		}
	})
	s.PauseExpiry(true)
	s.StartExpiry()
	defer s.Close()
	time.Sleep(3 * expireTick) // the absence of passes takes waiting to see
	require.Zero(t, passes.Load(), "no pass while paused")
	s.PauseExpiry(false)
	require.Eventually(t, func() bool { return passes.Load() >= 2 }, 5*time.Second, 10*time.Millisecond)
}
