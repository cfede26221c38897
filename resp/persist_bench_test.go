package resp

import (
	"io"
	"log/slog"
	"testing"

	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/persist"
	"github.com/ratekv/ratekv/shards"
	"github.com/stretchr/testify/require"
)

// BenchmarkJournal measures what the journal adds to a write command on
// the dispatcher path: SET and CL.THROTTLE with no journal, and with an
// append-only log under appendfsync no and everysec (batches of 32, as a
// pipelined client sends them). Compare ns/op between the rows: the
// target is everysec within 15% of none (issue 5).
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
				cfg := config.New()
				require.NoError(b, cfg.Set("dir", b.TempDir()))
				require.NoError(b, cfg.Set("save", ""))
				clock := newFakeClock() // frozen: no key expires during the run
				store := shards.New(shards.Options{Shards: 16, Now: clock.Now})
				log := slog.New(slog.NewTextHandler(io.Discard, nil))
				srv := New(store, cfg, log)
				if mode != "none" {
					require.NoError(b, cfg.Set("appendfsync", mode))
					mgr, err := persist.Open(persist.Options{Config: cfg, Store: store, Replay: srv.Replay, Keys: RecordKeys, Logger: log})
					require.NoError(b, err)
					b.Cleanup(func() { mgr.Close() })
					srv.SetJournal(mgr.Journal())
				}
				reqs := make([][][]byte, 1024)
				for i := range reqs {
					reqs[i] = cmds[name](i)
				}
				c := benchConn(b, srv)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					c.dispatch(reqs[i&1023])
					if i%32 == 31 {
						if c.journalSeq != 0 {
							srv.journal.Sync(c.journalSeq)
							c.journalSeq = 0
						}
						c.out = c.out[:0]
					}
				}
			})
		}
	}
}
