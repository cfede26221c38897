package shards

import (
	"encoding/binary"
	"strconv"
)

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
	KindHash
	KindList
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
	case KindHash:
		return "hash"
	case KindList:
		return "list"
	}
	return "none"
}

// keyInline is the longest key an Entry holds in place; longer keys live in
// the shard's key arena.
const keyInline = 12

// Entry is one key's value and deadline, in 32 bytes and without a Go
// pointer, so that the garbage collector never scans the keyspace (a
// shard's entries sit in pointer-free chunks, see table.go). Short keys
// (up to 12 bytes, e.g. "rl:123456") and strings of up to 8 bytes are kept
// in the entry itself; a CL.THROTTLE or INCR key is one entry and nothing
// else. Longer keys sit in the shard's key arena; longer strings and objects
// (sorted sets, sliding logs) in the shard's reference table, named by num.
//
// An Entry belongs to its shard: read or change it only while holding the
// shard's lock, through the Store's methods for anything that may hold a
// reference (SetBytes, SetObject, Object, AppendBytes, StrLen), and do not
// keep it after unlocking. Its address is stable while the key exists.
type Entry struct {
	key      [keyInline]byte // inline key; or arena offset [0:4] and length [4:8]
	access   uint16          // the LRU clock or LFU counter of the last access (access.go)
	klen     uint8           // low nibble: inline key length, or keyInArena; high nibble: inline string length
	meta     uint8           // kind (bits 0-2), form (bits 3-4), metaUsed
	num      int64           // the integer, the inline string bytes, or the reference
	expireAt int64           // Unix ms; 0 means no deadline
}

const (
	keyInArena = 15

	metaKind = 0x07
	metaForm = 0x18
	metaUsed = 0x80

	formInt    = 0 << 3 // num is the value (a decimal-integer string)
	formInline = 1 << 3 // num holds the string's bytes, length in klen's high nibble
	formRef    = 2 << 3 // num names the shard's reference (shard index << 32 | slot)

	strInline = 8 // the longest string kept inside the entry
)

// Kind returns the type of the value.
func (e *Entry) Kind() Kind { return Kind(e.meta & metaKind) }

// ExpireAt returns the absolute deadline in Unix milliseconds, or 0 when the
// key is persistent.
func (e *Entry) ExpireAt() int64 { return e.expireAt }

// Int returns the integer a string entry holds, and whether it holds one.
// Strings that are canonical decimal integers are always stored as numbers
// (see Store.SetBytes), so any other form holds no integer.
func (e *Entry) Int() (int64, bool) {
	if e.Kind() == KindString && e.form() == formInt {
		return e.num, true
	}
	return 0, false
}

func (e *Entry) form() uint8 { return e.meta & metaForm }

func (e *Entry) used() bool { return e.meta&metaUsed != 0 }

// setMeta sets kind and form, keeping the used bit.
func (e *Entry) setMeta(k Kind, form uint8) {
	e.meta = metaUsed | uint8(k) | form
}

// inlineKey returns the key when it is stored in the entry.
func (e *Entry) inlineKey() ([]byte, bool) {
	n := e.klen & 0x0f
	if n == keyInArena {
		return nil, false
	}
	return e.key[:n], true
}

// arenaKey returns the offset and length of a key kept in the arena.
func (e *Entry) arenaKey() (off, n uint32) {
	return binary.LittleEndian.Uint32(e.key[0:4]), binary.LittleEndian.Uint32(e.key[4:8])
}

// inlineString returns the bytes of a formInline string, copied into buf.
func (e *Entry) inlineString(buf *[strInline]byte) []byte {
	binary.LittleEndian.PutUint64(buf[:], uint64(e.num))
	return buf[:e.klen>>4]
}

// setInline stores b (at most strInline bytes) in the entry.
func (e *Entry) setInline(b []byte) {
	var buf [strInline]byte
	copy(buf[:], b)
	e.num = int64(binary.LittleEndian.Uint64(buf[:]))
	e.klen = e.klen&0x0f | uint8(len(b))<<4
	e.setMeta(KindString, formInline)
}

// intLen returns how many bytes strconv.AppendInt writes for n.
func intLen(n int64) int {
	var buf [20]byte
	return len(strconv.AppendInt(buf[:0], n, 10))
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
