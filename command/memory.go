package command

import (
	"runtime"
	"strings"

	"github.com/ratekv/ratekv/internal/redisnum"
	"github.com/ratekv/ratekv/shards"
)

// MEMORY USAGE, STATS and DOCTOR, and OBJECT ENCODING and REFCOUNT, as
// Redis's object.c, with ratekv's own accounting: a key's bytes are those
// the store counts for it (shards.Store.MemoryUsage), the rest of the
// process's memory is overhead.

// The MEMORY subcommands are registered with MEMORY (server.go), whose
// init runs after this file's.
func init() {
	registerSubcommands("object",
		&Command{Name: "object|encoding", Arity: 3, Flags: FlagReadOnly, FirstKey: 2, LastKey: 2, Step: 1, Handler: cmdObjectEncoding,
			Summary: "Returns the internal encoding of a Redis object.", Group: "generic"},
		&Command{Name: "object|refcount", Arity: 3, Flags: FlagReadOnly, FirstKey: 2, LastKey: 2, Step: 1, Handler: cmdObjectRefcount,
			Summary: "Returns the reference count of a value of a key.", Group: "generic"},
	)
}

// MEMORY USAGE key [SAMPLES count]: the bytes the store counts for the
// key. ratekv measures a value whole, so SAMPLES is checked and ignored.
func cmdMemoryUsage(c *Client, args [][]byte) {
	for j := 3; j < len(args); j++ {
		if !strings.EqualFold(string(args[j]), "samples") || j+1 >= len(args) {
			c.WriteError(errSyntax)
			return
		}
		n, ok := redisnum.ParseInt(args[j+1])
		if !ok {
			c.WriteError(errNotInt)
			return
		}
		if n < 0 {
			c.WriteError(errSyntax)
			return
		}
		j++
	}
	e := c.eng.store.Peek(args[2], c.nowMs)
	if e == nil {
		c.WriteNull()
		return
	}
	c.WriteInt(c.eng.store.MemoryUsage(e))
}

// OBJECT ENCODING key (see shards.Store.Encoding for the names).
func cmdObjectEncoding(c *Client, args [][]byte) {
	if e, _ := objectLookup(c, args); e != nil {
		c.WriteBulkString(c.eng.store.Encoding(e))
	}
}

// sharedIntegers is Redis's OBJ_SHARED_INTEGERS, and sharedRefcount the
// refcount it reports for them (OBJ_SHARED_REFCOUNT).
const (
	sharedIntegers = 10000
	sharedRefcount = 1<<31 - 1
)

// OBJECT REFCOUNT key: 1, or for an integer below 10000 the refcount of
// Redis's shared integers, which it uses unless an LRU or LFU policy is
// in force with a memory limit (ratekv keeps such integers in the key's
// entry, shared with nothing; the reply is Redis's, for tools).
func cmdObjectRefcount(c *Client, args [][]byte) {
	e, mode := objectLookup(c, args)
	if e == nil {
		return
	}
	if n, ok := e.Int(); ok && n >= 0 && n < sharedIntegers &&
		(c.eng.mem.maxmemory.Load() == 0 || mode == shards.AccessNone) {
		c.WriteInt(sharedRefcount)
		return
	}
	c.WriteInt(1)
}

// memOverhead is what MEMORY STATS and DOCTOR report, in bytes.
type memOverhead struct {
	peak, total, startup, clients, aof, lua, dbMain int64
	overhead, keys, perKey, dataset                 int64
	datasetPerc, peakPerc                           float64
	allocated, active, resident, rss                int64
	nclients                                        int
	scripts                                         int64
}

// usedNow is INFO's used_memory, and MEMORY STATS's total.allocated.
func (e *Engine) usedNow() int64 {
	used, _ := e.usedMemory()
	if e.mem.maxmemory.Load() == 0 {
		used = readMemory().mapped
	}
	return used
}

func (e *Engine) memOverhead() memOverhead {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	var m memOverhead
	m.total = e.usedNow()
	m.peak = int64(e.stats.notePeak(uint64(m.total)))
	m.startup = e.startupMem
	clients := e.host.Clients()
	m.nclients = len(clients)
	for _, o := range clients {
		_, rbs := o.Peer.Buffers()
		tx := o.txInfo.Load()
		m.clients += rbs + int64(tx>>32)
		if s := o.monitor.Load(); s != nil {
			n, _ := s.pending()
			m.clients += n
		}
	}
	if jr := e.jr.Load(); jr != nil && jr.memory != nil {
		m.aof = jr.memory.Memory()
	}
	_, m.scripts, m.lua = e.scriptMemory()
	m.dataset = e.store.Live()
	m.overhead = max(m.total-m.dataset, 0)
	m.dbMain = max(m.overhead-m.startup-m.clients-m.aof-m.lua, 0)
	m.keys = int64(e.store.Len())
	net := m.total - m.startup
	if m.keys > 0 {
		m.perKey = net / m.keys
	}
	if net > 0 {
		m.datasetPerc = float64(m.dataset) * 100 / float64(net)
	}
	m.peakPerc = float64(m.total) * 100 / float64(max(m.peak, 1))
	m.allocated, m.active = int64(ms.HeapAlloc), int64(ms.HeapInuse)
	m.resident = int64(ms.Sys - ms.HeapReleased)
	m.rss = int64(rssBytes(&ms))
	return m
}

