package main

import (
	"bytes"
	"errors"
	"testing"
)

// A complete reply, followed by trailing bytes that must not be consumed.
var parseCases = []struct {
	name string
	in   string
	kind byte // type byte of the reply if in is one complete reply; 0: incomplete
	err  bool // errProtocol
}{
	{name: "simple string", in: "+OK\r\n", kind: '+'},
	{name: "empty simple string", in: "+\r\n", kind: '+'},
	{name: "error", in: "-ERR unknown command 'FOO'\r\n", kind: '-'},
	{name: "integer", in: ":1000\r\n", kind: ':'},
	{name: "negative integer", in: ":-1\r\n", kind: ':'},
	{name: "bulk", in: "$3\r\nfoo\r\n", kind: '$'},
	{name: "bulk with CRLF inside", in: "$4\r\na\r\nb\r\n", kind: '$'},
	{name: "empty bulk", in: "$0\r\n\r\n", kind: '$'},
	{name: "null bulk", in: "$-1\r\n", kind: '$'},
	{name: "null array", in: "*-1\r\n", kind: '*'},
	{name: "empty array", in: "*0\r\n", kind: '*'},
	{name: "throttle reply", in: "*5\r\n:0\r\n:101\r\n:100\r\n:-1\r\n:0\r\n", kind: '*'},
	{name: "nested arrays", in: "*2\r\n*2\r\n:1\r\n:2\r\n*1\r\n$1\r\nx\r\n", kind: '*'},
	{name: "array holding an error", in: "*2\r\n-ERR x\r\n:1\r\n", kind: '*'},
	{name: "resp3 null", in: "_\r\n", kind: '_'},
	{name: "resp3 double", in: ",3.14\r\n", kind: ','},
	{name: "resp3 inf", in: ",-inf\r\n", kind: ','},
	{name: "resp3 true", in: "#t\r\n", kind: '#'},
	{name: "resp3 big number", in: "(3492890328409238509324850943850943825024385\r\n", kind: '('},
	{name: "resp3 map", in: "%2\r\n+a\r\n:1\r\n+b\r\n:2\r\n", kind: '%'},
	{name: "resp3 set", in: "~2\r\n+a\r\n+b\r\n", kind: '~'},
	{name: "resp3 push", in: ">2\r\n+message\r\n+hi\r\n", kind: '>'},
	{name: "resp3 verbatim", in: "=9\r\ntxt:hello\r\n", kind: '='},
	{name: "resp3 blob error", in: "!5\r\nERR x\r\n", kind: '!'},
	{name: "resp3 attribute skipped", in: "|1\r\n+ttl\r\n:3\r\n:7\r\n", kind: ':'},
	{name: "attribute inside array", in: "*2\r\n|1\r\n+a\r\n+b\r\n:1\r\n:2\r\n", kind: '*'},
	{name: "map of arrays", in: "%1\r\n*1\r\n_\r\n~1\r\n#f\r\n", kind: '%'},

	{name: "empty input", in: ""},
	{name: "type byte only", in: "+"},
	{name: "no LF", in: "+OK\r"},
	{name: "partial bulk header", in: "$1"},
	{name: "partial bulk body", in: "$3\r\nfo"},
	{name: "bulk body without CRLF yet", in: "$3\r\nfoo"},
	{name: "array missing elements", in: "*3\r\n:1\r\n:2\r\n"},
	{name: "map missing value", in: "%1\r\n+a\r\n"},
	{name: "attribute without its value", in: "|1\r\n+a\r\n+b\r\n"},

	{name: "unknown type", in: "?\r\n", err: true},
	{name: "LF without CR", in: "+OK\n", err: true},
	{name: "bad integer", in: ":12a\r\n", err: true},
	{name: "empty integer", in: ":\r\n", err: true},
	{name: "bad bulk length", in: "$x\r\n", err: true},
	{name: "negative bulk length", in: "$-2\r\n", err: true},
	{name: "null verbatim", in: "=-1\r\n", err: true},
	{name: "bulk too long", in: "$99999999999\r\n", err: true},
	{name: "bulk not followed by CRLF", in: "$1\r\nab\r\n", err: true},
	{name: "non-empty null", in: "_x\r\n", err: true},
	{name: "bad boolean", in: "#x\r\n", err: true},
	{name: "negative map", in: "%-1\r\n", err: true},
	{name: "streamed bulk unsupported", in: "$?\r\n", err: true},
	{name: "header line far too long", in: "*" + string(bytes.Repeat([]byte("1"), 40)), err: true},
	{name: "bad element", in: "*1\r\nx\r\n", err: true},
}

