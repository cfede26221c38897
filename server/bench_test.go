package server

import (
	"io"
	"log/slog"
	"math/rand"
	"strconv"
	"testing"

	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/shards"
)

// BenchmarkPipeline runs pipeline batches of 32 requests through
// runBuffered (parse, dispatch, reply), over 100k keys so that lookups miss
// the CPU cache as under load, with prefetch-batch on and off. ns/op is
// per request; allocs/op must be 0 either way.
func BenchmarkPipeline(b *testing.B) {
	const nkeys, batch = 100_000, 32
	for _, cmd := range []string{"GET", "INCR", "CL.THROTTLE", "SL.THROTTLE"} {
		for _, prefetch := range []string{"yes", "no"} {
			b.Run(cmd+"/prefetch="+prefetch, func(b *testing.B) {
				srv := benchServer(b)
				if err := srv.cfg.Set("prefetch-batch", prefetch); err != nil {
					b.Fatal(err)
				}
				req := func(i int) string {
					k := "rl:" + strconv.Itoa(100000+i%nkeys)
					switch cmd {
					case "CL.THROTTLE":
						return multibulk(cmd, k, "100", "1000", "1")
					case "SL.THROTTLE":
						return multibulk(cmd, k, "1000000", "60000")
					}
					return multibulk(cmd, k)
				}
				// Batches over every key, each key in a random batch.
				perm := rand.Perm(nkeys)
				var batches [][]byte
				for i := 0; i+batch <= nkeys; i += batch {
					var s string
					for _, k := range perm[i : i+batch] {
						s += req(k)
					}
					batches = append(batches, []byte(s))
				}
				c := benchConn(b, srv)
				c.buf = make([]byte, defaultReadBytes)
				run := func(p []byte) {
					c.r, c.w = 0, copy(c.buf, p)
					c.runBuffered()
					c.Out = c.Out[:0]
				}
				for _, p := range batches {
					run(p) // creates the keys
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N/batch+1; i++ {
					run(batches[i%len(batches)])
				}
			})
		}
	}
}

// benchConn returns a connection with no socket, for driving runBuffered
// directly.
func benchConn(b *testing.B, srv *Server) *Conn {
	b.Helper()
	c := socketlessConn(srv)
	c.Out = make([]byte, 0, 4096)
	return c
}

func benchServer(b *testing.B) *Server {
	b.Helper()
	store := shards.New(shards.Options{})
	return New(store, config.New(), slog.New(slog.NewTextHandler(io.Discard, nil)))
}

var benchKeys = func() [][]byte {
	k := make([][]byte, 1024)
	for i := range k {
		k[i] = []byte("rl:" + strconv.Itoa(100000+i))
	}
	return k
}()

func benchKey(i int) []byte { return benchKeys[i&1023] }
