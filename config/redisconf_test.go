package config

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// parseConf writes conf to a file and parses it with flags after it.
func parseConf(t *testing.T, conf string, flags ...string) (*Config, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "redis.conf")
	require.NoError(t, os.WriteFile(path, []byte(conf), 0o644))
	c := New()
	return c, c.Parse(append([]string{path}, flags...))
}

// warned returns the directives c warned about, in order.
func warned(c *Config) []string {
	var out []string
	for _, w := range c.Warnings() {
		out = append(out, w.Directive)
	}
	return out
}

// Each class of the directive table: applied, ignored silently, ignored
// with one warning per name, refused. A refusal looks at the value in
// force after every line and option.
func TestRedisDirectives(t *testing.T) {
	for i, tt := range []struct {
		conf    string
		flags   []string
		env     string // NOTIFY_SOCKET
		warn    []string
		refuse  []string // a substring per refused line
		applied map[string]string
	}{
		// Applied: ratekv's own parameters.
		{conf: "port 7000\nlogfile /tmp/x.log\npidfile /tmp/x.pid\nsupervised systemd\n", env: "@sd",
			applied: map[string]string{"port": "7000", "logfile": "/tmp/x.log", "pidfile": "/tmp/x.pid", "supervised": "systemd"}},
		{conf: "protected-mode no\ntls-port 6390\nport 0\ntls-cert-file /x.crt\ntls-auth-clients optional\n",
			applied: map[string]string{"protected-mode": "no", "tls-port": "6390", "port": "0", "tls-cert-file": "/x.crt", "tls-auth-clients": "optional"}},
		{conf: "appendonly no\ndbfilename snap.rkv\nsave 900 1\n",
			applied: map[string]string{"appendonly": "no", "dbfilename": "snap.rkv", "save": "900 1"}},
		// Ignored silently: Redis's machinery, or values that ask for what
		// ratekv does anyway.
		{conf: "hz 10\nactiverehashing yes\nhash-max-listpack-entries 512\nrepl-diskless-sync yes\n" +
			"daemonize no\ncluster-enabled no\ntls-client-cert-file /x.crt\ntls-dh-params-file /x.dh\nreplicaof no one\n" +
			"tcp-keepalive 300\nnotify-keyspace-events \"\"\ndatabases 1\nunixsocket \"\"\n" +
			"client-output-buffer-limit normal 0 0 0\nclient-output-buffer-limit replica 256mb 64mb 60\n" +
			"client-output-buffer-limit pubsub 32mb 8mb 60\n"},
		// Warned, once per name, naming the value in force.
		{conf: "databases 16\n", warn: []string{"databases"}},
		{conf: "dbfilename dump.rdb\n", warn: []string{"dbfilename"}, applied: map[string]string{"dbfilename": "dump.rdb"}},
		{conf: "tcp-backlog 100\ntcp-backlog 200\ntcp-keepalive 60\n",
			warn: []string{"tcp-backlog", "tcp-keepalive"}},
		{conf: "client-output-buffer-limit normal 1mb 1mb 60\nclient-output-buffer-limit pubsub 32mb 8mb 60\n",
			warn: []string{"client-output-buffer-limit"}, applied: map[string]string{"client-output-buffer-limit": "normal 1048576 1048576 60 slave 268435456 67108864 60 pubsub 33554432 8388608 60"}},
		{conf: "client-output-buffer-limit pubsub 1mb 0 0\nclient-output-buffer-limit slave 1gb 1k 5 replica 2mb 1mb 6\n",
			applied: map[string]string{"client-output-buffer-limit": "normal 0 0 0 slave 2097152 1048576 6 pubsub 1048576 0 0"}},
		{conf: "supervised systemd\n", warn: []string{"supervised"}}, // no NOTIFY_SOCKET
		// Refused.
		{conf: "daemonize yes\n", refuse: []string{"line 1: daemonize yes: ratekv does not fork"}},
		{conf: "daemonize yes\nsupervised auto\n", refuse: []string{"daemonize yes"}},
		{conf: "rename-command CONFIG \"\"\n", refuse: []string{`rename-command CONFIG "": ratekv cannot rename`}},
		{conf: "cluster-enabled yes\ncluster-node-timeout 15000\n"}, // a parameter now; the bus's tuning is ignored
		{conf: "loadmodule /usr/lib/redis/modules/x.so\n", refuse: []string{"loadmodule"}},
		{conf: "unixsocket /run/redis.sock\n", refuse: []string{"unixsocket"}},
		{conf: "daemonize yes\nport 1\nloadmodule /x.so\nhz 5\n", refuse: []string{"line 1: daemonize", "line 3: loadmodule"}},
		{conf: "daemonize yes\ndatabases 16\n", refuse: []string{"daemonize"}, warn: []string{"databases"}},
		// The value in force decides: a later line or option wins.
		{conf: "daemonize yes\n", flags: []string{"--daemonize", "no"}},
		{conf: "daemonize no\n", flags: []string{"--daemonize=yes"}, refuse: []string{"command line: --daemonize yes: ratekv does not fork"}},
		{conf: "cluster-enabled yes\ncluster-enabled no\n"},
		// Under systemd Redis does not fork for daemonize yes either.
		{conf: "daemonize yes\nsupervised systemd\n", env: "/run/systemd/notify"},
		{conf: "daemonize yes\nsupervised auto\n", env: "@notify"},
	} {
		t.Setenv("NOTIFY_SOCKET", tt.env)
		if tt.env == "" {
			os.Unsetenv("NOTIFY_SOCKET")
		}
		c, err := parseConf(t, tt.conf, tt.flags...)
		var refused *RefusedError
		switch {
		case len(tt.refuse) == 0 && err != nil:
			t.Errorf("step %d: %q: %v", i, tt.conf, err)
		case len(tt.refuse) > 0 && !errors.As(err, &refused):
			t.Errorf("step %d: %q: have %v, want a refusal", i, tt.conf, err)
		case len(tt.refuse) > 0:
			if len(refused.Lines) != len(tt.refuse) {
				t.Errorf("step %d: have refusals %q, want %d", i, refused.Lines, len(tt.refuse))
				break
			}
			for j, want := range tt.refuse {
				if !strings.Contains(refused.Lines[j], want) {
					t.Errorf("step %d: refusal %q, want it to contain %q", i, refused.Lines[j], want)
				}
			}
		}
		if have := warned(c); !equalStrings(have, tt.warn) {
			t.Errorf("step %d: %q: have warnings %v, want %v (%v)", i, tt.conf, have, tt.warn, c.Warnings())
		}
		for name, want := range tt.applied {
			if have := get(c, name); have != want {
				t.Errorf("step %d: %s = %q, want %q", i, name, have, want)
			}
		}
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A warning names the directive and the value in force.
func TestWarningText(t *testing.T) {
	c, err := parseConf(t, "tcp-backlog 100\ntcp-backlog 200\n")
	require.NoError(t, err)
	require.Len(t, c.Warnings(), 1)
	w := c.Warnings()[0]
	require.Equal(t, Warning{"tcp-backlog", "200", "ratekv listens with the kernel's backlog (somaxconn)"}, w)
	require.Equal(t, "tcp-backlog 200: ratekv listens with the kernel's backlog (somaxconn)", w.String())
}

// The table and Params do not overlap (a parameter added for a directive
// must leave the table), but for databases, whose values other than 1 the
// table accepts with a warning.
func TestRedisDirectivesAreNotParams(t *testing.T) {
	for name := range redisDirectives {
		if name != strings.ToLower(name) {
			t.Errorf("%s: table names are lower case", name)
		}
		if _, ok := Lookup(name); ok && name != "databases" {
			t.Errorf("%s is a parameter and in redisDirectives: remove it from the table", name)
		}
	}
	if _, ok := redisDirectives["include"]; ok {
		t.Error("include is read by the parser, not the table")
	}
}

// stockFiles are the stock Redis 7 configuration files at hand: the copy
// in testdata, and the installed one when there is one.
func stockFiles(t *testing.T) []string {
	files := []string{filepath.Join("testdata", "redis.conf")}
	if _, err := os.Stat("/etc/redis/redis.conf"); err == nil {
		files = append(files, "/etc/redis/redis.conf")
	} else {
		t.Logf("no /etc/redis/redis.conf (%v): checking the copy in testdata only", err)
	}
	return files
}

// A stock redis.conf starts ratekv with the overrides Debian's own unit
// gives redis-server (--daemonize no), and warns about what differs.
func TestStockRedisConf(t *testing.T) {
	os.Unsetenv("NOTIFY_SOCKET")
	for _, path := range stockFiles(t) {
		t.Run(path, func(t *testing.T) {
			c := New()
			err := c.Parse([]string{path})
			var refused *RefusedError
			require.ErrorAs(t, err, &refused, "a stock Debian file says daemonize yes")
			require.Len(t, refused.Lines, 1)
			require.Contains(t, refused.Lines[0], "daemonize yes")

			c = New()
			require.NoError(t, c.Parse([]string{path, "--daemonize", "no", "--port", "0"}))
			require.Equal(t, []string{"databases", "dbfilename"}, warned(c))
			for name, want := range map[string]string{
				"bind": "127.0.0.1 -::1", "port": "0", "dir": "/var/lib/redis", "appendonly": "no",
				"logfile": "/var/log/redis/redis-server.log", "pidfile": "/run/redis/redis-server.pid",
				"dbfilename": "dump.rdb", "loglevel": "notice", "save": "3600 1 300 100 60 10000",
			} {
				require.Equal(t, want, get(c, name), name)
			}

			// Every directive the file sets is known: in Params or the table.
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			var names []string
			for _, line := range strings.Split(string(data), "\n") {
				f := strings.Fields(line)
				if len(f) == 0 || strings.HasPrefix(f[0], "#") {
					continue
				}
				names = append(names, f[0])
				_, param := Lookup(f[0])
				_, table := redisDirectives[strings.ToLower(f[0])]
				require.True(t, param || table, f[0])
			}
			require.Greater(t, len(names), 60)
		})
	}
}

// include reads a relative path from the including file's directory, at
// the line it stands on (later lines win), wildcards in lexical order.
func TestInclude(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
		return path
	}
	write("sub/b.conf", "maxclients 20\ninclude c.conf\n") // c.conf next to b.conf
	write("sub/c.conf", "timeout 30\nport 7002\n")
	write("frag/2.conf", "requirepass two\n")
	write("frag/1.conf", "requirepass one\nport 7001\n")
	main := write("main.conf", "port 7000\ninclude sub/b.conf\nmaxclients 10\ninclude frag/*.conf\ninclude none/*.conf\n")

	c := New()
	require.NoError(t, c.Parse([]string{main}))
	for name, want := range map[string]string{"maxclients": "10", "timeout": "30", "port": "7001", "requirepass": "two"} {
		require.Equal(t, want, get(c, name), name)
	}

	// From the command line, relative to the working directory.
	c = New()
	require.NoError(t, c.Parse([]string{"--include", filepath.Join(dir, "sub", "c.conf"), "--port", "7003"}))
	require.Equal(t, "30", get(c, "timeout"))
	require.Equal(t, "7003", get(c, "port"))

	for i, tt := range []struct{ conf, want string }{
		{"include missing.conf\n", `main.conf: line 1: include "` + filepath.Join(dir, "missing.conf") + `": reading config file: open`},
		{"port 1\ninclude\n", "line 2: include takes one file name"},
		{"include a.conf b.conf\n", "line 1: include takes one file name"},
		{"include loop.conf\n", "includes nested more than 10 deep"},
		{"include bad.conf\n", `bad.conf: line 2: unknown option "nosuch"`},
		{"include rename.conf\n", "rename.conf: line 1: rename-command KEYS"},
	} {
		write("loop.conf", "include loop.conf\n")
		write("bad.conf", "port 1\nnosuch 2\n")
		write("rename.conf", "rename-command KEYS \"\"\n")
		path := write("main.conf", tt.conf)
		err := New().Parse([]string{path})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("step %d: %q: have %v, want it to contain %q", i, tt.conf, err, tt.want)
		}
	}
}

