package command

// Replication, ratekv to ratekv, in Redis's shape (replication.c).
//
// A replica connects to its primary and sends PING, AUTH (masterauth),
// REPLCONF listening-port/ip-address/capa and PSYNC replid offset. The
// primary answers +CONTINUE and sends the stream from the backlog when it
// holds the replica's offset under a replication id it knows (its own, or
// the one before its promotion up to second_repl_offset: PSYNC2), else
// +FULLRESYNC replid offset and a snapshot in ratekv's own format as a
// $<len> bulk, taken while it serves (persist.WriteTransfer), then the
// stream from that offset. The stream is the journal's effect records
// (repl_backlog.go); a replica applies them as the log's replay does, on
// a clock standing at zero, so it never re-runs a time-dependent command:
// a CL.THROTTLE's state on a replica is its primary's. A replica
// acknowledges its offset every second (REPLCONF ACK), which WAIT and
// min-replicas-to-write count.
//
// Expiry is the primary's: its active expiry sends a DEL for every key it
// deletes; a replica reads a key past its deadline as missing but never
// deletes it itself.
//
// Only a ratekv replica can follow a ratekv primary: one that does not say
// REPLCONF capa ratekv (a Redis replica, which wants RDB) gets one clear
// error to PSYNC and SYNC.

import (
	"cmp"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/journal"
	"github.com/ratekv/ratekv/persist"
)

func init() {
	const stale = FlagAdmin | FlagNoScript | FlagStale | FlagLoading
	register(
		&Command{Name: "replicaof", Arity: 3, Flags: stale, Handler: cmdReplicaof,
			Summary: "Configures a server as replica of another, or promotes it to a master.", Group: "server"},
		&Command{Name: "slaveof", Arity: 3, Flags: stale, Handler: cmdReplicaof,
			Summary: "Sets a Redis server as a replica of another, or promotes it to being a master.", Group: "server"},
		&Command{Name: "role", Arity: 1, Flags: FlagFast | FlagNoScript | FlagStale | FlagLoading, Handler: cmdRole,
			Summary: "Returns the replication role.", Group: "server"},
		&Command{Name: "replconf", Arity: -1, Flags: stale | FlagAllowBusy, Handler: cmdReplconf,
			Summary: "An internal command for configuring the replication stream.", Group: "server"},
		&Command{Name: "psync", Arity: -3, Flags: stale | FlagNoMulti, Handler: cmdPsync,
			Summary: "An internal command used in replication.", Group: "server"},
		&Command{Name: "sync", Arity: 1, Flags: stale | FlagNoMulti, Handler: cmdPsync,
			Summary: "An internal command used in replication.", Group: "server"},
		&Command{Name: "wait", Arity: 3, Flags: FlagNoScript, Handler: cmdWait,
			Summary: "Blocks until the asynchronous replication of all preceding write commands sent by the connection is completed.", Group: "generic"},
	)
}

// Gate bits: what makes the dispatcher refuse commands (Engine.gate).
const (
	gateReadOnly   = 1 << iota // a replica with replica-read-only yes
	gateStale                  // a replica whose link is down, replica-serve-stale-data no
	gateNoReplicas             // fewer good replicas than min-replicas-to-write
	gateLoading                // a replica loading its primary's snapshot
)

