package command

import (
	"bytes"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratekv/ratekv/shards"
)

// Client is the command layer's state of one client connection: what the
// dispatcher, the handlers and the journal keep between commands. The
// network runtime (package server) owns the connection, feeds requests to
// Run and writes Out. Its fields are owned by the goroutine serving the
// connection, except those other clients read for CLIENT LIST (guarded by
// mu or atomic).
type Client struct {
	eng *Engine
	// Peer is the connection, for CLIENT KILL and CLIENT LIST; set by the
	// runtime before the first request.
	Peer      Peer
	ID        int64
	Addr      string
	LocalAddr string
	Created   time.Time

	// Out holds the replies not yet written; the runtime writes and
	// empties it.
	Out []byte

	proto int // 2 or 3
	// Authed says the client passed AUTH (or no password is set); the
	// runtime applies the tighter protocol limits of Redis until it has.
	Authed bool
	// user is the ACL user the client runs as (the default one until
	// AUTH); nil (the log's replay) allows everything. Atomic: ACL
	// DELUSER looks for the clients of a user.
	user atomic.Pointer[aclUser]

	// Per-command state set by the dispatcher.
	now       int64 // clock reading for this command (Unix ns)
	nowMs     int64
	cmdFailed bool
	held      []int // shard indexes locked for this command, ascending
	heldAll   bool
	inExec    bool // running EXEC's queued commands: shards already locked
	keyBuf    []int
	evictBuf  []byte // the keys evicted before a command, and their records (evict.go)

	names nameCache // the command names this connection sent last (see Lookup)

	timing      *Command // command whose duration is being measured
	timingStart int64
	// The arguments of timing, for SLOWLOG (keepSlowArgs), and their count.
	slowArgs [][]byte
	slowArgc int
	latPend  latencyPending // statCmd's durations not yet in its histogram

	// Command statistics are gathered per connection and added to the
	// shared atomics once per run of the same command (in practice once
	// per pipeline batch): an atomic add on a counter every connection
	// shares costs more than a GET when several cores contend for it.
	statCmd   *Command
	statCalls int64
	statNs    int64
	batchCmds int64

	tx       txState
	watching []watchedKey
	// watchSet indexes watching by key once it holds more than
	// watchScanMax keys (nil before), so that WATCH finds a key it
	// already watches without comparing it with every other.
	watchSet map[string]struct{}

	// Handoff, when set by PSYNC, takes the connection over once the
	// batch's replies are written: the runtime stops serving it and calls
	// Handoff with the connection and the bytes it read and did not run
	// (see repl_primary.go).
	Handoff func(conn io.ReadWriteCloser, unread []byte)
	// What REPLCONF told of a replica before its PSYNC, and whether it is
	// one (repl.go).
	replica    bool
	replPort   int
	replIP     string
	replRatekv bool
	applyCmds  []*Command // the commands of the records applyStream applies
	wait       *waitReq   // the WAIT the client waits for (repl_wait.go)

	// Cluster routing (cluster_route.go): ASKING's one-shot flag, READONLY,
	// and internal for the engine's own client that deletes what MIGRATE
	// moved (never routed nor fenced).
	asking, readonly, internal bool
	// routed is the slot of the running command's one key plus one, when
	// routing computed it (0: not), for lock.
	routed uint32
	// async is the reply of a command that waits off the event loop
	// (MIGRATE, SETSLOT NODE) or behind a MIGRATE's fence (migrate.go).
	async *asyncReply

	// CloseAfter says the connection closes once the current batch's
	// replies are written (QUIT, CLIENT KILL of itself, a handler's panic).
	CloseAfter bool

	// Shutdown is this client's SHUTDOWN, waiting for main's outcome: the
	// runtime runs nothing more of the client's until it is decided (see
	// ShutdownOutcome).
	Shutdown *ShutdownRequest

	// Journaled is how far the current batch journaled; the runtime
	// settles it before the batch's replies leave (see SyncJournal).
	Journaled Mark
	// The journal the running write command loaded (nil: it logs nothing;
	// see call), and reusable buffers for building records.
	jcur   *JournalRef
	recBuf []byte
	// effectBuf and effectArgs hold a native script's write command
	// (script_native.go), reused so that the native path does not allocate.
	effectBuf  []byte
	effectArgs [][]byte
	valBuf     []byte
	replaying  bool // replaying the log at start-up: journal nothing
	grouping   bool // collecting a multi-key command's records into one append (journalEffects)
	// req is the request being run as it arrived, when it arrived as a
	// RESP array; nil otherwise. See rawRecord.
	req []byte

	// written is the entry a single-key write command left its key as,
	// when the handler says so (noteWritten); the journal's image of the
	// key then needs no second lookup. Reset before every command.
	written *shards.Entry
	// freshBefore is the journal's shards.Store.Fresh count of the held
	// shards before a command logged as sent ran (see journalEffects).
	freshBefore uint64
	// absentBefore holds the indexes of the keys of a multi-key command
	// logged as sent (LMOVE) that did not exist, or had expired, before
	// it ran (see journalEffects).
	absentBefore []int

	mu      sync.Mutex // guards name, libName, libVer, and proto's writes (its owner reads it without)
	name    string
	libName string
	libVer  string

	// sub is the client's Pub/Sub state, nil until it first subscribes
	// (pubsub.go).
	sub atomic.Pointer[subscriber]

	lastCmd atomic.Pointer[Command]
	lastSub *Command // the subcommand of the last container command run (CLIENT LIST's cmd)
	// txInfo publishes the transaction state for CLIENT LIST at the end of
	// every batch (packTxInfo).
	txInfo atomic.Uint64
	// kind is the client's type for CLIENT LIST and KILL (SetKind).
	kind     atomic.Int32
	noEvict  atomic.Bool
	monitor  atomic.Pointer[monitorSink] // set while it is a MONITOR (monitor.go)
	inScript bool                        // running a script's redis.call (MONITOR shows "lua")
	// LastSeen is the Unix ms of the last command (CLIENT LIST's idle, the
	// runtime's idle timeout).
	LastSeen atomic.Int64
}

