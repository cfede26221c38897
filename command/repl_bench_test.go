package command

import (
	"bufio"
	"io"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekv/ratekv/journal"
)

// Replication's hot path: what a primary pays per write to feed its
// replicas' links, and what a replica pays per record it applies. Both
// run on one P (GOMAXPROCS=1), as bench/repl.sh runs the servers, so the
// links' goroutines are charged to the primary's ops. Count instructions
// rather than time (callgrind, slope between two -benchtime values): the
// writes to a replica's socket are counted as writes/op, not timed.

// replBenchCases are the requests of a rate limiter's writes.
var replBenchCases = []struct {
	name string
	args func(i int) [][]byte
}{
	{"SET", func(i int) [][]byte { return [][]byte{[]byte("SET"), benchKey(i), []byte("xyz")} }},
	{"CL.THROTTLE", func(i int) [][]byte {
		return [][]byte{[]byte("CL.THROTTLE"), benchKey(i), []byte("100"), []byte("1000"), []byte("1")}
	}},
}

// sinkConn is a replica's end of a link that takes every byte at once and
// sends nothing until it is closed.
type sinkConn struct {
	writes, bytes atomic.Int64
	done          chan struct{}
	once          sync.Once
}

func newSinkConn() *sinkConn { return &sinkConn{done: make(chan struct{})} }

func (s *sinkConn) Read([]byte) (int, error) { <-s.done; return 0, io.EOF }

func (s *sinkConn) Write(p []byte) (int, error) {
	s.writes.Add(1)
	s.bytes.Add(int64(len(p)))
	return len(p), nil
}

func (s *sinkConn) Close() error { s.once.Do(func() { close(s.done) }); return nil }

// attachSinks attaches n streaming replica links to srv, each writing to
// a sinkConn, and waits until they stream.
func attachSinks(b *testing.B, srv *Engine, n int) []*sinkConn {
	b.Helper()
	if n == 0 {
		return nil
	}
	r := srv.repl
	r.mu.Lock()
	bl := r.ensureBacklogLocked()
	id := r.replID
	r.mu.Unlock()
	var sinks []*sinkConn
	for range n {
		s := newSinkConn()
		l := &replLink{r: r, ip: "127.0.0.1", addr: "127.0.0.1:1", wantID: id, wantOff: bl.end.Load() + 1,
			cl: benchConn(b, srv).linkClient(ClientReplica)}
		go l.serve(s, nil)
		sinks = append(sinks, s)
	}
	for {
		r.mu.Lock()
		streaming := len(r.wakes)
		r.mu.Unlock()
		if streaming == n {
			break
		}
		time.Sleep(time.Millisecond) // not Gosched: a spin would vary the instruction count
	}
	b.Cleanup(srv.StopReplication)
	return sinks
}

// BenchmarkReplFeed runs pipelined writes through the dispatcher of a
// primary with 0 and with 2 replica links, in turns of 50 connections'
// batches of 32 requests (short-turns: 4 connections'); the links run
// between turns (where an event loop waits for its sockets). Compare the
// instructions per op of replicas=2 with replicas=0.
func BenchmarkReplFeed(b *testing.B) {
	const batch = 32
	for _, bc := range replBenchCases {
		for _, cc := range []struct {
			n     int
			turn  int
			short string
		}{{0, 50 * batch, ""}, {2, 50 * batch, ""}, {2, 4 * batch, ",short-turns"}} {
			n, turn := cc.n, cc.turn
			b.Run(bc.name+"/replicas="+strconv.Itoa(n)+cc.short, func(b *testing.B) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
				srv := benchServer(b)
				sinks := attachSinks(b, srv, n)
				type req struct {
					cmd  *Command
					args [][]byte
					raw  []byte
				}
				reqs := make([]req, 1024)
				c := benchConn(b, srv)
				for i := range reqs {
					raw := journal.AppendCommand(nil, bc.args(i)...)
					args, _, _ := journal.ParseRecord(raw, nil) // aliasing raw, as a request read
					reqs[i] = req{c.Lookup(args[0]), args, raw}
					c.Run(reqs[i].cmd, args, reqs[i].raw) // creates the keys
				}
				c.EndBatch()
				c.SyncJournal()
				c.Out = c.Out[:0]
				runtime.Gosched()
				var writes int64
				for _, s := range sinks {
					writes -= s.writes.Load()
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					r := &reqs[i&1023]
					c.Run(r.cmd, r.args, r.raw)
					if i%batch == batch-1 || i == b.N-1 {
						c.EndBatch()
						c.SyncJournal()
						c.Out = c.Out[:0]
					}
					if i%turn == turn-1 || i == b.N-1 {
						runtime.Gosched()
					}
				}
				for i := 0; i < 100 && n > 0 && srv.repl.bl.end.Load() > sinkSent(srv); i++ {
					runtime.Gosched()
				}
				b.StopTimer()
				for _, s := range sinks {
					writes += s.writes.Load()
				}
				if n > 0 {
					b.ReportMetric(float64(writes)/float64(n)/float64(b.N), "writes/op/link")
				}
			})
		}
	}
}

