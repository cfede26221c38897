package persist_test

// CONFIG SET appendonly while running (aof_switch.go), through a real
// client over loopback.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ratekv/ratekv/persist"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// switchWorker writes to keys of its own until stopped or refused: INCR
// ctr:<id> and SET k:<id>:<n> n, and remembers what was acknowledged. The
// write in flight when it stops (an error) is uncertain.
type switchWorker struct {
	id     int
	ctr    int64 // last acknowledged value of ctr:<id>
	sets   int64 // k:<id>:0 … k:<id>:sets-1 were acknowledged
	err    error
	writes atomic.Int64
}

func (w *switchWorker) run(c *redis.Client, stop <-chan struct{}) {
	ctx := context.Background()
	for {
		select {
		case <-stop:
			return
		default:
		}
		v, err := c.Incr(ctx, fmt.Sprint("ctr:", w.id)).Result()
		if err != nil {
			w.err = err
			return
		}
		w.ctr = v
		if err := c.Set(ctx, fmt.Sprint("k:", w.id, ":", w.sets), w.sets, 0).Err(); err != nil {
			w.err = err
			return
		}
		w.sets++
		w.writes.Add(1)
	}
}

// startSwitchWorkers starts n workers, each with a client of its own.
func startSwitchWorkers(addr string, n int) ([]*switchWorker, func()) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	ws := make([]*switchWorker, n)
	var clients []*redis.Client
	for i := range ws {
		ws[i] = &switchWorker{id: i}
		c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, PoolSize: 1, ReadTimeout: 20 * time.Second})
		clients = append(clients, c)
		wg.Add(1)
		go func(w *switchWorker) {
			defer wg.Done()
			w.run(c, stop)
		}(ws[i])
	}
	var once sync.Once
	return ws, func() {
		once.Do(func() {
			close(stop)
			wg.Wait()
			for _, c := range clients {
				c.Close()
			}
		})
	}
}

// checkWorkers checks that every acknowledged write of ws is in c's
// keyspace (the uncertain last one may be too).
func checkWorkers(t *testing.T, c *redis.Client, ws []*switchWorker) {
	t.Helper()
	ctx := context.Background()
	for _, w := range ws {
		v, err := c.Get(ctx, fmt.Sprint("ctr:", w.id)).Int64()
		if w.ctr > 0 {
			require.NoError(t, err, "worker %d", w.id)
		}
		require.True(t, v == w.ctr || v == w.ctr+1, "worker %d: ctr is %d, acknowledged %d", w.id, v, w.ctr)
		for n := int64(0); n < w.sets; n++ {
			got, err := c.Get(ctx, fmt.Sprint("k:", w.id, ":", n)).Result()
			require.NoError(t, err, "worker %d: acknowledged k:%d:%d is missing", w.id, w.id, n)
			require.Equal(t, strconv.FormatInt(n, 10), got)
		}
	}
}

// requireKeys checks that c holds the preloaded keys and the workers'
// keys, and nothing else.
// restartOnACopy checks that the stopped workers ws saw no error, starts
// a server with appendonly yes on a copy of dir as the files are (no clean
// close), and checks that it holds every acknowledged write and nothing
// else (preloaded static keys beside them).
func restartOnACopy(t *testing.T, dir string, ws []*switchWorker, preloaded int64) {
	t.Helper()
	for _, w := range ws {
		require.NoError(t, w.err)
	}
	_, _, c, stop := start(t, copyDir(t, dir), "appendonly", "yes")
	defer stop()
	checkWorkers(t, c, ws)
	requireKeys(t, c, ws, preloaded)
}

func requireKeys(t *testing.T, c *redis.Client, ws []*switchWorker, preloaded int64) {
	t.Helper()
	ctx := context.Background()
	require.Equal(t, int64(2), c.Exists(ctx, "static:0", fmt.Sprint("static:", preloaded-1)).Val())
	n, err := c.DBSize(ctx).Result()
	require.NoError(t, err)
	want := preloaded + int64(len(ws))
	for _, w := range ws {
		want += w.sets
	}
	require.Equal(t, want, n, "nothing else")
}

// waitWrites waits until every worker has n more acknowledged writes.
func waitWrites(t *testing.T, ws []*switchWorker, n int64) {
	t.Helper()
	base := make([]int64, len(ws))
	for i, w := range ws {
		base[i] = w.writes.Load()
	}
	require.Eventually(t, func() bool {
		for i, w := range ws {
			if w.writes.Load() < base[i]+n {
				return false
			}
		}
		return true
	}, 20*time.Second, time.Millisecond, "the workers make progress")
}

