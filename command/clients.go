package command

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/ratekv/ratekv/internal/redisnum"
)

// CLIENT LIST, INFO, KILL, PAUSE, UNPAUSE and NO-EVICT, as Redis's
// networking.c.

// ClientKind is a client's type for CLIENT LIST and CLIENT KILL's TYPE
// filter. The zero value is ClientNormal.
type ClientKind int32

// The client types. A MONITOR is a normal client, as in Redis.
const (
	ClientNormal  ClientKind = iota
	ClientPubSub             // subscribed to a channel or pattern
	ClientReplica            // a replica fed by this server
	ClientMaster             // this server's master
)

// SetKind sets c's type: replication sets ClientReplica or ClientMaster
// for its links. Safe for concurrent use.
func (c *Client) SetKind(k ClientKind) { c.kind.Store(int32(k)) }

// Kind returns c's type: SetKind's, else ClientPubSub while the client
// subscribes to something (PubSub), else ClientNormal.
func (c *Client) Kind() ClientKind {
	if k := ClientKind(c.kind.Load()); k != ClientNormal {
		return k
	}
	if c.PubSub() {
		return ClientPubSub
	}
	return ClientNormal
}

// packTxInfo packs what CLIENT LIST shows of c's transaction for other
// clients to read: the queued commands plus one (0: no MULTI), the
// watched keys and the queued arguments' bytes.
func (c *Client) packTxInfo() uint64 {
	var multi uint64
	if c.tx.active {
		multi = uint64(min(len(c.tx.cmds), 1<<16-2)) + 1
	}
	return multi | uint64(min(len(c.watching), 1<<16-1))<<16 | uint64(min(len(c.tx.buf), 1<<32-1))<<32
}

// clientInfo is what a CLIENT LIST line shows of a client.
type clientInfo struct {
	multi, watch, multiMem int64
	argvMem                int64
}

// infoLine formats c's CLIENT LIST line, with Redis's fields in its
// order. self says c is the client asking, whose state is read directly;
// args are then the running command's (argv-mem).
func (c *Client) infoLine(self bool, args [][]byte) string {
	c.mu.Lock()
	name, lib, ver, proto := c.name, c.libName, c.libVer, c.proto
	c.mu.Unlock()
	var ci clientInfo
	tx := c.txInfo.Load()
	if self {
		tx = c.packTxInfo()
		for _, a := range args {
			ci.argvMem += int64(len(a))
		}
	}
	ci.multi = int64(tx&0xffff) - 1
	ci.watch = int64(tx >> 16 & 0xffff)
	ci.multiMem = int64(tx >> 32)
	now := time.Now()
	cmd := "NULL"
	if lc := c.lastCmd.Load(); lc != nil {
		cmd = lc.Name
	}
	if self {
		cmd = "client|list"
		if len(args) > 1 && strings.EqualFold(string(args[1]), "info") {
			cmd = "client|info"
		}
	}
	var flags []byte
	kind := c.Kind()
	mon := c.monitor.Load()
	switch {
	case mon != nil:
		flags = append(flags, 'O')
	case kind == ClientReplica:
		flags = append(flags, 'S')
	}
	if kind == ClientMaster {
		flags = append(flags, 'M')
	}
	if kind == ClientPubSub {
		flags = append(flags, 'P')
	}
	if ci.multi >= 0 {
		flags = append(flags, 'x')
	}
	if c.noEvict.Load() {
		flags = append(flags, 'e')
	}
	if len(flags) == 0 {
		flags = append(flags, 'N')
	}
	qbuf, rbs := c.Peer.Buffers()
	var omem, oll int64
	if mon != nil {
		omem, oll = mon.pending()
	}
	events := "r"
	if omem > 0 {
		events = "rw"
	}
	totMem := rbs + omem + ci.multiMem + ci.argvMem + int64(unsafe.Sizeof(*c))
	b := make([]byte, 0, 400)
	field := func(k string, v int64) {
		b = append(b, ' ')
		b = append(b, k...)
		b = append(b, '=')
		b = strconv.AppendInt(b, v, 10)
	}
	text := func(k, v string) {
		b = append(b, ' ')
		b = append(b, k...)
		b = append(b, '=')
		b = append(b, v...)
	}
	b = append(b, "id="...)
	b = strconv.AppendInt(b, c.ID, 10)
	text("addr", c.Addr)
	text("laddr", c.LocalAddr)
	field("fd", int64(c.Peer.Fd()))
	text("name", name)
	field("age", int64(now.Sub(c.Created).Seconds()))
	field("idle", (now.UnixMilli()-c.LastSeen.Load())/1000)
	text("flags", string(flags))
	field("db", 0)
	channels, patterns := c.Subscriptions()
	field("sub", int64(channels))
	field("psub", int64(patterns))
	field("ssub", int64(c.ShardSubscriptions()))
	field("multi", ci.multi)
	field("watch", ci.watch)
	field("qbuf", qbuf)
	field("qbuf-free", max(rbs-qbuf, 0))
	field("argv-mem", ci.argvMem)
	field("multi-mem", ci.multiMem)
	field("rbs", rbs)
	field("rbp", qbuf)
	field("obl", 0)
	field("oll", oll)
	field("omem", omem)
	field("tot-mem", totMem)
	text("events", events)
	text("cmd", cmd)
	text("user", c.UserName())
	field("redir", -1)
	field("resp", int64(proto))
	text("lib-name", lib)
	text("lib-ver", ver)
	return string(b)
}

