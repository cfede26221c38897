package command

// Transactions: MULTI queues commands (after the same unknown-command, arity
// and auth checks as live ones; a failure there makes EXEC abort with
// EXECABORT), EXEC locks every shard any queued command or WATCHed key
// touches, in ascending order, checks the watched keys, runs the queue with
// one clock reading, and unlocks. No other client can observe a partial
// transaction, because every command locks its shards before it reads.

import "github.com/ratekv/ratekv/shards"

func init() {
	register(
		&Command{Name: "multi", Arity: 1, Flags: FlagTxControl | FlagFast | FlagLoading | FlagStale | FlagNoScript | FlagAllowBusy, Handler: cmdMulti,
			Summary: "Starts a transaction.", Group: "transactions"},
		&Command{Name: "exec", Arity: 1, Flags: FlagTxControl | FlagLoading | FlagStale | FlagNoScript, Handler: cmdExec,
			Summary: "Executes all commands in a transaction.", Group: "transactions"},
		&Command{Name: "discard", Arity: 1, Flags: FlagTxControl | FlagFast | FlagLoading | FlagStale | FlagNoScript | FlagAllowBusy, Handler: cmdDiscard,
			Summary: "Discards a transaction.", Group: "transactions"},
		&Command{Name: "watch", Arity: -2, Flags: FlagTxControl | FlagFast | FlagLoading | FlagStale | FlagNoScript | FlagAllowBusy, FirstKey: 1, LastKey: -1, Step: 1, Handler: cmdWatch,
			Summary: "Monitors changes to keys to determine the execution of a transaction.", Group: "transactions"},
		&Command{Name: "unwatch", Arity: 1, Flags: FlagFast | FlagLoading | FlagStale | FlagNoScript | FlagAllowBusy, Handler: cmdUnwatch,
			Summary: "Forgets about watched keys of a transaction.", Group: "transactions"},
	)
}

// txState is a connection's open MULTI. Queued arguments are copied into
// one byte buffer and recorded as offsets, and the buffers are reused by
// the connection's next transaction, so queuing costs no allocation once
// a connection has warmed up.
type txState struct {
	active bool
	failed bool // a queued command was rejected: EXEC aborts
	cmds   []*Command
	nargs  []int    // number of arguments of each queued command
	ends   []int    // end offset in buf of every queued argument
	buf    []byte   // the queued arguments, back to back
	recs   []byte   // MULTI and the journal records of the commands EXEC ran, for one Append
	nrecs  int      // records in recs after MULTI
	args   [][]byte // EXEC's view of the arguments (reused)
	held   []int    // shards EXEC locks (reused)
}

// writes reports whether a queued command writes. Only those make EXEC
// check the disk, as in Redis (processCommand: EXEC is a write when its
// queue holds one): a PING queued while the disk was well runs.
func (tx *txState) writes() bool {
	for _, cmd := range tx.cmds {
		if cmd.Flags&FlagWrite != 0 {
			return true
		}
	}
	return false
}

// denyOOM reports whether a queued command may use more memory (denyoom):
// EXEC is then refused while over maxmemory with nothing to evict, as in
// Redis (processCommand).
func (tx *txState) denyOOM() bool {
	for _, cmd := range tx.cmds {
		if cmd.Flags&FlagDenyOOM != 0 {
			return true
		}
	}
	return false
}

// sliceArgs slices the queued arguments out of the buffer into args.
func (tx *txState) sliceArgs() {
	tx.args = tx.args[:0]
	start := 0
	for _, end := range tx.ends {
		tx.args = append(tx.args, tx.buf[start:end:end])
		start = end
	}
}

// reset empties the queue, keeping its buffers.
func (tx *txState) reset() {
	tx.active, tx.failed = false, false
	tx.cmds, tx.nargs, tx.ends, tx.buf = tx.cmds[:0], tx.nargs[:0], tx.ends[:0], tx.buf[:0]
	if cap(tx.buf) > shrinkAt { // don't keep a huge transaction's memory
		tx.buf, tx.ends, tx.args = nil, nil, nil
	}
	if cap(tx.recs) > shrinkAt {
		tx.recs = nil
	}
}

// watchedKey is one WATCH registration.
type watchedKey struct {
	key     []byte
	version uint64
	existed bool
}

// flagTx marks an open transaction as failed (EXECABORT at EXEC).
func (c *Client) flagTx() {
	if c.tx.active {
		c.tx.failed = true
	}
}

