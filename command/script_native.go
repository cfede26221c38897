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

// The SHA1s of go-redis/redis_rate v10's scripts: allowN, the GCRA behind
// Limiter.Allow and AllowN, and allowAtMost, behind AllowAtMost.
const (
	redisRateAllowN      = "f52a5b566060d79fd321d695df55bc918339c4aa"
	redisRateAllowAtMost = "054143318f521948424aa25df61d7f7ba835a9d7"
)

// nativeScript runs a script natively; it reports false, having changed
// nothing, when the interpreter must run it instead.
type nativeScript func(c *Client, keys, argv [][]byte) bool

var nativeScripts = map[string]nativeScript{
	redisRateAllowN:      nativeRedisRateAllowN,
	redisRateAllowAtMost: nativeRedisRateAllowAtMost,
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
	if readOnly || !c.eng.scripts.native.Load() || !c.userOpen() { // the interpreter checks a restricted user's redis.call
		return false
	}
	fn := nativeScripts[s.sha]
	if fn == nil || !fn(c, keys, argv) {
		return false
	}
	c.eng.scripts.nativeRuns.Add(1)
	return true
}

// rateInputs is what both redis_rate scripts compute before they differ:
// their arguments, the emission interval, now (seconds since 2017, from
// TIME) and the stored TAT, at least now.
type rateInputs struct {
	key                   []byte
	burst, cost, emission float64
	burstOffset, now, tat float64
}

// readRateInputs computes rateInputs as the scripts do:
//
//	KEYS[1] = key, ARGV = burst, rate, period, cost
//
// in the scripts' own float64 arithmetic, operation for operation (each
// product converted explicitly, so that none is fused), with TIME read
// from the command's clock as the script's TIME is. ok is false when the
// interpreter must run the script.
func (c *Client) readRateInputs(keys, argv [][]byte) (in rateInputs, ok bool) {
	if len(keys) != 1 || len(argv) != 4 {
		return in, false
	}
	// burst, rate and period are coerced by arithmetic, cost by tonumber.
	burst, ok1 := plainNumber(argv[0], true)
	rate, ok2 := plainNumber(argv[1], true)
	period, ok3 := plainNumber(argv[2], true)
	cost, ok4 := plainNumber(argv[3], false)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return in, false
	}
	in.key, in.burst, in.cost = keys[0], burst, cost
	in.emission = period / rate
	in.burstOffset = float64(in.emission * burst)
	sec, usec := float64(c.now/1e9), float64(c.now%1e9/1e3)
	in.now = (sec - 1483228800) + usec/1000000

	st := c.eng.store
	e := st.LookupIn(c.keyShard(in.key), in.key, c.nowMs)
	switch {
	case e == nil:
		in.tat = in.now
	case e.Kind() != shards.KindString:
		return in, false // WRONGTYPE: the interpreter replies it
	default:
		c.valBuf = st.AppendBytes(c.valBuf[:0], e)
		if in.tat, ok = plainNumber(c.valBuf, false); !ok {
			return in, false
		}
	}
	if in.now > in.tat { // math.max(tat, now), as Lua's: the first unless the second is greater
		in.tat = in.now
	}
	return in, finite(in.emission, in.burstOffset, in.tat)
}

// finite reports whether every value is finite: the native code hands
// the rest to the interpreter.
func finite(fs ...float64) bool {
	for _, f := range fs {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return false
		}
	}
	return true
}

// nativeRedisRateAllowN is redis_rate's allowN script:
// -> {allowed, remaining, tostring(retry_after), tostring(reset_after)}.
func nativeRedisRateAllowN(c *Client, keys, argv [][]byte) bool {
	in, ok := c.readRateInputs(keys, argv)
	if !ok {
		return false
	}
	increment := float64(in.emission * in.cost)
	newTat := in.tat + increment
	allowAt := newTat - in.burstOffset
	diff := in.now - allowAt
	remaining := diff / in.emission
	resetAfter := newTat - in.now
	if !finite(increment, newTat, diff, remaining, resetAfter) {
		return false
	}
	if remaining < 0 {
		c.writeRateReply(0, 0, -diff, in.tat-in.now)
		return true
	}
	if resetAfter > 0 && !c.setRateTAT(in.key, newTat, resetAfter) {
		return false
	}
	c.writeRateReply(in.cost, remaining, -1, resetAfter)
	return true
}

// nativeRedisRateAllowAtMost is redis_rate's allowAtMost script: as
// allowN, but it allows what is left when that is less than cost.
func nativeRedisRateAllowAtMost(c *Client, keys, argv [][]byte) bool {
	in, ok := c.readRateInputs(keys, argv)
	if !ok {
		return false
	}
	diff := in.now - (in.tat - in.burstOffset)
	remaining := diff / in.emission
	if !finite(diff, remaining) {
		return false
	}
	if remaining < 1 {
		retryAfter := in.emission - diff
		c.writeRateReply(0, 0, retryAfter, in.tat-in.now)
		return true
	}
	cost := in.cost
	if remaining < cost {
		cost, remaining = remaining, 0
	} else {
		remaining -= cost
	}
	increment := float64(in.emission * cost)
	newTat := in.tat + increment
	resetAfter := newTat - in.now
	if !finite(increment, newTat, resetAfter) {
		return false
	}
	if resetAfter > 0 && !c.setRateTAT(in.key, newTat, resetAfter) {
		return false
	}
	c.writeRateReply(cost, remaining, -1, resetAfter)
	return true
}

// writeRateReply writes the scripts' reply:
// {allowed, remaining, tostring(retry_after), tostring(reset_after)}.
func (c *Client) writeRateReply(allowed, remaining, retryAfter, resetAfter float64) {
	c.WriteArray(4)
	c.WriteInt(luaInt(allowed))
	c.WriteInt(luaInt(remaining))
	c.writeNumberBulk(retryAfter)
	c.writeNumberBulk(resetAfter)
}

// setRateTAT is the scripts' SET key new_tat EX math.ceil(reset_after);
// false when the disk fails (the interpreter's SET then fails as it must).
func (c *Client) setRateTAT(key []byte, newTat, resetAfter float64) bool {
	if c.diskError() != "" {
		return false
	}
	num := strconv.AppendFloat(c.effectBuf[:0], newTat, 'g', 17, 64)
	ex := len(num)
	num = strconv.AppendFloat(num, math.Ceil(resetAfter), 'g', 17, 64)
	c.effectBuf = num
	c.effectArgs = append(c.effectArgs[:0], bSET, key, num[:ex], bEX, num[ex:])
	c.runEffect(c.effectArgs)
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
func (c *Client) runEffect(args [][]byte) {
	wasInExec, req := c.inExec, c.req
	c.inExec, c.req = true, nil
	mark := len(c.Out)
	c.inScript = true
	c.call(lookupCommand(args[0]), args)
	c.inScript = false
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
