package command

import (
	"bytes"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ratekv/ratekv/internal/redisnum"
)

// Fuzz tests for the argument parsers of the keyspace and string commands.
// Each checks the parser against a restatement of Redis's rules written
// independently of it, or against invariants every accepted input must
// satisfy. Run one with, e.g.:
//
//	go test ./command/ -run XXX -fuzz FuzzParseSetOptions -fuzztime 30s

// fuzzArgs splits a fuzz input into arguments at spaces.
func fuzzArgs(s string) [][]byte {
	if s == "" {
		return nil
	}
	return bs(strings.Split(s, " ")...)
}

func FuzzParseExpireFlags(f *testing.F) {
	for _, s := range []string{"", "NX", "nx XX", "GT LT", "gt gt", "xx lt", "foo", "NX foo", "lt\x00x", "bar\r\nx NX"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words := fuzzArgs(s)
		have, msg := parseExpireFlags(words)
		// Model: every word must be one of four options; the first that
		// is not is reported; NX excludes the rest and GT excludes LT.
		var want expireFlags
		for _, w := range words {
			switch strings.ToLower(string(cstr(w))) {
			case "nx":
				want |= expireNX
			case "xx":
				want |= expireXX
			case "gt":
				want |= expireGT
			case "lt":
				want |= expireLT
			default:
				wantMsg := "ERR Unsupported option " + string(sanitizeErr(cstr(w)))
				if msg != wantMsg {
					t.Fatalf("%q: have %q, want %q", s, msg, wantMsg)
				}
				return
			}
		}
		wantMsg := ""
		switch {
		case want&expireNX != 0 && want != expireNX:
			wantMsg = errExpireNXCompat
		case want&expireGT != 0 && want&expireLT != 0:
			wantMsg = errExpireGTLT
		}
		if msg != wantMsg || (msg == "" && have != want) {
			t.Fatalf("%q: have %b %q, want %b %q", s, have, msg, want, wantMsg)
		}
	})
}

func FuzzParseSetOptions(f *testing.F) {
	for _, s := range []string{"", "NX", "XX GET", "nx xx", "EX 10", "EX 10 PX 10", "KEEPTTL", "EX 1 EX 2",
		"PERSIST", "GET KEEPTTL NX", "EXAT", "pxat 5 keepttl", "nx\x00 get"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, s string, getex bool) {
		o, ok := parseSetOptions(fuzzArgs(s), getex)
		if !ok {
			if o.flags != 0 || o.expire != nil {
				t.Fatalf("%q: rejected with state %+v", s, o)
			}
			return
		}
		fl := o.flags
		switch {
		case fl&setNX != 0 && fl&setXX != 0:
			t.Fatalf("%q: NX and XX", s)
		case bits.OnesCount16(uint16(fl&setExpireAny)) > 1:
			t.Fatalf("%q: two expire options: %b", s, fl)
		case fl&setKeepTTL != 0 && fl&(setExpireAny|setPersist) != 0:
			t.Fatalf("%q: KEEPTTL with an expire option: %b", s, fl)
		case fl&setPersist != 0 && (!getex || fl&setExpireAny != 0):
			t.Fatalf("%q: PERSIST misplaced: %b", s, fl)
		case getex && fl&(setNX|setXX|setGet|setKeepTTL) != 0:
			t.Fatalf("%q: a SET option accepted by GETEX: %b", s, fl)
		case (fl&setExpireAny != 0) != (o.expire != nil):
			t.Fatalf("%q: expire flag %b with argument %q", s, fl, o.expire)
		}
		// The canonical spelling of what was parsed parses to the same.
		var canon [][]byte
		for _, opt := range []struct {
			f    setFlags
			name string
		}{{setNX, "NX"}, {setXX, "XX"}, {setGet, "GET"}, {setKeepTTL, "KEEPTTL"}, {setPersist, "PERSIST"},
			{setEX, "EX"}, {setPX, "PX"}, {setEXAT, "EXAT"}, {setPXAT, "PXAT"}} {
			if fl&opt.f != 0 {
				canon = append(canon, []byte(opt.name))
				if opt.f&setExpireAny != 0 {
					canon = append(canon, o.expire)
				}
			}
		}
		o2, ok2 := parseSetOptions(canon, getex)
		if !ok2 || o2.flags != o.flags || !bytes.Equal(o2.expire, o.expire) {
			t.Fatalf("%q: parsed %+v, canonical %q parses to %+v, %v", s, o, canon, o2, ok2)
		}
	})
}

