package main

import (
	"bytes"
	"io"
	"math/rand/v2"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// testNowUs is the clock the request tests run at (2026-11-22, a 16-digit
// microsecond timestamp like the real ones).
const testNowUs = 1795307408539667

// testState returns a fresh reqState with a fixed seed and clock.
func testState() *reqState {
	return &reqState{rng: rand.New(rand.NewPCG(1, 2)), nowUs: testNowUs}
}

func TestWorkloadRequests(t *testing.T) {
	cfg := &config{burst: 100, count: 1000, period: 60, quantity: 1, value: "xxx", max: 100, window: 60000}
	sha := strings.Repeat("a", 40)
	cfg.evalHead = appendCommand(nil, "EVALSHA", sha, "1")
	cfg.evalHead[1] = '8' // *4 -> *8: key and four arguments follow
	cfg.throttleTail = appendThrottleArgs(nil, cfg)
	cfg.windowTail = appendWindowArgs(nil, cfg)
	slHead := appendCommand(nil, "EVALSHA", sha, "1")
	slHead[1] = '6' // key, max, window follow
	// The recipe's member: the first two draws of testState's generator.
	rng := testState().rng
	uuid := string(appendUUID(nil, rng.Uint64(), rng.Uint64()))
	recipe := func(read ...string) string {
		return string(appendCommand(nil, "MULTI")) +
			string(appendCommand(nil, "ZREMRANGEBYSCORE", "log:12345", "0", "1795307348539667")) +
			string(appendCommand(nil, "ZADD", "log:12345", "1795307408539667", uuid)) +
			string(appendCommand(nil, read...)) +
			string(appendCommand(nil, "PEXPIRE", "log:12345", "60000")) +
			string(appendCommand(nil, "EXEC"))
	}
	// What the setups of zset_recipe and sl_lua set differently.
	recipeCfg := *cfg
	recipeCfg.windowTail = appendBulk(nil, "60000")
	slCfg := *cfg
	slCfg.evalHead = slHead
	want := map[string]string{
		"ping":          "*1\r\n$4\r\nPING\r\n",
		"ping_inline":   "PING\r\n",
		"set":           "*3\r\n$3\r\nSET\r\n$9\r\nkey:12345\r\n$3\r\nxxx\r\n",
		"set_ex":        "*5\r\n$3\r\nSET\r\n$9\r\nkey:12345\r\n$3\r\nxxx\r\n$2\r\nEX\r\n$4\r\n3600\r\n",
		"get":           "*2\r\n$3\r\nGET\r\n$9\r\nkey:12345\r\n",
		"incr":          "*2\r\n$4\r\nINCR\r\n$13\r\ncounter:12345\r\n",
		"throttle_cell": string(appendCommand(nil, "CL.THROTTLE", "rl:12345", "100", "1000", "60", "1")),
		"throttle_lua":  string(appendCommand(nil, "EVALSHA", sha, "1", "rl:12345", "100", "1000", "60", "1")),
		"sl_throttle":   string(appendCommand(nil, "SL.THROTTLE", "sl:12345", "100", "60000")),
		"sw_throttle":   string(appendCommand(nil, "SW.THROTTLE", "sw:12345", "100", "60000")),
		"sl_lua":        string(appendCommand(nil, "EVALSHA", sha, "1", "log:12345", "100", "60000")),
		"zset_recipe":   recipe("ZCARD", "log:12345"),
	}
	for _, name := range workloadNames() {
		w, ok := want[name]
		if !ok {
			t.Errorf("workload %s has no expected request in this test", name)
			continue
		}
		c := cfg
		switch name {
		case "zset_recipe":
			c = &recipeCfg
		case "sl_lua":
			c = &slCfg
		}
		have := workloads[name].build(nil, 12345, c, testState())
		if string(have) != w {
			t.Errorf("%s: have %q, want %q", name, have, w)
		}
		// The key -cluster routes by is the one the request names.
		if k := workloads[name].key; k != "" && !bytes.Contains(have, appendKey(nil, k, 12345)) {
			t.Errorf("%s: key prefix %q is not the request's key: %q", name, k, have)
		} else if k == "" && bytes.Contains(have, []byte("12345")) {
			t.Errorf("%s: names key 12345 but has no key prefix", name)
		}
		// Appending must not disturb what is already in the buffer.
		two := workloads[name].build(workloads[name].build([]byte("prefix"), 7, c, testState()), 12345, c, testState())
		if !bytes.HasPrefix(two, []byte("prefix")) || !bytes.HasSuffix(two, []byte(w)) {
			t.Errorf("%s: appending broke the buffer: %q", name, two)
		}
		// Every request is a sequence of complete RESP arrays, as many as
		// the replies it expects.
		if name == "ping_inline" {
			continue
		}
		var n int
		for rest := have; len(rest) > 0; n++ {
			m, kind, err := parseReply(rest)
			if err != nil || m == 0 || kind != '*' {
				t.Errorf("%s: command %d is not a complete RESP array (n=%d err=%v): %q", name, n, m, err, rest)
				break
			}
			rest = rest[m:]
		}
		if n != workloads[name].repliesPerRequest() {
			t.Errorf("%s: %d commands, want %d (its replies per request)", name, n, workloads[name].repliesPerRequest())
		}
	}

	// -recipe-range reads the whole log instead of counting it.
	recipeCfg.recipeRange = true
	if have, w := string(appendRecipe(nil, 12345, &recipeCfg, testState())), recipe("ZRANGE", "log:12345", "0", "-1", "WITHSCORES"); have != w {
		t.Errorf("zset_recipe -recipe-range: have %q, want %q", have, w)
	}
	// Each request draws a new member.
	st := testState()
	a, b := appendRecipe(nil, 1, &recipeCfg, st), appendRecipe(nil, 1, &recipeCfg, st)
	if bytes.Equal(a, b) {
		t.Errorf("zset_recipe: two requests with the same member: %q", a)
	}
}

func TestAppendUUID(t *testing.T) {
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	for i, tc := range []struct {
		hi, lo uint64
		want   string
	}{
		0: {0, 0, "00000000-0000-4000-8000-000000000000"},
		1: {1<<64 - 1, 1<<64 - 1, "ffffffff-ffff-4fff-bfff-ffffffffffff"},
		2: {0x0123456789abcdef, 0xfedcba9876543210, "01234567-89ab-4def-bedc-ba9876543210"},
		3: {0x0000000000005000, 0x4000000000000000, "00000000-0000-4000-8000-000000000000"},
	} {
		have := string(appendUUID([]byte("x"), tc.hi, tc.lo))
		if have != "x"+tc.want {
			t.Errorf("%d: appendUUID(%#x, %#x): have %q, want %q", i, tc.hi, tc.lo, have, "x"+tc.want)
		}
		if !re.MatchString(have[1:]) {
			t.Errorf("%d: %q is not a version 4 UUID", i, have[1:])
		}
	}
}

func TestAppendBulkInt(t *testing.T) {
	for i, v := range []int64{0, 1, -1, 9, -9, 10, -10, testNowUs, testNowUs - 60e9, -testNowUs, 1<<63 - 1, -1 << 63} {
		have := string(appendBulkInt(nil, v))
		s := strconv.FormatInt(v, 10)
		if want := "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n"; have != want {
			t.Errorf("%d: appendBulkInt(%d): have %q, want %q", i, v, have, want)
		}
	}
}

func TestRecipeCheck(t *testing.T) {
	cfg := &config{max: 3}
	for i, tc := range []struct {
		reply   string
		limited bool
		err     string
	}{
		0:  {"*4\r\n:0\r\n:1\r\n:1\r\n:1\r\n", false, ""},
		1:  {"*4\r\n:5\r\n:1\r\n:3\r\n:1\r\n", false, ""}, // count == max: allowed
		2:  {"*4\r\n:0\r\n:1\r\n:4\r\n:1\r\n", true, ""},  // count > max
		3:  {"*4\r\n:0\r\n:1\r\n*6\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\nc\r\n$1\r\n3\r\n:1\r\n", false, ""},
		4:  {"*4\r\n:0\r\n:1\r\n*8\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\nc\r\n$1\r\n3\r\n$1\r\nd\r\n$1\r\n4\r\n:1\r\n", true, ""},
		5:  {"*4\r\n-WRONGTYPE Operation against a key holding the wrong kind of value\r\n:1\r\n:4\r\n:1\r\n", false, "WRONGTYPE Operation against a key holding the wrong kind of value"},
		6:  {"*4\r\n:0\r\n:1\r\n:9\r\n!3\r\nbad\r\n", false, "bad"},
		7:  {"*-1\r\n", false, "EXEC returned null (transaction aborted)"},
		8:  {"_\r\n", false, "EXEC returned null (transaction aborted)"},
		9:  {"*3\r\n:0\r\n:1\r\n:1\r\n", false, "EXEC reply does not have 4 elements"},
		10: {"+OK\r\n", false, "unexpected EXEC reply"},
	} {
		limited, errText := recipeCheck([]byte(tc.reply), cfg)
		if limited != tc.limited || string(errText) != tc.err {
			t.Errorf("%d: recipeCheck(%q) = %v, %q; want %v, %q", i, tc.reply, limited, errText, tc.limited, tc.err)
		}
	}
}

func TestAppendKeyLengths(t *testing.T) {
	for i, n := range []uint64{0, 9, 10, 99, 100, 99999, 100000, 1<<64 - 1} {
		b := appendKey(nil, "k:", n)
		got, kind, err := parseReply(b)
		if err != nil || got != len(b) || kind != '$' {
			t.Errorf("%d: appendKey(%d) = %q is not one bulk string (n=%d err=%v)", i, n, b, got, err)
		}
	}
}

// TestWork drives the connection loop against an in-memory fake server
// (net.Pipe, no network): pipelined batches, error replies, limited counting
// and stopping at the end of the window.
func TestWork(t *testing.T) {
	for _, p := range []int{1, 7} {
		cli, srv := net.Pipe()
		var served int
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			served = fakeServer(srv, func(i int) string {
				switch {
				case i%10 == 3:
					return "-ERR fake failure\r\n"
				case i%2 == 0:
					return "*5\r\n:1\r\n:101\r\n:0\r\n:1\r\n:60\r\n"
				}
				return "*5\r\n:0\r\n:101\r\n:99\r\n:-1\r\n:1\r\n"
			})
		}()
		cfg := &config{pipeline: p, keys: 10, dist: "zipf", zipfS: 1.1, seed: 1,
			burst: 100, count: 1000, period: 60, quantity: 1}
		cfg.throttleTail = appendThrottleArgs(nil, cfg)
		res := new(result)
		now := time.Now()
		c := &client{conn: cli, buf: make([]byte, 64)}
		work(c, workloads["throttle_cell"], cfg, 0, now.Add(20*time.Millisecond), now.Add(120*time.Millisecond), res)
		cli.Close()
		wg.Wait()

		if res.ioErr != nil {
			t.Fatalf("p=%d: io error %v", p, res.ioErr)
		}
		if res.ops == 0 || res.ops%uint64(p) != 0 || res.hist.total != res.ops {
			t.Errorf("p=%d: ops=%d hist=%d: want a positive multiple of the pipeline, equal", p, res.ops, res.hist.total)
		}
		if res.ops > uint64(served) {
			t.Errorf("p=%d: counted %d ops but the server answered %d", p, res.ops, served)
		}
		if res.errors == 0 || len(res.errTexts) != 1 || res.errTexts[0] != "ERR fake failure" {
			t.Errorf("p=%d: errors=%d texts=%q", p, res.errors, res.errTexts)
		}
		if res.limited == 0 || res.limited >= res.ops {
			t.Errorf("p=%d: limited=%d of %d ops", p, res.limited, res.ops)
		}
	}
}

