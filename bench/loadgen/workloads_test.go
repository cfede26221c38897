package main

import (
	"bytes"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestWorkloadRequests(t *testing.T) {
	cfg := &config{burst: 100, count: 1000, period: 60, quantity: 1, value: "xxx"}
	cfg.evalHead = appendCommand(nil, "EVALSHA", strings.Repeat("a", 40), "1")
	cfg.evalHead[1] = '8' // *4 -> *8: key and four arguments follow
	cfg.throttleTail = appendThrottleArgs(nil, cfg)
	want := map[string]string{
		"ping":          "*1\r\n$4\r\nPING\r\n",
		"ping_inline":   "PING\r\n",
		"set":           "*3\r\n$3\r\nSET\r\n$9\r\nkey:12345\r\n$3\r\nxxx\r\n",
		"get":           "*2\r\n$3\r\nGET\r\n$9\r\nkey:12345\r\n",
		"incr":          "*2\r\n$4\r\nINCR\r\n$13\r\ncounter:12345\r\n",
		"throttle_cell": string(appendCommand(nil, "CL.THROTTLE", "rl:12345", "100", "1000", "60", "1")),
		"throttle_lua":  string(appendCommand(nil, "EVALSHA", strings.Repeat("a", 40), "1", "rl:12345", "100", "1000", "60", "1")),
	}
	for _, name := range workloadNames() {
		w, ok := want[name]
		if !ok {
			t.Errorf("workload %s has no expected request in this test", name)
			continue
		}
		have := workloads[name].build(nil, 12345, cfg)
		if string(have) != w {
			t.Errorf("%s: have %q, want %q", name, have, w)
		}
		// Appending must not disturb what is already in the buffer.
		two := workloads[name].build(workloads[name].build([]byte("prefix"), 7, cfg), 12345, cfg)
		if !bytes.HasPrefix(two, []byte("prefix")) || !bytes.HasSuffix(two, []byte(w)) {
			t.Errorf("%s: appending broke the buffer: %q", name, two)
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
