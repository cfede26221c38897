package dirlock

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSecondAcquireIsRefused(t *testing.T) {
	dir := t.TempDir()
	l, err := Acquire(dir)
	require.NoError(t, err)
	require.NoError(t, l.Announce("127.0.0.1:6380"))

	_, err = Acquire(dir)
	var held *HeldError
	require.True(t, errors.As(err, &held), "%v", err)
	require.Equal(t, os.Getpid(), held.Pid)
	require.Equal(t, "127.0.0.1:6380", held.Addr)
	require.Contains(t, err.Error(), dir)

	pid, addr, err := Announced(dir)
	require.NoError(t, err)
	require.Equal(t, os.Getpid(), pid)
	require.Equal(t, "127.0.0.1:6380", addr)

	l.Release()
	l2, err := Acquire(dir)
	require.NoError(t, err, "released: the next start may take it")
	l2.Release()
	_, addr, err = Announced(dir)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:6380", addr, "the last announcement stays")
	_, _, err = Announced(t.TempDir())
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestUnannouncedLockLeavesNoFile(t *testing.T) {
	dir := t.TempDir()
	l, err := Acquire(dir)
	require.NoError(t, err)
	l.Release()
	_, err = os.Stat(filepath.Join(dir, FileName))
	require.ErrorIs(t, err, os.ErrNotExist, "a failed start leaves the directory as it found it")

	// A file that was there stays, unchanged.
	require.NoError(t, os.WriteFile(filepath.Join(dir, FileName), []byte("pid 1\n"), 0o644))
	l, err = Acquire(dir)
	require.NoError(t, err)
	l.Release()
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	require.NoError(t, err)
	require.Equal(t, "pid 1\n", string(b))
}

func TestHeldErrorWithoutAnnouncement(t *testing.T) {
	dir := t.TempDir()
	l, err := Acquire(dir)
	require.NoError(t, err)
	defer l.Release()
	_, err = Acquire(dir)
	require.EqualError(t, err, "data directory "+dir+" is in use by another process")
}
