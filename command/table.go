package command

import (
	"fmt"
	"strings"
	"sync/atomic"
)

// Flag describes a command for the dispatcher and for COMMAND INFO.
type Flag uint32

// Command flags. The names COMMAND INFO reports are in flagNames.
const (
	FlagWrite        Flag = 1 << iota // changes data
	FlagReadOnly                      // only reads data
	FlagFast                          // O(1) or O(log N)
	FlagAdmin                         // server administration
	FlagNoAuth                        // allowed before AUTH
	FlagTxControl                     // transaction control: runs at once inside MULTI instead of being queued (MULTI, EXEC, WATCH, …)
	FlagAllShards                     // touches the whole keyspace: the dispatcher locks every shard
	FlagLoading                       // allowed while loading
	FlagStale                         // allowed on a stale replica
	FlagDenyOOM                       // may use more memory
	FlagNoMulti                       // refused inside MULTI, as Redis's no_multi (SAVE, SHUTDOWN): the transaction aborts
	FlagDiskSignal                    // refused with the writes while the disk fails, though it writes nothing (PING, as in Redis: a health check sees the failure)
	FlagNoScript                      // refused inside a script (redis.call), as Redis's noscript
	FlagAllowBusy                     // runs while a script is busy (past busy-reply-threshold) instead of getting BUSY, as Redis's allow_busy
	FlagScript                        // runs a script, which may touch keys it did not declare: EXEC locks every shard for it
	FlagPubSub                        // a Pub/Sub command, as Redis's pubsub
	FlagSubscribedOK                  // allowed to a RESP2 client in Pub/Sub mode ((P|S)(UN)SUBSCRIBE, PING, QUIT, RESET)
	FlagAsking                        // served in a slot this node imports without ASKING first (RESTORE-ASKING), as Redis's asking

	// flagSlots is set by register on the commands that can name keys of
	// several hash slots (a key range, movable keys, EXEC): cluster mode
	// checks them for CROSSSLOT (cluster.go).
	flagSlots
	// flagRouted is set by register on the commands that name keys, and
	// on EXEC: a cluster of several nodes routes them by slot
	// (cluster_route.go).
	flagRouted
)

var flagNames = []struct {
	f    Flag
	name string
}{
	{FlagWrite, "write"}, {FlagReadOnly, "readonly"}, {FlagDenyOOM, "denyoom"},
	{FlagAdmin, "admin"}, {FlagPubSub, "pubsub"}, {FlagNoScript, "noscript"}, {FlagLoading, "loading"},
	{FlagStale, "stale"}, {FlagAsking, "asking"}, {FlagFast, "fast"}, {FlagNoAuth, "no_auth"},
	{FlagNoMulti, "no_multi"}, {FlagAllowBusy, "allow_busy"},
}

// Command is one entry of the command table.
type Command struct {
	// Name is the lower-case command name.
	Name string
	// Arity is Redis's: the exact number of words including the name, or
	// -N for at least N.
	Arity int
	Flags Flag
	// FirstKey, LastKey and Step locate the key arguments as in COMMAND
	// INFO (LastKey -1 means the last argument); FirstKey 0 means no keys.
	FirstKey, LastKey, Step int
	// Keys, when set, returns the indexes of key arguments for commands
	// whose keys cannot be described by FirstKey/LastKey/Step (movablekeys).
	// args has passed the arity check; invalid shapes may return nil.
	Keys func(args [][]byte, dst []int) []int
	// KeyNum, when set with Keys, says that Keys finds the keys as
	// Redis's "keynum" key spec does, so that COMMAND describes them
	// exactly to cluster clients instead of as unknown.
	KeyNum *KeyNum
	// KeyWord, when set with Keys and FirstKey, says that besides the key
	// at FirstKey, Keys finds the arguments after this keyword (MIGRATE's
	// KEYS), as Redis's "keyword" key spec, for COMMAND.
	KeyWord string
	// Handler runs the command. The shards of its keys are locked by the
	// dispatcher; args alias the connection's read buffer and must be
	// copied if kept.
	Handler func(c *Client, args [][]byte)
	// Persist says how the command's effects are journaled (write
	// commands only); see journal.go.
	Persist PersistMode
	// PlainArgs, when > 0, is the argument count (the name included) at
	// which a PersistImage command's effect depends only on its arguments
	// and the prior state (SET key value: no relative expiry, no GET, no
	// condition): such a call is journaled as the request it arrived as
	// (Client.rawRecord), which saves building its image.
	PlainArgs int
	// Summary and Group feed COMMAND DOCS.
	Summary, Group string

	// subs are a container command's subcommands by the name after its
	// '|' (registerSubcommands); nil for other commands.
	subs map[string]*Command

	// ACL: the command's id in a user's bitmap, its categories (bits of
	// aclCategoryNames), the access of its keys by rank (keyAccess), which
	// arguments are channels, and the container of a subcommand; set by
	// aclSetup.
	aclID     int
	aclCats   uint64
	aclKeys   []uint8
	aclChan   uint8
	aclShape  uint8 // what aclQuick can check: aclShapeOther, aclShapeNoKeys, aclShapeKey1
	aclParent *Command

	calls, usec, rejected, failed atomic.Int64
	hist                          atomic.Pointer[latencyHist] // nil until tracked (hist.go)
}

