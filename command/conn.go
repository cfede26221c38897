package command

import (
	"fmt"
	"strings"
	"time"

	"github.com/ratekv/ratekv/internal/redisnum"
)

// Connection commands: the handshake real clients perform (HELLO, AUTH,
// CLIENT SETINFO, SELECT 0) and per-connection state. CLIENT is a
// container: its subcommands are registered below, in the subcommand
// table (server.go).

func init() {
	register(
		&Command{Name: "ping", Arity: -1, Flags: FlagFast | FlagStale | FlagLoading | FlagDiskSignal, Handler: cmdPing,
			Summary: "Returns the server's liveliness response.", Group: "connection"},
		&Command{Name: "echo", Arity: 2, Flags: FlagFast | FlagStale | FlagLoading, Handler: cmdEcho,
			Summary: "Returns the given string.", Group: "connection"},
		&Command{Name: "quit", Arity: -1, Flags: FlagNoAuth | FlagTxControl | FlagFast | FlagStale | FlagLoading | FlagNoScript | FlagAllowBusy, Handler: cmdQuit,
			Summary: "Closes the connection.", Group: "connection"},
		&Command{Name: "reset", Arity: 1, Flags: FlagNoAuth | FlagTxControl | FlagFast | FlagStale | FlagLoading | FlagNoScript | FlagAllowBusy, Handler: cmdReset,
			Summary: "Resets the connection.", Group: "connection"},
		&Command{Name: "hello", Arity: -1, Flags: FlagNoAuth | FlagFast | FlagStale | FlagLoading | FlagNoScript | FlagAllowBusy, Handler: cmdHello,
			Summary: "Handshakes with the server.", Group: "connection"},
		&Command{Name: "auth", Arity: -2, Flags: FlagNoAuth | FlagFast | FlagStale | FlagLoading | FlagNoScript | FlagAllowBusy, Handler: cmdAuth,
			Summary: "Authenticates the connection.", Group: "connection"},
		&Command{Name: "select", Arity: 2, Flags: FlagFast | FlagStale | FlagLoading, Handler: cmdSelect,
			Summary: "Changes the selected database (ratekv has only database 0).", Group: "connection"},
		&Command{Name: "client", Arity: -2, Flags: FlagStale | FlagLoading, Handler: cmdClient,
			Summary: "A container for client connection commands.", Group: "connection"},
		&Command{Name: "readonly", Arity: 1, Flags: FlagFast | FlagStale | FlagLoading, Handler: cmdOK,
			Summary: "Enables read-only queries for a connection to a cluster replica node (no-op).", Group: "cluster"},
		&Command{Name: "readwrite", Arity: 1, Flags: FlagFast | FlagStale | FlagLoading, Handler: cmdOK,
			Summary: "Enables read-write queries for a connection to a cluster replica node (no-op).", Group: "cluster"},
	)
	// CLIENT's subcommands, with Redis's arities and flags.
	const conn, admin = "connection", FlagAdmin | FlagLoading | FlagStale
	registerSubcommands("client",
		&Command{Name: "client|id", Arity: 2, Flags: FlagLoading | FlagStale | FlagNoScript, Handler: cmdClientID,
			Summary: "Returns the unique client ID of the connection.", Group: conn},
		&Command{Name: "client|info", Arity: 2, Flags: FlagLoading | FlagStale | FlagNoScript, Handler: cmdClientInfo,
			Summary: "Returns information about the connection.", Group: conn},
		&Command{Name: "client|getname", Arity: 2, Flags: FlagLoading | FlagStale | FlagNoScript, Handler: cmdClientGetname,
			Summary: "Returns the name of the connection.", Group: conn},
		&Command{Name: "client|setname", Arity: 3, Flags: FlagLoading | FlagStale | FlagNoScript, Handler: cmdClientSetname,
			Summary: "Sets the connection name.", Group: conn},
		&Command{Name: "client|setinfo", Arity: 4, Flags: FlagLoading | FlagStale, Handler: cmdClientSetinfo,
			Summary: "Sets information specific to the client or connection.", Group: conn},
		&Command{Name: "client|list", Arity: -2, Flags: admin | FlagNoScript, Handler: cmdClientList,
			Summary: "Lists open connections.", Group: conn},
		&Command{Name: "client|kill", Arity: -3, Flags: admin | FlagNoScript, Handler: cmdClientKill,
			Summary: "Terminates open connections.", Group: conn},
		&Command{Name: "client|no-evict", Arity: 3, Flags: admin | FlagNoScript, Handler: cmdClientOnOff,
			Summary: "Sets the client eviction mode of the connection (no effect: ratekv does not evict).", Group: conn},
		&Command{Name: "client|no-touch", Arity: 3, Flags: FlagLoading | FlagStale, Handler: cmdClientOnOff,
			Summary: "Controls whether commands sent by the client affect the LRU/LFU of accessed keys (no effect).", Group: conn},
		&Command{Name: "client|help", Arity: 2, Flags: FlagLoading | FlagStale, Handler: cmdClientHelp,
			Summary: "Returns helpful text about the different subcommands.", Group: conn},
	)
}

