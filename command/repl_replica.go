package command

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/journal"
	"github.com/ratekv/ratekv/persist"
)

// The replica's side: upstream connects to the primary, synchronizes and
// applies the stream, reconnecting after a failure at most about once a
// second, with one log line per distinct cause.

// Replica link states (ROLE's names).
const (
	upConnect = iota
	upConnecting
	upHandshake
	upTransfer
	upConnected
)

var upStateNames = [...]string{"connect", "connecting", "handshake", "sync", "connected"}

// errTryLater: the primary cannot serve a PSYNC now (-LOADING,
// -NOMASTERLINK).
var errTryLater = errors.New("the primary cannot synchronize now")

// upstream is a replica's link to its primary.
type upstream struct {
	r          *replication
	host, port string
	stop       chan struct{}
	stopOnce   sync.Once
	done       chan struct{} // closed when run returns
	kick       chan struct{} // retry now (masterauth changed)

	state     atomic.Int32
	up        atomic.Bool
	lastIO    atomic.Int64 // Unix ns of the last byte from the primary
	downSince atomic.Int64 // Unix ns the link went down (0: never up)

	mu   sync.Mutex // guards conn and writes to it
	conn io.ReadWriteCloser

	client atomic.Pointer[Client] // the primary's client while it streams (flags=M)
}

func newUpstream(r *replication, host, port string) *upstream {
	return &upstream{r: r, host: host, port: port, stop: make(chan struct{}), done: make(chan struct{}), kick: make(chan struct{}, 1)}
}

func (u *upstream) stateName() string { return upStateNames[u.state.Load()] }

// cancel ends the link for good (REPLICAOF elsewhere, NO ONE, shutdown).
func (u *upstream) cancel() {
	u.stopOnce.Do(func() {
		close(u.stop)
		u.mu.Lock()
		if u.conn != nil {
			u.conn.Close()
		}
		u.mu.Unlock()
	})
}

func (u *upstream) stopped() bool {
	select {
	case <-u.stop:
		return true
	default:
		return false
	}
}

// run connects and reconnects until cancelled.
func (u *upstream) run() {
	defer close(u.done)
	r := u.r
	backoff := time.Second
	last := ""
	for !u.stopped() {
		err := u.once()
		if u.stopped() {
			return
		}
		if u.up.Swap(false) || u.downSince.Load() == 0 {
			u.downSince.Store(time.Now().UnixNano())
		}
		u.state.Store(upConnect)
		r.updateGate()
		msg := "the link was closed"
		if err != nil {
			msg = err.Error()
		}
		if msg != last {
			r.log.Warn("replication from the primary failed; retrying", "primary", u.host+":"+u.port, "err", msg)
			last, backoff = msg, time.Second
		} else {
			backoff = min(backoff*2, 5*time.Second)
		}
		select {
		case <-u.stop:
			return
		case <-u.kick:
		case <-time.After(backoff):
		}
	}
}

// timeout is repl-timeout.
func (u *upstream) timeout() time.Duration {
	return time.Duration(u.r.eng.cfg.Int(config.ReplTimeout)) * time.Second
}

