package command

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/internal/glob"
	"github.com/ratekv/ratekv/shards"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// applyRules applies ops to a new user's rules as ACL SETUSER does.
func applyRules(ops []string) (*aclRules, error) {
	aclSetup()
	merged, bad := mergeSelectors(ops)
	if bad >= 0 {
		return nil, fmt.Errorf("unmatched parenthesis at %d", bad)
	}
	r := newRules(0)
	for _, op := range merged {
		if err := r.apply(op, 0); err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
	}
	return r, nil
}

func TestACLRules(t *testing.T) {
	sha := hashPassword([]byte("pw"))
	for i, tt := range []struct {
		rules string
		want  string // ACL LIST's description, or the error
	}{
		0:  {"", "off resetchannels -@all"},
		1:  {"on nopass allkeys allchannels allcommands", "on nopass ~* &* +@all"},
		2:  {"on >pw", "on #" + sha + " resetchannels -@all"},
		3:  {"on >pw >pw #" + sha, "on #" + sha + " resetchannels -@all"},
		4:  {">pw <pw", "off resetchannels -@all"},
		5:  {">pw !" + sha, "off resetchannels -@all"},
		6:  {">pw resetpass", "off resetchannels -@all"},
		7:  {">pw nopass", "off nopass resetchannels -@all"},
		8:  {"nopass >pw", "off #" + sha + " resetchannels -@all"},
		9:  {"<pw", "<pw: " + errRuleNoPass.Error()},
		10: {"#abc", "#abc: " + errRuleBadHash.Error()},
		11: {"#" + strings.ToUpper(sha), "#" + strings.ToUpper(sha) + ": " + errRuleBadHash.Error()},
		12: {"+@ratelimit ~rl:*", "off ~rl:* resetchannels -@all +@ratelimit"},
		13: {"+@all -@ratelimit", "off resetchannels +@all -@ratelimit"},
		14: {"+@all -cl.throttle", "off resetchannels +@all -cl.throttle"},
		15: {"+get +set -get", "off resetchannels -@all +set"},
		16: {"+config|get", "off resetchannels -@all +config|get"},
		17: {"+config -config|set", "off resetchannels -@all +config -config|set"},
		18: {"+select|0 +SELECT|0", "off resetchannels -@all +select|0"},
		19: {"+select|0 +select", "off resetchannels -@all +select"},
		20: {"~a %R~b %W~c %RW~d %R~a", "off ~a %R~b %W~c ~d resetchannels -@all"},
		21: {"~a allkeys", "off ~* resetchannels -@all"},
		22: {"~a resetkeys ~b", "off ~b resetchannels -@all"},
		23: {"&a &b &a", "off resetchannels &a &b -@all"},
		24: {"allchannels resetchannels &c", "off resetchannels &c -@all"},
		25: {"~* ~a", "~a: " + errRuleKeyAll.Error()},
		26: {"&* &a", "&a: " + errRuleChanAll.Error()},
		27: {"+nosuch", "+nosuch: " + errRuleUnknown.Error()},
		28: {"+@nosuch", "+@nosuch: " + errRuleUnknown.Error()},
		29: {"-select|0", "-select|0: " + errRuleUnknown.Error()},
		30: {"+config|get|x", "+config|get|x: " + errRuleFirstArgs.Error()},
		31: {"+select|", "+select|: " + errRuleSyntax.Error()},
		32: {"whatever", "whatever: " + errRuleSyntax.Error()},
		33: {"%Q~a", "%Q~a: " + errRuleSyntax.Error()},
		34: {"%~a", "%~a: " + errRuleSyntax.Error()},
		35: {"~a\x00b", "~a\x00b: " + errRuleSyntax.Error()},
		36: {"on (+get ~a) (+set ~b &c)", "on resetchannels -@all (~a resetchannels -@all +get) (~b resetchannels &c -@all +set)"},
		37: {"on (+get ~a) clearselectors", "on resetchannels -@all"},
		38: {"(+get ~a", "unmatched parenthesis at 0"},
		39: {"(+nosuch)", "(+nosuch): " + errRuleUnknown.Error()},
		40: {"on >pw +@all ~* (+get) reset", "off sanitize-payload resetchannels -@all"},
		41: {"skip-sanitize-payload", "off skip-sanitize-payload resetchannels -@all"},
		42: {"on off", "off resetchannels -@all"},
		43: {"off on", "on resetchannels -@all"},
		44: {"nocommands +get allcommands", "off resetchannels +@all"},
		45: {"allcommands -@all", "off resetchannels -@all"},
		46: {"ON NOPASS ALLKEYS +@ALL", "on nopass ~* resetchannels +@all"},
	} {
		r, err := applyRules(strings.Fields(tt.rules))
		have := ""
		if err != nil {
			have = err.Error()
		} else {
			have = r.describe()
		}
		if have != tt.want {
			t.Errorf("step %d: %q: have %q, want %q", i, tt.rules, have, tt.want)
		}
	}
}

