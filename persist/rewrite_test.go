package persist

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ratekv/ratekv/config"
	"github.com/stretchr/testify/require"
)

// TestRewriteUnderLoadIsExact rewrites and snapshots repeatedly while
// writers change the store, then checks that the log (base + increments)
// rebuilds exactly the final state: no APPEND lost or applied twice.
func TestRewriteUnderLoadIsExact(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), "appendfsync", "everysec")
	f := newFakeServer(newClock())
	require.NoError(t, f.open(t, cfg))
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for i := 0; !stop.Load(); i++ {
				k := fmt.Sprint("k", r.IntN(300))
				switch x := r.IntN(1000); {
				case x == 0:
					f.exec(t, "MDEL", k, fmt.Sprint("k", r.IntN(300))) // usually two shards
				case x < 50:
					f.exec(t, "SET", k, strconv.Itoa(i), "PXAT", strconv.Itoa(1_800_000_000_000+i))
				default:
					f.exec(t, "APPEND", k, string(rune('a'+w)))
				}
			}
		}()
	}
	rewrites := 0
	deadline := time.Now().Add(10 * time.Second)
	for rewrites < 5 && time.Now().Before(deadline) {
		if _, err := f.m.BGRewrite(); err != nil {
			require.ErrorIs(t, err, ErrRewriteInProgress)
		}
		if _, err := f.m.BGSave(true); err != nil {
			require.ErrorIs(t, err, ErrSaveInProgress)
		}
		time.Sleep(5 * time.Millisecond) // let writes pile up between rewrites
		rewrites = int(f.m.Stats().Rewrites)
	}
	stop.Store(true)
	wg.Wait()
	require.GreaterOrEqual(t, rewrites, 3, "rewrites completed under load")
	want := f.contents()
	require.NotEmpty(t, want)
	g := restart(t, f, cfg)
	require.Equal(t, want, g.contents())
	// The directory holds only what the manifest names.
	ents, err := os.ReadDir(filepath.Join(cfg.String(config.Dir), "appendonlydir"))
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	require.ElementsMatch(t, append(g.m.man.files(), "appendonly.aof.manifest"), names)
}

// A rewrite whose capture fails before the log switched puts the old
// manifest back and removes the file it had named: the log goes on in the
// old file, and a restart loads everything.
func TestRewriteFailedCaptureRestoresTheManifest(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	f := newFakeServer(newClock())
	require.NoError(t, f.open(t, cfg))
	f.exec(t, "APPEND", "a", "1")
	manPath := f.m.manifestPath()
	before, err := os.ReadFile(manPath)
	require.NoError(t, err)
	files, err := os.ReadDir(filepath.Dir(manPath))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, f.m.rewriteOnce(ctx, f.m.AOF(), false), context.Canceled)
	after, err := os.ReadFile(manPath)
	require.NoError(t, err)
	require.Equal(t, string(before), string(after))
	left, err := os.ReadDir(filepath.Dir(manPath))
	require.NoError(t, err)
	require.Equal(t, len(files), len(left), "the new incremental file is gone")
	f.exec(t, "APPEND", "b", "2")
	want := f.contents()
	require.Len(t, want, 2)
	g := restart(t, f, cfg)
	require.Equal(t, want, g.contents())
}

// While a rewrite captures, the manifest already names the next file but
// the log still appends to the one before: the size counts that one once,
// by its records, not by the space allocated ahead of them.
func TestAofSizeWhileRewriteCaptures(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	f := newFakeServer(newClock())
	require.NoError(t, f.open(t, cfg))
	f.exec(t, "APPEND", "a", "1")
	size := func() int64 {
		f.m.mu.Lock()
		defer f.m.mu.Unlock()
		return f.m.aofSize()
	}
	cur, _ := f.m.AOF().Current()
	curPath := filepath.Join(filepath.Dir(f.m.manifestPath()), cur)
	require.Eventually(t, func() bool {
		st, err := os.Stat(curPath)
		return err == nil && st.Size() > 0
	}, 5*time.Second, time.Millisecond, "the record reaches the file")
	want := size()
	done := stallRewrite(t, f)
	f.m.mu.Lock()
	require.Len(t, f.m.man.incrs, 2, "the next file is named")
	f.m.mu.Unlock()
	require.Equal(t, want, size())
	f.st.Unlock(f.st.NumShards() - 1)
	require.NoError(t, <-done)
}

