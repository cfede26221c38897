package command

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/internal/glob"
)

// Server commands: introspection (COMMAND, INFO), run-time configuration
// (CONFIG), whole-keyspace administration (DBSIZE, FLUSHDB, FLUSHALL), TIME,
// LASTSAVE and SHUTDOWN. CLUSTER is in cluster.go.
//
// COMMAND INFO and COMMAND DOCS are generated from the command table, in
// Redis 7's reply shapes, so that clients that introspect the server
// (go-redis's COMMAND parser, redis-cli's hints, cluster-aware routers) see
// what they see on Redis. What the table does not say is derived as Redis
// derives it: ACL categories come from the flags (setImplicitACLCategories)
// plus the command group, and key specs from the key positions, with the
// most conservative access flags ("RW access update" for writes, as Redis
// itself reports for commands whose key use it cannot tell). The few
// explicit categories and command tips Redis's own table adds are in
// commandMeta.
//
// Container commands (CLIENT, COMMAND, CONFIG, CLUSTER, MEMORY) dispatch
// through the subcommand table, which also feeds COMMAND INFO, DOCS and
// LIST, so a subcommand has one arity and one summary.
//
// INFO keeps Redis's section names, field names and layout ("# Section"
// headers, "name:value" lines separated by CRLF, a blank line between
// sections) and reports only what ratekv really measures; fields about
// machinery ratekv does not have (replication, forks, lazyfree) carry the
// idle values a fresh Redis reports.

func init() {
	register(
		&Command{Name: "command", Arity: -1, Flags: FlagLoading | FlagStale, Handler: cmdCommand,
			Summary: "Returns detailed information about all commands.", Group: "server"},
		&Command{Name: "info", Arity: -1, Flags: FlagLoading | FlagStale | FlagAllShards, Handler: cmdInfo,
			Summary: "Returns information and statistics about the server.", Group: "server"},
		&Command{Name: "config", Arity: -2, Handler: cmdConfig,
			Summary: "A container for server configuration commands.", Group: "server"},
		&Command{Name: "dbsize", Arity: 1, Flags: FlagReadOnly | FlagFast | FlagAllShards, Handler: cmdDbsize,
			Summary: "Returns the number of keys in the database.", Group: "server"},
		&Command{Name: "flushdb", Arity: -1, Flags: FlagWrite | FlagAllShards, Handler: cmdFlush,
			Summary: "Removes all keys from the current database.", Group: "server"},
		&Command{Name: "flushall", Arity: -1, Flags: FlagWrite | FlagAllShards, Handler: cmdFlush,
			Summary: "Removes all keys from all databases.", Group: "server"},
		&Command{Name: "time", Arity: 1, Flags: FlagLoading | FlagStale | FlagFast, Handler: cmdTime,
			Summary: "Returns the server time.", Group: "server"},
		&Command{Name: "lastsave", Arity: 1, Flags: FlagLoading | FlagStale | FlagFast, Handler: cmdLastsave,
			Summary: "Returns the Unix timestamp of the last successful save to disk.", Group: "server"},
		&Command{Name: "shutdown", Arity: -1, Flags: FlagAdmin | FlagLoading | FlagStale | FlagNoMulti | FlagNoScript | FlagAllowBusy, Handler: cmdShutdown,
			Summary: "Shuts down the server.", Group: "server"},
		&Command{Name: "memory", Arity: -2, Handler: cmdMemory,
			Summary: "A container for memory diagnostics commands.", Group: "server"},
	)
	const srv = "server"
	registerSubcommands("command",
		&Command{Name: "command|count", Arity: 2, Flags: FlagLoading | FlagStale, Handler: cmdCommandCount,
			Summary: "Returns a count of commands.", Group: srv},
		&Command{Name: "command|docs", Arity: -2, Flags: FlagLoading | FlagStale, Handler: cmdCommandDocs,
			Summary: "Returns documentary information about one, multiple or all commands.", Group: srv},
		&Command{Name: "command|getkeys", Arity: -4, Flags: FlagLoading | FlagStale, Handler: cmdCommandGetkeys,
			Summary: "Extracts the key names from an arbitrary command.", Group: srv},
		&Command{Name: "command|getkeysandflags", Arity: -4, Flags: FlagLoading | FlagStale, Handler: cmdCommandGetkeys,
			Summary: "Extracts the key names and access flags for an arbitrary command.", Group: srv},
		&Command{Name: "command|help", Arity: 2, Flags: FlagLoading | FlagStale, Handler: cmdCommandHelp,
			Summary: "Returns helpful text about the different subcommands.", Group: srv},
		&Command{Name: "command|info", Arity: -2, Flags: FlagLoading | FlagStale, Handler: cmdCommandInfo,
			Summary: "Returns information about one, multiple or all commands.", Group: srv},
		&Command{Name: "command|list", Arity: -2, Flags: FlagLoading | FlagStale, Handler: cmdCommandList,
			Summary: "Returns a list of command names.", Group: srv},
	)
	registerSubcommands("config",
		&Command{Name: "config|get", Arity: -3, Flags: FlagAdmin | FlagLoading | FlagStale | FlagNoScript, Handler: cmdConfigGet,
			Summary: "Returns the effective values of configuration parameters.", Group: srv},
		&Command{Name: "config|set", Arity: -4, Flags: FlagAdmin | FlagLoading | FlagStale | FlagNoScript, Handler: cmdConfigSet,
			Summary: "Sets configuration parameters in-flight.", Group: srv},
		&Command{Name: "config|rewrite", Arity: 2, Flags: FlagAdmin | FlagLoading | FlagStale | FlagNoScript, Handler: cmdConfigRewrite,
			Summary: "Persists the effective configuration to file.", Group: "server"},
		&Command{Name: "config|resetstat", Arity: 2, Flags: FlagAdmin | FlagLoading | FlagStale | FlagNoScript, Handler: cmdConfigResetstat,
			Summary: "Resets the server's statistics.", Group: srv},
		&Command{Name: "config|help", Arity: 2, Flags: FlagLoading | FlagStale, Handler: cmdConfigHelp,
			Summary: "Returns helpful text about the different subcommands.", Group: srv},
	)
	registerSubcommands("memory",
		&Command{Name: "memory|usage", Arity: -3, Flags: FlagReadOnly, FirstKey: 2, LastKey: 2, Step: 1, Handler: cmdMemoryUsage,
			Summary: "Estimates the memory usage of a key.", Group: srv},
		&Command{Name: "memory|stats", Arity: 2, Handler: cmdMemoryStats,
			Summary: "Returns details about memory usage.", Group: srv},
		&Command{Name: "memory|doctor", Arity: 2, Handler: cmdMemoryDoctor,
			Summary: "Outputs a memory problems report.", Group: srv},
		&Command{Name: "memory|purge", Arity: 2, Handler: cmdMemoryPurge,
			Summary: "Asks the allocator to release memory.", Group: srv},
		&Command{Name: "memory|help", Arity: 2, Flags: FlagLoading | FlagStale, Handler: cmdMemoryHelp,
			Summary: "Returns helpful text about the different subcommands.", Group: srv},
	)
}

// ---- Subcommands ----

// subcommands maps a container command to its subcommands, sorted by name;
// subcommandIndex finds one by its full name ("config|get", as COMMAND
// reports it). Both are filled at init and read-only afterwards.
var (
	subcommands     = map[string][]*Command{}
	subcommandIndex = map[string]*Command{}
)

// registerSubcommands adds subcommands of the container command parent,
// which must be registered already. Names must be "parent|sub" in lower
// case; a duplicate panics at start-up.
func registerSubcommands(parent string, subs ...*Command) {
	p := commands[parent]
	if p == nil {
		panic("command: register " + parent + " before its subcommands")
	}
	if p.subs == nil {
		p.subs = map[string]*Command{}
	}
	for _, s := range subs {
		if !strings.HasPrefix(s.Name, parent+"|") || s.Name != strings.ToLower(s.Name) {
			panic("command: subcommand " + s.Name + " must be lower case and named " + parent + "|<sub>")
		}
		if _, dup := subcommandIndex[s.Name]; dup {
			panic("command: subcommand " + s.Name + " registered twice")
		}
		subcommandIndex[s.Name] = s
		subcommands[parent] = append(subcommands[parent], s)
		p.subs[strings.TrimPrefix(s.Name, parent+"|")] = s
		if s.Keys != nil || s.FirstKey > 0 {
			p.Flags |= flagRouted // OBJECT ENCODING key: routed by its subcommand's keys
		}
	}
	list := subcommands[parent]
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
}

