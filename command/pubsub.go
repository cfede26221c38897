package command

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/internal/glob"
	"github.com/ratekv/ratekv/resp"
)

// Pub/Sub: SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE, their UNSUBSCRIBEs, PUBLISH,
// SPUBLISH and PUBSUB, as Redis 7.0 (pubsub.c). Shard channels are a
// namespace of their own, as in a Redis that is not a cluster.
//
// A message goes to other clients' connections, which other goroutines
// (or event loops) own: PUBLISH appends it to the subscriber's pending
// buffer under the subscriber's lock and wakes its runtime (Peer.Wake),
// which moves the buffer into Out (TakePushes) and writes it. A client
// that publishes to itself (RESP3) gets the message in Out at once, ahead
// of PUBLISH's reply, as in Redis. A subscriber that does not read has its
// pending bytes bounded by client-output-buffer-limit's pubsub class: past
// the hard limit, or past the soft limit for its whole period, it is
// disconnected, as Redis does.

func init() {
	const ps = "pubsub"
	sub := FlagPubSub | FlagNoScript | FlagLoading | FlagStale | FlagSubscribedOK
	register(
		&Command{Name: "subscribe", Arity: -2, Flags: sub, Handler: cmdSubscribe,
			Summary: "Listens for messages published to channels.", Group: ps},
		&Command{Name: "unsubscribe", Arity: -1, Flags: sub, Handler: cmdUnsubscribe,
			Summary: "Stops listening to messages posted to channels.", Group: ps},
		&Command{Name: "psubscribe", Arity: -2, Flags: sub, Handler: cmdPsubscribe,
			Summary: "Listens for messages published to channels that match one or more patterns.", Group: ps},
		&Command{Name: "punsubscribe", Arity: -1, Flags: sub, Handler: cmdPunsubscribe,
			Summary: "Stops listening to messages published to channels that match one or more patterns.", Group: ps},
		&Command{Name: "ssubscribe", Arity: -2, Flags: sub, FirstKey: 1, LastKey: -1, Handler: cmdSsubscribe,
			Summary: "Listens for messages published to shard channels.", Group: ps},
		&Command{Name: "sunsubscribe", Arity: -1, Flags: sub, FirstKey: 1, LastKey: -1, Handler: cmdSunsubscribe,
			Summary: "Stops listening to messages posted to shard channels.", Group: ps},
		&Command{Name: "publish", Arity: 3, Flags: FlagPubSub | FlagLoading | FlagStale | FlagFast, Handler: cmdPublish,
			Summary: "Posts a message to a channel.", Group: ps},
		&Command{Name: "spublish", Arity: 3, Flags: FlagPubSub | FlagLoading | FlagStale | FlagFast, FirstKey: 1, LastKey: 1, Handler: cmdSpublish,
			Summary: "Post a message to a shard channel", Group: ps},
		&Command{Name: "pubsub", Arity: -2, Handler: cmdPubsub,
			Summary: "A container for Pub/Sub commands.", Group: ps},
	)
	info := FlagPubSub | FlagLoading | FlagStale
	registerSubcommands("pubsub",
		&Command{Name: "pubsub|channels", Arity: -2, Flags: info, Handler: cmdPubsubChannels,
			Summary: "Returns the active channels.", Group: ps},
		&Command{Name: "pubsub|numsub", Arity: -2, Flags: info, Handler: cmdPubsubNumsub,
			Summary: "Returns a count of subscribers to channels.", Group: ps},
		&Command{Name: "pubsub|numpat", Arity: 2, Flags: info, Handler: cmdPubsubNumpat,
			Summary: "Returns a count of unique pattern subscriptions.", Group: ps},
		&Command{Name: "pubsub|shardchannels", Arity: -2, Flags: info, Handler: cmdPubsubShardchannels,
			Summary: "Returns the active shard channels.", Group: ps},
		&Command{Name: "pubsub|shardnumsub", Arity: -2, Flags: info, Handler: cmdPubsubShardnumsub,
			Summary: "Returns the count of subscribers of shard channels.", Group: ps},
		&Command{Name: "pubsub|help", Arity: 2, Flags: FlagLoading | FlagStale, Handler: cmdPubsubHelp,
			Summary: "Returns helpful text about the different subcommands.", Group: ps},
	)
}

// subKind is one of the three namespaces a client subscribes in.
type subKind uint8