// once runs one connection: handshake, synchronization, stream.
func (u *upstream) once() error {
	r := u.r
	cfg := r.eng.cfg
	u.state.Store(upConnecting)
	r.mu.Lock()
	dial := r.dial
	r.mu.Unlock()
	if dial == nil {
		return errors.New("no network to connect with")
	}
	conn, err := dial(u.host+":"+u.port, u.timeout())
	if err != nil {
		return fmt.Errorf("cannot connect to the primary: %w", err)
	}
	u.mu.Lock()
	if u.stopped() {
		u.mu.Unlock()
		conn.Close()
		return nil
	}
	u.conn = conn
	u.mu.Unlock()
	defer conn.Close()
	br := bufio.NewReaderSize(conn, 64<<10)
	u.state.Store(upHandshake)
	cmd := func(args ...string) (string, error) {
		b := make([][]byte, len(args))
		for i, a := range args {
			b[i] = []byte(a)
		}
		u.readDeadline(conn)
		if err := u.write(journal.AppendCommand(nil, b...)); err != nil {
			return "", err
		}
		return readLine(br)
	}
	reply, err := cmd("PING")
	if err != nil {
		return fmt.Errorf("no reply to PING from the primary: %w", err)
	}
	if strings.HasPrefix(reply, "-") && !strings.HasPrefix(reply, "-NOAUTH") && !strings.HasPrefix(reply, "-NOPERM") {
		return fmt.Errorf("error reply to PING from the primary: %s", reply[1:])
	}
	if pass := cfg.String(config.MasterAuth); pass != "" {
		args := []string{"AUTH", pass}
		if user := cfg.String(config.MasterUser); user != "" {
			args = []string{"AUTH", user, pass}
		}
		if reply, err = cmd(args...); err != nil {
			return err
		}
		if reply != "+OK" {
			return fmt.Errorf("unable to AUTH to the primary (check masterauth and masteruser): %s", strings.TrimPrefix(reply, "-"))
		}
	}
	port := cfg.Int(config.ReplicaAnnouncePort)
	if port == 0 && r.eng.host != nil {
		port, _ = strconv.ParseInt(r.eng.host.Port(), 10, 64)
	}
	if reply, err = cmd("REPLCONF", "listening-port", strconv.FormatInt(port, 10)); err != nil {
		return err
	}
	if strings.HasPrefix(reply, "-NOAUTH") {
		return errors.New("the primary requires a password (set masterauth)")
	}
	if ip := cfg.String(config.ReplicaAnnounceIP); ip != "" {
		if _, err = cmd("REPLCONF", "ip-address", ip); err != nil {
			return err
		}
	}
	if reply, err = cmd("REPLCONF", "capa", "eof", "capa", "psync2", "capa", "ratekv"); err != nil {
		return err
	}
	if strings.HasPrefix(reply, "-") {
		return fmt.Errorf("the primary refused REPLCONF (is it a ratekv with replication?): %s", reply[1:])
	}
	r.mu.Lock()
	id, off := "?", int64(-1)
	if r.bl != nil {
		id, off = r.replID, r.bl.end.Load()+1
	}
	r.mu.Unlock()
	if reply, err = cmd("PSYNC", id, strconv.FormatInt(off, 10)); err != nil {
		return err
	}
	for reply == "" { // newlines: the primary keeps the link alive before it answers
		u.readDeadline(conn)
		if reply, err = readLine(br); err != nil {
			return err
		}
	}
	switch {
	case strings.HasPrefix(reply, "+FULLRESYNC "):
		f := strings.Fields(reply)
		if len(f) != 3 {
			return fmt.Errorf("bad reply to PSYNC from the primary: %s", reply)
		}
		noff, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return fmt.Errorf("bad reply to PSYNC from the primary: %s", reply)
		}
		if err := u.fullSync(conn, br, f[1], noff); err != nil {
			return err
		}
	case reply == "+CONTINUE" || strings.HasPrefix(reply, "+CONTINUE "):
		nid := strings.TrimSpace(strings.TrimPrefix(reply, "+CONTINUE"))
		r.mu.Lock()
		if nid != "" && nid != r.replID {
			// The primary's id changed (a promotion): the one followed
			// until now becomes the second, as Redis's PSYNC2.
			r.replID2, r.secondOff, r.replID = r.replID, r.bl.end.Load()+1, nid
		}
		r.mu.Unlock()
		r.log.Info("partial resynchronization with the primary accepted", "primary", u.host+":"+u.port, "offset", off-1)
	case strings.HasPrefix(reply, "-NOMASTERLINK"), strings.HasPrefix(reply, "-LOADING"):
		return fmt.Errorf("%w: %s", errTryLater, reply[1:])
	case strings.HasPrefix(reply, "-"):
		return fmt.Errorf("the primary refused PSYNC: %s", reply[1:])
	default:
		return fmt.Errorf("unexpected reply to PSYNC from the primary: %s", reply)
	}
	return u.stream(conn, br)
}

// write sends b to the primary.
func (u *upstream) write(b []byte) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.conn == nil {
		return io.ErrClosedPipe
	}
	if d, ok := u.conn.(deadliner); ok {
		d.SetWriteDeadline(time.Now().Add(u.timeout()))
	}
	_, err := u.conn.Write(b)
	return err
}

func (u *upstream) readDeadline(conn io.ReadWriteCloser) {
	if d, ok := conn.(deadliner); ok {
		d.SetReadDeadline(time.Now().Add(u.timeout()))
	}
}

