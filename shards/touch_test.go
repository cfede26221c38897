package shards

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// image returns every shard's snapshot records: the whole observable state.
func image(s *Store, nowMs int64) [][]byte {
	s.LockAll()
	defer s.UnlockAll()
	out := make([][]byte, s.NumShards())
	for i := range out {
		out[i], _ = s.AppendShard(nil, i, nowMs)
	}
	return out
}

// Touch changes nothing, whatever the keys hold, and leaves every shard
// unlocked.
func TestTouchChangesNothing(t *testing.T) {
	s, clk := newStore(t, 8)
	now := clk.ms()
	long := []byte("a-key-long-enough-to-live-in-the-arena:0123456789")
	s.LockAll()
	put := func(k string) *Entry { e, _ := s.Put([]byte(k), now); return e }
	s.SetInt(put("n"), 42)
	s.SetBytes([]byte("short"), put("short"), []byte("abc"))
	s.SetBytes([]byte("long"), put("long"), []byte("a value longer than eight bytes"))
	e, _ := s.Put(long, now)
	s.SetInt(e, 7)
	z := NewZSet(2, 1)
	z.Add(1, []byte("m"), 0)
	s.SetObject([]byte("z"), put("z"), KindZSet, z)
	l := &SlidingLog{}
	l.Add(now*1000, 3)
	s.SetObject([]byte("sl"), put("sl"), KindSlidingLog, l)
	s.SetObject([]byte("sl-empty"), put("sl-empty"), KindSlidingLog, &SlidingLog{})
	s.NewHash([]byte("h"), put("h")).Set([]byte("tokens"), []byte("9"))
	big := s.NewHash([]byte("hbig"), put("hbig"))
	big.Reserve(1000)
	big.Set([]byte("f"), []byte("v"))
	s.NewList([]byte("l"), put("l")).Push([]byte("1795307408539667"), true)
	gone := put("expired")
	s.SetInt(gone, 1)
	s.SetExpire([]byte("expired"), gone, now-1)
	// A sliding log renamed into another shard: its reference moves along.
	s.SetObject([]byte("sl-src"), put("sl-src"), KindSlidingLog, &SlidingLog{})
	require.True(t, s.Rename([]byte("sl-src"), []byte("sl-moved"), now))
	s.UnlockAll()

	before := image(s, now)
	var sc TouchScratch
	for i, keys := range [][]string{
		nil,
		{"n"},
		{"n", "short", "long", string(long), "z", "sl", "sl-empty", "h", "hbig", "l", "expired", "sl-moved", "absent", "absent-2"},
		{"sl", "sl", "sl"}, // repeated keys: one lock per shard all the same
	} {
		bk := make([][]byte, len(keys))
		for j, k := range keys {
			bk[j] = []byte(k)
		}
		s.Touch(bk, &sc)
		require.Equal(t, before, image(s, now), "step %d: state changed", i)
	}
	// An empty store (no index yet) is fine too.
	empty, _ := newStore(t, 4)
	empty.Touch([][]byte{[]byte("a"), []byte("b")}, &sc)
	locked := make(chan struct{})
	go func() { empty.LockAll(); empty.UnlockAll(); s.LockAll(); s.UnlockAll(); close(locked) }()
	select {
	case <-locked:
	case <-time.After(5 * time.Second):
		t.Fatal("Touch left a shard locked")
	}
}

// Touch runs alongside writers on the same shards; under the race detector
// this checks that it reads only what the locks it takes protect.
func TestTouchConcurrentWithWriters(t *testing.T) {
	s, clk := newStore(t, 4)
	now := clk.ms()
	keys := make([][]byte, 64)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("k:%d", i))
	}
	var wg, toucher sync.WaitGroup
	stop := make(chan struct{})
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 3000; i++ {
				k := keys[(i*7+w)%len(keys)]
				dst := keys[(i*13+w+1)%len(keys)]
				a, b := s.ShardIndex(k), s.ShardIndex(dst)
				lo, hi := min(a, b), max(a, b)
				s.Lock(lo)
				if hi != lo {
					s.Lock(hi)
				}
				switch i % 8 {
				case 0:
					e, _ := s.Put(k, now)
					s.SetInt(e, int64(i))
				case 1:
					e, _ := s.Put(k, now)
					l := &SlidingLog{}
					l.Add(now*1000+int64(i), 1)
					s.SetObject(k, e, KindSlidingLog, l)
				case 2:
					if e := s.Lookup(k, now); e != nil && e.Kind() == KindSlidingLog {
						s.Object(e).(*SlidingLog).Add(now*1000+int64(i), 2)
					}
				case 3:
					s.Rename(k, dst, now)
				case 4:
					s.Delete(k, now)
				case 5:
					if e := s.Lookup(k, now); e != nil && e.Kind() == KindZSet {
						s.Object(e).(*ZSet).Add(float64(i), []byte(fmt.Sprint("m", i)), 0)
					} else {
						e, _ := s.Put(k, now)
						z := NewZSet(1, 4)
						z.Add(1, []byte("m"), 0)
						s.SetObject(k, e, KindZSet, z)
					}
				case 7:
					if e := s.Lookup(k, now); e != nil && e.Kind() == KindList {
						s.List(e).Push([]byte(fmt.Sprint(i)), i%2 == 0)
					} else {
						e, _ := s.Put(k, now)
						s.NewList(k, e).Push([]byte("x"), true)
					}
				case 6:
					if e := s.Lookup(k, now); e != nil && e.Kind() == KindHash {
						s.Hash(e).Set([]byte(fmt.Sprint("f", i%50)), []byte("v"))
					} else {
						e, _ := s.Put(k, now)
						s.NewHash(k, e).Set([]byte("f"), []byte("v"))
					}
				}
				if hi != lo {
					s.Unlock(hi)
				}
				s.Unlock(lo)
			}
		}(w)
	}
	toucher.Add(1)
	go func() {
		defer toucher.Done()
		var sc TouchScratch
		for {
			select {
			case <-stop:
				return
			default:
				s.Touch(keys, &sc)
			}
		}
	}()
	wg.Wait()
	close(stop)
	toucher.Wait()
}
