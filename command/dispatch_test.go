package command

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func init() {
	// test.panic exists only in the test binary: it proves a handler panic
	// is contained to its connection.
	register(&Command{Name: "test.panic", Arity: 2, Flags: FlagWrite, FirstKey: 1, LastKey: 1, Step: 1,
		Handler: func(c *Client, args [][]byte) { panic("boom") }})
}

func TestConnBasics(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	tests := []struct {
		send, want string
	}{
		{"*1\r\n$4\r\nPING\r\n", "+PONG\r\n"},
		{"PING\r\n", "+PONG\r\n"},
		{"ping hello\r\n", "$5\r\nhello\r\n"},
		{"*3\r\n$4\r\nPING\r\n$1\r\na\r\n$1\r\nb\r\n", "-ERR wrong number of arguments for 'ping' command\r\n"},
		{"*2\r\n$3\r\nfoo\r\n$1\r\na\r\n", "-ERR unknown command 'foo', with args beginning with: 'a' \r\n"},
		{"foo a b\r\n", "-ERR unknown command 'foo', with args beginning with: 'a' 'b' \r\n"},
		{"foo\r\n", "-ERR unknown command 'foo', with args beginning with: \r\n"},
		{"*1\r\n$3\r\nGET\r\n", "-ERR wrong number of arguments for 'get' command\r\n"},
		{"echo \"a b\"\r\n", "$3\r\na b\r\n"},
		{"SELECT 0\r\n", "+OK\r\n"},
		{"SELECT 1\r\n", "-ERR DB index is out of range\r\n"},
		{"SELECT x\r\n", "-ERR value is not an integer or out of range\r\n"},
		{"READONLY\r\n", "+OK\r\n"},
		{"CLIENT SETNAME my-app\r\n", "+OK\r\n"},
		{"CLIENT GETNAME\r\n", "$6\r\nmy-app\r\n"},
		{"CLIENT SETNAME \"a b\"\r\n", "-ERR Client names cannot contain spaces, newlines or special characters.\r\n"},
		{"CLIENT SETINFO lib-name go-redis\r\n", "+OK\r\n"},
		{"CLIENT NO-EVICT on\r\n", "+OK\r\n"},
		{"CLIENT FOO\r\n", "-ERR unknown subcommand 'FOO'. Try CLIENT HELP.\r\n"},
		{"HELLO 4\r\n", "-NOPROTO unsupported protocol version\r\n"},
		{"AUTH x\r\n", "-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?\r\n"},
		{"AUTH default x\r\n", "+OK\r\n"},
	}
	for i, tt := range tests {
		if got := r.send(tt.send); got != tt.want {
			t.Errorf("step %d (%q): have %q, want %q", i, tt.send, got, tt.want)
		}
	}
	// A pipeline of many commands in one write gets every reply in order.
	var b strings.Builder
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&b, "ECHO %d\r\n", i)
	}
	r.nc.Write([]byte(b.String()))
	for i := 0; i < 1000; i++ {
		want := fmt.Sprintf("$%d\r\n%d\r\n", len(fmt.Sprint(i)), i)
		require.Equal(t, want, r.reply(), "pipelined reply %d", i)
	}
	// QUIT answers +OK and closes.
	require.Equal(t, "+OK\r\n", r.send("QUIT\r\n"))
	_, err := r.rd.ReadByte()
	require.ErrorIs(t, err, io.EOF)
}

func TestHelloRESP3(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	got := r.send("HELLO 3\r\n")
	require.True(t, strings.HasPrefix(got, "%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n"), got)
	require.Contains(t, got, "$5\r\nproto\r\n:3\r\n")
	require.Contains(t, got, "$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n")
	require.Equal(t, "_\r\n", r.send("CLIENT GETNAME\r\n"))
	got = r.send("HELLO 2 SETNAME n1\r\n")
	require.True(t, strings.HasPrefix(got, "*14\r\n"), got)
	require.Equal(t, "$-1\r\n", r.send("*2\r\n$3\r\nGET\r\n$7\r\nmissing\r\n"))
	require.Equal(t, "$2\r\nn1\r\n", r.send("CLIENT GETNAME\r\n"))
	require.Equal(t, "-ERR Syntax error in HELLO option 'bogus'\r\n", r.send("HELLO 3 bogus\r\n"))
	require.Equal(t, "+RESET\r\n", r.send("RESET\r\n"))
	require.Equal(t, "$-1\r\n", r.send("CLIENT GETNAME\r\n"))
}

