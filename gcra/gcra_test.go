package gcra

import (
	"errors"
	"math"
	"math/big"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// t0 is the virtual clock's origin: a realistic Unix time in nanoseconds with
// a sub-millisecond part, so that millisecond truncation is exercised.
const t0 = int64(1_700_000_000*nsPerSecond) + 123_456_789

// cell stores one key the way the server does: the TAT and a PEXPIRE
// deadline in whole milliseconds, with Redis' rule that a key is gone once
// the millisecond clock is past its deadline.
type cell struct {
	tat        int64
	has        bool
	deadlineMs int64
}

// get returns the stored TAT at now, expiring the key first if it is due.
func (c *cell) get(now int64) (int64, bool) {
	if c.has && now/nsPerMillisecond > c.deadlineMs {
		*c = cell{}
	}
	return c.tat, c.has
}

// apply does what r asks of the caller at now.
func (c *cell) apply(now int64, r Result) {
	switch {
	case r.Delete:
		*c = cell{}
	case r.Write:
		*c = cell{tat: r.NewTAT, has: true, deadlineMs: now/nsPerMillisecond + r.TTL/nsPerMillisecond}
	}
}

// pttl is the key's remaining time to live in ms, like PTTL.
func (c *cell) pttl(now int64) int64 { return c.deadlineMs - now/nsPerMillisecond }

// reply is Result's five reply integers in wire order.
func reply(r Result) [5]int64 {
	var limited int64
	if r.Limited {
		limited = 1
	}
	return [5]int64{limited, r.Limit, r.Remaining, r.RetryAfter, r.ResetAfter}
}

type op int

const (
	opThrottle op = iota
	opPeek
	opDel // DEL key; want and p are ignored
)

// keyWant is the expected key after a step; the zero value checks nothing.
type keyWant struct {
	check  bool
	exists bool
	tat    time.Duration // stored TAT - t0, when exists
	pttlMs int64         // PTTL after the step, when exists
}

var absent = keyWant{check: true}

func present(tat time.Duration, pttlMs int64) keyWant {
	return keyWant{check: true, exists: true, tat: tat, pttlMs: pttlMs}
}

type step struct {
	at   time.Duration // virtual time since t0
	op   op
	p    Params
	want [5]int64
	key  keyWant
}

func pr(maxBurst, count, period, quantity int64) Params {
	return Params{MaxBurst: maxBurst, Count: count, Period: period, Quantity: quantity}
}

// ms is a shorthand for offsets in the tables.
const ms = time.Millisecond

// vectorA is spec §7 A's burst: six calls of 5 1 60, 1 ms apart.
var vectorA = []step{
	{at: 0 * ms, p: pr(5, 1, 60, 1), want: [5]int64{0, 6, 5, -1, 60}},
	{at: 1 * ms, p: pr(5, 1, 60, 1), want: [5]int64{0, 6, 4, -1, 120}},
	{at: 2 * ms, p: pr(5, 1, 60, 1), want: [5]int64{0, 6, 3, -1, 180}},
	{at: 3 * ms, p: pr(5, 1, 60, 1), want: [5]int64{0, 6, 2, -1, 240}},
	{at: 4 * ms, p: pr(5, 1, 60, 1), want: [5]int64{0, 6, 1, -1, 300}},
	{at: 5 * ms, p: pr(5, 1, 60, 1), want: [5]int64{0, 6, 0, -1, 360}, key: present(360*time.Second, 359995)},
}

// sequences replay spec §7 on a virtual clock, one key per sequence.
var sequences = []struct {
	name  string
	steps []step
}{
	{"E it_rate_limits", []step{
		// You can never make a request larger than the maximum.
		{at: 0, p: pr(4, 1, 1, 6), want: [5]int64{1, 5, 5, -1, 0}, key: absent},
		{at: 0, p: pr(4, 1, 1, 1), want: [5]int64{0, 5, 4, -1, 1}},
		{at: 0, p: pr(4, 1, 1, 1), want: [5]int64{0, 5, 3, -1, 2}},
		{at: 0, p: pr(4, 1, 1, 1), want: [5]int64{0, 5, 2, -1, 3}},
		{at: 0, p: pr(4, 1, 1, 1), want: [5]int64{0, 5, 1, -1, 4}},
		{at: 0, p: pr(4, 1, 1, 1), want: [5]int64{0, 5, 0, -1, 5}, key: present(5*time.Second, 5000)},
		{at: 0, p: pr(4, 1, 1, 1), want: [5]int64{1, 5, 0, 1, 5}, key: present(5*time.Second, 5000)},
		{at: 3000 * ms, p: pr(4, 1, 1, 1), want: [5]int64{0, 5, 2, -1, 3}, key: present(6*time.Second, 3000)},
		{at: 3100 * ms, p: pr(4, 1, 1, 1), want: [5]int64{0, 5, 1, -1, 4}, key: present(7*time.Second, 3900)},
		{at: 4000 * ms, p: pr(4, 1, 1, 1), want: [5]int64{0, 5, 1, -1, 4}},
		{at: 8000 * ms, p: pr(4, 1, 1, 1), want: [5]int64{0, 5, 4, -1, 1}},
		{at: 9500 * ms, p: pr(4, 1, 1, 1), want: [5]int64{0, 5, 4, -1, 1}, key: present(10500*ms, 1000)},
		// Zero-volume request just peeks at the state.
		{at: 9500 * ms, p: pr(4, 1, 1, 0), want: [5]int64{0, 5, 4, -1, 1}, key: present(10500*ms, 1000)},
		// High-volume request uses up more of the limit.
		{at: 9500 * ms, p: pr(4, 1, 1, 2), want: [5]int64{0, 5, 2, -1, 3}},
		// Large requests cannot exceed limits.
		{at: 9500 * ms, p: pr(4, 1, 1, 5), want: [5]int64{1, 5, 2, 3, 3}, key: present(12500*ms, 3000)},
	}},
	{"A burst then limited", slices.Concat(vectorA, []step{
		{at: 6 * ms, p: pr(5, 1, 60, 1), want: [5]int64{1, 6, 0, 60, 360}, key: present(360*time.Second, 359994)},
		{at: 7 * ms, p: pr(5, 1, 60, 1), want: [5]int64{1, 6, 0, 60, 360}, key: present(360*time.Second, 359993)},
	})},
	{"A one call 60 s later", slices.Concat(vectorA, []step{
		{at: 60 * time.Second, p: pr(5, 1, 60, 1), want: [5]int64{0, 6, 0, -1, 360}, key: present(420*time.Second, 360000)},
	})},
	{"A one call 120 s later, then DEL", slices.Concat(vectorA, []step{
		{at: 120 * time.Second, p: pr(5, 1, 60, 1), want: [5]int64{0, 6, 1, -1, 300}, key: present(420*time.Second, 300000)},
		{at: 121 * time.Second, op: opDel, key: absent},
		{at: 122 * time.Second, p: pr(5, 1, 60, 1), want: [5]int64{0, 6, 5, -1, 60}, key: present(182*time.Second, 60000)},
	})},
	{"B quantities", []step{
		{at: 0 * ms, p: pr(9, 10, 3600, 3), want: [5]int64{0, 10, 7, -1, 1080}, key: present(1080*time.Second, 1080000)},
		{at: 1 * ms, p: pr(9, 10, 3600, 0), want: [5]int64{0, 10, 7, -1, 1080}, key: present(1080*time.Second, 1079999)},
		{at: 2 * ms, p: pr(9, 10, 3600, 7), want: [5]int64{0, 10, 0, -1, 3600}},
		{at: 3 * ms, p: pr(9, 10, 3600, 1), want: [5]int64{1, 10, 0, 360, 3600}},
		// A peek on a full bucket is allowed.
		{at: 4 * ms, p: pr(9, 10, 3600, 0), want: [5]int64{0, 10, 0, -1, 3600}},
		{at: 5 * ms, p: pr(9, 10, 3600, 10), want: [5]int64{1, 10, 0, 3600, 3600}},
		{at: 6 * ms, p: pr(9, 10, 3600, 11), want: [5]int64{1, 10, 0, -1, 3600}, key: present(3600*time.Second, 3599994)},
	}},
	{"C oversized requests", []step{
		{at: 0 * ms, p: pr(4, 1, 60, 6), want: [5]int64{1, 5, 5, -1, 0}, key: absent},
		{at: 1 * ms, p: pr(4, 1, 60, 5), want: [5]int64{0, 5, 0, -1, 300}, key: present(300*time.Second+1*ms, 300000)},
		{at: 2 * ms, p: pr(4, 1, 60, 1), want: [5]int64{1, 5, 0, 60, 300}},
		{at: 3 * ms, p: pr(4, 1, 60, 6), want: [5]int64{1, 5, 0, -1, 300}, key: present(300*time.Second+1*ms, 299998)},
	}},
	{"C quantity 0 on a fresh key", []step{
		{at: 0, p: pr(4, 1, 60, 0), want: [5]int64{0, 5, 5, -1, 0}, key: present(0, 0)},
		{at: 1 * ms, op: opPeek, p: pr(4, 1, 60, 1), want: [5]int64{0, 5, 4, -1, 60}, key: absent},
	}},
	{"D README", []step{
		{at: 0, p: pr(15, 30, 60, 1), want: [5]int64{0, 16, 15, -1, 2}},
	}},
	{"D issue 37", []step{
		{at: 0, p: pr(5, 5, 3600, 1), want: [5]int64{0, 6, 5, -1, 720}},
	}},
	{"D e2e", []step{
		{at: 0, p: pr(0, 1, 2, 1), want: [5]int64{0, 1, 0, -1, 2}},
		{at: 1 * ms, p: pr(0, 1, 2, 1), want: [5]int64{1, 1, 0, 2, 2}},
		{at: 2001 * ms, p: pr(0, 1, 2, 1), want: [5]int64{0, 1, 0, -1, 2}, key: present(4001*ms, 2000)},
	}},
	{"F short period, key expires", []step{
		{at: 0 * ms, p: pr(1, 1, 1, 1), want: [5]int64{0, 2, 1, -1, 1}},
		{at: 1 * ms, p: pr(1, 1, 1, 1), want: [5]int64{0, 2, 0, -1, 2}},
		{at: 2 * ms, p: pr(1, 1, 1, 1), want: [5]int64{1, 2, 0, 1, 2}},
		{at: 1100 * ms, p: pr(1, 1, 1, 1), want: [5]int64{0, 2, 0, -1, 2}, key: present(3*time.Second, 1900)},
		{at: 3200 * ms, op: opPeek, p: pr(1, 1, 1, 0), want: [5]int64{0, 2, 2, -1, 0}, key: absent},
		{at: 3200 * ms, p: pr(1, 1, 1, 1), want: [5]int64{0, 2, 1, -1, 1}, key: present(4200*ms, 1000)},
	}},
	{"F 2 s elapsed", []step{
		{at: 0 * ms, p: pr(1, 1, 1, 1), want: [5]int64{0, 2, 1, -1, 1}},
		{at: 1 * ms, p: pr(1, 1, 1, 1), want: [5]int64{0, 2, 0, -1, 2}},
		{at: 2 * ms, p: pr(1, 1, 1, 1), want: [5]int64{1, 2, 0, 1, 2}},
		{at: 2000 * ms, p: pr(1, 1, 1, 1), want: [5]int64{0, 2, 1, -1, 1}, key: present(3*time.Second, 1000)},
	}},
	{"refunds", []step{
		{at: 0, p: pr(5, 1, 60, 3), want: [5]int64{0, 6, 3, -1, 180}, key: present(180*time.Second, 180000)},
		{at: 0, p: pr(5, 1, 60, -1), want: [5]int64{0, 6, 4, -1, 120}, key: present(120*time.Second, 120000)},
		{at: 30 * time.Second, p: pr(5, 1, 60, -1), want: [5]int64{0, 6, 5, -1, 30}, key: present(60*time.Second, 30000)},
		// More than is held: the TAT stops at now and the key goes.
		{at: 30 * time.Second, p: pr(5, 1, 60, -5), want: [5]int64{0, 6, 6, -1, 0}, key: absent},
		// A refund on a missing key replies the idle state.
		{at: 30 * time.Second, p: pr(5, 1, 60, -1), want: [5]int64{0, 6, 6, -1, 0}, key: absent},
		{at: 30 * time.Second, p: pr(5, 1, 60, 1), want: [5]int64{0, 6, 5, -1, 60}, key: present(90*time.Second, 60000)},
		// Exactly what is held: TAT == now, so the key goes too.
		{at: 30 * time.Second, p: pr(5, 1, 60, -1), want: [5]int64{0, 6, 6, -1, 0}, key: absent},
	}},
	{"peek changes nothing", []step{
		{at: 0, op: opPeek, p: pr(4, 1, 60, 1), want: [5]int64{0, 5, 4, -1, 60}, key: absent},
		{at: 0, p: pr(4, 1, 60, 5), want: [5]int64{0, 5, 0, -1, 300}, key: present(300*time.Second, 300000)},
		{at: 1 * ms, op: opPeek, p: pr(4, 1, 60, 1), want: [5]int64{1, 5, 0, 60, 300}, key: present(300*time.Second, 299999)},
		{at: 1 * ms, op: opPeek, p: pr(4, 1, 60, 0), want: [5]int64{0, 5, 0, -1, 300}, key: present(300*time.Second, 299999)},
		{at: 1 * ms, op: opPeek, p: pr(4, 1, 60, -2), want: [5]int64{0, 5, 2, -1, 180}, key: present(300*time.Second, 299999)},
		{at: 1 * ms, op: opPeek, p: pr(4, 1, 60, 6), want: [5]int64{1, 5, 0, -1, 300}, key: present(300*time.Second, 299999)},
	}},
}

func TestThrottleSequences(t *testing.T) {
	for _, seq := range sequences {
		t.Run(seq.name, func(t *testing.T) {
			var c cell
			for i, s := range seq.steps {
				now := t0 + int64(s.at)
				tat, has := c.get(now)
				switch s.op {
				case opDel:
					c = cell{}
				case opPeek:
					r, err := Peek(tat, has, now, s.p)
					if err != nil {
						t.Fatalf("step %d: peek %+v: %v", i, s.p, err)
					}
					if have := reply(r); have != s.want {
						t.Errorf("step %d: peek %+v: have %v, want %v", i, s.p, have, s.want)
					}
					if r.Write || r.Delete || r.NewTAT != 0 || r.TTL != 0 {
						t.Errorf("step %d: peek asks for a change: %+v", i, r)
					}
				default:
					r, err := Throttle(tat, has, now, s.p)
					if err != nil {
						t.Fatalf("step %d: throttle %+v: %v", i, s.p, err)
					}
					if have := reply(r); have != s.want {
						t.Errorf("step %d: throttle %+v: have %v, want %v", i, s.p, have, s.want)
					}
					c.apply(now, r)
				}
				if !s.key.check {
					continue
				}
				tat, has = c.get(now)
				switch {
				case has != s.key.exists:
					t.Errorf("step %d: key exists: have %v, want %v", i, has, s.key.exists)
				case has && tat != t0+int64(s.key.tat):
					t.Errorf("step %d: stored TAT: have t0%+v, want t0%+v", i, time.Duration(tat-t0), s.key.tat)
				case has && c.pttl(now) != s.key.pttlMs:
					t.Errorf("step %d: PTTL: have %d, want %d", i, c.pttl(now), s.key.pttlMs)
				}
			}
		})
	}
}

// TestThrottleStates checks single calls from a given state: rounding
// edges, spec §6's sane rows and ratekv's documented decisions.
func TestThrottleStates(t *testing.T) {
	const s = time.Second
	// p10: limit 10, ei 1 s, dvt 10 s; quantity 0 just reports the state.
	p10 := pr(9, 1, 1, 0)
	// p1: limit 1, ei 1 s, dvt 1 s; a held TAT of X means retry_after X.
	p1 := pr(0, 1, 1, 1)
	tests := []struct {
		name   string
		held   time.Duration // stored TAT - now
		has    bool
		p      Params
		want   [5]int64
		write  bool
		delete bool
		ttl    time.Duration // Result.TTL when write
	}{
		{"idle key, reset 0", 0, true, p10, [5]int64{0, 10, 10, -1, 0}, true, false, 0},
		{"reset 1 ns rounds to 0", 1, true, p10, [5]int64{0, 10, 9, -1, 0}, true, false, 1},
		{"reset 999 µs rounds to 0", 999 * time.Microsecond, true, p10, [5]int64{0, 10, 9, -1, 0}, true, false, 999 * time.Microsecond},
		{"reset 1 ms rounds to 1", 1 * ms, true, p10, [5]int64{0, 10, 9, -1, 1}, true, false, 1 * ms},
		{"reset 1.0004 s rounds to 1", 1000400 * time.Microsecond, true, p10, [5]int64{0, 10, 8, -1, 1}, true, false, 1000400 * time.Microsecond},
		{"reset 1.001 s rounds to 2", 1001 * ms, true, p10, [5]int64{0, 10, 8, -1, 2}, true, false, 1001 * ms},
		{"reset exactly 2 s stays 2", 2 * s, true, p10, [5]int64{0, 10, 8, -1, 2}, true, false, 2 * s},
		{"remaining is exact below a whole unit", 2*s + 1, true, p10, [5]int64{0, 10, 7, -1, 2}, true, false, 2*s + 1},
		{"retry 999 µs rounds to 0", 999 * time.Microsecond, true, p1, [5]int64{1, 1, 0, 0, 0}, false, false, 0},
		{"retry 1 ms rounds to 1", 1 * ms, true, p1, [5]int64{1, 1, 0, 1, 1}, false, false, 0},
		{"retry 1.0004 s rounds to 1", 1000400 * time.Microsecond, true, p1, [5]int64{1, 1, 0, 1, 1}, false, false, 0},
		{"retry exactly 1 s stays 1", 1 * s, true, p1, [5]int64{1, 1, 0, 1, 1}, false, false, 0},
		{"retry 1.001 s rounds to 2", 1001 * ms, true, p1, [5]int64{1, 1, 0, 2, 2}, false, false, 0},
		{"burst 0 idle is allowed", 0, true, p1, [5]int64{0, 1, 0, -1, 1}, true, false, 1 * s},
		// §6: ei 166666 ns. redis-cell replies remaining 6024 (its issue #50).
		{"6000 6000 1", 0, false, pr(6000, 6000, 1, 1), [5]int64{0, 6001, 6000, -1, 0}, true, false, 166666},
		{"4 500000 1 2", 0, false, pr(4, 500000, 1, 2), [5]int64{0, 5, 3, -1, 0}, true, false, 4 * time.Microsecond},
		{"1000 1000 60 (TTL 60 ms)", 0, false, pr(1000, 1000, 60, 1), [5]int64{0, 1001, 1000, -1, 1}, true, false, 60 * ms},
		{"quantity == limit on a fresh key", 0, false, pr(4, 1, 60, 5), [5]int64{0, 5, 0, -1, 300}, true, false, 300 * s},
		{"quantity 0 on a fresh key", 0, false, pr(4, 1, 60, 0), [5]int64{0, 5, 5, -1, 0}, true, false, 0},
		// Float division, as redis-cell: integer division would give ...300.
		{"one-year period, float emission interval", 0, false, pr(0, 1091402, 31536000, 1), [5]int64{0, 1, 0, -1, 29}, true, false, 28894944301},
		{"largest period, quantity 0", 0, false, pr(0, 1, 9223372036, 0), [5]int64{0, 1, 1, -1, 0}, true, false, 0},
		// A TAT in the past is an idle key.
		{"stale TAT, allowed", -5 * s, true, pr(4, 1, 1, 1), [5]int64{0, 5, 4, -1, 1}, true, false, 1 * s},
		{"stale TAT, oversized", -5 * s, true, pr(0, 1, 1, 2), [5]int64{1, 1, 1, -1, 0}, false, false, 0},
		{"TAT far in the past", time.Duration(math.MinInt64 + 1), true, pr(4, 1, 1, 1), [5]int64{0, 5, 4, -1, 1}, true, false, 1 * s},
		// Parameters changed to a smaller dvt: even quantity 0 is limited,
		// as in redis-cell (quantity 0 is not special-cased).
		{"shrunk dvt, quantity 0", 100 * s, true, pr(4, 1, 1, 0), [5]int64{1, 5, 0, 95, 100}, false, false, 0},
		{"shrunk dvt, refund below dvt", 100 * s, true, pr(4, 1, 1, -97), [5]int64{0, 5, 2, -1, 3}, true, false, 3 * s},
		{"refund past now", 2 * s, true, pr(4, 1, 1, -3), [5]int64{0, 5, 5, -1, 0}, false, true, 0},
		{"refund on a fresh key", 0, false, pr(4, 1, 1, -3), [5]int64{0, 5, 5, -1, 0}, false, true, 0},
	}
	for i, tt := range tests {
		now := t0
		tat := now + int64(tt.held)
		r, err := Throttle(tat, tt.has, now, tt.p)
		if err != nil {
			t.Errorf("step %d (%s): have error %v, want %v", i, tt.name, err, tt.want)
			continue
		}
		if have := reply(r); have != tt.want {
			t.Errorf("step %d (%s): have %v, want %v", i, tt.name, have, tt.want)
		}
		if r.Write != tt.write || r.Delete != tt.delete {
			t.Errorf("step %d (%s): write, delete: have %v, %v, want %v, %v", i, tt.name, r.Write, r.Delete, tt.write, tt.delete)
		}
		if tt.write && (r.TTL != int64(tt.ttl) || r.NewTAT != now+int64(tt.ttl)) {
			t.Errorf("step %d (%s): TTL, NewTAT: have %v, t0%+v, want %v", i, tt.name, time.Duration(r.TTL), time.Duration(r.NewTAT-now), tt.ttl)
		}
		if pk, err := Peek(tat, tt.has, now, tt.p); err != nil || reply(pk) != reply(r) {
			t.Errorf("step %d (%s): peek: have %v, %v, want %v", i, tt.name, reply(pk), err, reply(r))
		}
	}
}

func TestThrottleErrors(t *testing.T) {
	tests := []struct {
		name    string
		tat     int64
		has     bool
		now     int64
		p       Params
		wantErr error
	}{
		{"count 0", 0, false, t0, pr(5, 0, 60, 1), ErrZeroRate},
		{"period 0", 0, false, t0, pr(5, 1, 0, 1), ErrZeroRate},
		{"zero params", 0, false, t0, Params{}, ErrZeroRate},
		{"ei 0.5 ns (5 2000000000 1)", 0, false, t0, pr(5, 2000000000, 1, 1), ErrZeroRate},
		{"ei just under 1 ns", 0, false, t0, pr(5, 1000000001, 1, 1), ErrZeroRate},
		// redis-cell reports these as zero rates too, before any sign check.
		{"count 0, negative burst", 0, false, t0, pr(-1, 0, 60, 1), ErrZeroRate},
		{"ei -0.5 ns", 0, false, t0, pr(5, -2000000000, 1, 1), ErrZeroRate},
		{"negative burst", 0, false, t0, pr(-1, 1, 60, 1), ErrNegative},
		{"negative burst, quantity 0", 0, false, t0, pr(-1, 1, 60, 0), ErrNegative},
		{"negative count", 0, false, t0, pr(5, -1, 60, 1), ErrNegative},
		{"negative period", 0, false, t0, pr(5, 1, -60, 1), ErrNegative},
		{"negative count and period", 0, false, t0, pr(5, -1, -60, 1), ErrNegative},
		{"negative burst beats overflow", 0, false, t0, pr(-5, 1, 9e18, 1), ErrNegative},
		{"period 9e18", 0, false, t0, pr(5, 1, 9e18, 1), ErrOverflow},
		{"period 9e18, quantity 0", 0, false, t0, pr(5, 1, 9e18, 0), ErrOverflow},
		{"smallest overflowing period", 0, false, t0, pr(0, 1, 9223372037, 0), ErrOverflow},
		{"period·1e9/count saturates", 0, false, t0, pr(0, 1e9, math.MaxInt64, 0), ErrOverflow},
		{"period·1e9/count just past int64", 0, false, t0, pr(0, 2, 18446744074, 0), ErrOverflow},
		{"limit overflows", 0, false, t0, pr(math.MaxInt64, 1, 60, 1), ErrOverflow},
		{"dvt overflows", 0, false, t0, pr(1e9, 1, 60, 1), ErrOverflow},
		{"quantity cost overflows", 0, false, t0, pr(5, 1, 60, math.MaxInt64), ErrOverflow},
		{"refund cost overflows", 0, false, t0, pr(5, 1, 60, math.MinInt64), ErrOverflow},
		{"now + inc overflows", 0, false, math.MaxInt64 - 1, pr(5, 1, 60, 1), ErrOverflow},
		{"TAT + inc overflows on an allowed call", math.MaxInt64 - 10, true, math.MaxInt64 - 100e9, pr(5, 1, 60, 1), ErrOverflow},
		{"largest period, quantity 1", 0, false, t0, pr(0, 1, 9223372036, 1), ErrOverflow},
		{"TAT - now overflows", math.MaxInt64, true, math.MinInt64, pr(5, 1, 60, 0), ErrOverflow},
		// CL.THROTTLEMS: the same errors in the same order.
		{"ms count 0", 0, false, t0, prms(5, 0, 1000, 1), ErrZeroRate},
		{"ms period 0", 0, false, t0, prms(5, 1, 0, 1), ErrZeroRate},
		{"ms ei just under 1 ns (1000001 per ms)", 0, false, t0, prms(5, 1000001, 1, 1), ErrZeroRate},
		{"ms ei 0.5 ns, as 5 2000000000 1", 0, false, t0, prms(5, 2000000000, 1000, 1), ErrZeroRate},
		{"ms ei -0.5 ns", 0, false, t0, prms(5, -2000000000, 1000, 1), ErrZeroRate},
		{"ms count MaxInt64", 0, false, t0, prms(5, math.MaxInt64, 1, 1), ErrZeroRate},
		{"ms negative burst", 0, false, t0, prms(-1, 1, 1000, 1), ErrNegative},
		{"ms negative count", 0, false, t0, prms(5, -1, 1000, 1), ErrNegative},
		{"ms negative period", 0, false, t0, prms(5, 1, -1000, 1), ErrNegative},
		{"ms negative period past int64 ns", 0, false, t0, prms(5, 1, math.MinInt64, 1), ErrNegative},
		{"ms smallest overflowing period", 0, false, t0, prms(0, 1, 9223372036855, 0), ErrOverflow},
		{"ms period MaxInt64", 0, false, t0, prms(0, 1, math.MaxInt64, 0), ErrOverflow},
		{"ms dvt overflows", 0, false, t0, prms(1e9, 1, 60000, 1), ErrOverflow},
		{"ms quantity cost overflows", 0, false, t0, prms(5, 1, 60000, 153722868), ErrOverflow},
		{"ms largest period, quantity 1", 0, false, t0, prms(0, 1, 9223372036854, 1), ErrOverflow},
	}
	for i, tt := range tests {
		r, err := Throttle(tt.tat, tt.has, tt.now, tt.p)
		if !errors.Is(err, tt.wantErr) {
			t.Errorf("step %d (%s): have error %v, want %v", i, tt.name, err, tt.wantErr)
		}
		if r != (Result{}) {
			t.Errorf("step %d (%s): an error must come with the zero Result, have %+v", i, tt.name, r)
		}
		if _, err := Peek(tt.tat, tt.has, tt.now, tt.p); !errors.Is(err, tt.wantErr) {
			t.Errorf("step %d (%s): peek: have error %v, want %v", i, tt.name, err, tt.wantErr)
		}
	}
}

func TestSeconds(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want int64
	}{
		{0, 0},
		{1, 0},
		{999 * time.Microsecond, 0},
		{999999, 0},
		{1 * ms, 1},
		{999 * ms, 1},
		{time.Second, 1},
		{time.Second + 999999, 1},
		{1000400 * time.Microsecond, 1},
		{1001 * ms, 2},
		{2 * time.Second, 2},
		{3900 * ms, 4},
		{time.Duration(math.MaxInt64), 9223372037},
	}
	for i, tt := range tests {
		if have := seconds(int64(tt.d)); have != tt.want {
			t.Errorf("step %d: seconds(%v): have %d, want %d", i, tt.d, have, tt.want)
		}
	}
}

