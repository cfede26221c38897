package shards

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// zmodel is the reference: a plain map, sorted on demand.
type zmodel map[string]float64

type zpair struct {
	m string
	s float64
}

func (zm zmodel) sorted() []zpair {
	out := make([]zpair, 0, len(zm))
	for m, s := range zm {
		out = append(out, zpair{m, s})
	}
	slices.SortFunc(out, func(a, b zpair) int {
		switch {
		case a.s < b.s:
			return -1
		case a.s > b.s:
			return 1
		}
		return bytes.Compare([]byte(a.m), []byte(b.m))
	})
	return out
}

func zcontent(z *ZSet) []zpair {
	var out []zpair
	z.Walk(0, z.Len(), false, func(m ZMember) bool {
		out = append(out, zpair{m.String(), m.Score})
		return true
	})
	return out
}

// sameScore compares scores bit for bit except that -0 and 0 are equal (the
// compact encoding stores -0 as 0, as listpack does).
func sameScore(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }

func requireSame(t *testing.T, step int, want []zpair, have []zpair) {
	t.Helper()
	require.Equal(t, len(want), len(have), "step %d: length", step)
	for i := range want {
		if want[i].m != have[i].m || !sameScore(want[i].s, have[i].s) {
			t.Fatalf("step %d: rank %d: have %q=%v, want %q=%v", step, i, have[i].m, have[i].s, want[i].m, want[i].s)
		}
	}
}

var zscores = []float64{
	0, math.Copysign(0, -1), 1, -1, 1.5, -2.25, 0.1, 3, 7, 100,
	1795307408539667, 1795307408539668, 1795307408540000, 1 << 62, -(1 << 62), 1<<62 + 1024, 1 << 63,
	math.Inf(1), math.Inf(-1), 1e300, -1e-300, math.MaxFloat64, 4.5e15,
}

var zmembers = func() []string {
	m := []string{"", "a", "b", "ab", "abc", "b\x00", "\xff", "0", "-0", "007", "+1", " 1", "1", "-5", "123",
		"9223372036854775807", "-9223372036854775808", "9223372036854775808", "1795307408539667",
		string(bytes.Repeat([]byte("x"), 61)), string(bytes.Repeat([]byte("y"), 62)), string(bytes.Repeat([]byte("z"), 70)),
		"c2f5b3d2-8d1e-4f7a-9b3c-1a2b3c4d5e6f"}
	for i := 0; i < 20; i++ {
		m = append(m, "m"+strconv.Itoa(i))
	}
	return m
}()

// TestZSetModel runs random operations against the reference model, in
// the compact encoding (large limits), in the large one (tiny limits) and
// with conversions in the middle (limits around the set's size).
func TestZSetModel(t *testing.T) {
	defer SetZSetLimits(128, 64)
	limits := []modelLimits{{"compact", 1 << 20, 1 << 20}, {"big", 0, 0}, {"converting", 12, 40}}
	runModel(t, limits, SetZSetLimits, 30, 400, func(t *testing.T, rnd *rand.Rand) func(int) {
		z := NewZSet(0, 0)
		model := zmodel{}
		return func(step int) { zsetModelStep(t, rnd, z, model, step) }
	})
}

