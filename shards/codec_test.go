package shards

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// codecZSet builds a sorted set of (score, member) pairs.
func codecZSet(t testing.TB, pairs ...any) *ZSet {
	z := NewZSet(len(pairs)/2, 0)
	for i := 0; i+1 < len(pairs); i += 2 {
		res, _ := z.Add(pairs[i].(float64), []byte(pairs[i+1].(string)), 0)
		require.Equal(t, ZAdded, res)
	}
	return z
}

// codecZMembers lists a set's members as "score member" strings.
func codecZMembers(z *ZSet) []string {
	var out []string
	z.Walk(0, z.Len(), false, func(m ZMember) bool {
		out = append(out, fmt.Sprintf("%v %s", m.Score, m.String()))
		return true
	})
	return out
}

// codecRuns lists a sliding log's runs.
func codecRuns(l *SlidingLog) [][2]int64 {
	var out [][2]int64
	l.Each(func(ts, count int64) { out = append(out, [2]int64{ts, count}) })
	return out
}

// codecEntries returns entries of every kind, with a description.
func codecEntries(t testing.TB) []struct {
	name string
	e    *Entry
} {
	bigZ := NewZSet(300, 0)
	for i := 0; i < 300; i++ {
		bigZ.Add(float64(i)*1.5, []byte(fmt.Sprintf("member-%d", i)), 0)
	}
	trimmed := &SlidingLog{}
	for i := int64(0); i < 50; i++ {
		trimmed.Add(1_700_000_000_000_000+i*1000, 1+i%3)
	}
	trimmed.Trim(1_700_000_000_000_000 + 20_000) // moves head: base is no longer the first run
	sameTS := &SlidingLog{}
	sameTS.Add(5, 1)
	sameTS.Add(5, 2) // a run of delta 0
	sameTS.Add(9, 1)
	span := &SlidingLog{}
	span.Add(-maxTime, 1)
	span.Add(maxTime, 2) // the widest gap a log can hold
	mk := func(f func(k []byte, e *Entry)) *Entry { k, e := fresh(); f(k, e); return e }
	hash := func(big bool, pairs ...string) func(k []byte, e *Entry) {
		return func(k []byte, e *Entry) {
			h := cs.NewHash(k, e)
			if big {
				h.Reserve(513)
			}
			for i := 0; i+1 < len(pairs); i += 2 {
				h.Set([]byte(pairs[i]), []byte(pairs[i+1]))
			}
		}
	}
	list := func(elems ...string) func(k []byte, e *Entry) {
		return func(k []byte, e *Entry) {
			l := cs.NewList(k, e)
			for _, x := range elems {
				l.Push([]byte(x), false)
			}
		}
	}
	var long []string // 12 KB: two nodes
	for i := 0; i < 12; i++ {
		long = append(long, strconv.Itoa(1795307408539667+i*1000), string(bytes.Repeat([]byte{'a' + byte(i)}, 1000)))
	}
	var many []string
	for i := 0; i < 600; i++ {
		many = append(many, fmt.Sprintf("field-%d", i), strconv.Itoa(i*1000))
	}
	return []struct {
		name string
		e    *Entry
	}{
		{"string", mk(func(k []byte, e *Entry) { cs.SetBytes(k, e, []byte("hello")) })},
		{"empty string", mk(func(k []byte, e *Entry) { cs.SetBytes(k, e, nil) })},
		{"binary string", mk(func(k []byte, e *Entry) { cs.SetBytes(k, e, []byte{0, 1, 2, 0xff, '\r', '\n'}) })},
		{"non-canonical int string", mk(func(k []byte, e *Entry) { cs.SetBytes(k, e, []byte("007")) })},
		{"int", mk(func(k []byte, e *Entry) { cs.SetInt(e, 42) })},
		{"negative int", mk(func(k []byte, e *Entry) { cs.SetInt(e, -1<<63) })},
		{"max int", mk(func(k []byte, e *Entry) { cs.SetInt(e, math.MaxInt64) })},
		{"zset compact", mk(func(k []byte, e *Entry) {
			cs.SetObject(k, e, KindZSet, codecZSet(t, 1.0, "a", -2.5, "b", math.Inf(1), "c", 0.0, "123", 1e300, "x"))
		})},
		{"zset large", mk(func(k []byte, e *Entry) { cs.SetObject(k, e, KindZSet, bigZ) })},
		{"sllog", mk(func(k []byte, e *Entry) {
			l := &SlidingLog{}
			l.Add(1_700_000_000_000_000, 1)
			l.Add(1_700_000_000_001_000, 3)
			cs.SetObject(k, e, KindSlidingLog, l)
		})},
		{"sllog trimmed", mk(func(k []byte, e *Entry) { cs.SetObject(k, e, KindSlidingLog, trimmed) })},
		{"sllog equal timestamps", mk(func(k []byte, e *Entry) { cs.SetObject(k, e, KindSlidingLog, sameTS) })},
		{"sllog empty", mk(func(k []byte, e *Entry) { cs.SetObject(k, e, KindSlidingLog, &SlidingLog{}) })},
		{"sllog at the time bounds", mk(func(k []byte, e *Entry) { cs.SetObject(k, e, KindSlidingLog, span) })},
		{"swindow", mk(func(k []byte, e *Entry) {
			cs.SetObject(k, e, KindSlidingWindow, &SlidingWindow{Start: 1_700_000_000_000, Cur: 7, Prev: 12})
		})},
		{"swindow negative start", mk(func(k []byte, e *Entry) {
			cs.SetObject(k, e, KindSlidingWindow, &SlidingWindow{Start: -60_000, Cur: 1})
		})},
		{"swindow start at the time bound", mk(func(k []byte, e *Entry) {
			cs.SetObject(k, e, KindSlidingWindow, &SlidingWindow{Start: -maxTime, Cur: math.MaxInt64, Prev: 1})
		})},
		{"hash compact", mk(hash(false, "tokens", "9", "ts", "1795307408539", "", "", "007", "-9223372036854775808", "a\x00b", "x"))},
		{"hash large", mk(hash(false, many...))},
		{"hash large with few fields", mk(hash(true, "a", "1", "b", string(bytes.Repeat([]byte("v"), 200))))},
		{"list compact", mk(list("1795307408539667", "", "007", "-9223372036854775808", "a\x00b", "x", "x"))},
		{"list large", mk(list(long...))},
		{"list of one large element", mk(list(string(bytes.Repeat([]byte("e"), 20000))))},
	}
}