func FuzzSetDeadline(f *testing.F) {
	f.Add("10", uint8(0), int64(1_700_000_000_000))
	f.Add("9223372036854775", uint8(0), int64(1))
	f.Add("-1", uint8(3), int64(0))
	f.Add("abc", uint8(1), int64(5))
	f.Fuzz(func(t *testing.T, expire string, which uint8, nowMs int64) {
		if nowMs < 0 {
			nowMs = -nowMs
		}
		if nowMs < 0 {
			nowMs = 0
		}
		flag := []setFlags{setEX, setPX, setEXAT, setPXAT}[which%4]
		at, msg := setDeadline(setOpts{flags: flag, expire: []byte(expire)}, nowMs, "set")
		n, isInt := redisnum.ParseInt([]byte(expire))
		if !isInt {
			if msg != errNotInt {
				t.Fatalf("%q: have %q, want not-an-integer", expire, msg)
			}
			return
		}
		// Model in 128-bit arithmetic: scale, add the clock for relative
		// options; valid when positive and within int64.
		unit := int64(1)
		if flag == setEX || flag == setEXAT {
			unit = 1000
		}
		base := int64(0)
		if flag == setEX || flag == setPX {
			base = nowMs
		}
		hi, lo := bits.Mul64(uint64(n), uint64(unit))
		valid := n > 0 && hi == 0 && lo <= math.MaxInt64
		if valid {
			sum, carry := bits.Add64(lo, uint64(base), 0)
			valid = carry == 0 && sum <= math.MaxInt64
			if valid && at != int64(sum) {
				t.Fatalf("%q %b now %d: have %d, want %d", expire, flag, nowMs, at, sum)
			}
		}
		if valid != (msg == "") {
			t.Fatalf("%q %b now %d: have %d %q, want valid %v", expire, flag, nowMs, at, msg, valid)
		}
		if msg != "" && msg != "ERR invalid expire time in 'set' command" {
			t.Fatalf("%q: unexpected error %q", expire, msg)
		}
	})
}

func FuzzParseCursor(f *testing.F) {
	for _, s := range []string{"0", "", "-1", "+5", " 1", "1 ", "18446744073709551615", "18446744073709551616", "7\x00x", "-", "0x1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		have, ok := parseCursor([]byte(s))
		// Model: strtoul over the C string, base 10, whole string consumed,
		// no leading space, no ERANGE.
		c := s
		if i := strings.IndexByte(c, 0); i >= 0 {
			c = c[:i]
		}
		var want uint64
		wantOK := true
		switch {
		case c == "":
		case strings.ContainsRune(" \t\n\v\f\r", rune(c[0])):
			wantOK = false
		default:
			body, neg := c, false
			if body[0] == '+' || body[0] == '-' {
				neg, body = body[0] == '-', body[1:]
			}
			v, err := strconv.ParseUint(body, 10, 64)
			if err != nil || strings.ContainsAny(body, "+-_") {
				wantOK = false
			} else {
				want = v
				if neg {
					want = -v
				}
			}
		}
		if ok != wantOK || (ok && have != want) {
			t.Fatalf("%q: have %d %v, want %d %v", s, have, ok, want, wantOK)
		}
	})
}

