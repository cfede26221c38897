package sdsargs

import (
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
	for i, tt := range []struct {
		in   string
		want []string
		ok   bool
	}{
		{"a b  c", []string{"a", "b", "c"}, true},
		{`set "a b" 'c d'`, []string{"set", "a b", "c d"}, true},
		{`"\x41\n\t\\"`, []string{"A\n\t\\"}, true},
		{`'it\'s'`, []string{"it's"}, true},
		{`""`, []string{""}, true},
		{`"abc`, nil, false},
		{`"a"b`, nil, false},
		{`'a`, nil, false},
		{"", nil, true},
	} {
		got, ok := Split(tt.in)
		if ok != tt.ok || strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
			t.Errorf("step %d %q: have %q, %v; want %q, %v", i, tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func FuzzSplit(f *testing.F) {
	for _, s := range []string{`a "b c" 'd'`, `"\x4`, `'\'`, "\"\\\"\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, ok := Split(s)
		if !ok {
			return
		}
		total := 0
		for _, w := range words {
			total += len(w)
		}
		if total > len(s) {
			t.Fatalf("%q split into more bytes than it has: %q", s, words)
		}
	})
}

// AppendRepr's output reads back, through Split, as what it quoted.
func FuzzAppendRepr(f *testing.F) {
	for _, s := range []string{"", "a b", "a\\b\"c\n\r\t\a\b\x00\xff~", "'", "\x7f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q := string(AppendRepr(nil, []byte(s)))
		args, ok := Split(q)
		if !ok || len(args) != 1 || args[0] != s {
			t.Fatalf("%q quoted as %s reads back as %q, %v", s, q, args, ok)
		}
	})
}
