package shards

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type clock struct{ ns atomic.Int64 }

func (c *clock) now() int64 { return c.ns.Load() }
func (c *clock) ms() int64  { return c.ns.Load() / 1e6 }

func newStore(t testing.TB, n int) (*Store, *clock) {
	clk := &clock{}
	clk.ns.Store(1_700_000_000 * 1e9)
	s := New(Options{Shards: n, Now: clk.now})
	t.Cleanup(s.Close)
	return s, clk
}

func TestNewRoundsShards(t *testing.T) {
	for i, tt := range []struct{ in, want int }{{1, 1}, {3, 4}, {16, 16}, {17, 32}, {1 << 20, NumSlots}} {
		s := New(Options{Shards: tt.in})
		if s.NumShards() != tt.want {
			t.Errorf("step %d: Shards %d → %d shards, want %d", i, tt.in, s.NumShards(), tt.want)
		}
	}
	require.Greater(t, New(Options{}).NumShards(), 0)
}

func TestPutLookupDelete(t *testing.T) {
	s, clk := newStore(t, 4)
	s.LockAll()
	defer s.UnlockAll()
	k := []byte("user:1")
	require.Nil(t, s.Lookup(k, clk.ms()))
	e, existed := s.Put(k, clk.ms())
	require.False(t, existed)
	require.Equal(t, KindNone, e.Kind())
	s.SetBytes(k, e, []byte("hello"))
	got := s.Lookup(k, clk.ms())
	require.NotNil(t, got)
	require.Equal(t, "hello", string(s.AppendBytes(nil, got)))
	e2, existed := s.Put(k, clk.ms())
	require.True(t, existed)
	require.Same(t, e, e2)
	require.Equal(t, 1, s.Len())
	require.True(t, s.Delete(k, clk.ms()))
	require.False(t, s.Delete(k, clk.ms()))
	require.Equal(t, 0, s.Len())
}

func TestEntryIntEncoding(t *testing.T) {
	s, _ := newStore(t, 1)
	s.LockAll()
	defer s.UnlockAll()
	tests := []struct {
		in     string
		isInt  bool
		intVal int64
	}{
		{"0", true, 0}, {"-1", true, -1}, {"123", true, 123},
		{"9223372036854775807", true, 1<<63 - 1}, {"-9223372036854775808", true, -1 << 63},
		{"9223372036854775808", false, 0}, {"007", false, 0}, {"-0", false, 0}, {"+1", false, 0},
		{"", false, 0}, {"1 ", false, 0}, {"abc", false, 0}, {"-", false, 0},
	}
	for i, tt := range tests {
		k := []byte(fmt.Sprint("k", i))
		e, _ := s.Put(k, 0)
		s.SetBytes(k, e, []byte(tt.in))
		n, ok := e.Int()
		if ok != tt.isInt || n != tt.intVal {
			t.Errorf("step %d (%q): Int() = %d, %v; want %d, %v", i, tt.in, n, ok, tt.intVal, tt.isInt)
		}
		if string(s.AppendBytes(nil, e)) != tt.in || s.StrLen(e) != len(tt.in) {
			t.Errorf("step %d (%q): bytes round trip gave %q (len %d)", i, tt.in, s.AppendBytes(nil, e), s.StrLen(e))
		}
	}
}

func TestLazyExpiry(t *testing.T) {
	s, clk := newStore(t, 4)
	s.LockAll()
	defer s.UnlockAll()
	k := []byte("k")
	e, _ := s.Put(k, clk.ms())
	s.SetInt(e, 1)
	s.SetExpire(k, e, clk.ms()+1000)
	require.Equal(t, 1, s.Expires())
	clk.ns.Add(999 * 1e6)
	require.NotNil(t, s.Lookup(k, clk.ms()))
	clk.ns.Add(1e6)
	require.Nil(t, s.Lookup(k, clk.ms()), "key must be gone at its deadline")
	require.Equal(t, 0, s.Len())
	require.Equal(t, 0, s.Expires())
	require.Equal(t, int64(1), s.Stats().ExpiredKeys)
	// Put over an expired key starts fresh.
	e, _ = s.Put(k, clk.ms())
	s.SetInt(e, 1)
	s.SetExpire(k, e, clk.ms()+10)
	clk.ns.Add(20 * 1e6)
	e, existed := s.Put(k, clk.ms())
	require.False(t, existed)
	require.Equal(t, int64(0), e.ExpireAt())
}

