package main

import (
	"bytes"
	"testing"
)

func TestNextCommand(t *testing.T) {
	set := "*3\r\n$3\r\nSET\r\n$5\r\nkey:1\r\n$3\r\nxxx\r\n"
	tests := []struct {
		name  string
		in    string
		n     int
		ping  bool
		empty bool
		err   bool
	}{
		{"empty input", "", 0, false, false, false},
		{"set", set, len(set), false, false, false},
		{"set then more", set + "*1\r\n", len(set), false, false, false},
		{"ping", "*1\r\n$4\r\nPING\r\n", 14, true, false, false},
		{"ping lower case", "*1\r\n$4\r\nping\r\n", 14, true, false, false},
		{"pingx is not ping", "*1\r\n$5\r\npingx\r\n", 15, false, false, false},
		{"inline ping", "PING\r\n", 6, true, false, false},
		{"inline set", "set a b\n", 8, false, false, false},
		{"inline empty line", "\r\n", 2, false, true, false},
		{"zero args", "*0\r\n", 4, false, true, false},
		{"null array", "*-1\r\n", 5, false, true, false},
		{"partial header", "*3", 0, false, false, false},
		{"partial header CR", "*3\r", 0, false, false, false},
		{"partial bulk header", "*1\r\n$4", 0, false, false, false},
		{"partial bulk", "*1\r\n$4\r\nPI", 0, false, false, false},
		{"partial bulk CRLF", "*1\r\n$4\r\nPING\r", 0, false, false, false},
		{"partial inline", "PIN", 0, false, false, false},
		{"missing dollar", "*1\r\n+PING\r\n", 0, false, false, true},
		{"bad count", "*x\r\n", 0, false, false, true},
		{"count without CR", "*1\n", 0, false, false, true},
		{"too many args", "*2000\r\n", 0, false, false, true},
		{"negative bulk", "*1\r\n$-1\r\n", 0, false, false, true},
		{"negative bulk with data (redcon's parser panics)", "*1\r\n$-2\r\nab", 0, false, false, true},
		{"huge bulk", "*1\r\n$99999999\r\n", 0, false, false, true},
		{"bulk without CRLF", "*1\r\n$4\r\nPINGxx", 0, false, false, true},
		{"endless count line", "*111111111111111111111111", 0, false, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, ping, empty, err := nextCommand([]byte(tt.in))
			if (err != nil) != tt.err {
				t.Fatalf("err = %v, want error %v", err, tt.err)
			}
			if n != tt.n || ping != tt.ping || empty != tt.empty {
				t.Fatalf("got n=%d ping=%v empty=%v, want n=%d ping=%v empty=%v", n, ping, empty, tt.n, tt.ping, tt.empty)
			}
		})
	}
}

func TestAppendReplies(t *testing.T) {
	in := []byte("*1\r\n$4\r\nPING\r\n*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\nb\r\n*0\r\nPING\r\n*2\r\n$3\r\nGET")
	out, rest, ferr := appendReplies(nil, in)
	if ferr != nil {
		t.Fatal(ferr)
	}
	if got, want := string(out), "+PONG\r\n+OK\r\n+PONG\r\n"; got != want {
		t.Fatalf("replies %q, want %q", got, want)
	}
	if string(rest) != "*2\r\n$3\r\nGET" {
		t.Fatalf("rest %q", rest)
	}
	out, rest, ferr = appendReplies(out[:0], []byte("*1\r\n?"))
	if ferr == nil || len(out) != 0 || rest != nil {
		t.Fatalf("bad frame: out %q rest %q err %v", out, rest, ferr)
	}
}

// FuzzNextCommand: any input frames without a panic, and a complete
// command never claims more bytes than it was given; feeding the input in
// two pieces frames the same first command.
func FuzzNextCommand(f *testing.F) {
	for _, s := range []string{"*1\r\n$4\r\nPING\r\n", "PING\r\n", "*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\nb\r\n", "*-1\r\n", "*1\r\n$-1\r\n", "\n"} {
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, b []byte, cut uint8) {
		n, _, _, err := nextCommand(b)
		if n < 0 || n > len(b) {
			t.Fatalf("n = %d for %d bytes", n, len(b))
		}
		if err != nil || n == 0 {
			return
		}
		// The command's own bytes frame alike.
		n2, _, _, err2 := nextCommand(bytes.Clone(b[:n]))
		if err2 != nil || n2 != n {
			t.Fatalf("prefix: n %d err %v, whole: n %d", n2, err2, n)
		}
		// A strict prefix is incomplete, never an error or a command.
		k := int(cut) % n
		if k == 0 {
			return
		}
		if b[0] != '*' && bytes.IndexByte(b[:k], '\n') >= 0 {
			return // inline: a shorter line is a command of its own
		}
		if m, _, _, err := nextCommand(b[:k]); m != 0 || err != nil {
			t.Fatalf("prefix of %d bytes: n %d err %v", k, m, err)
		}
	})
}
