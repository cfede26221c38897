package cluster

// The topology held in Raft (hashicorp/raft, with its bolt log store and
// file snapshots in dir/<cluster-config-file>.d): a fresh node bootstraps a
// group of itself alone, a restart resumes its group, and CLUSTER MEET
// moves the node that is alone into the other's group. Every node applies
// every entry to its own State (fsm) and publishes the SlotTable it
// implies; the request path never waits for Raft.
//
// Changes go to the leader: this node applies them when it leads, or
// sends them to the leader's client port over RESP (CLUSTER RATEKV-APPLY,
// authenticated with masteruser/masterauth as a replica is), then waits
// until it has applied the entry itself, so that a CLUSTER command's OK
// means this node answers with the change too.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/ratekv/ratekv/command"
	"github.com/ratekv/ratekv/config"
	"github.com/redis/go-redis/v9"
)

// MaxVoters is how many nodes vote in the topology's Raft group; the
// others follow it as non-voters. Five voters survive the loss of two.
const MaxVoters = 5

// Options configures a Control.
type Options struct {
	Dir         string        // Raft's log and snapshots
	Self        Node          // this node: id, ports, IP ("" until a MEET tells it)
	BindIP      string        // the address the bus listens on
	BusPort     int           // the port it listens on (Self.BusPort: the one announced)
	NodeTimeout time.Duration // cluster-node-timeout
	Engine      *command.Engine
	Config      *config.Config // masteruser/masterauth, to reach the other nodes
	Logger      *slog.Logger
	// Explicit: a fresh node serves no slot until ADDSLOTS (else every
	// slot while alone).
	Explicit bool
	// SaveID keeps a new node id (CLUSTER RESET HARD); may be nil.
	SaveID func(id string) error
}

// Control is the topology's control plane on one node; it implements
// command.ClusterControl. It is safe for concurrent use.
type Control struct {
	o    Options
	log  *slog.Logger
	hlog hclog.Logger
	fsm  *fsm

	mu      sync.Mutex    // serializes what restarts Raft (MEET, RESET) and Close
	stopMon chan struct{} // closed by Close: ends the failure monitor
	closed  bool          // guarded by mu

	rmu   sync.RWMutex // guards the fields below, replaced by a restart
	r     *raft.Raft
	trans *raft.NetworkTransport
	store *raftboltdb.BoltStore
	ready chan struct{} // closed once a fresh group applied this node's record
}

// Open starts the node's Raft: it resumes the group kept in Dir, or
// bootstraps a new group of this node alone.
func Open(o Options) (*Control, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.NodeTimeout <= 0 {
		o.NodeTimeout = 15 * time.Second
	}
	quietRedis.Do(func() { redis.SetLogger(redisLogger{o.Logger}) })
	c := &Control{o: o, log: o.Logger}
	c.hlog = hclog.FromStandardLogger(slog.NewLogLogger(o.Logger.Handler(), slog.LevelWarn),
		&hclog.LoggerOptions{Name: "raft", Level: hclog.Warn})
	c.fsm = &fsm{st: NewState(), self: o.Self.ID, last: o.Self, publish: c.publish}
	seed := o.Self
	seed.Primary, seed.Fail = "", false
	if err := c.start(&Entry{Op: OpAddNode, Node: &seed, Explicit: o.Explicit}, false); err != nil {
		return nil, err
	}
	c.stopMon = make(chan struct{})
	go c.monitor(c.stopMon)
	go c.health(c.stopMon)
	return c, nil
}

// quietRedis sets go-redis's logger (global) once: its pool's dial
// errors, which the nodes' requests to a node that is down make, go to
// the log at debug level rather than to stderr.
var quietRedis sync.Once

type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.Debug("cluster: go-redis: " + fmt.Sprintf(format, v...))
}

