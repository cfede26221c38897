package command

// How scripts lock, so that scripts on different shards run in parallel
// and every script is still atomic.
//
// EVAL locks the shards of its declared KEYS, in ascending order, as any
// command locks its keys' shards. Before each command the script calls, the
// shards of that command's keys are taken (scriptRun.lockKeys): a shard
// above every one held is waited for, as the lock order allows; a lower one
// is only tried. When the try fails, waiting could deadlock (its holder may
// be waiting for one of ours), so the script is aborted instead: its
// interpreter's context is cancelled (no pcall can catch that), the keys
// it wrote are put back from the images saved before their first write
// (saveImages), the records it journaled are dropped, and it runs again
// from the start with every shard locked, where nothing can abort it. It
// held every shard it wrote until the undo was done, so no other client can
// have seen what was undone. A write to the whole keyspace (FLUSHALL), whose
// image would be the keyspace, aborts the same way before it runs.
//
// Other clients never wait on a lock while a script runs: they try their
// shards and yield until they have them, and once a script has run past
// busy-reply-threshold they get BUSY instead (lockBehindScripts).

import (
	"runtime"
	"slices"
	"sort"
	"time"

	"github.com/ratekv/ratekv/shards"
)

// savedKey is a key's state before a script first wrote it.
type savedKey struct {
	key      []byte
	absent   bool
	img      []byte // its value's encoding (shards.Store.AppendValue)
	expireAt int64
}

// lockKeys takes the shards cmd needs for args (see the file comment); it
// reports false when the run is aborted instead.
func (r *scriptRun) lockKeys(cmd *Command, args [][]byte) bool {
	c := r.c
	st := c.eng.store
	if cmd.Flags&FlagAllShards != 0 {
		if cmd.Flags&FlagWrite != 0 {
			return r.abort()
		}
		for s := 0; s < st.NumShards(); s++ {
			if !r.acquire(s) {
				return r.abort()
			}
		}
		return true
	}
	c.keyBuf = cmd.keyIndexes(args, c.keyBuf[:0])
	need := r.need[:0]
	for _, i := range c.keyBuf {
		need = shards.AddLockOrder(need, st.ShardIndex(args[i]))
	}
	r.need = need
	for _, s := range need {
		if !r.acquire(s) {
			return r.abort()
		}
	}
	return true
}

// acquire takes shard s unless it is held: waiting for it when it is
// above every shard held, else only trying. It reports whether s is held.
func (r *scriptRun) acquire(s int) bool {
	c := r.c
	st := c.eng.store
	i := sort.SearchInts(c.held, s)
	if i < len(c.held) && c.held[i] == s {
		return true
	}
	if i == len(c.held) {
		st.Lock(s)
	} else if !st.TryLock(s) {
		return false
	}
	c.held = slices.Insert(c.held, i, s)
	return true
}

// abort stops the run to run it again with every shard locked; it returns
// false, for lockKeys.
func (r *scriptRun) abort() bool {
	r.aborted = true
	r.mu.Lock()
	r.vm.cancel()
	r.mu.Unlock()
	return false
}

// saveImages keeps the state of cmd's keys that the run has not written
// yet, before cmd writes them.
func (r *scriptRun) saveImages(cmd *Command, args [][]byte) {
	c := r.c
	st := c.eng.store
	c.keyBuf = cmd.keyIndexes(args, c.keyBuf[:0])
next:
	for _, i := range c.keyBuf {
		key := args[i]
		for _, k := range r.saved {
			if string(k.key) == string(key) {
				continue next
			}
		}
		k := savedKey{key: append([]byte(nil), key...), absent: true}
		if e := st.Peek(key, c.nowMs); e != nil {
			k.absent, k.img, k.expireAt = false, st.AppendValue(nil, e), e.ExpireAt()
		}
		r.saved = append(r.saved, k)
	}
}

// undo puts back every key the run wrote; their shards are still held.
func (r *scriptRun) undo() {
	c := r.c
	st := c.eng.store
	for i := len(r.saved) - 1; i >= 0; i-- {
		k := r.saved[i]
		if k.absent {
			st.Delete(k.key, c.nowMs)
			continue
		}
		v, _, err := shards.DecodeValue(k.img)
		if err != nil {
			panic("command: a saved image does not decode: " + err.Error()) // cannot happen: AppendValue wrote it
		}
		st.Restore(k.key, &v, k.expireAt, c.nowMs)
	}
	r.saved = nil
}

