package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ratekv/ratekv/command"
	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/resp"
	"github.com/ratekv/ratekv/shards"
)

// Server accepts RESP connections and serves them: listeners, the event
// loops (or a goroutine per client), the reply flushers, pausing and
// shutting down. The commands themselves run in the embedded
// command.Engine. Create it with New; it is safe for concurrent use.
type Server struct {
	*command.Engine
	store *shards.Store
	cfg   *config.Config
	log   *slog.Logger

	// Hot-path copies of mutable config, kept current by watchConfig.
	maxClients    atomic.Int64
	idleTimeout   atomic.Int64
	protectedMode atomic.Bool

	mu        sync.Mutex
	conns     map[int64]*Conn
	listeners []net.Listener // the plaintext ones, then the TLS ones
	plain     int            // how many of listeners are plaintext
	nextID    atomic.Int64
	closing   atomic.Bool
	wg        sync.WaitGroup
	shutdowns chan *command.ShutdownRequest // SHUTDOWN requests for main (shutdown.go)
	pause     atomic.Pointer[pauseState]    // set while paused (Pause)
	closed    chan struct{}                 // closed once Shutdown begins
	closeOnce sync.Once
	drainBy   atomic.Int64 // Unix ns until which closing event loops write out waiting replies

	totalConns    atomic.Int64
	rejectedConns atomic.Int64
	netIn, netOut atomic.Int64
	reads, writes atomic.Int64 // reads and writes of client sockets

	writers      []*replyWriter // one per P; see flusher.go
	loops        []*eventLoop   // one per P with event-loop yes; see loop_linux.go
	batchReplies atomic.Bool    // batch-replies
	prefetch     atomic.Int32   // prefetch-batch: prefetchNo, prefetchAuto or prefetchYes

	// TLS (tls.go).
	tlsCtx     atomic.Pointer[tlsContext] // nil without a TLS listener
	tlsAuth    atomic.Int32               // tls-auth-clients: authNo, authYes or authOptional
	tlsListen  *tls.Config                // picks tlsCtx for each handshake
	handshakes atomic.Int64               // TLS handshakes under way, at most maxclients
}

// New returns a server for store configured by cfg. Call Listen, then Serve.
func New(store *shards.Store, cfg *config.Config, log *slog.Logger) *Server {
	s := &Server{
		Engine:    command.NewEngine(store, cfg, log),
		store:     store,
		cfg:       cfg,
		log:       log,
		conns:     make(map[int64]*Conn),
		shutdowns: make(chan *command.ShutdownRequest, shutdownQueue),
		closed:    make(chan struct{}),
	}
	s.Engine.SetHost(host{s})
	s.Engine.SetDialer(s.dialReplication)
	s.watchConfig()
	s.watchTLS()
	for range runtime.GOMAXPROCS(0) {
		s.writers = append(s.writers, newReplyWriter())
	}
	return s
}

// watchConfig loads the runtime's hot-path copies of mutable parameters
// and registers the change hooks that keep each one current.
func (s *Server) watchConfig() {
	cfg := s.cfg
	for _, w := range []struct {
		key   config.Key
		apply func()
	}{
		{config.MaxClients, func() { s.maxClients.Store(cfg.Int(config.MaxClients)) }},
		{config.Timeout, func() {
			if t := cfg.Int(config.Timeout); s.idleTimeout.Swap(t) != t {
				s.retime(t)
			}
		}},
		{config.BatchReplies, func() { s.batchReplies.Store(cfg.Bool(config.BatchReplies)) }},
		{config.ProtectedMode, func() { s.protectedMode.Store(cfg.Bool(config.ProtectedMode)) }},
		{config.PrefetchBatch, func() {
			s.prefetch.Store(map[string]int32{"no": prefetchNo, "auto": prefetchAuto, "yes": prefetchYes}[cfg.String(config.PrefetchBatch)])
		}},
	} {
		w.apply()
		cfg.OnChange(w.key, func(string) { w.apply() })
	}
}

