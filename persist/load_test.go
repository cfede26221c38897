package persist

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/ratekv/ratekv/config"
	"github.com/stretchr/testify/require"
)

func TestExpiredKeysAreNotResurrected(t *testing.T) {
	clock := newClock()
	cfg := testConfig(t, t.TempDir())
	f := newFakeServer(clock)
	require.NoError(t, f.open(t, cfg))
	now := clock.Load() / 1e6
	f.exec(t, "SET", "short", "1", "PXAT", strconv.FormatInt(now+1000, 10))
	f.exec(t, "SET", "long", "2", "PXAT", strconv.FormatInt(now+10_000, 10))
	_, err := f.m.BGRewrite() // short and long go into the base snapshot
	require.NoError(t, err)
	require.Eventually(t, func() bool { return f.m.Stats().Rewrites == 1 }, 5*time.Second, time.Millisecond)
	f.exec(t, "SET", "short2", "3", "PXAT", strconv.FormatInt(now+1000, 10)) // in the log
	clock.Add(5 * int64(time.Second))                                        // the server is down for 5 s
	g := restart(t, f, cfg)
	require.Equal(t, map[string]string{"long": fmt.Sprintf(`"2"@%d`, now+10_000)}, g.contents())
	require.Equal(t, int64(2), g.m.Stats().LoadedExpired, "deleted once loaded: one from the base, one from the log")
}

// writeSome opens a manager in dir, writes n APPEND records and closes it;
// it returns the incremental file and the offset where each record ends.
func writeSome(t *testing.T, cfg *config.Config, n int) (path string, ends []int64) {
	f := newFakeServer(newClock())
	require.NoError(t, f.open(t, cfg))
	for i := 0; i < n; i++ {
		f.exec(t, "APPEND", fmt.Sprint("k", i), "v")
		ends = append(ends, f.m.AOF().Size())
	}
	require.NoError(t, f.m.Close())
	man, ok, err := readManifest(filepath.Join(cfg.String(config.Dir), "appendonlydir", "appendonly.aof.manifest"))
	require.NoError(t, err)
	require.True(t, ok)
	return filepath.Join(cfg.String(config.Dir), "appendonlydir", man.incrs[len(man.incrs)-1].name), ends
}

func TestTornTailIsTruncated(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	path, ends := writeSome(t, cfg, 5)
	require.NoError(t, os.Truncate(path, ends[4]-3)) // the last record is cut short
	g := newFakeServer(newClock())
	require.NoError(t, g.open(t, cfg))
	require.Len(t, g.contents(), 4)
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, ends[3], st.Size(), "the file is cut at the last whole record")
	g.exec(t, "APPEND", "after", "1") // appends continue cleanly after it
	h := restart(t, g, cfg)
	require.Len(t, h.contents(), 5)
}

// A rewrite names the next incremental file in the manifest before the log
// switches to it; a crash in between leaves a torn tail in the file before
// an empty one, and that is the log's end: cut as at the end of the last.
func TestTornTailBeforeAnEmptyFileIsTruncated(t *testing.T) {
	for _, truncated := range []string{"yes", "no"} {
		t.Run("aof-load-truncated "+truncated, func(t *testing.T) {
			cfg := testConfig(t, t.TempDir(), "aof-load-truncated", truncated)
			path, ends := writeSome(t, cfg, 5)
			require.NoError(t, os.Truncate(path, ends[4]-3))
			dir := filepath.Dir(path)
			manPath := filepath.Join(dir, "appendonly.aof.manifest")
			man, _, err := readManifest(manPath)
			require.NoError(t, err)
			next := manifestFile{"appendonly.aof.99.incr.aof", 99}
			require.NoError(t, os.WriteFile(filepath.Join(dir, next.name), nil, 0o644))
			man.incrs = append(man.incrs, next)
			require.NoError(t, writeManifest(manPath, &man))

			g := newFakeServer(newClock())
			err = g.open(t, cfg)
			if truncated == "no" {
				require.ErrorContains(t, err, path)
				require.ErrorContains(t, err, "--aof-load-truncated yes", "a torn tail, not corruption")
				return
			}
			require.NoError(t, err)
			require.Len(t, g.contents(), 4)
			st, err := os.Stat(path)
			require.NoError(t, err)
			require.Equal(t, ends[3], st.Size())
			g.exec(t, "APPEND", "after", "1") // goes to the empty file, the last
			h := restart(t, g, cfg)
			require.Len(t, h.contents(), 5)
		})
	}
}

