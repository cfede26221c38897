package command

// Scripting: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT, as in Redis 7.0.
//
// A script is compiled once, cached by the SHA1 of its body, and run in an
// interpreter taken from a pool (lua.go). The commands it calls run through
// the same command table as a client's (Client.call, with their shards
// already held, as EXEC's queued commands), and their replies, written
// into the client's buffer, are read back into Lua values. What they
// change is journaled as their effects, framed as one transaction (MULTI
// … EXEC): the log never holds a script, so replaying it rebuilds the same
// state whatever the clock says then.
//
// Scripts on different shards run in parallel (script_locks.go): a script
// starts with the shards of its declared KEYS locked and takes the shard
// of any other key it touches as it goes, without ever waiting for a lower
// shard than one it holds. When it cannot take one, what it wrote is
// undone from the keys' prior images and it runs again with every shard
// locked; no other client can have seen the undone writes.
//
// A script running longer than busy-reply-threshold makes other clients'
// commands fail with BUSY instead of waiting for its locks (Client.call
// checks for running scripts with one atomic load), and SCRIPT KILL stops
// it unless it has written.

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/internal/redisnum"
	"github.com/ratekv/ratekv/shards"
	lua "github.com/yuin/gopher-lua"
)

func init() {
	const group = "scripting"
	register(
		&Command{Name: "eval", Arity: -3, Flags: FlagNoScript | FlagScript | FlagStale, Keys: evalKeys, KeyNum: evalKeyNum,
			Handler: func(c *Client, args [][]byte) { c.eval(args, false, false) },
			Summary: "Executes a server-side Lua script.", Group: group},
		&Command{Name: "evalsha", Arity: -3, Flags: FlagNoScript | FlagScript | FlagStale, Keys: evalKeys, KeyNum: evalKeyNum,
			Handler: func(c *Client, args [][]byte) { c.eval(args, true, false) },
			Summary: "Executes a server-side Lua script by SHA1 digest.", Group: group},
		&Command{Name: "eval_ro", Arity: -3, Flags: FlagNoScript | FlagScript | FlagStale | FlagReadOnly, Keys: evalKeys, KeyNum: evalKeyNum,
			Handler: func(c *Client, args [][]byte) { c.eval(args, false, true) },
			Summary: "Executes a read-only server-side Lua script.", Group: group},
		&Command{Name: "evalsha_ro", Arity: -3, Flags: FlagNoScript | FlagScript | FlagStale | FlagReadOnly, Keys: evalKeys, KeyNum: evalKeyNum,
			Handler: func(c *Client, args [][]byte) { c.eval(args, true, true) },
			Summary: "Executes a read-only server-side Lua script by SHA1 digest.", Group: group},
		&Command{Name: "script", Arity: -2, Handler: func(c *Client, args [][]byte) { runSubcommand(c, "script", args) },
			Summary: "A container for Lua scripts management commands.", Group: group},
	)
	registerSubcommands("script",
		&Command{Name: "script|load", Arity: 3, Flags: FlagNoScript | FlagStale, Handler: cmdScriptLoad,
			Summary: "Loads a server-side Lua script to the script cache.", Group: group},
		&Command{Name: "script|exists", Arity: -3, Flags: FlagNoScript, Handler: cmdScriptExists,
			Summary: "Determines whether server-side Lua scripts exist in the script cache.", Group: group},
		&Command{Name: "script|flush", Arity: -2, Flags: FlagNoScript, Handler: cmdScriptFlush,
			Summary: "Removes all server-side Lua scripts from the script cache.", Group: group},
		&Command{Name: "script|kill", Arity: 2, Flags: FlagNoScript | FlagAllowBusy, Handler: cmdScriptKill,
			Summary: "Terminates a server-side Lua script during execution.", Group: group},
		&Command{Name: "script|help", Arity: 2, Flags: FlagLoading | FlagStale, Handler: cmdScriptHelp,
			Summary: "Returns helpful text about the different subcommands.", Group: group},
	)
}

// evalKeyNum is evalKeys as COMMAND describes it: numkeys at 2, the keys
// after it.
var evalKeyNum = &KeyNum{Begin: 2, NumIdx: 0, First: 1, Step: 1}

