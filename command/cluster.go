package command

// Cluster mode (cluster-enabled yes): ratekv answers as a Redis Cluster of
// one node that owns all 16384 hash slots, so that cluster clients (go-redis
// ClusterClient, redis-py RedisCluster, ioredis Cluster, redis-cli -c) work
// unchanged. The keyspace is routed by the same hash slots already
// (shards.KeySlot); what cluster mode adds is the CLUSTER replies, and
// Redis Cluster's refusals: keys of one request in different slots
// (CROSSSLOT, getNodeByQuery in Redis's cluster.c), SELECT other than 0.
//
// The CROSSSLOT check costs only the commands that can name several keys:
// register marks them flagSlots, and the dispatcher looks at them only
// when the engine routes that flag (routeState.routes; EXEC included,
// which checks its whole queue). A multi-node table routes every command
// with keys instead (cluster_route.go).
//
// The node's id and configuration epoch are made once and kept in the data
// directory by main (internal/nodeid); an engine without one (tests) makes
// a random id. Clients are told the address they connected to, unless
// cluster-announce-ip, -port or -hostname say otherwise.

import (
	"net"
	"strconv"
	"strings"

	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/internal/nodeid"
	"github.com/ratekv/ratekv/internal/redisnum"
	"github.com/ratekv/ratekv/shards"
)

func init() {
	register(
		// Every shard is held for CLUSTER (COUNTKEYSINSLOT and
		// GETKEYSINSLOT read one; the others are rare: a client asks
		// for the slots at start and after a redirection).
		&Command{Name: "cluster", Arity: -2, Flags: FlagAllShards, Handler: cmdCluster,
			Summary: "A container for Redis Cluster commands.", Group: "cluster"},
		&Command{Name: "asking", Arity: 1, Flags: FlagFast, Handler: cmdAsking,
			Summary: "Signals that a cluster client is following an -ASK redirect.", Group: "cluster"},
	)
	const cl = "cluster"
	sub := func(name string, arity int, flags Flag, h func(*Client, [][]byte), summary string) *Command {
		return &Command{Name: "cluster|" + name, Arity: arity, Flags: flags, Handler: h, Summary: summary, Group: cl}
	}
	registerSubcommands("cluster",
		sub("keyslot", 3, FlagStale, cmdClusterKeyslot, "Returns the hash slot for a key."),
		sub("help", 2, FlagLoading|FlagStale, cmdClusterHelp, "Returns helpful text about the different subcommands."),
		sub("info", 2, FlagStale, clusterOnly(cmdClusterInfo), "Returns information about the state of a node."),
		sub("myid", 2, FlagStale, clusterOnly(cmdClusterMyid), "Returns the ID of a node."),
		sub("nodes", 2, FlagStale, clusterOnly(cmdClusterNodes), "Returns the cluster configuration for a node."),
		sub("slots", 2, FlagStale|FlagLoading, clusterOnly(cmdClusterSlots), "Returns the mapping of cluster slots to nodes."),
		sub("shards", 2, FlagStale|FlagLoading, clusterOnly(cmdClusterShards), "Returns the mapping of cluster slots to shards."),
		sub("links", 2, FlagStale, clusterOnly(cmdClusterLinks), "Returns a list of all TCP links to and from peer nodes."),
		sub("countkeysinslot", 3, FlagStale|FlagAllShards, clusterOnly(cmdClusterCountkeysinslot), "Returns the number of keys in a hash slot."),
		sub("getkeysinslot", 4, FlagStale|FlagAllShards, clusterOnly(cmdClusterGetkeysinslot), "Returns the key names in a hash slot."),
	)
}

// markSlotChecked sets flagSlots on a table entry that can name keys of
// several slots: a key range, movable keys, or EXEC (its queue); and
// flagRouted on every entry with keys, and EXEC.
func markSlotChecked(c *Command) {
	if c.Keys != nil || c.FirstKey > 0 && c.LastKey != c.FirstKey || c.Name == "exec" {
		c.Flags |= flagSlots
	}
	if c.Keys != nil || c.FirstKey > 0 || c.Name == "exec" {
		c.Flags |= flagRouted
	}
}

