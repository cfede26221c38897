// Package config holds ratekv's server parameters under their redis.conf
// names: the table that main reads flags and config files through, and that
// CONFIG GET / CONFIG SET use at run time. Keeping one table means a
// parameter has one name, one default and one validator wherever it is set.
// Code reads values through typed keys (keys.go) and follows changes with
// OnChange hooks.
package config

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Param describes one configuration parameter.
type Param struct {
	Name    string
	Default string
	// Mutable parameters can be changed by CONFIG SET while running.
	Mutable bool
	// Usage is the one-line help shown by --help.
	Usage string
	// Check validates and normalises a value; it returns the canonical form
	// (what CONFIG GET shows, e.g. "512mb" → "536870912").
	Check func(v string) (string, error)
	// Alias is an older name accepted for the parameter (Redis's
	// zset-max-ziplist-* for zset-max-listpack-*); it reads and writes the
	// same value and CONFIG GET patterns list it too.
	Alias string
	// Update, when set, is used by Set in place of Check for a parameter
	// that a value changes in part (client-output-buffer-limit: the classes
	// it names): it returns the canonical whole from the current canonical
	// value and the new one.
	Update func(cur, v string) (string, error)
}

// Params is the parameter table, in --help order.
var Params = []Param{
	{Name: "bind", Default: "127.0.0.1", Usage: "addresses to listen on (space separated)", Check: nonEmpty},
	{Name: "port", Default: "6380", Usage: "TCP port (0 picks a free one)", Check: intRange(0, 65535)},
	{Name: "dir", Default: "./data", Usage: "data directory (snapshots, append-only log)", Check: nonEmpty},
	{Name: "requirepass", Default: "", Mutable: true, Usage: "password of the default user (empty: no AUTH needed)", Check: anyValue},
	{Name: "aclfile", Default: "", Usage: "file of ACL users (user lines, as ACL SAVE writes them); not together with user directives", Check: anyValue},
	{Name: "acllog-max-len", Default: "128", Mutable: true, Usage: "entries ACL LOG keeps (denied commands, keys, channels and failed AUTHs)", Check: intRange(0, math.MaxInt64)},
	{Name: "acl-pubsub-default", Default: "resetchannels", Mutable: true, Usage: "channels a new ACL user may use: resetchannels (none) or allchannels", Check: oneOf("allchannels", "resetchannels")},
	{Name: "maxclients", Default: "10000", Mutable: true, Usage: "maximum number of connected clients", Check: intRange(1, 1<<30)},
	{Name: "timeout", Default: "0", Mutable: true, Usage: "close a client idle for this many seconds (0: never)", Check: intRange(0, 1<<31-1)},
	{Name: "proto-max-bulk-len", Default: "512mb", Mutable: true, Usage: "largest bulk string a client may send", Check: memRange(1024, 1<<40)},
	{Name: "client-output-buffer-limit", Default: "normal 0 0 0 replica 256mb 64mb 60 pubsub 32mb 8mb 60", Mutable: true,
		Usage: `"class hard soft seconds" for classes normal, replica (slave) and pubsub: a replica or subscriber whose unsent output passes hard bytes, or soft bytes for seconds, is disconnected (0: no limit; normal clients are not cut off); a value changes the classes it names`,
		Check: func(v string) (string, error) { return updateOutputLimits("normal 0 0 0 slave 0 0 0 pubsub 0 0 0", v) }, Update: updateOutputLimits},
	{Name: "client-query-buffer-limit", Default: "1gb", Mutable: true, Usage: "largest query buffer per client", Check: memRange(1024, 1<<40)},
	{Name: "shards", Default: "0", Usage: "number of keyspace shards, a power of two (0: 16 per core)", Check: shardsCheck},
	{Name: "loglevel", Default: "notice", Mutable: true, Usage: "debug, verbose, notice or warning", Check: oneOf("debug", "verbose", "notice", "warning")},
	{Name: "logfile", Default: "", Usage: `append the log to this file, opened for each line as Redis does, so it can be rotated by moving it ("": standard error)`, Check: anyValue},
	{Name: "pidfile", Default: "", Usage: `write the process id to this file at start and remove it at exit ("": none)`, Check: anyValue},
	{Name: "supervised", Default: "no", Usage: "systemd: tell systemd (sd_notify on $NOTIFY_SOCKET) when ready and when stopping; auto: systemd when NOTIFY_SOCKET is set; no", Check: supervisedCheck},
	{Name: "save", Default: "3600 1 300 100 60 10000", Mutable: true, Usage: `snapshot rules "seconds changes ..." ("" disables)`, Check: saveCheck},
	{Name: "stop-writes-on-bgsave-error", Default: "yes", Mutable: true, Usage: "refuse writes while save rules are set and the last background save failed, until a save succeeds (as Redis)", Check: yesNo},
	{Name: "appendonly", Default: "yes", Mutable: true, Usage: "keep an append-only log (yes/no; CONFIG SET yes writes it from the dataset in the background, as Redis)", Check: yesNo},
	{Name: "appendfsync", Default: "everysec", Mutable: true, Usage: "fsync the log: always (before replying), everysec or no", Check: oneOf(fsyncNames[:]...)},
	{Name: "appendfilename", Default: "appendonly.aof", Usage: "base name of the append-only log files", Check: fileName},
	{Name: "appenddirname", Default: "appendonlydir", Usage: "directory of the append-only log files, inside dir", Check: fileName},
	{Name: "dbfilename", Default: "dump.rkv", Usage: "snapshot file (ratekv's format, not RDB), inside dir", Check: fileName},
	{Name: "auto-aof-rewrite-percentage", Default: "100", Mutable: true, Usage: "rewrite the log when it grew by this percentage since the last rewrite (0: never)", Check: intRange(0, 1<<31-1)},
	{Name: "auto-aof-rewrite-min-size", Default: "64mb", Mutable: true, Usage: "do not rewrite the log automatically below this size", Check: memRange(0, 1<<50)},
	{Name: "aof-load-truncated", Default: "yes", Mutable: true, Usage: "at start, truncate a torn last record of the log (yes) or refuse to start (no)", Check: yesNo},
	{Name: "aof-load-corrupt", Default: "refuse", Mutable: true, Usage: "at start, on corruption inside the log: refuse to start, or truncate there (the rest is kept aside)", Check: oneOf("refuse", "truncate")},
	{Name: "prefetch-batch", Default: "auto", Mutable: true, Usage: "parse a pipeline batch ahead and load what its keys will read into the CPU cache before running it, so that the lookups' cache misses overlap (auto: once the keyspace holds 4096 keys or more, too many to stay in cache; yes: always; no: never)", Check: oneOf("auto", "yes", "no")},
	{Name: "event-loop", Default: "yes", Usage: "serve clients from one epoll loop per core, as Redis does (Linux; one read per ready socket per turn, one journal sync per turn); no: a goroutine per client", Check: yesNo},
	{Name: "batch-replies", Default: "yes", Mutable: true, Usage: "with event-loop no: write the replies of all clients served in one scheduling round together (fewer wakeups of the clients; no: each client's replies as soon as its batch ran)", Check: yesNo},
	{Name: "databases", Default: "1", Usage: "number of databases (ratekv has only db 0)", Check: oneOf("1")},
	{Name: "zset-max-listpack-entries", Alias: "zset-max-ziplist-entries", Default: "128", Mutable: true, Usage: "sorted sets with at most this many members use the compact encoding", Check: intRange(0, math.MaxInt64)},
	{Name: "zset-max-listpack-value", Alias: "zset-max-ziplist-value", Default: "64", Mutable: true, Usage: "sorted sets whose members are all at most this long (bytes) use the compact encoding (a memory value, as in Redis)", Check: memRange(0, math.MaxInt64)},
	{Name: "busy-reply-threshold", Alias: "lua-time-limit", Default: "5000", Mutable: true, Usage: "milliseconds a script runs before other clients get BUSY instead of waiting for it, and SCRIPT KILL may stop it (0: never)", Check: intRange(0, math.MaxInt64)},
	{Name: "lua-native-scripts", Default: "yes", Mutable: true, Usage: "run scripts that have a native implementation (go-redis/redis_rate's GCRA scripts, recognised by SHA1) without the Lua interpreter, with the same replies and effects (no: always interpret)", Check: yesNo},
	{Name: "hash-max-listpack-entries", Alias: "hash-max-ziplist-entries", Default: "512", Mutable: true, Usage: "hashes with at most this many fields use the compact encoding", Check: intRange(0, math.MaxInt64)},
	{Name: "hash-max-listpack-value", Alias: "hash-max-ziplist-value", Default: "64", Mutable: true, Usage: "hashes whose fields and values are all at most this long (bytes) use the compact encoding (a memory value, as in Redis)", Check: memRange(0, math.MaxInt64)},
	{Name: "maxmemory", Default: "0", Mutable: true, Usage: "memory limit in bytes (units as proto-max-bulk-len; 0: none): past it keys are evicted by maxmemory-policy, or writes refused with -OOM", Check: memRange(0, 1<<62)},
	{Name: "maxmemory-policy", Default: "noeviction", Mutable: true, Usage: "what goes past maxmemory: noeviction (refuse writes), allkeys-lru, allkeys-lfu, allkeys-random, volatile-lru, volatile-lfu, volatile-random, volatile-ttl (volatile-*: keys with a TTL only)", Check: oneOf(maxmemoryPolicies...)},
	{Name: "maxmemory-samples", Default: "5", Mutable: true, Usage: "keys sampled per eviction by the LRU, LFU and TTL policies (more: closer to exact, slower)", Check: intRange(1, math.MaxInt32)},
	{Name: "lfu-log-factor", Default: "10", Mutable: true, Usage: "the LFU policies' counter grows logarithmically: higher, more accesses to saturate it", Check: intRange(0, math.MaxInt32)},
	{Name: "lfu-decay-time", Default: "1", Mutable: true, Usage: "minutes of idleness that take one off a key's LFU counter (0: never)", Check: intRange(0, math.MaxInt32)},
	{Name: "maxmemory-eviction-tenacity", Default: "10", Mutable: true, Usage: "time one command may spend evicting before a background job goes on (0-100: 10 is 500 us, as in Redis)", Check: intRange(0, 100)},
	{Name: "list-max-listpack-size", Alias: "list-max-ziplist-size", Default: "-2", Mutable: true, Usage: "the largest node of a list: negative -1 to -5 for 4, 8, 16, 32 or 64 KiB, positive for that many elements (a list of one node is compact)", Check: intRange(math.MinInt32, math.MaxInt32)},
	{Name: "cluster-enabled", Default: "no", Usage: "answer as a Redis Cluster of one node owning all 16384 slots (CLUSTER SLOTS etc.), refusing what Redis Cluster refuses (CROSSSLOT, SELECT other than 0)", Check: yesNo},
	{Name: "cluster-announce-ip", Default: "", Mutable: true, Usage: `the IP address cluster clients are told to connect to ("": the address each client connected to)`, Check: announceIP},
	{Name: "cluster-announce-port", Default: "0", Mutable: true, Usage: "the port cluster clients are told to connect to (0: the port each client connected to)", Check: intRange(0, 65535)},
	{Name: "cluster-announce-hostname", Default: "", Mutable: true, Usage: `the hostname CLUSTER SLOTS, SHARDS and NODES report besides the address ("": none)`, Check: announceHostname},
	{Name: "cluster-config-file", Default: "nodes.conf", Usage: "the cluster topology's Raft data, as the directory <name>.d inside dir", Check: fileName},
	{Name: "cluster-node-timeout", Default: "15000", Usage: "milliseconds: Raft's timeouts between the nodes are derived from it (heartbeat a tenth, at least 50 ms)", Check: intRange(100, 1<<31-1)},
	{Name: "cluster-port", Default: "0", Usage: "the cluster bus port, where the nodes keep the topology's Raft log among themselves (0: port + 10000, as Redis)", Check: intRange(0, 65535)},
	{Name: "cluster-announce-bus-port", Default: "0", Usage: "the bus port the other nodes are told (0: cluster-port)", Check: intRange(0, 65535)},
	{Name: "cluster-solo-owns-all-slots", Default: "yes", Usage: "a fresh node alone serves every slot until its first ADDSLOTS, DELSLOTS or MEET (cluster clients work with one node); no: it serves none, as a fresh Redis Cluster node (what redis-cli --cluster create expects)", Check: yesNo},
	{Name: "cluster-allow-reads-when-down", Default: "no", Mutable: true, Usage: "a node cut off from the majority of the primaries still serves reads of its slots (writes get CLUSTERDOWN)", Check: yesNo},
	{Name: "cluster-replica-validity-factor", Alias: "cluster-slave-validity-factor", Default: "10", Mutable: true, Usage: "a replica whose link to its primary has been down longer than cluster-node-timeout times this, plus repl-ping-replica-period, is not promoted in an automatic failover (0: always eligible)", Check: intRange(0, math.MaxInt32)},
	{Name: "cluster-require-full-coverage", Default: "yes", Mutable: true, Usage: "CLUSTER INFO says cluster_state:fail while a slot has no node (the slots a node serves are served regardless)", Check: yesNo},
	{Name: "protected-mode", Default: "yes", Mutable: true, Usage: "while the default user has no password (requirepass), refuse clients that connect from other than a loopback address, with Redis's -DENIED error", Check: yesNo},
	{Name: "tls-port", Default: "0", Usage: "TLS port on every bind address (0: no TLS; with it, port 0 means no plaintext port, as in Redis)", Check: intRange(0, 65535)},
	{Name: "tls-cert-file", Default: "", Mutable: true, Usage: "the server's certificate (PEM, with its chain); CONFIG SET reloads it, and the key, for new connections", Check: anyValue},
	{Name: "tls-key-file", Default: "", Mutable: true, Usage: "the private key of tls-cert-file (PEM; PKCS#1, PKCS#8 or SEC 1, encrypted or not)", Check: anyValue},
	{Name: "tls-key-file-pass", Default: "", Mutable: true, Usage: "the password of an encrypted tls-key-file", Check: anyValue},
	{Name: "tls-ca-cert-file", Default: "", Mutable: true, Usage: "CA certificates (PEM) that client certificates must chain to", Check: anyValue},
	{Name: "tls-ca-cert-dir", Default: "", Mutable: true, Usage: "a directory of CA certificates (PEM files), as tls-ca-cert-file", Check: anyValue},
	{Name: "tls-auth-clients", Default: "yes", Mutable: true, Usage: "clients must present a certificate signed by a tls-ca-cert-* CA (yes), may (optional: checked when given), or need not (no)", Check: oneOf("no", "yes", "optional")},
	{Name: "tls-protocols", Default: "", Mutable: true, Usage: `TLS versions to accept, of "TLSv1 TLSv1.1 TLSv1.2 TLSv1.3" ("": TLSv1.2 and TLSv1.3); Go accepts the range from the lowest to the highest given`, Check: anyValue},
	{Name: "tls-ciphers", Default: "", Mutable: true, Usage: `TLS 1.2 and older cipher suites, OpenSSL or IANA names separated by ':' (DEFAULT, HIGH and ALL: Go's secure set; !name or -name removes one; "": Go's secure set)`, Check: anyValue},
	{Name: "tls-ciphersuites", Default: "", Mutable: true, Usage: "TLS 1.3 suites, checked but not applied: Go always offers its three (TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384, TLS_CHACHA20_POLY1305_SHA256)", Check: anyValue},
	{Name: "tls-prefer-server-ciphers", Default: "no", Mutable: true, Usage: "accepted for Redis's sake: Go orders cipher suites itself, by the hardware of both sides", Check: yesNo},
	{Name: "tls-session-caching", Default: "yes", Mutable: true, Usage: "let clients resume TLS sessions (session tickets)", Check: yesNo},
	{Name: "tls-session-cache-size", Default: "20480", Mutable: true, Usage: "accepted for Redis's sake: Go's session tickets are kept by the clients, so the server has no session cache to size", Check: intRange(0, math.MaxInt32)},
	{Name: "tls-session-cache-timeout", Default: "300", Mutable: true, Usage: "seconds a TLS session can be resumed for", Check: intRange(0, math.MaxInt32)},
	{Name: "tls-replication", Default: "no", Mutable: true, Usage: "a replica connects to its primary (its tls-port) over TLS, presenting tls-cert-file and checking the primary's certificate against tls-ca-cert-file/dir (the system's CAs when unset), not its name, as Redis", Check: yesNo},
	{Name: "slowlog-log-slower-than", Default: "10000", Mutable: true, Usage: "SLOWLOG records commands that take at least this many microseconds (0: every command, -1: none)", Check: intRange(-1, math.MaxInt64)},
	{Name: "slowlog-max-len", Default: "128", Mutable: true, Usage: "entries the SLOWLOG keeps (the oldest go first)", Check: intRange(0, math.MaxInt64)},
	{Name: "latency-monitor-threshold", Default: "0", Mutable: true, Usage: "LATENCY records events (command, expire-cycle, aof-write, ...) of at least this many milliseconds (0: none)", Check: intRange(0, math.MaxInt64)},
	{Name: "latency-tracking", Default: "yes", Mutable: true, Usage: "keep a latency histogram per command (INFO latencystats, LATENCY HISTOGRAM)", Check: yesNo},
	{Name: "latency-tracking-info-percentiles", Default: "50 99 99.9", Mutable: true, Usage: "the percentiles INFO latencystats reports (space separated, 0 to 100)", Check: percentiles},
	{Name: "log-format", Default: "text", Mutable: true, Usage: "the log's format: text (key=value) or json (one object a line)", Check: oneOf("text", "json")},
	{Name: "ratelimit-metrics-groups", Default: "", Mutable: true, Usage: `glob patterns (space separated, at most 32) that group the keys of rate-limit decisions in INFO ratelimit and /metrics: a key counts in the first group it matches, else in "other"`, Check: metricsGroupsCheck},
	{Name: "metrics-port", Default: "0", Mutable: true, Usage: "serve Prometheus metrics over HTTP at /metrics on this port (0: off)", Check: intRange(0, 65535)},
	{Name: "metrics-bind", Default: "127.0.0.1", Mutable: true, Usage: "address the metrics endpoint listens on (one)", Check: oneAddress},
	{Name: "replicaof", Alias: "slaveof", Default: "", Usage: `"host port": start as a replica of that primary ("": a primary; REPLICAOF changes it at run time)`, Check: replicaOf},
	{Name: "replica-read-only", Alias: "slave-read-only", Default: "yes", Mutable: true, Usage: "a replica refuses writes from its clients (-READONLY)", Check: yesNo},
	{Name: "replica-serve-stale-data", Alias: "slave-serve-stale-data", Default: "yes", Mutable: true, Usage: "a replica whose link to its primary is down still answers reads (no: -MASTERDOWN)", Check: yesNo},
	{Name: "replica-priority", Alias: "slave-priority", Default: "100", Mutable: true, Usage: "Sentinel promotes replicas of lower priority first (0: never)", Check: intRange(0, math.MaxInt32)},
	{Name: "replica-announced", Default: "yes", Mutable: true, Usage: "Sentinel lists this replica (INFO replication's replica_announced)", Check: yesNo},
	{Name: "replica-announce-ip", Alias: "slave-announce-ip", Default: "", Mutable: true, Usage: "address a replica tells its primary to announce (\"\": the connection's)", Check: anyValue},
	{Name: "replica-announce-port", Alias: "slave-announce-port", Default: "0", Mutable: true, Usage: "port a replica tells its primary to announce (0: the one it listens on)", Check: intRange(0, 65535)},
	{Name: "masterauth", Default: "", Mutable: true, Usage: "password a replica authenticates with to its primary", Check: anyValue},
	{Name: "masteruser", Default: "", Mutable: true, Usage: "user name a replica authenticates with to its primary (\"\": AUTH with the password alone)", Check: anyValue},
	{Name: "repl-backlog-size", Default: "1mb", Mutable: true, Usage: "bytes of the replication stream kept for replicas that reconnect (a partial resynchronization)", Check: memRange(16*1024, 1<<40)},
	{Name: "repl-timeout", Default: "60", Mutable: true, Usage: "seconds of silence after which a replication link is dropped", Check: intRange(1, math.MaxInt32)},
	{Name: "repl-ping-replica-period", Alias: "repl-ping-slave-period", Default: "10", Mutable: true, Usage: "seconds between the primary's PINGs to its replicas", Check: intRange(1, math.MaxInt32)},
	{Name: "min-replicas-to-write", Alias: "min-slaves-to-write", Default: "0", Mutable: true, Usage: "refuse writes (-NOREPLICAS) unless this many replicas acknowledged within min-replicas-max-lag (0: never refuse)", Check: intRange(0, math.MaxInt32)},
	{Name: "min-replicas-max-lag", Alias: "min-slaves-max-lag", Default: "10", Mutable: true, Usage: "seconds since its last acknowledgement within which a replica counts for min-replicas-to-write", Check: intRange(0, math.MaxInt32)},
}

