package command

import (
	"bytes"
	"math/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestBacklogAcrossBlocks appends records of every size (within a block,
// filling one exactly, spanning several) and reads them back from every
// record's offset, in pieces of several sizes, with the old blocks
// trimmed to the backlog's size.
func TestBacklogAcrossBlocks(t *testing.T) {
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	const start, size = 1000, 3 * blockSize
	b := newBacklog(start, size)
	var all []byte
	var offs []int64
	sizes := []int{1, 45, blockSize - 1000 - 45 - 1, 1, blockSize, 2*blockSize + 7, 0, 3}
	for range 200 {
		sizes = append(sizes, rng.Intn(300))
	}
	for i, n := range sizes {
		rec := make([]byte, n)
		rng.Read(rec)
		offs = append(offs, start+int64(len(all)))
		all = append(all, rec...)
		b.appendStream(rec, i%2 == 0)
		require.Equal(t, start+int64(len(all)), b.end.Load(), "seed %d: end after record %d", seed, i)
	}
	first, end := b.span()
	require.Equal(t, start+int64(len(all)), end)
	require.Less(t, end-first, int64(size)+blockSize, "seed %d: trimmed to the size", seed)
	require.GreaterOrEqual(t, end-first, int64(size), "seed %d: keeps the size", seed)
	_, ok := b.cursorAt(first - 1)
	require.False(t, ok, "an offset trimmed away")
	_, ok = b.cursorAt(end + 1)
	require.False(t, ok, "an offset past the end")
	for i, off := range offs {
		if off < first {
			continue
		}
		cu, ok := b.cursorAt(off)
		require.True(t, ok, "seed %d: record %d", seed, i)
		max := []int{7, 4097, blockSize, 1 << 30}[i%4]
		var got []byte
		for cu.lag() > 0 {
			n := len(got)
			got = cu.read(got, len(got)+max)
			require.LessOrEqual(t, len(got)-n, max)
		}
		require.True(t, bytes.Equal(all[off-start:], got), "seed %d: stream from record %d (offset %d), read %d at a time", seed, i, off, max)
	}
	require.Equal(t, uint64((len(sizes)+1)/2), b.LastSeq(), "effect records counted")
}

// TestBacklogWakesSleepingWriter: a link's writer asleep on an empty
// stream wakes on the next append (no tick), and a writer that woke by
// itself no longer counts as asleep.
func TestBacklogWakesSleepingWriter(t *testing.T) {
	b := newBacklog(0, 1<<20)
	w := newWaker()
	b.wake.Store(&[]*waker{w})
	cu, ok := b.cursorAt(0)
	require.True(t, ok)
	woke := make(chan struct{})
	go func() {
		w.wait(&cu, nil, nil)
		close(woke)
	}()
	require.Eventually(t, func() bool { return b.sleepers.Load() == 1 }, 5*time.Second, time.Millisecond)
	b.appendStream([]byte("*1\r\n$4\r\nPING\r\n"), false)
	select {
	case <-woke:
	case <-time.After(5 * time.Second):
		t.Fatal("the append did not wake the writer")
	}
	require.Equal(t, int32(0), b.sleepers.Load())
	require.Equal(t, int64(14), cu.lag())

	// Woken by its tick: it counts itself off.
	cu.read(nil, 1<<20)
	tick := make(chan time.Time, 1)
	tick <- time.Now()
	w.wait(&cu, tick, nil)
	require.Equal(t, int32(0), b.sleepers.Load())
	// With bytes unread it does not sleep at all.
	b.appendStream([]byte("x"), false)
	w.wait(&cu, nil, nil)
	require.Equal(t, int32(0), b.sleepers.Load())
}
