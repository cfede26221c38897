package command

import (
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/shards"
)

// benchConn returns a connection with no socket, for driving the
// dispatcher directly: it measures the command path (lookup, arity, locks,
// handler, reply encoding) without the network.
func benchConn(b *testing.B, srv *Engine) *Client {
	b.Helper()
	return &Client{eng: srv, proto: 2, Authed: true, Out: make([]byte, 0, 4096)}
}

func benchServer(b *testing.B) *Engine {
	b.Helper()
	store := shards.New(shards.Options{})
	return NewEngine(store, config.New(), slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// BenchmarkDispatch runs one command per op through the dispatcher, in
// parallel, over 1024 keys. Compare allocs/op: the targets are 0 for GET,
// SET (on existing keys), INCR, CL.THROTTLE, and the hash and list
// commands on existing small hashes and lists.
func BenchmarkDispatch(b *testing.B) {
	bucket := func(i int) [][]byte {
		return [][]byte{[]byte("HSET"), benchKey(i), []byte("tokens"), []byte("9"), []byte("ts"), []byte("1795307408539")}
	}
	window := func(i int) [][]byte {
		args := [][]byte{[]byte("RPUSH"), benchKey(i)}
		for j := 0; j < 100; j++ {
			args = append(args, strconv.AppendInt(nil, 1795307408539667+int64(j), 10))
		}
		return args
	}
	cases := []struct {
		name string
		args func(i int) [][]byte
		warm func(i int) [][]byte // creates the keys; nil: args itself
	}{
		{"PING", func(int) [][]byte { return [][]byte{[]byte("PING")} }, nil},
		{"SET", func(i int) [][]byte { return [][]byte{[]byte("SET"), benchKey(i), []byte("xyz")} }, nil},
		{"GET", func(i int) [][]byte { return [][]byte{[]byte("GET"), benchKey(i)} }, nil},
		{"INCR", func(i int) [][]byte { return [][]byte{[]byte("INCR"), benchKey(i)} }, nil},
		{"CL.THROTTLE", func(i int) [][]byte {
			return [][]byte{[]byte("CL.THROTTLE"), benchKey(i), []byte("100"), []byte("1000"), []byte("1")}
		}, nil},
		// A token bucket's hash: its write, its read and its refill.
		{"HSET", bucket, nil},
		{"HGET", func(i int) [][]byte { return [][]byte{[]byte("HGET"), benchKey(i), []byte("ts")} }, bucket},
		{"HMGET", func(i int) [][]byte { return [][]byte{[]byte("HMGET"), benchKey(i), []byte("tokens"), []byte("ts")} }, bucket},
		{"HINCRBY", func(i int) [][]byte { return [][]byte{[]byte("HINCRBY"), benchKey(i), []byte("tokens"), []byte("1")} }, bucket},
		// A moving window's list of 100 timestamps: a push and the trim
		// that follows it (alternate ops, one key each), and a read.
		{"LPUSH+LTRIM", func(i int) [][]byte {
			if i%2 == 0 {
				return [][]byte{[]byte("LPUSH"), benchKey(i / 2), []byte("1795307408539667")}
			}
			return [][]byte{[]byte("LTRIM"), benchKey(i / 2), []byte("0"), []byte("99")}
		}, func(i int) [][]byte { return window(i / 2) }},
		{"LINDEX", func(i int) [][]byte { return [][]byte{[]byte("LINDEX"), benchKey(i), []byte("-1")} }, window},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) { runDispatch(b, benchServer(b), bc.args, bc.warm) })
	}
}

// BenchmarkDispatchAccess is BenchmarkDispatch's GET and CL.THROTTLE with
// an LRU or LFU policy set (and no maxmemory): what recording every access
// in the key's entry costs.
func BenchmarkDispatchAccess(b *testing.B) {
	for _, policy := range []string{"allkeys-lru", "allkeys-lfu"} {
		for _, bc := range getAndThrottle {
			b.Run(policy+"/"+bc.name, func(b *testing.B) {
				srv := benchServer(b)
				if err := srv.cfg.Set("maxmemory-policy", policy); err != nil {
					b.Fatal(err)
				}
				runDispatch(b, srv, bc.args, nil)
			})
		}
	}
}

// BenchmarkDispatchACL is BenchmarkDispatch's CL.THROTTLE and GET for a
// user allowed everything and for an application user limited to
// "+@ratelimit +get ~rl:*": the cost of the ACL check (target: at most 3 %
// of CL.THROTTLE).
func BenchmarkDispatchACL(b *testing.B) {
	for _, user := range []struct{ name, rules string }{
		{"all", "on nopass +@all ~* &*"},
		{"restricted", "reset on nopass +@ratelimit +get ~rl:*"},
	} {
		for _, bc := range getAndThrottle {
			b.Run(user.name+"/"+bc.name, func(b *testing.B) {
				srv := benchServer(b)
				r := srv.acl.def.rules.Load().clone()
				for _, op := range strings.Fields(user.rules) {
					if err := r.apply(op, 0); err != nil {
						b.Fatal(err)
					}
				}
				srv.acl.put("default", r)
				runDispatch(b, srv, bc.args, nil)
			})
		}
	}
}