// Lookup returns the parameter named name (case-insensitive).
func Lookup(name string) (*Param, bool) {
	name = strings.ToLower(name)
	for i := range Params {
		if Params[i].Name == name || Params[i].Alias == name && name != "" {
			return &Params[i], true
		}
	}
	return nil, false
}

// Config is a set of parameter values, read through the typed keys. Create
// it with New. It is safe for concurrent use; readers on hot paths should
// cache typed values, refreshed by a change hook (see server.Server's and
// command.Engine's watchConfig).
type Config struct {
	// setMu serializes Set with the hooks it runs, so that hooks see the
	// changes in the order they were made.
	setMu    sync.Mutex
	mu       sync.RWMutex // guards vals, hooks and warnings
	vals     []value      // by index in Params
	hooks    [][]func(value string)
	appliers []applier
	warnings []Warning // of the last Parse
	file     string    // the config file the server started with (SetFile)

	users [][]string // the user directives read, each its words after "user"

	rewriteMu sync.Mutex // serializes Rewrite
}

// New returns a Config holding every default.
func New() *Config {
	c := &Config{vals: make([]value, len(Params)), hooks: make([][]func(string), len(Params))}
	for i, p := range Params {
		v, err := p.Check(p.Default)
		if err != nil {
			panic(fmt.Sprintf("config: bad default for %s: %v", p.Name, err))
		}
		c.vals[i] = parse(kinds[i], v)
	}
	return c
}

