package command

// Routing by hash slot in a cluster of several nodes, as Redis's
// getNodeByQuery (src/cluster.c): once the control plane publishes a
// SlotTable, a command whose keys lie in a slot another node serves gets
// -MOVED; in a slot no node serves, -CLUSTERDOWN; in a slot this node is
// migrating, -ASK when a key is missing here (-TRYAGAIN when only some
// are); in a slot it is importing, it runs only after ASKING (or for
// RESTORE-ASKING), or for every client once SETSLOT NODE gives the slot
// to this node, while that change commits. A replica of the slot's owner
// serves reads to a client that sent READONLY. Commands without keys are
// not routed; EXEC routes its whole queue, and each command is routed
// before it is queued, as in Redis. A node cut off from the cluster
// (SetClusterDown) answers -CLUSTERDOWN once CROSSSLOT and unbound slots
// are ruled out.
//
// The cost on the request path: with no table, the CROSSSLOT check of
// before (cluster.go); with one, a keyed command computes its key's slot
// and indexes Owner, and loads the migration state's pointer, nil unless
// a slot is migrating or importing. Only the slow paths lock a shard (to
// see whether a key exists in an open slot) or allocate.
//
// CLUSTER SETSLOT's IMPORTING, MIGRATING and STABLE are this node's own
// state, not the topology's, as in Redis: kept in routeState, not kept
// across a restart. A published table that moves a slot clears it as
// Redis's clusterUpdateSlotsConfigWith and SETSLOT NODE do: a slot this
// node migrated and no longer owns stops migrating, and a slot it
// imported and now owns stops importing.

import (
	"bytes"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/internal/redisnum"
	"github.com/ratekv/ratekv/shards"
)

func init() {
	registerSubcommands("cluster",
		&Command{Name: "cluster|setslot", Arity: -4, Flags: FlagAdmin | FlagStale, Handler: clusterOnly(cmdClusterSetslot),
			Summary: "Binds a hash slot to a node.", Group: "cluster"},
	)
	askingCmd = commands["asking"]
}

// askingCmd is ASKING's table entry: the one command after which the
// client's ASKING flag is kept (Client.Run).
var askingCmd *Command

// routeState is the engine's state of slot migrations and of MIGRATE
// (migrate.go). The zero value is ready: no slot open, nothing in flight.
type routeState struct {
	// routes is the flag of the commands the dispatcher routes: none
	// outside cluster mode, flagSlots (CROSSSLOT) in a one-node cluster,
	// flagRouted once a table is published.
	routes atomic.Uint32
	mu     sync.Mutex                     // serializes changes of migr and fence
	migr   atomic.Pointer[slotMigrations] // nil: no slot is migrating or importing
	fence  atomic.Pointer[fenceSet]       // nil: no MIGRATE has keys in flight (migrate.go)
	down   atomic.Bool                    // cluster_state:fail: cutOff, or uncovered with cluster-require-full-coverage
	cutOff atomic.Bool                    // this node is cut off from the cluster (SetClusterDown)
	// uncovered: the table leaves a slot without a node or with a failed
	// one (Redis's clusterUpdateState under full coverage).
	uncovered atomic.Bool
	downMu    sync.Mutex   // serializes updates of down
	conns     migrateConns // MIGRATE's cached connections (migrate.go)
}

// slotMigrations is one state of the open slots, replaced as a whole
// (under routeState.mu) and never changed after it is published.
type slotMigrations struct {
	migrating map[uint16]string // slot → the node id it migrates to
	importing map[uint16]string // slot → the node id it imports from
	// claimed are importing slots that SETSLOT NODE gives this node,
	// served to every client while the change commits: Redis's target
	// owns such a slot at once, and a node that applies the change
	// first already sends clients here.
	claimed map[uint16]bool
}

// setMigration records slot as migrating to (or importing from, with
// importing) node id; id "" clears that state.
func (e *Engine) setMigration(slot uint16, importing bool, id string) {
	e.rt.mu.Lock()
	defer e.rt.mu.Unlock()
	e.updateMigrationsLocked(func(m *slotMigrations) {
		mm := m.migrating
		if importing {
			mm = m.importing
		}
		if id == "" {
			delete(mm, slot)
		} else {
			mm[slot] = id
		}
	})
}

