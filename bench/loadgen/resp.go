package main

// The reply parser is deliberately minimal: the load generator never needs a
// reply's value, only where it ends and whether it is an error. parseReply
// therefore walks the bytes without building anything and without
// allocating. It works on whatever is already buffered and reports
// "incomplete" (n == 0, err == nil) so the caller can read more and call it
// again from the same start; replies are small, so re-scanning a partial one
// costs less than keeping resumable state.
//
// Nested aggregates are handled iteratively (a count of values still owed),
// so deep nesting cannot blow the stack.

import (
	"bytes"
	"errors"
)

// errProtocol reports bytes that are not a valid RESP2/RESP3 reply.
var errProtocol = errors.New("resp: protocol error")

const (
	maxBulkLen      = 512 << 20 // Redis' proto-max-bulk-len default
	maxAggregateLen = 1 << 24   // more elements than any sane reply
	maxLineLen      = 64 << 10  // a simple line longer than this is garbage
)

// parseReply parses one complete reply at the start of b.
//
// It returns the number of bytes the reply occupies and its type byte ('+',
// '-', ':', '$', '*', '_', ',', '#', '%', '~', '>', '(', '=', '!'); RESP3
// attributes ('|') before a reply are skipped and count as part of it. If b
// holds only the beginning of a reply, n is 0 and err is nil. A malformed
// reply yields errProtocol.
func parseReply(b []byte) (n int, kind byte, err error) {
	pos := 0
	for {
		if pos >= len(b) {
			return 0, 0, nil
		}
		if b[pos] != '|' {
			m, err := skipValue(b[pos:])
			if m == 0 || err != nil {
				return 0, 0, err
			}
			return pos + m, b[pos], nil
		}
		// A top-level attribute map: skip its header and 2*count values,
		// then parse the reply it decorates.
		count, next, err := header(b, pos)
		if next == 0 || err != nil {
			return 0, 0, err
		}
		if count < 0 || count > maxAggregateLen {
			return 0, 0, errProtocol
		}
		pos = next
		for i := int64(0); i < 2*count; i++ {
			m, err := skipValue(b[pos:])
			if m == 0 || err != nil {
				return 0, 0, err
			}
			pos += m
		}
	}
}

// isErrorKind reports whether a reply of this type is an error reply.
func isErrorKind(kind byte) bool { return kind == '-' || kind == '!' }

// errorText returns the message of an error reply (as returned by
// parseReply), or nil if reply is not an error. The result aliases reply.
func errorText(reply []byte) []byte {
	if len(reply) < 3 {
		return nil
	}
	switch reply[0] {
	case '-':
		return reply[1 : len(reply)-2]
	case '!':
		i := bytes.IndexByte(reply, '\n')
		if i < 0 || i+1 > len(reply)-2 {
			return nil
		}
		return reply[i+1 : len(reply)-2]
	}
	return nil
}

// skipValue returns the length of the complete value at the start of b
// (attributes nested inside it included), 0 if incomplete.
func skipValue(b []byte) (int, error) {
	pos := 0
	owed := int64(1) // values still to skip
	for owed > 0 {
		if pos >= len(b) {
			return 0, nil
		}
		t := b[pos]
		owed--
		switch t {
		case '+', '-', ':', '_', ',', '#', '(':
			end := bytes.IndexByte(b[pos:], '\n')
			if end < 0 {
				if len(b)-pos > maxLineLen {
					return 0, errProtocol
				}
				return 0, nil
			}
			end += pos // b[pos] is the type byte, so end-1 >= pos
			if b[end-1] != '\r' {
				return 0, errProtocol
			}
			if !validLine(t, b[pos+1:end-1]) {
				return 0, errProtocol
			}
			pos = end + 1
		case '$', '=', '!':
			l, next, err := header(b, pos)
			if next == 0 || err != nil {
				return 0, err
			}
			if l < 0 {
				if l == -1 && t == '$' { // RESP2 null bulk string
					pos = next
					continue
				}
				return 0, errProtocol
			}
			if l > maxBulkLen {
				return 0, errProtocol
			}
			end := next + int(l)
			if end+2 > len(b) {
				return 0, nil
			}
			if b[end] != '\r' || b[end+1] != '\n' {
				return 0, errProtocol
			}
			pos = end + 2
		case '*', '~', '>', '%', '|':
			l, next, err := header(b, pos)
			if next == 0 || err != nil {
				return 0, err
			}
			if l < 0 {
				if l == -1 && t == '*' { // RESP2 null array
					pos = next
					continue
				}
				return 0, errProtocol
			}
			if l > maxAggregateLen {
				return 0, errProtocol
			}
			if t == '%' || t == '|' {
				l *= 2
			}
			if t == '|' {
				l++ // an attribute decorates the value that follows it
			}
			owed += l
			pos = next
		default:
			return 0, errProtocol
		}
	}
	return pos, nil
}

// header parses the decimal length after the type byte at b[pos]. next is
// the index after its CRLF, 0 if the line is incomplete.
func header(b []byte, pos int) (v int64, next int, err error) {
	end := bytes.IndexByte(b[pos:], '\n')
	if end < 0 {
		if len(b)-pos > 32 {
			return 0, 0, errProtocol
		}
		return 0, 0, nil
	}
	end += pos
	if end < pos+2 || b[end-1] != '\r' {
		return 0, 0, errProtocol
	}
	v, ok := parseInt(b[pos+1 : end-1])
	if !ok {
		return 0, 0, errProtocol
	}
	return v, end + 1, nil
}

// parseInt parses an optional '-' and 1..18 decimal digits (ample for
// lengths; larger values are rejected rather than overflowed).
func parseInt(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && b[0] == '-' {
		neg = true
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

// validLine checks the payload of a simple (line) type. It is lenient where
// servers differ (doubles, big numbers) and strict where the type is fixed.
func validLine(t byte, line []byte) bool {
	if bytes.IndexByte(line, '\r') >= 0 {
		return false
	}
	switch t {
	case '_':
		return len(line) == 0
	case '#':
		return len(line) == 1 && (line[0] == 't' || line[0] == 'f')
	case ':':
		if len(line) > 0 && (line[0] == '-' || line[0] == '+') {
			line = line[1:]
		}
		if len(line) == 0 || len(line) > 19 {
			return false
		}
		for _, c := range line {
			if c < '0' || c > '9' {
				return false
			}
		}
	case ',', '(':
		return len(line) > 0
	}
	return true
}
