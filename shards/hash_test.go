package shards

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// hmodel is the reference: fields in insertion order and their values.
type hmodel struct {
	fields []string
	values map[string]string
}

func newHmodel() *hmodel { return &hmodel{values: map[string]string{}} }

func (m *hmodel) set(f, v string) bool {
	_, ok := m.values[f]
	if !ok {
		m.fields = append(m.fields, f)
	}
	m.values[f] = v
	return !ok
}

func (m *hmodel) del(f string) bool {
	if _, ok := m.values[f]; !ok {
		return false
	}
	delete(m.values, f)
	m.fields = slices.DeleteFunc(m.fields, func(x string) bool { return x == f })
	return true
}

func (m *hmodel) pairs() [][2]string {
	var out [][2]string
	for _, f := range m.fields {
		out = append(out, [2]string{f, m.values[f]})
	}
	return out
}

// hashOf returns a hash that belongs to no key, filled with pairs in order.
func hashOf(pairs [][2]string) Hash {
	h := newHashValue()
	for _, p := range pairs {
		h.Set([]byte(p[0]), []byte(p[1]))
	}
	return h
}

func hcontent(h Hash) [][2]string {
	var out [][2]string
	h.Walk(func(f, v Elem) bool {
		out = append(out, [2]string{f.String(), v.String()})
		return true
	})
	return out
}

func sortedPairs(p [][2]string) [][2]string {
	p = slices.Clone(p)
	slices.SortFunc(p, func(a, b [2]string) int { return bytes.Compare([]byte(a[0]), []byte(b[0])) })
	return p
}

// hvalues are the fields and values of the hash tests: the sorted-set
// tests' members, plus the edges of the element encoding (integers in the
// header or not, strings of 127 and 128 bytes).
var hvalues = append(slices.Clone(zmembers), "9", "63", "64", "-64", "1.5", "1795307408539",
	string(bytes.Repeat([]byte("x"), 127)), string(bytes.Repeat([]byte("y"), 128)), string(bytes.Repeat([]byte("z"), 300)))

// TestHashModel runs random operations against the reference model, in the
// compact encoding (large limits), in the large one (tiny limits) and with
// conversions in the middle (limits around the hash's size).
func TestHashModel(t *testing.T) {
	defer SetHashLimits(512, 64)
	limits := []modelLimits{{"compact", 1 << 20, 1 << 20}, {"big", 0, 0}, {"converting", 12, 100}}
	runModel(t, limits, SetHashLimits, 30, 300, func(t *testing.T, rnd *rand.Rand) func(int) {
		h, m := newHashValue(), newHmodel()
		return func(step int) { hashModelStep(t, rnd, h, m, step) }
	})
}

func hashModelStep(t *testing.T, rnd *rand.Rand, h Hash, m *hmodel, step int) {
	f := hvalues[rnd.IntN(len(hvalues))]
	v := hvalues[rnd.IntN(len(hvalues))]
	switch rnd.IntN(8) {
	case 0, 1, 2:
		require.Equal(t, m.set(f, v), h.Set([]byte(f), []byte(v)), "step %d: set %q", step, f)
	case 3:
		require.Equal(t, m.del(f), h.Delete([]byte(f)), "step %d: delete %q", step, f)
	case 4:
		got, ok := h.Get([]byte(f))
		want, wok := m.values[f]
		require.Equal(t, wok, ok, "step %d: get %q", step, f)
		require.Equal(t, want, got.String(), "step %d: get %q", step, f)
		require.Equal(t, len(want), got.Len(), "step %d: len of %q", step, f)
	case 5:
		n := rnd.IntN(len(m.fields) + 3)
		unique := rnd.IntN(2) == 0
		seen := map[string]bool{}
		picks := 0
		h.Sample(n, unique, func(f, v Elem) {
			picks++
			require.Equal(t, m.values[f.String()], v.String(), "step %d: sample", step)
			require.False(t, unique && seen[f.String()], "step %d: %q picked twice", step, f.String())
			seen[f.String()] = true
		})
		want := n
		if unique {
			want = min(n, len(m.fields))
		}
		if len(m.fields) == 0 {
			want = 0
		}
		require.Equal(t, want, picks, "step %d: sample %d", step, n)
	case 6:
		var got [][2]string
		cursor := uint64(0)
		for i := 0; ; i++ {
			require.Less(t, i, 100, "step %d: scan does not end", step)
			cursor = h.Scan(cursor, 1+rnd.IntN(5), func(f, v Elem) { got = append(got, [2]string{f.String(), v.String()}) })
			if cursor == 0 {
				break
			}
		}
		require.Equal(t, sortedPairs(m.pairs()), sortedPairs(got), "step %d: scan", step)
	default:
		require.Equal(t, len(m.fields), h.Len(), "step %d: len", step)
		if h.Encoding() == "listpack" {
			require.Equal(t, m.pairs(), hcontent(h), "step %d: walk in insertion order", step)
		} else {
			require.Equal(t, sortedPairs(m.pairs()), sortedPairs(hcontent(h)), "step %d: walk", step)
		}
	}
}

