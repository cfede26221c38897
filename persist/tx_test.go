package persist_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekv/ratekv/command"
	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/persist"
	"github.com/ratekv/ratekv/server"
	"github.com/ratekv/ratekv/shards"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestTransactionsDuringARewrite: a transaction's records reach the log in
// one append (resp's EXEC), which a rewrite's capture must take apart to
// see which shards it touched and count its records. Transactions over
// keys of many shards run while rewrites capture the keyspace; after a
// restart every counter and sorted set is what the transactions made it.
func TestTransactionsDuringARewrite(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	c, stop := serve(t, dir)
	preloadStatic(t, c, 50000)

	const workers, keys = 4, 16
	counts := make([]map[string]int64, workers)
	for w := range workers {
		counts[w] = map[string]int64{}
	}
	stopWork := untilStopped(workers, func(w, i int) bool {
		// Two keys, most often in two shards.
		a, b := fmt.Sprintf("w%d:ctr:%d", w, i%keys), fmt.Sprintf("w%d:z:%d", w, (i*7)%keys)
		var incr *redis.IntCmd
		_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			incr = p.Incr(ctx, a)
			p.ZAdd(ctx, b, redis.Z{Score: float64(i), Member: fmt.Sprint(i)})
			p.PExpire(ctx, b, time.Hour)
			return nil
		})
		if err != nil {
			t.Errorf("transaction: %v", err)
			return false
		}
		counts[w][a] = incr.Val()
		counts[w][b]++
		return true
	})
	for range 3 {
		require.NoError(t, c.BgRewriteAOF(ctx).Err())
		require.Eventually(t, func() bool {
			m := infoPersistence(t, c)
			return m["aof_rewrite_in_progress"] == "0" && m["aof_rewrite_scheduled"] == "0"
		}, 20*time.Second, 5*time.Millisecond)
		require.Equal(t, "ok", infoPersistence(t, c)["aof_last_bgrewrite_status"])
	}
	stopWork()
	stop()

	c, _ = serve(t, dir)
	for w := range workers {
		for k, v := range counts[w] {
			if strings.Contains(k, ":ctr:") {
				require.Equal(t, fmt.Sprint(v), c.Get(ctx, k).Val(), k)
			} else {
				require.Equal(t, v, c.ZCard(ctx, k).Val(), k)
			}
		}
	}
	require.Equal(t, int64(50000), int64(len(c.Keys(ctx, "static:*").Val())))
}

// untilStopped runs body(w, i) for i = 0, 1, … on each of n goroutines
// (w their number) until body returns false or stop is called; stop
// waits for them.
func untilStopped(n int, body func(w, i int) bool) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				if !body(w, i) {
					return
				}
			}
		}()
	}
	return func() {
		close(done)
		wg.Wait()
	}
}

// incrFile returns the path of dir's one incremental log file and its
// records (the zeros written ahead of them left out).
func incrFile(t *testing.T, dir string) (string, []byte) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "appendonlydir", "*.incr.aof"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	data, err := os.ReadFile(files[0])
	require.NoError(t, err)
	return files[0], bytes.TrimRight(data, "\x00")
}

// txLog writes SET a 1, then a transaction of INCR x and SET y v, to the
// log in dir and stops. It returns the log file, its records, and the
// offsets of the transaction's MULTI and of its SET y record.
func txLog(t *testing.T, dir string, conf ...string) (file string, data []byte, multi, setY int) {
	t.Helper()
	ctx := context.Background()
	c, stop := serve(t, dir, conf...)
	require.NoError(t, c.Set(ctx, "a", "1", 0).Err())
	_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Incr(ctx, "x")
		p.Set(ctx, "y", "v", 0)
		return nil
	})
	require.NoError(t, err)
	stop()
	file, data = incrFile(t, dir)
	multi = bytes.Index(data, []byte("*1\r\n$5\r\nMULTI\r\n"))
	require.Positive(t, multi)
	setY = bytes.Index(bytes.ToLower(data[multi:]), []byte("*3\r\n$3\r\nset\r\n$1\r\ny"))
	require.Positive(t, setY)
	return file, data, multi, multi + setY
}

