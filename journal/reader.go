package journal

// Reading log records. A log file is a sequence of RESP arrays of bulk
// strings, exactly what a client sends; ParseRecord decodes one from a
// byte slice and Reader streams them from a file, telling a clean
// end, a torn tail and corruption apart:
//
//   - the input ends at a record boundary: io.EOF;
//   - the input ends inside a record, or everything from the first bad byte
//     to the end is zero (blocks a crash allocated but never wrote): a
//     *TornError, the offset of the incomplete record;
//   - anything else that is not a well-formed record: a *CorruptError.
//
// Lengths are never trusted: a record is only materialised from bytes that
// are really there, so a claimed length costs nothing until the data
// behind it has been read, and the reader never holds more than the input.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// TornError reports a log file that ends inside a record (after a crash
// during a write). Offset is where the incomplete record starts.
type TornError struct {
	File   string
	Offset int64
	Size   int64
}

func (e *TornError) Error() string {
	return fmt.Sprintf("%s: incomplete record at offset %d of %d (torn tail)", e.File, e.Offset, e.Size)
}

// CorruptError reports bytes that are not a well-formed record (or, in a
// snapshot, a block whose checksum does not match). Offset is where the
// damaged record or block starts.
type CorruptError struct {
	File   string
	Offset int64
	Size   int64
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("%s: corrupt data at offset %d of %d: %s", e.File, e.Offset, e.Size, e.Reason)
}

// formatError is a parse error at byte pos of the parsed slice.
type formatError struct {
	pos    int
	reason string
}

func (e *formatError) Error() string { return e.reason }

// maxIntLen bounds the digits of a RESP length; 18 cannot overflow int64.
const maxIntLen = 18

// ParseRecord parses one RESP array of bulk strings at the start of b.
// It returns the arguments (aliasing b, appended to args[:0]) and the
// record's length; n == 0 with a nil error means b holds only part of a
// record.
func ParseRecord(b []byte, args [][]byte) (_ [][]byte, n int, err error) {
	args = args[:0]
	if len(b) == 0 {
		return args, 0, nil
	}
	if b[0] != '*' {
		return args, 0, &formatError{0, fmt.Sprintf("expected '*', got %q", b[0])}
	}
	argc, k := shortLen(b[1:])
	pos := 1 + k
	if k == 0 {
		if argc, pos, err = parseLen(b, 1); err != nil || pos == 0 {
			return args, 0, err
		}
	}
	if argc < 1 {
		return args, 0, &formatError{1, "array of no arguments"}
	}
	for i := 0; i < argc; i++ {
		if pos >= len(b) {
			return args, 0, nil
		}
		if b[pos] != '$' {
			return args, 0, &formatError{pos, fmt.Sprintf("expected '$', got %q", b[pos])}
		}
		l, k := shortLen(b[pos+1:])
		next := pos + 1 + k
		if k == 0 {
			if l, next, err = parseLen(b, pos+1); err != nil || next == 0 {
				return args, 0, err
			}
		}
		if l > len(b)-next-2 { // also avoids overflow: l is at most 18 digits
			return args, 0, nil
		}
		end := next + l
		if b[end] != '\r' {
			return args, 0, &formatError{end, "bulk string not terminated by CRLF"}
		}
		if b[end+1] != '\n' {
			return args, 0, &formatError{end + 1, "bulk string not terminated by CRLF"}
		}
		args = append(args, b[next:end:end])
		pos = end + 2
	}
	return args, pos, nil
}

// shortLen parses a length of one or two digits and its CRLF at the
// start of b, as the lengths of names, keys and small values are, without
// a call (it is inlined); it returns the length and the bytes it took, 0
// when the length is not such a one.
func shortLen(b []byte) (n, used int) {
	if len(b) > 3 {
		w := binary.LittleEndian.Uint32(b)
		d0, d1 := byte(w)-'0', byte(w>>8)-'0'
		switch {
		case w>>8&0xffff == 0x0a0d && d0 <= 9: // "d\r\n"
			return int(d0), 3
		case w>>16 == 0x0a0d && d0-1 <= 8 && d1 <= 9: // "dd\r\n", no leading zero
			return int(d0)*10 + int(d1), 4
		}
	}
	return 0, 0
}

