package persist

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestManifestParse(t *testing.T) {
	for i, tt := range []struct {
		in   string
		want string // re-encoded, or the error
	}{
		{"file a.1.base.rkv seq 1 type b\nfile a.1.incr.aof seq 1 type i\n", "file a.1.base.rkv seq 1 type b\nfile a.1.incr.aof seq 1 type i\n"},
		{"seq 2 type i file a.2.incr.aof\n\n", "file a.2.incr.aof seq 2 type i\n"},
		{"file ../x seq 1 type i", "bad file name"},
		{"file a seq 0 type i", "bad seq"},
		{"file a seq 1 type x", "unknown file type"},
		{"file a seq 1 type b\nfile b seq 2 type b", "second base"},
		{"file a seq 1 type", "odd number"},
		{"file a.2.incr.aof seq 2 type i\nfile a.1.incr.aof seq 1 type i", "not above the 2 of a.2.incr.aof"},
		{"file a.1.incr.aof seq 1 type i\nfile a.2.incr.aof seq 1 type i", "not above the 1"},
		{"file a.1.incr.aof seq 1 type i\nfile a.1.incr.aof seq 2 type i", "listed twice"},
		{"file a.1.base.rkv seq 1 type b\nfile a.1.base.rkv seq 1 type i", "listed twice"},
		{`file "a b.1.incr.aof" seq 1 type i`, "file \"a b.1.incr.aof\" seq 1 type i\n"},
		{`file "a\tb\"c.1.incr.aof" seq 1 type i`, "file \"a\\tb\\\"c.1.incr.aof\" seq 1 type i\n"},
		{"file 'a'.1.incr.aof seq 1 type i", "file 'a'.1.incr.aof seq 1 type i\n"},
		{`file "a.1.incr.aof seq 1 type i`, "file \"\\\"a.1.incr.aof\" seq 1 type i\n"}, // not a quoted string: a name as it is
		{`file "a b.1.incr.aof seq 1 type i`, "odd number"},
	} {
		m, err := parseManifest([]byte(tt.in))
		if err != nil {
			require.ErrorContains(t, err, tt.want, "step %d", i)
			continue
		}
		require.Equal(t, tt.want, string(m.encode()), "step %d", i)
	}
}

// An appendfilename with a space (which the configuration accepts, as
// Redis's does) names files the manifest quotes, as Redis's does:
// unquoted, the words of a line would not pair up, and every start after
// the first would refuse with "odd number of words".
func TestAppendfilenameWithSpaces(t *testing.T) {
	for _, name := range []string{"my log.aof", "tab\tlog.aof", `quo"te.aof`, "new\nline.aof"} {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig(t, t.TempDir(), "appendfilename", name)
			f := newFakeServer(newClock())
			require.NoError(t, f.open(t, cfg))
			f.exec(t, "APPEND", "k", "1")
			g := restart(t, f, cfg)
			require.Equal(t, map[string]string{"k": `"1"@0`}, g.contents())
			require.NoError(t, g.m.rewrite(g.m.ctx, g.m.AOF(), false))
			g.exec(t, "APPEND", "k", "2")
			h := restart(t, g, cfg)
			require.Equal(t, map[string]string{"k": `"12"@0`}, h.contents())
			require.Equal(t, name+".2.base.rkv", h.m.man.base.name)
		})
	}
}

// FuzzManifestNames: any file name the manifest accepts comes back the
// same from what it writes.
func FuzzManifestNames(f *testing.F) {
	for _, s := range []string{"appendonly.aof.1.incr.aof", "a b", "a\tb", `"a"`, "'a'", "\"", "a\nb", "\xff\xfe", "a\u00a0b", "#a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if name == "" {
			return // the configuration refuses it (config.fileName)
		}
		in := manifest{base: &manifestFile{name, 1}, incrs: []manifestFile{{name + ".i", 2}}}
		out, err := parseManifest(in.encode())
		if err != nil {
			if strings.Contains(err.Error(), "bad file name") {
				return // a name no configuration allows
			}
			t.Fatalf("%q: %v\n%s", name, err, in.encode())
		}
		require.Equal(t, in, out, "%q", name)
	})
}
