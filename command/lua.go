package command

// The Lua interpreter scripts run in: gopher-lua (a Lua 5.1 VM in Go) with
// the libraries and the sandbox of Redis 7.0, the redis.* API, and the
// conversions between Lua values and replies.
//
// Sandbox. Scripts see as their globals an empty table (env) whose reads go
// through to the real globals (libraries, redis, KEYS, ARGV) and whose
// writes fail with Redis's "Attempt to modify a readonly table"; reading a
// global that does not exist fails as in Redis. Library tables are reached
// through the same kind of read-only view. Redis makes the tables
// themselves read-only (its Lua is patched); gopher-lua cannot, so rawset
// on a view succeeds for the rest of the run, and the views are emptied
// after every run: nothing one script does is seen by the next, which is
// what makes pooling interpreters safe. The base library lacks what Redis
// 7.0 removes (print, dofile, loadfile, getfenv, setfenv, newproxy, module,
// require); os, io and debug are not loaded.

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ratekv/ratekv/internal/lualib"
	"github.com/ratekv/ratekv/resp"
	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// luaSource is every script's chunk name: errors read "user_script:1: …"
// and the error reply's location "@user_script:1", as in Redis.
const luaSource = "user_script"

// Limits of one interpreter: Lua calls nested deeper than luaCallDepth, or
// a value stack past luaStackMax slots, fail with an error instead of
// growing the server without bound. string.rep's result is bounded as a
// bulk string is (proto-max-bulk-len's default).
const (
	luaCallDepth  = 200
	luaStackStart = 1024
	luaStackMax   = 1 << 20
	luaMaxString  = 512 << 20
	luaReplyDepth = 1000 // nesting of a script's reply (a table holding itself)
)

// luaVM is one interpreter with Redis's libraries and sandbox loaded. It
// runs one script at a time; the engine pools them (Engine.vms).
type luaVM struct {
	L       *lua.LState
	globals *lua.LTable   // the real globals
	env     *lua.LTable   // the globals as scripts see them
	views   []*lua.LTable // env and the library views, emptied after each run
	errFn   *lua.LFunction
	ctx     context.Context
	cancel  context.CancelFunc // stops the running script (SCRIPT KILL)
	run     *scriptRun         // the run in progress; nil between runs
	args    [][]byte           // redis.call's arguments (reused)
	argBuf  []byte
	offs    []int
	broken  bool // a Go panic went through it: not reused
}

