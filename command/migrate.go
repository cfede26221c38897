package command

// MIGRATE and RESTORE-ASKING, as Redis's migrateCommand (src/cluster.c):
// the keys go to the target as RESTORE-ASKING (RESTORE outside cluster
// mode) with ratekv's DUMP payload, which keeps a CL.THROTTLE's state
// exactly, and their remaining TTL; a key the target acknowledged is
// deleted here (journaled and replicated as DEL) unless COPY. The
// connection to a target is cached for 10 s, as Redis's.
//
// Redis runs MIGRATE's round trip on its only thread. Here the network
// work runs in a goroutine of its own while the client waits, as WAIT's
// client does (Client.Blocked), so that the event loop goes on serving
// its other clients. What Redis's blocking gave for free, that nobody
// changes a key between its DUMP and its deletion, a fence gives: the
// handler dumps the keys with their shards held and fences them before it
// lets go; a command that may write and finds a fenced key once it holds
// the key's shard (Client.call, EXEC) lets go and waits until the MIGRATE
// is over, then runs again from the start, so that it is routed anew (to
// the target, with -ASK, once the key is gone); a read goes on. Inside
// EXEC or a script the shards are held throughout, and MIGRATE runs there
// and then, as Redis.
//
// CLUSTER SETSLOT NODE's commit through the control plane waits off the
// loop the same way (runAsync).

import (
	"bufio"
	"errors"
	"io"
	"math"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/ratekv/ratekv/internal/redisnum"
)

func init() {
	register(
		&Command{Name: "migrate", Arity: -6, Flags: FlagWrite, FirstKey: 3, LastKey: 3, Step: 1, Keys: migrateKeys, KeyWord: "KEYS", Handler: cmdMigrate,
			Summary: "Atomically transfers a key from one Redis instance to another.", Group: "generic"},
		&Command{Name: "restore-asking", Arity: -4, Flags: FlagWrite | FlagDenyOOM | FlagAsking, FirstKey: 1, LastKey: 1, Step: 1,
			Handler: cmdRestore, Summary: "An internal command for migrating keys in a cluster.", Group: "server"},
	)
}

// asyncReply is the reply of a command that waits: done is closed once
// reply, which runs on the client's goroutine, may be called.
type asyncReply struct {
	done  <-chan struct{}
	reply func(c *Client)
}

// runAsync runs work, which may wait on the network, off the client's
// event loop, and replies its outcome ("": OK, else the error) once it is
// done; the runtime runs nothing more of the client's until then. Inside
// EXEC or a script it runs at once.
func (c *Client) runAsync(work func() string) {
	if c.inExec {
		c.writeOutcome(work())
		return
	}
	done := make(chan struct{})
	a := &asyncReply{done: done}
	c.async = a
	go func() {
		msg := work()
		a.reply = func(c *Client) { c.writeOutcome(msg) }
		close(done)
		if p := c.Peer; p != nil {
			p.Wake()
		}
	}()
}

func (c *Client) writeOutcome(msg string) {
	if msg == "" {
		c.WriteOK()
		return
	}
	c.WriteError(msg)
}

// migrateOpts is a parsed MIGRATE.
type migrateOpts struct {
	addr          string
	db            int64
	timeout       time.Duration
	copy, replace bool
	auth          bool // AUTH or AUTH2 given
	user, pass    []byte
	first, n      int // the keys are args[first:first+n]
}

// migrateKeys finds MIGRATE's keys as Redis's migrateGetKeys: the key
// argument, or with KEYS (after the options, whose arguments it skips)
// the arguments after it; none when KEYS follows a key that is not "".
func migrateKeys(args [][]byte, dst []int) []int {
	first, n, bad := migrateKeyRange(args)
	if bad {
		return dst
	}
	for i := first; i < first+n; i++ {
		dst = append(dst, i)
	}
	return dst
}