func (c *Config) get(i int) value {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.vals[i]
}

// String returns the value of a text parameter.
func (c *Config) String(k StringKey) string { return c.get(k.index()).text }

// Int returns the value of an integer or memory parameter.
func (c *Config) Int(k IntKey) int64 { return c.get(k.index()).num }

// Bool reports whether a yes/no parameter is yes.
func (c *Config) Bool(k BoolKey) bool { return c.get(k.index()).num != 0 }

// SaveRules returns the save rules, none when saving is disabled. The
// slice is shared: callers must not modify it.
func (c *Config) SaveRules() []SaveRule { return c.get(Save.index()).rules }

// Fsync returns the appendfsync policy.
func (c *Config) Fsync() FsyncPolicy { return FsyncPolicy(c.get(AppendFsync.index()).num) }

// Get returns the canonical value of p, an entry of Params (CONFIG GET), or
// "" for any other.
func (c *Config) Get(p *Param) string {
	i := index(p)
	if i < 0 {
		return ""
	}
	return c.get(i).text
}

// index returns the position of p in Params, -1 if p is not an entry of it.
func index(p *Param) int {
	for i := range Params {
		if &Params[i] == p {
			return i
		}
	}
	return -1
}

// OnChange registers fn to be called with the canonical value after every
// successful Set of k's parameter (under either of its names). Hooks run
// one Set at a time, in the order they were registered, outside the lock
// of the values; a hook must not call Set.
func (c *Config) OnChange(k Key, fn func(value string)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hooks[k.index()] = append(c.hooks[k.index()], fn)
}