// parseLen parses a non-negative decimal number ending in CRLF at b[pos:],
// written canonically (no sign, no leading zero), and returns it with the
// position after the CRLF (0 when b ends first).
func parseLen(b []byte, pos int) (int, int, error) {
	n := 0
	start := pos
	for ; pos < len(b); pos++ {
		c := b[pos]
		switch {
		case c >= '0' && c <= '9':
			if pos-start >= maxIntLen {
				return 0, 0, &formatError{start, "length too long"}
			}
			if n == 0 && pos > start { // "0" is fine, "07" is not canonical
				return 0, 0, &formatError{pos, "length with a leading zero"}
			}
			n = n*10 + int(c-'0')
			continue
		case c == '\r' && pos > start:
			if pos+1 >= len(b) {
				return 0, 0, nil
			}
			if b[pos+1] != '\n' {
				return 0, 0, &formatError{pos + 1, "length not terminated by CRLF"}
			}
			return n, pos + 2, nil
		}
		return 0, 0, &formatError{pos, fmt.Sprintf("bad length byte %q", c)}
	}
	return 0, 0, nil
}

// Reader streams the records of one log file.
type Reader struct {
	r          io.Reader
	name       string // for errors
	size       int64  // bytes in the input
	buf        []byte // unparsed input is buf[start:end]
	base       int64  // input offset of buf[0]
	start, end int
	eof        bool
	args       [][]byte
}

// minRead is the reader's first buffer size and smallest read.
const minRead = 256 << 10

// NewReader returns a Reader of the records in r, named name in errors,
// whose size is size bytes.
func NewReader(r io.Reader, name string, size int64) *Reader {
	return &Reader{r: r, name: name, size: size}
}

// Offset returns the input offset of the next record.
func (rr *Reader) Offset() int64 { return rr.base + int64(rr.start) }

// Next returns the next record's arguments, valid until the next call;
// io.EOF after the last record, or a *TornError or *CorruptError.
func (rr *Reader) Next() ([][]byte, error) {
	for {
		args, n, err := ParseRecord(rr.buf[rr.start:rr.end], rr.args)
		rr.args = args
		if err != nil {
			var fe *formatError
			errors.As(err, &fe)
			return nil, rr.damaged(rr.start+fe.pos, fe.reason)
		}
		if n > 0 {
			rr.start += n
			return args, nil
		}
		if rr.eof {
			if rr.start == rr.end {
				return nil, io.EOF
			}
			return nil, &TornError{File: rr.name, Offset: rr.Offset(), Size: rr.base + int64(rr.end)}
		}
		if err := rr.fill(); err != nil {
			return nil, err
		}
	}
}

// fill reads more input, keeping the unparsed part.
func (rr *Reader) fill() error {
	if rr.start > 0 {
		copy(rr.buf, rr.buf[rr.start:rr.end])
		rr.base += int64(rr.start)
		rr.end -= rr.start
		rr.start = 0
	}
	if len(rr.buf)-rr.end < minRead/2 {
		want := max(2*len(rr.buf), minRead)
		nb := make([]byte, want)
		copy(nb, rr.buf[:rr.end])
		rr.buf = nb
	}
	n, err := io.ReadAtLeast(rr.r, rr.buf[rr.end:], 1)
	rr.end += n
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		rr.eof = true
	case err != nil:
		return fmt.Errorf("reading %s: %w", rr.name, err)
	}
	return nil
}