// PurgeExpired deletes, in one call, exactly the keys whose deadline is at
// or before the given time, in every shard, and counts them apart from the
// active expiry's expired_keys.
func TestPurgeExpired(t *testing.T) {
	s, clk := newStore(t, 8)
	now := clk.ms()
	s.LockAll()
	for i := 0; i < 30000; i++ {
		k := []byte(fmt.Sprintf("key:%d", i))
		e, _ := s.Put(k, now)
		s.SetInt(e, int64(i))
		switch i % 3 {
		case 0:
			s.SetExpire(k, e, now-1) // passed
		case 1:
			s.SetExpire(k, e, now) // passes at now
		}
	}
	s.UnlockAll()
	require.Equal(t, 20000, s.PurgeExpired(now))
	require.Zero(t, s.PurgeExpired(now))
	s.LockAll()
	defer s.UnlockAll()
	require.Equal(t, 10000, s.Len())
	require.Equal(t, 0, s.Expires())
	require.Zero(t, s.Stats().ExpiredKeys)
	for i := 2; i < 30000; i += 3 {
		require.NotNil(t, s.Lookup([]byte(fmt.Sprintf("key:%d", i)), now), i)
	}
}

func TestActiveExpiry(t *testing.T) {
	s, clk := newStore(t, 8)
	s.LockAll()
	for i := 0; i < 10000; i++ {
		k := []byte(fmt.Sprintf("key:%d", i))
		e, _ := s.Put(k, clk.ms())
		s.SetInt(e, int64(i))
		if i%2 == 0 {
			s.SetExpire(k, e, clk.ms()+100)
		}
	}
	s.UnlockAll()
	clk.ns.Add(200 * 1e6)
	deleted := 0
	for i := 0; i < 1000 && deleted < 5000; i++ {
		deleted += s.ExpireCycle(clk.ms(), time.Second)
	}
	require.Equal(t, 5000, deleted)
	s.LockAll()
	defer s.UnlockAll()
	require.Equal(t, 5000, s.Len())
	require.Equal(t, 0, s.Expires())
}

// putExpiring writes integers to key:0 .. key:n-1, each expiring 100 ms
// after the clock's time.
func putExpiring(s *Store, clk *clock, n int) {
	s.LockAll()
	defer s.UnlockAll()
	for i := 0; i < n; i++ {
		k := []byte(fmt.Sprintf("key:%d", i))
		e, _ := s.Put(k, clk.ms())
		s.SetInt(e, int64(i))
		s.SetExpire(k, e, clk.ms()+100)
	}
}

// With a yield function set, a long cycle calls it between slices of its
// work, and the time spent in it is not charged to the budget: here each
// call takes longer than the whole budget, and the cycle still goes on
// after it (charged, it would stop after the first).
func TestActiveExpiryYieldsBetweenSlices(t *testing.T) {
	s, clk := newStore(t, 1)
	const n = 100000
	putExpiring(s, clk, n)
	clk.ns.Add(200 * 1e6)
	const budget = 20 * time.Millisecond
	yields := 0
	s.SetYield(func() {
		yields++
		time.Sleep(budget + 10*time.Millisecond)
	})
	deleted := s.ExpireCycle(clk.ms(), budget)
	require.Positive(t, deleted)
	require.GreaterOrEqual(t, yields, 2, "a cycle of %d deletions yields after every %v of work", deleted, expireSlice)
	s.SetYield(nil)
	yields = 0
	for i := 0; i < 1000 && deleted < n; i++ {
		deleted += s.ExpireCycle(clk.ms(), time.Second)
	}
	require.Equal(t, n, deleted)
	require.Zero(t, yields, "SetYield(nil) removes the function")
}

// Each compaction after a mass expiry is followed by a yield: every shard
// becomes sparse in the same cycle, and 16 compactions back to back would
// hold the event loops for tens of milliseconds. Here every yield that
// sees more storage dropped than the last one saw counts: one per
// compaction.
func TestActiveExpiryYieldsAfterCompaction(t *testing.T) {
	const shards, perShard = 4, 8 * chunkLen
	s, clk := newStore(t, shards)
	putExpiring(s, clk, shards*perShard)
	clk.ns.Add(200 * 1e6)
	var seen int64
	drops := 0
	s.SetYield(func() {
		if d := s.Dropped(); d > seen {
			drops++
			seen = d
		}
	})
	defer s.SetYield(nil)
	for i := 0; i < 100 && (i == 0 || s.KeysApprox() > 0); i++ {
		s.ExpireCycle(clk.ms(), time.Second)
	}
	s.ExpireCycle(clk.ms(), time.Second)
	compacted := 0
	for i := range s.shards {
		if s.shards[i].dropped.Load() > 0 {
			compacted++
		}
	}
	require.Equal(t, shards, compacted, "every shard compacted once")
	require.Equal(t, compacted, drops, "a yield right after each compaction")
}