// replication is an engine's replication state. Its fields are guarded by
// mu unless they say otherwise.
type replication struct {
	eng *Engine
	log *slog.Logger

	mu        sync.Mutex
	replID    string
	replID2   string
	secondOff int64    // second_repl_offset: -1 none
	bl        *backlog // nil until the first replica or until this server is one
	links     map[*replLink]struct{}
	applyRef  atomic.Pointer[JournalRef] // the journal the replica's stream is applied to (read per record without mu)

	// Replica side.
	masterHost, masterPort string // "": a primary
	link                   *upstream

	gate        atomic.Uint32 // gate bits; read on every command
	replica     atomic.Bool   // this server is a replica (masterHost set)
	loading     bool          // a full resynchronization is loading its snapshot
	idleSince   time.Time     // since when a primary\'s stream has had no replica (the cron\'s)
	goodLinks   atomic.Int64  // replicas acknowledged within min-replicas-max-lag
	dial        func(addr string, timeout time.Duration) (io.ReadWriteCloser, error)
	stop        chan struct{}
	baseOff     int64                    // master_repl_offset while there is no stream
	foreign     map[string]time.Time     // non-ratekv replicas refused, by host: when last logged
	wakes       []*waker                 // the streaming links (backlog.wake)
	waits       []*waitReq               // WAITs not yet answered
	partials    atomic.Int64             // partial resynchronizations accepted (sync_partial_ok)
	fulls       atomic.Int64             // full resynchronizations (sync_full)
	partialErrs atomic.Int64             // PSYNCs with an id that had to resynchronize fully (sync_partial_err)
	logged      atomic.Pointer[replMark] // the last REPLSTATE replayed, nil once another record followed it
}

// replMark is a REPLSTATE record's replication id and offset.
type replMark struct {
	id  string
	off int64
}

func newReplication(e *Engine) *replication {
	r := &replication{eng: e, log: e.log, replID: randomHex40(), replID2: zeroID, secondOff: -1,
		links: map[*replLink]struct{}{}, stop: make(chan struct{})}
	return r
}

const zeroID = "0000000000000000000000000000000000000000"

// SetDialer sets how a replica connects to its primary, and MIGRATE to
// its target (the runtime's TCP dialer).
func (e *Engine) SetDialer(dial func(addr string, timeout time.Duration) (io.ReadWriteCloser, error)) {
	e.repl.mu.Lock()
	e.repl.dial = dial
	e.repl.mu.Unlock()
}

// StartReplication starts what the configuration asks for (replicaof) and
// the replication cron. Call it once the data is loaded.
func (e *Engine) StartReplication() {
	r := e.repl
	// Snapshots of full resynchronizations a crash interrupted.
	for _, pattern := range []string{"temp-sync-*.rkv", "temp-replica-sync-*.rkv*"} {
		old, _ := filepath.Glob(filepath.Join(e.cfg.String(config.Dir), pattern))
		for _, f := range old {
			os.Remove(f)
		}
	}
	if host, port, ok := strings.Cut(e.cfg.String(config.ReplicaOf), " "); ok {
		r.mu.Lock()
		r.setMasterLocked(host, port)
		r.mu.Unlock()
	}
	for _, k := range []config.Key{config.ReplicaReadOnly, config.ReplicaServeStaleData, config.MinReplicasToWrite, config.MinReplicasMaxLag} {
		e.cfg.OnChange(k, func(string) { r.updateGate() })
	}
	for _, k := range []config.Key{config.MasterAuth, config.MasterUser} {
		e.cfg.OnChange(k, func(string) { // retry at once with the new credentials
			r.mu.Lock()
			if u := r.link; u != nil {
				select {
				case u.kick <- struct{}{}:
				default:
				}
			}
			r.mu.Unlock()
		})
	}
	e.cfg.OnChange(config.ReplBacklogSize, func(string) {
		r.mu.Lock()
		if r.bl != nil {
			r.bl.setSize(e.cfg.Int(config.ReplBacklogSize))
		}
		r.mu.Unlock()
	})
	go r.cron()
}

// StopReplication ends the link to the primary and the replicas' links.
func (e *Engine) StopReplication() {
	r := e.repl
	r.mu.Lock()
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	if r.link != nil {
		r.link.cancel()
		r.link = nil
	}
	for l := range r.links {
		l.close()
	}
	r.mu.Unlock()
}