// queueArgCost is what a queued argument costs besides its bytes: its end
// offset, and its slice header in EXEC's view of the arguments.
const queueArgCost = 32

// queue stores a copy of the request for EXEC and replies QUEUED.
//
// The queue counts against client-query-buffer-limit: what it holds is
// the client's input, parsed but not run. Past the limit the client gets
// an error and is closed, as when its query buffer passes the limit.
// Without it a client that opened MULTI and never sent EXEC would grow
// the server without end. (Redis counts a transaction's memory only for client
// eviction, which is off unless maxmemory-clients is set.)
func (c *Client) queue(cmd *Command, args [][]byte) {
	tx := &c.tx
	if tx.failed {
		// EXEC will abort: nothing more is kept, as Redis's
		// queueMultiCommand (so its CROSSSLOT check of EXEC sees only
		// what came before).
		c.WriteSimple("QUEUED")
		return
	}
	size := int64(len(tx.buf) + queueArgCost*(len(tx.ends)+len(args)))
	for _, a := range args {
		size += int64(len(a))
	}
	if limit := c.eng.queryLimit.Load(); size > limit {
		c.eng.log.Warn("client MULTI queue over client-query-buffer-limit, closing",
			"id", c.ID, "addr", c.Addr, "commands", len(tx.cmds), "bytes", size, "limit", limit)
		cmd.rejected.Add(1)
		c.WriteError(sprintf(errMultiQueueLimit, limit))
		tx.reset()
		tx.buf, tx.ends, tx.cmds, tx.nargs = nil, nil, nil, nil // the memory goes now
		c.CloseAfter = true
		return
	}
	for _, a := range args {
		tx.buf = append(tx.buf, a...)
		tx.ends = append(tx.ends, len(tx.buf))
	}
	tx.cmds = append(tx.cmds, cmd)
	tx.nargs = append(tx.nargs, len(args))
	c.WriteSimple("QUEUED")
}

// MULTI
func cmdMulti(c *Client, args [][]byte) {
	if c.tx.active {
		c.WriteError(errNestedMulti)
		return
	}
	c.tx.reset()
	c.tx.active = true
	c.WriteOK()
}

// DISCARD
func cmdDiscard(c *Client, args [][]byte) {
	if !c.tx.active {
		c.WriteError(errDiscardNoMulti)
		return
	}
	c.tx.reset()
	c.unwatchAll()
	c.WriteOK()
}

// EXEC
func cmdExec(c *Client, args [][]byte) {
	tx := &c.tx
	if !tx.active {
		c.WriteError(errExecNoMulti)
		return
	}
	waits := false // behind a MIGRATE's fence: EXEC runs again later
	defer func() {
		if !waits {
			tx.reset()
		}
	}()
	tx.active = false
	if tx.failed {
		c.unwatchAll()
		c.WriteError(errExecAbort)
		return
	}
	// A transaction runs whole or not at all: the disk's errors (a failed
	// background save's, the log's) are checked once, here, not before
	// each queued write (an error that came up halfway would run the
	// first half), and refuse the whole of it, as Redis does.
	if tx.writes() {
		if msg := c.diskError(); msg != "" {
			c.unwatchAll()
			c.WriteError(errExecAbortBecause + msg)
			return
		}
	}
	tx.sliceArgs()
	st := c.eng.store
	// Lock the union of every shard the transaction touches.
	all := false
	held := tx.held[:0]
	first := 0
	for i, cmd := range tx.cmds {
		cargs := tx.args[first : first+tx.nargs[i]]
		first += tx.nargs[i]
		if cmd.Flags&(FlagAllShards|FlagScript) != 0 {
			all = true
			break
		}
		held = c.addKeyShards(held, cmd, cargs)
	}
	for _, w := range c.watching {
		held = shards.AddLockOrder(held, st.ShardIndex(w.key))
	}
	tx.held = held
	lockShards(st, all, held)
	if c.eng.rt.fence.Load() != nil && !c.replaying && !c.internal {
		if j := c.txFencedJob(); j != nil {
			c.unlockExec(all, held)
			tx.active, waits = true, true
			c.waitBehind(j, c.eng.execCmd(), args)
			return
		}
	}
	now := st.Now()
	nowMs := now / 1e6
	for _, w := range c.watching {
		if st.WatchVersion(w.key) != w.version || (w.existed && st.Peek(w.key, nowMs) == nil) {
			c.unlockExec(all, held)
			c.unwatchAll()
			c.WriteNullArray()
			return
		}
	}
	mark := len(c.Out)
	c.WriteArray(len(tx.cmds))
	c.inExec = true
	c.now, c.nowMs = now, nowMs
	saved := c.held
	c.held, c.heldAll = held, all // for the journal's change counting
	defer func() {
		c.inExec = false
		c.endTxRecords()
		c.held, c.heldAll = saved[:0], false
		c.unlockExec(all, held)
		c.unwatchAll()
	}()
	// Past maxReplyBytes the replies are dropped, each as it comes, but
	// every command still runs: a transaction runs whole.
	over := false
	first = 0
	for i, cmd := range tx.cmds {
		cargs := tx.args[first : first+tx.nargs[i]]
		first += tx.nargs[i]
		if !c.execACLRefused(cmd, cargs) {
			c.call(cmd, cargs)
		}
		if c.CloseAfter { // a handler panicked; stop here
			return
		}
		if over || len(c.Out)-mark > maxReplyBytes {
			over = true
			c.Out = c.Out[:mark]
		}
	}
	if over {
		c.WriteError(sprintf(errExecTooBig, maxReplyBytes>>20))
	}
}