// sinkSent is the least offset the links of srv have written up to.
func sinkSent(srv *Engine) int64 {
	r := srv.repl
	r.mu.Lock()
	defer r.mu.Unlock()
	least := r.bl.end.Load()
	for l := range r.links {
		least = min(least, l.sent.Load())
	}
	return least
}

// streamOf returns the replication stream a primary sends for the writes
// args(0) ... args(1023), each once after the keys exist.
func streamOf(b *testing.B, args func(i int) [][]byte) []byte {
	b.Helper()
	p := benchServer(b)
	p.repl.mu.Lock()
	bl := p.repl.ensureBacklogLocked()
	p.repl.mu.Unlock()
	c := benchConn(b, p)
	run := func() {
		for i := range 1024 {
			raw := journal.AppendCommand(nil, args(i)...)
			a, _, _ := journal.ParseRecord(raw, nil)
			c.Run(c.Lookup(a[0]), a, raw)
			c.Out = c.Out[:0]
		}
	}
	run()
	cur, ok := bl.cursorAt(bl.end.Load())
	if !ok {
		b.Fatal("no cursor at the stream's end")
	}
	run()
	return cur.read(nil, 1<<30)
}

// loopConn is a primary's end of a link that sends a stream of 1024
// records over and over, until it has sent records records.
type loopConn struct {
	stream []byte
	pos    int
	left   int // records still to send, in whole streams
}

func (l *loopConn) Read(p []byte) (int, error) {
	if l.pos == len(l.stream) {
		if l.left <= 0 {
			return 0, io.EOF
		}
		l.left -= 1024
		l.pos = 0
	}
	n := copy(p, l.stream[l.pos:])
	l.pos += n
	return n, nil
}

func (l *loopConn) Write(p []byte) (int, error) { return len(p), nil }

func (l *loopConn) Close() error { return nil }

// BenchmarkReplApply is a replica applying its primary's stream of SET
// and CL.THROTTLE effect records (the link's read loop, parse, apply, and
// its own stream for replicas of its own), per record.
func BenchmarkReplApply(b *testing.B) {
	for _, bc := range replBenchCases {
		b.Run(bc.name, func(b *testing.B) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
			stream := streamOf(b, bc.args)
			srv := benchServer(b)
			r := srv.repl
			u := newUpstream(r, "127.0.0.1", "1")
			r.mu.Lock()
			r.masterHost, r.masterPort, r.link = "127.0.0.1", "1", u
			r.ensureBacklogLocked()
			r.attachJournalsLocked()
			r.mu.Unlock()
			warm := &loopConn{stream: stream, pos: len(stream), left: 1024}
			u.stream(warm, bufio.NewReaderSize(warm, 64<<10)) // creates the keys
			conn := &loopConn{stream: stream, pos: len(stream), left: b.N}
			b.ReportAllocs()
			b.ResetTimer()
			u.stream(conn, bufio.NewReaderSize(conn, 64<<10))
		})
	}
}