func zsetModelStep(t *testing.T, rnd *rand.Rand, z *ZSet, model zmodel, step int) {
	member := zmembers[rnd.IntN(len(zmembers))]
	score := zscores[rnd.IntN(len(zscores))]
	switch op := rnd.IntN(10); op {
	case 0, 1, 2, 3:
		flags := ZAddFlags(rnd.IntN(32))
		if flags&ZAddNX != 0 {
			flags &^= ZAddXX | ZAddGT | ZAddLT
		}
		if flags&ZAddGT != 0 {
			flags &^= ZAddLT
		}
		res, ns := z.Add(score, []byte(member), flags)
		cur, exists := model[member]
		want, wantScore := zaddModel(cur, exists, score, flags)
		require.Equal(t, want, res, "step %d: Add(%v, %q, %b) on %v/%v", step, score, member, flags, cur, exists)
		if res == ZAdded || res == ZUpdated {
			model[member] = wantScore
			require.True(t, sameScore(wantScore, ns), "step %d: new score %v, want %v", step, ns, wantScore)
		}
	case 4:
		_, exists := model[member]
		require.Equal(t, exists, z.Remove([]byte(member)), "step %d: Remove(%q)", step, member)
		delete(model, member)
	case 5:
		s, ok := z.Score([]byte(member))
		ms, mok := model[member]
		require.Equal(t, mok, ok, "step %d: Score(%q)", step, member)
		require.True(t, sameScore(ms, s), "step %d: Score(%q) = %v, want %v", step, member, s, ms)
		rev := rnd.IntN(2) == 0
		r, rs, rok := z.Rank([]byte(member), rev)
		require.Equal(t, mok, rok, "step %d: Rank(%q)", step, member)
		if mok {
			want := slices.IndexFunc(model.sorted(), func(p zpair) bool { return p.m == member })
			if rev {
				want = len(model) - 1 - want
			}
			require.Equal(t, want, r, "step %d: Rank(%q, %v)", step, member, rev)
			require.True(t, sameScore(ms, rs), "step %d: Rank score", step)
		}
	case 6:
		r := ScoreRange{Min: zscores[rnd.IntN(len(zscores))], Max: zscores[rnd.IntN(len(zscores))], MinEx: rnd.IntN(2) == 0, MaxEx: rnd.IntN(2) == 0}
		lo, hi := z.ScoreSpan(r)
		wlo, whi := spanModel(model.sorted(), func(p zpair) bool { return r.gteMin(p.s) }, func(p zpair) bool { return r.lteMax(p.s) })
		if r.empty() {
			wlo, whi = 0, 0
		}
		require.Equal(t, [2]int{wlo, whi}, [2]int{lo, hi}, "step %d: ScoreSpan(%+v) of %v", step, r, model.sorted())
		if rnd.IntN(4) == 0 {
			require.Equal(t, hi-lo, z.RemoveRanks(lo, hi), "step %d: RemoveRanks", step)
			for _, p := range model.sorted()[lo:hi] {
				delete(model, p.m)
			}
		}
	case 7:
		// Lex ranges are defined when members are in lexicographic order.
		sorted := model.sorted()
		if !slices.IsSortedFunc(sorted, func(a, b zpair) int { return bytes.Compare([]byte(a.m), []byte(b.m)) }) {
			return
		}
		r := LexRange{Min: randLexBound(rnd), Max: randLexBound(rnd)}
		lo, hi := z.LexSpan(r)
		wlo, whi := spanModel(sorted, func(p zpair) bool { return r.gteMin([]byte(p.m)) }, func(p zpair) bool { return r.lteMax([]byte(p.m)) })
		if r.empty() {
			wlo, whi = 0, 0
		}
		require.Equal(t, [2]int{wlo, whi}, [2]int{lo, hi}, "step %d: LexSpan(%+v)", step, r)
	case 8:
		n := z.Len()
		lo, hi := rnd.IntN(n+2)-1, rnd.IntN(n+2)-1
		rev := rnd.IntN(2) == 0
		var got []zpair
		z.Walk(lo, hi, rev, func(m ZMember) bool {
			got = append(got, zpair{m.String(), m.Score})
			return true
		})
		sorted := model.sorted()
		var want []zpair
		if l, h := max(lo, 0), min(hi, n); l < h {
			want = slices.Clone(sorted[l:h])
			if rev {
				slices.Reverse(want)
			}
		}
		requireSame(t, step, want, got)
		if rnd.IntN(3) == 0 {
			k := z.RemoveRanks(lo, hi)
			require.Equal(t, len(want), k, "step %d: RemoveRanks(%d, %d)", step, lo, hi)
			for _, p := range want {
				delete(model, p.m)
			}
		}
	case 9:
		count := rnd.IntN(z.Len() + 3)
		unique := rnd.IntN(2) == 0
		seen := map[string]bool{}
		k := 0
		z.Sample(count, unique, func(m ZMember) {
			s, ok := model[m.String()]
			require.True(t, ok && sameScore(s, m.Score), "step %d: Sample gave %q=%v", step, m.String(), m.Score)
			require.False(t, unique && seen[m.String()], "step %d: Sample repeated %q", step, m.String())
			seen[m.String()] = true
			k++
		})
		want := count
		if unique {
			want = min(count, len(model))
		}
		if len(model) == 0 {
			want = 0
		}
		require.Equal(t, want, k, "step %d: Sample(%d, %v)", step, count, unique)
	}
	requireSame(t, step, model.sorted(), zcontent(z))
	require.Equal(t, len(model), z.Len(), "step %d: Len", step)
}

