package persist_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
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

// serve wires a store, the persistence in dir and a server as main does
// (CONFIG SET appendfsync, the background jobs), and returns a client and
// a stop function.
func serve(t *testing.T, dir string, conf ...string) (*redis.Client, func()) {
	t.Helper()
	_, _, c, stop := start(t, dir, conf...)
	return c, stop
}

// start is serve, and returns the server and the manager too, for a test
// that takes main's part in a shutdown.
func start(t *testing.T, dir string, conf ...string) (*server.Server, *persist.Manager, *redis.Client, func()) {
	t.Helper()
	cfg := config.New()
	args := append([]string{"port", "0", "bind", "127.0.0.1", "dir", dir, "save", ""}, conf...)
	for i := 0; i+1 < len(args); i += 2 {
		require.NoError(t, cfg.Set(args[i], args[i+1]))
	}
	store := shards.New(shards.Options{Shards: 4})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := server.New(store, cfg, log)
	mgr, err := persist.Open(persist.Options{Config: cfg, Store: store, Replay: srv.Replay, Keys: command.RecordKeys, Resets: command.RecordResets, Logger: log})
	require.NoError(t, err)
	if j := mgr.AOF(); j != nil { // as main does: no typed nil with appendonly no
		srv.SetJournal(j)
	}
	srv.SetPersistence(mgr)
	mgr.Start()
	require.NoError(t, srv.Listen())
	go srv.Serve()
	c := redis.NewClient(&redis.Options{Addr: srv.Addr().String(), MaxRetries: -1, ReadTimeout: 20 * time.Second})
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		mgr.Close()
		store.Close()
	}
	t.Cleanup(stop)
	return srv, mgr, c, stop
}

func infoPersistence(t *testing.T, c *redis.Client) map[string]string {
	m, err := c.InfoMap(context.Background(), "persistence").Result()
	require.NoError(t, err)
	return m["Persistence"]
}

// TestWriteErrorRefusesWritesUntilTheDiskRecovers: with appendfsync always,
// a write whose record cannot be made durable gets no reply until it is;
// meanwhile other writes are refused with MISCONF, reads work, and INFO
// shows the error; when the disk recovers everything resumes and the
// write survives a restart.
func TestWriteErrorRefusesWritesUntilTheDiskRecovers(t *testing.T) {
	ctx := context.Background()
	faults, undo := persist.InjectFaults()
	defer undo()
	dir := t.TempDir()
	c, stop := serve(t, dir, "appendfsync", "always")
	require.NoError(t, c.Set(ctx, "before", "1", 0).Err())

	faults.FailWrites(syscall.ENOSPC)
	pending := make(chan error, 1)
	go func() { pending <- c.Set(ctx, "during", "2", 0).Err() }()
	other := redis.NewClient(&redis.Options{Addr: c.Options().Addr, MaxRetries: -1})
	defer other.Close()
	// A write that slipped in before the failure would (rightly) wait for
	// durability like "during"; so probe only once INFO shows the error.
	require.Eventually(t, func() bool { return infoPersistence(t, other)["aof_last_write_status"] == "err" },
		10*time.Second, time.Millisecond)
	err := other.Set(ctx, "refused", "3", 0).Err()
	require.Error(t, err)
	require.True(t, strings.HasPrefix(err.Error(), "MISCONF Errors writing to the AOF file: "), "writes are refused while the log cannot be written: %v", err)
	require.ErrorContains(t, other.Incr(ctx, "refused").Err(), "no space left on device")
	require.Equal(t, "1", other.Get(ctx, "before").Val(), "reads keep working")
	require.ErrorContains(t, other.Ping(ctx).Err(), "MISCONF Errors writing to the AOF file", "PING reports the failure, as in Redis")
	info := infoPersistence(t, other)
	require.Equal(t, "err", info["aof_last_write_status"])
	require.Contains(t, info["aof_last_write_error"], "no space left on device")
	select {
	case err := <-pending:
		t.Fatalf("a write was acknowledged (%v) while it was not durable", err)
	case <-time.After(100 * time.Millisecond):
	}

	recoverDisk(t, faults, pending)
	require.Eventually(t, func() bool { return other.Set(ctx, "after", "4", 0).Err() == nil }, 5*time.Second, time.Millisecond)
	require.Equal(t, "ok", infoPersistence(t, other)["aof_last_write_status"])
	require.NoError(t, other.Ping(ctx).Err())
	other.Close()

	stop()
	c, _ = serve(t, dir)
	for k, v := range map[string]string{"before": "1", "during": "2", "after": "4"} {
		require.Equal(t, v, c.Get(ctx, k).Val(), k)
	}
	require.Zero(t, c.Exists(ctx, "refused").Val())
}

