package command

import (
	"fmt"
	"strings"

	"github.com/ratekv/ratekv/internal/redisnum"
	"github.com/ratekv/ratekv/journal"
)

// Log-only commands: records the journal writes that have no Redis
// command of their own. They live in a table of their own, which only the
// replay (and RecordKeys) consult: a client that sends one gets "unknown
// command", COMMAND does not list them, and nothing a client can do
// depends on them.
//
// SETINT key <16 bytes> (see journal.AppendSetInt) and REPLSTATE replid
// offset (journal.AppendReplState) are the ones.

// logCommands is the table of log-only commands, keyed by lower-case name.
var logCommands = map[string]*Command{}

// registerLog adds log-only commands; a name that is also a client
// command is a programming error and panics at start-up.
func registerLog(cmds ...*Command) {
	for _, c := range cmds {
		if c.Name != strings.ToLower(c.Name) || commands[c.Name] != nil || logCommands[c.Name] != nil {
			panic(fmt.Sprintf("command: log command %q clashes or is not lower case", c.Name))
		}
		if c.Step == 0 && c.FirstKey > 0 {
			c.Step = 1
		}
		logCommands[c.Name] = c
	}
}

// lookupRecord finds the command a log record names: a client command or
// a log-only one.
func lookupRecord(name []byte) *Command {
	if cmd := lookupCommand(name); cmd != nil {
		return cmd
	}
	return lookupIn(logCommands, name)
}

// lookupRecord is lookupRecord through c's name cache: a replica's stream
// repeats a few record names (SETINT, SET, DEL). Only for a client that
// applies records (the replication stream's): the cache then holds
// log-only commands, which a client must not reach.
func (c *Client) lookupRecord(name []byte) *Command {
	if cmd := c.names.get(name); cmd != nil {
		return cmd
	}
	cmd := lookupRecord(name)
	if cmd != nil {
		c.names.put(name, cmd)
	}
	return cmd
}

func init() {
	registerLog(
		&Command{Name: "setint", Arity: 3, Flags: FlagWrite, FirstKey: 1, LastKey: 1, Step: 1, Handler: cmdSetInt,
			Summary: "Log record: sets a key to an integer with an absolute deadline (binary).", Group: "string"},
		&Command{Name: "replstate", Arity: 3, Flags: FlagWrite, Handler: cmdReplState,
			Summary: "Log record: the replication id and offset a replica's data is at.", Group: "server"},
	)
}

// REPLSTATE replid offset: the data replayed so far is the primary's
// stream up to offset under replid (journal.AppendReplState). Replay
// forgets it at the next record of another kind.
func cmdReplState(c *Client, args [][]byte) {
	off, ok := redisnum.ParseInt(args[2])
	if len(args[1]) != 40 || !ok || off < 0 {
		c.WriteError(sprintf(errReplStateRecord, clip(args[1]), clip(args[2])))
		return
	}
	c.eng.repl.logged.Store(&replMark{id: string(args[1]), off: off})
	c.WriteOK()
}

// SETINT key payload: as SET key n [PXAT atMs], replacing whatever key
// held. A deadline already past leaves the key expired, as SET … PXAT
// does: it is not resurrected.
func cmdSetInt(c *Client, args [][]byte) {
	n, at, ok := journal.DecodeSetInt(args[2])
	switch {
	case len(args[2]) != journal.SetIntLen:
		c.WriteError(sprintf(errSetIntPayload, journal.SetIntLen, len(args[2])))
		return
	case !ok:
		c.WriteError(sprintf(errSetIntDeadline, at))
		return
	}
	st := c.eng.store
	sh := c.keyShard(args[1])
	e, _ := st.PutIn(sh, args[1], c.nowMs)
	st.SetInt(e, n)
	st.SetExpireIn(sh, args[1], e, at)
	c.noteWritten(e)
	c.WriteOK()
}