// readLine reads one reply line, without its CRLF.
func readLine(br *bufio.Reader) (string, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return "", err
	}
	if len(line) > 64<<10 {
		return "", errors.New("reply line too long")
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// fullSync receives the primary's snapshot and loads it in place of the
// keyspace.
func (u *upstream) fullSync(conn io.ReadWriteCloser, br *bufio.Reader, id string, off int64) error {
	r := u.r
	u.state.Store(upTransfer)
	var line string
	for {
		u.readDeadline(conn)
		var err error
		if line, err = readLine(br); err != nil {
			return fmt.Errorf("reading the snapshot's length from the primary: %w", err)
		}
		if line != "" { // a newline: the primary's keepalive
			break
		}
	}
	if strings.HasPrefix(line, "$EOF:") {
		return errors.New("the primary sent a diskless RDB stream: it is a Redis server, and ratekv replicates only from ratekv")
	}
	if !strings.HasPrefix(line, "$") {
		return fmt.Errorf("bad snapshot header from the primary: %q", line)
	}
	size, err := strconv.ParseInt(line[1:], 10, 64)
	if err != nil || size < 0 {
		return fmt.Errorf("bad snapshot length from the primary: %q", line)
	}
	dir := r.eng.cfg.String(config.Dir)
	f, err := os.CreateTemp(dir, "temp-sync-*.rkv")
	if err != nil {
		return fmt.Errorf("cannot store the primary's snapshot: %w", err)
	}
	path := f.Name()
	defer os.Remove(path)
	buf := make([]byte, 256<<10)
	var got int64
	for got < size {
		u.readDeadline(conn)
		n, err := br.Read(buf[:min(int64(len(buf)), size-got)])
		if got == 0 && n >= 5 && bytes.HasPrefix(buf[:n], []byte("REDIS")) {
			f.Close()
			return errors.New("the primary sent an RDB file: it is a Redis server, and ratekv replicates only from ratekv")
		}
		if n > 0 {
			if _, werr := f.Write(buf[:n]); werr != nil {
				f.Close()
				return fmt.Errorf("cannot store the primary's snapshot: %w", werr)
			}
			got += int64(n)
			u.lastIO.Store(time.Now().UnixNano())
		}
		if err != nil {
			f.Close()
			return fmt.Errorf("reading the snapshot from the primary: %w", err)
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := r.loadSync(u, path, id, off); err != nil {
		return err
	}
	r.log.Info("full resynchronization with the primary done", "primary", u.host+":"+u.port, "snapshot_bytes", size, "offset", off)
	return nil
}

// loadSync replaces the keyspace with the snapshot at path and makes the
// stream continue at off under replication id id.
func (r *replication) loadSync(u *upstream, path, id string, off int64) error {
	e := r.eng
	r.mu.Lock()
	if r.link != u {
		r.mu.Unlock()
		return errors.New("replication was stopped or pointed elsewhere")
	}
	for l := range r.links { // sub-replicas resynchronize from the new data
		l.close()
	}
	// Clients get -LOADING until the snapshot is loaded, as from a Redis
	// replica loading its RDB: a keyspace half loaded is a state the
	// primary never had.
	r.loading = true
	r.gateLocked()
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.loading = false
		r.gateLocked()
		r.mu.Unlock()
	}()
	if _, err := e.Replay(recordList([][]byte{[]byte("FLUSHALL")})); err != nil {
		return err
	}
	if _, err := persist.LoadTransfer(path, e.store, e.Replay); err != nil {
		return fmt.Errorf("loading the primary's snapshot: %w", err)
	}
	r.mu.Lock()
	if r.link != u { // promoted meanwhile: the data loaded stays, under this server's own id
		r.mu.Unlock()
		return errors.New("replication was stopped or pointed elsewhere")
	}
	r.replID, r.replID2, r.secondOff = id, zeroID, -1
	r.bl = newBacklog(off, e.cfg.Int(config.ReplBacklogSize))
	r.publishWakesLocked()
	r.attachJournalsLocked()
	r.mu.Unlock()
	if p := e.persist; p != nil && p.AppendOnly() {
		// The log holds the old data: a rewrite makes it this one.
		if _, err := p.BGRewrite(); err != nil && !errors.Is(err, persist.ErrRewriteInProgress) {
			r.log.Warn("cannot rewrite the append-only file after a full resynchronization", "err", err)
		}
	}
	return nil
}

// recordList returns a next function over the records given.
func recordList(recs ...[][]byte) func() ([][]byte, error) {
	i := 0
	return func() ([][]byte, error) {
		if i == len(recs) {
			return nil, io.EOF
		}
		i++
		return recs[i-1], nil
	}
}

// stream applies the primary's stream until the link fails.
func (u *upstream) stream(conn io.ReadWriteCloser, br *bufio.Reader) error {
	r := u.r
	u.state.Store(upConnected)
	u.up.Store(true)
	u.lastIO.Store(time.Now().UnixNano())
	r.updateGate()
	done := make(chan struct{})
	defer close(done)
	go u.acks(done)
	c := &Client{eng: r.eng, proto: 2, Authed: true, replaying: true, Addr: u.host + ":" + u.port, Created: time.Now()}
	if nc, ok := conn.(interface{ LocalAddr() net.Addr }); ok {
		c.LocalAddr = nc.LocalAddr().String()
	}
	if h := r.eng.host; h != nil {
		c.ID = h.NewClientID()
	}
	c.Peer = &linkPeer{kill: func() { conn.Close() }, fd: connFd(conn)}
	c.user.Store(r.eng.acl.def)
	c.SetKind(ClientMaster)
	c.LastSeen.Store(c.Created.UnixMilli())
	u.client.Store(c)
	defer u.client.Store(nil)
	// The stream is read into buf after the part of a unit left over,
	// applied in place, and the rest moved to the front.
	const readSize = 256 << 10
	var buf, mark []byte
	for {
		u.readDeadline(conn)
		buf = slices.Grow(buf, readSize)
		n, err := br.Read(buf[len(buf):cap(buf)])
		if n > 0 {
			now := time.Now()
			u.lastIO.Store(now.UnixNano())
			c.LastSeen.Store(now.UnixMilli())
			buf = buf[:len(buf)+n]
			used, perr := u.applyUnits(c, buf)
			if perr != nil {
				return perr
			}
			if c.statCmd != nil {
				c.lastCmd.Store(c.statCmd) // CLIENT LIST's cmd
			}
			if used > 0 {
				mark = r.markApplied(mark)
			}
			buf = buf[:copy(buf, buf[used:])]
			if cap(buf) > 4<<20 && len(buf) < 64<<10 {
				buf = append([]byte(nil), buf...)
			}
		}
		if err != nil {
			if u.stopped() {
				return nil
			}
			return fmt.Errorf("lost the link to the primary: %w", err)
		}
	}
}

// markApplied appends a REPLSTATE record of the offset applied to the
// append-only file (not to the stream): a restart that finds it last in
// the log, after a crash too, continues from there (LoggedReplState). One
// record per read of the stream, so its cost is spread over what the read
// brought.
func (r *replication) markApplied(buf []byte) []byte {
	j := r.applyRef.Load()
	r.mu.Lock()
	bl, id := r.bl, r.replID
	r.mu.Unlock()
	if j == nil || bl == nil {
		return buf
	}
	if t, ok := j.j.(*teeJournal); ok && t.aof != nil {
		buf = journal.AppendReplState(buf[:0], id, bl.end.Load())
		t.aof.Append(buf)
	}
	return buf
}

// applyUnits applies the complete units at the start of buf (a record, or
// a transaction from MULTI to EXEC) and returns how many bytes they took.
func (u *upstream) applyUnits(c *Client, buf []byte) (int, error) {
	r := u.r
	used := 0
	var args [][]byte
	for used < len(buf) {
		var n int
		var err error
		args, n, err = journal.ParseRecord(buf[used:], args[:0])
		if err != nil {
			return used, fmt.Errorf("protocol error in the primary's stream: %w", err)
		}
		if n == 0 {
			return used, nil
		}
		raw := buf[used : used+n]
		switch {
		case journal.IsMarker(args, "MULTI"):
			// The whole transaction, or wait for the rest of it.
			var recs [][][]byte
			end := used + n
			for {
				var a [][]byte
				a, m, err := journal.ParseRecord(buf[end:], nil)
				if err != nil {
					return used, fmt.Errorf("protocol error in the primary's stream: %w", err)
				}
				if m == 0 {
					return used, nil
				}
				end += m
				if journal.IsMarker(a, "EXEC") {
					break
				}
				recs = append(recs, a)
			}
			r.eng.applyStream(c, recs, buf[used:end], r.applyJournal())
			used = end
		case len(args) == 1 && len(args[0]) == len(bPING) && bytes.EqualFold(args[0], bPING):
			r.streamMeta(raw)
			used += n
		case len(args) >= 2 && len(args[0]) == len(bREPLCONF) && bytes.EqualFold(args[0], bREPLCONF):
			r.streamMeta(raw)
			used += n
			if bytes.EqualFold(args[1], bGETACK) {
				u.sendAck()
			}
		default:
			r.eng.applyRecord(c, args, raw, r.applyJournal())
			used += n
		}
	}
	return used, nil
}

// streamMeta adds a PING or REPLCONF of the primary's stream to this
// replica's own stream, so that its offset stays the primary's.
func (r *replication) streamMeta(raw []byte) {
	r.mu.Lock()
	bl := r.bl
	r.mu.Unlock()
	if bl != nil {
		bl.appendStream(raw, false)
	}
}

func (r *replication) applyJournal() *JournalRef { return r.applyRef.Load() }

// acks sends REPLCONF ACK every second until done.
func (u *upstream) acks(done chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-u.stop:
			return
		case <-t.C:
			u.sendAck()
		}
	}
}

