package resp

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDigits8 checks the SWAR conversion against strconv. The two 4-digit
// halves of x go through separate lanes that do not interact, so every
// value of each half is checked (against several values of the other),
// plus every x below 1e6 and random ones.
func TestDigits8(t *testing.T) {
	check := func(x uint32) {
		var got [8]byte
		binary.LittleEndian.PutUint64(got[:], digits8(x)|0x30303030_30303030)
		if want := fmt.Sprintf("%08d", x); string(got[:]) != want {
			t.Fatalf("digits8(%d) = %q, want %s", x, got[:], want)
		}
	}
	for x := uint32(0); x < 1e6; x++ {
		check(x)
	}
	for a := uint32(0); a < 1e4; a++ {
		for _, b := range []uint32{a, 9999 - a, a * 7919 % 1e4, 0, 9999} {
			check(a*1e4 + b)
			check(b*1e4 + a)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 1e6; i++ {
		check(r.Uint32N(1e8))
	}
}

func TestAppendIntMatchesStrconv(t *testing.T) {
	cases := []int64{0, 1, -1, 9, 10, 99, 100, 9999_9999, 1_0000_0000, -1_0000_0000,
		9999_9999_9999_9999, 1_0000_0000_0000_0000, 1795307408539667000, 1795307408539,
		math.MaxInt64, math.MinInt64, math.MinInt64 + 1}
	for p := int64(1); p > 0 && p < math.MaxInt64/10; p *= 10 {
		cases = append(cases, p, p-1, p+1, -p, -(p - 1))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 100000; i++ {
		cases = append(cases, int64(r.Uint64()), int64(r.Uint64()>>r.IntN(64)))
	}
	for _, n := range cases {
		want := strconv.FormatInt(n, 10)
		if got := string(appendInt([]byte("x"), n)); got != "x"+want {
			t.Fatalf("appendInt(%d) = %q, want x%s", n, got, want)
		}
		wantBulk := "$" + strconv.Itoa(len(want)) + "\r\n" + want + "\r\n"
		if got := string(appendBulkInt(nil, n)); got != wantBulk {
			t.Fatalf("appendBulkInt(%d) = %q, want %q", n, got, wantBulk)
		}
	}
	// Every uint64 magnitude, including the top chunk's largest.
	for _, u := range []uint64{math.MaxUint64, math.MaxUint64 - 1, 1e19, 1e19 - 1} {
		var buf [24]byte
		if got, want := string(buf[formatUint(&buf, u):]), strconv.FormatUint(u, 10); got != want {
			t.Fatalf("formatUint(%d) = %q", u, got)
		}
	}
}

func FuzzAppendInt(f *testing.F) {
	f.Add(int64(0))
	f.Add(int64(1795307408539667000))
	f.Add(int64(math.MinInt64))
	f.Fuzz(func(t *testing.T, n int64) {
		if got, want := string(appendInt(nil, n)), strconv.FormatInt(n, 10); got != want {
			t.Fatalf("appendInt(%d) = %q, want %q", n, got, want)
		}
	})
}

// BenchmarkAppendBulkInt formats a CL.THROTTLE record's two numbers.
func BenchmarkAppendBulkInt(b *testing.B) {
	buf := make([]byte, 0, 64)
	for i := 0; i < b.N; i++ {
		buf = appendBulkInt(buf[:0], 1795307408539667000+int64(i))
		buf = appendBulkInt(buf, 1795307408539+int64(i))
	}
}

// BenchmarkAppendBulkIntStrconv is the same with strconv, for comparison.
func BenchmarkAppendBulkIntStrconv(b *testing.B) {
	buf := make([]byte, 0, 64)
	var num [20]byte
	for i := 0; i < b.N; i++ {
		buf = appendBulk(buf[:0], strconv.AppendInt(num[:0], 1795307408539667000+int64(i), 10))
		buf = appendBulk(buf, strconv.AppendInt(num[:0], 1795307408539+int64(i), 10))
	}
}

// parseCellInt accepts exactly what strconv.ParseInt(s, 10, 64) accepts
// (redis-cell's Rust i64::from_str rules), at any length, with the same
// value.
func FuzzParseCellInt(f *testing.F) {
	for _, s := range []string{"0", "+0", "-0", "007", "+15", "-15", "", "+", "-", " 1", "1 ", "1_0", "0x10",
		"9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
		"+9223372036854775807", "18446744073709551616", "99999999999999999999", "00000000000000000001",
		"000000000000000000005", "+00000000000000000005", "-0000000000000000000000009223372036854775808", "0000000000000000000000009223372036854775808"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseCellInt([]byte(s))
		want, err := strconv.ParseInt(s, 10, 64)
		wantOK := err == nil
		if ok != wantOK || ok && got != want {
			t.Fatalf("parseCellInt(%q) = %d, %v; strconv: %d, %v", s, got, ok, want, err)
		}
	})
}

func TestWriteIntMatchesRedcon(t *testing.T) {
	for _, n := range []int64{0, 1, 9, 10, -1, -9, 42, 1 << 40, math.MaxInt64, math.MinInt64} {
		c := &Conn{}
		c.WriteInt(n)
		require.Equal(t, ":"+strconv.FormatInt(n, 10)+"\r\n", string(c.out))
	}
}
