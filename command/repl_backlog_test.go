package command

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/ratekv/ratekv/config"
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

// streamByte is the byte at offset off of the test streams below: a
// block reused too early holds other offsets' bytes.
func streamByte(off int64) byte { return byte(uint64(off) * 0x9E3779B97F4A7C15 >> 56) }

// appendPattern appends n bytes of the test stream to b.
func appendPattern(b *backlog, n int, buf []byte) {
	off := b.end.Load()
	buf = buf[:0]
	for i := range n {
		buf = append(buf, streamByte(off+int64(i)))
	}
	b.appendStream(buf, true)
}

// TestBacklogReusesBlocks: once the stream is longer than the backlog, an
// append allocates nothing; a block a reader holds is not reused, even
// when the reader stands at its end; released, the blocks are reused.
func TestBacklogReusesBlocks(t *testing.T) {
	b := newBacklog(0, 2*blockSize)
	buf := make([]byte, 0, 4096)
	for range 8 * blockSize / 1024 {
		appendPattern(b, 1024, buf)
	}
	allocs := testing.AllocsPerRun(5, func() {
		for range 2 * blockSize / 1000 {
			appendPattern(b, 1000, buf)
		}
	})
	require.Zero(t, allocs, "allocations per 2 blocks of stream")

	// A reader at the end of a block, and one inside the next.
	at := (b.end.Load()/blockSize + 1) * blockSize
	appendPattern(b, int(at-b.end.Load()), buf)
	edge, ok := b.cursorAt(at)
	require.True(t, ok)
	edge.blk = b.tail // as a reader that read up to the block's end stands
	require.Equal(t, at, edge.blk.off+blockSize)
	appendPattern(b, 100, buf)
	inside, ok := b.cursorAt(at + 50)
	require.True(t, ok)
	for range 10 * blockSize / 1000 {
		appendPattern(b, 1000, buf)
	}
	for _, cu := range []*cursor{&edge, &inside} {
		from := cu.pos
		got := cu.read(nil, 1<<30)
		for i, c := range got {
			require.Equal(t, streamByte(from+int64(i)), c, "byte at %d read from %d", from+int64(i), from)
		}
		b.release(cu.h)
	}
	allocs = testing.AllocsPerRun(5, func() {
		for range 2 * blockSize / 1000 {
			appendPattern(b, 1000, buf)
		}
	})
	require.Zero(t, allocs, "allocations per 2 blocks of stream after the readers left")
	b.mu.Lock()
	defer b.mu.Unlock()
	require.LessOrEqual(t, b.nfree, maxFree)
	n := 0
	for blk := b.oldest; blk != nil; blk = blk.next.Load() {
		n++
	}
	// The backlog's (two, and the tail's part), and the one that left it at
	// the last append.
	require.LessOrEqual(t, n, 5, "blocks held after the readers left")
}

// TestBacklogReuseWithLaggingReaders runs readers that lag behind the
// backlog (its size is two blocks; the writer waits while one lags 6
// blocks behind) while a writer appends: each checks
// every byte it reads, after a while (as a link writes them to its
// socket), before it settles. Run with -race.
func TestBacklogReuseWithLaggingReaders(t *testing.T) {
	seed := time.Now().UnixNano()
	b := newBacklog(0, 2*blockSize)
	const total = 48 * blockSize
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	var holds []*hold
	for r := range 4 {
		cu, ok := b.cursorAt(0)
		require.True(t, ok)
		holds = append(holds, cu.h)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer b.release(cu.h)
			rng := rand.New(rand.NewSource(seed + int64(r)))
			for cu.pos < total {
				cu.settle()
				from := cu.pos
				p := cu.next([]int{1024, 7, blockSize, 1 << 20}[rng.Intn(4)])
				if len(p) == 0 {
					runtime.Gosched()
					continue
				}
				if rng.Intn(2) == 0 {
					time.Sleep(time.Duration(rng.Intn(100)) * time.Microsecond)
				}
				for i, c := range p {
					if c != streamByte(from+int64(i)) {
						errs <- fmt.Sprintf("reader %d: byte at %d changed under it", r, from+int64(i))
						return
					}
				}
			}
		}()
	}
	rng := rand.New(rand.NewSource(seed))
	buf := make([]byte, 0, 2048)
	lagging := func() bool { // some reader is 6 blocks behind
		for _, h := range holds {
			if b.end.Load()-h.pos.Load() > 6*blockSize {
				return true
			}
		}
		return false
	}
	for b.end.Load() < total {
		appendPattern(b, []int{1024, 1000, 1, 2048}[rng.Intn(4)], buf)
		for lagging() {
			time.Sleep(50 * time.Microsecond)
		}
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("seed %d: %s", seed, e)
	}
}

// TestStreamHeldForReplicasNotCountedForEviction: blocks kept for a
// lagging replica are left out of the memory maxmemory counts, as Redis's
// replicas' output buffers; the backlog itself counts.
func TestStreamHeldForReplicasNotCountedForEviction(t *testing.T) {
	ts := newTestServer(t)
	e := ts.srv
	require.Equal(t, "OK", ts.client(t, 2).Do(context.Background(), "CONFIG", "SET", "maxmemory", "1gb").Val())
	e.repl.mu.Lock()
	bl := e.repl.ensureBacklogLocked()
	e.repl.mu.Unlock()
	cu, ok := bl.cursorAt(bl.end.Load()) // a replica that reads nothing
	require.True(t, ok)
	runtime.GC()
	e.sample()
	before := e.mem.overhead.Load()
	buf := make([]byte, 0, 4096)
	const held = 256 * blockSize // 16 MiB
	for bl.end.Load()-cu.pos < held {
		appendPattern(bl, 4096, buf)
	}
	require.GreaterOrEqual(t, bl.outputMemory(), int64(held)-e.cfg.Int(config.ReplBacklogSize)-blockSize)
	runtime.GC()
	e.sample()
	require.Less(t, e.mem.overhead.Load()-before, int64(held/4), "counted for eviction")
	bl.release(cu.h)
	appendPattern(bl, blockSize, buf)
	require.LessOrEqual(t, bl.outputMemory(), int64(maxFree+1)*blockSize, "released")
}
