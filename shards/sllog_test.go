package shards

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func (l *SlidingLog) clone() *SlidingLog {
	c := *l
	c.buf = slices.Clone(l.buf)
	return &c
}

func (l *SlidingLog) all() []int64 {
	out := []int64{}
	l.Each(func(ts, count int64) {
		for ; count > 0; count-- {
			out = append(out, ts)
		}
	})
	return out
}

// TestSlidingLogTable walks one key through a scripted sequence.
func TestSlidingLogTable(t *testing.T) {
	const ms = 1000
	base := int64(1795307408539667)
	p := SLParams{Max: 3, Window: 1000 * ms, Quantity: 1}
	tests := []struct {
		at    int64 // µs after base
		p     SLParams
		want  SLResult
		count int64 // entries afterwards
	}{
		0:  {0, p, SLResult{Remaining: 2, RetryAfter: -1, ResetAfter: 1000 * ms, Changed: true}, 1},
		1:  {100 * ms, p, SLResult{Remaining: 1, RetryAfter: -1, ResetAfter: 1000 * ms, Changed: true}, 2},
		2:  {200 * ms, p, SLResult{Remaining: 0, RetryAfter: -1, ResetAfter: 1000 * ms, Changed: true}, 3},
		3:  {300 * ms, p, SLResult{Limited: true, Remaining: 0, RetryAfter: 700 * ms, ResetAfter: 900 * ms}, 3},
		4:  {1000 * ms, p, SLResult{Remaining: 0, RetryAfter: -1, ResetAfter: 1000 * ms, Changed: true}, 3}, // the entry at 0 left exactly now
		5:  {1000 * ms, SLParams{Max: 3, Window: 1000 * ms, Quantity: 0}, SLResult{Remaining: 0, RetryAfter: -1, ResetAfter: 1000 * ms}, 3},
		6:  {1000 * ms, SLParams{Max: 3, Window: 1000 * ms, Quantity: 4}, SLResult{Limited: true, RetryAfter: -1, ResetAfter: 1000 * ms}, 3},
		7:  {1050 * ms, SLParams{Max: 3, Window: 1000 * ms, Quantity: 2}, SLResult{Limited: true, RetryAfter: 150 * ms, ResetAfter: 950 * ms}, 3},
		8:  {1050 * ms, SLParams{Max: 3, Window: 1000 * ms, Quantity: 2, RecordBlocked: true}, SLResult{Limited: true, RetryAfter: 1000 * ms, ResetAfter: 1000 * ms, Changed: true}, 4}, // the 4th oldest is now; 5 recorded, the newest Max+1 kept,
		9:  {3000 * ms, p, SLResult{Remaining: 2, RetryAfter: -1, ResetAfter: 1000 * ms, Changed: true}, 1},
		10: {3010 * ms, SLParams{Max: 3, Window: 1000 * ms, Quantity: 1, MinGap: 50 * ms}, SLResult{Limited: true, Remaining: 2, RetryAfter: 40 * ms, ResetAfter: 990 * ms}, 1},
		11: {3050 * ms, SLParams{Max: 3, Window: 1000 * ms, Quantity: 1, MinGap: 50 * ms}, SLResult{Remaining: 1, RetryAfter: -1, ResetAfter: 1000 * ms, Changed: true}, 2},
		12: {3060 * ms, SLParams{Max: 3, Window: 1000 * ms, Quantity: 1, MinGap: 5000 * ms}, SLResult{Limited: true, Remaining: 1, RetryAfter: 990 * ms, ResetAfter: 990 * ms}, 2}, // a gap longer than the window: the log empties first
	}
	l := &SlidingLog{}
	for i, tt := range tests {
		have := l.Throttle(base+tt.at, tt.p)
		if have != tt.want {
			t.Errorf("step %d: have %+v, want %+v", i, have, tt.want)
		}
		if l.Len() != tt.count {
			t.Errorf("step %d: have %d entries, want %d", i, l.Len(), tt.count)
		}
	}
}