// TestFsyncErrorEverysec: a failing fsync is reported and refuses writes
// too, with the default policy.
func TestFsyncErrorEverysec(t *testing.T) {
	ctx := context.Background()
	faults, undo := persist.InjectFaults()
	defer undo()
	c, _ := serve(t, t.TempDir(), "appendfsync", "everysec")
	faults.FailSyncs(syscall.EIO)
	require.NoError(t, c.Set(ctx, "k", "v", 0).Err(), "everysec acknowledges before the fsync")
	require.Eventually(t, func() bool { return infoPersistence(t, c)["aof_last_write_status"] == "err" },
		10*time.Second, 5*time.Millisecond)
	require.ErrorContains(t, c.Set(ctx, "k2", "v", 0).Err(), "MISCONF Errors writing to the AOF file: fsync: input/output error")
	faults.FailSyncs(nil)
	require.Eventually(t, func() bool { return c.Set(ctx, "k3", "v", 0).Err() == nil }, 5*time.Second, 5*time.Millisecond)
}

// TestInfoPersistence checks the fields INFO reports from the manager.
func TestInfoPersistence(t *testing.T) {
	ctx := context.Background()
	c, _ := serve(t, t.TempDir())
	require.NoError(t, c.Set(ctx, "k", "v", 0).Err())
	info := infoPersistence(t, c)
	require.Equal(t, "1", info["rdb_changes_since_last_save"])
	require.Equal(t, "1", info["aof_enabled"])
	require.Equal(t, "everysec", info["aof_fsync"])
	require.Equal(t, "0", info["aof_rewrites"])
	require.NoError(t, c.BgRewriteAOF(ctx).Err())
	require.Eventually(t, func() bool { return infoPersistence(t, c)["aof_rewrites"] == "1" }, 5*time.Second, time.Millisecond)
	require.NoError(t, c.Save(ctx).Err())
	info = infoPersistence(t, c)
	require.Equal(t, "0", info["rdb_changes_since_last_save"])
	require.Equal(t, "1", info["rdb_saves"])
	require.Equal(t, "ok", info["aof_last_bgrewrite_status"])
	require.Equal(t, info["aof_base_size"], info["aof_current_size"])
	require.Equal(t, info["rdb_last_save_time"], strconv.FormatInt(c.LastSave(ctx).Val(), 10))
}

// TestFsyncFailureAfterNoIsRepairedByARewrite: bytes written under
// appendfsync no have no copy to write again, so when the fsync that a
// CONFIG SET to always starts fails, they may be lost from the file for
// good. Writes stay refused after the disk works again, until the manager,
// by itself, has rewritten the log from the keyspace; then everything
// resumes and survives a restart. (The write waiting for such an fsync gets
// no reply: TestFailedFsyncWithoutACopyWaitsForARewrite and
// server.TestNoReplyWhenTheJournalCannotSync.)
func TestFsyncFailureAfterNoIsRepairedByARewrite(t *testing.T) {
	ctx := context.Background()
	faults, undo := persist.InjectFaults()
	defer undo()
	dir := t.TempDir()
	c, stop := serve(t, dir, "appendfsync", "no")
	require.NoError(t, c.Set(ctx, "a", "1", 0).Err())
	require.Eventually(t, func() bool { return infoPersistence(t, c)["aof_buffer_length"] == "0" },
		10*time.Second, time.Millisecond, "the writer took the record under no")
	faults.FailSyncs(syscall.EIO)
	require.NoError(t, c.ConfigSet(ctx, "appendfsync", "always").Err())
	require.Eventually(t, func() bool { return infoPersistence(t, c)["aof_last_write_status"] == "err" },
		10*time.Second, time.Millisecond)
	require.Contains(t, infoPersistence(t, c)["aof_last_write_error"], "rewritten")
	require.ErrorContains(t, c.Set(ctx, "b", "2", 0).Err(), "MISCONF")
	faults.FailSyncs(nil)
	require.Eventually(t, func() bool { return c.Set(ctx, "b", "2", 0).Err() == nil }, 20*time.Second, 10*time.Millisecond,
		"writes resume once the rewrite is done")
	info := infoPersistence(t, c)
	require.Equal(t, "ok", info["aof_last_write_status"])
	require.NotEqual(t, "0", info["aof_rewrites"], "the recovery went through a rewrite")
	stop()
	c, _ = serve(t, dir)
	for k, v := range map[string]string{"a": "1", "b": "2"} {
		require.Equal(t, v, c.Get(ctx, k).Val(), k)
	}
}