// raftConfig derives Raft's timings from cluster-node-timeout: a
// heartbeat a tenth of it (between 50 ms and 1 s), an election timeout of
// two heartbeats, so that a leader's loss is noticed well within it.
func (c *Control) raftConfig() *raft.Config {
	hb := min(max(c.o.NodeTimeout/10, 50*time.Millisecond), time.Second)
	cfg := raft.DefaultConfig()
	cfg.LocalID = raft.ServerID(c.fsm.selfID())
	cfg.HeartbeatTimeout = hb
	cfg.ElectionTimeout = 2 * hb
	cfg.LeaderLeaseTimeout = hb
	// A follower learns that an entry committed from the leader's next
	// AppendEntries, which comes this soon when nothing else is sent: a
	// CLUSTER command forwarded to the leader waits for it (reshard's
	// SETSLOT NODE, once per slot). Idle, it is an empty AppendEntries
	// to each follower this often.
	cfg.CommitTimeout = min(hb/4, 10*time.Millisecond)
	cfg.SnapshotThreshold = 512
	cfg.TrailingLogs = 1024
	cfg.SnapshotInterval = 30 * time.Second
	cfg.Logger = c.hlog
	return cfg
}

// advertise is the bus address the other nodes reach this node at.
func (c *Control) advertise() *net.TCPAddr {
	ip := net.ParseIP(c.o.Self.IP)
	if ip == nil {
		ip = net.ParseIP(c.o.BindIP)
	}
	if ip == nil || ip.IsUnspecified() {
		ip = net.IPv4(127, 0, 0, 1)
	}
	return &net.TCPAddr{IP: ip, Port: c.o.Self.BusPort}
}

