package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// get returns the canonical value of the parameter named name.
func get(c *Config, name string) string {
	p, _ := Lookup(name)
	return c.Get(p)
}

func TestDefaults(t *testing.T) {
	c := New()
	for i, tt := range []struct{ name, want string }{
		{"bind", "127.0.0.1"}, {"port", "6380"}, {"dir", "./data"}, {"requirepass", ""},
		{"proto-max-bulk-len", "536870912"}, {"client-query-buffer-limit", "1073741824"},
		{"appendonly", "yes"}, {"save", "3600 1 300 100 60 10000"}, {"maxclients", "10000"},
	} {
		if got := get(c, tt.name); got != tt.want {
			t.Errorf("step %d: %s = %q, want %q", i, tt.name, got, tt.want)
		}
	}
}

func TestParseFileThenFlags(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ratekv.conf")
	conf := "# comment\nport 7000\nrequirepass \"pa ss\"\nsave 900 1 300 10\n\nproto-max-bulk-len 1mb\nLogLevel warning\n"
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	c := New()
	if err := c.Parse([]string{path, "--port", "7001", "--maxclients=5"}); err != nil {
		t.Fatal(err)
	}
	for i, tt := range []struct{ name, want string }{
		{"port", "7001"}, {"requirepass", "pa ss"}, {"save", "900 1 300 10"},
		{"proto-max-bulk-len", "1048576"}, {"loglevel", "warning"}, {"maxclients", "5"},
	} {
		if got := get(c, tt.name); got != tt.want {
			t.Errorf("step %d: %s = %q, want %q", i, tt.name, got, tt.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for i, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--bogus", "1"}, "unknown option --bogus"},
		{[]string{"--port"}, "needs a value"},
		{[]string{"--port", "x"}, "couldn't be parsed"},
		{[]string{"--port", "70000"}, "between 0 and 65535"},
		{[]string{"--shards", "3"}, "power of two"},
		{[]string{"--loglevel", "loud"}, "one of the following"},
		{[]string{"--proto-max-bulk-len", "12zz"}, "memory value"},
		{[]string{"--save", "900"}, "Invalid save"},
		{[]string{"/nonexistent/ratekv.conf"}, "reading config file"},
		{[]string{"--port", "1", "-x"}, "unexpected argument"},
	} {
		err := New().Parse(tt.args)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("step %d %q: have %v, want it to contain %q", i, tt.args, err, tt.want)
		}
	}
	if err := New().Parse([]string{"--help"}); !errors.Is(err, ErrHelp) {
		t.Errorf("--help: %v", err)
	}
	if err := New().Parse([]string{"--version"}); !errors.Is(err, ErrVersion) {
		t.Errorf("--version: %v", err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.conf")
	os.WriteFile(path, []byte("port 1\nnosuch 2\n"), 0o644)
	if err := New().Parse([]string{path}); err == nil || !strings.Contains(err.Error(), "line 2: unknown option \"nosuch\"") {
		t.Errorf("bad file: %v", err)
	}
}

func TestSetRuntime(t *testing.T) {
	c := New()
	if err := c.SetRuntime("port", "1"); !errors.Is(err, ErrImmutable) {
		t.Errorf("port: %v", err)
	}
	if err := c.SetRuntime("nosuch", "1"); !errors.Is(err, ErrUnknown) {
		t.Errorf("nosuch: %v", err)
	}
	if err := c.SetRuntime("MAXCLIENTS", "7"); err != nil {
		t.Fatal(err)
	}
	if c.Int(MaxClients) != 7 || c.Int(Port) != 6380 {
		t.Errorf("maxclients %d, port %d", c.Int(MaxClients), c.Int(Port))
	}
}

func TestParseMemory(t *testing.T) {
	for i, tt := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"100", 100, true}, {"1k", 1000, true}, {"1kb", 1024, true}, {"2MB", 2 << 20, true},
		{"1g", 1e9, true}, {"1gb", 1 << 30, true}, {"", 0, false}, {"-1", 0, false}, {"1tb", 0, false},
		{"99999999999999gb", 0, false}, {"05mb", 5 << 20, true},
		// Redis refuses a sign or spaces around the number.
		{" 5mb", 0, false}, {"+5mb", 0, false}, {"5 mb", 0, false}, {"5mb ", 0, false}, {"-0", 0, false},
	} {
		got, err := ParseMemory(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("step %d %q: have %d, %v; want %d, ok=%v", i, tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// TestIntValues checks integer settings against Redis 7.0's string2ll:
// what it refuses, ratekv refuses (CONFIG SET maxclients " 5" is an
// error, not 5).
func TestIntValues(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want string // "" refused
	}{
		{"5", "5"}, {"0", "0"}, {"10000", "10000"},
		{" 5", ""}, {"5 ", ""}, {"+5", ""}, {"05", ""}, {"-0", ""}, {"0x5", ""}, {"1e3", ""}, {"", ""}, {"-", ""},
		{"99999999999999999999", ""},
	} {
		got, err := intRange(0, 1<<62)(tt.in)
		if (err == nil) != (tt.want != "") || got != tt.want {
			t.Errorf("%q: have %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	got, err := intRange(-10, 10)("-7")
	if err != nil || got != "-7" {
		t.Errorf(`"-7": have %q, %v`, got, err)
	}
	if _, err := shardsCheck(" 16"); err == nil {
		t.Error(`shards " 16" accepted`)
	}
}

// save rules as Redis checks them: seconds at least 1, changes at least 0
// (a rule of 0 seconds would be due on every tick: a BGSAVE every second).
func TestSaveCheck(t *testing.T) {
	for v, ok := range map[string]bool{
		"3600 1 300 100": true, "1 0": true, `""`: true, "9223372036854775807 1": true,
		"0 0": false, "0 1": false, "3600 1 0 5": false, "60 -1": false, "60": false, "x 1": false,
	} {
		_, err := saveCheck(v)
		if ok != (err == nil) {
			t.Errorf("save %q: %v", v, err)
		}
		if err != nil && err.Error() != "Invalid save parameters" {
			t.Errorf("save %q: error %q, want Redis's text", v, err)
		}
	}
}

// TestMaxmemoryParams: the maxmemory parameters with Redis's defaults,
// canonical forms and error texts.
func TestMaxmemoryParams(t *testing.T) {
	c := New()
	for i, tt := range []struct{ name, want string }{
		{"maxmemory", "0"}, {"maxmemory-policy", "noeviction"}, {"maxmemory-samples", "5"}, {"maxmemory-eviction-tenacity", "10"},
	} {
		if got := get(c, tt.name); got != tt.want {
			t.Errorf("step %d: default %s = %q, want %q", i, tt.name, got, tt.want)
		}
	}
	for i, tt := range []struct {
		name, value string
		want        string // the canonical value, or the error's text
		ok          bool
	}{
		{"maxmemory", "100mb", "104857600", true},
		{"maxmemory", "32MB", "33554432", true},
		{"maxmemory", "1g", "1000000000", true},
		{"maxmemory", "0", "0", true},
		{"maxmemory", "-1", "argument must be a memory value", false},
		{"maxmemory", "1.5mb", "argument must be a memory value", false},
		{"maxmemory-policy", "ALLKEYS-RANDOM", "allkeys-random", true},
		{"maxmemory-policy", "volatile-ttl", "volatile-ttl", true},
		{"maxmemory-policy", "volatile-random", "volatile-random", true},
		{"maxmemory-policy", "noeviction", "noeviction", true},
		{"maxmemory-policy", "bogus", "argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction", false},
		{"maxmemory-policy", "allkeys-lru", "allkeys-lru", true},
		{"maxmemory-policy", "Volatile-LFU", "volatile-lfu", true},
		{"maxmemory-policy", "noeviction", "noeviction", true},
		{"lfu-log-factor", "0", "0", true},
		{"lfu-log-factor", "-1", "argument must be between 0 and 2147483647 inclusive", false},
		{"lfu-decay-time", "60", "60", true},
		{"maxmemory-samples", "0", "argument must be between 1 and 2147483647 inclusive", false},
		{"maxmemory-samples", "64", "64", true},
		{"maxmemory-eviction-tenacity", "101", "argument must be between 0 and 100 inclusive", false},
		{"maxmemory-eviction-tenacity", "100", "100", true},
	} {
		err := c.SetRuntime(tt.name, tt.value)
		switch {
		case tt.ok && err != nil:
			t.Errorf("step %d: %s %q: %v", i, tt.name, tt.value, err)
		case tt.ok && get(c, tt.name) != tt.want:
			t.Errorf("step %d: %s %q: have %q, want %q", i, tt.name, tt.value, get(c, tt.name), tt.want)
		case !tt.ok && (err == nil || err.Error() != tt.want):
			t.Errorf("step %d: %s %q: have error %v, want %q", i, tt.name, tt.value, err, tt.want)
		}
	}
	if c.Int(MaxMemorySamples) != 64 || c.String(MaxMemoryPolicy) != "noeviction" || c.Int(MaxMemory) != 0 {
		t.Errorf("typed getters: samples %d, policy %q, maxmemory %d", c.Int(MaxMemorySamples), c.String(MaxMemoryPolicy), c.Int(MaxMemory))
	}
}

func TestClusterAnnounceChecks(t *testing.T) {
	for i, tt := range []struct {
		name, value string
		ok          bool
	}{
		{"cluster-announce-hostname", "", true},
		{"cluster-announce-hostname", "node-1.example.com", true},
		{"cluster-announce-hostname", "a b", false},
		{"cluster-announce-hostname", "a_b", false},
		{"cluster-announce-hostname", strings.Repeat("a", 256), false},
		{"cluster-announce-ip", "10.0.0.1", true},
		{"cluster-announce-ip", "::1", true},
		{"cluster-announce-ip", "10.0.0.1 x", false},
		{"cluster-announce-ip", "10.0.0.1@5", false},
		{"cluster-announce-port", "65535", true},
		{"cluster-announce-port", "65536", false},
	} {
		err := New().Set(tt.name, tt.value)
		if (err == nil) != tt.ok {
			t.Errorf("step %d: %s %q: have %v, want ok %v", i, tt.name, tt.value, err, tt.ok)
		}
	}
}

// Apply runs each OnApply function once for a CONFIG SET of several of its
// parameters, in the order the names came, and stops at the first failure,
// naming the parameter it ran for.
func TestApply(t *testing.T) {
	c := New()
	var ran []string
	fail := errors.New("does not load")
	c.OnApply(func() error { ran = append(ran, "tls"); return nil }, TLSCertFile, TLSKeyFile)
	c.OnApply(func() error { ran = append(ran, "bad"); return fail }, TLSProtocols)
	c.OnApply(func() error { ran = append(ran, "other"); return nil }, TLSCiphers)

	for i, tt := range []struct {
		names []string
		ran   []string
		name  string
	}{
		{[]string{"tls-key-file", "maxclients", "tls-cert-file"}, []string{"tls"}, ""},
		{[]string{"maxclients"}, nil, ""},
		{[]string{"tls-ciphers", "tls-protocols", "tls-cert-file"}, []string{"other", "bad"}, "tls-protocols"},
	} {
		ran = nil
		name, err := c.Apply(tt.names)
		if tt.name == "" && err != nil || tt.name != "" && !errors.Is(err, fail) {
			t.Errorf("step %d: err %v", i, err)
		}
		if name != tt.name || strings.Join(ran, ",") != strings.Join(tt.ran, ",") {
			t.Errorf("step %d: have %q ran %v, want %q ran %v", i, name, ran, tt.name, tt.ran)
		}
	}
}

func TestSecurityDefaults(t *testing.T) {
	c := New()
	for i, tt := range []struct{ name, want string }{
		{"protected-mode", "yes"}, {"tls-port", "0"}, {"tls-auth-clients", "yes"}, {"tls-session-caching", "yes"},
		{"tls-session-cache-size", "20480"}, {"tls-session-cache-timeout", "300"}, {"tls-prefer-server-ciphers", "no"},
		{"tls-replication", "no"}, {"tls-protocols", ""},
	} {
		if got := get(c, tt.name); got != tt.want {
			t.Errorf("step %d: %s = %q, want %q", i, tt.name, got, tt.want)
		}
	}
}

func TestPercentiles(t *testing.T) {
	for i, tt := range []struct {
		in, want string
		ok       bool
	}{
		{"50 99 99.9", "50 99 99.9", true},
		{" 99.90  50.0 ", "99.9 50", true},
		{"", "", true},
		{"0 100", "0 100", true},
		{"100.1", "", false},
		{"-1", "", false},
		{"50 x", "", false},
		{"nan", "", false},
	} {
		c := New()
		err := c.Set("latency-tracking-info-percentiles", tt.in)
		if (err == nil) != tt.ok {
			t.Errorf("step %d %q: have %v, want ok=%v", i, tt.in, err, tt.ok)
			continue
		}
		if tt.ok {
			if have := c.String(LatencyTrackingPercentiles); have != tt.want {
				t.Errorf("step %d %q: have %q, want %q", i, tt.in, have, tt.want)
			}
			if len(Percentiles(tt.want)) != len(strings.Fields(tt.want)) {
				t.Errorf("step %d: Percentiles(%q) = %v", i, tt.want, Percentiles(tt.want))
			}
		}
	}
}

func TestMetricsGroupsCheck(t *testing.T) {
	for i, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"", "", true},
		{"  login:*   api:* ", "login:* api:*", true},
		{"a[bc]* ?x", "a[bc]* ?x", true},
		{"login:* login:*", "", false},
		{"other", "", false},
		{strings.Repeat("x", 129), "", false},
		{strings.Repeat("p ", MaxMetricsGroups), "", false}, // duplicates
		{strings.TrimSpace(strings.Repeat("p* ", 1)), "p*", true},
	} {
		got, err := metricsGroupsCheck(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("%d: %q: have %q, %v; want %q, ok %v", i, tc.in, got, err, tc.want, tc.ok)
		}
	}
	var many []string
	for i := range MaxMetricsGroups + 1 {
		many = append(many, fmt.Sprintf("g%d:*", i))
	}
	if _, err := metricsGroupsCheck(strings.Join(many[:MaxMetricsGroups], " ")); err != nil {
		t.Errorf("%d patterns: %v", MaxMetricsGroups, err)
	}
	if _, err := metricsGroupsCheck(strings.Join(many, " ")); err == nil {
		t.Errorf("%d patterns accepted", len(many))
	}
}

func TestOneAddress(t *testing.T) {
	for i, tc := range []struct {
		in string
		ok bool
	}{{"127.0.0.1", true}, {"::1", true}, {"", false}, {" 127.0.0.1", false}, {"127.0.0.1 ::1", false}} {
		if _, err := oneAddress(tc.in); (err == nil) != tc.ok {
			t.Errorf("%d: %q: %v, want ok %v", i, tc.in, err, tc.ok)
		}
	}
}

func TestReplicaOfValues(t *testing.T) {
	for i, tt := range []struct{ in, want, err string }{
		{"", "", ""},
		{"no one", "", ""},
		{"NO ONE", "", ""},
		{"10.0.0.1   6379", "10.0.0.1 6379", ""},
		{"10.0.0.1", "", `must be "host port" or "no one"`},
		{"10.0.0.1 x", "", "the port must be an integer from 0 to 65535"},
		{"10.0.0.1 65536", "", "the port must be an integer from 0 to 65535"},
	} {
		got, err := replicaOf(tt.in)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("step %d: %q: have %v, want %s", i, tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("step %d: %q: have %q, %v, want %q", i, tt.in, got, err, tt.want)
		}
	}
}

// A directive of several words takes the arguments up to the next option,
// as on Redis's command line; others take one, so a file may follow.
func TestParseMultiWordArgs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.conf")
	if err := os.WriteFile(path, []byte("maxclients 7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := New()
	if err := c.Parse([]string{"--port", "7002", path, "--replicaof", "10.0.0.1", "6379",
		"--save", "900", "1", "300", "10", "--bind", "127.0.0.1", "::1", "--timeout", "5"}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"port": "7002", "maxclients": "7", "replicaof": "10.0.0.1 6379", "save": "900 1 300 10",
		"bind": "127.0.0.1 ::1", "timeout": "5",
	} {
		if have := get(c, name); have != want {
			t.Errorf("%s: have %q, want %q", name, have, want)
		}
	}
	if err := New().Parse([]string{"--port", "7002", "7003"}); err == nil || !strings.Contains(err.Error(), "7003") {
		t.Errorf("--port 7002 7003: %v", err)
	}
}

// TestOutputBufferLimit: client-output-buffer-limit changes the classes a
// value names (replica and slave are one), canonical as Redis 7's CONFIG
// GET, with Redis's errors; a bad value changes nothing.
func TestOutputBufferLimit(t *testing.T) {
	c := New()
	const name = "client-output-buffer-limit"
	if have := get(c, name); have != "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60" {
		t.Fatalf("default: have %q", have)
	}
	if have := c.OutputLimit(OutputReplica); have != (OutputLimit{Hard: 256 << 20, Soft: 64 << 20, Seconds: 60}) {
		t.Fatalf("replica: have %+v", have)
	}
	for i, tt := range []struct {
		set, want, err string
	}{
		{"pubsub 1mb 0 0", "normal 0 0 0 slave 268435456 67108864 60 pubsub 1048576 0 0", ""},
		{"slave 1gb 1k 5 Replica 2mb 1mb 6", "normal 0 0 0 slave 2097152 1048576 6 pubsub 1048576 0 0", ""},
		{"", "normal 0 0 0 slave 2097152 1048576 6 pubsub 1048576 0 0", ""},
		{"normal 0 0", "", "Wrong number of arguments in buffer limit configuration."},
		{"master 0 0 0", "", "Invalid client class specified in buffer limit configuration."},
		{"pubsub 1 1 1 normal -1 0 0", "", "Error in hard, soft or soft_seconds setting in buffer limit configuration."},
		{"normal 0 0 1.5", "", "Error in hard, soft or soft_seconds setting in buffer limit configuration."},
	} {
		err := c.Set(name, tt.set)
		switch {
		case tt.err != "" && (err == nil || err.Error() != tt.err):
			t.Errorf("%d: %q: have error %v, want %q", i, tt.set, err, tt.err)
		case tt.err == "" && err != nil:
			t.Errorf("%d: %q: %v", i, tt.set, err)
		case tt.err == "" && get(c, name) != tt.want:
			t.Errorf("%d: %q: have %q, want %q", i, tt.set, get(c, name), tt.want)
		}
	}
	if have := c.OutputLimit(OutputPubSub); have != (OutputLimit{Hard: 1 << 20}) {
		t.Errorf("pubsub after the bad values: have %+v", have)
	}
}
