package persist

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/shards"
	"github.com/stretchr/testify/require"
)

// fakeServer stands in for the command layer: it runs a few commands
// against a store the way its dispatcher does (lock the shards of the keys
// in ascending order, change the store, append the effect record, unlock,
// Sync), and replays records through the same code. APPEND is logged
// verbatim and is not idempotent, so a record replayed twice or lost shows.
type fakeServer struct {
	st    *shards.Store
	clock *atomic.Int64 // Unix ns
	m     *Manager
}

func newFakeServer(clock *atomic.Int64) *fakeServer {
	return &fakeServer{st: shards.New(shards.Options{Shards: 8, Now: clock.Load}), clock: clock}
}

// fakeKeys is command.RecordKeys for the fake commands.
func fakeKeys(args [][]byte, dst []int) ([]int, bool) {
	switch strings.ToUpper(string(args[0])) {
	case "SET", "APPEND":
		return append(dst, 1), false
	case "MDEL":
		for i := 1; i < len(args); i++ {
			dst = append(dst, i)
		}
		return dst, false
	case "MARK": // touches no key, as a replica's REPLSTATE
		return dst, false
	}
	return dst, true
}

// fakeResets is command.RecordResets for the fake commands.
func fakeResets(args [][]byte) bool { return strings.EqualFold(string(args[0]), "FLUSHALL") }

// lock locks the shards of a record's keys (or all) and returns the unlock.
func (f *fakeServer) lock(args [][]byte) func() {
	idx, all := fakeKeys(args, nil)
	if all {
		f.st.LockAll()
		return f.st.UnlockAll
	}
	var held []int
	for _, i := range idx {
		if s := f.st.ShardIndex(args[i]); !slices.Contains(held, s) {
			held = append(held, s)
		}
	}
	slices.Sort(held)
	for _, s := range held {
		f.st.Lock(s)
	}
	return func() {
		for _, s := range held {
			f.st.Unlock(s)
		}
	}
}

// apply runs one command on the store; the shards are held.
func (f *fakeServer) apply(args [][]byte) error {
	nowMs := f.clock.Load() / 1e6
	switch strings.ToUpper(string(args[0])) {
	case "SET":
		e, _ := f.st.Put(args[1], nowMs)
		f.st.SetBytes(args[1], e, args[2])
		at := int64(0)
		if len(args) == 5 {
			at, _ = strconv.ParseInt(string(args[4]), 10, 64)
		}
		f.st.SetExpire(args[1], e, at)
	case "APPEND":
		e, _ := f.st.Put(args[1], nowMs)
		var old []byte
		if e.Kind() == shards.KindString { // a new entry (KindNone) has no bytes
			old = f.st.AppendBytes(nil, e)
		}
		f.st.SetBytes(args[1], e, append(old, args[2]...))
	case "MDEL":
		for _, k := range args[1:] {
			f.st.Delete(k, nowMs)
		}
	case "FLUSHALL":
		f.st.Flush()
	case "MARK":
	default:
		return fmt.Errorf("unknown command %q", args[0])
	}
	return nil
}

// exec runs a command as live traffic.
func (f *fakeServer) exec(t testing.TB, args ...string) {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	unlock := f.lock(b)
	require.NoError(t, f.apply(b))
	var seq uint64
	if j := f.m.AOF(); j != nil {
		seq = j.Append(rec(args...))
	}
	unlock()
	if j := f.m.AOF(); j != nil {
		require.NoError(t, j.Sync(seq))
	}
}

// replay is command.Engine.Replay for the fake commands.
func (f *fakeServer) replay(next func() ([][]byte, error)) (int, error) {
	n := 0
	for {
		args, err := next()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		unlock := f.lock(args)
		err = f.apply(args)
		unlock()
		if err != nil {
			return n, err
		}
		n++
	}
}

// contents lists the live keys with their value encoding and deadline.
func (f *fakeServer) contents() map[string]string {
	out := map[string]string{}
	f.st.LockAll()
	defer f.st.UnlockAll()
	f.st.Each(f.clock.Load()/1e6, func(k []byte, e *shards.Entry) bool {
		out[string(k)] = fmt.Sprintf("%q@%d", f.st.AppendBytes(nil, e), e.ExpireAt())
		return true
	})
	return out
}

// testConfig is a configuration with dir and no save rules.
func testConfig(t testing.TB, dir string, kv ...string) *config.Config {
	cfg := config.New()
	require.NoError(t, cfg.Set("dir", dir))
	require.NoError(t, cfg.Set("save", ""))
	require.NoError(t, cfg.Set("appendfsync", "always"))
	for i := 0; i+1 < len(kv); i += 2 {
		require.NoError(t, cfg.Set(kv[i], kv[i+1]))
	}
	return cfg
}

