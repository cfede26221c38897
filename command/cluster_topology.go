package command

// The CLUSTER subcommands that change a multi-node cluster's topology, and
// the replies that describe it from the published SlotTable (every node
// answers from its applied copy, so all agree once an entry commits).
//
// A change waits for the Raft group (ClusterControl), so its handler
// blocks the client (as WAIT does) and runs the change on a goroutine of
// its own: the shard locks the CLUSTER container holds are released, and
// the other clients go on.

import (
	"fmt"
	"net"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/internal/redisnum"
	"github.com/ratekv/ratekv/shards"
)

func init() {
	const cl = "cluster"
	const admin = FlagAdmin | FlagStale | FlagNoScript
	sub := func(name string, arity int, h func(*Client, [][]byte), summary string) *Command {
		return &Command{Name: "cluster|" + name, Arity: arity, Flags: admin, Handler: clusterOnly(h), Summary: summary, Group: cl}
	}
	registerSubcommands("cluster",
		sub("meet", -4, cmdClusterMeet, "Forces a node to handshake with another node."),
		sub("addslots", -3, cmdClusterAddslots, "Assigns new hash slots to a node."),
		sub("addslotsrange", -4, cmdClusterAddslots, "Assigns new hash slot ranges to a node."),
		sub("delslots", -3, cmdClusterAddslots, "Sets hash slots as unbound for a node."),
		sub("delslotsrange", -4, cmdClusterAddslots, "Sets hash slot ranges as unbound for a node."),
		sub("set-config-epoch", 3, cmdClusterSetConfigEpoch, "Sets the configuration epoch for a new node."),
		sub("forget", 3, cmdClusterForget, "Removes a node from the nodes table."),
		sub("reset", -2, cmdClusterReset, "Resets a node."),
		sub("replicate", 3, cmdClusterReplicate, "Configure a node as replica of a master node."),
		sub("failover", -2, cmdClusterFailover, "Forces a replica to perform a manual failover of its master."),
		sub("replicas", 3, cmdClusterReplicas, "Lists the replica nodes of a master node."),
		sub("slaves", 3, cmdClusterReplicas, "Lists the replica nodes of a master node."),
		sub("count-failure-reports", 3, cmdClusterCountFailureReports, "Returns the number of active failure reports active for a node."),
		// What the nodes send each other (cluster/control.go).
		sub("ratekv-join", 3, cmdClusterRatekvJoin, "Internal: adds the node described to the cluster (sent by CLUSTER MEET)."),
		sub("ratekv-meetback", 5, cmdClusterRatekvMeetback, "Internal: asks a node alone to join the sender's cluster."),
		sub("ratekv-apply", 3, cmdClusterRatekvApply, "Internal: applies a topology entry on the Raft leader."),
		sub("ratekv-forget", 3, cmdClusterRatekvForget, "Internal: removes a node, on the Raft leader."),
	)
}

// control returns the cluster's control plane, or replies that there is
// none and returns nil.
func (c *Client) control() ClusterControl {
	ctl := c.eng.clusterCtl
	if ctl == nil {
		c.WriteError(errClusterNoControl)
	}
	return ctl
}

// await runs fn without holding up the other clients: the client waits
// (Blocked) until fn is done, then gets OK or fn's error, a Redis error
// line. Inside MULTI or a script, fn runs at once.
func (c *Client) await(fn func() error) {
	c.awaitReply(func() func(*Client) {
		err := fn()
		return func(c *Client) {
			if err != nil {
				c.WriteError(err.Error())
			} else {
				c.WriteOK()
			}
		}
	})
}