func FuzzParseScan(f *testing.F) {
	for _, s := range []string{"0", "0 COUNT 10", "0 MATCH a* TYPE string", "x", "0 COUNT 0", "0 COUNT", "0 count 5 count 6", "0 FOO bar"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		args := bs(strings.Split(s, " ")...)
		o, msg := parseScan(args)
		switch msg {
		case "":
			if o.count < 1 || (len(args)-1)%2 != 0 {
				t.Fatalf("%q: accepted as %+v", s, o)
			}
			if _, ok := parseCursor(args[0]); !ok {
				t.Fatalf("%q: invalid cursor accepted", s)
			}
		case errCursor:
			if _, ok := parseCursor(args[0]); ok {
				t.Fatalf("%q: valid cursor refused", s)
			}
		case errSyntax, errNotInt:
		default:
			t.Fatalf("%q: unexpected error %q", s, msg)
		}
	})
}

func FuzzStrRange(f *testing.F) {
	f.Add(int64(0), int64(-1), uint16(11))
	f.Add(int64(-1), int64(-5), uint16(11))
	f.Add(int64(math.MinInt64), int64(math.MaxInt64), uint16(3))
	f.Add(int64(0), int64(0), uint16(0))
	f.Fuzz(func(t *testing.T, start, end int64, size uint16) {
		n := int64(size)
		first, last, ok := strRange(start, end, n)
		if ok && !(0 <= first && first <= last && last < n) {
			t.Fatalf("(%d, %d) of %d: out of bounds [%d, %d]", start, end, n, first, last)
		}
		// Model: for non-negative indexes GETRANGE is the slice
		// [start, min(end, size-1)], empty when that is.
		if start >= 0 && end >= 0 {
			wantLast := min(end, n-1)
			wantOK := start <= wantLast
			if ok != wantOK || (ok && (first != start || last != wantLast)) {
				t.Fatalf("(%d, %d) of %d: have [%d, %d] %v, want [%d, %d] %v", start, end, n, first, last, ok, start, wantLast, wantOK)
			}
		}
		// Negative indexes count from the end: -1 is the last byte.
		if start < 0 && end < 0 && start >= -n && end >= -n {
			wantOK := start <= end
			if ok != wantOK || (ok && (first != n+start || last != n+end)) {
				t.Fatalf("(%d, %d) of %d: have [%d, %d] %v", start, end, n, first, last, ok)
			}
		}
	})
}

func FuzzParseRandArgs(f *testing.F) {
	for _, s := range []string{"", "5", "-5 withscores", "x", "1 withscores x", "-9223372036854775808", "9223372036854775807 WITHVALUES",
		"-4611686018427387904 withvalues", "0 withvalue", "3 withscores\x00x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		args := append(bs("ZRANDMEMBER", "k"), fuzzArgs(s)...)
		for _, with := range []string{"withscores", "withvalues"} {
			o, msg := parseRandArgs(args, with)
			// Model: no count; or an integer above MinInt64, then at most
			// the option, which halves the range.
			wantMsg := ""
			if len(args) > 2 {
				n, ok := redisnum.ParseInt(args[2])
				switch {
				case !ok:
					wantMsg = errNotInt
				case n == math.MinInt64:
					wantMsg = "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"
				case len(args) > 4 || len(args) == 4 && !strings.EqualFold(string(cstr(args[3])), with):
					wantMsg = errSyntax
				case len(args) == 4 && (n < -math.MaxInt64/2 || n > math.MaxInt64/2):
					wantMsg = errValueRange
				}
				if wantMsg == "" && (!o.hasCount || o.count != n || o.with != (len(args) == 4)) {
					t.Fatalf("%q %s: parsed %+v", s, with, o)
				}
			}
			if msg != wantMsg {
				t.Fatalf("%q %s: have %q, want %q", s, with, msg, wantMsg)
			}
		}
	})
}

