package persist

// Snapshots for replication: a primary writes one to a temporary file to
// send it to a replica (a full resynchronization), capturing the writes
// made meanwhile from replication's own log of effects rather than from
// the append-only file, and the replica loads the file it received. The
// format and the capture are those of every other snapshot (snapshot.go,
// capture.go).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/shards"
)

// CaptureLog is a log of effect records whose appends a snapshot can
// capture: *AOF, or replication's backlog. Sequence numbers count records.
type CaptureLog interface {
	// LastSeq returns the sequence number of the last record appended.
	LastSeq() uint64
	// BeginCapture starts copying the records appended from now on.
	BeginCapture(limit int) *Capture
	// EndCapture stops c and returns the sequence number of its last
	// record; an error when c overflowed its limit.
	EndCapture(c *Capture) (uint64, error)
}

// NewCapture returns a capture whose first record will have sequence
// number first, holding at most limit bytes (for a CaptureLog other than
// *AOF).
func NewCapture(first uint64, limit int) *Capture { return &Capture{first: first, limit: limit} }

// Add copies rec, the capture's next record, unless the limit is exceeded.
func (c *Capture) Add(rec []byte) { c.add(rec) }

// CaptureErr is what a CaptureLog's EndCapture returns for c: an error
// when more records arrived than c may hold.
func CaptureErr(c *Capture) error {
	if c.over {
		return errCaptureOverflow
	}
	return nil
}

// TransferOptions are what WriteTransfer needs to place the records it
// captures (as Options.Keys and Options.Resets).
type TransferOptions struct {
	Keys   func(args [][]byte, dst []int) ([]int, bool)
	Resets func(args [][]byte) bool
}

// WriteTransfer writes a snapshot of store to path (through path.tmp),
// capturing log's appends while it runs so that the file is the keyspace
// at one instant: after the record whose sequence number it returns. It
// retries a capture that met a multi-shard write it cannot place.
func WriteTransfer(ctx context.Context, path string, store *shards.Store, log CaptureLog, opts TransferOptions) (size int64, last uint64, err error) {
	for try := 0; try < attempts; try++ {
		size, last, err = writeTransfer(ctx, path, store, log, opts)
		if !errors.Is(err, errMixed) {
			break
		}
	}
	return size, last, err
}

func writeTransfer(ctx context.Context, path string, store *shards.Store, log CaptureLog, opts TransferOptions) (int64, uint64, error) {
	w, err := createSnapshot(path)
	if err != nil {
		return 0, 0, err
	}
	c := log.BeginCapture(captureLimit)
	cuts, err := captureShards(ctx, store, w, true, log.LastSeq)
	last, cerr := log.EndCapture(c)
	if err == nil {
		err = cerr
	}
	if err == nil {
		err = writeTail(w, store, c, cuts, true, opts.Keys, opts.Resets)
	}
	if err != nil {
		w.abort()
		return 0, 0, err
	}
	size, err := w.commit()
	return size, last, err
}

// LoadTransfer loads the snapshot at path into store, which the caller
// has emptied, replaying its log records with replay (as Options.Replay).
// Keys whose deadline has passed are loaded too: a replica deletes a key
// when its primary says so. It returns how many keys it loaded.
func LoadTransfer(path string, store *shards.Store, replay func(next func() ([][]byte, error)) (int, error)) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	var keys int64
	h := snapshotHandler{
		key: func(key []byte, exp int64, v *shards.Value) error {
			restoreKey(store, key, exp, v)
			keys++
			return nil
		},
		records: func(data []byte, n int) error {
			if _, err := replay(recordsOf(data)); err != nil {
				return fmt.Errorf("replaying the snapshot's log records: %w", err)
			}
			return nil
		},
	}
	_, err = loadSnapshot(f, path, st.Size(), h)
	return keys, err
}

// replStateName is the file holding the replication id and offset of the
// data persisted at a clean shutdown (SaveReplState).
const replStateName = "replication-state"

// SaveReplState records, after a successful PrepareShutdown that
// persisted the whole keyspace (a final snapshot or the append-only
// file), the replication id and offset that data is at, so that the next
// start can resume replication with a partial resynchronization. It does
// nothing when the keyspace was not persisted.
func (m *Manager) SaveReplState(id string, off int64) error {
	m.mu.Lock()
	whole := m.aof != nil || m.savedAtShutdown
	m.mu.Unlock()
	if !whole {
		return nil
	}
	path := filepath.Join(m.cfg.String(config.Dir), replStateName)
	_, err := replaceFile(path, fmt.Appendf(nil, "%s %d\n", id, off), syncDir)
	return err
}

// TakeReplState returns what SaveReplState recorded before the data was
// loaded, and removes it: once the server runs, the data moves on.
func (m *Manager) TakeReplState() (id string, off int64, ok bool) {
	path := filepath.Join(m.cfg.String(config.Dir), replStateName)
	data, err := os.ReadFile(path)
	if err != nil {
		return "", 0, false
	}
	removeFile(path)
	f := strings.Fields(string(data))
	if len(f) != 2 || len(f[0]) != 40 {
		return "", 0, false
	}
	off, err = strconv.ParseInt(f[1], 10, 64)
	if err != nil || off < 0 {
		return "", 0, false
	}
	return f[0], off, true
}
