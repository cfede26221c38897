package persist

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// withRing runs fn once through io_uring (when this kernel allows it) and
// once through the plain system calls.
func withRing(t *testing.T, fn func(t *testing.T)) {
	t.Run("io_uring", func(t *testing.T) {
		if sharedRing() == nil {
			t.Skipf("io_uring unavailable here: %v", ringErr)
		}
		fn(t)
	})
	t.Run("plain", func(t *testing.T) {
		useRing = false
		defer func() { useRing = true }()
		fn(t)
	})
}

func TestSyncFileSucceedsAndReportsErrors(t *testing.T) {
	withRing(t, func(t *testing.T) {
		dir := t.TempDir()
		f, err := os.Create(filepath.Join(dir, "data"))
		require.NoError(t, err)
		for i := 0; i < 20; i++ {
			_, err = f.Write([]byte("some bytes to make durable\n"))
			require.NoError(t, err)
			require.NoError(t, datasync(f))
			require.NoError(t, fullSync(f))
		}
		d, err := os.Open(dir)
		require.NoError(t, err)
		require.NoError(t, fullSync(d), "a directory fsyncs too")
		require.NoError(t, d.Close())
		require.NoError(t, f.Close())

		// A closed file fails ("use of closed file"), it is not synced.
		require.Error(t, datasync(f))

		// A file the kernel refuses to sync: the kernel's error, as an
		// *os.PathError naming the call and the file.
		r, w, err := os.Pipe()
		require.NoError(t, err)
		defer r.Close()
		defer w.Close()
		err = datasync(w)
		var pe *os.PathError
		require.ErrorAs(t, err, &pe)
		require.Equal(t, "fdatasync", pe.Op)
		require.True(t, errors.Is(err, syscall.EINVAL), "got %v", err)
	})
}

// Concurrent callers each get their own completion, also when more are in
// flight than the ring takes (the rest use the plain system call).
func TestRingConcurrentSyncs(t *testing.T) {
	withRing(t, func(t *testing.T) {
		dir := t.TempDir()
		var wg sync.WaitGroup
		errs := make(chan error, 3*maxInFlight)
		for g := 0; g < 3*maxInFlight; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				f, err := os.Create(filepath.Join(dir, fmt.Sprint(g)))
				if err != nil {
					errs <- err
					return
				}
				defer f.Close()
				for i := 0; i < 10; i++ {
					if _, err := f.Write([]byte("x")); err != nil {
						errs <- err
						return
					}
					if err := datasync(f); err != nil {
						errs <- err
						return
					}
				}
			}(g)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
	})
}

func TestRemoveFileDeletesAndReportsErrors(t *testing.T) {
	withRing(t, func(t *testing.T) {
		dir := t.TempDir()
		big := filepath.Join(dir, "big")
		require.NoError(t, os.WriteFile(big, make([]byte, 9<<20), 0o644)) // several removeSteps
		require.NoError(t, removeFile(big))
		_, err := os.Stat(big)
		require.ErrorIs(t, err, os.ErrNotExist)

		// A missing file is reported, naming it, as os.Remove would.
		err = removeFile(big)
		require.ErrorIs(t, err, os.ErrNotExist)
		require.Contains(t, err.Error(), big)
		if r := sharedRing(); r != nil {
			// This kernel has IORING_OP_UNLINKAT (5.11+): no fallback.
			require.ErrorIs(t, r.unlink(big), syscall.ENOENT)
		}

		// A relative path is resolved from the working directory.
		t.Chdir(dir)
		require.NoError(t, os.WriteFile("small", []byte("x"), 0o644))
		require.NoError(t, removeFile("small"))
		_, err = os.Stat(filepath.Join(dir, "small"))
		require.ErrorIs(t, err, os.ErrNotExist)
	})
}

// An fsync's completion: an fsync in flight when the ring broke counts as
// failed, since it may have failed unseen (and a second fsync of the file
// would then succeed).
func TestFsyncResult(t *testing.T) {
	for _, c := range []struct {
		res   int32
		err   error
		again bool
	}{
		{0, nil, false},
		{-int32(syscall.EIO), syscall.EIO, false},
		{-int32(syscall.ENOSPC), syscall.ENOSPC, false},
		{-int32(syscall.EINTR), nil, true},
		{-int32(syscall.EAGAIN), nil, true},
		{failed, errRingBroke, false},
	} {
		again, err := fsyncResult(c.res)
		require.Equal(t, c.err, err, c.res)
		require.Equal(t, c.again, again, c.res)
	}
}
