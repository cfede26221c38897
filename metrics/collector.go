// Package metrics serves ratekv's Prometheus endpoint (metrics-port,
// metrics-bind): /metrics in the text exposition format.
//
// Nothing is counted for it on the request path. Its collector reads, at
// scrape time, the counters the server keeps anyway: INFO's fields, the
// per-command statistics of INFO commandstats, the rate-limit decision
// counters of INFO ratelimit and the append-only log's fsync times; plus
// the Go runtime's and the process's own collectors.
package metrics

import (
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ratekv/ratekv/command"
	"github.com/ratekv/ratekv/persist"
)

const namespace = "ratekv"

// infoMetric exports one INFO field.
type infoMetric struct {
	field string
	desc  *prometheus.Desc
	typ   prometheus.ValueType
}

// infoFields are the INFO fields exported, by section; an "ok"/"err" status
// is exported as 1/0.
var infoFields = []struct {
	field, name, help string
	counter           bool
}{
	{"uptime_in_seconds", "uptime_seconds", "Seconds since the server started.", false},
	{"connected_clients", "connected_clients", "Client connections open.", false},
	{"maxclients", "max_clients", "The maxclients setting.", false},
	{"used_memory", "memory_used_bytes", "Memory used, as INFO's used_memory (what maxmemory limits).", false},
	{"used_memory_rss", "memory_rss_bytes", "Resident set size of the process.", false},
	{"used_memory_peak", "memory_used_peak_bytes", "Peak of used_memory.", false},
	{"used_memory_dataset", "memory_dataset_bytes", "Memory the keyspace's values take, as estimated.", false},
	{"used_memory_lua", "memory_lua_bytes", "Memory of the Lua interpreters.", false},
	{"maxmemory", "memory_max_bytes", "The maxmemory setting (0: none).", false},
	{"mem_fragmentation_ratio", "memory_fragmentation_ratio", "used_memory_rss / used_memory.", false},
	{"rdb_changes_since_last_save", "rdb_changes_since_last_save", "Writes since the last snapshot.", false},
	{"rdb_bgsave_in_progress", "rdb_bgsave_in_progress", "1 while a snapshot is being written.", false},
	{"rdb_last_save_time", "rdb_last_save_timestamp_seconds", "Unix time of the last successful snapshot.", false},
	{"rdb_last_bgsave_status", "rdb_last_bgsave_ok", "1 if the last background snapshot succeeded.", false},
	{"rdb_last_bgsave_time_sec", "rdb_last_bgsave_duration_seconds", "Duration of the last background snapshot (-1: none yet).", false},
	{"rdb_saves", "rdb_saves_total", "Snapshots written.", true},
	{"aof_enabled", "aof_enabled", "1 if the append-only log is on.", false},
	{"aof_rewrite_in_progress", "aof_rewrite_in_progress", "1 while the log is being rewritten.", false},
	{"aof_last_bgrewrite_status", "aof_last_bgrewrite_ok", "1 if the last rewrite of the log succeeded.", false},
	{"aof_rewrites", "aof_rewrites_total", "Rewrites of the log.", true},
	{"aof_last_write_status", "aof_last_write_ok", "0 while writes to the append-only log fail.", false},
	{"aof_current_size", "aof_current_size_bytes", "Size of the append-only log.", false},
	{"aof_base_size", "aof_base_size_bytes", "Size of the log at its last rewrite.", false},
	{"aof_buffer_length", "aof_buffer_bytes", "Bytes appended to the log and not yet written.", false},
	{"total_connections_received", "connections_received_total", "Connections accepted.", true},
	{"rejected_connections", "rejected_connections_total", "Connections refused (maxclients).", true},
	{"total_commands_processed", "commands_processed_total", "Commands run.", true},
	{"total_error_replies", "error_replies_total", "Error replies sent.", true},
	{"total_net_input_bytes", "net_input_bytes_total", "Bytes read from clients.", true},
	{"total_net_output_bytes", "net_output_bytes_total", "Bytes written to clients.", true},
	{"expired_keys", "expired_keys_total", "Keys removed because their TTL passed.", true},
	{"evicted_keys", "evicted_keys_total", "Keys evicted by maxmemory-policy.", true},
	{"keyspace_hits", "keyspace_hits_total", "Lookups of keys that existed.", true},
	{"keyspace_misses", "keyspace_misses_total", "Lookups of keys that did not exist.", true},
	{"used_cpu_sys", "cpu_sys_seconds_total", "System CPU time of the server.", true},
	{"used_cpu_user", "cpu_user_seconds_total", "User CPU time of the server.", true},
}

