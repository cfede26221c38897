package persist

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	retryEvery = 10 * time.Millisecond
	os.Exit(m.Run())
}

// memFile is an aofFile in memory that can fail on demand. Like a real
// disk after a failed fsync, it forgets what was written since the last
// good fsync.
type memFile struct {
	mu        sync.Mutex
	data      []byte // what reads would see
	durable   []byte // what survives a crash
	failWrite error
	shortOnce bool // the next write of records (not of zeros written ahead) stores half and fails
	failSync  error
	syncDelay time.Duration // how long an fsync takes, a slow disk's
	writes    int
	syncs     int
	closed    bool
	peak      int // the largest the file has been
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return 0, os.ErrClosed
	}
	if f.failWrite != nil {
		return 0, f.failWrite
	}
	n := len(p)
	var err error
	if f.shortOnce && len(bytes.Trim(p, "\x00")) > 0 {
		f.shortOnce, n, err = false, len(p)/2, syscall.ENOSPC
	}
	if need := int(off) + n; need > len(f.data) {
		f.data = append(f.data, make([]byte, need-len(f.data))...)
	}
	copy(f.data[off:], p[:n])
	f.writes++
	f.peak = max(f.peak, len(f.data))
	return n, err
}

// Allocate extends the file with zeros to off+n, as fallocate does.
func (f *memFile) Allocate(off, n int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return os.ErrClosed
	}
	if need := int(off + n); need > len(f.data) {
		f.data = append(f.data, make([]byte, need-len(f.data))...)
	}
	f.peak = max(f.peak, len(f.data))
	return nil
}

// Truncate cuts the file; like a new size, it is durable only after an
// fsync.
func (f *memFile) Truncate(size int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return os.ErrClosed
	}
	f.data = f.data[:min(int(size), len(f.data))]
	return nil
}

func (f *memFile) Sync() error {
	time.Sleep(f.syncDelay)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failSync != nil {
		f.data = bytes.Clone(f.durable) // the kernel dropped the dirty pages
		return f.failSync
	}
	f.durable = bytes.Clone(f.data)
	f.syncs++
	return nil
}

func (f *memFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

func (f *memFile) set(fn func(f *memFile)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

// get returns the records written and those durable, without the zeros
// written ahead of them under always (as recordsEnd reads a file).
func (f *memFile) get() (data, durable []byte, syncs int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return bytes.TrimRight(f.data, "\x00"), bytes.TrimRight(f.durable, "\x00"), f.syncs
}

// size is the file's current size, space allocated ahead included.
func (f *memFile) size() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.data)
}

// raw returns what was written, zeros included.
func (f *memFile) raw() (data, durable []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return bytes.Clone(f.data), bytes.Clone(f.durable)
}

func testAOF(t *testing.T, f *memFile, p Policy) *AOF {
	l := openAOF(f, "mem", 0, p, slog.New(slog.DiscardHandler))
	t.Cleanup(func() { l.Close() })
	return l
}

func TestAOFAlwaysIsDurableBeforeSyncReturns(t *testing.T) {
	f := &memFile{}
	l := testAOF(t, f, FsyncAlways)
	const writers, each = 8, 50
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				r := rec("SET", fmt.Sprintf("w%d:%d", w, i), "v")
				seq := l.Append(r)
				require.NoError(t, l.Sync(seq))
				_, durable, _ := f.get()
				require.True(t, bytes.Contains(durable, r), "writer %d record %d not durable after Sync", w, i)
			}
		}()
	}
	wg.Wait()
	_, durable, syncs := f.get()
	recs, err := readAll(durable)
	require.ErrorIs(t, err, io.EOF)
	require.Len(t, recs, writers*each)
	require.LessOrEqual(t, syncs, writers*each, "one fsync per Sync at most")
	t.Logf("%d records, %d fsyncs (group commit)", writers*each, syncs)
}

