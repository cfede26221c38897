package shards

import (
	"fmt"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
)

// fill puts the keys of spec into a one-shard store: deadline 0 is a
// persistent key, else the key's deadline in ms after now.
func fill(t *testing.T, spec map[string]int64) (*Store, int64) {
	t.Helper()
	s, clk := newStore(t, 1)
	now := clk.ms()
	s.LockAll()
	defer s.UnlockAll()
	for k, d := range spec {
		e, _ := s.Put([]byte(k), now)
		s.SetInt(e, 1)
		if d != 0 {
			s.SetExpire([]byte(k), e, now+d)
		}
	}
	return s, now
}

// evictAll evicts from shard 0 until EvictIn says there is nothing left,
// and returns the keys in the order they went.
func evictAll(s *Store, p EvictPolicy, samples int, now int64) []string {
	var out []string
	s.LockAll()
	defer s.UnlockAll()
	for {
		k, _, _, ok := s.EvictIn(0, p, samples, now, nil)
		if !ok {
			return out
		}
		out = append(out, string(k))
	}
}

// TestEvictPolicies checks which keys each policy takes from constructed
// keyspaces: the volatile policies never a persistent key, volatile-ttl the
// nearest deadline first (64 samples of a 6-key shard see every key but
// with a chance of 6·(5/6)^64 ≈ 5e-5 at worst), allkeys-random every key.
func TestEvictPolicies(t *testing.T) {
	keyspace := map[string]int64{
		"p1": 0, "p2": 0, "p3": 0, "a-long-persistent-key-in-the-arena": 0,
		"t5": 5000, "t1": 1000, "t3": 3000, "t2": 2000, "t4": 4000, "t6-a-long-key-in-the-arena": 6000,
	}
	volatile := []string{"t1", "t2", "t3", "t4", "t5", "t6-a-long-key-in-the-arena"}
	all := []string{"a-long-persistent-key-in-the-arena", "p1", "p2", "p3", "t1", "t2", "t3", "t4", "t5", "t6-a-long-key-in-the-arena"}
	for i, tt := range []struct {
		policy  EvictPolicy
		samples int
		want    []string // in order
		anyOrd  bool     // want is a set
	}{
		{EvictNone, 5, nil, false},
		{EvictVolatileTTL, 64, volatile, false},
		{EvictVolatileRandom, 5, volatile, true},
		{EvictVolatileTTL, 1, volatile, true},
		{EvictAllKeysRandom, 5, all, true},
	} {
		s, now := fill(t, keyspace)
		got := evictAll(s, tt.policy, tt.samples, now)
		if tt.anyOrd {
			sort.Strings(got)
		}
		require.Equal(t, tt.want, got, "step %d: policy %d", i, tt.policy)
		st := s.Stats()
		require.Equal(t, int64(len(tt.want)), st.EvictedKeys, "step %d: evicted_keys", i)
		require.Zero(t, st.ExpiredKeys, "step %d", i)
		s.LockAll()
		require.Equal(t, len(keyspace)-len(tt.want), s.Len(), "step %d: keys left", i)
		s.UnlockAll()
	}
}

// TestEvictRandomSpreads: allkeys-random's first pick from a shard of 100
// keys is not always the same key (a probe that always found the first
// used entry would pass TestEvictPolicies).
func TestEvictRandomSpreads(t *testing.T) {
	spec := map[string]int64{}
	for i := range 100 {
		spec[fmt.Sprintf("k%d", i)] = 0
	}
	first := map[string]bool{}
	for range 20 {
		s, now := fill(t, spec)
		s.LockAll()
		k, _, _, ok := s.EvictIn(0, EvictAllKeysRandom, 5, now, nil)
		s.UnlockAll()
		require.True(t, ok)
		first[string(k)] = true
	}
	require.Greater(t, len(first), 5, "20 first picks among 100 keys")
}