// TestReadsWorkBesideAWriteWaitingForTheDisk: under appendfsync always, a
// write that a failing disk keeps from being durable waits for its reply,
// but the clients served by the same event loop go on: reads are answered
// and writes refused with MISCONF. (The loop waited for the disk in its
// journal sync, and answered none of its clients until it recovered.)
func TestReadsWorkBesideAWriteWaitingForTheDisk(t *testing.T) {
	ctx := context.Background()
	faults, undo := persist.InjectFaults()
	defer undo()
	dir := t.TempDir()
	c, stop := serve(t, dir, "appendfsync", "always", "event-loop", "yes")
	writer := redis.NewClient(&redis.Options{Addr: c.Options().Addr, MaxRetries: -1, PoolSize: 1, ReadTimeout: 20 * time.Second})
	defer writer.Close()
	require.NoError(t, writer.Set(ctx, "before", "1", 0).Err())
	wid := writer.ClientID(ctx).Val()
	// Connections go to loop id % GOMAXPROCS: open clients until one
	// shares the writer's loop.
	loops := int64(runtime.GOMAXPROCS(0))
	var reader *redis.Client
	for range loops + 1 {
		r := redis.NewClient(&redis.Options{Addr: c.Options().Addr, MaxRetries: -1, PoolSize: 1, ReadTimeout: 2 * time.Second})
		defer r.Close()
		if r.ClientID(ctx).Val()%loops == wid%loops {
			reader = r
			break
		}
	}
	require.NotNil(t, reader, "no client on the writer's event loop")

	pending := writeWhileTheDiskFails(t, c, writer, faults, syscall.ENOSPC)
	require.Equal(t, "1", reader.Get(ctx, "before").Val(), "a read beside the waiting write is answered")
	require.ErrorContains(t, reader.Set(ctx, "refused", "3", 0).Err(), "MISCONF")
	select {
	case err := <-pending:
		t.Fatalf("a write was acknowledged (%v) while it was not durable", err)
	default:
	}

	recoverDisk(t, faults, pending)
	require.Eventually(t, func() bool { return writer.Set(ctx, "after", "4", 0).Err() == nil }, 5*time.Second, time.Millisecond)
	require.Equal(t, "2", reader.Get(ctx, "during").Val())
	writer.Close()
	reader.Close()
	stop()
	c, _ = serve(t, dir)
	for k, v := range map[string]string{"before": "1", "during": "2", "after": "4"} {
		require.Equal(t, v, c.Get(ctx, k).Val(), k)
	}
}

