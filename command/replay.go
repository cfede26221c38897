package command

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// Replaying the append-only log at start-up. Records are effects written
// by journalEffects (SETINT, SET … PXAT, DEL, PEXPIREAT, RESTORE … ABSTTL,
// verbatim deterministic commands); they run through the same command
// table and dispatcher path (locking, handlers) as live traffic, on an
// internal connection that has no socket, is authenticated, speaks RESP2
// and journals nothing. Every record must succeed: an error reply means
// the log and the command table disagree, and loading stops.
//
// Its clock stands at zero, before every deadline: no key counts as
// expired while the log replays, as Redis expires nothing while it loads.
// A deadline that passed while the server was down may have been extended
// or removed by a later record (SET k v PX 1000, then EXPIRE k 3600, or
// PERSIST k): replayed on the real clock, the first record would leave
// the key expired, the second would find no key, and the key would be
// lost. Records carry
// absolute times (PXAT, PEXPIREAT, ABSTTL), so nothing else reads the
// clock. The loader deletes the keys whose deadline has passed once the
// whole log is replayed (shards.Store.PurgeExpired), before any client
// connects: they are not resurrected.

// Replay runs the records next returns, in order, until next returns
// io.EOF, and returns how many ran. An error from next is returned as is;
// a record that is not a known write command or that replies with an error
// stops the replay with an error naming it. Call it before Serve, with no
// journal attached.
func (s *Engine) Replay(next func() ([][]byte, error)) (n int, err error) {
	c := &Client{eng: s, proto: 2, Authed: true, replaying: true, Addr: "replay", LocalAddr: "replay"}
	for {
		args, err := next()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if len(args) == 0 {
			continue
		}
		cmd := lookupRecord(args[0])
		switch {
		case cmd == nil:
			return n, fmt.Errorf("record %d: unknown command %q", n+1, clip(args[0]))
		case !cmd.arityOK(len(args)):
			return n, fmt.Errorf("record %d: wrong number of arguments (%d) for %s", n+1, len(args), cmd.Name)
		case cmd.Flags&FlagWrite == 0:
			return n, fmt.Errorf("record %d: %s is not a write command", n+1, cmd.Name)
		}
		c.Out = c.Out[:0]
		c.call(cmd, args)
		if c.CloseAfter {
			return n, fmt.Errorf("record %d: %s panicked (see the log)", n+1, cmd.Name)
		}
		if len(c.Out) > 0 && c.Out[0] == '-' {
			line, _, _ := bytes.Cut(c.Out[1:], []byte("\r\n"))
			return n, fmt.Errorf("record %d: %s replied with an error: %s", n+1, cmd.Name, clip(line))
		}
		n++
		if cmd.Name != "replstate" && s.repl.logged.Load() != nil {
			s.repl.logged.Store(nil) // the data moved past the offset it named
		}
		if cap(c.Out) > shrinkAt {
			c.Out = nil
		}
	}
}

// clip shortens b for an error message.
func clip(b []byte) string {
	if len(b) > 64 {
		return string(b[:64]) + "…"
	}
	return string(b)
}

// RecordResets reports whether a log record empties the whole keyspace
// (FLUSHALL, FLUSHDB), so that what follows it does not depend on what
// came before it. Package persist uses it to place such a record that ran
// in the middle of a snapshot's capture, rather than failing the snapshot
// (under a steady stream of them every retry could fail too).
func RecordResets(args [][]byte) bool {
	if len(args) == 0 {
		return false
	}
	cmd := lookupRecord(args[0])
	return cmd != nil && (cmd.Name == "flushall" || cmd.Name == "flushdb")
}

// RecordKeys returns the indexes of the key arguments of a log record
// (appended to dst), and all=true when the record touches the whole
// keyspace: a FlagAllShards command (FLUSHALL), or a record it cannot
// place. No index and all=false: a record that touches no key
// (REPLSTATE). Package persist uses it to tell which shards a record touches.
func RecordKeys(args [][]byte, dst []int) (idx []int, all bool) {
	if len(args) == 0 {
		return dst, true
	}
	cmd := lookupRecord(args[0])
	if cmd == nil || cmd.Flags&FlagAllShards != 0 || !cmd.arityOK(len(args)) {
		return dst, true
	}
	if cmd.Name == "replstate" {
		return dst, false // touches no key: snapshots leave it out
	}
	idx = cmd.keyIndexes(args, dst)
	return idx, len(idx) == 0
}