const (
	subChannel subKind = iota // SUBSCRIBE
	subPattern                // PSUBSCRIBE
	subShard                  // SSUBSCRIBE
)

// The reply names of each kind: subscribed, unsubscribed, message.
var subNames = [3][3]string{
	{"subscribe", "unsubscribe", "message"},
	{"psubscribe", "punsubscribe", "pmessage"},
	{"ssubscribe", "sunsubscribe", "smessage"},
}

// pubsubHub is the server's side of Pub/Sub: who subscribes to what. Safe
// for concurrent use; the zero value is empty and ready.
type pubsubHub struct {
	mu    sync.RWMutex
	subs  [3]map[string]map[*subscriber]struct{} // by kind, name: the subscribers
	limit atomic.Pointer[outputLimit]            // client-output-buffer-limit pubsub
}

// subscriber is a client's side of Pub/Sub, made at its first
// subscription. names and seq belong to the client's goroutine; counts
// are read by others (CLIENT LIST, PUBSUB); mu guards the pending
// messages.
type subscriber struct {
	c      *Client
	names  [3]map[string]uint64 // by kind: name → order of subscription
	seq    uint64
	counts [3]atomic.Int32

	mu      sync.Mutex
	pending []byte // messages published to the client and not yet in Out
	softAt  int64  // store time (ns) the pending bytes passed the soft limit; 0: below it
	dead    bool   // disconnected for its output buffer: nothing more is queued
	queued  atomic.Bool
}

// outputLimit is a client class's client-output-buffer-limit: hard and
// soft bytes (0: none), and how long the soft limit may be exceeded.
type outputLimit struct {
	hard, soft int64
	softNs     int64
}

// outputLimitOf is the outputLimit of a class's configured limit.
func outputLimitOf(l config.OutputLimit) outputLimit {
	return outputLimit{hard: l.Hard, soft: l.Soft, softNs: l.Seconds * 1e9}
}

// channelGate admits the channels (or patterns) args of a Pub/Sub command
// for c before anything changes; it returns the error to reply, or "" to
// go on. nil admits everything: it is where channel permissions (ACL
// rules) plug in.
var channelGate func(c *Client, cmd string, names [][]byte, kind subKind) string

// admitChannels runs channelGate, when set, and replies its refusal.
func (c *Client) admitChannels(cmd string, names [][]byte, kind subKind) bool {
	if channelGate == nil {
		return true
	}
	if msg := channelGate(c, cmd, names, kind); msg != "" {
		c.WriteError(msg)
		return false
	}
	return true
}

// Subscriptions returns how many channels and patterns the client
// subscribes to (CLIENT LIST's sub and psub). Safe from any goroutine.
func (c *Client) Subscriptions() (channels, patterns int) {
	s := c.sub.Load()
	if s == nil {
		return 0, 0
	}
	return int(s.counts[subChannel].Load()), int(s.counts[subPattern].Load())
}

// ShardSubscriptions returns how many shard channels the client subscribes
// to (CLIENT LIST's ssub). Safe from any goroutine.
func (c *Client) ShardSubscriptions() int {
	if s := c.sub.Load(); s != nil {
		return int(s.counts[subShard].Load())
	}
	return 0
}

// PubSub reports whether the client is in Pub/Sub mode: it subscribes to
// something (CLIENT LIST and CLIENT KILL's TYPE pubsub, Redis's
// CLIENT_PUBSUB). Safe from any goroutine.
func (c *Client) PubSub() bool {
	s := c.sub.Load()
	return s != nil && s.total() > 0
}

func (s *subscriber) total() int32 {
	return s.counts[0].Load() + s.counts[1].Load() + s.counts[2].Load()
}

// TakePushes moves the messages published to the client since the last
// call to the end of Out; the runtime calls it before it writes Out.
func (c *Client) TakePushes() {
	s := c.sub.Load()
	if s == nil || !s.queued.Load() {
		return
	}
	s.mu.Lock()
	c.Out = append(c.Out, s.pending...)
	if cap(s.pending) > shrinkAt {
		s.pending = nil
	} else {
		s.pending = s.pending[:0]
	}
	s.softAt = 0
	s.queued.Store(false)
	s.mu.Unlock()
}

// PushesWaiting reports whether messages wait for TakePushes.
func (c *Client) PushesWaiting() bool {
	s := c.sub.Load()
	return s != nil && s.queued.Load()
}

