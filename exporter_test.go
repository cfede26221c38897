package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// Debian's prometheus-redis-exporter (1.45) scraping ratekv: no scrape
// error, and every metric family it gives for a redis-server 7.0 that means
// something for ratekv.

// exporterNotApplicable are the families the exporter gives for Redis 7.0
// that have no meaning for ratekv.
var exporterNotApplicable = []string{
	// jemalloc's active defragmentation: Go's collector has none.
	"redis_active_defrag_running", "redis_defrag_hits", "redis_defrag_misses",
	"redis_defrag_key_hits", "redis_defrag_key_misses",
	// fork(): ratekv snapshots and rewrites the log without forking.
	"redis_latest_fork_seconds", "redis_rdb_last_cow_size_bytes", "redis_aof_last_cow_size_bytes",
	"redis_module_fork_in_progress", "redis_module_fork_last_cow_size",
	// Threads: ratekv's event loops run the commands too; there is no
	// "main thread" nor io-threads setting, nor reads handed to I/O threads.
	"redis_cpu_sys_main_thread_seconds_total", "redis_cpu_user_main_thread_seconds_total",
	"redis_config_io_threads", "redis_io_threaded_reads_processed", "redis_io_threaded_writes_processed",
	// Replication and its backlog: not in ratekv.
	"redis_repl_backlog_first_byte_offset", "redis_repl_backlog_history_bytes", "redis_replication_backlog_bytes",
	"redis_replica_partial_resync_accepted", "redis_replica_partial_resync_denied", "redis_replica_resyncs_full",
	"redis_slave_expires_tracked_keys", "redis_mem_clients_slaves", "redis_unexpected_error_replies",
	// MIGRATE, client-side caching (CLIENT TRACKING), RDB payload
	// sanitization (sanitize-dump-payload): not in ratekv.
	"redis_migrate_cached_sockets_total",
	"redis_tracking_total_items", "redis_tracking_total_keys", "redis_tracking_total_prefixes",
	"redis_dump_payload_sanitizations",
}

// exporterCore are families checked even without a redis-server to compare
// with.
var exporterCore = []string{
	"redis_up", "redis_uptime_in_seconds", "redis_connected_clients", "redis_memory_used_bytes",
	"redis_commands_total", "redis_commands_duration_seconds_total", "redis_errors_total",
	"redis_db_keys", "redis_db_keys_expiring", "redis_expired_keys_total", "redis_keyspace_hits_total",
	"redis_rdb_last_save_timestamp_seconds", "redis_aof_enabled", "redis_config_maxclients",
	"redis_total_reads_processed", "redis_expired_stale_percentage", "redis_expired_time_cap_reached_total",
}

// scrapeExporter runs the exporter against the Redis at addr, scrapes it
// once and returns the families and the exporter's log.
func scrapeExporter(t *testing.T, exporter, addr string) (map[string]float64, []string, string) {
	t.Helper()
	listen := "127.0.0.1:" + freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, exporter, "-redis.addr", "redis://"+addr, "-web.listen-address", listen,
		"-redis-only-metrics")
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	require.NoError(t, cmd.Start())
	defer func() { cancel(); cmd.Wait() }()
	var resp *http.Response
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if resp, err = http.Get("http://" + listen + "/metrics"); err == nil {
			break
		}
	}
	require.NoError(t, err, "the exporter does not answer")
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	require.NoError(t, err)
	scrapeErr := map[string]float64{}
	var names []string
	for name, f := range fams {
		names = append(names, name)
		if name == "redis_exporter_last_scrape_error" {
			for _, m := range f.GetMetric() {
				scrapeErr[fmt.Sprint(m.GetLabel())] = m.GetGauge().GetValue()
			}
		}
	}
	slices.Sort(names)
	cancel()
	cmd.Wait()
	return scrapeErr, names, log.String()
}

func TestRedisExporter(t *testing.T) {
	exporter, err := exec.LookPath("prometheus-redis-exporter")
	if err != nil {
		t.Skip("prometheus-redis-exporter is not installed")
	}
	bin, err := buildBinary()
	require.NoError(t, err)
	addr, _ := startRatekv(t, bin, t.TempDir(), "--save", "")
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	// A key with a TTL for the keyspace families, an error for errorstats.
	require.NoError(t, rdb.Set(context.Background(), "k", "v", time.Hour).Err())
	require.Error(t, rdb.Do(context.Background(), "INCR", "k").Err())

	scrapeErr, have, log := scrapeExporter(t, exporter, addr)
	for labels, v := range scrapeErr {
		require.Zero(t, v, "redis_exporter_last_scrape_error%s", labels)
	}
	sc := bufio.NewScanner(strings.NewReader(log))
	for sc.Scan() {
		if line := sc.Text(); strings.Contains(line, "err:") {
			t.Errorf("the exporter logs an error: %s", line)
		}
	}

	want := exporterCore
	if redisAddr := os.Getenv("RATEKV_REDIS_ADDR"); redisAddr != "" {
		_, redisHas, _ := scrapeExporter(t, exporter, redisAddr)
		want = append(want, redisHas...)
	} else {
		t.Log("RATEKV_REDIS_ADDR is not set: checking the core families only")
	}
	for _, f := range want {
		switch {
		case slices.Contains(exporterNotApplicable, f):
		case !slices.Contains(have, f):
			t.Errorf("missing family %s", f)
		}
	}
	t.Logf("%d families from ratekv", len(have))
}
