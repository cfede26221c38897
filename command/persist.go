package command

import (
	"errors"

	"github.com/ratekv/ratekv/internal/redisnum"
	"github.com/ratekv/ratekv/persist"
	"github.com/ratekv/ratekv/shards"
)

// Persistence commands: SAVE, BGSAVE, BGREWRITEAOF (LASTSAVE is in
// server.go), and DUMP / RESTORE with Redis's syntax, replies and
// errors. The work is package persist's; these handlers parse, call and
// map its errors onto Redis's texts.
//
// DUMP payloads are ratekv's own format (shards/codec.go: the value, the
// magic "RK", a version byte and a CRC-32C), not Redis's RDB encoding:
// RESTORE refuses a Redis payload, and Redis a ratekv one, with "DUMP
// payload version or checksum are wrong". The journal logs non-string
// values as RESTORE key abs-ms payload REPLACE ABSTTL, so the same command
// also replays them.

func init() {
	register(
		&Command{Name: "save", Arity: 1, Flags: FlagAdmin | FlagNoMulti | FlagNoScript, Handler: cmdSave,
			Summary: "Synchronously saves the database(s) to disk.", Group: "server"},
		&Command{Name: "bgsave", Arity: -1, Flags: FlagAdmin | FlagNoScript, Handler: cmdBgsave,
			Summary: "Asynchronously saves the database(s) to disk.", Group: "server"},
		&Command{Name: "bgrewriteaof", Arity: 1, Flags: FlagAdmin | FlagNoScript, Handler: cmdBgrewriteaof,
			Summary: "Asynchronously rewrites the append-only file to disk.", Group: "server"},
		&Command{Name: "dump", Arity: 2, Flags: FlagReadOnly, FirstKey: 1, LastKey: 1, Step: 1, Handler: cmdDump,
			Summary: "Returns a serialized representation of the value stored at a key.", Group: "generic"},
		&Command{Name: "restore", Arity: -4, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: 1, Step: 1, Handler: cmdRestore,
			Summary: "Creates a key from the serialized representation of a value.", Group: "generic"},
	)
}

// SetPersistence attaches the persistence manager SAVE, BGSAVE,
// BGREWRITEAOF, LASTSAVE and INFO use. Call before Serve.
func (s *Engine) SetPersistence(m *persist.Manager) { s.persist = m }

// setAppendOnly switches the append-only log on or off (CONFIG SET
// appendonly; see persist/aof_switch.go) and returns the error reply, or
// "". Switching to the current state does nothing; it still waits for a
// switch in progress (SetAppendOnly), so that a reply to appendonly no
// always means the log is closed. Inside a transaction a switch is
// refused: EXEC holds shards, and switching off waits for every shard
// (drainJournal); Redis schedules it instead.
func (c *Client) setAppendOnly(on bool) string {
	s := c.eng
	if c.inExec {
		if s.persist.AppendOnly() == on {
			return ""
		}
		return errAppendonlyInMulti
	}
	err := s.persist.SetAppendOnly(on, persist.Hooks{
		Attach: func(aof *persist.AOF) {
			if aof == nil {
				s.SetJournal(nil) // not a typed nil
			} else {
				s.SetJournal(aof)
			}
		},
		Drain: s.drainJournal,
	})
	if err != nil {
		s.log.Error("cannot switch appendonly on", "err", err)
		return sprintf(errConfigSet, "appendonly", errAOFStart)
	}
	s.log.Info("CONFIG SET appendonly", "id", c.ID, "addr", c.Addr, "value", on)
	return ""
}

// SAVE
//
// The snapshot is taken in this connection's goroutine while other clients
// go on (each shard is locked only while its keys are encoded); the reply
// comes once the file is durable.
func cmdSave(c *Client, args [][]byte) {
	p := c.eng.persist
	if p == nil {
		c.WriteError(errNoPersistence)
		return
	}
	switch err := p.Save(); {
	case err == nil:
		c.WriteOK()
	case errors.Is(err, persist.ErrSaveInProgress):
		c.WriteError(errBgsaveInProgress)
	default:
		c.eng.log.Error("SAVE failed", "err", err)
		c.WriteError(errSaveFailed)
	}
}

// BGSAVE [SCHEDULE]
func cmdBgsave(c *Client, args [][]byte) {
	schedule := false
	if len(args) > 1 {
		if len(args) != 2 || !equalFold(args[1], "schedule") {
			c.WriteError(errSyntax)
			return
		}
		schedule = true
	}
	p := c.eng.persist
	if p == nil {
		c.WriteError(errNoPersistence)
		return
	}
	scheduled, err := p.BGSave(schedule)
	switch {
	case err == nil && scheduled:
		c.WriteSimple("Background saving scheduled")
	case err == nil:
		c.WriteSimple("Background saving started")
	case errors.Is(err, persist.ErrSaveInProgress):
		c.WriteError(errBgsaveInProgress)
	case errors.Is(err, persist.ErrRewriteInProgress):
		c.WriteError(errBgsaveDuringAOF)
	default:
		c.eng.log.Error("BGSAVE could not start", "err", err)
		c.WriteError(errSaveFailed)
	}
}