// Under always the records land in zeros written ahead a chunk at a time
// (so that an fsync need not commit a new size), under everysec and no in
// space allocated ahead (cheaper writes); a clean close cuts either off.
func TestAOFWritesIntoSpaceAhead(t *testing.T) {
	for _, p := range []Policy{FsyncAlways, FsyncEverysec, FsyncNo} {
		t.Run(p.String(), func(t *testing.T) {
			f := &memFile{}
			l := testAOF(t, f, p)
			chunk := reserveChunk
			if p == FsyncAlways {
				chunk = prezeroChunk
			}
			// Sync waits for the write under always only.
			written := func(want []byte) {
				require.Eventually(t, func() bool {
					data, _ := f.raw()
					return bytes.HasPrefix(data, want)
				}, 10*time.Second, time.Millisecond)
			}
			// A quiet server's first record gets a little space ahead,
			// not a whole chunk.
			first := rec("SET", "k", "v")
			require.NoError(t, l.Sync(l.Append(first)))
			written(first)
			ahead := f.size() - len(first)
			require.Greater(t, ahead, 0, "space was made ahead of the records")
			require.LessOrEqual(t, ahead, minAhead)
			// Then as much as the file holds, up to a chunk.
			want := first
			big := bytes.Repeat([]byte("v"), 100<<10)
			for i := 0; i < 100; i++ { // 10 MB: past a chunk of either kind
				before := len(want)
				r := rec("SET", fmt.Sprint("k", i), string(big))
				want = append(want, r...)
				require.NoError(t, l.Sync(l.Append(r)))
				written(want)
				ahead := f.size() - len(want)
				require.LessOrEqual(t, ahead, min(max(before, minAhead), chunk), "after %d bytes", len(want))
			}
			require.NoError(t, l.Close())
			data, durable := f.raw()
			require.Equal(t, want, data, "the close cut the space ahead off")
			require.Equal(t, want, durable[:len(want)])
			tail := durable[len(want):]
			require.Equal(t, make([]byte, len(tail)), tail, "only zeros follow the records")
			ahead = f.peak - len(want)
			require.Greater(t, ahead, minAhead, "the space ahead grew with the file")
			require.LessOrEqual(t, ahead, chunk)
			end, err := recordsEnd(bytes.NewReader(durable), int64(len(durable)))
			require.NoError(t, err)
			require.Equal(t, int64(len(want)), end)
		})
	}
}

// slowFile is a memFile whose fsync takes a while, like a disk's.
type slowFile struct {
	memFile
	delay time.Duration
}

func (f *slowFile) Sync() error {
	time.Sleep(f.delay)
	return f.memFile.Sync()
}

