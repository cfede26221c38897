package resp

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseRequest(t *testing.T) {
	lim := Limits{MaxBulk: 512 << 20, Authed: true}
	tests := []struct {
		in       string
		wantArgs []string
		wantN    int // bytes consumed; 0 = incomplete
		wantErr  string
	}{
		{in: "*1\r\n$4\r\nPING\r\n", wantArgs: []string{"PING"}, wantN: 14},
		{in: "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1", wantArgs: []string{"GET", "k"}, wantN: 20},
		{in: "*2\r\n$3\r\nGET\r\n$1\r\n", wantN: 0},
		{in: "*2\r\n$3\r\nGET\r\n$1\r\nk", wantN: 0},
		{in: "*2\r\n$3\r\nGET\r", wantN: 0},
		{in: "*", wantN: 0},
		{in: "*1\r\n$0\r\n\r\n", wantArgs: []string{""}, wantN: 10},
		{in: "*0\r\n", wantArgs: nil, wantN: 4},
		{in: "*-1\r\n", wantArgs: nil, wantN: 5},
		{in: "PING\r\n", wantArgs: []string{"PING"}, wantN: 6},
		{in: "PING\n", wantArgs: []string{"PING"}, wantN: 5},
		{in: "  set  a   b \r\n", wantArgs: []string{"set", "a", "b"}, wantN: 15},
		{in: "\r\n", wantArgs: nil, wantN: 2},
		{in: "set k \"a b\\x41\\n\"\r\n", wantArgs: []string{"set", "k", "a bA\n"}, wantN: 19},
		{in: "set k 'it''s'\r\n", wantErr: errProtoQuotes},
		{in: "set k \"abc\r\n", wantErr: errProtoQuotes},
		{in: "PING", wantN: 0},
		{in: "*x\r\n", wantErr: errProtoMultibulkLen},
		{in: "*1\n", wantErr: errProtoMultibulkLen},
		{in: "*2000000\r\n", wantErr: errProtoMultibulkLen},
		{in: "*1\r\n+PING\r\n", wantErr: "ERR Protocol error: expected '$', got '+'"},
		{in: "*1\r\n$-1\r\n", wantErr: errProtoBulkLen},
		{in: "*1\r\n$x\r\n", wantErr: errProtoBulkLen},
		{in: "*1\r\n$4\r\nPINGxx", wantErr: errProtoBulkLen},
		{in: "*1\r\n$99999999999999999999999\r\n", wantErr: errProtoBulkLen},
		{in: "*1\r\n$600000000\r\n", wantErr: errProtoBulkLen}, // over proto-max-bulk-len
		{in: "*" + strings.Repeat("1", 70000), wantErr: errProtoMbulkTooBig},
		{in: strings.Repeat("a", 70000), wantErr: errProtoInlineTooBig},
	}
	for i, tt := range tests {
		args, n, perr, _ := ParseRequest([]byte(tt.in), nil, lim)
		if perr != tt.wantErr {
			t.Errorf("step %d (%q): error have %q, want %q", i, trunc(tt.in), perr, tt.wantErr)
			continue
		}
		if n != tt.wantN {
			t.Errorf("step %d (%q): consumed have %d, want %d", i, trunc(tt.in), n, tt.wantN)
		}
		if n == 0 {
			continue
		}
		if len(args) != len(tt.wantArgs) {
			t.Errorf("step %d (%q): args have %q, want %q", i, trunc(tt.in), args, tt.wantArgs)
			continue
		}
		for j := range args {
			if string(args[j]) != tt.wantArgs[j] {
				t.Errorf("step %d: arg %d have %q, want %q", i, j, args[j], tt.wantArgs[j])
			}
		}
	}
}

func trunc(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

func TestParseRequestUnauthenticatedLimits(t *testing.T) {
	lim := Limits{MaxBulk: 512 << 20}
	_, _, perr, _ := ParseRequest([]byte("*11\r\n"), nil, lim)
	if perr != errProtoUnauthMbulk {
		t.Errorf("multibulk: have %q, want %q", perr, errProtoUnauthMbulk)
	}
	_, _, perr, _ = ParseRequest([]byte("*2\r\n$4\r\nAUTH\r\n$20000\r\n"), nil, lim)
	if perr != errProtoUnauthBulk {
		t.Errorf("bulk: have %q, want %q", perr, errProtoUnauthBulk)
	}
}

func TestParseRequestNeed(t *testing.T) {
	in := "*2\r\n$3\r\nSET\r\n$100\r\nabc"
	_, n, perr, need := ParseRequest([]byte(in), nil, Limits{MaxBulk: 1 << 20, Authed: true})
	if n != 0 || perr != "" || need != len("*2\r\n$3\r\nSET\r\n$100\r\n")+102 {
		t.Errorf("have n=%d err=%q need=%d", n, perr, need)
	}
}

// TestParseRequestSplit feeds a pipeline byte by byte: every prefix must be
// either incomplete or parse to the same commands.
func TestParseRequestSplit(t *testing.T) {
	stream := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$0\r\n\r\n"
	want := [][]string{{"SET", "k", "hello"}, {"PING"}, {"ECHO", ""}}
	for cut := 0; cut <= len(stream); cut++ {
		b := []byte(stream[:cut])
		var got [][]string
		for {
			args, n, perr, _ := ParseRequest(b, nil, Limits{MaxBulk: 1 << 20, Authed: true})
			if perr != "" {
				t.Fatalf("cut %d: unexpected error %q", cut, perr)
			}
			if n == 0 {
				break
			}
			var words []string
			for _, a := range args {
				words = append(words, string(a))
			}
			got = append(got, words)
			b = b[n:]
		}
		for i, g := range got {
			if strings.Join(g, " ") != strings.Join(want[i], " ") {
				t.Fatalf("cut %d: command %d have %q, want %q", cut, i, g, want[i])
			}
		}
	}
}

func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{"*1\r\n$4\r\nPING\r\n", "PING\r\n", "set a \"b\\x00\"\r\n", "*2\r\n$3\r\nGET\r\n$-5\r\n", "*-1\r\n", "'\r\n"} {
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, b []byte, authed bool) {
		lim := Limits{MaxBulk: 1 << 16, Authed: authed}
		for len(b) > 0 {
			args, n, perr, need := ParseRequest(b, nil, lim)
			if perr != "" {
				if n != 0 {
					t.Fatalf("error with bytes consumed: %d", n)
				}
				return
			}
			if n == 0 {
				if need != 0 && need <= len(b) {
					t.Fatalf("incomplete but need %d <= len %d", need, len(b))
				}
				return
			}
			if n > len(b) {
				t.Fatalf("consumed %d of %d", n, len(b))
			}
			for _, a := range args {
				if int64(len(a)) > lim.MaxBulk && b[0] == '*' {
					t.Fatalf("argument over proto-max-bulk-len: %d", len(a))
				}
			}
			b = b[n:]
		}
	})
}