// relockAll releases the shards held and locks every shard, for a
// script's second run.
func (c *Client) relockAll() {
	st := c.eng.store
	for i := len(c.held) - 1; i >= 0; i-- {
		st.Unlock(c.held[i])
	}
	c.held = c.held[:0]
	st.LockAll()
	c.heldAll = true
}

// addRun and removeRun keep the set of running scripts.
func (e *Engine) addRun(r *scriptRun) {
	sc := &e.scripts
	sc.runMu.Lock()
	sc.runs = append(sc.runs, r)
	sc.noteRunsLocked()
	sc.runMu.Unlock()
}

func (e *Engine) removeRun(r *scriptRun) {
	sc := &e.scripts
	sc.runMu.Lock()
	if i := slices.Index(sc.runs, r); i >= 0 {
		sc.runs = slices.Delete(sc.runs, i, i+1)
	}
	sc.noteRunsLocked()
	sc.runMu.Unlock()
}

// noteRunsLocked publishes the number of running scripts and the start of
// the oldest; requires runMu held.
func (sc *scripting) noteRunsLocked() {
	if len(sc.runs) > 0 {
		oldest := sc.runs[0].start
		for _, r := range sc.runs[1:] {
			oldest = min(oldest, r.start)
		}
		sc.oldest.Store(oldest)
	}
	sc.nrun.Store(int32(len(sc.runs)))
}

// scriptsBusy reports whether a script has run past busy-reply-threshold.
func (e *Engine) scriptsBusy() bool {
	th := e.scripts.busyNs.Load()
	return th > 0 && e.scripts.nrun.Load() > 0 && e.store.Now()-e.scripts.oldest.Load() >= th
}

// busyRefused reports whether cmd must get BUSY now because of a script
// past busy-reply-threshold.
func (c *Client) busyRefused(cmd *Command, args [][]byte) bool {
	return c.eng.scripts.nrun.Load() > 0 && !allowBusy(cmd, args) && c.eng.scriptsBusy()
}

// allowBusy reports whether cmd runs while a script is busy.
func allowBusy(cmd *Command, args [][]byte) bool {
	if cmd.Flags&FlagAllowBusy != 0 {
		return true
	}
	if cmd.subs != nil && len(args) > 1 {
		if sub := lookupIn(cmd.subs, args[1]); sub != nil {
			return sub.Flags&FlagAllowBusy != 0
		}
	}
	return false
}

// lockBehindScripts locks cmd's shards while scripts run: it does not
// wait on the locks they hold, so that once one has run past
// busy-reply-threshold the command gets BUSY instead of waiting for its
// end, as in Redis. It reports whether the shards are held (false: BUSY
// was replied).
func (c *Client) lockBehindScripts(cmd *Command, args [][]byte) bool {
	for i := 0; ; i++ {
		if c.busyRefused(cmd, args) {
			cmd.rejected.Add(1)
			if cmd.Name == "exec" { // refused EXEC discards the transaction, as Redis's execCommandAbort
				c.tx.reset()
				c.unwatchAll()
				c.WriteError(errExecAbortBecause + errBusyScript)
				return false
			}
			c.WriteError(errBusyScript)
			return false
		}
		if c.tryLock(cmd, args) {
			return true
		}
		if c.eng.scripts.nrun.Load() == 0 {
			c.lock(cmd, args)
			return true
		}
		// Most scripts end within microseconds: yield first, then poll.
		if i < 16 {
			runtime.Gosched()
		} else {
			time.Sleep(50 * time.Microsecond)
		}
	}
}

// tryLock locks cmd's shards if none is held by another client, else
// locks nothing; it reports which.
func (c *Client) tryLock(cmd *Command, args [][]byte) bool {
	st := c.eng.store
	all := cmd.Flags&FlagAllShards != 0
	held := c.held[:0]
	if all {
		for i := 0; i < st.NumShards(); i++ {
			held = append(held, i)
		}
	} else {
		c.keyBuf = cmd.keyIndexes(args, c.keyBuf[:0])
		for _, i := range c.keyBuf {
			held = shards.AddLockOrder(held, st.ShardIndex(args[i]))
		}
	}
	for n, s := range held {
		if !st.TryLock(s) {
			for i := n - 1; i >= 0; i-- {
				st.Unlock(held[i])
			}
			c.held = held[:0]
			return false
		}
	}
	if all {
		c.held, c.heldAll = held[:0], true
	} else {
		c.held = held
	}
	return true
}