// start opens the stores and Raft; a node without Raft state bootstraps
// a group of itself and applies seed once it leads it: before start
// returns when wait, else in the background (ready is closed then).
func (c *Control) start(seed *Entry, wait bool) error {
	if err := os.MkdirAll(c.o.Dir, 0o755); err != nil {
		return err
	}
	store, err := raftboltdb.NewBoltStore(filepath.Join(c.o.Dir, "raft.db"))
	if err != nil {
		return fmt.Errorf("cluster: the Raft log: %w", err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(c.o.Dir, 2, c.hlog)
	if err != nil {
		store.Close()
		return fmt.Errorf("cluster: the Raft snapshots: %w", err)
	}
	adv := c.advertise()
	bp := c.o.BusPort
	if bp == 0 {
		bp = c.o.Self.BusPort
	}
	bind := net.JoinHostPort(c.o.BindIP, strconv.Itoa(bp))
	trans, err := raft.NewTCPTransportWithLogger(bind, adv, 3, 5*time.Second, c.hlog)
	if err != nil {
		store.Close()
		return fmt.Errorf("cluster: the bus port: %w", err)
	}
	has, err := raft.HasExistingState(store, store, snaps)
	if err != nil {
		trans.Close()
		store.Close()
		return err
	}
	r, err := raft.NewRaft(c.raftConfig(), c.fsm, store, store, snaps, trans)
	if err != nil {
		trans.Close()
		store.Close()
		return fmt.Errorf("cluster: %w", err)
	}
	c.rmu.Lock()
	c.r, c.trans, c.store = r, trans, store
	c.rmu.Unlock()
	ready := make(chan struct{})
	c.rmu.Lock()
	c.ready = ready
	c.rmu.Unlock()
	alone := false
	if has {
		c.catchUp(r)
		go c.refreshAddress()
		f := r.GetConfiguration()
		alone = f.Error() == nil && len(f.Configuration().Servers) == 1
	}
	// A group of one that crashed before its first entry applied seeds
	// itself at its restart too.
	if seed == nil || has && !alone {
		close(ready)
		return nil
	}
	if !has {
		id := raft.ServerID(c.fsm.selfID())
		if err := r.BootstrapCluster(raft.Configuration{Servers: []raft.Server{{Suffrage: raft.Voter, ID: id, Address: trans.LocalAddr()}}}).Error(); err != nil {
			close(ready)
			return fmt.Errorf("cluster: bootstrap: %w", err)
		}
		if seed.Explicit {
			c.publishAlone(*seed.Node) // serving no slot from the start
		}
	}
	seedIt := func() error {
		defer close(ready)
		if err := c.waitLeader(r, 10*c.raftConfig().ElectionTimeout+time.Second); err != nil {
			return err
		}
		if err := r.Barrier(c.applyTimeout()).Error(); err != nil { // the log applied
			return c.raftErr(err)
		}
		c.fsm.mu.Lock()
		known := c.fsm.st.Nodes[c.fsm.self] != nil
		c.fsm.mu.Unlock()
		if known {
			return nil
		}
		return c.applyLocal(r, *seed)
	}
	if !wait {
		// The group of one elects this node after a heartbeat timeout or
		// two: the server need not wait for it, the changes do (ready).
		go func() {
			if err := seedIt(); err != nil && r.State() != raft.Shutdown {
				c.log.Error("cluster: cannot start this node's own Raft group", "err", err)
			}
		}()
		return nil
	}
	return seedIt()
}

// waitReady waits (bounded) until a fresh group's first entry, this
// node's record, is applied: the changes that follow need it.
func (c *Control) waitReady() {
	c.rmu.RLock()
	ch := c.ready
	c.rmu.RUnlock()
	if ch == nil {
		return
	}
	select {
	case <-ch:
	case <-time.After(c.applyTimeout()):
	}
}

// publishAlone publishes a table of node n alone, serving no slot.
func (c *Control) publishAlone(n Node) {
	me := NewState()
	me.Nodes[n.ID] = &n
	me.Explicit = true
	c.o.Engine.SetSlotTable(me.Table(n.ID))
}

// refreshAddress commits this node's address when it restarted with
// another one (a new port, cluster-announce-*) than the topology holds.
func (c *Control) refreshAddress() {
	want := c.o.Self
	deadline := time.Now().Add(c.applyTimeout())
	for time.Now().Before(deadline) {
		c.fsm.mu.Lock()
		n := c.fsm.st.Nodes[c.fsm.self]
		var have Node
		if n != nil {
			have = *n
		}
		c.fsm.mu.Unlock()
		if n == nil {
			time.Sleep(50 * time.Millisecond) // not caught up yet
			continue
		}
		upd := have
		if want.IP != "" {
			upd.IP = want.IP
		}
		upd.Port, upd.TLSPort, upd.BusPort, upd.Hostname = want.Port, want.TLSPort, want.BusPort, want.Hostname
		if upd == have {
			return
		}
		if err := c.propose(Entry{Op: OpAddNode, Node: &upd}); err != nil {
			c.log.Warn("cluster: cannot update this node's address in the topology", "err", err)
		}
		return
	}
}

// catchUp, when a member of a group of several restarts without a
// snapshot of the topology (after a crash), publishes a table where it
// serves no slot until the log it replays from the leader puts it back:
// it must not serve, as the one-node cluster would, slots it may have
// lost meanwhile.
func (c *Control) catchUp(r *raft.Raft) {
	f := r.GetConfiguration()
	if f.Error() != nil || len(f.Configuration().Servers) < 2 {
		return
	}
	c.fsm.mu.Lock()
	defer c.fsm.mu.Unlock()
	if c.fsm.st.Nodes[c.fsm.self] != nil {
		return
	}
	c.publishAlone(c.fsm.last)
}

// stop shuts Raft down and closes its stores.
func (c *Control) stop() error {
	c.rmu.Lock()
	r, trans, store := c.r, c.trans, c.store
	c.r, c.trans, c.store = nil, nil, nil
	c.rmu.Unlock()
	if r == nil {
		return nil
	}
	err := r.Shutdown().Error()
	trans.Close()
	return errors.Join(err, store.Close())
}

// Close stops the node's Raft; the group goes on without it. A snapshot
// first: a restart then publishes the latest topology it applied before
// it hears from the leader.
func (c *Control) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.closed = true
		close(c.stopMon)
	}
	if r := c.raft(); r != nil {
		if err := r.Snapshot().Error(); err != nil && !errors.Is(err, raft.ErrNothingNewToSnapshot) {
			c.log.Warn("cluster: no snapshot of the topology at shutdown", "err", err)
		}
	}
	return c.stop()
}

// raft returns the running Raft (nil while restarting or closed).
func (c *Control) raft() *raft.Raft {
	c.rmu.RLock()
	defer c.rmu.RUnlock()
	return c.r
}