func migrateKeyRange(args [][]byte) (first, n int, bad bool) {
	first, n = 3, 1
	for i := 6; i < len(args); i++ {
		switch a := args[i]; {
		case equalFold(a, "keys"):
			if len(args[3]) > 0 {
				return 0, 0, true
			}
			return i + 1, len(args) - i - 1, false
		case equalFold(a, "auth"):
			i++
		case equalFold(a, "auth2"):
			i += 2
		}
	}
	return first, n, false
}

// parseMigrate parses MIGRATE's arguments in Redis's order of checks.
func parseMigrate(args [][]byte) (migrateOpts, string) {
	o := migrateOpts{first: 3, n: 1}
	for j := 6; j < len(args); j++ {
		more := len(args) - 1 - j
		switch a := args[j]; {
		case equalFold(a, "copy"):
			o.copy = true
		case equalFold(a, "replace"):
			o.replace = true
		case equalFold(a, "auth"):
			if more < 1 {
				return o, errSyntax
			}
			j++
			o.auth, o.pass = true, args[j]
		case equalFold(a, "auth2"):
			if more < 2 {
				return o, errSyntax
			}
			o.auth, o.user, o.pass = true, args[j+1], args[j+2]
			j += 2
		case equalFold(a, "keys"):
			if len(args[3]) != 0 {
				return o, errMigrateKeysArg
			}
			o.first, o.n = j+1, len(args)-j-1
			j = len(args)
		default:
			return o, errSyntax
		}
	}
	timeout, ok := redisnum.ParseInt(args[5])
	if !ok {
		return o, errNotInt
	}
	if o.db, ok = redisnum.ParseInt(args[4]); !ok {
		return o, errNotInt
	}
	if timeout <= 0 {
		timeout = 1000
	}
	o.timeout = time.Duration(min(timeout, math.MaxInt64/int64(time.Millisecond))) * time.Millisecond
	o.addr = net.JoinHostPort(string(args[1]), string(args[2]))
	return o, ""
}

// migrateJob is one MIGRATE's keys in flight: their names, payloads and
// TTLs taken with their shards held, and the fence that keeps them
// unchanged until it ends.
type migrateJob struct {
	o        migrateOpts
	keys     [][]byte
	ttls     []int64 // ms; 0: none
	payloads [][]byte
	acked    []bool // the target stored the key

	done     chan struct{} // closed when the job is over (the fence lifted)
	released bool          // done is closed (guarded by routeState.mu)
	waiters  []*Client     // clients waiting behind the fence (guarded by routeState.mu)
}

// MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE] [AUTH password] [AUTH2 username password] [KEYS key [key ...]]
func cmdMigrate(c *Client, args [][]byte) {
	o, msg := parseMigrate(args)
	if msg != "" {
		c.WriteError(msg)
		return
	}
	j := &migrateJob{o: o}
	st := c.eng.store
	for _, key := range args[o.first : o.first+o.n] {
		e := st.Lookup(key, c.nowMs)
		if e == nil {
			continue
		}
		var ttl int64
		if at := e.ExpireAt(); at != 0 {
			ttl = max(at-c.nowMs, 1)
		}
		j.keys = append(j.keys, append([]byte(nil), key...))
		j.ttls = append(j.ttls, ttl)
		j.payloads = append(j.payloads, st.AppendDump(nil, e))
	}
	if len(j.keys) == 0 {
		// Nothing to move: not an error, as a key may have just expired.
		c.WriteSimple("NOKEY")
		return
	}
	j.acked = make([]bool, len(j.keys))
	e := c.eng
	if c.inExec {
		// The shards are held: the keys go now, and the journal logs
		// their deletion as this command's effect.
		msg := j.transfer(e, e.cluster)
		if n := j.ackedKeys(); !o.copy {
			for _, k := range n[1:] {
				st.Delete(k, c.nowMs)
			}
		}
		c.writeOutcome(msg)
		return
	}
	if !o.copy {
		e.fenceKeys(j)
	}
	c.runAsync(func() string {
		msg := j.transfer(e, e.cluster)
		if n := j.ackedKeys(); !o.copy && len(n) > 1 {
			e.deleteMigrated(n)
		}
		if !o.copy {
			e.liftFence(j)
		}
		return msg
	})
}

