// Package redisnum is Redis's number parsing and formatting, byte for byte.
package redisnum

// This file holds Redis's number parsing and formatting, ported from Redis 7:
// string2ll, string2d and string2ld (src/util.c) for command arguments, and
// d2string (src/util.c, 7.2 and later, on deps/fpconv) and ld2string in its
// LD_STR_HUMAN mode (src/util.c) for replies.

import (
	"bytes"
	"math"
	"math/big"
	"strconv"
	"unsafe"
)

// maxLongDoubleChars is MAX_LONG_DOUBLE_CHARS of Redis's src/util.h: string2ld
// copies its argument into a buffer of this size with a terminating NUL, so
// only arguments shorter than it parse.
const maxLongDoubleChars = 5 * 1024

// maxIntChars is LONG_STR_SIZE-1 of Redis's src/util.h: the longest string
// string2ll accepts, "-9223372036854775808".
const maxIntChars = 20

// ParseInt parses b as a signed 64-bit integer exactly as Redis's string2ll
// (src/util.c) does, which is what INCRBY, EXPIRE, SETRANGE and every other
// integer argument go through. Only the canonical decimal form of an int64
// is accepted, the form strconv.FormatInt produces:
//
//   - "0", or an optional '-' followed by a digit 1-9 and more digits;
//   - no '+', no leading zeros ("007", "-0" and "+1" are rejected), no
//     spaces anywhere, nothing but ASCII digits after the sign;
//   - at most 20 bytes, and within [-9223372036854775808,
//     9223372036854775807].
//
// It does not allocate.
func ParseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > maxIntChars {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	i, negative := 0, false
	if b[0] == '-' {
		negative = true
		i++
		if i == len(b) {
			return 0, false
		}
	}
	if b[i] < '1' || b[i] > '9' {
		return 0, false
	}
	v := uint64(b[i] - '0')
	for i++; i < len(b); i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if v > math.MaxUint64/10 {
			return 0, false
		}
		v *= 10
		if v > math.MaxUint64-uint64(c-'0') {
			return 0, false
		}
		v += uint64(c - '0')
	}
	if negative {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true // wraps to MinInt64 for v == 1<<63, as intended
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

// numKind classifies an argument that scanStrtod accepted.
type numKind uint8

const (
	numDecimal numKind = iota + 1 // [0-9]*.?[0-9]* with an optional e exponent
	numHex                        // 0x hex digits with an optional p exponent
	numInf                        // inf or infinity, any case
	numNaN                        // nan or nan(chars), any case
)

// strtodNumber is what scanStrtod learned about an argument.
type strtodNumber struct {
	kind numKind
	// negative is set for a leading '-'.
	negative bool
	// nonzero is set when the mantissa has a digit other than 0, so a zero
	// result means the value underflowed.
	nonzero bool
	// hexNoExp is set for a hex float without a 'p' exponent, which
	// strconv.ParseFloat needs spelled out.
	hexNoExp bool
}

// scanStrtod reports whether the whole of b is one number as glibc's
// strtod/strtold read it in the "C" locale, given that Redis rejects any
// argument whose first byte is a space (isspace) and any argument strtod
// stops short of (so trailing bytes, embedded NULs and whitespace anywhere
// all fail). The grammar, after an optional '+' or '-', is one of:
//
//	decimal: digits with at most one '.', at least one digit, then
//	         optionally e or E, an optional sign and at least one digit;
//	hex:     0x or 0X, hex digits with at most one '.', at least one hex
//	         digit, then optionally p or P, an optional sign and at least
//	         one decimal digit;
//	"inf" or "infinity", any case;
//	"nan", optionally followed by "(" [0-9A-Za-z_]* ")", any case.
//
// An exponent marker without digits, or "0x" without hex digits, is not
// consumed by strtod, which leaves bytes over, so those are rejected too.
func scanStrtod(b []byte) (strtodNumber, bool) {
	var n strtodNumber
	i := 0
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		n.negative = b[i] == '-'
		i++
	}
	rest := b[i:]
	switch {
	case numEqualFold(rest, "inf"), numEqualFold(rest, "infinity"):
		n.kind = numInf
		return n, true
	case len(rest) >= 3 && numEqualFold(rest[:3], "nan"):
		if len(rest) == 3 {
			n.kind = numNaN
			return n, true
		}
		if rest[3] != '(' || rest[len(rest)-1] != ')' {
			return n, false
		}
		for _, c := range rest[4 : len(rest)-1] {
			if !numIsAlnum(c) && c != '_' {
				return n, false
			}
		}
		n.kind = numNaN
		return n, true
	}

	if len(rest) >= 3 && rest[0] == '0' && rest[1]|0x20 == 'x' {
		j, digits, dot := 2, 0, false
		for ; j < len(rest); j++ {
			c := rest[j]
			if c == '.' && !dot {
				dot = true
				continue
			}
			v := numHexValue(c)
			if v < 0 {
				break
			}
			digits++
			if v != 0 {
				n.nonzero = true
			}
		}
		if digits == 0 {
			return n, false // strtod reads the "0" and stops at the 'x'
		}
		n.kind = numHex
		if j == len(rest) {
			n.hexNoExp = true
			return n, true
		}
		if rest[j]|0x20 != 'p' {
			return n, false
		}
		return n, scanExponent(rest[j+1:])
	}

	j, digits, dot := 0, 0, false
	for ; j < len(rest); j++ {
		c := rest[j]
		if c == '.' && !dot {
			dot = true
			continue
		}
		if c < '0' || c > '9' {
			break
		}
		digits++
		if c != '0' {
			n.nonzero = true
		}
	}
	if digits == 0 {
		return n, false
	}
	n.kind = numDecimal
	if j == len(rest) {
		return n, true
	}
	if rest[j]|0x20 != 'e' {
		return n, false
	}
	return n, scanExponent(rest[j+1:])
}