func (c *Control) waitLeader(r *raft.Raft, d time.Duration) error {
	deadline := time.Now().Add(d)
	for r.State() != raft.Leader {
		if r.State() == raft.Shutdown {
			return errors.New("cluster: Raft was shut down")
		}
		if time.Now().After(deadline) {
			return errors.New("cluster: this node did not become the leader of its own group")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// applyTimeout bounds how long a change waits for Raft.
func (c *Control) applyTimeout() time.Duration { return max(c.o.NodeTimeout, 5*time.Second) }

// applyLocal applies e through r, which leads.
func (c *Control) applyLocal(r *raft.Raft, e Entry) error {
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	_, err = c.applyData(r, data)
	return err
}

// applyData applies an encoded entry through r and returns its log index,
// or errRetry when r does not lead.
func (c *Control) applyData(r *raft.Raft, data []byte) (uint64, error) {
	f := r.Apply(data, c.applyTimeout())
	if err := f.Error(); errors.Is(err, raft.ErrNotLeader) {
		return 0, errRetry
	} else if err != nil {
		return 0, c.raftErr(err)
	}
	if err, ok := f.Response().(error); ok {
		return 0, err
	}
	return f.Index(), nil
}

func (c *Control) raftErr(err error) error {
	if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) || errors.Is(err, raft.ErrEnqueueTimeout) {
		return errors.New(command.ErrClusterNoLeader)
	}
	return fmt.Errorf("ERR cluster topology: %v", err)
}

// State returns a copy of the topology this node has applied.
func (c *Control) State() *State {
	c.fsm.mu.Lock()
	defer c.fsm.mu.Unlock()
	return c.fsm.st.Clone()
}

// Leader returns the id of the topology's Raft leader ("" while none).
func (c *Control) Leader() string {
	r := c.raft()
	if r == nil {
		return ""
	}
	_, id := r.LeaderWithID()
	return string(id)
}

// IsLeader reports whether this node leads the topology's Raft group.
func (c *Control) IsLeader() bool {
	r := c.raft()
	return r != nil && r.State() == raft.Leader
}

// propose applies e on the leader and returns once this node applied it.
// While there is no leader, or the one asked has just stepped down before
// taking the entry, it tries again (retry).
func (c *Control) propose(e Entry) error {
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return c.retry(func() error { return c.proposeOnce(data) })
}

// retry runs fn until it succeeds or fails for another reason than the
// lack of a leader, for at most five election timeouts (an election
// normally ends within one or two).
func (c *Control) retry(fn func() error) error {
	c.waitReady()
	deadline := time.Now().Add(min(5*c.raftConfig().ElectionTimeout, c.applyTimeout()))
	for {
		err := fn()
		if err == nil || !errors.Is(err, errRetry) && !strings.Contains(err.Error(), notLeader) && err.Error() != command.ErrClusterNoLeader {
			return err
		}
		if time.Now().After(deadline) {
			return errors.New(command.ErrClusterNoLeader)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// errRetry: the entry was not taken; a later try may succeed.
var errRetry = errors.New("ERR " + notLeader)

// notLeader is ApplyForwarded's answer from a node that does not lead.
const notLeader = "this node does not lead the cluster topology"

func (c *Control) proposeOnce(data []byte) error {
	r := c.raft()
	if r == nil {
		return errRetry
	}
	if r.State() == raft.Leader {
		_, err := c.applyData(r, data)
		return err
	}
	var idx int64
	err := c.toLeader(func(ctx context.Context, rdb *redis.Client) (err error) {
		idx, err = rdb.Do(ctx, "cluster", "ratekv-apply", data).Int64()
		return err
	})
	if err != nil {
		return err
	}
	return c.waitApplied(r, uint64(idx))
}

// waitApplied waits until r applied the entry at idx.
func (c *Control) waitApplied(r *raft.Raft, idx uint64) error {
	deadline := time.Now().Add(c.applyTimeout())
	for r.AppliedIndex() < idx {
		if time.Now().After(deadline) {
			return errors.New("ERR cluster topology: the change is committed, but this node has not applied it yet")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// client returns a RESP client of the node at ip:port.
func (c *Control) client(ip string, port int) *redis.Client {
	o := &redis.Options{Addr: net.JoinHostPort(ip, strconv.Itoa(port)), Protocol: 2, DisableIdentity: true,
		DialTimeout: 2 * time.Second, ReadTimeout: c.applyTimeout() + 2*time.Second, WriteTimeout: 2 * time.Second,
		MaxRetries: -1, PoolSize: 1}
	if cfg := c.o.Config; cfg != nil {
		o.Username, o.Password = cfg.String(config.MasterUser), cfg.String(config.MasterAuth)
	}
	return redis.NewClient(o)
}

// toLeader runs fn with a client of the leader's client port.
func (c *Control) toLeader(fn func(context.Context, *redis.Client) error) error {
	r := c.raft()
	if r == nil {
		return errors.New(command.ErrClusterNoLeader)
	}
	// Just after a start or an election the leader may be unknown for a
	// few heartbeats.
	_, id := r.LeaderWithID()
	for deadline := time.Now().Add(5 * c.raftConfig().ElectionTimeout); id == "" && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		_, id = r.LeaderWithID()
	}
	c.fsm.mu.Lock()
	n := c.fsm.st.Nodes[string(id)]
	var ip string
	var port int
	if n != nil {
		ip, port = n.IP, n.Port
	}
	c.fsm.mu.Unlock()
	if id == "" || n == nil {
		return errors.New(command.ErrClusterNoLeader)
	}
	if ip == "" {
		ip = "127.0.0.1"
	}
	rdb := c.client(ip, port)
	defer rdb.Close()
	return redisErr(fn(context.Background(), rdb))
}

// redisErr turns a RESP error reply into an error whose text is the
// reply's, and a failed connection into a Redis-style error.
func redisErr(err error) error {
	if err == nil {
		return nil
	}
	var re redis.Error
	if errors.As(err, &re) {
		return errors.New(re.Error())
	}
	return fmt.Errorf("ERR cannot reach the node: %v", err)
}

// ApplyForwarded applies an entry another node sent (CLUSTER
// RATEKV-APPLY) and returns its log index.
func (c *Control) ApplyForwarded(data []byte) (int64, error) {
	var e Entry
	if err := json.Unmarshal(data, &e); err != nil {
		return 0, fmt.Errorf("ERR bad cluster entry: %v", err)
	}
	r := c.raft()
	if r == nil || r.State() != raft.Leader {
		return 0, errRetry
	}
	data, _ = json.Marshal(e)
	idx, err := c.applyData(r, data)
	return int64(idx), err
}

// publish runs on every applied change (fsm.mu held): the request path's
// new slot table, and this node's replication role.
func (c *Control) publish(s *State, self string) {
	n := s.Nodes[self]
	if n == nil {
		return // a join's first entries: keep serving the old topology
	}
	c.o.Engine.SetSlotTable(s.Table(self))
	if p := s.Nodes[n.Primary]; n.Primary != "" && p != nil {
		ip := p.IP
		if ip == "" {
			ip = "127.0.0.1"
		}
		c.o.Engine.FollowPrimary(ip, p.Port)
	} else {
		c.o.Engine.FollowPrimary("", 0)
	}
}

// fsm is the raft.FSM: the State this node applied.
type fsm struct {
	mu      sync.Mutex
	st      *State
	self    string
	last    Node // this node's record as last applied (it stays when others forget it)
	publish func(*State, string)
}

func (f *fsm) selfID() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.self
}

// Apply applies one committed entry; its error is the proposer's reply.
func (f *fsm) Apply(l *raft.Log) any {
	var e Entry
	if err := json.Unmarshal(l.Data, &e); err != nil {
		return fmt.Errorf("ERR bad cluster entry: %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.st.Apply(e); err != nil {
		return err
	}
	f.published()
	return nil
}

// published publishes the state and remembers this node's record.
// Requires f.mu.
func (f *fsm) published() {
	if n := f.st.Nodes[f.self]; n != nil {
		f.last = *n
	}
	f.publish(f.st, f.self)
}

// Snapshot captures the state (raft calls it between Applies).
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := f.st.Marshal()
	if err != nil {
		return nil, err
	}
	return fsmSnapshot(b), nil
}

// maxSnapshot bounds what Restore reads: a topology of thousands of
// nodes is far smaller.
const maxSnapshot = 64 << 20

// Restore replaces the state with a snapshot's.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxSnapshot+1))
	if err != nil {
		return err
	}
	if len(b) > maxSnapshot {
		return errors.New("cluster snapshot: too large")
	}
	st, err := Unmarshal(b)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.st = st
	f.published()
	return nil
}

type fsmSnapshot []byte

func (s fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s fsmSnapshot) Release() {}
