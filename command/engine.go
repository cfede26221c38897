package command

import (
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/internal/nodeid"
	"github.com/ratekv/ratekv/persist"
	"github.com/ratekv/ratekv/shards"
)

// Engine runs commands against a keyspace: the state the command table
// shares between clients (the store, the configuration, the journal,
// persistence and statistics). The network runtime that feeds it requests
// is its Host. Create it with NewEngine; it is safe for concurrent use.
type Engine struct {
	store *shards.Store
	cfg   *config.Config
	log   *slog.Logger
	start time.Time
	host  Host

	// cluster is cluster-enabled, fixed at start; node is the cluster
	// node's identity (cluster.go).
	cluster bool
	node    atomic.Pointer[nodeid.Identity]
	slots   atomic.Pointer[SlotTable] // the multi-node topology (cluster_view.go)
	rt      routeState                // slot migrations, MIGRATE's fences and connections (cluster_route.go, migrate.go)
	// clusterCtl changes that topology; nil in a one-node cluster.
	clusterCtl ClusterControl

	jr      atomic.Pointer[JournalRef] // nil: no append-only log; see SetJournal
	aofJ    Journal                    // the append-only file SetJournal attached (guarded by repl.mu)
	repl    *replication               // replication (repl.go)
	persist *persist.Manager           // nil: no persistence (SAVE etc. refuse); see persist.go

	// Hot-path copies of mutable config, kept current by watchConfig.
	maxBulk    atomic.Int64
	queryLimit atomic.Int64

	totalCommands atomic.Int64
	errMu         sync.Mutex
	errStats      map[string]int64
	totalErrors   atomic.Int64
	stats         serverStats   // INFO's ids, memory peak and rate sampler (server.go)
	scripts       scripting     // the script cache, interpreters and the running script (script.go)
	mem           memState      // maxmemory and eviction (evict.go)
	pubsub        pubsubHub     // channels and patterns and their subscribers (pubsub.go)
	obs           observability // SLOWLOG, LATENCY (slowlog.go, latency.go)
	startupMem    int64         // used memory when the engine was made (MEMORY STATS)
	monitors      monitors      // MONITOR (monitor.go)
	pause         clientPause   // CLIENT PAUSE (clients.go)
	decisions     decisions     // rate-limit decision counters (decisions.go)
	acl           aclState      // users and the ACL log (acl.go, acl_cmd.go)
}

// Host is what the command layer needs of the network runtime that runs
// it (package server): its clients, its connection statistics, and the
// way to main for SHUTDOWN.
type Host interface {
	// Clients returns the connected clients ordered by id.
	Clients() []*Client
	// NewClientID returns a client id from the sequence the runtime's
	// clients take theirs from (a replica's link to its primary).
	NewClientID() int64
	// RequestShutdown hands a SHUTDOWN to main; false when too many wait.
	RequestShutdown(r *ShutdownRequest) bool
	// ConnStats returns the runtime's counters for INFO.
	ConnStats() ConnStats
	// ResetStats zeroes the counters CONFIG RESETSTAT resets.
	ResetStats()
	// Port is the port clients connect to.
	Port() string
	// Closing reports whether the runtime is shutting down.
	Closing() bool
}

// ConnStats are the network runtime's counters INFO reports.
type ConnStats struct {
	Received, Rejected int64 // connections accepted, refused (maxclients)
	NetIn, NetOut      int64 // bytes read and written
	Reads, Writes      int64 // socket reads and writes
}

// Version is ratekv's version, reported by --version and INFO.
const Version = "0.1.0"

// RedisVersion is the Redis version whose behaviour ratekv follows; INFO
// reports it as redis_version so that clients gating features on it work.
const RedisVersion = "7.2.0"

// NewEngine returns an engine for store configured by cfg; SetHost must
// follow before any client runs a command.
func NewEngine(store *shards.Store, cfg *config.Config, log *slog.Logger) *Engine {
	e := &Engine{
		store:    store,
		cfg:      cfg,
		log:      log,
		start:    time.Now(),
		errStats: make(map[string]int64),
	}
	e.repl = newReplication(e)
	e.watchConfig()
	e.watchACL()
	e.watchScripting()
	e.initCluster()
	e.watchObservability()
	e.startupMem = readMemory().mapped
	store.OnExpireCycle(func(d time.Duration) { e.LatencyEvent("expire-cycle", d) })
	e.watchDecisions()
	return e
}

// SetHost attaches the network runtime.
func (e *Engine) SetHost(h Host) { e.host = h }

// Store returns the keyspace the engine runs on.
func (e *Engine) Store() *shards.Store { return e.store }

// MaxBulk is proto-max-bulk-len.
func (e *Engine) MaxBulk() int64 { return e.maxBulk.Load() }

// QueryLimit is client-query-buffer-limit.
func (e *Engine) QueryLimit() int64 { return e.queryLimit.Load() }

// TotalCommands is total_commands_processed.
func (e *Engine) TotalCommands() int64 { return e.totalCommands.Load() }

// watchConfig loads the engine's hot-path copies of mutable parameters
// and registers the change hooks that keep each one current.
func (e *Engine) watchConfig() {
	cfg := e.cfg
	// Process-wide: the sorted-set, hash and list code read them on every
	// insertion.
	zset := func() {
		shards.SetZSetLimits(cfg.Int(config.ZSetMaxListpackEntries), cfg.Int(config.ZSetMaxListpackValue))
	}
	hash := func() {
		shards.SetHashLimits(cfg.Int(config.HashMaxListpackEntries), cfg.Int(config.HashMaxListpackValue))
	}
	for _, w := range []struct {
		key   config.Key
		apply func()
	}{
		{config.ProtoMaxBulkLen, func() { e.maxBulk.Store(cfg.Int(config.ProtoMaxBulkLen)) }},
		{config.ClientQueryBufferLimit, func() { e.queryLimit.Store(cfg.Int(config.ClientQueryBufferLimit)) }},
		{config.ZSetMaxListpackEntries, zset},
		{config.ZSetMaxListpackValue, zset},
		{config.HashMaxListpackEntries, hash},
		{config.HashMaxListpackValue, hash},
		{config.ListMaxListpackSize, func() { shards.SetListFill(cfg.Int(config.ListMaxListpackSize)) }},
		{config.ClientOutputBufferLimit, func() {
			l := outputLimitOf(cfg.OutputLimit(config.OutputPubSub))
			e.pubsub.limit.Store(&l)
		}},
	} {
		w.apply()
		cfg.OnChange(w.key, func(string) { w.apply() })
	}
	e.watchMemory()
}

// countError records an error reply under its first word (errorstats).
func (e *Engine) countError(msg string) {
	prefix := msg
	if i := strings.IndexByte(msg, ' '); i > 0 {
		prefix = msg[:i]
	}
	e.totalErrors.Add(1)
	e.errMu.Lock()
	if len(e.errStats) < 128 || e.errStats[prefix] > 0 {
		e.errStats[prefix]++
	}
	e.errMu.Unlock()
}
