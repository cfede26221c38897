// Package journal is the effect record: what a write leaves in the
// append-only log, and what replication ships. The command layer
// encodes records (AppendCommand, AppendSet, AppendSetInt, the Multi and
// Exec framing of a transaction), package persist stores them and reads
// them back (Reader, TxReader), telling a clean end, a torn tail and
// corruption apart.
//
// A record is a RESP array of bulk strings, exactly what a client sends,
// holding effects rather than time-dependent commands: absolute deadlines
// (PXAT, PEXPIREAT, RESTORE ... ABSTTL), images of keys (SET, the
// log-only SETINT, RESTORE), and commands whose effect depends only on
// their arguments and the prior state (ZADD, DEL, FLUSHALL). Replaying the
// records at any later time rebuilds the same state.
//
// Which keys a record touches is the command table's knowledge; the
// command layer hands it to persist as a function.
package journal