func TestThrottleDoesNotAllocate(t *testing.T) {
	p := pr(100, 1000, 1, 1)
	tat, has, now := int64(0), false, t0
	allocs := testing.AllocsPerRun(1000, func() {
		now += 700_000
		r, err := Throttle(tat, has, now, p)
		if err != nil {
			panic(err)
		}
		if r.Write {
			tat, has = r.NewTAT, true
		}
		_, _ = Peek(tat, has, now, p)
		_, _ = Throttle(0, false, now, pr(5, 0, 1, 1)) // error path
		_, _ = Throttle(tat, has, now, prms(100, 1000, 1, 1))
	})
	if allocs != 0 {
		t.Errorf("have %v allocs per run, want 0", allocs)
	}
}

// hugeCase is one call at now = t0 whose values come near the int64 range.
type hugeCase struct {
	name  string
	held  time.Duration // stored TAT - now, when has
	has   bool
	p     Params
	want  [5]int64
	write bool
	ttl   time.Duration // Result.TTL when write
}

// runHugeCases checks each case's reply and storage request, and that
// Peek replies the same.
func runHugeCases(t *testing.T, tests []hugeCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := t0
			tat := now + int64(tt.held)
			r, err := Throttle(tat, tt.has, now, tt.p)
			require.NoError(t, err)
			require.Equal(t, tt.want, reply(r))
			require.Equal(t, tt.write, r.Write, "write")
			require.False(t, r.Delete, "delete")
			if tt.write {
				require.Equal(t, int64(tt.ttl), r.TTL, "TTL")
				require.Equal(t, now+int64(tt.ttl), r.NewTAT, "NewTAT")
			}
			pk, err := Peek(tat, tt.has, now, tt.p)
			require.NoError(t, err, "peek")
			require.Equal(t, reply(r), reply(pk), "peek")
		})
	}
}

