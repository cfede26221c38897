package command

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/internal/redisnum"
)

// The ACL command, the permission check of the dispatcher, EXEC and
// redis.call, the ACL log, and loading users from the configuration and
// the ACL file. The rules themselves are in acl.go.

func init() {
	register(&Command{Name: "acl", Arity: -2, Handler: cmdACL,
		Summary: "A container for Access List Control commands.", Group: "server"})
	const g, admin = "server", FlagAdmin | FlagNoScript | FlagLoading | FlagStale
	const plain = FlagNoScript | FlagLoading | FlagStale
	registerSubcommands("acl",
		&Command{Name: "acl|cat", Arity: -2, Flags: plain, Handler: cmdACLCat,
			Summary: "Lists the ACL categories, or the commands inside a category.", Group: g},
		&Command{Name: "acl|deluser", Arity: -3, Flags: admin, Handler: cmdACLDeluser,
			Summary: "Deletes ACL users, and terminates their connections.", Group: g},
		&Command{Name: "acl|dryrun", Arity: -4, Flags: admin, Handler: cmdACLDryrun,
			Summary: "Simulates the execution of a command by a user, without executing the command.", Group: g},
		&Command{Name: "acl|genpass", Arity: -2, Flags: plain, Handler: cmdACLGenpass,
			Summary: "Generates a pseudorandom, secure password that can be used to identify ACL users.", Group: g},
		&Command{Name: "acl|getuser", Arity: 3, Flags: admin, Handler: cmdACLGetuser,
			Summary: "Lists the ACL rules of a user.", Group: g},
		&Command{Name: "acl|help", Arity: 2, Flags: FlagLoading | FlagStale, Handler: cmdACLHelp,
			Summary: "Returns helpful text about the different subcommands.", Group: g},
		&Command{Name: "acl|list", Arity: 2, Flags: admin, Handler: cmdACLList,
			Summary: "Dumps the effective rules in ACL file format.", Group: g},
		&Command{Name: "acl|load", Arity: 2, Flags: admin, Handler: cmdACLLoad,
			Summary: "Reloads the rules from the configured ACL file.", Group: g},
		&Command{Name: "acl|log", Arity: -2, Flags: admin, Handler: cmdACLLog,
			Summary: "Lists recent security events generated due to ACL rules.", Group: g},
		&Command{Name: "acl|save", Arity: 2, Flags: admin, Handler: cmdACLSave,
			Summary: "Saves the effective ACL rules in the configured ACL file.", Group: g},
		&Command{Name: "acl|setuser", Arity: -3, Flags: admin, Handler: cmdACLSetuser,
			Summary: "Creates and modifies an ACL user and its rules.", Group: g},
		&Command{Name: "acl|users", Arity: 2, Flags: admin, Handler: cmdACLUsers,
			Summary: "Lists all ACL users.", Group: g},
		&Command{Name: "acl|whoami", Arity: 2, Flags: plain, Handler: cmdACLWhoami,
			Summary: "Returns the authenticated username of the current connection.", Group: g},
	)
}

// ACL log contexts.
const (
	ctxToplevel = iota
	ctxMulti
	ctxLua
)

// pubsubDefault is the channel flag of a new selector (acl-pubsub-default).
func (e *Engine) pubsubDefault() uint8 {
	if e.cfg.String(config.ACLPubsubDefault) == "allchannels" {
		return selAllChannels
	}
	return 0
}

// watchACL sets up the users: the default one, with requirepass as its
// password, kept current when requirepass changes (as Redis's
// ACLUpdateDefaultUserPassword).
func (e *Engine) watchACL() {
	aclSetup()
	e.acl.init(e.pubsubDefault())
	apply := func() {
		e.acl.mu.Lock()
		defer e.acl.mu.Unlock()
		r := e.acl.def.rules.Load().clone()
		_ = r.apply("resetpass", 0)
		if pw := e.cfg.String(config.RequirePass); pw != "" {
			_ = r.apply(">"+pw, 0)
		} else {
			_ = r.apply("nopass", 0)
		}
		e.acl.def.set(r)
	}
	apply()
	e.cfg.OnChange(config.RequirePass, func(string) { apply() })
}

