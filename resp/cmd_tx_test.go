package resp

import (
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
