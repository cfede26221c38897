package config

import (
	"os"
	"strings"
)

// What ratekv does with a redis.conf. A directive ratekv has a parameter
// for applies (Params). Every other directive of Redis 7 is in
// redisDirectives below, which decides, from its values and the rest of
// the configuration, between three things:
//
//   - ignore: Redis's own machinery that ratekv has no counterpart for and
//     no client can tell apart (encodings, allocator, rehashing, process
//     title), settings that take effect only with a directive ratekv
//     refuses (replication, cluster), or a value that asks for what
//     ratekv does anyway (daemonize no, Redis's default value);
//   - warn, once per directive name: the file asks for something ratekv
//     does not do, and running without it is safe (the client gets an
//     error where it would use it, or nothing changes but an operator's
//     expectation);
//   - refuse to start: running without it would be unsafe or surprising:
//     a command left callable that the file hides (rename-command), or
//     a server that does not fork when told to.
//
// A name in neither table is an error, as in Redis: a typo must not pass
// silently. maxmemory and its policy are left to the eviction work, which
// makes them parameters.

// verdict is what ratekv does with a directive it has no parameter for.
type verdict uint8

const (
	ignore verdict = iota
	warn
	refuse
)

// directive judges every value given for one directive, in order (a
// directive given twice has two), and returns the verdict and its reason.
type directive struct {
	rule func(c *Config, values []string) (verdict, string)
}

// silent ignores the directive whatever its value.
func silent(reason string) directive {
	return directive{func(*Config, []string) (verdict, string) { return ignore, reason }}
}

// warnUnless ignores the directive when its value is one of quiet (Redis's
// default, or what ratekv does anyway) and warns with reason otherwise.
func warnUnless(reason string, quiet ...string) directive {
	return directive{func(_ *Config, values []string) (verdict, string) {
		if isOneOf(last(values), quiet) {
			return ignore, reason
		}
		return warn, reason
	}}
}

// refuseUnless ignores the directive when its value is one of ok and
// refuses it with reason otherwise.
func refuseUnless(reason string, ok ...string) directive {
	return directive{func(_ *Config, values []string) (verdict, string) {
		if isOneOf(last(values), ok) {
			return ignore, reason
		}
		return refuse, reason
	}}
}

// refuseAlways refuses the directive whatever its value.
func refuseAlways(reason string) directive {
	return directive{func(*Config, []string) (verdict, string) { return refuse, reason }}
}

// last is the value in force: as in Redis, the last one given.
func last(values []string) string { return values[len(values)-1] }

// isOneOf compares v with opts ignoring case and spacing.
func isOneOf(v string, opts []string) bool {
	v = strings.Join(strings.Fields(v), " ")
	for _, o := range opts {
		if strings.EqualFold(v, o) {
			return true
		}
	}
	return false
}

// Reasons shared by several directives.
const (
	internals   = "tunes Redis's own machinery (encodings, allocator, background tasks), which ratekv does not have"
	replication = "tunes Redis's replication (RDB transfer, lazy flushes), which ratekv's replication does not use"
	cluster     = "tunes Redis Cluster's bus and failover between nodes; ratekv's cluster mode is one node"
	outgoing    = "configures TLS for outgoing connections (replication, cluster), which ratekv does not make"
	cpuList     = "ratekv does not pin its threads to CPUs; use taskset or systemd's CPUAffinity="
)