// Peer is the connection a Client talks through, as the command layer
// needs it.
type Peer interface {
	// Kill closes the connection of another client (CLIENT KILL).
	Kill()
	// Wake has the runtime run what the client has buffered (a SHUTDOWN
	// refused) and write the messages published to it (TakePushes). Any
	// goroutine may call it.
	Wake()
	// Buffers returns the bytes read and not yet run, and the size of the
	// read buffer (CLIENT LIST's qbuf and rbs).
	Buffers() (query, read int64)
	// Fd returns the socket's file descriptor (CLIENT LIST's fd; -1 when
	// there is none).
	Fd() int
}

// InitClient makes c, a zero Client, the state of a new connection from
// addr to laddr through peer: speaking RESP2, authenticated when no
// password is set. (A Client is set up in place so that the runtime can
// embed it in its connection, without a pointer to follow per command.)
func (e *Engine) InitClient(c *Client, peer Peer, id int64, addr, laddr string) {
	c.eng, c.Peer, c.ID, c.Addr, c.LocalAddr = e, peer, id, addr, laddr
	c.Created, c.proto = time.Now(), 2
	c.user.Store(e.acl.def)
	c.Authed = !e.defaultNeedsAuth()
	c.LastSeen.Store(c.Created.UnixMilli())
}

// shrinkAt: buffers grown past this for a large request are released when
// the request is done.
const shrinkAt = 256 * 1024

// maxReplyBytes bounds the reply of one MGET, and of one EXEC: a few bytes
// of request can ask for one value many times over (MGET naming a 512 MB
// key a million times, a transaction of GETs of it), and such a reply is
// built in memory before its first byte leaves, which the flushes between
// a pipeline's commands (flushAt) cannot bound. Redis streams it into the
// client's output buffer, which client-output-buffer-limit (by default
// none for normal clients) may cut off. A variable so that a test can
// lower it.
var maxReplyBytes = 512 << 20

// Run checks and runs (or queues) one request: cmd is args[0]'s command
// (Lookup; nil when unknown), raw the request as it arrived when it
// arrived as a RESP array, nil otherwise (see rawRecord). args alias the
// runtime's read buffer for the duration of the call.
func (c *Client) Run(cmd *Command, args [][]byte, raw []byte) {
	c.req = raw
	c.dispatchCmd(cmd, args)
	c.req = nil
	if c.asking && cmd != askingCmd && !c.tx.active {
		c.asking = false // ASKING is good for one command, or one transaction
	}
}

// EndBatch ends a batch of requests, before its replies are written: it
// settles the last command's timing, publishes the batch's statistics and
// lets go of record buffers a big value grew (ten idle clients that had
// each dumped a 50 MB key would otherwise hold 500 MB).
func (c *Client) EndBatch() {
	if c.timing != nil {
		c.settle(c.eng.store.Now())
	}
	if s := c.monitor.Load(); s != nil {
		c.drainMonitor(s)
	}
	c.flushStats()
	if cap(c.recBuf) > shrinkAt {
		c.recBuf = nil
	}
	if cap(c.valBuf) > shrinkAt {
		c.valBuf = nil
	}
}

