package journal

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/redcon"
)

// rec encodes one record as the journal does.
func rec(args ...string) []byte {
	b := redcon.AppendArray(nil, len(args))
	for _, a := range args {
		b = redcon.AppendBulkString(b, a)
	}
	return b
}

func strs(args [][]byte) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = string(a)
	}
	return out
}

func TestParseRecord(t *testing.T) {
	for i, tt := range []struct {
		in      string
		want    []string
		n       int    // bytes used; 0: incomplete
		errPos  int    // -1: no error
		errText string // substring
	}{
		{in: "*1\r\n$4\r\nPING\r\n", want: []string{"PING"}, n: 14, errPos: -1},
		{in: "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n*1", want: []string{"SET", "k", ""}, n: 26, errPos: -1},
		{in: "*2\r\n$3\r\nDEL\r\n$4\r\na\r\nb\r\n", want: []string{"DEL", "a\r\nb"}, n: 23, errPos: -1},
		{in: "", errPos: -1},
		{in: "*", errPos: -1},
		{in: "*2", errPos: -1},
		{in: "*2\r", errPos: -1},
		{in: "*2\r\n$3\r\nSE", errPos: -1},
		{in: "*2\r\n$3\r\nSET\r", errPos: -1},
		{in: "*2\r\n$99999999999\r\n", errPos: -1}, // a long bulk: incomplete, not allocated
		{in: "+OK\r\n", errPos: 0, errText: "expected '*'"},
		{in: "\x00\x00", errPos: 0, errText: "expected '*'"},
		{in: "*0\r\n", errPos: 1, errText: "no arguments"},
		{in: "*-1\r\n", errPos: 1, errText: "bad length byte"},
		{in: "*\r\n", errPos: 1, errText: "bad length byte"},
		{in: "*1x\r\n", errPos: 2, errText: "bad length byte"},
		{in: "*1\rx", errPos: 3, errText: "not terminated"},
		{in: "*1\r\n:1\r\n", errPos: 4, errText: "expected '$'"},
		{in: "*1\r\n$1\r\nab\r\n", errPos: 9, errText: "not terminated by CRLF"},
		{in: "*1\r\n$1234567890123456789\r\n", errPos: 5, errText: "too long"},
		{in: "*1\r\n$07\r\n0000000\r\n", errPos: 6, errText: "leading zero"},
		{in: "*01\r\n", errPos: 2, errText: "leading zero"},
		{in: "*1\r\n$0\r\n\r\n", want: []string{""}, n: 10, errPos: -1},
	} {
		args, n, err := ParseRecord([]byte(tt.in), nil)
		if tt.errPos >= 0 {
			var fe *formatError
			require.True(t, errors.As(err, &fe), "step %d: have err %v, want a format error", i, err)
			require.Equal(t, tt.errPos, fe.pos, "step %d: error position", i)
			require.Contains(t, fe.reason, tt.errText, "step %d", i)
			continue
		}
		require.NoError(t, err, "step %d", i)
		require.Equal(t, tt.n, n, "step %d: bytes used", i)
		if n > 0 {
			require.Equal(t, tt.want, strs(args), "step %d", i)
		}
	}
}

// readAll reads every record of data with a Reader fed small reads,
// so records straddle reads.
func readAll(data []byte) (recs [][]string, err error) {
	rr := NewReader(iotest.HalfReader(bytes.NewReader(data)), "f", int64(len(data)))
	for {
		args, err := rr.Next()
		if err != nil {
			return recs, err
		}
		recs = append(recs, strs(args))
	}
}

func TestRecordReaderTornAtEveryByte(t *testing.T) {
	var log []byte
	var ends []int
	var want [][]string
	for i := 0; i < 8; i++ {
		args := []string{"SET", fmt.Sprintf("key:%d", i), string(bytes.Repeat([]byte{'v'}, i*37))}
		log = append(log, rec(args...)...)
		ends = append(ends, len(log))
		want = append(want, args)
	}
	for cut := 0; cut <= len(log); cut++ {
		recs, err := readAll(log[:cut])
		whole := 0
		for whole < len(ends) && ends[whole] <= cut {
			whole++
		}
		require.Equal(t, want[:whole], append([][]string{}, recs...), "cut %d", cut)
		start := 0
		if whole > 0 {
			start = ends[whole-1]
		}
		if start == cut {
			require.ErrorIs(t, err, io.EOF, "cut %d", cut)
			continue
		}
		var torn *TornError
		require.True(t, errors.As(err, &torn), "cut %d: have %v, want a torn tail", cut, err)
		require.Equal(t, int64(start), torn.Offset, "cut %d: offset", cut)
	}
}