// TestSlidingLogRetry checks the decision against a plain slice of
// timestamps, and that every retry time is exact: one microsecond earlier
// the same call is refused, at the retry time it is allowed.
func TestSlidingLogRetry(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewPCG(seed, 2))
	for round := 0; round < 200; round++ {
		l := &SlidingLog{}
		model := []int64{}
		now := int64(1795307408539667)
		for step := 0; step < 100; step++ {
			now += rnd.Int64N(300_000)
			if rnd.IntN(20) == 0 {
				now -= rnd.Int64N(1000) // a clock step back
			}
			p := SLParams{
				Max:           1 + rnd.Int64N(10),
				Window:        1 + rnd.Int64N(2_000_000),
				Quantity:      rnd.Int64N(4),
				RecordBlocked: rnd.IntN(3) == 0,
			}
			if rnd.IntN(3) == 0 {
				p.MinGap = rnd.Int64N(500_000)
			}
			// The model.
			model = slices.DeleteFunc(model, func(ts int64) bool { return ts <= now-p.Window })
			newest := int64(0)
			if len(model) > 0 {
				newest = model[len(model)-1]
			}
			allowed := int64(len(model))+p.Quantity <= p.Max && (p.MinGap == 0 || len(model) == 0 || now-newest >= p.MinGap)
			if allowed || p.RecordBlocked {
				for i := int64(0); i < p.Quantity; i++ {
					model = append(model, max(now, newest))
				}
			}
			if !allowed && p.RecordBlocked && int64(len(model)) > p.Max+1 {
				model = model[len(model)-int(p.Max+1):] // a recorded refusal keeps the newest Max+1
			}

			before := l.clone()
			r := l.Throttle(now, p)
			require.Equal(t, !allowed, r.Limited, "round %d step %d: limited (%+v)", round, step, p)
			require.Equal(t, model, l.all(), "round %d step %d: entries", round, step)
			require.Equal(t, int64(len(model)), l.Len())
			if !r.Limited || p.Quantity > p.Max {
				require.Equal(t, int64(-1), r.RetryAfter)
				continue
			}
			require.Positive(t, r.RetryAfter, "round %d step %d", round, step)
			// Probe on copies of the state after the call.
			probe := SLParams{Max: p.Max, Window: p.Window, MinGap: p.MinGap, Quantity: p.Quantity}
			early := l.clone().Throttle(now+r.RetryAfter-1, probe)
			onTime := l.clone().Throttle(now+r.RetryAfter, probe)
			require.True(t, early.Limited, "round %d step %d: allowed before retry %d (%+v, before %v)", round, step, r.RetryAfter, p, before.all())
			require.False(t, onTime.Limited, "round %d step %d: refused at retry %d (%+v)", round, step, r.RetryAfter, p)
			// Reset: the log is empty then, not before.
			require.Equal(t, model[len(model)-1]+p.Window-now, r.ResetAfter)
		}
	}
}

// With RECORDBLOCKED, refused calls are recorded, but the log keeps only
// its newest Max+1 entries: with one Max per key, every decision and every
// retry_after and reset_after is what the whole log would give (checked
// here against a log that keeps everything), the key stays small however
// often it is refused (it grew by a run per call), and huge quantities no
// longer overflow its count (after which calls went through).
func TestSlidingLogRecordBlockedKeepsDecisions(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewPCG(seed, 3))
	for round := 0; round < 300; round++ {
		l := &SlidingLog{}
		var model []int64 // every entry, never cut
		now := int64(1795307408539667)
		maxN := 1 + rnd.Int64N(6)
		window := 1 + rnd.Int64N(2_000_000)
		for step := 0; step < 200; step++ {
			now += rnd.Int64N(100_000)
			p := SLParams{Max: maxN, Window: window, Quantity: rnd.Int64N(4), RecordBlocked: true}
			if rnd.IntN(4) == 0 {
				p.MinGap = rnd.Int64N(300_000)
			}
			model = slices.DeleteFunc(model, func(ts int64) bool { return ts <= now-p.Window })
			n := int64(len(model))
			newest := int64(0)
			if n > 0 {
				newest = model[n-1]
			}
			allowed := n+p.Quantity <= p.Max && (p.MinGap == 0 || n == 0 || now-newest >= p.MinGap)
			for i := int64(0); i < p.Quantity; i++ {
				model = append(model, max(now, newest))
			}
			// The same call again, after this one was recorded.
			retry := int64(-1)
			if n, newest := int64(len(model)), model[max(len(model)-1, 0):]; !allowed && p.Quantity <= p.Max {
				wait := int64(0)
				if k := n + p.Quantity - p.Max; k > 0 {
					wait = model[k-1] + p.Window - now
				}
				if p.MinGap > 0 && n > 0 {
					wait = max(wait, newest[0]+min(p.MinGap, p.Window)-now)
				}
				retry = max(wait, 0)
			}
			r := l.Throttle(now, p)
			require.Equal(t, !allowed, r.Limited, "round %d step %d (%+v)", round, step, p)
			require.Equal(t, retry, r.RetryAfter, "round %d step %d (%+v)", round, step, p)
			require.Equal(t, max(0, p.Max-int64(len(model))), r.Remaining, "round %d step %d", round, step)
			if len(model) > 0 {
				require.Equal(t, model[len(model)-1]+p.Window-now, r.ResetAfter)
			}
			require.LessOrEqual(t, l.Len(), p.Max+1)
		}
	}
	// Refused again and again at new times, and with a huge quantity.
	l := &SlidingLog{}
	p := SLParams{Max: 1, Window: 1 << 40, Quantity: 1, RecordBlocked: true}
	for i := int64(0); i < 100000; i++ {
		l.Throttle(1_000_000+i*1000, p)
	}
	require.Equal(t, int64(2), l.Len())
	require.Less(t, cap(l.buf), 64, "the refused calls' runs are dropped")
	p.Quantity = 1 << 53
	for i := 0; i < 2000; i++ {
		r := l.Throttle(2_000_000_000, p)
		require.True(t, r.Limited, "call %d", i)
		require.Equal(t, int64(2), l.Len())
	}
}