// sameRules reports whether a and b allow the same things.
func sameRules(a, b *aclRules) bool {
	if a.flags != b.flags || strings.Join(a.passwords, " ") != strings.Join(b.passwords, " ") || len(a.selectors) != len(b.selectors) {
		return false
	}
	for i, s := range a.selectors {
		o := b.selectors[i]
		if s.cmds != o.cmds || s.flags != o.flags || s.keysText() != o.keysText() || s.channelsText() != o.channelsText() ||
			fmt.Sprint(s.firstArgs) != fmt.Sprint(o.firstArgs) && (len(s.firstArgs) != 0 || len(o.firstArgs) != 0) {
			return false
		}
	}
	return true
}

// checkRoundTrip checks that a user's description rebuilds its rules, as
// ACL SAVE and LOAD need (Redis checks the bitmap and aborts otherwise).
func checkRoundTrip(t *testing.T, r *aclRules) {
	t.Helper()
	desc := r.describe()
	back, err := applyRules(strings.Split(desc, " "))
	require.NoError(t, err, desc)
	require.True(t, sameRules(r, back), "%q does not rebuild the same rules: %q", desc, back.describe())
}

func TestACLDescribeRoundTrip(t *testing.T) {
	for _, rules := range []string{
		"on nopass ~* &* +@all",
		"+@all -@string +get -@dangerous +config|get",
		"-@all +@read -get +@ratelimit +select|0 +select|1",
		"-@all +client -client|kill +@hash -hdel",
		"+@all -@read +@fast -@write +@keyspace",
		"on >a >b %R~r* %W~w* ~x &c (+get ~a) (+@all -flushall %R~*)",
	} {
		r, err := applyRules(strings.Fields(rules))
		require.NoError(t, err)
		checkRoundTrip(t, r)
	}
}

// FuzzACLRules applies arbitrary rules: never a panic, and whatever is
// accepted describes itself faithfully.
func FuzzACLRules(f *testing.F) {
	for _, s := range []string{"on >p ~* +@all", "+@all -@string +get", "(+get ~a) %R~b &c", "+select|0 -@all +client|id",
		"%RW~x %W~x", "+@ratelimit -cl.throttle +config|set", "reset nopass allchannels"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := applyRules(strings.Fields(s))
		if err != nil {
			return
		}
		checkRoundTrip(t, r)
	})
}

