package command

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestUnwatchQueuedInMulti: UNWATCH queued in a transaction runs inside
// EXEC, which holds the shards of the watched keys, without locking them
// again (which would hang the connection with the shards locked for
// good). EXEC unwatches as it ends.
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

// TestWatchManyKeys: a WATCH of 100,000 keys does not compare each key
// with every key already watched (n²/2 comparisons with every shard of its
// keys locked): it takes a fraction of a second, and a key named again,
// in the same WATCH or a later one, is still watched once.
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

// TestReplyBound: MGET and EXEC build their whole reply in memory, so a
// few bytes of request (MGET naming one big value thousands of times, or a
// transaction of as many GETs of it) could take any amount of the
// server's memory. Past maxReplyBytes (512 MB; 1 MB here) MGET answers an
// error, and EXEC runs the whole transaction but answers an error in
// place of its replies; the connection goes on.
func TestReplyBound(t *testing.T) {
	old := maxReplyBytes
	t.Cleanup(func() { maxReplyBytes = old })
	maxReplyBytes = 1 << 20
	val := strings.Repeat("v", 300<<10)
	bulk := fmt.Sprintf("$%d\r\n%s\r\n", len(val), val)
	for _, loop := range []string{"yes", "no"} {
		r := newTestServer(t, "event-loop", loop).raw(t)
		require.Equal(t, "+OK\r\n", r.do("SET", "v", val))
		require.Equal(t, "*3\r\n"+bulk+bulk+bulk, r.do("MGET", "v", "v", "v"), loop)
		require.Equal(t, "-ERR MGET reply too large (over 1 MB): ask for fewer keys\r\n", r.do("MGET", "v", "v", "v", "v"), loop)

		require.Equal(t, "+OK\r\n", r.do("MULTI"))
		for _, cmd := range [][]string{{"SET", "k", "x"}, {"GET", "v"}, {"GET", "v"}, {"GET", "v"}, {"GET", "v"}, {"INCR", "n"}} {
			require.Equal(t, "+QUEUED\r\n", r.do(cmd...))
		}
		require.Equal(t, "-ERR EXEC reply too large (over 1 MB): the transaction ran, its replies are dropped\r\n", r.do("EXEC"), loop)
		require.Equal(t, "$1\r\nx\r\n", r.do("GET", "k"), "the transaction ran whole")
		require.Equal(t, "$1\r\n1\r\n", r.do("GET", "n"), "the transaction ran whole")
	}
}

// TestWatchSameDeadline: an EXPIRE or GETEX that sets a key's deadline to
// the one it already has still replies 1 (or the value) and is still a
// change, as in Redis (expireGenericCommand and getexCommand call
// setExpire and signalModifiedKey whatever the old deadline): it aborts
// a transaction that WATCHes the key, and counts in
// rdb_changes_since_last_save. The clock is frozen, so the relative forms
// land on the same deadline too.
func TestWatchSameDeadline(t *testing.T) {
	ts := newTestServer(t)
	r, other := ts.raw(t), ts.raw(t)
	at := strconv.FormatInt(time.Unix(0, ts.clock.Now()).Add(time.Hour).Unix(), 10)
	for i, tt := range []struct {
		set, again []string // set makes the deadline; again sets the same one
		reply      string   // again's reply
	}{
		0: {a("EXPIREAT", "k", at), a("EXPIREAT", "k", at), ":1\r\n"},
		1: {a("PEXPIREAT", "k", at+"000"), a("PEXPIREAT", "k", at+"000", "XX"), ":1\r\n"},
		2: {a("EXPIRE", "k", "100"), a("EXPIRE", "k", "100"), ":1\r\n"},
		3: {a("PEXPIRE", "k", "100000"), a("EXPIRE", "k", "100", "XX"), ":1\r\n"},
		4: {a("EXPIREAT", "k", at), a("GETEX", "k", "EXAT", at), "$1\r\nv\r\n"},
		5: {a("EXPIREAT", "k", at), a("GETEX", "k", "PXAT", at+"000"), "$1\r\nv\r\n"},
		6: {a("EXPIRE", "k", "100"), a("GETEX", "k", "EX", "100"), "$1\r\nv\r\n"},
	} {
		require.Equal(t, "+OK\r\n", r.do("SET", "k", "v"), "step %d", i)
		require.Equal(t, ":1\r\n", r.do(tt.set...), "step %d", i)
		require.Equal(t, "+OK\r\n", r.do("WATCH", "k"), "step %d", i)
		dirty := ts.store.Dirty()
		require.Equal(t, tt.reply, other.do(tt.again...), "step %d", i)
		require.Equal(t, dirty+1, ts.store.Dirty(), "step %d: %q is one change", i, tt.again)
		require.Equal(t, "+OK\r\n", r.do("MULTI"), "step %d", i)
		require.Equal(t, "+QUEUED\r\n", r.do("GET", "k"), "step %d", i)
		require.Equal(t, "*-1\r\n", r.do("EXEC"), "step %d: %q aborts a WATCH of the key", i, tt.again)
	}
}