// defaultNeedsAuth reports whether a new connection must authenticate:
// the default user has a password or is off (authRequired).
func (e *Engine) defaultNeedsAuth() bool {
	r := e.acl.def.rules.Load()
	return r.flags&userNopass == 0 || r.flags&userOff != 0
}

// DefaultUserNopass reports whether the default user needs no password
// (nopass, no requirepass), as protected mode asks.
func (e *Engine) DefaultUserNopass() bool {
	return e.acl.def.rules.Load().flags&userNopass != 0
}

// LoadUsers applies the user directives of the configuration, or the
// users of aclfile, at start (ACLLoadUsersAtStartup). An error says why
// the server must not start.
func (e *Engine) LoadUsers() error {
	file := e.cfg.String(config.ACLFile)
	lines := e.cfg.Users()
	if file != "" && len(lines) > 0 {
		return errors.New("configuring users in the configuration and an ACL file (aclfile) at the same time is invalid: " +
			"define the users in one of them")
	}
	pd := e.pubsubDefault()
	seen := map[string]bool{}
	for _, words := range lines {
		name := words[0]
		if seen[name] {
			return fmt.Errorf("user %q: %s", name, errRuleDupUser)
		}
		seen[name] = true
		if hasSpaces(name) {
			return errors.New("spaces not allowed in ACL usernames")
		}
		ops, bad := mergeSelectors(words[1:])
		if bad >= 0 {
			return fmt.Errorf("user %q: unmatched parenthesis in selector definition", name)
		}
		r := newRules(pd)
		if name == "default" { // reset, as Redis does to the existing default user
			_ = r.apply("reset", pd)
		}
		for _, op := range ops {
			if err := r.apply(op, pd); err != nil {
				return fmt.Errorf("error loading ACL rule '%s' for the user named '%s': %s", op, name, err)
			}
		}
		e.acl.put(name, r)
		if r.flags&userOff != 0 {
			e.log.Info("the user is disabled (there is no 'on' modifier in the user description); make sure this is not a configuration error", "user", name)
		}
	}
	if file != "" {
		if msg := e.loadACLFile(nil); msg != "" {
			return errors.New(msg)
		}
	}
	return nil
}

// put sets the rules of user name, creating it; the default user keeps its
// identity (connections point at it).
func (a *aclState) put(name string, r *aclRules) {
	a.mu.Lock()
	defer a.mu.Unlock()
	u := a.users[name]
	if u == nil {
		u = &aclUser{name: name}
		a.users[name] = u
	}
	u.set(r)
}

// loadACLFile replaces the users with those of aclfile, all or nothing
// (ACLLoadFromFile); it returns Redis's error text, or "". The connections
// of the users replaced are closed, c's (when not nil) once its reply is
// written.
func (e *Engine) loadACLFile(c *Client) string {
	file := e.cfg.String(config.ACLFile)
	data, err := os.ReadFile(file)
	if err != nil {
		msg := err.Error()
		var pe *os.PathError
		if errors.As(err, &pe) {
			msg = pe.Err.Error()
		}
		if msg != "" {
			msg = strings.ToUpper(msg[:1]) + msg[1:]
		}
		return fmt.Sprintf("Error loading ACLs, opening file '%s': %s", file, msg)
	}
	pd := e.pubsubDefault()
	users := map[string]*aclRules{}
	var errs strings.Builder
	for i, line := range strings.Split(string(data), "\n") {
		n := i + 1
		line = strings.Trim(line, " \t\r\n")
		if line == "" {
			continue
		}
		argv := strings.Split(line, " ")
		if argv[0] != "user" || len(argv) < 2 {
			fmt.Fprintf(&errs, "%s:%d should start with user keyword followed by the username. ", file, n)
			continue
		}
		if hasSpaces(argv[1]) {
			fmt.Fprintf(&errs, "'%s:%d: username '%s' contains invalid characters. ", file, n, argv[1])
			continue
		}
		if _, dup := users[argv[1]]; dup {
			fmt.Fprintf(&errs, "WARNING: Duplicate user '%s' found on line %d. ", argv[1], n)
			continue
		}
		r := newRules(pd)
		users[argv[1]] = r
		ops, bad := mergeSelectors(argv[2:])
		if bad >= 0 {
			fmt.Fprintf(&errs, "%s:%d: Unmatched parenthesis in selector definition.", file, n)
		}
		for _, op := range ops {
			if err := r.apply(strings.Trim(op, "\t\r\n"), pd); err != nil {
				fmt.Fprintf(&errs, "%s:%d: %s. ", file, n, err)
			}
		}
	}
	if errs.Len() != 0 {
		return errs.String() + "WARNING: ACL errors detected, no change to the previously active ACL rules was performed"
	}
	if users["default"] == nil {
		users["default"] = defaultRules(pd)
	}
	a := &e.acl
	a.mu.Lock()
	old := a.users
	a.users = map[string]*aclUser{}
	for name, r := range users {
		u := a.def
		if name != "default" {
			u = &aclUser{name: name}
		}
		u.set(r)
		a.users[name] = u
	}
	a.mu.Unlock()
	for name, u := range old {
		if name != "default" {
			e.dropUser(c, u)
		}
	}
	return ""
}

