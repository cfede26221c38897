package shards

import (
	"sync/atomic"
	"time"
)

// wallClock is the default Store clock: Unix time in nanoseconds, read as
// the monotonic clock plus an offset to the wall clock.
//
// Why: every command reads the clock once, and time.Now costs two vDSO
// calls (wall and monotonic); time.Since a fixed base costs one, which on
// a VM is a visible share of a cheap command. The offset is recalibrated
// on every active
// expiry tick (recalibrate), so a step of the wall clock (NTP, an
// operator) is followed within a tick; slewing moves both clocks alike.
type wallClock struct {
	base time.Time    // carries the monotonic reading the offset is from
	off  atomic.Int64 // wall time at base, in Unix ns
}

func newWallClock() *wallClock {
	c := &wallClock{base: time.Now()}
	c.off.Store(c.base.UnixNano())
	return c
}

// now returns the current Unix time in nanoseconds.
func (c *wallClock) now() int64 { return c.off.Load() + int64(time.Since(c.base)) }

// recalibrate re-reads the wall clock and moves the offset to it.
func (c *wallClock) recalibrate() {
	t := time.Now()
	c.off.Store(t.UnixNano() - int64(t.Sub(c.base)))
}
