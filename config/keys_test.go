package config

import (
	"fmt"
	"math"
	"reflect"
	"runtime"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every parameter has a key, of a type its values fit: a parameter cannot
// be added to Params without one.
func TestEveryParamHasKey(t *testing.T) {
	for i, p := range Params {
		v, _ := p.Check(p.Default)
		switch kinds[i] {
		case kindNone:
			t.Errorf("%s has no key (declare one in keys.go)", p.Name)
		case kindInt:
			if _, err := parseInt(v); err != nil {
				t.Errorf("%s has an IntKey but its default %q is no integer", p.Name, v)
			}
		case kindBool:
			if _, err := yesNo(v); err != nil {
				t.Errorf("%s has a BoolKey but its default %q is not yes or no", p.Name, v)
			}
		}
	}
	for _, k := range []Key{Port, Dir, AppendOnly, Save, AppendFsync, ZSetMaxListpackValue} {
		if p, ok := Lookup(k.Name()); !ok || p != &Params[k.index()] {
			t.Errorf("key %s does not name its own entry", k.Name())
		}
	}
}

func TestTypedGetters(t *testing.T) {
	for i, tt := range []struct {
		name, value string
		get         func(*Config) any
		want        any
	}{
		{"", "", func(c *Config) any { return c.Int(Port) }, int64(6380)},
		{"", "", func(c *Config) any { return c.Bool(AppendOnly) }, true},
		{"", "", func(c *Config) any { return c.Bool(EventLoop) }, true},
		{"", "", func(c *Config) any { return c.String(Dir) }, "./data"},
		{"", "", func(c *Config) any { return c.Int(ProtoMaxBulkLen) }, int64(512 << 20)},
		{"", "", func(c *Config) any { return c.Int(Shards) }, int64(0)},
		{"port", "7000", func(c *Config) any { return c.Int(Port) }, int64(7000)},
		{"timeout", "0", func(c *Config) any { return c.Int(Timeout) }, int64(0)},
		{"proto-max-bulk-len", "1mb", func(c *Config) any { return c.Int(ProtoMaxBulkLen) }, int64(1 << 20)},
		{"auto-aof-rewrite-min-size", "2k", func(c *Config) any { return c.Int(AutoAOFRewriteMinSize) }, int64(2000)},
		{"zset-max-ziplist-entries", "5", func(c *Config) any { return c.Int(ZSetMaxListpackEntries) }, int64(5)},
		{"appendonly", "NO", func(c *Config) any { return c.Bool(AppendOnly) }, false},
		{"aof-load-truncated", "no", func(c *Config) any { return c.Bool(AOFLoadTruncated) }, false},
		{"batch-replies", "Yes", func(c *Config) any { return c.Bool(BatchReplies) }, true},
		{"loglevel", "WARNING", func(c *Config) any { return c.String(LogLevel) }, "warning"},
		{"requirepass", "", func(c *Config) any { return c.String(RequirePass) }, ""},
		{"bind", "::1 127.0.0.1", func(c *Config) any { return c.String(Bind) }, "::1 127.0.0.1"},
		{"prefetch-batch", "NO", func(c *Config) any { return c.String(PrefetchBatch) }, "no"},
	} {
		c := New()
		if tt.name != "" {
			if err := c.Set(tt.name, tt.value); err != nil {
				t.Fatalf("step %d: set %s %q: %v", i, tt.name, tt.value, err)
			}
		}
		if have := tt.get(c); have != tt.want {
			t.Errorf("step %d: %s %q: have %#v, want %#v", i, tt.name, tt.value, have, tt.want)
		}
	}
	if v := New().Get(&Param{Name: "port"}); v != "" {
		t.Errorf("Get of a Param outside the table: %q", v)
	}
}

func TestSaveRules(t *testing.T) {
	if have, want := New().SaveRules(), []SaveRule{{3600, 1}, {300, 100}, {60, 10000}}; !reflect.DeepEqual(have, want) {
		t.Errorf("default: have %v, want %v", have, want)
	}
	for i, tt := range []struct {
		in   string
		text string // CONFIG GET's
		want []SaveRule
		ok   bool
	}{
		{"", "", nil, true},
		{`""`, "", nil, true},
		{"''", "", nil, true},
		{"900 1", "900 1", []SaveRule{{900, 1}}, true},
		{" 900  1\t300 0 ", "900 1 300 0", []SaveRule{{900, 1}, {300, 0}}, true},
		{"9223372036854775807 1", "9223372036854775807 1", []SaveRule{{math.MaxInt64, 1}}, true},
		{"900", "", nil, false},
		{"900 1 300", "", nil, false},
		{"0 1", "", nil, false},
		{"60 -1", "", nil, false},
		{"x 1", "", nil, false},
		{"60 1x", "", nil, false},
		{"9223372036854775808 1", "", nil, false},
		{`"" ""`, "", nil, false},
	} {
		c := New()
		require.NoError(t, c.Set("save", "1 1"))
		err := c.Set("save", tt.in)
		if (err == nil) != tt.ok {
			t.Errorf("step %d %q: have %v, want ok=%v", i, tt.in, err, tt.ok)
			continue
		}
		if !tt.ok {
			if err.Error() != "Invalid save parameters" {
				t.Errorf("step %d %q: error %q, want Redis's text", i, tt.in, err)
			}
			tt.text, tt.want = "1 1", []SaveRule{{1, 1}} // unchanged
		}
		if have := get(c, "save"); have != tt.text {
			t.Errorf("step %d %q: text %q, want %q", i, tt.in, have, tt.text)
		}
		if have := c.SaveRules(); !reflect.DeepEqual(have, tt.want) {
			t.Errorf("step %d %q: rules %v, want %v", i, tt.in, have, tt.want)
		}
	}
}

func TestFsync(t *testing.T) {
	if p := New().Fsync(); p != FsyncEverysec {
		t.Errorf("default: %v", p)
	}
	for i, tt := range []struct {
		in   string
		want FsyncPolicy
		err  string
	}{
		{"always", FsyncAlways, ""},
		{"EVERYSEC", FsyncEverysec, ""},
		{"no", FsyncNo, ""},
		{"Always", FsyncAlways, ""},
		{"sometimes", FsyncNo, "argument(s) must be one of the following: everysec, always, no"},
		{"", FsyncNo, "argument(s) must be one of the following: everysec, always, no"},
	} {
		c := New()
		require.NoError(t, c.Set("appendfsync", "no"))
		err := c.Set("appendfsync", tt.in)
		if errText(err) != tt.err {
			t.Errorf("step %d %q: error %v, want %q", i, tt.in, err, tt.err)
		}
		if have := c.Fsync(); have != tt.want || get(c, "appendfsync") != tt.want.String() {
			t.Errorf("step %d %q: have %v (%q), want %v", i, tt.in, have, get(c, "appendfsync"), tt.want)
		}
	}
}

// Hooks run once per successful Set of their parameter, under its name or
// its alias, with the canonical value; never for a refused one.
func TestOnChange(t *testing.T) {
	c := New()
	var seen []string
	c.OnChange(MaxClients, func(v string) { seen = append(seen, "a:"+v) })
	c.OnChange(MaxClients, func(v string) { seen = append(seen, "b:"+v) })
	c.OnChange(ZSetMaxListpackValue, func(v string) { seen = append(seen, "zset:"+v) })
	c.OnChange(Port, func(v string) { seen = append(seen, "port:"+v) })
	for i, tt := range []struct {
		name, value string
		set         func(c *Config, name, value string) error
		err         string
		want        []string
	}{
		{"maxclients", "7", (*Config).Set, "", []string{"a:7", "b:7"}},
		{"MAXCLIENTS", "8", (*Config).SetRuntime, "", []string{"a:8", "b:8"}},
		{"maxclients", "8", (*Config).SetRuntime, "", []string{"a:8", "b:8"}},
		{"zset-max-ziplist-value", "1kb", (*Config).SetRuntime, "", []string{"zset:1024"}},
		{"port", "0", (*Config).Set, "", []string{"port:0"}},
		{"timeout", "5", (*Config).SetRuntime, "", nil},
		{"maxclients", "0", (*Config).SetRuntime, "argument must be between 1 and 1073741824 inclusive", nil},
		{"maxclients", "x", (*Config).Set, "argument couldn't be parsed into an integer", nil},
		{"port", "1", (*Config).SetRuntime, ErrImmutable.Error(), nil},
		{"nosuch", "1", (*Config).Set, ErrUnknown.Error(), nil},
	} {
		seen = nil
		if err := tt.set(c, tt.name, tt.value); errText(err) != tt.err {
			t.Errorf("step %d %s %q: error %v, want %q", i, tt.name, tt.value, err, tt.err)
		}
		if fmt.Sprint(seen) != fmt.Sprint(tt.want) {
			t.Errorf("step %d %s %q: hooks ran %q, want %q", i, tt.name, tt.value, seen, tt.want)
		}
	}
	if c.Int(MaxClients) != 8 {
		t.Errorf("maxclients %d after refused sets, want 8", c.Int(MaxClients))
	}
}

// Sets and their hooks run one at a time, so a hook reads the value it was
// called with; readers and registrations may run meanwhile (go test -race).
func TestConcurrentSets(t *testing.T) {
	c := New()
	var mu sync.Mutex
	calls := 0
	c.OnChange(MaxClients, func(v string) {
		runtime.Gosched() // let another Set in, if one could be
		if have := strconv.FormatInt(c.Int(MaxClients), 10); have != v {
			t.Errorf("hook called with %s while the value is %s", v, have)
		}
		mu.Lock()
		calls++
		mu.Unlock()
	})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				switch g % 4 {
				case 0, 1:
					if err := c.SetRuntime("maxclients", strconv.Itoa(1+g*1000+i)); err != nil {
						t.Error(err)
					}
				case 2:
					_ = c.Int(MaxClients) + int64(len(c.SaveRules())) + int64(c.Fsync())
					_ = get(c, "maxclients")
				case 3:
					c.OnChange(Timeout, func(string) {})
				}
			}
		}()
	}
	wg.Wait()
	if calls != 4*200 {
		t.Errorf("hook ran %d times, want %d", calls, 4*200)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// A save value that parses has a canonical form that parses to the same
// rules and is its own canonical form.
func FuzzSaveRules(f *testing.F) {
	for _, s := range []string{"3600 1 300 100", `""`, "1 0", " 9 9 ", "0 1", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rules, err := parseSave(s)
		if err != nil {
			return
		}
		text, err := saveCheck(s)
		if err != nil {
			t.Fatalf("%q parses but is refused: %v", s, err)
		}
		again, err := parseSave(text)
		if err != nil || !reflect.DeepEqual(again, rules) {
			t.Fatalf("%q: canonical %q parses to %v, %v; want %v", s, text, again, err, rules)
		}
		if text2, _ := saveCheck(text); text2 != text {
			t.Fatalf("%q: canonical %q is not stable: %q", s, text, text2)
		}
	})
}
