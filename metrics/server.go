package metrics

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ratekv/ratekv/command"
	"github.com/ratekv/ratekv/config"
)

// Server is the HTTP endpoint: it listens on metrics-bind:metrics-port
// while metrics-port is not 0, and moves when CONFIG SET changes either.
// Create it with New; it is safe for concurrent use.
type Server struct {
	cfg     *config.Config
	log     *slog.Logger
	handler http.Handler
	// Collector is the endpoint's collector of ratekv's figures.
	Collector *Collector

	mu     sync.Mutex
	srv    *http.Server // nil: not listening
	ln     net.Listener
	closed bool
}

// New returns the endpoint of eng's figures, configured by cfg. Start
// starts it.
func New(cfg *config.Config, eng *command.Engine, log *slog.Logger) *Server {
	col := NewCollector(eng)
	reg := prometheus.NewRegistry()
	reg.MustRegister(col,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	return &Server{cfg: cfg, log: log, handler: mux, Collector: col}
}

// Start listens as configured, and follows CONFIG SET of metrics-port and
// metrics-bind: a listener that cannot be opened then is logged, and the
// endpoint stays off until the next change.
func (s *Server) Start() error {
	if err := s.listen(); err != nil {
		return err
	}
	move := func(string) {
		if err := s.listen(); err != nil {
			s.log.Warn("cannot listen for /metrics; the endpoint is off", "err", err)
		}
	}
	s.cfg.OnChange(config.MetricsPort, move)
	s.cfg.OnChange(config.MetricsBind, move)
	return nil
}

// listen closes the listener and opens the configured one, if any.
func (s *Server) listen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.stopLocked()
	port := s.cfg.Int(config.MetricsPort)
	if port == 0 {
		return nil
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(s.cfg.String(config.MetricsBind), strconv.FormatInt(port, 10)))
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second}
	s.srv, s.ln = srv, ln
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Warn("the /metrics endpoint stopped", "err", err)
		}
	}()
	s.log.Info("serving Prometheus metrics", "addr", "http://"+ln.Addr().String()+"/metrics")
	return nil
}

// stopLocked closes the listener and the connections at once (a scrape in
// progress is cut, not waited for). It requires s.mu held.
func (s *Server) stopLocked() {
	if s.srv != nil {
		s.srv.Close()
		s.srv, s.ln = nil, nil
	}
}

// Addr returns the address listened on, or nil when off.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Close stops the endpoint for good.
func (s *Server) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopLocked()
	s.closed = true
}
