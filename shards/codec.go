package shards

// The value codec: how a key's value is written in snapshots, in the
// append-only log's RESTORE records and in DUMP payloads.
//
// This is ratekv's own format. It is NOT Redis's RDB serialisation: a DUMP
// payload from Redis is refused by ratekv's RESTORE and vice versa (both
// check a version and a checksum, so the refusal is the clean "DUMP payload
// version or checksum are wrong" error, never a misread value).
//
// A value is one tag byte followed by its body; integers are
// encoding/binary varints (zigzag for signed ones):
//
//	0x01 string   uvarint length, bytes
//	0x02 integer  varint (a string holding a canonical decimal integer:
//	              counters, CL.THROTTLE TATs)
//	0x03 zset     uvarint count (>= 1), then count × (score: float64
//	              bits, 8 bytes little-endian; uvarint length; member)
//	0x04 sllog    uvarint entries, then runs until the entries are counted:
//	              the first run's timestamp as a varint, later ones as a
//	              uvarint delta from the previous run, each followed by a
//	              uvarint count-1
//	0x05 swindow  varint start, varint cur, varint prev
//	0x06 hash     uvarint count (>= 1), then count × (uvarint length,
//	              field, uvarint length, value); a compact hash's fields
//	              in their order, a large one's sorted
//	0x07 list     uvarint count (>= 1), then count × (uvarint length,
//	              element), from the head
//
// Times in values (a sliding log's timestamps in µs, a sliding window's
// start in ms) lie within ±2^61 (maxTime); a sliding window's counts are
// not negative.
//
// A snapshot record is: uvarint key length, key, varint absolute deadline
// in Unix ms (0: none), value. A DUMP payload is a value followed by a
// footer: the magic "RK", a format version byte and the CRC-32C
// (Castagnoli) of everything before the CRC, little-endian.
//
// Decoding never trusts a length: every count and length is checked
// against the bytes that remain before anything is allocated, so garbage
// input costs at most its own size and never panics.

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
)

// Value tags.
const (
	tagString        byte = 0x01
	tagInt           byte = 0x02
	tagZSet          byte = 0x03
	tagSlidingLog    byte = 0x04
	tagSlidingWindow byte = 0x05
	tagHash          byte = 0x06
	tagList          byte = 0x07
)

// maxTime bounds the times a decoded value holds, on either side of the
// epoch. 2^61 µs is some 73,000 years, far beyond any clock reading, yet
// two such times are less than 2^63 apart, and one plus or minus anything
// below 2^62 (a clock reading, a window, a rounding) cannot overflow
// int64. The limiters' arithmetic relies on it: SL.THROTTLE, for one,
// sets the key's deadline to the newest timestamp plus the window.
const maxTime = 1 << 61

// Dump payload footer: magic, version, CRC-32C.
const (
	dumpVersion   = 1
	dumpFooterLen = 2 + 1 + 4
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Errors of the decoders.
var (
	// ErrDumpPayload: the footer of a DUMP payload is missing, of another
	// version or the checksum does not match.
	ErrDumpPayload = errors.New("DUMP payload version or checksum are wrong")
	// ErrBadData: the bytes are not a well-formed value.
	ErrBadData = errors.New("bad data format")
)

// Value is a decoded value that is not stored in a key yet. The zero value
// holds nothing (Kind() == KindNone). DecodeValue copies what it needs, so
// a Value never aliases its input.
type Value struct {
	obj   any
	str   []byte
	num   int64
	kind  Kind
	isNum bool
}

// Kind returns the kind of the value.
func (v *Value) Kind() Kind { return v.kind }

// setValue makes e, the entry of key, hold v. v must not be used
// afterwards (e takes its memory).
func (s *Store) setValue(key []byte, e *Entry, v *Value) {
	switch {
	case v.kind == KindString && v.isNum:
		s.SetInt(e, v.num)
	case v.kind == KindString:
		s.SetBytes(key, e, v.str)
	case v.kind == KindHash, v.kind == KindList:
		s.setRefVal(key, e, v.kind, refVal{obj: v.obj, str: v.str})
	default:
		s.SetObject(key, e, v.kind, v.obj)
	}
}

// Restore stores v under key with the absolute deadline expireAt (Unix ms,
// 0 for none), replacing any previous value. v must not be used afterwards.
// Requires key's shard held.
func (s *Store) Restore(key []byte, v *Value, expireAt, nowMs int64) {
	e, _ := s.Put(key, nowMs)
	s.setValue(key, e, v)
	s.SetExpire(key, e, expireAt)
}

// AppendValue appends the encoding of e's value to dst. Every kind has an
// encoding; a kind added without one panics here (TestCodecCoversEveryKind
// catches that). Requires e's shard held.
func (s *Store) AppendValue(dst []byte, e *Entry) []byte {
	switch e.Kind() {
	case KindString:
		if n, ok := e.Int(); ok {
			dst = append(dst, tagInt)
			return binary.AppendVarint(dst, n)
		}
		dst = append(dst, tagString)
		dst = binary.AppendUvarint(dst, uint64(s.StrLen(e)))
		return s.AppendBytes(dst, e)
	case KindZSet:
		z, _ := s.Object(e).(*ZSet)
		return appendZSet(append(dst, tagZSet), z)
	case KindSlidingLog:
		l, _ := s.Object(e).(*SlidingLog)
		return appendSlidingLog(append(dst, tagSlidingLog), l)
	case KindSlidingWindow:
		w, _ := s.Object(e).(*SlidingWindow)
		if w == nil {
			w = &SlidingWindow{}
		}
		dst = append(dst, tagSlidingWindow)
		dst = binary.AppendVarint(dst, w.Start)
		dst = binary.AppendVarint(dst, w.Cur)
		return binary.AppendVarint(dst, w.Prev)
	case KindHash:
		return appendHash(append(dst, tagHash), s.Hash(e))
	case KindList:
		return appendList(append(dst, tagList), s.List(e))
	}
	panic("shards: no value encoding for kind " + e.Kind().String())
}

// DecodeValue decodes one value from the start of b and returns it with the
// number of bytes it took.
func DecodeValue(b []byte) (Value, int, error) {
	d := decoder{b: b}
	v := d.value()
	if d.err != nil {
		return Value{}, 0, d.err
	}
	return v, d.off, nil
}

// AppendDump appends the DUMP payload of e (its value and the footer).
// Requires e's shard held.
func (s *Store) AppendDump(dst []byte, e *Entry) []byte {
	start := len(dst)
	dst = s.AppendValue(dst, e)
	dst = append(dst, 'R', 'K', dumpVersion)
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], crcTable))
}