// scanExponent reports whether b is an optional sign and at least one
// decimal digit, the rest of a complete exponent.
func scanExponent(b []byte) bool {
	if len(b) > 0 && (b[0] == '+' || b[0] == '-') {
		b = b[1:]
	}
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// numEqualFold reports whether b equals the lower-case ASCII word s,
// ignoring ASCII case.
func numEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		c := b[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

func numIsAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c|0x20 >= 'a' && c|0x20 <= 'z'
}

func numHexValue(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c|0x20 >= 'a' && c|0x20 <= 'f':
		return int(c|0x20-'a') + 10
	}
	return -1
}

// convertFloat converts an argument scanStrtod accepted as a decimal or hex
// number into the nearest float64 (round half to even, as glibc does in the
// default rounding mode). It reports overflow (the result is then ±Inf) in
// its second result.
func convertFloat(b []byte, n strtodNumber) (float64, bool) {
	if n.nonzero {
		// Settle clear overflows here: strconv reports them with an
		// allocated error.
		mag := numMagnitude(b, n)
		if n.kind == numDecimal && mag >= 309 || n.kind == numHex && mag >= 1024 {
			if n.negative {
				return math.Inf(-1), true
			}
			return math.Inf(1), true
		}
	}
	var f float64
	var err error
	if n.hexNoExp {
		// strconv wants the binary exponent of a hex mantissa spelled out.
		var buf [64]byte
		s := append(append(buf[:0], b...), 'p', '0')
		f, err = strconv.ParseFloat(unsafe.String(unsafe.SliceData(s), len(s)), 64)
	} else {
		// ParseFloat neither keeps its argument nor, on error, refers to it
		// (NumError holds a copy), so b can be lent to it without a copy.
		f, err = strconv.ParseFloat(unsafe.String(unsafe.SliceData(b), len(b)), 64)
	}
	if err != nil && !math.IsInf(f, 0) {
		// Unreachable: scanStrtod admits only what ParseFloat reads.
		return 0, false
	}
	return f, math.IsInf(f, 0)
}

// ParseFloat parses b as a double exactly as Redis 7's string2d (src/util.c)
// does. That is what getDoubleFromObject (src/object.c) applies to every
// argument Redis reads as a double, such as ZADD and ZINCRBY scores.
// string2d calls strtod and rejects:
//
//   - an empty argument, or one whose first byte is a space, \t, \n, \v,
//     \f or \r;
//   - an argument strtod does not consume entirely (trailing bytes or
//     spaces, an embedded NUL, "1e", "0x", "1.2.3");
//   - overflow: a finite number too large for a double ("1e309");
//   - underflow to zero: a non-zero number too small even for the smallest
//     subnormal ("1e-400"); numbers that round to a subnormal are accepted;
//   - NaN in any spelling ("nan", "-NaN", "nan(123)").
//
// Accepted, as strtod accepts them: an optional leading '+' or '-'; ".5"
// and "5."; exponents "1e10", "1E+10"; "inf", "infinity" in any case and
// with a sign (returning ±Inf); C99 hex floats such as "0x1.8p3" and
// "0x10" (Redis 7 reads doubles with strtod). "-0" gives negative zero.
//
// Rounding is to the nearest double, ties to even, like glibc's strtod.
// Note that ZRANGEBYSCORE-style ranges (zslParseRange in src/t_zset.c) call
// strtod without these checks and are not parsed by this function.
//
// It does not allocate, except for a hex float without exponent longer
// than 62 bytes and a number that overflows within a factor of ten of the
// largest double (strconv reports that with an allocated error).
func ParseFloat(b []byte) (float64, bool) {
	if f, ok := parseFloatInteger(b); ok {
		return f, true
	}
	return parseFloatGeneral(b)
}

// parseFloatGeneral is ParseFloat without the integer fast path.
func parseFloatGeneral(b []byte) (float64, bool) {
	if len(b) == 0 || numIsSpace(b[0]) {
		return 0, false
	}
	n, ok := scanStrtod(b)
	if !ok {
		return 0, false
	}
	switch n.kind {
	case numNaN:
		return 0, false
	case numInf:
		if n.negative {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	}
	f, overflow := convertFloat(b, n)
	if overflow || (f == 0 && n.nonzero) {
		return 0, false // strtod's ERANGE with HUGE_VAL or zero
	}
	return f, true
}

// parseFloatInteger is ParseFloat's fast path for the common score, a
// plain decimal integer (a sliding log's microsecond timestamp): an
// optional sign and 1 to 18 digits. Converting the int64 rounds to
// nearest-even exactly as strtod rounds the decimal, so the result is the
// same; "-0" keeps strtod's negative zero. ok is false for anything else,
// which takes the general path. (Three scores per call of the MULTI
// sliding-log recipe: the general path cost 200 ns of the 3.8 us.)
func parseFloatInteger(b []byte) (float64, bool) {
	neg := false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg = b[0] == '-'
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
		if v == 0 {
			return math.Copysign(0, -1), true
		}
		return float64(-v), true
	}
	return float64(v), true
}

