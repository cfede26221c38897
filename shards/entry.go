package shards

import "strconv"

// Kind is the type of a stored value, as TYPE reports it.
type Kind uint8

// The kinds of value a key can hold. KindNone is the zero value of a fresh
// Entry before its creator fills it in.
const (
	KindNone Kind = iota
	KindString
	KindZSet
	KindSlidingLog
	KindSlidingWindow
)

// String returns the name TYPE replies with.
func (k Kind) String() string {
	switch k {
	case KindString:
		return "string"
	case KindZSet:
		return "zset"
	case KindSlidingLog:
		return "sllog"
	case KindSlidingWindow:
		return "swcounter"
	}
	return "none"
}

// Entry is one key's value and deadline. Strings that hold a canonical
// decimal integer are kept as an int64 (no byte slice), which is what INCR
// counters and CL.THROTTLE TATs are; everything else keeps its bytes.
// Objects of other kinds (sorted sets, sliding logs) live in obj.
//
// An Entry belongs to its shard: read or change it only while holding the
// shard's lock, and do not keep it after unlocking.
type Entry struct {
	key        string // the key, shared with the shard map's key
	prev, next *Entry // the entry's slot list (see Shard)
	obj        any
	str        []byte
	num        int64
	expireAt   int64  // Unix ms; 0 means no deadline
	slot       uint16 // index of the slot list within the shard
	kind       Kind
	isNum      bool
}

// Kind returns the type of the value.
func (e *Entry) Kind() Kind { return e.kind }

// ExpireAt returns the absolute deadline in Unix milliseconds, or 0 when the
// key is persistent.
func (e *Entry) ExpireAt() int64 { return e.expireAt }

// SetInt makes the entry a string holding the decimal integer n.
func (e *Entry) SetInt(n int64) {
	e.kind, e.isNum, e.num, e.str, e.obj = KindString, true, n, nil, nil
}

// SetBytes makes the entry a string holding a copy of b. A canonical decimal
// integer (as INCR would print it) is stored compactly as an int64.
func (e *Entry) SetBytes(b []byte) {
	if n, ok := canonicalInt(b); ok {
		e.SetInt(n)
		return
	}
	e.kind, e.isNum, e.num, e.obj = KindString, false, 0, nil
	e.str = append(e.str[:0], b...) // the entry owns str: reuse its capacity
}

// SetObject makes the entry hold obj, of kind k (a sorted set, a sliding
// log, …).
func (e *Entry) SetObject(k Kind, obj any) {
	e.kind, e.isNum, e.num, e.str, e.obj = k, false, 0, nil, obj
}

// Object returns the object of a non-string entry.
func (e *Entry) Object() any { return e.obj }

// Int returns the integer a string entry holds, and whether it holds one.
func (e *Entry) Int() (int64, bool) {
	if e.isNum {
		return e.num, true
	}
	if e.kind != KindString {
		return 0, false
	}
	return canonicalInt(e.str)
}

// AppendBytes appends the string value to dst (an integer in decimal).
func (e *Entry) AppendBytes(dst []byte) []byte {
	if e.isNum {
		return strconv.AppendInt(dst, e.num, 10)
	}
	return append(dst, e.str...)
}

// Len returns the length in bytes of a string value.
func (e *Entry) Len() int {
	if e.isNum {
		var buf [20]byte
		return len(strconv.AppendInt(buf[:0], e.num, 10))
	}
	return len(e.str)
}

// canonicalInt reports whether b is exactly how strconv.FormatInt would print
// some int64, so that storing the number instead of the bytes loses nothing.
func canonicalInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	neg := b[0] == '-'
	digits := b
	if neg {
		digits = b[1:]
	}
	if len(digits) == 0 || (digits[0] == '0' && (len(digits) > 1 || neg)) {
		return 0, false
	}
	var n uint64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (1<<64-1-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	if neg {
		if n > 1<<63 {
			return 0, false
		}
		return -int64(n), true
	}
	if n > 1<<63-1 {
		return 0, false
	}
	return int64(n), true
}