// dropUser disconnects the clients authenticated as u, a user deleted
// or replaced (ACLFreeUserAndKillClients): c, the caller, once its reply
// is written. What they still run before the close is denied.
func (e *Engine) dropUser(c *Client, u *aclUser) {
	u.set(newRules(0))
	if e.host == nil {
		return
	}
	for _, o := range e.host.Clients() {
		if o.user.Load() != u {
			continue
		}
		if o == c {
			c.CloseAfter = true
		} else {
			o.Peer.Kill()
		}
	}
}

// saveACLFile writes the users to aclfile: a temporary file, synced,
// renamed over it (ACLSaveToFile).
func (e *Engine) saveACLFile() error {
	file := e.cfg.String(config.ACLFile)
	var b strings.Builder
	for _, u := range e.acl.sortedUsers() {
		b.WriteString("user " + u.name + " " + u.rules.Load().describe() + "\n")
	}
	tmp := fmt.Sprintf("%s.tmp-%d-%d", file, os.Getpid(), time.Now().UnixMilli())
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(b.String())
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, file)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if d, err := os.Open(filepath.Dir(file)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// ---- the check ----

// aclRefused checks cmd against the client's user when the user is
// restricted (the dispatcher has tested aclUser.open): on a refusal it
// logs it, counts it and replies Redis's NOPERM error.
func (c *Client) aclRefused(u *aclUser, cmd *Command, args [][]byte) bool {
	target := aclTarget(cmd, args)
	res, idx := c.aclCheck(u, target, args)
	if res == aclOK {
		return false
	}
	ctx := ctxToplevel
	if c.tx.active {
		ctx = ctxMulti
	}
	c.aclDenied(u, res, ctx, target, args, idx)
	c.flagTx()
	cmd.rejected.Add(1)
	var msg string
	switch res {
	case aclDeniedCmd:
		msg = sprintf(errNoPermCmd, target.Name)
	case aclDeniedKey:
		msg = errNoPermKey
	default:
		msg = errNoPermChannel
	}
	if cmd.Name == "exec" {
		msg = errExecAbortBecause + msg
		c.tx.reset()
		c.unwatchAll()
	}
	c.WriteError(msg)
	return true
}

// aclTarget is what the ACL checks of cmd: the subcommand args name, for a
// container.
func aclTarget(cmd *Command, args [][]byte) *Command {
	if cmd.subs != nil && len(args) > 1 {
		if sub := lookupIn(cmd.subs, args[1]); sub != nil {
			return sub
		}
	}
	return cmd
}

// aclCheck checks target with args against u's rules.
func (c *Client) aclCheck(u *aclUser, target *Command, args [][]byte) (res, idx int) {
	res, idx, c.keyBuf = u.rules.Load().check(target, args, c.keyBuf)
	return res, idx
}

// aclDenied records a denial in the ACL log and INFO's counters.
func (c *Client) aclDenied(u *aclUser, res, ctx int, target *Command, args [][]byte, idx int) {
	object := target.Name
	if res == aclDeniedKey || res == aclDeniedChannel {
		object = string(args[idx])
	}
	c.eng.acl.denied[res].Add(1)
	c.eng.aclLog(c, res, ctx, object, u.name)
}

// execACLRefused checks a queued command again at EXEC, in case the rules
// changed since it was queued: on a refusal it writes the error in its
// place (execCommand).
func (c *Client) execACLRefused(cmd *Command, args [][]byte) bool {
	u := c.user.Load()
	if u == nil || u.open.Load() {
		return false
	}
	target := aclTarget(cmd, args)
	res, idx := c.aclCheck(u, target, args)
	if res == aclOK {
		return false
	}
	c.aclDenied(u, res, ctxMulti, target, args, idx)
	reason := "no permission to execute the command or subcommand"
	switch res {
	case aclDeniedKey:
		reason = "no permission to touch the specified keys"
	case aclDeniedChannel:
		reason = "no permission to access one of the channels used as arguments"
	}
	c.WriteError(errNoPermExec + reason)
	return true
}

// scriptACLRefused checks a command a script calls (scriptVerifyACL): the
// error for redis.call, or "".
func (c *Client) scriptACLRefused(target *Command, args [][]byte) string {
	u := c.user.Load()
	if u == nil || u.open.Load() {
		return ""
	}
	res, idx := c.aclCheck(u, target, args)
	if res == aclOK {
		return ""
	}
	c.aclDenied(u, res, ctxLua, target, args, idx)
	switch res {
	case aclDeniedCmd:
		return errScriptNoPermCmd
	case aclDeniedKey:
		return errScriptNoPermKey
	}
	return errScriptNoPermChannel
}

// ChannelPermitted reports whether the client's user may use the Pub/Sub
// channel ch (pattern: a PSUBSCRIBE pattern, compared as it is), for the
// Pub/Sub commands' own checks.
func (c *Client) ChannelPermitted(ch []byte, pattern bool) bool {
	u := c.user.Load()
	return u == nil || u.open.Load() || u.rules.Load().channelOK(ch, pattern)
}

// UserName is the name of the user the client is authenticated as.
func (c *Client) UserName() string {
	if u := c.user.Load(); u != nil {
		return u.name
	}
	return "default"
}

// ---- authentication ----

// authenticate checks user and pass (ACLAuthenticateUser): on success the
// client becomes the user; on failure the failure is logged, counted and
// reported in the server log at most once per authLogEvery.
func (c *Client) authenticate(cmdName, user, pass []byte) bool {
	u := c.eng.acl.user(string(user))
	if u != nil && u.rules.Load().passwordOK(pass) {
		c.user.Store(u)
		c.Authed = true
		return true
	}
	if u == nil {
		hashPassword(pass) // as long as for a user that exists
	}
	ctx := ctxToplevel
	if c.tx.active {
		ctx = ctxMulti
	}
	e := c.eng
	e.acl.denied[aclDeniedAuth].Add(1)
	e.aclLog(c, aclDeniedAuth, ctx, string(cmdName), string(user))
	e.acl.authLog.failed(e.log, c.Addr, string(user))
	return false
}

// authLogEvery is the least time between two log lines about failed
// authentications; a variable so that a test can shorten it.
var authLogEvery = 5 * time.Second

// authLogLimiter turns failed authentications into at most one log line
// per authLogEvery: the first failure of a quiet period is logged at once,
// the ones after it are counted and summed up when the period ends.
type authLogLimiter struct {
	mu         sync.Mutex
	armed      bool
	every      time.Duration // authLogEvery when the period began
	pending    int64
	addr, user string
}

func (l *authLogLimiter) failed(log *slog.Logger, addr, user string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(user) > 128 {
		user = user[:128]
	}
	l.addr, l.user = addr, user
	if l.armed {
		l.pending++
		return
	}
	l.armed, l.every = true, authLogEvery
	log.Warn("failed authentication", "addr", addr, "user", user)
	time.AfterFunc(l.every, func() { l.flush(log) })
}

func (l *authLogLimiter) flush(log *slog.Logger) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pending == 0 {
		l.armed = false
		return
	}
	log.Warn("failed authentications", "count", l.pending, "seconds", l.every.Seconds(), "last_addr", l.addr, "last_user", l.user)
	l.pending = 0
	time.AfterFunc(l.every, func() { l.flush(log) })
}