// PauseReplication stops applying the primary's stream (before the data
// is persisted at shutdown): it returns once nothing applies it any more.
func (e *Engine) PauseReplication() {
	r := e.repl
	r.mu.Lock()
	u := r.link
	r.link = nil
	r.mu.Unlock()
	if u != nil {
		u.cancel()
		<-u.done
	}
}

// ResumeReplication reconnects to the primary after PauseReplication
// (the shutdown failed).
func (e *Engine) ResumeReplication() {
	r := e.repl
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.masterHost != "" && r.link == nil {
		r.link = newUpstream(r, r.masterHost, r.masterPort)
		go r.link.run()
	}
}

// ReplState returns the replication id and offset the keyspace is at;
// ok is false when this server keeps no replication stream (it has had no
// replica for repl-backlog-ttl, and is no replica).
func (e *Engine) ReplState() (id string, off int64, ok bool) {
	r := e.repl
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.replID, r.offsetLocked(), r.bl != nil
}

// LoggedReplState returns the replication id and offset of a REPLSTATE
// record the log ended with: the data loaded is a replica's at that point
// of its primary's stream, so that it continues from there after a crash
// (SIGKILL) as after a clean shutdown (RestoreReplState).
func (e *Engine) LoggedReplState() (id string, off int64, ok bool) {
	if m := e.repl.logged.Load(); m != nil {
		return m.id, m.off, true
	}
	return "", 0, false
}

// RestoreReplState makes the keyspace just loaded be at replication id id
// and offset off (what ReplState said at the last clean shutdown), so that
// replicas, or this server as a replica, continue with a partial
// resynchronization. Call it before StartReplication.
func (e *Engine) RestoreReplState(id string, off int64) {
	r := e.repl
	r.mu.Lock()
	defer r.mu.Unlock()
	r.replID, r.replID2, r.secondOff = id, zeroID, -1
	r.bl = newBacklog(off, e.cfg.Int(config.ReplBacklogSize))
	r.attachJournalsLocked()
}

// attachJournalsLocked makes the journals current: clients' writes go to
// the append-only file and, on a primary with a stream, to the stream; a
// replica's stream goes to both. Requires r.mu held.
func (r *replication) attachJournalsLocked() {
	e := r.eng
	aof := e.aofJ
	var client, apply Journal
	if aof != nil {
		client, apply = aof, aof
	}
	if w, ok := aof.(writtenNotifier); ok {
		if r.bl != nil {
			w.OnWritten(r.bl.logged)
		} else {
			w.OnWritten(nil)
		}
	}
	if r.bl != nil {
		r.bl.gate(aof)
		tee := &teeJournal{aof: aof, b: r.bl}
		apply = tee
		if r.masterHost == "" {
			client = tee
		}
	}
	e.jr.Store(newJournalRef(client, aof))
	r.applyRef.Store(newJournalRef(apply, aof))
	if r.bl != nil && r.masterHost == "" {
		e.store.SetExpireHook(r.expired)
	} else {
		e.store.SetExpireHook(nil)
	}
	e.store.KeepExpired(r.masterHost != "")
	r.replica.Store(r.masterHost != "")
}

// expired sends the DEL of a key deleted for its deadline (the shard
// held, as a write's record), by the active expiry or a lookup.
func (r *replication) expired(key []byte) {
	if j := r.eng.jr.Load(); j != nil {
		if t, ok := j.j.(*teeJournal); ok {
			var buf [256]byte
			t.b.appendStream(journal.AppendCommand(buf[:0], bDEL, key), true)
		}
	}
}

// backlogTTL is Redis's repl-backlog-ttl (a variable for tests): a
// primary without replicas for that long drops its stream, and writes go
// back to costing nothing.
var backlogTTL = time.Hour

// dropBacklogLocked drops a primary's stream. Requires r.mu held.
func (r *replication) dropBacklogLocked() {
	r.baseOff = r.bl.end.Load()
	r.bl = nil
	r.attachJournalsLocked()
	r.log.Info("replication backlog freed: no replica for an hour", "offset", r.baseOff)
}

