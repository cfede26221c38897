// Package glob is Redis's glob-style pattern matching (KEYS, SCAN MATCH, CONFIG GET).
package glob

// This file is a line-by-line port of stringmatchlen() and
// stringmatchlen_impl() from Redis 7's src/util.c: the glob dialect of KEYS,
// SCAN ... MATCH, PSUBSCRIBE, CONFIG GET and ACL key patterns.

// maxGlobNesting is the depth of '*' recursion past which a match attempt
// gives up and reports no match ("Protection against abusive patterns" in
// stringmatchlen_impl: `if (nesting > 1000) return 0;`).
const maxGlobNesting = 1000

// Match reports whether s matches the glob-style pattern, exactly as Redis's
// stringmatchlen(pattern, s, nocase) does on x86-64. Matching is on bytes,
// not runes:
//
//   - '*' matches any run of bytes, including none;
//   - '?' matches any single byte;
//   - "[abc]" matches one byte of the set, "[^abc]" one byte not in it;
//   - "[a-z]" matches one byte in the inclusive range, and a reversed range
//     such as "[z-a]" is swapped into "[a-z]";
//   - '\' makes the byte after it literal, outside and inside brackets.
//
// When nocase is true, the letters A-Z compare equal to a-z (the C
// tolower of the "C" locale Redis runs in); no other byte is folded.
// (CONFIG GET and COMMAND LIST FILTERBY PATTERN match with nocase; KEYS,
// SCAN and PSUBSCRIBE do not.)
//
// Redis's quirks are kept on purpose, because clients can observe them:
//
//   - The loop runs only while both pattern and subject are non-empty, so
//     an empty s matches only the empty pattern: Match("*", "") is false.
//     (KEYS and SCAN never ask: they treat a bare "*" as "every key" before
//     calling the matcher, and callers must do the same.)
//   - An unterminated class ("[abc") takes the rest of the pattern as its
//     set; "[" alone never matches and "[^" matches any one byte. A '\'
//     that ends the pattern matches a literal '\'.
//   - The bounds of a range and the subject byte are compared as C's char,
//     which is signed on x86-64: bytes 0x80-0xff sort below 0x00, so
//     "[a-\xff]" is the range [\xff, a], which matches "A" and not "b".
//     With nocase, the bounds and the byte then go through glibc's tolower,
//     which turns the negative chars back into 128..254 (all but 0xff, which
//     is EOF to it), after the bounds were ordered. This is Redis on x86-64
//     glibc Linux, such as the Debian-based official images; a Redis built
//     where char is unsigned (arm64 Linux) or against musl (Alpine) differs
//     on ranges that involve bytes 0x80-0xff, and only there.
//   - A '-' makes a range whenever a byte precedes it in the class and any
//     byte, even ']', follows it: "[-a]" is the set {'-', 'a'}, but "[a-]"
//     is the range ']'..'a' in a class left unterminated, so it matches "_"
//     and not "-".
//   - skipLongerMatches: once the rest of the pattern after a '*' has failed
//     against every suffix of the subject, no earlier '*' can succeed by
//     consuming more bytes either, so the whole search stops. This keeps
//     patterns such as "a*a*a*a*...b" from taking exponential time.
//   - '*' recursion deeper than 1000 levels gives up and reports no match,
//     even where a match exists: Match(strings.Repeat("*?", 50000) against
//     50000 bytes) is false, as in Redis.
//
// Match does not allocate and does not retain its arguments. It is not
// inlined: inlined into another package, its flag for the recursion moves
// to the heap (one allocation per call).
//
//go:noinline
func Match(pattern, s []byte, nocase bool) bool {
	skipLongerMatches := false
	return stringMatch(pattern, s, nocase, &skipLongerMatches, 0)
}

// MatchString is Match for a pattern and subject held as strings, with case
// significant (nocase false), the mode KEYS, SCAN and PSUBSCRIBE use. It does
// not allocate (not inlined, as Match).
//
//go:noinline
func MatchString(pattern, s string) bool {
	skipLongerMatches := false
	return stringMatch(pattern, s, false, &skipLongerMatches, 0)
}