// redisDirectives holds every directive of Redis 7 that is not in Params
// (CONFIG GET * of Redis 7.0, the directives that only config files have,
// and 7.2's additions), under every name Redis accepts for it.
var redisDirectives = map[string]directive{
	// Network and process.
	"tcp-backlog":   warnUnless("ratekv listens with the kernel's backlog (somaxconn)", "511"),
	"tcp-keepalive": warnUnless("ratekv sends TCP keepalives every 300 s", "300"),
	"unixsocket": refuseUnless("ratekv listens on TCP only: the socket's clients would find nothing "+
		"(and port 0, Redis's \"no TCP\", means \"any free port\" in ratekv)", ""),
	"unixsocketperm":   silent("takes effect only with unixsocket, which ratekv refuses"),
	"socket-mark-id":   warnUnless("ratekv does not mark its sockets", "0"),
	"bind-source-addr": silent("sets the source address of outgoing connections (replication), which ratekv does not make"),
	"daemonize":        {daemonize},
	"databases":        {databases},
	"syslog-enabled": warnUnless("ratekv does not log to syslog: it logs to logfile, or standard error, "+
		"which systemd passes to the journal", "no"),
	"syslog-ident":             silent("takes effect only with syslog-enabled yes"),
	"syslog-facility":          silent("takes effect only with syslog-enabled yes"),
	"crash-log-enabled":        silent("a crash of ratekv prints Go's stack traces"),
	"crash-memcheck-enabled":   silent("a crash of ratekv prints Go's stack traces"),
	"always-show-logo":         silent("ratekv shows no logo"),
	"set-proc-title":           silent("ratekv keeps its process title"),
	"proc-title-template":      silent("ratekv keeps its process title"),
	"disable-thp":              silent("Redis turns transparent huge pages off for its forked saves; ratekv does not fork"),
	"oom-score-adj":            warnUnless("ratekv does not change its OOM score; use systemd's OOMScoreAdjust=", "no"),
	"oom-score-adj-values":     silent("takes effect only with oom-score-adj"),
	"server_cpulist":           warnUnless(cpuList, ""),
	"bio_cpulist":              warnUnless(cpuList, ""),
	"aof_rewrite_cpulist":      warnUnless(cpuList, ""),
	"bgsave_cpulist":           warnUnless(cpuList, ""),
	"ignore-warnings":          silent("names start-up warnings of Redis that ratekv does not give"),
	"io-threads":               warnUnless("ratekv serves clients from one event loop per core (event-loop); io-threads has no effect", "1"),
	"io-threads-do-reads":      silent("takes effect only with io-threads"),
	"hz":                       silent(internals),
	"dynamic-hz":               silent(internals),
	"enable-protected-configs": warnUnless("dir, dbfilename and the other protected parameters cannot be changed by CONFIG SET in ratekv at all", "no"),
	"enable-debug-command":     warnUnless("ratekv has no DEBUG command", "no"),
	"enable-module-command":    warnUnless("ratekv has no MODULE command", "no"),
	"shutdown-on-sigint": warnUnless("ratekv shuts down on a signal as with \"default\": it persists as configured, "+
		"and goes on serving if that fails", "default"),
	"shutdown-on-sigterm": warnUnless("ratekv shuts down on a signal as with \"default\": it persists as configured, "+
		"and goes on serving if that fails", "default"),
	"shutdown-timeout":        silent("is how long a shutdown waits for replicas, which ratekv does not have"),
	"lua-replicate-commands":  silent("is obsolete in Redis 7 too"),
	"notify-keyspace-events":  warnUnless("ratekv sends no keyspace notifications", ""),
	"tracking-table-max-keys": silent("ratekv has no client-side caching (CLIENT TRACKING)"),
	"locale-collate":          silent("affects only SORT, which ratekv does not have"),

	// Users and commands.
	"rename-command": refuseAlways("ratekv cannot rename or hide commands: " +
		"the command this hides would stay callable under its own name"),
	"loadmodule": refuseAlways("ratekv cannot load Redis modules: the module's commands would be missing"),
	"sentinel":   refuseAlways("this is Redis Sentinel's configuration; ratekv is not Sentinel"),

	// Persistence: ratekv's snapshot and log have their own formats (see
	// notes for dbfilename).
	"rdbcompression":                silent("ratekv's snapshots have their own format"),
	"rdbchecksum":                   silent("ratekv always checksums its snapshots"),
	"rdb-del-sync-files":            silent(replication),
	"rdb-save-incremental-fsync":    silent(internals),
	"aof-rewrite-incremental-fsync": silent(internals),
	"aof-use-rdb-preamble":          silent("ratekv's log has its own format"),
	"aof-timestamp-enabled":         warnUnless("ratekv's log has no timestamp annotations", "no"),
	"aof-disable-auto-gc":           warnUnless("ratekv removes the log files a rewrite replaced", "no"),
	"no-appendfsync-on-rewrite":     warnUnless("ratekv goes on fsyncing the log during a rewrite", "no"),
	"sanitize-dump-payload":         silent("RESTORE always checks a payload in full"),

	// Memory and encodings.
	"list-max-ziplist-entries":      silent(internals),
	"list-max-ziplist-value":        silent(internals),
	"list-compress-depth":           silent(internals),
	"set-max-intset-entries":        silent(internals),
	"stream-node-max-bytes":         silent(internals),
	"stream-node-max-entries":       silent(internals),
	"hll-sparse-max-bytes":          silent(internals),
	"activerehashing":               silent(internals),
	"jemalloc-bg-thread":            silent(internals),
	"activedefrag":                  silent(internals),
	"active-defrag-cycle-max":       silent(internals),
	"active-defrag-cycle-min":       silent(internals),
	"active-defrag-ignore-bytes":    silent(internals),
	"active-defrag-max-scan-fields": silent(internals),
	"active-defrag-threshold-lower": silent(internals),
	"active-defrag-threshold-upper": silent(internals),
	"active-expire-effort":          silent(internals),
	"lazyfree-lazy-eviction":        silent(internals),
	"lazyfree-lazy-expire":          silent(internals),
	"lazyfree-lazy-server-del":      silent(internals),
	"lazyfree-lazy-user-del":        silent(internals),
	"lazyfree-lazy-user-flush":      silent(internals),

	// Replication.
	"repl-backlog-ttl":                 silent(replication),
	"repl-diskless-load":               silent(replication),
	"repl-diskless-sync":               silent(replication),
	"repl-diskless-sync-delay":         silent(replication),
	"repl-diskless-sync-max-replicas":  silent(replication),
	"repl-disable-tcp-nodelay":         silent(replication),
	"replica-ignore-disk-write-errors": silent(replication),
	"replica-ignore-maxmemory":         silent(replication),
	"replica-lazy-flush":               silent(replication),
	"slave-ignore-maxmemory":           silent(replication),
	"slave-lazy-flush":                 silent(replication),
	"propagation-error-behavior":       silent(replication),

	// Cluster.
	"cluster-allow-pubsubshard-when-down": silent(cluster),
	"cluster-allow-replica-migration":     silent(cluster),
	"cluster-announce-human-nodename":     silent(cluster),
	"cluster-announce-tls-port":           silent(cluster),
	"cluster-link-sendbuf-limit":          silent(cluster),
	"cluster-migration-barrier":           silent(cluster),
	"cluster-preferred-endpoint-type":     silent(cluster),
	"cluster-replica-no-failover":         silent(cluster),
	"cluster-slave-no-failover":           silent(cluster),

	// TLS: what only outgoing connections (replication, cluster) use.
	"tls-client-cert-file":     silent(outgoing),
	"tls-client-key-file":      silent(outgoing),
	"tls-client-key-file-pass": silent(outgoing),
	"tls-cluster":              silent(cluster),
	"tls-dh-params-file":       silent("Go's TLS has no finite-field Diffie-Hellman suites: key exchange is ECDHE"),
}