// ---- the ACL log ----

// aclLogEntry is an entry of ACL LOG; similar events within a minute
// share one (count).
type aclLogEntry struct {
	count            int64
	reason, context  int
	object, username string
	ctime            int64 // Unix ms of the last event
	cinfo            string
}

// aclLog adds an event to the ACL log (addACLLogEntry): it bumps a similar
// entry among the ten newest, or adds one, keeping acllog-max-len.
func (e *Engine) aclLog(c *Client, reason, ctx int, object, username string) {
	now := time.Now().UnixMilli()
	cinfo := c.infoLine(true, nil)
	max := int(e.cfg.Int(config.ACLLogMaxLen))
	a := &e.acl
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := 0; i < len(a.log) && i < 10; i++ {
		le := a.log[i]
		d := le.ctime - now
		if d < 0 {
			d = -d
		}
		if le.reason == reason && le.context == ctx && d <= 60000 && le.object == object && le.username == username {
			le.count++
			le.ctime, le.cinfo = now, cinfo
			copy(a.log[1:i+1], a.log[:i])
			a.log[0] = le
			return
		}
	}
	le := &aclLogEntry{count: 1, reason: reason, context: ctx, object: object, username: username, ctime: now, cinfo: cinfo}
	a.log = append(a.log, nil)
	copy(a.log[1:], a.log)
	a.log[0] = le
	if len(a.log) > max {
		clear(a.log[max:])
		a.log = a.log[:max]
	}
}