// byteAt is pattern[i] with C's view of the byte just past the end: Redis's
// patterns are NUL-terminated sds strings, and stringmatchlen reads that
// terminator (pattern[1] when one byte is left, *pattern after the last one).
func byteAt[T string | []byte](b T, i int) byte {
	if i < len(b) {
		return b[i]
	}
	return 0
}

// signedChar converts a byte as C converts a (signed, on x86-64) char to int.
func signedChar(b byte) int {
	return int(int8(b))
}

// toLower is glibc's tolower in the "C" locale (Redis sets only LC_COLLATE
// from the environment) for an int that came from a signed char: 'A'..'Z'
// fold to 'a'..'z', and, because glibc's tables also serve signed chars,
// -128..-2 map to their unsigned values 128..254, while -1 is EOF and stays
// -1. Only range bounds can tell the second rule apart (equality of two
// mapped bytes is unchanged by it).
func toLower(c int) int {
	switch {
	case c >= 'A' && c <= 'Z':
		return c + ('a' - 'A')
	case c >= -128 && c <= -2:
		return c + 256
	}
	return c
}

// stringMatch is stringmatchlen_impl. Where the C advances the pointer
// "pattern" and decrements "patternLen" together, this keeps one index p into
// pattern (patternLen is len(pattern)-p), and likewise i into str; a recursive
// call gets the suffixes, which end where the caller's do, as in the C.
func stringMatch[T string | []byte](pattern, str T, nocase bool, skipLongerMatches *bool, nesting int) bool {
	// Protection against abusive patterns.
	if nesting > maxGlobNesting {
		return false
	}

	p, i := 0, 0
	for p < len(pattern) && i < len(str) {
		switch pattern[p] {
		case '*':
			for byteAt(pattern, p+1) == '*' {
				p++
			}
			if len(pattern)-p == 1 {
				return true // match
			}
			for i < len(str) {
				if stringMatch(pattern[p+1:], str[i:], nocase, skipLongerMatches, nesting+1) {
					return true // match
				}
				if *skipLongerMatches {
					return false // no match
				}
				i++
			}
			// There was no match for the rest of the pattern starting from
			// anywhere in the rest of the string. If there were any '*'
			// earlier in the pattern, we can terminate the search early
			// without trying to match them to longer substrings: a longer
			// match for the earlier part of the pattern would require the
			// rest of the pattern to match starting later in the string, and
			// we have just determined that it matches nowhere.
			*skipLongerMatches = true
			return false // no match
		case '?':
			i++
		case '[':
			p++
			not := byteAt(pattern, p) == '^'
			if not {
				p++
			}
			match := false
			for {
				if byteAt(pattern, p) == '\\' && len(pattern)-p >= 2 {
					p++
					if pattern[p] == str[i] {
						match = true
					}
				} else if byteAt(pattern, p) == ']' {
					break
				} else if p == len(pattern) {
					// Unterminated class: step back onto its last byte so
					// that the p++ below leaves the pattern exhausted.
					p--
					break
				} else if len(pattern)-p >= 3 && pattern[p+1] == '-' {
					start := signedChar(pattern[p])
					end := signedChar(pattern[p+2])
					c := signedChar(str[i])
					if start > end {
						start, end = end, start
					}
					if nocase {
						start = toLower(start)
						end = toLower(end)
						c = toLower(c)
					}
					p += 2
					if c >= start && c <= end {
						match = true
					}
				} else {
					if !nocase {
						if pattern[p] == str[i] {
							match = true
						}
					} else if toLower(signedChar(pattern[p])) == toLower(signedChar(str[i])) {
						match = true
					}
				}
				p++
			}
			if not {
				match = !match
			}
			if !match {
				return false // no match
			}
			i++
		case '\\':
			if len(pattern)-p >= 2 {
				p++
			}
			fallthrough
		default:
			if !nocase {
				if pattern[p] != str[i] {
					return false // no match
				}
			} else if toLower(signedChar(pattern[p])) != toLower(signedChar(str[i])) {
				return false // no match
			}
			i++
		}
		p++
		if i == len(str) {
			for byteAt(pattern, p) == '*' {
				p++
			}
			break
		}
	}
	return p == len(pattern) && i == len(str)
}