// awaitReply is await with the reply fn returns.
func (c *Client) awaitReply(fn func() func(*Client)) {
	if c.inExec || c.Peer == nil {
		fn()(c)
		return
	}
	w := &waitReq{c: c, done: make(chan struct{})}
	c.wait = w
	go func() {
		defer func() {
			if r := recover(); r != nil {
				c.eng.log.Error("panic in a cluster topology change", "id", c.ID, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
				w.reply = func(c *Client) { c.WriteError(fmt.Sprintf(errPanic, "cluster")) }
				close(w.done)
				if p := c.Peer; p != nil {
					p.Wake()
				}
			}
		}()
		w.reply = fn()
		close(w.done)
		if p := c.Peer; p != nil {
			p.Wake()
		}
	}()
}

// CLUSTER MEET ip port [bus-port]
func cmdClusterMeet(c *Client, args [][]byte) {
	if len(args) > 5 {
		c.WriteError(errSyntax)
		return
	}
	port, ok := redisnum.ParseInt(args[3])
	if !ok {
		c.WriteError(fmt.Sprintf(ErrInvalidBasePort, args[3]))
		return
	}
	bus := port + 10000
	if len(args) == 5 {
		if bus, ok = redisnum.ParseInt(args[4]); !ok {
			c.WriteError(fmt.Sprintf(ErrInvalidBusPort, args[4]))
			return
		}
	}
	ip := net.ParseIP(string(args[2]))
	if ip == nil || port <= 0 || port > 65535 || bus <= 0 || bus > 65535 {
		c.WriteError(fmt.Sprintf(ErrInvalidNodeAddr, args[2], args[3]))
		return
	}
	if ctl := c.control(); ctl != nil {
		c.await(func() error { return ctl.Meet(ip.String(), int(port), int(bus)) })
	}
}

// parseSlotArgs parses ADDSLOTS/DELSLOTS slot ... or the RANGE forms'
// start end ... pairs, as Redis's getSlotOrReply.
func parseSlotArgs(c *Client, args [][]byte, ranges bool) ([]uint16, bool) {
	if ranges && len(args)%2 != 0 {
		c.WriteError(fmt.Sprintf(errWrongArgs, "cluster|"+strings.ToLower(string(args[1]))))
		return nil, false
	}
	var out []uint16
	parse := func(a []byte) (int, bool) {
		n, ok := redisnum.ParseInt(a)
		if !ok || n < 0 || n >= shards.NumSlots {
			c.WriteError(ErrSlotOutOfRange)
			return 0, false
		}
		return int(n), true
	}
	for i := 2; i < len(args); i++ {
		from, ok := parse(args[i])
		if !ok {
			return nil, false
		}
		to := from
		if ranges {
			i++
			if to, ok = parse(args[i]); !ok {
				return nil, false
			}
			if from > to {
				c.WriteError(fmt.Sprintf(ErrSlotRangeOrder, from, to))
				return nil, false
			}
		}
		for s := from; s <= to; s++ {
			out = append(out, uint16(s))
		}
	}
	return out, true
}

// CLUSTER ADDSLOTS slot [slot ...] (and ADDSLOTSRANGE, DELSLOTS,
// DELSLOTSRANGE)
func cmdClusterAddslots(c *Client, args [][]byte) {
	sub := strings.ToLower(string(args[1]))
	slots, ok := parseSlotArgs(c, args, strings.HasSuffix(sub, "range"))
	if !ok {
		return
	}
	ctl := c.control()
	if ctl == nil {
		return
	}
	if strings.HasPrefix(sub, "del") {
		c.await(func() error { return ctl.DelSlots(slots) })
	} else {
		c.await(func() error { return ctl.AddSlots(slots) })
	}
}

// CLUSTER SET-CONFIG-EPOCH epoch
func cmdClusterSetConfigEpoch(c *Client, args [][]byte) {
	n, ok := redisnum.ParseInt(args[2])
	if !ok {
		c.WriteError(errNotInt)
		return
	}
	if n < 0 {
		c.WriteError(fmt.Sprintf(ErrConfigEpochInvalid, args[2]))
		return
	}
	if ctl := c.control(); ctl != nil {
		c.await(func() error { return ctl.SetConfigEpoch(uint64(n)) })
	}
}

// CLUSTER FORGET node-id
func cmdClusterForget(c *Client, args [][]byte) {
	id := string(args[2])
	if ctl := c.control(); ctl != nil {
		c.await(func() error { return ctl.Forget(id) })
	}
}

// CLUSTER RESET [HARD|SOFT]
func cmdClusterReset(c *Client, args [][]byte) {
	hard := false
	switch {
	case len(args) == 3 && strings.EqualFold(string(args[2]), "hard"):
		hard = true
	case len(args) == 3 && strings.EqualFold(string(args[2]), "soft"):
	case len(args) != 2:
		c.WriteError(errSyntax)
		return
	}
	if c.eng.clusterRole() == "" && c.eng.store.Len() != 0 {
		c.WriteError(errClusterResetKeys)
		return
	}
	if ctl := c.control(); ctl != nil {
		c.await(func() error { return ctl.Reset(hard) })
	}
}

// clusterRole returns this node's primary's id in the published
// topology ("" for a primary or without a table).
func (e *Engine) clusterRole() string {
	if t := e.SlotTable(); t != nil {
		return t.Nodes[t.Self].Primary
	}
	return ""
}

// nodeIndex returns the index of node id in t, or -1.
func (t *SlotTable) nodeIndex(id string) int {
	for i := range t.Nodes {
		if t.Nodes[i].ID == id {
			return i
		}
	}
	return -1
}

// CLUSTER REPLICATE node-id
func cmdClusterReplicate(c *Client, args [][]byte) {
	id := string(args[2])
	if t := c.eng.SlotTable(); t != nil {
		i := t.nodeIndex(id)
		switch {
		case i < 0:
			c.WriteError(fmt.Sprintf(ErrUnknownNode, id))
			return
		case i == int(t.Self):
			c.WriteError(ErrReplicateMyself)
			return
		case t.Nodes[i].Primary != "":
			c.WriteError(ErrReplicateReplica)
			return
		}
	}
	if c.eng.clusterRole() == "" && c.eng.store.Len() != 0 {
		c.WriteError(ErrReplicateNotEmpty)
		return
	}
	if ctl := c.control(); ctl != nil {
		c.await(func() error { return ctl.Replicate(id) })
	}
}

// CLUSTER FAILOVER [FORCE|TAKEOVER]
//
// The promotion is one Raft entry: every node applies it at once. The
// plain form first pauses the primary's writes and waits until this
// replica has them all; FORCE and TAKEOVER (which in Redis skip the old
// primary's agreement, or also the other nodes' votes) promote at once.
func cmdClusterFailover(c *Client, args [][]byte) {
	if len(args) > 3 || len(args) == 3 && !strings.EqualFold(string(args[2]), "force") && !strings.EqualFold(string(args[2]), "takeover") {
		c.WriteError(errSyntax)
		return
	}
	if c.eng.clusterRole() == "" {
		c.WriteError(ErrFailoverMaster)
		return
	}
	force := len(args) == 3
	if ctl := c.control(); ctl != nil {
		c.await(func() error { return ctl.Failover(force) })
	}
}

// CLUSTER REPLICAS node-id
func cmdClusterReplicas(c *Client, args [][]byte) {
	t := c.eng.SlotTable()
	id := string(args[2])
	i := -1
	if t != nil {
		i = t.nodeIndex(id)
	} else if id == c.eng.node.Load().ID {
		c.WriteArray(0) // the one node: a primary without replicas
		return
	}
	if i < 0 {
		c.WriteError(fmt.Sprintf(ErrUnknownNode, id))
		return
	}
	if t.Nodes[i].Primary != "" {
		c.WriteError(ErrNotMaster)
		return
	}
	var lines []string
	for j := range t.Nodes {
		if t.Nodes[j].Primary == id {
			lines = append(lines, c.nodeLine(t, j, nil)) // a replica serves no slot
		}
	}
	c.WriteArray(len(lines))
	for _, l := range lines {
		c.WriteBulkString(l)
	}
}

// CLUSTER COUNT-FAILURE-REPORTS node-id
//
// ratekv's nodes send no failure reports: the Raft leader alone decides
// that a node failed (Fail in the topology), so the count is 0.
func cmdClusterCountFailureReports(c *Client, args [][]byte) {
	id := string(args[2])
	if t := c.eng.SlotTable(); t != nil && t.nodeIndex(id) >= 0 || t == nil && id == c.eng.node.Load().ID {
		c.WriteInt(0)
		return
	}
	c.WriteError(fmt.Sprintf(ErrUnknownNode, id))
}

// CLUSTER RATEKV-JOIN request
func cmdClusterRatekvJoin(c *Client, args [][]byte) {
	req := append([]byte(nil), args[2]...)
	if ctl := c.control(); ctl != nil {
		c.await(func() error { return ctl.Join(req) })
	}
}

// CLUSTER RATEKV-MEETBACK ip port bus-port
func cmdClusterRatekvMeetback(c *Client, args [][]byte) {
	port, ok1 := redisnum.ParseInt(args[3])
	bus, ok2 := redisnum.ParseInt(args[4])
	ip := net.ParseIP(string(args[2]))
	if !ok1 || !ok2 || ip == nil {
		c.WriteError(fmt.Sprintf(ErrInvalidNodeAddr, args[2], args[3]))
		return
	}
	if ctl := c.control(); ctl != nil {
		c.await(func() error { return ctl.MeetBack(ip.String(), int(port), int(bus)) })
	}
}

// CLUSTER RATEKV-APPLY entry: replies with the entry's log index.
func cmdClusterRatekvApply(c *Client, args [][]byte) {
	ctl := c.control()
	if ctl == nil {
		return
	}
	entry := append([]byte(nil), args[2]...)
	c.awaitReply(func() func(*Client) {
		idx, err := ctl.ApplyForwarded(entry)
		return func(c *Client) {
			if err != nil {
				c.WriteError(err.Error())
			} else {
				c.WriteInt(idx)
			}
		}
	})
}

// CLUSTER RATEKV-FORGET node-id
func cmdClusterRatekvForget(c *Client, args [][]byte) {
	id := string(args[2])
	if ctl := c.control(); ctl != nil {
		c.await(func() error { return ctl.ForgetForwarded(id) })
	}
}

// The replies from the table.

// selfAddr is the address of node i of t as clients are told: its own,
// or for this node without one, what announced says.
func (c *Client) nodeAddr(t *SlotTable, i int) (ip string, port int64, hostname string) {
	n := &t.Nodes[i]
	ip, port, hostname = n.IP, int64(n.Port), n.Hostname
	if i == int(t.Self) {
		aip, aport, ahost := c.announced()
		if c.eng.cfg.String(config.ClusterAnnounceIP) != "" || ip == "" {
			ip = aip
		}
		if c.eng.cfg.Int(config.ClusterAnnouncePort) != 0 || port == 0 {
			port = aport
		}
		if ahost != "" {
			hostname = ahost
		}
	}
	return ip, port, hostname
}

// slotRanges returns the ranges of slots each node of t serves, by node
// index, in one pass over the slots: CLUSTER NODES and SHARDS cost the
// same for a node however many nodes the cluster has.
func (t *SlotTable) slotRanges() [][][2]int {
	out := make([][][2]int, len(t.Nodes))
	for s := 0; s < shards.NumSlots; s++ {
		i := t.Owner[s]
		if i < 0 {
			continue
		}
		if r := out[i]; len(r) > 0 && r[len(r)-1][1] == s-1 {
			r[len(r)-1][1] = s
		} else {
			out[i] = append(r, [2]int{s, s})
		}
	}
	return out
}

// nodeLine is node i's line of CLUSTER NODES, without the newline.
func (c *Client) nodeLine(t *SlotTable, i int, ranges [][2]int) string {
	n := &t.Nodes[i]
	ip, port, hostname := c.nodeAddr(t, i)
	var b strings.Builder
	b.WriteString(n.ID + " " + ip + ":" + strconv.FormatInt(port, 10) + "@" + strconv.Itoa(n.BusPort))
	if hostname != "" {
		b.WriteString("," + hostname)
	}
	b.WriteByte(' ')
	if i == int(t.Self) {
		b.WriteString("myself,")
	}
	primary := "-"
	if n.Primary != "" {
		b.WriteString("slave")
		primary = n.Primary
	} else {
		b.WriteString("master")
	}
	if n.Fail {
		b.WriteString(",fail")
	}
	pong, link := "0", "connected"
	if i != int(t.Self) && !n.Fail {
		pong = strconv.FormatInt(time.Now().UnixMilli(), 10)
	}
	if n.Fail {
		link = "disconnected"
	}
	b.WriteString(" " + primary + " 0 " + pong + " " + strconv.FormatUint(n.ConfigEpoch, 10) + " " + link)
	for _, r := range ranges {
		b.WriteByte(' ')
		b.WriteString(strconv.Itoa(r[0]))
		if r[1] != r[0] {
			b.WriteString("-" + strconv.Itoa(r[1]))
		}
	}
	return b.String()
}

// writeTableNodes answers CLUSTER NODES from t.
func (c *Client) writeTableNodes(t *SlotTable) {
	var b strings.Builder
	ranges := t.slotRanges()
	for i := range t.Nodes {
		b.WriteString(c.nodeLine(t, i, ranges[i]))
		if i == int(t.Self) {
			b.Write(c.eng.AppendSlotMigrations(nil)) // [slot->-id], [slot-<-id]
		}
		b.WriteByte('\n')
	}
	c.WriteVerbatim(b.String())
}

// writeTableInfo answers CLUSTER INFO from t.
func (c *Client) writeTableInfo(t *SlotTable) {
	assigned, failed := 0, 0
	size := map[int32]bool{}
	for _, o := range t.Owner {
		if o < 0 {
			continue
		}
		assigned++
		size[o] = true
		if t.Nodes[o].Fail {
			failed++
		}
	}
	state := "ok"
	if c.eng.rt.down.Load() {
		state = "fail"
	}
	my := t.Nodes[t.Self].ConfigEpoch
	leader, topology := "", "frozen"
	if ctl := c.eng.clusterCtl; ctl != nil {
		if leader = ctl.Leader(); leader != "" {
			topology = "ok"
		}
	}
	var b strings.Builder
	for _, f := range [][2]string{
		{"cluster_state", state},
		{"cluster_slots_assigned", strconv.Itoa(assigned)},
		{"cluster_slots_ok", strconv.Itoa(assigned - failed)},
		{"cluster_slots_pfail", "0"},
		{"cluster_slots_fail", strconv.Itoa(failed)},
		{"cluster_known_nodes", strconv.Itoa(len(t.Nodes))},
		{"cluster_size", strconv.Itoa(len(size))},
		{"cluster_current_epoch", strconv.FormatUint(t.Epoch, 10)},
		{"cluster_my_epoch", strconv.FormatUint(my, 10)},
		{"cluster_stats_messages_sent", "0"},
		{"cluster_stats_messages_received", "0"},
		{"total_cluster_links_buffer_limit_exceeded", "0"},
		// ratekv's: whether the topology can change (its Raft group has
		// a leader), and which node leads it.
		{"ratekv_topology", topology},
		{"ratekv_topology_leader", leader},
	} {
		b.WriteString(f[0] + ":" + f[1] + "\r\n")
	}
	c.WriteVerbatim(b.String())
}

// writeSlotNode writes one node of a CLUSTER SLOTS range.
func (c *Client) writeSlotNode(t *SlotTable, i int) {
	ip, port, hostname := c.nodeAddr(t, i)
	c.WriteArray(4)
	c.WriteBulkString(ip)
	c.WriteInt(port)
	c.WriteBulkString(t.Nodes[i].ID)
	if hostname == "" {
		c.WriteMap(0)
		return
	}
	c.WriteMap(1)
	c.WriteBulkString("hostname")
	c.WriteBulkString(hostname)
}

// replicasOf returns the indexes of the replicas of node i that are up.
func (t *SlotTable) replicasOf(i int) []int {
	var out []int
	for j := range t.Nodes {
		if t.Nodes[j].Primary == t.Nodes[i].ID && !t.Nodes[j].Fail {
			out = append(out, j)
		}
	}
	return out
}

// writeTableSlots answers CLUSTER SLOTS from t: each range of slots one
// primary serves, with its replicas.
func (c *Client) writeTableSlots(t *SlotTable) {
	type run struct{ from, to, node int }
	var runs []run
	for s := 0; s < shards.NumSlots; s++ {
		o := int(t.Owner[s])
		if o < 0 {
			continue
		}
		if n := len(runs); n > 0 && runs[n-1].node == o && runs[n-1].to == s-1 {
			runs[n-1].to = s
		} else {
			runs = append(runs, run{s, s, o})
		}
	}
	c.WriteArray(len(runs))
	for _, r := range runs {
		reps := t.replicasOf(r.node)
		c.WriteArray(3 + len(reps))
		c.WriteInt(int64(r.from))
		c.WriteInt(int64(r.to))
		c.writeSlotNode(t, r.node)
		for _, j := range reps {
			c.writeSlotNode(t, j)
		}
	}
}

// writeTableShards answers CLUSTER SHARDS from t: each primary with its
// slots and its replicas.
func (c *Client) writeTableShards(t *SlotTable) {
	var primaries []int
	for i := range t.Nodes {
		if t.Nodes[i].Primary == "" {
			primaries = append(primaries, i)
		}
	}
	all := t.slotRanges()
	c.WriteArray(len(primaries))
	for _, p := range primaries {
		c.WriteMap(2)
		c.WriteBulkString("slots")
		ranges := all[p]
		c.WriteArray(2 * len(ranges))
		for _, r := range ranges {
			c.WriteInt(int64(r[0]))
			c.WriteInt(int64(r[1]))
		}
		c.WriteBulkString("nodes")
		nodes := []int{p}
		for j := range t.Nodes {
			if t.Nodes[j].Primary == t.Nodes[p].ID {
				nodes = append(nodes, j)
			}
		}
		c.WriteArray(len(nodes))
		for _, i := range nodes {
			c.writeShardNode(c.tableShardNode(t, i))
		}
	}
}

// shardNode is one node of CLUSTER SHARDS.
type shardNode struct {
	id, ip, hostname, role, health string
	port, tlsPort, offset          int64
}

// writeShardNode writes one node of CLUSTER SHARDS.
func (c *Client) writeShardNode(n shardNode) {
	fields := 7
	if n.hostname != "" {
		fields++
	}
	if n.tlsPort != 0 {
		fields++
	}
	c.WriteMap(fields)
	c.WriteBulkString("id")
	c.WriteBulkString(n.id)
	c.WriteBulkString("port")
	c.WriteInt(n.port)
	if n.tlsPort != 0 {
		c.WriteBulkString("tls-port")
		c.WriteInt(n.tlsPort)
	}
	c.WriteBulkString("ip")
	c.WriteBulkString(n.ip)
	c.WriteBulkString("endpoint")
	c.WriteBulkString(n.ip)
	if n.hostname != "" {
		c.WriteBulkString("hostname")
		c.WriteBulkString(n.hostname)
	}
	c.WriteBulkString("role")
	c.WriteBulkString(n.role)
	c.WriteBulkString("replication-offset")
	c.WriteInt(n.offset)
	c.WriteBulkString("health")
	c.WriteBulkString(n.health)
}

// tableShardNode is node i of t for CLUSTER SHARDS.
func (c *Client) tableShardNode(t *SlotTable, i int) shardNode {
	n := &t.Nodes[i]
	ip, port, hostname := c.nodeAddr(t, i)
	sn := shardNode{id: n.ID, ip: ip, port: port, hostname: hostname, tlsPort: int64(n.TLSPort), role: "master", health: "online"}
	if n.Primary != "" {
		sn.role = "replica"
	}
	if n.Fail {
		sn.health = "fail"
	}
	if i == int(t.Self) {
		sn.offset = c.eng.replOffset()
	}
	return sn
}
