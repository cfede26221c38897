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