// aclServer is a test server whose clients get loggers' output in buf.
func aclServer(t *testing.T, conf ...string) (*testServer, *syncBuffer) {
	t.Helper()
	cfg := config.New()
	for i := 0; i+1 < len(conf); i += 2 {
		require.NoError(t, cfg.Set(conf[i], conf[i+1]))
	}
	clock := &fakeClock{}
	clock.ns.Store(time.Now().UnixNano())
	store := shards.New(shards.Options{Shards: 8, Now: clock.Now})
	t.Cleanup(store.Close)
	buf := &syncBuffer{}
	eng := NewEngine(store, cfg, slog.New(slog.NewTextHandler(buf, nil)))
	require.NoError(t, eng.LoadUsers())
	return serveEngine(t, eng, store, clock, cfg), buf
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// steps sends each request on its connection and compares the replies.
type aclStep struct {
	conn int
	args []string
	want string
}

func runACLSteps(t *testing.T, conns []*rawConn, steps []aclStep) {
	t.Helper()
	for i, s := range steps {
		if have := conns[s.conn].do(s.args...); have != s.want {
			t.Errorf("step %d: %q: have %q, want %q", i, s.args, have, s.want)
		}
	}
}

const (
	okReply   = "+OK\r\n"
	noPermKey = "-" + errNoPermKey + "\r\n"
	wrongPass = "-" + errWrongPass + "\r\n"
)

func noPermCmd(name string) string { return "-" + sprintf(errNoPermCmd, name) + "\r\n" }

// TestACLRateLimitUser is the README's application user: it may rate-limit
// under rl:* and do nothing else.
func TestACLRateLimitUser(t *testing.T) {
	ts, _ := aclServer(t)
	admin, app := ts.raw(t), ts.raw(t)
	runACLSteps(t, []*rawConn{admin, app}, []aclStep{
		{0, a("ACL", "SETUSER", "app", "on", ">secret", "+@ratelimit", "~rl:*"), okReply},
		{1, a("AUTH", "app", "wrong"), wrongPass},
		{1, a("AUTH", "app", "secret"), okReply},
		{1, a("CL.THROTTLE", "rl:a", "10", "100", "60"), "*5\r\n:0\r\n:11\r\n:10\r\n:-1\r\n:1\r\n"},
		{1, a("CL.THROTTLE", "other", "10", "100", "60"), noPermKey},
		{1, a("CL.THROTTLEALL", "2", "rl:a", "10", "100", "60", "x", "10", "100", "60"), noPermKey},
		{1, a("SL.THROTTLE", "rl:s", "10", "60"), "*5\r\n:0\r\n:10\r\n:9\r\n:-1\r\n:60\r\n"},
		{1, a("GET", "rl:a"), noPermCmd("get")},
		{1, a("FLUSHALL"), noPermCmd("flushall")},
		{1, a("CONFIG", "SET", "requirepass", "x"), noPermCmd("config|set")},
		{1, a("ACL", "SETUSER", "app", "+@all"), noPermCmd("acl|setuser")},
		{1, a("KEYS", "*"), noPermCmd("keys")},
		{1, a("EVAL", "return 1", "0"), noPermCmd("eval")},
		{1, a("PING"), noPermCmd("ping")},
		{1, a("AUTH", "app", "secret"), okReply}, // no_auth commands are always allowed
		{0, a("ACL", "SETUSER", "app", "+@connection"), okReply},
		{1, a("PING"), "+PONG\r\n"},
		{1, a("ACL", "WHOAMI"), noPermCmd("acl|whoami")},
	})
	info := admin.do("INFO", "stats")
	require.Contains(t, info, "acl_access_denied_cmd:8\r\n")
	require.Contains(t, info, "acl_access_denied_key:2\r\n")
	require.Contains(t, info, "acl_access_denied_auth:1\r\n")
	require.Contains(t, admin.do("CLIENT", "LIST"), "user=app ")
	require.Contains(t, admin.do("COMMAND", "INFO", "cl.throttle"), "+@ratelimit\r\n")
	require.Contains(t, admin.do("ACL", "CAT", "ratelimit"), "$11\r\ncl.throttle\r\n")
	// A user deleted is disconnected.
	require.Equal(t, ":1\r\n", admin.do("ACL", "DELUSER", "app"))
	app.nc.SetDeadline(time.Now().Add(5 * time.Second))
	_, err := app.rd.ReadByte()
	require.Error(t, err)
}

// TestACLFamilies checks key and command permissions on every command
// family, for a read-only user and for a write-only one.
func TestACLFamilies(t *testing.T) {
	ts, _ := aclServer(t)
	admin, ro, wo := ts.raw(t), ts.raw(t), ts.raw(t)
	require.Equal(t, okReply, admin.do("ACL", "SETUSER", "ro", "on", "nopass", "+@all", "-@dangerous", "%R~r*", "%W~w*", "~rw*"))
	require.Equal(t, okReply, ro.do("AUTH", "ro", "x"))
	require.Equal(t, okReply, admin.do("ACL", "SETUSER", "wo", "on", "nopass", "+@write", "-@read", "allkeys"))
	require.Equal(t, okReply, wo.do("AUTH", "wo", "x"))
	for i, tt := range []struct {
		read, write []string // {cmd, args...}; the key is the second word
		writeReads  bool     // the write needs read access too (CL.THROTTLE replies with the state)
	}{
		{a("GET", "K"), a("SET", "K", "v"), false},
		{a("GETRANGE", "K", "0", "-1"), a("APPEND", "K", "v"), false},
		{a("HGET", "K", "f"), a("HSET", "K", "f", "v"), false},
		{a("LRANGE", "K", "0", "-1"), a("LPUSH", "K", "v"), false},
		{a("ZSCORE", "K", "m"), a("ZADD", "K", "1", "m"), false},
		{a("LINDEX", "K", "0"), a("EXPIRE", "K", "10"), false},
		{a("CL.PEEK", "K", "10", "100", "60"), a("CL.THROTTLE", "K", "10", "100", "60"), true},
		{a("MGET", "K"), a("MSET", "K", "v"), false},
	} {
		with := func(args []string, key string) []string {
			out := append([]string(nil), args...)
			out[1] = key
			return out
		}
		// Reads of r*, writes of w*, anything of rw*; nothing else.
		require.NotEqual(t, noPermKey, ro.do(with(tt.read, "r1")...), "case %d", i)
		require.Equal(t, noPermKey, ro.do(with(tt.write, "r1")...), "case %d", i)
		require.Equal(t, noPermKey, ro.do(with(tt.read, "w1")...), "case %d", i)
		if tt.writeReads {
			require.Equal(t, noPermKey, ro.do(with(tt.write, "w1")...), "case %d", i)
		} else {
			require.NotEqual(t, noPermKey, ro.do(with(tt.write, "w1")...), "case %d", i)
		}
		require.NotContains(t, ro.do(with(tt.write, "rw1")...), "NOPERM", "case %d", i)
		require.Equal(t, noPermKey, ro.do(with(tt.read, "x1")...), "case %d", i)
		require.Equal(t, noPermCmd(strings.ToLower(tt.read[0])), wo.do(with(tt.read, "x1")...), "case %d", i)
		require.NotContains(t, wo.do(with(tt.write, "x1")...), "NOPERM", "case %d", i)
	}
	// Movable keys: LMOVE's source is read and written, its destination written.
	require.Equal(t, noPermKey, ro.do("LMOVE", "r1", "w1", "LEFT", "RIGHT"))
	require.NotContains(t, ro.do("LMOVE", "rw1", "w1", "LEFT", "RIGHT"), "NOPERM")
	require.Equal(t, noPermKey, ro.do("CL.THROTTLEALL", "2", "rw1", "1", "2", "3", "r1", "1", "2", "3"))
	require.Equal(t, noPermKey, ro.do("EVAL", "return 1", "2", "rw1", "r1"))
	require.Equal(t, noPermCmd("flushall"), ro.do("FLUSHALL"))
	require.Equal(t, noPermKey, ro.do("SET", "r1", "v", "GET"))
	require.NotContains(t, ro.do("SET", "w1", "v"), "NOPERM")
	require.Equal(t, noPermKey, ro.do("SET", "w1", "v", "GET"))
}

// TestACLMultiAndScripts checks MULTI, EXEC and redis.call: a command is
// refused when queued, checked again at EXEC, and checked inside scripts.
func TestACLMultiAndScripts(t *testing.T) {
	ts, _ := aclServer(t)
	admin, u := ts.raw(t), ts.raw(t)
	runACLSteps(t, []*rawConn{admin, u}, []aclStep{
		{0, a("ACL", "SETUSER", "u", "on", "nopass", "+@all", "~k*"), okReply},
		{1, a("AUTH", "u", "x"), okReply},
		{1, a("MULTI"), okReply},
		{1, a("SET", "x", "1"), noPermKey},
		{1, a("SET", "k1", "1"), "+QUEUED\r\n"},
		{1, a("EXEC"), "-" + errExecAbort + "\r\n"},
		{1, a("MULTI"), okReply},
		{1, a("SET", "k1", "1"), "+QUEUED\r\n"},
		{1, a("GET", "k1"), "+QUEUED\r\n"},
		{0, a("ACL", "SETUSER", "u", "-get"), okReply},
		{1, a("EXEC"), "*2\r\n+OK\r\n-" + errNoPermExec + "no permission to execute the command or subcommand\r\n"},
		{1, a("MULTI"), okReply},
		{1, a("SET", "k1", "1"), "+QUEUED\r\n"},
		{0, a("ACL", "SETUSER", "u", "resetkeys", "~j*"), okReply},
		{1, a("EXEC"), "*1\r\n-" + errNoPermExec + "no permission to touch the specified keys\r\n"},
		{0, a("ACL", "SETUSER", "u", "-exec"), okReply},
		{1, a("MULTI"), okReply},
		{1, a("EXEC"), "-" + errExecAbortBecause + strings.TrimPrefix(noPermCmd("exec"), "-")},
		{1, a("EVAL", "return redis.call('set', KEYS[1], 'v')", "1", "j1"), okReply},
		{1, a("EVAL", "return redis.pcall('set', 'x', 'v')", "1", "j1"), "-ERR " + errScriptNoPermKey + "\r\n"},
		{1, a("EVAL", "return redis.pcall('get', 'j1')", "1", "j1"), "-ERR " + errScriptNoPermCmd + "\r\n"},
		{1, a("EVALSHA", "0000000000000000000000000000000000000000", "1", "x"), noPermKey},
	})
	log := admin.do("ACL", "LOG")
	require.Contains(t, log, "$7\r\ncontext\r\n$3\r\nlua\r\n$6\r\nobject\r\n$3\r\nget\r\n")
}

// TestACLCommandReplies covers what the differential test cannot: replies
// that depend on ratekv's own commands, the log's bounds, GENPASS.
func TestACLCommandReplies(t *testing.T) {
	ts, _ := aclServer(t, "acllog-max-len", "3")
	c := ts.raw(t)
	require.Equal(t, "*2\r\n$7\r\ndefault\r\n$1\r\nz\r\n", func() string {
		c.do("ACL", "SETUSER", "z")
		return c.do("ACL", "USERS")
	}())
	require.Equal(t, "*2\r\n$34\r\nuser default on nopass ~* &* +@all\r\n$30\r\nuser z off resetchannels -@all\r\n", c.do("ACL", "LIST"))
	cats := c.do("ACL", "CAT")
	require.True(t, strings.HasPrefix(cats, "*22\r\n$8\r\nkeyspace\r\n"), cats)
	require.True(t, strings.HasSuffix(cats, "$9\r\nratelimit\r\n"), cats)
	rl := c.do("ACL", "CAT", "RateLimit")
	for _, name := range []string{"cl.throttle", "cl.peek", "sl.throttle", "sw.throttle"} {
		require.Contains(t, rl, "\r\n"+name+"\r\n")
	}
	require.NotContains(t, rl, "\r\nget\r\n")
	for bits, n := range map[string]int{"": 64, "1": 1, "4": 1, "5": 2, "4096": 1024} {
		args := a("ACL", "GENPASS")
		if bits != "" {
			args = append(args, bits)
		}
		require.Equal(t, fmt.Sprintf("$%d\r\n", n), c.do(args...)[:len(fmt.Sprintf("$%d\r\n", n))])
	}
	require.NotEqual(t, c.do("ACL", "GENPASS"), c.do("ACL", "GENPASS"))
	// The log: similar events share an entry; it keeps acllog-max-len.
	for i := 0; i < 5; i++ {
		require.Equal(t, wrongPass, c.do("AUTH", "u"+fmt.Sprint(i), "x"))
		require.Equal(t, wrongPass, c.do("AUTH", "u"+fmt.Sprint(i), "x"))
	}
	log := c.do("ACL", "LOG")
	require.True(t, strings.HasPrefix(log, "*3\r\n*14\r\n$5\r\ncount\r\n:2\r\n$6\r\nreason\r\n$4\r\nauth\r\n$7\r\ncontext\r\n$8\r\ntoplevel\r\n$6\r\nobject\r\n$4\r\nAUTH\r\n$8\r\nusername\r\n$2\r\nu4\r\n"), log)
	require.Equal(t, "*0\r\n", c.do("ACL", "LOG", "0"))
	require.Equal(t, "*1\r\n", c.do("ACL", "LOG", "1")[:4])
	require.Equal(t, okReply, c.do("ACL", "LOG", "RESET"))
	require.Equal(t, "*0\r\n", c.do("ACL", "LOG"))
	// acl-pubsub-default: the channels of users created afterwards.
	require.Equal(t, okReply, c.do("CONFIG", "SET", "acl-pubsub-default", "allchannels"))
	require.Equal(t, okReply, c.do("ACL", "SETUSER", "q", "(+get)"))
	require.Contains(t, c.do("ACL", "LIST"), "user q off &* -@all (&* -@all +get)")
	require.Contains(t, c.do("ACL", "LIST"), "user z off resetchannels -@all")
	// requirepass is the default user's password.
	require.Equal(t, okReply, c.do("CONFIG", "SET", "requirepass", "pw"))
	require.Contains(t, c.do("ACL", "LIST"), "user default on #"+hashPassword([]byte("pw"))+" ~* &* +@all")
	r2 := ts.raw(t)
	require.Equal(t, "-NOAUTH Authentication required.\r\n", r2.do("PING"))
	require.Equal(t, okReply, r2.do("AUTH", "pw"))
	require.Equal(t, okReply, c.do("CONFIG", "SET", "requirepass", ""))
	require.Contains(t, c.do("ACL", "LIST"), "user default on nopass ~* &* +@all")
	require.Equal(t, "+PONG\r\n", ts.raw(t).do("PING"))
}

// TestACLFile covers aclfile: ACL SAVE and LOAD, and users at start.
func TestACLFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "users.acl")
	require.NoError(t, os.WriteFile(file, []byte("user app on >pw ~rl:* +@ratelimit\n\nuser default on nopass ~* &* +@all\n"), 0o600))
	ts, _ := aclServer(t, "aclfile", file)
	c := ts.raw(t)
	app := ts.raw(t)
	require.Equal(t, okReply, app.do("AUTH", "app", "pw"))
	require.Equal(t, okReply, c.do("ACL", "SETUSER", "new", "on", "nopass", "(+get ~x)"))
	require.Equal(t, okReply, c.do("ACL", "SAVE"))
	saved, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Equal(t, "user app on #"+hashPassword([]byte("pw"))+" ~rl:* resetchannels -@all +@ratelimit\n"+
		"user default on nopass ~* &* +@all\n"+
		"user new on nopass resetchannels -@all (~x resetchannels -@all +get)\n", string(saved))
	// A broken file changes nothing.
	require.NoError(t, os.WriteFile(file, []byte("user a on +nosuch\n# comment\nuser a\n"), 0o600))
	require.Equal(t, "-ERR "+file+":1: Unknown command or category name in ACL. "+file+":2 should start with user keyword followed by the username. "+
		"WARNING: Duplicate user 'a' found on line 3. WARNING: ACL errors detected, no change to the previously active ACL rules was performed\r\n", c.do("ACL", "LOAD"))
	require.Equal(t, "*3\r\n$3\r\napp\r\n$7\r\ndefault\r\n$3\r\nnew\r\n", c.do("ACL", "USERS"))
	require.Equal(t, "+PONG\r\n", c.do("PING"))
	require.NoError(t, os.WriteFile(file, saved, 0o600))
	require.Equal(t, okReply, c.do("ACL", "LOAD"))
	// LOAD replaces the users: their connections are closed.
	app.nc.SetDeadline(time.Now().Add(5 * time.Second))
	_, err = app.rd.ReadByte()
	require.Error(t, err)
	require.NoError(t, os.Remove(file))
	require.Equal(t, "-ERR Error loading ACLs, opening file '"+file+"': No such file or directory\r\n", c.do("ACL", "LOAD"))

	// At start: user directives, or aclfile, not both.
	for i, tt := range []struct {
		conf string
		err  string
	}{
		{"user alice on >pw ~* +@all\nuser default off\n", ""},
		{"user alice on +nosuch\n", "error loading ACL rule '+nosuch' for the user named 'alice'"},
		{"user alice on\nuser alice off\n", "Duplicate user"},
		{"user alice (~x\n", "unmatched parenthesis"},
		{"aclfile " + file + "\n", "No such file or directory"},
		{"aclfile " + file + "\nuser alice on\n", "at the same time"},
	} {
		cfg := config.New()
		require.NoError(t, cfg.ParseFile(tt.conf), i)
		eng := NewEngine(shards.New(shards.Options{Shards: 1}), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
		err := eng.LoadUsers()
		if tt.err == "" {
			require.NoError(t, err, i)
			require.Equal(t, "off sanitize-payload resetchannels -@all", eng.acl.def.rules.Load().describe(), i)
			require.NotNil(t, eng.acl.user("alice"), i)
		} else {
			require.ErrorContains(t, err, tt.err, i)
		}
	}
}