// dispatchCmd runs a request whose command has been looked up
// (nil: unknown).
func (c *Client) dispatchCmd(cmd *Command, args [][]byte) {
	c.routed = 0
	if cmd == nil {
		c.flagTx()
		c.WriteError(unknownCommand(args))
		return
	}
	if !cmd.arityOK(len(args)) {
		c.flagTx()
		cmd.rejected.Add(1)
		if cmd.Name != "exec" {
			c.WriteError(fmt.Sprintf(errWrongArgs, cmd.Name))
			return
		}
		// EXEC refused discards the transaction, as Redis's
		// execCommandAbort does, instead of leaving it open.
		c.tx.reset()
		c.unwatchAll()
		c.WriteError(errExecAbortBecause + strings.TrimPrefix(fmt.Sprintf(errWrongArgs, cmd.Name), "ERR "))
		return
	}
	if cmd.subs != nil && len(args) > 1 {
		// A container's subcommand is checked as the command is (and
		// before AUTH), so that MULTI refuses it instead of queuing it.
		sub, msg := cmd.subcommand(args)
		c.lastSub = sub
		if msg != "" {
			c.flagTx()
			if sub != nil { // commandstats counts a subcommand's calls on its container
				cmd.rejected.Add(1)
			}
			c.WriteError(msg)
			return
		}
	}
	if !c.Authed && cmd.Flags&FlagNoAuth == 0 && c.eng.defaultNeedsAuth() {
		c.flagTx()
		cmd.rejected.Add(1)
		if cmd.Name == "exec" {
			// As Redis's rejectCommand: EXEC refused is execCommandAbort.
			c.WriteError(errExecAbortBecause + errNoAuth)
			return
		}
		c.WriteError(errNoAuth)
		return
	}
	// ACL: one flag test for a user allowed everything (acl.go).
	if u := c.user.Load(); u != nil && !u.open.Load() && !u.quickOK(cmd, args) && c.aclRefused(u, cmd, args) {
		return
	}
	// Cluster mode: keys in more than one slot are refused, keys of a
	// slot this node does not serve redirected (before memory, as in
	// Redis's processCommand; cluster_route.go). Only commands with keys
	// are looked at; without a multi-node table, only those that can
	// name several.
	if cmd.Flags&Flag(c.eng.rt.routes.Load()) != 0 && c.routeRefused(c.eng.slots.Load(), cmd, args) {
		return
	}
	// Over maxmemory: evict, or refuse, before the command runs or is
	// queued (before the disk's refusal, in Redis's order).
	if c.eng.mem.maxmemory.Load() != 0 && !c.replaying && c.oomRefused(cmd) {
		return
	}
	// A replica refuses writes, a primary without enough replicas too
	// (repl.go): one atomic load while neither is the case.
	if g := c.eng.repl.gate.Load(); g != 0 && !c.replaying {
		if msg := c.gateRefusal(cmd, args, g); msg != "" {
			c.flagTx()
			cmd.rejected.Add(1)
			c.WriteError(msg)
			return
		}
	}
	// A RESP2 client in Pub/Sub mode may send only a few commands; a
	// write is refused for the disk first, as in Redis.
	if s := c.sub.Load(); s != nil && cmd.Flags&FlagSubscribedOK == 0 && c.proto == 2 && s.total() > 0 && !c.replaying {
		c.flagTx()
		cmd.rejected.Add(1)
		msg := ""
		if cmd.Flags&FlagWrite != 0 {
			msg = c.diskError()
		}
		if msg == "" {
			msg = subscribedRefusal(cmd, args)
		}
		c.WriteError(msg)
		return
	}
	if c.tx.active && cmd.Flags&FlagTxControl == 0 {
		if cmd.Flags&FlagNoMulti != 0 {
			c.flagTx()
			cmd.rejected.Add(1)
			c.WriteError(errNotInMulti)
			return
		}
		// Refused while the disk fails before it is queued, as in
		// Redis (processCommand checks the disk before queueing):
		// EXEC then discards the transaction for previous errors.
		// EXEC checks again, for a disk that failed after queueing.
		if cmd.Flags&(FlagWrite|FlagDiskSignal) != 0 && !c.replaying {
			if msg := c.diskError(); msg != "" {
				c.flagTx()
				cmd.rejected.Add(1)
				c.WriteError(msg)
				return
			}
		}
		if c.busyRefused(cmd, args) { // refused, as in Redis, rather than queued
			c.flagTx()
			cmd.rejected.Add(1)
			c.WriteError(errBusyScript)
			return
		}
		c.queue(cmd, args)
		return
	}
	c.call(cmd, args)
}