// subscriberOf returns c's subscriber, making it at the first use.
func (c *Client) subscriberOf() *subscriber {
	if s := c.sub.Load(); s != nil {
		return s
	}
	s := &subscriber{c: c}
	c.sub.Store(s)
	return s
}

// subscribe adds c to name of kind and writes the confirmation.
func (c *Client) subscribe(kind subKind, name []byte) {
	s := c.subscriberOf()
	if s.names[kind] == nil {
		s.names[kind] = map[string]uint64{}
	}
	if _, ok := s.names[kind][string(name)]; !ok {
		key := string(name)
		s.seq++
		s.names[kind][key] = s.seq
		h := &c.eng.pubsub
		h.mu.Lock()
		if h.subs[kind] == nil {
			h.subs[kind] = map[string]map[*subscriber]struct{}{}
		}
		set := h.subs[kind][key]
		if set == nil {
			set = map[*subscriber]struct{}{}
			h.subs[kind][key] = set
		}
		set[s] = struct{}{}
		h.mu.Unlock()
		s.counts[kind].Add(1)
	}
	c.writeSubReply(subNames[kind][0], name, true, s.count(kind))
}

// count is the number Redis reports after a (un)subscription of kind:
// channels and patterns together, shard channels apart.
func (s *subscriber) count(kind subKind) int64 {
	if kind == subShard {
		return int64(s.counts[subShard].Load())
	}
	return int64(s.counts[subChannel].Load() + s.counts[subPattern].Load())
}

// unsubscribe removes c from name of kind, writing the confirmation when
// notify is set.
func (c *Client) unsubscribe(kind subKind, name string, notify bool) {
	s := c.subscriberOf()
	if _, ok := s.names[kind][name]; ok {
		delete(s.names[kind], name)
		h := &c.eng.pubsub
		h.mu.Lock()
		if set := h.subs[kind][name]; set != nil {
			delete(set, s)
			if len(set) == 0 {
				delete(h.subs[kind], name)
			}
		}
		h.mu.Unlock()
		s.counts[kind].Add(-1)
	}
	if notify {
		c.writeSubReply(subNames[kind][1], []byte(name), true, s.count(kind))
	}
}

// unsubscribeAll removes c from every name of kind, in the order it
// subscribed, and reports how many there were. With notify and none, it
// still writes one confirmation, with a null name, as Redis does.
func (c *Client) unsubscribeAll(kind subKind, notify bool) int {
	s := c.sub.Load()
	var names []string
	if s != nil {
		names = make([]string, 0, len(s.names[kind]))
		for n := range s.names[kind] {
			names = append(names, n)
		}
		slices.SortFunc(names, func(a, b string) int { return cmp.Compare(s.names[kind][a], s.names[kind][b]) })
	}
	for _, n := range names {
		c.unsubscribe(kind, n, notify)
	}
	if notify && len(names) == 0 {
		var n int64
		if s != nil {
			n = s.count(kind)
		}
		c.writeSubReply(subNames[kind][1], nil, false, n)
	}
	return len(names)
}

// leavePubSub drops every subscription without replies (RESET, and the
// connection's close).
func (c *Client) leavePubSub() {
	if c.sub.Load() == nil {
		return
	}
	for k := range subKind(3) {
		c.unsubscribeAll(k, false)
	}
}

// writeSubReply writes a (un)subscription confirmation: a push in RESP3,
// an array in RESP2.
func (c *Client) writeSubReply(kind string, name []byte, hasName bool, count int64) {
	c.Out = appendPushHeader(c.Out, c.proto, 3)
	c.WriteBulkString(kind)
	if hasName {
		c.WriteBulk(name)
	} else {
		c.WriteNull()
	}
	c.WriteInt(count)
}

func appendPushHeader(dst []byte, proto, n int) []byte {
	if proto == 3 {
		dst = append(dst, '>')
		dst = append(dst, byte('0'+n), '\r', '\n')
		return dst
	}
	return resp.AppendArrayHeader(dst, n)
}

// appendMessage appends a message of kind on channel (matched by pattern
// for subPattern) in protocol proto.
func appendMessage(dst []byte, proto int, kind subKind, pattern, channel, msg []byte) []byte {
	n := 3
	if kind == subPattern {
		n = 4
	}
	dst = appendPushHeader(dst, proto, n)
	dst = resp.AppendBulk(dst, []byte(subNames[kind][2]))
	if kind == subPattern {
		dst = resp.AppendBulk(dst, pattern)
	}
	dst = resp.AppendBulk(dst, channel)
	return resp.AppendBulk(dst, msg)
}