// ensureBacklogLocked creates the stream at the first replica, with a new
// replication id, as Redis does. Requires r.mu held.
func (r *replication) ensureBacklogLocked() *backlog {
	if r.bl == nil {
		r.replID, r.replID2, r.secondOff = randomHex40(), zeroID, -1
		r.bl = newBacklog(r.offsetLocked(), r.eng.cfg.Int(config.ReplBacklogSize))
		r.attachJournalsLocked()
	}
	return r.bl
}

// outputMemory is the stream's outputMemory, 0 without a stream.
func (r *replication) outputMemory() int64 {
	r.mu.Lock()
	bl := r.bl
	r.mu.Unlock()
	if bl == nil {
		return 0
	}
	return bl.outputMemory()
}

// offsetLocked is master_repl_offset.
func (r *replication) offsetLocked() int64 {
	if r.bl == nil {
		return r.baseOff
	}
	return r.bl.end.Load()
}

// updateGate recomputes the gate bits from the role and configuration.
func (r *replication) updateGate() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gateLocked()
}

// gateLocked is updateGate with r.mu held.
func (r *replication) gateLocked() {
	cfg := r.eng.cfg
	var g uint32
	if r.masterHost != "" {
		if cfg.Bool(config.ReplicaReadOnly) {
			g |= gateReadOnly
		}
		if !cfg.Bool(config.ReplicaServeStaleData) && (r.link == nil || !r.link.up.Load()) {
			g |= gateStale
		}
	} else if n := cfg.Int(config.MinReplicasToWrite); n > 0 && r.goodLinks.Load() < n {
		g |= gateNoReplicas
	}
	if r.loading {
		g |= gateLoading
	}
	r.gate.Store(g)
}

// gateRefusal returns the error that refuses cmd under gate bits g, or "".
// In Redis's order (processCommand): NOREPLICAS, READONLY, MASTERDOWN,
// LOADING.
func (c *Client) gateRefusal(cmd *Command, args [][]byte, g uint32) string {
	if cmd.subs != nil && len(args) > 1 {
		if sub := lookupIn(cmd.subs, args[1]); sub != nil {
			cmd = sub // CONFIG SET's flags, not CONFIG's
		}
	}
	write := cmd.Flags&FlagWrite != 0 || cmd.Name == "exec" && c.tx.writes()
	switch {
	case g&gateNoReplicas != 0 && write:
		return errNoReplicas
	case g&gateReadOnly != 0 && write:
		return errReadOnlyReplica
	case g&gateStale != 0 && cmd.Flags&FlagStale == 0:
		return errMasterDown
	case g&gateLoading != 0 && cmd.Flags&FlagLoading == 0:
		return errLoading
	}
	return ""
}

// setMasterLocked makes this server a replica of host:port (see
// replicationSetMaster). Requires r.mu held.
func (r *replication) setMasterLocked(host, port string) {
	if r.link != nil {
		r.link.cancel()
		r.link = nil
	}
	r.masterHost, r.masterPort = host, port
	// Its replicas resynchronize with it, as Redis disconnects them.
	for l := range r.links {
		l.close()
	}
	r.attachJournalsLocked()
	r.eng.cfg.Set(config.ReplicaOf.Name(), host+" "+port)
	u := newUpstream(r, host, port)
	r.link = u
	go u.run()
	r.log.Info("connecting to the primary", "host", host, "port", port)
	r.gateLocked()
}

// unsetMasterLocked promotes this server (REPLICAOF NO ONE): the
// replication id it followed becomes its second id, so that the other
// replicas of its old primary continue from it (PSYNC2). Requires r.mu.
func (r *replication) unsetMasterLocked() {
	if r.masterHost == "" {
		return
	}
	if r.link != nil {
		r.link.cancel()
		r.link = nil
	}
	r.masterHost, r.masterPort = "", ""
	off := r.offsetLocked()
	r.replID2, r.secondOff = r.replID, off+1
	r.replID = randomHex40()
	for l := range r.links {
		l.close()
	}
	r.attachJournalsLocked()
	r.eng.cfg.Set(config.ReplicaOf.Name(), "")
	r.gateLocked()
}