func FuzzParseScanArgs(f *testing.F) {
	for _, s := range []string{"", "COUNT 10", "MATCH a*", "match * count 5", "COUNT 0", "COUNT", "count 5 count 6", "FOO bar", "COUNT x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		args := fuzzArgs(s)
		o, msg := parseScanArgs(args)
		switch msg {
		case "":
			if o.count < 1 || len(args)%2 != 0 {
				t.Fatalf("%q: accepted as %+v", s, o)
			}
			// The last COUNT and MATCH win.
			for i := 0; i+1 < len(args); i += 2 {
				if strings.EqualFold(string(cstr(args[i])), "count") {
					n, _ := redisnum.ParseInt(args[i+1])
					if i+2 >= len(args) || !slices.ContainsFunc(args[i+2:], func(a []byte) bool { return strings.EqualFold(string(cstr(a)), "count") }) {
						if int64(o.count) != min(n, math.MaxInt32) {
							t.Fatalf("%q: count %d", s, o.count)
						}
					}
				}
			}
		case errSyntax, errNotInt:
		default:
			t.Fatalf("%q: unexpected error %q", s, msg)
		}
	})
}

// FuzzEvalArgs: EVAL's and EVALSHA's numkeys and argument split, against
// Redis's rules: numkeys must be an integer, at most the number of
// arguments after it and not negative (checked in that order, after
// EVALSHA's digest length); KEYS and ARGV then split the rest, and
// evalKeys (COMMAND GETKEYS, cluster routing) names the same keys.
func FuzzEvalArgs(f *testing.F) {
	for _, s := range []string{"0", "1 a", "2 a b c", "-1", "3 a", "x", "01 a", " 1 a", "1 a b", "9223372036854775807", "+1 a", "0x1 a", ""} {
		f.Add(s, false)
		f.Add(s, true)
	}
	clock := &fakeClock{}
	s := newSocketless(f, clock, nil)
	const body = "return {#KEYS, #ARGV, KEYS[1], ARGV[1]}"
	sha := sha1hex([]byte(body))
	s.c.eng.loadScript([]byte(body))
	f.Fuzz(func(t *testing.T, in string, bySHA bool) {
		words := strings.Split(in, " ")
		args := []string{"EVAL", body}
		if bySHA {
			args = []string{"EVALSHA", sha}
		}
		args = append(args, words...)
		have := s.do(t, args...)
		n, ok := redisnum.ParseInt([]byte(words[0]))
		rest := int64(len(words) - 1)
		var want string
		switch {
		case !ok:
			want = "-" + errNotInt + "\r\n"
		case n > rest:
			want = "-" + errEvalTooManyKeys + "\r\n"
		case n < 0:
			want = "-" + errEvalNegativeKeys + "\r\n"
		default:
			// The reply array ends at the first nil: no KEYS[1], no ARGV[1].
			c := &Client{proto: 2}
			switch {
			case n == 0:
				c.WriteArray(2)
			case rest == n:
				c.WriteArray(3)
			default:
				c.WriteArray(4)
			}
			c.WriteInt(n)
			c.WriteInt(rest - n)
			if n > 0 {
				c.WriteBulk([]byte(words[1]))
				if rest > n {
					c.WriteBulk([]byte(words[1+n]))
				}
			}
			want = string(c.Out)
			// evalKeys names the same keys.
			argv := bs(args...)
			idx := evalKeys(argv, nil)
			if int64(len(idx)) != n || n > 0 && idx[0] != 3 {
				t.Fatalf("%q: evalKeys %v for %d keys", in, idx, n)
			}
		}
		if have != want {
			t.Fatalf("%q (sha %v): have %q, want %q", in, bySHA, have, want)
		}
	})
}