// evalKeys locates EVAL's keys: numkeys keys after it; none when numkeys
// is not a valid count.
func evalKeys(args [][]byte, dst []int) []int {
	n, ok := redisnum.ParseInt(args[2])
	if !ok || n < 0 || n > int64(len(args)-3) {
		return dst
	}
	for i := 3; i < 3+int(n); i++ {
		dst = append(dst, i)
	}
	return dst
}

// Shebang flags (#!lua flags=...).
const (
	scriptNoWrites = 1 << iota
	scriptAllowOOM
	scriptAllowStale
	scriptNoCluster
	scriptAllowCrossSlot
)

var scriptFlagNames = map[string]int{
	"no-writes": scriptNoWrites, "allow-oom": scriptAllowOOM, "allow-stale": scriptAllowStale,
	"no-cluster": scriptNoCluster, "allow-cross-slot-keys": scriptAllowCrossSlot,
}

// script is a compiled script of the cache.
type script struct {
	sha     string
	proto   *lua.FunctionProto
	shebang bool // declared with #!lua: its flags apply (else Redis's compatibility mode)
	flags   int
}

// scripting is the engine's scripting state; Engine.watchScripting sets
// it up.
type scripting struct {
	mu         sync.RWMutex // guards cache and bytes
	cache      map[string]*script
	bytes      int64
	vms        chan *luaVM  // idle interpreters (see getVM)
	live       atomic.Int64 // interpreters in existence (INFO used_memory_lua)
	busyNs     atomic.Int64 // busy-reply-threshold in ns (0: never busy)
	native     atomic.Bool  // lua-native-scripts (script_native.go)
	nativeRuns atomic.Int64 // scripts run natively

	runMu  sync.Mutex   // guards runs
	runs   []*scriptRun // the scripts running now
	nrun   atomic.Int32 // len(runs), for the dispatcher's one load
	oldest atomic.Int64 // start of the oldest running script (store clock, ns)
	reruns atomic.Int64 // runs undone and run again with every shard locked
}

// luaVMBytes estimates the memory of one idle interpreter with its
// libraries (measured: see TestLuaVMSize); gopher-lua keeps no count.
const luaVMBytes = 150 << 10

// watchScripting sets up the scripting state and keeps the hot-path
// copies of busy-reply-threshold and lua-native-scripts current.
func (e *Engine) watchScripting() {
	e.scripts.vms = make(chan *luaVM, maxIdleVMs)
	e.watchNative()
	apply := func(string) { e.scripts.busyNs.Store(e.cfg.Int(config.BusyReplyThreshold) * int64(time.Millisecond)) }
	apply("")
	e.cfg.OnChange(config.BusyReplyThreshold, apply)
}

// lookupScript finds a cached script by its SHA1 (lower case).
func (e *Engine) lookupScript(sha string) *script {
	e.scripts.mu.RLock()
	defer e.scripts.mu.RUnlock()
	return e.scripts.cache[sha]
}

// lookupSHA is lookupScript of a client's SHA1 in any case, without
// allocating: a SHA1 is 40 characters, anything else is not cached.
func (e *Engine) lookupSHA(sha []byte) *script {
	if len(sha) != 40 {
		return nil
	}
	var lower [40]byte
	for i, b := range sha {
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		lower[i] = b
	}
	e.scripts.mu.RLock()
	defer e.scripts.mu.RUnlock()
	return e.scripts.cache[string(lower[:])]
}

// loadScript returns the cached script of body, compiling and caching it
// first when needed; msg is the error to reply when it does not compile.
func (e *Engine) loadScript(body []byte) (s *script, msg string) {
	sha := sha1hex(body)
	if s := e.lookupScript(sha); s != nil {
		return s, ""
	}
	s = &script{sha: sha}
	src := body
	if len(body) >= 2 && body[0] == '#' && body[1] == '!' {
		var msg string
		if s.flags, msg = parseShebang(body); msg != "" {
			return nil, msg
		}
		s.shebang = true
		// The shebang line is compiled as an empty line, so that line
		// numbers are the body's.
		nl := strings.IndexByte(string(body), '\n')
		src = body[nl:]
	}
	proto, cerr := compileScript(src)
	if cerr != "" {
		return nil, errScriptCompile + cerr
	}
	s.proto = proto
	e.scripts.mu.Lock()
	defer e.scripts.mu.Unlock()
	if old := e.scripts.cache[sha]; old != nil {
		return old, ""
	}
	if e.scripts.cache == nil {
		e.scripts.cache = map[string]*script{}
	}
	e.scripts.cache[sha] = s
	e.scripts.bytes += int64(len(body))
	return s, ""
}

