package journal

import (
	"encoding/binary"
	"strconv"

	"github.com/ratekv/ratekv/resp"
)

// The records that enclose a transaction's records in the log, as in
// Redis's AOF: the loader runs the records between them only once it has
// read EXEC, so a tail torn inside a transaction (a power loss in the
// middle of its write) loses the whole of it, never a part.
const (
	Multi = "*1\r\n$5\r\nMULTI\r\n"
	Exec  = "*1\r\n$4\r\nEXEC\r\n"
)

// AppendCommand appends the record of a command given as its words.
func AppendCommand(dst []byte, args ...[]byte) []byte {
	dst = resp.AppendArrayHeader(dst, len(args))
	for _, a := range args {
		dst = resp.AppendBulk(dst, a)
	}
	return dst
}

// AppendSet appends SET key value, with PXAT atMs when atMs is not 0: the
// image of a string key that does not hold an integer.
func AppendSet(dst, key, value []byte, atMs int64) []byte {
	if atMs != 0 {
		dst = append(dst, "*5\r\n$3\r\nSET\r\n"...)
	} else {
		dst = append(dst, "*3\r\n$3\r\nSET\r\n"...)
	}
	dst = resp.AppendBulk(dst, key)
	dst = resp.AppendBulk(dst, value)
	if atMs != 0 {
		dst = append(dst, "$4\r\nPXAT\r\n"...)
		dst = resp.AppendBulkInt(dst, atMs)
	}
	return dst
}

// REPLSTATE replid offset is a log-only record a replica appends to its
// log after the stream's records it applied: its data up to there is the
// primary's stream up to offset under replication id replid. A restart
// that finds it last in the log (no record after it) continues
// replication from there with a partial resynchronization.

// AppendReplState appends the REPLSTATE record of id and off.
func AppendReplState(dst []byte, id string, off int64) []byte {
	dst = append(dst, "*3\r\n$9\r\nREPLSTATE\r\n$"...)
	dst = strconv.AppendInt(dst, int64(len(id)), 10)
	dst = append(dst, "\r\n"...)
	dst = append(dst, id...)
	dst = append(dst, "\r\n"...)
	return resp.AppendBulkInt(dst, off)
}

// SETINT key <16 bytes> is a log-only record, the image of a string key
// holding an integer (a counter, a CL.THROTTLE TAT): the value and the
// absolute deadline in milliseconds (0: none), each as 8 big-endian bytes.
// It is what SET key value PXAT ms does, without formatting two 13- to
// 19-digit numbers in decimal on the write path, and shorter. Clients
// cannot send it: only the replay knows the command.

// SetIntLen is the size of SETINT's payload: value and deadline.
const SetIntLen = 16

// AppendSetInt appends the SETINT record of key holding n with deadline
// atMs (0: none).
func AppendSetInt(dst, key []byte, n, atMs int64) []byte {
	dst = append(dst, "*3\r\n$6\r\nSETINT\r\n"...)
	dst = resp.AppendBulk(dst, key)
	dst = append(dst, "$16\r\n"...)
	dst = binary.BigEndian.AppendUint64(dst, uint64(n))
	dst = binary.BigEndian.AppendUint64(dst, uint64(atMs))
	return append(dst, "\r\n"...)
}

// DecodeSetInt splits SETINT's payload into value and deadline; ok is false
// when the payload is not SetIntLen bytes or the deadline is negative.
func DecodeSetInt(p []byte) (n, atMs int64, ok bool) {
	if len(p) != SetIntLen {
		return 0, 0, false
	}
	n = int64(binary.BigEndian.Uint64(p))
	atMs = int64(binary.BigEndian.Uint64(p[8:]))
	return n, atMs, atMs >= 0
}

// Canonical reports whether raw, a request as it arrived, is byte for byte
// the record AppendCommand would build from args, its arguments: a RESP
// array whose lengths are written without leading zeros or signs, and
// whose arguments are args themselves (each starts where the encoding
// puts it). Such a request is logged as it is, copied once.
//
// Every field of an accepted request is at least as long as its canonical
// form, so equal total length means canonical.
func Canonical(raw []byte, args [][]byte) bool {
	if len(raw) == 0 || len(args) == 0 {
		return false
	}
	pos := 1 + decimalLen(len(args)) + 2
	for _, a := range args {
		pos += 1 + decimalLen(len(a)) + 2
		if pos+len(a)+2 > len(raw) || (len(a) > 0 && &raw[pos] != &a[0]) {
			return false
		}
		pos += len(a) + 2
	}
	return pos == len(raw)
}

// decimalLen is the number of digits of n >= 0 (without a division for
// the short lengths of names, keys and values).
func decimalLen(n int) int {
	switch {
	case n < 10:
		return 1
	case n < 100:
		return 2
	case n < 1000:
		return 3
	}
	d := 4
	for n >= 10000 {
		n /= 10
		d++
	}
	return d
}
