// Package command is ratekv's command layer: the command table, the
// dispatcher, and one file per command family (conn.go, keys.go,
// string.go, zset.go, throttle.go, window.go, tx.go, server.go,
// persist.go, script.go). It knows nothing of sockets: a network runtime (package
// server) owns the connections and feeds each one's requests to its Client.
//
// # Dispatch
//
// Client.Run looks a request up in the table (table.go), checks its arity
// centrally, refuses it before AUTH or when the client's ACL user may not
// run it (acl.go, acl_cmd.go: one flag test for a user allowed
// everything; EXEC and redis.call check again), queues it inside MULTI, locks the
// shards of its keys in ascending order, runs the handler, and journals
// what it changed. Handlers validate and parse every argument before they
// touch the keyspace, so bad input never leaves partial state; their doc
// comment is the usage line. Exact Redis error strings live in errors.go.
//
// # Effects, not commands
//
// Write commands reach the append-only log as effect records (package
// journal; journal.go here says which record each command leaves), and
// the log replays through the same table (replay.go). Time is read once per
// command from the store's clock, which tests set.
//
// # Scripts
//
// EVAL and friends (script.go) run Lua in gopher-lua with Redis's
// libraries and sandbox (lua.go); the commands a script calls go through
// the same dispatcher path as EXEC's queued commands, and their effects
// are journaled as one transaction. Scripts lock the shards of their
// declared keys and take others as they go (script_locks.go); some
// well-known scripts run natively (script_native.go).
//
// # The runtime's side
//
// Engine is the state the clients share (store, config, journal,
// statistics); Host is what the engine needs of the runtime (its clients,
// its counters, SHUTDOWN) and Peer what a Client needs of its connection.
// The runtime settles a batch's journal records (Client.SyncJournal,
// Client.Journaled) before its replies leave.
package command