// zaddModel is zsetAdd's decision table.
func zaddModel(cur float64, exists bool, score float64, f ZAddFlags) (ZAddResult, float64) {
	if !exists {
		if f&ZAddXX != 0 {
			return ZAddRefused, 0
		}
		return ZAdded, score
	}
	if f&ZAddNX != 0 {
		return ZAddRefused, cur
	}
	if f&ZAddIncr != 0 {
		score += cur
		if math.IsNaN(score) {
			return ZAddNaN, cur
		}
	}
	if f&ZAddLT != 0 && score >= cur || f&ZAddGT != 0 && score <= cur {
		return ZAddRefused, cur
	}
	if score == cur {
		return ZAddSame, score
	}
	return ZUpdated, score
}

func spanModel(sorted []zpair, gteMin, lteMax func(zpair) bool) (int, int) {
	lo := slices.IndexFunc(sorted, gteMin)
	if lo < 0 {
		return 0, 0
	}
	hi := lo
	for hi < len(sorted) && lteMax(sorted[hi]) {
		hi++
	}
	if lo == hi {
		return 0, 0
	}
	return lo, hi
}

func randLexBound(rnd *rand.Rand) LexBound {
	switch rnd.IntN(6) {
	case 0:
		return LexBound{Inf: -1, Ex: true}
	case 1:
		return LexBound{Inf: 1, Ex: true}
	}
	return LexBound{Value: []byte(zmembers[rnd.IntN(len(zmembers))]), Ex: rnd.IntN(2) == 0}
}

// TestZSetEncodingTable checks the compact encoding's byte layout on known
// entries: sizes are what the memory target depends on.
func TestZSetEncodingTable(t *testing.T) {
	tests := []struct {
		entries [][2]string // score, member, in order
		size    int
	}{
		0: {[][2]string{{"1", "a"}}, 1 + 1 + 1},                                                           // int score 1 (zigzag 2), inline member
		1: {[][2]string{{"1.5", "a"}}, 1 + 8 + 1},                                                         // float score
		2: {[][2]string{{"1795307408539667", "1795307408539667"}}, 1 + 8 + 7},                             // int score, int member
		3: {[][2]string{{"1795307408539667", "x"}, {"1795307408540667", "y"}}, (1 + 8 + 1) + (1 + 2 + 1)}, // delta 1000: 2 bytes
		4: {[][2]string{{"-0", "a"}}, 1 + 1 + 1},                                                          // -0 stored as integer 0
		5: {[][2]string{{"1", string(bytes.Repeat([]byte("q"), 62))}}, 1 + 1 + 1 + 62},                    // long member: length uvarint
		6: {[][2]string{{"36028797018963967", "a"}}, 1 + 8 + 1},                                           // 2^55-1: an integer, 8 bytes
		7: {[][2]string{{"36028797018963968", "a"}}, 1 + 8 + 1},                                           // 2^55: float bits
		8: {[][2]string{{"1", "a"}, {"36028797018963967", "b"}}, (1 + 1 + 1) + (1 + 8 + 1)},               // largest delta: 8 bytes
		9: {[][2]string{{"-1", "a"}, {"36028797018963967", "b"}}, (1 + 1 + 1) + (1 + 8 + 1)},              // a delta of 2^55: still 8 bytes
	}
	for i, tt := range tests {
		z := &ZSet{}
		for _, e := range tt.entries {
			s, err := strconv.ParseFloat(e[0], 64)
			require.NoError(t, err)
			res, _ := z.Add(s, []byte(e[1]), 0)
			require.Equal(t, ZAdded, res, "test %d", i)
		}
		require.Nil(t, z.big, "test %d: converted", i)
		if len(z.lp) != tt.size {
			t.Errorf("test %d: have %d bytes, want %d", i, len(z.lp), tt.size)
		}
		got := zcontent(z)
		for j, e := range tt.entries {
			s, _ := strconv.ParseFloat(e[0], 64)
			if got[j].m != e[1] || got[j].s != s || s == 0 && math.Signbit(got[j].s) {
				t.Errorf("test %d: entry %d: have %q=%v, want %q=%v (no -0)", i, j, got[j].m, got[j].s, e[1], s)
			}
		}
	}
}