// parseShebang reads the flags of a script's "#!lua flags=..." line.
func parseShebang(body []byte) (flags int, msg string) {
	nl := strings.IndexByte(string(body), '\n')
	if nl < 0 {
		return 0, errShebangInvalid
	}
	parts := strings.Fields(string(body[:nl]))
	if len(parts) == 0 {
		return 0, errShebangInvalid
	}
	if parts[0] != "#!lua" {
		return 0, errShebangEngine + parts[0]
	}
	for _, p := range parts[1:] {
		list, ok := strings.CutPrefix(p, "flags=")
		if !ok {
			return 0, errShebangOption + p
		}
		if list == "" {
			continue
		}
		for _, f := range strings.Split(list, ",") {
			bit, known := scriptFlagNames[f]
			if !known {
				return 0, errShebangFlag + f
			}
			flags |= bit
		}
	}
	return flags, ""
}

// scriptRun is one run of a script: what redis.call needs, and what other
// clients see of it (BUSY, SCRIPT KILL).
type scriptRun struct {
	c        *Client
	vm       *luaVM
	sha      string
	readOnly bool  // EVAL_RO, or a no-writes script: write commands are refused
	start    int64 // store clock when it started (Unix ns)
	proto    int   // redis.setresp's protocol
	// In cluster mode, the slot the script's keys are in (-1: none yet),
	// unless anySlot (no shebang, or allow-cross-slot-keys): see
	// checkSlots.
	slot    int
	anySlot bool

	mu     sync.Mutex // guards wrote, done and the kill
	wrote  bool       // it ran a write command: SCRIPT KILL refuses
	done   bool
	killed atomic.Bool

	// aborted: it needed a shard it could not take in lock order; it is
	// undone (saved) and run again with every shard locked.
	aborted bool
	saved   []savedKey // prior images of the keys it wrote, for the undo
	need    []int      // shards a command needs (reused)
}

// setProto switches the protocol the script's commands reply in.
func (r *scriptRun) setProto(p int) {
	r.proto = p
	r.c.mu.Lock()
	r.c.proto = p
	r.c.mu.Unlock()
}

// kill stops the run (SCRIPT KILL); msg is the error when it cannot be.
func (r *scriptRun) kill() (msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.done:
		return errNotBusy
	case r.wrote:
		return errUnkillable
	}
	r.killed.Store(true)
	r.vm.cancel()
	return ""
}

// call runs a command for redis.call, as Redis's scriptCall: msg is the
// error when the command may not run; otherwise its reply is at the end
// of the client's buffer, from mark on.
func (r *scriptRun) call(args [][]byte) (mark int, msg string) {
	c := r.c
	cmd := lookupCommand(args[0])
	if cmd == nil {
		return 0, errScriptUnknownCmd
	}
	target := cmd
	if cmd.subs != nil && len(args) > 1 {
		if target = lookupIn(cmd.subs, args[1]); target == nil {
			return 0, errScriptUnknownCmd
		}
	}
	if !target.arityOK(len(args)) {
		return 0, errScriptWrongArgs
	}
	if target.Flags&FlagNoScript != 0 {
		return 0, errScriptNotAllowed
	}
	if msg := c.scriptACLRefused(target, args); msg != "" {
		return 0, msg
	}
	write := target.Flags&FlagWrite != 0
	if write {
		if r.readOnly {
			return 0, errScriptWriteRO
		}
		if msg := c.diskError(); msg != "" {
			return 0, "-" + msg
		}
		if g := c.eng.repl.gate.Load(); g != 0 && !c.replaying {
			if msg := c.gateRefusal(target, args, g&^gateStale); msg != "" {
				return 0, "-" + msg
			}
		}
	}
	if c.eng.cluster {
		if msg := r.checkSlots(target, args); msg != "" {
			return 0, msg
		}
	}
	if !c.heldAll && !r.lockKeys(target, args) {
		return 0, "-" + errScriptKilled // the run is aborted: this error is never seen
	}
	if write {
		r.mu.Lock()
		if r.killed.Load() {
			r.mu.Unlock()
			return 0, "-" + errScriptKilled
		}
		r.wrote = true
		r.mu.Unlock()
		if !c.heldAll {
			r.saveImages(target, args)
		}
	}
	mark = len(c.Out)
	c.inScript = true
	c.call(target, args)
	c.inScript = false
	if c.CloseAfter { // the command's handler panicked
		c.Out = c.Out[:mark]
		return 0, sprintf(errPanic, target.Name)
	}
	return mark, ""
}

