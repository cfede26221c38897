// Package persist makes ratekv's keyspace survive restarts and crashes: an
// append-only file of effects (the AOF, which the command layer writes to
// as its command.Journal), snapshots, and loading both at start-up. It
// knows the keyspace (package shards) and the configuration, not the
// protocol: log records are replayed through a function the command layer
// supplies (command.Engine.Replay), so they run through the same command
// table as live traffic.
//
// # Files
//
// Everything lives in the dir parameter:
//
//	dump.rkv                              snapshot: SAVE, BGSAVE, save rules
//	appendonlydir/appendonly.aof.manifest names the log's files, in order
//	appendonlydir/appendonly.aof.N.base.rkv  snapshot the log starts from
//	appendonlydir/appendonly.aof.N.incr.aof  records after it (RESP)
//
// (dbfilename, appenddirname and appendfilename rename them.) With
// appendonly yes the manifest's chain is loaded and the dump file is not;
// with appendonly no only the dump file is. A file named *.tmp is one being
// written; a *.corrupt-* file holds what aof-load-corrupt truncate cut off;
// appendonlydir/temp-appendonly.aof.incr holds the records logged after
// CONFIG SET appendonly yes until the first rewrite names a new base and
// incremental file (no manifest names it; see aof_switch.go, which also
// says how appendonly no closes the log).
//
// # Formats
//
// Log records are RESP arrays of bulk strings, as a client sends them:
// effects, not time-dependent commands (SETINT key <value and deadline in
// binary> for integers, SET key value PXAT ms, DEL, PEXPIREAT, PERSIST,
// RESTORE key ms payload REPLACE ABSTTL, and verbatim commands whose
// result depends only on their arguments and the prior state, such as
// ZADD, FLUSHALL or a SET without options); see command/journal.go.
// Replaying them at any later time gives the same state: nothing expires
// while they replay (a later record may extend or remove a deadline; see
// command.Engine.Replay), and the keys whose deadline passed while the
// server was down are deleted once everything is loaded, so they stay
// gone. A transaction's records (and those of a command that writes
// several keys, such as RENAME) are appended in one piece between a MULTI
// and an EXEC record, as in Redis's AOF; the loader replays them once it
// has read the EXEC (journal.TxReader), so a file torn inside a
// transaction is truncated at its MULTI and loses the whole of it.
//
// Snapshot files (snapshot.go) are a header ("RATEKV", format version),
// checksummed blocks of key records and of log records, and an end block
// with counts and a whole-file CRC-32C. A key record is the key, its
// absolute deadline in Unix ms and its value in the codec of
// shards/codec.go, which DUMP and RESTORE payloads also use. None of this
// is Redis's RDB format.
//
// # Durability
//
// appendfsync always: no reply leaves before its record is fsynced (one
// fsync serves every batch waiting for it). everysec: records are written
// within about a millisecond and fsynced every second. no: written, never
// fsynced by ratekv. A failed write or fsync stops writes (MISCONF) until a
// retry succeeds, or, when a failed fsync may have lost bytes the log has
// no copy of, until a rewrite has replaced the file; see aof.go. A write
// whose record cannot be made durable gets no reply (its connection
// closes). Snapshots are written to a temporary file, fsynced, renamed and
// the directory fsynced (a replica's full resynchronization takes and
// loads one too: transfer.go); see capture.go for how they are taken without
// stopping traffic and rewrite.go for how the log is rewritten.
package persist