// newLuaVM builds an interpreter.
func newLuaVM() *luaVM {
	L := lua.NewState(lua.Options{
		SkipOpenLibs:    true,
		CallStackSize:   luaCallDepth,
		RegistrySize:    luaStackStart,
		RegistryMaxSize: luaStackMax,
	})
	vm := &luaVM{L: L}
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{"", lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath}, {lua.CoroutineLibName, lua.OpenCoroutine}} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	g := L.Get(lua.GlobalsIndex).(*lua.LTable)
	vm.globals = g
	for _, name := range []string{"print", "dofile", "loadfile", "getfenv", "setfenv", "newproxy",
		"module", "require", "_printregs", "_GOPHER_LUA_VERSION", "package"} {
		g.RawSetString(name, lua.LNil)
	}
	g.RawSetString("cjson", lualib.OpenCJSON(L))
	g.RawSetString("bit", lualib.OpenBit(L))
	g.RawSetString("struct", lualib.OpenStruct(L))
	g.RawSetString("cmsgpack", lualib.OpenCMsgpack(L))
	g.RawSetString("redis", vm.redisLib())

	// Base functions that differ from gopher-lua's.
	origToString := g.RawGetString("tostring")
	g.RawSetString("tostring", L.NewFunction(func(L *lua.LState) int {
		if n, ok := L.CheckAny(1).(lua.LNumber); ok {
			L.Push(lua.LString(lualib.FormatNumber(float64(n))))
			return 1
		}
		L.Push(origToString)
		L.Push(L.Get(1))
		L.Call(1, 1)
		return 1
	}))
	g.RawSetString("error", L.NewFunction(luaErrorFn))
	origToNumber := g.RawGetString("tonumber")
	g.RawSetString("tonumber", L.NewFunction(func(L *lua.LState) int { return luaToNumber(L, origToNumber) }))
	origPcall := g.RawGetString("pcall")
	g.RawSetString("pcall", L.NewFunction(func(L *lua.LState) int { return luaPcall(L, origPcall) }))
	noGC := func(L *lua.LState) int { L.Push(lua.LNumber(0)); return 1 }
	g.RawSetString("collectgarbage", L.NewFunction(noGC)) // a script must not stop the whole server for a GC
	g.RawSetString("gcinfo", L.NewFunction(noGC))
	str := g.RawGetString("string").(*lua.LTable)
	str.RawSetString("rep", L.NewFunction(luaStringRep))

	// The sandbox: read-only views of the globals and of every library.
	readonly := L.NewFunction(func(L *lua.LState) int {
		L.RaiseError(errLuaReadonly)
		return 0
	})
	view := func(t *lua.LTable) *lua.LTable {
		v := L.NewTable()
		mt := L.NewTable()
		mt.RawSetString("__index", t)
		mt.RawSetString("__newindex", readonly)
		mt.RawSetString("__metatable", lua.LFalse)
		L.SetMetatable(v, mt)
		vm.views = append(vm.views, v)
		return v
	}
	var libs []string
	g.ForEach(func(k, v lua.LValue) {
		if _, ok := v.(*lua.LTable); ok && k.String() != "_G" {
			libs = append(libs, k.String())
		}
	})
	for _, name := range libs {
		g.RawSetString(name, view(g.RawGetString(name).(*lua.LTable)))
	}
	vm.env = view(g)
	g.RawSetString("_G", vm.env)
	missing := L.NewTable()
	missing.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError(errLuaNoGlobal, L.ToString(2))
		return 0
	}))
	L.SetMetatable(g, missing)
	// The string metatable is not handed out (getmetatable("") is false):
	// through it a script could change the string library.
	if mt, ok := L.GetMetatable(lua.LString("")).(*lua.LTable); ok {
		mt.RawSetString("__metatable", lua.LFalse)
	}
	L.Env = vm.env // chunks that loadstring compiles see the sandbox too
	L.G.Global = vm.env
	vm.errFn = L.NewFunction(vm.errHandler)
	vm.ctx, vm.cancel = context.WithCancel(context.Background())
	L.SetContext(vm.ctx)
	return vm
}

// reset readies vm for the next run: whatever a script stored in a view
// (with rawset) goes, and a killed run's context is replaced.
func (vm *luaVM) reset() {
	for _, v := range vm.views {
		if k, _ := v.Next(lua.LNil); k != lua.LNil {
			var keys []lua.LValue
			v.ForEach(func(k, _ lua.LValue) { keys = append(keys, k) })
			for _, k := range keys {
				v.RawSet(k, lua.LNil)
			}
		}
	}
	vm.globals.RawSetString("KEYS", lua.LNil)
	vm.globals.RawSetString("ARGV", lua.LNil)
	vm.renewContext()
	vm.L.SetTop(0)
	vm.run = nil
}

// renewContext replaces a cancelled context (a killed or aborted run's).
func (vm *luaVM) renewContext() {
	if vm.ctx.Err() != nil {
		vm.ctx, vm.cancel = context.WithCancel(context.Background())
		vm.L.SetContext(vm.ctx)
	}
}

// luaPcall is Redis's pcall: an error raised as a table with an err field
// (redis.call's) is returned as its message, as before Redis 7.
func luaPcall(L *lua.LState, orig lua.LValue) int {
	n := L.GetTop()
	L.Push(orig)
	L.Insert(orig, 1)
	L.Remove(L.GetTop())
	L.Call(n, lua.MultRet)
	if L.GetTop() >= 2 && L.Get(1) == lua.LFalse {
		if t, ok := L.Get(2).(*lua.LTable); ok {
			if msg := t.RawGetString("err"); msg.Type() == lua.LTString || msg.Type() == lua.LTNumber {
				L.Replace(2, msg)
			}
		}
	}
	return L.GetTop()
}