// REPLICAOF host port | NO ONE
func cmdReplicaof(c *Client, args [][]byte) {
	if c.eng.cluster {
		c.WriteError(errReplicaofCluster)
		return
	}
	r := c.eng.repl
	host, port := string(args[1]), string(args[2])
	if strings.EqualFold(host, "no") && strings.EqualFold(port, "one") {
		r.mu.Lock()
		if r.masterHost != "" {
			r.unsetMasterLocked()
			r.log.Info("MASTER MODE enabled (user request)", "addr", c.Addr)
		}
		r.mu.Unlock()
		c.WriteOK()
		return
	}
	if c.replica {
		c.WriteError(errReplicaofFromReplica)
		return
	}
	p, err := strconv.ParseInt(port, 10, 64)
	if err != nil || p < 0 || p > 65535 {
		c.WriteError(errInvalidMasterPort)
		return
	}
	port = strconv.FormatInt(p, 10)
	r.mu.Lock()
	if r.masterHost != "" && strings.EqualFold(r.masterHost, host) && r.masterPort == port {
		r.mu.Unlock()
		c.WriteSimple("OK Already connected to specified master")
		return
	}
	r.setMasterLocked(host, port)
	r.mu.Unlock()
	r.log.Info("REPLICAOF enabled (user request)", "host", host, "port", port, "addr", c.Addr)
	c.WriteOK()
}

// ROLE
func cmdRole(c *Client, args [][]byte) {
	r := c.eng.repl
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.masterHost == "" {
		links := r.onlineLinksLocked()
		c.WriteArray(3)
		c.WriteBulkString("master")
		c.WriteInt(r.offsetLocked())
		c.WriteArray(len(links))
		for _, l := range links {
			c.WriteArray(3)
			c.WriteBulkString(l.ip)
			c.WriteBulkString(strconv.Itoa(l.port))
			c.WriteBulkString(strconv.FormatInt(l.ack.Load(), 10))
		}
		return
	}
	c.WriteArray(5)
	c.WriteBulkString("slave")
	c.WriteBulkString(r.masterHost)
	port, _ := strconv.ParseInt(r.masterPort, 10, 64)
	c.WriteInt(port)
	state, off := "connect", int64(-1)
	if u := r.link; u != nil {
		state = u.stateName()
		if u.up.Load() {
			off = r.offsetLocked()
		}
	}
	c.WriteBulkString(state)
	c.WriteInt(off)
}

// REPLCONF option value [option value ...]
func cmdReplconf(c *Client, args [][]byte) {
	if len(args)%2 == 0 {
		c.WriteError(errSyntax)
		return
	}
	for i := 1; i < len(args); i += 2 {
		opt, val := strings.ToLower(string(args[i])), string(args[i+1])
		switch opt {
		case "listening-port":
			p, err := strconv.ParseInt(val, 10, 64)
			if err != nil {
				c.WriteError(errNotInt)
				return
			}
			c.replPort = int(p)
		case "ip-address":
			if len(val) >= 46 { // NET_HOST_STR_LEN
				c.WriteError(sprintf(errReplconfIP, val))
				return
			}
			c.replIP = val
		case "capa":
			if strings.EqualFold(val, "ratekv") {
				c.replRatekv = true
			}
		case "ack", "getack", "rdb-only", "rdb-filter-only":
			// ACK and GETACK mean something on a replication link only
			// (replLink, upstream), where Redis answers nothing either.
			if opt == "ack" || opt == "getack" {
				return
			}
		default:
			c.WriteError(sprintf(errReplconfUnknown, args[i]))
			return
		}
	}
	c.WriteOK()
}

