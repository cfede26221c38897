package command

import (
	"fmt"
	"strings"

	"github.com/ratekv/ratekv/internal/redisnum"
)

// Connection commands: the handshake real clients perform (HELLO, AUTH,
// CLIENT SETINFO, SELECT 0) and per-connection state. CLIENT is a
// container: its subcommands are registered below, in the subcommand
// table (server.go).

func init() {
	register(
		&Command{Name: "ping", Arity: -1, Flags: FlagSubscribedOK | FlagFast | FlagStale | FlagLoading | FlagDiskSignal, Handler: cmdPing,
			Summary: "Returns the server's liveliness response.", Group: "connection"},
		&Command{Name: "echo", Arity: 2, Flags: FlagFast | FlagStale | FlagLoading, Handler: cmdEcho,
			Summary: "Returns the given string.", Group: "connection"},
		&Command{Name: "quit", Arity: -1, Flags: FlagSubscribedOK | FlagNoAuth | FlagTxControl | FlagFast | FlagStale | FlagLoading | FlagNoScript | FlagAllowBusy, Handler: cmdQuit,
			Summary: "Closes the connection.", Group: "connection"},
		&Command{Name: "reset", Arity: 1, Flags: FlagSubscribedOK | FlagNoAuth | FlagTxControl | FlagFast | FlagStale | FlagLoading | FlagNoScript | FlagAllowBusy, Handler: cmdReset,
			Summary: "Resets the connection.", Group: "connection"},
		&Command{Name: "hello", Arity: -1, Flags: FlagNoAuth | FlagFast | FlagStale | FlagLoading | FlagNoScript | FlagAllowBusy, Handler: cmdHello,
			Summary: "Handshakes with the server.", Group: "connection"},
		&Command{Name: "auth", Arity: -2, Flags: FlagNoAuth | FlagFast | FlagStale | FlagLoading | FlagNoScript | FlagAllowBusy, Handler: cmdAuth,
			Summary: "Authenticates the connection.", Group: "connection"},
		&Command{Name: "select", Arity: 2, Flags: FlagFast | FlagStale | FlagLoading, Handler: cmdSelect,
			Summary: "Changes the selected database (ratekv has only database 0).", Group: "connection"},
		&Command{Name: "client", Arity: -2, Flags: FlagStale | FlagLoading, Handler: cmdClient,
			Summary: "A container for client connection commands.", Group: "connection"},
		&Command{Name: "readonly", Arity: 1, Flags: FlagFast | FlagStale | FlagLoading, Handler: cmdReadonly,
			Summary: "Enables read-only queries for a connection to a Redis Cluster replica node.", Group: "cluster"},
		&Command{Name: "readwrite", Arity: 1, Flags: FlagFast | FlagStale | FlagLoading, Handler: cmdReadwrite,
			Summary: "Enables read-write queries for a connection to a Redis Cluster replica node.", Group: "cluster"},
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
		&Command{Name: "client|no-evict", Arity: 3, Flags: admin | FlagNoScript, Handler: cmdClientNoEvict,
			Summary: "Sets the client eviction mode of the connection (its e flag: ratekv evicts no client).", Group: conn},
		&Command{Name: "client|pause", Arity: -3, Flags: admin | FlagNoScript, Handler: cmdClientPause,
			Summary: "Suspends commands processing.", Group: conn},
		&Command{Name: "client|unpause", Arity: 2, Flags: admin | FlagNoScript, Handler: cmdClientUnpause,
			Summary: "Resumes processing commands from paused clients.", Group: conn},
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
	if c.proto == 2 && c.PubSub() {
		// In Pub/Sub mode a RESP2 client gets an array, as a message.
		c.WriteArray(2)
		c.WriteBulkString("pong")
		if len(args) == 2 {
			c.WriteBulk(args[1])
		} else {
			c.WriteBulkString("")
		}
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
	c.leavePubSub()
	c.stopMonitor()
	c.noEvict.Store(false)
	c.asking, c.readonly = false, false
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
	if c.eng.cluster {
		c.WriteBulkString("cluster")
	} else {
		c.WriteBulkString("standalone")
	}
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
	if n != 0 && c.eng.cluster {
		c.WriteError(errSelectCluster)
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

// CLIENT NO-TOUCH ON|OFF: accepted, no effect.
func cmdClientOnOff(c *Client, args [][]byte) {
	switch strings.ToLower(string(args[2])) {
	case "on", "off":
		c.WriteOK()
	default:
		c.WriteError(errSyntax)
	}
}

// CLIENT HELP
func cmdClientHelp(c *Client, args [][]byte) {
	lines := []string{
		"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"GETNAME", "    Return the name of the current connection.",
		"ID", "    Return the ID of the current connection.",
		"INFO", "    Return information about the current client connection.",
		"KILL <ip:port>", "    Kill connection made from <ip:port>.",
		"KILL <option> <value> [<option> <value> [...]]", "    Kill connections. Options are:",
		"    * ID <client-id>", "      Kill connections by client id.",
		"    * ADDR (<ip:port>|<unixsocket>:0)", "      Kill connections made from the specified address",
		"    * LADDR (<ip:port>|<unixsocket>:0)", "      Kill connections made to specified local address",
		"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)", "      Kill connections by type.",
		"    * USER <username>", "      Kill connections authenticated by <username>.",
		"    * SKIPME (YES|NO)", "      Skip killing current connection (default: yes).",
		"    * MAXAGE <maxage>", "      Kill connections older than the specified age.",
		"LIST [options ...]", "    Return information about client connections. Options:",
		"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)", "      Return clients of specified type.",
		"    * ID <id> [<id> ...]", "      Return clients of the specified ids.",
		"UNPAUSE", "    Stop the current client pause, resuming traffic.",
		"PAUSE <timeout> [WRITE|ALL]", "    Suspend all, or just write, clients for <timeout> milliseconds.",
		"NO-EVICT (ON|OFF)", "    Protect current client connection from eviction (ratekv evicts no client: shown in its flags only).",
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

// kill closes o for c's CLIENT KILL: c itself once its reply is written
// (as Redis), another client at once through its connection.
func (c *Client) kill(o *Client) {
	if o == c {
		c.CloseAfter = true
		return
	}
	o.Peer.Kill()
}
