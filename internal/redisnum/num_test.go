package redisnum

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Unless noted, the expectations in this file were checked against C builds
// of Redis's own functions on x86-64 glibc (string2ll, string2d, string2ld,
// ld2string, and d2string with deps/fpconv from Redis 7.2), and the
// INCRBYFLOAT ones also against a Redis 7.0.15 server.

func TestParseInt(t *testing.T) {
	tests := []struct {
		in     string
		want   int64
		wantOK bool
	}{
		// The cases of test_string2ll in Redis's src/util.c.
		{"+1", 0, false},
		{" 1", 0, false},
		{"1 ", 0, false},
		{"01", 0, false},
		{"-1", -1, true},
		{"0", 0, true},
		{"1", 1, true},
		{"99", 99, true},
		{"-99", -99, true},
		{"-9223372036854775808", math.MinInt64, true},
		{"-9223372036854775809", 0, false},
		{"9223372036854775807", math.MaxInt64, true},
		{"9223372036854775808", 0, false},

		// More edges.
		{"", 0, false},
		{"-", 0, false},
		{"-0", 0, false},
		{"+0", 0, false},
		{"00", 0, false},
		{"-01", 0, false},
		{"1a", 0, false},
		{"a1", 0, false},
		{"0x10", 0, false},
		{"1e3", 0, false},
		{"1.0", 0, false},
		{"1_000", 0, false},
		{"\x001", 0, false},
		{"1\x00", 0, false},
		{"١", 0, false},
		{"--1", 0, false},
		{"18446744073709551615", 0, false},  // fits uint64, not int64
		{"18446744073709551616", 0, false},  // overflows uint64
		{"99999999999999999999", 0, false},  // 20 digits, overflows uint64
		{"123456789012345678901", 0, false}, // 21 bytes: too long
		{"-18446744073709551616", 0, false}, // 21 bytes: too long
		{"-9223372036854775807", -math.MaxInt64, true},
		{"1000000000000000000", 1e18, true},
		{"4611686018427387904", 1 << 62, true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, ok := ParseInt([]byte(tc.in))
			assert.Equal(t, tc.wantOK, ok, "ParseInt(%q) ok", tc.in)
			assert.Equal(t, tc.want, got, "ParseInt(%q)", tc.in)
		})
	}
}

func FuzzParseInt(f *testing.F) {
	for _, seed := range []string{"0", "-1", "+1", "01", "-0", "9223372036854775807", "-9223372036854775808", "9223372036854775808", " 1", ""} {
		f.Add([]byte(seed), int64(0))
	}
	f.Add([]byte("1"), int64(math.MinInt64))
	f.Add([]byte("1"), int64(math.MaxInt64))
	f.Fuzz(func(t *testing.T, b []byte, n int64) {
		// Every canonical form parses back to its value.
		canon := strconv.AppendInt(nil, n, 10)
		if got, ok := ParseInt(canon); !ok || got != n {
			t.Fatalf("ParseInt(%q) = %d, %v", canon, got, ok)
		}
		// Arbitrary input: accepted exactly when it is the canonical form
		// of its value, which is then what strconv reads.
		got, ok := ParseInt(b)
		if ok {
			if s := strconv.FormatInt(got, 10); s != string(b) {
				t.Fatalf("ParseInt(%q) = %d, but %d is written %q", b, got, got, s)
			}
			return
		}
		if v, err := strconv.ParseInt(string(b), 10, 64); err == nil && strconv.FormatInt(v, 10) == string(b) {
			t.Fatalf("ParseInt rejected canonical %q", b)
		}
	})
}