// PSYNC replid offset, SYNC
func cmdPsync(c *Client, args [][]byte) {
	r := c.eng.repl
	if c.replica {
		return
	}
	if !c.replRatekv {
		r.refuseForeign(c)
		if len(args) == 1 {
			// SYNC, which a Redis replica sends after PSYNC's error: an
			// error to it makes the replica reconnect at once, thousands
			// of times a second. Held unanswered, it waits for its
			// repl-timeout before it tries again.
			c.replica = true
			c.Handoff = holdForeign
			return
		}
		c.WriteError(errReplicaNotRatekv)
		return
	}
	r.mu.Lock()
	stale := r.masterHost != "" && (r.link == nil || !r.link.up.Load())
	r.mu.Unlock()
	if stale {
		c.WriteError(errNoMasterLink)
		return
	}
	if len(c.Out) > 0 {
		c.WriteError(errSyncPendingOutput)
		return
	}
	id, want := "?", int64(-1)
	if len(args) == 3 {
		id = string(args[1])
		n, err := strconv.ParseInt(string(args[2]), 10, 64)
		if err == nil {
			want = n
		}
	}
	c.replica = true
	l := &replLink{r: r, ip: c.replIP, port: c.replPort, addr: c.Addr, wantID: id, wantOff: want, cl: c.linkClient(ClientReplica)}
	l.cl.lastCmd.Store(lookupCommand(args[0]))
	if l.ip == "" {
		l.ip = hostOf(c.Addr)
	}
	c.Handoff = l.serve
}

// linkClient returns a Client that stands for c's connection once
// replication has taken it over, for CLIENT LIST and CLIENT KILL: same id,
// addresses, name and user, of kind k. Its Peer is the link's.
func (c *Client) linkClient(k ClientKind) *Client {
	l := &Client{eng: c.eng, ID: c.ID, Addr: c.Addr, LocalAddr: c.LocalAddr, Created: c.Created, proto: 2, Authed: true}
	c.mu.Lock()
	l.name, l.libName, l.libVer = c.name, c.libName, c.libVer
	c.mu.Unlock()
	l.user.Store(c.user.Load())
	l.SetKind(k)
	l.LastSeen.Store(time.Now().UnixMilli())
	return l
}

// linkPeer is the Peer of a replication link's Client: CLIENT KILL
// closes the link (a replica then reconnects, as in Redis).
type linkPeer struct {
	kill func()
	fd   int
}

func (p *linkPeer) Kill()                   { p.kill() }
func (p *linkPeer) Wake()                   {}
func (p *linkPeer) Buffers() (int64, int64) { return 0, 0 }
func (p *linkPeer) Fd() int                 { return p.fd }

// connFd returns conn's socket descriptor, -1 when it has none.
func connFd(conn any) int {
	if t, ok := conn.(interface{ NetConn() net.Conn }); ok { // TLS
		conn = t.NetConn()
	}
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return -1
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return -1
	}
	fd := -1
	rc.Control(func(f uintptr) { fd = int(f) })
	return fd
}

// linkClients returns the Clients of the replication links: the
// replicas' on a primary, the primary's on a replica.
func (r *replication) linkClients() []*Client {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*Client
	for l := range r.links {
		out = append(out, l.cl)
	}
	if r.link != nil {
		if c := r.link.client.Load(); c != nil {
			out = append(out, c)
		}
	}
	return out
}

// clients returns the runtime's clients and the replication links' (see
// linkClients), ordered by id: what CLIENT LIST and CLIENT KILL see.
func (e *Engine) clients() []*Client {
	cs := e.host.Clients()
	if links := e.repl.linkClients(); len(links) > 0 {
		cs = append(cs, links...)
		slices.SortFunc(cs, func(a, b *Client) int { return cmp.Compare(a.ID, b.ID) })
	}
	return cs
}