// Lookup is lookupCommand behind the connection's small cache of the
// names it sent last, byte for byte as the client spelled them: a client
// repeats a few commands (one for a pipeline of CL.THROTTLE, six for the
// MULTI sliding-log recipe), and comparing a name is cheaper than
// lower-casing and hashing it for the table.
func (c *Client) Lookup(name []byte) *Command {
	if cmd := c.names.get(name); cmd != nil {
		return cmd
	}
	cmd := lookupCommand(name)
	if cmd != nil {
		c.names.put(name, cmd)
	}
	return cmd
}

// nameCache maps up to eight command names, as sent, to their commands.
// Lookups scan from the slot of the last hit, so a repeated command hits
// at once and a repeated sequence (filled in its order) on the next slot.
type nameCache struct {
	names [8][24]byte
	lens  [8]uint8
	cmds  [8]*Command
	last  uint8 // slot of the last hit
	next  uint8 // slot the next miss fills
}

func (nc *nameCache) get(name []byte) *Command {
	i := nc.last
	for range len(nc.cmds) {
		if int(nc.lens[i]) == len(name) && nc.cmds[i] != nil && string(nc.names[i][:len(name)]) == string(name) {
			nc.last = i
			return nc.cmds[i]
		}
		i = (i + 1) % uint8(len(nc.cmds))
	}
	return nil
}

func (nc *nameCache) put(name []byte, cmd *Command) {
	if len(name) > len(nc.names[0]) {
		return
	}
	i := nc.next
	nc.next = (i + 1) % uint8(len(nc.cmds))
	nc.lens[i] = uint8(copy(nc.names[i][:], name))
	nc.cmds[i] = cmd
	nc.last = i
}

// call runs cmd with its shards locked, and accounts for it.
//
// The clock is read once per command (on a VM time.Now can cost more than
// a GET): that reading is the command's time and
// also ends the timing of the previous command of the batch (settle); the
// batch's last command is settled by one more reading when the batch ends.
func (c *Client) call(cmd *Command, args [][]byte) {
	if !c.inExec {
		c.now = c.eng.store.Now()
		if c.replaying {
			c.now = 0 // see Replay: no key is expired while the log loads
		}
		c.nowMs = c.now / 1e6
		c.settle(c.now)
		c.timing, c.timingStart = cmd, c.now
		c.slowArgs = c.slowArgs[:0]
		if c.eng.obs.slowerThan.Load() >= 0 {
			c.keepSlowArgs(args)
		}
	}
	if cmd != c.statCmd {
		c.flushCmdStats()
		c.statCmd, c.statNs = cmd, 0
	}
	c.cmdFailed = false
	if cmd.Flags&(FlagWrite|FlagDiskSignal) != 0 && !c.replaying && !c.inExec { // EXEC checks once for all its commands
		if msg := c.diskError(); msg != "" {
			c.WriteError(msg)
			cmd.rejected.Add(1)
			return
		}
	}
	if c.eng.monitors.n.Load() != 0 && !c.replaying && cmd.Name != "exec" {
		c.monitorCall(cmd, args) // as Redis: once it passed the checks, before it runs
	}
	if c.eng.scripts.nrun.Load() != 0 && !c.inExec {
		if !c.lockBehindScripts(cmd, args) {
			return
		}
	} else {
		c.lock(cmd, args)
	}
	// A key MIGRATE has in flight: wait for it, then run again (migrate.go).
	if c.eng.rt.fence.Load() != nil && !c.inExec && c.fencedOff(cmd, args) {
		return
	}
	// The journal is loaded with the shards locked, and kept to the end
	// of the command: see journal.go on switching appendonly.
	c.jcur = nil
	if cmd.Flags&FlagWrite != 0 && !c.replaying {
		c.jcur = c.eng.jr.Load()
	}
	journal := c.jcur != nil
	var before uint64
	if journal {
		before = c.changeCount()
		c.written = nil
		if cmd.Persist == PersistVerbatim {
			c.freshBefore = c.freshCount()
			if cmd.FirstKey > 0 && cmd.LastKey != cmd.FirstKey {
				c.noteAbsent(cmd, args)
			}
		}
	}
	func() {
		defer c.recoverPanic(cmd)
		cmd.Handler(c, args)
	}()
	if journal && c.changeCount() != before {
		c.journalEffects(cmd, args)
	}
	c.jcur = nil // as Journaled once settled: a detached log is not kept alive
	c.unlock()
	if c.eng.monitors.n.Load() != 0 && !c.replaying && cmd.Name == "exec" {
		c.monitorCall(cmd, args) // after the commands it ran, as Redis
	}
	if cmd != c.statCmd {
		// EXEC ran other commands, each counted already: this call is
		// EXEC's, not the last of them.
		c.flushCmdStats()
		c.statCmd, c.statNs = cmd, 0
	}
	c.statCalls++
	// total_commands_processed, as Redis's call(): once the command ran
	// (INFO does not count itself), never for one refused before it ran
	// (unknown, wrong arity, NOAUTH, MISCONF) or only queued in MULTI.
	c.batchCmds++
	if c.cmdFailed && !c.replaying {
		// Counted once, on the command whose own reply failed: EXEC only
		// for its own error, not a queued command's.
		cmd.failed.Add(1)
		c.cmdFailed = false
	}
}