// cs is the store the codec tests keep their entries in; fresh gives them
// a new key each.
var (
	cs      = New(Options{Shards: 1})
	csCount int
)

func fresh() ([]byte, *Entry) {
	csCount++
	k := []byte(fmt.Sprintf("codec-entry-%d-with-a-long-key", csCount))
	if csCount%2 == 0 {
		k = k[:len(k)-len("-with-a-long-key")] // inline keys too
	}
	e, _ := cs.Put(k, 0)
	return k, e
}

// requireSameValue checks that got holds what want holds.
func requireSameValue(t *testing.T, step int, name string, want, got *Entry) {
	t.Helper()
	require.Equal(t, want.Kind(), got.Kind(), "step %d (%s): kind", step, name)
	switch want.Kind() {
	case KindString:
		require.Equal(t, cs.AppendBytes(nil, want), cs.AppendBytes(nil, got), "step %d (%s): bytes", step, name)
		wi, wok := want.Int()
		gi, gok := got.Int()
		require.Equal(t, wok, gok, "step %d (%s): integer encoding", step, name)
		require.Equal(t, wi, gi, "step %d (%s): integer", step, name)
	case KindZSet:
		wz, _ := cs.Object(want).(*ZSet)
		if wz == nil {
			wz = &ZSet{}
		}
		gz := cs.Object(got).(*ZSet)
		require.Equal(t, codecZMembers(wz), codecZMembers(gz), "step %d (%s): members", step, name)
		require.Equal(t, wz.Encoding(), gz.Encoding(), "step %d (%s): encoding", step, name)
	case KindSlidingLog:
		wl, gl := cs.Object(want).(*SlidingLog), cs.Object(got).(*SlidingLog)
		require.Equal(t, wl.Len(), gl.Len(), "step %d (%s): entries", step, name)
		require.Equal(t, codecRuns(wl), codecRuns(gl), "step %d (%s): runs", step, name)
		require.Equal(t, wl.Newest(), gl.Newest(), "step %d (%s): newest", step, name)
	case KindSlidingWindow:
		require.Equal(t, *cs.Object(want).(*SlidingWindow), *cs.Object(got).(*SlidingWindow), "step %d (%s)", step, name)
	case KindList:
		wl, gl := cs.List(want), cs.List(got)
		require.Equal(t, lcontent(wl), lcontent(gl), "step %d (%s): elements", step, name)
		require.Equal(t, wl.Encoding(), gl.Encoding(), "step %d (%s): encoding", step, name)
	case KindHash:
		wh, gh := cs.Hash(want), cs.Hash(got)
		if wh.Encoding() == "listpack" {
			require.Equal(t, hcontent(wh), hcontent(gh), "step %d (%s): fields in order", step, name)
		}
		require.Equal(t, sortedPairs(hcontent(wh)), sortedPairs(hcontent(gh)), "step %d (%s): fields", step, name)
		require.Equal(t, wh.Encoding(), gh.Encoding(), "step %d (%s): encoding", step, name)
	}
}