func TestRecordReaderDamage(t *testing.T) {
	a, b := rec("SET", "a", "1"), rec("SET", "b", "2")
	ab := append(bytes.Clone(a), b...)
	for i, tt := range []struct {
		name    string
		data    []byte
		records int
		torn    bool  // else corrupt
		offset  int64 // of the damaged record
	}{
		{"zeros after the last record", append(bytes.Clone(ab), make([]byte, 4096)...), 2, true, int64(len(ab))},
		{"zeros inside the last record", append(append(bytes.Clone(a), b[:7]...), make([]byte, 100)...), 1, true, int64(len(a))},
		{"zeros then data", append(append(bytes.Clone(a), make([]byte, 100)...), b...), 1, false, int64(len(a))},
		{"garbage between records", append(append(bytes.Clone(a), "garbage"...), b...), 1, false, int64(len(a))},
		{"bad length in the first record", append([]byte("*2\r\n$x\r\n"), ab...), 0, false, 0},
		{"missing CRLF mid-file", append(append(bytes.Clone(a[:len(a)-2]), "xx"...), b...), 0, false, 0},
	} {
		recs, err := readAll(tt.data)
		require.Len(t, recs, tt.records, "step %d (%s)", i, tt.name)
		var torn *TornError
		var corrupt *CorruptError
		if tt.torn {
			require.True(t, errors.As(err, &torn), "step %d (%s): have %v, want torn", i, tt.name, err)
			require.Equal(t, tt.offset, torn.Offset, "step %d (%s)", i, tt.name)
		} else {
			require.True(t, errors.As(err, &corrupt), "step %d (%s): have %v, want corrupt", i, tt.name, err)
			require.Equal(t, tt.offset, corrupt.Offset, "step %d (%s)", i, tt.name)
			require.Equal(t, int64(len(tt.data)), corrupt.Size, "step %d (%s)", i, tt.name)
			require.Contains(t, corrupt.Error(), fmt.Sprintf("offset %d", tt.offset), "step %d (%s)", i, tt.name)
		}
	}
}

func TestRecordReaderLargeRecord(t *testing.T) {
	big := string(bytes.Repeat([]byte("x"), 3*minRead+17))
	data := append(rec("SET", "big", big), rec("DEL", "big")...)
	recs, err := readAll(data)
	require.ErrorIs(t, err, io.EOF)
	require.Equal(t, [][]string{{"SET", "big", big}, {"DEL", "big"}}, recs)
}

// FuzzRecordReader: arbitrary bytes never panic; the reader ends in EOF,
// a torn tail or corruption, and the records it returned re-encode to
// exactly the prefix it accepted.
func FuzzRecordReader(f *testing.F) {
	f.Add(rec("SET", "k", "v"))
	f.Add(append(rec("SET", "k", "v"), rec("DEL", "k")...))
	f.Add([]byte("*2\r\n$3\r\nSET\r\n$99999999999\r\n"))
	f.Add([]byte("*99999999\r\n$1\r\na\r\n"))
	f.Add(append(rec("PEXPIREAT", "k", "1700000000000"), 0, 0, 0))
	// Lengths of one and two digits (shortLen), and ones it must refuse.
	f.Add([]byte("*1\r\n$0\r\n\r\n*1\r\n$10\r\n0123456789\r\n"))
	f.Add([]byte("*1\r\n$07\r\nabcdefg\r\n"))
	f.Add([]byte("*01\r\n$1\r\na\r\n"))
	f.Add([]byte("*1\r\n$1\r"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rr := NewReader(bytes.NewReader(data), "f", int64(len(data)))
		var again []byte
		var err error
		for {
			var args [][]byte
			args, err = rr.Next()
			if err != nil {
				break
			}
			again = redcon.AppendArray(again, len(args))
			for _, a := range args {
				again = redcon.AppendBulk(again, a)
			}
		}
		var torn *TornError
		var corrupt *CorruptError
		var end int64
		switch {
		case errors.Is(err, io.EOF):
			end = int64(len(data))
		case errors.As(err, &torn):
			end = torn.Offset
		case errors.As(err, &corrupt):
			end = corrupt.Offset
		default:
			t.Fatalf("unexpected error %v", err)
		}
		require.Equal(t, string(data[:end]), string(again))
	})
}