// TestACLAuthFlood is the hostile AUTH flood: thousands of wrong passwords
// leave a bounded log and a few server log lines.
func TestACLAuthFlood(t *testing.T) {
	old := authLogEvery
	authLogEvery = 200 * time.Millisecond
	t.Cleanup(func() { authLogEvery = old })
	ts, logs := aclServer(t, "requirepass", "right")
	const n = 2000
	var b strings.Builder
	for i := 0; i < n; i++ {
		pw := fmt.Sprintf("wrong%d", i)
		if i%2 == 0 {
			fmt.Fprintf(&b, "*2\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n", len(pw), pw)
		} else { // a user name each: entries that do not group
			user := fmt.Sprintf("u%d", i)
			fmt.Fprintf(&b, "*3\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(user), user, len(pw), pw)
		}
	}
	r := ts.raw(t)
	_, err := io.WriteString(r.nc, b.String())
	require.NoError(t, err)
	for i := 0; i < n; i++ {
		require.Equal(t, wrongPass, r.reply())
	}
	eng := ts.srv
	eng.acl.mu.Lock()
	entries := len(eng.acl.log)
	eng.acl.mu.Unlock()
	require.Equal(t, 128, entries)
	require.Equal(t, int64(n), eng.acl.denied[aclDeniedAuth].Load())
	require.Equal(t, okReply, r.do("AUTH", "right"))
	require.Contains(t, r.do("INFO", "stats"), fmt.Sprintf("acl_access_denied_auth:%d\r\n", n))
	require.Eventually(t, func() bool { return strings.Count(logs.String(), "failed authentications") == 1 }, 5*time.Second, 10*time.Millisecond)
	lines := strings.Count(logs.String(), "\n")
	require.LessOrEqual(t, lines, 3, logs.String())
	require.Contains(t, logs.String(), fmt.Sprintf("count=%d", n-1))
}

// TestACLGoRedis authenticates go-redis with a user name and password, in
// RESP2 (AUTH) and RESP3 (HELLO AUTH).
func TestACLGoRedis(t *testing.T) {
	ts, _ := aclServer(t, "requirepass", "adminpw")
	admin := redis.NewClient(&redis.Options{Addr: ts.addr, Password: "adminpw"})
	defer admin.Close()
	require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "app", "on", ">apppw", "+@ratelimit", "+@connection", "~rl:*").Err())
	for _, proto := range []int{2, 3} {
		c := redis.NewClient(&redis.Options{Addr: ts.addr, Username: "app", Password: "apppw", Protocol: proto})
		v, err := c.Do(ctx, "CL.THROTTLE", "rl:k", "5", "10", "60").Slice()
		require.NoError(t, err, proto)
		require.Len(t, v, 5)
		require.EqualError(t, c.Do(ctx, "ACL", "WHOAMI").Err(), "NOPERM this user has no permissions to run the 'acl|whoami' command")
		err = c.Set(ctx, "rl:k2", "v", 0).Err()
		require.EqualError(t, err, "NOPERM this user has no permissions to run the 'set' command")
		require.NoError(t, c.Close())
		bad := redis.NewClient(&redis.Options{Addr: ts.addr, Username: "app", Password: "nope", Protocol: proto, MaxRetries: -1})
		require.ErrorContains(t, bad.Ping(ctx).Err(), "WRONGPASS")
		bad.Close()
	}
}

