package shards

import (
	"math/rand/v2"
	"sync/atomic"
)

// Access tracking for the LRU and LFU eviction policies, as Redis keeps it
// in an object's 24 lru bits, here in the Entry's 16-bit access field
// (the inline key gave up two bytes for it, so an Entry stays 32 bytes):
//
//   - LRU: the access time in seconds, modulo 2^16. The idle time of a
//     key is the clock's distance from it, so it wraps after 18 hours (an
//     idle key then looks fresh again, as Redis's wraps after 194 days).
//   - LFU: Redis's logarithmic counter in the low byte (a key accessed N
//     times reaches about log(N·lfu-log-factor); new keys start at 5) and
//     the minute of the last decrement in the high byte, modulo 256: the
//     counter loses one per lfu-decay-time minutes of idleness, read over
//     at most 4 hours and 15 minutes.
//
// The field is written on every access only while an LRU or LFU policy
// is set (SetAccess); otherwise lookups pay one atomic load.

// AccessMode says what an access records in an entry.
type AccessMode uint32

// The access modes.
const (
	AccessNone AccessMode = iota // nothing: the field is left alone
	AccessLRU                    // the access time
	AccessLFU                    // the logarithmic access counter
)

// lfuInitVal is the counter of a new key (Redis's LFU_INIT_VAL), so that
// a key just written is not the first to go.
const lfuInitVal = 5

// accessState is the Store's access tracking; zero is AccessNone.
type accessState struct {
	mode      atomic.Uint32
	logFactor atomic.Int64
	decay     atomic.Int64 // minutes
}

// SetAccess sets what accesses record (the maxmemory policy's family),
// the LFU counter's logarithm factor and its decay period in minutes
// (Redis's lfu-log-factor and lfu-decay-time). Entries keep what they
// recorded under another mode until their next access.
func (s *Store) SetAccess(mode AccessMode, logFactor, decayMinutes int64) {
	s.access.logFactor.Store(logFactor)
	s.access.decay.Store(decayMinutes)
	s.access.mode.Store(uint32(mode))
}

// lruClock is the LRU clock at nowMs: seconds modulo 2^16.
func lruClock(nowMs int64) uint16 { return uint16(nowMs / 1000) }

// lfuMinutes is the LFU decay clock at nowMs: minutes modulo 2^8.
func lfuMinutes(nowMs int64) uint8 { return uint8(nowMs / 60000) }

// idleMs is how long ago, in ms, the LRU clock stamp was taken (Redis's
// estimateObjectIdleTime, at a resolution of one second).
func idleMs(stamp uint16, nowMs int64) int64 {
	return int64(lruClock(nowMs)-stamp) * 1000 // modular: wraps as the clock does
}

// lfuCounter is the LFU counter of access field a at nowMs, less one for
// every decay period since its last decrement (Redis's LFUDecrAndReturn).
func (s *Store) lfuCounter(a uint16, nowMs int64) uint8 {
	counter := uint8(a)
	decay := s.access.decay.Load()
	if decay <= 0 {
		return counter
	}
	elapsed := int64(lfuMinutes(nowMs) - uint8(a>>8))
	if periods := elapsed / decay; periods > 0 {
		if periods >= int64(counter) {
			return 0
		}
		counter -= uint8(periods)
	}
	return counter
}

// lfuIncr is Redis's LFULogIncr: the counter grows by one with a
// probability that falls as it grows.
func (s *Store) lfuIncr(counter uint8) uint8 {
	if counter == 255 {
		return counter
	}
	base := float64(int(counter) - lfuInitVal)
	if base < 0 {
		base = 0
	}
	if rand.Float64() < 1/(base*float64(s.access.logFactor.Load())+1) {
		counter++
	}
	return counter
}

// touchAccess records an access to e at nowMs. Requires e's shard held.
func (s *Store) touchAccess(e *Entry, nowMs int64) {
	switch AccessMode(s.access.mode.Load()) {
	case AccessLRU:
		e.access = lruClock(nowMs)
	case AccessLFU:
		e.access = uint16(lfuMinutes(nowMs))<<8 | uint16(s.lfuIncr(s.lfuCounter(e.access, nowMs)))
	}
}

// newAccess sets the access field of a new key created at nowMs: the
// access time, or LFU's initial counter. Requires e's shard held.
func (s *Store) newAccess(e *Entry, nowMs int64) {
	switch AccessMode(s.access.mode.Load()) {
	case AccessLRU:
		e.access = lruClock(nowMs)
	case AccessLFU:
		e.access = uint16(lfuMinutes(nowMs))<<8 | lfuInitVal
	}
}

// IdleTime returns OBJECT IDLETIME of e at nowMs, in seconds: the time
// since its last access as the LRU clock recorded it.
func (s *Store) IdleTime(e *Entry, nowMs int64) int64 { return idleMs(e.access, nowMs) / 1000 }

// Freq returns OBJECT FREQ of e at nowMs: its decayed LFU counter.
func (s *Store) Freq(e *Entry, nowMs int64) int64 { return int64(s.lfuCounter(e.access, nowMs)) }

// RestoreAccess sets e's access field from RESTORE's IDLETIME (seconds)
// or FREQ, as Redis's objectSetLRUOrLFU: the access time idleSeconds ago
// under an LRU policy, the counter freq (at most 255) under an LFU one;
// -1 (not given) or the other policy's option leaves the field alone.
// Requires e's shard held.
func (s *Store) RestoreAccess(e *Entry, idleSeconds, freq, nowMs int64) {
	switch AccessMode(s.access.mode.Load()) {
	case AccessLRU:
		if idleSeconds >= 0 {
			e.access = lruClock(nowMs) - uint16(idleSeconds)
		}
	case AccessLFU:
		if freq >= 0 {
			e.access = uint16(lfuMinutes(nowMs))<<8 | uint16(min(freq, 255))
		}
	}
}