// retime moves the deadlines of the goroutine-per-connection clients to
// the new timeout t (seconds, 0: none). Each sets its deadlines when it
// starts a read or a write, so one already waiting would keep the old one:
// after CONFIG SET timeout 0, or a longer timeout, a client idle at that
// moment would still be closed when the old one ran out. The event loops
// judge idleness against the current value on every sweep.
func (s *Server) retime(t int64) {
	for _, c := range s.clients() {
		if c.loop != nil || c.nc == nil {
			continue
		}
		var by time.Time
		if t > 0 {
			by = time.UnixMilli(c.LastSeen.Load()).Add(time.Duration(t) * time.Second)
		}
		c.nc.SetDeadline(by)
	}
}

// Listen binds every address of the bind parameter on the configured
// port, and on tls-port when it is set (loading the TLS files first). As
// in Redis, port 0 with a tls-port means no plaintext port; without one
// it picks a free port.
func (s *Server) Listen() error {
	tlsPort := s.cfg.Int(config.TLSPort)
	if tlsPort != 0 {
		ctx, err := loadTLS(s.cfg)
		if err != nil {
			return fmt.Errorf("TLS: %w", err)
		}
		s.tlsCtx.Store(ctx)
	}
	if port := s.cfg.Int(config.Port); port != 0 || tlsPort == 0 {
		if err := s.listenAll(port); err != nil {
			return err
		}
	}
	s.plain = len(s.listeners)
	if tlsPort != 0 {
		if err := s.listenAll(tlsPort); err != nil {
			return err
		}
	}
	s.warnExposed()
	return nil
}

// warnExposed says, at start, when a listener is reachable from other
// hosts and no password is set: who gets in depends on protected-mode.
func (s *Server) warnExposed() {
	if s.cfg.String(config.RequirePass) != "" {
		return
	}
	for _, ln := range s.listeners {
		if ta, ok := ln.Addr().(*net.TCPAddr); ok && !ta.IP.IsLoopback() {
			if s.cfg.Bool(config.ProtectedMode) {
				s.log.Info("protected mode: no password is set, so clients from other hosts are refused until requirepass is set", "addr", ta.String())
			} else {
				s.log.Warn("listening beyond loopback with protected-mode no and no password: every client that reaches this address is served", "addr", ta.String())
			}
			return
		}
	}
}

// listenAll adds a listener on every bind address on port.
func (s *Server) listenAll(p int64) error {
	port := strconv.FormatInt(p, 10)
	n := len(s.listeners)
	for _, host := range strings.Fields(s.cfg.String(config.Bind)) {
		host, optional := strings.CutPrefix(host, "-") // redis.conf's "-::1"
		network := "tcp"
		switch host { // Redis's "*" and "::*": every IPv4, every IPv6 address
		case "*":
			network, host = "tcp4", "0.0.0.0"
		case "::*":
			network, host = "tcp6", "::"
		}
		ln, err := net.Listen(network, net.JoinHostPort(host, port))
		if err != nil && optional && unavailable(err) {
			s.log.Warn("skipping an optional bind address that is not available", "addr", host, "err", err)
			continue
		}
		if err != nil {
			s.closeListeners()
			return fmt.Errorf("listen on %s:%s: %w", host, port, err)
		}
		s.listeners = append(s.listeners, ln)
		if port == "0" { // the first listener picks the port; others follow
			_, port, _ = net.SplitHostPort(ln.Addr().String())
		}
	}
	if len(s.listeners) == n {
		s.closeListeners()
		return errors.New("bind names no address")
	}
	return nil
}