// BGREWRITEAOF
func cmdBgrewriteaof(c *Client, args [][]byte) {
	p := c.eng.persist
	if p == nil {
		c.WriteError(errNoPersistence)
		return
	}
	scheduled, err := p.BGRewrite()
	switch {
	case err == nil && scheduled:
		c.WriteSimple("Background append only file rewriting scheduled")
	case err == nil:
		c.WriteSimple("Background append only file rewriting started")
	case errors.Is(err, persist.ErrRewriteInProgress):
		c.WriteError(errRewriteInProgress)
	default:
		c.eng.log.Error("BGREWRITEAOF could not start", "err", err)
		c.WriteError(errRewriteFailed)
	}
}

// DUMP key
func cmdDump(c *Client, args [][]byte) {
	e := c.eng.store.Lookup(args[1], c.nowMs)
	if e == nil {
		c.WriteNull()
		return
	}
	c.valBuf = c.eng.store.AppendDump(c.valBuf[:0], e)
	c.WriteBulk(c.valBuf)
}

// restoreOpts are RESTORE's options after the payload. IDLETIME and FREQ
// are checked as Redis does and otherwise ignored: ratekv keeps no LRU or
// LFU data.
type restoreOpts struct {
	replace, absTTL bool
	idle, freq      int64 // -1: not given
}

// parseRestoreOptions parses [REPLACE] [ABSTTL] [IDLETIME seconds]
// [FREQ frequency] in Redis's order of checks; it returns the error reply
// or "".
func parseRestoreOptions(args [][]byte) (restoreOpts, string) {
	o := restoreOpts{idle: -1, freq: -1}
	for j := 0; j < len(args); j++ {
		more := len(args) - j - 1
		switch a := args[j]; {
		case equalFold(a, "replace"):
			o.replace = true
		case equalFold(a, "absttl"):
			o.absTTL = true
		case equalFold(a, "idletime") && more >= 1 && o.freq == -1:
			n, ok := redisnum.ParseInt(args[j+1])
			if !ok {
				return o, errNotInt
			}
			if n < 0 {
				return o, errRestoreIdle
			}
			o.idle = n
			j++
		case equalFold(a, "freq") && more >= 1 && o.idle == -1:
			n, ok := redisnum.ParseInt(args[j+1])
			if !ok {
				return o, errNotInt
			}
			if n < 0 || n > 255 {
				return o, errRestoreFreq
			}
			o.freq = n
			j++
		default:
			return o, errSyntax
		}
	}
	return o, ""
}

// RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]
//
// The checks run in Redis's order: options, BUSYKEY, the TTL, the payload's
// footer and checksum, the payload's contents. A deadline already past
// stores nothing (deleting the key with REPLACE) and replies OK. A relative
// TTL that overflows once the clock is added gets "invalid expire time"
// and leaves the key alone, as in Redis since redis/redis#15756 (Redis 7.0
// wraps it into the past: OK, nothing stored, the old key deleted with
// REPLACE).
func cmdRestore(c *Client, args [][]byte) {
	o, msg := parseRestoreOptions(args[4:])
	if msg != "" {
		c.WriteError(msg)
		return
	}
	st := c.eng.store
	key := args[1]
	if !o.replace && st.LookupWrite(key, c.nowMs) != nil {
		c.WriteError(errBusyKey)
		return
	}
	ttl, ok := redisnum.ParseInt(args[2])
	if !ok {
		c.WriteError(errNotInt)
		return
	}
	if ttl < 0 {
		c.WriteError(errRestoreTTL)
		return
	}
	v, err := shards.DecodeDump(args[3])
	if err != nil {
		if errors.Is(err, shards.ErrDumpPayload) {
			c.WriteError(errDumpPayload)
		} else {
			c.WriteError(errBadDataFormat)
		}
		return
	}
	if ttl != 0 && !o.absTTL {
		if ttl, ok = expireDeadline(ttl, false, c.nowMs); !ok {
			c.WriteError(sprintf(errInvalidExpire, "restore"))
			return
		}
	}
	if ttl != 0 && ttl <= c.nowMs {
		if o.replace {
			st.Delete(key, c.nowMs)
		}
		c.WriteOK()
		return
	}
	st.Restore(key, &v, ttl, c.nowMs)
	if e := st.Peek(key, c.nowMs); e != nil {
		st.RestoreAccess(e, o.idle, o.freq, c.nowMs)
	}
	c.WriteOK()
}