// ACL subcommand [args]
func cmdACL(c *Client, args [][]byte) { runSubcommand(c, "acl", args) }

// ACL SETUSER username [rule ...]: the rules apply to a copy, all or none.
func cmdACLSetuser(c *Client, args [][]byte) {
	name := string(args[2])
	if hasSpaces(name) {
		c.WriteError(errACLUserSpaces)
		return
	}
	ops := make([]string, len(args)-3)
	for i, a := range args[3:] {
		ops[i] = string(a)
	}
	merged, bad := mergeSelectors(ops)
	if bad >= 0 {
		c.WriteError(sprintf(errACLUnmatched, ops[bad]))
		return
	}
	e := c.eng
	pd := e.pubsubDefault()
	a := &e.acl
	a.mu.Lock()
	defer a.mu.Unlock()
	u := a.users[name]
	var r *aclRules
	if u != nil {
		r = u.rules.Load().clone()
	} else {
		r = newRules(pd)
	}
	for _, op := range merged {
		if err := r.apply(op, pd); err != nil {
			c.WriteError(sprintf(errACLSetuser, op, err))
			return
		}
	}
	if u == nil {
		u = &aclUser{name: name}
		a.users[name] = u
	}
	u.set(r)
	c.WriteOK()
}

// ACL GETUSER username
func cmdACLGetuser(c *Client, args [][]byte) {
	u := c.eng.acl.user(string(args[2]))
	if u == nil {
		c.WriteNull()
		return
	}
	r := u.rules.Load()
	c.WriteMap(6)
	c.WriteBulkString("flags")
	var flags []string
	for _, f := range userFlagNames {
		if r.flags&f.f != 0 {
			flags = append(flags, f.name)
		}
	}
	c.WriteSet(len(flags))
	for _, f := range flags {
		c.WriteBulkString(f)
	}
	c.WriteBulkString("passwords")
	c.WriteArray(len(r.passwords))
	for _, p := range r.passwords {
		c.WriteBulkString(p)
	}
	c.writeSelector(r.selectors[0])
	c.WriteBulkString("selectors")
	c.WriteArray(len(r.selectors) - 1)
	for _, s := range r.selectors[1:] {
		c.WriteMap(3)
		c.writeSelector(s)
	}
}

func (c *Client) writeSelector(s *aclSelector) {
	c.WriteBulkString("commands")
	c.WriteBulkString(s.describeCommands())
	c.WriteBulkString("keys")
	c.WriteBulkString(s.keysText())
	c.WriteBulkString("channels")
	c.WriteBulkString(s.channelsText())
}