// TestTornTransactionIsDroppedWhole: a log whose tail is torn inside a
// transaction (a power loss in the middle of its write) loads without any
// of it, is truncated at the transaction's start, and goes on: what is
// written after the restart loads after the next one.
func TestTornTransactionIsDroppedWhole(t *testing.T) {
	ctx := context.Background()
	for _, cut := range []string{"inside a record", "between records", "before EXEC"} {
		t.Run(cut, func(t *testing.T) {
			dir := t.TempDir()
			file, data, _, second := txLog(t, dir, "appendfsync", "always")
			exec := bytes.Index(data, []byte("*1\r\n$4\r\nEXEC\r\n"))
			require.Equal(t, len(data)-len("*1\r\n$4\r\nEXEC\r\n"), exec, "the transaction ends the file")
			at := map[string]int{"inside a record": second + 5, "between records": second, "before EXEC": exec}[cut]
			require.NoError(t, os.WriteFile(file, data[:at], 0o644))

			c, stop := serve(t, dir)
			require.Equal(t, "1", c.Get(ctx, "a").Val())
			require.Zero(t, c.Exists(ctx, "x", "y").Val(), "no part of the torn transaction")
			require.NoError(t, c.Set(ctx, "later", "3", 0).Err())
			stop()
			c, _ = serve(t, dir)
			require.Equal(t, []any{"1", nil, nil, "3"}, c.MGet(ctx, "a", "x", "y", "later").Val())
		})
	}
}

// openErr opens the persistence in dir as serve does and returns the error
// that stops it from loading, or nil (closing what it opened).
func openErr(t *testing.T, dir string, conf ...string) error {
	t.Helper()
	cfg := config.New()
	args := append([]string{"port", "0", "bind", "127.0.0.1", "dir", dir, "save", ""}, conf...)
	for i := 0; i+1 < len(args); i += 2 {
		require.NoError(t, cfg.Set(args[i], args[i+1]))
	}
	store := shards.New(shards.Options{Shards: 4})
	defer store.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := server.New(store, cfg, log)
	mgr, err := persist.Open(persist.Options{Config: cfg, Store: store, Replay: srv.Replay, Keys: command.RecordKeys, Resets: command.RecordResets, Logger: log})
	if err == nil {
		mgr.Close()
	}
	return err
}

// TestCorruptTransactionIsCutAtItsMulti: damage inside a transaction's
// records is reported at its MULTI, where aof-load-corrupt truncate cuts
// the file. Cut at the damaged record instead, the file would keep a MULTI
// without its EXEC, so every write after the restart would be appended
// inside that transaction, and the next start would drop them all as its
// torn tail.
func TestCorruptTransactionIsCutAtItsMulti(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	file, data, multi, second := txLog(t, dir)
	data[second] = '!' // the transaction's second record
	require.NoError(t, os.WriteFile(file, data, 0o644))

	err := openErr(t, dir)
	require.ErrorContains(t, err, fmt.Sprintf("offset %d", multi))
	require.ErrorContains(t, err, "--aof-load-corrupt truncate")

	c, stop := serve(t, dir, "aof-load-corrupt", "truncate")
	require.Equal(t, []any{"1", nil, nil}, c.MGet(ctx, "a", "x", "y").Val())
	require.NoError(t, c.Set(ctx, "later", "3", 0).Err())
	stop()
	c, _ = serve(t, dir)
	require.Equal(t, []any{"1", nil, nil, "3"}, c.MGet(ctx, "a", "x", "y", "later").Val())
}