// claimSlot serves the importing slot to every client (claim) or to
// those that sent ASKING only; it does nothing to a slot not importing.
func (e *Engine) claimSlot(slot uint16, claim bool) {
	e.rt.mu.Lock()
	defer e.rt.mu.Unlock()
	e.updateMigrationsLocked(func(m *slotMigrations) {
		if claim {
			m.claimed[slot] = true
		} else {
			delete(m.claimed, slot)
		}
	})
}

// updateMigrationsLocked publishes a copy of the migration state that
// change made. Requires e.rt.mu.
func (e *Engine) updateMigrationsLocked(change func(m *slotMigrations)) {
	m := &slotMigrations{migrating: map[uint16]string{}, importing: map[uint16]string{}, claimed: map[uint16]bool{}}
	if old := e.rt.migr.Load(); old != nil {
		for s, id := range old.migrating {
			m.migrating[s] = id
		}
		for s, id := range old.importing {
			m.importing[s] = id
		}
		for s := range old.claimed {
			m.claimed[s] = true
		}
	}
	change(m)
	for s := range m.claimed {
		if _, ok := m.importing[s]; !ok {
			delete(m.claimed, s) // a claim ends with its import
		}
	}
	if len(m.migrating) == 0 && len(m.importing) == 0 {
		m = nil
	}
	e.rt.migr.Store(m)
}

// setRoutes sets which commands the dispatcher routes, for table t in
// cluster mode.
func (e *Engine) setRoutes(t *SlotTable) {
	switch {
	case !e.cluster:
		e.rt.routes.Store(0)
	case t == nil:
		e.rt.routes.Store(uint32(flagSlots))
	default:
		e.rt.routes.Store(uint32(flagRouted))
	}
}

// slotsMoved clears the migration state a new table ends: a slot this
// node migrated away and no longer owns, a slot it imported and now owns.
func (e *Engine) slotsMoved(t *SlotTable) {
	if e.rt.migr.Load() == nil {
		return
	}
	e.rt.mu.Lock()
	defer e.rt.mu.Unlock()
	e.updateMigrationsLocked(func(m *slotMigrations) {
		for s := range m.migrating {
			if t != nil && t.Owner[s] != t.Self {
				delete(m.migrating, s)
			}
		}
		for s := range m.importing {
			if t == nil || t.Owner[s] == t.Self {
				delete(m.importing, s)
			}
		}
	})
}

// AppendSlotMigrations appends this node's open slots as CLUSTER NODES
// shows them on its own line: " [slot->-id]" for a slot it migrates,
// " [slot-<-id]" for one it imports, in slot order.
func (e *Engine) AppendSlotMigrations(b []byte) []byte {
	m := e.rt.migr.Load()
	if m == nil {
		return b
	}
	slots := make([]int, 0, len(m.migrating)+len(m.importing))
	for s := range m.migrating {
		slots = append(slots, int(s))
	}
	for s := range m.importing {
		if _, dup := m.migrating[s]; !dup {
			slots = append(slots, int(s))
		}
	}
	sort.Ints(slots)
	for _, s := range slots {
		b = append(b, " ["...)
		b = strconv.AppendInt(b, int64(s), 10)
		if id, ok := m.migrating[uint16(s)]; ok {
			b = append(b, "->-"...)
			b = append(b, id...)
		} else {
			b = append(b, "-<-"...)
			b = append(b, m.importing[uint16(s)]...)
		}
		b = append(b, ']')
	}
	return b
}

// routeRefused routes a command with keys in cluster mode (t nil: the
// one-node cluster, which only refuses CROSSSLOT) and answers it when it
// is not served here: true then.
func (c *Client) routeRefused(t *SlotTable, cmd *Command, args [][]byte) bool {
	if c.replaying || c.internal {
		return false // the log's replay, the primary's stream, MIGRATE's deletes
	}
	if t == nil {
		if c.crossSlot(cmd, args) {
			c.refuseCrossSlot(cmd)
			return true
		}
		return false
	}
	// One key in a slot this node serves, no slot open: the common case.
	// The slot is kept for the shard lock (Client.lock), so that routing
	// costs no second slot computation.
	if cmd.FirstKey == 1 && cmd.LastKey == 1 && cmd.Keys == nil && len(args) > 1 {
		s := shards.KeySlot(args[1])
		if t.Owner[s] == t.Self && c.eng.rt.migr.Load() == nil && !c.eng.rt.down.Load() {
			c.routed = uint32(s) + 1
			return false
		}
	}
	msg := c.redirect(t, cmd, args)
	if msg == "" {
		return false
	}
	c.refuseRouted(cmd, msg)
	return true
}