// TestACLChannels checks the channel rules Pub/Sub commands use: patterns
// match channels, a PSUBSCRIBE pattern must be allowed literally, and any
// selector may allow it.
func TestACLChannels(t *testing.T) {
	r, err := applyRules(strings.Fields("on nopass +@all ~* &news.* &alerts (&ops.*) (&*)"))
	require.NoError(t, err)
	open, err := applyRules(strings.Fields("on nopass +@all ~* &news.* (&ops.*)"))
	require.NoError(t, err)
	for i, tt := range []struct {
		rules   *aclRules
		ch      string
		pattern bool
		want    bool
	}{
		{open, "news.1", false, true},
		{open, "ops.db", false, true},
		{open, "alerts", false, false},
		{open, "news.*", true, true},   // the pattern as allowed
		{open, "news.1*", true, false}, // a pattern is compared, not matched
		{open, "*", true, false},
		{r, "anything", false, true}, // the (&*) selector
		{r, "*", true, true},
	} {
		require.Equal(t, tt.want, tt.rules.channelOK([]byte(tt.ch), tt.pattern), "case %d", i)
	}
	ts, _ := aclServer(t)
	c := ts.raw(t)
	require.Equal(t, okReply, c.do("ACL", "SETUSER", "sub", "on", "nopass", "+@all", "~*", "&news.*"))
	require.Equal(t, okReply, c.do("AUTH", "sub", "x"))
	var cl *Client
	for _, o := range ts.Clients() {
		cl = o
	}
	require.True(t, cl.ChannelPermitted([]byte("news.x"), false))
	require.False(t, cl.ChannelPermitted([]byte("other"), false))
	require.Equal(t, "sub", cl.UserName())
	require.Equal(t, okReply, c.do("ACL", "SETUSER", "sub", "allchannels"))
	require.True(t, cl.ChannelPermitted([]byte("other"), false))
}