// Collector is a prometheus.Collector of a running server's figures. It
// is safe for concurrent use.
type Collector struct {
	eng     *command.Engine
	persist atomic.Pointer[persist.Manager] // nil: no fsync figures
	info    []infoMetric

	keys, expires                         *prometheus.Desc
	calls, usec, rejected, failed, errors *prometheus.Desc
	decisions, nearLimit, fsync           *prometheus.Desc
	up, duration                          *prometheus.Desc
}

// durationBounds are the upper bounds, in seconds, of the buckets of
// ratekv_command_duration_seconds: the engine's fine histograms (16
// buckets per power of two) summed into a few, so that a series per
// command stays small.
var durationBounds = []float64{
	1e-6, 2.5e-6, 5e-6, 10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6,
	1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3, 1,
}

// NewCollector returns the collector of eng's figures; SetPersistence
// adds the append-only log's.
func NewCollector(eng *command.Engine) *Collector {
	name := func(n string) string { return prometheus.BuildFQName(namespace, "", n) }
	c := &Collector{eng: eng}
	for _, f := range infoFields {
		typ := prometheus.GaugeValue
		if f.counter {
			typ = prometheus.CounterValue
		}
		c.info = append(c.info, infoMetric{field: f.field, typ: typ,
			desc: prometheus.NewDesc(name(f.name), f.help, nil, nil)})
	}
	cmd := []string{"cmd"}
	c.up = prometheus.NewDesc(name("up"), "1: the figures were read.", nil, nil)
	c.keys = prometheus.NewDesc(name("keys"), "Keys in the keyspace, including expired ones not yet reclaimed.", nil, nil)
	c.expires = prometheus.NewDesc(name("keys_with_expiry"), "Keys with a TTL.", nil, nil)
	c.calls = prometheus.NewDesc(name("command_calls_total"), "Calls of the command that ran (INFO commandstats calls).", cmd, nil)
	c.usec = prometheus.NewDesc(name("command_time_seconds_total"), "Time spent running the command (INFO commandstats usec).", cmd, nil)
	c.rejected = prometheus.NewDesc(name("command_rejected_calls_total"), "Calls refused before they ran (arity, NOAUTH, OOM, MISCONF, ...).", cmd, nil)
	c.failed = prometheus.NewDesc(name("command_failed_calls_total"), "Calls that ran and replied with an error.", cmd, nil)
	c.duration = prometheus.NewDesc(name("command_duration_seconds"),
		"Time each call of the command took (latency-tracking; INFO latencystats).", cmd, nil)
	c.errors = prometheus.NewDesc(name("errors_total"), "Error replies by their first word (INFO errorstats).", []string{"err"}, nil)
	c.decisions = prometheus.NewDesc(name("ratelimit_decisions_total"),
		"Rate-limit decisions by command, key group (ratelimit-metrics-groups) and decision (allowed, limited).",
		[]string{"cmd", "group", "decision"}, nil)
	c.nearLimit = prometheus.NewDesc(name("ratelimit_near_limit_total"),
		"Allowed rate-limit decisions that left at most 20 % of the limit.", []string{"cmd", "group"}, nil)
	c.fsync = prometheus.NewDesc(name("aof_fsync_duration_seconds"), "fsyncs of the append-only log and their duration.", nil, nil)
	return c
}

// SetPersistence adds m's fsync figures.
func (c *Collector) SetPersistence(m *persist.Manager) { c.persist.Store(m) }

// Describe sends every metric's description.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.info {
		ch <- m.desc
	}
	for _, d := range []*prometheus.Desc{c.up, c.keys, c.expires, c.calls, c.usec, c.rejected, c.failed, c.errors, c.decisions, c.nearLimit, c.fsync} {
		ch <- d
	}
}

