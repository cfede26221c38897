package server

import (
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// failingJournal cannot make its records durable, as persist.AOF once it
// is closed under always, or after a failed fsync lost records (ErrLost).
type failingJournal struct{ n atomic.Uint64 }

func (j *failingJournal) Append([]byte) uint64 { return j.n.Add(1) }
func (j *failingJournal) Sync(uint64) error    { return errors.New("records lost") }
func (j *failingJournal) Err() error           { return nil }

// A write whose record command.Journal.Sync cannot make durable gets no
// reply: the connection closes instead, in both connection modes. A read
// on another connection is answered.
func TestNoReplyWhenTheJournalCannotSync(t *testing.T) {
	for _, loop := range []string{"yes", "no"} {
		t.Run("event-loop "+loop, func(t *testing.T) {
			ts := newJournaledServer(t, &failingJournal{}, "event-loop", loop)
			nc, err := net.Dial("tcp", ts.addr)
			require.NoError(t, err)
			defer nc.Close()
			nc.SetDeadline(time.Now().Add(5 * time.Second))
			_, err = io.WriteString(nc, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n")
			require.NoError(t, err)
			got, err := io.ReadAll(nc)
			require.NoError(t, err, "the server closes the connection (not a timeout)")
			require.Empty(t, string(got), "no reply to a write that is not durable")
			require.Equal(t, "$1\r\nv\r\n", ts.raw(t).do("GET", "k"), "the write ran; reads are answered")
		})
	}
}

// flakyJournal's Err reports err once set, and sets it after the first
// record when failAfterFirst is set (the writer failing halfway through a
// transaction).
type flakyJournal struct {
	n              atomic.Uint64
	failAfterFirst atomic.Bool
	err            atomic.Pointer[error]
}

func (j *flakyJournal) Append([]byte) uint64 {
	if j.failAfterFirst.Load() {
		err := errors.New("input/output error")
		j.err.Store(&err)
	}
	return j.n.Add(1)
}
func (j *flakyJournal) Sync(uint64) error { return nil }
func (j *flakyJournal) Err() error {
	if p := j.err.Load(); p != nil {
		return *p
	}
	return nil
}

// A transaction runs whole or not at all under a log write error: a write
// is refused when it is queued while the error is there (EXEC then aborts
// for previous errors), EXEC refuses all of it when the error comes up
// after queueing, and runs all of it when the error comes up halfway (not
// the first half alone). Replies as Redis 7.0's (checked against
// redis-server with a failed BGSAVE).
func TestExecUnderALogWriteError(t *testing.T) {
	j := &flakyJournal{}
	ts := newJournaledServer(t, j)
	r := ts.raw(t)
	j.failAfterFirst.Store(true)
	require.Equal(t, "+OK\r\n", r.do("MULTI"))
	require.Equal(t, "+QUEUED\r\n", r.do("SET", "a", "1"))
	require.Equal(t, "+QUEUED\r\n", r.do("SET", "b", "2"))
	require.Equal(t, "*2\r\n+OK\r\n+OK\r\n", r.do("EXEC"))
	require.Equal(t, "$1\r\n2\r\n", r.do("GET", "b"))

	misconf := "-MISCONF Errors writing to the AOF file: input/output error\r\n"
	require.Equal(t, "+OK\r\n", r.do("MULTI"))
	require.Equal(t, misconf, r.do("SET", "c", "3"), "refused when queued")
	require.Equal(t, misconf, r.do("PING"), "refused when queued")
	require.Equal(t, "+QUEUED\r\n", r.do("GET", "a"))
	require.Equal(t, "-EXECABORT Transaction discarded because of previous errors.\r\n", r.do("EXEC"))
	require.Equal(t, "$-1\r\n", r.do("GET", "c"))

	// The disk fails after the transaction was queued.
	j.failAfterFirst.Store(false)
	j.err.Store(nil)
	require.Equal(t, "+OK\r\n", r.do("MULTI"))
	require.Equal(t, "+QUEUED\r\n", r.do("SET", "c", "3"))
	require.Equal(t, "+QUEUED\r\n", r.do("PING"))
	fail := errors.New("input/output error")
	j.err.Store(&fail)
	require.Equal(t, "-EXECABORT Transaction discarded because of: MISCONF Errors writing to the AOF file: input/output error\r\n", r.do("EXEC"))
	require.Equal(t, "$-1\r\n", r.do("GET", "c"))
	j.err.Store(nil)
	require.Equal(t, "+OK\r\n", r.do("MULTI"))
	require.Equal(t, "+QUEUED\r\n", r.do("PING"))
	j.err.Store(&fail)
	require.Equal(t, "*1\r\n+PONG\r\n", r.do("EXEC"), "no write queued: EXEC runs, as Redis's")
	require.Equal(t, "+OK\r\n", r.do("MULTI"))
	require.Equal(t, "+QUEUED\r\n", r.do("GET", "a"))
	require.Equal(t, "*1\r\n$1\r\n1\r\n", r.do("EXEC"), "a read-only transaction runs")
}

// gateJournal is a journal under appendfsync always whose fsyncs all wait
// until open is closed: until then no record is durable.
type gateJournal struct {
	n    atomic.Uint64
	open chan struct{}
}

func (j *gateJournal) Append([]byte) uint64           { return j.n.Add(1) }
func (j *gateJournal) Sync(uint64) error              { <-j.open; return nil }
func (j *gateJournal) SyncOrFailing(seq uint64) error { return j.Sync(seq) }
func (j *gateJournal) Err() error                     { return nil }
func (j *gateJournal) Pending() uint64 {
	select {
	case <-j.open:
		return 0
	default:
		return j.n.Load()
	}
}

// Under appendfsync always no reply shows a write before it is durable, as
// in Redis, whose event loop fsyncs before it writes any reply of the
// turn: a GET on another connection (in the event-loop mode, served by
// another loop) waits for the fsync of the SET it reads, so that no client
// sees (and acts on) a value that a crash then takes back.
func TestNoReplyShowsAWriteBeforeItIsDurable(t *testing.T) {
	for _, loop := range []string{"yes", "no"} {
		t.Run("event-loop "+loop, func(t *testing.T) {
			if loop == "yes" && runtime.GOMAXPROCS(0) < 2 {
				prev := runtime.GOMAXPROCS(2) // one event loop per P: two loops
				t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
			}
			j := &gateJournal{open: make(chan struct{})}
			var release sync.Once
			t.Cleanup(func() { release.Do(func() { close(j.open) }) }) // before the server's shutdown
			ts := newJournaledServer(t, j, "event-loop", loop)
			w, r := ts.raw(t), ts.raw(t)
			// Consecutive client ids are served by different loops.
			idW, idR := w.do("CLIENT", "ID"), r.do("CLIENT", "ID")
			require.Equal(t, fmt.Sprintf(":%d\r\n", parseIntReply(t, idW)+1), idR)

			_, err := io.WriteString(w.nc, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n")
			require.NoError(t, err)
			require.Eventually(t, func() bool { return j.n.Load() == 1 }, 5*time.Second, time.Millisecond)
			_, err = io.WriteString(r.nc, "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n")
			require.NoError(t, err)
			r.nc.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
			b := make([]byte, 64)
			n, err := r.nc.Read(b)
			require.Error(t, err, "GET answered %q before the SET it reads was fsynced", b[:n])
			var ne net.Error
			require.True(t, errors.As(err, &ne) && ne.Timeout(), "%v", err)

			release.Do(func() { close(j.open) })
			r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			w.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			line, err := r.rd.ReadString('\n')
			require.NoError(t, err)
			require.Equal(t, "$1\r\n", line)
			line, err = w.rd.ReadString('\n')
			require.NoError(t, err)
			require.Equal(t, "+OK\r\n", line)
		})
	}
}

// parseIntReply returns the value of a raw integer reply.
func parseIntReply(t *testing.T, reply string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(reply, ":"), "\r\n"), 10, 64)
	require.NoError(t, err, "%q", reply)
	return n
}