// TestKeyPatternMatch checks the prefix and exact fast paths against the
// glob matcher.
func TestKeyPatternMatch(t *testing.T) {
	pats := []string{"rl:*", "rl:", "*", "", "rl:*x", "r?:*", "rl:[ab]*", `rl\*`, `rl:\*`, "a*b*", "rl:**", "[*"}
	keys := []string{"rl:", "rl:1", "rl", "r", "", "rlx", "rl:a", "rl*", `rl\*`, "ab", "a*b", "*", "rl:*", "[x"}
	for _, p := range pats {
		kp := newKeyPattern(aclRW, p)
		for _, k := range keys {
			require.Equal(t, glob.Match([]byte(p), []byte(k), false), kp.match([]byte(k)), "pattern %q key %q (kind %d)", p, k, kp.kind)
		}
	}
	require.Equal(t, patPrefix, newKeyPattern(aclRW, "rl:*").kind)
	require.Equal(t, patExact, newKeyPattern(aclRW, "rl:1").kind)
	require.Equal(t, patGlob, newKeyPattern(aclRW, "rl:**").kind)
}

// FuzzKeyPattern compares the fast paths with the glob matcher.
func FuzzKeyPattern(f *testing.F) {
	f.Add("rl:*", "rl:1")
	f.Add("*", "")
	f.Add("a", "a")
	f.Fuzz(func(t *testing.T, p, k string) {
		kp := newKeyPattern(aclRW, p)
		if glob.Match([]byte(p), []byte(k), false) != kp.match([]byte(k)) {
			t.Fatalf("pattern %q key %q kind %d", p, k, kp.kind)
		}
	})
}