// floatTests are shared by TestParseFloat and TestParseLongDouble: d is
// string2d's verdict, ld string2ld's (as the float64 ParseLongDouble
// returns).
var floatTests = []struct {
	in   string
	d    float64
	dOK  bool
	ld   float64
	ldOK bool
}{
	{"1.5", 1.5, true, 1.5, true},
	{"-1.5", -1.5, true, -1.5, true},
	{"+1.5", 1.5, true, 1.5, true},
	{".5", 0.5, true, 0.5, true},
	{"5.", 5, true, 5, true},
	{"1e10", 1e+10, true, 1e+10, true},
	{"1E+10", 1e+10, true, 1e+10, true},
	{"1e-10", 1e-10, true, 1e-10, true},
	{"0.1e-3", 0.0001, true, 0.0001, true},
	{"1e+0", 1, true, 1, true},
	{"-0", math.Copysign(0, -1), true, math.Copysign(0, -1), true},
	{"0", 0, true, 0, true},
	{"00", 0, true, 0, true},
	{"007", 7, true, 7, true},
	{"0e999999", 0, true, 0, true},
	{"123456789012345678901234567890", 1.2345678901234568e+29, true, 1.2345678901234568e+29, true},

	// Infinity is a valid double and a valid long double; NaN is neither.
	{"inf", math.Inf(1), true, math.Inf(1), true},
	{"-inf", math.Inf(-1), true, math.Inf(-1), true},
	{"+inf", math.Inf(1), true, math.Inf(1), true},
	{"INF", math.Inf(1), true, math.Inf(1), true},
	{"Infinity", math.Inf(1), true, math.Inf(1), true},
	{"-INFINITY", math.Inf(-1), true, math.Inf(-1), true},
	{"infinit", 0, false, 0, false},
	{"infinityx", 0, false, 0, false},
	{"in", 0, false, 0, false},
	{"nan", 0, false, 0, false},
	{"NaN", 0, false, 0, false},
	{"-nan", 0, false, 0, false},
	{"nan(123)", 0, false, 0, false},
	{"nan(", 0, false, 0, false},

	// Hex floats, as strtod reads them.
	{"0x10", 16, true, 16, true},
	{"0X1.8p3", 12, true, 12, true},
	{"0x.8", 0.5, true, 0.5, true},
	{"0x8.", 8, true, 8, true},
	{"-0x1P-2", -0.25, true, -0.25, true},
	{"0x1p-1074", 5e-324, true, 5e-324, true},
	{"0x", 0, false, 0, false},
	{"0x.", 0, false, 0, false},
	{"0xg", 0, false, 0, false},
	{"0x1p", 0, false, 0, false},
	{"0x1p+", 0, false, 0, false},
	{"0x1e", 30, true, 30, true}, // 'e' is a hex digit here
	{"0x_1p0", 0, false, 0, false},

	// Incomplete or extra syntax: strtod stops early, so Redis rejects.
	{"1e", 0, false, 0, false},
	{"1e+", 0, false, 0, false},
	{"1e-", 0, false, 0, false},
	{".", 0, false, 0, false},
	{"+", 0, false, 0, false},
	{"-", 0, false, 0, false},
	{"", 0, false, 0, false},
	{"1.2.3", 0, false, 0, false},
	{"1..2", 0, false, 0, false},
	{"--1", 0, false, 0, false},
	{"+-1", 0, false, 0, false},
	{"1_000", 0, false, 0, false},
	{"١", 0, false, 0, false},
	{"1,5", 0, false, 0, false},

	// Spaces: a leading one is refused outright, a trailing one is left
	// over by strtod (incr.tcl "INCRBYFLOAT fails against key with spaces").
	{" 1", 0, false, 0, false},
	{"1 ", 0, false, 0, false},
	{" 1 ", 0, false, 0, false},
	{"    11", 0, false, 0, false},
	{"11    ", 0, false, 0, false},
	{"\t1", 0, false, 0, false},
	{"\v1", 0, false, 0, false},
	// An embedded NUL ends the C string (incr.tcl "string to double with
	// null terminator").
	{"1\x002", 0, false, 0, false},
	{"1\x00", 0, false, 0, false},

	// Range: a double overflows and underflows where a long double does not.
	{"1e309", 0, false, math.Inf(1), true},
	{"-1e309", 0, false, math.Inf(-1), true},
	{"1e-400", 0, false, 0, true},
	{"-1e-400", 0, false, math.Copysign(0, -1), true},
	{"1e-324", 0, false, 0, true},
	{"3e-324", 5e-324, true, 5e-324, true},
	{"4.9406564584124654e-324", 5e-324, true, 5e-324, true},
	{"2.4703282292062328e-324", 5e-324, true, 5e-324, true},
	{"2.4703282292062327e-324", 0, false, 0, true},
	{"0x1p-1075", 0, false, 0, true}, // exactly half the smallest subnormal: ties to zero
	{"1.7976931348623157e308", math.MaxFloat64, true, math.MaxFloat64, true},
	{"1.7976931348623158e308", math.MaxFloat64, true, math.MaxFloat64, true},
	{"1.7976931348623159e308", 0, false, math.Inf(1), true},
	{"0x1.fffffffffffff8p1023", 0, false, math.Inf(1), true},
	// A long double holds this just below 2^1024; rounded directly to a
	// float64 it is MaxFloat64.
	{"0x1.fffffffffffff7ffp1023", math.MaxFloat64, true, math.MaxFloat64, true},
	{"1e999999999999999999", 0, false, 0, false},
	{"-1e999999999999999999", 0, false, 0, false},
	{"1e-999999999999999999", 0, false, 0, false},

	// The long double's own limits: LDBL_MAX is about 1.18973e4932, and
	// strtold rounds to zero at or below 2^-16446 (about 1.8225e-4951).
	{"1e4932", 0, false, math.Inf(1), true},
	{"1.18973149535723176502e4932", 0, false, math.Inf(1), true},
	{"1.18973149535723176508e4932", 0, false, 0, false},
	{"1.2e4932", 0, false, 0, false},
	{"1e5000", 0, false, 0, false},
	{"0x1.fffffffffffffffep16383", 0, false, math.Inf(1), true},
	{"0x1.ffffffffffffffffp16383", 0, false, 0, false}, // rounds up to 2^16384
	{"0x1p16384", 0, false, 0, false},
	{"3.7e-4951", 0, false, 0, true},
	{"3.6e-4951", 0, false, 0, true},
	{"1.9e-4951", 0, false, 0, true},
	{"1.8e-4951", 0, false, 0, false},
	{"1e-4951", 0, false, 0, false},
	{"1e-5000", 0, false, 0, false},
	{"0x1p-16445", 0, false, 0, true},
	{"0x1.0000000000000002p-16446", 0, false, 0, true},
	{"0x1p-16446", 0, false, 0, false},
}