// CLIENT INFO
func cmdClientInfo(c *Client, args [][]byte) { c.WriteVerbatim(c.infoLine(true, args) + "\n") }

// CLIENT LIST [TYPE normal|master|replica|pubsub] [ID id [id ...]]
func cmdClientList(c *Client, args [][]byte) {
	opts := args[2:]
	var ids map[int64]bool
	typ := ClientKind(-1)
	for i := 0; i < len(opts); i++ {
		switch strings.ToLower(string(opts[i])) {
		case "type":
			if i+1 >= len(opts) {
				c.WriteError(errSyntax)
				return
			}
			k, ok := parseClientKind(opts[i+1])
			if !ok {
				c.WriteError(sprintf(errClientType, errArg(opts[i+1])))
				return
			}
			typ = k
			i++
		case "id":
			if i+1 >= len(opts) {
				c.WriteError(errSyntax)
				return
			}
			ids = map[int64]bool{}
			for i++; i < len(opts); i++ {
				id, ok := redisnum.ParseInt(opts[i])
				if !ok {
					c.WriteError(errClientID)
					return
				}
				ids[id] = true
			}
		default:
			c.WriteError(errSyntax)
			return
		}
	}
	var b strings.Builder
	for _, o := range c.eng.clients() {
		if ids != nil && !ids[o.ID] || typ >= 0 && o.Kind() != typ {
			continue
		}
		b.WriteString(o.infoLine(o == c, args))
		b.WriteByte('\n')
	}
	c.WriteVerbatim(b.String())
}

// parseClientKind parses a TYPE filter's value.
func parseClientKind(v []byte) (ClientKind, bool) {
	switch strings.ToLower(string(v)) {
	case "normal":
		return ClientNormal, true
	case "pubsub":
		return ClientPubSub, true
	case "replica", "slave":
		return ClientReplica, true
	case "master":
		return ClientMaster, true
	}
	return 0, false
}

// CLIENT KILL ip:port | CLIENT KILL <filter value> ... with the filters
// ID, ADDR, LADDR, TYPE, USER, SKIPME (yes by default: the caller is not
// killed, as in Redis) and MAXAGE (seconds: those connected longer).
func cmdClientKill(c *Client, args [][]byte) {
	opts := args[2:]
	if len(opts) == 1 {
		for _, o := range c.eng.clients() {
			if o.Addr == string(opts[0]) {
				c.kill(o)
				c.WriteOK()
				return
			}
		}
		c.WriteError(errNoSuchClient)
		return
	}
	if len(opts)%2 != 0 {
		c.WriteError(errSyntax)
		return
	}
	var id, maxAge int64
	addr, laddr := "", ""
	typ := ClientKind(-1)
	skipMe := true
	var user *aclUser
	for i := 0; i < len(opts); i += 2 {
		v := opts[i+1]
		switch strings.ToLower(string(opts[i])) {
		case "id":
			n, ok := redisnum.ParseInt(v)
			if !ok || n <= 0 {
				c.WriteError(errClientIDKill)
				return
			}
			id = n
		case "addr":
			addr = string(v)
		case "laddr":
			laddr = string(v)
		case "type":
			k, ok := parseClientKind(v)
			if !ok {
				c.WriteError(sprintf(errClientType, errArg(v)))
				return
			}
			typ = k
		case "user":
			if user = c.eng.acl.user(string(v)); user == nil {
				c.WriteError(sprintf(errNoSuchUser, errArg(v)))
				return
			}
		case "skipme":
			switch strings.ToLower(string(v)) {
			case "yes":
				skipMe = true
			case "no":
				skipMe = false
			default:
				c.WriteError(errSyntax)
				return
			}
		case "maxage":
			n, ok := redisnum.ParseInt(v)
			if !ok {
				c.WriteError(errMaxage)
				return
			}
			if n <= 0 {
				c.WriteError(errSyntax)
				return
			}
			maxAge = n
		default:
			c.WriteError(errSyntax)
			return
		}
	}
	killed := 0
	now := time.Now()
	for _, o := range c.eng.clients() {
		if (id != 0 && o.ID != id) || (addr != "" && o.Addr != addr) ||
			(laddr != "" && o.LocalAddr != laddr) || (typ >= 0 && o.Kind() != typ) ||
			(maxAge != 0 && int64(now.Sub(o.Created).Seconds()) <= maxAge) || (skipMe && o == c) ||
			(user != nil && o.user.Load() != user) {
			continue
		}
		c.kill(o)
		killed++
	}
	c.WriteInt(int64(killed))
}