// clusterOnly wraps the handler of a subcommand that a server outside
// cluster mode refuses, as Redis does.
func clusterOnly(h func(*Client, [][]byte)) func(*Client, [][]byte) {
	return func(c *Client, args [][]byte) {
		if !c.eng.cluster {
			c.WriteError(errClusterDisabled)
			return
		}
		h(c, args)
	}
}

// SetNode sets the cluster node's identity (main loads it from the data
// directory). Outside cluster mode it is not used.
func (e *Engine) SetNode(id nodeid.Identity) { e.node.Store(&id) }

// initCluster reads cluster-enabled, which cannot change while running,
// and gives a cluster node a fresh identity until SetNode.
func (e *Engine) initCluster() {
	e.cluster = e.cfg.Bool(config.ClusterEnabled)
	if e.cluster {
		e.SetNode(nodeid.New())
	}
	e.setRoutes(nil)
	e.cfg.OnChange(config.ClusterRequireFullCoverage, func(string) { e.updateDown() })
}

// crossSlot reports whether the keys cmd names in args (or, for EXEC,
// the keys of every queued command) lie in more than one hash slot.
func (c *Client) crossSlot(cmd *Command, args [][]byte) bool {
	if cmd.Name == "exec" {
		return c.txCrossSlot()
	}
	c.keyBuf = cmd.keyIndexes(args, c.keyBuf[:0])
	return keysCrossSlot(args, c.keyBuf, -1) == -2
}

// keysCrossSlot returns the one slot of the keys at idx in args, given
// slot, the slot keys seen before had (-1: none); -1 when there are none
// at all, -2 when they span slots.
func keysCrossSlot(args [][]byte, idx []int, slot int) int {
	for _, i := range idx {
		s := int(shards.KeySlot(args[i]))
		if slot >= 0 && s != slot {
			return -2
		}
		slot = s
	}
	return slot
}

// txCrossSlot reports whether the queued commands of the client's open
// transaction name keys of more than one slot, as Redis checks EXEC.
func (c *Client) txCrossSlot() bool {
	tx := &c.tx
	if !tx.active {
		return false
	}
	tx.sliceArgs()
	slot, first := -1, 0
	for i, cmd := range tx.cmds {
		cargs := tx.args[first : first+tx.nargs[i]]
		first += tx.nargs[i]
		c.keyBuf = cmd.keyIndexes(cargs, c.keyBuf[:0])
		if slot = keysCrossSlot(cargs, c.keyBuf, slot); slot == -2 {
			return true
		}
	}
	return false
}

// refuseCrossSlot answers a request whose keys span slots.
func (c *Client) refuseCrossSlot(cmd *Command) { c.refuseRouted(cmd, errCrossSlot) }

// refuseRouted answers a request cluster mode refuses (CROSSSLOT, MOVED,
// ASK, …) with msg: EXEC discards its transaction (Redis's
// discardTransaction), anything else inside MULTI makes EXEC abort.
func (c *Client) refuseRouted(cmd *Command, msg string) {
	cmd.rejected.Add(1)
	if cmd.Name == "exec" {
		c.tx.reset()
		c.unwatchAll()
	} else {
		c.flagTx()
	}
	c.WriteError(msg)
}

// ASKING
func cmdAsking(c *Client, args [][]byte) {
	if !c.eng.cluster {
		c.WriteError(errClusterDisabled)
		return
	}
	c.asking = true
	c.WriteOK()
}

// CLUSTER subcommand [argument ...]
func cmdCluster(c *Client, args [][]byte) { runSubcommand(c, "cluster", args) }

// CLUSTER KEYSLOT key
func cmdClusterKeyslot(c *Client, args [][]byte) { c.WriteInt(int64(shards.KeySlot(args[2]))) }