// TestActiveExpiryPassesOverFreeIDs: after a mass expiry a shard's ids
// are mostly free, and keys that expired behind the cursor are reached in
// a few cycles, not one batch per cycle (about 186 cycles here).
func TestActiveExpiryPassesOverFreeIDs(t *testing.T) {
	s, clk := newStore(t, 1)
	sh := &s.shards[0]
	const ids, behindFrom, behindTo = 200000, 150000, 165000
	key := func(i int) []byte { return fmt.Appendf(nil, "key:%d", i) }
	s.LockAll()
	stragglers := 0
	for i := 0; i < ids; i++ {
		e, _ := s.Put(key(i), clk.ms())
		s.SetInt(e, int64(i))
		switch {
		case i%100 == 0: // a key that stays
			s.SetExpire(key(i), e, clk.ms()+1e9)
		case i >= behindFrom && i < behindTo: // expires behind the cursor
			s.SetExpire(key(i), e, clk.ms()+100)
			stragglers++
		}
	}
	for i := 0; i < ids; i++ { // the rest goes, leaving its ids free
		if i%100 != 0 && (i < behindFrom || i >= behindTo) {
			s.Delete(key(i), clk.ms())
		}
	}
	require.False(t, sh.sparse(), "not compacted on the way")
	sh.expireNext = behindTo
	s.UnlockAll()
	clk.ns.Add(200 * 1e6)
	deleted, cycles := 0, 0
	for ; deleted < stragglers && cycles < 1000; cycles++ {
		deleted += s.ExpireCycle(clk.ms(), time.Second)
	}
	require.Equal(t, stragglers, deleted)
	require.LessOrEqual(t, cycles, 20, "cycles to reach the keys behind the cursor")
}

func TestScanVisitsEveryKeyOnce(t *testing.T) {
	s, clk := newStore(t, 16)
	s.LockAll()
	defer s.UnlockAll()
	const n = 5000
	for i := 0; i < n; i++ {
		e, _ := s.Put([]byte(fmt.Sprintf("k%d", i)), clk.ms())
		s.SetInt(e, 1)
	}
	seen := map[string]int{}
	cursor, calls := uint64(0), 0
	for {
		cursor = s.Scan(cursor, 10, clk.ms(), func(k []byte, _ *Entry) { seen[string(k)]++ })
		calls++
		if cursor == 0 {
			break
		}
	}
	require.Len(t, seen, n)
	for k, c := range seen {
		require.Equal(t, 1, c, "key %s returned %d times", k, c)
	}
	require.Greater(t, calls, 10)
}

func TestWatchVersions(t *testing.T) {
	s, clk := newStore(t, 4)
	s.LockAll()
	defer s.UnlockAll()
	k := []byte("w")
	v0 := s.Watch(k)
	require.Equal(t, v0, s.WatchVersion(k))
	e, _ := s.Put(k, clk.ms())
	s.SetInt(e, 1)
	v1 := s.WatchVersion(k)
	require.NotEqual(t, v0, v1, "Put must bump the version")
	s.SetExpire(k, e, clk.ms()+5)
	v2 := s.WatchVersion(k)
	require.NotEqual(t, v1, v2, "SetExpire must bump the version")
	clk.ns.Add(10 * 1e6)
	require.Nil(t, s.Lookup(k, clk.ms()))
	v3 := s.WatchVersion(k)
	require.NotEqual(t, v2, v3, "expiry must bump the version")
	s.Flush()
	require.Equal(t, v3, s.WatchVersion(k), "Flush leaves a missing key's version (Redis's touchAllWatchedKeysInDb)")
	e, _ = s.Put(k, clk.ms())
	s.SetInt(e, 1)
	v4 := s.WatchVersion(k)
	s.Flush()
	require.NotEqual(t, v4, s.WatchVersion(k), "Flush must bump an existing key's version")
	s.Unwatch(k)
	require.Empty(t, s.shards[s.ShardIndex(k)].watched)
}

func TestRename(t *testing.T) {
	s, clk := newStore(t, 4)
	s.LockAll()
	defer s.UnlockAll()
	e, _ := s.Put([]byte("a"), clk.ms())
	s.SetBytes([]byte("a"), e, []byte("va"))
	s.SetExpire([]byte("a"), e, clk.ms()+1000)
	require.True(t, s.Rename([]byte("a"), []byte("b"), clk.ms()))
	require.Nil(t, s.Lookup([]byte("a"), clk.ms()))
	got := s.Lookup([]byte("b"), clk.ms())
	require.NotNil(t, got)
	require.Equal(t, clk.ms()+1000, got.ExpireAt())
	require.Equal(t, 1, s.Len())
	require.Equal(t, 1, s.Expires())
	require.False(t, s.Rename([]byte("missing"), []byte("c"), clk.ms()))
}

