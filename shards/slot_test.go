package shards

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// crc16Bitwise is the textbook, table-free CRC16-XMODEM (polynomial 0x1021,
// initial value 0, MSB first), the reference the table is checked against.
func crc16Bitwise(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc ^= uint16(c) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

func TestCRC16Table(t *testing.T) {
	for i := range 256 {
		assert.Equal(t, crc16Bitwise([]byte{byte(i)}), crc16tab[i], "crc16tab[%d]", i)
	}
}

func TestCRC16(t *testing.T) {
	tests := []struct {
		in   string
		want uint16
	}{
		// The check value of CRC-16/XMODEM, also asserted by Redis's
		// crc16 self-test in src/crc16.c.
		{"123456789", 0x31C3},
		{"", 0x0000},
		{"\x00", 0x0000},
		{"A", 0x58E5},
		{"\xff", 0x1EF0},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, crc16([]byte(tc.in)), "crc16(%q) []byte", tc.in)
		assert.Equal(t, tc.want, crc16(tc.in), "crc16(%q) string", tc.in)
		assert.Equal(t, tc.want, crc16Bitwise([]byte(tc.in)), "crc16Bitwise(%q)", tc.in)
	}
}

// TestKeySlot's expectations were read from a Redis 7.0.15 server started
// with cluster-enabled, through CLUSTER KEYSLOT.
func TestKeySlot(t *testing.T) {
	tests := []struct {
		name string
		key  string
		want uint16
	}{
		{"plain foo", "foo", 12182},
		{"plain bar", "bar", 5061},
		{"plain zap", "zap", 6469},
		{"check string", "123456789", 12739}, // 0x31C3 & 0x3FFF
		{"empty key", "", 0},
		{"single byte", "a", 15495},
		{"tag user1000 following", "{user1000}.following", 3443},
		{"tag user1000 followers", "{user1000}.followers", 3443},
		{"tag equals plain key", "{a}", 15495},
		{"tag with colon", "{user:1}:x", 10778},
		{"plain user:1", "user:1", 10778},
		{"first tag empty hashes whole key", "foo{}{bar}", 8363},
		{"nested open brace is part of tag", "foo{{bar}}zap", 4015},
		{"tag {bar hashed alone", "{bar", 4015},
		{"only the first tag counts", "foo{bar}{zap}", 5061},
		{"empty braces", "{}", 15257},
		{"lone open brace", "{", 4092},
		{"lone close brace", "}", 12090},
		{"double braces hash the inner open brace", "{{}}", 4092},
		{"unterminated tag", "a{b", 13340},
		{"close before open ignored", "a}b{c}", 7365},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, KeySlot([]byte(tc.key)), "KeySlot(%q)", tc.key)
			assert.Equal(t, tc.want, KeySlotString(tc.key), "KeySlotString(%q)", tc.key)
		})
	}
}

func TestKeySlotHashTagRules(t *testing.T) {
	slot := func(s string) uint16 { return KeySlotString(s) }

	assert.Equal(t, slot("{user1000}.following"), slot("{user1000}.followers"))
	assert.Equal(t, slot("user1000"), slot("{user1000}.following"), "a tag hashes like the bare tag")
	assert.Equal(t, slot("bar"), slot("foo{bar}{zap}"), "only the first tag counts")
	assert.Equal(t, slot("{bar"), slot("foo{{bar}}zap"), "the tag runs from the first '{' to the next '}'")
	assert.Equal(t, crc16("foo{}{bar}")&slotMask, slot("foo{}{bar}"), "an empty first tag hashes the whole key")
	assert.NotEqual(t, slot("bar"), slot("foo{}{bar}"))
	assert.Equal(t, crc16("abc{")&slotMask, slot("abc{"), "no '}' hashes the whole key")
	assert.Equal(t, crc16("}abc")&slotMask, slot("}abc"), "a '}' without '{' hashes the whole key")
}