// Options before the file are defaults it may change; options after it win.
func TestParseOrder(t *testing.T) {
	c, err := parseConf(t, "port 7000\n", "--dir", "/x")
	require.NoError(t, err)
	require.Equal(t, "7000", get(c, "port"))

	path := filepath.Join(t.TempDir(), "r.conf")
	require.NoError(t, os.WriteFile(path, []byte("port 7000\n"), 0o644))
	c = New()
	require.NoError(t, c.Parse([]string{"--bind", "0.0.0.0", "--port", "1", path, "--maxclients", "5"}))
	require.Equal(t, "0.0.0.0", get(c, "bind"))
	require.Equal(t, "7000", get(c, "port"))
	require.Equal(t, "5", get(c, "maxclients"))

	err = New().Parse([]string{path, path})
	require.ErrorContains(t, err, "unexpected argument")
}

// save lines add up as in Redis: the first replaces the default, later
// ones add rules, an empty one removes them all.
func TestSaveLinesAddUp(t *testing.T) {
	for i, tt := range []struct {
		conf  string
		flags []string
		want  string
	}{
		{"save 900 1\nsave 300 10\nsave 60 10000\n", nil, "900 1 300 10 60 10000"},
		{"save 900 1\nsave \"\"\n", nil, ""},
		{"save \"\"\nsave 60 1\n", nil, "60 1"},
		{"save 900 1\n", []string{"--save", "60 1"}, "900 1 60 1"},
		{"save 900 1\n", []string{"--save", ""}, ""},
		{"port 1\n", []string{"--save", "60 1"}, "60 1"},
	} {
		c, err := parseConf(t, tt.conf, tt.flags...)
		require.NoError(t, err, "step %d", i)
		if have := get(c, "save"); have != tt.want {
			t.Errorf("step %d: %q %q: have %q, want %q", i, tt.conf, tt.flags, have, tt.want)
		}
	}
	_, err := parseConf(t, "save 900 1\nsave 300\n")
	require.ErrorContains(t, err, `line 2: save "300": Invalid save parameters`)
}