// Collect reads the figures.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	fields := parseInfo(c.eng.Info("server", "clients", "memory", "persistence", "stats", "cpu", "errorstats", "keyspace"))
	for _, m := range c.info {
		v, ok := fields[m.field]
		if !ok {
			continue
		}
		var x float64
		switch v {
		case "ok":
			x = 1
		case "err":
			x = 0
		default:
			var err error
			if x, err = strconv.ParseFloat(v, 64); err != nil {
				continue
			}
		}
		ch <- prometheus.MustNewConstMetric(m.desc, m.typ, x)
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
	db := parseList(fields["db0"])
	ch <- prometheus.MustNewConstMetric(c.keys, prometheus.GaugeValue, db["keys"])
	ch <- prometheus.MustNewConstMetric(c.expires, prometheus.GaugeValue, db["expires"])
	for k, v := range fields {
		if prefix, ok := strings.CutPrefix(k, "errorstat_"); ok {
			ch <- prometheus.MustNewConstMetric(c.errors, prometheus.CounterValue, parseList(v)["count"], prefix)
		}
	}

	seconds := map[string]float64{}
	for _, s := range c.eng.CommandStats() {
		seconds[s.Name] = float64(s.Usec) / 1e6
		ch <- prometheus.MustNewConstMetric(c.calls, prometheus.CounterValue, float64(s.Calls), s.Name)
		ch <- prometheus.MustNewConstMetric(c.usec, prometheus.CounterValue, seconds[s.Name], s.Name)
		ch <- prometheus.MustNewConstMetric(c.rejected, prometheus.CounterValue, float64(s.Rejected), s.Name)
		ch <- prometheus.MustNewConstMetric(c.failed, prometheus.CounterValue, float64(s.Failed), s.Name)
	}
	c.eng.EachLatencyHistogram(func(name string, counts []uint64) {
		buckets, total := cumulate(counts)
		if total > 0 {
			ch <- prometheus.MustNewConstHistogram(c.duration, total, seconds[name], buckets, name)
		}
	})

	for _, d := range c.eng.Decisions() {
		ch <- prometheus.MustNewConstMetric(c.decisions, prometheus.CounterValue, float64(d.Allowed), d.Command, d.Group, "allowed")
		ch <- prometheus.MustNewConstMetric(c.decisions, prometheus.CounterValue, float64(d.Limited), d.Command, d.Group, "limited")
		ch <- prometheus.MustNewConstMetric(c.nearLimit, prometheus.CounterValue, float64(d.NearLimit), d.Command, d.Group)
	}

	if m := c.persist.Load(); m != nil {
		if st := m.Stats(); st.AOFEnabled {
			ch <- prometheus.MustNewConstSummary(c.fsync, uint64(st.Fsyncs), st.FsyncTime.Seconds(), nil)
		}
	}
}

// parseInfo maps INFO's "field:value" lines to their values.
func parseInfo(text string) map[string]string {
	m := make(map[string]string)
	for _, line := range strings.Split(text, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "#") {
			m[k] = v
		}
	}
	return m
}

// parseList parses "a=1,b=2" (INFO keyspace and errorstats values).
func parseList(v string) map[string]float64 {
	m := make(map[string]float64)
	for _, kv := range strings.Split(v, ",") {
		if k, n, ok := strings.Cut(kv, "="); ok {
			if x, err := strconv.ParseFloat(n, 64); err == nil {
				m[k] = x
			}
		}
	}
	return m
}

// cumulate sums the engine's fine latency buckets (command.LatencyBucketBound)
// into durationBounds' cumulative counts; the sum of all is total.
func cumulate(counts []uint64) (buckets map[float64]uint64, total uint64) {
	buckets = make(map[float64]uint64, len(durationBounds))
	i := 0
	for _, b := range durationBounds {
		limit := int64(b * 1e9)
		for ; i < len(counts) && command.LatencyBucketBound(i) <= limit; i++ {
			total += counts[i]
		}
		buckets[b] = total
	}
	for ; i < len(counts); i++ {
		total += counts[i]
	}
	return buckets, total
}
