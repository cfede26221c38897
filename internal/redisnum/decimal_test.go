package redisnum

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
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
		if got := string(AppendInt([]byte("x"), n)); got != "x"+want {
			t.Fatalf("AppendInt(%d) = %q, want x%s", n, got, want)
		}
	}
	// Every uint64 magnitude, including the top chunk's largest.
	for _, u := range []uint64{math.MaxUint64, math.MaxUint64 - 1, 1e19, 1e19 - 1} {
		var buf [24]byte
		if got, want := string(buf[FormatUint(&buf, u):]), strconv.FormatUint(u, 10); got != want {
			t.Fatalf("FormatUint(%d) = %q", u, got)
		}
	}
}

func FuzzAppendInt(f *testing.F) {
	f.Add(int64(0))
	f.Add(int64(1795307408539667000))
	f.Add(int64(math.MinInt64))
	f.Fuzz(func(t *testing.T, n int64) {
		if got, want := string(AppendInt(nil, n)), strconv.FormatInt(n, 10); got != want {
			t.Fatalf("AppendInt(%d) = %q, want %q", n, got, want)
		}
	})
}