// ackedKeys returns DEL and the keys the target stored, as the command
// that deletes them here ("DEL" alone when none).
func (j *migrateJob) ackedKeys() [][]byte {
	del := [][]byte{[]byte("DEL")}
	for i, ok := range j.acked {
		if ok {
			del = append(del, j.keys[i])
		}
	}
	return del
}

// deleteMigrated deletes the keys the target acknowledged, through the
// command table so that the journal and the replicas see a DEL, with a
// client of the engine's own that routing and fences let through.
func (e *Engine) deleteMigrated(del [][]byte) {
	c := &Client{eng: e, proto: 2, Authed: true, internal: true, Addr: "migrate", LocalAddr: "migrate"}
	c.Run(commands["del"], del, nil)
	c.EndBatch()
	if err := c.SyncJournal(); err != nil {
		e.log.Error("MIGRATE: journaling the deletion of migrated keys failed", "err", err)
	}
}

// fenceSet maps each key in flight to its MIGRATE; replaced as a whole
// under routeState.mu.
type fenceSet struct{ keys map[string]*migrateJob }

// fenceKeys fences j's keys; their shards are held.
func (e *Engine) fenceKeys(j *migrateJob) {
	j.done = make(chan struct{})
	e.rt.mu.Lock()
	defer e.rt.mu.Unlock()
	f := &fenceSet{keys: map[string]*migrateJob{}}
	if old := e.rt.fence.Load(); old != nil {
		for k, o := range old.keys {
			f.keys[k] = o
		}
	}
	for _, k := range j.keys {
		f.keys[string(k)] = j
	}
	e.rt.fence.Store(f)
}

// liftFence ends j's fence and wakes the clients that wait behind it.
func (e *Engine) liftFence(j *migrateJob) {
	e.rt.mu.Lock()
	var f *fenceSet
	if old := e.rt.fence.Load(); old != nil {
		f = &fenceSet{keys: map[string]*migrateJob{}}
		for k, o := range old.keys {
			if o != j {
				f.keys[k] = o
			}
		}
		if len(f.keys) == 0 {
			f = nil
		}
	}
	e.rt.fence.Store(f)
	j.released = true
	waiters := j.waiters
	j.waiters = nil
	e.rt.mu.Unlock()
	close(j.done)
	for _, c := range waiters {
		if p := c.Peer; p != nil {
			p.Wake()
		}
	}
}

// fencedOff, in Client.call with cmd's shards held, finds whether one of
// cmd's keys is in flight; if so it lets go of the shards and makes the
// client wait for that MIGRATE, then run the command again.
func (c *Client) fencedOff(cmd *Command, args [][]byte) bool {
	if c.replaying || c.internal {
		return false
	}
	j := c.fencedJob(cmd, args)
	if j == nil {
		return false
	}
	c.unlock()
	c.waitBehind(j, cmd, args)
	return true
}

// fencedJob returns the MIGRATE one of cmd's keys is fenced by, or nil.
// Only a command that may write waits: a read sees the key as it is until
// the MIGRATE deletes it, as it would have before the MIGRATE.
func (c *Client) fencedJob(cmd *Command, args [][]byte) *migrateJob {
	f := c.eng.rt.fence.Load()
	if f == nil || cmd.Flags&FlagWrite == 0 && cmd.Flags&(FlagScript|FlagReadOnly) != FlagScript {
		return nil
	}
	c.keyBuf = cmd.keyIndexes(args, c.keyBuf[:0])
	for _, i := range c.keyBuf {
		if j := f.keys[string(args[i])]; j != nil {
			return j
		}
	}
	return nil
}

// txFencedJob is fencedJob for EXEC's queue.
func (c *Client) txFencedJob() *migrateJob {
	tx := &c.tx
	first := 0
	for i, cmd := range tx.cmds {
		cargs := tx.args[first : first+tx.nargs[i]]
		first += tx.nargs[i]
		if j := c.fencedJob(cmd, cargs); j != nil {
			return j
		}
	}
	return nil
}