func TestKeySlotRange(t *testing.T) {
	seen := make(map[uint16]bool)
	for i := range 200000 {
		key := []byte(strings.Repeat("k", i%7) + string(rune('a'+i%26)) + itoa(i))
		s := KeySlot(key)
		require.Less(t, s, uint16(16384))
		require.Equal(t, s, KeySlotString(string(key)))
		seen[s] = true
	}
	assert.Len(t, seen, 16384, "CRC16 spreads keys over every slot")
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b [20]byte
	n := len(b)
	for ; i > 0; i /= 10 {
		n--
		b[n] = byte('0' + i%10)
	}
	return string(b[n:])
}

// keySlotReference is a direct, allocation-happy transcription of
// keyHashSlot, used as the fuzzing oracle.
func keySlotReference(key []byte) uint16 {
	s := strings.IndexByte(string(key), '{')
	if s < 0 {
		return crc16Bitwise(key) & 0x3FFF
	}
	e := strings.IndexByte(string(key[s+1:]), '}')
	if e <= 0 {
		return crc16Bitwise(key) & 0x3FFF
	}
	return crc16Bitwise(key[s+1:s+1+e]) & 0x3FFF
}

func FuzzKeySlot(f *testing.F) {
	for _, seed := range []string{"", "foo", "{user1000}.following", "foo{}{bar}", "foo{{bar}}zap", "foo{bar}{zap}", "{", "}", "{}", "\xff{\x00}"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, key []byte) {
		got := KeySlot(key)
		if got >= 16384 {
			t.Fatalf("KeySlot(%q) = %d, out of range", key, got)
		}
		if s := KeySlotString(string(key)); s != got {
			t.Fatalf("KeySlotString(%q) = %d, KeySlot = %d", key, s, got)
		}
		if want := keySlotReference(key); got != want {
			t.Fatalf("KeySlot(%q) = %d, reference %d", key, got, want)
		}
	})
}

func TestKeySlotAllocs(t *testing.T) {
	key := []byte("{user1000}.following")
	skey := "{user1000}.following"
	var sink uint16
	allocs := testing.AllocsPerRun(100, func() {
		sink += KeySlot(key)
		sink += KeySlotString(skey)
	})
	assert.Zero(t, allocs)
	_ = sink
}

var slotSink uint16

func BenchmarkKeySlot(b *testing.B) {
	benchmarks := []struct {
		name string
		key  string
	}{
		{"short", "foo"},
		{"tagged", "{user1000}.following"},
		{"long", strings.Repeat("ratekv:bucket:", 8)},
	}
	for _, bm := range benchmarks {
		key := []byte(bm.key)
		b.Run(bm.name+"/bytes", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(key)))
			for b.Loop() {
				slotSink = KeySlot(key)
			}
		})
		b.Run(bm.name+"/string", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bm.key)))
			for b.Loop() {
				slotSink = KeySlotString(bm.key)
			}
		})
	}
}

func TestEachInSlot(t *testing.T) {
	s := New(Options{Shards: 4})
	defer s.Close()
	want := map[uint16][]string{}
	for i := 0; i < 300; i++ {
		k := fmt.Sprintf("k%d", i)
		if i%3 == 0 {
			k = fmt.Sprintf("{tag}%d", i)
		}
		s.LockAll()
		e, _ := s.Put([]byte(k), 0)
		s.SetInt(e, 1)
		s.UnlockAll()
		want[KeySlotString(k)] = append(want[KeySlotString(k)], k)
	}
	tag := KeySlotString("tag")
	for slot, keys := range want {
		var have []string
		s.Lock(s.SlotShard(slot))
		s.EachInSlot(slot, 0, func(k []byte) bool { have = append(have, string(k)); return true })
		s.Unlock(s.SlotShard(slot))
		sort.Strings(have)
		sort.Strings(keys)
		if !slices.Equal(have, keys) {
			t.Fatalf("slot %d: have %q, want %q", slot, have, keys)
		}
	}
	n := 0
	s.EachInSlot(tag, 0, func([]byte) bool { n++; return n < 5 })
	if n != 5 {
		t.Fatalf("EachInSlot went on after false: %d calls", n)
	}
}