// daemonize yes asks Redis to fork into the background. ratekv does not
// fork; under systemd supervision Redis does not either, so there it is
// accepted.
func daemonize(c *Config, values []string) (verdict, string) {
	if isOneOf(last(values), []string{"no"}) || c.NotifySocket() != "" {
		return ignore, ""
	}
	return refuse, "ratekv does not fork into the background: set daemonize no (or pass --daemonize no) " +
		"and let a supervisor run it, such as systemd with supervised systemd (see deploy/ratekv.service)"
}

// databases: ratekv has only db 0 (CONFIG GET databases says 1), and
// SELECT of any other is refused, so a file's "databases 16" is accepted
// with a warning rather than refused.
func databases(_ *Config, values []string) (verdict, string) {
	if isOneOf(last(values), []string{"1"}) {
		return ignore, ""
	}
	return warn, "ratekv has only db 0: SELECT of any other is refused"
}

// notes are the warnings about values of ratekv's own parameters that a
// redis.conf may hold but that mean something else here.
func (c *Config) notes() []Warning {
	var out []Warning
	if v := c.String(DBFilename); strings.HasSuffix(strings.ToLower(v), ".rdb") {
		out = append(out, Warning{"dbfilename", v, "ratekv writes its own snapshot format to this file, not RDB: " +
			"Redis's tools cannot read it, and ratekv does not load a Redis RDB file"})
	}
	if l := c.OutputLimit(OutputNormal); l.Hard != 0 || l.Soft != 0 {
		out = append(out, Warning{"client-output-buffer-limit", c.get(ClientOutputBufferLimit.index()).text,
			"ratekv does not disconnect a normal client whose replies pile up: the normal class's limit is kept but not applied"})
	}
	if c.String(Supervised) == "systemd" && c.NotifySocket() == "" {
		out = append(out, Warning{"supervised", "systemd", "NOTIFY_SOCKET is not set: systemd will not be told when ratekv is ready"})
	}
	return out
}

// NotifySocket returns the socket on which to tell systemd that ratekv is
// ready and when it stops (sd_notify): $NOTIFY_SOCKET when supervised is
// systemd or auto, "" when it is no or the variable is not set.
func (c *Config) NotifySocket() string {
	switch c.String(Supervised) {
	case "systemd", "auto":
		return os.Getenv("NOTIFY_SOCKET")
	}
	return ""
}