// diskError returns the MISCONF error that refuses writes while the disk
// fails, or "": first a failed background save's (with save rules set and
// stop-writes-on-bgsave-error yes), then the append-only file's, in
// Redis's order (writeCommandsDeniedByDiskError).
func (c *Client) diskError() string {
	if p := c.eng.persist; p != nil && p.BgsaveErr() != nil {
		return errBgsaveDisk
	}
	if j := c.eng.jr.Load(); j != nil {
		if err := j.j.Err(); err != nil {
			return sprintf(errReadOnlyDisk, err.Error())
		}
	}
	return ""
}

// noteWritten tells the journal that e is now the live entry of the
// command's only key (see Client.written).
func (c *Client) noteWritten(e *shards.Entry) {
	if c.jcur != nil {
		c.written = e
	}
}

// settle charges the time since the pending command started to it: INFO
// commandstats, its latency histogram, SLOWLOG and the latency monitor.
func (c *Client) settle(now int64) {
	if c.timing != nil {
		d := max(now-c.timingStart, 0)
		if c.timing == c.statCmd {
			c.statNs += d
			if c.eng.obs.tracking.Load() && !c.replaying {
				c.latPend.add(d, c.timing)
			}
		}
		if len(c.slowArgs) != 0 {
			if t := c.eng.obs.slowerThan.Load(); t >= 0 && d/1000 >= t {
				c.noteSlow(d / 1000)
			}
		}
		if c.eng.obs.threshold.Load() != 0 {
			c.noteCommandLatency(c.timing, d)
		}
		c.timing = nil
	}
}

// flushCmdStats adds the pending calls and time of statCmd to its shared
// counters.
//
// The log's replay at start-up publishes nothing: as in Redis, which runs
// the records it loads outside call(), INFO commandstats starts empty.
func (c *Client) flushCmdStats() {
	if c.replaying {
		c.statCalls, c.statNs = 0, 0
		c.latPend.reset()
		return
	}
	if c.latPend.n != 0 && c.statCmd != nil {
		c.latPend.flush(c.statCmd.histogram())
	}
	if cmd := c.statCmd; cmd != nil && (c.statCalls != 0 || c.statNs != 0) {
		cmd.calls.Add(c.statCalls)
		cmd.usec.Add(c.statNs / 1000)
		c.statCalls, c.statNs = 0, c.statNs%1000
	}
}

// flushStats publishes the connection's pending statistics: at the end of
// every batch, and before INFO reads them.
func (c *Client) flushStats() {
	c.flushCmdStats()
	if c.batchCmds != 0 {
		c.eng.totalCommands.Add(c.batchCmds)
		c.batchCmds = 0
	}
	if c.statCmd != nil {
		last := c.statCmd
		if c.lastSub != nil && last.subs != nil {
			last = c.lastSub
		}
		c.lastCmd.Store(last)
		c.LastSeen.Store(c.nowMs)
		c.txInfo.Store(c.packTxInfo())
	}
}

