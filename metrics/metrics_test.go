package metrics

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ratekv/ratekv/command"
	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/server"
	"github.com/ratekv/ratekv/shards"
)

var ctx = context.Background()

// startServer starts a ratekv server (no persistence) with its metrics
// endpoint, and returns a client of it.
func startServer(t *testing.T, conf ...string) (*redis.Client, *Server, *config.Config) {
	t.Helper()
	cfg := config.New()
	for _, kv := range [][2]string{{"port", "0"}, {"save", ""}, {"appendonly", "no"}, {"dir", t.TempDir()}} {
		require.NoError(t, cfg.Set(kv[0], kv[1]))
	}
	for i := 0; i+1 < len(conf); i += 2 {
		require.NoError(t, cfg.Set(conf[i], conf[i+1]))
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	store := shards.New(shards.Options{Shards: 4})
	t.Cleanup(store.Close)
	srv := server.New(store, cfg, log)
	require.NoError(t, srv.Listen())
	go srv.Serve()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	m := New(cfg, srv.Engine, log)
	require.NoError(t, m.Start())
	t.Cleanup(m.Close)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr().String()})
	t.Cleanup(func() { rdb.Close() })
	return rdb, m, cfg
}

// freePort returns a port that was free a moment ago.
func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// scrape fetches and parses /metrics with the official text parser.
func scrape(t *testing.T, addr net.Addr) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + addr.String() + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return fams
}

// value returns the value of the series of family name with labels (name,
// value pairs), and whether there is one.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if have[labels[i]] != labels[i+1] {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Summary != nil:
			return float64(m.Summary.GetSampleCount()), true
		}
	}
	return 0, false
}

func TestDecisionMetrics(t *testing.T) {
	port := freePort(t)
	rdb, m, _ := startServer(t, "metrics-port", strconv.Itoa(port), "ratelimit-metrics-groups", "login:* api:*")
	require.Equal(t, fmt.Sprintf("127.0.0.1:%d", port), m.Addr().String())

	type want struct {
		cmd, group                  string
		allowed, limited, nearLimit float64
	}
	steps := []struct {
		cmd  []any
		want []want // the series that change, with their totals
	}{
		{[]any{"CL.THROTTLE", "login:a", 4, 1, 60}, []want{{"cl.throttle", "login:*", 1, 0, 0}}},    // remaining 4 of 5
		{[]any{"CL.THROTTLE", "login:a", 4, 1, 60, 3}, []want{{"cl.throttle", "login:*", 2, 0, 1}}}, // remaining 1 of 5: near
		{[]any{"CL.THROTTLE", "login:a", 4, 1, 60, 2}, []want{{"cl.throttle", "login:*", 2, 1, 1}}}, // limited
		{[]any{"SW.THROTTLE", "api:k", 10, 1000}, []want{{"sw.throttle", "api:*", 1, 0, 0}}},        // remaining 9 of 10
		{[]any{"SL.THROTTLE", "session:1", 1, 1000}, []want{{"sl.throttle", "other", 1, 0, 1}}},     // remaining 0 of 1: near
		{[]any{"SL.THROTTLE", "session:1", 1, 1000}, []want{{"sl.throttle", "other", 1, 1, 1}}},     // limited
		{[]any{"CL.THROTTLEMS", "api:m", 0, 1, 1000}, []want{{"cl.throttlems", "api:*", 1, 0, 1}}},  // remaining 0 of 1
		{[]any{"CL.THROTTLEALL", 2, "login:b", 9, 1, 60, "x", 9, 1, 60}, []want{{"cl.throttleall", "login:*", 1, 0, 0}, {"cl.throttleall", "other", 1, 0, 0}}},
		{[]any{"CL.PEEK", "login:a", 4, 1, 60}, nil},
	}
	totals := map[[2]string]want{}
	for i, st := range steps {
		require.NoError(t, rdb.Do(ctx, st.cmd...).Err(), "step %d", i)
		for _, w := range st.want {
			totals[[2]string{w.cmd, w.group}] = w
		}
		fams := scrape(t, m.Addr())
		for _, cmd := range []string{"cl.throttle", "cl.throttlems", "cl.throttleall", "sl.throttle", "sw.throttle"} {
			for _, g := range []string{"login:*", "api:*", "other"} {
				w := totals[[2]string{cmd, g}]
				for _, c := range []struct {
					name, decision string
					want           float64
				}{
					{"ratekv_ratelimit_decisions_total", "allowed", w.allowed},
					{"ratekv_ratelimit_decisions_total", "limited", w.limited},
					{"ratekv_ratelimit_near_limit_total", "", w.nearLimit},
				} {
					labels := []string{"cmd", cmd, "group", g}
					if c.decision != "" {
						labels = append(labels, "decision", c.decision)
					}
					have, ok := value(fams, c.name, labels...)
					if !ok || have != c.want {
						t.Errorf("step %d: %s %v: have %v (present %v), want %v", i, c.name, labels, have, ok, c.want)
					}
				}
			}
		}
	}

	// The server's other figures, from INFO and commandstats.
	fams := scrape(t, m.Addr())
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"ratekv_keys", nil, 6},
		{"ratekv_keys_with_expiry", nil, 6},
		{"ratekv_command_calls_total", []string{"cmd", "cl.throttle"}, 3},
		{"ratekv_command_calls_total", []string{"cmd", "cl.peek"}, 1},
		{"ratekv_up", nil, 1},
	} {
		have, ok := value(fams, c.name, c.labels...)
		if !ok || have != c.want {
			t.Errorf("%s %v: have %v (present %v), want %v", c.name, c.labels, have, ok, c.want)
		}
	}
	for _, name := range []string{"ratekv_connected_clients", "ratekv_memory_used_bytes", "ratekv_rdb_last_save_timestamp_seconds",
		"ratekv_aof_last_write_ok", "ratekv_expired_keys_total", "go_goroutines", "process_resident_memory_bytes"} {
		_, ok := value(fams, name)
		require.True(t, ok, name)
	}
}