func TestParseFloat(t *testing.T) {
	for _, tc := range floatTests {
		t.Run(tc.in, func(t *testing.T) {
			got, ok := ParseFloat([]byte(tc.in))
			require.Equal(t, tc.dOK, ok, "ParseFloat(%q) ok", tc.in)
			if ok {
				assert.Equal(t, math.Float64bits(tc.d), math.Float64bits(got), "ParseFloat(%q) = %v, want %v", tc.in, got, tc.d)
			}
		})
	}
}

func TestParseLongDouble(t *testing.T) {
	for _, tc := range floatTests {
		t.Run(tc.in, func(t *testing.T) {
			got, ok := ParseLongDouble([]byte(tc.in))
			require.Equal(t, tc.ldOK, ok, "ParseLongDouble(%q) ok", tc.in)
			if ok {
				assert.Equal(t, math.Float64bits(tc.ld), math.Float64bits(got), "ParseLongDouble(%q) = %v, want %v", tc.in, got, tc.ld)
			}
		})
	}
}

func TestParseLongDoubleLength(t *testing.T) {
	// MAX_LONG_DOUBLE_CHARS is 5*1024: 5119 bytes parse, 5120 do not.
	long := "1." + strings.Repeat("0", 5117)
	require.Len(t, long, 5119)
	v, ok := ParseLongDouble([]byte(long))
	assert.True(t, ok)
	assert.Equal(t, 1.0, v)
	_, ok = ParseLongDouble([]byte(long + "0"))
	assert.False(t, ok)
	// string2d has no such limit.
	v, ok = ParseFloat([]byte(long + "0"))
	assert.True(t, ok)
	assert.Equal(t, 1.0, v)
}

// TestParseHugeExponentsAreCheap guards against exponents that a naive
// conversion would turn into enormous powers of ten.
func TestParseHugeExponentsAreCheap(t *testing.T) {
	for _, in := range []string{"1e-7000000", "1e7000000", "0x1p-99999999999", "0x1p99999999999", "1e-99999999999999999999999"} {
		allocs := testing.AllocsPerRun(10, func() {
			_, _ = ParseLongDouble([]byte(in))
			_, _, _ = AppendLongDoubleSum(nil, []byte("1"), []byte(in))
		})
		assert.Less(t, allocs, 50.0, in)
		_, ok := ParseLongDouble([]byte(in))
		assert.False(t, ok, in)
	}
}

// The integer fast path gives exactly what the general (strtod) path gives,
// sign of zero included, around every power of two where float64 starts
// rounding and for random integers of every length.
func TestParseFloatIntegerFastPath(t *testing.T) {
	in := []string{"0", "-0", "+0", "007", "-007", "1", "-1", "1795307408539667", "999999999999999999", "-999999999999999999"}
	for p := 50; p <= 59; p++ {
		for d := int64(-3); d <= 3; d++ {
			in = append(in, strconv.FormatInt(int64(1)<<p+d, 10), strconv.FormatInt(-(int64(1)<<p+d), 10))
		}
	}
	r := rand.New(rand.NewPCG(7, 8))
	for i := 0; i < 20000; i++ {
		in = append(in, strconv.FormatUint(r.Uint64()%uint64(math.Pow10(1+r.IntN(18))), 10))
	}
	for _, s := range in {
		f, ok := parseFloatInteger([]byte(s))
		require.True(t, ok, s)
		g, gok := parseFloatGeneral([]byte(s))
		require.True(t, gok, s)
		require.Equal(t, math.Float64bits(g), math.Float64bits(f), s)
	}
	for _, s := range []string{"", "-", "+", "1.5", "1e3", " 1", "0x10", "1234567890123456789", "12a"} {
		_, ok := parseFloatInteger([]byte(s))
		require.False(t, ok, s)
	}
}