// Under always, an fsync waits for the clients the last one answered to
// come back, so that clients sending one write at a time share one fsync
// instead of splitting into two groups that alternate (see gather). Each
// writer here takes a short "round trip" (a busy wait of 100 to 400 µs,
// far shorter than the 3 ms fsync) before its next write; without gather,
// the first writer back starts an fsync alone and the others wait for the
// next one.
func TestAOFAlwaysGathersEveryWaitingClient(t *testing.T) {
	// Long enough that a busy machine does not time the gathering out: the
	// count below then depends on the logic only. (Restored after the log
	// is closed: cleanups run last-registered first.)
	w := gatherWait
	t.Cleanup(func() { gatherWait = w })
	gatherWait = 200 * time.Millisecond
	f := &slowFile{delay: 3 * time.Millisecond}
	l := openAOF(f, "slow", 0, FsyncAlways, slog.New(slog.DiscardHandler))
	t.Cleanup(func() { l.Close() })
	const writers, rounds = 4, 30
	roundTrip := func(w int) {
		for t0 := time.Now(); time.Since(t0) < time.Duration(w+1)*100*time.Microsecond; {
		}
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := 0; i < rounds; i++ {
				roundTrip(w)
				if err := l.Sync(l.Append(rec("SET", fmt.Sprintf("w%d:%d", w, i), "v"))); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	_, durable, syncs := f.get()
	recs, err := readAll(durable)
	require.ErrorIs(t, err, io.EOF)
	require.Len(t, recs, writers*rounds)
	// Each round needs one fsync for all the writers (plus one at the
	// start, before the crowd is known); without gather it takes more.
	require.LessOrEqual(t, syncs, rounds+2, "fsyncs for %d writers x %d rounds", writers, rounds)
	t.Logf("%d records, %d fsyncs", writers*rounds, syncs)
}

func TestAOFEverysecReturnsAtOnceAndFsyncsLater(t *testing.T) {
	f := &memFile{}
	l := testAOF(t, f, FsyncEverysec)
	r := rec("SET", "k", "v")
	require.NoError(t, l.Sync(l.Append(r)))
	require.Eventually(t, func() bool { data, _, _ := f.get(); return bytes.Equal(data, r) }, 2*time.Second, time.Millisecond,
		"written to the OS at once")
	require.Eventually(t, func() bool { _, durable, _ := f.get(); return bytes.Equal(durable, r) }, 3*time.Second, 10*time.Millisecond,
		"fsynced within about a second")
}

func TestAOFNoPolicyFsyncsOnlyAtClose(t *testing.T) {
	f := &memFile{}
	l := openAOF(f, "mem", 0, FsyncNo, slog.New(slog.DiscardHandler))
	r := rec("SET", "k", "v")
	require.NoError(t, l.Sync(l.Append(r)))
	require.Eventually(t, func() bool { data, _, _ := f.get(); return bytes.Equal(data, r) }, 2*time.Second, time.Millisecond)
	_, durable, _ := f.get()
	require.Empty(t, durable)
	require.NoError(t, l.Close())
	_, durable, _ = f.get()
	require.Equal(t, r, durable)
}

// TestAOFFlushFsyncsWhateverThePolicy: a shutdown's Flush makes every
// record durable even under appendfsync no, reports a disk that refuses
// them (so the server can go on instead of exiting), and succeeds once the
// disk recovers.
func TestAOFFlushFsyncsWhateverThePolicy(t *testing.T) {
	f := &memFile{}
	l := testAOF(t, f, FsyncNo)
	r1 := rec("SET", "a", "1")
	require.NoError(t, l.Sync(l.Append(r1)))
	require.NoError(t, l.Flush())
	_, durable, _ := f.get()
	require.Equal(t, r1, durable)

	f.set(func(f *memFile) { f.failWrite = syscall.ENOSPC })
	r2 := rec("SET", "b", "2")
	l.Append(r2)
	require.ErrorIs(t, l.Flush(), syscall.ENOSPC)
	f.set(func(f *memFile) { f.failWrite = nil })
	require.NoError(t, l.Flush())
	_, durable, _ = f.get()
	require.Equal(t, append(append([]byte(nil), r1...), r2...), durable)

	// A failed fsync of what was written under no may have lost it, and
	// the log has no copy: Flush goes on failing after the disk recovers,
	// until a rewrite (so a shutdown does not exit over the loss).
	require.NoError(t, l.Sync(l.Append(rec("SET", "c", "3"))))
	require.Eventually(t, func() bool { data, _, _ := f.get(); return len(data) > len(durable) }, 2*time.Second, time.Millisecond)
	f.set(func(f *memFile) { f.failSync = syscall.EIO })
	require.ErrorIs(t, l.Flush(), syscall.EIO)
	f.set(func(f *memFile) { f.failSync = nil })
	require.ErrorIs(t, l.Flush(), syscall.EIO)
	require.True(t, l.Lost())
	require.ErrorIs(t, l.Close(), syscall.EIO)
	require.ErrorIs(t, l.Flush(), ErrClosed)
}

func TestAOFWriteErrorIsStickyUntilTheDiskRecovers(t *testing.T) {
	f := &memFile{failWrite: syscall.ENOSPC}
	l := testAOF(t, f, FsyncAlways)
	r1 := rec("SET", "a", "1")
	synced := make(chan error, 1)
	go func() { synced <- l.Sync(l.Append(r1)) }()
	require.Eventually(t, func() bool { return l.Err() != nil }, 2*time.Second, time.Millisecond)
	require.ErrorIs(t, l.Err(), syscall.ENOSPC)
	select {
	case err := <-synced:
		t.Fatalf("Sync returned %v while the record is not durable", err)
	case <-time.After(50 * time.Millisecond): // several retries fail meanwhile
	}
	f.set(func(f *memFile) { f.failWrite = nil })
	select {
	case err := <-synced:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Sync did not return after the disk recovered")
	}
	require.NoError(t, l.Err())
	_, durable, _ := f.get()
	require.Equal(t, r1, durable)
}

func TestAOFShortWriteIsRewritten(t *testing.T) {
	f := &memFile{shortOnce: true}
	l := testAOF(t, f, FsyncAlways)
	r1, r2 := rec("SET", "a", "1"), rec("SET", "b", "2")
	l.Append(r1)
	require.NoError(t, l.Sync(l.Append(r2)))
	require.NoError(t, l.Err())
	_, durable, _ := f.get()
	require.Equal(t, append(bytes.Clone(r1), r2...), durable)
}

func TestAOFFailedFsyncRewritesWhatTheKernelDropped(t *testing.T) {
	for _, p := range []Policy{FsyncAlways, FsyncEverysec} {
		t.Run(p.String(), func(t *testing.T) {
			f := &memFile{}
			l := testAOF(t, f, p)
			var want []byte
			r := rec("SET", "before", "1")
			want = append(want, r...)
			require.NoError(t, l.Sync(l.Append(r)))
			require.Eventually(t, func() bool { _, d, _ := f.get(); return bytes.Equal(d, want) }, 3*time.Second, time.Millisecond)
			f.set(func(f *memFile) { f.failSync = syscall.EIO })
			done := make(chan error, 1)
			go func() {
				var seq uint64
				for i := 0; i < 5; i++ {
					seq = l.Append(rec("SET", fmt.Sprint("during", i), "2"))
				}
				done <- l.Sync(seq)
			}()
			for i := 0; i < 5; i++ {
				want = append(want, rec("SET", fmt.Sprint("during", i), "2")...)
			}
			require.Eventually(t, func() bool { return l.Err() != nil }, 3*time.Second, time.Millisecond)
			require.ErrorIs(t, l.Err(), syscall.EIO)
			f.set(func(f *memFile) { f.failSync = nil })
			require.NoError(t, <-done)
			require.Eventually(t, func() bool { _, d, _ := f.get(); return bytes.Equal(d, want) && l.Err() == nil }, 3*time.Second, time.Millisecond,
				"the records written before the failed fsync are written again, once")
		})
	}
}

// gateFile is a memFile whose fsyncs wait at a gate: entered receives once
// per fsync begun, and each waits for a value on release (the error it
// then fails with, or nil). A good fsync makes durable what was written
// when it began: bytes written while it runs need another.
type gateFile struct {
	memFile
	entered chan struct{}
	release chan error
}

func (f *gateFile) Sync() error {
	f.mu.Lock()
	begun := bytes.Clone(f.data)
	f.mu.Unlock()
	f.entered <- struct{}{}
	err := <-f.release
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		f.data = bytes.Clone(f.durable) // the kernel dropped the dirty pages
		return err
	}
	f.durable = begun
	f.syncs++
	return nil
}

// With everysec, once writeInline bytes wait, Sync writes them itself, and
// it can do so while the writer's fsync is in progress: the buffer does not
// grow for as long as the disk takes. If that fsync then fails, the bytes
// written inline during it are written again along with the rest.
func TestAOFEverysecWritesInlineDuringAnFsync(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprint("fsync fails: ", fail), func(t *testing.T) {
			f := &gateFile{entered: make(chan struct{}), release: make(chan error)}
			l := openAOF(f, "gate", 0, FsyncEverysec, slog.New(slog.DiscardHandler))
			var want []byte
			r := rec("SET", "first", "1")
			want = append(want, r...)
			require.NoError(t, l.Sync(l.Append(r)))
			select {
			case <-f.entered: // the everysec fsync, about a second later
			case <-time.After(5 * time.Second):
				t.Fatal("no fsync within 5 s under everysec")
			}
			var seq uint64
			for i := 0; len(want) < 2*writeInline; i++ {
				r := rec("SET", fmt.Sprint("during", i), "2")
				want = append(want, r...)
				seq = l.Append(r)
			}
			require.NoError(t, l.Sync(seq))
			data, durable, _ := f.get()
			require.Equal(t, want, data, "written by Sync itself while the fsync waits")
			require.Len(t, durable, 0)
			if fail {
				f.release <- syscall.EIO
				<-f.entered // the retry a second later rewrites everything
			}
			f.release <- nil
			go func() { // Close's final fsync
				for range f.entered {
					f.release <- nil
				}
			}()
			require.NoError(t, l.Close())
			close(f.entered)
			_, durable, _ = f.get()
			require.Equal(t, want, durable)
		})
	}
}