// unavailable reports whether a listen failed because the address or its
// family does not exist here, the errors for which Redis skips an optional
// ("-") bind address.
func unavailable(err error) bool {
	for _, e := range []syscall.Errno{syscall.EADDRNOTAVAIL, syscall.EAFNOSUPPORT, syscall.EPROTONOSUPPORT, syscall.ESOCKTNOSUPPORT, syscall.ENOPROTOOPT} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Addr returns the address of the first listener (useful with port 0):
// a plaintext one, unless there is none.
func (s *Server) Addr() net.Addr { return s.listeners[0].Addr() }

// TLSAddr returns the address of the first TLS listener, nil without one.
func (s *Server) TLSAddr() net.Addr {
	if s.plain == len(s.listeners) {
		return nil
	}
	return s.listeners[s.plain].Addr()
}

// Serve accepts connections until Shutdown. It returns nil after Shutdown.
func (s *Server) Serve() error {
	if s.cfg.Bool(config.EventLoop) {
		loops, err := newEventLoops(s, runtime.GOMAXPROCS(0))
		if err != nil {
			s.log.Warn("event loops unavailable, serving each client from its own goroutine", "err", err)
		}
		s.mu.Lock()
		s.loops = loops
		s.mu.Unlock()
		if len(loops) > 0 {
			// The active expiry lets the loops run between slices of
			// its work (see shards.Store.SetYield).
			s.store.SetYield(func() {
				for _, l := range loops {
					l.waitTurn()
				}
			})
		}
	}
	go s.SampleStats()
	errc := make(chan error, len(s.listeners))
	for i, ln := range s.listeners {
		go func(ln net.Listener, secure bool) { errc <- s.accept(ln, secure) }(ln, i >= s.plain)
	}
	var first error
	for range s.listeners {
		if err := <-errc; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// accept accepts ln's connections; a TLS listener's (secure) get their
// handshake first, each in its own goroutine.
func (s *Server) accept(ln net.Listener, secure bool) error {
	var wait time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.closing.Load() || errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			if acceptCanRecover(err) {
				// Out of descriptors or memory: the clients connected
				// keep being served, and accepting resumes once some
				// close, as in Redis, rather than the whole server
				// stopping. Back off as net/http does.
				wait = min(max(2*wait, 5*time.Millisecond), time.Second)
				s.log.Warn("cannot accept a connection; retrying", "err", err, "retry_in", wait)
				time.Sleep(wait)
				continue
			}
			return err
		}
		wait = 0
		if secure {
			// Each handshake has a goroutine until it ends (10 s at most):
			// bound them as the clients are, closing the connection as
			// Redis does a TLS one past maxclients.
			if s.handshakes.Add(1) > s.maxClients.Load() {
				s.handshakes.Add(-1)
				s.rejectedConns.Add(1)
				nc.Close()
				continue
			}
			go s.handshake(nc)
			continue
		}
		setSocketOptions(nc)
		s.startConn(nc)
	}
}

// acceptCanRecover reports whether an accept error passes by itself: the
// process or the system out of descriptors, the kernel out of memory, or a
// connection that was reset before it was accepted.
func acceptCanRecover(err error) bool {
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// socketOf is nc's socket: the TCP connection under a TLS one.
func socketOf(nc net.Conn) net.Conn {
	if tc, ok := nc.(*tls.Conn); ok {
		return tc.NetConn()
	}
	return nc
}

// setSocketOptions sets a new TCP connection's options.
func setSocketOptions(nc net.Conn) {
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
		tc.SetKeepAlive(true)
		tc.SetKeepAlivePeriod(300 * time.Second)
	}
}

// startConn serves a new connection (a TLS one with its handshake done),
// or tells it why not and closes it: too many clients, or protected mode.
func (s *Server) startConn(nc net.Conn) {
	c := &Conn{srv: s, nc: nc, buf: make([]byte, defaultReadBytes), fd: -1, sockFD: -1}
	s.InitClient(&c.Client, c, s.nextID.Add(1), nc.RemoteAddr().String(), nc.LocalAddr().String())
	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		nc.Close()
		return
	}
	if int64(len(s.conns)) >= s.maxClients.Load() {
		s.mu.Unlock()
		s.rejectedConns.Add(1)
		refuse(nc, resp.ErrMaxClients)
		return
	}
	// A client authenticated from the start means the default user has
	// no password.
	if s.protectedMode.Load() && c.Authed && !local(nc.RemoteAddr()) {
		s.mu.Unlock()
		s.totalConns.Add(1) // as Redis, counted as received and as rejected
		s.rejectedConns.Add(1)
		refuse(nc, resp.ErrProtectedMode)
		return
	}
	if len(s.loops) > 0 {
		s.loops[int(c.ID)%len(s.loops)].claim(c, nc)
	}
	if c.loop != nil {
		c.sockFD = c.fd
	} else if sc, ok := socketOf(nc).(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			rc.Control(func(fd uintptr) { c.sockFD = int(fd) })
		}
	}
	s.conns[c.ID] = c
	s.wg.Add(1)
	s.mu.Unlock()
	s.totalConns.Add(1)
	if c.loop != nil {
		c.loop.add(c)
		return
	}
	// A goroutine of its own: its replies go through a replyWriter
	// (flusher.go) when its socket is a plain one.
	if sc, ok := nc.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			c.raw = rc
			c.writer = s.writers[int(c.ID)%len(s.writers)]
			c.wrote = make(chan int, 1)
		}
	}
	go c.serve()
}

