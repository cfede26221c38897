package persist

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/shards"
	"github.com/stretchr/testify/require"
)

// fakeServer stands in for package server: it runs a few commands against a
// store the way the dispatcher does (lock the shards of the keys in
// ascending order, change the store, append the effect record, unlock,
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

// replay is server.Server.Replay for the fake commands.
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

// A multi-shard record in the middle of a capture cannot be split: the
// capture is retried, and the result is still exact.
func TestRewriteRetriesAroundMultiShardRecords(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	f := newFakeServer(newClock())
	require.NoError(t, f.open(t, cfg))
	// Keys in the first and last shards, so that a record touching both
	// falls between their captures.
	first, last := edgeKeys(f)
	f.exec(t, "APPEND", first, "x")
	f.exec(t, "APPEND", last, "y")
	// Hold the last shard so the capture stops before it; meanwhile a
	// multi-shard write is appended (as if it held both locks).
	done := stallRewrite(t, f)
	time.Sleep(20 * time.Millisecond) // the capture reaches the last shard and waits
	f.st.Lock(0)
	f.apply([][]byte{[]byte("MDEL"), []byte(first), []byte(last)})
	f.m.AOF().Append(rec("MDEL", first, last))
	f.st.Unlock(0)
	f.st.Unlock(f.st.NumShards() - 1)
	require.ErrorIs(t, <-done, errMixed)
	require.NoError(t, f.m.rewrite(f.m.ctx, f.m.AOF(), false), "a retry without interference succeeds")
	f.exec(t, "APPEND", first, "z")
	want := f.contents()
	require.Equal(t, map[string]string{first: `"z"@0`}, want)
	g := restart(t, f, cfg)
	require.Equal(t, want, g.contents())
}

// A FLUSHALL that runs in the middle of a capture, between the shards
// captured before it and those after, goes to the snapshot's tail with
// every record after it: replayed after the keys, it empties the shards
// captured before it and the records after it fill them all again.
// Before, such a snapshot failed and was retried, and with FLUSHALL in a
// steady stream of transactions every try could fail
// (TestTransactionsOfEveryKindDuringSnapshots, about 2 runs in 100).
func TestFlushallDuringTheCapture(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	f := newFakeServer(newClock())
	require.NoError(t, f.open(t, cfg))
	first, last := edgeKeys(f)
	// flushDuring runs snapshot while the last shard is held, so that its
	// capture takes every other shard and waits; meanwhile FLUSHALL and
	// writes after it run, the last shard's before its capture (as if
	// they held their locks: the test holds the last shard's).
	flushDuring := func(f *fakeServer, snapshot func() error) {
		f.exec(t, "APPEND", first, "x")
		f.exec(t, "APPEND", last, "y")
		f.exec(t, "APPEND", "other", "o")
		lastShard := f.st.NumShards() - 1
		f.st.Lock(lastShard)
		done := make(chan error, 1)
		go func() { done <- snapshot() }()
		captureBegun(t, f)
		time.Sleep(20 * time.Millisecond) // it reaches the last shard
		for i := 0; i < lastShard; i++ {
			f.st.Lock(i)
		}
		for _, r := range [][]string{{"FLUSHALL"}, {"APPEND", last, "z"}, {"APPEND", first, "w"}} {
			b := make([][]byte, len(r))
			for i, a := range r {
				b[i] = []byte(a)
			}
			require.NoError(t, f.apply(b))
			f.m.AOF().Append(rec(r...))
		}
		for i := 0; i <= lastShard; i++ {
			f.st.Unlock(i)
		}
		require.NoError(t, <-done)
		f.exec(t, "APPEND", first, "q")
		f.exec(t, "APPEND", last, "r")
		require.Equal(t, map[string]string{first: `"wq"@0`, last: `"zr"@0`}, f.contents())
	}

	// A rewrite: the new base and the log after it.
	flushDuring(f, func() error { return f.m.rewriteOnce(f.m.ctx, f.m.AOF(), false) })
	want := f.contents()
	g := restart(t, f, cfg)
	require.Equal(t, want, g.contents())

	// BGSAVE: its dump file, loaded alone.
	g.exec(t, "FLUSHALL")
	flushDuring(g, func() error { return g.m.saveDump(g.m.ctx, true) })
	require.NoError(t, g.m.Close())
	h := newFakeServer(g.clock)
	require.NoError(t, h.open(t, testConfig(t, cfg.String(config.Dir), "appendonly", "no")))
	t.Cleanup(func() { h.m.Close() })
	require.Equal(t, map[string]string{first: `"w"@0`, last: `"z"@0`}, h.contents(), "the dump holds the state when its capture ended")
}