func TestValueRoundTrip(t *testing.T) {
	for i, tt := range codecEntries(t) {
		enc := cs.AppendValue([]byte("prefix"), tt.e)[len("prefix"):]
		v, n, err := DecodeValue(append(enc, "trailing"...))
		require.NoError(t, err, "step %d (%s)", i, tt.name)
		require.Equal(t, len(enc), n, "step %d (%s): bytes used", i, tt.name)
		gk, got := fresh()
		cs.setValue(gk, got, &v)
		requireSameValue(t, i, tt.name, tt.e, got)
		require.Equal(t, enc, cs.AppendValue(nil, got), "step %d (%s): re-encoding differs", i, tt.name)
	}
}

func TestDumpRoundTripAndFooter(t *testing.T) {
	for i, tt := range codecEntries(t) {
		p := cs.AppendDump(nil, tt.e)
		v, err := DecodeDump(p)
		require.NoError(t, err, "step %d (%s)", i, tt.name)
		gk, got := fresh()
		cs.setValue(gk, got, &v)
		requireSameValue(t, i, tt.name, tt.e, got)
		// Every single-bit flip anywhere is caught by the footer.
		for j := range p {
			q := bytes.Clone(p)
			q[j] ^= 0x10
			_, err := DecodeDump(q)
			require.ErrorIs(t, err, ErrDumpPayload, "step %d (%s): flip at %d", i, tt.name, j)
		}
		_, err = DecodeDump(p[:len(p)-1])
		require.ErrorIs(t, err, ErrDumpPayload, "step %d (%s): truncated", i, tt.name)
	}
}

// withFooter seals a value body as a DUMP payload of the given version.
func withFooter(body []byte, version byte) []byte {
	p := append(bytes.Clone(body), 'R', 'K', version)
	return binary.LittleEndian.AppendUint32(p, crc32.Checksum(p, crcTable))
}

