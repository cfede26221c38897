package shards

// The sliding log behind SL.THROTTLE: the exact algorithm of the ZSET
// recipe (drop what left the window, count what is left, record the new
// attempt), kept as timestamps only instead of (score, member) pairs.
//
// Timestamps are microseconds, oldest first, grouped in runs of equal
// timestamps. A run is one uvarint, delta<<1 | multi, where delta is the
// gap to the previous run (to base for the first run); when multi is set a
// second uvarint holds count-2. An entry recorded 1 ms after the previous one
// thus costs 2 bytes, where Redis's listpack spends about 22 and its
// skiplist over 100. Dropped runs are cut from the front lazily: head moves
// forward, and the bytes are moved down only when half the slice is dead or
// when an append would otherwise reallocate.

import "encoding/binary"

// SlidingLog is a log of event timestamps in microseconds. The zero value is
// an empty log. It is not safe for concurrent use; it belongs to its shard.
type SlidingLog struct {
	base int64  // timestamp the first live run's delta is relative to
	last int64  // timestamp of the newest run (when n > 0)
	n    int64  // entries
	head int    // offset of the first live run in buf
	buf  []byte // runs
}

// Len returns the number of entries.
func (l *SlidingLog) Len() int64 { return l.n }

// Newest returns the timestamp of the newest entry (0 for an empty log).
func (l *SlidingLog) Newest() int64 {
	if l.n == 0 {
		return 0
	}
	return l.last
}

// Size returns the bytes the log holds (its struct and its buffer's
// capacity), for memory accounting.
func (l *SlidingLog) Size() int { return 64 + cap(l.buf) }

// run decodes the run at buf[off:] given the timestamp before it.
func (l *SlidingLog) run(off int, prev int64) (ts, count int64, next int) {
	v, k := binary.Uvarint(l.buf[off:])
	off += k
	count = 1
	if v&1 != 0 {
		c, k := binary.Uvarint(l.buf[off:])
		off += k
		count = int64(c) + 2
	}
	return prev + int64(v>>1), count, off
}

// Trim drops the entries with timestamps <= cutoff and returns how many.
func (l *SlidingLog) Trim(cutoff int64) int64 {
	if l.n == 0 {
		return 0
	}
	dropped := int64(0)
	off, prev := l.head, l.base
	for off < len(l.buf) {
		ts, count, next := l.run(off, prev)
		if ts > cutoff {
			break
		}
		dropped += count
		off, prev = next, ts
	}
	if dropped == 0 {
		return 0
	}
	l.n -= dropped
	l.head, l.base = off, prev
	switch {
	case l.n == 0:
		l.head, l.buf = 0, l.buf[:0]
		if cap(l.buf) > 256 {
			l.buf = nil
		}
	case l.head > len(l.buf)/2:
		l.compact()
	}
	return dropped
}

// compact moves the live runs to the front of buf, shrinking it when most
// of its capacity is unused.
func (l *SlidingLog) compact() {
	live := len(l.buf) - l.head
	if cap(l.buf) > 64 && cap(l.buf) >= 4*live {
		l.buf = append(make([]byte, 0, live+live/4+8), l.buf[l.head:]...)
	} else {
		copy(l.buf, l.buf[l.head:])
		l.buf = l.buf[:live]
	}
	l.head = 0
}

// Add records count entries at ts. Timestamps must not go backwards; an
// earlier ts (a clock step back) is recorded as the newest timestamp.
func (l *SlidingLog) Add(ts, count int64) {
	if count <= 0 {
		return
	}
	prev := l.last
	if l.n == 0 {
		l.head, l.buf, l.base, prev = 0, l.buf[:0], ts, ts
	}
	if ts < prev {
		ts = prev
	}
	if len(l.buf)+20 > cap(l.buf) && l.head > 0 {
		l.compact()
	}
	v := uint64(ts-prev) << 1
	if count > 1 {
		l.buf = binary.AppendUvarint(l.buf, v|1)
		l.buf = binary.AppendUvarint(l.buf, uint64(count-2))
	} else {
		l.buf = binary.AppendUvarint(l.buf, v)
	}
	l.last = ts
	l.n += count
}