func TestAOFRotateSplitsAtTheRequestedRecord(t *testing.T) {
	f1, f2 := &memFile{}, &memFile{}
	l := openAOF(f1, "one", 0, FsyncEverysec, slog.New(slog.DiscardHandler))
	var before, after, captured []byte
	for i := 0; i < 10; i++ {
		r := rec("SET", fmt.Sprint("a", i), "1")
		before = append(before, r...)
		l.Append(r)
	}
	c := l.BeginCapture(1 << 20)
	for i := 0; i < 10; i++ {
		r := rec("SET", fmt.Sprint("b", i), "2")
		before, captured = append(before, r...), append(captured, r...)
		l.Append(r)
	}
	last, done, err := l.Rotate(f2, "two", 0, c)
	require.NoError(t, err)
	require.Equal(t, uint64(20), last)
	for i := 0; i < 10; i++ {
		r := rec("SET", fmt.Sprint("c", i), "3")
		after = append(after, r...)
		l.Append(r)
	}
	require.NoError(t, <-done)
	_, d1, _ := f1.get()
	require.Equal(t, before, d1, "the old file holds the records up to the rotation, fsynced")
	require.Equal(t, before, f1.data, "and ends there: the space allocated ahead is cut off")
	require.Greater(t, f1.peak, len(before))
	require.True(t, f1.closed)
	require.NoError(t, l.Close())
	_, d2, _ := f2.get()
	require.Equal(t, after, d2)
	require.Equal(t, captured, c.data)
	require.Equal(t, uint64(11), c.first)
	n := 0
	require.NoError(t, c.each(func(seq uint64, r []byte) error {
		require.Equal(t, c.first+uint64(n), seq)
		n++
		return nil
	}))
	require.Equal(t, 10, n)
}