// waitFirstRewrite waits until the log that CONFIG SET appendonly yes
// started is complete: no rewrite scheduled or in progress.
func waitFirstRewrite(t *testing.T, c *redis.Client) {
	t.Helper()
	require.Eventually(t, func() bool {
		info := infoPersistence(t, c)
		return info["aof_enabled"] == "1" && info["aof_rewrite_in_progress"] == "0" && info["aof_rewrite_scheduled"] == "0"
	}, 20*time.Second, 5*time.Millisecond)
}

func configSet(t *testing.T, c *redis.Client, name, value string) {
	t.Helper()
	require.NoError(t, c.ConfigSet(context.Background(), name, value).Err(), "CONFIG SET %s %s", name, value)
}

func configGet(t *testing.T, c *redis.Client, name string) string {
	t.Helper()
	m, err := c.ConfigGet(context.Background(), name).Result()
	require.NoError(t, err)
	return m[name]
}

// copyDir copies the files of a data directory as they are: what a
// process killed at this moment leaves (the writes are in the kernel).
func copyDir(t *testing.T, from string) string {
	t.Helper()
	to := filepath.Join(t.TempDir(), "copy")
	out, err := exec.Command("cp", "-a", from, to).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return to
}

// TestAppendonlyOnUnderWrites: appendonly no → yes while clients write,
// under appendfsync always; once the first rewrite is done, every write
// acknowledged before or after the switch is in the log: a server started
// on the files as they are (no close, no final flush) has them all.
func TestAppendonlyOnUnderWrites(t *testing.T) {
	for _, loop := range []string{"yes", "no"} {
		t.Run("event-loop="+loop, func(t *testing.T) {
			dir := t.TempDir()
			srv, _, c, stop := start(t, dir, "appendonly", "no", "appendfsync", "always", "event-loop", loop)
			defer stop()
			preloadStatic(t, c, 20000)
			ws, stopWorkers := startSwitchWorkers(srv.Addr().String(), 4)
			defer stopWorkers()
			waitWrites(t, ws, 20)
			require.Equal(t, "0", infoPersistence(t, c)["aof_enabled"])
			configSet(t, c, "appendonly", "yes")
			require.Equal(t, "yes", configGet(t, c, "appendonly"))
			require.Equal(t, "1", infoPersistence(t, c)["aof_enabled"], "on at once, as in Redis")
			waitWrites(t, ws, 20)
			waitFirstRewrite(t, c)
			waitWrites(t, ws, 20)
			stopWorkers()
			restartOnACopy(t, dir, ws, 20000)
		})
	}
}

// TestAppendonlyOffStopsLogging: appendonly yes → no flushes the log and
// closes it, its files stay; writes after it are not logged (the log's
// files stop growing), so a restart with appendonly yes shows the state as
// of the switch, and one with appendonly no the dump file's.
func TestAppendonlyOffStopsLogging(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	_, _, c, stop := start(t, dir, "appendonly", "yes", "appendfsync", "everysec")
	require.NoError(t, c.Set(ctx, "before", "1", 0).Err())
	require.NoError(t, c.Incr(ctx, "n").Err())
	configSet(t, c, "appendonly", "no")
	require.Equal(t, "no", configGet(t, c, "appendonly"))
	require.Equal(t, "0", infoPersistence(t, c)["aof_enabled"])
	configSet(t, c, "appendonly", "no") // the same value: nothing to do
	sizes := aofSizes(t, dir)
	require.NotEmpty(t, sizes, "the files stay")
	for i := 0; i < 100; i++ {
		require.NoError(t, c.Set(ctx, fmt.Sprint("after:", i), "2", 0).Err())
	}
	require.NoError(t, c.Incr(ctx, "n").Err())
	require.Equal(t, sizes, aofSizes(t, dir), "writes after the switch are not logged")
	copied := copyDir(t, dir) // as a crash leaves it
	stop()

	_, _, c2, stop2 := start(t, copied, "appendonly", "yes")
	require.Equal(t, "1", c2.Get(ctx, "before").Val())
	require.Equal(t, "1", c2.Get(ctx, "n").Val(), "as of the switch")
	require.Equal(t, int64(0), c2.Exists(ctx, "after:0").Val())
	stop2()

	// With appendonly no the dump file is loaded: a SAVE after the switch
	// holds everything.
	dir3 := t.TempDir()
	_, _, c3, stop3 := start(t, dir3, "appendonly", "yes")
	require.NoError(t, c3.Set(ctx, "before", "1", 0).Err())
	configSet(t, c3, "appendonly", "no")
	require.NoError(t, c3.Set(ctx, "after", "2", 0).Err())
	require.NoError(t, c3.Save(ctx).Err())
	stop3()
	_, _, c4, stop4 := start(t, dir3, "appendonly", "no")
	defer stop4()
	require.Equal(t, []any{"1", "2"}, c4.MGet(ctx, "before", "after").Val())
}