// PING [message]
func cmdPing(c *Client, args [][]byte) {
	if len(args) > 2 {
		c.WriteError(fmt.Sprintf(errWrongArgs, "ping"))
		return
	}
	if len(args) == 2 {
		c.WriteBulk(args[1])
		return
	}
	c.WriteSimple("PONG")
}

// ECHO message
func cmdEcho(c *Client, args [][]byte) { c.WriteBulk(args[1]) }

// QUIT
func cmdQuit(c *Client, args [][]byte) {
	c.WriteOK()
	c.CloseAfter = true
}

func cmdOK(c *Client, args [][]byte) { c.WriteOK() }

// RESET
func cmdReset(c *Client, args [][]byte) {
	c.tx.reset()
	c.unwatchAll()
	c.user.Store(c.eng.acl.def)
	c.Authed = !c.eng.defaultNeedsAuth()
	c.mu.Lock()
	c.proto = 2
	c.name = ""
	c.mu.Unlock()
	c.WriteSimple("RESET")
}

// AUTH [username] password
func cmdAuth(c *Client, args [][]byte) {
	if len(args) > 3 {
		c.WriteError(errSyntax)
		return
	}
	user, pass := []byte("default"), args[1]
	if len(args) == 3 {
		user, pass = args[1], args[2]
	} else if c.eng.DefaultUserNopass() {
		c.WriteError(errAuthNotSet)
		return
	}
	if !c.authenticate(args[0], user, pass) {
		c.WriteError(errWrongPass)
		return
	}
	c.WriteOK()
}

// HELLO [protover [AUTH username password] [SETNAME clientname]]
func cmdHello(c *Client, args [][]byte) {
	proto := c.proto
	if len(args) >= 2 {
		v, ok := redisnum.ParseInt(args[1])
		if !ok {
			c.WriteError(errHelloProto)
			return
		}
		if v != 2 && v != 3 {
			c.WriteError(errNoProto)
			return
		}
		proto = int(v)
	}
	var name, user, pass []byte
	setName, auth := false, false
	for i := 2; i < len(args); i++ {
		opt := strings.ToLower(string(args[i]))
		switch {
		case opt == "auth" && i+2 < len(args):
			user, pass, auth = args[i+1], args[i+2], true
			i += 2
		case opt == "setname" && i+1 < len(args):
			name, setName = args[i+1], true
			if !validClientName(name) {
				c.WriteError(errClientName)
				return
			}
			i++
		default:
			c.WriteError(sprintf(errHelloOption, errArg(args[i])))
			return
		}
	}
	// AUTH once every option is known to be valid, as Redis.
	if auth && !c.authenticate(args[0], user, pass) {
		c.WriteError(errWrongPass)
		return
	}
	if !c.Authed && c.eng.defaultNeedsAuth() {
		c.WriteError(errHelloNoAuth)
		return
	}
	c.Authed = true
	c.mu.Lock() // CLIENT LIST of another connection reads proto
	c.proto = proto
	c.mu.Unlock()
	if setName {
		c.mu.Lock()
		c.name = string(name)
		c.mu.Unlock()
	}
	c.WriteMap(7)
	c.WriteBulkString("server")
	c.WriteBulkString("redis")
	c.WriteBulkString("version")
	c.WriteBulkString(RedisVersion)
	c.WriteBulkString("proto")
	c.WriteInt(int64(proto))
	c.WriteBulkString("id")
	c.WriteInt(c.ID)
	c.WriteBulkString("mode")
	c.WriteBulkString("standalone")
	c.WriteBulkString("role")
	c.WriteBulkString("master")
	c.WriteBulkString("modules")
	c.WriteArray(0)
}

