package command

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Differential test of scripting: the same EVAL, EVALSHA and SCRIPT
// commands go to a real redis-server and to ratekv, in RESP2 and RESP3, and
// the raw replies must be byte-equal. Fixed cases cover every error text
// and conversion; random scripts are composed from fragments over a few
// keys (gated like TestDiffRedis: RATEKV_REDIS_ADDR; RATEKV_SCRIPT_SEED
// replays a seed).

// diffScriptsRandom is how many random scripts each protocol gets.
const diffScriptsRandom = 1500

// scriptFixed are scripts whose replies must match Redis's exactly.
var scriptFixed = [][]string{
	// Argument errors.
	{"EVAL", "return 1", "-1"},
	{"EVAL", "return 1", "2", "a"},
	{"EVAL", "return 1", "x"},
	{"EVAL", "return 1", "99999999999999999999"},
	{"EVALSHA", "abc", "0"},
	{"EVALSHA", "abc", "x"},
	{"EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0"},
	{"EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "-1"},
	{"EVAL", "return 1"},
	{"EVALSHA_RO", "abc"},
	// Compiling.
	{"EVAL", "return 1+", "0"},
	{"EVAL", "return", "0"},
	{"EVAL", "return ...", "0"},
	{"EVAL", "return select('#', ...)", "0"},
	{"EVAL", "#!lua\nreturn 1", "0"},
	{"EVAL", "#!lua", "0"},
	{"EVAL", "#!luax\nreturn 1", "0"},
	{"EVAL", "#!lua name=x\nreturn 1", "0"},
	{"EVAL", "#!lua flags=bad\nreturn 1", "0"},
	{"EVAL", "#!lua flags=no-writes,allow-oom\nreturn 1", "0"},
	{"EVAL", "#!lua  flags=no-writes,allow-stale,no-cluster,allow-cross-slot-keys\nreturn 2", "0"},
	{"EVAL", "#!lua flags=\nreturn redis.call('set','{s}a','b')", "1", "{s}a"},
	{"EVAL_RO", "#!lua flags=\nreturn 1", "0"},
	{"EVAL_RO", "#!lua\nreturn 1", "0"},
	{"EVAL_RO", "#!lua flags=no-writes\nreturn redis.call('set','{s}a','b')", "1", "{s}a"},
	{"EVAL", "#!lua\nerror('x')", "0"},
	// Runtime errors.
	{"EVAL", "error('x')", "0"},
	{"EVAL", "error('x', 0)", "0"},
	{"EVAL", "error()", "0"},
	{"EVAL", "error(5)", "0"},
	{"EVAL", "error({err='foo'})", "0"},
	{"EVAL", "error({err='ERR foo bar'})", "0"},
	{"EVAL", "\n\nerror('third line')", "0"},
	{"EVAL", "x = 1", "0"},
	{"EVAL", "return undefinedvar", "0"},
	{"EVAL", "string.x = 1", "0"},
	{"EVAL", "local t = string; t.upper = nil", "0"},
	{"EVAL", "redis.call = nil", "0"},
	{"EVAL", "_G.x = 1", "0"},
	{"EVAL", "function f() end", "0"},
	{"EVAL", "return type(debug)", "0"},
	{"EVAL", "return print", "0"},
	{"EVAL", "return getfenv", "0"},
	{"EVAL", "return os", "0"},
	{"EVAL", "return loadfile", "0"},
	// redis.call and pcall.
	{"EVAL", "return redis.call()", "0"},
	{"EVAL", "return redis.pcall()", "0"},
	{"EVAL", "return redis.call('nosuch')", "0"},
	{"EVAL", "return redis.pcall('nosuch')", "0"},
	{"EVAL", "return redis.call('get')", "0"},
	{"EVAL", "return redis.pcall('set','a')", "0"},
	{"EVAL", "return redis.call('get', {})", "0"},
	{"EVAL", "return redis.pcall('get', nil)", "0"},
	{"EVAL", "return redis.call('client','foo')", "0"},
	{"EVAL", "return redis.call('config')", "0"},
	{"EVAL", "return redis.call('client','id')", "0"},
	{"EVAL", "return redis.call('multi')", "0"},
	{"EVAL", "return redis.call('exec')", "0"},
	{"EVAL", "return redis.call('watch','x')", "0"},
	{"EVAL", "return redis.call('eval','return 1', 0)", "0"},
	{"EVAL", "return redis.call('script','load','return 1')", "0"},
	{"EVAL", "return redis.call('script','kill')", "0"},
	{"EVAL", "return redis.call('script','help')[1]", "0"},
	{"EVAL", "return redis.call('shutdown')", "0"},
	{"EVAL", "return redis.call('hello')", "0"},
	{"EVAL", "return redis.call('auth','x')", "0"},
	{"EVAL", "return redis.call('ping')", "0"},
	{"EVAL", "return redis.call('echo', 'hi')", "0"},
	{"EVAL", "return redis.call('set', KEYS[1], 3.5)", "1", "{s}n"},
	{"EVAL", "return redis.call('get', KEYS[1])", "1", "{s}n"},
	{"EVAL", "redis.call('set', KEYS[1], 0.1) return redis.call('get', KEYS[1])", "1", "{s}n"},
	{"EVAL", "redis.call('set', KEYS[1], 1e20) return redis.call('get', KEYS[1])", "1", "{s}n"},
	{"EVAL", "redis.call('set', KEYS[1], 'x') return redis.call('incr', KEYS[1])", "1", "{s}n"},
	{"EVAL", "redis.call('set', KEYS[1], 'x') return redis.pcall('incr', KEYS[1])", "1", "{s}n"},
	{"EVAL", "local r = redis.pcall('incr', KEYS[1]) return r.err", "1", "{s}n"},
	{"EVAL", "return pcall(redis.call, 'nosuch')", "0"},
	{"EVAL", "local ok, e = pcall(redis.call, 'nosuch') return e", "0"},
	{"EVAL", "local ok, e = pcall(error, 'boom') return e", "0"},
	{"EVAL", "local ok, e = pcall(error, {err='x'}) return e", "0"},
	{"EVAL_RO", "return redis.call('set','{s}a','b')", "1", "{s}a"},
	{"EVAL_RO", "return redis.pcall('set','{s}a','b')", "1", "{s}a"},
	{"EVAL_RO", "return redis.call('get','{s}a')", "1", "{s}a"},
	{"EVAL", "return redis.call('get', KEYS[1])", "1", "{s}missing"},
	{"EVAL", "return redis.call('del', KEYS[1])", "1", "{s}missing"},
	{"EVAL", "return redis.call('mget', KEYS[1], KEYS[2])", "2", "{s}missing", "{s}n"},
	{"EVAL", "return redis.call('ping') == nil", "0"},
	{"EVAL", "return redis.call('ping').ok", "0"},
	{"EVAL", "return redis.call('set', KEYS[1], 'v')['ok']", "1", "{s}v"},
	{"EVAL", "redis.call('zadd', KEYS[1], 1, 'a', 2.5, 'b') return redis.call('zrange', KEYS[1], 0, -1, 'withscores')", "1", "{s}z"},
	{"EVAL", "return redis.call('zscore', KEYS[1], 'b')", "1", "{s}z"},
	{"EVAL", "return redis.call('get', KEYS[1])", "1", "{s}z"},
	// Reply conversions.
	{"EVAL", "return 3.99", "0"},
	{"EVAL", "return -3.99", "0"},
	{"EVAL", "return 1e30", "0"},
	{"EVAL", "return 'x'", "0"},
	{"EVAL", "return true", "0"},
	{"EVAL", "return false", "0"},
	{"EVAL", "return nil", "0"},
	{"EVAL", "return", "0"},
	{"EVAL", "return {}", "0"},
	{"EVAL", "return {1,2,nil,3}", "0"},
	{"EVAL", "return {1,{2,{3,'x'}},true,false,'y'}", "0"},
	{"EVAL", "return {ok='fine'}", "0"},
	{"EVAL", "return {ok=1}", "0"},
	{"EVAL", "return {err='My Error'}", "0"},
	{"EVAL", "return {err=1}", "0"},
	{"EVAL", "return {err='a\\r\\nb'}", "0"},
	{"EVAL", "return redis.status_reply('a\\r\\nb')", "0"},
	{"EVAL", "return redis.error_reply('x y')", "0"},
	{"EVAL", "return redis.error_reply('foo')", "0"},
	{"EVAL", "return redis.error_reply('-FOO bar')", "0"},
	{"EVAL", "return redis.error_reply()", "0"},
	{"EVAL", "return redis.status_reply(1)", "0"},
	{"EVAL", "return {double=1.5}", "0"},
	{"EVAL", "return {double=3}", "0"},
	{"EVAL", "return {big_number='123456789012345678901234567890'}", "0"},
	{"EVAL", "return {map={a=1}}", "0"},
	{"EVAL", "return {set={a=true}}", "0"},
	{"EVAL", "return {verbatim_string={format='txt', string='hi'}}", "0"},
	{"EVAL", "return function() end", "0"},
	{"EVAL", "return cjson.null", "0"},
	{"EVAL", "return KEYS", "2", "a", "b", "c", "d"},
	{"EVAL", "return ARGV", "2", "a", "b", "c", "d"},
	{"EVAL", "return {#KEYS, #ARGV}", "0"},
	// RESP3 inside the script.
	{"EVAL", "redis.setresp(3) return redis.call('ping')", "0"},
	{"EVAL", "redis.setresp(3) return redis.call('get', 'nosuchkey{s}')", "0"},
	{"EVAL", "redis.setresp(3) return redis.call('get', 'nosuchkey{s}') == nil", "0"},
	{"EVAL", "redis.setresp(3) return true", "0"},
	{"EVAL", "redis.setresp(3) return false", "0"},
	{"EVAL", "redis.setresp(3) local r = redis.call('zscore', KEYS[1], 'b') return {type(r), r.double}", "1", "{s}z"},
	{"EVAL", "redis.setresp(3) return redis.call('zscore', KEYS[1], 'b')", "1", "{s}z"},
	{"EVAL", "redis.setresp(3) local r = redis.call('config', 'get', 'maxclients') return {type(r), type(r.map)}", "0"},
	{"EVAL", "redis.setresp(3) return redis.call('config', 'get', 'maxclients')", "0"},
	{"EVAL", "redis.setresp(3) return redis.call('zrange', KEYS[1], 0, -1, 'withscores')", "1", "{s}z"},
	{"EVAL", "redis.setresp(4)", "0"},
	{"EVAL", "redis.setresp()", "0"},
	// The redis API.
	{"EVAL", "return redis.sha1hex('')", "0"},
	{"EVAL", "return redis.sha1hex('abc')", "0"},
	{"EVAL", "return redis.sha1hex(12)", "0"},
	{"EVAL", "return redis.sha1hex()", "0"},
	{"EVAL", "redis.set_repl(99)", "0"},
	{"EVAL", "redis.set_repl()", "0"},
	{"EVAL", "redis.set_repl(redis.REPL_ALL) return 1", "0"},
	{"EVAL", "return {redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL}", "0"},
	{"EVAL", "return redis.replicate_commands()", "0"},
	{"EVAL", "return redis.log(redis.LOG_WARNING)", "0"},
	{"EVAL", "return redis.log(99, 'x')", "0"},
	{"EVAL", "return redis.log('x', 'x')", "0"},
	{"EVAL", "return redis.log(redis.LOG_DEBUG, 'x', 1)", "0"},
	{"EVAL", "return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING}", "0"},
	// Libraries.
	{"EVAL", "return {tostring(1/3), tostring(1e15), tostring(1e14), tostring(123456789012345), tostring(0.1), tostring(2^53), tostring(1e100), tostring(1/0), tostring(-1/0), tostring(0/0)}", "0"},
	{"EVAL", "return cjson.encode({1,2,'a/b',{x=1.5}, 1/3, true})", "0"},
	{"EVAL", "return cjson.encode({})", "0"},
	{"EVAL", "return cjson.encode({[1]=1,[3]=3})", "0"},
	{"EVAL", "return cjson.encode({[1]=1,[20]=3})", "0"},
	{"EVAL", "return cjson.encode(1/0)", "0"},
	{"EVAL", "return cjson.encode(function() end)", "0"},
	{"EVAL", "return cjson.encode('\\0\\1\\127\\\"\\\\\\n\\t')", "0"},
	{"EVAL", "return cjson.decode('[1,2,{\"a\":null}]')[3].a == cjson.null", "0"},
	{"EVAL", "return cjson.decode('[1,2')", "0"},
	{"EVAL", "return cjson.decode('{\"a\":[1,2.5,\"x\\\\u00e9\"]}').a", "0"},
	{"EVAL", "return cjson.decode('\"\\\\ud83d\\\\ude00\"')", "0"},
	{"EVAL", "return {bit.band(0xff, 0x0f), bit.bor(1, 2, 4), bit.bxor(5, 3), bit.lshift(1, 31), bit.rshift(-1, 28), bit.arshift(-256, 4), bit.tobit(2^32 + 5), bit.bnot(0)}", "0"},
	{"EVAL", "return {bit.tohex(255), bit.tohex(-1, 4), bit.tohex(255, -2), bit.rol(1, 33), bit.ror(1, 1), bit.bswap(0x12345678)}", "0"},
	{"EVAL", "return struct.pack('>I2i4', 258, -2)", "0"},
	{"EVAL", "return {struct.unpack('<hHbBi8', struct.pack('<hHbBi8', -2, 65535, -1, 255, 1234567890123))}", "0"},
	{"EVAL", "return {struct.unpack('>d', struct.pack('>d', 1.5))}", "0"},
	{"EVAL", "return {struct.unpack('s', struct.pack('s', 'hello'))}", "0"},
	{"EVAL", "return {struct.size('>iId'), struct.size('!4bi')}", "0"},
	{"EVAL", "return cmsgpack.pack({1, 2, 'abc', true, false}, 300, -5, -200, 70000, 1.5, 'x')", "0"},
	{"EVAL", "return cmsgpack.pack({a=1})", "0"},
	{"EVAL", "return {cmsgpack.unpack(cmsgpack.pack({1, 2, {3, 'x'}}, 'y', 4294967296))}", "0"},
	{"EVAL", "return {string.format('%d %s %5.2f', 3, 'x', 1.5), string.rep('ab', 3), string.upper('x'), ('abc'):sub(2), string.byte('A')}", "0"},
	{"EVAL", "return {math.floor(3.7), math.ceil(3.2), math.max(1, 5, 3), math.abs(-2), math.fmod(7, 3), math.pow(2, 10)}", "0"},
	{"EVAL", "return {table.concat({1, 2, 3}, ','), table.getn({1, 2}), #{1, 2, 3}, select(2, 'a', 'b', 'c')}", "0"},
	{"EVAL", "local t = {3, 1, 2} table.sort(t) return t", "0"},
	{"EVAL", "return tonumber('0x10') + tonumber('  12  ') + tonumber('1e2')", "0"},
	{"EVAL", "return tonumber('abc') == nil", "0"},
	{"EVAL", "return loadstring('return 7')()", "0"},
	{"EVAL", "return type(_G)", "0"},
	{"EVAL", "return _VERSION", "0"},
	{"EVAL", "local co = coroutine.create(function(a) coroutine.yield(a + 1) return 9 end) local _, x = coroutine.resume(co, 1) local _, y = coroutine.resume(co) return {x, y}", "0"},
	{"EVAL", "return ('10' + 5) * '2'", "0"},
	// The script cache.
	{"SCRIPT", "LOAD", "return 'loaded'"},
	{"EVALSHA", "5a7a6e2bd2a9bfe4e73d7e3fcab36b9b2a6a6a52", "0"},
	{"SCRIPT", "EXISTS", "0b1bcbd6e1a1d2da5e70a5a1f2d0c0c1d4a7b4a3", "ffffffffffffffffffffffffffffffffffffffff"},
	{"SCRIPT", "LOAD", "return 1+"},
	{"SCRIPT", "LOAD"},
	{"SCRIPT", "EXISTS"},
	{"SCRIPT", "FLUSH", "foo"},
	{"SCRIPT", "FLUSH", "SYNC", "x"},
	{"SCRIPT", "KILL"},
	{"SCRIPT", "HELP"},
	{"SCRIPT", "NOSUCH"},
	{"SCRIPT", "FLUSH", "ASYNC"},
	{"SCRIPT", "FLUSH"},
}

func TestDiffScripts(t *testing.T) {
	addr := redisAddr(t)
	seed := diffSeed(t, "RATEKV_SCRIPT_SEED")
	ts := newTestServer(t)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			d := &differ{t: t, real: dialRaw(t, addr), ours: ts.raw(t), maxFails: 30}
			for _, r := range []*rawConn{d.real, d.ours} {
				require.Equal(t, "+OK\r\n", r.do("FLUSHALL"))
				require.Equal(t, "+OK\r\n", r.do("SCRIPT", "FLUSH"))
				if proto == 3 {
					require.True(t, strings.HasPrefix(r.do("HELLO", "3"), "%"))
				}
			}
			for _, args := range scriptFixed {
				d.check(args)
			}
			// EVALSHA of what EVAL cached, in any case.
			d.check([]string{"EVAL", "return 'cached'", "0"})
			sha := sha1hex([]byte("return 'cached'"))
			d.check([]string{"EVALSHA", sha, "0"})
			d.check([]string{"EVALSHA", strings.ToUpper(sha), "0"})
			d.check([]string{"EVALSHA_RO", sha, "0"})
			d.check([]string{"SCRIPT", "EXISTS", sha, strings.ToUpper(sha), "nope"})
			g := &scriptGen{rng: rand.New(rand.NewPCG(seed, uint64(proto)))}
			for i := 0; i < diffScriptsRandom; i++ {
				d.check(g.next())
			}
			for _, k := range scriptKeys {
				d.check([]string{"GET", k})
				d.check([]string{"TYPE", k})
			}
			t.Logf("%d commands compared", d.steps)
		})
	}
}