// A FLUSHALL in the middle of a BGSAVE's capture may go to the dump's
// tail with the records after it only while every write is journaled: once
// appendonly is switched off, the writes to the shards still to capture are
// in their keys and in no record, and a FLUSHALL replayed after those keys
// lost them. The dump holds the state when its capture ended.
func TestFlushallDuringTheCaptureThenAppendonlyOff(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), "appendonly", "yes")
	f := newFakeServer(newClock())
	require.NoError(t, f.open(t, cfg))
	t.Cleanup(func() { f.m.Close() })
	first, last := edgeKeys(f)
	f.exec(t, "APPEND", first, "x")
	f.exec(t, "APPEND", last, "y")
	// The capture takes every shard but the last, held here.
	lastShard := f.st.NumShards() - 1
	f.st.Lock(lastShard)
	done := make(chan error, 1)
	go func() { done <- f.m.saveDump(f.m.ctx, true) }()
	captureBegun(t, f)
	time.Sleep(20 * time.Millisecond) // it reaches the last shard
	// FLUSHALL, journaled, between the captures of the first shard and
	// the last (which the test holds, as FLUSHALL would).
	for i := 0; i < lastShard; i++ {
		f.st.Lock(i)
	}
	require.NoError(t, f.apply([][]byte{[]byte("FLUSHALL")}))
	f.m.AOF().Append(rec("FLUSHALL"))
	for i := 0; i < lastShard; i++ {
		f.st.Unlock(i)
	}
	// appendonly no; then a write to the last shard, before its capture,
	// which nothing journals.
	require.NoError(t, f.m.SetAppendOnly(false, Hooks{Attach: func(*AOF) {}, Drain: func() {}}))
	require.Nil(t, f.m.AOF())
	require.NoError(t, f.apply([][]byte{[]byte("APPEND"), []byte(last), []byte("z")}))
	f.st.Unlock(lastShard)
	require.NoError(t, <-done)
	want := f.contents()
	require.Equal(t, map[string]string{last: `"z"@0`}, want)

	require.NoError(t, f.m.Close())
	g := newFakeServer(f.clock)
	require.NoError(t, g.open(t, testConfig(t, cfg.String(config.Dir), "appendonly", "no")))
	t.Cleanup(func() { g.m.Close() })
	require.Equal(t, want, g.contents(), "the dump holds the state when its capture ended")
}

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

// A key whose deadline the capture's clock has reached, but that a write
// still found live, is in the snapshot: the capture used to leave out the
// keys expired at its own reading of the clock, while the records it keeps
// after the keys come from commands whose reading can be older (taken
// before they locked the shard, or before a recalibration of the wall
// clock moved it back). Such a record then replayed without its key: a
// verbatim write (APPEND here, ZADD in resp) recreated the key without its
// deadline, an EXPIRE found nothing and the key was lost. The store's
// clock here is the capture's; the commands read their own, a millisecond
// behind it.
func TestCaptureKeepsKeysAWriteStillFoundLive(t *testing.T) {
	cmdClock, captureClock := newClock(), newClock()
	cfg := testConfig(t, t.TempDir())
	f := &fakeServer{st: shards.New(shards.Options{Shards: 8, Now: captureClock.Load}), clock: cmdClock}
	require.NoError(t, f.open(t, cfg))
	var key string // in the first shard, captured before the stalled last one
	for i := 0; key == ""; i++ {
		if k := fmt.Sprint("key", i); f.st.ShardIndex([]byte(k)) == 0 {
			key = k
		}
	}
	deadline := cmdClock.Load()/1e6 + 1000
	f.exec(t, "SET", key, "v", "PXAT", strconv.FormatInt(deadline, 10))
	cmdClock.Store((deadline - 1) * 1e6)
	captureClock.Store(deadline * 1e6)
	done := stallRewrite(t, f)
	f.exec(t, "APPEND", key, "x") // on the live key, before or after its shard's capture
	f.st.Unlock(f.st.NumShards() - 1)
	require.NoError(t, <-done)
	want := map[string]string{key: fmt.Sprintf(`"vx"@%d`, deadline)}
	require.Equal(t, want, f.contents())
	g := restart(t, f, cfg)
	require.Equal(t, want, g.contents())
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

// stallRewrite holds the last shard's lock, so that a capture stops
// before it, and starts rewriteOnce; it returns once the capture has begun
// (after the rewrite's next file is created and named), with the channel
// the rewrite's result arrives on. The caller unlocks the shard.
func stallRewrite(t *testing.T, f *fakeServer) <-chan error {
	t.Helper()
	f.st.Lock(f.st.NumShards() - 1)
	done := make(chan error, 1)
	go func() { done <- f.m.rewriteOnce(f.m.ctx, f.m.AOF(), false) }()
	captureBegun(t, f)
	return done
}

// captureBegun waits until f's journal copies records for a capture.
func captureBegun(t *testing.T, f *fakeServer) {
	t.Helper()
	require.Eventually(t, func() bool {
		l := f.m.AOF()
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.captures) > 0
	}, 10*time.Second, time.Millisecond, "the capture begins")
}