// applier is an OnApply registration.
type applier struct {
	keys []Key
	fn   func() error
}

// OnApply registers fn to put the parameters of keys into effect together
// after a CONFIG SET changed any of them (Apply), as Redis's apply
// functions do: TLS reloads its certificates once for a CONFIG SET of both
// the certificate and its key. fn reads the values with the getters; when
// it fails it must leave everything as it was, and CONFIG SET then
// restores the old values and fails.
func (c *Config) OnApply(fn func() error, keys ...Key) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.appliers = append(c.appliers, applier{keys, fn})
}

// Apply runs, once each, the OnApply functions of the parameters named
// (canonical names, as CONFIG SET gave them), in the order of names. It
// stops at the first that fails and returns the name it ran for.
func (c *Config) Apply(names []string) (string, error) {
	c.mu.RLock()
	appliers := c.appliers
	c.mu.RUnlock()
	done := make([]bool, len(appliers))
	for _, name := range names {
		for i, a := range appliers {
			if done[i] || !slices.ContainsFunc(a.keys, func(k Key) bool { return k.Name() == name }) {
				continue
			}
			done[i] = true
			if err := a.fn(); err != nil {
				return name, err
			}
		}
	}
	return "", nil
}

// ErrUnknown is returned for a parameter name not in Params.
var ErrUnknown = errors.New("unknown option")

