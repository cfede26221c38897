package persist

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ratekv/ratekv/config"
	"github.com/stretchr/testify/require"
)

// A repair never overwrites what an earlier one set aside. Files set aside
// leave their numbers free again, so a second repair could set aside a file
// of the same name: the rename replaced the first one's, the only copy of
// records the operator may want back. And the corrupt part of a file cut
// twice in one second could not be saved under the same name: the start
// failed.
func TestRepairKeepsEveryFileItSetsAside(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), "aof-load-corrupt", "truncate")
	dir := filepath.Join(cfg.String(config.Dir), "appendonlydir")
	later := filepath.Join(dir, "appendonly.aof.9.incr.aof")
	var keptLater, keptParts []string
	for round := 0; round < 2; round++ {
		f := newFakeServer(newClock())
		require.NoError(t, f.open(t, cfg))
		f.exec(t, "APPEND", fmt.Sprint("good", round), "v")
		at := f.m.AOF().Size()
		f.exec(t, "APPEND", fmt.Sprint("bad", round), "v")
		manPath, man, cut := closeAndCorrupt(t, f, dir, at)
		keptParts = append(keptParts, cut)
		// A later file, named after it in the manifest, with the same
		// name each time.
		rec := fmt.Sprintf("*3\r\n$6\r\nAPPEND\r\n$5\r\nlater\r\n$1\r\n%d\r\n", round)
		require.NoError(t, os.WriteFile(later, []byte(rec), 0o644))
		keptLater = append(keptLater, rec)
		man.incrs = append(man.incrs, manifestFile{filepath.Base(later), 9})
		require.NoError(t, writeManifest(manPath, &man))

		g := newFakeServer(f.clock)
		require.NoError(t, g.open(t, cfg), "round %d", round)
		require.NoError(t, g.m.Close())
	}
	read := func(pattern string) []string {
		names, err := filepath.Glob(filepath.Join(dir, pattern))
		require.NoError(t, err)
		var out []string
		for _, n := range names {
			b, err := os.ReadFile(n)
			require.NoError(t, err)
			out = append(out, string(b))
		}
		return out
	}
	require.ElementsMatch(t, keptLater, read("appendonly.aof.9.incr.aof.corrupt-later*"))
	require.ElementsMatch(t, keptParts, read("appendonly.aof.*.incr.aof.corrupt-[0-9]*"))
}

// closeAndCorrupt closes f's manager and corrupts the record at offset at
// of the last incremental file (in dir). It returns the manifest, its
// path, and the file's bytes from at on (what a repair sets aside).
func closeAndCorrupt(t *testing.T, f *fakeServer, dir string, at int64) (string, manifest, string) {
	t.Helper()
	manPath := f.m.manifestPath()
	require.NoError(t, f.m.Close())
	man, _, err := readManifest(manPath)
	require.NoError(t, err)
	path := filepath.Join(dir, man.incrs[len(man.incrs)-1].name)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	data[at] = '!' // the record's '*'
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return manPath, man, string(data[at:])
}

// A repair with aof-load-corrupt truncate that a crash stops after any of
// its steps leaves a directory that the next start, with the same flag,
// loads as if the repair had finished: the records before the corruption,
// none of those after it (in the cut file or in a later one), and the
// later file's bytes kept on disk (in its aside copy).
func TestRepairSurvivesACrashAfterEveryStep(t *testing.T) {
	for _, crashAt := range []string{"copied", "copied later", "manifest", "truncated"} {
		t.Run(crashAt, func(t *testing.T) {
			cfg := testConfig(t, t.TempDir(), "aof-load-corrupt", "truncate")
			dir := filepath.Join(cfg.String(config.Dir), "appendonlydir")
			f := newFakeServer(newClock())
			require.NoError(t, f.open(t, cfg))
			f.exec(t, "APPEND", "good", "v")
			at := f.m.AOF().Size()
			f.exec(t, "APPEND", "bad", "v")
			manPath, man, _ := closeAndCorrupt(t, f, dir, at)
			later := filepath.Join(dir, "appendonly.aof.9.incr.aof")
			laterRec := "*3\r\n$6\r\nAPPEND\r\n$5\r\nlater\r\n$1\r\nv\r\n"
			require.NoError(t, os.WriteFile(later, []byte(laterRec), 0o644))
			man.incrs = append(man.incrs, manifestFile{filepath.Base(later), 9})
			require.NoError(t, writeManifest(manPath, &man))

			crash := errors.New("crash")
			repairStep = func(step string) error {
				if step == crashAt {
					return crash
				}
				return nil
			}
			g := newFakeServer(f.clock)
			err := g.open(t, cfg)
			repairStep = nil
			require.ErrorIs(t, err, crash)

			h := newFakeServer(f.clock)
			require.NoError(t, h.open(t, cfg), "the start after the crash")
			t.Cleanup(func() { h.m.Close() })
			got := h.contents()
			require.Contains(t, got, "good")
			require.NotContains(t, got, "bad")
			require.NotContains(t, got, "later", "the later file was replayed after the cut one")
			kept, err := filepath.Glob(later + "*")
			require.NoError(t, err)
			var found bool
			for _, name := range kept {
				b, err := os.ReadFile(name)
				require.NoError(t, err)
				found = found || string(b) == laterRec
			}
			require.True(t, found, "the later file's bytes are kept (in %v)", kept)
		})
	}
}