// ratio is a / b, 0 when b is 0.
func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// MEMORY STATS
func cmdMemoryStats(c *Client, args [][]byte) {
	m := c.eng.memOverhead()
	type kv struct {
		k string
		v any
	}
	fields := []kv{
		{"peak.allocated", m.peak}, {"total.allocated", m.total}, {"startup.allocated", m.startup},
		{"replication.backlog", int64(0)}, {"clients.slaves", int64(0)}, {"clients.normal", m.clients},
		{"cluster.links", int64(0)}, {"aof.buffer", m.aof}, {"lua.caches", m.lua}, {"functions.caches", int64(0)},
		{"db.0", nil},
		{"overhead.total", m.overhead}, {"keys.count", m.keys}, {"keys.bytes-per-key", m.perKey},
		{"dataset.bytes", m.dataset}, {"dataset.percentage", m.datasetPerc}, {"peak.percentage", m.peakPerc},
		{"allocator.allocated", m.allocated}, {"allocator.active", m.active}, {"allocator.resident", m.resident},
		{"allocator-fragmentation.ratio", ratio(m.active, m.allocated)}, {"allocator-fragmentation.bytes", m.active - m.allocated},
		{"allocator-rss.ratio", ratio(m.resident, m.active)}, {"allocator-rss.bytes", m.resident - m.active},
		{"rss-overhead.ratio", ratio(m.rss, m.resident)}, {"rss-overhead.bytes", m.rss - m.resident},
		{"fragmentation", ratio(m.rss, m.total)}, {"fragmentation.bytes", m.rss - m.total},
	}
	if m.keys == 0 {
		fields = append(fields[:10], fields[11:]...) // as Redis: no db.0 while it is empty
	}
	c.WriteMap(len(fields))
	for _, f := range fields {
		c.WriteBulkString(f.k)
		switch v := f.v.(type) {
		case int64:
			c.WriteInt(v)
		case float64:
			c.WriteDouble(v)
		default:
			c.WriteMap(3)
			c.WriteBulkString("overhead.hashtable.main")
			c.WriteInt(m.dbMain)
			c.WriteBulkString("overhead.hashtable.expires")
			c.WriteInt(0)
			c.WriteBulkString("overhead.hashtable.slot-to-keys")
			c.WriteInt(0)
		}
	}
}

// MEMORY DOCTOR
func cmdMemoryDoctor(c *Client, args [][]byte) {
	c.WriteVerbatim(memoryReport(c.eng.memOverhead()))
}

// memoryReport is Redis's getMemoryDoctorReport on ratekv's figures.
func memoryReport(m memOverhead) string {
	if m.total < 5<<20 {
		return "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.\n"
	}
	var b strings.Builder
	if ratio(m.peak, m.total) > 1.5 {
		b.WriteString(" * Peak memory: In the past this instance used more than 150% the memory that is currently using. The allocator is normally not able to release memory after a peak, so you can expect to see a big fragmentation ratio, however this is actually harmless and is only due to the memory peak, and if the Redis instance Resident Set Size (RSS) is currently bigger than expected, the memory will be used as soon as you fill the Redis instance with more data. If the memory peak was only occasional and you want to try to reclaim memory, please try the MEMORY PURGE command, otherwise the only other option is to shutdown and restart the instance.\n\n")
	}
	if ratio(m.rss, m.total) > 1.4 && m.rss-m.total > 10<<20 {
		b.WriteString(" * High total RSS: This instance has a memory fragmentation and RSS overhead greater than 1.4 (this means that the Resident Set Size of the Redis process is much larger than the sum of the logical allocations Redis performed). This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. If the problem is a large peak memory, then there is no issue. Note: The currently used allocator is \"go\".\n\n")
	}
	if ratio(m.active, m.allocated) > 1.1 && m.active-m.allocated > 10<<20 {
		b.WriteString(" * High allocator fragmentation: This instance has an allocator external fragmentation greater than 1.1. This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot.\n\n")
	}
	if ratio(m.resident, m.active) > 1.1 && m.resident-m.active > 10<<20 {
		b.WriteString(" * High allocator RSS overhead: This instance has an RSS memory overhead is greater than 1.1 (this means that the Resident Set Size of the allocator is much larger than the sum what the allocator actually holds). This problem is usually due to a large peak memory (check if there is a peak memory entry above in the report), you can try the MEMORY PURGE command to reclaim it.\n\n")
	}
	if ratio(m.rss, m.resident) > 1.1 && m.rss-m.resident > 10<<20 {
		b.WriteString(" * High process RSS overhead: This instance has non-allocator RSS memory overhead is greater than 1.1 (this means that the Resident Set Size of the Redis process is much larger than the RSS the allocator holds). This problem may be due to Lua scripts or Modules.\n\n")
	}
	if m.nclients > 0 && m.clients/int64(m.nclients) > 200<<10 {
		b.WriteString(" * Big client buffers: The clients output buffers in this instance are greater than 200K per client (on average). This may result from different causes, like Pub/Sub clients subscribed to channels bot not receiving data fast enough, so that data piles on the Redis instance output buffer, or clients sending commands with large replies or very large sequences of commands in the same pipeline. Please use the CLIENT LIST command in order to investigate the issue if it causes problems in your instance, or to understand better why certain clients are using a big amount of memory.\n\n")
	}
	if m.scripts > 1000 {
		b.WriteString(" * Many scripts: There seem to be many cached scripts in this instance (more than 1000). This may be because scripts are generated and `EVAL`ed, instead of being parameterized (with KEYS and ARGV), `SCRIPT LOAD`ed and `EVALSHA`ed. Unless `SCRIPT FLUSH` is called periodically, the scripts' caches may end up consuming most of your memory.\n\n")
	}
	if b.Len() == 0 {
		return "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n"
	}
	return "Sam, I detected a few issues in this Redis instance memory implants:\n\n" + b.String() + "I'm here to keep you safe, Sam. I want to help you.\n"
}