// ACL DELUSER username [username ...]
func cmdACLDeluser(c *Client, args [][]byte) {
	for _, a := range args[2:] {
		if string(a) == "default" {
			c.WriteError(errACLDelDefault)
			return
		}
	}
	e := c.eng
	var gone []*aclUser
	e.acl.mu.Lock()
	for _, a := range args[2:] {
		if u := e.acl.users[string(a)]; u != nil {
			delete(e.acl.users, string(a))
			gone = append(gone, u)
		}
	}
	e.acl.mu.Unlock()
	for _, u := range gone {
		e.dropUser(c, u)
	}
	c.WriteInt(int64(len(gone)))
}

// ACL USERS
func cmdACLUsers(c *Client, args [][]byte) {
	users := c.eng.acl.sortedUsers()
	c.WriteArray(len(users))
	for _, u := range users {
		c.WriteBulkString(u.name)
	}
}

// ACL LIST
func cmdACLList(c *Client, args [][]byte) {
	users := c.eng.acl.sortedUsers()
	c.WriteArray(len(users))
	for _, u := range users {
		c.WriteBulkString("user " + u.name + " " + u.rules.Load().describe())
	}
}

// ACL WHOAMI
func cmdACLWhoami(c *Client, args [][]byte) { c.WriteBulkString(c.UserName()) }

// ACL LOAD
func cmdACLLoad(c *Client, args [][]byte) {
	if c.eng.cfg.String(config.ACLFile) == "" {
		c.WriteError(errACLNoFile)
		return
	}
	if msg := c.eng.loadACLFile(c); msg != "" {
		c.WriteError("ERR " + msg)
		return
	}
	c.WriteOK()
}

// ACL SAVE
func cmdACLSave(c *Client, args [][]byte) {
	if c.eng.cfg.String(config.ACLFile) == "" {
		c.WriteError(errACLNoFile)
		return
	}
	if err := c.eng.saveACLFile(); err != nil {
		c.eng.log.Warn("cannot save the ACL file", "file", c.eng.cfg.String(config.ACLFile), "err", err)
		c.WriteError(errACLSave)
		return
	}
	c.WriteOK()
}

// ACL CAT [category]
func cmdACLCat(c *Client, args [][]byte) {
	if len(args) > 3 {
		c.WriteError(sprintf(errACLSubSyntax, errArg(args[1])))
		return
	}
	if len(args) == 2 {
		c.WriteArray(len(aclCategoryNames))
		for _, n := range aclCategoryNames {
			c.WriteBulkString(n)
		}
		return
	}
	bit := categoryBit(string(args[2]))
	if bit == 0 {
		name := cstr(args[2])
		if len(name) > 128 {
			name = name[:128]
		}
		c.WriteError(sprintf(errACLUnknownCat, name))
		return
	}
	var names []string
	for _, cmd := range aclCommands {
		if cmd.aclCats&bit != 0 {
			names = append(names, cmd.Name)
		}
	}
	c.WriteArray(len(names))
	for _, n := range names {
		c.WriteBulkString(n)
	}
}

// ACL GENPASS [bits]
func cmdACLGenpass(c *Client, args [][]byte) {
	if len(args) > 3 {
		c.WriteError(sprintf(errACLSubSyntax, errArg(args[1])))
		return
	}
	bits := int64(256)
	if len(args) == 3 {
		n, ok := redisnum.ParseInt(args[2])
		if !ok {
			c.WriteError(errNotInt)
			return
		}
		bits = n
	}
	if bits <= 0 || bits > 4096 {
		c.WriteError(errACLGenpass)
		return
	}
	chars := (bits + 3) / 4
	buf := make([]byte, (chars+1)/2)
	if _, err := rand.Read(buf); err != nil {
		c.WriteError("ERR " + err.Error())
		return
	}
	c.WriteBulkString(hex.EncodeToString(buf)[:chars])
}

