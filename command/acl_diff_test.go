package command

import (
	"regexp"
	"strings"
	"testing"
)

// aclNormalize blanks what differs between two servers in ACL replies: the
// client-info line and the age of ACL LOG entries.
var aclNormalize = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\$\d+\r\nid=[^\r]*\r\n`), "<client-info>\r\n"},
	{regexp.MustCompile(`(age-seconds\r\n)(\$\d+\r\n[-+.0-9e]+|,[-+.0-9e]+)\r\n`), "$1<age>\r\n"},
}

func aclNorm(s string) string {
	for _, n := range aclNormalize {
		s = n.re.ReplaceAllString(s, n.with)
	}
	return s
}

// TestACLDiffRedis runs ACL commands, and commands of restricted users, on
// ratekv and on a real redis-server, and compares the replies. Its users
// are named acld-*, deleted afterwards, as the redis-server is shared.
func TestACLDiffRedis(t *testing.T) {
	addr := redisAddr(t)
	for _, proto := range []string{"2", "3"} {
		t.Run("RESP"+proto, func(t *testing.T) { aclDiff(t, addr, proto) })
	}
}

func aclDiff(t *testing.T, addr, proto string) {
	ts := newTestServer(t)
	type conns struct{ real, ours *rawConn }
	open := func() conns {
		c := conns{dialRaw(t, addr), ts.raw(t)}
		c.real.do("HELLO", proto)
		c.ours.do("HELLO", proto)
		return c
	}
	admin, user := open(), open()
	cleanup := func() {
		admin.real.do("ACL", "DELUSER", "acld-u1", "acld-u2", "acld-u3", "acld-sel", "acld-ro")
	}
	cleanup()
	t.Cleanup(cleanup)
	for _, c := range []*rawConn{admin.real, admin.ours} {
		c.do("DEL", "acld:1", "acld-r:1", "acld-w:1")
	}
	steps := []struct {
		user bool // on the connection that authenticates as the test users
		args []string
	}{
		// Rules and their description.
		{false, a("ACL", "SETUSER", "acld-u1")},
		{false, a("ACL", "GETUSER", "acld-u1")},
		{false, a("ACL", "SETUSER", "acld-u1", "reset")},
		{false, a("ACL", "GETUSER", "acld-u1")},
		{false, a("ACL", "SETUSER", "acld-u1", "on", ">p1", ">p2", "<p2", "+@all", "-@string", "~acld:*", "%R~acld-r:*", "%W~acld-w:*", "&ch*")},
		{false, a("ACL", "GETUSER", "acld-u1")},
		{false, a("ACL", "SETUSER", "acld-u1", "+get")},
		{false, a("ACL", "GETUSER", "acld-u1")},
		{false, a("ACL", "SETUSER", "acld-u2", "on", "nopass", "-@all", "+@hash", "allkeys")},
		{false, a("ACL", "GETUSER", "acld-u2")},
		{false, a("ACL", "SETUSER", "acld-u2", "-@all", "+@hash", "-hdel", "resetkeys", "~x", "%RW~y", "%R~z", "%W~z")},
		{false, a("ACL", "GETUSER", "acld-u2")},
		{false, a("ACL", "SETUSER", "acld-u2", "-@all", "+select|0")},
		{false, a("ACL", "GETUSER", "acld-u2")},
		{false, a("ACL", "SETUSER", "acld-u2", "+client", "-client|kill")},
		{false, a("ACL", "DRYRUN", "acld-u2", "client", "list")},
		{false, a("ACL", "SETUSER", "acld-u2", "+@all", "-@dangerous", "+config|get", "allchannels")},
		{false, a("ACL", "GETUSER", "acld-u2")},
		{false, a("ACL", "SETUSER", "acld-u3", "on", "#"+strings.Repeat("ab", 32), "nocommands", "+@connection", "resetpass", "skip-sanitize-payload")},
		{false, a("ACL", "GETUSER", "acld-u3")},
		{false, a("ACL", "SETUSER", "acld-u3", "allcommands", "-@admin", "off", "sanitize-payload", "nopass")},
		{false, a("ACL", "GETUSER", "acld-u3")},
		{false, a("ACL", "SETUSER", "acld-sel", "on", "nopass", "+get", "~a*", "(+set", "~b*)", "(", "%R~c*", "+@read", ")")},
		{false, a("ACL", "GETUSER", "acld-sel")},
		{false, a("ACL", "SETUSER", "acld-sel", "clearselectors", "(+mget ~m*)")},
		{false, a("ACL", "GETUSER", "acld-sel")},
		{false, a("ACL", "SETUSER", "acld-sel", "(~x +get) (+set ~y)", "(&c1 &c2 +del)")},
		{false, a("ACL", "GETUSER", "acld-sel")},
		// Errors.
		{false, a("ACL", "SETUSER", "acld-u1", "+nosuchcmd")},
		{false, a("ACL", "SETUSER", "acld-u1", "-@nosuchcat")},
		{false, a("ACL", "SETUSER", "acld-u1", "+config|nosub")},
		{false, a("ACL", "SETUSER", "acld-u1", "+config|get|x")},
		{false, a("ACL", "SETUSER", "acld-u1", "+select|")},
		{false, a("ACL", "SETUSER", "acld-u1", "-select|0")},
		{false, a("ACL", "SETUSER", "acld-u1", "bogus")},
		{false, a("ACL", "SETUSER", "acld-u1", "<nopw")},
		{false, a("ACL", "SETUSER", "acld-u1", "#abc")},
		{false, a("ACL", "SETUSER", "acld-u1", "!"+strings.Repeat("AB", 32))},
		{false, a("ACL", "SETUSER", "acld-u1", "allkeys", "~b")},
		{false, a("ACL", "SETUSER", "acld-u1", "allchannels", "&b")},
		{false, a("ACL", "SETUSER", "acld-u1", "(~a")},
		{false, a("ACL", "SETUSER", "acld-u1", "(~a +get)", "(+set", "~b")},
		{false, a("ACL", "SETUSER", "acld-u1", "(bogus)")},
		{false, a("ACL", "SETUSER", "acld-u1", "%X~a")},
		{false, a("ACL", "SETUSER", "acld-u1", "%~a")},
		{false, a("ACL", "SETUSER", "acld-u1", "%RR~a")},
		{false, a("ACL", "SETUSER", "acld-u1", "~a b")},
		{false, a("ACL", "SETUSER", "acld u1")},
		{false, a("ACL", "GETUSER", "acld-u1")}, // unchanged by the errors
		{false, a("ACL", "GETUSER", "acld-nobody")},
		{false, a("ACL", "DELUSER", "default")},
		{false, a("ACL", "DELUSER", "acld-nobody")},
		{false, a("ACL", "CAT", "nocat")},
		{false, a("ACL", "CAT", "x", "y")},
		{false, a("ACL", "LOG", "1", "2")},
		{false, a("ACL", "GENPASS", "1", "2")},
		{false, a("ACL", "SETUSER", "acld-u1", "%R")},
		{false, a("ACL", "SETUSER", "acld-u1", "%R~")},
		{false, a("ACL", "SETUSER", "acld-u1", "%W~acld-w:*", "%RW~acld-w:*", "resetkeys", "%R~acld-r:*", "%W~acld-w:*", "~acld:*")},
		{false, a("ACL", "SETUSER", "acld-u1", "~")},
		{false, a("ACL", "GETUSER", "acld-u1")},
		{false, a("ACL", "GENPASS", "0")},
		{false, a("ACL", "GENPASS", "4097")},
		{false, a("ACL", "GENPASS", "abc")},
		{false, a("ACL", "LOG", "abc")},
		{false, a("ACL", "SAVE")},
		{false, a("ACL", "LOAD")},
		{false, a("ACL", "NOSUB")},
		{false, a("ACL", "WHOAMI", "x")},
		{false, a("ACL")},
		{false, a("ACL", "HELP")},
		{false, a("ACL", "WHOAMI")},
		{false, a("AUTH", "a", "b", "c")},
		{false, a("AUTH", "x")},
		// Dry runs.
		{false, a("ACL", "DRYRUN", "acld-u1", "get", "acld:1")},
		{false, a("ACL", "DRYRUN", "acld-u1", "set", "acld:1", "v")},
		{false, a("ACL", "DRYRUN", "acld-u1", "hset", "other", "f", "v")},
		{false, a("ACL", "DRYRUN", "acld-u1", "hget", "acld-w:1", "f")},
		{false, a("ACL", "DRYRUN", "acld-u1", "hset", "acld-w:1", "f", "v")},
		{false, a("ACL", "DRYRUN", "acld-u1", "exists", "acld-w:1")},
		{false, a("ACL", "DRYRUN", "acld-u1", "del", "acld-r:1")},
		{false, a("ACL", "DRYRUN", "acld-u1", "lmove", "acld-r:1", "acld-w:1", "left", "right")},
		{false, a("ACL", "DRYRUN", "acld-u1", "lmove", "acld-w:1", "acld-r:1", "left", "right")},
		{false, a("ACL", "DRYRUN", "acld-u1", "eval", "return 1", "2", "acld:1", "other")},
		{false, a("ACL", "DRYRUN", "acld-u1", "config", "get", "x")},
		{false, a("ACL", "DRYRUN", "acld-u1", "nocmd")},
		{false, a("ACL", "DRYRUN", "acld-nobody", "get", "x")},
		{false, a("ACL", "DRYRUN", "acld-u1", "config", "nosub")},
		{false, a("ACL", "DRYRUN", "acld-u1", "config", "get")},
		{false, a("ACL", "DRYRUN", "acld-u2", "select", "0")},
		{false, a("ACL", "DRYRUN", "acld-u2", "select", "1")},
		{false, a("ACL", "DRYRUN", "acld-u2", "client", "kill", "id", "1")},
		{false, a("ACL", "DRYRUN", "acld-sel", "set", "y1", "v")},
		{false, a("ACL", "DRYRUN", "acld-sel", "set", "x1", "v")},
		{false, a("ACL", "DRYRUN", "acld-sel", "get", "x1")},
		{false, a("ACL", "DRYRUN", "acld-sel", "mget", "x1", "y1")},
		// A restricted user at work.
		{true, a("AUTH", "acld-u1", "wrong")},
		{false, a("ACL", "LOG", "1")},
		{true, a("AUTH", "acld-nobody", "p1")},
		{true, a("AUTH", "acld-u1", "p1")},
		{true, a("ACL", "WHOAMI")},
		{true, a("GET", "acld:1")},
		{true, a("SET", "acld:1", "v")},
		{false, a("ACL", "LOG", "1")},
		{true, a("GET", "other")},
		{false, a("ACL", "LOG", "1")},
		{true, a("GET", "acld-w:1")},
		{true, a("EXISTS", "acld-w:1")},
		{true, a("HSET", "acld-w:1", "f", "v")},
		{true, a("DEL", "acld-w:1")},
		{true, a("HGET", "acld-r:1", "f")},
		{true, a("HSET", "acld-r:1", "f", "v")},
		{true, a("MULTI")},
		{true, a("HGET", "other", "f")},
		{true, a("HGET", "acld:1", "f")},
		{true, a("EXEC")},
		{true, a("MULTI")},
		{true, a("HGET", "acld:1", "f")},
		{false, a("ACL", "SETUSER", "acld-u1", "-hget")},
		{true, a("EXEC")},
		{false, a("ACL", "LOG", "1")},
		{false, a("ACL", "SETUSER", "acld-u1", "+hget")},
		{true, a("EVAL", "return redis.call('hset', KEYS[1], 'f', 'v')", "1", "acld:1")},
		{true, a("EVAL", "return redis.pcall('hget', 'other', 'f')", "1", "acld:1")},
		{true, a("EVAL", "return redis.pcall('set', 'acld:1', 'v')", "1", "acld:1")},
		{false, a("ACL", "LOG", "1")},
		{true, a("EVAL", "return 1", "1", "other")},
		{true, a("HELLO", "3", "AUTH", "acld-u1", "bad")},
		{false, a("ACL", "LOG", "1")},
		{true, a("AUTH", "acld-u2", "x")},
		{true, a("ACL", "WHOAMI")},
		{true, a("CONFIG", "SET", "maxclients", "10")},
		{true, a("FLUSHALL")},
		{true, a("PING")},
		{true, a("DEL", "acld:1")},
		{false, a("ACL", "DELUSER", "acld-u1", "acld-u3", "acld-nobody")},
		{false, a("ACL", "SETUSER", "acld-ro", "on", "nopass", "+@all", "-exec", "~*")},
		{true, a("AUTH", "acld-ro", "x")},
		{true, a("EXEC")},
		{true, a("MULTI")},
		{true, a("PING")},
		{true, a("EXEC")},
		{true, a("DISCARD")},
		{true, a("AUTH", "acld-u2", "x")},
		{false, a("CLIENT", "KILL", "USER", "acld-nobody")},
		{false, a("CLIENT", "KILL", "USER", "acld-u2")},
		{false, a("ACL", "LOG", "RESET")},
		{false, a("ACL", "LOG")},
	}
	for i, s := range steps {
		c := admin
		if s.user {
			c = user
		}
		want := aclNorm(c.real.do(s.args...))
		have := aclNorm(c.ours.do(s.args...))
		if have != want {
			t.Errorf("step %d: %q\n  redis:  %q\n  ratekv: %q", i, s.args, want, have)
		}
	}
}
