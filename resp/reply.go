package resp

import (
	"bytes"
	"errors"
	"strconv"
)

// ReplyReader reads replies a server wrote (RESP2 or RESP3) one item at a
// time, for code that turns a command's reply back into values (a script's
// redis.call). An aggregate is read as its header (Next returns its kind and
// element count) followed by its elements; attributes (|) are returned too,
// and the caller skips them with Skip. It does not allocate: Str aliases the
// buffer. The zero value reads nothing; use NewReplyReader.
type ReplyReader struct {
	b   []byte
	pos int
}

// NewReplyReader returns a reader of the replies in b.
func NewReplyReader(b []byte) *ReplyReader { return &ReplyReader{b: b} }

// Reset makes r read b from its start.
func (r *ReplyReader) Reset(b []byte) { r.b, r.pos = b, 0 }

// Reply kinds: the RESP type bytes.
const (
	KindSimple   = '+'
	KindError    = '-'
	KindInt      = ':'
	KindBulk     = '$'
	KindArray    = '*'
	KindNull     = '_' // RESP3 null, and the RESP2 nulls $-1 and *-1 (see Item.Len)
	KindBool     = '#'
	KindDouble   = ','
	KindBigNum   = '('
	KindVerbatim = '='
	KindMap      = '%'
	KindSet      = '~'
	KindAttr     = '|'
	KindPush     = '>'
	KindBlobErr  = '!'
)

// Item is one reply item. For aggregates N is the element count (for a map
// or an attribute, the number of pairs); for integers and booleans it is
// the value (booleans 0 or 1); for a RESP2 null it is -1 and Kind is the
// type byte it was sent with ($ or *). Str is the text of strings, errors,
// doubles and big numbers (a verbatim string's without its format, which
// is in Format).
type Item struct {
	Kind   byte
	N      int64
	Str    []byte
	Format []byte
}

// ErrReply is returned for bytes that are not a complete, valid reply.
var ErrReply = errors.New("resp: malformed reply")

// Done reports whether every reply has been read.
func (r *ReplyReader) Done() bool { return r.pos >= len(r.b) }

// Next reads the next item.
func (r *ReplyReader) Next() (Item, error) {
	if r.pos >= len(r.b) {
		return Item{}, ErrReply
	}
	kind := r.b[r.pos]
	end := bytes.Index(r.b[r.pos:], crlf)
	if end < 1 {
		return Item{}, ErrReply
	}
	line := r.b[r.pos+1 : r.pos+end]
	r.pos += end + 2
	it := Item{Kind: kind}
	switch kind {
	case KindSimple, KindError, KindDouble, KindBigNum:
		it.Str = line
	case KindInt:
		n, err := strconv.ParseInt(string(line), 10, 64)
		if err != nil {
			return Item{}, ErrReply
		}
		it.N = n
	case KindNull:
		if len(line) != 0 {
			return Item{}, ErrReply
		}
	case KindBool:
		switch string(line) {
		case "t":
			it.N = 1
		case "f":
		default:
			return Item{}, ErrReply
		}
	case KindBulk, KindVerbatim, KindBlobErr:
		n, err := strconv.ParseInt(string(line), 10, 64)
		if err != nil || n < -1 {
			return Item{}, ErrReply
		}
		if n == -1 {
			if kind != KindBulk {
				return Item{}, ErrReply
			}
			it.N = -1
			return it, nil
		}
		if int64(len(r.b)-r.pos) < n+2 || r.b[r.pos+int(n)] != '\r' || r.b[r.pos+int(n)+1] != '\n' {
			return Item{}, ErrReply
		}
		it.Str = r.b[r.pos : r.pos+int(n)]
		r.pos += int(n) + 2
		it.N = n
		if kind == KindVerbatim {
			if len(it.Str) < 4 || it.Str[3] != ':' {
				return Item{}, ErrReply
			}
			it.Format, it.Str = it.Str[:3], it.Str[4:]
		}
	case KindArray, KindMap, KindSet, KindAttr, KindPush:
		n, err := strconv.ParseInt(string(line), 10, 64)
		if err != nil || n < -1 || (n == -1 && kind != KindArray) || n > int64(len(r.b)) {
			return Item{}, ErrReply
		}
		it.N = n
	default:
		return Item{}, ErrReply
	}
	return it, nil
}

// Skip reads past the rest of the aggregate it (its elements, recursively);
// for any other item it does nothing.
func (r *ReplyReader) Skip(it Item) error {
	n := it.N
	switch it.Kind {
	case KindMap, KindAttr:
		n *= 2
	case KindArray, KindSet, KindPush:
	default:
		return nil
	}
	for ; n > 0; n-- {
		e, err := r.Next()
		if err != nil {
			return err
		}
		if err := r.Skip(e); err != nil {
			return err
		}
	}
	return nil
}

var crlf = []byte("\r\n")
