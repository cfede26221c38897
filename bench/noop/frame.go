package main

// The floor frames requests itself: it only finds where each command ends,
// without slicing out arguments as resp.ParseRequest does, and
// redcon.ReadNextCommand (v1.6.2), the stateless one, panics on a negative
// bulk length: "*1\r\n$-2\r\nab" slices out of range.

import (
	"bytes"
	"errors"
	"strconv"
)

// Limits of the floor's framing: far above what the benchmarks send, low
// enough that a stray client cannot make it buffer without bound.
const (
	maxArgs    = 1 << 10
	maxBulk    = 1 << 20
	maxPending = 4 << 20 // unparsed bytes a connection may hold
)

var (
	errProtocol = errors.New("Protocol error: expected '$', got something else")
	errTooBig   = errors.New("Protocol error: command too large for bench/noop")
)

// nextCommand finds the end of the first command in b: a RESP array of bulk
// strings, or an inline command (a line of words). It returns the command's
// length in bytes (0: b holds only part of it) and whether its first
// argument is PING (any case). An empty inline line is a command with no
// arguments, as in Redis, and gets no reply.
func nextCommand(b []byte) (n int, ping bool, empty bool, err error) {
	if len(b) == 0 {
		return 0, false, false, nil
	}
	if b[0] != '*' {
		eol := bytes.IndexByte(b, '\n')
		if eol < 0 {
			if len(b) > maxBulk {
				return 0, false, false, errTooBig
			}
			return 0, false, false, nil
		}
		fields := bytes.Fields(b[:eol])
		if len(fields) == 0 {
			return eol + 1, false, true, nil
		}
		return eol + 1, isPing(fields[0]), false, nil
	}
	argc, pos, err := readCount(b, 1, '*', maxArgs)
	if err != nil || pos == 0 {
		return 0, false, false, err
	}
	if argc <= 0 {
		return pos, false, true, nil
	}
	for i := 0; i < argc; i++ {
		if pos >= len(b) {
			return 0, false, false, nil
		}
		if b[pos] != '$' {
			return 0, false, false, errProtocol
		}
		size, next, err := readCount(b, pos+1, '$', maxBulk)
		if err != nil || next == 0 {
			return 0, false, false, err
		}
		if size < 0 {
			return 0, false, false, errProtocol
		}
		end := next + size + 2
		if end > len(b) {
			return 0, false, false, nil
		}
		if b[end-2] != '\r' || b[end-1] != '\n' {
			return 0, false, false, errProtocol
		}
		if i == 0 {
			ping = isPing(b[next : next+size])
		}
		pos = end
	}
	return pos, ping, false, nil
}

// appendReplies appends PONG or OK for each complete command in data and
// returns the bytes of an incomplete last command, or the framing error.
func appendReplies(out, data []byte) (_ []byte, rest []byte, err error) {
	for len(data) > 0 {
		n, ping, empty, err := nextCommand(data)
		if err != nil {
			return out, nil, err
		}
		if n == 0 {
			break
		}
		switch {
		case empty:
		case ping:
			out = append(out, "+PONG\r\n"...)
		default:
			out = append(out, "+OK\r\n"...)
		}
		data = data[n:]
	}
	return out, data, nil
}

// readCount parses the decimal after a '*' or '$' at b[start:] up to its
// CRLF. It returns the number and the position after the CRLF, or next = 0
// when the line is not complete yet.
func readCount(b []byte, start int, kind byte, limit int) (v, next int, err error) {
	eol := bytes.IndexByte(b[start:], '\n')
	if eol < 0 {
		if len(b)-start > 20 {
			return 0, 0, badCount(kind)
		}
		return 0, 0, nil
	}
	line := b[start : start+eol]
	if len(line) == 0 || line[len(line)-1] != '\r' {
		return 0, 0, badCount(kind)
	}
	v, perr := strconv.Atoi(string(line[:len(line)-1]))
	if perr != nil || v > limit || v < -1 {
		return 0, 0, badCount(kind)
	}
	return v, start + eol + 1, nil
}

func badCount(kind byte) error {
	if kind == '*' {
		return errors.New("Protocol error: invalid multibulk length")
	}
	return errors.New("Protocol error: invalid bulk length")
}

func isPing(arg []byte) bool { return len(arg) == 4 && bytes.EqualFold(arg, []byte("ping")) }
