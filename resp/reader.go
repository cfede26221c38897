package resp

import (
	"bytes"

	"fmt"

	"github.com/ratekv/ratekv/internal/sdsargs"
)

// Request parsing. ratekv reads requests with its own parser rather than
// redcon's Reader because the server must enforce proto-max-bulk-len and
// client-query-buffer-limit before buffering, and because slicing arguments
// straight out of the connection's buffer costs no allocation per command
// (redcon's Reader copies every command). Replies are still written with
// redcon's Append helpers.
//
// ParseRequest is a pure function of the buffered bytes so that it can be
// fuzzed on its own.

const (
	inlineMax       = 64 * 1024 // PROTO_INLINE_MAX_SIZE
	maxMultibulk    = 1 << 20   // arguments per command
	unauthMultibulk = 10
	unauthBulk      = 16384
	maxHeaderDigits = 32
	protoIncomplete = ""
)

// Limits are the protocol limits a parse applies.
type Limits struct {
	MaxBulk int64 // proto-max-bulk-len
	Authed  bool  // unauthenticated clients get tighter limits, as in Redis
}

// ParseRequest parses one request from b. It returns the arguments (sliced
// from b when possible, appended to args[:0]), the number of bytes consumed
// (0 when the request is incomplete), a protocol error text (the client is
// then disconnected), and need: for an incomplete request, the number of
// bytes the whole request needs when known (so the buffer can be grown
// once), else 0. An empty request (blank inline line, "*0") consumes bytes
// and returns no arguments.
func ParseRequest(b []byte, args [][]byte, lim Limits) (out [][]byte, n int, perr string, need int) {
	args = args[:0]
	if len(b) == 0 {
		return args, 0, "", 0
	}
	if b[0] != '*' {
		return parseInline(b, args)
	}
	// Multibulk header.
	nl := bytes.IndexByte(b, '\n')
	if nl < 0 {
		if len(b) > inlineMax {
			return args, 0, errProtoMbulkTooBig, 0
		}
		return args, 0, "", 0
	}
	if nl < 2 || b[nl-1] != '\r' {
		return args, 0, errProtoMultibulkLen, 0
	}
	count, ok := parseLen(b[1 : nl-1])
	if !ok || count > maxMultibulk {
		return args, 0, errProtoMultibulkLen, 0
	}
	if !lim.Authed && count > unauthMultibulk {
		return args, 0, errProtoUnauthMbulk, 0
	}
	pos := nl + 1
	if count <= 0 {
		return args, pos, "", 0
	}
	for i := int64(0); i < count; i++ {
		if pos >= len(b) {
			return args[:0], 0, "", 0
		}
		if b[pos] != '$' {
			return args[:0], 0, fmt.Sprintf(errProtoExpected, b[pos]), 0
		}
		rest := b[pos:]
		nl := bytes.IndexByte(rest, '\n')
		if nl < 0 {
			if len(rest) > inlineMax {
				return args[:0], 0, errProtoBulkTooBig, 0
			}
			return args[:0], 0, "", 0
		}
		if nl < 2 || rest[nl-1] != '\r' {
			return args[:0], 0, errProtoBulkLen, 0
		}
		size, ok := parseLen(rest[1 : nl-1])
		if !ok || size < 0 || size > lim.MaxBulk {
			return args[:0], 0, errProtoBulkLen, 0
		}
		if !lim.Authed && size > unauthBulk {
			return args[:0], 0, errProtoUnauthBulk, 0
		}
		start := pos + nl + 1
		end := int64(start) + size
		if end+2 > int64(len(b)) {
			// Incomplete: report the size of the request so far plus this
			// argument, so the caller can grow the buffer in one step.
			return args[:0], 0, "", int(end + 2)
		}
		if b[end] != '\r' || b[end+1] != '\n' {
			return args[:0], 0, errProtoBulkLen, 0
		}
		args = append(args, b[start:end:end])
		pos = int(end + 2)
	}
	return args, pos, "", 0
}