// scriptKeys are the keys random scripts touch; one hash tag keeps them
// in one cluster slot.
var scriptKeys = []string{"{s}k1", "{s}k2", "{s}k3", "{s}cnt"}

// scriptGen composes random scripts from fragments whose results Redis
// and ratekv must agree on.
type scriptGen struct{ rng *rand.Rand }

func (g *scriptGen) pick(list ...string) string { return list[g.rng.IntN(len(list))] }

// value is a Lua expression of a random type.
func (g *scriptGen) value(depth int) string {
	switch g.rng.IntN(15) {
	case 0:
		return fmt.Sprint(g.rng.IntN(2000) - 1000)
	case 1:
		return fmt.Sprintf("%d.%d", g.rng.IntN(100)-50, g.rng.IntN(1000))
	case 2:
		return fmt.Sprintf("'%s'", g.pick("a", "b", "hello", "", "1.5", "x y"))
	case 3:
		return g.pick("true", "false", "nil")
	case 4:
		return "ARGV[" + fmt.Sprint(1+g.rng.IntN(3)) + "]"
	case 5:
		return "KEYS[" + fmt.Sprint(1+g.rng.IntN(2)) + "]"
	case 6:
		if depth < 2 {
			n := g.rng.IntN(4)
			items := make([]string, n)
			for i := range items {
				items[i] = g.value(depth + 1)
			}
			return "{" + strings.Join(items, ", ") + "}"
		}
		return "{}"
	case 7:
		return g.call()
	case 8:
		return fmt.Sprintf("tostring(%d / %d)", g.rng.IntN(100), 1+g.rng.IntN(30))
	case 9:
		return fmt.Sprintf("#ARGV + %d", g.rng.IntN(5))
	case 10:
		return g.pick("{ok='done'}", "{err='ERR custom'}", "redis.status_reply('S')", "redis.error_reply('E2 bad')", "{double=2.5}")
	case 11:
		return g.pick("tonumber(ARGV[1])", "tonumber(ARGV[2])", "redis.sha1hex(ARGV[1])", "string.format('%d:%s', 7, ARGV[3])",
			"string.len(ARGV[1] .. ARGV[2])", "string.upper(ARGV[3])", "math.floor(3.7)", "select('#', 1, 2)")
	case 12:
		return g.pick("cjson.encode({1, 'a', {b = 2}})", "cjson.decode('[1,2,3]')", "cjson.encode(KEYS)",
			"cmsgpack.pack(1, 'x', {2})", "struct.pack('>i2', 5)", "cjson.decode('{\"a\":[true,null]}').a")
	case 13:
		return fmt.Sprintf("bit.bxor(%d, %d)", g.rng.IntN(1<<20)-1<<19, g.rng.IntN(1<<16))
	default:
		return fmt.Sprintf("bit.band(%d, %d)", g.rng.IntN(1<<16), g.rng.IntN(1<<16))
	}
}