func FuzzParseFloat(f *testing.F) {
	for _, tc := range floatTests {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d, dOK := ParseFloat(b)
		if g, gOK := parseFloatGeneral(b); gOK != dOK || dOK && math.Float64bits(g) != math.Float64bits(d) {
			t.Fatalf("ParseFloat(%q) = %v, %v; without the fast path %v, %v", b, d, dOK, g, gOK)
		}
		ld, ldOK := ParseLongDouble(b)
		if dOK {
			if math.IsNaN(d) {
				t.Fatalf("ParseFloat(%q) returned NaN", b)
			}
			// string2ld accepts everything string2d does (bar the length
			// limit), with the same float64.
			if len(b) < maxLongDoubleChars && (!ldOK || math.Float64bits(ld) != math.Float64bits(d)) {
				t.Fatalf("ParseFloat(%q) = %v but ParseLongDouble = %v, %v", b, d, ld, ldOK)
			}
			// The formatted value reads back.
			if back, ok := ParseFloat(AppendFloat(nil, d)); !ok || math.Float64bits(back) != math.Float64bits(d) {
				t.Fatalf("AppendFloat(%v) = %q reads back as %v, %v", d, AppendFloat(nil, d), back, ok)
			}
		}
		if ldOK && math.IsNaN(ld) {
			t.Fatalf("ParseLongDouble(%q) returned NaN", b)
		}
		// Plain decimals that strconv reads without error read the same.
		if dOK && !math.IsInf(d, 0) && !strings.ContainsAny(string(b), "xXnN_") {
			if v, err := strconv.ParseFloat(string(b), 64); err != nil || v != d {
				t.Fatalf("ParseFloat(%q) = %v, strconv %v, %v", b, d, v, err)
			}
		}
	})
}

func TestAppendFloat(t *testing.T) {
	half := 0.1
	tests := []struct {
		name string
		in   float64
		want string
	}{
		{"nan", math.NaN(), "nan"},
		{"inf", math.Inf(1), "inf"},
		{"-inf", math.Inf(-1), "-inf"},
		{"zero", 0, "0"},
		{"negative zero", math.Copysign(0, -1), "-0"},

		// Integral values up to 2^62 print as integers (double2ll).
		{"1", 1, "1"},
		{"-7", -7, "-7"},
		{"1e15", 1e15, "1000000000000000"},
		{"1e16", 1e16, "10000000000000000"},
		{"1e18", 1e18, "1000000000000000000"},
		{"2^53+2", 1<<53 + 2, "9007199254740994"},
		{"1 << 62", 1 << 62, "4611686018427387904"},
		{"-(1 << 62)", -(1 << 62), "-4611686018427387904"},

		// Everything else is fpconv: digits from Grisu2, laid out by
		// emit_digits.
		{"0.1", 0.1, "0.1"},
		{"0.1 + 0.2 at run time", half + 0.2, "0.30000000000000004"},
		{"1.5", 1.5, "1.5"},
		{"-1.5", -1.5, "-1.5"},
		{"3.14159", 3.14159, "3.14159"},
		{"1.0 / 3", 1.0 / 3, "0.3333333333333333"},
		{"2.0 / 3", 2.0 / 3, "0.6666666666666666"},
		{"100.5", 100.5, "100.5"},
		{"-0.25", -0.25, "-0.25"},
		{"4.35", 4.35, "4.35"},
		{"123.456", 123.456, "123.456"},
		{"123456.7", 123456.7, "123456.7"},
		{"1234567.125", 1234567.125, "1234567.125"},
		{"123456789.12345", 123456789.12345, "123456789.12345"},
		{"1795307408539667.5", 1795307408539667.5, "1795307408539667.5"},
		{"0.001", 0.001, "0.001"},
		{"0.000001", 0.000001, "0.000001"},
		{"2.5e-5", 2.5e-5, "0.000025"},
		{"-2.5e-5", -2.5e-5, "-0.000025"},
		{"1234.5678901", 1234.5678901, "1234.5678901"}, // K=-7 but exp=3 < 4
		// Scientific: K <= -7 and exp >= 4, or K >= 0 and exp >= n+7.
		{"1e-7", 1e-7, "1e-7"},
		{"1.5e-7", 1.5e-7, "1.5e-7"},
		{"-1.5e-7", -1.5e-7, "-1.5e-7"},
		{"1.2345678e-5", 1.2345678e-5, "1.2345678e-5"},
		{"0.00012345", 0.00012345, "1.2345e-4"},
		{"1e-10", 1e-10, "1e-10"},
		{"12345.678901234", 12345.678901234, "1.2345678901234e+4"},
		{"1e19", 1e19, "1e+19"},
		{"-1e19", -1e19, "-1e+19"},
		{"1e20", 1e20, "1e+20"},
		{"1e22", 1e22, "1e+22"},
		{"1e100", 1e100, "1e+100"},
		{"1.5e300", 1.5e300, "1.5e+300"},
		{"1e-100", 1e-100, "1e-100"},
		{"MaxFloat64", math.MaxFloat64, "1.7976931348623157e+308"},
		{"-MaxFloat64", -math.MaxFloat64, "-1.7976931348623157e+308"},
		{"smallest normal", 0x1p-1022, "2.2250738585072014e-308"},
		{"smallest subnormal", math.SmallestNonzeroFloat64, "5e-324"},
		// Integer layout past 2^62: digits and K zeros while exp < n+7.
		{"2^62 + 1024", 1<<62 + 1024, "4611686018427389000"},
		{"1e23", 1e23, "99999999999999990000000"},

		// Grisu2 is not always shortest, nor closest; Redis prints what it
		// produces, and so does AppendFloat (strconv would print the
		// shortest form given in each comment).
		{"grisu last digit 1", math.Float64frombits(0xc5adb9f7d13cd1e3), "-4.5999434228605136e+27"}, // -4.5999434228605135e+27
		{"grisu last digit 2", math.Float64frombits(0x43172d7adc3ceb67), "1630982542146265.7"},      // 1.6309825421462658e+15
		{"grisu last digit 3", math.Float64frombits(0xc313ff62206f4bef), "-1407205368386299.7"},     // -1.4072053683862998e+15
		{"grisu longer 1", math.Float64frombits(0x4403a6db1e672c06), "45313921807393276000"},        // 4.531392180739328e+19
		{"grisu longer 2", math.Float64frombits(0x3d2c68378636ebca), "5.0461141457717213e-14"},      // 5.046114145771721e-14
		{"grisu longer 3", math.Float64frombits(0xbc251602dff6cfc3), "-5.7153667017398255e-19"},     // -5.715366701739825e-19
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, string(AppendFloat(nil, tc.in)))
			assert.Equal(t, "x:"+tc.want, string(AppendFloat([]byte("x:"), tc.in)), "appends")
			if !math.IsNaN(tc.in) {
				back, ok := ParseFloat([]byte(tc.want))
				assert.True(t, ok)
				assert.Equal(t, math.Float64bits(tc.in), math.Float64bits(back), "reads back")
			}
		})
	}
}