// TestTransactionsOfEveryKindDuringSnapshots: transactions with
// all-shard flushes, the limiters, many-key DELs, commands failing at run
// time and writes that change nothing run while BGSAVE and BGREWRITEAOF
// capture the keyspace. The log then replays to the live state, deadlines
// included, and the snapshot taken during them is one instant: the two
// counters every transaction increments together are equal in it.
func TestTransactionsOfEveryKindDuringSnapshots(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	c, stop := serve(t, dir)
	preloadStatic(t, c, 50000)
	const workers = 4
	var txs atomic.Int64
	stopWork := untilStopped(workers, func(w, i int) bool {
		a, b := fmt.Sprintf("w%d:a", w), fmt.Sprintf("w%d:b", w)
		_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			switch {
			case i%97 == 96:
				p.FlushAll(ctx)
			case i%13 == 12:
				p.Del(ctx, a, b, fmt.Sprintf("w%d:none", w), fmt.Sprintf("w%d:sl", w))
			}
			p.Incr(ctx, a)
			p.Do(ctx, "SL.THROTTLE", fmt.Sprintf("w%d:sl", w), 5, 1000)
			p.Do(ctx, "CL.THROTTLE", fmt.Sprintf("w%d:cl", w), 10, 5, 60)
			p.Do(ctx, "SW.THROTTLE", fmt.Sprintf("w%d:sw", w), 5, 1000)
			p.ZAdd(ctx, a, redis.Z{Score: 1, Member: "x"}) // WRONGTYPE
			p.SetNX(ctx, b+":nx", "v", time.Minute)
			p.Incr(ctx, b)
			p.PExpire(ctx, b, time.Hour)
			return nil
		})
		if err != nil && !strings.Contains(err.Error(), "WRONGTYPE") {
			t.Errorf("transaction: %v", err)
			return false
		}
		txs.Add(1)
		return true
	})
	for range 3 {
		// Both start at once: the rewrite is scheduled behind the save.
		require.NoError(t, c.BgSave(ctx).Err())
		require.NoError(t, c.BgRewriteAOF(ctx).Err())
		require.Eventually(t, func() bool {
			m := infoPersistence(t, c)
			return m["aof_rewrite_in_progress"] == "0" && m["aof_rewrite_scheduled"] == "0" && m["rdb_bgsave_in_progress"] == "0"
		}, 20*time.Second, 5*time.Millisecond)
		m := infoPersistence(t, c)
		require.Equal(t, "ok", m["aof_last_bgrewrite_status"])
		require.Equal(t, "ok", m["rdb_last_bgsave_status"])
	}
	stopWork()
	t.Logf("%d transactions", txs.Load())
	state := func(c *redis.Client) map[string]string {
		keys, err := c.Keys(ctx, "*").Result()
		require.NoError(t, err)
		s := map[string]string{}
		for _, k := range keys {
			s[k] = c.Dump(ctx, k).Val() + "|" + fmt.Sprint(c.PExpireTime(ctx, k).Val())
		}
		return s
	}
	live := state(c)
	require.NotEmpty(t, live)
	stop()

	c, stop = serve(t, dir)
	require.Equal(t, live, state(c))
	stop()

	c, _ = serve(t, dir, "appendonly", "no") // the dump of the last BGSAVE
	for w := range workers {
		a, b := c.Get(ctx, fmt.Sprintf("w%d:a", w)).Val(), c.Get(ctx, fmt.Sprintf("w%d:b", w)).Val()
		require.Equal(t, a, b, "worker %d", w)
	}
}

