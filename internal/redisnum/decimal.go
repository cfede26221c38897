package redisnum

import (
	"encoding/binary"
	"math/bits"
)

// Decimal formatting, eight digits at a time: FormatUint splits a number
// into chunks of eight digits and converts each chunk with a handful of
// multiplications on all its digits at once (SWAR: SIMD within a
// register). Journal records and integer replies are mostly 13- and
// 19-digit timestamps, where this beats strconv's two digits per step.

// digits8 returns the eight decimal digits of x < 1e8, zero-padded, as the
// bytes of a little-endian word, most significant digit in the lowest byte,
// each byte the digit's value (not yet ASCII).
//
// x is split into two 4-digit halves in 32-bit lanes, each half into two
// 2-digit quarters in 16-bit lanes, each quarter into two digits in bytes.
// Every split divides each lane by a constant through a multiplication and
// a shift that is exact for the lane's range (q = v*5243>>19 is v/100 for
// v < 10000; q = v*103>>10 is v/10 for v < 100; TestDigits8 checks every
// x), and no lane's product reaches into the next lane.
func digits8(x uint32) uint64 {
	hi := x / 10000
	v := uint64(hi) | uint64(x-hi*10000)<<32
	q := v * 5243 >> 19 & 0x0000007f_0000007f
	v = q | (v-q*100)<<16
	q = v * 103 >> 10 & 0x000f_000f_000f_000f
	return q | (v-q*10)<<8
}

// leadingZeros returns how many of the eight digits of a digits8 word are
// leading zeros, keeping at least one digit.
func leadingZeros(v uint64) int {
	return min(bits.TrailingZeros64(v)/8, 7)
}

// FormatUint writes u in decimal at the end of buf and returns the index
// of its first digit.
func FormatUint(buf *[24]byte, u uint64) int {
	const ascii = 0x30303030_30303030
	if u < 1e8 {
		v := digits8(uint32(u))
		binary.LittleEndian.PutUint64(buf[16:], v|ascii)
		return 16 + leadingZeros(v)
	}
	hi := u / 1e8
	binary.LittleEndian.PutUint64(buf[16:], digits8(uint32(u-hi*1e8))|ascii)
	if hi < 1e8 {
		v := digits8(uint32(hi))
		binary.LittleEndian.PutUint64(buf[8:], v|ascii)
		return 8 + leadingZeros(v)
	}
	top := hi / 1e8 // at most 1844
	binary.LittleEndian.PutUint64(buf[8:], digits8(uint32(hi-top*1e8))|ascii)
	v := digits8(uint32(top))
	binary.LittleEndian.PutUint64(buf[0:], v|ascii)
	return leadingZeros(v)
}

// AppendInt appends n in decimal (strconv.AppendInt(dst, n, 10)).
func AppendInt(dst []byte, n int64) []byte {
	var buf [24]byte
	if n < 0 {
		i := FormatUint(&buf, -uint64(n)) // -MinInt64 as a uint64 is its magnitude
		return append(append(dst, '-'), buf[i:]...)
	}
	i := FormatUint(&buf, uint64(n))
	return append(dst, buf[i:]...)
}