// TestKillingAWriteWaitingForTheDisk: CLIENT KILL closes a connection
// whose write waits for a failing disk (appendfsync always) without its
// reply: its outcome is unknown, never reported as a success.
func TestKillingAWriteWaitingForTheDisk(t *testing.T) {
	ctx := context.Background()
	faults, undo := persist.InjectFaults()
	defer undo()
	c, _ := serve(t, t.TempDir(), "appendfsync", "always", "event-loop", "yes")
	writer := redis.NewClient(&redis.Options{Addr: c.Options().Addr, MaxRetries: -1, PoolSize: 1, ReadTimeout: 20 * time.Second})
	defer writer.Close()
	wid := writer.ClientID(ctx).Val()
	pending := writeWhileTheDiskFails(t, c, writer, faults, syscall.EIO)
	require.NoError(t, c.ClientKillByFilter(ctx, "ID", strconv.FormatInt(wid, 10)).Err())
	select {
	case err := <-pending:
		require.Error(t, err, "the killed write got no reply")
	case <-time.After(10 * time.Second):
		t.Fatal("the killed connection was not closed")
	}
	faults.FailWrites(nil)
	require.Eventually(t, func() bool { return c.Set(ctx, "after", "4", 0).Err() == nil }, 5*time.Second, time.Millisecond)
}

// TestFailedBgsaveRefusesWrites: with save rules set, a background save
// that fails refuses writes with Redis's MISCONF (reads work, INFO shows
// it) until a save succeeds; stop-writes-on-bgsave-error no lets them
// through. With appendonly no the snapshot is all there is: writes
// acknowledged meanwhile would be lost at the next restart.
func TestFailedBgsaveRefusesWrites(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	c, _ := serve(t, dir, "appendonly", "no", "save", "3600 1")
	require.NoError(t, c.Set(ctx, "before", "1", 0).Err())
	// A directory where the temporary file goes: creating it fails.
	blocker := filepath.Join(dir, "dump.rkv.tmp")
	require.NoError(t, os.Mkdir(blocker, 0o755))
	require.NoError(t, c.BgSave(ctx).Err())
	require.Eventually(t, func() bool { return infoPersistence(t, c)["rdb_last_bgsave_status"] == "err" },
		5*time.Second, time.Millisecond)
	err := c.Set(ctx, "refused", "2", 0).Err()
	require.ErrorContains(t, err, "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk.")
	// Refused when queued, as in Redis: EXEC aborts for previous errors.
	tx := c.TxPipeline()
	set := tx.Set(ctx, "refused", "2", 0)
	_, err = tx.Exec(ctx)
	require.ErrorContains(t, err, "EXECABORT Transaction discarded because of previous errors.")
	require.ErrorContains(t, set.Err(), "MISCONF Redis is configured")
	require.Equal(t, "1", c.Get(ctx, "before").Val(), "reads keep working")
	require.ErrorContains(t, c.Ping(ctx).Err(), "MISCONF Redis is configured", "PING reports the failure, as in Redis")
	tx = c.TxPipeline()
	ping := tx.Ping(ctx)
	_, err = tx.Exec(ctx)
	require.ErrorContains(t, err, "EXECABORT Transaction discarded because of previous errors.")
	require.ErrorContains(t, ping.Err(), "MISCONF Redis is configured")

	require.NoError(t, c.ConfigSet(ctx, "stop-writes-on-bgsave-error", "no").Err())
	require.NoError(t, c.Set(ctx, "allowed", "3", 0).Err())
	require.NoError(t, c.ConfigSet(ctx, "stop-writes-on-bgsave-error", "yes").Err())
	require.ErrorContains(t, c.Set(ctx, "refused", "2", 0).Err(), "MISCONF")

	require.NoError(t, os.Remove(blocker))
	require.NoError(t, c.BgSave(ctx).Err())
	require.Eventually(t, func() bool { return c.Set(ctx, "after", "4", 0).Err() == nil }, 5*time.Second, time.Millisecond)
	require.Equal(t, "ok", infoPersistence(t, c)["rdb_last_bgsave_status"])
	require.Zero(t, c.Exists(ctx, "refused").Val())
	require.NoError(t, c.Ping(ctx).Err())
}