func TestTornTailRefusedWhenAofLoadTruncatedIsNo(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), "aof-load-truncated", "no")
	path, ends := writeSome(t, cfg, 3)
	require.NoError(t, os.Truncate(path, ends[2]-1))
	err := newFakeServer(newClock()).open(t, cfg)
	require.ErrorContains(t, err, path)
	require.ErrorContains(t, err, fmt.Sprintf("offset %d", ends[1]))
	require.ErrorContains(t, err, "--aof-load-truncated yes")
}

// After a crash the last file ends in the zeros written ahead under always
// (AOF.prezero) or the space allocated ahead under everysec and no
// (AOF.reserve), which read as zeros too: loading skips them and cuts them
// off, so that appends continue after the last record. They are not a torn
// tail: aof-load-truncated no still starts. (A clean close has cut them
// off already; the test puts them back as a crash leaves them.)
func TestZerosWrittenAheadAreSkipped(t *testing.T) {
	for _, policy := range []string{"always", "everysec"} {
		t.Run(policy, func(t *testing.T) {
			cfg := testConfig(t, t.TempDir(), "appendfsync", policy, "aof-load-truncated", "no")
			path, ends := writeSome(t, cfg, 5)
			st, err := os.Stat(path)
			require.NoError(t, err)
			require.Equal(t, ends[4], st.Size(), "a clean close leaves the records alone")
			require.NoError(t, os.Truncate(path, ends[4]+reserveChunk))
			g := newFakeServer(newClock())
			require.NoError(t, g.open(t, cfg))
			require.Len(t, g.contents(), 5)
			st, err = os.Stat(path)
			require.NoError(t, err)
			require.Equal(t, ends[4], st.Size(), "the zeros are cut off")
			g.exec(t, "APPEND", "after", "1")
			h := restart(t, g, cfg)
			require.Len(t, h.contents(), 6)
		})
	}
}

// A crash while a record was written into zeros leaves it incomplete and
// followed by zeros: a torn tail, cut like one at the end of the file.
func TestTornTailInZerosIsTruncated(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), "appendfsync", "always")
	path, ends := writeSome(t, cfg, 5)
	// (A reader that took the zeros for free space would also skip the
	// record's cleared end; recordsEnd then finds the record incomplete.)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	clear(data[ends[4]-3 : ends[4]])
	require.NoError(t, os.WriteFile(path, data, 0o644))
	g := newFakeServer(newClock())
	require.NoError(t, g.open(t, cfg))
	t.Cleanup(func() { g.m.Close() })
	require.Len(t, g.contents(), 4)
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, ends[3], st.Size())
}

// Zeros followed by records are damage, not free space: loading refuses,
// naming the offset where the zeros begin.
func TestZerosBeforeRecordsAreCorruption(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), "appendfsync", "always")
	path, ends := writeSome(t, cfg, 6)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	clear(data[ends[2]:ends[3]])
	require.NoError(t, os.WriteFile(path, data, 0o644))
	err = newFakeServer(newClock()).open(t, cfg)
	require.ErrorContains(t, err, path)
	require.ErrorContains(t, err, fmt.Sprintf("offset %d", ends[2]))
	require.ErrorContains(t, err, "--aof-load-corrupt truncate")
}

func TestMidFileCorruptionRefusesToStart(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	path, ends := writeSome(t, cfg, 6)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	data[ends[2]] = '!' // the fourth record's '*'
	require.NoError(t, os.WriteFile(path, data, 0o644))
	err = newFakeServer(newClock()).open(t, cfg)
	require.ErrorContains(t, err, path)
	require.ErrorContains(t, err, fmt.Sprintf("offset %d", ends[2]))
	require.ErrorContains(t, err, "--aof-load-corrupt truncate")

	// With the flag, the prefix loads and the rest is kept beside the file.
	require.NoError(t, cfg.Set("aof-load-corrupt", "truncate"))
	g := newFakeServer(newClock())
	require.NoError(t, g.open(t, cfg))
	t.Cleanup(func() { g.m.Close() })
	require.Len(t, g.contents(), 3)
	aside, err := filepath.Glob(path + ".corrupt-*")
	require.NoError(t, err)
	require.Len(t, aside, 1)
	kept, err := os.ReadFile(aside[0])
	require.NoError(t, err)
	require.Equal(t, data[ends[2]:], kept)
}

func TestCorruptSnapshotRefusesToStart(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	f := newFakeServer(newClock())
	require.NoError(t, f.open(t, cfg))
	f.exec(t, "APPEND", "k", "v")
	require.NoError(t, f.m.rewrite(f.m.ctx, f.m.AOF(), false))
	require.NoError(t, f.m.Close())
	base := filepath.Join(cfg.String(config.Dir), "appendonlydir", f.m.man.base.name)
	data, err := os.ReadFile(base)
	require.NoError(t, err)
	data[headerLen+3] ^= 0xff
	require.NoError(t, os.WriteFile(base, data, 0o644))
	err = newFakeServer(newClock()).open(t, cfg)
	require.ErrorContains(t, err, base)
	require.ErrorContains(t, err, "refusing to start")
}

