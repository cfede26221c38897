package command

import (
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/stretchr/testify/require"
)

// A write command loads the journal once its shards are locked: one that
// waits for its shard while the journal is attached (CONFIG SET appendonly
// yes) is journaled, since the snapshot that the switch starts may have
// captured the shard before it ran (loaded before the lock, it would not
// be).
func TestJournalAttachedWhileAWriteWaitsForItsShard(t *testing.T) {
	s := newSocketless(t, newFakeClock(), nil)
	shard := s.store.ShardIndex([]byte("k"))
	s.store.Lock(shard)
	done := make(chan string)
	go func() { done <- s.do(t, "SET", "k", "v") }()
	time.Sleep(20 * time.Millisecond) // let it reach the lock
	j := &recordingJournal{}
	s.srv.SetJournal(j)
	s.store.Unlock(shard)
	require.Equal(t, "+OK\r\n", <-done)
	require.Len(t, j.recs, 1, "the write that ran after the attachment is journaled")
	require.Equal(t, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n", string(j.recs[0]))
}

// Once the journal is detached, drainJournal returns only after every
// shard held (by a command that may have loaded the journal and not yet
// appended to it) was released; writes after the detachment log nothing.
func TestDrainJournalWaitsForHeldShards(t *testing.T) {
	j := &recordingJournal{}
	s := newSocketless(t, newFakeClock(), j)
	shard := s.store.NumShards() - 1
	s.store.Lock(shard) // as a command that loaded j holds it until it appended
	s.srv.SetJournal(nil)
	drained := make(chan struct{})
	go func() {
		s.srv.drainJournal()
		close(drained)
	}()
	select {
	case <-drained:
		t.Fatal("drainJournal returned while a shard was held")
	case <-time.After(20 * time.Millisecond):
	}
	s.store.Unlock(shard)
	select {
	case <-drained:
	case <-time.After(5 * time.Second):
		t.Fatal("drainJournal did not return once the shard was released")
	}
	require.Equal(t, "+OK\r\n", s.do(t, "SET", "k", "v"))
	require.Empty(t, j.recs, "detached: nothing journaled")
}

// A connection keeps no journal that was detached (CONFIG SET appendonly
// no): once its batch is settled, the closed log, with its buffers, can be
// collected, however long the connection then stays idle.
func TestDetachedJournalNotKeptByAnIdleConnection(t *testing.T) {
	s := newSocketless(t, newFakeClock(), nil)
	j := &recordingJournal{}
	s.srv.SetJournal(j)
	require.Equal(t, "+OK\r\n", s.do(t, "SET", "k", "v"))
	require.NoError(t, s.c.SyncJournal()) // the end of its batch
	require.Len(t, j.recs, 1)
	s.srv.SetJournal(nil)
	w := weak.Make(j)
	j = nil
	runtime.GC()
	runtime.GC()
	require.Nil(t, w.Value(), "the idle connection still holds the detached journal")
	runtime.KeepAlive(s.c)
}

// CONFIG SET appendonly no replies once the log is closed, also when
// another client's switch off is still closing it: that one has detached
// the log (AppendOnly reports off) and waits for a shard here. The second
// switch must not reply OK while the log is still open and its last
// records not yet fsynced.
func TestAppendonlyOffRepliesOnceTheLogIsClosed(t *testing.T) {
	ps := startPersistServer(t, t.TempDir(), newFakeClock(), "appendonly", "yes", "event-loop", "no")
	a, b := ps.client(t, 2), ps.client(t, 2)
	require.NoError(t, a.Set(ctx, "k", "v", 0).Err())
	ps.store.Lock(0) // as a write command that loaded the log holds it
	locked := true
	defer func() {
		if locked {
			ps.store.Unlock(0)
		}
	}()
	first := make(chan error, 1)
	go func() { first <- a.ConfigSet(ctx, "appendonly", "no").Err() }()
	require.Eventually(t, func() bool { return !ps.mgr.AppendOnly() }, 5*time.Second, time.Millisecond,
		"the first switch detached the log")
	second := make(chan error, 1)
	go func() { second <- b.ConfigSet(ctx, "appendonly", "no").Err() }()
	select {
	case err := <-second:
		t.Fatalf("the second CONFIG SET appendonly no replied (%v) while the first was still closing the log", err)
	case <-time.After(100 * time.Millisecond):
	}
	ps.store.Unlock(0)
	locked = false
	require.NoError(t, <-first)
	require.NoError(t, <-second)
}