// aofSizes returns the size of every file in the log's directory.
func aofSizes(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, "appendonlydir"))
	require.NoError(t, err)
	out := map[string]int64{}
	for _, e := range ents {
		fi, err := e.Info()
		require.NoError(t, err)
		out[e.Name()] = fi.Size()
	}
	return out
}

// TestAppendonlyOnFailsWhenTheLogCannotStart: when the log's directory
// cannot be created, CONFIG SET appendonly yes fails with Redis's error and
// appendonly stays no.
func TestAppendonlyOnFailsWhenTheLogCannotStart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	_, _, c, stop := start(t, dir, "appendonly", "no")
	defer stop()
	// A file where the directory should be: even root cannot make it.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "appendonlydir"), nil, 0o644))
	err := c.ConfigSet(ctx, "appendonly", "yes").Err()
	require.EqualError(t, err, "ERR CONFIG SET failed (possibly related to argument 'appendonly') - Unable to turn on AOF. Check server logs.")
	require.Equal(t, "no", configGet(t, c, "appendonly"))
	require.Equal(t, "0", infoPersistence(t, c)["aof_enabled"])
	require.NoError(t, c.Set(ctx, "k", "v", 0).Err(), "writes go on")

	// Nothing of a multi-parameter CONFIG SET is applied either.
	err = c.Do(ctx, "CONFIG", "SET", "maxclients", "77", "appendonly", "yes").Err()
	require.ErrorContains(t, err, "Unable to turn on AOF")
	require.Equal(t, "10000", configGet(t, c, "maxclients"))

	require.NoError(t, os.Remove(filepath.Join(dir, "appendonlydir")))
	configSet(t, c, "appendonly", "yes")
	waitFirstRewrite(t, c)
	require.Equal(t, "yes", configGet(t, c, "appendonly"))
}

// TestAppendonlyOffEndsMisconf: while the log cannot be written, writes
// are refused (MISCONF) and, under always, a write waits for the disk;
// switching appendonly off ends both: the waiting write's connection
// closes without a reply (its record could not be made durable), and
// writes are accepted again.
func TestAppendonlyOffEndsMisconf(t *testing.T) {
	ctx := context.Background()
	faults, undo := persist.InjectFaults()
	defer undo()
	dir := t.TempDir()
	c, stop := serve(t, dir, "appendonly", "yes", "appendfsync", "always")
	defer stop()
	writer := redis.NewClient(&redis.Options{Addr: c.Options().Addr, MaxRetries: -1, ReadTimeout: 20 * time.Second})
	defer writer.Close()
	pending := writeWhileTheDiskFails(t, c, writer, faults, syscall.EIO)
	require.ErrorContains(t, c.Set(ctx, "refused", "1", 0).Err(), "MISCONF")

	configSet(t, c, "appendonly", "no")
	select {
	case err := <-pending:
		require.Error(t, err, "no reply for a write the log could not make durable")
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting write is still waiting after appendonly no")
	}
	require.NoError(t, c.Set(ctx, "accepted", "1", 0).Err(), "MISCONF from the log no longer applies")
	require.Equal(t, "0", infoPersistence(t, c)["aof_enabled"])
}

// TestAppendonlySameValueIsANoop: switching to the current state starts
// nothing.
func TestAppendonlySameValueIsANoop(t *testing.T) {
	dir := t.TempDir()
	_, _, c, stop := start(t, dir, "appendonly", "yes")
	defer stop()
	before := infoPersistence(t, c)["aof_rewrites"]
	configSet(t, c, "appendonly", "yes")
	info := infoPersistence(t, c)
	require.Equal(t, before, info["aof_rewrites"])
	require.Equal(t, "0", info["aof_rewrite_in_progress"])
	require.Equal(t, "0", info["aof_rewrite_scheduled"])
}