// waitBehind makes the client wait for j, then run cmd args again (from
// the dispatcher, so that it is routed again), with ASKING as it was.
func (c *Client) waitBehind(j *migrateJob, cmd *Command, args [][]byte) {
	saved := make([][]byte, len(args))
	for i, a := range args {
		saved[i] = append([]byte(nil), a...)
	}
	asking := c.asking
	c.async = &asyncReply{done: j.done, reply: func(c *Client) {
		c.asking = asking
		c.Run(cmd, saved, nil)
	}}
	e := c.eng
	e.rt.mu.Lock()
	released := j.released
	if !released {
		j.waiters = append(j.waiters, c)
	}
	e.rt.mu.Unlock()
	if released && c.Peer != nil {
		c.Peer.Wake()
	}
}

// transfer sends j's keys to the target and reads its replies, as Redis's
// migrateCommand: one retry on a fresh connection when a cached one
// failed before any reply (not on a timeout). It returns the error reply,
// or "" when the target stored every key; j.acked says which it did.
func (j *migrateJob) transfer(e *Engine, cluster bool) string {
	o := &j.o
	retry := true
	for {
		mc, err := e.rt.conns.get(e, o.addr, o.timeout)
		if err != nil {
			var dns *net.DNSError
			var bad *net.AddrError
			if isTimeout(err) || errors.As(err, &dns) || errors.As(err, &bad) {
				return errMigrateConnect
			}
			// Redis's non-blocking connect to a port that refuses
			// succeeds, and its first write fails.
			if retry {
				retry = false
				continue
			}
			return sprintf(errMigrateIO, "writing")
		}
		msg, sockErr, timedOut, writing := j.exchange(mc, cluster)
		switch {
		case sockErr && !timedOut && retry && !j.anyAcked() && msg == "":
			mc.nc.Close()
			retry = false
			continue
		case sockErr:
			mc.nc.Close()
			if msg == "" {
				what := "reading"
				if writing {
					what = "writing"
				}
				msg = sprintf(errMigrateIO, what)
			}
			return msg
		}
		if msg == "" {
			mc.db = o.db
		}
		e.rt.conns.put(o.addr, mc)
		return msg
	}
}

func (j *migrateJob) anyAcked() bool {
	for _, ok := range j.acked {
		if ok {
			return true
		}
	}
	return false
}

// exchange writes AUTH, SELECT and the RESTOREs on mc and reads their
// replies: msg is the target's first error (as MIGRATE replies it),
// sockErr a failed read or write (timedOut: by its deadline; writing: a
// write).
func (j *migrateJob) exchange(mc *migrateConn, cluster bool) (msg string, sockErr, timedOut, writing bool) {
	o := &j.o
	var b []byte
	if o.auth {
		if o.user != nil {
			b = appendCommand(b, []byte("AUTH"), o.user, o.pass)
		} else {
			b = appendCommand(b, []byte("AUTH"), o.pass)
		}
	}
	sel := mc.db != o.db
	if sel {
		b = appendCommand(b, []byte("SELECT"), strconv.AppendInt(nil, o.db, 10))
	}
	name := []byte("RESTORE")
	if cluster {
		name = []byte("RESTORE-ASKING")
	}
	for i, k := range j.keys {
		ttl := strconv.AppendInt(nil, j.ttls[i], 10)
		if o.replace {
			b = appendCommand(b, name, k, ttl, j.payloads[i], []byte("REPLACE"))
		} else {
			b = appendCommand(b, name, k, ttl, j.payloads[i])
		}
	}
	mc.deadline(o.timeout, true)
	if _, err := mc.nc.Write(b); err != nil {
		return "", true, isTimeout(err), true
	}
	read := func() (string, error) {
		mc.deadline(o.timeout, false)
		return readReplyLine(mc.rd)
	}
	var authReply, selReply string
	var err error
	if o.auth {
		if authReply, err = read(); err != nil {
			return "", true, isTimeout(err), false
		}
	}
	if sel {
		if selReply, err = read(); err != nil {
			return "", true, isTimeout(err), false
		}
	}
	for i := range j.keys {
		line, err := read()
		if err != nil {
			return msg, true, isTimeout(err), false
		}
		failed := ""
		switch {
		case o.auth && isErrorLine(authReply):
			failed = authReply
		case sel && isErrorLine(selReply):
			failed = selReply
		case isErrorLine(line):
			failed = line
		}
		if failed == "" {
			j.acked[i] = true
			continue
		}
		if msg == "" {
			mc.db = -1 // as Redis: the target's database is not known now
			msg = sprintf(errMigrateTarget, failed[1:])
		}
	}
	return msg, false, false, false
}