// refuse tells nc's client why it is not served, and closes nc.
func refuse(nc net.Conn, msg string) {
	nc.SetWriteDeadline(time.Now().Add(time.Second))
	nc.Write([]byte("-" + msg + "\r\n"))
	closeNow(nc)
}

// local reports whether protected mode lets a client from addr in: a
// loopback address, any of 127.0.0.0/8 as Redis 7.2+ counts them (7.0 took
// only 127.0.0.1 and ::1), IPv4-mapped ones on a dual-stack listener too;
// or not TCP at all (a pipe), as Redis's Unix sockets.
func local(addr net.Addr) bool {
	ta, ok := addr.(*net.TCPAddr)
	return !ok || ta.IP.IsLoopback()
}

func (s *Server) removeConn(c *Conn) {
	s.mu.Lock()
	if _, ok := s.conns[c.ID]; ok {
		delete(s.conns, c.ID)
		s.wg.Done()
	}
	s.mu.Unlock()
}

func (s *Server) closeListeners() {
	for _, ln := range s.listeners {
		ln.Close()
	}
}

// drainFor bounds how long closing event loops write out the replies that
// wait for slow clients' sockets (Shutdown's ctx may end it sooner).
const drainFor = 5 * time.Second

// Shutdown stops accepting, lets every connection finish the batch it is
// running (its replies are flushed, for up to drainFor to a client that
// reads slowly), closes the connections, and waits for them until ctx
// ends.
func (s *Server) Shutdown(ctx context.Context) error {
	by := time.Now().Add(drainFor)
	if d, ok := ctx.Deadline(); ok && d.Before(by) {
		by = d
	}
	s.drainBy.Store(by.UnixNano())
	s.closing.Store(true)
	s.closeOnce.Do(func() { close(s.closed) })
	s.Resume() // paused loops and clients see closing and run nothing more
	s.closeListeners()
	s.mu.Lock()
	for _, c := range s.conns {
		// Wake readers blocked in Read; a connection in the middle of a
		// batch finishes it first, since it only checks between batches.
		if c.loop == nil {
			c.nc.SetReadDeadline(time.Now())
		}
	}
	loops := s.loops
	s.mu.Unlock()
	for _, l := range loops {
		l.wake() // a loop closes its connections once it sees closing
	}
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		if len(loops) > 0 {
			s.store.SetYield(nil)
		}
		for _, l := range loops {
			l.stop()
		}
		for _, w := range s.writers {
			w.close()
		}
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		for _, c := range s.conns {
			closeNow(c.nc)
		}
		s.mu.Unlock()
		return ctx.Err()
	}
}