func FuzzAppendFloat(f *testing.F) {
	for _, v := range []float64{0, 1, -1.5, 0.1, 1e-7, 1e23, math.MaxFloat64, math.SmallestNonzeroFloat64, 1 << 62, 12345.678901234} {
		f.Add(math.Float64bits(v))
	}
	f.Fuzz(func(t *testing.T, bits uint64) {
		v := math.Float64frombits(bits)
		out := AppendFloat(nil, v)
		if len(out) > 24 {
			t.Fatalf("AppendFloat(%v) = %q, longer than fpconv's 24 bytes", v, out)
		}
		if math.IsNaN(v) {
			if string(out) != "nan" {
				t.Fatalf("AppendFloat(NaN) = %q", out)
			}
			return
		}
		back, ok := ParseFloat(out)
		if !ok || math.Float64bits(back) != bits {
			t.Fatalf("AppendFloat(%v) = %q reads back as %v, %v", v, out, back, ok)
		}
		// Grisu2 never needs more than 17 significant digits (it is not
		// always shortest: 1e23 comes out as 99999999999999990000000).
		// Integers up to 2^62 are printed whole instead.
		integral := math.Abs(v) <= 1<<62 && v == math.Trunc(v)
		if n := numSignificant(string(out)); n > 17 && !integral {
			t.Fatalf("AppendFloat(%v) = %q has %d significant digits", v, out, n)
		}
	})
}

// numSignificant counts the significant digits of a formatted number.
func numSignificant(s string) int {
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimLeft(strings.ReplaceAll(strings.TrimPrefix(s, "-"), ".", ""), "0")
	return len(strings.TrimRight(s, "0"))
}