func TestRemoveGradually(t *testing.T) {
	dir := t.TempDir()
	for _, size := range []int64{0, 1, removeStep - 1, 3*removeStep + 5} {
		path := filepath.Join(dir, "f")
		f, err := os.Create(path)
		require.NoError(t, err)
		require.NoError(t, f.Truncate(size))
		require.NoError(t, f.Close())
		require.NoError(t, removeGradually(path), "size %d", size)
		_, err = os.Stat(path)
		require.ErrorIs(t, err, os.ErrNotExist, "size %d", size)
	}
	require.ErrorIs(t, removeGradually(filepath.Join(dir, "missing")), os.ErrNotExist)
}

// failManifestDirSync makes the nth directory fsync after a manifest's
// rename fail with EIO (the others go through), until restore is called.
func failManifestDirSync(n int) (restore func()) {
	orig := manifestDirSync
	calls := 0
	manifestDirSync = func(dir string) error {
		if calls++; calls == n {
			return syscall.EIO
		}
		return orig(dir)
	}
	return func() { manifestDirSync = orig }
}

// When the directory's fsync fails after a manifest's rename, the new
// manifest is in place, though a crash may bring back the old one: the
// rewrite fails, but keeps every file either names: removing those the
// manifest on disk names (the new base, or the new incremental file)
// would make the next start lose data or refuse to start.
func TestManifestDirSyncFailureKeepsEveryFile(t *testing.T) {
	for call, step := range []string{"next incremental file", "final manifest"} {
		t.Run(step, func(t *testing.T) {
			cfg := testConfig(t, t.TempDir())
			f := newFakeServer(newClock())
			require.NoError(t, f.open(t, cfg))
			f.exec(t, "SET", "a", "1")
			f.exec(t, "APPEND", "a", "2")
			restore := failManifestDirSync(call + 1)
			err := f.m.rewrite(f.m.ctx, f.m.AOF(), false)
			restore()
			require.ErrorIs(t, err, syscall.EIO)
			f.exec(t, "APPEND", "a", "3")
			require.Equal(t, map[string]string{"a": `"123"@0`}, f.contents())
			g := restart(t, f, cfg)
			require.Equal(t, map[string]string{"a": `"123"@0`}, g.contents())
			require.NoError(t, g.m.rewrite(g.m.ctx, g.m.AOF(), false), "the next rewrite succeeds")
			g.exec(t, "APPEND", "a", "4")
			h := restart(t, g, cfg)
			require.Equal(t, map[string]string{"a": `"1234"@0`}, h.contents())
		})
	}
}

// The files such a failed rewrite kept are deleted by the next rewrite that
// succeeds, once its manifest is durable: left until the next start, they
// would keep an old base and log (as large as the data) on disk for as
// long as the server runs, one more set per such failure.
func TestRewriteRemovesWhatAFailedOneKept(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	f := newFakeServer(newClock())
	require.NoError(t, f.open(t, cfg))
	t.Cleanup(func() { f.m.Close() })
	f.exec(t, "APPEND", "a", "1")
	restore := failManifestDirSync(2) // the final manifest's, after the next file's succeeded
	err := f.m.rewrite(f.m.ctx, f.m.AOF(), false)
	restore()
	require.ErrorIs(t, err, syscall.EIO)
	f.exec(t, "APPEND", "a", "2")
	require.NoError(t, f.m.rewrite(f.m.ctx, f.m.AOF(), false))
	ents, err := os.ReadDir(filepath.Dir(f.m.manifestPath()))
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	require.ElementsMatch(t, append(f.m.man.files(), "appendonly.aof.manifest"), names)
}
