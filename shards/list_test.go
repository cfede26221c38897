package shards

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// lvalues are the elements of the list tests: the hash tests' values, plus
// elements long enough to fill the smallest nodes (4 KiB) with a handful.
var lvalues = append(slices.Clone(hvalues), string(bytes.Repeat([]byte("w"), 900)), string(bytes.Repeat([]byte("v"), 2000)))

func lcontent(l List) []string {
	var out []string
	l.Walk(0, false, func(e Elem) bool { out = append(out, e.String()); return true })
	return out
}

// checkListShape checks the invariants of the encodings: node counts add
// up, no node is empty, a node over the limits holds one element, and a
// compact list is one node.
func checkListShape(t *testing.T, l List, step int) {
	v := l.view()
	nodes := v.nodes()
	total := 0
	for i, nd := range nodes {
		c := nodeCount(nd)
		require.Positive(t, c, "step %d: node %d of %d is empty", step, i, len(nodes))
		require.False(t, c > 1 && nodeExceeds(len(nd), c), "step %d: node %d over the limits (%d bytes, %d elements)", step, i, len(nd), c)
		n := 0
		for off := lnHeader; off < len(nd); off = nodeSkip(nd, off) {
			n++
		}
		require.Equal(t, c, n, "step %d: node %d's count", step, i)
		total += c
	}
	require.Equal(t, v.len(), total, "step %d: element count", step)
	if v.q == nil {
		require.LessOrEqual(t, len(nodes), 1, "step %d", step)
	}
}

// TestListModel runs random operations against a slice, with nodes of one
// element (fill 1), of three, of the default 8 KiB and of 64 KiB, so that
// lists convert, split and merge in the middle.
func TestListModel(t *testing.T) {
	defer SetListFill(-2)
	limits := []modelLimits{{"fill-2", -2, 0}, {"fill1", 1, 0}, {"fill3", 3, 0}, {"fill-1", -1, 0}, {"fill-5", -5, 0}}
	runModel(t, limits, func(fill, _ int64) { SetListFill(fill) }, 20, 400, func(t *testing.T, rnd *rand.Rand) func(int) {
		l := newListValue()
		var m []string
		return func(step int) { listModelStep(t, rnd, l, &m, step) }
	})
}

func listModelStep(t *testing.T, rnd *rand.Rand, l List, m *[]string, step int) {
	v := lvalues[rnd.IntN(len(lvalues))]
	n := len(*m)
	switch op := rnd.IntN(12); {
	case op < 4:
		front := rnd.IntN(2) == 0
		for k := 1 + rnd.IntN(4); k > 0; k-- {
			l.Push([]byte(v), front)
			if front {
				*m = slices.Insert(*m, 0, v)
			} else {
				*m = append(*m, v)
			}
		}
	case op == 4 && n > 0:
		i := rnd.IntN(n)
		require.Equal(t, (*m)[i], l.Index(i).String(), "step %d: index %d", step, i)
		var fwd, back []string
		l.Walk(i, false, func(e Elem) bool { fwd = append(fwd, e.String()); return len(fwd) < 50 })
		l.Walk(i, true, func(e Elem) bool { back = append(back, e.String()); return true })
		require.Equal(t, (*m)[i:min(n, i+50)], fwd, "step %d: walk from %d", step, i)
		want := slices.Clone((*m)[:i+1])
		slices.Reverse(want)
		require.Equal(t, want, back, "step %d: walk back from %d", step, i)
	case op == 5 && n > 0:
		i := rnd.IntN(n)
		l.Set(i, []byte(v))
		(*m)[i] = v
	case op == 6:
		pivot := lvalues[rnd.IntN(len(lvalues))]
		after := rnd.IntN(2) == 0
		i := slices.Index(*m, pivot)
		require.Equal(t, i >= 0, l.Insert([]byte(pivot), []byte(v), after), "step %d: insert at %q", step, pivot)
		if i >= 0 {
			if after {
				i++
			}
			*m = slices.Insert(*m, i, v)
		}
	case op == 7 && n > 0:
		start := rnd.IntN(n)
		count := rnd.IntN(n - start + 1)
		if rnd.IntN(4) == 0 { // from an end, as LPOP, RPOP and LTRIM
			start = 0
			if rnd.IntN(2) == 0 {
				start = n - count
			}
		}
		l.DeleteRange(start, count)
		*m = slices.Delete(*m, start, start+count)
	case op == 8:
		count := rnd.IntN(5) - 2
		want := 0
		if count >= 0 {
			for i := 0; i < len(*m); {
				if (*m)[i] == v && (count == 0 || want < count) {
					*m = slices.Delete(*m, i, i+1)
					want++
					continue
				}
				i++
			}
		} else {
			for i := len(*m) - 1; i >= 0; i-- {
				if (*m)[i] == v && want < -count {
					*m = slices.Delete(*m, i, i+1)
					want++
				}
			}
		}
		require.Equal(t, want, l.Remove([]byte(v), count), "step %d: remove %q %d", step, v, count)
	default:
		require.Equal(t, len(*m), l.Len(), "step %d: len", step)
		if have := lcontent(l); !slices.Equal(*m, have) {
			t.Fatalf("step %d: content\nhave %q\nwant %q", step, have, *m)
		}
	}
	if len(*m) == 0 && l.Len() != 0 {
		t.Fatalf("step %d: model empty, list holds %d", step, l.Len())
	}
	checkListShape(t, l, step)
}