// CLUSTER HELP
func cmdClusterHelp(c *Client, args [][]byte) {
	c.writeHelp(args[0], []string{
		"ADDSLOTS <slot> [<slot> ...]",
		"    Assign slots to current node.",
		"ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
		"    Assign slots which are between <start-slot> and <end-slot> to current node.",
		"COUNT-FAILURE-REPORTS <node-id>",
		"    Return number of failure reports for <node-id>.",
		"COUNTKEYSINSLOT <slot>",
		"    Return the number of keys in <slot>.",
		"DELSLOTS <slot> [<slot> ...]",
		"    Delete slots information from current node.",
		"DELSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
		"    Delete slots information which are between <start-slot> and <end-slot> from current node.",
		"FAILOVER [FORCE|TAKEOVER]",
		"    Promote current replica node to being a master.",
		"FORGET <node-id>",
		"    Remove a node from the cluster.",
		"GETKEYSINSLOT <slot> <count>",
		"    Return key names stored by current node in a slot.",
		"INFO",
		"    Return information about the cluster.",
		"KEYSLOT <key>",
		"    Return the hash slot for <key>.",
		"LINKS",
		"    Return information about all network links between this node and its peers.",
		"MEET <ip> <port> [<bus-port>]",
		"    Connect nodes into a working cluster.",
		"MYID",
		"    Return the node id.",
		"NODES",
		"    Return cluster configuration seen by node. Output format:",
		"    <id> <ip:port@bus-port[,hostname]> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
		"REPLICATE <node-id>",
		"    Configure current node as replica to <node-id>.",
		"RESET [HARD|SOFT]",
		"    Reset current node (default: soft).",
		"SET-CONFIG-EPOCH <epoch>",
		"    Set config epoch of current node.",
		"SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE <node-id>)",
		"    Set slot state.",
		"SHARDS",
		"    Return information about slot range mappings and the nodes associated with them.",
		"SLOTS",
		"    Return information about slots range mappings. Each range is made of:",
		"    start, end, master and replicas IP addresses, ports and ids",
		"REPLICAS <node-id>",
		"    Return <node-id> replicas.",
		"(The topology of several nodes is held in Raft among them: see docs/cluster.md.)",
	})
}

// announced is the address, port and hostname a cluster client is told
// for this node: cluster-announce-* when set, else the address and port
// the client connected to.
func (c *Client) announced() (ip string, port int64, hostname string) {
	cfg := c.eng.cfg
	ip, port, hostname = cfg.String(config.ClusterAnnounceIP), cfg.Int(config.ClusterAnnouncePort), cfg.String(config.ClusterAnnounceHostname)
	host, p, err := net.SplitHostPort(c.LocalAddr)
	if err != nil {
		return ip, port, hostname
	}
	if ip == "" {
		ip = host
	}
	if port == 0 {
		port, _ = strconv.ParseInt(p, 10, 64)
	}
	return ip, port, hostname
}

// CLUSTER INFO
func cmdClusterInfo(c *Client, args [][]byte) {
	if t := c.eng.SlotTable(); t != nil {
		c.writeTableInfo(t)
		return
	}
	epoch := strconv.FormatUint(c.eng.node.Load().ConfigEpoch, 10)
	var b strings.Builder
	for _, f := range [][2]string{
		{"cluster_state", "ok"},
		{"cluster_slots_assigned", "16384"},
		{"cluster_slots_ok", "16384"},
		{"cluster_slots_pfail", "0"},
		{"cluster_slots_fail", "0"},
		{"cluster_known_nodes", "1"},
		{"cluster_size", "1"},
		{"cluster_current_epoch", epoch},
		{"cluster_my_epoch", epoch},
		{"cluster_stats_messages_sent", "0"},
		{"cluster_stats_messages_received", "0"},
		{"total_cluster_links_buffer_limit_exceeded", "0"},
	} {
		b.WriteString(f[0] + ":" + f[1] + "\r\n")
	}
	c.WriteVerbatim(b.String())
}

// CLUSTER MYID
func cmdClusterMyid(c *Client, args [][]byte) {
	if t := c.eng.SlotTable(); t != nil {
		c.WriteBulkString(t.Nodes[t.Self].ID)
		return
	}
	c.WriteBulkString(c.eng.node.Load().ID)
}

// CLUSTER NODES
//
// One line: "<id> <ip>:<port>@<bus-port>[,<hostname>] myself,master - 0 0
// <epoch> connected 0-16383". Without the topology's control plane
// (tests) there is no cluster bus: its port is 0.
func cmdClusterNodes(c *Client, args [][]byte) {
	if t := c.eng.SlotTable(); t != nil {
		c.writeTableNodes(t)
		return
	}
	node := c.eng.node.Load()
	ip, port, hostname := c.announced()
	addr := ip + ":" + strconv.FormatInt(port, 10) + "@" + strconv.FormatInt(c.busPort(), 10)
	if hostname != "" {
		addr += "," + hostname
	}
	c.WriteVerbatim(node.ID + " " + addr + " myself,master - 0 0 " +
		strconv.FormatUint(node.ConfigEpoch, 10) + " connected 0-" + strconv.Itoa(shards.NumSlots-1) +
		string(c.eng.AppendSlotMigrations(nil)) + "\n")
}