// parseLen parses the decimal in a "*n" or "$n" header (optional '-'). As
// Redis's string2ll, it refuses leading zeros and "-0".
func parseLen(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > maxHeaderDigits {
		return 0, false
	}
	neg := false
	if b[0] == '-' {
		neg, b = true, b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	if b[0] == '0' && (len(b) > 1 || neg) {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		if n > (1<<62)/10 {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// parseInline parses a telnet-style request line ("PING\r\n"). Arguments
// without quotes are sliced from b; quoted ones are unescaped as
// redis-cli and Redis do (sdssplitargs).
func parseInline(b []byte, args [][]byte) ([][]byte, int, string, int) {
	nl := bytes.IndexByte(b, '\n')
	if nl < 0 {
		if len(b) > inlineMax {
			return args, 0, errProtoInlineTooBig, 0
		}
		return args, 0, "", 0
	}
	line := b[:nl]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	if bytes.IndexByte(line, '"') < 0 && bytes.IndexByte(line, '\'') < 0 {
		for len(line) > 0 {
			i := 0
			for i < len(line) && isInlineSpace(line[i]) {
				i++
			}
			line = line[i:]
			j := 0
			for j < len(line) && !isInlineSpace(line[j]) {
				j++
			}
			if j > 0 {
				args = append(args, line[:j:j])
			}
			line = line[j:]
		}
		return args, nl + 1, "", 0
	}
	words, ok := sdsargs.Split(string(line))
	if !ok {
		return args[:0], 0, errProtoQuotes, 0
	}
	for _, w := range words {
		args = append(args, []byte(w))
	}
	return args, nl + 1, "", 0
}

func isInlineSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'
}

// Partial remembers how far the request at the head of a connection's
// buffer has been found well formed but incomplete, so that each read
// checks only the bytes that arrived since. Without it every read would
// parse the request from its start: a request of a million small
// arguments trickled in a few kilobytes at a time would cost gigabytes of
// parsing while the event loop's other clients waited. The zero value has
// checked nothing.
type Partial struct {
	rel   int   // bytes checked: the header and i whole arguments
	i     int64 // arguments checked
	count int64 // arguments in the request (0: header not checked yet)
}

// Incomplete reports whether b, which starts with the request, surely
// holds no complete request yet, as ParseRequest would find (n == 0, no
// error); it checks only what it has not checked before (b may have grown
// since, not changed). When it reports false, b holds a complete request
// or something ParseRequest reports as an error.
func (p *Partial) Incomplete(b []byte, lim Limits) bool {
	if len(b) == 0 {
		return true
	}
	if b[0] != '*' {
		return false // inline: at most inlineMax, parsed as it comes
	}
	if p.count == 0 {
		count, next, st := headerLine(b)
		if st != headerOK {
			return st == headerShort
		}
		if count <= 0 || count > maxMultibulk || !lim.Authed && count > unauthMultibulk {
			return false
		}
		p.count, p.rel = count, next
	}
	for p.i < p.count {
		rest := b[p.rel:]
		if len(rest) == 0 {
			return true
		}
		if rest[0] != '$' {
			return false
		}
		size, next, st := headerLine(rest)
		if st != headerOK {
			return st == headerShort
		}
		if size < 0 || size > lim.MaxBulk || !lim.Authed && size > unauthBulk {
			return false
		}
		end := int64(next) + size + 2
		if int64(len(rest)) < end {
			return true
		}
		if rest[end-2] != '\r' || rest[end-1] != '\n' {
			return false
		}
		p.rel += int(end)
		p.i++
	}
	return false
}

// What headerLine found.
const (
	headerOK    = iota
	headerShort // no line end yet, within inlineMax: more may come
	headerBad   // malformed, or too long: ParseRequest reports it
)

// headerLine reads the "*n\r\n" or "$n\r\n" line that b starts with (the
// caller checked the sigil): its number and where the line ends.
func headerLine(b []byte) (n int64, next, st int) {
	nl := bytes.IndexByte(b, '\n')
	switch {
	case nl < 0 && len(b) <= inlineMax:
		return 0, 0, headerShort
	case nl < 2 || b[nl-1] != '\r':
		return 0, 0, headerBad
	}
	n, ok := parseLen(b[1 : nl-1])
	if !ok {
		return 0, 0, headerBad
	}
	return n, nl + 1, headerOK
}
