package resp

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
// captured the shard before it ran. Loaded before the lock, it was not.
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
	require.NoError(t, s.c.syncJournal()) // the end of its batch
	require.Len(t, j.recs, 1)
	s.srv.SetJournal(nil)
	w := weak.Make(j)
	j = nil
	runtime.GC()
	runtime.GC()
	require.Nil(t, w.Value(), "the idle connection still holds the detached journal")
	runtime.KeepAlive(s.c)
}