// TestEvictExpiredFirst: a sampled key whose deadline has passed is taken
// first and counted as expired, not evicted.
func TestEvictExpiredFirst(t *testing.T) {
	s, now := fill(t, map[string]int64{"gone": 10, "a": 1000, "b": 2000, "p": 0})
	s.LockAll()
	k, freed, expired, ok := s.EvictIn(0, EvictVolatileTTL, 64, now+100, nil)
	s.UnlockAll()
	require.True(t, ok)
	require.Equal(t, "gone", string(k))
	require.True(t, expired)
	require.Equal(t, entryBytes, freed)
	st := s.Stats()
	require.Equal(t, int64(1), st.ExpiredKeys)
	require.Zero(t, st.EvictedKeys)
}

// TestEvictSparseShard: a shard whose keys are few among many free slots
// (every probe may land on free ones) still gives its keys up.
func TestEvictSparseShard(t *testing.T) {
	s, clk := newStore(t, 1)
	now := clk.ms()
	s.LockAll()
	defer s.UnlockAll()
	for i := range 5000 {
		e, _ := s.Put(fmt.Appendf(nil, "k%d", i), now)
		s.SetInt(e, 1)
		if i == 4321 {
			s.SetExpire(fmt.Appendf(nil, "k%d", i), e, now+1000)
		}
	}
	for i := range 5000 {
		if i != 4321 && i != 17 {
			require.True(t, s.Delete(fmt.Appendf(nil, "k%d", i), now))
		}
	}
	k, _, _, ok := s.EvictIn(0, EvictVolatileRandom, 5, now, nil)
	require.True(t, ok)
	require.Equal(t, "k4321", string(k))
	_, _, _, ok = s.EvictIn(0, EvictVolatileRandom, 5, now, nil)
	require.False(t, ok, "k17 is persistent")
	k, _, _, ok = s.EvictIn(0, EvictAllKeysRandom, 5, now, nil)
	require.True(t, ok)
	require.Equal(t, "k17", string(k))
}

// TestLiveBytes: Live follows keys and long strings as they come and go,
// EvictIn's freed is what the key held, and deleted keys' slots show as
// Slack.
func TestLiveBytes(t *testing.T) {
	s, clk := newStore(t, 4)
	now := clk.ms()
	long := []byte("a-key-longer-than-fourteen-bytes")
	val := make([]byte, 100)
	s.LockAll()
	e, _ := s.Put([]byte("short"), now)
	s.SetInt(e, 7)
	require.Equal(t, entryBytes, s.Live(), "a short key holding an integer")
	e, _ = s.Put(long, now)
	s.SetBytes(long, e, val)
	str := int64(cap(s.ref(e).str))
	require.Equal(t, 2*entryBytes+int64(len(long))+refBytes+str, s.Live(), "a long key holding a long string")
	s.SetBytes(long, e, []byte("tiny"))
	require.Equal(t, 2*entryBytes+int64(len(long)), s.Live(), "the string moved into the entry")
	s.SetBytes(long, e, val)
	require.True(t, s.Rename(long, []byte("renamed-to-another-long-key"), now), "rename moves the value")
	require.Equal(t, 2*entryBytes+int64(len("renamed-to-another-long-key"))+refBytes+str, s.Live())
	s.UnlockAll()
	slack := s.Slack()
	s.LockAll()
	require.True(t, s.Delete([]byte("short"), now))
	s.UnlockAll()
	require.Equal(t, slack+entryBytes, s.Slack(), "the short key's slot is free for the next key")
	s.LockAll()
	i := s.ShardIndex([]byte("renamed-to-another-long-key"))
	_, freed, _, ok := s.EvictIn(i, EvictAllKeysRandom, 5, now, nil)
	require.True(t, ok)
	require.Equal(t, entryBytes+int64(len("renamed-to-another-long-key"))+refBytes+str, freed)
	require.Zero(t, s.Live())
	e, _ = s.Put([]byte("x"), now)
	s.SetBytes([]byte("x"), e, val)
	s.Flush()
	require.Zero(t, s.Live(), "after FLUSHALL")
	s.UnlockAll()
}