// numIsSpace is isspace in the "C" locale.
func numIsSpace(c byte) bool {
	return c == ' ' || c >= '\t' && c <= '\r'
}

// Long double limits of the x86-64 80-bit extended format: a 64-bit
// significand with an explicit integer bit, exponents down to -16382 for
// normal numbers and subnormals down to 2^-16445.
const (
	// ldMaxExp is the big.Float exponent (value = mant × 2^exp with
	// 0.5 <= |mant| < 1) of the first power of two a long double cannot
	// hold: values that round to 2^16384 overflow.
	ldMaxExp = 16384
	// ldHalfMinSubExp is the big.Float exponent of 2^-16446, half the
	// smallest subnormal long double: values at or below it round to zero.
	ldHalfMinSubExp = -16445
)

// ParseLongDouble parses b as Redis 7's string2ld (src/util.c) does for
// INCRBYFLOAT and HINCRBYFLOAT (via getLongDoubleFromObject in
// src/object.c), returning the nearest float64.
//
// It accepts and rejects the same arguments as string2ld does with the
// x86-64 80-bit long double:
//
//   - rejected: an empty argument or one of 5120 bytes or more
//     (MAX_LONG_DOUBLE_CHARS), a leading space, anything strtold does not
//     consume entirely, NaN in any spelling, and numbers outside the long
//     double range (beyond about 1.19e4932, or non-zero but at most
//     2^-16446, about 1.8e-4951, which strtold rounds to zero);
//   - accepted: the same grammar as ParseFloat (sign, ".5", exponents, hex
//     floats), and "inf"/"infinity" in any case. string2ld accepts
//     infinity; it is INCRBYFLOAT that then refuses a non-finite result
//     with "ERR increment would produce NaN or Infinity", so callers must
//     check the result (and the sum) with math.IsInf themselves.
//
// Precision: Go has no long double, so the result is the argument rounded
// to a float64 (53-bit significand, 11-bit exponent), not to Redis's
// 64-bit-significand long double. Sums computed from it therefore differ
// from Redis's in the last bits, which AppendLongDouble can show. An
// argument between the float64 and long double ranges is accepted, as
// Redis accepts it, but comes back as ±Inf (above about 1.8e308) or as a
// zero of the argument's sign (below about 2.5e-324), where Redis would
// have kept the value. Whether such an argument lies inside the long
// double range is decided with math/big at 64-bit precision, so it is
// exact up to math/big's decimal conversion. (AppendLongDoubleSum keeps
// the long double value and does the whole of INCRBYFLOAT exactly.)
//
// It allocates only as ParseFloat does, and for arguments outside the
// float64 range.
func ParseLongDouble(b []byte) (float64, bool) {
	if len(b) == 0 || len(b) >= maxLongDoubleChars || numIsSpace(b[0]) {
		return 0, false
	}
	n, ok := scanStrtod(b)
	if !ok {
		return 0, false
	}
	switch n.kind {
	case numNaN:
		return 0, false
	case numInf:
		if n.negative {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	}
	f, overflow := convertFloat(b, n)
	if !overflow && (f != 0 || !n.nonzero) {
		return f, true
	}
	// Outside float64's range: accept only what a long double can hold.
	if !inLongDoubleRange(b, n, overflow) {
		return 0, false
	}
	return f, true // ±Inf, or a zero of the argument's sign
}

// inLongDoubleRange reports whether a number that overflowed (overflow) or
// underflowed to zero as a float64 is finite and non-zero as an x86-64 long
// double, that is, whether strtold leaves errno alone or returns a value
// string2ld keeps.
//
// The magnitude of the number, read off its digits and exponent, settles
// all but the cases next to a limit; only those are converted with
// math/big, and with an exponent small enough to keep that cheap (a huge
// exponent must not turn into a huge power of ten).
func inLongDoubleRange(b []byte, n strtodNumber, overflow bool) bool {
	mag := numMagnitude(b, n)
	if n.kind == numHex {
		// |x| is in [2^mag, 2^(mag+4)).
		if overflow {
			if mag >= ldMaxExp {
				return false // at least 2^16384
			}
			if mag+4 < ldMaxExp {
				return true // below 2^16383, far from rounding up to 2^16384
			}
		} else {
			if mag+4 <= ldHalfMinSubExp-1 {
				return false // below 2^-16446: rounds to zero
			}
			if mag > ldHalfMinSubExp-1 {
				return true // above 2^-16446: rounds to a subnormal
			}
		}
	} else {
		// |x| is in [10^mag, 10^(mag+1)); LDBL_MAX is about 1.19e4932 and
		// half the smallest subnormal about 1.82e-4951.
		if overflow {
			if mag >= 4933 {
				return false
			}
			if mag <= 4931 {
				return true
			}
		} else {
			if mag <= -4953 {
				return false
			}
			if mag >= -4950 {
				return true
			}
		}
	}

	s := string(b)
	if n.hexNoExp {
		s += "p0"
	}
	var x big.Float
	if overflow {
		// Round as strtold does, to 64 bits to nearest even, then see
		// whether the result reached 2^16384.
		x.SetPrec(ldPrec).SetMode(big.ToNearestEven)
		if _, _, err := x.Parse(s, 0); err != nil || x.IsInf() {
			return false
		}
		return x.MantExp(nil) <= ldMaxExp
	}
	// strtold returns zero for |x| <= 2^-16446 (ties to even), the smallest
	// subnormal above it. Rounding away from zero keeps the comparison with
	// the exactly representable 2^-16446 exact.
	x.SetPrec(ldPrec).SetMode(big.AwayFromZero)
	if _, _, err := x.Parse(s, 0); err != nil || x.IsInf() {
		return false
	}
	var mant big.Float
	exp := x.MantExp(&mant)
	if exp < ldHalfMinSubExp {
		return false
	}
	return exp > ldHalfMinSubExp || mant.Abs(&mant).Cmp(big.NewFloat(0.5)) != 0
}

// numMagnitude returns where the leading non-zero digit of a number that
// scanStrtod accepted with a non-zero mantissa stands: for a decimal number
// the power of ten of that digit, so |x| is in [10^mag, 10^(mag+1)); for a
// hex number the power of two of that hex digit's lowest bit, so |x| is in
// [2^mag, 2^(mag+4)). The written exponent is saturated at ±maxDecimalExp,
// far beyond every limit, so no input makes this overflow.
func numMagnitude(b []byte, n strtodNumber) int {
	i := 0
	if b[0] == '+' || b[0] == '-' {
		i++
	}
	base := 10
	if n.kind == numHex {
		base = 16
		i += 2
	}
	intDigits, leadingZeros, seen, frac := 0, 0, false, false
	for ; i < len(b); i++ {
		c := b[i]
		if c == '.' {
			frac = true
			continue
		}
		v := numHexValue(c)
		if v < 0 || v >= base {
			break
		}
		if !frac {
			intDigits++
		}
		if v != 0 {
			seen = true
		} else if !seen {
			leadingZeros++
		}
	}
	exp := 0
	if i < len(b) {
		exp = numExponent(b[i+1:]) // past the 'e' or 'p'
	}
	if base == 16 {
		return 4*(intDigits-1-leadingZeros) + exp
	}
	return intDigits - 1 - leadingZeros + exp
}

// numExponent parses the sign and digits of an exponent that scanExponent
// accepted, saturating at ±maxDecimalExp.
func numExponent(b []byte) int {
	neg := false
	if b[0] == '+' || b[0] == '-' {
		neg = b[0] == '-'
		b = b[1:]
	}
	e := 0
	for _, c := range b {
		if e < maxDecimalExp {
			e = e*10 + int(c-'0')
		}
	}
	if neg {
		return -e
	}
	return e
}

// AppendFloat appends f formatted as Redis 7.2 and later format doubles in
// replies: ZSCORE, ZINCRBY, the WITHSCORES variants, ZPOP*, RESP3 doubles.
// It is d2string (src/util.c), with these rules in order:
//
//   - NaN is "nan"; +Inf and -Inf are "inf" and "-inf";
//   - zero is "0", negative zero "-0";
//   - an integral value in [-2^62, 2^62] is printed as an integer
//     (double2ll: the range is LLONG_MAX/2 either way), so 1e15 is
//     "1000000000000000" and 2^62 is "4611686018427387904";
//   - anything else goes through fpconv_dtoa (deps/fpconv/fpconv_dtoa.c),
//     which AppendFloat reproduces bit for bit: Grisu2 digit generation,
//     usually the shortest digits that read back as f but for about one
//     double in a thousand longer or different in the last digit (1e23
//     prints as "99999999999999990000000"; the output always reads back
//     as f), laid out by fpconv's emit_digits. With the digits d1...dn,
//     the value d1...dn × 10^K and exp = |K+n-1|:
//     integer digits followed by K zeros when K >= 0 and exp < n+7;
//     plain decimal when K < 0 and (K > -7 or exp < 4), with a "0." and
//     leading zeros below 1 ("0.001", "123.456", "0.000001");
//     otherwise scientific: d1, "." and the other digits if any, 'e', the
//     exponent's sign and its digits without padding ("1.5e-7", "1e+20",
//     "1.2345678901234e+4", "5e-324", "1.7976931348623157e+308").
//
// Redis 7.0 and 7.1 printed "%.17g" instead ("0.10000000000000001" where
// 7.2 prints "0.1"); AppendFloat follows 7.2. With a dst of enough capacity
// (24 bytes are always enough) it does not allocate.
func AppendFloat(dst []byte, f float64) []byte {
	switch {
	case f != f:
		return append(dst, "nan"...)
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	case f == 0:
		if math.Signbit(f) {
			return append(dst, "-0"...)
		}
		return append(dst, '0')
	case f >= -(1<<62) && f <= 1<<62 && f == math.Trunc(f):
		return strconv.AppendInt(dst, int64(f), 10)
	}
	return fpconvDtoa(dst, f)
}

// AppendLongDouble appends f formatted as Redis replies to INCRBYFLOAT and
// HINCRBYFLOAT and stores their result: ld2string(..., LD_STR_HUMAN) of
// src/util.c, which prints "%.17Lf" (fixed notation, 17 digits after the
// point, never an exponent), drops trailing zeros after the point and then
// the point itself, and turns "-0" into "0". So 10.5 is "10.5", 5.0e3 is
// "5000", 3.0e-5 is "0.00003", -1e-20 is "0", 1e20 is
// "100000000000000000000". NaN is "nan", ±Inf "inf" and "-inf" (which
// INCRBYFLOAT never stores).
//
// Redis prints the exact value of an 80-bit long double (64-bit
// significand, about 19.3 significant digits) to 17 places, so its output
// depends on bits a float64 does not have: sometimes the decimal a user
// would expect ("0.3" for 0.1+0.2, "-0.1" for 1-1.1), sometimes the long
// double's own noise ("99273.45000000000000284" for 99971-697.55). No
// float64 formatting can reproduce that. AppendLongDouble prints an
// integral f below 2^64 in full, like Redis, and otherwise the shortest
// decimal that reads back as f, in fixed notation, rounded to 17 places
// after the point when it has more, and trimmed as ld2string trims.
// This agrees with Redis when both sums are the same binary number with
// at most 17 places (exact integer sums, 1.5+1.5, 17179869184+1.5),
// often when Redis's output is a short decimal (10.5+0.1 is "10.6" in
// both), and on every INCRBYFLOAT test of Redis's incr.tcl; it differs
//
//   - on most sums with a fractional part: 0.1+0.2 is
//     "0.30000000000000004" here, 1-1.1 is "-0.10000000000000009", and
//     99971-697.55 is "99273.45" (for sums of random short decimals, about
//     seven in ten differ);
//   - on values of 2^64 and beyond, where Redis prints every integer digit
//     of its long double's exact value and this prints the float64's
//     shortest digits padded with zeros (1e30 is
//     "1000000000000000000000000000000" here and
//     "1000000000000000000024696061952" in Redis);
//   - on values that only a long double can hold (see ParseLongDouble).
//
// AppendLongDoubleSum computes and formats exactly as Redis does, at the
// price of allocations.
//
// With a dst of enough capacity it does not allocate; the longest output,
// for -MaxFloat64, is 310 bytes.
func AppendLongDouble(dst []byte, f float64) []byte {
	switch {
	case f != f:
		return append(dst, "nan"...)
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	}
	if f == math.Trunc(f) && math.Abs(f) < 1<<64 {
		// Every integer below 2^64 is exact in a long double, and Redis
		// prints all its digits: print the float64's exact value too.
		if f < 0 {
			return strconv.AppendUint(append(dst, '-'), uint64(-f), 10)
		}
		return strconv.AppendUint(dst, uint64(f), 10) // also -0 as "0"
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, 'f', -1, 64)
	dot := bytes.IndexByte(dst[start:], '.')
	if dot >= 0 && len(dst)-start-dot-1 > 17 {
		// "%.17Lf" keeps 17 places.
		dst = strconv.AppendFloat(dst[:start], f, 'f', 17, 64)
	}
	if dot >= 0 {
		// Now remove trailing zeroes after the '.', then the '.'.
		for dst[len(dst)-1] == '0' {
			dst = dst[:len(dst)-1]
		}
		if dst[len(dst)-1] == '.' {
			dst = dst[:len(dst)-1]
		}
	}
	if len(dst)-start == 2 && dst[start] == '-' && dst[start+1] == '0' {
		dst = append(dst[:start], '0')
	}
	return dst
}

// AppendLongDoubleSum computes value+incr and appends it formatted, byte for
// byte as Redis 7 on x86-64 replies to INCRBYFLOAT and HINCRBYFLOAT and
// stores their result, by emulating the 80-bit long double those commands
// compute in, instead of going through float64 as ParseLongDouble and
// AppendLongDouble must. A nil value stands for a missing key (Redis adds
// to 0); an empty but non-nil value is an empty string, which is not a
// number.
//
// It returns valid false, and dst unchanged, when value or incr is not
// accepted by string2ld (the reply is "ERR value is not a valid float"),
// and finite false, and dst unchanged, when the sum is NaN or infinite
// ("ERR increment would produce NaN or Infinity"; Redis checks the value
// before the increment and both before the sum, so one flag each is
// enough).
//
// The emulation: each argument is rounded correctly to a 64-bit
// significand (strtold's rounding, to nearest even), the sum is rounded
// the same way and overflows at 2^16384, and the result is printed as
// "%.17Lf" prints it, from its exact binary value rounded half to even at
// the 17th place, then trimmed as ld2string(LD_STR_HUMAN) trims it. So
// 0.1+0.2 gives "0.3", 1-1.1 gives "-0.1", 99971-697.55 gives
// "99273.45000000000000284" and 1e30 gives
// "1000000000000000000024696061952", all as Redis does. Only subnormal
// long doubles (below about 3.4e-4932) are not rounded to their reduced
// precision; they print as "0" either way.
//
// It allocates (math/big), so it suits INCRBYFLOAT rather than hot paths.
func AppendLongDoubleSum(dst, value, incr []byte) (out []byte, valid, finite bool) {
	var x, y big.Float
	if value == nil {
		x.SetPrec(ldPrec)
	} else if !parseExtended(&x, value) {
		return dst, false, false
	}
	if !parseExtended(&y, incr) {
		return dst, false, false
	}
	if x.IsInf() || y.IsInf() {
		return dst, true, false // inf, or NaN for inf-inf
	}
	var sum big.Float
	sum.SetPrec(ldPrec).SetMode(big.ToNearestEven).Add(&x, &y)
	if sum.Sign() != 0 && sum.MantExp(nil) > ldMaxExp {
		return dst, true, false // overflow to inf
	}
	start := len(dst)
	dst = sum.Append(dst, 'f', 17)
	for dst[len(dst)-1] == '0' {
		dst = dst[:len(dst)-1]
	}
	if dst[len(dst)-1] == '.' {
		dst = dst[:len(dst)-1]
	}
	if len(dst)-start == 2 && dst[start] == '-' && dst[start+1] == '0' {
		dst = append(dst[:start], '0')
	}
	return dst, true, true
}

// ldPrec is the significand width of the x86-64 long double.
const ldPrec = 64

// maxDecimalExp is where numExponent saturates a written exponent. Every
// limit of the long double is far inside it (the largest decimal exponent
// that can matter, with 5119 digits to compensate, is about 10100), and it
// keeps the integers built from an exponent small.
const maxDecimalExp = 100000

// parseExtended sets z to b as string2ld reads it on x86-64, with a 64-bit
// significand, and reports whether string2ld accepts b.
func parseExtended(z *big.Float, b []byte) bool {
	z.SetPrec(ldPrec).SetMode(big.ToNearestEven)
	if _, ok := ParseLongDouble(b); !ok {
		return false
	}
	n, _ := scanStrtod(b)
	if n.kind == numInf {
		z.SetInf(n.negative)
		return true
	}
	if !n.nonzero {
		z.SetInt64(0)
		if n.negative {
			z.Neg(z)
		}
		return true
	}

	i := 0
	if b[0] == '+' || b[0] == '-' {
		i++
	}
	base := 10
	if n.kind == numHex {
		base = 16
		i += 2
	}
	// Mantissa digits as an exact integer, and the exponent they shift by.
	var buf [64]byte
	digits := buf[:0]
	exp, frac := 0, false
	for ; i < len(b); i++ {
		c := b[i]
		if c == '.' {
			frac = true
			continue
		}
		v := numHexValue(c)
		if v < 0 || v >= base {
			break
		}
		digits = append(digits, c)
		if frac {
			exp--
		}
	}
	var mant big.Int
	mant.SetString(string(digits), base)
	if base == 16 {
		exp *= 4 // each hex fraction digit is 4 bits
	}
	if i < len(b) {
		exp += numExponent(b[i+1:]) // past the 'e' or 'p'
	}

	if base == 16 {
		// mant × 2^exp: one rounding, in SetInt; the scaling is exact.
		z.SetInt(&mant)
		z.SetMantExp(z, exp)
	} else if exp >= 0 {
		// mant × 10^exp is an integer: one rounding, in SetInt.
		var p big.Int
		p.Exp(big.NewInt(10), big.NewInt(int64(exp)), nil)
		z.SetInt(p.Mul(&mant, &p))
	} else {
		// mant / 10^-exp: both exact, one rounding, in Quo.
		var p big.Int
		p.Exp(big.NewInt(10), big.NewInt(int64(-exp)), nil)
		var num, den big.Float
		num.SetInt(&mant)
		den.SetInt(&p)
		z.Quo(&num, &den)
	}
	if n.negative {
		z.Neg(z)
	}
	return true
}

// What follows is deps/fpconv/fpconv_dtoa.c and fpconv_powers.h of Redis
// 7.2 (night-shift's fpconv, after Florian Loitsch's Grisu2), ported
// operation for operation so that the digits, including Grisu2's occasional
// non-shortest ones, are the same.

const (
	fpFracMask  = 0x000FFFFFFFFFFFFF
	fpExpMask   = 0x7FF0000000000000
	fpHiddenBit = 0x0010000000000000
	fpSignMask  = 0x8000000000000000
	fpExpBias   = 1023 + 52

	fpNPowers    = 87
	fpStepPowers = 8
	fpFirstPower = -348 // 10^-348
	fpExpMax     = -32
	fpExpMin     = -60
)

// diyFp is fpconv's Fp: the number frac × 2^exp.
type diyFp struct {
	frac uint64
	exp  int
}

var fpTens = [20]uint64{
	10000000000000000000,
	1000000000000000000,
	100000000000000000,
	10000000000000000,
	1000000000000000,
	100000000000000,
	10000000000000,
	1000000000000,
	100000000000,
	10000000000,
	1000000000,
	100000000,
	10000000,
	1000000,
	100000,
	10000,
	1000,
	100,
	10,
	1,
}

// fpPowersTen is powers_ten of fpconv_powers.h: normalized approximations
// of 10^-348, 10^-340, ..., 10^340.
var fpPowersTen = [fpNPowers]diyFp{
	{18054884314459144840, -1220}, {13451937075301367670, -1193},
	{10022474136428063862, -1166}, {14934650266808366570, -1140},
	{11127181549972568877, -1113}, {16580792590934885855, -1087},
	{12353653155963782858, -1060}, {18408377700990114895, -1034},
	{13715310171984221708, -1007}, {10218702384817765436, -980},
	{15227053142812498563, -954}, {11345038669416679861, -927},
	{16905424996341287883, -901}, {12595523146049147757, -874},
	{9384396036005875287, -847}, {13983839803942852151, -821},
	{10418772551374772303, -794}, {15525180923007089351, -768},
	{11567161174868858868, -741}, {17236413322193710309, -715},
	{12842128665889583758, -688}, {9568131466127621947, -661},
	{14257626930069360058, -635}, {10622759856335341974, -608},
	{15829145694278690180, -582}, {11793632577567316726, -555},
	{17573882009934360870, -529}, {13093562431584567480, -502},
	{9755464219737475723, -475}, {14536774485912137811, -449},
	{10830740992659433045, -422}, {16139061738043178685, -396},
	{12024538023802026127, -369}, {17917957937422433684, -343},
	{13349918974505688015, -316}, {9946464728195732843, -289},
	{14821387422376473014, -263}, {11042794154864902060, -236},
	{16455045573212060422, -210}, {12259964326927110867, -183},
	{18268770466636286478, -157}, {13611294676837538539, -130},
	{10141204801825835212, -103}, {15111572745182864684, -77},
	{11258999068426240000, -50}, {16777216000000000000, -24},
	{12500000000000000000, 3}, {9313225746154785156, 30},
	{13877787807814456755, 56}, {10339757656912845936, 83},
	{15407439555097886824, 109}, {11479437019748901445, 136},
	{17105694144590052135, 162}, {12744735289059618216, 189},
	{9495567745759798747, 216}, {14149498560666738074, 242},
	{10542197943230523224, 269}, {15709099088952724970, 295},
	{11704190886730495818, 322}, {17440603504673385349, 348},
	{12994262207056124023, 375}, {9681479787123295682, 402},
	{14426529090290212157, 428}, {10748601772107342003, 455},
	{16016664761464807395, 481}, {11933345169920330789, 508},
	{17782069995880619868, 534}, {13248674568444952270, 561},
	{9871031767461413346, 588}, {14708983551653345445, 614},
	{10959046745042015199, 641}, {16330252207878254650, 667},
	{12166986024289022870, 694}, {18130221999122236476, 720},
	{13508068024458167312, 747}, {10064294952495520794, 774},
	{14996968138956309548, 800}, {11173611982879273257, 827},
	{16649979327439178909, 853}, {12405201291620119593, 880},
	{9242595204427927429, 907}, {13772540099066387757, 933},
	{10261342003245940623, 960}, {15290591125556738113, 986},
	{11392378155556871081, 1013}, {16975966327722178521, 1039},
	{12648080533535911531, 1066},
}

// fpCachedPow10 is find_cachedpow10: the cached power of ten c, and its
// decimal exponent k, that brings a number with binary exponent exp into
// [expmin, expmax] after multiplication.
func fpCachedPow10(exp int) (diyFp, int) {
	const oneLogTen = 0.30102999566398114
	approx := int(float64(-(exp + fpNPowers)) * oneLogTen)
	idx := (approx - fpFirstPower) / fpStepPowers
	for {
		current := exp + fpPowersTen[idx].exp + 64
		if current < fpExpMin {
			idx++
			continue
		}
		if current > fpExpMax {
			idx--
			continue
		}
		return fpPowersTen[idx], fpFirstPower + idx*fpStepPowers
	}
}

func fpBuild(d float64) diyFp {
	bits := math.Float64bits(d)
	fp := diyFp{frac: bits & fpFracMask, exp: int((bits & fpExpMask) >> 52)}
	if fp.exp != 0 {
		fp.frac += fpHiddenBit
		fp.exp -= fpExpBias
	} else {
		fp.exp = -fpExpBias + 1
	}
	return fp
}

func fpNormalize(fp *diyFp) {
	for fp.frac&fpHiddenBit == 0 {
		fp.frac <<= 1
		fp.exp--
	}
	const shift = 64 - 52 - 1
	fp.frac <<= shift
	fp.exp -= shift
}

func fpNormalizedBoundaries(fp diyFp) (lower, upper diyFp) {
	upper.frac = fp.frac<<1 + 1
	upper.exp = fp.exp - 1
	for upper.frac&(fpHiddenBit<<1) == 0 {
		upper.frac <<= 1
		upper.exp--
	}
	const uShift = 64 - 52 - 2
	upper.frac <<= uShift
	upper.exp -= uShift

	lShift := 1
	if fp.frac == fpHiddenBit {
		lShift = 2
	}
	lower.frac = fp.frac<<lShift - 1
	lower.exp = fp.exp - lShift
	lower.frac <<= uint(lower.exp - upper.exp)
	lower.exp = upper.exp
	return lower, upper
}

func fpMultiply(a, b diyFp) diyFp {
	const loMask = 0x00000000FFFFFFFF
	ahBl := (a.frac >> 32) * (b.frac & loMask)
	alBh := (a.frac & loMask) * (b.frac >> 32)
	alBl := (a.frac & loMask) * (b.frac & loMask)
	ahBh := (a.frac >> 32) * (b.frac >> 32)
	tmp := (ahBl & loMask) + (alBh & loMask) + (alBl >> 32)
	tmp += 1 << 31 // round up
	return diyFp{frac: ahBh + (ahBl >> 32) + (alBh >> 32) + (tmp >> 32), exp: a.exp + b.exp + 64}
}

func fpRoundDigit(digits []byte, delta, rem, kappa, frac uint64) {
	for rem < frac && delta-rem >= kappa && (rem+kappa < frac || frac-rem > rem+kappa-frac) {
		digits[len(digits)-1]--
		rem += kappa
	}
}

// fpGenerateDigits writes the digits into digits and returns their count,
// adding to *k the decimal exponent of the last one.
func fpGenerateDigits(fp, upper, lower diyFp, digits *[18]byte, k *int) int {
	wfrac := upper.frac - fp.frac
	delta := upper.frac - lower.frac

	oneExp := uint(-upper.exp)
	oneFrac := uint64(1) << oneExp

	part1 := upper.frac >> oneExp
	part2 := upper.frac & (oneFrac - 1)

	idx, kappa := 0, 10
	// 1000000000
	for i := 10; kappa > 0; i++ {
		div := fpTens[i]
		digit := part1 / div
		if digit != 0 || idx != 0 {
			digits[idx] = byte(digit) + '0'
			idx++
		}
		part1 -= digit * div
		kappa--

		tmp := part1<<oneExp + part2
		if tmp <= delta {
			*k += kappa
			fpRoundDigit(digits[:idx], delta, tmp, div<<oneExp, wfrac)
			return idx
		}
	}

	// 10
	unit := 18
	for {
		part2 *= 10
		delta *= 10
		kappa--

		digit := part2 >> oneExp
		if digit != 0 || idx != 0 {
			digits[idx] = byte(digit) + '0'
			idx++
		}
		part2 &= oneFrac - 1
		if part2 < delta {
			*k += kappa
			fpRoundDigit(digits[:idx], delta, part2, oneFrac, wfrac*fpTens[unit])
			return idx
		}
		unit--
	}
}

// fpGrisu2 returns the digits of d (positive, finite, non-zero) in digits,
// their count, and the decimal exponent K of the last one.
func fpGrisu2(d float64, digits *[18]byte) (int, int) {
	w := fpBuild(d)
	lower, upper := fpNormalizedBoundaries(w)
	fpNormalize(&w)

	cp, k := fpCachedPow10(upper.exp)
	w = fpMultiply(w, cp)
	upper = fpMultiply(upper, cp)
	lower = fpMultiply(lower, cp)
	lower.frac++
	upper.frac--

	K := -k
	n := fpGenerateDigits(w, upper, lower, digits, &K)
	return n, K
}

// fpEmitDigits is emit_digits: the layout of the digits with exponent K.
func fpEmitDigits(dst, digits []byte, K int, neg bool) []byte {
	ndigits := len(digits)
	exp := fpAbs(K + ndigits - 1)

	// write plain integer
	if K >= 0 && exp < ndigits+7 {
		dst = append(dst, digits...)
		for range K {
			dst = append(dst, '0')
		}
		return dst
	}

	// write decimal w/o scientific notation
	if K < 0 && (K > -7 || exp < 4) {
		offset := ndigits - fpAbs(K)
		if offset <= 0 {
			// fp < 1.0 -> write leading zero
			dst = append(dst, '0', '.')
			for range -offset {
				dst = append(dst, '0')
			}
			return append(dst, digits...)
		}
		// fp > 1.0
		dst = append(dst, digits[:offset]...)
		dst = append(dst, '.')
		return append(dst, digits[offset:]...)
	}

	// write decimal w/ scientific notation
	if neg {
		ndigits = min(ndigits, 17)
	} else {
		ndigits = min(ndigits, 18)
	}
	dst = append(dst, digits[0])
	if ndigits > 1 {
		dst = append(dst, '.')
		dst = append(dst, digits[1:ndigits]...)
	}
	dst = append(dst, 'e')
	if K+ndigits-1 < 0 {
		dst = append(dst, '-')
	} else {
		dst = append(dst, '+')
	}
	cent := 0
	if exp > 99 {
		cent = exp / 100
		dst = append(dst, byte(cent)+'0')
		exp -= cent * 100
	}
	if exp > 9 {
		dec := exp / 10
		dst = append(dst, byte(dec)+'0')
		exp -= dec * 10
	} else if cent != 0 {
		dst = append(dst, '0')
	}
	return append(dst, byte(exp%10)+'0')
}

func fpAbs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// fpconvDtoa is fpconv_dtoa for a finite, non-zero d.
func fpconvDtoa(dst []byte, d float64) []byte {
	neg := math.Float64bits(d)&fpSignMask != 0
	if neg {
		dst = append(dst, '-')
		d = -d
	}
	var digits [18]byte
	n, K := fpGrisu2(d, &digits)
	return fpEmitDigits(dst, digits[:n], K, neg)
}

// ParseStrtod parses b as C's strtod does when it must consume the whole
// of b, as Redis's zslParseRange reads a score bound: leading white space
// is skipped, an empty string is 0, overflow gives ±inf, NaN is refused.
func ParseStrtod(b []byte) (float64, bool) {
	i := 0
	for i < len(b) && numIsSpace(b[i]) {
		i++
	}
	rest := b[i:]
	if len(rest) == 0 {
		// strtod converts nothing and points at the start: fine only when
		// that is the end already.
		return 0, len(b) == 0
	}
	if v, ok := parseFloatInteger(rest); ok { // the common bounds: "0", a timestamp
		return v, true
	}
	n, ok := scanStrtod(rest)
	if !ok {
		return 0, false
	}
	switch n.kind {
	case numNaN:
		return 0, false
	case numInf:
		if n.negative {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	}
	v, _ := convertFloat(rest, n) // overflow is ±inf, as strtod's HUGE_VAL
	return v, true
}