func TestAuth(t *testing.T) {
	ts := newTestServer(t, "requirepass", "s3cret")
	r := ts.raw(t)
	tests := []struct{ send, want string }{
		{"PING\r\n", "-NOAUTH Authentication required.\r\n"},
		{"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", "-NOAUTH Authentication required.\r\n"},
		{"MULTI\r\n", "-NOAUTH Authentication required.\r\n"},
		// As redis-server 7.0.15: EXEC refused is an aborted transaction.
		{"EXEC\r\n", "-EXECABORT Transaction discarded because of: NOAUTH Authentication required.\r\n"},
		{"AUTH wrong\r\n", "-WRONGPASS invalid username-password pair or user is disabled.\r\n"},
		{"AUTH someone s3cret\r\n", "-WRONGPASS invalid username-password pair or user is disabled.\r\n"},
		{"HELLO 3\r\n", "-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time\r\n"},
		{"AUTH s3cret\r\n", "+OK\r\n"},
		{"PING\r\n", "+PONG\r\n"},
		{"RESET\r\n", "+RESET\r\n"},
		{"PING\r\n", "-NOAUTH Authentication required.\r\n"},
		{"AUTH default s3cret\r\n", "+OK\r\n"},
	}
	for i, tt := range tests {
		if got := r.send(tt.send); got != tt.want {
			t.Errorf("step %d (%q): have %q, want %q", i, tt.send, got, tt.want)
		}
	}
	r2 := ts.raw(t)
	got := r2.send("HELLO 3 AUTH default s3cret\r\n")
	require.True(t, strings.HasPrefix(got, "%7\r\n"), got)

	// go-redis authenticates with HELLO ... AUTH.
	c := ts.client(t, 3)
	c.Options().Password = "s3cret"
	require.NoError(t, c.Ping(ctx).Err())

	// An unauthenticated client cannot make the server buffer a big request.
	r3 := ts.raw(t)
	require.Equal(t, "-ERR Protocol error: unauthenticated multibulk length\r\n", r3.send("*100\r\n"))
}

// TestAuthContainerSubcommands: before AUTH, a container command's
// subcommand is checked for existence and arity, and refused with Redis's
// error, as Redis's processCommand does (commandCheckExistence and
// commandCheckArity come before the authentication check); a subcommand
// that exists, with its arity right, is refused with NOAUTH and does not
// run: CONFIG SET requirepass "" leaves the password, CONFIG GET does not
// show it. The replies are redis-server 7.0.15's with requirepass set.
func TestAuthContainerSubcommands(t *testing.T) {
	r := newTestServer(t, "requirepass", "s3cret").raw(t)
	const noAuth = "-NOAUTH Authentication required.\r\n"
	for i, tt := range []struct {
		args []string
		want string
	}{
		0:  {a("CLIENT", "FOO"), "-ERR unknown subcommand 'FOO'. Try CLIENT HELP.\r\n"},
		1:  {a("CLIENT", "KILL"), "-ERR wrong number of arguments for 'client|kill' command\r\n"},
		2:  {a("CONFIG", "GET"), "-ERR wrong number of arguments for 'config|get' command\r\n"},
		3:  {a("CONFIG", "SET", "requirepass"), "-ERR wrong number of arguments for 'config|set' command\r\n"},
		4:  {a("CONFIG", "GET", "requirepass"), noAuth},
		5:  {a("CONFIG", "SET", "requirepass", ""), noAuth},
		6:  {a("CLIENT", "LIST"), noAuth},
		7:  {a("CLIENT", "KILL", "ID", "1"), noAuth},
		8:  {a("CLIENT", "ID"), noAuth},
		9:  {a("MEMORY", "PURGE"), noAuth},
		10: {a("CONFIG", "HELP"), noAuth},
		11: {a("AUTH", "s3cret"), "+OK\r\n"},
		12: {a("CONFIG", "GET", "requirepass"), "*2\r\n$11\r\nrequirepass\r\n$6\r\ns3cret\r\n"},
	} {
		require.Equal(t, tt.want, r.do(tt.args...), "step %d: %q", i, tt.args)
	}
}