// TestWorkRecipe drives the loop with zset_recipe: six replies per request,
// one op per EXEC, and an error anywhere in a transaction counts once.
func TestWorkRecipe(t *testing.T) {
	for _, p := range []int{1, 5} {
		cli, srv := net.Pipe()
		var served int
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			served = fakeServer(srv, func(i int) string {
				tx := i / 6
				switch i % 6 {
				case 0:
					return "+OK\r\n"
				case 5: // EXEC
					switch tx % 4 {
					case 1:
						return "*4\r\n:0\r\n:1\r\n:101\r\n:1\r\n" // above max: limited
					case 2:
						return "*4\r\n:0\r\n-WRONGTYPE fake\r\n:1\r\n:1\r\n"
					}
					return "*4\r\n:0\r\n:1\r\n:7\r\n:1\r\n"
				}
				if tx%4 == 3 && i%6 == 2 {
					return "-ERR queue failure\r\n" // and then, still, QUEUED and EXEC
				}
				return "+QUEUED\r\n"
			})
		}()
		cfg := &config{pipeline: p, keys: 10, dist: "uniform", seed: 1, max: 100, window: 60000}
		cfg.windowTail = appendBulk(nil, "60000")
		res := new(result)
		now := time.Now()
		c := &client{conn: cli, buf: make([]byte, 64)}
		work(c, workloads["zset_recipe"], cfg, 0, now.Add(20*time.Millisecond), now.Add(120*time.Millisecond), res)
		cli.Close()
		wg.Wait()

		if res.ioErr != nil {
			t.Fatalf("p=%d: io error %v", p, res.ioErr)
		}
		if res.ops == 0 || res.ops%uint64(p) != 0 || res.hist.total != res.ops {
			t.Errorf("p=%d: ops=%d hist=%d: want a positive multiple of the pipeline, equal", p, res.ops, res.hist.total)
		}
		if 6*res.ops > uint64(served) {
			t.Errorf("p=%d: counted %d transactions but the server answered %d replies", p, res.ops, served)
		}
		// Half the transactions fail (cases 2 and 3), each counted once.
		tx := uint64(served / 6)
		if res.errors < tx/2-1 || res.errors > tx/2+1 {
			t.Errorf("p=%d: errors=%d of %d transactions, want half", p, res.errors, tx)
		}
		if len(res.errTexts) != 2 || !contains(res.errTexts, "WRONGTYPE fake") || !contains(res.errTexts, "ERR queue failure") {
			t.Errorf("p=%d: texts=%q", p, res.errTexts)
		}
		if res.limited == 0 || res.limited > res.ops/4+1 {
			t.Errorf("p=%d: limited=%d of %d ops, want about a quarter", p, res.limited, res.ops)
		}
	}
}

