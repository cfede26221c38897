package persist

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/shards"
	"github.com/stretchr/testify/require"
)

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
// Failed and retried instead, such a snapshot could fail every try under
// a steady stream of transactions with FLUSHALL.
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

// A record that touches no key (a replica's REPLSTATE) in the middle of a
// capture, between shards captured on both sides of it, is left out of
// the snapshot instead of failing it: under a replica's steady stream of
// them every retry could fail too.
func TestKeylessRecordDuringTheCapture(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	f := newFakeServer(newClock())
	require.NoError(t, f.open(t, cfg))
	first, last := edgeKeys(f)
	f.exec(t, "APPEND", first, "x")
	f.exec(t, "APPEND", last, "y")
	done := stallRewrite(t, f)
	time.Sleep(20 * time.Millisecond) // it reaches the last shard
	f.m.AOF().Append(rec("MARK"))
	f.st.Unlock(f.st.NumShards() - 1)
	require.NoError(t, <-done)
	want := f.contents()
	g := restart(t, f, cfg)
	require.Equal(t, want, g.contents())
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

// A key whose deadline the capture's clock has reached, but that a write
// still found live, is in the snapshot: the records the capture keeps
// after the keys come from commands whose reading of the clock can be
// older (taken before they locked the shard, or before a recalibration of
// the wall clock moved it back). Replayed without its key, such a record
// would lose it: a verbatim write (APPEND here, or ZADD) would recreate
// the key without its deadline, an EXPIRE would find nothing. The store's
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