// A transaction's queue is bounded like the query buffer: a client that
// queues past client-query-buffer-limit gets an error and is closed, and
// nothing it queued runs, even an EXEC sent behind in the same write, so
// that MULTI followed by writes without EXEC cannot grow the server
// without end.
func TestMultiQueueLimit(t *testing.T) {
	for _, mode := range []string{"yes", "no"} {
		t.Run("event-loop "+mode, func(t *testing.T) {
			ts := newTestServer(t, "client-query-buffer-limit", "64kb", "event-loop", mode)
			other := ts.raw(t)
			require.Equal(t, "+OK\r\n", other.do("SET", "kept", "v"))
			val := strings.Repeat("x", 1000)
			// Under the limit, a transaction runs as usual.
			ok := ts.raw(t)
			require.Equal(t, "+OK\r\n", ok.do("MULTI"))
			for i := 0; i < 30; i++ {
				require.Equal(t, "+QUEUED\r\n", ok.do("SET", fmt.Sprint("ok", i), val))
			}
			require.True(t, strings.HasPrefix(ok.do("EXEC"), "*30\r\n"))
			require.Equal(t, "$1000\r\n"+val+"\r\n", other.do("GET", "ok29"))

			bad := ts.raw(t)
			bad.nc.SetDeadline(time.Now().Add(10 * time.Second))
			require.Equal(t, "+OK\r\n", bad.do("MULTI"))
			var sent int
			for sent = 0; sent < 100; sent++ {
				if r := bad.do("SET", fmt.Sprint("k", sent), val); r != "+QUEUED\r\n" {
					require.Equal(t, "-"+sprintf(errMultiQueueLimit, 64<<10)+"\r\n", r)
					break
				}
			}
			require.Greater(t, sent, 50, "refused before the limit")
			require.Less(t, sent, 100, "never refused")
			_, err := bad.rd.ReadByte()
			require.Error(t, err, "connection must be closed")

			// An EXEC pipelined behind the command that passes the limit
			// does not run what was queued.
			bad2 := ts.raw(t)
			bad2.nc.SetDeadline(time.Now().Add(10 * time.Second))
			var b strings.Builder
			b.WriteString("*1\r\n$5\r\nMULTI\r\n")
			for i := 0; i < 100; i++ {
				fmt.Fprintf(&b, "*3\r\n$3\r\nSET\r\n$%d\r\np%d\r\n$%d\r\n%s\r\n", len(fmt.Sprint("p", i)), i, len(val), val)
			}
			b.WriteString("*1\r\n$4\r\nEXEC\r\n")
			go io.WriteString(bad2.nc, b.String())
			require.Equal(t, "+OK\r\n", bad2.reply())
			for {
				r := bad2.reply()
				if r != "+QUEUED\r\n" {
					require.Equal(t, "-"+sprintf(errMultiQueueLimit, 64<<10)+"\r\n", r)
					break
				}
			}
			_, err = bad2.rd.ReadByte()
			require.Error(t, err, "connection must be closed")
			require.Equal(t, "$-1\r\n", other.do("GET", "k0"))
			require.Equal(t, "$-1\r\n", other.do("GET", "p0"))
			require.Equal(t, "$1\r\nv\r\n", other.do("GET", "kept"))
		})
	}
}

func TestPanicIsContained(t *testing.T) {
	ts := newTestServer(t)
	other := ts.raw(t)
	require.Equal(t, "+OK\r\n", other.do("SET", "k", "v"))
	r := ts.raw(t)
	require.Equal(t, "-ERR internal error while executing 'test.panic' (the connection will be closed)\r\n", r.do("test.panic", "k"))
	_, err := r.rd.ReadByte()
	require.Error(t, err)
	// The shard lock taken for "k" was released: the key is still usable.
	require.Equal(t, "$1\r\nv\r\n", other.do("GET", "k"))
	require.Equal(t, "+OK\r\n", other.do("SET", "k", "w"))
}

// TestCommandNameCache: the client's cache of the command names it sent
// last (Client.Lookup) never answers for a different name: other
// spellings, prefixes, unknown and over-long names after a cached one.
func TestCommandNameCache(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	long := strings.Repeat("x", 40)
	tests := []struct{ send, want string }{
		{"SET k 1\r\n", "+OK\r\n"},
		{"SET k 2\r\n", "+OK\r\n"},
		{"set k 3\r\n", "+OK\r\n"},
		{"SETNX k 4\r\n", ":0\r\n"},
		{"SET k\r\n", "-ERR wrong number of arguments for 'set' command\r\n"},
		{"SE k\r\n", "-ERR unknown command 'SE', with args beginning with: 'k' \r\n"},
		{"GET k\r\n", "$1\r\n3\r\n"},
		{"GETX k\r\n", "-ERR unknown command 'GETX', with args beginning with: 'k' \r\n"},
		{"GET k\r\n", "$1\r\n3\r\n"},
		{long + " k\r\n", "-ERR unknown command '" + long + "', with args beginning with: 'k' \r\n"},
		{"GET k\r\n", "$1\r\n3\r\n"},
		{"Get k\r\n", "$1\r\n3\r\n"},
		{"INCR k\r\n", ":4\r\n"},
	}
	for i, tt := range tests {
		require.Equal(t, tt.want, r.send(tt.send), "step %d (%q)", i, tt.send)
	}
}

