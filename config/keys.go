package config

import "fmt"

// Typed keys name the parameters of Params in code, so that a misspelt
// parameter or a getter of the wrong type fails to compile. A key finds its
// entry by name at init (a name not in Params panics), so the table stays
// the one place for names, defaults and checks; the key's type decides how
// the canonical value is held (see value).

// Key is the typed key of one parameter, accepted by OnChange.
type Key interface {
	// Name returns the parameter's canonical name.
	Name() string
	index() int
}

// key is the index of a parameter in Params, plus one: the zero value of a
// key type names no parameter.
type key struct{ n int }

func (k key) index() int   { return k.n - 1 }
func (k key) Name() string { return Params[k.n-1].Name }

// StringKey is the key of a parameter read as text (Config.String).
type StringKey struct{ key }

// IntKey is the key of an integer or memory parameter (Config.Int).
type IntKey struct{ key }

// BoolKey is the key of a yes/no parameter (Config.Bool).
type BoolKey struct{ key }

// SaveKey is the type of Save, read with Config.SaveRules.
type SaveKey struct{ key }

// FsyncKey is the type of AppendFsync, read with Config.Fsync.
type FsyncKey struct{ key }

// kind is how a parameter's canonical value is held.
type kind uint8

const (
	kindNone kind = iota // no key declared
	kindString
	kindInt
	kindBool
	kindSave
	kindFsync
	kindOutputLimits
)

// kinds holds each parameter's kind, by index in Params; newKey sets it.
var kinds = make([]kind, len(Params))

// newKey returns the key of the parameter name, recording its kind. It
// panics at init on a name that is not in Params or is declared twice.
func newKey(name string, k kind) key {
	for i := range Params {
		if Params[i].Name == name {
			if kinds[i] != kindNone {
				panic(fmt.Sprintf("config: two keys for %s", name))
			}
			kinds[i] = k
			return key{i + 1}
		}
	}
	panic(fmt.Sprintf("config: key for %s, which is not in Params", name))
}