// DecodeDump checks the footer of a DUMP payload and decodes its value. It
// returns ErrDumpPayload when the footer or checksum is wrong and
// ErrBadData when they are right but the value is not well formed.
func DecodeDump(payload []byte) (Value, error) {
	n := len(payload) - dumpFooterLen
	if n < 1 {
		return Value{}, ErrDumpPayload
	}
	f := payload[n:]
	if f[0] != 'R' || f[1] != 'K' || f[2] != dumpVersion ||
		binary.LittleEndian.Uint32(f[3:]) != crc32.Checksum(payload[:len(payload)-4], crcTable) {
		return Value{}, ErrDumpPayload
	}
	v, used, err := DecodeValue(payload[:n])
	if err != nil || used != n {
		return Value{}, ErrBadData
	}
	return v, nil
}

// AppendRecord appends the snapshot record of key: its length and bytes,
// its deadline and its value. Requires e's shard held.
func (s *Store) AppendRecord(dst []byte, key []byte, e *Entry) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	dst = append(dst, key...)
	dst = binary.AppendVarint(dst, e.expireAt)
	return s.AppendValue(dst, e)
}

// DecodeRecord decodes one snapshot record from the start of b. The key
// aliases b; the value does not.
func DecodeRecord(b []byte) (key []byte, expireAt int64, v Value, n int, err error) {
	d := decoder{b: b}
	key = d.bytes()
	expireAt = d.varint()
	if d.err == nil && expireAt < 0 {
		d.err = ErrBadData
	}
	v = d.value()
	if d.err != nil {
		return nil, 0, Value{}, 0, d.err
	}
	return key, expireAt, v, d.off, nil
}

// AppendShard appends the snapshot records of every key of shard i that is
// live at nowMs, and returns the bytes and how many keys it wrote. Requires
// shard i held; the caller can write the bytes out after unlocking.
func (s *Store) AppendShard(dst []byte, i int, nowMs int64) ([]byte, int) {
	n := 0
	sh := &s.shards[i]
	sh.each(func(e *Entry) bool {
		if e.expireAt == 0 || e.expireAt > nowMs {
			dst = s.AppendRecord(dst, sh.keyOf(e), e)
			n++
		}
		return true
	})
	return dst, n
}

// decoder reads varints and lengths from b, remembering the first error.
type decoder struct {
	b   []byte
	off int
	err error
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = ErrBadData
	}
}

func (d *decoder) byte() byte {
	if d.err != nil || d.off >= len(d.b) {
		d.fail()
		return 0
	}
	c := d.b[d.off]
	d.off++
	return c
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, k := binary.Uvarint(d.b[d.off:])
	if k <= 0 {
		d.fail()
		return 0
	}
	d.off += k
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, k := binary.Varint(d.b[d.off:])
	if k <= 0 {
		d.fail()
		return 0
	}
	d.off += k
	return v
}

// length reads a uvarint that counts items of at least min bytes each, and
// fails unless that many bytes remain.
func (d *decoder) length(min int) int {
	n := d.uvarint()
	if d.err != nil {
		return 0
	}
	if n > uint64(len(d.b)-d.off)/uint64(min) {
		d.fail()
		return 0
	}
	return int(n)
}

// bytes reads a length-prefixed byte string, aliasing b.
func (d *decoder) bytes() []byte {
	n := d.length(1)
	if d.err != nil {
		return nil
	}
	p := d.b[d.off : d.off+n : d.off+n]
	d.off += n
	return p
}

func (d *decoder) float() float64 {
	if d.err != nil || len(d.b)-d.off < 8 {
		d.fail()
		return 0
	}
	f := math.Float64frombits(binary.LittleEndian.Uint64(d.b[d.off:]))
	d.off += 8
	return f
}

func (d *decoder) value() Value {
	switch d.byte() {
	case tagString:
		b := d.bytes()
		return Value{kind: KindString, str: append([]byte{}, b...)}
	case tagInt:
		return Value{kind: KindString, isNum: true, num: d.varint()}
	case tagZSet:
		return Value{kind: KindZSet, obj: d.zset()}
	case tagSlidingLog:
		return Value{kind: KindSlidingLog, obj: d.slidingLog()}
	case tagSlidingWindow:
		w := &SlidingWindow{Start: d.varint(), Cur: d.varint(), Prev: d.varint()}
		if w.Cur < 0 || w.Prev < 0 || !inTime(w.Start) {
			d.fail()
		}
		return Value{kind: KindSlidingWindow, obj: w}
	case tagHash:
		r := d.hash()
		return Value{kind: KindHash, obj: r.obj, str: r.str}
	case tagList:
		r := d.list()
		return Value{kind: KindList, obj: r.obj, str: r.str}
	}
	d.fail()
	return Value{}
}

// inTime reports whether t lies within ±maxTime.
func inTime(t int64) bool { return -maxTime <= t && t <= maxTime }
