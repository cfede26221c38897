package resp

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestUnwatchQueuedInMulti: UNWATCH queued in a transaction runs inside
// EXEC, which holds the shards of the watched keys; it locked them again
// to unwatch, and the connection hung with the shards locked for good
// (every later command on them waited). EXEC unwatches as it ends.
func TestUnwatchQueuedInMulti(t *testing.T) {
	s := newSocketless(t, &fakeClock{}, nil)
	send := s.send
	require.Equal(t, "+OK\r\n", send("WATCH", "k", "other"))
	require.Equal(t, "+OK\r\n", send("MULTI"))
	require.Equal(t, "+QUEUED\r\n", send("SET", "k", "v"))
	require.Equal(t, "+QUEUED\r\n", send("UNWATCH"))
	done := make(chan string, 1)
	go func() { done <- send("EXEC") }()
	select {
	case r := <-done:
		require.Equal(t, "*2\r\n+OK\r\n+OK\r\n", r)
	case <-time.After(5 * time.Second):
		t.Fatal("EXEC with a queued UNWATCH hung")
	}
	require.Empty(t, s.c.watching)
	require.Equal(t, "$1\r\nv\r\n", send("GET", "k"))
}

// TestWatchManyKeys: WATCH compared each key with every key the
// connection already watched, so a WATCH of n keys took n²/2 comparisons
// with every shard of its keys locked: 100,000 keys kept the whole
// keyspace locked for some 14 s. It now takes a fraction of a second, and
// a key named again, in the same WATCH or a later one, is still watched
// once.
func TestWatchManyKeys(t *testing.T) {
	s := newSocketless(t, &fakeClock{}, nil)
	const n = 100_000
	args := make([]string, 0, n+2)
	args = append(args, "WATCH")
	for i := range n {
		args = append(args, "k"+strconv.Itoa(i))
	}
	args = append(args, "k0") // named twice
	done := make(chan string, 1)
	go func() {
		r := s.send(args...)
		done <- r + s.send(args...) // every key again
	}()
	select {
	case r := <-done:
		require.Equal(t, "+OK\r\n+OK\r\n", r)
	case <-time.After(5 * time.Second):
		t.Fatalf("WATCH of %d keys, twice, took over 5 s", n)
	}
	require.Len(t, s.c.watching, n)
	require.Equal(t, "+OK\r\n", s.send("MULTI"))
	require.Equal(t, "+QUEUED\r\n", s.send("GET", "k1"))
	require.Equal(t, "*1\r\n$-1\r\n", s.send("EXEC"))
	require.Empty(t, s.c.watching)
}