// ErrImmutable is returned by SetRuntime for a parameter that can only be
// given at start.
var ErrImmutable = errors.New("can't set immutable config")

// Set validates and stores a value, at start-up (any parameter).
func (c *Config) Set(name, value string) error {
	p, ok := Lookup(name)
	if !ok {
		return ErrUnknown
	}
	i := index(p)
	c.setMu.Lock()
	defer c.setMu.Unlock()
	var v string
	var err error
	if p.Update != nil {
		v, err = p.Update(c.get(i).text, value)
	} else {
		v, err = p.Check(value)
	}
	if err != nil {
		return err
	}
	val := parse(kinds[i], v)
	c.mu.Lock()
	c.vals[i] = val
	hooks := c.hooks[i]
	c.mu.Unlock()
	for _, fn := range hooks {
		fn(v)
	}
	return nil
}

// SetRuntime is Set for CONFIG SET: immutable parameters are refused.
func (c *Config) SetRuntime(name, value string) error {
	p, ok := Lookup(name)
	if !ok {
		return ErrUnknown
	}
	if !p.Mutable {
		return ErrImmutable
	}
	return c.Set(name, value)
}

// Names returns every parameter name and alias, sorted.
func Names() []string {
	out := make([]string, 0, len(Params))
	for _, p := range Params {
		out = append(out, p.Name)
		if p.Alias != "" {
			out = append(out, p.Alias)
		}
	}
	sort.Strings(out)
	return out
}

// Usage returns the --help text.
func Usage() string {
	var b strings.Builder
	b.WriteString("Usage: ratekv [--option value ...] [/path/to/ratekv.conf] [--option value ...]\n")
	b.WriteString("       ratekv [/path/to/ratekv.conf] --ping [--host H] [--port P]\n")
	b.WriteString("       ratekv --version | --help\n\n")
	b.WriteString("Options use redis.conf names and apply in order: options after the file\n")
	b.WriteString("override it, options before it are defaults it may change. A file may\n")
	b.WriteString("include others (include path, relative to the including file). A Redis 7\n")
	b.WriteString("redis.conf works: the directives ratekv does not implement are ignored,\n")
	b.WriteString("with a warning where it matters, or refused when ignoring them is unsafe.\n\n")
	for _, p := range Params {
		def := p.Default
		if def == "" {
			def = `""`
		}
		fmt.Fprintf(&b, "  --%-27s %s (default %s)\n", p.Name, p.Usage, def)
	}
	return b.String()
}

// fileName accepts a plain file name (no directory part).
func fileName(v string) (string, error) {
	if v == "" || v == "." || v == ".." || strings.ContainsAny(v, `/\`) {
		return "", errors.New("must be a file name without a directory")
	}
	return v, nil
}