// checkSlots applies Redis Cluster's rules to a command a script calls
// (scriptVerifyClusterState in Redis's script.c): its own keys must share
// a slot, and, for a script with a shebang and without
// allow-cross-slot-keys, the slot of the keys it declared or first
// touched.
func (r *scriptRun) checkSlots(cmd *Command, args [][]byte) string {
	c := r.c
	c.keyBuf = cmd.keyIndexes(args, c.keyBuf[:0])
	slot := keysCrossSlot(args, c.keyBuf, -1)
	switch {
	case slot == -2:
		return errScriptNonLocalKey
	case slot < 0 || r.anySlot:
	case r.slot < 0:
		r.slot = slot
	case r.slot != slot:
		return errScriptCrossSlot
	}
	if t := c.eng.slots.Load(); t != nil && slot >= 0 && !c.replaying && !c.servesSlot(t, cmd, slot) {
		return errScriptNonLocalKey
	}
	return ""
}

// EVAL script numkeys [key ...] [arg ...], and EVALSHA sha1 numkeys ...;
// ro: EVAL_RO and EVALSHA_RO.
func (c *Client) eval(args [][]byte, bySHA, ro bool) {
	eng := c.eng
	if bySHA && len(args[1]) != 40 {
		c.WriteError(errNoScript)
		return
	}
	numkeys, ok := redisnum.ParseInt(args[2])
	switch {
	case !ok:
		c.WriteError(errNotInt)
		return
	case numkeys > int64(len(args)-3):
		c.WriteError(errEvalTooManyKeys)
		return
	case numkeys < 0:
		c.WriteError(errEvalNegativeKeys)
		return
	}
	var s *script
	if bySHA {
		if s = eng.lookupSHA(args[1]); s == nil {
			c.WriteError(errNoScript)
			return
		}
	} else {
		var msg string
		if s, msg = eng.loadScript(args[1]); msg != "" {
			c.WriteError(msg)
			return
		}
	}
	if s.shebang && s.flags&scriptNoCluster != 0 && eng.cluster {
		c.WriteError(errScriptNoCluster)
		return
	}
	if s.shebang && s.flags&scriptNoWrites == 0 {
		if msg := c.diskError(); msg != "" {
			if msg == errBgsaveDisk {
				c.WriteError(errScriptBgsaveDisk)
			} else {
				c.WriteError(errScriptAOFDisk + strings.TrimPrefix(msg, strings.TrimSuffix(errReadOnlyDisk, "%s")))
			}
			return
		}
		if ro {
			c.WriteError(errScriptROWithWrites)
			return
		}
	}
	k := 3 + int(numkeys)
	readOnly := ro || s.shebang && s.flags&scriptNoWrites != 0
	if !c.runNative(s, args[3:k], args[k:], readOnly) {
		c.runScript(s, args[3:k], args[k:], readOnly)
	}
}