// TestMetricsPortChanges checks CONFIG SET metrics-port moves the
// endpoint and 0 turns it off.
func TestMetricsPortChanges(t *testing.T) {
	rdb, m, _ := startServer(t)
	require.Nil(t, m.Addr(), "metrics-port 0 is off")
	port := freePort(t)
	require.NoError(t, rdb.ConfigSet(ctx, "metrics-port", strconv.Itoa(port)).Err())
	require.Equal(t, fmt.Sprintf("127.0.0.1:%d", port), m.Addr().String())
	_, ok := value(scrape(t, m.Addr()), "ratekv_up")
	require.True(t, ok)

	old := m.Addr()
	port2 := freePort(t)
	require.NoError(t, rdb.ConfigSet(ctx, "metrics-port", strconv.Itoa(port2)).Err())
	require.Equal(t, fmt.Sprintf("127.0.0.1:%d", port2), m.Addr().String())
	_, err := http.Get("http://" + old.String() + "/metrics")
	require.Error(t, err, "the old port still answers")

	require.NoError(t, rdb.ConfigSet(ctx, "metrics-port", "0").Err())
	require.Nil(t, m.Addr())
	_, err = http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port2))
	require.Error(t, err)

	// A port in use: the change is taken, the endpoint stays off.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	require.NoError(t, rdb.ConfigSet(ctx, "metrics-port", strconv.Itoa(busy.Addr().(*net.TCPAddr).Port)).Err())
	require.Nil(t, m.Addr())
}

// TestCommandDurationHistogram: ratekv_command_duration_seconds counts
// every call of a command, its sum is INFO commandstats' time, and its
// buckets are cumulative.
func TestCommandDurationHistogram(t *testing.T) {
	port := freePort(t)
	rdb, m, _ := startServer(t, "metrics-port", strconv.Itoa(port))
	for i := range 25 {
		require.NoError(t, rdb.Set(ctx, fmt.Sprint("k", i), i, 0).Err())
	}
	fams := scrape(t, m.Addr())
	var h *dto.Histogram
	for _, mt := range fams["ratekv_command_duration_seconds"].GetMetric() {
		for _, l := range mt.GetLabel() {
			if l.GetName() == "cmd" && l.GetValue() == "set" {
				h = mt.GetHistogram()
			}
		}
	}
	require.NotNil(t, h, "no histogram for set")
	require.EqualValues(t, 25, h.GetSampleCount())
	calls, _ := value(fams, "ratekv_command_calls_total", "cmd", "set")
	require.EqualValues(t, 25, calls)
	secs, _ := value(fams, "ratekv_command_time_seconds_total", "cmd", "set")
	require.InDelta(t, secs, h.GetSampleSum(), 1e-9)
	prev := uint64(0)
	for _, b := range h.GetBucket() {
		require.GreaterOrEqual(t, b.GetCumulativeCount(), prev)
		prev = b.GetCumulativeCount()
	}
	require.LessOrEqual(t, prev, h.GetSampleCount())
}

// cumulate sums fine buckets into the coarse bounds: a duration counts in
// every bound at or above its fine bucket's bound.
func TestCumulate(t *testing.T) {
	counts := make([]uint64, command.LatencyBuckets)
	counts[0] = 1                        // 0 ns
	counts[command.LatencyBuckets-1] = 2 // past every bound
	for i := range counts {
		if b := command.LatencyBucketBound(i); b > 3000 && b <= 4000 { // 3-4 µs
			counts[i] = 10
			break
		}
	}
	buckets, total := cumulate(counts)
	require.EqualValues(t, 13, total)
	require.EqualValues(t, 1, buckets[1e-6])
	require.EqualValues(t, 1, buckets[2.5e-6])
	require.EqualValues(t, 11, buckets[5e-6])
	require.EqualValues(t, 11, buckets[1])
}