func TestAppendLongDouble(t *testing.T) {
	one := 1.0
	tests := []struct {
		name string
		in   float64
		want string
	}{
		{"nan", math.NaN(), "nan"},
		{"inf", math.Inf(1), "inf"},
		{"-inf", math.Inf(-1), "-inf"},
		{"zero", 0, "0"},
		{"negative zero", math.Copysign(0, -1), "0"},
		{"10.5", 10.5, "10.5"},
		{"5.0e3", 5.0e3, "5000"},
		{"3.0e-5", 3.0e-5, "0.00003"},
		{"1.25", 1.25, "1.25"},
		{"-0.1", -0.1, "-0.1"},
		{"17179869185.5", 17179869185.5, "17179869185.5"},
		{"34359738368", 34359738368, "34359738368"},
		{"1e20", 1e20, "100000000000000000000"},
		// Integers below 2^64 print exactly, as a long double holds them.
		{"2^53+2", 1<<53 + 2, "9007199254740994"},
		{"2^60", 1 << 60, "1152921504606846976"},
		{"-2^63", -(1 << 63), "-9223372036854775808"},
		{"2^64-2048", 1<<64 - 2048, "18446744073709549568"},
		{"2^64", 1 << 64, "18446744073709552000"},
		{"1e30", 1e30, "1000000000000000000000000000000"}, // Redis: 1000000000000000000024696061952
		{"2^-18 rounds half to even", 0x1p-18, "0.00000381469726562"},
		// Digits past the 17th place are rounded away, as "%.17Lf" does.
		{"-1e-20 is zero, not -0", -1e-20, "0"},
		{"5e-18", 5e-18, "0.00000000000000001"},
		{"4e-18", 4e-18, "0"},
		{"1/41", 1.0 / 41, "0.02439024390243903"},
		{"1.2345678901234567e-5", 1.2345678901234567e-5, "0.00001234567890123"},
		{"max", math.MaxFloat64, "17976931348623157" + strings.Repeat("0", 292)},
		// Documented differences from Redis's long double: the float64
		// rounding error shows ("0.3" and "-0.1" in Redis).
		{"0.1+0.2 at run time", one/10 + 0.2, "0.30000000000000004"},
		{"1-1.1 at run time", one - 1.1, "-0.10000000000000009"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, string(AppendLongDouble(nil, tc.in)))
			assert.Equal(t, "x:"+tc.want, string(AppendLongDouble([]byte("x:"), tc.in)), "appends")
		})
	}
	assert.Len(t, AppendLongDouble(nil, -math.MaxFloat64), 310, "the longest output")
}

// incrByFloat is INCRBYFLOAT's arithmetic through the float64 API, the way
// a caller uses ParseLongDouble and AppendLongDouble.
func incrByFloat(t *testing.T, cur, incr string) string {
	t.Helper()
	v, ok := ParseLongDouble([]byte(cur))
	if !ok {
		return "ERR value is not a valid float"
	}
	by, ok := ParseLongDouble([]byte(incr))
	if !ok {
		return "ERR value is not a valid float"
	}
	sum := v + by
	if math.IsNaN(sum) || math.IsInf(sum, 0) {
		return "ERR increment would produce NaN or Infinity"
	}
	return string(AppendLongDouble(nil, sum))
}

// incrByFloatExact is the same through AppendLongDoubleSum.
func incrByFloatExact(cur, incr string) string {
	var value []byte
	if cur != "" {
		value = []byte(cur)
	}
	out, valid, finite := AppendLongDoubleSum(nil, value, []byte(incr))
	switch {
	case !valid:
		return "ERR value is not a valid float"
	case !finite:
		return "ERR increment would produce NaN or Infinity"
	}
	return string(out)
}

// roundFloat is incr.tcl's roundFloat: format "%.10g".
func roundFloat(s string) string {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return s
	}
	return strconv.FormatFloat(v, 'g', 10, 64)
}

// TestIncrTcl replays tests/unit/type/incr.tcl's INCRBYFLOAT tests through
// both the float64 API and AppendLongDoubleSum. A missing key is "".
func TestIncrTcl(t *testing.T) {
	tests := []struct {
		name  string
		start string
		steps []string // increments
		want  []string // replies, compared after roundFloat when round is set
		round bool
	}{
		{"against non existing key", "", []string{"1", "0.25"}, []string{"1", "1.25"}, true},
		{"against key originally set with SET", "1.5", []string{"1.5"}, []string{"3"}, true},
		{"over 32bit value", "17179869184", []string{"1.5"}, []string{"17179869185.5"}, false},
		{"over 32bit value with over 32bit increment", "17179869184", []string{"17179869184"}, []string{"34359738368"}, false},
		{"fails against key with spaces (left)", "    11", []string{"1.0"}, []string{"ERR value is not a valid float"}, false},
		{"fails against key with spaces (right)", "11    ", []string{"1.0"}, []string{"ERR value is not a valid float"}, false},
		{"fails against key with spaces (both)", " 11 ", []string{"1.0"}, []string{"ERR value is not a valid float"}, false},
		{"does not allow NaN or Infinity", "0", []string{"+inf"}, []string{"ERR increment would produce NaN or Infinity"}, false},
		{"decrement", "1", []string{"-1.1"}, []string{"-0.1"}, true},
		{"string to double with null terminator", "1\x002", []string{"1"}, []string{"ERR value is not a valid float"}, false},
		// Tcl prints 1/41 as 0.024390243902439025.
		{"No negative zero", "", []string{"0.024390243902439025", "-0.024390243902439025"}, []string{"0.02439024390243902", "0"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for api, incr := range map[string]func(cur, by string) string{
				"float64": func(cur, by string) string {
					if cur == "" {
						cur = "0"
					}
					return incrByFloat(t, cur, by)
				},
				"exact": incrByFloatExact,
			} {
				cur := tc.start
				for i, by := range tc.steps {
					got := incr(cur, by)
					want := tc.want[i]
					if api == "float64" && tc.name == "No negative zero" && i == 0 {
						want = "0.02439024390243903" // float64 rounding; Redis stores ...902
					}
					if tc.round {
						assert.Equal(t, want, roundFloat(got), "%s step %d", api, i)
					} else {
						assert.Equal(t, want, got, "%s step %d", api, i)
					}
					if strings.HasPrefix(got, "ERR") {
						break
					}
					cur = got
				}
			}
		})
	}
}