// publish delivers msg on channel to the subscribers of kind (and, for
// channels, of the patterns it matches) and returns how many got it.
func (c *Client) publish(kind subKind, channel, msg []byte) int64 {
	h := &c.eng.pubsub
	var n int64
	h.mu.RLock()
	defer h.mu.RUnlock()
	for s := range h.subs[kind][string(channel)] {
		s.deliver(c, kind, nil, channel, msg)
		n++
	}
	if kind != subChannel {
		return n
	}
	for pat, set := range h.subs[subPattern] {
		if !glob.Match([]byte(pat), channel, false) {
			continue
		}
		for s := range set {
			s.deliver(c, subPattern, []byte(pat), channel, msg)
			n++
		}
	}
	return n
}

// deliver queues a message for s's client, sent by from: straight into
// Out when from is the client itself (its goroutine runs this), else into
// pending, waking the client's runtime when pending was empty.
func (s *subscriber) deliver(from *Client, kind subKind, pattern, channel, msg []byte) {
	c := s.c
	if c == from {
		c.TakePushes() // what others published first comes first
		c.Out = appendMessage(c.Out, c.proto, kind, pattern, channel, msg)
		return
	}
	c.mu.Lock()
	proto := c.proto
	c.mu.Unlock()
	s.mu.Lock()
	if s.dead {
		s.mu.Unlock()
		return
	}
	wasEmpty := len(s.pending) == 0
	s.pending = appendMessage(s.pending, proto, kind, pattern, channel, msg)
	over := s.overLimit(c.eng.store.Now())
	if over {
		s.dead, s.pending = true, nil
		s.queued.Store(false)
	} else if wasEmpty {
		s.queued.Store(true)
	}
	s.mu.Unlock()
	switch {
	case over:
		c.eng.log.Warn("client scheduled to be closed for overcoming of output buffer limits",
			"id", c.ID, "addr", c.Addr, "class", "pubsub")
		c.Peer.Kill()
	case wasEmpty:
		c.Peer.Wake()
	}
}

// overLimit applies the pubsub class's limit to the pending bytes at
// store time now, as Redis's checkClientOutputBufferLimits. It requires
// s.mu held.
func (s *subscriber) overLimit(now int64) bool {
	lim, used := *s.c.eng.pubsub.limit.Load(), int64(len(s.pending))
	if lim.hard > 0 && used >= lim.hard {
		return true
	}
	if lim.soft <= 0 || used < lim.soft {
		s.softAt = 0
		return false
	}
	if s.softAt == 0 {
		s.softAt = now
		return false
	}
	return now-s.softAt >= lim.softNs
}

// pubsubCounts returns how many channels, patterns and shard channels
// have subscribers (INFO's pubsub_channels, pubsub_patterns and
// pubsubshard_channels).
func (e *Engine) pubsubCounts() (channels, patterns, shard int) {
	h := &e.pubsub
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.subs[subChannel]), len(h.subs[subPattern]), len(h.subs[subShard])
}

// subscribedRefusal is the error for cmd sent by a RESP2 client in
// Pub/Sub mode, which may send only the commands FlagSubscribedOK marks;
// it names a container's subcommand as Redis does ('config|get').
func subscribedRefusal(cmd *Command, args [][]byte) string {
	name := cmd.Name
	if cmd.subs != nil && len(args) > 1 {
		if sub := lookupIn(cmd.subs, args[1]); sub != nil {
			name = sub.Name
		}
	}
	return sprintf(errSubscribedMode, name)
}

// SUBSCRIBE channel [channel ...]
func cmdSubscribe(c *Client, args [][]byte) { c.subscribeCmd(subChannel, args) }

// PSUBSCRIBE pattern [pattern ...]
func cmdPsubscribe(c *Client, args [][]byte) { c.subscribeCmd(subPattern, args) }

// SSUBSCRIBE shardchannel [shardchannel ...]
func cmdSsubscribe(c *Client, args [][]byte) { c.subscribeCmd(subShard, args) }