// edgeKeys returns a key of f's first shard and one of its last.
func edgeKeys(f *fakeServer) (first, last string) {
	for i := 0; first == "" || last == ""; i++ {
		k := fmt.Sprint("key", i)
		switch f.st.ShardIndex([]byte(k)) {
		case 0:
			first = k
		case f.st.NumShards() - 1:
			last = k
		}
	}
	return first, last
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
// manifest and what to do, and deletes nothing: it first removed every
// file the manifest did not name as a leftover of a rewrite, that is the
// whole log, and then refused.
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

func TestManifestParse(t *testing.T) {
	for i, tt := range []struct {
		in   string
		want string // re-encoded, or the error
	}{
		{"file a.1.base.rkv seq 1 type b\nfile a.1.incr.aof seq 1 type i\n", "file a.1.base.rkv seq 1 type b\nfile a.1.incr.aof seq 1 type i\n"},
		{"seq 2 type i file a.2.incr.aof\n\n", "file a.2.incr.aof seq 2 type i\n"},
		{"file ../x seq 1 type i", "bad file name"},
		{"file a seq 0 type i", "bad seq"},
		{"file a seq 1 type x", "unknown file type"},
		{"file a seq 1 type b\nfile b seq 2 type b", "second base"},
		{"file a seq 1 type", "odd number"},
		{"file a.2.incr.aof seq 2 type i\nfile a.1.incr.aof seq 1 type i", "not above the 2 of a.2.incr.aof"},
		{"file a.1.incr.aof seq 1 type i\nfile a.2.incr.aof seq 1 type i", "not above the 1"},
		{"file a.1.incr.aof seq 1 type i\nfile a.1.incr.aof seq 2 type i", "listed twice"},
		{"file a.1.base.rkv seq 1 type b\nfile a.1.base.rkv seq 1 type i", "listed twice"},
		{`file "a b.1.incr.aof" seq 1 type i`, "file \"a b.1.incr.aof\" seq 1 type i\n"},
		{`file "a\tb\"c.1.incr.aof" seq 1 type i`, "file \"a\\tb\\\"c.1.incr.aof\" seq 1 type i\n"},
		{"file 'a'.1.incr.aof seq 1 type i", "file 'a'.1.incr.aof seq 1 type i\n"},
		{`file "a.1.incr.aof seq 1 type i`, "file \"\\\"a.1.incr.aof\" seq 1 type i\n"}, // not a quoted string: a name as it is
		{`file "a b.1.incr.aof seq 1 type i`, "odd number"},
	} {
		m, err := parseManifest([]byte(tt.in))
		if err != nil {
			require.ErrorContains(t, err, tt.want, "step %d", i)
			continue
		}
		require.Equal(t, tt.want, string(m.encode()), "step %d", i)
	}
}

// An appendfilename with a space (which the configuration accepts, as
// Redis's does) named files the manifest listed unquoted: the words of a
// line no longer paired up, and every start after the first refused with
// "odd number of words". The manifest quotes such names, as Redis's does.
func TestAppendfilenameWithSpaces(t *testing.T) {
	for _, name := range []string{"my log.aof", "tab\tlog.aof", `quo"te.aof`, "new\nline.aof"} {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig(t, t.TempDir(), "appendfilename", name)
			f := newFakeServer(newClock())
			require.NoError(t, f.open(t, cfg))
			f.exec(t, "APPEND", "k", "1")
			g := restart(t, f, cfg)
			require.Equal(t, map[string]string{"k": `"1"@0`}, g.contents())
			require.NoError(t, g.m.rewrite(g.m.ctx, g.m.AOF(), false))
			g.exec(t, "APPEND", "k", "2")
			h := restart(t, g, cfg)
			require.Equal(t, map[string]string{"k": `"12"@0`}, h.contents())
			require.Equal(t, name+".2.base.rkv", h.m.man.base.name)
		})
	}
}

// FuzzManifestNames: any file name the manifest accepts comes back the
// same from what it writes.
func FuzzManifestNames(f *testing.F) {
	for _, s := range []string{"appendonly.aof.1.incr.aof", "a b", "a\tb", `"a"`, "'a'", "\"", "a\nb", "\xff\xfe", "a\u00a0b", "#a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if name == "" {
			return // the configuration refuses it (config.fileName)
		}
		in := manifest{base: &manifestFile{name, 1}, incrs: []manifestFile{{name + ".i", 2}}}
		out, err := parseManifest(in.encode())
		if err != nil {
			if strings.Contains(err.Error(), "bad file name") {
				return // a name no configuration allows
			}
			t.Fatalf("%q: %v\n%s", name, err, in.encode())
		}
		require.Equal(t, in, out, "%q", name)
	})
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
// rewrite fails, but keeps every file either names. It removed the files
// the manifest on disk named (the new base, or the new incremental file),
// and the next start lost data or refused to start.
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
// succeeds, once its manifest is durable: they were left until the next
// start, and a server that stays up kept an old base and log (as large as
// the data) for as long as it ran, one more set per such failure.
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

// A save rule's seconds past what a Duration holds never come due (they
// wrapped negative and were due on every tick).
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
// later file's bytes kept on disk (in its aside copy). Before, a crash
// after the cut replayed the later file on top of the cut one, and a crash
// after the later file was renamed made the next start refuse, naming it.
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