func TestAOFCaptureOverflow(t *testing.T) {
	l := testAOF(t, &memFile{}, FsyncNo)
	c := l.BeginCapture(100)
	for i := 0; i < 10; i++ {
		l.Append(rec("SET", "key", "value"))
	}
	_, err := l.EndCapture(c)
	require.ErrorIs(t, err, errCaptureOverflow)
}

func TestAOFSyncAfterCloseFails(t *testing.T) {
	f := &memFile{failWrite: errors.New("gone")}
	l := openAOF(f, "mem", 0, FsyncAlways, slog.New(slog.DiscardHandler))
	seq := l.Append(rec("SET", "k", "v"))
	require.Error(t, l.Close())
	require.ErrorIs(t, l.Sync(seq), ErrClosed)
}

// BenchmarkAOFAppend measures Append under contention, the cost a write
// command pays with its shard lock held.
func BenchmarkAOFAppend(b *testing.B) {
	l := openAOF(&discardFile{}, "bench", 0, FsyncNo, slog.New(slog.DiscardHandler))
	defer l.Close()
	r := rec("SET", "user:12345", "1700000000000000000", "PXAT", "1700000000000")
	b.ReportAllocs()
	b.SetBytes(int64(len(r)))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l.Sync(l.Append(r))
		}
	})
}

type discardFile struct{}

func (discardFile) WriteAt(p []byte, off int64) (int, error) { return len(p), nil }
func (discardFile) Sync() error                              { return nil }
func (discardFile) Close() error                             { return nil }