// TestZSetConversion checks when the compact encoding gives way.
func TestZSetConversion(t *testing.T) {
	defer SetZSetLimits(128, 64)
	SetZSetLimits(3, 5)
	tests := []struct {
		members []string
		want    string
	}{
		0: {[]string{"a", "b", "c"}, "listpack"},
		1: {[]string{"a", "b", "c", "d"}, "skiplist"},
		2: {[]string{"abcde"}, "listpack"},
		3: {[]string{"abcdef"}, "skiplist"},
	}
	for i, tt := range tests {
		z := NewZSet(1, len(tt.members[0]))
		for j, m := range tt.members {
			z.Add(float64(j), []byte(m), 0)
		}
		if z.Encoding() != tt.want {
			t.Errorf("test %d: have %s, want %s", i, z.Encoding(), tt.want)
		}
		require.Equal(t, len(tt.members), z.Len(), "test %d", i)
	}
	require.Equal(t, "skiplist", NewZSet(4, 1).Encoding())
	z := NewZSet(1, 1)
	z.Reserve(4)
	require.Equal(t, "skiplist", z.Encoding())
}

// TestZSetScan checks that a full scan of a large set returns each member
// once, also when members come and go between calls.
func TestZSetScan(t *testing.T) {
	defer SetZSetLimits(128, 64)
	SetZSetLimits(0, 0)
	z := NewZSet(0, 0)
	for i := 0; i < 5000; i++ {
		z.Add(float64(i), []byte("m"+strconv.Itoa(i)), 0)
	}
	seen := map[string]int{}
	cursor, calls := uint64(0), 0
	for {
		cursor = z.Scan(cursor, 10, func(m ZMember) { seen[m.String()]++ })
		calls++
		// Churn: members that come and go are allowed to be missed.
		z.Add(1e9, []byte("tmp"+strconv.Itoa(calls)), 0)
		z.Remove([]byte("tmp" + strconv.Itoa(calls-1)))
		if cursor == 0 {
			break
		}
	}
	require.LessOrEqual(t, calls, 18, "calls")
	for i := 0; i < 5000; i++ {
		require.Equal(t, 1, seen["m"+strconv.Itoa(i)], "member m%d", i)
	}
	// A compact set comes whole.
	SetZSetLimits(128, 64)
	c := NewZSet(0, 0)
	c.Add(1, []byte("x"), 0)
	n := 0
	require.Equal(t, uint64(0), c.Scan(0, 1, func(ZMember) { n++ }))
	require.Equal(t, 1, n)
}

func BenchmarkZSetRecipe(b *testing.B) {
	// The sliding-log recipe on one key: trim what left the window, add now.
	for _, size := range []int{100, 1000} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			z := NewZSet(0, 0)
			now := 1795307408539667.0
			for i := 0; i < size; i++ {
				z.Add(now, []byte(strconv.FormatFloat(now, 'f', -1, 64)), 0)
				now += 1000
			}
			b.ReportAllocs()
			b.ResetTimer()
			var buf [32]byte
			for i := 0; i < b.N; i++ {
				lo, hi := z.ScoreSpan(ScoreRange{Min: 0, Max: now - float64(size)*1000})
				z.RemoveRanks(lo, hi)
				z.Add(now, strconv.AppendFloat(buf[:0], now, 'f', -1, 64), 0)
				now += 1000
			}
		})
	}
}

// uuidLike returns a random 36-byte UUID string, the members the popular
// sliding-log libraries use.
func uuidLike(rnd *rand.Rand) []byte {
	const hex = "0123456789abcdef"
	b := make([]byte, 36)
	for i := range b {
		switch i {
		case 8, 13, 18, 23:
			b[i] = '-'
		default:
			b[i] = hex[rnd.IntN(16)]
		}
	}
	return b
}

// heapInUse returns the live heap after a full collection.
func heapInUse() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// memoryPerEntry fills a store with keys × entries made by fill and returns
// the heap it takes per entry (keys, entries and everything else included).
func memoryPerEntry(t *testing.T, keys, entries int, fill func(st *Store, key []byte, rnd *rand.Rand)) float64 {
	rnd := rand.New(rand.NewPCG(uint64(keys), uint64(entries)))
	before := heapInUse()
	st := New(Options{Shards: 16})
	for k := 0; k < keys; k++ {
		fill(st, []byte(fmt.Sprintf("rl:user:%d", k)), rnd)
	}
	after := heapInUse()
	runtime.KeepAlive(st)
	return float64(after-before) / float64(keys*entries)
}