func FuzzParseLpos(f *testing.F) {
	for _, s := range []string{"", "RANK 2", "rank -1 COUNT 0", "MAXLEN 3", "RANK 0", "COUNT -1", "MAXLEN x", "FOO", "RANK",
		"rank -9223372036854775808", "count 1 count 2", "RANK 1\x00x 5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		args := append(bs("LPOS", "k", "e"), fuzzArgs(s)...)
		o, msg := parseLpos(args)
		// Model: option-value pairs, the first bad one reported; the last
		// of each option wins.
		want := lposOpts{rank: 1, count: -1}
		wantMsg := ""
	loop:
		for j := 3; j < len(args); j += 2 {
			opt := strings.ToLower(string(cstr(args[j])))
			if j+1 >= len(args) || opt != "rank" && opt != "count" && opt != "maxlen" {
				wantMsg = errSyntax
				break
			}
			n, ok := redisnum.ParseInt(args[j+1])
			switch {
			case opt == "rank" && !ok:
				wantMsg = errNotInt
			case opt == "rank" && n == math.MinInt64:
				wantMsg = "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"
			case opt == "rank" && n == 0:
				wantMsg = errLposRank
			case opt == "rank":
				want.rank = n
			case !ok || n < 0:
				wantMsg = map[string]string{"count": errLposCount, "maxlen": errLposMaxlen}[opt]
			case opt == "count":
				want.count = n
			default:
				want.maxlen = n
			}
			if wantMsg != "" {
				break loop
			}
		}
		if msg != wantMsg || msg == "" && o != want {
			t.Fatalf("%q: have %+v %q, want %+v %q", s, o, msg, want, wantMsg)
		}
	})
}

// FuzzMigrateSetslotArgs: MIGRATE's parser and its key finder agree on
// the keys, which lie within the arguments; an accepted MIGRATE has a
// positive timeout, and CLUSTER SETSLOT's parser accepts only a slot in
// range with an action of the right arity.
func FuzzMigrateSetslotArgs(f *testing.F) {
	for _, s := range []string{
		"migrate h 1 k 0 1000", "migrate h 1  0 1000 KEYS a b", "migrate h 1 k 0 1000 keys a",
		"migrate h 1  0 0 COPY REPLACE AUTH pw KEYS a", "migrate h 1  0 -5 AUTH2 u p keys", "migrate h 1  0 1 auth keys",
		"migrate h 1 k x 1", "migrate h 1 k 0 99999999999999999999", "migrate h 1 k 0 9223372036854775807 auth",
		"cluster setslot 5 MIGRATING id", "cluster setslot 16384 stable", "cluster setslot -1 node x",
		"cluster setslot 1 stable x", "cluster setslot 1 Importing",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		args := fuzzArgs(s)
		if len(args) >= 6 {
			idx := migrateKeys(args, nil)
			for _, i := range idx {
				if i < 3 || i >= len(args) {
					t.Fatalf("migrateKeys(%q) = %v: out of range", s, idx)
				}
			}
			if o, msg := parseMigrate(args); msg == "" {
				if o.timeout <= 0 {
					t.Fatalf("parseMigrate(%q): timeout %v", s, o.timeout)
				}
				if o.first+o.n != len(args) && o.n != 1 || o.first < 3 || o.first+o.n > len(args) {
					t.Fatalf("parseMigrate(%q): keys [%d, %d)", s, o.first, o.first+o.n)
				}
				var keys []int
				for i := o.first; i < o.first+o.n; i++ {
					keys = append(keys, i)
				}
				if !slices.Equal(keys, idx) {
					t.Fatalf("MIGRATE %q: the handler's keys %v, the key finder's %v", s, keys, idx)
				}
			} else if strings.ContainsAny(msg, "\r\n") {
				t.Fatalf("parseMigrate(%q): %q", s, msg)
			}
		}
		if len(args) >= 4 {
			slot, action, msg := parseSetslot(args)
			switch {
			case msg != "":
			case int(slot) >= 16384, action == "stable" && len(args) != 4, action != "stable" && len(args) != 5:
				t.Fatalf("parseSetslot(%q) = %d %q", s, slot, action)
			}
		}
	})
}