// Partial.Incomplete, resumed after any prefix of the input, agrees with a
// fresh check and with ParseRequest: a multibulk request is incomplete for
// it exactly when ParseRequest finds it incomplete (no bytes, no error).
func FuzzPartial(f *testing.F) {
	for _, s := range []string{"*1\r\n$4\r\nPING\r\n", "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n", "*2\r\n$3\r\nGET\r\n$-5\r\n",
		"*-1\r\n", "*0\r\n", "*2\r\n$1\r\na\r\n$1\r\nbXX", "*12\r\n$1\r\n", "*1\r\n$3\r\nab\r\n\r\n"} {
		f.Add([]byte(s), uint16(len(s)/2), true)
	}
	f.Fuzz(func(t *testing.T, b []byte, split uint16, authed bool) {
		lim := Limits{MaxBulk: 1 << 16, Authed: authed}
		k := int(split) % (len(b) + 1)
		var p, fresh Partial
		p.Incomplete(b[:k], lim)
		got := p.Incomplete(b, lim)
		if want := fresh.Incomplete(b, lim); got != want {
			t.Fatalf("resumed after %d bytes: %v, fresh: %v", k, got, want)
		}
		if len(b) == 0 || b[0] != '*' {
			return
		}
		_, n, perr, _ := ParseRequest(b, nil, lim)
		if want := n == 0 && perr == ""; got != want {
			t.Fatalf("incomplete %v, parseRequest n=%d perr=%q", got, n, perr)
		}
	})
}

// A request of many small arguments trickled in a few bytes at a time is
// checked once in all, not from its start at every read: the bytes Partial
// looks at stay proportional to the request (one IndexByte per argument
// header).
func TestPartialResumes(t *testing.T) {
	var req []byte
	req = append(req, "*1001\r\n$4\r\nMSET\r\n"...)
	for i := 0; i < 500; i++ {
		req = append(req, "$1\r\nk\r\n$1\r\nv\r\n"...)
	}
	lim := Limits{MaxBulk: 1 << 20, Authed: true}
	var p Partial
	for k := 1; k < len(req); k += 3 {
		require.True(t, p.Incomplete(req[:k], lim), "prefix of %d bytes", k)
		require.LessOrEqual(t, p.rel, k)
	}
	require.False(t, p.Incomplete(req, lim))
	require.Equal(t, int64(1001), p.i)
	require.Equal(t, len(req), p.rel)
}

// TestParseRequestLengthsAsRedis: the numbers of "*n" and "$n" headers are
// read as Redis's processMultibulkBuffer reads them, with string2ll, which
// refuses leading zeros and "-0": redis-server 7.0.15 replies a protocol
// error to "*01\r\n$04\r\nPING" and closes the connection.
func TestParseRequestLengthsAsRedis(t *testing.T) {
	lim := Limits{MaxBulk: 512 << 20, Authed: true}
	for i, tt := range []struct {
		in      string
		wantErr string
		wantN   int
	}{
		0:  {in: "*01\r\n$4\r\nPING\r\n", wantErr: errProtoMultibulkLen},
		1:  {in: "*00\r\n", wantErr: errProtoMultibulkLen},
		2:  {in: "*-0\r\n", wantErr: errProtoMultibulkLen},
		3:  {in: "*-01\r\n", wantErr: errProtoMultibulkLen},
		4:  {in: "*1\r\n$04\r\nPING\r\n", wantErr: errProtoBulkLen},
		5:  {in: "*1\r\n$00\r\n\r\n", wantErr: errProtoBulkLen},
		6:  {in: "*1\r\n$-0\r\n", wantErr: errProtoBulkLen},
		7:  {in: "*0\r\n", wantN: 4},
		8:  {in: "*-1\r\n", wantN: 5},
		9:  {in: "*-2\r\n", wantN: 5},
		10: {in: "*1\r\n$0\r\n\r\n", wantN: 10},
		11: {in: "*1\r\n$10\r\n0123456789\r\n", wantN: 21},
	} {
		_, n, perr, _ := ParseRequest([]byte(tt.in), nil, lim)
		require.Equal(t, tt.wantErr, perr, "step %d: %q", i, tt.in)
		require.Equal(t, tt.wantN, n, "step %d: %q", i, tt.in)
	}
}