// TestTornTransactionEdges: a log whose last bytes are a MULTI (with the
// zeros written ahead under always after it, or not) loads without it,
// and aof-load-truncated no refuses it, naming the MULTI's offset; a huge
// transaction replays whole.
func TestTornTransactionEdges(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		zeros int
	}{{"multi last", 0}, {"multi before zeros", 4096}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			c, stop := serve(t, dir, "appendfsync", "always")
			require.NoError(t, c.Set(ctx, "a", "1", 0).Err())
			const n = 20000
			_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
				for i := range n {
					p.Set(ctx, fmt.Sprint("big:", i), "v", time.Hour)
				}
				return nil
			})
			require.NoError(t, err)
			stop()
			file, data := incrFile(t, dir)
			end := len(data)
			data = append(data, "*1\r\n$5\r\nMULTI\r\n"...)
			data = append(data, make([]byte, tc.zeros)...)
			require.NoError(t, os.WriteFile(file, data, 0o644))

			err = openErr(t, dir, "aof-load-truncated", "no")
			require.ErrorContains(t, err, fmt.Sprintf("offset %d of", end))

			c, stop = serve(t, dir)
			require.Equal(t, "1", c.Get(ctx, "a").Val())
			require.Equal(t, int64(n+1), c.DBSize(ctx).Val())
			require.NoError(t, c.Set(ctx, "later", "3", 0).Err())
			stop()
			c, _ = serve(t, dir)
			require.Equal(t, "3", c.Get(ctx, "later").Val())
			require.Equal(t, int64(n+2), c.DBSize(ctx).Val())
		})
	}
}

// TestMultiKeyWriteIsOneUnitInTheLog: a write command whose effects take
// several records (RENAME: DEL the source, the image of the destination;
// MSET, DEL, CL.THROTTLEALL: one per key) goes to the log as one unit, as
// a transaction does, so that a log cut anywhere inside it (the writer
// took the first record before the command appended the next one, and a
// kill came between its writes; or a power loss tore the tail) loads the
// state before the command or the one after it. Appended one record at a
// time, a log cut after RENAME's DEL would restart with neither a nor b,
// the value a held (acknowledged long before) gone.
func TestMultiKeyWriteIsOneUnitInTheLog(t *testing.T) {
	ctx := context.Background()
	for _, cmd := range [][]any{
		{"RENAME", "a", "b"},
		{"MSET", "a", "x", "c", "y"},
		{"DEL", "a", "c"},
		{"CL.THROTTLEALL", "2", "a:rl", "5", "1", "60", "c:rl", "5", "1", "60"},
	} {
		t.Run(fmt.Sprint(cmd[0]), func(t *testing.T) {
			dir := t.TempDir()
			keys := []string{"a", "b", "c", "a:rl", "c:rl"}
			c, stop := serve(t, dir, "appendfsync", "always")
			require.NoError(t, c.Set(ctx, "a", "v", 0).Err())
			require.NoError(t, c.Set(ctx, "c", "w", 0).Err())
			require.NoError(t, c.Do(ctx, "CL.THROTTLE", "c:rl", "5", "1", "60").Err())
			before := c.MGet(ctx, keys...).Val()
			require.NoError(t, c.Do(ctx, cmd...).Err())
			after := c.MGet(ctx, keys...).Val()
			require.NotEqual(t, before, after)
			stop()
			file, data := incrFile(t, dir)
			c, stop = serve(t, dir)
			require.Equal(t, after, c.MGet(ctx, keys...).Val())
			stop()
			// Where the command's records start: the log of the same
			// steps without it.
			dir0 := t.TempDir()
			c, stop = serve(t, dir0, "appendfsync", "always")
			require.NoError(t, c.Set(ctx, "a", "v", 0).Err())
			require.NoError(t, c.Set(ctx, "c", "w", 0).Err())
			require.NoError(t, c.Do(ctx, "CL.THROTTLE", "c:rl", "5", "1", "60").Err())
			stop()
			_, data0 := incrFile(t, dir0)
			start := len(data0)
			require.Less(t, start, len(data))
			for cut := start; cut < len(data); cut++ {
				require.NoError(t, os.WriteFile(file, data[:cut], 0o644))
				c, stop = serve(t, dir)
				got := c.MGet(ctx, keys...).Val()
				stop()
				if !reflect.DeepEqual(got, before) {
					t.Fatalf("log cut at %d of %d (the command's records start at %d): loaded %q, want the state before the command, %q (or after it, %q, with the whole log)",
						cut, len(data), start, got, before, after)
				}
			}
		})
	}
}