// Under no the log keeps no copy of what it writes. After a CONFIG SET to
// always, an fsync that fails may have cost those bytes, and the log cannot
// write them again; the next fsync succeeding proves nothing (Linux
// reports a writeback error once). So the record waiting under always gets
// ErrLost, not a durable answer; writes stay refused after the disk works
// again, until a rewrite's new base holds the records (Rebased).
func TestFailedFsyncWithoutACopyWaitsForARewrite(t *testing.T) {
	f := &memFile{}
	l := testAOF(t, f, FsyncNo)
	r1 := rec("SET", "a", "1")
	require.NoError(t, l.Sync(l.Append(r1)))
	require.Eventually(t, func() bool { d, _, _ := f.get(); return bytes.Equal(d, r1) }, 5*time.Second, time.Millisecond)
	l.SetPolicy(FsyncAlways)
	f.set(func(f *memFile) { f.failSync = syscall.EIO })
	seq := l.Append(rec("SET", "b", "2"))
	done := make(chan error, 1)
	go func() { done <- l.Sync(seq) }()
	select {
	case err := <-done:
		require.ErrorIs(t, err, ErrLost)
	case <-time.After(5 * time.Second):
		t.Fatal("Sync under always neither returned nor failed")
	}
	require.True(t, l.Lost())
	require.ErrorIs(t, l.Err(), syscall.EIO)
	require.Contains(t, l.Err().Error(), "rewritten")

	f.set(func(f *memFile) { f.failSync = nil })
	_, _, syncs := f.get()
	require.Eventually(t, func() bool { _, _, n := f.get(); return n > syncs }, 5*time.Second, time.Millisecond,
		"the writer retries its fsync")
	require.Error(t, l.Err(), "a good fsync after the failed one does not end the state")
	require.ErrorIs(t, l.Sync(seq), ErrLost)

	l.Rebased(seq)
	require.False(t, l.Lost())
	require.NoError(t, l.Sync(seq), "the new base holds it")
	require.Eventually(t, func() bool { return l.Err() == nil }, 5*time.Second, time.Millisecond,
		"writes are accepted again after the rewrite")
	r3 := rec("SET", "c", "3")
	require.NoError(t, l.Sync(l.Append(r3)))
	_, durable, _ := f.get()
	require.True(t, bytes.HasSuffix(durable, r3))
}

// While an everysec fsync runs, Sync's callers write inline, but only until
// the copy kept for a retry holds maxKept bytes: then records wait in the
// buffer. And the copy of bytes written during a good fsync is kept, so
// that a failed fsync after it still writes them again: nothing
// acknowledged is lost.
func TestSlowFsyncKeepsWhatWasWrittenDuringIt(t *testing.T) {
	f := &gateFile{entered: make(chan struct{}), release: make(chan error)}
	l := openAOF(f, "gate", 0, FsyncEverysec, slog.New(slog.DiscardHandler))
	want := rec("SET", "first", "1")
	require.NoError(t, l.Sync(l.Append(want)))
	select {
	case <-f.entered: // the everysec fsync, held open
	case <-time.After(5 * time.Second):
		t.Fatal("no fsync within 5 s under everysec")
	}
	big := bytes.Repeat([]byte("x"), 1<<20)
	for i := 0; len(want) < maxKept+8<<20; i++ {
		r := rec("SET", fmt.Sprint("k", i), string(big))
		want = append(want, r...)
		require.NoError(t, l.Sync(l.Append(r)))
	}
	written, _, _ := f.get()
	require.LessOrEqual(t, len(written), maxKept+2<<20, "inline writes stop at maxKept during an fsync")
	f.release <- nil         // covers "first" only
	<-f.entered              // the next, early (more than syncEarly waits)
	f.release <- syscall.EIO // the kernel drops the dirty pages
	go func() {              // the retry, a second later, and the final flush's
		for range f.entered {
			f.release <- nil
		}
	}()
	require.NoError(t, l.Close())
	close(f.entered)
	_, durable, _ := f.get()
	require.Equal(t, len(want), len(durable))
	require.True(t, bytes.Equal(want, durable))
}

// A shutdown's Flush while the writer's everysec fsync runs (without wmu)
// waits for that fsync's bookkeeping: run in between, its own fsync would
// set syncedOff past what the writer then sets it back to, and the writer
// would drop the copy of bytes it had not synced, so that a later failed
// fsync would take them for lost.
func TestFlushWaitsForTheWritersFsync(t *testing.T) {
	f := &gateFile{entered: make(chan struct{}), release: make(chan error)}
	l := openAOF(f, "gate", 0, FsyncEverysec, slog.New(slog.DiscardHandler))
	require.NoError(t, l.Sync(l.Append(rec("SET", "a", "1"))))
	select {
	case <-f.entered: // the everysec fsync, held open
	case <-time.After(5 * time.Second):
		t.Fatal("no fsync within 5 s under everysec")
	}
	l.Append(rec("SET", "b", "2"))
	flushed := make(chan error, 1)
	go func() { flushed <- l.Flush() }()
	f.release <- nil // the writer's fsync (receivers are served in order)
	<-f.entered      // Flush's
	f.release <- nil
	require.NoError(t, <-flushed)
	// The next fsync fails: what it covered is written again, not lost.
	require.NoError(t, l.Sync(l.Append(rec("SET", "c", "3"))))
	select {
	case <-f.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("no fsync within 5 s under everysec")
	}
	f.release <- syscall.EIO
	require.Eventually(t, func() bool { return l.Err() != nil }, 2*time.Second, time.Millisecond)
	require.False(t, l.Lost(), "records were taken for lost")
	go func() {
		for range f.entered {
			f.release <- nil
		}
	}()
	require.NoError(t, l.Close())
	close(f.entered)
	_, durable, _ := f.get()
	require.Equal(t, string(rec("SET", "a", "1"))+string(rec("SET", "b", "2"))+string(rec("SET", "c", "3")), string(durable))
}