func BenchmarkLookup(b *testing.B) {
	s, clk := newStore(b, 16)
	keys := make([][]byte, 1024)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("rl:%d", i))
		s.LockAll()
		e, _ := s.Put(keys[i], clk.ms())
		s.SetInt(e, int64(i))
		s.UnlockAll()
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			k := keys[i&1023]
			sh := s.ShardIndex(k)
			s.Lock(sh)
			s.Lookup(k, clk.ms())
			s.Unlock(sh)
			i++
		}
	})
}

func TestLookupAnyReuse(t *testing.T) {
	s, clk := newStore(t, 4)
	s.LockAll()
	defer s.UnlockAll()
	k := []byte("rl:1")
	e, live := s.LookupAny(k, clk.ms())
	require.Nil(t, e)
	require.False(t, live)
	e, _ = s.Put(k, clk.ms())
	s.SetInt(e, 42)
	s.SetExpire(k, e, clk.ms()+10)
	v := s.Watch(k)
	got, live := s.LookupAny(k, clk.ms())
	require.Same(t, e, got)
	require.True(t, live)
	clk.ns.Add(20 * 1e6)
	got, live = s.LookupAny(k, clk.ms())
	require.Same(t, e, got, "an expired entry is handed back, not deleted")
	require.False(t, live)
	require.Nil(t, s.Lookup(append([]byte(nil), "other"...), clk.ms()))
	s.Reuse(k, got)
	require.Equal(t, KindNone, got.Kind())
	require.NotEqual(t, v, s.WatchVersion(k), "reuse is a change WATCH sees")
	s.SetInt(got, 7)
	s.SetExpire(k, got, clk.ms()+1000)
	live2 := s.Lookup(k, clk.ms())
	require.Same(t, got, live2)
	n, _ := live2.Int()
	require.Equal(t, int64(7), n)
	require.Equal(t, 1, s.Len())
	require.Equal(t, 1, s.Expires())
	require.Equal(t, int64(1), s.Stats().ExpiredKeys)
	// An expired entry left alone is still absent for everyone else.
	clk.ns.Add(2000 * 1e6)
	s.LookupAny(k, clk.ms())
	require.Nil(t, s.Lookup(k, clk.ms()))
	require.Equal(t, 0, s.Len())
}

// The expiry cycles' statistics follow Redis's: expired_stale_perc is a
// moving average (weight 0.05) of the share of sampled deadlines found
// passed, and a cycle out of time counts in expired_time_cap_reached_count.
func TestExpireCycleStats(t *testing.T) {
	s, clk := newStore(t, 1)
	now := clk.ms()
	s.LockAll()
	for i := 0; i < 4000; i++ {
		k := []byte(fmt.Sprintf("key:%d", i))
		e, _ := s.Put(k, now)
		s.SetExpire(k, e, now+1)
	}
	s.UnlockAll()
	s.ExpireCycle(now, time.Second) // nothing passed: the share is 0
	require.Zero(t, s.Stats().ExpiredStale)
	require.Zero(t, s.Stats().ExpireTimeCapped)

	// All passed: one batch with no time left samples expireBatch keys,
	// all expired.
	clk.ns.Add(10 * 1e6)
	s.ExpireCycle(clk.ms(), -1)
	st := s.Stats()
	require.InDelta(t, 0.05, st.ExpiredStale, 1e-9)
	require.Equal(t, int64(1), st.ExpireTimeCapped)
	s.ExpireCycle(clk.ms(), -1)
	require.InDelta(t, 0.05+0.95*0.05, s.Stats().ExpiredStale, 1e-9)

	s.ResetStats()
	require.Zero(t, s.Stats().ExpiredStale)
	require.Zero(t, s.Stats().ExpireTimeCapped)
}

// AvgTTL follows Redis's db->avg_ttl: the first cycle's mean TTL of the
// live keys sampled, then a moving average (49/50 old, 1/50 new); FLUSHALL
// resets it.
func TestAvgTTL(t *testing.T) {
	s, clk := newStore(t, 1)
	now := clk.ms()
	require.Zero(t, s.AvgTTL())
	s.LockAll()
	for i := 0; i < 10; i++ {
		k := []byte(fmt.Sprintf("key:%d", i))
		e, _ := s.Put(k, now)
		if i < 5 {
			s.SetExpire(k, e, now+int64(i+1)*1000) // 1 to 5 s
		}
	}
	s.UnlockAll()
	s.ExpireCycle(now, time.Second)
	first := int64(3000)/50*49 + 3000/50
	require.Equal(t, first, s.AvgTTL())
	clk.ns.Add(1000 * 1e6) // one expired, the others 1 s closer: 1 to 4 s
	s.ExpireCycle(clk.ms(), time.Second)
	require.Equal(t, first/50*49+2500/50, s.AvgTTL())
	s.LockAll()
	s.Flush()
	s.UnlockAll()
	require.Zero(t, s.AvgTTL())
}