// FuzzListModel drives random operation sequences against the model; the
// fuzzer picks the seed and list-max-listpack-size.
func FuzzListModel(f *testing.F) {
	f.Add(uint64(1), uint8(0))
	f.Add(uint64(2), uint8(1))
	f.Add(uint64(3), uint8(5))
	f.Fuzz(func(t *testing.T, seed uint64, lim uint8) {
		// Fill -2, 0 (one element a node) or lim%16.
		fuzzModel(seed, lim, func(fill, _ int64) { SetListFill(fill) }, [2]int64{-2, 0}, func(rnd *rand.Rand) func(int) {
			l := newListValue()
			var m []string
			return func(step int) { listModelStep(t, rnd, l, &m, step) }
		})
	})
}

// TestListEncodingTable checks a node's byte layout on known elements: the
// sizes are what the memory target depends on.
func TestListEncodingTable(t *testing.T) {
	tests := []struct {
		elems []string
		size  int
	}{
		0: {[]string{"1795307408539667"}, 2 + (1 + 7) + 1}, // a µs timestamp: 9 bytes with its backlen
		1: {[]string{"5"}, 2 + 1 + 1},
		2: {[]string{"c2f5b3d2-8d1e-4f7a-9b3c-1a2b3c4d5e6f"}, 2 + 37 + 1},
		3: {[]string{string(bytes.Repeat([]byte("x"), 126))}, 2 + 127 + 1},         // the longest element with a 1-byte backlen
		4: {[]string{string(bytes.Repeat([]byte("x"), 127))}, 2 + 128 + 2},         // a 2-byte backlen
		5: {[]string{string(bytes.Repeat([]byte("x"), 128))}, 2 + 1 + 2 + 128 + 2}, // a uvarint length
		6: {[]string{"a", "b", "c"}, 2 + 3*3},
	}
	for i, tt := range tests {
		l := newListValue()
		for _, e := range tt.elems {
			l.Push([]byte(e), false)
		}
		require.Equal(t, "listpack", l.Encoding(), "test %d", i)
		if n := len(l.r().str); n != tt.size {
			t.Errorf("test %d: have %d bytes, want %d", i, n, tt.size)
		}
		require.Equal(t, tt.elems, lcontent(l), "test %d", i)
	}
}

// TestListConversion checks when a list leaves the compact encoding and
// comes back to it.
func TestListConversion(t *testing.T) {
	defer SetListFill(-2)
	SetListFill(3)
	l := newListValue()
	for i := 0; i < 3; i++ {
		l.Push([]byte(strconv.Itoa(i)), false)
	}
	require.Equal(t, "listpack", l.Encoding())
	l.Push([]byte("3"), true)
	require.Equal(t, "quicklist", l.Encoding())
	require.Equal(t, []string{"3", "0", "1", "2"}, lcontent(l))
	l.DeleteRange(0, 1) // three left in two nodes: merged, but over half the limit
	require.Equal(t, "quicklist", l.Encoding())
	l.DeleteRange(0, 2) // one left, at most half of 3
	require.Equal(t, "listpack", l.Encoding())
	require.Equal(t, []string{"2"}, lcontent(l))

	SetListFill(-2) // 8 KiB
	l = newListValue()
	big := bytes.Repeat([]byte("z"), 3000)
	l.Push(big, false)
	l.Push(big, false)
	require.Equal(t, "listpack", l.Encoding())
	l.Push(big, false) // 9 KB
	require.Equal(t, "quicklist", l.Encoding())
	l.Push(bytes.Repeat([]byte("y"), 20000), false) // larger than a node on its own
	require.Equal(t, 4, l.Len())
	l.Set(0, []byte("small"))
	require.Equal(t, "small", l.Index(0).String())
	checkListShape(t, l, 0)
}

// TestListPushInPlace: a push and a trim that keep a compact list's size
// (the moving-window recipe, LPUSH then LTRIM) allocate nothing, nor does
// reading an element.
func TestListPushInPlace(t *testing.T) {
	l := newListValue()
	for i := 0; i < 100; i++ {
		l.Push(strconv.AppendInt(nil, 1795307408539667+int64(i), 10), true)
	}
	ts := []byte("1795307408540000")
	allocs := testing.AllocsPerRun(100, func() {
		l.Push(ts, true)
		l.DeleteRange(100, 1)
		l.Index(50)
	})
	require.Zero(t, allocs)
	require.Equal(t, 100, l.Len())
}

// TestListMemory measures bytes per element of lists holding a moving
// window's data (16-digit µs timestamps, LPUSH) and UUIDs. The ceilings are
// what redis-server 7.0.15 (quicklists) took for the same data, measured
// as the growth of INFO used_memory.
func TestListMemory(t *testing.T) {
	defer SetListFill(-2)
	SetListFill(-2)
	timestamps := func(entries int) func(st *Store, key []byte, rnd *rand.Rand) {
		return func(st *Store, key []byte, rnd *rand.Rand) {
			e, _ := st.Put(key, 0)
			l := st.NewList(key, e)
			ts := int64(1795307408539667)
			for i := 0; i < entries; i++ {
				ts += 1000 + rnd.Int64N(1_200_000)
				l.Push(strconv.AppendInt(nil, ts, 10), true)
			}
		}
	}
	uuids := func(st *Store, key []byte, rnd *rand.Rand) {
		e, _ := st.Put(key, 0)
		l := st.NewList(key, e)
		for i := 0; i < 100; i++ {
			l.Push(uuidLike(rnd), false)
		}
	}
	checkMemory(t, []memoryCase{
		{"100kx10/timestamp", 100000, 10, 28.2, timestamps(10)},
		{"10kx100/timestamp", 10000, 100, 12.0, timestamps(100)},
		{"1kx1000/timestamp", 1000, 1000, 10.5, timestamps(1000)},
		{"10kx100/uuid", 10000, 100, 42.7, uuids},
	})
}