// TestAppendonlyValueAnyCase: yes and no are read in any case, as Redis
// reads them; CONFIG SET appendonly YES switched the log off.
func TestAppendonlyValueAnyCase(t *testing.T) {
	dir := t.TempDir()
	_, _, c, stop := start(t, dir, "appendonly", "no")
	defer stop()
	configSet(t, c, "appendonly", "YES")
	require.Equal(t, "1", infoPersistence(t, c)["aof_enabled"])
	configSet(t, c, "appendonly", "No")
	require.Equal(t, "0", infoPersistence(t, c)["aof_enabled"])
}

// TestAppendonlyInTransactionIsRefused: EXEC holds shards, which switching
// off waits for; the switch is refused inside a transaction.
func TestAppendonlyInTransactionIsRefused(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	_, _, c, stop := start(t, dir, "appendonly", "yes")
	defer stop()
	cmds, _ := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "k", "v", 0)
		p.ConfigSet(ctx, "appendonly", "no")
		return nil
	})
	require.NoError(t, cmds[0].Err())
	require.ErrorContains(t, cmds[1].Err(), "inside a transaction")
	require.Equal(t, "yes", configGet(t, c, "appendonly"))
}

// TestAppendonlyToggleUnderLoad switches appendonly on and off while
// clients write and rewrites and saves run; at the end, switched on and
// its first rewrite done, every acknowledged write is in the log.
func TestAppendonlyToggleUnderLoad(t *testing.T) {
	ctx := context.Background()
	for _, loop := range []string{"yes", "no"} {
		t.Run("event-loop="+loop, func(t *testing.T) {
			dir := t.TempDir()
			srv, _, c, stop := start(t, dir, "appendonly", "no", "appendfsync", "always", "event-loop", loop)
			defer stop()
			preloadStatic(t, c, 5000)
			ws, stopWorkers := startSwitchWorkers(srv.Addr().String(), 4)
			defer stopWorkers()
			other := redis.NewClient(&redis.Options{Addr: srv.Addr().String(), MaxRetries: -1})
			defer other.Close()
			for i := 0; i < 16; i++ {
				on := i%2 == 0
				value := map[bool]string{true: "yes", false: "no"}[on]
				configSet(t, c, "appendonly", value)
				require.Equal(t, value, configGet(t, c, "appendonly"))
				require.Equal(t, map[bool]string{true: "1", false: "0"}[on], infoPersistence(t, c)["aof_enabled"])
				switch i % 4 {
				case 1:
					other.BgSave(ctx) // may be refused while a rewrite runs
				case 2:
					other.BgRewriteAOF(ctx)
				}
				waitWrites(t, ws, 5)
			}
			configSet(t, c, "appendonly", "yes")
			waitWrites(t, ws, 10)
			waitFirstRewrite(t, c)
			waitWrites(t, ws, 10)
			stopWorkers()
			restartOnACopy(t, dir, ws, 5000)
		})
	}
}

// TestAppendonlyOnSurvivesKill: the real binary, appendonly switched on
// under load with appendfsync always, kill -9 once the first rewrite is
// done while the clients still write: every acknowledged write is there
// after a restart with appendonly yes.
func TestAppendonlyOnSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin, err := buildOnce()
	require.NoError(t, err)
	dir := t.TempDir()
	s := startServer(t, bin, dir, "--appendonly", "no", "--appendfsync", "always")
	c := s.client()
	defer c.Close()
	preloadStatic(t, c, 20000)
	ws, stopWorkers := startSwitchWorkers(s.addr, 4)
	defer stopWorkers()
	waitWrites(t, ws, 20)
	configSet(t, c, "appendonly", "yes")
	waitWrites(t, ws, 20)
	waitFirstRewrite(t, c)
	waitWrites(t, ws, 50)
	s.kill()
	stopWorkers()

	s2 := startServer(t, bin, dir, "--appendonly", "yes")
	c2 := s2.client()
	defer c2.Close()
	checkWorkers(t, c2, ws)
	require.Equal(t, int64(2), c2.Exists(context.Background(), "static:0", "static:19999").Val())
}