// KeyNum describes keys counted by an argument (Redis's "keynum" key
// spec): the count is at argument Begin+NumIdx, the first key at
// Begin+First, then every Step arguments (EVAL: 2, 0, 1, 1).
type KeyNum struct{ Begin, NumIdx, First, Step int }

// commands is the command table, keyed by lower-case name. It is filled by
// the init functions of the command family files (conn.go, keys.go, …)
// and never changes afterwards.
var commands = map[string]*Command{}

// register adds commands to the table; a duplicate name is a programming
// error and panics at start-up.
func register(cmds ...*Command) {
	for _, c := range cmds {
		if c.Name != strings.ToLower(c.Name) {
			panic(fmt.Sprintf("command: command %q must be lower case", c.Name))
		}
		if _, dup := commands[c.Name]; dup {
			panic(fmt.Sprintf("command: command %q registered twice", c.Name))
		}
		if c.Step == 0 && c.FirstKey > 0 {
			c.Step = 1
		}
		markSlotChecked(c)
		commands[c.Name] = c
	}
}

// keyed returns what makes a table entry a one-key command (its key the
// first argument) of group, for a family file's register block.
func keyed(group string) func(c *Command) *Command {
	return func(c *Command) *Command {
		c.FirstKey, c.LastKey, c.Step, c.Group = 1, 1, 1, group
		return c
	}
}

// lookupCommand finds a command by name, case-insensitively.
func lookupCommand(name []byte) *Command { return lookupIn(commands, name) }

// lookupIn finds name in table, case-insensitively, without allocating:
// names are lower-cased into a stack buffer.
func lookupIn(table map[string]*Command, name []byte) *Command {
	var buf [32]byte
	if len(name) > len(buf) {
		return nil
	}
	lower := buf[:len(name)]
	for i, c := range name {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		lower[i] = c
	}
	return table[string(lower)]
}

// subcommand finds the subcommand args[1] of the container command cmd
// (len(args) >= 2) and checks its arity, as Redis's processCommand does
// (commandCheckExistence, commandCheckArity). msg is the error to reply
// when there is none or the arity is wrong; sub is nil when there is none.
func (cmd *Command) subcommand(args [][]byte) (sub *Command, msg string) {
	sub = lookupIn(cmd.subs, args[1])
	if sub == nil {
		name := cstr(args[1])
		if len(name) > 128 {
			name = name[:128]
		}
		return nil, sprintf(errUnknownSubcmd, sanitizeErr(name), strings.ToUpper(cmd.Name))
	}
	if !sub.arityOK(len(args)) {
		return sub, sprintf(errWrongArgs, sub.Name)
	}
	return sub, ""
}

// arityOK reports whether n words (name included) fit the command's arity.
func (cmd *Command) arityOK(n int) bool {
	if cmd.Arity >= 0 {
		return n == cmd.Arity
	}
	return n >= -cmd.Arity
}

// keyIndexes appends the indexes of cmd's key arguments in args to dst. A
// container's are those of the subcommand args[1] names (OBJECT FREQ key).
func (cmd *Command) keyIndexes(args [][]byte, dst []int) []int {
	if cmd.subs != nil && len(args) > 1 {
		if sub := lookupIn(cmd.subs, args[1]); sub != nil {
			return sub.keyIndexes(args, dst)
		}
		return dst
	}
	if cmd.Keys != nil {
		return cmd.Keys(args, dst)
	}
	first, last := cmd.keyRange(len(args))
	for i := first; i <= last; i += cmd.Step {
		dst = append(dst, i)
	}
	return dst
}

// keyRange returns the first and last index of the keys at fixed positions
// in a request of n arguments; last < first when there are none.
func (cmd *Command) keyRange(n int) (first, last int) {
	if cmd.FirstKey <= 0 || cmd.FirstKey >= n {
		return 1, 0
	}
	last = cmd.LastKey
	if last < 0 {
		last = n + last
	}
	if last >= n {
		last = n - 1
	}
	return cmd.FirstKey, last
}

// flagList returns the COMMAND INFO flag names of cmd.
func (cmd *Command) flagList() []string {
	var out []string
	for _, f := range flagNames {
		if cmd.Flags&f.f != 0 {
			out = append(out, f.name)
		}
	}
	if cmd.Keys != nil {
		out = append(out, "movablekeys")
	}
	return out
}