// damaged classifies a format error at buf[pos]: zeros from there to the
// end of the input are a torn tail (a crash left allocated, unwritten
// blocks), anything else is corruption of the record at rr.start.
func (rr *Reader) damaged(pos int, reason string) error {
	at := rr.Offset()
	size := rr.base + int64(rr.end)
	zeros := allZero(rr.buf[pos:rr.end])
	for zeros && !rr.eof {
		rr.start = pos // keep only what is still to be checked
		if err := rr.fill(); err != nil {
			return err
		}
		pos = rr.start
		zeros = allZero(rr.buf[pos:rr.end])
		size = rr.base + int64(rr.end)
	}
	if zeros {
		return &TornError{File: rr.name, Offset: at, Size: size}
	}
	if rr.size > size {
		size = rr.size
	}
	return &CorruptError{File: rr.name, Offset: at, Size: size, Reason: reason}
}

func allZero(b []byte) bool {
	for len(b) >= 8 {
		if !bytes.Equal(b[:8], zero8[:]) {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

var zero8 [8]byte

// TxReader yields a log file's records for replay, holding back those of
// a transaction (between a MULTI record and an EXEC record, as the command
// layer's EXEC writes them) until its EXEC is read, and leaving the two
// markers out. A file that ends inside a transaction ends as a torn tail at its
// MULTI, so the whole transaction is dropped (Redis's "Revert incomplete
// MULTI/EXEC transaction"), never a part of it.
type TxReader struct {
	rr      *Reader
	at      int64      // offset of the record last returned (of its MULTI, in a transaction)
	pending [][][]byte // a read transaction's records still to return (copies)
	next    int
}

// NewTxReader returns a TxReader of the records rr reads.
func NewTxReader(rr *Reader) *TxReader { return &TxReader{rr: rr} }

// At returns the offset of the record Read returned last (of its MULTI,
// in a transaction).
func (t *TxReader) At() int64 { return t.at }

// Read returns the next record to replay, valid until the next call;
// io.EOF after the last, or a *TornError or *CorruptError.
func (t *TxReader) Read() ([][]byte, error) {
	// A loop, not a call per transaction read, so that a file of many
	// empty transactions (MULTI right before EXEC) cannot overflow the
	// stack.
txs:
	for {
		if t.next < len(t.pending) {
			t.next++
			return t.pending[t.next-1], nil
		}
		t.pending, t.next = t.pending[:0], 0
		t.at = t.rr.Offset()
		args, err := t.rr.Next()
		if err == nil && IsMarker(args, "EXEC") {
			return nil, &CorruptError{File: t.rr.name, Offset: t.at, Size: t.rr.size, Reason: "EXEC outside a transaction"}
		}
		if err != nil || !IsMarker(args, "MULTI") {
			return args, err
		}
		for {
			args, err := t.rr.Next()
			var torn *TornError
			var corrupt *CorruptError
			switch {
			case errors.Is(err, io.EOF):
				return nil, &TornError{File: t.rr.name, Offset: t.at, Size: t.rr.Offset()}
			case errors.As(err, &torn):
				torn.Offset = t.at
				return nil, torn
			case errors.As(err, &corrupt):
				// Reported, and cut by aof-load-corrupt truncate, at the
				// MULTI: cut at the damage, the file would keep a MULTI
				// without its EXEC, and the writes appended after it would
				// be that transaction's torn tail at the next start.
				corrupt.Offset = t.at
				return nil, corrupt
			case err != nil:
				return nil, err
			case IsMarker(args, "EXEC"):
				continue txs
			case IsMarker(args, "MULTI"):
				return nil, &CorruptError{File: t.rr.name, Offset: t.at, Size: t.rr.size, Reason: "a transaction inside a transaction"}
			}
			cp := make([][]byte, len(args))
			for i, a := range args {
				cp[i] = bytes.Clone(a)
			}
			t.pending = append(t.pending, cp)
		}
	}
}

// IsMarker reports whether args is the one-word record name.
func IsMarker(args [][]byte, name string) bool {
	return len(args) == 1 && string(args[0]) == name
}