// open opens a manager for f on cfg.
func (f *fakeServer) open(t testing.TB, cfg *config.Config) error {
	m, err := Open(Options{Config: cfg, Store: f.st, Replay: f.replay, Keys: fakeKeys, Resets: fakeResets, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	f.m = m
	return nil
}

// restart closes f's manager and opens a fresh store on the same config.
func restart(t testing.TB, f *fakeServer, cfg *config.Config) *fakeServer {
	require.NoError(t, f.m.Close())
	g := newFakeServer(f.clock)
	require.NoError(t, g.open(t, cfg))
	t.Cleanup(func() { g.m.Close() })
	return g
}

func newClock() *atomic.Int64 {
	c := &atomic.Int64{}
	c.Store(1_700_000_000_000 * 1e6)
	return c
}

func TestManagerReopenRestoresEverything(t *testing.T) {
	for _, policy := range []string{"always", "everysec", "no"} {
		t.Run(policy, func(t *testing.T) {
			cfg := testConfig(t, t.TempDir(), "appendfsync", policy)
			f := newFakeServer(newClock())
			require.NoError(t, f.open(t, cfg))
			f.exec(t, "SET", "a", "1")
			f.exec(t, "APPEND", "a", "2")
			f.exec(t, "SET", "ttl", "x", "PXAT", "1800000000000")
			f.exec(t, "APPEND", "b", "bin\x00\r\n")
			f.exec(t, "MDEL", "b", "nope")
			f.exec(t, "APPEND", "c", "c")
			want := f.contents()
			require.Equal(t, map[string]string{"a": `"12"@0`, "ttl": `"x"@1800000000000`, "c": `"c"@0`}, want)
			g := restart(t, f, cfg)
			require.Equal(t, want, g.contents())
		})
	}
}

func TestAppendonlyNoUsesTheDumpFile(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir, "appendonly", "no", "save", "3600 1")
	f := newFakeServer(newClock())
	require.NoError(t, f.open(t, cfg))
	require.Nil(t, f.m.AOF())
	f.exec(t, "APPEND", "k", "v")
	_, err := f.m.BGRewrite()
	require.ErrorIs(t, err, ErrAOFDisabled)
	require.NoError(t, f.m.Save())
	require.Zero(t, f.m.Stats().ChangesSinceSave)
	f.exec(t, "APPEND", "k", "w")
	require.Equal(t, int64(1), f.m.Stats().ChangesSinceSave)
	want := f.contents()
	g := restart(t, f, cfg) // Close saves because save rules are set
	require.Equal(t, want, g.contents())
	_, err = os.Stat(filepath.Join(dir, "appendonlydir"))
	require.ErrorIs(t, err, os.ErrNotExist)

	// Turning the log on later starts from the dump file.
	require.NoError(t, g.m.Close())
	cfg2 := testConfig(t, dir, "appendonly", "yes")
	h := newFakeServer(g.clock)
	require.NoError(t, h.open(t, cfg2))
	t.Cleanup(func() { h.m.Close() })
	require.Equal(t, want, h.contents())
	require.NotNil(t, h.m.man.base)
}

func TestBackgroundJobConflicts(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	f := newFakeServer(newClock())
	require.NoError(t, f.open(t, cfg))
	t.Cleanup(func() { f.m.Close() })
	f.exec(t, "APPEND", "k", "v")
	f.st.Lock(0) // stall captures at shard 0
	scheduled, err := f.m.BGRewrite()
	require.NoError(t, err)
	require.False(t, scheduled)
	_, err = f.m.BGRewrite()
	require.ErrorIs(t, err, ErrRewriteInProgress)
	_, err = f.m.BGSave(false)
	require.ErrorIs(t, err, ErrRewriteInProgress)
	scheduled, err = f.m.BGSave(true)
	require.NoError(t, err)
	require.True(t, scheduled)
	f.st.Unlock(0)
	require.Eventually(t, func() bool { s := f.m.Stats(); return s.Saves == 1 && s.Rewrites == 1 && !s.BgsaveInProgress },
		5*time.Second, time.Millisecond, "the scheduled BGSAVE runs after the rewrite")
	f.st.Lock(0)
	_, err = f.m.BGSave(false)
	require.NoError(t, err)
	require.ErrorIs(t, f.m.Save(), ErrSaveInProgress)
	scheduled, err = f.m.BGRewrite()
	require.NoError(t, err)
	require.True(t, scheduled)
	require.True(t, f.m.Stats().RewriteScheduled)
	f.st.Unlock(0)
	require.Eventually(t, func() bool { return f.m.Stats().Rewrites == 2 }, 5*time.Second, time.Millisecond)
}

// The Manager's file handling must not leave temporary files behind.
func TestNoTemporaryFilesLeft(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir, "save", "3600 1")
	f := newFakeServer(newClock())
	require.NoError(t, f.open(t, cfg))
	f.exec(t, "APPEND", "k", "v")
	require.NoError(t, f.m.Save())
	require.NoError(t, f.m.rewrite(f.m.ctx, f.m.AOF(), false))
	require.NoError(t, f.m.Close())
	var tmp []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if strings.HasSuffix(p, ".tmp") {
			tmp = append(tmp, p)
		}
		return nil
	})
	require.Empty(t, tmp)
	data, err := os.ReadFile(filepath.Join(dir, "dump.rkv"))
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(data, []byte("RATEKV")))
}

// TestCloseSaveModes: SHUTDOWN NOSAVE skips the final snapshot despite save
// rules, SHUTDOWN SAVE takes one without them, a plain close follows the
// rules.
func TestCloseSaveModes(t *testing.T) {
	for i, tt := range []struct {
		save     string
		mode     SaveMode
		wantDump bool
	}{
		{"3600 1", SaveAsConfigured, true},
		{"3600 1", SaveNever, false},
		{"", SaveAsConfigured, false},
		{"", SaveAlways, true},
	} {
		dir := t.TempDir()
		cfg := testConfig(t, dir, "appendonly", "no", "save", tt.save)
		f := newFakeServer(newClock())
		require.NoError(t, f.open(t, cfg))
		f.exec(t, "SET", "a", "1")
		require.NoError(t, f.m.CloseSave(tt.mode))
		_, err := os.Stat(filepath.Join(dir, cfg.String(config.DBFilename)))
		if gotDump := err == nil; gotDump != tt.wantDump {
			t.Errorf("step %d (save %q, mode %d): dump written %v, want %v", i, tt.save, tt.mode, gotDump, tt.wantDump)
		}
	}
}