// addKeyShards adds the shards of cmd's keys in args to held, in lock
// order.
func (c *Client) addKeyShards(held []int, cmd *Command, args [][]byte) []int {
	st := c.eng.store
	c.keyBuf = cmd.keyIndexes(args, c.keyBuf[:0])
	for _, k := range c.keyBuf {
		held = shards.AddLockOrder(held, st.ShardIndex(args[k]))
	}
	return held
}

// lockShards locks every shard (all), or those of held.
func lockShards(st *shards.Store, all bool, held []int) {
	if all {
		st.LockAll()
		return
	}
	for _, s := range held {
		st.Lock(s)
	}
}

// unlockExec releases the shards EXEC locked.
func (c *Client) unlockExec(all bool, held []int) {
	st := c.eng.store
	if all {
		st.UnlockAll()
		return
	}
	for i := len(held) - 1; i >= 0; i-- {
		st.Unlock(held[i])
	}
}

// WATCH key [key ...]
func cmdWatch(c *Client, args [][]byte) {
	if c.tx.active {
		c.WriteError(errWatchInMulti)
		return
	}
	st := c.eng.store
	for _, k := range args[1:] {
		if c.isWatching(k) {
			continue
		}
		key := append([]byte(nil), k...)
		// A key whose deadline has passed is gone for WATCH, as in Redis:
		// reclaimed later, it would have looked like a change and aborted
		// the transaction.
		st.DropExpired(key, c.nowMs)
		c.watching = append(c.watching, watchedKey{
			key:     key,
			version: st.Watch(key),
			existed: st.Peek(key, c.nowMs) != nil,
		})
		if c.watchSet != nil {
			c.watchSet[string(key)] = struct{}{}
		}
	}
	c.WriteOK()
}

// watchScanMax is how many watched keys isWatching compares one by one;
// past it, it looks them up in Client.watchSet, so that WATCH is not
// quadratic in its keys: it runs with the shards of all of them locked.
const watchScanMax = 16

// isWatching reports whether c watches key.
func (c *Client) isWatching(key []byte) bool {
	if c.watchSet == nil && len(c.watching) > watchScanMax {
		c.watchSet = make(map[string]struct{}, 2*len(c.watching))
		for _, w := range c.watching {
			c.watchSet[string(w.key)] = struct{}{}
		}
	}
	if c.watchSet != nil {
		_, ok := c.watchSet[string(key)]
		return ok
	}
	for _, w := range c.watching {
		if string(w.key) == string(key) {
			return true
		}
	}
	return false
}

// UNWATCH
//
// Queued in a transaction it runs inside EXEC, which holds the watched
// keys' shards (unwatchAll would lock them again) and unwatches every key
// as it ends.
func cmdUnwatch(c *Client, args [][]byte) {
	if !c.inExec {
		c.unwatchAll()
	}
	c.WriteOK()
}

// unwatchAll drops every WATCH of the connection. It locks each key's shard
// itself, so it must be called with no shard held.
func (c *Client) unwatchAll() {
	if len(c.watching) == 0 {
		return
	}
	st := c.eng.store
	for _, w := range c.watching {
		i := st.ShardIndex(w.key)
		st.Lock(i)
		st.Unwatch(w.key)
		st.Unlock(i)
	}
	c.watching = c.watching[:0]
	c.watchSet = nil
}