// fakeServer answers every RESP request read from conn with reply(i) until
// the connection closes, and returns how many it answered.
func fakeServer(conn net.Conn, reply func(i int) string) int {
	defer conn.Close()
	buf := make([]byte, 0, 1<<16)
	tmp := make([]byte, 4096)
	served := 0
	for {
		m, err := conn.Read(tmp)
		buf = append(buf, tmp[:m]...)
		var out []byte
		for {
			n, _, perr := parseReply(buf) // requests are RESP arrays too
			if perr != nil {
				return served
			}
			if n == 0 {
				break
			}
			buf = buf[n:]
			out = append(out, reply(served)...)
			served++
		}
		if len(out) > 0 {
			if _, err := conn.Write(out); err != nil {
				return served
			}
		}
		if err != nil {
			return served
		}
	}
}

// trickleConn is a net.Conn that returns its data one byte per Read.
type trickleConn struct {
	net.Conn // nil: only Read is used
	data     []byte
}

func (c *trickleConn) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	p[0] = c.data[0]
	c.data = c.data[1:]
	return 1, nil
}

func TestFillRequests(t *testing.T) {
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	for i, tc := range []struct {
		kind string
		k, e uint64
		ttl  time.Duration // -fill-ttl
		want []string      // "" matches anything (checked below)
	}{
		0: {"gcra_cell", 42, 0, 0, []string{"CL.THROTTLE", "rl:42", "10", "1", "3600", "1"}},
		1: {"sl", 7, 3, 0, []string{"SL.THROTTLE", "sl:7", "100", "3600000"}},
		2: {"zset", 1234, 5, 0, []string{"ZADD", "z:1234", "", ""}},
		// -fill-ttl: one call per period, so the key lives one period.
		3: {"gcra_cell", 42, 0, 15 * time.Second, []string{"CL.THROTTLE", "rl:42", "10", "1", "15", "1"}},
		4: {"gcra_cell", 9, 0, 14200 * time.Millisecond, []string{"CL.THROTTLE", "rl:9", "10", "1", "15", "1"}},
		5: {"gcra_cell", 9, 0, time.Millisecond, []string{"CL.THROTTLE", "rl:9", "10", "1", "1", "1"}},
	} {
		cfg := &config{fillEntries: 100, fillTTL: tc.ttl}
		build, err := fillBuilder(nil, cfg, tc.kind)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		have := build(nil, tc.k, tc.e, rand.New(rand.NewPCG(1, 2)))
		args := splitCommand(t, have)
		if len(args) != len(tc.want) {
			t.Fatalf("%d: have %q, want %q", i, args, tc.want)
		}
		for j, w := range tc.want {
			if w != "" && args[j] != w {
				t.Errorf("%d: argument %d: have %q, want %q", i, j, args[j], w)
			}
		}
		if tc.kind == "zset" {
			score, err := strconv.ParseInt(args[2], 10, 64)
			now := time.Now().UnixMicro()
			if err != nil || score < now-time.Minute.Microseconds() || score > now+time.Minute.Microseconds() {
				t.Errorf("%d: score %q is not a microsecond timestamp near now (%d)", i, args[2], now)
			}
			if !uuid.MatchString(args[3]) {
				t.Errorf("%d: member %q is not a UUID", i, args[3])
			}
		}
	}
	if _, err := fillBuilder(nil, &config{}, "nope"); err == nil {
		t.Errorf("fillBuilder accepted an unknown kind")
	}
}

// splitCommand decodes one RESP array of bulk strings.
func splitCommand(t *testing.T, b []byte) []string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(string(b), "\r\n"), "\r\n")
	n, err := strconv.Atoi(strings.TrimPrefix(lines[0], "*"))
	if err != nil || len(lines) != 1+2*n {
		t.Fatalf("not one RESP array of bulk strings: %q", b)
	}
	var args []string
	for i := 0; i < n; i++ {
		l, _ := strconv.Atoi(strings.TrimPrefix(lines[1+2*i], "$"))
		if s := lines[2+2*i]; len(s) == l {
			args = append(args, s)
		} else {
			t.Fatalf("bad bulk length in %q", b)
		}
	}
	return args
}
