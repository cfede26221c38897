package glob

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The expectations below were checked against Redis 7.0.15 (KEYS on a
// one-key database) and against a C build of stringmatchlen_impl on x86-64.
func TestMatch(t *testing.T) {
	tests := []struct {
		name    string
		pattern string
		s       string
		nocase  bool
		want    bool
	}{
		// Literals.
		{"empty pattern empty string", "", "", false, true},
		{"empty pattern", "", "a", false, false},
		{"literal", "hello", "hello", false, true},
		{"literal mismatch", "hello", "hellO", false, false},
		{"literal prefix only", "hell", "hello", false, false},
		{"literal longer than subject", "hello!", "hello", false, false},

		// Stars.
		{"star alone", "*", "anything", false, true},
		{"star never matches empty subject", "*", "", false, false},
		{"stars never match empty subject", "***", "", false, false},
		{"prefix star", "user:*", "user:1000", false, true},
		{"prefix star matches empty rest", "user:*", "user:", false, true},
		{"prefix star mismatch", "user:*", "usr:1000", false, false},
		{"suffix star", "*.png", "logo.png", false, true},
		{"suffix star mismatch", "*.png", "logo.jpg", false, false},
		{"infix star", "h*llo", "heeeello", false, true},
		{"infix star empty", "h*llo", "hllo", false, true},
		{"collapsed stars", "a**b", "axxb", false, true},
		{"trailing stars after full match", "ab**", "ab", false, true},
		{"star then question", "*?", "a", false, true},
		{"star question needs a byte", "a*?", "a", false, false},
		{"two stars", "*a*b*", "xxaxxbxx", false, true},
		{"two stars order", "*a*b*", "xxbxxaxx", false, false},
		{"nested loops regression", "a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", strings.Repeat("a", 40), false, false},

		// Question marks.
		{"question", "h?llo", "hello", false, true},
		{"question needs a byte", "h?llo", "hllo", false, false},
		{"question matches any byte", "?", "\xff", false, true},
		{"question on empty subject", "?", "", false, false},

		// Classes.
		{"class", "h[ae]llo", "hallo", false, true},
		{"class second", "h[ae]llo", "hello", false, true},
		{"class miss", "h[ae]llo", "hillo", false, false},
		{"negated class", "h[^e]llo", "hallo", false, true},
		{"negated class miss", "h[^e]llo", "hello", false, false},
		{"range", "h[a-b]llo", "hbllo", false, true},
		{"range miss", "h[a-b]llo", "hcllo", false, false},
		{"reversed range", "[z-a]", "m", false, true},
		{"reversed range miss", "[z-a]", "A", false, false},
		{"digit range", "[0-9]*", "42abc", false, true},
		{"dash first is literal", "[-a]", "-", false, true},
		{"dash last ranges to the close bracket", "[a-]", "_", false, true},
		{"dash last is not literal", "[a-]", "-", false, false},
		{"dash last range excludes b", "[a-]", "b", false, false},
		{"dash first and last", "[-]", "-", false, true},
		{"escaped bracket in class", `[\]]`, "]", false, true},
		{"escaped caret in class", `[\^]`, "^", false, true},
		{"backslash escape in class matches escaped byte", `[\a]`, "a", false, true},
		{"escape in class is literal", `[\-]`, "-", false, true},
		{"close bracket first ends empty class", "[]a]", "a", false, false},
		{"empty class", "[]", "a", false, false},
		{"negated empty class", "[^]", "a", false, true},
		{"unterminated class", "[abc", "b", false, true},
		{"unterminated class miss", "[abc", "d", false, false},
		{"lone bracket never matches", "[", "[", false, false},
		{"unterminated negation matches any byte", "[^", "x", false, true},
		{"class then more", "[a-c]x", "bx", false, true},
		{"star class", "*[0-9]", "key7", false, true},
		{"signed char range upper bound 0xff", "[a-\xff]", "b", false, false},
		{"signed char range includes A", "[a-\xff]", "A", false, true},
		{"signed char range includes 0x80", "[\x80-a]", "\x80", false, true},
		{"signed char range excludes 0x7f", "[\x80-a]", "\x7f", false, false},
		{"high bytes range", "[\x80-\xff]", "\x90", false, true},

		// Escapes.
		{"escaped star", `\*`, "*", false, true},
		{"escaped star is literal", `\*`, "a", false, false},
		{"escaped question", `a\?`, "a?", false, true},
		{"escaped question is literal", `a\?`, "ab", false, false},
		{"escaped bracket", `\[a]`, "[a]", false, true},
		{"escaped backslash", `\\`, `\`, false, true},
		{"trailing backslash is literal", `a\`, `a\`, false, true},
		{"trailing backslash needs a byte", `a\`, "a", false, false},
		{"escaped ordinary byte", `\a`, "a", false, true},

		// Case folding.
		{"nocase literal", "HELLO", "hello", true, true},
		{"case sensitive literal", "HELLO", "hello", false, false},
		{"nocase class", "H[A-Z]LLO", "hello", true, true},
		{"nocase class set", "[ABC]", "b", true, true},
		{"nocase reversed range", "[Z-A]", "q", true, true},
		{"nocase does not fold high bytes", "\xc0", "\xe0", true, false},
		// With nocase, glibc's tolower turns the bounds' negative chars into
		// 128..254 after the bounds were ordered as signed chars.
		{"nocase high range bound unsigned", "[\x80-]", "\\", true, false},
		{"case-sensitive high range bound signed", "[\x80-]", "\\", false, true},
		{"nocase high bytes range", "[\x80-\xfe]", "\x90", true, true},
		{"nocase 0xff stays EOF", "[\x80-\xff]", "\xff", true, false},
		{"case-sensitive 0xff in range", "[\x80-\xff]", "\xff", false, true},
		{"nocase escaped", `\A`, "a", true, true},
		{"nocase escape in class is exact", `[\A]`, "a", true, false},

		// Binary safety.
		{"NUL bytes", "a\x00*", "a\x00bc", false, true},
		{"NUL in class", "[\x00]", "\x00", false, true},
		{"NUL does not end the pattern", "a\x00b", "a", false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Match([]byte(tc.pattern), []byte(tc.s), tc.nocase)
			assert.Equal(t, tc.want, got, "Match(%q, %q, %v)", tc.pattern, tc.s, tc.nocase)
			if !tc.nocase {
				assert.Equal(t, tc.want, MatchString(tc.pattern, tc.s), "MatchString(%q, %q)", tc.pattern, tc.s)
			}
		})
	}
}

// TestMatchAbusivePatterns covers keyspace.tcl's "Regression for pattern
// matching very long nested loops" tests: they must finish quickly, and the
// 1000-level nesting guard gives up rather than recursing 50000 deep, so the
// second one reports no match even though the pattern would match.
func TestMatchAbusivePatterns(t *testing.T) {
	start := time.Now()
	assert.False(t, MatchString(strings.Repeat("a*", 32)+"b", strings.Repeat("a", 66)))
	assert.False(t, MatchString(strings.Repeat("*?", 50000), strings.Repeat("a", 50000)))
	assert.False(t, Match(bytes.Repeat([]byte("*a"), 2000), bytes.Repeat([]byte("a"), 4000), false))
	assert.True(t, MatchString(strings.Repeat("*?", 1000), strings.Repeat("a", 1000)), "1000 levels are within the guard")
	assert.False(t, MatchString(strings.Repeat("*?", 1002), strings.Repeat("a", 1002)), "1002 levels are not")
	assert.Less(t, time.Since(start), 5*time.Second)
}

func TestMatchAllocs(t *testing.T) {
	pattern, s := []byte("[a-z]*:[0-9]*"), []byte("user:1234")
	var sink bool
	allocs := testing.AllocsPerRun(100, func() {
		sink = Match(pattern, s, true) != MatchString("*.png", "cdn/logo.png")
	})
	assert.Zero(t, allocs)
	_ = sink
}

// globReference is the textbook exponential glob for patterns without
// brackets ('*', '?', '\' escapes, literals), adjusted by the one Redis rule
// that differs from it: an empty subject matches only an empty pattern.
func globReference(pattern, s []byte, nocase bool) bool {
	if len(s) == 0 {
		return len(pattern) == 0
	}
	return globIdeal(pattern, s, nocase)
}

func globIdeal(pattern, s []byte, nocase bool) bool {
	if len(pattern) == 0 {
		return len(s) == 0
	}
	switch pattern[0] {
	case '*':
		for i := 0; i <= len(s); i++ {
			if globIdeal(pattern[1:], s[i:], nocase) {
				return true
			}
		}
		return false
	case '?':
		return len(s) > 0 && globIdeal(pattern[1:], s[1:], nocase)
	}
	lit, rest := pattern[0], pattern[1:]
	if lit == '\\' && len(pattern) >= 2 {
		lit, rest = pattern[1], pattern[2:]
	}
	if len(s) == 0 {
		return false
	}
	a, b := lit, s[0]
	if nocase {
		a, b = byte(toLower(int(a))), byte(toLower(int(b)))
	}
	return a == b && globIdeal(rest, s[1:], nocase)
}

// globAlphabet maps fuzz bytes onto a small alphabet so that random patterns
// and subjects actually overlap.
const globAlphabet = "ab*?\\A"

func FuzzMatch(f *testing.F) {
	seeds := []struct{ p, s string }{
		{"*", ""}, {"a*b", "axxb"}, {"[a-z]*", "hello"}, {"[^", "x"}, {"\\", "\\"},
		{"a*a*a*b", "aaaaaaaa"}, {"*?*?", "ab"}, {"[\\", "\\"}, {"[a-\xff]", "A"},
	}
	for _, seed := range seeds {
		f.Add([]byte(seed.p), []byte(seed.s), false)
		f.Add([]byte(seed.p), []byte(seed.s), true)
	}
	f.Fuzz(func(t *testing.T, pattern, s []byte, nocase bool) {
		// Arbitrary input: must not panic, and both entry points agree.
		got := Match(pattern, s, nocase)
		if !nocase && got != MatchString(string(pattern), string(s)) {
			t.Fatalf("Match and MatchString disagree on %q, %q", pattern, s)
		}

		// Bracket-free input over a small alphabet: agree with the textbook
		// glob. Lengths are capped to keep the exponential reference cheap.
		if len(pattern) > 10 || len(s) > 10 {
			return
		}
		p2, s2 := make([]byte, len(pattern)), make([]byte, len(s))
		for i, c := range pattern {
			p2[i] = globAlphabet[int(c)%len(globAlphabet)]
		}
		for i, c := range s {
			s2[i] = globAlphabet[int(c)%len(globAlphabet)]
		}
		if got, want := Match(p2, s2, nocase), globReference(p2, s2, nocase); got != want {
			t.Fatalf("Match(%q, %q, %v) = %v, reference %v", p2, s2, nocase, got, want)
		}
	})
}

var globSink bool

func BenchmarkMatch(b *testing.B) {
	benchmarks := []struct {
		name, pattern, s string
	}{
		{"literal", "user:1234:session", "user:1234:session"},
		{"prefix", "user:*", "user:1234:session"},
		{"suffix", "*.png", "cdn/eu/assets/logo.png"},
		{"class", "[a-z]*:[0-9]*", "user:1234"},
		{"abusive", strings.Repeat("a*", 20) + "b", strings.Repeat("a", 64)},
	}
	for _, bm := range benchmarks {
		p, s := []byte(bm.pattern), []byte(bm.s)
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				globSink = Match(p, s, false)
			}
		})
	}
}