func TestParseReply(t *testing.T) {
	for i, tc := range parseCases {
		for _, trailer := range []string{"", "+NEXT\r\n"} {
			if tc.kind == 0 && !tc.err && trailer != "" {
				continue // the trailer would complete or corrupt an incomplete reply
			}
			in := []byte(tc.in + trailer)
			n, kind, err := parseReply(in)
			switch {
			case tc.err:
				if !errors.Is(err, errProtocol) {
					t.Errorf("%d %s: have n=%d err=%v, want errProtocol", i, tc.name, n, err)
				}
				continue
			case err != nil:
				t.Errorf("%d %s: have err %v, want none", i, tc.name, err)
				continue
			}
			wantN, wantKind := len(tc.in), tc.kind
			if tc.kind == 0 {
				wantN = 0
			}
			if n != wantN || (n > 0 && kind != wantKind) {
				t.Errorf("%d %s (+%q): have n=%d kind=%q, want n=%d kind=%q", i, tc.name, trailer, n, kind, wantN, wantKind)
			}
		}
	}
}

func TestParseReplyEveryPrefixIsIncomplete(t *testing.T) {
	for i, tc := range parseCases {
		if tc.kind == 0 {
			continue
		}
		for l := 0; l < len(tc.in); l++ {
			n, _, err := parseReply([]byte(tc.in[:l]))
			if n != 0 || err != nil {
				t.Errorf("%d %s: prefix %q: have n=%d err=%v, want incomplete", i, tc.name, tc.in[:l], n, err)
			}
		}
	}
}

func TestErrorText(t *testing.T) {
	cases := []struct{ in, want string }{
		{"-ERR boom\r\n", "ERR boom"},
		{"-Cell error: Store error: Zero rates are not supported\r\n", "Cell error: Store error: Zero rates are not supported"},
		{"!5\r\nERR x\r\n", "ERR x"},
		{"+OK\r\n", ""},
		{":1\r\n", ""},
	}
	for i, tc := range cases {
		if have := string(errorText([]byte(tc.in))); have != tc.want {
			t.Errorf("%d: errorText(%q) = %q, want %q", i, tc.in, have, tc.want)
		}
	}
}

func TestClientReadReplySplitReads(t *testing.T) {
	// Replies arriving one byte at a time, and a buffer that must grow.
	big := "$40000\r\n" + string(bytes.Repeat([]byte("y"), 40000)) + "\r\n"
	stream := "+OK\r\n*5\r\n:1\r\n:101\r\n:0\r\n:36\r\n:60\r\n" + big + "-ERR no\r\n"
	c := &client{conn: &trickleConn{data: []byte(stream)}, buf: make([]byte, 8)}
	want := []byte{'+', '*', '$', '-'}
	for i, k := range want {
		reply, kind, err := c.readReply()
		if err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
		if kind != k {
			t.Fatalf("reply %d: have kind %q, want %q", i, kind, k)
		}
		if i == 1 && !throttleLimited(reply) {
			t.Errorf("reply %d: %q should read as limited", i, reply)
		}
		if i == 2 && len(reply) != len(big) {
			t.Errorf("reply %d: have %d bytes, want %d", i, len(reply), len(big))
		}
	}
}

func FuzzParseReply(f *testing.F) {
	for _, tc := range parseCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<12 {
			return
		}
		n, kind, err := parseReply(b)
		if err != nil {
			if n != 0 {
				t.Fatalf("error with n=%d", n)
			}
			return
		}
		if n == 0 {
			return
		}
		if n > len(b) {
			t.Fatalf("n=%d > len=%d", n, len(b))
		}
		// A reply is self-delimiting: trailing bytes change nothing...
		n2, kind2, err := parseReply(append(b[:n:n], "garbage"...))
		if n2 != n || kind2 != kind || err != nil {
			t.Fatalf("with trailer: have (%d,%q,%v), want (%d,%q)", n2, kind2, err, n, kind)
		}
		// ...and every strict prefix is merely incomplete.
		for l := 0; l < n; l++ {
			if m, _, err := parseReply(b[:l]); m != 0 || err != nil {
				t.Fatalf("prefix %d of %d: have (%d,%v), want incomplete", l, n, m, err)
			}
		}
	})
}

func BenchmarkParseReply(b *testing.B) {
	reply := []byte("*5\r\n:0\r\n:101\r\n:100\r\n:-1\r\n:0\r\n")
	b.ReportAllocs()
	b.SetBytes(int64(len(reply)))
	for b.Loop() {
		if n, _, err := parseReply(reply); n != len(reply) || err != nil {
			b.Fatal(n, err)
		}
	}
}