func TestDecodeDumpErrors(t *testing.T) {
	str := cs.AppendValue(nil, func() *Entry { k, e := fresh(); cs.SetBytes(k, e, []byte("v")); return e }())
	for i, tt := range []struct {
		name    string
		payload []byte
		want    error
	}{
		{"empty", nil, ErrDumpPayload},
		{"footer only", withFooter(nil, dumpVersion), ErrDumpPayload},
		{"other version", withFooter(str, dumpVersion+1), ErrDumpPayload},
		{"redis payload", []byte("\x00\x05hello\x0b\x00\x94\x0e\x07\x84\xbe\xd9\x1d\x04"), ErrDumpPayload},
		{"unknown tag", withFooter([]byte{0x7f, 1}, dumpVersion), ErrBadData},
		{"trailing bytes", withFooter(append(bytes.Clone(str), 0), dumpVersion), ErrBadData},
		{"string longer than payload", withFooter([]byte{tagString, 0x80, 0x80, 0x80, 0x80, 0x10}, dumpVersion), ErrBadData},
		{"zset count beyond payload", withFooter([]byte{tagZSet, 0xff, 0xff, 0xff, 0xff, 0x0f}, dumpVersion), ErrBadData},
		{"zset empty", withFooter([]byte{tagZSet, 0}, dumpVersion), ErrBadData},
		{"zset NaN score", withFooter(binary.LittleEndian.AppendUint64([]byte{tagZSet, 1}, math.Float64bits(math.NaN())), dumpVersion), ErrBadData},
		{"zset duplicate member", withFooter(append(binary.LittleEndian.AppendUint64(append(binary.LittleEndian.AppendUint64([]byte{tagZSet, 2}, 0), 1, 'm'), 0), 1, 'm'), dumpVersion), ErrBadData},
		{"hash empty", withFooter([]byte{tagHash, 0}, dumpVersion), ErrBadData},
		{"hash count beyond payload", withFooter([]byte{tagHash, 3, 1, 'f', 1, 'v'}, dumpVersion), ErrBadData},
		{"hash duplicate field", withFooter([]byte{tagHash, 2, 1, 'f', 1, 'v', 1, 'f', 1, 'w'}, dumpVersion), ErrBadData},
		{"hash value missing", withFooter([]byte{tagHash, 1, 1, 'f', 5, 'v'}, dumpVersion), ErrBadData},
		{"list empty", withFooter([]byte{tagList, 0}, dumpVersion), ErrBadData},
		{"list count beyond payload", withFooter([]byte{tagList, 3, 1, 'a', 1, 'b'}, dumpVersion), ErrBadData},
		{"list element beyond payload", withFooter([]byte{tagList, 1, 9, 'a'}, dumpVersion), ErrBadData},
		{"sllog count exceeds total", withFooter([]byte{tagSlidingLog, 2, 0, 5}, dumpVersion), ErrBadData},
		{"sllog runs short of total", withFooter([]byte{tagSlidingLog, 3, 0, 0}, dumpVersion), ErrBadData},
		{"sllog timestamp overflow", withFooter(binary.AppendUvarint(binary.AppendVarint([]byte{tagSlidingLog, 2}, math.MaxInt64), 0), dumpVersion), ErrBadData},
		{"swindow negative count", withFooter([]byte{tagSlidingWindow, 0, 1, 0}, dumpVersion), ErrBadData},
		// Times beyond ±maxTime: SL.THROTTLE's deadline, the newest
		// timestamp plus the window, would wrap negative, and
		// SW.THROTTLE's elapsed time, now minus the start, could wrap too.
		{"sllog timestamp near MaxInt64", withFooter(binary.AppendUvarint(binary.AppendVarint([]byte{tagSlidingLog, 2}, math.MaxInt64-10), 1), dumpVersion), ErrBadData},
		{"sllog timestamp past maxTime", withFooter(binary.AppendUvarint(binary.AppendVarint([]byte{tagSlidingLog, 1}, maxTime+1), 0), dumpVersion), ErrBadData},
		{"sllog timestamp before -maxTime", withFooter(binary.AppendUvarint(binary.AppendVarint([]byte{tagSlidingLog, 1}, math.MinInt64), 0), dumpVersion), ErrBadData},
		{"sllog delta past maxTime", withFooter(binary.AppendUvarint(binary.AppendUvarint([]byte{tagSlidingLog, 2, 0, 0}, maxTime+1), 0), dumpVersion), ErrBadData},
		{"swindow start near MaxInt64", withFooter(binary.AppendVarint(binary.AppendVarint(binary.AppendVarint([]byte{tagSlidingWindow}, math.MaxInt64), 1), 1), dumpVersion), ErrBadData},
		{"swindow start before -maxTime", withFooter(binary.AppendVarint(binary.AppendVarint(binary.AppendVarint([]byte{tagSlidingWindow}, -maxTime-1), 1), 1), dumpVersion), ErrBadData},
	} {
		_, err := DecodeDump(tt.payload)
		require.ErrorIs(t, err, tt.want, "step %d (%s): have %v", i, tt.name, err)
	}
}