// getAndThrottle are the requests of BenchmarkDispatchAccess and
// BenchmarkDispatchACL.
var getAndThrottle = []struct {
	name string
	args func(i int) [][]byte
}{
	{"GET", func(i int) [][]byte { return [][]byte{[]byte("GET"), benchKey(i)} }},
	{"CL.THROTTLE", func(i int) [][]byte {
		return [][]byte{[]byte("CL.THROTTLE"), benchKey(i), []byte("100"), []byte("1000"), []byte("1")}
	}},
}

// runDispatch runs requests args(i) of 1024 keys through srv's dispatcher
// in parallel, once each before the clock starts.
func runDispatch(b *testing.B, srv *Engine, args, warmArgs func(i int) [][]byte) {
	// Pre-build requests so the benchmark measures the server only.
	reqs := make([][][]byte, 1024)
	for i := range reqs {
		reqs[i] = args(i)
	}
	warm := benchConn(b, srv)
	for i, r := range reqs {
		if warmArgs != nil { // creates the keys; nil: args itself
			r = warmArgs(i)
		}
		warm.dispatchCmd(warm.Lookup(r[0]), r)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		c := benchConn(b, srv)
		i := 0
		for pb.Next() {
			r := reqs[i&1023]
			c.dispatchCmd(c.Lookup(r[0]), r)
			c.Out = c.Out[:0]
			i++
		}
	})
}

var benchKeys = func() [][]byte {
	k := make([][]byte, 1024)
	for i := range k {
		k[i] = []byte("rl:" + strconv.Itoa(100000+i))
	}
	return k
}()

func benchKey(i int) []byte { return benchKeys[i&1023] }

// BenchmarkDispatchCluster is BenchmarkDispatch with cluster-enabled yes:
// single-key commands pay nothing for it, multi-key ones hash their keys
// once more for the CROSSSLOT check (two keys of one hash tag here). The
// table/ cases run with a slot table of two nodes, this one owning every
// slot: each key's slot is computed and looked up (target: at most 3 %
// of CL.THROTTLE).
func BenchmarkDispatchCluster(b *testing.B) {
	tagged := func(i int, suffix string) []byte { return append([]byte("{"+string(benchKey(i))+"}"), suffix...) }
	for _, bc := range []struct {
		name string
		args func(i int) [][]byte
	}{
		{"SET", func(i int) [][]byte { return [][]byte{[]byte("SET"), benchKey(i), []byte("xyz")} }},
		{"CL.THROTTLE", func(i int) [][]byte {
			return [][]byte{[]byte("CL.THROTTLE"), benchKey(i), []byte("100"), []byte("1000"), []byte("1")}
		}},
		{"MSET", func(i int) [][]byte {
			return [][]byte{[]byte("MSET"), tagged(i, "a"), []byte("1"), tagged(i, "b"), []byte("2")}
		}},
		{"CL.THROTTLEALL", func(i int) [][]byte {
			return [][]byte{[]byte("CL.THROTTLEALL"), []byte("2"), tagged(i, "s"), []byte("100"), []byte("1000"), []byte("1"),
				tagged(i, "m"), []byte("1000"), []byte("100000"), []byte("60")}
		}},
	} {
		for _, table := range []bool{false, true} {
			name := bc.name
			if table {
				name = "table/" + name
			}
			b.Run(name, func(b *testing.B) {
				cfg := config.New()
				if err := cfg.Set("cluster-enabled", "yes"); err != nil {
					b.Fatal(err)
				}
				srv := NewEngine(shards.New(shards.Options{}), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
				if table {
					srv.SetSlotTable(&SlotTable{Nodes: []NodeAddr{{ID: "a"}, {ID: "b"}}})
				}
				runDispatch(b, srv, bc.args, nil)
			})
		}
	}
}

// BenchmarkDispatchObservability is BenchmarkDispatch's GET and
// CL.THROTTLE with the per-command timing Redis users expect
// (latency-tracking and SLOWLOG, both on by default) and with both off:
// what they cost (target: at most 3 % of CL.THROTTLE with the metrics).
func BenchmarkDispatchObservability(b *testing.B) {
	for _, mode := range []struct{ name, tracking, slowlog string }{
		{"off", "no", "-1"},
		{"default", "yes", "10000"},
	} {
		for _, bc := range getAndThrottle {
			b.Run(mode.name+"/"+bc.name, func(b *testing.B) {
				srv := benchServer(b)
				if err := srv.cfg.Set("latency-tracking", mode.tracking); err != nil {
					b.Fatal(err)
				}
				if err := srv.cfg.Set("slowlog-log-slower-than", mode.slowlog); err != nil {
					b.Fatal(err)
				}
				runDispatch(b, srv, bc.args, nil)
			})
		}
	}
}