// TestThrottleLimitedHugeQuantity: a limited call stores nothing, so a new
// TAT beyond int64 nanoseconds is no reason for an error. redis-cell keeps
// it in an OffsetDateTime and replies (spec §3: quantity > limit is
// limited with retry_after -1 and reset_after tat-now); ratekv must too
// (§11.1), on a fresh key and on a limited one alike. Only the cost
// ei×quantity itself, which redis-cell wraps, is an overflow (§11.3).
func TestThrottleLimitedHugeQuantity(t *testing.T) {
	const s = time.Second
	runHugeCases(t, []hugeCase{
		// ei 60 s; the cost fits in int64 up to quantity 153722867, but
		// now + cost does not.
		{"fresh, new TAT past int64", 0, false, pr(5, 1, 60, 150000000), [5]int64{1, 6, 6, -1, 0}, false, 0},
		{"fresh, largest quantity whose cost fits", 0, false, pr(5, 1, 60, 153722867), [5]int64{1, 6, 6, -1, 0}, false, 0},
		{"limited key, new TAT fits", 360 * s, true, pr(5, 1, 60, 120000000), [5]int64{1, 6, 0, -1, 360}, false, 0},
		{"limited key, new TAT past int64", 360 * s, true, pr(5, 1, 60, 150000000), [5]int64{1, 6, 0, -1, 360}, false, 0},
		{"limited key, held + cost past int64", 360 * s, true, pr(5, 1, 60, 153722867), [5]int64{1, 6, 0, -1, 360}, false, 0},
		// dvt 9223372020000000000 ns: quantity <= limit, so retry_after
		// is a real (huge) wait, not -1.
		{"huge dvt, held + cost past int64", 6e18, true, pr(153722866, 1, 60, 60000000), [5]int64{1, 153722867, 53722867, 376627980, 6000000000}, false, 0},
		{"huge dvt, new TAT past int64", 6e18 + 10*s, true, pr(153722866, 1, 60, 53722867), [5]int64{1, 153722867, 53722866, 10, 6000000010}, false, 0},
		{"stored TAT near MaxInt64", time.Duration(math.MaxInt64 - 10 - t0), true, pr(5, 1, 60, 1), [5]int64{1, 6, 0, 7523371737, 7523372037}, false, 0},
	})
}