// runSubcommand runs args[1] of the container command parent. The
// dispatcher has refused an unknown subcommand or a wrong arity before
// the command ran or was queued (dispatchCmd); the check is made again
// for callers that bypass it.
func runSubcommand(c *Client, parent string, args [][]byte) {
	sub, msg := commands[parent].subcommand(args)
	if msg != "" {
		c.WriteError(msg)
		return
	}
	sub.Handler(c, args)
}

// lookupCommandPath finds a command or, for "parent|sub", a subcommand,
// case-insensitively (COMMAND INFO and DOCS accept both).
func lookupCommandPath(name []byte) *Command {
	lower := strings.ToLower(string(name))
	if strings.IndexByte(lower, '|') >= 0 {
		return subcommandIndex[lower]
	}
	return commands[lower]
}

// sortedCommands returns the top-level commands sorted by name.
var sortedCommands = sync.OnceValue(func() []*Command {
	out := make([]*Command, 0, len(commands))
	for _, cmd := range commands {
		out = append(out, cmd)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
})

// writeHelp writes a HELP reply as Redis's addReplyHelp does.
func (c *Client) writeHelp(name []byte, lines []string) {
	c.WriteArray(len(lines) + 3)
	c.WriteSimple(strings.ToUpper(string(name)) + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
	for _, l := range lines {
		c.WriteSimple(l)
	}
	c.WriteSimple("HELP")
	c.WriteSimple("    Prints this help.")
}

// ---- COMMAND ----

// aclCategories are Redis's ACL categories in the order COMMAND INFO lists
// them (ACLCommandCategories in acl.c).
var aclCategories = []string{
	"keyspace", "read", "write", "set", "sortedset", "list", "hash", "string",
	"bitmap", "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow",
	"blocking", "dangerous", "connection", "transaction", "scripting",
	"ratelimit", // ratekv's: CL.*, SL.*, SW.*
}

// groupCategory maps a command group (COMMAND DOCS) to the ACL category
// Redis gives every command of the group.
var groupCategory = map[string]string{
	"generic": "keyspace", "keyspace": "keyspace", "string": "string",
	"sorted-set": "sortedset", "sorted_set": "sortedset", "sortedset": "sortedset",
	"hash": "hash", "list": "list", "set": "set", "bitmap": "bitmap",
	"hyperloglog": "hyperloglog", "geo": "geo", "stream": "stream",
	"connection": "connection", "transactions": "transaction", "scripting": "scripting",
}

// commandMeta holds what Redis's command table says beyond flags and group:
// explicit ACL categories and the command tips clients use for routing.
var commandMeta = map[string]struct{ acl, tips []string }{
	"command":                 {acl: []string{"connection"}, tips: []string{"nondeterministic_output_order"}},
	"command|count":           {acl: []string{"connection"}},
	"command|docs":            {acl: []string{"connection"}, tips: []string{"nondeterministic_output_order"}},
	"command|getkeys":         {acl: []string{"connection"}},
	"command|getkeysandflags": {acl: []string{"connection"}},
	"command|help":            {acl: []string{"connection"}},
	"command|info":            {acl: []string{"connection"}, tips: []string{"nondeterministic_output_order"}},
	"command|list":            {acl: []string{"connection"}, tips: []string{"nondeterministic_output_order"}},
	"config|set":              {tips: []string{"request_policy:all_nodes", "response_policy:all_succeeded"}},
	"config|resetstat":        {tips: []string{"request_policy:all_nodes", "response_policy:all_succeeded"}},
	"info":                    {acl: []string{"dangerous"}, tips: []string{"nondeterministic_output", "request_policy:all_shards", "response_policy:special"}},
	"dbsize":                  {acl: []string{"keyspace"}, tips: []string{"request_policy:all_shards", "response_policy:agg_sum"}},
	"flushdb":                 {acl: []string{"keyspace", "dangerous"}, tips: []string{"request_policy:all_shards", "response_policy:all_succeeded"}},
	"flushall":                {acl: []string{"keyspace", "dangerous"}, tips: []string{"request_policy:all_shards", "response_policy:all_succeeded"}},
	"time":                    {tips: []string{"nondeterministic_output"}},
	"lastsave":                {acl: []string{"admin", "dangerous"}, tips: []string{"nondeterministic_output"}},
	"cluster|info":            {tips: []string{"nondeterministic_output"}},
	"cluster|nodes":           {tips: []string{"nondeterministic_output"}},
	"cluster|slots":           {tips: []string{"nondeterministic_output"}},
	"cluster|shards":          {tips: []string{"nondeterministic_output"}},
	"cluster|links":           {tips: []string{"nondeterministic_output"}},
	"cluster|getkeysinslot":   {tips: []string{"nondeterministic_output"}},
	"ping":                    {tips: []string{"request_policy:all_shards", "response_policy:all_succeeded"}},
	"keys":                    {acl: []string{"dangerous"}, tips: []string{"request_policy:all_shards", "nondeterministic_output_order"}},
	"scan":                    {tips: []string{"nondeterministic_output", "request_policy:special"}},
	"randomkey":               {tips: []string{"request_policy:all_shards", "nondeterministic_output"}},
	"del":                     {tips: []string{"request_policy:multi_shard", "response_policy:agg_sum"}},
	"unlink":                  {tips: []string{"request_policy:multi_shard", "response_policy:agg_sum"}},
	"exists":                  {tips: []string{"request_policy:multi_shard", "response_policy:agg_sum"}},
	"touch":                   {tips: []string{"request_policy:multi_shard", "response_policy:agg_sum"}},
	"mget":                    {tips: []string{"request_policy:multi_shard"}},
	"mset":                    {tips: []string{"request_policy:multi_shard", "response_policy:all_succeeded"}},
	"msetnx":                  {tips: []string{"request_policy:multi_shard", "response_policy:agg_min"}},
	"ttl":                     {tips: []string{"nondeterministic_output"}},
	"pttl":                    {tips: []string{"nondeterministic_output"}},
	"client":                  {acl: []string{"connection"}},
	"client|info":             {tips: []string{"nondeterministic_output"}},
	"client|list":             {tips: []string{"nondeterministic_output"}},
	"readonly":                {acl: []string{"connection"}},
	"asking":                  {acl: []string{"connection"}},
	"readwrite":               {acl: []string{"connection"}},
	"dump":                    {tips: []string{"nondeterministic_output"}},
	"restore":                 {acl: []string{"dangerous"}},
	"zrandmember":             {tips: []string{"nondeterministic_output"}},
	"zscan":                   {tips: []string{"nondeterministic_output"}},
	"hgetall":                 {tips: []string{"nondeterministic_output_order"}},
	"hkeys":                   {tips: []string{"nondeterministic_output_order"}},
	"hvals":                   {tips: []string{"nondeterministic_output_order"}},
	"hrandfield":              {tips: []string{"nondeterministic_output"}},
	"hscan":                   {tips: []string{"nondeterministic_output"}},
}

// categories returns cmd's ACL categories (without '@') in Redis's order:
// Redis's own for the commands it has (acl_table.go), else derived from
// the flags, plus @ratelimit for the rate limiters.
func (cmd *Command) categories() []string {
	if e, ok := redisACLTable[cmd.Name]; ok {
		return strings.Fields(e.cats)
	}
	want := map[string]bool{}
	for _, p := range []string{"cl.", "sl.", "sw."} {
		if strings.HasPrefix(cmd.Name, p) {
			want["ratelimit"] = true
		}
	}
	if cmd.Flags&FlagWrite != 0 {
		want["write"] = true
	}
	if cmd.Flags&FlagReadOnly != 0 {
		want["read"] = true
	}
	if cmd.Flags&FlagAdmin != 0 {
		want["admin"], want["dangerous"] = true, true
	}
	if cmd.Flags&FlagFast != 0 {
		want["fast"] = true
	} else {
		want["slow"] = true
	}
	if g, ok := groupCategory[cmd.Group]; ok {
		want[g] = true
	}
	if cmd.Flags&FlagPubSub != 0 {
		want["pubsub"] = true
	}
	for _, a := range commandMeta[cmd.Name].acl {
		want[a] = true
	}
	out := make([]string, 0, len(want))
	for _, a := range aclCategories {
		if want[a] {
			out = append(out, a)
		}
	}
	return out
}

// keySpecFlags returns the key-spec access flags reported for cmd's keys.
// The table does not record how each key is used, so they are the most
// conservative ones Redis itself uses in that case.
func (cmd *Command) keySpecFlags() []string {
	if cmd.Flags&FlagPubSub != 0 {
		return []string{"not_key"} // shard channels: positions for routing, not keys
	}
	switch {
	case cmd.Flags&FlagWrite != 0, cmd.Flags&(FlagScript|FlagReadOnly) == FlagScript: // a script may write its keys
		return []string{"RW", "access", "update"}
	case cmd.Flags&FlagReadOnly != 0:
		return []string{"RO", "access"}
	}
	return []string{"RO"}
}

// hasKeys reports whether cmd takes key arguments.
func (cmd *Command) hasKeys() bool { return cmd.FirstKey > 0 || cmd.Keys != nil }

// writeStatusSet writes a set of simple strings.
func (c *Client) writeStatusSet(items []string) {
	c.WriteSet(len(items))
	for _, s := range items {
		c.WriteSimple(s)
	}
}

// writeCommandInfo writes one COMMAND INFO entry in Redis 7's shape:
// [name, arity, flags, first, last, step, acl categories, tips, key specs,
// subcommands]; nil is written as a null.
func (c *Client) writeCommandInfo(cmd *Command) {
	if cmd == nil {
		c.WriteNull()
		return
	}
	c.WriteArray(10)
	c.WriteBulkString(cmd.Name)
	c.WriteInt(int64(cmd.Arity))
	c.writeStatusSet(cmd.flagList())
	if cmd.FirstKey > 0 {
		c.WriteInt(int64(cmd.FirstKey))
		c.WriteInt(int64(cmd.LastKey))
		c.WriteInt(int64(cmd.Step))
	} else {
		c.WriteInt(0)
		c.WriteInt(0)
		c.WriteInt(0)
	}
	cats := cmd.categories()
	c.WriteSet(len(cats))
	for _, a := range cats {
		c.WriteSimple("@" + a)
	}
	tips := commandMeta[cmd.Name].tips
	c.WriteSet(len(tips))
	for _, t := range tips {
		c.WriteBulkString(t)
	}
	c.writeKeySpecs(cmd)
	subs := subcommands[cmd.Name]
	if len(subs) == 0 {
		c.WriteSet(0)
		return
	}
	c.WriteArray(len(subs))
	for _, s := range subs {
		c.writeCommandInfo(s)
	}
}

// writeKeySpecs writes cmd's key specs: a range spec for FirstKey..LastKey
// (LastKey relative to FirstKey, or negative from the end, as Redis
// encodes it), and for a Keys function a "keynum" spec (KeyNum) or, when
// its keys fit no spec, an "unknown" one.
func (c *Client) writeKeySpecs(cmd *Command) {
	n := 0
	if cmd.FirstKey > 0 {
		n++
	}
	if cmd.Keys != nil {
		n++
	}
	c.WriteSet(n)
	if cmd.KeyWord != "" {
		c.writeKeywordSpec(cmd)
		return
	}
	flags := cmd.keySpecFlags()
	if cmd.FirstKey > 0 {
		last := cmd.LastKey
		if last >= 0 {
			last -= cmd.FirstKey
		}
		c.writeIndexSpecHead(flags, cmd.FirstKey)
		c.writeRangeFind(last, cmd.Step)
	}
	if kn := cmd.KeyNum; cmd.Keys != nil && kn != nil {
		c.writeIndexSpecHead(flags, kn.Begin)
		c.WriteBulkString("find_keys")
		c.WriteMap(2)
		c.WriteBulkString("type")
		c.WriteBulkString("keynum")
		c.WriteBulkString("spec")
		c.WriteMap(3)
		c.WriteBulkString("keynumidx")
		c.WriteInt(int64(kn.NumIdx))
		c.WriteBulkString("firstkey")
		c.WriteInt(int64(kn.First))
		c.WriteBulkString("keystep")
		c.WriteInt(int64(kn.Step))
	} else if cmd.Keys != nil {
		c.WriteMap(3)
		c.WriteBulkString("flags")
		c.writeStatusSet(flags)
		for _, part := range []string{"begin_search", "find_keys"} {
			c.WriteBulkString(part)
			c.WriteMap(2)
			c.WriteBulkString("type")
			c.WriteBulkString("unknown")
			c.WriteBulkString("spec")
			c.WriteMap(0)
		}
	}
}

// writeKeywordSpec writes the key specs of a command with a key at
// FirstKey and, after KeyWord, keys to the end (MIGRATE).
func (c *Client) writeKeywordSpec(cmd *Command) {
	flags := cmd.keySpecFlags()
	for i, incomplete := range []bool{false, true} {
		c.WriteMap(3)
		c.WriteBulkString("flags")
		if incomplete {
			flags = append(flags[:len(flags):len(flags)], "incomplete")
		}
		c.writeStatusSet(flags)
		c.WriteBulkString("begin_search")
		c.WriteMap(2)
		c.WriteBulkString("type")
		c.WriteBulkString([]string{"index", "keyword"}[i])
		c.WriteBulkString("spec")
		if incomplete {
			c.WriteMap(2)
			c.WriteBulkString("keyword")
			c.WriteBulkString(cmd.KeyWord)
			c.WriteBulkString("startfrom")
			c.WriteInt(-2)
		} else {
			c.WriteMap(1)
			c.WriteBulkString("index")
			c.WriteInt(int64(cmd.FirstKey))
		}
		c.writeRangeFind([]int{0, -1}[i], 1)
	}
}

// writeIndexSpecHead opens a key spec of three fields and writes its flags
// and a begin_search of type index at index; find_keys follows.
func (c *Client) writeIndexSpecHead(flags []string, index int) {
	c.WriteMap(3)
	c.WriteBulkString("flags")
	c.writeStatusSet(flags)
	c.WriteBulkString("begin_search")
	c.WriteMap(2)
	c.WriteBulkString("type")
	c.WriteBulkString("index")
	c.WriteBulkString("spec")
	c.WriteMap(1)
	c.WriteBulkString("index")
	c.WriteInt(int64(index))
}

// writeRangeFind writes a key spec's find_keys of type range.
func (c *Client) writeRangeFind(last, step int) {
	c.WriteBulkString("find_keys")
	c.WriteMap(2)
	c.WriteBulkString("type")
	c.WriteBulkString("range")
	c.WriteBulkString("spec")
	c.WriteMap(3)
	c.WriteBulkString("lastkey")
	c.WriteInt(int64(last))
	c.WriteBulkString("keystep")
	c.WriteInt(int64(step))
	c.WriteBulkString("limit")
	c.WriteInt(0)
}

// writeCommandDocs writes the COMMAND DOCS map of one command. summary,
// since and group are always present (redis-cli's help relies on them);
// since is the ratekv version that has the command.
func (c *Client) writeCommandDocs(cmd *Command) {
	subs := subcommands[cmd.Name]
	n := 3
	if len(subs) > 0 {
		n++
	}
	group := cmd.Group
	if group == "" {
		group = "generic"
	}
	c.WriteMap(n)
	c.WriteBulkString("summary")
	c.WriteBulkString(cmd.Summary)
	c.WriteBulkString("since")
	c.WriteBulkString(Version)
	c.WriteBulkString("group")
	c.WriteBulkString(group)
	if len(subs) > 0 {
		c.WriteBulkString("subcommands")
		c.WriteMap(len(subs))
		for _, s := range subs {
			c.WriteBulkString(s.Name)
			c.writeCommandDocs(s)
		}
	}
}

// COMMAND [subcommand [argument ...]]
func cmdCommand(c *Client, args [][]byte) {
	if len(args) == 1 {
		all := sortedCommands()
		c.WriteArray(len(all))
		for _, cmd := range all {
			c.writeCommandInfo(cmd)
		}
		return
	}
	runSubcommand(c, "command", args)
}

// COMMAND COUNT
func cmdCommandCount(c *Client, args [][]byte) { c.WriteInt(int64(len(commands))) }

// COMMAND INFO [command-name ...]
func cmdCommandInfo(c *Client, args [][]byte) {
	if len(args) == 2 {
		cmdCommand(c, args[:1])
		return
	}
	c.WriteArray(len(args) - 2)
	for _, name := range args[2:] {
		c.writeCommandInfo(lookupCommandPath(name))
	}
}

// COMMAND DOCS [command-name ...]
func cmdCommandDocs(c *Client, args [][]byte) {
	var list []*Command
	if len(args) == 2 {
		list = sortedCommands()
	} else {
		for _, name := range args[2:] {
			if cmd := lookupCommandPath(name); cmd != nil {
				list = append(list, cmd)
			}
		}
	}
	c.WriteMap(len(list))
	for _, cmd := range list {
		c.WriteBulkString(cmd.Name)
		c.writeCommandDocs(cmd)
	}
}

// listFilter is a parsed COMMAND LIST FILTERBY clause; kind "" lists all.
type listFilter struct {
	kind string // "", "module", "aclcat" or "pattern"
	arg  []byte
}

// parseListFilter parses the arguments after COMMAND LIST.
func parseListFilter(args [][]byte) (listFilter, bool) {
	switch len(args) {
	case 0:
		return listFilter{}, true
	case 3:
		if !bytes.EqualFold(args[0], []byte("filterby")) {
			return listFilter{}, false
		}
		kind := strings.ToLower(string(args[1]))
		switch kind {
		case "module", "aclcat", "pattern":
			return listFilter{kind: kind, arg: args[2]}, true
		}
	}
	return listFilter{}, false
}

// match reports whether cmd passes the filter.
func (f listFilter) match(cmd *Command) bool {
	switch f.kind {
	case "module":
		return false // ratekv has no modules
	case "aclcat":
		for _, a := range cmd.categories() {
			if strings.EqualFold(a, string(f.arg)) {
				return true
			}
		}
		return false
	case "pattern":
		return glob.Match(f.arg, []byte(cmd.Name), true)
	}
	return true
}

// COMMAND LIST [FILTERBY MODULE module-name | ACLCAT category | PATTERN pattern]
func cmdCommandList(c *Client, args [][]byte) {
	f, ok := parseListFilter(args[2:])
	if !ok {
		c.WriteError(errSyntax)
		return
	}
	var names []string
	for _, cmd := range sortedCommands() {
		if f.match(cmd) {
			names = append(names, cmd.Name)
		}
		for _, s := range subcommands[cmd.Name] {
			if f.match(s) {
				names = append(names, s.Name)
			}
		}
	}
	c.WriteArray(len(names))
	for _, n := range names {
		c.WriteBulkString(n)
	}
}

// commandKeys returns the indexes in argv (a full command, name first) of
// its keys, or the error Redis's COMMAND GETKEYS gives.
func commandKeys(argv [][]byte) ([]int, string) {
	cmd := lookupCommand(argv[0])
	if cmd != nil && cmd.subs != nil && len(argv) > 1 {
		cmd = lookupIn(cmd.subs, argv[1]) // a container's keys are its subcommand's
	}
	switch {
	case cmd == nil:
		return nil, errGetkeysInvalidCmd
	case !cmd.hasKeys():
		return nil, errGetkeysNoKeys
	case !cmd.arityOK(len(argv)):
		return nil, errGetkeysArity
	}
	idx := cmd.keyIndexes(argv, nil)
	if len(idx) == 0 {
		return nil, errGetkeysInvalid
	}
	return idx, ""
}

// COMMAND GETKEYS command [arg ...]
// COMMAND GETKEYSANDFLAGS command [arg ...]
func cmdCommandGetkeys(c *Client, args [][]byte) {
	argv := args[2:]
	idx, msg := commandKeys(argv)
	if msg != "" {
		c.WriteError(msg)
		return
	}
	withFlags := bytes.EqualFold(args[1], []byte("getkeysandflags"))
	var flags []string
	if withFlags {
		flags = lookupCommand(argv[0]).keySpecFlags()
	}
	c.WriteArray(len(idx))
	for _, i := range idx {
		if !withFlags {
			c.WriteBulk(argv[i])
			continue
		}
		c.WriteArray(2)
		c.WriteBulk(argv[i])
		c.writeStatusSet(flags)
	}
}

// COMMAND HELP
func cmdCommandHelp(c *Client, args [][]byte) {
	c.writeHelp(args[0], []string{
		"(no subcommand)",
		"    Return details about all commands.",
		"COUNT",
		"    Return the total number of commands in this server.",
		"LIST",
		"    Return a list of all commands in this server.",
		"INFO [<command-name> ...]",
		"    Return details about multiple commands.",
		"    If no command names are given, documentation details for all",
		"    commands are returned.",
		"DOCS [<command-name> ...]",
		"    Return documentation details about multiple commands.",
		"    If no command names are given, documentation details for all",
		"    commands are returned.",
		"GETKEYS <full-command>",
		"    Return the keys from a full command.",
		"GETKEYSANDFLAGS <full-command>",
		"    Return the keys and the access flags from a full command.",
	})
}

// ---- CONFIG ----

// CONFIG subcommand [argument ...]
func cmdConfig(c *Client, args [][]byte) { runSubcommand(c, "config", args) }

// CONFIG GET parameter [parameter ...]
//
// A parameter without glob characters is looked up exactly and echoed as
// given; a pattern matches names and aliases case-insensitively. Each
// name is reported once, compared case-insensitively, as in Redis 7.0: an
// alias and its canonical name asked together are two entries. The reply
// is a map (a flat array in RESP2).
func cmdConfigGet(c *Client, args [][]byte) {
	var names, values []string
	seen := map[string]bool{}
	for _, pat := range args[2:] {
		if bytes.IndexAny(pat, "[*?") < 0 {
			if p, ok := config.Lookup(string(pat)); ok && !seen[strings.ToLower(string(pat))] {
				seen[strings.ToLower(string(pat))] = true
				names = append(names, string(pat))
				values = append(values, c.eng.cfg.Get(p))
			}
			continue
		}
		for _, n := range config.Names() {
			if !seen[n] && glob.Match(pat, []byte(n), true) {
				seen[n] = true
				p, _ := config.Lookup(n)
				names = append(names, n)
				values = append(values, c.eng.cfg.Get(p))
			}
		}
	}
	c.WriteMap(len(names))
	for i := range names {
		c.WriteBulkString(names[i])
		c.WriteBulkString(values[i])
	}
}

// configChange is one validated CONFIG SET pair.
type configChange struct {
	name  string // canonical parameter name
	shown string // the name errors give: the alias when it was given, as Redis names its entry
	value string // as given
}

// parseConfigSet validates the name/value pairs of CONFIG SET in Redis's
// order: every name first (the first unknown, immutable or repeated one is
// reported, under the name as given), then every value (reported under the
// name in lower case, the alias's when the alias was given). Nothing is
// applied unless all pairs are valid. A name is repeated when it is given
// twice in any case; a parameter and its
// alias are two names, as in Redis (each alias is a config entry of its
// own there), and the later value wins.
func parseConfigSet(pairs [][]byte) ([]configChange, string) {
	if len(pairs)%2 != 0 {
		return nil, errSyntax
	}
	changes := make([]configChange, 0, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		given := errArg(pairs[i])
		p, ok := config.Lookup(string(pairs[i]))
		if !ok {
			return nil, sprintf(errConfigUnknown, given)
		}
		if !p.Mutable {
			return nil, sprintf(errConfigImmutable, given)
		}
		for j := 0; j < i; j += 2 {
			if bytes.EqualFold(pairs[j], pairs[i]) {
				return nil, sprintf(errConfigSet, given, errConfigDuplicate)
			}
		}
		shown := p.Name
		if strings.EqualFold(string(pairs[i]), p.Alias) {
			shown = p.Alias
		}
		changes = append(changes, configChange{name: p.Name, shown: shown, value: string(pairs[i+1])})
	}
	for _, ch := range changes {
		p, _ := config.Lookup(ch.name)
		if _, err := p.Check(ch.value); err != nil {
			return nil, sprintf(errConfigSet, ch.shown, sanitizeErr([]byte(err.Error())))
		}
	}
	return changes, ""
}

// CONFIG SET parameter value [parameter value ...]
//
// appendonly is switched first (setAppendOnly): when that fails nothing is
// set, and the others cannot fail once validated.
func cmdConfigSet(c *Client, args [][]byte) {
	changes, msg := parseConfigSet(args[2:])
	if msg != "" {
		c.WriteError(msg)
		return
	}
	cfg := c.eng.cfg
	for i, ch := range changes {
		if ch.name == config.AppendOnly.Name() && c.eng.persist != nil {
			if msg := c.setAppendOnly(strings.EqualFold(ch.value, "yes")); msg != "" {
				c.WriteError(msg)
				return
			}
			changes = append(changes[:i:i], changes[i+1:]...) // set by the switch
			break
		}
	}
	old := make([]string, len(changes))
	for i, ch := range changes {
		p, _ := config.Lookup(ch.name)
		old[i] = cfg.Get(p)
		if err := cfg.SetRuntime(ch.name, ch.value); err != nil {
			for j := i - 1; j >= 0; j-- { // all or nothing, as Redis
				cfg.Set(changes[j].name, old[j])
			}
			c.WriteError(configSetError(ch.shown, err))
			return
		}
	}
	// Then what puts them into effect together (TLS reloads its files
	// once), as Redis's apply functions: one that fails changed nothing,
	// and every value goes back.
	names := make([]string, len(changes))
	for i, ch := range changes {
		names[i] = ch.name
	}
	if name, err := cfg.Apply(names); err != nil {
		for j := len(changes) - 1; j >= 0; j-- {
			cfg.Set(changes[j].name, old[j])
		}
		c.WriteError(configSetError(name, err))
		return
	}
	c.eng.log.Info("CONFIG SET", "id", c.ID, "addr", c.Addr, "params", len(changes))
	c.WriteOK()
}

// configSetError maps a config package error to Redis's reply.
func configSetError(name string, err error) string {
	switch {
	case errors.Is(err, config.ErrUnknown):
		return sprintf(errConfigUnknown, name)
	case errors.Is(err, config.ErrImmutable):
		return sprintf(errConfigImmutable, name)
	}
	return sprintf(errConfigSet, name, sanitizeErr([]byte(err.Error())))
}

// CONFIG RESETSTAT
func cmdConfigResetstat(c *Client, args [][]byte) {
	c.batchCmds = 0 // this connection's unpublished counts predate the reset too
	c.eng.resetStats()
	c.WriteOK()
}

// resetStats zeroes what CONFIG RESETSTAT clears in Redis: the server
// counters, the per-command statistics, the error statistics, the keyspace
// counters and the memory peak.
func (s *Engine) resetStats() {
	s.host.ResetStats()
	s.totalCommands.Store(0)
	s.totalErrors.Store(0)
	s.errMu.Lock()
	clear(s.errStats)
	s.errMu.Unlock()
	for _, cmd := range commands {
		cmd.calls.Store(0)
		cmd.usec.Store(0)
		cmd.rejected.Store(0)
		cmd.failed.Store(0)
		cmd.hist.Store(nil)
	}
	s.store.ResetStats()
	s.stats.peak.Store(0)
	s.resetDecisions()
}

// CONFIG HELP
func cmdConfigHelp(c *Client, args [][]byte) {
	c.writeHelp(args[0], []string{
		"GET <pattern>",
		"    Return parameters matching the glob-like <pattern> and their values.",
		"SET <directive> <value>",
		"    Set the configuration <directive> to <value>.",
		"RESETSTAT",
		"    Reset statistics reported by the INFO command.",
		"REWRITE",
		"    Rewrite the configuration file.",
	})
}

// CONFIG REWRITE
func cmdConfigRewrite(c *Client, args [][]byte) {
	err := c.eng.cfg.Rewrite()
	switch {
	case errors.Is(err, config.ErrNoFile):
		c.WriteError(errNoConfigFile)
	case err != nil:
		c.eng.log.Warn("CONFIG REWRITE failed", "err", err)
		c.WriteError(sprintf(errConfigRewrite, strerror(err)))
	default:
		c.eng.log.Info("CONFIG REWRITE executed with success")
		c.WriteOK()
	}
}

// strerror is err as C's strerror words its cause ("Permission denied").
func strerror(err error) string {
	var errno syscall.Errno
	msg := err.Error()
	if errors.As(err, &errno) {
		msg = errno.Error()
	}
	if msg != "" && msg[0] >= 'a' && msg[0] <= 'z' {
		msg = string(msg[0]-'a'+'A') + msg[1:]
	}
	return msg
}

func cmdMemory(c *Client, args [][]byte) { runSubcommand(c, "memory", args) }

// MEMORY PURGE: Redis asks jemalloc to return its dirty pages; ratekv runs
// a garbage collection and returns every free page of the Go heap to the
// operating system (debug.FreeOSMemory). Without it the process keeps the
// garbage of a fill or a log rewrite resident until the runtime gets to it
// (with GOGC=100, up to the size of the live heap again), so an RSS read
// right after loading depends on when the last collection ran
// (bench/memory.sh purges before it measures). It blocks the connection's
// event loop for the length of a collection, as Redis's runs in its main
// thread.
func cmdMemoryPurge(c *Client, args [][]byte) {
	debug.FreeOSMemory()
	c.WriteOK()
}

func cmdMemoryHelp(c *Client, args [][]byte) {
	c.writeHelp(args[0], []string{
		"DOCTOR",
		"    Return memory problems reports.",
		"PURGE",
		"    Collect garbage and return the free memory to the operating system.",
		"STATS",
		"    Return information about the memory usage of the server.",
		"USAGE <key> [SAMPLES <count>]",
		"    Return memory in bytes used by <key> and its value (measured whole:",
		"    SAMPLES is accepted and ignored).",
	})
}

// ---- Keyspace and server administration ----

// DBSIZE
func cmdDbsize(c *Client, args [][]byte) { c.WriteInt(int64(c.eng.store.Len())) }

// validFlushArgs reports whether the options after FLUSHDB/FLUSHALL are
// valid: none, ASYNC or SYNC. ratekv always flushes synchronously; both
// are accepted, as Redis accepts both.
func validFlushArgs(opts [][]byte) bool {
	switch len(opts) {
	case 0:
		return true
	case 1:
		return bytes.EqualFold(opts[0], []byte("async")) || bytes.EqualFold(opts[0], []byte("sync"))
	}
	return false
}

// FLUSHDB [ASYNC | SYNC]
// FLUSHALL [ASYNC | SYNC]
func cmdFlush(c *Client, args [][]byte) {
	if !validFlushArgs(args[1:]) {
		c.WriteError(errSyntax)
		return
	}
	c.eng.store.Flush()
	c.WriteOK()
}

// TIME
func cmdTime(c *Client, args [][]byte) {
	c.WriteArray(2)
	c.WriteBulkInt(c.now / 1e9)
	c.WriteBulkInt(c.now % 1e9 / 1e3)
}

// lastSave is the Unix time of the last successful save: the start time
// until the first, as on a fresh Redis (and always, without persistence).
func (s *Engine) lastSave() int64 {
	if s.persist != nil {
		return s.persist.LastSave()
	}
	return s.start.Unix()
}

// LASTSAVE
func cmdLastsave(c *Client, args [][]byte) { c.WriteInt(c.eng.lastSave()) }

// shutdownOpts are SHUTDOWN's parsed options.
type shutdownOpts struct {
	noSave, save, now, force, abort bool
}

// parseShutdown parses the options after SHUTDOWN with Redis's rules: any
// order, NOSAVE and SAVE exclusive, ABORT alone.
func parseShutdown(opts [][]byte) (shutdownOpts, bool) {
	var o shutdownOpts
	for _, a := range opts {
		switch strings.ToLower(string(a)) {
		case "nosave":
			o.noSave = true
		case "save":
			o.save = true
		case "now":
			o.now = true
		case "force":
			o.force = true
		case "abort":
			o.abort = true
		default:
			return o, false
		}
	}
	if (o.abort && (o.noSave || o.save || o.now || o.force)) || (o.noSave && o.save) {
		return o, false
	}
	return o, true
}

// SHUTDOWN [NOSAVE | SAVE] [NOW] [FORCE] [ABORT]
//
// The request goes to main, which pauses the server, takes the final
// snapshot (as configured; NOSAVE skips it, SAVE takes one even without
// save rules), flushes and fsyncs the append-only log, and exits; the
// client gets no reply, its connection is closed. When the final save
// fails the server goes on and the client gets "Errors trying to
// SHUTDOWN. Check logs.", as in Redis, unless FORCE asked to exit anyway.
// Meanwhile the client's later requests wait (see shutdown.go). NOW has
// nothing to skip (ratekv has no replicas to wait for); ABORT finds no
// shutdown in progress, since a requested shutdown is decided at once.
func cmdShutdown(c *Client, args [][]byte) {
	o, ok := parseShutdown(args[1:])
	if !ok {
		c.WriteError(errSyntax)
		return
	}
	if o.abort {
		c.WriteError(errNoShutdown)
		return
	}
	save := 0
	switch {
	case o.noSave:
		save = -1
	case o.save:
		save = 1
	}
	r := &ShutdownRequest{Save: save, Force: o.force, client: c, done: make(chan struct{})}
	if !c.eng.host.RequestShutdown(r) {
		c.WriteError(errShutdownFailed)
		return
	}
	c.eng.log.Warn("user requested shutdown", "id", c.ID, "addr", c.Addr)
	c.Shutdown = r
}

// ---- CLUSTER ----

// ---- INFO ----

// infoSection is one INFO section, in Redis's order.
type infoSection struct {
	name  string // as INFO's arguments name it
	title string // the "# Title" header
	dflt  bool   // part of INFO with no arguments ("default")
	gen   func(c *Client, b *infoBuilder)
}

// infoSections are the sections INFO knows; "all" is every one of them and
// "everything" adds module sections, which ratekv has none of.
var infoSections = []infoSection{
	{"server", "Server", true, infoServer},
	{"clients", "Clients", true, infoClients},
	{"memory", "Memory", true, infoMemory},
	{"persistence", "Persistence", true, infoPersistence},
	{"stats", "Stats", true, infoStats},
	{"replication", "Replication", true, infoReplication},
	{"cpu", "CPU", true, infoCPU},
	{"modules", "Modules", true, func(*Client, *infoBuilder) {}},
	{"commandstats", "Commandstats", false, infoCommandstats},
	{"errorstats", "Errorstats", true, infoErrorstats},
	{"latencystats", "Latencystats", false, infoLatencystats},
	{"cluster", "Cluster", true, infoCluster},
	{"keyspace", "Keyspace", true, infoKeyspace},
	{"ratelimit", "Ratelimit", false, infoRatelimit},
}

// parseInfoSections returns which of infoSections INFO's arguments select
// (bit i for infoSections[i]). No argument means "default"; unknown names
// select nothing, as in Redis.
func parseInfoSections(args [][]byte) uint32 {
	var mask uint32
	if len(args) == 0 {
		args = [][]byte{[]byte("default")}
	}
	for _, a := range args {
		name := strings.ToLower(string(a))
		for i, s := range infoSections {
			switch {
			case name == "all" || name == "everything",
				name == "default" && s.dflt,
				name == s.name:
				mask |= 1 << i
			}
		}
	}
	return mask
}

// infoBuilder accumulates INFO text.
type infoBuilder struct{ b []byte }

func (ib *infoBuilder) str(k, v string) {
	ib.b = append(ib.b, k...)
	ib.b = append(ib.b, ':')
	ib.b = append(ib.b, v...)
	ib.b = append(ib.b, '\r', '\n')
}

func (ib *infoBuilder) num(k string, v int64) {
	ib.b = append(ib.b, k...)
	ib.b = append(ib.b, ':')
	ib.b = strconv.AppendInt(ib.b, v, 10)
	ib.b = append(ib.b, '\r', '\n')
}

func (ib *infoBuilder) fixed(k string, v float64, prec int) {
	ib.str(k, strconv.FormatFloat(v, 'f', prec, 64))
}

// INFO [section [section ...]]
func cmdInfo(c *Client, args [][]byte) {
	c.flushStats() // this connection's counts so far (INFO's own call comes after it)
	c.WriteVerbatim(string(infoText(c, args[1:])))
}

// infoText is INFO's text for the sections named by args; the caller holds
// every shard.
func infoText(c *Client, args [][]byte) []byte {
	mask := parseInfoSections(args)
	var ib infoBuilder
	for i, s := range infoSections {
		if mask&(1<<i) == 0 {
			continue
		}
		if len(ib.b) > 0 {
			ib.b = append(ib.b, '\r', '\n')
		}
		ib.b = append(ib.b, "# "...)
		ib.b = append(ib.b, s.title...)
		ib.b = append(ib.b, '\r', '\n')
		s.gen(c, &ib)
	}
	return ib.b
}

// serverIDs returns the run id and replication id, made on first use.
func (s *Engine) serverIDs() (runID, replID string) {
	st := &s.stats
	st.idOnce.Do(func() {
		st.runID, st.replID = randomHex40(), randomHex40()
	})
	return st.runID, st.replID
}

func randomHex40() string {
	var b [20]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func infoServer(c *Client, ib *infoBuilder) {
	s := c.eng
	runID, _ := s.serverIDs()
	exe, _ := os.Executable()
	up := int64(time.Since(s.start) / time.Second)
	ib.str("redis_version", RedisVersion)
	ib.str("ratekv_version", Version)
	ib.str("redis_git_sha1", "00000000")
	ib.str("redis_git_dirty", "0")
	if c.eng.cluster {
		ib.str("redis_mode", "cluster")
	} else {
		ib.str("redis_mode", "standalone")
	}
	ib.str("os", runtime.GOOS+" "+runtime.GOARCH)
	ib.num("arch_bits", strconv.IntSize)
	ib.str("go_version", runtime.Version())
	ib.num("process_id", int64(os.Getpid()))
	ib.str("process_supervised", "no")
	ib.str("run_id", runID)
	ib.str("tcp_port", s.host.Port())
	ib.num("server_time_usec", c.now/1e3)
	ib.num("uptime_in_seconds", up)
	ib.num("uptime_in_days", up/86400)
	ib.num("hz", 10)
	ib.num("configured_hz", 10)
	ib.str("executable", exe)
	ib.str("config_file", s.cfg.File())
	ib.num("io_threads_active", 0)
}

func infoClients(c *Client, ib *infoBuilder) {
	s := c.eng
	var maxQbuf int64
	clients := s.host.Clients()
	for _, o := range clients {
		q, _ := o.Peer.Buffers()
		maxQbuf = max(maxQbuf, q)
	}
	ib.num("connected_clients", int64(len(clients)))
	ib.num("cluster_connections", 0)
	ib.num("maxclients", s.cfg.Int(config.MaxClients))
	ib.num("client_recent_max_input_buffer", maxQbuf)
	ib.num("client_recent_max_output_buffer", 0)
	ib.num("blocked_clients", 0)
	ib.num("tracking_clients", 0)
	ib.num("clients_in_timeout_table", 0)
}

// bytesToHuman formats n as Redis's bytesToHuman: "512B", "894.98K", "1.50M".
func bytesToHuman(n uint64) string {
	units := []string{"K", "M", "G", "T", "P"}
	if n < 1024 {
		return strconv.FormatUint(n, 10) + "B"
	}
	d := float64(n) / 1024
	for _, u := range units {
		if d < 1024 || u == "P" {
			return strconv.FormatFloat(d, 'f', 2, 64) + u
		}
		d /= 1024
	}
	return strconv.FormatUint(n, 10) + "B"
}

// rssBytes returns the resident set size: /proc/self/statm where there is
// one, else what the Go runtime holds from the OS.
func rssBytes(ms *runtime.MemStats) uint64 {
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 1 {
			if pages, err := strconv.ParseUint(f[1], 10, 64); err == nil {
				return pages * uint64(os.Getpagesize())
			}
		}
	}
	return ms.Sys - ms.HeapReleased
}

// infoMemory reports used_memory as evict.go defines it: from the last
// reading while maxmemory is set, else from a reading taken now.
func infoMemory(c *Client, ib *infoBuilder) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s := c.eng
	used64, notCounted := s.usedMemory()
	if s.mem.maxmemory.Load() == 0 {
		r := readMemory()
		used64 = r.mapped
		notCounted = max(r.heapFree+r.objects-r.heapLive, 0) + s.store.SlackHeld()
	}
	used := uint64(used64)
	peak := c.eng.stats.notePeak(used)
	rss := rssBytes(&ms)
	limit := uint64(s.cfg.Int(config.MaxMemory))
	ib.num("used_memory", int64(used))
	ib.str("used_memory_human", bytesToHuman(used))
	ib.num("used_memory_rss", int64(rss))
	ib.str("used_memory_rss_human", bytesToHuman(rss))
	ib.num("used_memory_peak", int64(peak))
	ib.str("used_memory_peak_human", bytesToHuman(peak))
	ib.str("used_memory_peak_perc", strconv.FormatFloat(100*float64(used)/float64(max(peak, 1)), 'f', 2, 64)+"%")
	m := s.memOverhead()
	ib.num("used_memory_overhead", m.overhead)
	ib.num("used_memory_startup", m.startup)
	ib.num("used_memory_dataset", m.dataset)
	ib.str("used_memory_dataset_perc", strconv.FormatFloat(m.datasetPerc, 'f', 2, 64)+"%")
	ib.num("allocator_allocated", m.allocated)
	ib.num("allocator_active", m.active)
	ib.num("allocator_resident", m.resident)
	ib.num("used_memory_go_sys", int64(ms.Sys))
	luaBytes, nScripts, scriptBytes := c.eng.scriptMemory()
	ib.num("used_memory_lua", luaBytes)
	ib.str("used_memory_lua_human", bytesToHuman(uint64(luaBytes)))
	ib.num("used_memory_scripts_eval", scriptBytes)
	ib.num("number_of_cached_scripts", nScripts)
	ib.num("used_memory_scripts", scriptBytes)
	ib.str("used_memory_scripts_human", bytesToHuman(uint64(scriptBytes)))
	ib.num("maxmemory", int64(limit))
	ib.str("maxmemory_human", bytesToHuman(limit))
	ib.str("maxmemory_policy", s.cfg.String(config.MaxMemoryPolicy))
	ib.fixed("allocator_frag_ratio", ratio(m.active, m.allocated), 2)
	ib.num("allocator_frag_bytes", m.active-m.allocated)
	ib.fixed("allocator_rss_ratio", ratio(m.resident, m.active), 2)
	ib.num("allocator_rss_bytes", m.resident-m.active)
	ib.fixed("rss_overhead_ratio", ratio(m.rss, m.resident), 2)
	ib.num("rss_overhead_bytes", m.rss-m.resident)
	ib.fixed("mem_fragmentation_ratio", float64(rss)/float64(max(used, 1)), 2)
	ib.num("mem_fragmentation_bytes", int64(rss)-int64(used))
	ib.num("mem_not_counted_for_evict", notCounted)
	ib.num("mem_clients_normal", m.clients)
	ib.num("mem_aof_buffer", m.aof)
	ib.str("mem_allocator", "go")
	ib.num("mem_gc_cycles", int64(ms.NumGC))
	ib.num("lazyfree_pending_objects", 0)
}

func infoPersistence(c *Client, ib *infoBuilder) {
	s := c.eng
	if s.persist == nil { // a server without persistence (tests): idle values
		aof := int64(0)
		if s.cfg.Bool(config.AppendOnly) {
			aof = 1
		}
		ib.num("loading", 0)
		ib.num("async_loading", 0)
		ib.num("rdb_changes_since_last_save", s.store.Dirty())
		ib.num("rdb_bgsave_in_progress", 0)
		ib.num("rdb_last_save_time", s.lastSave())
		ib.str("rdb_last_bgsave_status", "ok")
		ib.num("rdb_last_bgsave_time_sec", -1)
		ib.num("rdb_current_bgsave_time_sec", -1)
		ib.num("rdb_saves", 0)
		ib.num("aof_enabled", aof)
		ib.num("aof_rewrite_in_progress", 0)
		ib.num("aof_rewrite_scheduled", 0)
		ib.num("aof_last_rewrite_time_sec", -1)
		ib.num("aof_current_rewrite_time_sec", -1)
		ib.str("aof_last_bgrewrite_status", "ok")
		ib.str("aof_last_write_status", "ok")
		return
	}
	// Redis's fields and order; those about forks and modules are left out,
	// aof_fsync and aof_last_write_error are ratekv's.
	st := s.persist.Stats()
	okErr := func(ok bool) string {
		if ok {
			return "ok"
		}
		return "err"
	}
	ib.num("loading", 0) // the data is loaded before the server listens
	ib.num("async_loading", 0)
	ib.num("rdb_changes_since_last_save", st.ChangesSinceSave)
	ib.num("rdb_bgsave_in_progress", boolNum(st.BgsaveInProgress))
	ib.num("rdb_last_save_time", st.LastSave)
	ib.str("rdb_last_bgsave_status", okErr(st.LastBgsaveOK))
	ib.num("rdb_last_bgsave_time_sec", st.LastBgsaveSeconds)
	ib.num("rdb_current_bgsave_time_sec", st.CurrentBgsaveSeconds)
	ib.num("rdb_saves", st.Saves)
	ib.num("rdb_last_load_keys_expired", st.LoadedExpired)
	ib.num("rdb_last_load_keys_loaded", st.LoadedKeys)
	ib.num("aof_enabled", boolNum(st.AOFEnabled))
	ib.num("aof_rewrite_in_progress", boolNum(st.RewriteInProgress))
	ib.num("aof_rewrite_scheduled", boolNum(st.RewriteScheduled))
	ib.num("aof_last_rewrite_time_sec", st.LastRewriteSeconds)
	ib.num("aof_current_rewrite_time_sec", st.CurrentRewriteSeconds)
	ib.str("aof_last_bgrewrite_status", okErr(st.LastRewriteOK))
	ib.num("aof_rewrites", st.Rewrites)
	ib.num("aof_rewrites_consecutive_failures", st.RewriteFailures)
	ib.str("aof_last_write_status", okErr(st.WriteErr == nil))
	if st.WriteErr != nil {
		ib.str("aof_last_write_error", strings.NewReplacer("\r", " ", "\n", " ").Replace(st.WriteErr.Error()))
	}
	if st.AOFEnabled {
		ib.num("aof_current_size", st.AOFCurrentSize)
		ib.num("aof_base_size", st.AOFBaseSize)
		ib.num("aof_pending_rewrite", boolNum(st.RewriteScheduled))
		ib.num("aof_buffer_length", st.AOFBuffer)
		ib.str("aof_fsync", st.Fsync)
	}
}

func boolNum(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func infoStats(c *Client, ib *infoBuilder) {
	s := c.eng
	ks := s.store.Stats()
	cs := s.host.ConnStats()
	ib.num("total_connections_received", cs.Received)
	ib.num("total_commands_processed", s.totalCommands.Load())
	ib.num("instantaneous_ops_per_sec", int64(s.stats.rate(metricOps)))
	ib.num("total_net_input_bytes", cs.NetIn)
	ib.num("total_net_output_bytes", cs.NetOut)
	ib.fixed("instantaneous_input_kbps", s.stats.rate(metricNetIn)/1024, 2)
	ib.fixed("instantaneous_output_kbps", s.stats.rate(metricNetOut)/1024, 2)
	ib.num("rejected_connections", cs.Rejected)
	ib.num("sync_full", s.repl.fulls.Load())
	ib.num("sync_partial_ok", s.repl.partials.Load())
	ib.num("sync_partial_err", s.repl.partialErrs.Load())
	ib.num("expired_keys", ks.ExpiredKeys)
	ib.fixed("expired_stale_perc", ks.ExpiredStale*100, 2)
	ib.num("expired_time_cap_reached_count", ks.ExpireTimeCapped)
	ib.num("evicted_keys", ks.EvictedKeys)
	ib.num("keyspace_hits", ks.Hits)
	ib.num("keyspace_misses", ks.Misses)
	nch, npat, nshard := s.pubsubCounts()
	ib.num("pubsub_channels", int64(nch))
	ib.num("pubsub_patterns", int64(npat))
	ib.num("pubsubshard_channels", int64(nshard))
	ib.num("total_forks", 0)
	ib.num("total_error_replies", s.totalErrors.Load())
	ib.num("total_reads_processed", cs.Reads)
	ib.num("total_writes_processed", cs.Writes)
	infoACL(c, ib)
}

func infoCPU(c *Client, ib *infoBuilder) {
	t := readCPUTimes()
	ib.fixed("used_cpu_sys", t.sys, 6)
	ib.fixed("used_cpu_user", t.user, 6)
	ib.fixed("used_cpu_sys_children", t.sysChildren, 6)
	ib.fixed("used_cpu_user_children", t.userChildren, 6)
}

// cpuTimes is the CPU time of the process and of its waited-for children,
// in seconds (INFO cpu; cpu_unix.go, cpu_windows.go).
type cpuTimes struct{ sys, user, sysChildren, userChildren float64 }

func infoCommandstats(c *Client, ib *infoBuilder) {
	for _, cmd := range sortedCommands() {
		calls, usec := cmd.calls.Load(), cmd.usec.Load()
		rejected, failed := cmd.rejected.Load(), cmd.failed.Load()
		if calls == 0 && rejected == 0 && failed == 0 {
			continue
		}
		perCall := 0.0
		if calls > 0 {
			perCall = float64(usec) / float64(calls)
		}
		ib.b = append(ib.b, "cmdstat_"...)
		ib.b = append(ib.b, cmd.Name...)
		ib.b = append(ib.b, ":calls="...)
		ib.b = strconv.AppendInt(ib.b, calls, 10)
		ib.b = append(ib.b, ",usec="...)
		ib.b = strconv.AppendInt(ib.b, usec, 10)
		ib.b = append(ib.b, ",usec_per_call="...)
		ib.b = strconv.AppendFloat(ib.b, perCall, 'f', 2, 64)
		ib.b = append(ib.b, ",rejected_calls="...)
		ib.b = strconv.AppendInt(ib.b, rejected, 10)
		ib.b = append(ib.b, ",failed_calls="...)
		ib.b = strconv.AppendInt(ib.b, failed, 10)
		ib.b = append(ib.b, '\r', '\n')
	}
}

func infoErrorstats(c *Client, ib *infoBuilder) {
	s := c.eng
	s.errMu.Lock()
	prefixes := make([]string, 0, len(s.errStats))
	counts := make(map[string]int64, len(s.errStats))
	for p, n := range s.errStats {
		prefixes = append(prefixes, p)
		counts[p] = n
	}
	s.errMu.Unlock()
	sort.Strings(prefixes)
	for _, p := range prefixes {
		ib.b = append(ib.b, "errorstat_"...)
		ib.b = append(ib.b, p...)
		ib.b = append(ib.b, ":count="...)
		ib.b = strconv.AppendInt(ib.b, counts[p], 10)
		ib.b = append(ib.b, '\r', '\n')
	}
}

func infoCluster(c *Client, ib *infoBuilder) {
	if c.eng.cluster {
		ib.num("cluster_enabled", 1)
	} else {
		ib.num("cluster_enabled", 0)
	}
}

// infoKeyspace reports db0 when it holds keys. INFO runs with every shard
// locked (FlagAllShards), so the counts are a consistent snapshot.
func infoKeyspace(c *Client, ib *infoBuilder) {
	st := c.eng.store
	keys := st.Len()
	if keys == 0 {
		return
	}
	ib.b = append(ib.b, "db0:keys="...)
	ib.b = strconv.AppendInt(ib.b, int64(keys), 10)
	ib.b = append(ib.b, ",expires="...)
	ib.b = strconv.AppendInt(ib.b, int64(st.Expires()), 10)
	ib.b = append(ib.b, ",avg_ttl="...)
	ib.b = strconv.AppendInt(ib.b, st.AvgTTL(), 10)
	ib.b = append(ib.b, '\r', '\n')
}

// ---- Instantaneous metrics ----

// Metrics sampled for INFO's instantaneous_* fields.
const (
	metricOps = iota
	metricNetIn
	metricNetOut
	numMetrics
)

const (
	metricSamples = 16                     // STATS_METRIC_SAMPLES
	sampleEvery   = 100 * time.Millisecond // Redis samples from its 10 Hz cron
)

// serverStats is the Engine's INFO bookkeeping: identifiers made once, the
// memory peak, and the instantaneous-rate sampler, which works as Redis's
// trackInstantaneousMetric: a rate sample every 100 ms, reported as the
// mean of the last 16. The zero value is ready to use; it is safe for
// concurrent use.
type serverStats struct {
	idOnce        sync.Once
	runID, replID string
	peak          atomic.Uint64

	mu      sync.Mutex
	last    [numMetrics]int64 // counter values at lastAt
	lastAt  int64             // Unix ns of the last sample, 0 before the first
	samples [numMetrics][metricSamples]float64
	next, n int // ring position and number of valid samples
}

// notePeak raises the recorded memory peak to used and returns the peak.
func (st *serverStats) notePeak(used uint64) uint64 {
	for {
		p := st.peak.Load()
		if used <= p {
			return p
		}
		if st.peak.CompareAndSwap(p, used) {
			return used
		}
	}
}

// record takes one sample of the counters at time now (Unix ns). A counter
// that went down (CONFIG RESETSTAT) counts as zero activity; a reading no
// later than the previous one is ignored, so its activity goes to the next.
func (st *serverStats) record(now int64, vals [numMetrics]int64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.lastAt != 0 {
		if now <= st.lastAt {
			return
		}
		dt := float64(now-st.lastAt) / 1e9
		for i, v := range vals {
			st.samples[i][st.next] = float64(max(v-st.last[i], 0)) / dt
		}
		st.next = (st.next + 1) % metricSamples
		st.n = min(st.n+1, metricSamples)
	}
	st.last, st.lastAt = vals, now
}

// rate returns the mean per-second rate of metric m over the samples held.
func (st *serverStats) rate(m int) float64 {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.n == 0 {
		return 0
	}
	sum := 0.0
	for i := 0; i < st.n; i++ {
		sum += st.samples[m][i]
	}
	return sum / float64(st.n)
}

// SampleStats samples the counters every 100 ms until the host shuts
// down. The host's Serve starts it.
func (s *Engine) SampleStats() {
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	for now := range t.C {
		if s.host.Closing() {
			return
		}
		cs := s.host.ConnStats()
		s.stats.record(now.UnixNano(), [numMetrics]int64{s.totalCommands.Load(), cs.NetIn, cs.NetOut})
	}
}