// SELECT index
func cmdSelect(c *Client, args [][]byte) {
	n, ok := redisnum.ParseInt(args[1])
	if !ok {
		c.WriteError(errNotInt)
		return
	}
	if n != 0 {
		c.WriteError(errDBIndex)
		return
	}
	c.WriteOK()
}

// validClientName: Redis allows only printable ASCII without spaces.
func validClientName(b []byte) bool {
	for _, ch := range b {
		if ch < '!' || ch > '~' {
			return false
		}
	}
	return true
}

// CLIENT subcommand [args]
//
// The subcommands go through the subcommand table (runSubcommand), which
// checks their names and arities as Redis does.
func cmdClient(c *Client, args [][]byte) { runSubcommand(c, "client", args) }

// CLIENT ID
func cmdClientID(c *Client, args [][]byte) { c.WriteInt(c.ID) }

// CLIENT SETNAME connection-name
func cmdClientSetname(c *Client, args [][]byte) {
	if !validClientName(args[2]) {
		c.WriteError(errClientName)
		return
	}
	c.mu.Lock()
	c.name = string(args[2])
	c.mu.Unlock()
	c.WriteOK()
}

// CLIENT GETNAME
func cmdClientGetname(c *Client, args [][]byte) {
	if n := c.Name(); n != "" {
		c.WriteBulkString(n)
	} else {
		c.WriteNull()
	}
}

// CLIENT SETINFO LIB-NAME|LIB-VER value
func cmdClientSetinfo(c *Client, args [][]byte) {
	attr := strings.ToLower(string(args[2]))
	if attr != "lib-name" && attr != "lib-ver" {
		c.WriteError(sprintf(errClientOption, errArg(args[2])))
		return
	}
	if !validClientName(args[3]) {
		c.WriteError(sprintf(errClientAttr, strings.ToUpper(attr[:1])+attr[1:]))
		return
	}
	c.mu.Lock()
	if attr == "lib-name" {
		c.libName = string(args[3])
	} else {
		c.libVer = string(args[3])
	}
	c.mu.Unlock()
	c.WriteOK()
}

// CLIENT INFO
func cmdClientInfo(c *Client, args [][]byte) { c.WriteVerbatim(c.infoLine() + "\n") }

// CLIENT LIST [TYPE normal|master|replica|pubsub] [ID id [id ...]]
func cmdClientList(c *Client, args [][]byte) { c.clientList(args[2:]) }

// CLIENT NO-EVICT ON|OFF, CLIENT NO-TOUCH ON|OFF: accepted, no effect.
func cmdClientOnOff(c *Client, args [][]byte) {
	switch strings.ToLower(string(args[2])) {
	case "on", "off":
		c.WriteOK()
	default:
		c.WriteError(errSyntax)
	}
}

// CLIENT KILL ip:port | CLIENT KILL filter value [filter value ...]
func cmdClientKill(c *Client, args [][]byte) { c.clientKill(args[2:]) }

// CLIENT HELP
func cmdClientHelp(c *Client, args [][]byte) {
	lines := []string{
		"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"GETNAME", "    Return the name of the current connection.",
		"ID", "    Return the ID of the current connection.",
		"INFO", "    Return information about the current client connection.",
		"KILL <ip:port> | ID <client-id> | ADDR <ip:port>", "    Kill connections.",
		"LIST [TYPE normal] [ID <id> [<id> ...]]", "    Return information about client connections.",
		"NO-EVICT (ON|OFF)", "    Accepted for compatibility (ratekv does not evict clients).",
		"NO-TOUCH (ON|OFF)", "    Accepted for compatibility (commands still count as accesses for the LRU and LFU policies).",
		"SETINFO <option> <value>", "    Set client meta attr. Options are: LIB-NAME, LIB-VER.",
		"SETNAME <name>", "    Assign the name <name> to the current connection.",
		"HELP", "    Print this help.",
	}
	c.WriteArray(len(lines))
	for _, l := range lines {
		c.WriteSimple(l)
	}
}