// busPort is this node's cluster bus port as the other nodes are told it:
// cluster-announce-bus-port, else cluster-port, else port + 10000; 0
// without a control plane.
func (c *Client) busPort() int64 {
	cfg := c.eng.cfg
	if c.eng.clusterCtl == nil {
		return 0
	}
	if p := cfg.Int(config.ClusterAnnounceBusPort); p != 0 {
		return p
	}
	if p := cfg.Int(config.ClusterPort); p != 0 {
		return p
	}
	_, p, _ := net.SplitHostPort(c.LocalAddr)
	port, _ := strconv.ParseInt(p, 10, 64)
	return port + 10000
}

// CLUSTER SLOTS
func cmdClusterSlots(c *Client, args [][]byte) {
	if t := c.eng.SlotTable(); t != nil {
		c.writeTableSlots(t)
		return
	}
	ip, port, hostname := c.announced()
	c.WriteArray(1)
	c.WriteArray(3)
	c.WriteInt(0)
	c.WriteInt(shards.NumSlots - 1)
	c.WriteArray(4)
	c.WriteBulkString(ip)
	c.WriteInt(port)
	c.WriteBulkString(c.eng.node.Load().ID)
	if hostname == "" {
		c.WriteMap(0)
		return
	}
	c.WriteMap(1)
	c.WriteBulkString("hostname")
	c.WriteBulkString(hostname)
}

// CLUSTER SHARDS
func cmdClusterShards(c *Client, args [][]byte) {
	if t := c.eng.SlotTable(); t != nil {
		c.writeTableShards(t)
		return
	}
	ip, port, hostname := c.announced()
	c.WriteArray(1)
	c.WriteMap(2)
	c.WriteBulkString("slots")
	c.WriteArray(2)
	c.WriteInt(0)
	c.WriteInt(shards.NumSlots - 1)
	c.WriteBulkString("nodes")
	c.WriteArray(1)
	c.writeShardNode(shardNode{id: c.eng.node.Load().ID, ip: ip, port: port, hostname: hostname, role: "master", health: "online"})
}

// CLUSTER LINKS: a node alone has no links to peers.
func cmdClusterLinks(c *Client, args [][]byte) { c.WriteArray(0) }

// parseSlot parses a slot argument as Redis's getSlotOrReply: an integer
// (else errNotInt), in range (else msg); ok false after replying.
func parseSlot(c *Client, arg []byte, msg string) (uint16, bool) {
	n, ok := redisnum.ParseInt(arg)
	if !ok {
		c.WriteError(errNotInt)
		return 0, false
	}
	if n < 0 || n >= shards.NumSlots {
		c.WriteError(msg)
		return 0, false
	}
	return uint16(n), true
}

// CLUSTER COUNTKEYSINSLOT slot
func cmdClusterCountkeysinslot(c *Client, args [][]byte) {
	slot, ok := parseSlot(c, args[2], errInvalidSlot)
	if !ok {
		return
	}
	var n int64
	c.eng.store.EachInSlot(slot, c.nowMs, func([]byte) bool { n++; return true })
	c.WriteInt(n)
}

// CLUSTER GETKEYSINSLOT slot count
func cmdClusterGetkeysinslot(c *Client, args [][]byte) {
	slot, okSlot := redisnum.ParseInt(args[2])
	if !okSlot {
		c.WriteError(errNotInt)
		return
	}
	count, ok := redisnum.ParseInt(args[3])
	if !ok {
		c.WriteError(errNotInt)
		return
	}
	if slot < 0 || slot >= shards.NumSlots || count < 0 {
		c.WriteError(errInvalidSlotOrCount)
		return
	}
	var keys [][]byte
	if count > 0 {
		c.eng.store.EachInSlot(uint16(slot), c.nowMs, func(k []byte) bool {
			keys = append(keys, append([]byte(nil), k...))
			return int64(len(keys)) < count
		})
	}
	c.WriteArray(len(keys))
	for _, k := range keys {
		c.WriteBulk(k)
	}
}