// readTx reads every record TxReader yields from data.
func readTx(data []byte) ([][]string, error) {
	tr := NewTxReader(NewReader(bytes.NewReader(data), "f", int64(len(data))))
	var out [][]string
	for {
		args, err := tr.Read()
		if err != nil {
			return out, err
		}
		out = append(out, strs(args))
	}
}

// TestTxReaderTornAtEveryByte: a log cut anywhere yields the records
// before the cut, except that a transaction (between MULTI and EXEC
// records) comes out whole or not at all; a cut inside one is a torn tail
// at its MULTI, where the loader truncates, so what is appended after a
// restart never lands inside it.
func TestTxReaderTornAtEveryByte(t *testing.T) {
	type part struct {
		recs [][]string // replayed
		tx   bool
	}
	parts := []part{
		{recs: [][]string{{"SET", "a", "1"}}},
		{recs: [][]string{{"SETINT", "b", "x"}, {"DEL", "z"}, {"ZADD", "z", "1", "m"}}, tx: true},
		{recs: [][]string{{"DEL", "a"}}},
		{recs: [][]string{{"PEXPIREAT", "z", "1"}, {"SET", "c", "3"}}, tx: true},
	}
	var log []byte
	var starts, ends []int
	for _, p := range parts {
		starts = append(starts, len(log))
		if p.tx {
			log = append(log, rec("MULTI")...)
		}
		for _, r := range p.recs {
			log = append(log, rec(r...)...)
		}
		if p.tx {
			log = append(log, rec("EXEC")...)
		}
		ends = append(ends, len(log))
	}
	for cut := 0; cut <= len(log); cut++ {
		got, err := readTx(log[:cut])
		var want [][]string
		whole := 0
		for whole < len(parts) && ends[whole] <= cut {
			want = append(want, parts[whole].recs...)
			whole++
		}
		require.Equal(t, want, got, "cut %d", cut)
		if whole < len(parts) && cut > starts[whole] {
			var torn *TornError
			require.True(t, errors.As(err, &torn), "cut %d: have %v, want a torn tail", cut, err)
			require.Equal(t, int64(starts[whole]), torn.Offset, "cut %d: at the part's start", cut)
		} else {
			require.ErrorIs(t, err, io.EOF, "cut %d", cut)
		}
	}
	_, err := readTx(append(rec("MULTI"), rec("MULTI")...))
	var corrupt *CorruptError
	require.True(t, errors.As(err, &corrupt), "nested MULTI: %v", err)
}

// FuzzTxReader: whatever the bytes, TxReader returns records, then io.EOF,
// a torn tail or corruption at an offset within the input, without
// panicking; a MULTI it yields nothing of is never followed by its records.
func FuzzTxReader(f *testing.F) {
	f.Add(append(append(rec("MULTI"), rec("SET", "k", "v")...), rec("EXEC")...))
	f.Add(append(rec("MULTI"), rec("SET", "k", "v")...))
	f.Add(append(append(rec("EXEC"), rec("MULTI")...), rec("MULTI")...))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := readTx(data)
		var torn *TornError
		var corrupt *CorruptError
		switch {
		case errors.Is(err, io.EOF):
		case errors.As(err, &torn):
			require.LessOrEqual(t, torn.Offset, int64(len(data)))
		case errors.As(err, &corrupt):
			require.LessOrEqual(t, corrupt.Offset, int64(len(data)))
		default:
			t.Fatalf("unexpected error %v", err)
		}
		for _, r := range got {
			require.False(t, len(r) == 1 && (r[0] == "MULTI" || r[0] == "EXEC"), "a marker was replayed")
		}
	})
}

// TestTxReaderManyEmptyTransactions: a MULTI right before its EXEC holds
// nothing to replay; the reader goes on to the next record in a loop, so
// a file of many of them (the command layer never writes one, but a
// damaged or hand-made file may hold them) loads without overflowing the
// stack.
func TestTxReaderManyEmptyTransactions(t *testing.T) {
	defer debug.SetMaxStack(debug.SetMaxStack(1 << 20))
	pair := append(rec("MULTI"), rec("EXEC")...)
	data := bytes.Repeat(pair, 100000)
	data = append(data, rec("SET", "k", "v")...)
	got, err := readTx(data)
	require.ErrorIs(t, err, io.EOF)
	require.Equal(t, [][]string{{"SET", "k", "v"}}, got)
}