// TestZSetMemory measures bytes per entry of sorted sets holding the
// sliding-log recipe's data: microsecond-timestamp scores (1 ms to 1.2 s
// apart) with random UUID members, or with the timestamp itself as member.
// The ceilings are what redis-server 7.0.15 took for the same shapes of
// data, measured by hand as the growth of INFO used_memory (keys, dict and
// allocator overhead included, as here): ratekv must not take more.
func TestZSetMemory(t *testing.T) {
	defer SetZSetLimits(128, 64)
	SetZSetLimits(128, 64)
	fill := func(entries int, uuid bool) func(st *Store, key []byte, rnd *rand.Rand) {
		return func(st *Store, key []byte, rnd *rand.Rand) {
			z := NewZSet(0, 0)
			ts := int64(1795307408539667) + rnd.Int64N(1e9)
			for i := 0; i < entries; i++ {
				ts += 1000 + rnd.Int64N(1_200_000)
				m := strconv.AppendInt(nil, ts, 10)
				if uuid {
					m = uuidLike(rnd)
				}
				z.Add(float64(ts), m, 0)
			}
			e, _ := st.Put(key, 0)
			st.SetObject(key, e, KindZSet, z)
		}
	}
	checkMemory(t, []memoryCase{
		{"10kx100/uuid", 10000, 100, 52.0, fill(100, true)},         // Redis: listpack
		{"1kx1000/uuid", 1000, 1000, 142.4, fill(1000, true)},       // Redis: skiplist
		{"10kx100/timestamp", 10000, 100, 21.3, fill(100, false)},   // Redis: listpack
		{"1kx1000/timestamp", 1000, 1000, 126.4, fill(1000, false)}, // Redis: skiplist
	})
}

// TestZindex stresses the hash index of large sets: inserts, finds, and
// deletions with backward shifts across growth and shrinking.
func TestZindex(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 7))
	var x zindex
	x.init(0)
	live := map[string]*zentry{}
	for round := 0; round < 20; round++ {
		for i := 0; i < 2000; i++ {
			m := strconv.Itoa(rnd.IntN(5000))
			if _, ok := live[m]; ok {
				continue
			}
			e := &zentry{float64(i), m}
			x.insert(e)
			live[m] = e
		}
		for m, e := range live {
			if rnd.IntN(3) > 0 {
				continue
			}
			got, slot := x.find([]byte(m))
			require.Same(t, e, got, "round %d: find %q", round, m)
			x.removeAt(slot)
			delete(live, m)
		}
		require.Equal(t, len(live), x.n)
		for i := 0; i < 5000; i++ {
			m := strconv.Itoa(i)
			got, _ := x.find([]byte(m))
			require.Same(t, live[m], got, "round %d: member %q", round, m)
		}
		require.LessOrEqual(t, x.n*4, len(x.slots)*3, "load")
	}
	for m := range live {
		_, slot := x.find([]byte(m))
		x.removeAt(slot)
	}
	require.Equal(t, 0, x.n)
	require.Equal(t, 8, len(x.slots), "shrunk back")
}

// FuzzZSetModel drives random operation sequences against the reference
// model; the fuzzer picks the seed and the encoding limits.
func FuzzZSetModel(f *testing.F) {
	f.Add(uint64(1), uint8(0))
	f.Add(uint64(2), uint8(1))
	f.Add(uint64(3), uint8(2))
	f.Fuzz(func(t *testing.T, seed uint64, lim uint8) {
		fuzzModel(seed, lim, SetZSetLimits, [2]int64{128, 64}, func(rnd *rand.Rand) func(int) {
			z := NewZSet(0, 0)
			model := zmodel{}
			return func(step int) { zsetModelStep(t, rnd, z, model, step) }
		})
	})
}

// TestSameBytes: sameBytes is bytes.Equal.
func TestSameBytes(t *testing.T) {
	vals := []string{"", "a", "ab", "abcdefg", "abcdefgh", "abcdefgi", "abcdefgh1", "abcdefgh2", "xbcdefgh1",
		"123e4567-e89b-12d3-a456-426614174000", "123e4567-e89b-12d3-a456-426614174001", "023e4567-e89b-12d3-a456-426614174000"}
	for _, a := range vals {
		for _, b := range vals {
			require.Equal(t, a == b, sameBytes([]byte(a), []byte(b)), "%q %q", a, b)
		}
	}
}