// TestSlidingLogCompact checks that trimming keeps the buffer small and that
// runs of equal timestamps stay one run.
func TestSlidingLogCompact(t *testing.T) {
	l := &SlidingLog{}
	now := int64(1795307408539667)
	for i := 0; i < 100000; i++ {
		l.Throttle(now, SLParams{Max: 100, Window: 100_000, Quantity: 1})
		now += 1000
	}
	require.Equal(t, int64(100), l.Len())
	require.LessOrEqual(t, l.Size(), 64+512, "size %d for 100 entries", l.Size())
	l.Add(now, 1_000_000_000)
	require.Equal(t, now, l.Nth(l.Len()-1))
	require.LessOrEqual(t, len(l.buf)-l.head, 100*2+2+5+1)
	require.Equal(t, int64(100)+1_000_000_000, l.Len())
	require.Equal(t, int64(1_000_000_100), l.Trim(now))
	require.Equal(t, int64(0), l.Len())
}

func BenchmarkSlidingLogThrottle(b *testing.B) {
	l := &SlidingLog{}
	now := int64(1795307408539667)
	p := SLParams{Max: 100, Window: 100_000, Quantity: 1}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		l.Throttle(now, p)
		now += 1000
	}
}

// TestSlidingLogMemory measures bytes per entry of SL.THROTTLE's logs,
// keys and store included: the target is 12 B/entry.
func TestSlidingLogMemory(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation sizes; .ci/run runs this without -race")
	}
	if testing.Short() {
		t.Skip("fills a million entries")
	}
	for _, tt := range []struct {
		name          string
		keys, entries int
		maxGap        int64 // µs between entries
	}{
		{"10kx100/1.2s", 10000, 100, 1_200_000},
		{"1kx1000/1.2s", 1000, 1000, 1_200_000},
		{"10kx100/60s", 10000, 100, 60_000_000},
	} {
		perEntry := memoryPerEntry(t, tt.keys, tt.entries, func(st *Store, key []byte, rnd *rand.Rand) {
			l := &SlidingLog{}
			ts := int64(1795307408539667) + rnd.Int64N(1e9)
			for i := 0; i < tt.entries; i++ {
				ts += 1 + rnd.Int64N(tt.maxGap)
				l.Throttle(ts, SLParams{Max: int64(tt.entries), Window: 1 << 50, Quantity: 1})
			}
			e, _ := st.Put(key, 0)
			st.SetObject(key, e, KindSlidingLog, l)
			st.SetExpire(key, e, ts/1000+60_000)
		})
		t.Logf("%s: %.1f B/entry", tt.name, perEntry)
		require.LessOrEqual(t, perEntry, 12.0, tt.name)
	}
}
