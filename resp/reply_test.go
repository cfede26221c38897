package resp

import (
	"fmt"
	"strings"
	"testing"
)

// dump reads every reply in b as "kind:value" words, aggregates as their
// element counts followed by their elements.
func dump(b string) (string, error) {
	r := NewReplyReader([]byte(b))
	var out []string
	for !r.Done() {
		it, err := r.Next()
		if err != nil {
			return strings.Join(out, " "), err
		}
		w := string(it.Kind) + ":"
		switch it.Kind {
		case KindInt, KindBool, KindArray, KindMap, KindSet, KindAttr, KindPush:
			w += fmt.Sprint(it.N)
		case KindVerbatim:
			w += string(it.Format) + "/" + string(it.Str)
		case KindBulk:
			if it.N < 0 {
				w += "nil"
			} else {
				w += string(it.Str)
			}
		default:
			w += string(it.Str)
		}
		out = append(out, w)
	}
	return strings.Join(out, " "), nil
}

func TestReplyReader(t *testing.T) {
	tests := []struct {
		in, want string
		bad      bool
	}{
		{"+OK\r\n", "+:OK", false},
		{"-ERR x y\r\n", "-:ERR x y", false},
		{":-12\r\n", "::-12", false},
		{"$3\r\na\r\n\r\n", "$:a\r\n", false},
		{"$0\r\n\r\n", "$:", false},
		{"$-1\r\n", "$:nil", false},
		{"*-1\r\n", "*:-1", false},
		{"*2\r\n:1\r\n$1\r\nx\r\n", "*:2 ::1 $:x", false},
		{"%1\r\n+a\r\n,1.5\r\n", "%:1 +:a ,:1.5", false},
		{"~1\r\n#t\r\n", "~:1 #:1", false},
		{"#f\r\n_\r\n", "#:0 _:", false},
		{"(12345678901234567890\r\n", "(:12345678901234567890", false},
		{"=7\r\ntxt:abc\r\n", "=:txt/abc", false},
		{"|1\r\n+k\r\n+v\r\n:1\r\n", "|:1 +:k +:v ::1", false},
		{"!3\r\nERR\r\n", "!:ERR", false},
		{"$3\r\nab\r\n", "", true},
		{"$3\r\nabcd\r\n", "", true},
		{":x\r\n", "", true},
		{"#x\r\n", "", true},
		{"=2\r\nab\r\n", "", true},
		{"%-1\r\n", "", true},
		{"?\r\n", "", true},
		{"+OK", "", true},
		{"_x\r\n", "", true},
	}
	for i, tt := range tests {
		have, err := dump(tt.in)
		if tt.bad {
			if err == nil {
				t.Errorf("step %d: %q: have %q, want an error", i, tt.in, have)
			}
			continue
		}
		if err != nil || have != tt.want {
			t.Errorf("step %d: %q: have %q (%v), want %q", i, tt.in, have, err, tt.want)
		}
	}
}

func TestReplyReaderSkip(t *testing.T) {
	r := NewReplyReader([]byte("*2\r\n%1\r\n+a\r\n*1\r\n:1\r\n$1\r\nz\r\n:7\r\n"))
	it, err := r.Next()
	if err != nil || r.Skip(it) != nil {
		t.Fatalf("skip: %v", err)
	}
	it, err = r.Next()
	if err != nil || it.Kind != KindInt || it.N != 7 || !r.Done() {
		t.Fatalf("after skip: %+v %v", it, err)
	}
}

// FuzzReplyReader: any input is read without panicking, and reading
// never goes backwards or past the end.
func FuzzReplyReader(f *testing.F) {
	for _, s := range []string{"*2\r\n:1\r\n$1\r\nx\r\n", "%1\r\n+a\r\n,1.5\r\n", "=7\r\ntxt:abc\r\n", "$-1\r\n", "*99999999999\r\n", "$5\r\nab"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r := NewReplyReader([]byte(s))
		for i := 0; i < 1000 && !r.Done(); i++ {
			before := r.pos
			it, err := r.Next()
			if err != nil {
				return
			}
			if r.pos <= before || r.pos > len(s) {
				t.Fatalf("%q: position %d after %d", s, r.pos, before)
			}
			if err := r.Skip(it); err != nil {
				return
			}
		}
	})
}