// TestAppendLongDoubleSum's expectations were read from a Redis 7.0.15
// server (SET k a; INCRBYFLOAT k b), whose INCRBYFLOAT is Redis 7.2's.
func TestAppendLongDoubleSum(t *testing.T) {
	// 1e4932 as a long double prints 4933 digits; see below.
	const ld4932 = "1e4932"
	tests := []struct {
		name       string
		value, inc string
		want       string
	}{
		{"missing key", "", "10.5", "10.5"},
		{"10.5 + 0.1", "10.5", "0.1", "10.6"},
		{"10.6 - 5", "10.6", "-5", "5.6"},
		{"5.0e3 + 2.0e2", "5.0e3", "2.0e2", "5200"},
		{"0.1 + 0.2", "0.1", "0.2", "0.3"},
		{"1 - 1.1", "1", "-1.1", "-0.1"},
		{"long double noise shows", "-697.55", "99971", "99273.45000000000000284"},
		{"many digits", "0", "123456789.123456789", "123456789.12345678899873747"},
		{"1e30", "0", "1e30", "1000000000000000000024696061952"},
		{"1 + 1e-17", "1", "1e-17", "1.00000000000000001"},
		{"5e-18 rounds to zero", "0", "5e-18", "0"},
		{"2^-18 rounds half to even", "0", "0x1p-18", "0.00000381469726562"},
		{"hex", "0", "0x10", "16"},
		{"negative zero", "0", "-0", "0"},
		{"tiny", "0", "1e-400", "0"},
		{"tiny long double", "0", "3.7e-4951", "0"},
		{"beyond double sum", "1e308", "1e308", "199999999999999999993371759311691291321120199694831134415594095989843469737676123744200253843777078640893494450108026446304269499187921167194841628860392837535918200039206381557326219209014213335878306791577877829121087126122536729803237260434173178506889763247582601711514636284849020905456510092687857156096"},
		{"beyond long double", "0", "1.2e4932", "ERR value is not a valid float"},
		{"below long double", "0", "1e-5000", "ERR value is not a valid float"},
		{"overflow", "1e5000", "0", "ERR value is not a valid float"},
		{"infinity", "0", "inf", "ERR increment would produce NaN or Infinity"},
		{"inf - inf", "inf", "-inf", "ERR increment would produce NaN or Infinity"},
		{"sum overflows", "1.18973149535723176502e4932", "1.18973149535723176502e4932", "ERR increment would produce NaN or Infinity"},
		{"nan", "0", "nan", "ERR value is not a valid float"},
		{"value checked first", "abc", "nan", "ERR value is not a valid float"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, incrByFloatExact(tc.value, tc.inc))
		})
	}

	// Only a long double holds 1e4932: Redis prints all 4933 digits of the
	// nearest one.
	big := incrByFloatExact("0", ld4932)
	assert.Len(t, big, 4933)
	assert.True(t, strings.HasPrefix(big, "100000000000000000000601894938796389132383777425453311477378"), big[:60])
	assert.True(t, strings.HasSuffix(big, "0876379371163141086538418113791886622720"), big[len(big)-40:])

	out, valid, finite := AppendLongDoubleSum([]byte("x:"), nil, []byte("2.5"))
	assert.Equal(t, "x:2.5", string(out))
	assert.True(t, valid)
	assert.True(t, finite)
	out, valid, _ = AppendLongDoubleSum([]byte("x:"), []byte{}, []byte("2.5"))
	assert.Equal(t, "x:", string(out), "dst unchanged")
	assert.False(t, valid, "an empty string is not a number")
}