// TestThrottleHugePeriod: redis-cell computes period·1e9 in i128, exactly,
// then divides as float64 (spec §3), so a period whose nanoseconds pass
// int64 still gives an emission interval when count brings it back into
// range; those are sane inputs and get redis-cell's reply (§11.1). Only an
// interval that itself passes int64 (redis-cell saturates it) overflows,
// in TestThrottleErrors.
func TestThrottleHugePeriod(t *testing.T) {
	const s = time.Second
	runHugeCases(t, []hugeCase{
		{"period and count MaxInt64", 0, false, pr(5, math.MaxInt64, math.MaxInt64, 1), [5]int64{0, 6, 5, -1, 1}, true, 1 * s},
		{"period and count 9e18", 0, false, pr(5, 9e18, 9e18, 1), [5]int64{0, 6, 5, -1, 1}, true, 1 * s},
		{"period MaxInt64, count 9223372036854775", 0, false, pr(0, 9223372036854775, math.MaxInt64, 1), [5]int64{0, 1, 0, -1, 1000}, true, 1000 * s},
		// float64(9223372037e9)/2, as redis-cell divides (exactly it is
		// ...500000000).
		{"smallest period past int64 ns, count 2", 0, false, pr(0, 2, 9223372037, 1), [5]int64{0, 1, 0, -1, 4611686019}, true, 4611686018499999744},
		{"largest period, count 1e10", 0, false, pr(5, 1e10, math.MaxInt64, 1), [5]int64{0, 6, 5, -1, 922337204}, true, 922337203685477632},
		{"largest interval: period 18446744073, count 2", 0, false, pr(0, 2, 18446744073, 0), [5]int64{0, 1, 1, -1, 0}, true, 0},
		{"largest period, count 1e10, limited", 0, false, pr(5, 1e10, math.MaxInt64, 7), [5]int64{1, 6, 6, -1, 0}, false, 0},
	})
}

