package persist

import (
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// latencyRecorder is a LatencyMonitor that keeps the events it is given.
type latencyRecorder struct {
	on     bool
	mu     sync.Mutex
	events map[string]int
}

func (r *latencyRecorder) LatencyOn() bool { return r.on }
func (r *latencyRecorder) LatencyEvent(event string, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events[event]++
}

func (r *latencyRecorder) count(event string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.events[event]
}

func TestLatencyEvents(t *testing.T) {
	for _, on := range []bool{true, false} {
		cfg := testConfig(t, t.TempDir(), "appendonly", "yes", "appendfsync", "always")
		f := newFakeServer(newClock())
		rec := &latencyRecorder{on: on, events: map[string]int{}}
		m, err := Open(Options{Config: cfg, Store: f.st, Replay: f.replay, Keys: fakeKeys, Resets: fakeResets,
			Logger: slog.New(slog.DiscardHandler), Latency: rec})
		require.NoError(t, err)
		f.m = m
		f.exec(t, "APPEND", "k", "v")
		require.NoError(t, m.Save())
		require.NoError(t, m.Close())
		for _, ev := range []string{"aof-write", "aof-fsync-always", "rdb-save"} {
			if on {
				require.Positive(t, rec.count(ev), ev)
			} else {
				require.Zero(t, rec.count(ev), "%s while off", ev)
			}
		}
	}
}