// ACL LOG [count|RESET]
func cmdACLLog(c *Client, args [][]byte) {
	if len(args) > 3 {
		c.WriteError(sprintf(errACLSubSyntax, errArg(args[1])))
		return
	}
	a := &c.eng.acl
	count := int64(10)
	if len(args) == 3 {
		if strings.EqualFold(string(args[2]), "reset") {
			a.mu.Lock()
			a.log = nil
			a.mu.Unlock()
			c.WriteOK()
			return
		}
		n, ok := redisnum.ParseInt(args[2])
		if !ok {
			c.WriteError(errNotInt)
			return
		}
		count = max(n, 0)
	}
	a.mu.Lock()
	entries := make([]aclLogEntry, 0, min(count, int64(len(a.log))))
	for _, le := range a.log {
		if int64(len(entries)) >= count {
			break
		}
		entries = append(entries, *le)
	}
	a.mu.Unlock()
	now := time.Now().UnixMilli()
	c.WriteArray(len(entries))
	for _, le := range entries {
		c.WriteMap(7)
		c.WriteBulkString("count")
		c.WriteInt(le.count)
		c.WriteBulkString("reason")
		c.WriteBulkString([]string{"", "command", "key", "auth", "channel"}[le.reason])
		c.WriteBulkString("context")
		c.WriteBulkString([]string{"toplevel", "multi", "lua"}[le.context])
		c.WriteBulkString("object")
		c.WriteBulkString(le.object)
		c.WriteBulkString("username")
		c.WriteBulkString(le.username)
		c.WriteBulkString("age-seconds")
		c.WriteDouble(float64(now-le.ctime) / 1000)
		c.WriteBulkString("client-info")
		c.WriteBulkString(le.cinfo)
	}
}

// ACL DRYRUN username command [arg ...]
func cmdACLDryrun(c *Client, args [][]byte) {
	u := c.eng.acl.user(string(args[2]))
	if u == nil {
		c.WriteError(sprintf(errACLNoUser, errArg(args[2])))
		return
	}
	cargs := args[3:]
	cmd := lookupCommand(cargs[0])
	if cmd != nil && cmd.subs != nil && len(cargs) > 1 {
		cmd = lookupIn(cmd.subs, cargs[1])
	}
	if cmd == nil {
		c.WriteError(sprintf(errACLNoCommand, errArg(cargs[0])))
		return
	}
	if !cmd.arityOK(len(cargs)) {
		c.WriteError(sprintf(errWrongArgs, cmd.Name))
		return
	}
	res, idx, buf := u.rules.Load().check(cmd, cargs, c.keyBuf)
	c.keyBuf = buf
	switch res {
	case aclOK:
		c.WriteOK()
	case aclDeniedCmd:
		c.WriteBulkString(sprintf("This user has no permissions to run the '%s' command", cmd.Name))
	case aclDeniedKey:
		c.WriteBulkString(sprintf("This user has no permissions to access the '%s' key", cargs[idx]))
	default:
		c.WriteBulkString(sprintf("This user has no permissions to access the '%s' channel", cargs[idx]))
	}
}

// ACL HELP
func cmdACLHelp(c *Client, args [][]byte) {
	c.writeHelp(args[0], []string{
		"CAT [<category>]",
		"    List all commands that belong to <category>, or all command categories",
		"    when no category is specified.",
		"DELUSER <username> [<username> ...]",
		"    Delete a list of users.",
		"DRYRUN <username> <command> [<arg> ...]",
		"    Returns whether the user can execute the given command without executing the command.",
		"GETUSER <username>",
		"    Get the user's details.",
		"GENPASS [<bits>]",
		"    Generate a secure 256-bit user password. The optional `bits` argument can",
		"    be used to specify a different size.",
		"LIST",
		"    Show users details in config file format.",
		"LOAD",
		"    Reload users from the ACL file.",
		"LOG [<count> | RESET]",
		"    Show the ACL log entries.",
		"SAVE",
		"    Save the current config to the ACL file.",
		"SETUSER <username> <attribute> [<attribute> ...]",
		"    Create or modify a user with the specified attributes.",
		"USERS",
		"    List all the registered usernames.",
		"WHOAMI",
		"    Return the current connection username.",
	})
}

// infoACL writes INFO's ACL counters (in the stats section).
func infoACL(c *Client, ib *infoBuilder) {
	d := &c.eng.acl.denied
	ib.num("acl_access_denied_auth", d[aclDeniedAuth].Load())
	ib.num("acl_access_denied_cmd", d[aclDeniedCmd].Load())
	ib.num("acl_access_denied_key", d[aclDeniedKey].Load())
	ib.num("acl_access_denied_channel", d[aclDeniedChannel].Load())
}

// userOpen reports whether the client's user is allowed everything.
func (c *Client) userOpen() bool {
	u := c.user.Load()
	return u == nil || u.open.Load()
}
