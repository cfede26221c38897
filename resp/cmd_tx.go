package resp

import "sort"

// Transactions: MULTI queues commands (after the same unknown-command, arity
// and auth checks as live ones; a failure there makes EXEC abort with
// EXECABORT), EXEC locks every shard any queued command or WATCHed key
// touches, in ascending order, checks the watched keys, runs the queue with
// one clock reading, and unlocks. No other client can observe a partial
// transaction, because every command locks its shards before it reads.

func init() {
	register(
		&Command{Name: "multi", Arity: 1, Flags: FlagNoMulti | FlagFast | FlagLoading | FlagStale, Handler: cmdMulti,
			Summary: "Starts a transaction.", Group: "transactions"},
		&Command{Name: "exec", Arity: 1, Flags: FlagNoMulti | FlagLoading | FlagStale, Handler: cmdExec,
			Summary: "Executes all commands in a transaction.", Group: "transactions"},
		&Command{Name: "discard", Arity: 1, Flags: FlagNoMulti | FlagFast | FlagLoading | FlagStale, Handler: cmdDiscard,
			Summary: "Discards a transaction.", Group: "transactions"},
		&Command{Name: "watch", Arity: -2, Flags: FlagNoMulti | FlagFast | FlagLoading | FlagStale, FirstKey: 1, LastKey: -1, Step: 1, Handler: cmdWatch,
			Summary: "Monitors changes to keys to determine the execution of a transaction.", Group: "transactions"},
		&Command{Name: "unwatch", Arity: 1, Flags: FlagNoMulti | FlagFast | FlagLoading | FlagStale, Handler: cmdUnwatch,
			Summary: "Forgets about watched keys of a transaction.", Group: "transactions"},
	)
}

// txState is a connection's open MULTI.
type txState struct {
	cmds   []*Command
	args   [][][]byte
	failed bool // a queued command was rejected: EXEC aborts
}

// watchedKey is one WATCH registration.
type watchedKey struct {
	key     []byte
	version uint64
	existed bool
}

// flagTx marks an open transaction as failed (EXECABORT at EXEC).
func (c *Conn) flagTx() {
	if c.tx != nil {
		c.tx.failed = true
	}
}

// queue stores a copy of the request for EXEC and replies QUEUED.
func (c *Conn) queue(cmd *Command, args [][]byte) {
	size := 0
	for _, a := range args {
		size += len(a)
	}
	buf := make([]byte, 0, size)
	cp := make([][]byte, len(args))
	for i, a := range args {
		buf = append(buf, a...)
		cp[i] = buf[len(buf)-len(a) : len(buf) : len(buf)]
	}
	c.tx.cmds = append(c.tx.cmds, cmd)
	c.tx.args = append(c.tx.args, cp)
	c.WriteSimple("QUEUED")
}

// MULTI
func cmdMulti(c *Conn, args [][]byte) {
	if c.tx != nil {
		c.WriteError(errNestedMulti)
		return
	}
	c.tx = &txState{}
	c.WriteOK()
}

// DISCARD
func cmdDiscard(c *Conn, args [][]byte) {
	if c.tx == nil {
		c.WriteError(errDiscardNoMulti)
		return
	}
	c.tx = nil
	c.unwatchAll()
	c.WriteOK()
}

// EXEC
func cmdExec(c *Conn, args [][]byte) {
	tx := c.tx
	if tx == nil {
		c.WriteError(errExecNoMulti)
		return
	}
	c.tx = nil
	if tx.failed {
		c.unwatchAll()
		c.WriteError(errExecAbort)
		return
	}
	st := c.srv.store
	// Lock the union of every shard the transaction touches.
	all := false
	var idx []int
	var held []int
	for i, cmd := range tx.cmds {
		if cmd.Flags&FlagAllShards != 0 {
			all = true
			break
		}
		idx = cmd.keyIndexes(tx.args[i], idx[:0])
		for _, k := range idx {
			held = insertSorted(held, st.ShardIndex(tx.args[i][k]))
		}
	}
	for _, w := range c.watching {
		held = insertSorted(held, st.ShardIndex(w.key))
	}
	if all {
		st.LockAll()
	} else {
		sort.Ints(held)
		for _, s := range held {
			st.Lock(s)
		}
	}
	unlock := func() {
		if all {
			st.UnlockAll()
			return
		}
		for i := len(held) - 1; i >= 0; i-- {
			st.Unlock(held[i])
		}
	}
	now := st.Now()
	nowMs := now / 1e6
	for _, w := range c.watching {
		if st.WatchVersion(w.key) != w.version || (w.existed && st.Peek(w.key, nowMs) == nil) {
			unlock()
			c.unwatchAll()
			c.WriteNullArray()
			return
		}
	}
	c.WriteArray(len(tx.cmds))
	c.inExec = true
	c.now, c.nowMs = now, nowMs
	c.held, c.heldAll = held, all // for the journal's change counting
	func() {
		defer func() {
			c.inExec = false
			c.held, c.heldAll = c.held[:0], false
			unlock()
		}()
		for i, cmd := range tx.cmds {
			c.call(cmd, tx.args[i])
			if c.closeAfter { // a handler panicked; stop here
				return
			}
		}
	}()
	c.unwatchAll()
}

// WATCH key [key ...]
func cmdWatch(c *Conn, args [][]byte) {
	if c.tx != nil {
		c.WriteError(errWatchInMulti)
		return
	}
	st := c.srv.store
	for _, k := range args[1:] {
		dup := false
		for _, w := range c.watching {
			if string(w.key) == string(k) {
				dup = true
				break
			}
		}
		if dup {
			continue
		}
		key := append([]byte(nil), k...)
		c.watching = append(c.watching, watchedKey{
			key:     key,
			version: st.Watch(key),
			existed: st.Peek(key, c.nowMs) != nil,
		})
	}
	c.WriteOK()
}

// UNWATCH
func cmdUnwatch(c *Conn, args [][]byte) {
	c.unwatchAll()
	c.WriteOK()
}

// unwatchAll drops every WATCH of the connection. It locks each key's shard
// itself, so it must be called with no shard held.
func (c *Conn) unwatchAll() {
	if len(c.watching) == 0 {
		return
	}
	st := c.srv.store
	for _, w := range c.watching {
		i := st.ShardIndex(w.key)
		st.Lock(i)
		st.Unwatch(w.key)
		st.Unlock(i)
	}
	c.watching = c.watching[:0]
}