// recoverPanic is the last line of defence: a panic inside a handler is
// logged with its stack, answered with an error, and the connection closed.
// The server keeps serving everyone else.
func (c *Client) recoverPanic(cmd *Command) {
	if r := recover(); r != nil {
		c.eng.log.Error("panic in command handler", "cmd", cmd.Name, "id", c.ID, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		c.WriteError(fmt.Sprintf(errPanic, cmd.Name))
		c.CloseAfter = true
	}
}

// lock locks the shards cmd touches, in ascending order. Inside EXEC the
// shards are already held.
func (c *Client) lock(cmd *Command, args [][]byte) {
	if c.inExec {
		return
	}
	st := c.eng.store
	if cmd.Flags&FlagAllShards != 0 {
		st.LockAll()
		c.heldAll = true
		return
	}
	idx := cmd.keyIndexes(args, c.keyBuf[:0])
	c.keyBuf = idx
	held := c.held[:0]
	if c.routed != 0 && len(idx) == 1 {
		held = append(held, st.SlotShard(uint16(c.routed-1)))
	} else {
		for _, i := range idx {
			held = shards.AddLockOrder(held, st.ShardIndex(args[i]))
		}
	}
	for _, s := range held {
		st.Lock(s)
	}
	c.held = held
}

// keyShard returns the shard of key, one of the keys of the running
// command, for the store's "In" methods (see shards.Store.Shard): the
// shard lock found it, so when the command (or the transaction) holds a
// single shard, every key it names lives there and the key need not be
// hashed again.
func (c *Client) keyShard(key []byte) *shards.Shard {
	st := c.eng.store
	if len(c.held) == 1 && !c.heldAll {
		return st.Shard(c.held[0])
	}
	return st.Shard(st.ShardIndex(key))
}

func (c *Client) unlock() {
	if c.inExec {
		return
	}
	st := c.eng.store
	if c.heldAll {
		st.UnlockAll()
		c.heldAll = false
		return
	}
	for i := len(c.held) - 1; i >= 0; i-- {
		st.Unlock(c.held[i])
	}
	c.held = c.held[:0]
}

// unknownCommand formats Redis's unknown-command error, quoting up to the
// first few arguments as Redis does (each as '%.128s', joined by spaces,
// with a trailing space).
func unknownCommand(args [][]byte) string {
	var b strings.Builder
	for _, a := range args[1:] {
		if b.Len() >= 128 {
			break
		}
		a = cstr(a)
		if room := 128 - b.Len(); len(a) > room {
			a = a[:room]
		}
		b.WriteByte('\'')
		b.Write(sanitizeErr(a))
		b.WriteString("' ")
	}
	name := cstr(args[0])
	if len(name) > 128 {
		name = name[:128]
	}
	return fmt.Sprintf(errUnknownCommand, sanitizeErr(name), b.String())
}

// errArg is an argument as Redis prints it into an error with %s: a C
// string, which ends at its first NUL byte, with CR and LF made spaces
// (sanitizeErr). Errors that redis-cell formats (Rust strings) keep the
// whole argument and use sanitizeErr alone.
func errArg(b []byte) []byte { return sanitizeErr(cstr(b)) }

// sanitizeErr replaces CR and LF, which would break an error line.
func sanitizeErr(b []byte) []byte {
	if bytes.IndexByte(b, '\r') < 0 && bytes.IndexByte(b, '\n') < 0 {
		return b
	}
	b = bytes.ReplaceAll(b, []byte("\r"), []byte(" "))
	return bytes.ReplaceAll(b, []byte("\n"), []byte(" "))
}

// sprintf is fmt.Sprintf, short for error formatting.
func sprintf(format string, a ...any) string { return fmt.Sprintf(format, a...) }

// Name returns the client's name (CLIENT SETNAME).
func (c *Client) Name() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.name
}

// ResetOut empties the reply buffer once it has been written, dropping it
// when a big reply grew it.
func (c *Client) ResetOut() {
	if cap(c.Out) > shrinkAt {
		c.Out = nil
	} else {
		c.Out = c.Out[:0]
	}
}

// InMulti reports whether the client has a transaction open (MULTI).
func (c *Client) InMulti() bool { return c.tx.active }

// Close releases what the client holds in the command layer (its
// WATCHes and subscriptions); the runtime calls it once the connection
// is closed.
func (c *Client) Close() {
	c.unwatchAll()
	c.leavePubSub()
	c.stopMonitor()
	if w := c.wait; w != nil {
		c.eng.repl.dropWait(w)
		c.wait = nil
	}
}

// Proto is the protocol the client speaks, 2 or 3 (HELLO).
func (c *Client) Proto() int { return c.proto }
