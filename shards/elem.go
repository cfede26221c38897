package shards

// The packed element encoding that hashes and lists share, the counterpart
// of a listpack entry: a header byte, then the payload.
//
//	0x00-0x7f  a string of that many bytes (0 to 127), which follow
//	0x80-0x87  an integer, zigzag-encoded in 1 to 8 little-endian bytes
//	0x88       a string whose length, a uvarint (128 or more), follows
//	0xc0-0xff  the integer 0 to 63, in the header alone
//
// Only canonical decimal integers (as strconv.FormatInt prints them) are
// stored as integers, so every element reads back as the bytes it was
// written as. A 13-digit millisecond timestamp takes 7 bytes, a 16-digit
// microsecond one 8, a token count below 64 one.
//
// List elements are followed by their size (header and payload) written
// backwards, a "backlen" as listpack's: its last byte holds the low seven
// bits and the high bit says that more bytes precede it, so a list walks
// backwards from any element's end. A hash never walks backwards and stores
// none.

import (
	"encoding/binary"
	"math/bits"
	"strconv"
	"sync/atomic"
)

const (
	elemIntBase  = 0x80
	elemLong     = 0x88
	elemSmallInt = 0xc0
)

// Elem is a hash field, a hash value or a list element as stored: its bytes,
// or the integer it spells when it is a canonical decimal integer (IsInt
// set), which saves formatting it when it is only written out. B aliases the
// collection's memory: valid until the collection changes, never to be
// modified.
type Elem struct {
	B     []byte // the bytes, unless IsInt
	Int   int64  // the value, when IsInt
	IsInt bool
}

// AppendTo appends the element's bytes to dst.
func (e Elem) AppendTo(dst []byte) []byte {
	if e.IsInt {
		return strconv.AppendInt(dst, e.Int, 10)
	}
	return append(dst, e.B...)
}

// Len returns the length of the element's bytes.
func (e Elem) Len() int {
	if e.IsInt {
		return intLen(e.Int)
	}
	return len(e.B)
}

// String returns a copy of the element's bytes.
func (e Elem) String() string {
	if e.IsInt {
		return strconv.FormatInt(e.Int, 10)
	}
	return string(e.B)
}

// probe is a value looked for among elements: its bytes and, when it is a
// canonical decimal integer, that integer, so that comparing it with a
// stored integer costs no formatting.
type probe struct {
	b     []byte
	iv    int64
	isInt bool
}

func newProbe(b []byte) probe {
	iv, ok := canonicalInt(b)
	return probe{b, iv, ok}
}

// matches reports whether the stored element e has the probe's bytes.
func (p *probe) matches(e Elem) bool {
	if e.IsInt != p.isInt {
		return false
	}
	if p.isInt {
		return e.Int == p.iv
	}
	return sameBytes(e.B, p.b)
}

// size returns the encoded size (header and payload) of the probe's bytes.
func (p *probe) size() int {
	if p.isInt {
		return intElemSize(p.iv)
	}
	return strElemSize(len(p.b))
}

// put encodes the probe's bytes at the start of dst, which has p.size()
// bytes.
func (p *probe) put(dst []byte) {
	if p.isInt {
		putIntElem(dst, p.iv)
		return
	}
	putStrElem(dst, p.b)
}

// elemSizeOf returns the encoded size of a stored element.
func elemSizeOf(e Elem) int {
	if e.IsInt {
		return intElemSize(e.Int)
	}
	return strElemSize(len(e.B))
}

// putElemOf encodes a stored element at the start of dst, which has
// elemSizeOf(e) bytes.
func putElemOf(dst []byte, e Elem) {
	if e.IsInt {
		putIntElem(dst, e.Int)
		return
	}
	putStrElem(dst, e.B)
}

func intElemSize(v int64) int {
	if v >= 0 && v < 64 {
		return 1
	}
	return 1 + zigzagBytes(v)
}

func strElemSize(n int) int {
	if n < elemIntBase {
		return 1 + n
	}
	return 1 + uvarintLen(uint64(n)) + n
}

func zigzagBytes(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	return max(1, (bits.Len64(u)+7)/8)
}

func uvarintLen(u uint64) int {
	var buf [binary.MaxVarintLen64]byte
	return binary.PutUvarint(buf[:], u)
}