// A rewrite whose switch failed leaves its rotation pending until the disk
// recovers; a second Rotate meanwhile is refused (it would wait behind the
// first with nobody to tell it), and Close tells a pending one it ended.
func TestRotateRefusedWhileASwitchIsPending(t *testing.T) {
	f := &memFile{failWrite: syscall.EIO}
	l := openAOF(f, "one", 0, FsyncEverysec, slog.New(slog.DiscardHandler))
	l.Append(rec("SET", "a", "1"))
	_, done, err := l.Rotate(&memFile{}, "two", 0, nil)
	require.NoError(t, err)
	require.ErrorIs(t, <-done, syscall.EIO)
	l.Append(rec("SET", "b", "2"))
	_, _, err = l.Rotate(&memFile{}, "three", 0, nil)
	require.ErrorContains(t, err, "still pending")
	closed := make(chan error, 1)
	go func() { closed <- l.Close() }()
	select {
	case err := <-closed:
		require.ErrorIs(t, err, syscall.EIO)
	case <-time.After(5 * time.Second):
		t.Fatal("Close hung")
	}
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatal("the pending rotation was not told the log closed")
	}
}

// TestCloseClosesThePendingRotationsFile: a log closed while its switch
// to a new file waits for the disk (CONFIG SET appendonly no during a
// rewrite on a failing disk) closes that file too; left open, it would
// leak one descriptor per switch.
func TestCloseClosesThePendingRotationsFile(t *testing.T) {
	for i, failing := range []bool{true, false} {
		f := &memFile{failWrite: syscall.EIO}
		next := &memFile{}
		l := openAOF(f, "one", 0, FsyncEverysec, slog.New(slog.DiscardHandler))
		l.Append(rec("SET", "a", "1"))
		_, done, err := l.Rotate(next, "two", 0, nil)
		require.NoError(t, err)
		require.ErrorIs(t, <-done, syscall.EIO)
		if !failing {
			f.set(func(f *memFile) { f.failWrite = nil }) // the final flush switches
		}
		l.Close()
		next.mu.Lock()
		closed := next.closed
		next.mu.Unlock()
		require.True(t, closed, "case %d: the pending rotation's file is closed", i)
	}
}

// TestRetryOnEveryTick: while the disk fails, the writer retries on each
// tick of its once-a-second ticker, also when the tick comes a little less
// than retryEvery after the last attempt (which started late: the ticks
// keep their own pace): skipping them would leave a recovered disk
// unnoticed for up to two seconds. Wake-ups between ticks do not retry.
func TestRetryOnEveryTick(t *testing.T) {
	f := &memFile{failWrite: syscall.ENOSPC}
	l := openAOF(f, "test", 0, FsyncEverysec, slog.New(slog.DiscardHandler))
	defer l.Close()
	l.Sync(l.Append([]byte("*1\r\n$4\r\nPING\r\n")))
	require.Eventually(t, func() bool { return l.Err() != nil }, 5*time.Second, time.Millisecond)
	writes := func() int { f.mu.Lock(); defer f.mu.Unlock(); return f.writes }
	try := func(since time.Duration) bool {
		l.wmu.Lock()
		defer l.wmu.Unlock()
		f.mu.Lock()
		f.failWrite, f.writes = nil, 0
		f.mu.Unlock()
		l.lastTry = time.Now().Add(-since)
		l.cycle(false, true)
		n := writes()
		f.mu.Lock()
		f.failWrite = syscall.ENOSPC // the writer's own retries keep failing
		f.mu.Unlock()
		return n > 0
	}
	require.False(t, try(0), "a wake-up right after an attempt does not retry")
	require.True(t, try(retryEvery*9/10), "a tick a little early retries")
	require.NoError(t, l.Err(), "and the retry succeeded")
	f.mu.Lock()
	f.failWrite = nil
	f.mu.Unlock()
}