// routeQuery gathers what getNodeByQuery learns from a request's keys.
type routeQuery struct {
	t     *SlotTable
	m     *slotMigrations
	slot  int // -1: no key yet
	owner int32
	first []byte
	// The slot is migrating from here, or importing here; the request
	// names more than one distinct key; how many of its keys are here.
	migrating, importing, multiple bool
	claimed                        bool // importing and claimed
	missing, existing              int
}

// redirect returns the error that sends the request elsewhere, or "" when
// this node serves it.
func (c *Client) redirect(t *SlotTable, cmd *Command, args [][]byte) string {
	q := routeQuery{t: t, m: c.eng.rt.migr.Load(), slot: -1}
	if cmd.Name == "exec" {
		tx := &c.tx
		if !tx.active {
			return "" // EXEC without MULTI: its own error
		}
		tx.sliceArgs()
		first := 0
		for i, qc := range tx.cmds {
			cargs := tx.args[first : first+tx.nargs[i]]
			first += tx.nargs[i]
			if msg := q.addKeys(c, qc, cargs); msg != "" {
				return msg
			}
		}
	} else if msg := q.addKeys(c, cmd, args); msg != "" {
		return msg
	}
	if q.slot < 0 {
		return "" // no key at all
	}
	if c.eng.rt.down.Load() && cmd.Flags&FlagPubSub == 0 {
		// As Redis's getNodeByQuery in cluster_state:fail; shard
		// channels are served, as with cluster-allow-pubsubshard-when-down
		// (Redis's default).
		switch {
		case !c.eng.cfg.Bool(config.ClusterAllowReadsWhenDown):
			return errClusterDown
		case cmd.Flags&FlagWrite != 0 || cmd.Name == "exec" && c.tx.writes():
			return errClusterDownRO
		}
	}
	if (q.migrating || q.importing) && cmd.Name == "migrate" {
		return "" // MIGRATE moves keys freely while the slot is open
	}
	if q.migrating && q.missing > 0 {
		if q.existing > 0 {
			return errTryAgain
		}
		if n := t.node(q.m.migrating[uint16(q.slot)]); n >= 0 {
			return t.redirection(errAsk, q.slot, n)
		}
	}
	if q.importing && (c.asking || cmd.Flags&FlagAsking != 0 || q.claimed) {
		if q.multiple && q.missing > 0 {
			return errTryAgain
		}
		return ""
	}
	if q.owner == t.Self {
		return ""
	}
	write := cmd.Flags&FlagWrite != 0 || cmd.Name == "exec" && c.tx.writes()
	if (c.readonly || cmd.Flags&FlagPubSub != 0) && !write && t.replicaOf(q.owner) {
		return ""
	}
	return t.redirection(errMoved, q.slot, q.owner)
}

// SetClusterDown sets whether this node is cut off from the cluster
// (cluster_state:fail): while it is, commands with keys get -CLUSTERDOWN,
// reads excepted with cluster-allow-reads-when-down. The control plane
// decides it (cluster.Control's health check).
func (e *Engine) SetClusterDown(down bool) {
	e.rt.cutOff.Store(down)
	e.updateDown()
}

// ClusterDown reports what SetClusterDown set.
func (e *Engine) ClusterDown() bool { return e.rt.cutOff.Load() }

// updateDown recomputes cluster_state as Redis's clusterUpdateState: fail
// when this node is cut off, or, with cluster-require-full-coverage, when
// a slot has no node or a failed one.
func (e *Engine) updateDown() {
	e.rt.downMu.Lock()
	defer e.rt.downMu.Unlock()
	e.rt.down.Store(e.rt.cutOff.Load() || e.rt.uncovered.Load() && e.cfg.Bool(config.ClusterRequireFullCoverage))
}

// covered reports whether every slot of t has a node that has not failed.
func (t *SlotTable) covered() bool {
	for _, o := range t.Owner {
		if o < 0 || t.Nodes[o].Fail {
			return false
		}
	}
	return true
}