func FuzzAppendLongDoubleSum(f *testing.F) {
	f.Add([]byte("10.5"), []byte("0.1"))
	f.Add([]byte("-697.55"), []byte("99971"))
	f.Add([]byte("1e308"), []byte("1e308"))
	f.Add([]byte("inf"), []byte("-inf"))
	f.Add([]byte("0x1p-16445"), []byte("-0x1p-16445"))
	f.Fuzz(func(t *testing.T, value, incr []byte) {
		out, valid, finite := AppendLongDoubleSum(nil, value, incr)
		x, xOK := ParseLongDouble(value)
		if value == nil {
			x, xOK = 0, true // a missing key
		}
		y, yOK := ParseLongDouble(incr)
		if valid != (xOK && yOK) {
			t.Fatalf("AppendLongDoubleSum(%q, %q) valid %v, ParseLongDouble %v %v", value, incr, valid, xOK, yOK)
		}
		if !valid || !finite {
			if len(out) != 0 {
				t.Fatalf("AppendLongDoubleSum(%q, %q) wrote %q on failure", value, incr, out)
			}
			return
		}
		if isInfLiteral(value) || isInfLiteral(incr) {
			t.Fatalf("AppendLongDoubleSum(%q, %q) = %q, finite with an infinite operand", value, incr, out)
		}
		sum := x + y
		if math.IsInf(x, 0) || math.IsInf(y, 0) || math.IsInf(sum, 0) || math.IsNaN(sum) {
			return // only a long double holds it
		}
		// The long double result agrees with the float64 sum to float64
		// precision, within the 17 places printed.
		got, err := strconv.ParseFloat(string(out), 64)
		if err != nil {
			t.Fatalf("AppendLongDoubleSum(%q, %q) = %q: %v", value, incr, out, err)
		}
		if diff := math.Abs(got - sum); diff > 1e-17 && diff > 1e-15*math.Abs(sum) {
			t.Fatalf("AppendLongDoubleSum(%q, %q) = %q, float64 sum %v", value, incr, out, sum)
		}
	})
}

// isInfLiteral reports whether b spells infinity.
func isInfLiteral(b []byte) bool {
	n, ok := scanStrtod(b)
	return ok && n.kind == numInf
}

func TestNumAllocs(t *testing.T) {
	dst := make([]byte, 0, 512)
	ints := [][]byte{[]byte("0"), []byte("-9223372036854775808"), []byte("12345"), []byte("x")}
	floats := [][]byte{[]byte("1.5"), []byte("-0.25e-3"), []byte("inf"), []byte("0x1.8p3"), []byte("0x10"), []byte("1e309"), []byte("nan")}
	values := []float64{0, 1.5, 1e-7, 12345.678901234, 1 << 62, math.MaxFloat64, math.Inf(-1), 1.0 / 3}
	allocs := testing.AllocsPerRun(100, func() {
		for _, b := range ints {
			_, _ = ParseInt(b)
		}
		for _, b := range floats {
			_, _ = ParseFloat(b)
			_, _ = ParseLongDouble(b)
		}
		for _, v := range values {
			dst = AppendFloat(dst[:0], v)
			dst = AppendLongDouble(dst[:0], v)
		}
	})
	assert.Zero(t, allocs)
}

var (
	numIntSink   int64
	numFloatSink float64
	numBytesSink []byte
)

func BenchmarkParseInt(b *testing.B) {
	for _, in := range []string{"7", "1700000000000", "-9223372036854775808"} {
		arg := []byte(in)
		b.Run(in, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				numIntSink, _ = ParseInt(arg)
			}
		})
	}
}

func BenchmarkParseFloat(b *testing.B) {
	for _, in := range []string{"1.5", "1700000000.123456", "0x1.8p3"} {
		arg := []byte(in)
		b.Run(in, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				numFloatSink, _ = ParseFloat(arg)
			}
		})
	}
}

func BenchmarkAppendFloat(b *testing.B) {
	dst := make([]byte, 0, 32)
	for _, v := range []float64{42, 1.5, 0.1 / 3, 12345.678901234, 1e-7} {
		b.Run(strconv.FormatFloat(v, 'g', -1, 64), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				dst = AppendFloat(dst[:0], v)
			}
			numBytesSink = dst
		})
	}
}

func BenchmarkAppendLongDouble(b *testing.B) {
	dst := make([]byte, 0, 320)
	for _, v := range []float64{10.6, 1.0 / 41} {
		b.Run(strconv.FormatFloat(v, 'g', -1, 64), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				dst = AppendLongDouble(dst[:0], v)
			}
			numBytesSink = dst
		})
	}
}

func BenchmarkAppendLongDoubleSum(b *testing.B) {
	dst := make([]byte, 0, 64)
	value, incr := []byte("17179869184.25"), []byte("0.1")
	b.ReportAllocs()
	for b.Loop() {
		dst, _, _ = AppendLongDoubleSum(dst[:0], value, incr)
	}
	numBytesSink = dst
}