// TestSubcommandErrorsAbortMulti: a container command (CLIENT, COMMAND,
// CONFIG, CLUSTER, MEMORY) with an unknown subcommand or the wrong number
// of arguments for its subcommand is refused when it arrives, as Redis's
// processCommand refuses it (commandCheckExistence, commandCheckArity,
// then rejectCommand, which flags the transaction): inside MULTI it is not
// queued and EXEC aborts. The replies are redis-server 7.0.15's.
func TestSubcommandErrorsAbortMulti(t *testing.T) {
	r := newTestServer(t).raw(t)
	for i, tt := range []struct {
		args []string
		want string
	}{
		0:  {a("CLIENT", "FOO"), "-ERR unknown subcommand 'FOO'. Try CLIENT HELP.\r\n"},
		1:  {a("CLIENT", "KILL"), "-ERR wrong number of arguments for 'client|kill' command\r\n"},
		2:  {a("CLIENT", "ID", "x"), "-ERR wrong number of arguments for 'client|id' command\r\n"},
		3:  {a("CONFIG", "Foo"), "-ERR unknown subcommand 'Foo'. Try CONFIG HELP.\r\n"},
		4:  {a("CONFIG", "GET"), "-ERR wrong number of arguments for 'config|get' command\r\n"},
		5:  {a("config", "set", "a"), "-ERR wrong number of arguments for 'config|set' command\r\n"},
		6:  {a("COMMAND", "FOO"), "-ERR unknown subcommand 'FOO'. Try COMMAND HELP.\r\n"},
		7:  {a("COMMAND", "COUNT", "x"), "-ERR wrong number of arguments for 'command|count' command\r\n"},
		8:  {a("COMMAND", "GETKEYS"), "-ERR wrong number of arguments for 'command|getkeys' command\r\n"},
		9:  {a("MEMORY", "FOO"), "-ERR unknown subcommand 'FOO'. Try MEMORY HELP.\r\n"},
		10: {a("CLUSTER", "KEYSLOT"), "-ERR wrong number of arguments for 'cluster|keyslot' command\r\n"},
	} {
		require.Equal(t, tt.want, r.do(tt.args...), "step %d: %q", i, tt.args)
		require.Equal(t, "+OK\r\n", r.do("MULTI"), "step %d", i)
		require.Equal(t, "+QUEUED\r\n", r.do("SET", "k", strconv.Itoa(i)), "step %d", i)
		require.Equal(t, tt.want, r.do(tt.args...), "step %d: %q in MULTI", i, tt.args)
		require.Equal(t, "-EXECABORT Transaction discarded because of previous errors.\r\n", r.do("EXEC"), "step %d", i)
		require.Equal(t, "$-1\r\n", r.do("GET", "k"), "step %d: the transaction did not run", i)
	}
	// A valid subcommand is queued and runs inside EXEC.
	require.Equal(t, "+OK\r\n", r.do("MULTI"))
	require.Equal(t, "+QUEUED\r\n", r.do("CLUSTER", "KEYSLOT", "foo"))
	require.Equal(t, "*1\r\n:12182\r\n", r.do("EXEC"))
}