// TestKeyShardAcrossShards: commands that find their key's shard from the
// lock they hold (Client.keyShard) store every key in the shard the store
// routes it to, whether the command holds one shard or several (a
// transaction, CL.THROTTLEALL over keys of different shards).
func TestKeyShardAcrossShards(t *testing.T) {
	ts := newTestServer(t)
	st := ts.store
	// Two keys per shard, for the first four shards.
	var keys []string
	seen := map[int]int{}
	for i := 0; len(keys) < 8; i++ {
		k := fmt.Sprintf("k%d", i)
		if s := st.ShardIndex([]byte(k)); s < 4 && seen[s] < 2 {
			seen[s]++
			keys = append(keys, k)
		}
	}
	r := ts.raw(t)
	for i, k := range keys {
		require.Equal(t, "+OK\r\n", r.do("SET", k, "v"+k, "PX", "100000"))
		require.Equal(t, ":1\r\n", r.do("INCR", "n"+k))
		want := "*5\r\n:0\r\n:11\r\n:10\r\n:-1\r\n"
		require.True(t, strings.HasPrefix(r.do("CL.THROTTLE", "c"+k, "10", "1", "1"), want), "key %d", i)
	}
	// A transaction over every shard, and a CL.THROTTLEALL over all keys.
	require.Equal(t, "+OK\r\n", r.do("MULTI"))
	for _, k := range keys {
		require.Equal(t, "+QUEUED\r\n", r.do("INCR", "n"+k))
		require.Equal(t, "+QUEUED\r\n", r.do("SET", "t"+k, "x", "PX", "100000"))
		require.Equal(t, "+QUEUED\r\n", r.do("CL.THROTTLE", "c"+k, "10", "1", "1"))
	}
	r.do("EXEC")
	all := []string{"CL.THROTTLEALL", fmt.Sprint(len(keys))}
	for _, k := range keys {
		all = append(all, "a"+k, "10", "1", "1")
	}
	require.True(t, strings.HasPrefix(r.do(all...), "*9\r\n:0\r\n"))
	now := ts.clock.Now() / 1e6
	for _, k := range keys {
		for _, name := range []string{k, "n" + k, "c" + k, "t" + k, "a" + k} {
			i := st.ShardIndex([]byte(name))
			st.Lock(i)
			e := st.Peek([]byte(name), now)
			st.Unlock(i)
			require.NotNil(t, e, "%s is not in the shard it routes to", name)
		}
		require.Equal(t, "$1\r\n2\r\n", r.do("GET", "n"+k))
	}
}

// TestNameCacheEvicts: the cache holds the eight names put last, answers
// each with its own command, and nothing for a name it does not hold.
func TestNameCacheEvicts(t *testing.T) {
	var nc nameCache
	names := []string{"get", "set", "incr", "multi", "exec", "zadd", "zcard", "pexpire", "zremrangebyscore", "cl.throttle", "ping"}
	for round := 0; round < 3; round++ {
		for i, n := range names {
			require.Nil(t, nc.get([]byte(n)), "round %d: %s before its put", round, n)
			nc.put([]byte(n), commands[n])
			require.Same(t, commands[n], nc.get([]byte(n)))
			// The seven names before it are still held, each with its own command.
			for j := 1; j < 8 && i-j >= 0; j++ {
				require.Same(t, commands[names[i-j]], nc.get([]byte(names[i-j])))
			}
			if i >= 8 {
				require.Nil(t, nc.get([]byte(names[i-8])), "%s should be evicted", names[i-8])
			}
		}
		nc = nameCache{}
	}
	long := []byte(strings.Repeat("x", 30))
	nc.put(long, commands["get"])
	require.Nil(t, nc.get(long), "a name longer than a slot is not cached")
	require.Nil(t, nc.get([]byte("GET")), "case differs: not a hit")
}