// keepNewest drops the oldest entries until at most m (>= 1) are left.
func (l *SlidingLog) keepNewest(m int64) {
	for l.n > m {
		ts, count, next := l.run(l.head, l.base)
		if l.n-count >= m {
			l.head, l.base, l.n = next, ts, l.n-count
			continue
		}
		// Keep the newest part of this run: re-encoded as the first run,
		// at delta 0 from base ts, it takes no more bytes than it did
		// (the count is smaller, the delta 0), so it goes just before
		// the next run.
		keep := count - (l.n - m)
		var tmp [2 * binary.MaxVarintLen64]byte
		enc := binary.AppendUvarint(tmp[:0], 0)
		if keep > 1 {
			enc = binary.AppendUvarint(binary.AppendUvarint(tmp[:0], 1), uint64(keep-2))
		}
		l.head = next - len(enc)
		copy(l.buf[l.head:], enc)
		l.base, l.n = ts, m
	}
	if l.head > len(l.buf)/2 {
		l.compact()
	}
}

// Nth returns the timestamp of the k-th oldest entry, counting from 0
// (0 <= k < Len).
func (l *SlidingLog) Nth(k int64) int64 {
	off, prev := l.head, l.base
	for off < len(l.buf) {
		ts, count, next := l.run(off, prev)
		if k < count {
			return ts
		}
		k -= count
		off, prev = next, ts
	}
	return l.last
}

// Each calls fn for every run of entries, oldest first.
func (l *SlidingLog) Each(fn func(ts, count int64)) {
	off, prev := l.head, l.base
	for off < len(l.buf) {
		ts, count, next := l.run(off, prev)
		fn(ts, count)
		off, prev = next, ts
	}
}

// SLParams are the arguments of one SL.THROTTLE call, in microseconds.
type SLParams struct {
	Max           int64 // entries allowed in any window
	Window        int64 // window length (> 0)
	MinGap        int64 // least time between the newest entry and a new one (0: none)
	Quantity      int64 // entries the call records (>= 0)
	RecordBlocked bool  // record refused calls too
}

// SLResult is the outcome of a Throttle call, in microseconds.
type SLResult struct {
	Limited    bool
	Remaining  int64 // entries that could still be recorded now (>= 0)
	RetryAfter int64 // wait until the same call would be allowed; -1 when allowed or never possible
	ResetAfter int64 // wait until the log is empty; 0 when it is
	Changed    bool  // the log was trimmed or recorded to
}

// Throttle runs one sliding-log decision at now: it drops the entries that
// left the window (timestamp <= now - Window), refuses when the entries left
// plus Quantity exceed Max, or when MinGap is set and the newest entry is
// less than MinGap old, and otherwise records Quantity entries at now.
// Refused calls are recorded too with RecordBlocked. It is a pure function of
// the log, now and p: the caller supplies the clock.
func (l *SlidingLog) Throttle(now int64, p SLParams) SLResult {
	var r SLResult
	r.Changed = l.Trim(now-p.Window) > 0
	allowed := l.n+p.Quantity <= p.Max && (p.MinGap == 0 || l.n == 0 || now-l.last >= p.MinGap)
	if allowed || p.RecordBlocked {
		if p.Quantity > 0 {
			l.Add(now, p.Quantity)
			r.Changed = true
		}
		if !allowed && l.n > p.Max+1 {
			// Entries older than the newest Max+1 change no decision
			// (a call needs the entries in the window plus its
			// quantity to be at most Max, and the newest Max+1 are the
			// last to leave it) nor any retry_after: dropping them
			// bounds a key that is refused and recorded again and
			// again, which would otherwise grow by a run per call (and
			// each call's walk with it), and whose count would
			// overflow int64 with huge quantities and let calls through.
			l.keepNewest(p.Max + 1)
		}
	}
	r.Limited = !allowed
	r.Remaining = max(0, p.Max-l.n)
	r.RetryAfter = -1
	if r.Limited && p.Quantity <= p.Max {
		// The same call succeeds once enough of the oldest entries have
		// left the window and the newest is MinGap old (or gone).
		wait := int64(0)
		if k := l.n + p.Quantity - p.Max; k > 0 {
			wait = l.Nth(k-1) + p.Window - now
		}
		if p.MinGap > 0 && l.n > 0 {
			wait = max(wait, l.last+min(p.MinGap, p.Window)-now)
		}
		r.RetryAfter = max(wait, 0)
	}
	if l.n > 0 {
		r.ResetAfter = l.last + p.Window - now
	}
	return r
}
