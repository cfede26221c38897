// Package shards is ratekv's in-process keyspace: a fixed number of shards,
// each guarded by its own mutex, holding typed values with millisecond expiry.
//
// # Routing
//
// A key is routed by its Redis Cluster hash slot (CRC16-XMODEM of the key, or
// of its {hash tag}, mod 16384); the shard is slot mod N, with N a power of
// two. Keys that share a hash tag therefore share a shard, which makes
// multi-key atomicity cheap, and a later cluster mode can move whole slots
// between nodes without changing the store.
//
// # Storage
//
// Inside a shard, keys live in a pointer-free table (table.go): 32-byte
// entries in chunks the garbage collector never scans, with short keys and
// small values inline, and an open-addressed index of hash bits and entry
// ids. A CL.THROTTLE key costs about 46 bytes. SCAN cursors name a shard and
// a range of hashes, so a full scan returns every key present throughout
// exactly once even when indexes grow between calls.
//
// # Locking
//
// The store never locks on its own behalf during a command: the caller (the
// command dispatcher in package command) locks every shard a command
// touches, in ascending shard order, before running it, and unlocks
// afterwards. Methods
// whose names do not end in "Locked" but that take a key still require the
// key's shard to be held; this is stated on each of them. The background
// expiry cycle takes each shard's lock for a bounded time per tick.
//
// # Expiry
//
// Deadlines are absolute Unix milliseconds. A key is expired from its
// deadline's millisecond on (now >= deadline; Redis waits one millisecond
// more, now > deadline). A key past its deadline is deleted lazily when it
// is next looked up, and actively by a background cycle modelled on
// Redis's: every tick it checks a batch of each shard's
// keys that carry a deadline (continuing where the last tick stopped),
// deletes the expired ones, and repeats while more than a quarter of a
// batch had expired and the time budget is not spent.
//
// # Time
//
// Every Store has its own clock (Options.Now), so tests drive expiry with a
// fake clock instead of sleeping.
package shards