// TestHelloAuthAfterOptions: HELLO checks every option before it
// authenticates, as Redis: a bad SETNAME leaves the connection's user as
// it was.
func TestHelloAuthAfterOptions(t *testing.T) {
	ts, _ := aclServer(t, "requirepass", "pw")
	c := ts.raw(t)
	require.Equal(t, "-"+errClientName+"\r\n", c.do("HELLO", "2", "AUTH", "default", "pw", "SETNAME", "bad name"))
	require.Equal(t, "-NOAUTH Authentication required.\r\n", c.do("PING"))
	require.Equal(t, wrongPass, c.do("HELLO", "2", "AUTH", "default", "nope"))
	require.True(t, strings.HasPrefix(c.do("HELLO", "2", "AUTH", "default", "pw", "SETNAME", "ok"), "*14\r\n"))
	require.Equal(t, "$7\r\ndefault\r\n", c.do("ACL", "WHOAMI"))
}

// TestACLNativeScript: a script ratekv runs natively for an unrestricted
// user goes through the interpreter for a restricted one, so that its
// redis.call are checked.
func TestACLNativeScript(t *testing.T) {
	ts, _ := aclServer(t)
	admin, u := ts.raw(t), ts.raw(t)
	require.Equal(t, "$40\r\n"+redisRateAllowN+"\r\n", admin.do("SCRIPT", "LOAD", redisRateScript()))
	require.Equal(t, okReply, admin.do("ACL", "SETUSER", "u", "on", "nopass", "+@scripting", "+get", "~rl:*"))
	require.Equal(t, okReply, u.do("AUTH", "u", "x"))
	before := ts.srv.scripts.nativeRuns.Load()
	require.Contains(t, admin.do("EVALSHA", redisRateAllowN, "1", "rl:a", "10", "10", "1", "1"), "*4\r\n")
	require.Equal(t, before+1, ts.srv.scripts.nativeRuns.Load())
	// The script's SET is not the user's to run.
	got := u.do("EVALSHA", redisRateAllowN, "1", "rl:a", "10", "10", "1", "1")
	require.True(t, strings.HasPrefix(got, "-ERR "+errScriptNoPermCmd+" script: "), got)
	require.Equal(t, before+1, ts.srv.scripts.nativeRuns.Load())
	require.Equal(t, okReply, admin.do("ACL", "SETUSER", "u", "+set", "+time"))
	require.Contains(t, u.do("EVALSHA", redisRateAllowN, "1", "rl:a", "10", "10", "1", "1"), "*4\r\n")
	require.Equal(t, noPermKey, u.do("EVALSHA", redisRateAllowN, "1", "other", "10", "10", "1", "1"))
}

