package command

// Native scripts: scripts that rate limiters send unchanged, recognised by
// the SHA1 of their body and run in Go instead of the interpreter, with
// byte-identical replies and effects (TestNativeScriptsMatchInterpreter
// runs both over random inputs). A native implementation handles the inputs
// whose outcome it can compute exactly as the interpreter does, and hands
// anything else (an argument that is not a plain decimal number, a stored
// value that is not one, a key of another type, a result that is not
// finite, a read-only call, a failing disk) back to the interpreter before
// it has changed anything. lua-native-scripts no turns them off.

import (
	"math"
	"strconv"

	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/internal/lualib"
	"github.com/ratekv/ratekv/shards"
)

// redisRateAllowN is the SHA1 of go-redis/redis_rate v10's allowN script,
// the GCRA behind its Limiter.Allow and AllowN.
const redisRateAllowN = "f52a5b566060d79fd321d695df55bc918339c4aa"

// nativeScript runs a script natively; it reports false, having changed
// nothing, when the interpreter must run it instead.
type nativeScript func(c *Client, keys, argv [][]byte) bool

var nativeScripts = map[string]nativeScript{
	redisRateAllowN: nativeRedisRateAllowN,
}

// watchNative keeps lua-native-scripts' hot-path copy current.
func (e *Engine) watchNative() {
	apply := func(string) { e.scripts.native.Store(e.cfg.Bool(config.LuaNativeScripts)) }
	apply("")
	e.cfg.OnChange(config.LuaNativeScripts, apply)
}

// runNative runs s natively when it has a native implementation and
// lua-native-scripts is on; it reports whether it did.
func (c *Client) runNative(s *script, keys, argv [][]byte, readOnly bool) bool {
	if readOnly || !c.eng.scripts.native.Load() {
		return false
	}
	fn := nativeScripts[s.sha]
	if fn == nil || !fn(c, keys, argv) {
		return false
	}
	c.eng.scripts.nativeRuns.Add(1)
	return true
}

// nativeRedisRateAllowN is redis_rate's allowN script:
//
//	KEYS[1] = key, ARGV = burst, rate, period, cost
//	-> {allowed, remaining, tostring(retry_after), tostring(reset_after)}
//
// in the script's own float64 arithmetic, operation for operation (each
// product converted explicitly, so that none is fused), with TIME read
// from the command's clock as the script's TIME is.
func nativeRedisRateAllowN(c *Client, keys, argv [][]byte) bool {
	if len(keys) != 1 || len(argv) != 4 {
		return false
	}
	// burst, rate and period are coerced by arithmetic, cost by tonumber.
	burst, ok1 := plainNumber(argv[0], true)
	rate, ok2 := plainNumber(argv[1], true)
	period, ok3 := plainNumber(argv[2], true)
	cost, ok4 := plainNumber(argv[3], false)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return false
	}
	key := keys[0]
	st := c.eng.store
	emission := period / rate
	increment := float64(emission * cost)
	burstOffset := float64(emission * burst)
	sec, usec := float64(c.now/1e9), float64(c.now%1e9/1e3)
	now := (sec - 1483228800) + usec/1000000

	var tat float64
	e := st.LookupIn(c.keyShard(key), key, c.nowMs)
	switch {
	case e == nil:
		tat = now
	case e.Kind() != shards.KindString:
		return false // WRONGTYPE: the interpreter replies it
	default:
		var ok bool
		c.valBuf = st.AppendBytes(c.valBuf[:0], e)
		if tat, ok = plainNumber(c.valBuf, false); !ok {
			return false
		}
	}
	if now > tat { // math.max(tat, now), as Lua's: the first unless the second is greater
		tat = now
	}
	newTat := tat + increment
	allowAt := newTat - burstOffset
	diff := now - allowAt
	remaining := diff / emission
	resetAfter := newTat - now
	for _, f := range []float64{emission, increment, burstOffset, tat, newTat, diff, remaining, resetAfter} {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return false
		}
	}
	if remaining < 0 {
		c.WriteArray(4)
		c.WriteInt(0)
		c.WriteInt(0)
		c.writeNumberBulk(-diff)
		c.writeNumberBulk(tat - now)
		return true
	}
	if resetAfter > 0 {
		if c.diskError() != "" {
			return false // the interpreter's SET fails as it must
		}
		var buf [64]byte
		num := strconv.AppendFloat(buf[:0], newTat, 'g', 17, 64)
		ex := len(num)
		num = strconv.AppendFloat(num, math.Ceil(resetAfter), 'g', 17, 64)
		c.runEffect(bSET, key, num[:ex], bEX, num[ex:])
	}
	c.WriteArray(4)
	c.WriteInt(luaInt(cost))
	c.WriteInt(luaInt(remaining))
	c.WriteBulkString("-1")
	c.writeNumberBulk(resetAfter)
	return true
}

var (
	bSET = []byte("SET")
	bEX  = []byte("EX")
)

// runEffect runs one write command for a native script as the script's
// redis.call would: through the command table, its shards held, its
// reply dropped, its effects journaled alone or in the transaction that
// runs it.
func (c *Client) runEffect(args ...[]byte) {
	wasInExec, req := c.inExec, c.req
	c.inExec, c.req = true, nil
	mark := len(c.Out)
	c.call(lookupCommand(args[0]), args)
	c.Out = c.Out[:mark]
	c.inExec, c.req = wasInExec, req
	if !wasInExec {
		c.endTxRecords()
	}
}

// writeNumberBulk writes tostring(f) of Lua as a bulk string.
func (c *Client) writeNumberBulk(f float64) {
	var buf [32]byte
	c.WriteBulk(lualib.AppendNumber(buf[:0], f))
}

// plainNumber reads b when it is a plain decimal number
// (-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?), a form whose value is
// the interpreter's; ok is false for anything else (spaces, hexadecimal,
// leading zeros, inf). coerced: the value arithmetic on the string gives
// (gopher-lua reads an integer as an int64 first: "-0" is 0), else
// tonumber's.
func plainNumber(b []byte, coerced bool) (float64, bool) {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	start := i
	if n := digits(); n == 0 || n > 1 && b[start] == '0' {
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return 0, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return 0, false
		}
	}
	if i != len(b) || len(b) > 64 {
		return 0, false
	}
	if coerced {
		if n, err := strconv.ParseInt(string(b), 10, 64); err == nil {
			return float64(n), true
		}
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}
