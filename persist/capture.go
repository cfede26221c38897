package persist

// Snapshots without stopping traffic.
//
// A snapshot captures the shards one at a time: lock shard i, encode its
// keys into a buffer, note the AOF's last sequence number cut[i],
// unlock, write the buffer to the file. No shard is locked for longer than
// it takes to encode its own keys, and the file I/O happens outside every
// lock. Each shard is thus captured at its own instant; to make the whole
// snapshot a single instant, the AOF copies every record appended
// while the capture runs (a Capture), and once the last shard is captured
// the snapshot gets those records whose shards were captured before them
// (seq > cut[i] for every shard i the record touches) as a block of log
// records, replayed after the keys when the snapshot is loaded. A record's
// effects on one shard are either in that shard's capture or after it,
// because records are appended while the writing command holds its shard
// locks. (A multi-key command's or a transaction's records are judged one
// by one.) A FLUSHALL that ran in the middle of the capture touches shards
// captured on both sides of it: it goes to the block with every record
// after it, whatever their shards, so that replayed after the keys it
// empties the shards captured before it, as it did, and those captured
// after it, which the records after it then fill again (Options.Resets).
// That holds only if every write before the last shard's capture was
// journaled: once appendonly is switched off during the capture, such a
// FLUSHALL is a mixed record like any other (Manager.journaling).
// Any other record that touches shards captured on both sides of it
// cannot be split, so the snapshot is retried.
// Without an AOF (appendonly no) each shard is consistent in itself but
// shards are captured at instants up to the length of the pass apart.

import (
	"context"
	"errors"
	"fmt"
	"runtime"

	"github.com/ratekv/ratekv/journal"
	"github.com/ratekv/ratekv/shards"
)

const (
	captureLimit = 512 << 20 // bytes of records a snapshot may capture
	attempts     = 3         // captures tried before giving up on errMixed
)

// errMixed: a captured record touched shards captured on both sides of
// it, so the capture cannot place it and is tried again (attempts).
var errMixed = errors.New("persist: a multi-shard write ran in the middle of the capture")

// writeSnapshot writes a snapshot of the store to path.
func (m *Manager) writeSnapshot(ctx context.Context, path string, background bool) (int64, error) {
	w, err := createSnapshot(path)
	if err != nil {
		return 0, err
	}
	// The log as the save starts: appendonly may be switched meanwhile
	// (a log switched off ends the capture's records there, and the
	// shards captured later are each consistent in themselves).
	m.mu.Lock()
	aof := m.aof
	m.mu.Unlock()
	var c *Capture
	if aof != nil {
		c = aof.BeginCapture(captureLimit)
	}
	cuts, err := m.capture(ctx, w, background, aof)
	if c != nil {
		whole := m.journaling(aof)
		if _, cerr := aof.EndCapture(c); err == nil {
			err = cerr
		}
		if err == nil {
			err = m.writeTail(w, c, cuts, whole)
		}
	}
	if err != nil {
		w.abort()
		return 0, err
	}
	return w.commit()
}

// capture writes the keys of every shard to w, one shard at a time under
// its lock, and returns the last sequence number of aof (nil: none) at the
// capture of each shard. background says it runs beside the connections
// (not SAVE's, on a connection's own goroutine or event loop).
//
// Keys whose deadline has passed are written too, as Redis writes them to
// an RDB file; loading deletes them (purgeExpired). Left out by the
// capture's own reading of the clock, a key a later write still found live
// would be missing under that write's record in the log: a command reads
// the clock before it locks its shard, and the wall clock's recalibration
// can move it back, so its reading may be older than the capture's.
// Replayed without the key, a ZADD would recreate it without its deadline
// and an EXPIRE would find nothing, and the key would be lost.
func (m *Manager) capture(ctx context.Context, w *snapshotWriter, background bool, aof *AOF) ([]uint64, error) {
	var lastSeq func() uint64
	if aof != nil {
		lastSeq = aof.LastSeq
	}
	return captureShards(ctx, m.store, w, background, lastSeq)
}