// FuzzHashModel drives random operation sequences against the reference
// model; the fuzzer picks the seed and the encoding limits.
func FuzzHashModel(f *testing.F) {
	f.Add(uint64(1), uint8(0))
	f.Add(uint64(2), uint8(1))
	f.Add(uint64(3), uint8(130))
	f.Fuzz(func(t *testing.T, seed uint64, lim uint8) {
		fuzzModel(seed, lim, SetHashLimits, [2]int64{512, 64}, func(rnd *rand.Rand) func(int) {
			h, m := newHashValue(), newHmodel()
			return func(step int) { hashModelStep(t, rnd, h, m, step) }
		})
	})
}

// TestHashEncodingTable checks the compact encoding's byte layout on known
// fields: sizes are what the memory target depends on.
func TestHashEncodingTable(t *testing.T) {
	defer SetHashLimits(512, 64)
	SetHashLimits(512, 1000)
	tests := []struct {
		pairs [][2]string
		size  int
	}{
		0: {[][2]string{{"tokens", "9"}, {"ts", "1795307408539"}}, 4 + (1 + 6) + 1 + (1 + 2) + (1 + 6)}, // a token bucket: 22 bytes
		1: {[][2]string{{"a", "63"}}, 4 + 2 + 1},                                                        // 0-63 in the header
		2: {[][2]string{{"a", "64"}}, 4 + 2 + 2},                                                        // zigzag 128: one byte
		3: {[][2]string{{"a", "-1"}}, 4 + 2 + 2},
		4: {[][2]string{{"1", "007"}}, 4 + 1 + 4},                                                  // a field may be an integer too; 007 is not one
		5: {[][2]string{{"a", "-9223372036854775808"}}, 4 + 2 + 9},                                 // the widest integer
		6: {[][2]string{{"a", "9223372036854775808"}}, 4 + 2 + 20},                                 // not an int64: a string
		7: {[][2]string{{"a", string(bytes.Repeat([]byte("q"), 128))}}, 4 + 2 + 1 + 2 + 128},       // a long string: uvarint length
		8: {[][2]string{{"c2f5b3d2-8d1e-4f7a-9b3c-1a2b3c4d5e6f", "1795307408539667"}}, 4 + 37 + 8}, // the memory test's field
		9: {[][2]string{{"a", "1"}, {"b", "2"}, {"a", "3"}}, 4 + (2 + 1) + (2 + 1)},                // overwritten in place
	}
	for i, tt := range tests {
		h := hashOf(tt.pairs)
		require.Equal(t, "listpack", h.Encoding(), "test %d", i)
		if n := len(h.r().str); n != tt.size {
			t.Errorf("test %d: have %d bytes, want %d", i, n, tt.size)
		}
		for _, p := range tt.pairs[len(tt.pairs)-1:] {
			v, ok := h.Get([]byte(p[0]))
			require.True(t, ok, "test %d", i)
			require.Equal(t, p[1], v.String(), "test %d", i)
		}
	}
}

// TestHashConversion checks when the compact encoding gives way.
func TestHashConversion(t *testing.T) {
	defer SetHashLimits(512, 64)
	SetHashLimits(3, 5)
	tests := []struct {
		pairs [][2]string
		want  string
	}{
		0: {[][2]string{{"a", "1"}, {"b", "2"}, {"c", "3"}}, "listpack"},
		1: {[][2]string{{"a", "1"}, {"b", "2"}, {"c", "3"}, {"d", "4"}}, "hashtable"},
		2: {[][2]string{{"abcde", "abcde"}}, "listpack"},
		3: {[][2]string{{"abcdef", "1"}}, "hashtable"},
		4: {[][2]string{{"a", "abcdef"}}, "hashtable"},
		5: {[][2]string{{"a", "1"}, {"a", "123456"}}, "hashtable"}, // an overwrite too
		6: {[][2]string{{"a", "1"}, {"b", "2"}, {"c", "3"}, {"c", "4"}}, "listpack"},
	}
	for i, tt := range tests {
		h := hashOf(tt.pairs)
		require.Equal(t, tt.want, h.Encoding(), "test %d", i)
		v, ok := h.Get([]byte(tt.pairs[len(tt.pairs)-1][0]))
		require.True(t, ok, "test %d", i)
		require.Equal(t, tt.pairs[len(tt.pairs)-1][1], v.String(), "test %d", i)
	}
	h := newHashValue()
	h.Reserve(4)
	require.Equal(t, "hashtable", h.Encoding())
}