// runScript runs s with its KEYS and ARGV, with the shards of its KEYS
// held, and writes its reply.
func (c *Client) runScript(s *script, keys, argv [][]byte, readOnly bool) {
	eng := c.eng
	vm := eng.getVM()
	L := vm.L
	// The commands the script calls run as EXEC's do: shards held, records
	// collected into one transaction, replies in the script's protocol.
	wasInExec, req, callerProto := c.inExec, c.req, c.proto
	c.inExec, c.req = true, nil
	mark := len(c.Out)
	start := eng.store.Now()
	var r *scriptRun
	var err error
	for {
		r = &scriptRun{c: c, vm: vm, sha: s.sha, readOnly: readOnly, start: start, proto: 2, slot: -1,
			anySlot: !s.shebang || s.flags&scriptAllowCrossSlot != 0}
		if len(keys) > 0 && eng.cluster {
			r.slot = int(shards.KeySlot(keys[0]))
		}
		vm.run = r
		vm.globals.RawSetString("KEYS", luaArray(L, keys))
		vm.globals.RawSetString("ARGV", luaArray(L, argv))
		fn := L.NewFunctionFromProto(s.proto)
		fn.Env = vm.env
		r.setProto(2)
		eng.addRun(r)
		L.Push(fn)
		err = L.PCall(0, 1, vm.errFn)
		r.mu.Lock()
		r.done = true
		r.mu.Unlock()
		eng.removeRun(r)
		if !r.aborted || c.CloseAfter {
			break
		}
		// Undo, and run again holding every shard: it cannot be aborted
		// then. (Inside EXEC every shard is held already.)
		r.undo()
		c.Out = c.Out[:mark]
		c.tx.recs, c.tx.nrecs = c.tx.recs[:0], 0
		eng.scripts.reruns.Add(1)
		c.relockAll()
		vm.renewContext()
		L.SetTop(0)
	}
	c.inExec, c.req = wasInExec, req
	c.mu.Lock()
	c.proto = callerProto
	c.mu.Unlock()
	if !wasInExec {
		c.endTxRecords()
	}
	if c.CloseAfter { // a command's handler panicked: its error is the reply
		vm.broken = true
	} else if err != nil {
		vm.broken = true // the error may have come from a Go panic: build a fresh one next time
		c.writeRunError(s.sha, err)
	} else {
		writeLuaReply(c, L.Get(-1), r.proto, 0)
	}
	if vm.broken {
		L.Close()
		eng.scripts.live.Add(-1)
		return
	}
	vm.reset()
	eng.putVM(vm)
}

// maxIdleVMs bounds the interpreters kept idle: as many as scripts can run
// at once, with room to spare.
const maxIdleVMs = 64

// getVM takes an idle interpreter, or builds one. The idle ones are kept
// in a bounded free list rather than a sync.Pool: a pool is emptied by
// every garbage collection, and building an interpreter (its libraries,
// its sandbox) costs far more than running a rate limiter's script.
func (e *Engine) getVM() *luaVM {
	select {
	case vm := <-e.scripts.vms:
		return vm
	default:
	}
	e.scripts.live.Add(1)
	return newLuaVM()
}

// putVM returns an interpreter reset for the next run.
func (e *Engine) putVM(vm *luaVM) {
	select {
	case e.scripts.vms <- vm:
	default:
		vm.L.Close()
		e.scripts.live.Add(-1)
	}
}

// writeRunError writes the error reply of a failed run, as Redis's
// luaCallFunction: the error's text, then where the script was.
func (c *Client) writeRunError(sha string, err error) {
	var obj lua.LValue = lua.LString(err.Error())
	if ae, ok := err.(*lua.ApiError); ok {
		obj = ae.Object
	}
	t, ok := obj.(*lua.LTable)
	if !ok {
		c.WriteError(sprintf(errScriptRunning, sha, luaToString(obj)))
		return
	}
	msg, _ := luaBytes(t.RawGetString("err"))
	src, srcOK := luaBytes(t.RawGetString("source"))
	line, lineOK := luaBytes(t.RawGetString("line"))
	out := string(msg)
	if srcOK && lineOK {
		out += " script: " + sha + ", on " + string(src) + ":" + string(line) + "."
	}
	c.writeScriptError(out)
}

// writeScriptError writes an error reply whose text a script chose
// (error_reply, {err=...}): CR and LF become spaces, as Redis's
// addReplyErrorLength ensures.
func (c *Client) writeScriptError(msg string) {
	msg = strings.TrimPrefix(msg, "-")
	if strings.ContainsAny(msg, "\r\n") {
		msg = strings.NewReplacer("\r", " ", "\n", " ").Replace(msg)
	}
	c.WriteError(msg)
}