// TestDiskErrorsInRedisOrder: with both a failed background save and a
// failing append-only file, writes are refused with the save's MISCONF,
// as Redis checks it first (writeCommandsDeniedByDiskError); once a save
// succeeds, with the log's.
func TestDiskErrorsInRedisOrder(t *testing.T) {
	ctx := context.Background()
	faults, undo := persist.InjectFaults()
	defer undo()
	dir := t.TempDir()
	c, _ := serve(t, dir, "save", "3600 1")
	blocker := filepath.Join(dir, "dump.rkv.tmp")
	require.NoError(t, os.Mkdir(blocker, 0o755))
	require.NoError(t, c.BgSave(ctx).Err())
	require.Eventually(t, func() bool { return infoPersistence(t, c)["rdb_last_bgsave_status"] == "err" },
		5*time.Second, time.Millisecond)
	require.NoError(t, c.ConfigSet(ctx, "stop-writes-on-bgsave-error", "no").Err())
	faults.FailWrites(syscall.ENOSPC)
	require.NoError(t, c.Set(ctx, "k", "1", 0).Err()) // everysec: acknowledged, its write fails
	require.Eventually(t, func() bool { return infoPersistence(t, c)["aof_last_write_status"] == "err" },
		10*time.Second, time.Millisecond)
	require.ErrorContains(t, c.Set(ctx, "k", "2", 0).Err(), "MISCONF Errors writing to the AOF file")
	require.NoError(t, c.ConfigSet(ctx, "stop-writes-on-bgsave-error", "yes").Err())
	require.ErrorContains(t, c.Set(ctx, "k", "2", 0).Err(), "MISCONF Redis is configured to save RDB snapshots")
	require.ErrorContains(t, c.Ping(ctx).Err(), "MISCONF Redis is configured to save RDB snapshots")
	require.NoError(t, os.Remove(blocker))
	require.NoError(t, c.Save(ctx).Err())
	require.ErrorContains(t, c.Set(ctx, "k", "2", 0).Err(), "MISCONF Errors writing to the AOF file")
	faults.FailWrites(nil)
}

// recoverDisk ends the injected write failures and checks that the write
// that waited for the disk (its outcome on pending) is then acknowledged.
func recoverDisk(t *testing.T, faults *persist.Faults, pending <-chan error) {
	t.Helper()
	faults.FailWrites(nil)
	select {
	case err := <-pending:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the pending write got no reply after the disk recovered")
	}
}

// TestNoReplyBeforeDurabilityAfterABackPressureStop: a connection whose
// batch stopped at flushAt with requests left, and whose socket holds
// more, is due in the event loop's next turn twice (for the leftovers,
// and for its readable socket); when that turn's write waits for a
// failing disk (appendfsync always), the first entry parks it and the
// second must not write its replies, the write's included, before it is
// durable.
func TestNoReplyBeforeDurabilityAfterABackPressureStop(t *testing.T) {
	ctx := context.Background()
	faults, undo := persist.InjectFaults()
	defer undo()
	c, _ := serve(t, t.TempDir(), "appendfsync", "always", "event-loop", "yes")
	big := strings.Repeat("v", 20000)
	require.NoError(t, c.Set(ctx, "big", big, 0).Err())
	nc, err := net.Dial("tcp", c.Options().Addr)
	require.NoError(t, err)
	defer nc.Close()
	var mu sync.Mutex
	var got []byte
	received := func() string {
		mu.Lock()
		defer mu.Unlock()
		return string(got)
	}
	go func() {
		b := make([]byte, 64<<10)
		for {
			n, err := nc.Read(b)
			mu.Lock()
			got = append(got, b[:n]...)
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()

	faults.FailWrites(syscall.ENOSPC)
	// Four GETs of big pass flushAt (64 KiB) of replies: the batch stops
	// with the SET left. The ECHO, never completed, keeps more bytes in
	// the socket than the first read (16 KiB) takes.
	req := strings.Repeat("GET big\r\n", 4) + "SET k v\r\n" + "*2\r\n$4\r\nECHO\r\n$40000\r\n" + strings.Repeat("e", 30000)
	_, err = nc.Write([]byte(req))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return infoPersistence(t, c)["aof_last_write_status"] == "err" },
		10*time.Second, time.Millisecond)
	gets := strings.Repeat("$20000\r\n"+big+"\r\n", 4)
	require.Eventually(t, func() bool { return len(received()) >= len(gets) }, 5*time.Second, time.Millisecond, "the GETs are answered")
	time.Sleep(100 * time.Millisecond) // a reply written too early has arrived by now
	require.Equal(t, "", strings.TrimPrefix(received(), gets), "no reply to the SET while it is not durable")

	faults.FailWrites(nil)
	require.Eventually(t, func() bool { return received() == gets+"+OK\r\n" }, 5*time.Second, time.Millisecond,
		"the SET is answered once durable")
}