// call is a redis.call or redis.pcall on the keys.
func (g *scriptGen) call() string {
	k := "KEYS[" + fmt.Sprint(1+g.rng.IntN(2)) + "]"
	fn := g.pick("redis.call", "redis.pcall", "redis.pcall")
	cmds := []string{
		"'get', " + k,
		"'set', " + k + ", ARGV[1]",
		"'set', " + k + ", " + fmt.Sprint(g.rng.IntN(50)),
		"'incr', " + k,
		"'incrby', " + k + ", ARGV[2]",
		"'del', " + k,
		"'exists', " + k + ", KEYS[3]",
		"'append', " + k + ", 'x'",
		"'strlen', " + k,
		"'mget', KEYS[1], KEYS[2], KEYS[3]",
		"'getset', " + k + ", ARGV[3]",
		"'incrbyfloat', KEYS[4], '0.5'",
		"'type', " + k,
		"'zadd', " + k + ", 1, 'm'",
		"'nosuch'",
		"'get'",
		"'ping'",
	}
	return fn + "(" + cmds[g.rng.IntN(len(cmds))] + ")"
}

func (g *scriptGen) next() []string {
	var body []string
	for n := g.rng.IntN(4); n > 0; n-- {
		switch g.rng.IntN(5) {
		case 0:
			body = append(body, "local v"+fmt.Sprint(g.rng.IntN(3))+" = "+g.value(0))
		case 1:
			body = append(body, g.call())
		case 2:
			body = append(body, "if "+g.value(1)+" then "+g.call()+" end")
		case 3:
			body = append(body, g.pick("local ok, e = pcall(redis.call, 'incr', KEYS[1])",
				"redis.call('incrby', KEYS[4], 2)", "local t = redis.call('mget', KEYS[1], KEYS[2])"))
		default:
			if g.rng.IntN(10) == 0 {
				body = append(body, g.pick("error('boom')", "error({err='ERR tbl'})", "x = 1", "local z = undefinedvar"))
			}
		}
	}
	body = append(body, "return "+g.value(0))
	if g.rng.IntN(4) == 0 { // replies of the commands it calls in RESP3
		body = append([]string{"redis.setresp(3)"}, body...)
	}
	script := strings.Join(body, "\n")
	args := []string{"EVAL", script, "4"}
	if g.rng.IntN(3) == 0 {
		args[0] = "EVAL_RO"
	}
	args = append(args, scriptKeys...)
	for i := 0; i < 3; i++ {
		args = append(args, g.pick("1", "7", "-3", "abc", "2.5", ""))
	}
	return args
}