func isErrorLine(s string) bool { return len(s) > 0 && s[0] == '-' }

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// appendCommand appends args as a RESP array of bulk strings.
func appendCommand(b []byte, args ...[]byte) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, '\r', '\n')
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}

// readReplyLine reads one reply line without its CRLF; a longer line than the
// reader's buffer keeps its start, as Redis's connSyncReadLine into a
// fixed buffer does.
func readReplyLine(rd *bufio.Reader) (string, error) {
	line, err := rd.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		head := string(line)
		for errors.Is(err, bufio.ErrBufferFull) {
			_, err = rd.ReadSlice('\n')
		}
		line = []byte(head)
	}
	if err != nil {
		return "", err
	}
	n := len(line)
	for n > 0 && (line[n-1] == '\n' || line[n-1] == '\r') {
		n--
	}
	return string(line[:n]), nil
}

// Connections MIGRATE keeps to its targets, as Redis's
// migrate_cached_sockets: one per address, closed after 10 s unused, at
// most 64.
const (
	migrateConnTTL = 10 * time.Second
	migrateConnMax = 64
)

type migrateConns struct {
	mu sync.Mutex
	m  map[string]*migrateConn // idle connections by address
}

type migrateConn struct {
	nc    io.ReadWriteCloser
	rd    *bufio.Reader
	db    int64 // the database the target has selected; -1: not known
	timer *time.Timer
}

// deadline sets the connection's write (or read) deadline to timeout
// from now.
func (mc *migrateConn) deadline(timeout time.Duration, write bool) {
	d, ok := mc.nc.(deadliner)
	switch {
	case !ok:
	case write:
		d.SetWriteDeadline(time.Now().Add(timeout))
	default:
		d.SetReadDeadline(time.Now().Add(timeout))
	}
}

// get takes the idle connection to addr, or dials one with the runtime's
// dialer (SetDialer).
func (mc *migrateConns) get(e *Engine, addr string, timeout time.Duration) (*migrateConn, error) {
	mc.mu.Lock()
	if c := mc.m[addr]; c != nil {
		delete(mc.m, addr)
		c.timer.Stop()
		mc.mu.Unlock()
		return c, nil
	}
	mc.mu.Unlock()
	e.repl.mu.Lock()
	dial := e.repl.dial
	e.repl.mu.Unlock()
	if dial == nil {
		return nil, errors.New("no network to connect with")
	}
	nc, err := dial(addr, timeout)
	if err != nil {
		return nil, err
	}
	return &migrateConn{nc: nc, rd: bufio.NewReaderSize(nc, 1024), db: -1}, nil
}

// put keeps c as addr's idle connection, closing it instead when there is
// one already.
func (mc *migrateConns) put(addr string, c *migrateConn) {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	if mc.m == nil {
		mc.m = map[string]*migrateConn{}
	}
	if mc.m[addr] != nil {
		c.nc.Close()
		return
	}
	if len(mc.m) >= migrateConnMax {
		for a, o := range mc.m { // one at random, as Redis
			o.timer.Stop()
			o.nc.Close()
			delete(mc.m, a)
			break
		}
	}
	mc.m[addr] = c
	c.timer = time.AfterFunc(migrateConnTTL, func() {
		mc.mu.Lock()
		defer mc.mu.Unlock()
		if mc.m[addr] == c {
			delete(mc.m, addr)
			c.nc.Close()
		}
	})
}

// execCmd is EXEC's table entry, for running EXEC again.
func (e *Engine) execCmd() *Command { return commands["exec"] }