// The keys of Params, in its order.
var (
	Bind                       = StringKey{newKey("bind", kindString)}
	Port                       = IntKey{newKey("port", kindInt)}
	Dir                        = StringKey{newKey("dir", kindString)}
	RequirePass                = StringKey{newKey("requirepass", kindString)}
	MaxClients                 = IntKey{newKey("maxclients", kindInt)}
	Timeout                    = IntKey{newKey("timeout", kindInt)}
	ProtoMaxBulkLen            = IntKey{newKey("proto-max-bulk-len", kindInt)}
	ClientQueryBufferLimit     = IntKey{newKey("client-query-buffer-limit", kindInt)}
	Shards                     = IntKey{newKey("shards", kindInt)}
	LogLevel                   = StringKey{newKey("loglevel", kindString)}
	LogFile                    = StringKey{newKey("logfile", kindString)}
	PidFile                    = StringKey{newKey("pidfile", kindString)}
	Supervised                 = StringKey{newKey("supervised", kindString)}
	Save                       = SaveKey{newKey("save", kindSave)}
	ClientOutputBufferLimit    = OutputLimitsKey{newKey("client-output-buffer-limit", kindOutputLimits)}
	StopWritesOnBgsaveError    = BoolKey{newKey("stop-writes-on-bgsave-error", kindBool)}
	AppendOnly                 = BoolKey{newKey("appendonly", kindBool)}
	AppendFsync                = FsyncKey{newKey("appendfsync", kindFsync)}
	AppendFilename             = StringKey{newKey("appendfilename", kindString)}
	AppendDirname              = StringKey{newKey("appenddirname", kindString)}
	DBFilename                 = StringKey{newKey("dbfilename", kindString)}
	AutoAOFRewritePercentage   = IntKey{newKey("auto-aof-rewrite-percentage", kindInt)}
	AutoAOFRewriteMinSize      = IntKey{newKey("auto-aof-rewrite-min-size", kindInt)}
	AOFLoadTruncated           = BoolKey{newKey("aof-load-truncated", kindBool)}
	AOFLoadCorrupt             = StringKey{newKey("aof-load-corrupt", kindString)}
	PrefetchBatch              = StringKey{newKey("prefetch-batch", kindString)}
	EventLoop                  = BoolKey{newKey("event-loop", kindBool)}
	BatchReplies               = BoolKey{newKey("batch-replies", kindBool)}
	Databases                  = IntKey{newKey("databases", kindInt)}
	ZSetMaxListpackEntries     = IntKey{newKey("zset-max-listpack-entries", kindInt)}
	ZSetMaxListpackValue       = IntKey{newKey("zset-max-listpack-value", kindInt)}
	BusyReplyThreshold         = IntKey{newKey("busy-reply-threshold", kindInt)}
	LuaNativeScripts           = BoolKey{newKey("lua-native-scripts", kindBool)}
	HashMaxListpackEntries     = IntKey{newKey("hash-max-listpack-entries", kindInt)}
	HashMaxListpackValue       = IntKey{newKey("hash-max-listpack-value", kindInt)}
	MaxMemory                  = IntKey{newKey("maxmemory", kindInt)}
	MaxMemoryPolicy            = StringKey{newKey("maxmemory-policy", kindString)}
	MaxMemorySamples           = IntKey{newKey("maxmemory-samples", kindInt)}
	LFULogFactor               = IntKey{newKey("lfu-log-factor", kindInt)}
	LFUDecayTime               = IntKey{newKey("lfu-decay-time", kindInt)}
	MaxMemoryEvictionTenacity  = IntKey{newKey("maxmemory-eviction-tenacity", kindInt)}
	ListMaxListpackSize        = IntKey{newKey("list-max-listpack-size", kindInt)}
	ClusterEnabled             = BoolKey{newKey("cluster-enabled", kindBool)}
	ClusterAnnounceIP          = StringKey{newKey("cluster-announce-ip", kindString)}
	ClusterAnnouncePort        = IntKey{newKey("cluster-announce-port", kindInt)}
	ClusterAnnounceHostname    = StringKey{newKey("cluster-announce-hostname", kindString)}
	ClusterConfigFile          = StringKey{newKey("cluster-config-file", kindString)}
	ClusterNodeTimeout         = IntKey{newKey("cluster-node-timeout", kindInt)}
	ClusterPort                = IntKey{newKey("cluster-port", kindInt)}
	ClusterAnnounceBusPort     = IntKey{newKey("cluster-announce-bus-port", kindInt)}
	ClusterAllowReadsWhenDown  = BoolKey{newKey("cluster-allow-reads-when-down", kindBool)}
	ClusterValidityFactor      = IntKey{newKey("cluster-replica-validity-factor", kindInt)}
	ClusterRequireFullCoverage = BoolKey{newKey("cluster-require-full-coverage", kindBool)}
	ClusterSoloOwnsAllSlots    = BoolKey{newKey("cluster-solo-owns-all-slots", kindBool)}
	ProtectedMode              = BoolKey{newKey("protected-mode", kindBool)}
	TLSPort                    = IntKey{newKey("tls-port", kindInt)}
	TLSCertFile                = StringKey{newKey("tls-cert-file", kindString)}
	TLSKeyFile                 = StringKey{newKey("tls-key-file", kindString)}
	TLSKeyFilePass             = StringKey{newKey("tls-key-file-pass", kindString)}
	TLSCACertFile              = StringKey{newKey("tls-ca-cert-file", kindString)}
	TLSCACertDir               = StringKey{newKey("tls-ca-cert-dir", kindString)}
	TLSAuthClients             = StringKey{newKey("tls-auth-clients", kindString)}
	TLSProtocols               = StringKey{newKey("tls-protocols", kindString)}
	TLSCiphers                 = StringKey{newKey("tls-ciphers", kindString)}
	TLSCipherSuites            = StringKey{newKey("tls-ciphersuites", kindString)}
	TLSPreferServerCiphers     = BoolKey{newKey("tls-prefer-server-ciphers", kindBool)}
	TLSSessionCaching          = BoolKey{newKey("tls-session-caching", kindBool)}
	TLSSessionCacheSize        = IntKey{newKey("tls-session-cache-size", kindInt)}
	TLSSessionCacheTimeout     = IntKey{newKey("tls-session-cache-timeout", kindInt)}
	TLSReplication             = BoolKey{newKey("tls-replication", kindBool)}
	SlowlogLogSlowerThan       = IntKey{newKey("slowlog-log-slower-than", kindInt)}
	SlowlogMaxLen              = IntKey{newKey("slowlog-max-len", kindInt)}
	LatencyMonitorThreshold    = IntKey{newKey("latency-monitor-threshold", kindInt)}
	LatencyTracking            = BoolKey{newKey("latency-tracking", kindBool)}
	LatencyTrackingPercentiles = StringKey{newKey("latency-tracking-info-percentiles", kindString)}
	LogFormat                  = StringKey{newKey("log-format", kindString)}
	RateLimitMetricsGroups     = StringKey{newKey("ratelimit-metrics-groups", kindString)}
	MetricsPort                = IntKey{newKey("metrics-port", kindInt)}
	MetricsBind                = StringKey{newKey("metrics-bind", kindString)}
	ACLFile                    = StringKey{newKey("aclfile", kindString)}
	ACLLogMaxLen               = IntKey{newKey("acllog-max-len", kindInt)}
	ACLPubsubDefault           = StringKey{newKey("acl-pubsub-default", kindString)}
	ReplicaOf                  = StringKey{newKey("replicaof", kindString)}
	ReplicaReadOnly            = BoolKey{newKey("replica-read-only", kindBool)}
	ReplicaServeStaleData      = BoolKey{newKey("replica-serve-stale-data", kindBool)}
	ReplicaPriority            = IntKey{newKey("replica-priority", kindInt)}
	ReplicaAnnounced           = BoolKey{newKey("replica-announced", kindBool)}
	ReplicaAnnounceIP          = StringKey{newKey("replica-announce-ip", kindString)}
	ReplicaAnnouncePort        = IntKey{newKey("replica-announce-port", kindInt)}
	MasterAuth                 = StringKey{newKey("masterauth", kindString)}
	MasterUser                 = StringKey{newKey("masteruser", kindString)}
	ReplBacklogSize            = IntKey{newKey("repl-backlog-size", kindInt)}
	ReplTimeout                = IntKey{newKey("repl-timeout", kindInt)}
	ReplPingPeriod             = IntKey{newKey("repl-ping-replica-period", kindInt)}
	MinReplicasToWrite         = IntKey{newKey("min-replicas-to-write", kindInt)}
	MinReplicasMaxLag          = IntKey{newKey("min-replicas-max-lag", kindInt)}
)