// addKeys adds the keys of one command to the query; it returns
// CLUSTERDOWN for a slot nobody serves and CROSSSLOT for a second slot.
func (q *routeQuery) addKeys(c *Client, cmd *Command, args [][]byte) string {
	c.keyBuf = cmd.keyIndexes(args, c.keyBuf[:0])
	for _, i := range c.keyBuf {
		key := args[i]
		s := int(shards.KeySlot(key))
		switch {
		case q.slot < 0:
			q.slot, q.first, q.owner = s, key, q.t.Owner[s]
			if q.owner < 0 {
				return errSlotUnbound
			}
			if q.m != nil {
				_, q.migrating = q.m.migrating[uint16(s)]
				q.migrating = q.migrating && q.owner == q.t.Self
				_, q.importing = q.m.importing[uint16(s)]
				q.importing = q.importing && !q.migrating
				q.claimed = q.importing && q.m.claimed[uint16(s)]
			}
		case s != q.slot:
			return errCrossSlot
		case q.importing && !q.multiple && !bytes.Equal(key, q.first):
			q.multiple = true
		}
		// A shard channel is served where its slot is until the slot
		// has moved, whatever the keys (Redis's pubsubshard_included).
		if (q.migrating || q.importing) && cmd.Flags&FlagPubSub == 0 {
			if c.keyHere(key) {
				q.existing++
			} else {
				q.missing++
			}
		}
	}
	return ""
}

// keyHere reports whether key exists (and has not expired), for a
// request in an open slot, before the command has locked anything.
func (c *Client) keyHere(key []byte) bool {
	st := c.eng.store
	i := st.ShardIndex(key)
	st.Lock(i)
	defer st.Unlock(i)
	return st.Peek(key, st.Now()/1e6) != nil
}

// node returns the index in t.Nodes of the node with id, or -1.
func (t *SlotTable) node(id string) int32 {
	for i := range t.Nodes {
		if t.Nodes[i].ID == id {
			return int32(i)
		}
	}
	return -1
}

// replicaOf reports whether this node replicates node n.
func (t *SlotTable) replicaOf(n int32) bool {
	p := t.Nodes[t.Self].Primary
	return p != "" && p == t.Nodes[n].ID
}

// redirection formats -MOVED or -ASK (format) to node n for slot.
func (t *SlotTable) redirection(format string, slot int, n int32) string {
	ip := t.Nodes[n].IP
	if ip == "" {
		ip = "?" // as Redis, for a node whose address it does not know
	}
	return sprintf(format, slot, ip, t.Nodes[n].Port)
}

// servesSlot reports whether a script's command with keys in slot runs
// here, as Redis's scriptVerifyClusterState asks getNodeByQuery: this
// node owns the slot, imports it for a client that sent ASKING, or
// replicates its owner for a READONLY client's read.
func (c *Client) servesSlot(t *SlotTable, cmd *Command, slot int) bool {
	owner := t.Owner[slot]
	switch {
	case owner < 0:
		return false
	case owner == t.Self:
		return true
	default:
		if m := c.eng.rt.migr.Load(); m != nil {
			if _, ok := m.importing[uint16(slot)]; ok && (c.asking || m.claimed[uint16(slot)]) {
				return true
			}
		}
	}
	return c.readonly && cmd.Flags&FlagWrite == 0 && t.replicaOf(owner)
}

// READONLY
func cmdReadonly(c *Client, args [][]byte) {
	c.readonly = true
	c.WriteOK()
}

// READWRITE
func cmdReadwrite(c *Client, args [][]byte) {
	c.readonly = false
	c.WriteOK()
}

// clusterNodes is what SETSLOT needs of the topology: this node's id,
// whether it is a replica, a slot's owner and whether a node is known
// (and a primary). With no table, this node alone owns every slot.
type clusterNodes struct {
	t    *SlotTable
	self string
}

func (c *Client) clusterNodes() clusterNodes {
	return clusterNodes{t: c.eng.slots.Load(), self: c.eng.node.Load().ID}
}

func (v clusterNodes) selfReplica() bool {
	return v.t != nil && v.t.Nodes[v.t.Self].Primary != ""
}

// ownedHere reports whether this node owns slot.
func (v clusterNodes) ownedHere(slot uint16) bool {
	return v.t == nil || v.t.Owner[slot] == v.t.Self
}

