package server

import (
	"io"
	"log/slog"
	"math/rand"
	"strconv"
	"strings"
	"testing"

	"github.com/ratekv/ratekv/command"
	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/persist"
	"github.com/ratekv/ratekv/shards"
	"github.com/stretchr/testify/require"
)

// BenchmarkJournal measures what the journal adds to a write command on
// the dispatcher path: SET and CL.THROTTLE with no journal, and with an
// append-only log under appendfsync no and everysec (batches of 32, as a
// pipelined client sends them). Compare ns/op between the rows: the
// target is everysec within 15% of none.
func BenchmarkJournal(b *testing.B) {
	cmds := map[string]func(i int) [][]byte{
		"SET": func(i int) [][]byte { return [][]byte{[]byte("SET"), benchKey(i), []byte("xyz")} },
		"CL.THROTTLE": func(i int) [][]byte {
			return [][]byte{[]byte("CL.THROTTLE"), benchKey(i), []byte("1000000000"), []byte("1000000000"), []byte("1")} // never limited: every call is a write
		},
	}
	for _, name := range []string{"SET", "CL.THROTTLE"} {
		for _, mode := range []string{"none", "no", "everysec"} {
			b.Run(name+"/"+mode, func(b *testing.B) {
				srv := journalBenchServer(b, mode, "")
				reqs := make([][][]byte, 1024)
				for i := range reqs {
					reqs[i] = cmds[name](i)
				}
				c := benchConn(b, srv)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					c.Run(c.Lookup(reqs[i&1023][0]), reqs[i&1023], nil)
					if i%32 == 31 {
						if c.Journaled.Seq != 0 {
							c.Journaled.Ref.Sync(c.Journaled.Seq)
							c.Journaled.Seq = 0
						}
						c.Out = c.Out[:0]
					}
				}
			})
		}
	}
}

// BenchmarkJournalPipeline is BenchmarkJournal through runBuffered:
// batches of 32 requests parsed from a read buffer, as a pipelined client
// sends them, over 100k keys. SET and ZADD are logged as received when
// they can be (command's Client.rawRecord); CL.THROTTLE as its image.
// ns/op is per request.
func BenchmarkJournalPipeline(b *testing.B) {
	const nkeys, batch = 100_000, 32
	reqs := map[string]func(i int) string{
		"SET": func(i int) string { return multibulk("SET", "key:"+strconv.Itoa(i), "xyz") },
		"ZADD": func(i int) string {
			return multibulk("ZADD", "zs:"+strconv.Itoa(i%1000), strconv.Itoa(i), "m"+strconv.Itoa(i))
		},
		"CL.THROTTLE": func(i int) string {
			return multibulk("CL.THROTTLE", "rl:"+strconv.Itoa(i), "1000000000", "1000000000", "1")
		},
	}
	for _, name := range []string{"SET", "ZADD", "CL.THROTTLE"} {
		for _, mode := range []string{"none", "everysec"} {
			b.Run(name+"/"+mode, func(b *testing.B) {
				srv := journalBenchServer(b, mode, "0")
				perm := rand.Perm(nkeys)
				var batches [][]byte
				for i := 0; i+batch <= nkeys; i += batch {
					var s strings.Builder
					for _, k := range perm[i : i+batch] {
						s.WriteString(reqs[name](k))
					}
					batches = append(batches, []byte(s.String()))
				}
				c := benchConn(b, srv)
				c.buf = make([]byte, defaultReadBytes)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N/batch+1; i++ {
					p := batches[i%len(batches)]
					c.r, c.w = 0, copy(c.buf, p)
					c.runBuffered()
					if c.Journaled.Seq != 0 {
						c.Journaled.Ref.Sync(c.Journaled.Seq)
						c.Journaled.Seq = 0
					}
					c.Out = c.Out[:0]
				}
			})
		}
	}
}

// journalBenchServer is a server on a frozen clock (no key expires during
// a run) with, unless mode is "none", an append-only log under that
// appendfsync policy in a temporary directory. rewritePct, when set, is
// auto-aof-rewrite-percentage ("0": no rewrites during the run).
func journalBenchServer(b *testing.B, mode, rewritePct string) *Server {
	b.Helper()
	cfg := config.New()
	require.NoError(b, cfg.Set("dir", b.TempDir()))
	require.NoError(b, cfg.Set("save", ""))
	if rewritePct != "" {
		require.NoError(b, cfg.Set("auto-aof-rewrite-percentage", rewritePct))
	}
	clock := newFakeClock()
	store := shards.New(shards.Options{Shards: 16, Now: clock.Now})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := New(store, cfg, log)
	if mode != "none" {
		require.NoError(b, cfg.Set("appendfsync", mode))
		mgr, err := persist.Open(persist.Options{Config: cfg, Store: store, Replay: srv.Replay, Keys: command.RecordKeys, Resets: command.RecordResets, Logger: log})
		require.NoError(b, err)
		b.Cleanup(func() { mgr.Close() })
		srv.SetJournal(mgr.AOF())
	}
	return srv
}