// CLIENT NO-EVICT ON|OFF
func cmdClientNoEvict(c *Client, args [][]byte) {
	switch strings.ToLower(string(args[2])) {
	case "on":
		c.noEvict.Store(true)
	case "off":
		c.noEvict.Store(false)
	default:
		c.WriteError(errSyntax)
		return
	}
	c.WriteOK()
}

// clientPause is the state of CLIENT PAUSE: until when (Unix ms; 0: not
// paused) and whether every command waits or only writes. ended is closed
// when a pause ends (PauseEnded).
type clientPause struct {
	until atomic.Int64
	all   atomic.Bool
	mu    sync.Mutex
	ended chan struct{}
	timer *time.Timer
}

// CLIENT PAUSE timeout [WRITE|ALL]
func cmdClientPause(c *Client, args [][]byte) {
	if len(args) > 4 {
		c.WriteError(sprintf(errSubcmdSyntax, errArg(args[1]), "CLIENT"))
		return
	}
	ms, ok := redisnum.ParseInt(args[2])
	if !ok {
		c.WriteError(errTimeout)
		return
	}
	if ms < 0 {
		c.WriteError(errTimeoutNeg)
		return
	}
	all := true
	if len(args) == 4 {
		switch strings.ToLower(string(args[3])) {
		case "all":
		case "write":
			all = false
		default:
			c.WriteError(errPauseMode)
			return
		}
	}
	c.eng.pauseClients(time.Now().Add(time.Duration(min(ms, 1<<40))*time.Millisecond), all)
	c.WriteOK()
}

// CLIENT UNPAUSE
func cmdClientUnpause(c *Client, args [][]byte) {
	c.eng.unpauseClients()
	c.WriteOK()
}

// pauseClients pauses until end, keeping a longer or stricter pause in
// force, as Redis's pauseClients; the active expiry pauses with the
// clients, as in Redis.
func (e *Engine) pauseClients(end time.Time, all bool) {
	p := &e.pause
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.until.Load() == 0 {
		p.ended = make(chan struct{})
		p.all.Store(all)
		e.store.PauseExpiry(true)
	} else if all {
		p.all.Store(true)
	}
	if ms := end.UnixMilli(); ms > p.until.Load() {
		p.until.Store(ms)
		if p.timer != nil {
			p.timer.Stop()
		}
		p.timer = time.AfterFunc(time.Until(end), e.unpauseIfDue)
	}
}

// unpauseIfDue ends the pause once its time has come.
func (e *Engine) unpauseIfDue() {
	if until := e.pause.until.Load(); until != 0 && time.Now().UnixMilli() >= until {
		e.unpauseClients()
	}
}

// unpauseClients ends the pause and has the runtime run the requests it
// held back.
func (e *Engine) unpauseClients() {
	p := &e.pause
	p.mu.Lock()
	if p.until.Load() == 0 {
		p.mu.Unlock()
		return
	}
	p.until.Store(0)
	e.store.PauseExpiry(false)
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	close(p.ended)
	p.mu.Unlock()
	for _, o := range e.host.Clients() {
		o.Peer.Wake()
	}
}

// Postponed reports whether cmd (args[0]'s command, nil when unknown) must
// wait for CLIENT PAUSE to end before it runs: under PAUSE ALL every
// command, under PAUSE WRITE those that may write (a write outside MULTI,
// EXEC of a transaction that writes, EVAL and EVALSHA), as Redis's
// processCommand. The runtime keeps the request buffered and runs it when
// Wake is called, or once PauseEnded is closed. A replica or master link
// is never paused.
func (c *Client) Postponed(cmd *Command) bool {
	if c.eng.pause.until.Load() == 0 {
		return false
	}
	return c.postponed(cmd)
}

func (c *Client) postponed(cmd *Command) bool {
	p := &c.eng.pause
	if until := p.until.Load(); until == 0 || time.Now().UnixMilli() >= until {
		c.eng.unpauseIfDue()
		return false
	}
	if k := c.Kind(); k == ClientReplica || k == ClientMaster || c.replaying {
		return false
	}
	if p.all.Load() || cmd == nil {
		return p.all.Load()
	}
	switch {
	case cmd.Name == "exec":
		return c.tx.active && c.tx.writes()
	case c.tx.active && cmd.Flags&FlagTxControl == 0:
		return false // queued
	case cmd.Flags&FlagWrite != 0:
		return true
	case cmd.Flags&FlagScript != 0 && cmd.Flags&FlagReadOnly == 0:
		return true
	}
	return false
}

// PauseEnded returns a channel closed when the current CLIENT PAUSE ends
// (nil when none is in force), for a runtime that waits in a goroutine of
// its own rather than being woken (Peer.Wake).
func (e *Engine) PauseEnded() <-chan struct{} {
	p := &e.pause
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.until.Load() == 0 {
		return nil
	}
	return p.ended
}

// PauseEnded is Engine.PauseEnded, for the runtime.
func (c *Client) PauseEnded() <-chan struct{} { return c.eng.PauseEnded() }