// TestMissingLogFileIsNamed: a file the manifest names but that is gone
// refuses the start with a message that names the manifest and the file
// and says what to do, not a bare "no such file or directory".
func TestMissingLogFileIsNamed(t *testing.T) {
	for _, kind := range []string{"incr.aof", "base.rkv"} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			cfg := testConfig(t, dir, "appendonly", "yes")
			f := newFakeServer(newClock())
			require.NoError(t, f.open(t, cfg))
			f.exec(t, "APPEND", "k", "v")
			require.NoError(t, f.m.Close())
			files, err := filepath.Glob(filepath.Join(dir, "appendonlydir", "*."+kind))
			require.NoError(t, err)
			require.Len(t, files, 1)
			require.NoError(t, os.Remove(files[0]))

			err = newFakeServer(f.clock).open(t, cfg)
			require.ErrorIs(t, err, os.ErrNotExist)
			require.ErrorContains(t, err, "appendonly.aof.manifest names "+filepath.Base(files[0])+", which does not exist: restore it")
		})
	}
}

// The same for an incremental file after the first, as a rewrite names
// the next one before the log switches to it: the start looks at the
// later files first (to find where the log ends), and refused with a bare
// "no such file or directory".
func TestMissingLaterLogFileIsNamed(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	f := newFakeServer(newClock())
	require.NoError(t, f.open(t, cfg))
	f.exec(t, "APPEND", "k", "v")
	manPath := f.m.manifestPath()
	require.NoError(t, f.m.Close())
	man, _, err := readManifest(manPath)
	require.NoError(t, err)
	man.incrs = append(man.incrs, manifestFile{"appendonly.aof.9.incr.aof", 9}) // not created
	require.NoError(t, writeManifest(manPath, &man))

	err = newFakeServer(f.clock).open(t, cfg)
	require.ErrorIs(t, err, os.ErrNotExist)
	require.ErrorContains(t, err, "appendonly.aof.manifest names appendonly.aof.9.incr.aof, which does not exist: restore it")
}

// A manifest that names no incremental file (empty, or cut after its base's
// line) is damaged: ratekv always names one. The start refuses, naming the
// manifest and what to do, and deletes nothing, although to removeStale
// every file of the log would look like a leftover of a rewrite.
func TestManifestWithoutAnIncrementalFileDeletesNothing(t *testing.T) {
	for name, keep := range map[string]func(man manifest) manifest{
		"empty":     func(manifest) manifest { return manifest{} },
		"base only": func(man manifest) manifest { return manifest{base: man.base} },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := testConfig(t, dir)
			f := newFakeServer(newClock())
			require.NoError(t, f.open(t, cfg))
			f.exec(t, "APPEND", "k", "v")
			require.NoError(t, f.m.rewrite(f.m.ctx, f.m.AOF(), false))
			f.exec(t, "APPEND", "k", "w")
			manPath := f.m.manifestPath()
			require.NoError(t, f.m.Close())
			man, _, err := readManifest(manPath)
			require.NoError(t, err)
			files := man.files()
			damaged := keep(man)
			require.NoError(t, os.WriteFile(manPath, damaged.encode(), 0o644))

			err = newFakeServer(f.clock).open(t, cfg)
			require.Error(t, err)
			for _, name := range files {
				require.FileExists(t, filepath.Join(filepath.Dir(manPath), name), "deleted by a start that refused")
			}
			require.ErrorContains(t, err, manPath+" names no incremental file")
			require.ErrorContains(t, err, "restore")
			// Put back, the manifest loads everything.
			require.NoError(t, writeManifest(manPath, &man))
			g := newFakeServer(f.clock)
			require.NoError(t, g.open(t, cfg))
			t.Cleanup(func() { g.m.Close() })
			require.Equal(t, map[string]string{"k": `"vw"@0`}, g.contents())
		})
	}
}

func TestRecordsEnd(t *testing.T) {
	const block = 64 << 10
	for _, tc := range []struct{ data, zeros int }{
		{0, 0}, {0, 5}, {0, 3 * block}, {1, 0}, {10, 1}, {block, 0}, {block, block},
		{block - 1, 1}, {block + 1, block - 1}, {3, 2*block + 7}, {2*block + 5, 3},
	} {
		buf := append(bytes.Repeat([]byte{'x'}, tc.data), make([]byte, tc.zeros)...)
		end, err := recordsEnd(bytes.NewReader(buf), int64(len(buf)))
		require.NoError(t, err)
		require.Equal(t, int64(tc.data), end, "%d bytes, then %d zeros", tc.data, tc.zeros)
	}
}