// infoLine formats one CLIENT LIST line for c, with Redis's field names.
func (c *Client) infoLine() string {
	c.mu.Lock()
	name, lib, ver, proto := c.name, c.libName, c.libVer, c.proto
	c.mu.Unlock()
	now := time.Now()
	cmd := "NULL"
	if lc := c.lastCmd.Load(); lc != nil {
		cmd = lc.Name
	}
	multi, flags := -1, "N"
	qbuf, rbs := c.Peer.Buffers()
	return fmt.Sprintf("id=%d addr=%s laddr=%s fd=-1 name=%s age=%d idle=%d flags=%s db=0 sub=0 psub=0 ssub=0 multi=%d qbuf=%d qbuf-free=0 argv-mem=0 multi-mem=0 rbs=%d rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd=%s user=%s redir=-1 resp=%d lib-name=%s lib-ver=%s",
		c.ID, c.Addr, c.LocalAddr, name, int(now.Sub(c.Created).Seconds()),
		(now.UnixMilli()-c.LastSeen.Load())/1000, flags, multi, qbuf, rbs,
		cmd, c.UserName(), proto, lib, ver)
}

// CLIENT LIST [TYPE normal|master|replica|pubsub] [ID id [id ...]]
func (c *Client) clientList(opts [][]byte) {
	var ids map[int64]bool
	typ := ""
	for i := 0; i < len(opts); i++ {
		switch strings.ToLower(string(opts[i])) {
		case "type":
			if i+1 >= len(opts) {
				c.WriteError(errSyntax)
				return
			}
			typ = strings.ToLower(string(opts[i+1]))
			switch typ {
			case "normal", "master", "replica", "slave", "pubsub":
			default:
				c.WriteError(sprintf(errClientType, errArg(opts[i+1])))
				return
			}
			i++
		case "id":
			if i+1 >= len(opts) {
				c.WriteError(errSyntax)
				return
			}
			ids = map[int64]bool{}
			for i++; i < len(opts); i++ {
				id, ok := redisnum.ParseInt(opts[i])
				if !ok || id <= 0 {
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
	if typ == "" || typ == "normal" {
		for _, o := range c.eng.host.Clients() {
			if ids != nil && !ids[o.ID] {
				continue
			}
			b.WriteString(o.infoLine())
			b.WriteByte('\n')
		}
	}
	c.WriteVerbatim(b.String())
}

// CLIENT KILL ip:port | CLIENT KILL <filter value> ... with the filters
// ID, ADDR, LADDR, TYPE, USER and SKIPME (yes by default: the caller is not
// killed, as in Redis).
func (c *Client) clientKill(opts [][]byte) {
	if len(opts) == 1 {
		for _, o := range c.eng.host.Clients() {
			if o.Addr == string(opts[0]) {
				c.kill(o)
				c.WriteOK()
				return
			}
		}
		c.WriteError(errNoSuchClient)
		return
	}
	if len(opts) == 0 || len(opts)%2 != 0 {
		c.WriteError(errSyntax)
		return
	}
	var id int64
	addr, laddr := "", ""
	skipMe, none := true, false // none: a filter no client matches
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
			switch strings.ToLower(string(v)) {
			case "normal":
			case "master", "replica", "slave", "pubsub":
				none = true // every client here is a normal one
			default:
				c.WriteError(sprintf(errClientType, errArg(v)))
				return
			}
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
		default:
			c.WriteError(errSyntax)
			return
		}
	}
	killed := 0
	for _, o := range c.eng.host.Clients() {
		if none || (id != 0 && o.ID != id) || (addr != "" && o.Addr != addr) ||
			(laddr != "" && o.LocalAddr != laddr) || (skipMe && o == c) ||
			(user != nil && o.user.Load() != user) {
			continue
		}
		c.kill(o)
		killed++
	}
	c.WriteInt(int64(killed))
}

// kill closes o for c's CLIENT KILL: c itself once its reply is written
// (as Redis), another client at once through its connection.
func (c *Client) kill(o *Client) {
	if o == c {
		c.CloseAfter = true
		return
	}
	o.Peer.Kill()
}