// Every directive that can warn or refuse says why, as a clause that
// follows "name value: " in the log or the error.
func TestTableReasons(t *testing.T) {
	names := make([]string, 0, len(redisDirectives))
	for name := range redisDirectives {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		v, why := redisDirectives[name].rule(New(), []string{"1 2 3"})
		if v != ignore && (why == "" || strings.HasSuffix(why, ".")) {
			t.Errorf("%s: reason %q (a clause, without a final period)", name, why)
		}
	}
}

// TestUserDirectives checks that user directives, from a file and the
// command line, reach Users word by word (quotes as redis-cli's).
func TestUserDirectives(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "redis.conf")
	require.NoError(t, os.WriteFile(path, []byte("user alice on \">p w\" ~rl:* +@ratelimit\nuser default on nopass\n"), 0o644))
	c := New()
	require.NoError(t, c.Parse([]string{path, "--user", "bob off"}))
	require.Equal(t, [][]string{{"alice", "on", ">p w", "~rl:*", "+@ratelimit"}, {"default", "on", "nopass"}, {"bob", "off"}}, c.Users())
	require.Error(t, New().ParseFile("user\n"))
	require.NoError(t, c.Set("acllog-max-len", "5"))
	require.Error(t, c.Set("acl-pubsub-default", "some"))
}