// SaveRule is one save rule: snapshot once Seconds have passed since the
// last save and at least Changes writes were made.
type SaveRule struct {
	Seconds, Changes int64
}

// FsyncPolicy is an appendfsync setting. The zero value is FsyncEverysec.
type FsyncPolicy int32

// The appendfsync policies, in the order of fsyncNames.
const (
	FsyncEverysec FsyncPolicy = iota
	FsyncAlways
	FsyncNo
)

// fsyncNames are the appendfsync values by FsyncPolicy, in Redis's order
// (its error lists them so).
var fsyncNames = [...]string{"everysec", "always", "no"}

// String returns p as appendfsync spells it.
func (p FsyncPolicy) String() string {
	if p < 0 || int(p) >= len(fsyncNames) {
		return fsyncNames[FsyncEverysec]
	}
	return fsyncNames[p]
}

// value is a parameter's canonical text and its typed form.
type value struct {
	text   string
	num    int64          // kindInt; 1 for yes (kindBool); the FsyncPolicy (kindFsync)
	rules  []SaveRule     // kindSave
	limits [3]OutputLimit // kindOutputLimits
}

// parse returns the value of canonical text v of a parameter of kind k. v
// passed the parameter's Check, so it parses.
func parse(k kind, v string) value {
	out := value{text: v}
	switch k {
	case kindInt:
		out.num, _ = parseInt(v)
	case kindBool:
		if v == "yes" {
			out.num = 1
		}
	case kindSave:
		out.rules, _ = parseSave(v)
	case kindOutputLimits:
		out.limits, _ = parseOutputLimits(v, out.limits)
	case kindFsync:
		for i, n := range fsyncNames {
			if v == n {
				out.num = int64(i)
			}
		}
	}
	return out
}