// luaArray makes a Lua array of strings (KEYS, ARGV).
func luaArray(L *lua.LState, items [][]byte) *lua.LTable {
	t := L.CreateTable(len(items), 0)
	for i, b := range items {
		t.RawSetInt(i+1, lua.LString(b))
	}
	return t
}

// SCRIPT LOAD script
func cmdScriptLoad(c *Client, args [][]byte) {
	s, msg := c.eng.loadScript(args[2])
	if msg != "" {
		c.WriteError(msg)
		return
	}
	c.WriteBulkString(s.sha)
}

// SCRIPT EXISTS sha1 [sha1 ...]
func cmdScriptExists(c *Client, args [][]byte) {
	c.WriteArray(len(args) - 2)
	for _, sha := range args[2:] {
		if c.eng.lookupSHA(sha) != nil {
			c.WriteInt(1)
		} else {
			c.WriteInt(0)
		}
	}
}

// SCRIPT FLUSH [ASYNC|SYNC]
func cmdScriptFlush(c *Client, args [][]byte) {
	if len(args) > 3 || len(args) == 3 && !strings.EqualFold(string(args[2]), "sync") && !strings.EqualFold(string(args[2]), "async") {
		c.WriteError(errScriptFlushOption)
		return
	}
	sc := &c.eng.scripts
	sc.mu.Lock()
	sc.cache, sc.bytes = nil, 0
	sc.mu.Unlock()
	c.WriteOK()
}

// SCRIPT KILL kills every running script that has not written; with
// scripts running in parallel there may be several.
func cmdScriptKill(c *Client, args [][]byte) {
	sc := &c.eng.scripts
	sc.runMu.Lock()
	runs := append([]*scriptRun(nil), sc.runs...)
	sc.runMu.Unlock()
	msg, killed := errNotBusy, 0
	for _, r := range runs {
		switch m := r.kill(); m {
		case "":
			killed++
		case errUnkillable:
			msg = m
		}
	}
	if killed == 0 {
		c.WriteError(msg)
		return
	}
	c.eng.log.Warn("Lua script killed by user with SCRIPT KILL.", "scripts", killed)
	c.WriteOK()
}

// SCRIPT HELP
func cmdScriptHelp(c *Client, args [][]byte) {
	lines := []string{
		"SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"DEBUG (YES|SYNC|NO)",
		"    Set the debug mode for subsequent scripts executed.",
		"EXISTS <sha1> [<sha1> ...]",
		"    Return information about the existence of the scripts in the script cache.",
		"FLUSH [ASYNC|SYNC]",
		"    Flush the Lua scripts cache. Very dangerous on replicas.",
		"    When called without the optional mode argument, the behavior is determined by the",
		"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
		"    * ASYNC: Asynchronously flush the scripts cache.",
		"    * SYNC: Synchronously flush the scripts cache.",
		"KILL",
		"    Kill the currently executing Lua script.",
		"LOAD <script>",
		"    Load a script into the scripts cache without executing it.",
		"HELP",
		"    Prints this help.",
	}
	c.WriteArray(len(lines))
	for _, l := range lines {
		c.WriteSimple(l)
	}
}

// scriptLog writes a script's redis.log line at level (0 debug … 3
// warning) to the server log.
func (e *Engine) scriptLog(level int, msg string) {
	switch level {
	case 0:
		e.log.Debug(msg, "source", "script")
	case 1:
		e.log.Debug(msg, "source", "script", "verbose", true)
	case 2:
		e.log.Info(msg, "source", "script")
	default:
		e.log.Warn(msg, "source", "script")
	}
}

// scriptMemory returns what INFO's Memory section reports of scripting:
// the interpreters' estimated memory, and the cached scripts' count and
// bytes.
func (e *Engine) scriptMemory() (vmBytes, scripts, scriptBytes int64) {
	e.scripts.mu.RLock()
	scripts, scriptBytes = int64(len(e.scripts.cache)), e.scripts.bytes
	e.scripts.mu.RUnlock()
	return e.scripts.live.Load() * luaVMBytes, scripts, scriptBytes
}