func (c *Client) subscribeCmd(kind subKind, args [][]byte) {
	if !c.admitChannels(subNames[kind][0], args[1:], kind) {
		return
	}
	for _, name := range args[1:] {
		c.subscribe(kind, name)
	}
}

// UNSUBSCRIBE [channel [channel ...]]
func cmdUnsubscribe(c *Client, args [][]byte) { c.unsubscribeCmd(subChannel, args) }

// PUNSUBSCRIBE [pattern [pattern ...]]
func cmdPunsubscribe(c *Client, args [][]byte) { c.unsubscribeCmd(subPattern, args) }

// SUNSUBSCRIBE [shardchannel [shardchannel ...]]
func cmdSunsubscribe(c *Client, args [][]byte) { c.unsubscribeCmd(subShard, args) }

func (c *Client) unsubscribeCmd(kind subKind, args [][]byte) {
	if len(args) == 1 {
		c.unsubscribeAll(kind, true)
		return
	}
	for _, name := range args[1:] {
		c.unsubscribe(kind, string(name), true)
	}
}

// PUBLISH channel message
func cmdPublish(c *Client, args [][]byte) {
	if !c.admitChannels("publish", args[1:2], subChannel) {
		return
	}
	c.WriteInt(c.publish(subChannel, args[1], args[2]))
}

// SPUBLISH shardchannel message
func cmdSpublish(c *Client, args [][]byte) {
	if !c.admitChannels("spublish", args[1:2], subShard) {
		return
	}
	c.WriteInt(c.publish(subShard, args[1], args[2]))
}

// PUBSUB subcommand [argument [argument ...]]
func cmdPubsub(c *Client, args [][]byte) { runSubcommand(c, "pubsub", args) }

// PUBSUB CHANNELS [pattern]
func cmdPubsubChannels(c *Client, args [][]byte) { c.channelList(subChannel, args) }

// PUBSUB SHARDCHANNELS [pattern]
func cmdPubsubShardchannels(c *Client, args [][]byte) { c.channelList(subShard, args) }

func (c *Client) channelList(kind subKind, args [][]byte) {
	if len(args) > 3 {
		name := cstr(args[1])
		if len(name) > 128 {
			name = name[:128]
		}
		c.WriteError(sprintf(errSubcommandSyntax, sanitizeErr(name), "PUBSUB"))
		return
	}
	h := &c.eng.pubsub
	h.mu.RLock()
	var out []string
	for name := range h.subs[kind] {
		if len(args) == 2 || glob.Match(args[2], []byte(name), false) {
			out = append(out, name)
		}
	}
	h.mu.RUnlock()
	slices.Sort(out)
	c.WriteArray(len(out))
	for _, n := range out {
		c.WriteBulkString(n)
	}
}

// PUBSUB NUMSUB [channel [channel ...]]
func cmdPubsubNumsub(c *Client, args [][]byte) { c.numsub(subChannel, args) }

// PUBSUB SHARDNUMSUB [shardchannel [shardchannel ...]]
func cmdPubsubShardnumsub(c *Client, args [][]byte) { c.numsub(subShard, args) }

func (c *Client) numsub(kind subKind, args [][]byte) {
	h := &c.eng.pubsub
	c.WriteArray(2 * (len(args) - 2))
	h.mu.RLock()
	defer h.mu.RUnlock()
	for _, name := range args[2:] {
		c.WriteBulk(name)
		c.WriteInt(int64(len(h.subs[kind][string(name)])))
	}
}

// PUBSUB NUMPAT
func cmdPubsubNumpat(c *Client, args [][]byte) {
	_, n, _ := c.eng.pubsubCounts()
	c.WriteInt(int64(n))
}

// PUBSUB HELP
func cmdPubsubHelp(c *Client, args [][]byte) {
	c.writeHelp(args[0], []string{
		"CHANNELS [<pattern>]",
		"    Return the currently active channels matching a <pattern> (default: '*').",
		"NUMPAT",
		"    Return number of subscriptions to patterns.",
		"NUMSUB [<channel> ...]",
		"    Return the number of subscribers for the specified channels, excluding",
		"    pattern subscriptions(default: no channels).",
		"SHARDCHANNELS [<pattern>]",
		"    Return the currently active shard level channels matching a <pattern> (default: '*').",
		"SHARDNUMSUB [<shardchannel> ...]",
		"    Return the number of subscribers for the specified shard level channel(s)",
	})
}