// luaErrorFn is Lua's error(message [, level]): a string or number
// message gets the position of the function at level (1: error's caller)
// when that is a Lua function, as luaL_where does.
func luaErrorFn(L *lua.LState) int {
	v := L.Get(1)
	level := L.OptInt(2, 1)
	if s, ok := luaBytes(v); ok {
		msg := string(s)
		if level > 0 {
			if dbg, ok := L.GetStack(level); ok {
				if _, err := L.GetInfo("Sl", dbg, lua.LNil); err == nil && dbg.What != "G" && dbg.CurrentLine > 0 {
					msg = dbg.Source + ":" + strconv.Itoa(dbg.CurrentLine) + ": " + msg
				}
			}
		}
		L.Error(lua.LString(msg), 0)
	}
	L.Error(v, 0)
	return 0
}

// luaToNumber is Lua 5.1's tonumber: in base 10 it reads what strtod
// does (surrounding spaces, hexadecimal "0x10", exponents, inf and nan).
func luaToNumber(L *lua.LState, orig lua.LValue) int {
	if L.GetTop() >= 2 && L.Get(2) != lua.LNil {
		if b, ok := L.Get(2).(lua.LNumber); !ok || b != 10 {
			L.Push(orig)
			L.Insert(orig, 1)
			L.Remove(L.GetTop())
			L.Call(L.GetTop()-1, 1)
			return 1
		}
	}
	switch v := L.CheckAny(1).(type) {
	case lua.LNumber:
		L.Push(v)
	case lua.LString:
		s := strings.TrimSpace(string(v))
		if h, ok := strings.CutPrefix(strings.ToLower(s), "0x"); ok && h != "" {
			if n, err := strconv.ParseUint(h, 16, 64); err == nil {
				L.Push(lua.LNumber(n))
				return 1
			}
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil || strings.Contains(fmt.Sprint(err), "range") {
			L.Push(lua.LNumber(f))
		} else {
			L.Push(lua.LNil)
		}
	default:
		L.Push(lua.LNil)
	}
	return 1
}

func luaStringRep(L *lua.LState) int {
	s := L.CheckString(1)
	n := L.CheckInt(2)
	if n <= 0 || s == "" {
		L.Push(lua.LString(""))
		return 1
	}
	if len(s) > luaMaxString/n {
		L.RaiseError("resulting string too large")
	}
	L.Push(lua.LString(strings.Repeat(s, n)))
	return 1
}

// errHandler is the message handler of a script's call, Redis's
// __redis__err__handler: it turns the error into a table with err (an
// error reply's text), source and line (where the script was when it
// failed: the caller of a Go function such as redis.call).
func (vm *luaVM) errHandler(L *lua.LState) int {
	var t *lua.LTable
	switch e := L.Get(1).(type) {
	case *lua.LTable:
		t = e
	default:
		t = L.NewTable()
		t.RawSetString("err", lua.LString("ERR "+luaToString(e)))
	}
	if vm.run != nil && vm.run.killed.Load() {
		t = L.NewTable()
		t.RawSetString("err", lua.LString(errScriptKilled))
	}
	if dbg, ok := L.GetStack(1); ok {
		_, err := L.GetInfo("Sl", dbg, lua.LNil)
		if err == nil && dbg.What == "G" {
			if dbg, ok = L.GetStack(2); ok {
				_, err = L.GetInfo("Sl", dbg, lua.LNil)
			}
		}
		if ok && err == nil {
			src := dbg.Source
			if src == luaSource {
				src = "@" + src
			}
			t.RawSetString("source", lua.LString(src))
			t.RawSetString("line", lua.LNumber(dbg.CurrentLine))
		}
	}
	L.Push(t)
	return 1
}

// luaToString is tostring for an error value.
func luaToString(v lua.LValue) string {
	if n, ok := v.(lua.LNumber); ok {
		return lualib.FormatNumber(float64(n))
	}
	return v.String()
}

// compileScript compiles a script's body as Redis 7.0 does, as a chunk
// named user_script, and returns it, or the text of the compile error
// ("user_script:1: …"). gopher-lua's parser reports fewer kinds of
// syntax error than Lua's: every one reads "unexpected symbol near …".
func compileScript(body []byte) (*lua.FunctionProto, string) {
	chunk, err := parse.Parse(strings.NewReader(string(body)), luaSource)
	if err != nil {
		if pe, ok := err.(*parse.Error); ok {
			tok := pe.Token
			if tok == "" || tok == "EOF" || pe.Pos.Line <= 0 || atEOF(body, pe.Pos.Line, pe.Pos.Column, tok) {
				tok = "<eof>"
			}
			msg := pe.Message
			if msg == "syntax error" || strings.HasPrefix(msg, "syntax error") {
				msg = "unexpected symbol"
			}
			line := pe.Pos.Line
			if line <= 0 {
				line = strings.Count(string(body), "\n") + 1
			}
			return nil, fmt.Sprintf("%s:%d: %s near '%s'", luaSource, line, msg, tok) // Lua's luaX_syntaxerror
		}
		return nil, fmt.Sprintf("%s: %v", luaSource, err)
	}
	proto, err := lua.Compile(chunk, luaSource)
	if err != nil {
		msg := err.Error()
		if ce, ok := err.(*lua.CompileError); ok {
			msg = fmt.Sprintf("%s:%d: %s", luaSource, ce.Line, ce.Message)
		}
		return nil, msg
	}
	return proto, ""
}

// atEOF reports whether only spaces follow the token tok at line and
// column (1-based) of src: gopher-lua's parser names the last token it
// read when the error is at the end of the source, Lua's names <eof>.
func atEOF(src []byte, line, col int, tok string) bool {
	lines := strings.Split(string(src), "\n")
	if line < 1 || line > len(lines) {
		return false
	}
	rest := lines[line-1]
	if col < 1 || col-1+len(tok) > len(rest) || rest[col-1:col-1+len(tok)] != tok {
		return false
	}
	tail := rest[col-1+len(tok):] + strings.Join(lines[line:], "\n")
	return strings.TrimSpace(tail) == ""
}

// sha1hex is the SHA1 of b in lower-case hex, Redis's script name.
func sha1hex(b []byte) string {
	sum := sha1.Sum(b)
	return hex.EncodeToString(sum[:])
}

// redisLib builds the redis table.
func (vm *luaVM) redisLib() *lua.LTable {
	L := vm.L
	t := L.NewTable()
	fn := map[string]lua.LGFunction{
		"call":               func(L *lua.LState) int { return vm.redisCall(L, true) },
		"pcall":              func(L *lua.LState) int { return vm.redisCall(L, false) },
		"sha1hex":            luaSha1hex,
		"error_reply":        luaErrorReply,
		"status_reply":       luaStatusReply,
		"log":                vm.redisLog,
		"setresp":            vm.setResp,
		"set_repl":           vm.setRepl,
		"replicate_commands": func(L *lua.LState) int { L.Push(lua.LTrue); return 1 },
		"breakpoint":         func(L *lua.LState) int { L.Push(lua.LFalse); return 1 },
		"debug":              func(L *lua.LState) int { return 0 },
	}
	L.SetFuncs(t, fn)
	for name, v := range map[string]int{
		"LOG_DEBUG": 0, "LOG_VERBOSE": 1, "LOG_NOTICE": 2, "LOG_WARNING": 3,
		"REPL_NONE": 0, "REPL_AOF": 1, "REPL_SLAVE": 2, "REPL_REPLICA": 2, "REPL_ALL": 3,
	} {
		t.RawSetString(name, lua.LNumber(v))
	}
	t.RawSetString("REDIS_VERSION", lua.LString(RedisVersion))
	t.RawSetString("REDIS_VERSION_NUM", lua.LNumber(redisVersionNum()))
	return t
}

// redisVersionNum is RedisVersion as 0x00MMmmpp.
func redisVersionNum() int {
	var n int
	for _, p := range strings.SplitN(RedisVersion, ".", 3) {
		v, _ := strconv.Atoi(p)
		n = n<<8 | v
	}
	return n
}

// luaError raises a Redis error table: msg is an error reply's text,
// either "CODE message" given with a leading '-', or a message that gets
// the ERR code (luaPushErrorBuff).
func luaError(L *lua.LState, msg string, raise bool) int {
	L.Push(luaErrorTable(L, msg))
	if raise {
		L.Error(L.Get(-1), 0)
	}
	return 1
}

func luaErrorTable(L *lua.LState, msg string) *lua.LTable {
	code, text := "ERR", msg
	if strings.HasPrefix(msg, "-") {
		if i := strings.IndexByte(msg, ' '); i > 0 {
			code, text = msg[1:i], msg[i+1:]
		} else {
			text = msg[1:]
		}
	}
	t := L.NewTable()
	t.RawSetString("err", lua.LString(code+" "+strings.Trim(text, "\r\n")))
	return t
}

func luaSha1hex(L *lua.LState) int {
	if L.GetTop() != 1 {
		return luaError(L, errLuaWrongArgs, true)
	}
	s, _ := luaBytes(L.Get(1))
	L.Push(lua.LString(sha1hex(s)))
	return 1
}

func luaErrorReply(L *lua.LState) int {
	if L.GetTop() != 1 || L.Get(1).Type() != lua.LTString {
		return luaError(L, errLuaWrongArgsType, false)
	}
	msg := L.ToString(1)
	if !strings.HasPrefix(msg, "-") {
		msg = "-" + msg
	}
	return luaError(L, msg, false)
}

func luaStatusReply(L *lua.LState) int {
	if L.GetTop() != 1 || L.Get(1).Type() != lua.LTString {
		return luaError(L, errLuaWrongArgsType, false)
	}
	t := L.NewTable()
	t.RawSetString("ok", L.Get(1))
	L.Push(t)
	return 1
}

func (vm *luaVM) redisLog(L *lua.LState) int {
	n := L.GetTop()
	if n < 2 {
		return luaError(L, errLuaLogArgs, true)
	}
	lv, ok := L.Get(1).(lua.LNumber)
	if !ok {
		if s, isStr := L.Get(1).(lua.LString); isStr {
			f, err := strconv.ParseFloat(strings.TrimSpace(string(s)), 64)
			lv, ok = lua.LNumber(f), err == nil
		}
	}
	if !ok {
		return luaError(L, errLuaLogLevelType, true)
	}
	level := int(lv)
	if level < 0 || level > 3 {
		return luaError(L, errLuaLogLevel, true)
	}
	var b strings.Builder
	for i := 2; i <= n; i++ {
		if s, ok := luaBytes(L.Get(i)); ok {
			if i > 2 {
				b.WriteByte(' ')
			}
			b.Write(s)
		}
	}
	if r := vm.run; r != nil {
		r.c.eng.scriptLog(level, b.String())
	}
	return 0
}

func (vm *luaVM) setResp(L *lua.LState) int {
	if L.GetTop() != 1 {
		return luaError(L, errLuaSetrespArgs, true)
	}
	n, _ := luaNumber(L.Get(1))
	if n != 2 && n != 3 {
		return luaError(L, errLuaSetrespProto, true)
	}
	if r := vm.run; r != nil {
		r.setProto(int(n))
	}
	return 0
}

func (vm *luaVM) setRepl(L *lua.LState) int {
	if L.GetTop() != 1 {
		return luaError(L, errLuaSetReplArgs, true)
	}
	n, _ := luaNumber(L.Get(1))
	if int(n)&^3 != 0 {
		return luaError(L, errLuaSetReplFlags, true)
	}
	return 0 // effects are always journaled: the flags are accepted and have no effect
}

// luaNumber is lua_tonumber: a number, or a string that reads as one.
func luaNumber(v lua.LValue) (float64, bool) {
	switch v := v.(type) {
	case lua.LNumber:
		return float64(v), true
	case lua.LString:
		f, err := strconv.ParseFloat(strings.TrimSpace(string(v)), 64)
		return f, err == nil
	}
	return 0, false
}

// luaBytes is lua_tolstring: a string, or a number formatted as Lua does.
func luaBytes(v lua.LValue) ([]byte, bool) {
	switch v := v.(type) {
	case lua.LString:
		return []byte(v), true
	case lua.LNumber:
		return []byte(lualib.FormatNumber(float64(v))), true
	}
	return nil, false
}

// redisCall is redis.call (raise: an error is raised) and redis.pcall (it
// is returned as an error table).
func (vm *luaVM) redisCall(L *lua.LState, raise bool) int {
	r := vm.run
	if r == nil {
		return luaError(L, errLuaCallOutside, true)
	}
	n := L.GetTop()
	if n == 0 {
		return luaError(L, errLuaCallNoArgs, raise)
	}
	// Arguments: strings as they are, numbers as "%.17g" (Lua's own
	// format would lose precision); anything else is refused.
	buf, offs := vm.argBuf[:0], vm.offs[:0]
	for i := 1; i <= n; i++ {
		switch v := L.Get(i).(type) {
		case lua.LString:
			buf = append(buf, v...)
		case lua.LNumber:
			buf = strconv.AppendFloat(buf, float64(v), 'g', 17, 64)
		default:
			L.SetTop(0)
			return luaError(L, errLuaCallArgType, raise)
		}
		offs = append(offs, len(buf))
	}
	L.SetTop(0)
	vm.argBuf, vm.offs = buf, offs
	args := vm.args[:0]
	start := 0
	for _, end := range offs {
		args = append(args, buf[start:end:end])
		start = end
	}
	vm.args = args
	mark, msg := r.call(args)
	if msg != "" {
		t := luaErrorTable(L, msg)
		L.Push(t)
		if raise {
			L.Error(t, 0)
		}
		return 1
	}
	reply := r.c.Out[mark:]
	v, isErr := replyToLua(L, reply)
	r.c.Out = r.c.Out[:mark]
	L.Push(v)
	if isErr && raise {
		L.Error(v, 0)
	}
	return 1
}

// replyToLua converts the reply of a command a script called into a Lua
// value, as Redis's redisProtocolToLuaType does; isErr says it was an
// error reply (a table with err).
func replyToLua(L *lua.LState, reply []byte) (v lua.LValue, isErr bool) {
	rd := resp.NewReplyReader(reply)
	it, err := rd.Next()
	if err != nil {
		return luaErrorTable(L, "internal error: malformed reply"), true
	}
	if it.Kind == resp.KindError {
		return luaErrorTable(L, "-"+string(it.Str)), true
	}
	return readLua(L, rd, it), false
}

func readLua(L *lua.LState, rd *resp.ReplyReader, it resp.Item) lua.LValue {
	for it.Kind == resp.KindAttr { // attributes are not shown to scripts
		if rd.Skip(it) != nil {
			return lua.LNil
		}
		var err error
		if it, err = rd.Next(); err != nil {
			return lua.LNil
		}
	}
	next := func() lua.LValue {
		e, err := rd.Next()
		if err != nil {
			return lua.LNil
		}
		return readLua(L, rd, e)
	}
	switch it.Kind {
	case resp.KindInt:
		return lua.LNumber(it.N)
	case resp.KindBulk:
		if it.N < 0 {
			return lua.LFalse
		}
		return lua.LString(it.Str)
	case resp.KindSimple:
		t := L.NewTable()
		t.RawSetString("ok", lua.LString(it.Str))
		return t
	case resp.KindError, resp.KindBlobErr:
		return luaErrorTable(L, "-"+string(it.Str))
	case resp.KindArray, resp.KindPush:
		if it.N < 0 {
			return lua.LFalse
		}
		t := L.CreateTable(int(it.N), 0)
		for i := int64(1); i <= it.N; i++ {
			t.RawSetInt(int(i), next())
		}
		return t
	case resp.KindMap:
		m := L.NewTable()
		for i := int64(0); i < it.N; i++ {
			k := next()
			v := next()
			if k != lua.LNil {
				m.RawSet(k, v)
			}
		}
		t := L.NewTable()
		t.RawSetString("map", m)
		return t
	case resp.KindSet:
		s := L.NewTable()
		for i := int64(0); i < it.N; i++ {
			if k := next(); k != lua.LNil {
				s.RawSet(k, lua.LTrue)
			}
		}
		t := L.NewTable()
		t.RawSetString("set", s)
		return t
	case resp.KindNull:
		return lua.LNil
	case resp.KindBool:
		return lua.LBool(it.N != 0)
	case resp.KindDouble:
		f, _ := strconv.ParseFloat(string(it.Str), 64)
		t := L.NewTable()
		t.RawSetString("double", lua.LNumber(f))
		return t
	case resp.KindBigNum:
		t := L.NewTable()
		t.RawSetString("big_number", lua.LString(it.Str))
		return t
	case resp.KindVerbatim:
		v := L.NewTable()
		v.RawSetString("string", lua.LString(it.Str))
		v.RawSetString("format", lua.LString(it.Format))
		t := L.NewTable()
		t.RawSetString("verbatim_string", v)
		return t
	}
	return lua.LNil
}

// writeLuaReply writes v, a script's result, as the reply to c, as Redis's
// luaReplyToRedisReply does; scriptProto is the protocol the script set
// with redis.setresp (booleans depend on it).
func writeLuaReply(c *Client, v lua.LValue, scriptProto, depth int) {
	if depth > luaReplyDepth {
		c.WriteError(errLuaStackLimit)
		return
	}
	switch v := v.(type) {
	case lua.LString:
		c.WriteBulk([]byte(v))
	case lua.LBool:
		switch {
		case scriptProto == 3:
			c.WriteBool(bool(v))
		case bool(v):
			c.WriteInt(1)
		default:
			c.WriteNull()
		}
	case lua.LNumber:
		c.WriteInt(luaInt(float64(v)))
	case *lua.LTable:
		if e, ok := v.RawGetString("err").(lua.LString); ok {
			c.writeScriptError(string(e))
			return
		}
		if s, ok := v.RawGetString("ok").(lua.LString); ok {
			c.WriteSimple(strings.NewReplacer("\r", " ", "\n", " ").Replace(string(s)))
			return
		}
		if d, ok := v.RawGetString("double").(lua.LNumber); ok {
			c.WriteDouble(float64(d))
			return
		}
		if b, ok := v.RawGetString("big_number").(lua.LString); ok {
			s := strings.NewReplacer("\r", " ", "\n", " ").Replace(string(b))
			if c.proto == 3 {
				c.Out = append(append(append(c.Out, '('), s...), '\r', '\n')
			} else {
				c.WriteBulkString(s)
			}
			return
		}
		if vt, ok := v.RawGetString("verbatim_string").(*lua.LTable); ok {
			f, fok := vt.RawGetString("format").(lua.LString)
			s, sok := vt.RawGetString("string").(lua.LString)
			if fok && sok {
				if c.proto == 3 {
					c.Out = append(c.Out, '=')
					c.Out = strconv.AppendInt(c.Out, int64(len(s)+4), 10)
					c.Out = append(c.Out, '\r', '\n')
					c.Out = append(c.Out, (string(f) + "???")[:3]...)
					c.Out = append(c.Out, ':')
					c.Out = append(c.Out, s...)
					c.Out = append(c.Out, '\r', '\n')
				} else {
					c.WriteBulk([]byte(s))
				}
				return
			}
		}
		if m, ok := v.RawGetString("map").(*lua.LTable); ok {
			n := 0
			m.ForEach(func(lua.LValue, lua.LValue) { n++ })
			c.WriteMap(n)
			m.ForEach(func(k, val lua.LValue) {
				writeLuaReply(c, k, scriptProto, depth+1)
				writeLuaReply(c, val, scriptProto, depth+1)
			})
			return
		}
		if s, ok := v.RawGetString("set").(*lua.LTable); ok {
			n := 0
			s.ForEach(func(lua.LValue, lua.LValue) { n++ })
			c.WriteSet(n)
			s.ForEach(func(k, _ lua.LValue) { writeLuaReply(c, k, scriptProto, depth+1) })
			return
		}
		n := 0
		for v.RawGetInt(n+1) != lua.LNil {
			n++
		}
		c.WriteArray(n)
		for i := 1; i <= n; i++ {
			writeLuaReply(c, v.RawGetInt(i), scriptProto, depth+1)
		}
	default:
		c.WriteNull()
	}
}

// luaInt is C's (long long) cast of a Lua number: truncation, with what
// x86 gives for values out of range.
func luaInt(f float64) int64 {
	if math.IsNaN(f) || f >= 1<<63 || f < -(1<<63) {
		return math.MinInt64
	}
	return int64(f)
}