// TestIdleTimeoutSparesAWriteWaitingForTheDisk: with timeout set, a
// client whose write waits for a failing disk (appendfsync always) is not
// idle, it waits for the server: it gets its reply once the disk
// recovers, as with a goroutine per connection (and as Redis spares a
// blocked client), instead of being closed with its outcome unknown.
func TestIdleTimeoutSparesAWriteWaitingForTheDisk(t *testing.T) {
	ctx := context.Background()
	faults, undo := persist.InjectFaults()
	defer undo()
	c, _ := serve(t, t.TempDir(), "appendfsync", "always", "event-loop", "yes", "timeout", "1")
	writer := redis.NewClient(&redis.Options{Addr: c.Options().Addr, MaxRetries: -1, PoolSize: 1, ReadTimeout: 20 * time.Second})
	defer writer.Close()
	require.NoError(t, writer.Ping(ctx).Err())
	pending := writeWhileTheDiskFails(t, c, writer, faults, syscall.ENOSPC)
	time.Sleep(2500 * time.Millisecond) // the idle sweep runs every second
	select {
	case err := <-pending:
		t.Fatalf("the waiting write got %v before the disk recovered", err)
	default:
	}
	recoverDisk(t, faults, pending)
}

// TestShutdownAnswersAWriteTheFinalFlushMadeDurable: a write that waited
// for a failing disk (appendfsync always, event loop) and that the
// shutdown's final flush made durable, once the disk recovered, is
// acknowledged before its connection closes, as a goroutine connection's
// is, although the loop, paused meanwhile, sees the server closing before
// the end of the wait.
func TestShutdownAnswersAWriteTheFinalFlushMadeDurable(t *testing.T) {
	ctx := context.Background()
	faults, undo := persist.InjectFaults()
	defer undo()
	dir := t.TempDir()
	srv, mgr, c, stop := start(t, dir, "appendfsync", "always", "event-loop", "yes")
	writer := redis.NewClient(&redis.Options{Addr: c.Options().Addr, MaxRetries: -1, PoolSize: 1, ReadTimeout: 20 * time.Second})
	defer writer.Close()
	require.NoError(t, writer.Ping(ctx).Err())
	pending := writeWhileTheDiskFails(t, c, writer, faults, syscall.ENOSPC)
	time.Sleep(50 * time.Millisecond) // the writer's loop has set its connection aside

	// As main on SIGTERM, with the disk freed meanwhile.
	srv.Pause()
	faults.FailWrites(nil)
	require.NoError(t, mgr.PrepareShutdown(persist.SaveNever))
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	require.NoError(t, srv.Shutdown(sctx))
	select {
	case err := <-pending:
		require.NoError(t, err, "the durable write is acknowledged")
	case <-time.After(10 * time.Second):
		t.Fatal("the pending write got no reply")
	}
	stop()
	c, _ = serve(t, dir)
	require.Equal(t, "2", c.Get(ctx, "during").Val())
}

// writeWhileTheDiskFails makes the log's writes fail with errno, sends
// SET during 2 on writer, and returns that SET's outcome once the log (as
// c's INFO shows) has met the failure: the SET waits for the disk.
func writeWhileTheDiskFails(t *testing.T, c, writer *redis.Client, faults *persist.Faults, errno syscall.Errno) <-chan error {
	t.Helper()
	faults.FailWrites(errno)
	pending := make(chan error, 1)
	go func() { pending <- writer.Set(context.Background(), "during", "2", 0).Err() }()
	require.Eventually(t, func() bool { return infoPersistence(t, c)["aof_last_write_status"] == "err" },
		10*time.Second, time.Millisecond)
	return pending
}