// holdForeign keeps the link of a replica that is not ratekv open and
// silent until it gives up (its repl-timeout) or foreignHold passes.
func holdForeign(conn io.ReadWriteCloser, _ []byte) {
	defer conn.Close()
	if d, ok := conn.(deadliner); ok {
		d.SetReadDeadline(time.Now().Add(foreignHold))
	}
	io.Copy(io.Discard, conn)
}

// foreignHold bounds holdForeign: past Redis's default repl-timeout.
const foreignHold = 5 * time.Minute

// refuseForeign logs a replica that is not a ratekv, at most once a minute
// per address.
func (r *replication) refuseForeign(c *Client) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	if r.foreign == nil {
		r.foreign = map[string]time.Time{}
	}
	host := hostOf(c.Addr)
	if t, ok := r.foreign[host]; ok && now.Sub(t) < time.Minute {
		return
	}
	if len(r.foreign) > 1024 {
		clear(r.foreign)
	}
	r.foreign[host] = now
	r.log.Warn("refusing a replica that is not ratekv (a Redis replica wants an RDB stream, which ratekv does not send)", "addr", c.Addr)
}

// hostOf is the host of a host:port address.
func hostOf(addr string) string {
	if i := strings.LastIndexByte(addr, ':'); i >= 0 {
		return strings.Trim(addr[:i], "[]")
	}
	return addr
}

// onlineLinksLocked returns the replicas streaming, in the order they
// connected. Requires r.mu held.
func (r *replication) onlineLinksLocked() []*replLink {
	var out []*replLink
	for l := range r.links {
		if l.state.Load() == linkOnline {
			out = append(out, l)
		}
	}
	sortLinks(out)
	return out
}

func sortLinks(ls []*replLink) {
	for i := 1; i < len(ls); i++ {
		for j := i; j > 0 && ls[j].id < ls[j-1].id; j-- {
			ls[j], ls[j-1] = ls[j-1], ls[j]
		}
	}
}

func infoReplication(c *Client, ib *infoBuilder) {
	r := c.eng.repl
	cfg := c.eng.cfg
	r.mu.Lock()
	defer r.mu.Unlock()
	off := r.offsetLocked()
	if r.masterHost == "" {
		ib.str("role", "master")
	} else {
		u := r.link
		ib.str("role", "slave")
		ib.str("master_host", r.masterHost)
		ib.str("master_port", r.masterPort)
		up := u != nil && u.up.Load()
		if up {
			ib.str("master_link_status", "up")
		} else {
			ib.str("master_link_status", "down")
		}
		last := int64(-1)
		if up {
			last = int64(time.Since(time.Unix(0, u.lastIO.Load())) / time.Second)
		}
		ib.num("master_last_io_seconds_ago", last)
		syncing := int64(0)
		if u != nil && u.state.Load() == upTransfer {
			syncing = 1
		}
		ib.num("master_sync_in_progress", syncing)
		ib.num("slave_read_repl_offset", off)
		ib.num("slave_repl_offset", off)
		if !up {
			down := int64(-1)
			if u != nil {
				if t := u.downSince.Load(); t != 0 {
					down = int64(time.Since(time.Unix(0, t)) / time.Second)
				}
			}
			ib.num("master_link_down_since_seconds", down)
		}
		ib.num("slave_priority", cfg.Int(config.ReplicaPriority))
		ib.num("slave_read_only", b2i(cfg.Bool(config.ReplicaReadOnly)))
		ib.num("replica_announced", b2i(cfg.Bool(config.ReplicaAnnounced)))
	}
	links := r.sortedLinksLocked()
	ib.num("connected_slaves", int64(len(links)))
	if cfg.Int(config.MinReplicasToWrite) > 0 {
		ib.num("min_slaves_good_slaves", r.goodLinks.Load())
	}
	for i, l := range links {
		lag := int64(time.Since(time.Unix(0, l.ackTime.Load())) / time.Second)
		ib.str("slave"+strconv.Itoa(i), "ip="+l.ip+",port="+strconv.Itoa(l.port)+",state="+linkStateNames[l.state.Load()]+
			",offset="+strconv.FormatInt(l.ack.Load(), 10)+",lag="+strconv.FormatInt(lag, 10))
	}
	ib.str("master_failover_state", "no-failover")
	ib.str("master_replid", r.replID)
	ib.str("master_replid2", r.replID2)
	ib.num("master_repl_offset", off)
	ib.num("second_repl_offset", r.secondOff)
	if r.bl == nil {
		ib.num("repl_backlog_active", 0)
		ib.num("repl_backlog_size", cfg.Int(config.ReplBacklogSize))
		ib.num("repl_backlog_first_byte_offset", 0)
		ib.num("repl_backlog_histlen", 0)
		return
	}
	start, end := r.bl.span()
	ib.num("repl_backlog_active", 1)
	ib.num("repl_backlog_size", cfg.Int(config.ReplBacklogSize))
	ib.num("repl_backlog_first_byte_offset", start+1)
	ib.num("repl_backlog_histlen", end-start)
}