// TestHashScanWhileChanging: a full scan of a large hash returns every
// field present throughout exactly once, while fields come and go.
func TestHashScanWhileChanging(t *testing.T) {
	defer SetHashLimits(512, 64)
	SetHashLimits(0, 0)
	h := newHashValue()
	for i := 0; i < 1000; i++ {
		h.Set([]byte("stay"+strconv.Itoa(i)), []byte("v"))
	}
	seen := map[string]int{}
	cursor := uint64(0)
	for round := 0; ; round++ {
		cursor = h.Scan(cursor, 20, func(f, v Elem) { seen[f.String()]++ })
		for j := 0; j < 30; j++ { // churn: the table grows and shrinks
			h.Set([]byte(fmt.Sprintf("churn%d-%d", round, j)), []byte("x"))
		}
		for j := 0; j < 30; j++ {
			h.Delete([]byte(fmt.Sprintf("churn%d-%d", round, j)))
		}
		if cursor == 0 {
			break
		}
	}
	for i := 0; i < 1000; i++ {
		require.Equal(t, 1, seen["stay"+strconv.Itoa(i)], "field %d", i)
	}
}

// TestHashInPlace: overwriting a value with one of the same encoded size
// allocates nothing, in either encoding (HSET and HINCRBY on a token
// bucket).
func TestHashInPlace(t *testing.T) {
	defer SetHashLimits(512, 64)
	for _, lim := range []int64{512, 0} {
		SetHashLimits(lim, 64)
		h := newHashValue()
		h.Set([]byte("tokens"), []byte("9"))
		h.Set([]byte("ts"), []byte("1795307408539"))
		allocs := testing.AllocsPerRun(100, func() {
			h.Set([]byte("tokens"), []byte("8"))
			h.Set([]byte("ts"), []byte("1795307408540"))
			h.Get([]byte("ts"))
		})
		require.Zero(t, allocs, "limit %d (%s)", lim, h.Encoding())
		v, _ := h.Get([]byte("ts"))
		require.Equal(t, "1795307408540", v.String())
	}
}

// TestHashMemory measures bytes per field of hashes holding a rate
// limiter's data: a token bucket (fields tokens and ts, with a deadline) on
// many keys, and 13-digit millisecond timestamps under UUID fields. The
// ceilings are what redis-server 7.0.15 took for the same data, measured as
// the growth of INFO used_memory (keys, dicts, expires and allocator
// overhead included, as here): ratekv must not take more.
func TestHashMemory(t *testing.T) {
	defer SetHashLimits(512, 64)
	SetHashLimits(512, 64)
	bucket := func(st *Store, key []byte, rnd *rand.Rand) {
		e, _ := st.Put(key, 0)
		h := st.NewHash(key, e)
		h.Set([]byte("tokens"), strconv.AppendInt(nil, rnd.Int64N(10), 10))
		h.Set([]byte("ts"), strconv.AppendInt(nil, 1795307408539+rnd.Int64N(1e6), 10))
		st.SetExpire(key, e, 1795307408539+3600_000)
	}
	uuids := func(entries int) func(st *Store, key []byte, rnd *rand.Rand) {
		return func(st *Store, key []byte, rnd *rand.Rand) {
			e, _ := st.Put(key, 0)
			h := st.NewHash(key, e)
			ts := int64(1795307408539)
			for i := 0; i < entries; i++ {
				ts += 1 + rnd.Int64N(1200)
				h.Set(uuidLike(rnd), strconv.AppendInt(nil, ts, 10))
			}
		}
	}
	checkMemory(t, []memoryCase{
		{"100kx2/bucket", 100000, 2, 74.6, bucket},       // Redis: listpack, 149.2 B a key (106.3 without the deadline)
		{"10kx100/uuid", 10000, 100, 52.0, uuids(100)},   // Redis: listpack
		{"1kx1000/uuid", 1000, 1000, 104.3, uuids(1000)}, // Redis: hashtable
	})
}