// TestBigValueBuffersReleased: the buffers a connection builds journal
// records and DUMP payloads in are let go at the end of the batch once a
// big value grew them, as the read and reply buffers are, so that an idle
// client that once dumped a big key does not go on holding its size.
func TestBigValueBuffersReleased(t *testing.T) {
	j := &recordingJournal{}
	s := newSocketless(t, &fakeClock{}, j)
	c := s.c
	big := strings.Repeat("v", 1<<20)
	buf := fmt.Appendf(nil, "*3\r\n$6\r\nAPPEND\r\n$1\r\nk\r\n$%d\r\n%s\r\n*2\r\n$4\r\nDUMP\r\n$1\r\nk\r\n", len(big), big)
	used, _ := runRequests(c, buf)
	c.EndBatch()
	require.Equal(t, len(buf), used, "both requests ran")
	require.True(t, strings.HasPrefix(string(c.Out), ":1048576\r\n$10"), "APPEND's and DUMP's replies")
	require.Len(t, j.recs, 1)
	require.Greater(t, len(j.recs[0]), 1<<20, "APPEND's record holds the value")
	require.LessOrEqual(t, cap(c.recBuf), shrinkAt)
	require.LessOrEqual(t, cap(c.valBuf), shrinkAt)
}

// TestClientSubcommandErrors: CLIENT's subcommands are checked as Redis
// checks a container's (processCommand: commandCheckExistence, then
// commandCheckArity against the subcommand's own arity). An unknown one
// is named as sent ('Foo'), and CLIENT KILL and CLIENT HELP with the
// wrong number of arguments are arity errors. The replies are
// redis-server 7.0.15's.
func TestClientSubcommandErrors(t *testing.T) {
	r := newTestServer(t).raw(t)
	for i, tt := range []struct {
		args []string
		want string
	}{
		0: {a("CLIENT", "FOO"), "-ERR unknown subcommand 'FOO'. Try CLIENT HELP.\r\n"},
		1: {a("CLIENT", "Foo", "x"), "-ERR unknown subcommand 'Foo'. Try CLIENT HELP.\r\n"},
		2: {a("client", "kill"), "-ERR wrong number of arguments for 'client|kill' command\r\n"},
		3: {a("CLIENT", "HELP", "x"), "-ERR wrong number of arguments for 'client|help' command\r\n"},
		4: {a("CLIENT", "ID", "x"), "-ERR wrong number of arguments for 'client|id' command\r\n"},
		5: {a("CLIENT", "SETNAME"), "-ERR wrong number of arguments for 'client|setname' command\r\n"},
		6: {a("CLIENT", "GETNAME", "x"), "-ERR wrong number of arguments for 'client|getname' command\r\n"},
		7: {a("CLIENT", "NO-EVICT"), "-ERR wrong number of arguments for 'client|no-evict' command\r\n"},
		8: {a("CLIENT", "INFO", "x"), "-ERR wrong number of arguments for 'client|info' command\r\n"},
		9: {a("CLIENT", "KILL", "ID", "abc"), "-ERR client-id should be greater than 0\r\n"},
	} {
		require.Equal(t, tt.want, r.do(tt.args...), "step %d: %q", i, tt.args)
	}
}

// TestErrorArgumentsEndAtNUL: an argument that Redis prints into an error
// with %s is a C string there, cut at its first NUL byte. (CL.THROTTLE's
// errors are redis-cell's, whose Rust strings are not cut, and stay
// whole: step 9.) The other replies are redis-server 7.0.15's.
func TestErrorArgumentsEndAtNUL(t *testing.T) {
	r := newTestServer(t).raw(t)
	for i, tt := range []struct {
		args []string
		want string
	}{
		0: {a("GET\x00x", "k"), "-ERR unknown command 'GET', with args beginning with: 'k' \r\n"},
		1: {a("FOO", "a\x00b", "\x00"), "-ERR unknown command 'FOO', with args beginning with: 'a' '' \r\n"},
		2: {a("CLIENT", "a\x00b"), "-ERR unknown subcommand 'a'. Try CLIENT HELP.\r\n"},
		3: {a("CONFIG", "a\x00b"), "-ERR unknown subcommand 'a'. Try CONFIG HELP.\r\n"},
		4: {a("CONFIG", "SET", "timeout\x00x", "1"), "-ERR Unknown option or number of arguments for CONFIG SET - 'timeout'\r\n"},
		5: {a("CLIENT", "LIST", "TYPE", "a\x00b"), "-ERR Unknown client type 'a'\r\n"},
		6: {a("CLIENT", "KILL", "TYPE", "a\x00b"), "-ERR Unknown client type 'a'\r\n"},
		7: {a("CLIENT", "KILL", "USER", "a\x00b"), "-ERR No such user 'a'\r\n"},
		8: {a("HELLO", "2", "a\x00b"), "-ERR Syntax error in HELLO option 'a'\r\n"},
		9: {a("CL.THROTTLE", "k", "a\x00b", "1", "1"), "-Cell error: Store error: Couldn't parse as integer: a\x00b\r\n"},
	} {
		require.Equal(t, tt.want, r.do(tt.args...), "step %d: %q", i, tt.args)
	}
}