func (u *upstream) sendAck() {
	u.r.mu.Lock()
	off := u.r.offsetLocked()
	u.r.mu.Unlock()
	u.write(journal.AppendCommand(nil, []byte("REPLCONF"), []byte("ACK"), []byte(strconv.FormatInt(off, 10))))
}

var (
	bPING     = []byte("PING")
	bREPLCONF = []byte("REPLCONF")
	bGETACK   = []byte("GETACK")
)

// applyRecord is applyStream for one record, with a shorter path for a
// record of one key (nearly every record of a rate limiter's stream).
func (e *Engine) applyRecord(c *Client, args [][]byte, raw []byte, j *JournalRef) {
	cmd := c.lookupRecord(args[0])
	k := 0
	if cmd != nil && cmd.Keys == nil && cmd.Flags&(FlagAllShards|FlagScript) == 0 && cmd.FirstKey == cmd.LastKey {
		k = cmd.FirstKey
	}
	if k <= 0 || k >= len(args) || !cmd.arityOK(len(args)) || cmd.Flags&FlagWrite == 0 {
		e.applyStream(c, [][][]byte{args}, raw, j)
		return
	}
	st := e.store
	shard := st.ShardIndex(args[k])
	st.Lock(shard)
	c.held, c.heldAll = append(c.held[:0], shard), false
	c.inExec = true
	c.now, c.nowMs = 0, 0
	c.Out = c.Out[:0]
	c.call(cmd, args)
	if len(c.Out) > 0 && c.Out[0] == '-' {
		e.repl.recordFailed(cmd, c.Out)
	}
	c.inExec = false
	if j != nil {
		j.j.Append(raw)
	}
	st.Unlock(shard)
	c.held = c.held[:0]
	c.Out = c.Out[:0]
}

