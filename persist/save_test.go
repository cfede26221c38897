package persist

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ratekv/ratekv/config"
	"github.com/stretchr/testify/require"
)

// TestStopsWrites: only a failure of the disk's refuses writes after a
// background save; one caused by the write load, or a shutdown, does not.
func TestStopsWrites(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{syscall.ENOSPC, true},
		{&os.PathError{Op: "write", Path: "dump.rkv.tmp", Err: syscall.EIO}, true},
		{errors.New("snapshot: short write"), true},
		{errCaptureOverflow, false},
		{fmt.Errorf("capture: %w", errCaptureOverflow), false},
		{errMixed, false},
		{context.Canceled, false},
	} {
		require.Equal(t, tt.want, stopsWrites(tt.err), "%v", tt.err)
	}
}

// TestSaveClearsAFailedBgsaveStatus: once the disk is fixed, a SAVE that
// succeeds sets rdb_last_bgsave_status back to ok, as in Redis (rdbSave);
// one that fails leaves it as it was.
func TestSaveClearsAFailedBgsaveStatus(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir, "appendonly", "no")
	f := newFakeServer(newClock())
	require.NoError(t, f.open(t, cfg))
	t.Cleanup(func() { f.m.Close() })
	f.exec(t, "APPEND", "k", "v")
	// A directory where the temporary file goes: creating it fails.
	blocker := filepath.Join(dir, cfg.String(config.DBFilename)+".tmp")
	require.NoError(t, os.Mkdir(blocker, 0o755))
	_, err := f.m.BGSave(false)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return !f.m.Stats().BgsaveInProgress }, 5*time.Second, time.Millisecond)
	require.False(t, f.m.Stats().LastBgsaveOK, "the BGSAVE failed")
	require.Error(t, f.m.Save())
	require.False(t, f.m.Stats().LastBgsaveOK, "a failed SAVE leaves the status")
	require.NoError(t, os.Remove(blocker))
	require.NoError(t, f.m.Save())
	require.True(t, f.m.Stats().LastBgsaveOK, "a SAVE that succeeds clears it")
}
