package resp

import (
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// failingJournal cannot make its records durable, as persist.Log once it
// is closed under always, or after a failed fsync lost records (ErrLost).
type failingJournal struct{ n atomic.Uint64 }

func (j *failingJournal) Append([]byte) uint64 { return j.n.Add(1) }
func (j *failingJournal) Sync(uint64) error    { return errors.New("records lost") }
func (j *failingJournal) Err() error           { return nil }

// A write whose record Journal.Sync cannot make durable gets no reply: the
// connection closes instead, in both connection modes. A read on another
// connection is answered.
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
// after queueing, and runs all of it when the error comes up halfway (it
// ran the first half and refused the rest before). Replies as Redis 7.0's
// (checked against redis-server with a failed BGSAVE).
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
