package persist

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ratekv/ratekv/config"
	"github.com/stretchr/testify/require"
)

func TestSaveRulesAndAutoRewrite(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), "save", "60 3", "auto-aof-rewrite-min-size", "1000", "auto-aof-rewrite-percentage", "50")
	f := newFakeServer(newClock())
	require.NoError(t, f.open(t, cfg))
	t.Cleanup(func() { f.m.Close() })
	f.exec(t, "APPEND", "a", "1")
	f.exec(t, "APPEND", "a", "2")
	now := time.Now()
	for i, tt := range []struct {
		at      time.Duration
		changes int
		saves   int64
	}{
		{61 * time.Second, 0, 0}, // 2 changes < 3
		{61 * time.Second, 1, 1}, // 3 changes, 61 s > 60 s
		{30 * time.Second, 5, 1}, // 60 s have not passed since that save
	} {
		for j := 0; j < tt.changes; j++ {
			f.exec(t, "APPEND", "b", "x")
		}
		f.m.cron(now.Add(tt.at))
		require.Eventually(t, func() bool { s := f.m.Stats(); return !s.BgsaveInProgress && !s.RewriteInProgress }, 5*time.Second, time.Millisecond)
		require.Equal(t, tt.saves, f.m.Stats().Saves, "step %d", i)
	}
	// The log is well past 1000 bytes and has more than doubled since it
	// was created: the next tick rewrites it.
	require.Zero(t, f.m.Stats().Rewrites)
	for i := 0; i < 50; i++ {
		f.exec(t, "APPEND", "c", strings.Repeat("y", 20))
	}
	f.m.cron(now) // no save rule due at this time
	require.Eventually(t, func() bool { return f.m.Stats().Rewrites == 1 }, 5*time.Second, time.Millisecond)
	s := f.m.Stats()
	require.Equal(t, s.AOFBaseSize, s.AOFCurrentSize)
}

// The save rules start no BGSAVE while a SAVE runs: both would write the
// dump's temporary file at once.
func TestSaveRulesWaitForASave(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), "appendonly", "no", "save", "1 1")
	f := newFakeServer(newClock())
	require.NoError(t, f.open(t, cfg))
	for i := 0; i < 100; i++ {
		f.exec(t, "SET", fmt.Sprint("k", i), "v")
	}
	last := f.st.NumShards() - 1
	f.st.Lock(last) // SAVE's capture waits before the last shard
	saved := make(chan error, 1)
	go func() { saved <- f.m.Save() }()
	require.Eventually(t, func() bool { f.m.mu.Lock(); defer f.m.mu.Unlock(); return f.m.saving }, 5*time.Second, time.Millisecond)
	f.m.cron(time.Now().Add(time.Hour)) // the rule "1 1" is met
	require.False(t, f.m.Stats().BgsaveInProgress, "a save rule started a BGSAVE during SAVE")
	f.st.Unlock(last)
	require.NoError(t, <-saved)
	fh, err := os.Open(f.m.dumpPath)
	require.NoError(t, err)
	defer fh.Close()
	st, err := fh.Stat()
	require.NoError(t, err)
	_, err = loadSnapshot(fh, f.m.dumpPath, st.Size(), snapshotHandler{})
	require.NoError(t, err)
}

// A save rule's seconds past what a Duration holds never come due
// (multiplied, they would wrap negative and be due on every tick).
func TestSaveRulesHugeSeconds(t *testing.T) {
	for i, tt := range []struct {
		seconds int64
		want    time.Duration
	}{
		{math.MaxInt64, math.MaxInt64},
		{9300000000, math.MaxInt64},
		{math.MaxInt64 / int64(time.Second), math.MaxInt64},
		{math.MaxInt64/int64(time.Second) - 1, time.Duration(math.MaxInt64/int64(time.Second)-1) * time.Second},
		{60, 60 * time.Second},
		{1, time.Second},
	} {
		if have := saveAfter(config.SaveRule{Seconds: tt.seconds, Changes: 1}); have != tt.want {
			t.Errorf("step %d: %d seconds: have %v, want %v", i, tt.seconds, have, tt.want)
		}
	}
}
