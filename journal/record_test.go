package journal

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func setIntPayload(n, atMs int64) []byte {
	p := binary.BigEndian.AppendUint64(nil, uint64(n))
	return binary.BigEndian.AppendUint64(p, uint64(atMs))
}

// Decoding SETINT's payload never panics, accepts exactly what
// AppendSetInt writes, and rejects everything else.
func FuzzSetIntPayload(f *testing.F) {
	f.Add(setIntPayload(1795307408539667000, 1795307408539), int64(0), int64(0))
	f.Add([]byte("short"), int64(-1), int64(1))
	f.Fuzz(func(t *testing.T, p []byte, n, at int64) {
		gotN, gotAt, ok := DecodeSetInt(p)
		switch {
		case len(p) != SetIntLen:
			require.False(t, ok)
		case int64(binary.BigEndian.Uint64(p[8:])) < 0:
			require.False(t, ok)
		default:
			require.True(t, ok)
			require.Equal(t, p, setIntPayload(gotN, gotAt))
		}
		if at < 0 {
			at = -(at + 1)
		}
		rec := AppendSetInt(nil, []byte("key"), n, at)
		args, used, err := ParseRecord(rec, nil)
		require.NoError(t, err)
		require.Equal(t, len(rec), used)
		require.Len(t, args, 3)
		require.Equal(t, "SETINT", string(args[0]))
		gotN, gotAt, ok = DecodeSetInt(args[2])
		require.True(t, ok)
		require.Equal(t, [2]int64{n, at}, [2]int64{gotN, gotAt})
	})
}

func TestAppendSet(t *testing.T) {
	for i, tt := range []struct {
		key, value string
		atMs       int64
		want       string
	}{
		{"k", "v", 0, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"},
		{"k", "", 1795307408539, "*5\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n$4\r\nPXAT\r\n$13\r\n1795307408539\r\n"},
	} {
		if got := string(AppendSet(nil, []byte(tt.key), []byte(tt.value), tt.atMs)); got != tt.want {
			t.Errorf("%d: have %q, want %q", i, got, tt.want)
		}
	}
}

func TestAppendReplState(t *testing.T) {
	id := "0123456789abcdef0123456789abcdef01234567"
	got := AppendReplState(nil, id, 1234)
	require.Equal(t, "*3\r\n$9\r\nREPLSTATE\r\n$40\r\n"+id+"\r\n$4\r\n1234\r\n", string(got))
	args, n, err := ParseRecord(got, nil)
	require.NoError(t, err)
	require.Equal(t, len(got), n)
	require.Equal(t, []string{"REPLSTATE", id, "1234"}, []string{string(args[0]), string(args[1]), string(args[2])})
}

func TestCanonical(t *testing.T) {
	args := func(b []byte, offs ...[2]int) [][]byte {
		var out [][]byte
		for _, o := range offs {
			out = append(out, b[o[0]:o[1]])
		}
		return out
	}
	canon := []byte("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n")
	padded := []byte("*2\r\n$03\r\nGET\r\n$1\r\nk\r\n")
	for i, tt := range []struct {
		raw  []byte
		args [][]byte
		want bool
	}{
		{canon, args(canon, [2]int{8, 11}, [2]int{17, 18}), true},
		{canon, [][]byte{[]byte("GET"), []byte("k")}, false}, // copies, not the request's own bytes
		{padded, args(padded, [2]int{9, 12}, [2]int{18, 19}), false},
		{nil, [][]byte{[]byte("GET")}, false},
		{canon, nil, false},
	} {
		if got := Canonical(tt.raw, tt.args); got != tt.want {
			t.Errorf("%d: have %v, want %v", i, got, tt.want)
		}
	}
	for _, n := range []int{0, 1, 9, 10, 99, 100, 999, 1000, 9999, 10000, 99999, 100000, 1 << 20, 512 << 20, 1<<62 + 12345} {
		if got, want := decimalLen(n), len(fmt.Sprint(n)); got != want {
			t.Errorf("decimalLen(%d) = %d, want %d", n, got, want)
		}
	}
}