func TestCodecCoversEveryKind(t *testing.T) {
	n := 0
	for k := KindNone + 1; k.String() != "none"; k++ {
		key, e := fresh()
		if k == KindString {
			cs.SetBytes(key, e, []byte("x"))
		} else {
			cs.SetObject(key, e, k, nil)
		}
		require.NotPanics(t, func() { cs.AppendValue(nil, e) }, "kind %s has no encoding", k)
		v, _, err := DecodeValue(cs.AppendValue(nil, e))
		if k == KindZSet || k == KindHash || k == KindList {
			// A nil set, hash or list encodes as empty, which no key may hold.
			require.ErrorIs(t, err, ErrBadData, "kind %s", k)
		} else {
			require.NoError(t, err, "kind %s", k)
			require.Equal(t, k, v.Kind())
		}
		n++
	}
	require.GreaterOrEqual(t, n, 4)
}

func TestAppendShardRecords(t *testing.T) {
	s, clk := newStore(t, 4)
	s.LockAll()
	want := map[string]int64{}
	for i := 0; i < 200; i++ {
		k := []byte(fmt.Sprintf("k%d", i))
		e, _ := s.Put(k, clk.ms())
		s.SetInt(e, int64(i))
		switch i % 3 {
		case 1:
			s.SetExpire(k, e, clk.ms()+60_000)
			want[string(k)] = clk.ms() + 60_000
		case 2:
			s.SetExpire(k, e, clk.ms()+1) // expired by the time of the capture
		default:
			want[string(k)] = 0
		}
	}
	s.UnlockAll()
	clk.ns.Add(2e6)
	got := map[string]int64{}
	total := 0
	for i := 0; i < s.NumShards(); i++ {
		s.Lock(i)
		buf, n := s.AppendShard(nil, i, clk.ms())
		s.Unlock(i)
		total += n
		for off := 0; off < len(buf); {
			key, exp, v, used, err := DecodeRecord(buf[off:])
			require.NoError(t, err)
			require.Equal(t, KindString, v.Kind())
			got[string(key)] = exp
			off += used
		}
	}
	require.Equal(t, len(want), total)
	require.Equal(t, want, got)
}

// FuzzDecodeDump: garbage never panics; whatever decodes re-encodes to the
// same bytes.
func FuzzDecodeDump(f *testing.F) {
	for _, tt := range codecEntries(f) {
		f.Add(cs.AppendDump(nil, tt.e))
	}
	f.Add([]byte{})
	f.Add(withFooter([]byte{tagZSet, 0xff, 0xff, 0xff, 0x7f}, dumpVersion))
	f.Fuzz(func(t *testing.T, p []byte) {
		v, err := DecodeDump(p)
		if err != nil {
			require.True(t, errors.Is(err, ErrDumpPayload) || errors.Is(err, ErrBadData), "error %v", err)
			return
		}
		k, e := fresh()
		cs.setValue(k, e, &v)
		_, err = DecodeDump(cs.AppendDump(nil, e))
		require.NoError(t, err)
	})
}

// FuzzDecodeRecord: garbage bodies (no checksum to hide behind) never
// panic, and decoding is stable under re-encoding.
func FuzzDecodeRecord(f *testing.F) {
	for _, tt := range codecEntries(f) {
		f.Add(cs.AppendRecord(nil, []byte("key"), tt.e))
	}
	f.Add([]byte{1, 'k', 0, tagSlidingLog, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		key, exp, v, n, err := DecodeRecord(b)
		if err != nil {
			require.ErrorIs(t, err, ErrBadData)
			return
		}
		require.LessOrEqual(t, n, len(b))
		k, e := fresh()
		cs.setValue(k, e, &v)
		e.expireAt = exp
		again := cs.AppendRecord(nil, key, e)
		key2, exp2, v2, n2, err := DecodeRecord(again)
		require.NoError(t, err)
		require.Equal(t, len(again), n2)
		require.Equal(t, key, key2)
		require.Equal(t, exp, exp2)
		k2, e2 := fresh()
		cs.setValue(k2, e2, &v2)
		e2.expireAt = exp2
		require.Equal(t, again, cs.AppendRecord(nil, key2, e2))
	})
}