// TestPeriodFloat checks period·1e9 rounded once to float64 from the exact
// product, as Rust's `i128 as f64` rounds (to nearest, ties to even).
func TestPeriodFloat(t *testing.T) {
	periods := []int64{1, 60, 9007199, 9007200, 9223372036, 9223372037, 1 << 40, 9e18, math.MaxInt64 - 1, math.MaxInt64, -1, -9223372037, math.MinInt64 + 1, math.MinInt64}
	for p := int64(9223372037); p < 9223372037+5000; p++ {
		periods = append(periods, p, p*1_000_003, -p*999_983)
	}
	for _, p := range periods {
		exact := new(big.Int).Mul(big.NewInt(p), big.NewInt(nsPerSecond))
		want, _ := new(big.Float).SetInt(exact).Float64()
		require.Equal(t, want, periodFloat(p), "period %d", p)
	}
}

// TestValidate: Validate reports Throttle's parameter errors and nothing
// else, whatever the state.
func TestValidate(t *testing.T) {
	tests := []struct {
		p    Params
		want error
	}{
		{pr(5, 1, 60, 1), nil},
		{pr(5, 1, 60, 153722867), nil}, // limited, never an error
		{pr(5, math.MaxInt64, math.MaxInt64, 1), nil},
		{pr(5, 0, 60, 1), ErrZeroRate},
		{pr(5, 2000000000, 1, 1), ErrZeroRate},
		{pr(-1, 0, 60, 1), ErrZeroRate},
		{pr(-1, 1, 60, 1), ErrNegative},
		{pr(5, 1, 9e18, 1), ErrOverflow},
		{pr(5, 1, 60, 153722868), ErrOverflow},
		{prms(5, 1, 60000, 1), nil},
		{prms(5, 1000, 1, 1), nil},
		{prms(0, 1, 9223372036854, 0), nil},
		{prms(5, 1000001, 1, 1), ErrZeroRate},
		{prms(-1, 1, 1, 1), ErrNegative},
		{prms(5, 1, 9223372036855, 0), ErrOverflow},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, tt.p.Validate(), "%+v", tt.p)
		_, err := Throttle(0, false, t0, tt.p)
		require.Equal(t, tt.want, err, "%+v: Throttle", tt.p)
	}
}