// TestAppendonlyFirstRewriteFailure: while the first rewrite after
// appendonly yes cannot complete (the log's fsyncs fail, so it cannot
// switch files), appendonly stays on with the rewrite scheduled, and a
// shutdown is refused, as Redis refuses to exit in AOF_WAIT_REWRITE; once
// the disk recovers a rewrite completes and everything is in the log.
func TestAppendonlyFirstRewriteFailure(t *testing.T) {
	ctx := context.Background()
	faults, undo := persist.InjectFaults()
	defer undo()
	dir := t.TempDir()
	_, mgr, c, stop := start(t, dir, "appendonly", "no", "appendfsync", "everysec")
	defer stop()
	require.NoError(t, c.Set(ctx, "before", "1", 0).Err())
	preloadStatic(t, c, 20000) // so that writes land in the log before it switches files
	ws, stopWorkers := startSwitchWorkers(c.Options().Addr, 2)
	defer stopWorkers()
	faults.FailSyncs(syscall.EIO)
	configSet(t, c, "appendonly", "yes")
	require.Eventually(t, func() bool {
		info := infoPersistence(t, c)
		return info["aof_rewrite_in_progress"] == "0" && info["aof_rewrite_scheduled"] == "1" && info["aof_last_bgrewrite_status"] == "err"
	}, 10*time.Second, 5*time.Millisecond, "the first rewrite failed and waits to be retried")
	require.Equal(t, "1", infoPersistence(t, c)["aof_enabled"])
	require.ErrorIs(t, mgr.PrepareShutdown(persist.SaveNever), persist.ErrFirstRewrite)

	stopWorkers() // refused by now (MISCONF), or not
	faults.FailSyncs(nil)
	require.Eventually(t, func() bool { return c.Set(ctx, "after", "2", 0).Err() == nil }, 10*time.Second, 10*time.Millisecond,
		"writes are accepted once the log's fsyncs succeed again")
	var last map[string]string
	require.Eventually(t, func() bool {
		info := infoPersistence(t, c)
		last = info
		if info["aof_rewrite_scheduled"] == "1" && info["aof_rewrite_in_progress"] == "0" {
			c.BgRewriteAOF(ctx) // sooner than the cron's retry; fails while the failed switch of files is pending
		}
		return info["aof_rewrite_in_progress"] == "0" && info["aof_rewrite_scheduled"] == "0" && info["aof_last_bgrewrite_status"] == "ok"
	}, 20*time.Second, 50*time.Millisecond, "%v", &last)
	require.NoError(t, mgr.PrepareShutdown(persist.SaveNever))
	stop()
	ents, err := os.ReadDir(filepath.Join(dir, "appendonlydir"))
	require.NoError(t, err)
	require.Len(t, ents, 3, "the manifest, the base and one incremental file: %v", ents)

	_, _, c2, stop2 := start(t, dir, "appendonly", "yes")
	defer stop2()
	require.Equal(t, []any{"1", "2"}, c2.MGet(ctx, "before", "after").Val())
	checkWorkers(t, c2, ws)
}

// TestAppendonlyShutdownForceDuringFirstRewrite: SHUTDOWN FORCE while the
// first rewrite after appendonly yes cannot complete (the manifest's
// temporary name is taken by a directory) still takes the final snapshot
// the save rules ask for, as Redis exits anyway from AOF_WAIT_REWRITE but
// saves its RDB first: the temporary log is no copy of the data, so
// without the snapshot every write since the last one would be lost.
func TestAppendonlyShutdownForceDuringFirstRewrite(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin, err := buildOnce()
	require.NoError(t, err)
	ctx := context.Background()
	dir := t.TempDir()
	s := startServer(t, bin, dir, "--appendonly", "no", "--save", "3600 1")
	c := s.client()
	defer c.Close()
	require.NoError(t, c.Set(ctx, "before", "1", 0).Err())
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "appendonlydir", "appendonly.aof.manifest.tmp", "x"), 0o755))
	configSet(t, c, "appendonly", "yes")
	require.Eventually(t, func() bool {
		return infoPersistence(t, c)["aof_last_bgrewrite_status"] == "err"
	}, 10*time.Second, 5*time.Millisecond, "the first rewrite fails")
	require.NoError(t, c.Set(ctx, "after", "2", 0).Err())
	require.Error(t, c.ShutdownNoSave(ctx).Err(), "NOSAVE without FORCE is refused") // nothing saved either way
	require.Error(t, c.Do(ctx, "SHUTDOWN", "FORCE").Err(), "closed without a reply")
	require.Equal(t, 0, s.exited(t), s.output())

	s2 := startServer(t, bin, dir, "--appendonly", "no")
	c2 := s2.client()
	defer c2.Close()
	require.Equal(t, []any{"1", "2"}, c2.MGet(ctx, "before", "after").Val(), s.output())
}
