package command

import (
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"runtime"
	"runtime/metrics"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ratekv/ratekv/config"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

func init() {
	// test.movable exists only in the test binary: a command whose keys a
	// Keys function finds ("test.movable numkeys key [key ...]"), for
	// movablekeys in COMMAND INFO and COMMAND GETKEYS.
	register(&Command{Name: "test.movable", Arity: -3, Flags: FlagReadOnly, Keys: testMovableKeys,
		Handler: func(c *Client, args [][]byte) { c.WriteOK() }, Summary: "Test command.", Group: "generic"})
}

func testMovableKeys(args [][]byte, dst []int) []int {
	n, err := strconv.Atoi(string(args[1]))
	if err != nil || n <= 0 || n > len(args)-2 {
		return dst
	}
	for i := 0; i < n; i++ {
		dst = append(dst, 2+i)
	}
	return dst
}

// svStep is one raw request and its expected raw reply.
type svStep struct {
	args []string
	want string
}

func runSvSteps(t *testing.T, r *rawConn, steps []svStep) {
	t.Helper()
	for i, s := range steps {
		if got := r.do(s.args...); got != s.want {
			t.Errorf("step %d %q: have %q, want %q", i, s.args, got, s.want)
		}
	}
}

func svErr(msg string) string { return "-" + msg + "\r\n" }

func svBulk(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }

// svPut stores key with a string value, and a TTL when ttl > 0, straight
// into the store (the string commands are another family's).
func svPut(t testing.TB, ts *testServer, key string, ttl time.Duration) {
	t.Helper()
	st, k := ts.store, []byte(key)
	i := st.ShardIndex(k)
	st.Lock(i)
	defer st.Unlock(i)
	nowMs := st.Now() / 1e6
	e, _ := st.Put(k, nowMs)
	st.SetBytes(k, e, []byte("v"))
	if ttl > 0 {
		st.SetExpire(k, e, nowMs+ttl.Milliseconds())
	}
}

// replyOf runs a reply writer on a bare connection and returns the bytes.
func replyOf(proto int, write func(c *Client)) string {
	c := &Client{proto: proto}
	write(c)
	return string(c.Out)
}

// TestCommandInfoMatchesRedis compares COMMAND INFO entries with the bytes a
// real redis-server 7 sends for the same command.
func TestCommandInfoMatchesRedis(t *testing.T) {
	get := &Command{Name: "get", Arity: 2, Flags: FlagReadOnly | FlagFast, FirstKey: 1, LastKey: 1, Step: 1, Group: "string"}
	tests := []struct {
		cmd   *Command
		proto int
		want  string
	}{
		{get, 2, "*10\r\n$3\r\nget\r\n:2\r\n*2\r\n+readonly\r\n+fast\r\n:1\r\n:1\r\n:1\r\n*3\r\n+@read\r\n+@string\r\n+@fast\r\n*0\r\n" +
			"*1\r\n*6\r\n$5\r\nflags\r\n*2\r\n+RO\r\n+access\r\n$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n*2\r\n$5\r\nindex\r\n:1\r\n" +
			"$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n*6\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n*0\r\n"},
		{get, 3, "*10\r\n$3\r\nget\r\n:2\r\n~2\r\n+readonly\r\n+fast\r\n:1\r\n:1\r\n:1\r\n~3\r\n+@read\r\n+@string\r\n+@fast\r\n~0\r\n" +
			"~1\r\n%3\r\n$5\r\nflags\r\n~2\r\n+RO\r\n+access\r\n$12\r\nbegin_search\r\n%2\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n%1\r\n$5\r\nindex\r\n:1\r\n" +
			"$9\r\nfind_keys\r\n%2\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n%3\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n~0\r\n"},
		{commands["dbsize"], 2, "*10\r\n$6\r\ndbsize\r\n:1\r\n*2\r\n+readonly\r\n+fast\r\n:0\r\n:0\r\n:0\r\n*3\r\n+@keyspace\r\n+@read\r\n+@fast\r\n" +
			"*2\r\n$25\r\nrequest_policy:all_shards\r\n$23\r\nresponse_policy:agg_sum\r\n*0\r\n*0\r\n"},
		{commands["dbsize"], 3, "*10\r\n$6\r\ndbsize\r\n:1\r\n~2\r\n+readonly\r\n+fast\r\n:0\r\n:0\r\n:0\r\n~3\r\n+@keyspace\r\n+@read\r\n+@fast\r\n" +
			"~2\r\n$25\r\nrequest_policy:all_shards\r\n$23\r\nresponse_policy:agg_sum\r\n~0\r\n~0\r\n"},
		{subcommandIndex["config|get"], 2, "*10\r\n$10\r\nconfig|get\r\n:-3\r\n*4\r\n+admin\r\n+noscript\r\n+loading\r\n+stale\r\n:0\r\n:0\r\n:0\r\n" +
			"*3\r\n+@admin\r\n+@slow\r\n+@dangerous\r\n*0\r\n*0\r\n*0\r\n"},
		{nil, 2, "$-1\r\n"},
		{nil, 3, "_\r\n"},
	}
	for i, tt := range tests {
		if got := replyOf(tt.proto, func(c *Client) { c.writeCommandInfo(tt.cmd) }); got != tt.want {
			t.Errorf("step %d (RESP%d):\nhave %q\nwant %q", i, tt.proto, got, tt.want)
		}
	}
}

// TestCommandInfoTipsAndCategories: the command tips and ACL categories
// Redis's own table gives these commands (the tips, @dangerous of RESTORE,
// @connection of READONLY, READWRITE and ASKING), as redis-server 7.0.15's COMMAND
// INFO reports them.
func TestCommandInfoTipsAndCategories(t *testing.T) {
	for i, tt := range []struct {
		name      string
		acl, tips []string
	}{
		0: {"dump", []string{"keyspace", "read", "slow"}, []string{"nondeterministic_output"}},
		1: {"restore", []string{"keyspace", "write", "slow", "dangerous"}, nil},
		2: {"zrandmember", []string{"read", "sortedset", "slow"}, []string{"nondeterministic_output"}},
		3: {"zscan", []string{"read", "sortedset", "slow"}, []string{"nondeterministic_output"}},
		4: {"readonly", []string{"fast", "connection"}, nil},
		5: {"readwrite", []string{"fast", "connection"}, nil},
		6: {"client|info", []string{"slow", "connection"}, []string{"nondeterministic_output"}},
		7: {"client|list", []string{"admin", "slow", "dangerous", "connection"}, []string{"nondeterministic_output"}},
		8: {"asking", []string{"fast", "connection"}, nil},
	} {
		cmd := lookupCommandPath([]byte(tt.name))
		require.NotNil(t, cmd, tt.name)
		require.Equal(t, tt.acl, cmd.categories(), "step %d: %s", i, tt.name)
		require.Equal(t, tt.tips, commandMeta[tt.name].tips, "step %d: %s", i, tt.name)
	}
}

// TestCommandInfoAsRedis: arity, flags, key positions, ACL categories and
// tips of the hash and list commands, as redis-server 7.0.15's COMMAND INFO
// reports them.
func TestCommandInfoAsRedis(t *testing.T) {
	for i, tt := range []struct {
		name              string
		arity             int
		flags             string
		first, last, step int
		acl, tips         string
	}{
		{"hset", -4, "write denyoom fast", 1, 1, 1, "write hash fast", ""},
		{"hmset", -4, "write denyoom fast", 1, 1, 1, "write hash fast", ""},
		{"hsetnx", 4, "write denyoom fast", 1, 1, 1, "write hash fast", ""},
		{"hget", 3, "readonly fast", 1, 1, 1, "read hash fast", ""},
		{"hmget", -3, "readonly fast", 1, 1, 1, "read hash fast", ""},
		{"hgetall", 2, "readonly", 1, 1, 1, "read hash slow", "nondeterministic_output_order"},
		{"hkeys", 2, "readonly", 1, 1, 1, "read hash slow", "nondeterministic_output_order"},
		{"hvals", 2, "readonly", 1, 1, 1, "read hash slow", "nondeterministic_output_order"},
		{"hdel", -3, "write fast", 1, 1, 1, "write hash fast", ""},
		{"hexists", 3, "readonly fast", 1, 1, 1, "read hash fast", ""},
		{"hlen", 2, "readonly fast", 1, 1, 1, "read hash fast", ""},
		{"hstrlen", 3, "readonly fast", 1, 1, 1, "read hash fast", ""},
		{"hincrby", 4, "write denyoom fast", 1, 1, 1, "write hash fast", ""},
		{"hincrbyfloat", 4, "write denyoom fast", 1, 1, 1, "write hash fast", ""},
		{"hrandfield", -2, "readonly", 1, 1, 1, "read hash slow", "nondeterministic_output"},
		{"hscan", -3, "readonly", 1, 1, 1, "read hash slow", "nondeterministic_output"},
		{"lpush", -3, "write denyoom fast", 1, 1, 1, "write list fast", ""},
		{"rpush", -3, "write denyoom fast", 1, 1, 1, "write list fast", ""},
		{"lpushx", -3, "write denyoom fast", 1, 1, 1, "write list fast", ""},
		{"rpushx", -3, "write denyoom fast", 1, 1, 1, "write list fast", ""},
		{"lpop", -2, "write fast", 1, 1, 1, "write list fast", ""},
		{"rpop", -2, "write fast", 1, 1, 1, "write list fast", ""},
		{"llen", 2, "readonly fast", 1, 1, 1, "read list fast", ""},
		{"lindex", 3, "readonly", 1, 1, 1, "read list slow", ""},
		{"lrange", 4, "readonly", 1, 1, 1, "read list slow", ""},
		{"ltrim", 4, "write", 1, 1, 1, "write list slow", ""},
		{"lset", 4, "write denyoom", 1, 1, 1, "write list slow", ""},
		{"lrem", 4, "write", 1, 1, 1, "write list slow", ""},
		{"linsert", 5, "write denyoom", 1, 1, 1, "write list slow", ""},
		{"lpos", -3, "readonly", 1, 1, 1, "read list slow", ""},
		{"lmove", 5, "write denyoom", 1, 2, 1, "write list slow", ""},
		{"rpoplpush", 3, "write denyoom", 1, 2, 1, "write list slow", ""},
	} {
		cmd := commands[tt.name]
		require.NotNil(t, cmd, "step %d: %s", i, tt.name)
		have := fmt.Sprintf("%d %s %d %d %d %s %s", cmd.Arity, strings.Join(cmd.flagList(), " "), cmd.FirstKey, cmd.LastKey,
			cmd.Step, strings.Join(cmd.categories(), " "), strings.Join(commandMeta[tt.name].tips, " "))
		want := fmt.Sprintf("%d %s %d %d %d %s %s", tt.arity, tt.flags, tt.first, tt.last, tt.step, tt.acl, tt.tips)
		require.Equal(t, want, have, "step %d: %s", i, tt.name)
	}
}

// TestCommandInfoKeySpecs checks the key positions and key specs derived
// from the table for shapes Redis describes the same way.
func TestCommandInfoKeySpecs(t *testing.T) {
	rangeSpec := func(flags string, index, last, step int) string {
		return fmt.Sprintf("*6\r\n$5\r\nflags\r\n%s$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n*2\r\n$5\r\nindex\r\n:%d\r\n"+
			"$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n*6\r\n$7\r\nlastkey\r\n:%d\r\n$7\r\nkeystep\r\n:%d\r\n$5\r\nlimit\r\n:0\r\n",
			flags, index, last, step)
	}
	const rw = "*3\r\n+RW\r\n+access\r\n+update\r\n"
	unknown := "*6\r\n$5\r\nflags\r\n*2\r\n+RO\r\n+access\r\n" +
		"$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$7\r\nunknown\r\n$4\r\nspec\r\n*0\r\n" +
		"$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$7\r\nunknown\r\n$4\r\nspec\r\n*0\r\n"
	tests := []struct {
		cmd  *Command
		want string // the key-spec set
	}{
		// MSET: every other argument from 1 to the end.
		{&Command{Name: "mset", Arity: -3, Flags: FlagWrite, FirstKey: 1, LastKey: -1, Step: 2}, "*1\r\n" + rangeSpec(rw, 1, -1, 2)},
		// RENAME: keys 1 and 2; lastkey is relative to the first key.
		{&Command{Name: "rename", Arity: 3, Flags: FlagWrite, FirstKey: 1, LastKey: 2, Step: 1}, "*1\r\n" + rangeSpec(rw, 1, 1, 1)},
		// BLPOP-like: all but the last argument.
		{&Command{Name: "x", Arity: -3, Flags: FlagWrite, FirstKey: 1, LastKey: -2, Step: 1}, "*1\r\n" + rangeSpec(rw, 1, -2, 1)},
		{commands["test.movable"], "*1\r\n" + unknown},
		// EVAL: numkeys at 2, as Redis's keynum spec.
		{commands["eval"], "*1\r\n*6\r\n$5\r\nflags\r\n" + rw + "$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n*2\r\n$5\r\nindex\r\n:2\r\n" +
			"$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$6\r\nkeynum\r\n$4\r\nspec\r\n*6\r\n$9\r\nkeynumidx\r\n:0\r\n$8\r\nfirstkey\r\n:1\r\n$7\r\nkeystep\r\n:1\r\n"},
		{commands["ping"], "*0\r\n"},
	}
	for i, tt := range tests {
		got := replyOf(2, func(c *Client) { c.writeKeySpecs(tt.cmd) })
		if got != tt.want {
			t.Errorf("step %d (%s):\nhave %q\nwant %q", i, tt.cmd.Name, got, tt.want)
		}
	}
}

func TestCommandGoRedis(t *testing.T) {
	ts := newTestServer(t)
	for _, proto := range []int{2, 3} {
		rdb := ts.client(t, proto)
		info, err := rdb.Command(ctx).Result()
		require.NoError(t, err, "RESP%d: go-redis must parse COMMAND", proto)
		require.Len(t, info, len(commands), "RESP%d", proto)
		for name, cmd := range commands {
			ci := info[name]
			require.NotNil(t, ci, "RESP%d: %s missing", proto, name)
			first, last, step := cmd.FirstKey, cmd.LastKey, cmd.Step
			if first == 0 {
				last, step = 0, 0
			}
			have := [4]int{int(ci.Arity), int(ci.FirstKeyPos), int(ci.LastKeyPos), int(ci.StepCount)}
			want := [4]int{cmd.Arity, first, last, step}
			require.Equal(t, want, have, "RESP%d %s: arity, first, last, step", proto, name)
			require.Equal(t, cmd.flagList(), nilIfEmpty(ci.Flags), "RESP%d %s flags", proto, name)
		}
		require.Equal(t, []string{"@keyspace", "@read", "@fast"}, info["dbsize"].ACLFlags)
		require.True(t, info["dbsize"].ReadOnly)
		require.Contains(t, info["test.movable"].Flags, "movablekeys")

		list, err := rdb.CommandList(ctx, nil).Result()
		require.NoError(t, err)
		require.Contains(t, list, "config|get")
		require.Contains(t, list, "dbsize")
		list, err = rdb.CommandList(ctx, &redis.FilterBy{Pattern: "CONFIG*"}).Result()
		require.NoError(t, err)
		require.Equal(t, []string{"config", "config|get", "config|help", "config|resetstat", "config|rewrite", "config|set"}, list)
		list, err = rdb.CommandList(ctx, &redis.FilterBy{ACLCat: "keyspace"}).Result()
		require.NoError(t, err)
		require.Contains(t, list, "dbsize")
		require.NotContains(t, list, "config|get")

		keys, err := rdb.CommandGetKeys(ctx, "watch", "a", "b").Result()
		require.NoError(t, err)
		require.Equal(t, []string{"a", "b"}, keys)
		kf, err := rdb.CommandGetKeysAndFlags(ctx, "test.movable", "2", "x", "y", "z").Result()
		require.NoError(t, err)
		require.Len(t, kf, 2)
		require.Equal(t, "y", kf[1].Key)
		require.Equal(t, []string{"RO", "access"}, kf[1].Flags)
	}
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func TestCommandRaw(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	docsDbsize := svBulk("dbsize") + "*6\r\n" + svBulk("summary") + svBulk(commands["dbsize"].Summary) +
		svBulk("since") + svBulk(Version) + svBulk("group") + svBulk("server")
	runSvSteps(t, r, []svStep{
		{[]string{"COMMAND", "COUNT"}, ":" + strconv.Itoa(len(commands)) + "\r\n"},
		{[]string{"COMMAND", "COUNT", "x"}, svErr("ERR wrong number of arguments for 'command|count' command")},
		{[]string{"COMMAND", "INFO", "nosuch"}, "*1\r\n$-1\r\n"},
		{[]string{"COMMAND", "DOCS", "nosuch"}, "*0\r\n"},
		{[]string{"COMMAND", "DOCS", "DBSIZE", "nosuch"}, "*2\r\n" + docsDbsize},
		{[]string{"COMMAND", "FOO"}, svErr("ERR unknown subcommand 'FOO'. Try COMMAND HELP.")},
		{[]string{"command", "foo"}, svErr("ERR unknown subcommand 'foo'. Try COMMAND HELP.")},
		{[]string{"COMMAND", "LIST", "foo"}, svErr("ERR syntax error")},
		{[]string{"COMMAND", "LIST", "FILTERBY", "pattern"}, svErr("ERR syntax error")},
		{[]string{"COMMAND", "LIST", "FILTERBY", "foo", "x"}, svErr("ERR syntax error")},
		{[]string{"COMMAND", "LIST", "FILTERBY", "MODULE", "x"}, "*0\r\n"},
		{[]string{"COMMAND", "LIST", "FILTERBY", "PATTERN", "db*"}, "*1\r\n$6\r\ndbsize\r\n"},
		{[]string{"COMMAND", "LIST", "FILTERBY", "ACLCAT", "nosuch"}, "*0\r\n"},
		{[]string{"COMMAND", "GETKEYS", "watch"}, svErr("ERR wrong number of arguments for 'command|getkeys' command")},
		{[]string{"COMMAND", "GETKEYS", "nosuch", "a"}, svErr(errGetkeysInvalidCmd)},
		{[]string{"COMMAND", "GETKEYS", "ping", "a"}, svErr(errGetkeysNoKeys)},
		{[]string{"COMMAND", "GETKEYS", "config", "get"}, svErr(errGetkeysNoKeys)},
		{[]string{"COMMAND", "GETKEYS", "test.movable", "1"}, svErr(errGetkeysArity)},
		{[]string{"COMMAND", "GETKEYS", "test.movable", "0", "a"}, svErr(errGetkeysInvalid)},
		{[]string{"COMMAND", "GETKEYS", "test.movable", "2", "a", "b"}, "*2\r\n$1\r\na\r\n$1\r\nb\r\n"},
		{[]string{"COMMAND", "GETKEYS", "WATCH", "a"}, "*1\r\n$1\r\na\r\n"},
		{[]string{"COMMAND", "GETKEYSANDFLAGS", "watch", "k"}, "*1\r\n*2\r\n$1\r\nk\r\n*1\r\n+RO\r\n"},
	})
	// RESP3: maps and sets.
	require.Contains(t, r.do("HELLO", "3"), "proto")
	runSvSteps(t, r, []svStep{
		{[]string{"COMMAND", "INFO", "nosuch"}, "*1\r\n_\r\n"},
		{[]string{"COMMAND", "DOCS", "dbsize"}, "%1\r\n" + strings.Replace(docsDbsize, "*6", "%3", 1)},
		{[]string{"COMMAND", "GETKEYSANDFLAGS", "watch", "k"}, "*1\r\n*2\r\n$1\r\nk\r\n~1\r\n+RO\r\n"},
	})
	help := r.do("COMMAND", "HELP")
	require.True(t, strings.HasPrefix(help, "*"), help)
	require.Contains(t, help, "+COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n")
	require.True(t, strings.HasSuffix(help, "+HELP\r\n+    Prints this help.\r\n"), help)
	// COMMAND INFO accepts subcommand paths, any case.
	require.True(t, strings.HasPrefix(r.do("COMMAND", "INFO", "Config|Get"), "*1\r\n*10\r\n$10\r\nconfig|get\r\n"))
}

// pairs turns a map reply as go-redis returns it (RESP3 map, RESP2 flat
// array) into key/value pairs, failing the test on any other shape.
func pairs(t *testing.T, v any, what string) [][2]any {
	t.Helper()
	var out [][2]any
	switch m := v.(type) {
	case map[any]any:
		for k, v := range m {
			out = append(out, [2]any{k, v})
		}
	case []any:
		require.Zero(t, len(m)%2, "%s: odd-length map array", what)
		for i := 0; i < len(m); i += 2 {
			out = append(out, [2]any{m[i], m[i+1]})
		}
	default:
		t.Fatalf("%s: have %T, want a map", what, v)
	}
	return out
}

// TestCommandDocsShape walks COMMAND DOCS the way redis-cli's help builder
// does (it asserts on every one of these shapes).
func TestCommandDocsShape(t *testing.T) {
	ts := newTestServer(t)
	for _, proto := range []int{2, 3} {
		rdb := ts.client(t, proto)
		v, err := rdb.Do(ctx, "COMMAND", "DOCS").Result()
		require.NoError(t, err)
		top := pairs(t, v, "COMMAND DOCS")
		require.Len(t, top, len(commands), "RESP%d", proto)
		subs := 0
		var check func(name string, doc any)
		check = func(name string, doc any) {
			fields := map[string]any{}
			for _, kv := range pairs(t, doc, name) {
				k, ok := kv[0].(string)
				require.True(t, ok, "RESP%d %s: field name %v", proto, name, kv[0])
				fields[k] = kv[1]
			}
			for _, f := range []string{"summary", "since", "group"} {
				_, ok := fields[f].(string)
				require.True(t, ok, "RESP%d %s: %s must be a string, have %T", proto, name, f, fields[f])
			}
			if s, ok := fields["subcommands"]; ok {
				for _, kv := range pairs(t, s, name+" subcommands") {
					sub, ok := kv[0].(string)
					require.True(t, ok)
					require.True(t, strings.HasPrefix(sub, name+"|"), "RESP%d: subcommand %q of %q", proto, sub, name)
					subs++
					check(sub, kv[1])
				}
			}
		}
		for _, kv := range top {
			name, ok := kv[0].(string)
			require.True(t, ok)
			check(name, kv[1])
		}
		require.Equal(t, len(subcommandIndex), subs, "RESP%d: every subcommand documented", proto)
	}
}

func TestInfoSections(t *testing.T) {
	ts := newTestServer(t)
	rdb := ts.client(t, 2)
	headers := func(text string) []string {
		return regexp.MustCompile(`(?m)^# (\w+)\r$`).FindAllString(text, -1)
	}
	tests := []struct {
		args []string
		want string // headers, space separated
	}{
		{nil, "Server Clients Memory Persistence Stats Replication CPU Modules Errorstats Cluster Keyspace"},
		{[]string{"default"}, "Server Clients Memory Persistence Stats Replication CPU Modules Errorstats Cluster Keyspace"},
		{[]string{"all"}, "Server Clients Memory Persistence Stats Replication CPU Modules Commandstats Errorstats Latencystats Cluster Keyspace Ratelimit"},
		{[]string{"everything"}, "Server Clients Memory Persistence Stats Replication CPU Modules Commandstats Errorstats Latencystats Cluster Keyspace Ratelimit"},
		{[]string{"KEYSPACE", "server"}, "Server Keyspace"},
		{[]string{"commandstats", "default"}, "Server Clients Memory Persistence Stats Replication CPU Modules Commandstats Errorstats Cluster Keyspace"},
		{[]string{"nosuch"}, ""},
		{[]string{"cpu", "cpu"}, "CPU"},
	}
	for i, tt := range tests {
		text, err := rdb.Info(ctx, tt.args...).Result()
		require.NoError(t, err)
		var have []string
		for _, h := range headers(text) {
			have = append(have, strings.TrimSuffix(strings.TrimPrefix(h, "# "), "\r"))
		}
		if got := strings.Join(have, " "); got != tt.want {
			t.Errorf("step %d INFO %q: have %q, want %q", i, tt.args, got, tt.want)
		}
	}
}

func TestInfoRawLayout(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	runSvSteps(t, r, []svStep{
		{[]string{"INFO", "cluster"}, "$30\r\n# Cluster\r\ncluster_enabled:0\r\n\r\n"},
		{[]string{"INFO", "cluster", "keyspace"}, "$44\r\n# Cluster\r\ncluster_enabled:0\r\n\r\n# Keyspace\r\n\r\n"},
		{[]string{"INFO", "nosuch"}, "$0\r\n\r\n"},
	})
	svPut(t, ts, "a", 0)
	svPut(t, ts, "b", time.Minute)
	svPut(t, ts, "c", 0)
	const keyspace = "# Keyspace\r\ndb0:keys=3,expires=1,avg_ttl=0\r\n"
	require.Contains(t, r.do("HELLO", "3"), "proto")
	runSvSteps(t, r, []svStep{
		{[]string{"INFO", "keyspace"}, fmt.Sprintf("=%d\r\ntxt:%s\r\n", 4+len(keyspace), keyspace)},
		{[]string{"INFO", "nosuch"}, "=4\r\ntxt:\r\n"},
	})
}

// infoFields parses INFO text into name → value.
func infoFields(t *testing.T, text string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, line := range strings.Split(text, "\r\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		require.True(t, ok, "line %q", line)
		out[k] = v
	}
	return out
}

func TestInfoFields(t *testing.T) {
	ts := newTestServer(t, "appendonly", "no")
	rdb := ts.client(t, 3)
	text, err := rdb.Info(ctx, "everything").Result()
	require.NoError(t, err)
	f := infoFields(t, text)
	_, port, _ := net.SplitHostPort(ts.addr)
	hex40 := regexp.MustCompile(`^[0-9a-f]{40}$`)
	tests := []struct {
		field string
		want  string // exact value, or "~regexp"
	}{
		{"redis_version", RedisVersion},
		{"ratekv_version", Version},
		{"redis_mode", "standalone"},
		{"arch_bits", strconv.Itoa(strconv.IntSize)},
		{"process_id", strconv.Itoa(os.Getpid())},
		{"tcp_port", port},
		{"run_id", "~" + hex40.String()},
		{"uptime_in_days", "0"},
		{"hz", "10"},
		{"connected_clients", "1"},
		{"maxclients", "10000"},
		{"blocked_clients", "0"},
		{"used_memory", `~^[1-9][0-9]*$`},
		{"used_memory_human", `~^[0-9.]+[BKMG]$`},
		{"used_memory_rss", `~^[1-9][0-9]*$`},
		{"maxmemory", "0"},
		{"maxmemory_policy", "noeviction"},
		{"mem_allocator", "go"},
		{"loading", "0"},
		{"rdb_bgsave_in_progress", "0"},
		{"rdb_last_save_time", strconv.FormatInt(ts.srv.start.Unix(), 10)},
		{"aof_enabled", "0"},
		{"total_connections_received", "1"},
		{"instantaneous_ops_per_sec", `~^[0-9]+$`},
		{"rejected_connections", "0"},
		{"expired_keys", "0"},
		{"keyspace_hits", "0"},
		{"role", "master"},
		{"connected_slaves", "0"},
		{"master_replid", "~" + hex40.String()},
		{"master_repl_offset", "0"},
		{"used_cpu_user", `~^[0-9]+\.[0-9]{6}$`},
		{"used_cpu_sys", `~^[0-9]+\.[0-9]{6}$`},
		{"cluster_enabled", "0"},
	}
	for i, tt := range tests {
		have, ok := f[tt.field]
		switch {
		case !ok:
			t.Errorf("step %d: field %s missing", i, tt.field)
		case strings.HasPrefix(tt.want, "~"):
			if !regexp.MustCompile(tt.want[1:]).MatchString(have) {
				t.Errorf("step %d: %s: have %q, want match %s", i, tt.field, have, tt.want[1:])
			}
		case have != tt.want:
			t.Errorf("step %d: %s: have %q, want %q", i, tt.field, have, tt.want)
		}
	}
	require.NotEqual(t, f["run_id"], f["master_replid"])
	// go-redis's InfoMap parses the sections.
	m, err := rdb.InfoMap(ctx, "server", "persistence").Result()
	require.NoError(t, err)
	require.Equal(t, RedisVersion, m["Server"]["redis_version"])
	require.Equal(t, strconv.FormatInt(ts.store.Dirty(), 10), m["Persistence"]["rdb_changes_since_last_save"])

	// aof_enabled follows the appendonly parameter.
	ts2 := newTestServer(t, "appendonly", "yes")
	text, err = ts2.client(t, 2).Info(ctx, "persistence").Result()
	require.NoError(t, err)
	require.Equal(t, "1", infoFields(t, text)["aof_enabled"])
}

// TestInfoCounters checks the stats INFO reports against a scripted session
// on one raw connection, whose traffic is known exactly.
func TestInfoCounters(t *testing.T) {
	ts := newTestServer(t)
	// Per-command statistics live in the package-level command table, so
	// earlier tests' calls are cleared first.
	ts.srv.resetStats()
	r := ts.raw(t)
	sent, received := 0, 0
	do := func(args ...string) string {
		var b strings.Builder
		fmt.Fprintf(&b, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
		sent += b.Len()
		reply := r.send(b.String())
		received += len(reply)
		return reply
	}
	svPut(t, ts, "k", 0)
	require.Equal(t, "+PONG\r\n", do("PING"))
	require.Equal(t, ":1\r\n", do("DBSIZE"))
	require.Equal(t, ":1\r\n", do("DBSIZE"))
	do("DBSIZE", "x")                  // rejected: wrong arity
	do("CONFIG", "SET", "nosuch", "1") // failed
	do("CLUSTER", "INFO")              // failed
	do("HELLO", "4")                   // NOPROTO
	bytesBeforeInfo, repliesBeforeInfo := sent, received
	text := do("INFO", "stats", "commandstats", "errorstats")
	f := infoFields(t, text[strings.Index(text, "\r\n")+2:])
	tests := []struct{ field, want string }{
		{"total_connections_received", "1"},
		{"total_commands_processed", "6"}, // as Redis: not the rejected DBSIZE, nor INFO itself (counted once it ran)
		{"total_net_input_bytes", strconv.Itoa(bytesBeforeInfo + len("*4\r\n$4\r\nINFO\r\n$5\r\nstats\r\n$12\r\ncommandstats\r\n$10\r\nerrorstats\r\n"))},
		{"total_net_output_bytes", strconv.Itoa(repliesBeforeInfo)},
		{"total_error_replies", "4"},
		{"errorstat_ERR", "count=3"},
		{"errorstat_NOPROTO", "count=1"},
		{"cmdstat_ping", "~^calls=1,usec=[0-9]+,usec_per_call=[0-9]+\\.[0-9]{2},rejected_calls=0,failed_calls=0$"},
		{"cmdstat_dbsize", "~^calls=2,usec=[0-9]+,usec_per_call=[0-9.]+,rejected_calls=1,failed_calls=0$"},
		{"cmdstat_config", "~^calls=1,.*,rejected_calls=0,failed_calls=1$"},
		{"cmdstat_cluster", "~^calls=1,.*,failed_calls=1$"},
	}
	for i, tt := range tests {
		have, ok := f[tt.field]
		switch {
		case !ok:
			t.Errorf("step %d: %s missing in\n%s", i, tt.field, text)
		case strings.HasPrefix(tt.want, "~"):
			if !regexp.MustCompile(tt.want[1:]).MatchString(have) {
				t.Errorf("step %d: %s: have %q, want match %s", i, tt.field, have, tt.want[1:])
			}
		case have != tt.want:
			t.Errorf("step %d: %s: have %q, want %q", i, tt.field, have, tt.want)
		}
	}
	_, ok := f["cmdstat_info"]
	require.False(t, ok, "INFO's own call is counted after it runs")

	// CONFIG RESETSTAT clears all of it.
	require.Equal(t, "+OK\r\n", do("CONFIG", "RESETSTAT"))
	text = do("INFO", "stats", "commandstats", "errorstats")
	f = infoFields(t, text[strings.Index(text, "\r\n")+2:])
	for field, want := range map[string]string{
		"total_connections_received": "0",
		"total_commands_processed":   "1",
		"total_error_replies":        "0",
		"keyspace_hits":              "0",
		"keyspace_misses":            "0",
	} {
		require.Equal(t, want, f[field], field)
	}
	var stats []string
	for k := range f {
		if strings.HasPrefix(k, "cmdstat_") || strings.HasPrefix(k, "errorstat_") {
			stats = append(stats, k)
		}
	}
	sort.Strings(stats)
	require.Equal(t, []string{"cmdstat_config"}, stats, "only RESETSTAT itself is left")
}

// TestInfoCommandstatsOfExec: EXEC's call is counted on EXEC (not on the
// last command it ran), and its failed_calls only when EXEC itself
// replies an error, as in Redis (call counts each command once, and a
// queued command's error on that command). The counts are those
// redis-server 7.0.15 reports for the same session.
func TestInfoCommandstatsOfExec(t *testing.T) {
	ts := newTestServer(t)
	ts.srv.resetStats()
	r := ts.raw(t)
	for i, s := range []struct {
		args []string
		want string
	}{
		0:  {a("SET", "k", "v"), "+OK\r\n"},
		1:  {a("MULTI"), "+OK\r\n"},
		2:  {a("INCR", "k"), "+QUEUED\r\n"},
		3:  {a("EXEC"), "*1\r\n" + errReply(errNotInt)},
		4:  {a("MULTI"), "+OK\r\n"},
		5:  {a("GET"), "-ERR wrong number of arguments for 'get' command\r\n"},
		6:  {a("EXEC"), errReply(errExecAbort)},
		7:  {a("MULTI"), "+OK\r\n"},
		8:  {a("SET", "k", "1"), "+QUEUED\r\n"},
		9:  {a("INCR", "k"), "+QUEUED\r\n"},
		10: {a("EXEC"), "*2\r\n+OK\r\n:2\r\n"},
	} {
		require.Equal(t, s.want, r.do(s.args...), "step %d: %q", i, s.args)
	}
	text := r.do("INFO", "commandstats")
	f := infoFields(t, text[strings.Index(text, "\r\n")+2:])
	for field, want := range map[string]string{
		"cmdstat_exec":  "calls=3,rejected_calls=0,failed_calls=1",
		"cmdstat_incr":  "calls=2,rejected_calls=0,failed_calls=1",
		"cmdstat_set":   "calls=2,rejected_calls=0,failed_calls=0",
		"cmdstat_multi": "calls=3,rejected_calls=0,failed_calls=0",
		"cmdstat_get":   "calls=0,rejected_calls=1,failed_calls=0",
	} {
		have := regexp.MustCompile(`,usec=[0-9]+,usec_per_call=[0-9.]+`).ReplaceAllString(f[field], "")
		require.Equal(t, want, have, field)
	}
}

// TestKeyspaceHitsOfWrites: keyspace_hits and keyspace_misses count the
// lookups of reads, and of the writes that read the value they reply
// (GETEX, GETDEL, GETSET, SET ... GET), as Redis's lookupKeyRead does;
// the other writes look their keys up without counting (lookupKeyWrite):
// INCR, ZADD, EXPIRE, RENAME, SET NX and the like move neither. The deltas
// are redis-server 7.0.15's, each after SET a 1, ZADD z 1 m 2 n, SET n 5.
func TestKeyspaceHitsOfWrites(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	stats := func() (hits, misses string) {
		text := r.do("INFO", "stats")
		f := infoFields(t, text[strings.Index(text, "\r\n")+2:])
		return f["keyspace_hits"], f["keyspace_misses"]
	}
	for i, tt := range []struct {
		args         []string
		hits, misses int
	}{
		0:  {a("GET", "a"), 1, 0},
		1:  {a("GET", "nokey"), 0, 1},
		2:  {a("INCR", "n"), 0, 0},
		3:  {a("INCR", "nokey"), 0, 0},
		4:  {a("INCRBYFLOAT", "n", "1"), 0, 0},
		5:  {a("APPEND", "a", "x"), 0, 0},
		6:  {a("SETRANGE", "a", "0", "x"), 0, 0},
		7:  {a("SET", "a", "1", "NX"), 0, 0},
		8:  {a("SETNX", "a", "1"), 0, 0},
		9:  {a("MSETNX", "e", "1", "a", "2"), 0, 0},
		10: {a("SET", "a", "1", "GET"), 1, 0},
		11: {a("GETSET", "a", "2"), 1, 0},
		12: {a("GETEX", "a", "PERSIST"), 1, 0},
		13: {a("GETDEL", "nokey"), 0, 1},
		14: {a("ZADD", "z", "1", "m"), 0, 0},
		15: {a("ZINCRBY", "z", "1", "m"), 0, 0},
		16: {a("ZREM", "z", "m"), 0, 0},
		17: {a("ZPOPMIN", "z"), 0, 0},
		18: {a("ZREMRANGEBYSCORE", "z", "0", "1"), 0, 0},
		19: {a("ZSCORE", "z", "m"), 1, 0},
		20: {a("ZRANGE", "nokey", "0", "-1"), 0, 1},
		21: {a("EXPIRE", "a", "100"), 0, 0},
		22: {a("EXPIRE", "nokey", "100"), 0, 0},
		23: {a("PERSIST", "a"), 0, 0},
		24: {a("RENAME", "a", "b"), 0, 0},
		25: {a("RENAMENX", "a", "z"), 0, 0},
		26: {a("TTL", "a"), 1, 0},
		27: {a("TOUCH", "a", "nokey"), 1, 1},
		28: {a("DUMP", "a"), 1, 0},
		29: {a("RESTORE", "a", "0", "x"), 0, 0},
	} {
		for _, setup := range [][]string{a("FLUSHALL"), a("SET", "a", "1"), a("ZADD", "z", "1", "m", "2", "n"), a("SET", "n", "5")} {
			r.do(setup...)
		}
		h0, m0 := stats()
		r.do(tt.args...)
		h1, m1 := stats()
		dh, _ := strconv.Atoi(h1)
		dm, _ := strconv.Atoi(m1)
		hh, _ := strconv.Atoi(h0)
		mm, _ := strconv.Atoi(m0)
		require.Equal(t, [2]int{tt.hits, tt.misses}, [2]int{dh - hh, dm - mm}, "step %d: %q (hits, misses)", i, tt.args)
	}
}

func TestInstantaneousRate(t *testing.T) {
	var st serverStats
	const ms = int64(time.Millisecond)
	t0 := int64(1_000_000 * ms)
	steps := []struct {
		at   int64
		vals [numMetrics]int64
		want [numMetrics]float64
	}{
		{t0, [numMetrics]int64{500, 0, 0}, [numMetrics]float64{0, 0, 0}},                                    // first reading: no sample yet
		{t0 + 100*ms, [numMetrics]int64{600, 1024, 0}, [numMetrics]float64{1000, 10240, 0}},                 // 100 ops in 0.1 s
		{t0 + 200*ms, [numMetrics]int64{600, 1024, 0}, [numMetrics]float64{500, 5120, 0}},                   // idle: mean of 1000 and 0
		{t0 + 300*ms, [numMetrics]int64{0, 1024, 50}, [numMetrics]float64{1000. / 3, 10240. / 3, 500. / 3}}, // reset counts as idle
		{t0 + 300*ms, [numMetrics]int64{9, 9, 9}, [numMetrics]float64{1000. / 3, 10240. / 3, 500. / 3}},     // same instant: ignored
	}
	for i, s := range steps {
		st.record(s.at, s.vals)
		for m := 0; m < numMetrics; m++ {
			if have := st.rate(m); have < s.want[m]-1e-9 || have > s.want[m]+1e-9 {
				t.Errorf("step %d metric %d: have %v, want %v", i, m, have, s.want[m])
			}
		}
	}
	// Only the last 16 samples count.
	at := t0 + 300*ms
	for i := 0; i < metricSamples; i++ {
		at += 100 * ms
		st.record(at, [numMetrics]int64{int64(10 * (i + 1)), 0, 0})
	}
	require.InDelta(t, 100.0, st.rate(metricOps), 1e-9)
}

func TestParseInfoSections(t *testing.T) {
	bit := func(names ...string) uint32 {
		var m uint32
		for _, n := range names {
			for i, s := range infoSections {
				if s.name == n {
					m |= 1 << i
				}
			}
		}
		return m
	}
	dflt := bit("server", "clients", "memory", "persistence", "stats", "replication", "cpu", "modules", "errorstats", "cluster", "keyspace")
	all := dflt | bit("commandstats", "latencystats", "ratelimit")
	tests := []struct {
		args []string
		want uint32
	}{
		{nil, dflt},
		{[]string{"DEFAULT"}, dflt},
		{[]string{"all"}, all},
		{[]string{"Everything"}, all},
		{[]string{"server", "nosuch"}, bit("server")},
		{[]string{"commandstats"}, bit("commandstats")},
		{[]string{""}, 0},
	}
	for i, tt := range tests {
		var args [][]byte
		for _, a := range tt.args {
			args = append(args, []byte(a))
		}
		if have := parseInfoSections(args); have != tt.want {
			t.Errorf("step %d %q: have %b, want %b", i, tt.args, have, tt.want)
		}
	}
}

func TestBytesToHuman(t *testing.T) {
	tests := []struct {
		n    uint64
		want string
	}{
		{0, "0B"}, {1023, "1023B"}, {1024, "1.00K"}, {916464, "894.98K"}, {6819840, "6.50M"},
		{1 << 30, "1.00G"}, {3 << 40, "3.00T"}, {5 << 50, "5.00P"}, {1 << 62, "4096.00P"},
	}
	for i, tt := range tests {
		if have := bytesToHuman(tt.n); have != tt.want {
			t.Errorf("step %d %d: have %q, want %q", i, tt.n, have, tt.want)
		}
	}
}

func TestConfigGet(t *testing.T) {
	ts := newTestServer(t)
	for _, proto := range []int{2, 3} {
		rdb := ts.client(t, proto)
		m, err := rdb.ConfigGet(ctx, "maxclients").Result()
		require.NoError(t, err)
		require.Equal(t, map[string]string{"maxclients": "10000"}, m, "RESP%d", proto)
		m, err = rdb.ConfigGet(ctx, "*").Result()
		require.NoError(t, err)
		require.Len(t, m, len(config.Names()), "RESP%d", proto)
		for _, n := range config.Names() {
			p, _ := config.Lookup(n)
			require.Equal(t, ts.srv.cfg.Get(p), m[n], "RESP%d %s", proto, n)
		}
		m, err = rdb.ConfigGet(ctx, "MAX*").Result()
		require.NoError(t, err)
		require.Equal(t, map[string]string{"maxclients": "10000", "maxmemory": "0", "maxmemory-policy": "noeviction",
			"maxmemory-samples": "5", "maxmemory-eviction-tenacity": "10"}, m)
	}
	save, _ := config.Lookup("save")
	r := ts.raw(t)
	runSvSteps(t, r, []svStep{
		{[]string{"CONFIG", "GET"}, svErr("ERR wrong number of arguments for 'config|get' command")},
		{[]string{"CONFIG", "GET", "nosuch"}, "*0\r\n"},
		{[]string{"CONFIG", "GET", "MAXCLIENTS"}, "*2\r\n$10\r\nMAXCLIENTS\r\n$5\r\n10000\r\n"}, // exact names echo as given
		{[]string{"CONFIG", "GET", "maxclients", "MAXCLIENTS", "maxc*"}, "*2\r\n$10\r\nmaxclients\r\n$5\r\n10000\r\n"},
		{[]string{"CONFIG", "GET", "maxmemory", "maxmemory-*"}, "*8\r\n$9\r\nmaxmemory\r\n$1\r\n0\r\n$27\r\nmaxmemory-eviction-tenacity\r\n$2\r\n10\r\n$16\r\nmaxmemory-policy\r\n$10\r\nnoeviction\r\n$17\r\nmaxmemory-samples\r\n$1\r\n5\r\n"},
		{[]string{"CONFIG", "GET", "save", "appendonly"}, "*4\r\n$4\r\nsave\r\n$" + strconv.Itoa(len(ts.srv.cfg.Get(save))) + "\r\n" + ts.srv.cfg.Get(save) + "\r\n$10\r\nappendonly\r\n$3\r\nyes\r\n"},
		{[]string{"CONFIG", "GET", "ma?clients"}, "*2\r\n$10\r\nmaxclients\r\n$5\r\n10000\r\n"},
		// An alias and its name are two entries; one spelled twice is one.
		{[]string{"CONFIG", "GET", "zset-max-ziplist-entries", "zset-max-listpack-entries"}, "*4\r\n$24\r\nzset-max-ziplist-entries\r\n$3\r\n128\r\n$25\r\nzset-max-listpack-entries\r\n$3\r\n128\r\n"},
		{[]string{"CONFIG", "GET", "ZSET-MAX-ZIPLIST-ENTRIES", "zset-max-ziplist-e*"}, "*2\r\n$24\r\nZSET-MAX-ZIPLIST-ENTRIES\r\n$3\r\n128\r\n"},
	})
	require.Contains(t, r.do("HELLO", "3"), "proto")
	runSvSteps(t, r, []svStep{
		{[]string{"CONFIG", "GET", "maxclients"}, "%1\r\n$10\r\nmaxclients\r\n$5\r\n10000\r\n"},
		{[]string{"CONFIG", "GET", "nosuch"}, "%0\r\n"},
	})
}

func TestConfigSet(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	checkErr := func(name, value string) string {
		p, ok := config.Lookup(name)
		require.True(t, ok)
		_, err := p.Check(value)
		require.Error(t, err)
		return err.Error()
	}
	failed := func(name, reason string) string {
		return svErr("ERR CONFIG SET failed (possibly related to argument '" + name + "') - " + reason)
	}
	runSvSteps(t, r, []svStep{
		{[]string{"CONFIG", "SET"}, svErr("ERR wrong number of arguments for 'config|set' command")},
		{[]string{"CONFIG", "SET", "maxclients"}, svErr("ERR wrong number of arguments for 'config|set' command")},
		{[]string{"CONFIG", "SET", "timeout", "0", "maxclients"}, svErr("ERR syntax error")},
		{[]string{"CONFIG", "SET", "nosuch", "1"}, svErr("ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'")},
		{[]string{"CONFIG", "SET", "port", "1"}, failed("port", "can't set immutable config")},
		{[]string{"CONFIG", "SET", "PORT", "1"}, failed("PORT", "can't set immutable config")},
		{[]string{"CONFIG", "SET", "maxclients", "abc"}, failed("maxclients", "argument couldn't be parsed into an integer")},
		{[]string{"CONFIG", "SET", "MAXCLIENTS", "0"}, failed("maxclients", checkErr("maxclients", "0"))},
		{[]string{"CONFIG", "SET", "loglevel", "foo"}, failed("loglevel", "argument(s) must be one of the following: debug, verbose, notice, warning")},
		{[]string{"CONFIG", "SET", "timeout", "5", "TIMEOUT", "6"}, failed("TIMEOUT", "duplicate parameter")},
		// Names are all checked before any value.
		{[]string{"CONFIG", "SET", "timeout", "abc", "port", "1"}, failed("port", "can't set immutable config")},
		{[]string{"CONFIG", "SET", "port", "1", "nosuch", "1"}, failed("port", "can't set immutable config")},
		{[]string{"CONFIG", "SET", "nosuch", "1", "port", "1"}, svErr("ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'")},
		// All or nothing.
		{[]string{"CONFIG", "SET", "timeout", "5", "maxclients", "abc"}, failed("maxclients", "argument couldn't be parsed into an integer")},
		{[]string{"CONFIG", "GET", "timeout"}, "*2\r\n$7\r\ntimeout\r\n$1\r\n0\r\n"},
		{[]string{"CONFIG", "SET", "maxclients", "50", "Timeout", "7"}, "+OK\r\n"},
		{[]string{"CONFIG", "GET", "timeout", "maxclients"}, "*4\r\n$7\r\ntimeout\r\n$1\r\n7\r\n$10\r\nmaxclients\r\n$2\r\n50\r\n"},
		{[]string{"CONFIG", "SET", "proto-max-bulk-len", "1mb"}, "+OK\r\n"},
		{[]string{"CONFIG", "GET", "proto-max-bulk-len"}, "*2\r\n$18\r\nproto-max-bulk-len\r\n$7\r\n1048576\r\n"},
		{[]string{"CONFIG", "FOO"}, svErr("ERR unknown subcommand 'FOO'. Try CONFIG HELP.")},
		{[]string{"CONFIG", "RESETSTAT", "x"}, svErr("ERR wrong number of arguments for 'config|resetstat' command")},
	})
	// The engine picked the new values up (its change hooks).
	require.Equal(t, int64(1<<20), ts.srv.maxBulk.Load())

	for _, proto := range []int{2, 3} {
		rdb := ts.client(t, proto)
		require.NoError(t, rdb.ConfigSet(ctx, "maxclients", strconv.Itoa(60+proto)).Err())
		require.Equal(t, int64(60+proto), ts.srv.cfg.Int(config.MaxClients))
		err := rdb.ConfigSet(ctx, "nosuch", "1").Err()
		require.EqualError(t, err, "ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'")
		require.NoError(t, rdb.ConfigResetStat(ctx).Err())
	}
	help := r.do("CONFIG", "HELP")
	require.Contains(t, help, "+CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+GET <pattern>\r\n")
}

// TestConfigSetChoiceErrors: a yes/no parameter refuses another value with
// Redis's boolConfigSet text, and an enum lists its values in Redis's
// order (appendfsync: aof_fsync_enum is everysec, always, no). The
// replies are
// redis-server 7.0.15's.
func TestConfigSetChoiceErrors(t *testing.T) {
	r := newTestServer(t).raw(t)
	failed := func(name, reason string) string {
		return svErr("ERR CONFIG SET failed (possibly related to argument '" + name + "') - " + reason)
	}
	runSvSteps(t, r, []svStep{
		{[]string{"CONFIG", "SET", "stop-writes-on-bgsave-error", "maybe"}, failed("stop-writes-on-bgsave-error", "argument must be 'yes' or 'no'")},
		{[]string{"CONFIG", "SET", "aof-load-truncated", "1"}, failed("aof-load-truncated", "argument must be 'yes' or 'no'")},
		{[]string{"CONFIG", "SET", "appendfsync", "sometimes"}, failed("appendfsync", "argument(s) must be one of the following: everysec, always, no")},
		{[]string{"CONFIG", "SET", "loglevel", "loud"}, failed("loglevel", "argument(s) must be one of the following: debug, verbose, notice, warning")},
		{[]string{"CONFIG", "SET", "aof-load-truncated", "NO"}, "+OK\r\n"},
		{[]string{"CONFIG", "GET", "aof-load-truncated"}, "*2\r\n$18\r\naof-load-truncated\r\n$2\r\nno\r\n"},
		{[]string{"CONFIG", "SET", "appendfsync", "Always"}, "+OK\r\n"},
		{[]string{"CONFIG", "GET", "appendfsync"}, "*2\r\n$11\r\nappendfsync\r\n$6\r\nalways\r\n"},
	})
}

// TestConfigSetAliasAndName: CONFIG SET may name a parameter and its alias
// in one call, as in Redis, where an alias is a config entry of its own
// (registerConfigValue): both apply, the later wins. A name given twice,
// in any case, is still one.
// The replies are redis-server 7.0.15's.
func TestConfigSetAliasAndName(t *testing.T) {
	r := newTestServer(t).raw(t)
	failed := func(name, reason string) string {
		return svErr("ERR CONFIG SET failed (possibly related to argument '" + name + "') - " + reason)
	}
	runSvSteps(t, r, []svStep{
		{[]string{"CONFIG", "SET", "zset-max-ziplist-entries", "100", "zset-max-listpack-entries", "120"}, "+OK\r\n"},
		{[]string{"CONFIG", "GET", "zset-max-listpack-entries"}, "*2\r\n$25\r\nzset-max-listpack-entries\r\n$3\r\n120\r\n"},
		{[]string{"CONFIG", "SET", "zset-max-listpack-entries", "100", "ZSET-MAX-ZIPLIST-ENTRIES", "110"}, "+OK\r\n"},
		{[]string{"CONFIG", "GET", "zset-max-ziplist-entries"}, "*2\r\n$24\r\nzset-max-ziplist-entries\r\n$3\r\n110\r\n"},
		{[]string{"CONFIG", "SET", "zset-max-listpack-entries", "1", "ZSET-MAX-LISTPACK-ENTRIES", "2"}, failed("ZSET-MAX-LISTPACK-ENTRIES", "duplicate parameter")},
		{[]string{"CONFIG", "SET", "zset-max-ziplist-entries", "1", "zset-max-listpack-entries", "x"}, failed("zset-max-listpack-entries", "argument couldn't be parsed into an integer")},
		{[]string{"CONFIG", "GET", "zset-max-listpack-entries"}, "*2\r\n$25\r\nzset-max-listpack-entries\r\n$3\r\n110\r\n"},
	})
}

// TestConfigSetZsetValueIsMemory: zset-max-listpack-value is a memory
// value in Redis (createSizeTConfig with MEMORY_CONFIG), so "1kb" sets
// 1024 and a value that is not one is refused with Redis's text.
// zset-max-listpack-entries stays an integer, as in Redis. The replies
// are redis-server 7.0.15's.
func TestConfigSetZsetValueIsMemory(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	failed := func(name, reason string) string {
		return svErr("ERR CONFIG SET failed (possibly related to argument '" + name + "') - " + reason)
	}
	runSvSteps(t, r, []svStep{
		{[]string{"CONFIG", "SET", "zset-max-listpack-value", "1kb"}, "+OK\r\n"},
		{[]string{"CONFIG", "GET", "zset-max-listpack-value"}, "*2\r\n$23\r\nzset-max-listpack-value\r\n$4\r\n1024\r\n"},
		{[]string{"CONFIG", "SET", "zset-max-ziplist-value", "1k"}, "+OK\r\n"},
		{[]string{"CONFIG", "GET", "zset-max-ziplist-value"}, "*2\r\n$22\r\nzset-max-ziplist-value\r\n$4\r\n1000\r\n"},
		{[]string{"CONFIG", "SET", "zset-max-listpack-value", "-1"}, failed("zset-max-listpack-value", "argument must be a memory value")},
		{[]string{"CONFIG", "SET", "zset-max-listpack-value", " 1"}, failed("zset-max-listpack-value", "argument must be a memory value")},
		{[]string{"CONFIG", "SET", "zset-max-listpack-entries", "1kb"}, failed("zset-max-listpack-entries", "argument couldn't be parsed into an integer")},
		{[]string{"CONFIG", "SET", "zset-max-listpack-value", "0"}, "+OK\r\n"},
	})
	require.Equal(t, int64(0), ts.srv.cfg.Int(config.ZSetMaxListpackValue))
}

// TestConfigSetErrorNamesTheAlias: a bad value is reported under the
// parameter's name as Redis spells it, lower case, and the alias's when
// the alias was given (Redis's alias is an entry of its own, named by the
// alias), not under the parameter the alias stands for. The replies are
// redis-server 7.0.15's.
func TestConfigSetErrorNamesTheAlias(t *testing.T) {
	r := newTestServer(t).raw(t)
	failed := func(name, reason string) string {
		return svErr("ERR CONFIG SET failed (possibly related to argument '" + name + "') - " + reason)
	}
	runSvSteps(t, r, []svStep{
		{[]string{"CONFIG", "SET", "zset-max-ziplist-value", "-1"}, failed("zset-max-ziplist-value", "argument must be a memory value")},
		{[]string{"CONFIG", "SET", "ZSET-MAX-ZIPLIST-ENTRIES", "x"}, failed("zset-max-ziplist-entries", "argument couldn't be parsed into an integer")},
		{[]string{"CONFIG", "SET", "timeout", "1", "Zset-Max-Ziplist-Entries", "x"}, failed("zset-max-ziplist-entries", "argument couldn't be parsed into an integer")},
		{[]string{"CONFIG", "SET", "zset-max-listpack-entries", "x"}, failed("zset-max-listpack-entries", "argument couldn't be parsed into an integer")},
		{[]string{"CONFIG", "SET", "TIMEOUT", "x"}, failed("timeout", "argument couldn't be parsed into an integer")},
	})
}

func TestParseConfigSet(t *testing.T) {
	tests := []struct {
		args    []string
		want    []configChange
		wantErr string
	}{
		{[]string{"timeout", "5"}, []configChange{{"timeout", "timeout", "5"}}, ""},
		{[]string{"TIMEOUT", "5", "maxclients", "9"}, []configChange{{"timeout", "timeout", "5"}, {"maxclients", "maxclients", "9"}}, ""},
		{[]string{"timeout"}, nil, errSyntax},
		{[]string{"a\r\nb", "1"}, nil, "ERR Unknown option or number of arguments for CONFIG SET - 'a  b'"},
		{[]string{"timeout", "x", "nosuch", "1"}, nil, "ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'"},
	}
	for i, tt := range tests {
		var args [][]byte
		for _, a := range tt.args {
			args = append(args, []byte(a))
		}
		have, msg := parseConfigSet(args)
		if msg != tt.wantErr || (msg == "" && fmt.Sprint(have) != fmt.Sprint(tt.want)) {
			t.Errorf("step %d %q: have %v %q, want %v %q", i, tt.args, have, msg, tt.want, tt.wantErr)
		}
	}
}

func TestDbsizeFlush(t *testing.T) {
	ts := newTestServer(t)
	for _, proto := range []int{2, 3} {
		rdb := ts.client(t, proto)
		for i, flush := range []func() error{
			func() error { return rdb.FlushDB(ctx).Err() },
			func() error { return rdb.FlushAll(ctx).Err() },
			func() error { return rdb.FlushAllAsync(ctx).Err() },
			func() error { return rdb.FlushDBAsync(ctx).Err() },
		} {
			svPut(t, ts, "a", 0)
			svPut(t, ts, "b", time.Hour)
			n, err := rdb.DBSize(ctx).Result()
			require.NoError(t, err)
			require.Equal(t, int64(2), n, "RESP%d step %d", proto, i)
			require.NoError(t, flush(), "RESP%d step %d", proto, i)
			n, err = rdb.DBSize(ctx).Result()
			require.NoError(t, err)
			require.Zero(t, n, "RESP%d step %d: flushed", proto, i)
		}
	}
	runSvSteps(t, ts.raw(t), []svStep{
		{[]string{"DBSIZE", "x"}, svErr("ERR wrong number of arguments for 'dbsize' command")},
		{[]string{"FLUSHALL", "sync"}, "+OK\r\n"},
		{[]string{"FLUSHDB", "ASYNC"}, "+OK\r\n"},
		{[]string{"FLUSHALL", "foo"}, svErr("ERR syntax error")},
		{[]string{"FLUSHALL", "SYNC", "ASYNC"}, svErr("ERR syntax error")},
		{[]string{"FLUSHDB", "async", "async"}, svErr("ERR syntax error")},
	})
}

func TestTimeLastsave(t *testing.T) {
	ts := newTestServer(t)
	for _, proto := range []int{2, 3} {
		rdb := ts.client(t, proto)
		now := time.Unix(0, ts.clock.Now())
		have, err := rdb.Time(ctx).Result()
		require.NoError(t, err)
		require.True(t, now.Truncate(time.Microsecond).Equal(have), "RESP%d: have %v, want %v", proto, have, now)
		ts.clock.Advance(1500 * time.Millisecond)
		have, err = rdb.Time(ctx).Result()
		require.NoError(t, err)
		require.True(t, now.Add(1500*time.Millisecond).Truncate(time.Microsecond).Equal(have), "have %v", have)
		last, err := rdb.LastSave(ctx).Result()
		require.NoError(t, err)
		require.Equal(t, ts.srv.start.Unix(), last)
	}
	ns := ts.clock.Now()
	sec, usec := strconv.FormatInt(ns/1e9, 10), strconv.FormatInt(ns%1e9/1e3, 10)
	runSvSteps(t, ts.raw(t), []svStep{
		{[]string{"TIME"}, fmt.Sprintf("*2\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(sec), sec, len(usec), usec)},
		{[]string{"TIME", "x"}, svErr("ERR wrong number of arguments for 'time' command")},
		{[]string{"LASTSAVE", "x"}, svErr("ERR wrong number of arguments for 'lastsave' command")},
	})
}

func TestShutdown(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	runSvSteps(t, r, []svStep{
		{[]string{"SHUTDOWN", "foo"}, svErr("ERR syntax error")},
		{[]string{"SHUTDOWN", "NOSAVE", "SAVE"}, svErr("ERR syntax error")},
		{[]string{"SHUTDOWN", "NOW", "ABORT"}, svErr("ERR syntax error")},
		{[]string{"SHUTDOWN", "ABORT"}, svErr("ERR No shutdown in progress.")},
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"SHUTDOWN"}, svErr("ERR Command not allowed inside a transaction")},
		{[]string{"EXEC"}, svErr("EXECABORT Transaction discarded because of previous errors.")},
		{[]string{"COMMAND", "INFO", "SHUTDOWN"}, "*1\r\n*10\r\n$8\r\nshutdown\r\n:-1\r\n*6\r\n+admin\r\n+noscript\r\n+loading\r\n+stale\r\n+no_multi\r\n+allow_busy\r\n:0\r\n:0\r\n:0\r\n*3\r\n+@admin\r\n+@slow\r\n+@dangerous\r\n*0\r\n*0\r\n*0\r\n"},
	})
	select {
	case <-ts.shutdowns:
		t.Fatal("a refused SHUTDOWN requested a shutdown")
	default:
	}
	// SHUTDOWN gets no reply until main decides (shutdown_test.go).
	_, err := r.nc.Write([]byte("*3\r\n$8\r\nSHUTDOWN\r\n$6\r\nNOSAVE\r\n$3\r\nNOW\r\n"))
	require.NoError(t, err)
	select {
	case req := <-ts.shutdowns:
		require.Equal(t, -1, req.Save)
	case <-time.After(5 * time.Second):
		t.Fatal("SHUTDOWN did not request a shutdown")
	}
}

func TestParseShutdown(t *testing.T) {
	tests := []struct {
		args []string
		want shutdownOpts
		ok   bool
	}{
		{nil, shutdownOpts{}, true},
		{[]string{"nosave", "now", "force"}, shutdownOpts{noSave: true, now: true, force: true}, true},
		{[]string{"FORCE", "SAVE"}, shutdownOpts{save: true, force: true}, true},
		{[]string{"abort"}, shutdownOpts{abort: true}, true},
		{[]string{"abort", "force"}, shutdownOpts{}, false},
		{[]string{"save", "nosave"}, shutdownOpts{}, false},
		{[]string{"later"}, shutdownOpts{}, false},
	}
	for i, tt := range tests {
		var args [][]byte
		for _, a := range tt.args {
			args = append(args, []byte(a))
		}
		have, ok := parseShutdown(args)
		if ok != tt.ok || (ok && have != tt.want) {
			t.Errorf("step %d %q: have %+v %v, want %+v %v", i, tt.args, have, ok, tt.want, tt.ok)
		}
	}
}

func TestCluster(t *testing.T) {
	ts := newTestServer(t)
	for _, proto := range []int{2, 3} {
		rdb := ts.client(t, proto)
		for key, want := range map[string]int64{"somekey": 11058, "foo{hash_tag}": 2515, "bar{hash_tag}": 2515, "foo": 12182} {
			have, err := rdb.ClusterKeySlot(ctx, key).Result()
			require.NoError(t, err)
			require.Equal(t, want, have, "RESP%d CLUSTER KEYSLOT %s", proto, key)
		}
		require.EqualError(t, rdb.ClusterInfo(ctx).Err(), errClusterDisabled)
	}
	r := ts.raw(t)
	runSvSteps(t, r, []svStep{
		{[]string{"CLUSTER"}, svErr("ERR wrong number of arguments for 'cluster' command")},
		{[]string{"CLUSTER", "KEYSLOT"}, svErr("ERR wrong number of arguments for 'cluster|keyslot' command")},
		{[]string{"CLUSTER", "INFO", "x"}, svErr("ERR wrong number of arguments for 'cluster|info' command")},
		{[]string{"CLUSTER", "NODES"}, svErr(errClusterDisabled)},
		{[]string{"CLUSTER", "SLOTS"}, svErr(errClusterDisabled)},
		{[]string{"CLUSTER", "SHARDS"}, svErr(errClusterDisabled)},
		{[]string{"CLUSTER", "Foo"}, svErr("ERR unknown subcommand 'Foo'. Try CLUSTER HELP.")},
		{[]string{"CLUSTER", "KEYSLOT", ""}, ":0\r\n"},
	})
	require.Contains(t, r.do("CLUSTER", "HELP"), "+KEYSLOT <key>\r\n")
}

// TestMemoryPurge: MEMORY PURGE hands the heap's free pages back, so that
// an RSS read after it (bench/memory.sh) does not depend on when the last
// collection ran.
func TestMemoryPurge(t *testing.T) {
	ts := newTestServer(t)
	r := ts.raw(t)
	runSvSteps(t, r, []svStep{
		{[]string{"MEMORY"}, svErr("ERR wrong number of arguments for 'memory' command")},
		{[]string{"MEMORY", "PURGE", "x"}, svErr("ERR wrong number of arguments for 'memory|purge' command")},
		{[]string{"MEMORY", "Foo"}, svErr("ERR unknown subcommand 'Foo'. Try MEMORY HELP.")},
	})
	require.Contains(t, r.do("MEMORY", "HELP"), "+PURGE\r\n")

	m := []metrics.Sample{
		{Name: "/gc/cycles/forced:gc-cycles"},
		{Name: "/memory/classes/heap/free:bytes"},
	}
	metrics.Read(m)
	forced := m[0].Value.Uint64()
	garbage := make([][]byte, 64)
	for i := range garbage {
		garbage[i] = make([]byte, 1<<20)
	}
	garbage = nil
	require.NoError(t, ts.client(t, 2).Do(ctx, "MEMORY", "PURGE").Err())
	metrics.Read(m)
	require.Greater(t, m[0].Value.Uint64(), forced, "MEMORY PURGE ran a collection")
	require.Less(t, m[1].Value.Uint64(), uint64(16<<20), "MEMORY PURGE returned the 64 MiB of garbage")
	runtime.KeepAlive(garbage)
}

// FuzzServerArgs feeds the argument parsers of the server commands. They
// must never panic, and what they accept must be well formed.
func FuzzServerArgs(f *testing.F) {
	for _, s := range []string{
		"", "nosave now force", "abort", "save nosave", "async", "sync async",
		"all", "default commandstats", "filterby pattern c*", "filterby aclcat admin",
		"timeout 5 maxclients 10", "timeout", "port 1", "timeout 5 TIMEOUT 6", "maxclients abc",
		"watch a b", "test.movable 2 a b", "test.movable 99 a", "cl.throttleall 1 k 1 2 3", "cl.throttle k 1 2 3", "cl.throttlems k 1 2 3",
		"config get x", "mset a b c", "zunionstore d 2 a b",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var args [][]byte
		for _, w := range strings.Split(s, " ") {
			args = append(args, []byte(w))
		}
		if o, ok := parseShutdown(args); ok {
			if o.noSave && o.save || o.abort && (o.noSave || o.save || o.now || o.force) {
				t.Fatalf("parseShutdown(%q) accepted %+v", s, o)
			}
		}
		if validFlushArgs(args) && len(args) > 1 {
			t.Fatalf("validFlushArgs(%q) accepted several options", s)
		}
		parseInfoSections(args)
		if lf, ok := parseListFilter(args); ok && len(args) != 0 && lf.kind == "" {
			t.Fatalf("parseListFilter(%q) lost its filter", s)
		}
		if changes, msg := parseConfigSet(args); msg == "" {
			if 2*len(changes) != len(args) {
				t.Fatalf("parseConfigSet(%q) = %v", s, changes)
			}
			for _, ch := range changes {
				p, ok := config.Lookup(ch.name)
				if !ok || !p.Mutable {
					t.Fatalf("parseConfigSet(%q) accepted %q", s, ch.name)
				}
				if _, err := p.Check(ch.value); err != nil {
					t.Fatalf("parseConfigSet(%q) accepted %s=%q: %v", s, ch.name, ch.value, err)
				}
			}
		} else if strings.ContainsAny(msg, "\r\n") {
			t.Fatalf("parseConfigSet(%q): error with a line break: %q", s, msg)
		}
		if len(args) > 0 {
			idx, msg := commandKeys(args)
			if msg == "" && len(idx) == 0 {
				t.Fatalf("commandKeys(%q): no keys and no error", s)
			}
			for _, i := range idx {
				if i < 1 || i >= len(args) {
					t.Fatalf("commandKeys(%q) = %v: out of range", s, idx)
				}
			}
		}
	})
}

// TestTotalCommandsAsRedis: total_commands_processed and commandstats
// count what Redis's call() counts, checked against redis-server 7.0.15
// with the same session: a command once it ran (INFO not itself), not one
// refused before it ran, nor one only queued by a transaction that EXEC
// then aborted; and nothing the log's replay ran at start-up (Redis loads
// its AOF outside call()).
func TestTotalCommandsAsRedis(t *testing.T) {
	ts := newTestServer(t)
	ts.srv.resetStats()
	records := [][]string{{"SET", "a", "1"}, {"ZADD", "z", "1", "m"}, {"SET", "b", "2"}}
	_, err := ts.srv.Replay(func() ([][]byte, error) {
		if len(records) == 0 {
			return nil, io.EOF
		}
		var args [][]byte
		for _, a := range records[0] {
			args = append(args, []byte(a))
		}
		records = records[1:]
		return args, nil
	})
	require.NoError(t, err)
	r := ts.raw(t)
	total := func() string {
		text := r.do("INFO", "stats", "commandstats")
		f := infoFields(t, text[strings.Index(text, "\r\n")+2:])
		for _, name := range []string{"cmdstat_set", "cmdstat_zadd"} {
			_, ok := f[name]
			require.False(t, ok, "%s counts the replay", name)
		}
		return f["total_commands_processed"]
	}
	require.Equal(t, "0", total(), "the replay counts nothing")
	for _, req := range [][]string{{"PING"}, {"DBSIZE"}, {"DBSIZE"}, {"DBSIZE", "x"}, {"CONFIG", "SET", "nosuch", "1"}, {"CLUSTER", "INFO"}, {"HELLO", "4"}} {
		r.do(req...)
	}
	require.Equal(t, "7", total(), "INFO, PING, DBSIZE twice, CONFIG, CLUSTER, HELLO; not DBSIZE x")
	require.Equal(t, "+OK\r\n", r.do("MULTI"))
	require.Equal(t, "+QUEUED\r\n", r.do("ZADD", "y", "1", "m"))
	r.do("GET")
	require.Equal(t, "-EXECABORT Transaction discarded because of previous errors.\r\n", r.do("EXEC"))
	require.Equal(t, "10", total(), "INFO, MULTI and EXEC; not the queued ZADD, nor GET")
	require.Equal(t, "+OK\r\n", r.do("CONFIG", "RESETSTAT"))
	require.Equal(t, "1", total(), "CONFIG RESETSTAT, counted once it ran")
}

// TestConfigOutputBufferLimitDiff: CONFIG SET and GET of
// client-output-buffer-limit against a redis-server: the groups a value
// names change, the others stay; the canonical form and the errors are
// Redis's. Run where it cannot disturb: the value is restored after.
func TestConfigOutputBufferLimitDiff(t *testing.T) {
	real := dialRaw(t, redisAddr(t))
	old := real.do("CONFIG", "GET", "client-output-buffer-limit")
	t.Cleanup(func() {
		r := dialRaw(t, redisAddr(t))
		r.do("CONFIG", "SET", "client-output-buffer-limit", "normal 0 0 0 slave 256mb 64mb 60 pubsub 32mb 8mb 60")
	})
	require.Contains(t, old, "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60", "redis-server's limits are not its defaults")
	d := &differ{t: t, real: real, ours: newTestServer(t).raw(t), maxFails: 1}
	for _, v := range []string{
		"", "pubsub 1mb 0 0", "slave 1gb 1k 5 replica 2mb 1mb 6", "NORMAL 1kb 2KB 3", "normal 0 0 0 pubsub 32mb 8mb 60",
		"foo", "normal 0 0", "foo 0 0 0", "master 0 0 0", "normal -1 0 0", "normal 1x 0 0", "normal 0 0 -1",
		"normal 0 0 1.5", "pubsub 1 1 1 normal 5 5 x", "replica 256mb 64mb 60",
	} {
		d.check([]string{"CONFIG", "SET", "client-output-buffer-limit", v})
		d.check([]string{"CONFIG", "GET", "client-output-buffer-limit"})
	}
}