func putStrElem(dst []byte, b []byte) {
	if len(b) < elemIntBase {
		dst[0] = byte(len(b))
		copy(dst[1:], b)
		return
	}
	dst[0] = elemLong
	n := binary.PutUvarint(dst[1:], uint64(len(b)))
	copy(dst[1+n:], b)
}

func putIntElem(dst []byte, v int64) {
	if v >= 0 && v < 64 {
		dst[0] = elemSmallInt + byte(v)
		return
	}
	u := uint64(v<<1) ^ uint64(v>>63)
	k := zigzagBytes(v)
	dst[0] = byte(elemIntBase + k - 1)
	for i := 1; i <= k; i++ {
		dst[i] = byte(u)
		u >>= 8
	}
}

// decodeElem decodes the element at b[off:] and returns it with the offset
// after it (its backlen, in a list).
func decodeElem(b []byte, off int) (Elem, int) {
	h := b[off]
	off++
	switch {
	case h < elemIntBase:
		end := off + int(h)
		return Elem{B: b[off:end:end]}, end
	case h >= elemSmallInt:
		return Elem{Int: int64(h - elemSmallInt), IsInt: true}, off
	case h == elemLong:
		n, off := uvarint(b, off)
		end := off + int(n)
		return Elem{B: b[off:end:end]}, end
	}
	k := int(h-elemIntBase) + 1
	return Elem{Int: getZigzag(b, off, k), IsInt: true}, off + k
}

// getZigzag reads a zigzag-encoded integer of k little-endian bytes at
// b[off:], with one load when eight bytes are there to read.
func getZigzag(b []byte, off, k int) int64 {
	var u uint64
	if off+8 <= len(b) {
		u = binary.LittleEndian.Uint64(b[off:]) & (^uint64(0) >> (64 - 8*k))
	} else {
		for i := k - 1; i >= 0; i-- {
			u = u<<8 | uint64(b[off+i])
		}
	}
	return int64(u>>1) ^ -int64(u&1)
}

// compactLimits are the limits of a collection type's compact encoding: the
// most items and the longest item. They are read on every insertion, so a
// CONFIG SET takes effect at once for the collections that grow afterwards.
// Safe for concurrent use.
type compactLimits struct{ entries, value atomic.Int64 }

func (l *compactLimits) set(entries, value int64) {
	l.entries.Store(entries)
	l.value.Store(value)
}

// skipElem returns the offset after the element at b[off:].
func skipElem(b []byte, off int) int {
	h := b[off]
	switch {
	case h < elemIntBase:
		return off + 1 + int(h)
	case h >= elemSmallInt:
		return off + 1
	case h == elemLong:
		n, p := uvarint(b, off+1)
		return p + int(n)
	}
	return off + 1 + int(h-elemIntBase) + 1
}

// backlenSize is the size of the backlen of an element of n bytes.
func backlenSize(n int) int { return (bits.Len(uint(n)) + 6) / 7 }

// putBacklen writes the backlen of an element of n bytes into dst, which
// has backlenSize(n) bytes.
func putBacklen(dst []byte, n int) {
	k := len(dst)
	for i := 0; i < k; i++ {
		c := byte(n & 0x7f)
		n >>= 7
		if i < k-1 {
			c |= 0x80
		}
		dst[k-1-i] = c
	}
}

// readBacklen reads the backlen that ends at b[end-1] and returns the
// offset where its element starts.
func readBacklen(b []byte, end int) int {
	p := end - 1
	n, shift := 0, 0
	for {
		c := b[p]
		n |= int(c&0x7f) << shift
		if c&0x80 == 0 {
			break
		}
		shift += 7
		p--
	}
	return p - n
}

// resized returns b with b[start:end] replaced by n bytes, which the
// caller fills (they hold garbage). When b must grow it is reallocated to
// the allocator's size class for its new length and no more, as a listpack
// is reallocated to the size it needs; a slice left less than half full
// is reallocated smaller.
func resized(b []byte, start, end, n int) []byte {
	old := len(b)
	size := old - (end - start) + n
	switch {
	case size > cap(b):
		nb := append([]byte(nil), make([]byte, size)...) // rounds cap up to the size class
		copy(nb, b[:start])
		copy(nb[start+n:], b[end:old])
		return nb
	case cap(b) >= 2*size+64:
		nb := append([]byte(nil), make([]byte, size)...)
		copy(nb, b[:start])
		copy(nb[start+n:], b[end:old])
		return nb
	}
	b = b[:max(old, size)]
	copy(b[start+n:], b[end:old])
	return b[:size]
}