// recordFailed logs the error reply out of a record of the primary's
// stream.
func (r *replication) recordFailed(cmd *Command, out []byte) {
	line, _, _ := bytes.Cut(out[1:], []byte("\r\n"))
	r.log.Warn("a record of the primary's stream failed on this replica", "cmd", cmd.Name, "err", clip(line))
}

// applyStream applies records of the primary's stream (one, or a
// transaction's) with their shards locked, as EXEC runs a transaction, on
// the clock at zero as the log's replay, and appends raw, their bytes in
// the stream, to j (this server's own log and stream) before it unlocks.
func (e *Engine) applyStream(c *Client, recs [][][]byte, raw []byte, j *JournalRef) {
	all := false
	held := c.held[:0]
	cmds := c.applyCmds[:0]
	for _, args := range recs {
		var cmd *Command
		if len(args) > 0 {
			cmd = c.lookupRecord(args[0])
		}
		if cmd == nil || !cmd.arityOK(len(args)) || cmd.Flags&FlagWrite == 0 {
			e.repl.badRecord(args)
			cmds = append(cmds, nil)
			continue
		}
		cmds = append(cmds, cmd)
		if cmd.Flags&(FlagAllShards|FlagScript) != 0 {
			all = true
			continue
		}
		held = c.addKeyShards(held, cmd, args)
	}
	c.applyCmds = cmds
	lockShards(e.store, all, held)
	c.held, c.heldAll = held, all
	c.inExec = true
	c.now, c.nowMs = 0, 0
	for i, args := range recs {
		if cmds[i] == nil {
			continue
		}
		c.Out = c.Out[:0]
		c.call(cmds[i], args)
		if len(c.Out) > 0 && c.Out[0] == '-' {
			e.repl.recordFailed(cmds[i], c.Out)
		}
	}
	c.inExec = false
	if j != nil {
		j.j.Append(raw)
	}
	c.unlockExec(all, held)
	c.held, c.heldAll = held[:0], false
	c.Out = c.Out[:0]
}

// badRecord logs a record of the stream this replica cannot apply.
func (r *replication) badRecord(args [][]byte) {
	name := ""
	if len(args) > 0 {
		name = clip(args[0])
	}
	r.log.Warn("the primary's stream holds a record this replica cannot apply; skipped", "cmd", name)
}