// captureShards is capture on st, reading the log's last sequence number
// with lastSeq (nil: no log).
func captureShards(ctx context.Context, st *shards.Store, w *snapshotWriter, background bool, lastSeq func() uint64) ([]uint64, error) {
	cuts := make([]uint64, st.NumShards())
	var buf []byte
	for i := range cuts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var n int
		st.Lock(i)
		buf, n = st.AppendShard(buf[:0], i, 0) // live at 0: every key
		if lastSeq != nil {
			cuts[i] = lastSeq()
		}
		st.Unlock(i)
		if n > 0 {
			if err := w.block(blockKeys, buf, n); err != nil {
				return nil, err
			}
		}
		if cap(buf) > 16<<20 {
			buf = nil
		}
		// Let the connections run between shards: with one core
		// (GOMAXPROCS=1) the pass otherwise runs until the scheduler
		// preempts it, 10 ms at a time, and every request waits. Only
		// in the background: SAVE runs on an event loop, which
		// Store.Yield would wait for.
		if background {
			st.Yield()
		} else {
			runtime.Gosched()
		}
	}
	return cuts, nil
}

// journaling reports whether aof is still the log that every write is
// journaled to, once a capture on it has taken its last shard. stopAOF
// clears m.aof before it detaches the log from the command layer, so true
// means that every write to a shard before that shard's capture is in aof.
func (m *Manager) journaling(aof *AOF) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.aof == aof
}

// writeTail writes the captured records that came after the capture of
// every shard they touch, as a log-record block; see the file comment.
// whole says every write before the capture of the last shard is in c
// (the log was not switched off meanwhile, see journaling): only then may
// a reset that ran in the middle of the capture go to the tail with every
// record after it, since the records after it must rebuild every shard
// captured after it. Otherwise it is a mixed record like any other.
func (m *Manager) writeTail(w *snapshotWriter, c *Capture, cuts []uint64, whole bool) error {
	return writeTail(w, m.store, c, cuts, whole, m.opts.Keys, m.opts.Resets)
}

// writeTail is Manager.writeTail for st, with the record functions of
// Options.
func writeTail(w *snapshotWriter, st *shards.Store, c *Capture, cuts []uint64, whole bool,
	keys func(args [][]byte, dst []int) ([]int, bool), resets func(args [][]byte) bool) error {
	var keep []byte
	n := 0
	var args [][]byte
	var idx []int
	// A reset (FLUSHALL) between the captures of two shards: from it on,
	// every record goes to the tail (see the file comment).
	reset := false
	err := c.each(func(seq uint64, rec []byte) error {
		// One append may hold several records (a transaction's, between
		// MULTI and EXEC), each judged on its own: a record of a shard
		// captured after it goes to the tail, one captured before is in
		// the base already.
		for rest := rec; len(rest) > 0; {
			var err error
			var size int
			args, size, err = journal.ParseRecord(rest, args)
			if err == nil && size == 0 {
				err = errors.New("incomplete record")
			}
			if err != nil {
				return fmt.Errorf("persist: captured record %d: %w", seq, err)
			}
			one := rest[:size]
			rest = rest[size:]
			if journal.IsMarker(args, "MULTI") || journal.IsMarker(args, "EXEC") {
				continue // the snapshot is written whole: no torn tail to guard against
			}
			if reset {
				keep = append(keep, one...)
				n++
				continue
			}
			all := true
			if keys != nil {
				idx, all = keys(args, idx[:0])
				if !all && len(idx) == 0 {
					continue // touches no key (a replica's REPLSTATE): nothing to restore
				}
				all = all || len(idx) == 0
			}
			before, after := false, false
			if all {
				for _, cut := range cuts {
					before, after = before || seq <= cut, after || seq > cut
				}
			} else {
				for _, k := range idx {
					cut := cuts[st.ShardIndex(args[k])]
					before, after = before || seq <= cut, after || seq > cut
				}
			}
			switch {
			case before && after && whole && resets != nil && resets(args):
				reset = true
				keep = append(keep, one...)
				n++
			case before && after:
				return errMixed
			case after:
				keep = append(keep, one...)
				n++
			}
		}
		return nil
	})
	if err != nil || n == 0 {
		return err
	}
	return w.block(blockRecords, keep, n)
}