// lookup reports whether the node with id is known, and whether it is a
// replica.
func (v clusterNodes) lookup(id []byte) (known, replica bool) {
	if v.t == nil {
		return string(id) == v.self, false
	}
	n := v.t.node(string(id))
	if n < 0 {
		return false, false
	}
	return true, v.t.Nodes[n].Primary != ""
}

// CLUSTER SETSLOT slot IMPORTING node-id|MIGRATING node-id|STABLE|NODE node-id
func cmdClusterSetslot(c *Client, args [][]byte) {
	v := c.clusterNodes()
	if v.selfReplica() {
		c.WriteError(errSetslotReplica)
		return
	}
	slot, action, msg := parseSetslot(args)
	if msg != "" {
		c.WriteError(msg)
		return
	}
	switch action {
	case "migrating":
		if !v.ownedHere(slot) {
			c.WriteError(sprintf(errNotSlotOwner, slot))
			return
		}
		if !c.setslotTarget(v, args[4], errNodeUnknownTo) {
			return
		}
		c.eng.setMigration(slot, false, string(args[4]))
	case "importing":
		if v.ownedHere(slot) {
			c.WriteError(sprintf(errAlreadySlotOwner, slot))
			return
		}
		if !c.setslotTarget(v, args[4], errNodeUnknownTo) {
			return
		}
		c.eng.setMigration(slot, true, string(args[4]))
	case "stable":
		c.eng.setMigration(slot, false, "")
		c.eng.setMigration(slot, true, "")
	case "node":
		if !c.setslotTarget(v, args[4], errNodeUnknown) {
			return
		}
		c.setslotNode(v, slot, string(args[4]))
		return
	}
	c.WriteOK()
}

// parseSetslot parses CLUSTER SETSLOT's slot (as Redis's getSlotOrReply)
// and its action, lower-cased, with the node id in args[4] for all but
// STABLE; msg is the error reply.
func parseSetslot(args [][]byte) (slot uint16, action, msg string) {
	n, ok := redisnum.ParseInt(args[2])
	if !ok || n < 0 || n >= shards.NumSlots {
		return 0, "", errSlotRange
	}
	for _, a := range []string{"migrating", "importing", "stable", "node"} {
		want := 5
		if a == "stable" {
			want = 4
		}
		if equalFold(args[3], a) && len(args) == want {
			return uint16(n), a, ""
		}
	}
	return 0, "", errSetslotSyntax
}

// controlPlaneErr is the error reply for a control plane's error: as it
// is when it is a Redis-style error already ("ERR …"), else after "ERR ".
func controlPlaneErr(err error) string {
	msg := string(sanitizeErr([]byte(err.Error())))
	if strings.HasPrefix(msg, "ERR ") {
		return msg
	}
	return sprintf(errControlPlane, msg)
}

// setslotTarget checks SETSLOT's node id: a node this node knows, a
// primary. It replies and returns false when not.
func (c *Client) setslotTarget(v clusterNodes, id []byte, unknown string) bool {
	known, replica := v.lookup(id)
	if !known {
		c.WriteError(sprintf(unknown, errArg(id)))
		return false
	}
	if replica {
		c.WriteError(errTargetNotPrimary)
		return false
	}
	return true
}

// setslotNode is CLUSTER SETSLOT slot NODE id once id checked: refused
// while this node gives away a slot it holds keys of; otherwise the
// control plane commits it, off the event loop (a Raft round trip), and
// the client waits for the outcome.
func (c *Client) setslotNode(v clusterNodes, slot uint16, id string) {
	empty := true
	c.eng.store.EachInSlot(slot, c.nowMs, func([]byte) bool { empty = false; return false })
	if v.ownedHere(slot) && id != v.self && !empty {
		c.WriteError(sprintf(errSlotHasKeys, slot))
		return
	}
	ctl := c.control()
	if ctl == nil {
		return
	}
	e := c.eng
	if id == v.self {
		e.claimSlot(slot, true)
	}
	commit := func() string {
		if err := ctl.SetSlotNode(slot, id); err != nil {
			e.claimSlot(slot, false)
			return controlPlaneErr(err)
		}
		// As Redis's SETSLOT NODE: an empty slot stops migrating, and
		// one this node imported and now owns stops importing.
		if empty {
			e.setMigration(slot, false, "")
		}
		if id == v.self {
			e.setMigration(slot, true, "")
		}
		return ""
	}
	c.runAsync(commit)
}