// Pending names, under always, the last record appended while it is not
// yet fsynced (a reply that may show it waits for it), and nothing once it
// is, during an outage (reads must go on being answered), or under
// everysec.
func TestAOFPending(t *testing.T) {
	f := &gateFile{entered: make(chan struct{}, 16), release: make(chan error)}
	l := openAOF(f, "mem", 0, FsyncAlways, slog.New(slog.DiscardHandler))
	t.Cleanup(func() { close(f.release); l.Close() })
	require.Zero(t, l.Pending())

	seq := l.Append(rec("SET", "a", "1"))
	require.Equal(t, seq, l.Pending())
	done := make(chan error, 1)
	go func() { done <- l.Sync(seq) }()
	<-f.entered
	require.Equal(t, seq, l.Pending(), "during the fsync")
	f.release <- nil
	require.NoError(t, <-done)
	require.Zero(t, l.Pending())

	seq = l.Append(rec("SET", "b", "2"))
	go func() { done <- l.Sync(seq) }()
	<-f.entered
	f.release <- syscall.EIO
	require.Eventually(t, func() bool { return l.Err() != nil }, 2*time.Second, time.Millisecond)
	require.Zero(t, l.Pending(), "during an outage")
	<-f.entered // the retry
	f.release <- nil
	require.NoError(t, <-done)
	require.NoError(t, l.Err())
	require.Zero(t, l.Pending())

	l.SetPolicy(FsyncEverysec)
	l.Append(rec("SET", "c", "3"))
	require.Zero(t, l.Pending(), "under everysec")
}

// Fsyncs counts the log's fsyncs and the time they took (INFO's and
// /metrics's fsync figures).
func TestAOFFsyncsAreTimed(t *testing.T) {
	f := &memFile{syncDelay: 2 * time.Millisecond}
	l := testAOF(t, f, FsyncAlways)
	for i := range 3 {
		require.NoError(t, l.Sync(l.Append(rec("SET", fmt.Sprint(i), "v"))))
	}
	n, d := l.Fsyncs()
	_, _, syncs := f.get()
	require.Equal(t, int64(syncs), n)
	require.GreaterOrEqual(t, n, int64(3))
	require.GreaterOrEqual(t, d, time.Duration(n)*f.syncDelay)
}

// OnWritten reports a record once the file holds it: written under
// everysec, written and fsynced under always (not while the fsync runs).
func TestAOFOnWrittenAfterTheWrite(t *testing.T) {
	for _, p := range []Policy{FsyncEverysec, FsyncAlways} {
		t.Run(fmt.Sprint(p), func(t *testing.T) {
			f := &gateFile{entered: make(chan struct{}, 1), release: make(chan error, 1)}
			l := openAOF(f, "gate", 0, p, slog.New(slog.DiscardHandler))
			r := rec("SET", "k", "v")
			type report struct {
				seq           uint64
				data, durable int
			}
			reports := make(chan report, 16)
			l.OnWritten(func(seq uint64) {
				data, durable, _ := f.get()
				reports <- report{seq, len(data), len(durable)}
			})
			seq := l.Append(r)
			synced := make(chan error, 1)
			go func() { synced <- l.Sync(seq) }()
			if p == FsyncAlways {
				<-f.entered
				select {
				case got := <-reports:
					t.Fatalf("reported %+v while its fsync runs", got)
				case <-time.After(50 * time.Millisecond):
				}
				f.release <- nil
			}
			got := <-reports
			require.Equal(t, seq, got.seq)
			require.Equal(t, len(r), got.data, "written when reported")
			if p == FsyncAlways {
				require.Equal(t, len(r), got.durable, "fsynced when reported")
			}
			require.NoError(t, <-synced)
			l.OnWritten(nil)
			go func() { // the final flush's fsync
				for range f.entered {
					f.release <- nil
				}
			}()
			require.NoError(t, l.Close())
			close(f.entered)
		})
	}
}