// TestACLQuickAgreesWithCheck: whenever the dispatcher's quick form allows
// a request, the full check allows it too, for every command in the table
// and rules of each shape; and the quick form does allow the common case.
func TestACLQuickAgreesWithCheck(t *testing.T) {
	aclSetup() // the commands' ACL ids and shapes
	rules := func(rs string) *aclRules {
		r := newRules(0)
		ops, bad := mergeSelectors(strings.Fields(rs))
		require.Equal(t, -1, bad, rs)
		for _, op := range ops {
			require.NoError(t, r.apply(op, 0), rs)
		}
		return r
	}
	ruleSets := []string{
		"on nopass +@ratelimit +@connection ~rl:*",
		"on nopass +@all ~rl:*",
		"on nopass +@all allkeys",
		"on nopass +@read ~rl:* &*",
		"on nopass +@all -set ~rl:*",
		"on nopass +@all %R~rl:*",
		"on nopass +@all ~rl:* ~other:*",
		"on nopass +@all ~rl:1",
		"on nopass nocommands ~*",
		"on nopass +select|0 ~rl:*",
		"on nopass +@all ~rl:* (+get ~x:*)",
	}
	args := [][][]byte{
		{[]byte("x"), []byte("rl:1"), []byte("1"), []byte("2"), []byte("3"), []byte("4")},
		{[]byte("x"), []byte("rl:"), []byte("get")},
		{[]byte("x"), []byte("other:1"), []byte("1")},
		{[]byte("x"), []byte(""), []byte("1")},
		{[]byte("x"), []byte("rl")},
	}
	allowedOnce := 0
	for _, rs := range ruleSets {
		r := rules(rs)
		q := r.quickForm()
		for _, cmd := range aclCommands {
			for _, a := range args {
				if !cmd.arityOK(len(a)) {
					continue
				}
				a[0] = []byte(cmd.Name)
				if q != nil && q.ok(cmd, a) {
					allowedOnce++
					res, _, _ := r.check(cmd, a, nil)
					require.Equal(t, aclOK, res, "rules %q command %s args %q", rs, cmd.Name, a)
				}
			}
		}
	}
	require.Greater(t, allowedOnce, 100)
	r := rules("on nopass +@ratelimit +@connection ~rl:*")
	require.True(t, r.quickForm().ok(lookupCommand([]byte("cl.throttle")), args[0]))
}