// sortedLinksLocked returns every replica link, in the order they
// connected. Requires r.mu held.
func (r *replication) sortedLinksLocked() []*replLink {
	out := make([]*replLink, 0, len(r.links))
	for l := range r.links {
		out = append(out, l)
	}
	sortLinks(out)
	return out
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// cron runs the primary's periodic work each 100 ms: PINGs to the
// replicas (repl-ping-replica-period), the count of good replicas
// (min-replicas-to-write), and WAITs whose time is up.
func (r *replication) cron() {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	var lastPing time.Time
	for {
		select {
		case <-r.stop:
			return
		case now := <-t.C:
			cfg := r.eng.cfg
			r.mu.Lock()
			bl, primary, n := r.bl, r.masterHost == "", len(r.links)
			maxLag := time.Duration(cfg.Int(config.MinReplicasMaxLag)) * time.Second
			lim := outputLimitOf(cfg.OutputLimit(config.OutputReplica))
			good := int64(0)
			for l := range r.links {
				if l.state.Load() == linkOnline && now.Sub(time.Unix(0, l.ackTime.Load())) <= maxLag {
					good++
				}
				if bl != nil && l.overLimit(bl.end.Load(), now, lim) {
					l.close()
				}
			}
			if primary && bl != nil && n == 0 {
				if r.idleSince.IsZero() {
					r.idleSince = now
				} else if now.Sub(r.idleSince) > backlogTTL {
					r.dropBacklogLocked()
					bl = nil
				}
			} else {
				r.idleSince = time.Time{}
			}
			r.mu.Unlock()
			r.goodLinks.Store(good)
			r.updateGate()
			if primary && bl != nil && n > 0 && now.Sub(lastPing) >= time.Duration(cfg.Int(config.ReplPingPeriod))*time.Second {
				bl.appendStream(pingRecord, false)
				lastPing = now
			}
			r.checkWaits(now)
		}
	}
}

var (
	pingRecord   = journal.AppendCommand(nil, []byte("PING"))
	getackRecord = journal.AppendCommand(nil, []byte("REPLCONF"), []byte("GETACK"), []byte("*"))
)

// syncSnapshot writes a snapshot for a full resynchronization to path and
// returns its size and the cursor where the replica's stream begins.
func (r *replication) syncSnapshot(bl *backlog, h *hold, path string, stop <-chan struct{}) (int64, cursor, error) {
	sc := &syncCapture{b: bl, h: h}
	ctx, cancel := contextFrom(stop)
	defer cancel()
	size, _, err := persist.WriteTransfer(ctx, path, r.eng.store, sc, persist.TransferOptions{Keys: RecordKeys, Resets: RecordResets})
	return size, sc.cur, err
}
