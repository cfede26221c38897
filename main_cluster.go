package main

import (
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ratekv/ratekv/cluster"
	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/internal/nodeid"
	"github.com/ratekv/ratekv/server"
)

// startCluster opens the cluster topology's Raft (cluster/) for a node in
// cluster mode: its data in dir/<cluster-config-file>.d, its bus on
// cluster-port (0: port + 10000, as Redis), and wires it to the engine.
func startCluster(cfg *config.Config, srv *server.Server, id nodeid.Identity, log *slog.Logger) (*cluster.Control, error) {
	dir := cfg.String(config.Dir)
	_, p, _ := net.SplitHostPort(srv.Addr().String())
	port, _ := strconv.Atoi(p)
	bus := int(cfg.Int(config.ClusterPort))
	if bus == 0 {
		bus = port + 10000
	}
	bind := strings.Fields(cfg.String(config.Bind))[0]
	if bind == "*" {
		bind = "0.0.0.0"
	}
	bind = strings.TrimPrefix(bind, "-")
	self := cluster.Node{ID: id.ID, IP: cfg.String(config.ClusterAnnounceIP), Port: port, BusPort: bus,
		Hostname: cfg.String(config.ClusterAnnounceHostname)}
	if self.IP == "" {
		if ip := net.ParseIP(bind); ip != nil && !ip.IsUnspecified() {
			self.IP = ip.String()
		}
	}
	if a := cfg.Int(config.ClusterAnnouncePort); a != 0 {
		self.Port = int(a)
	}
	if a := cfg.Int(config.ClusterAnnounceBusPort); a != 0 {
		self.BusPort = int(a)
	}
	if t := srv.TLSAddr(); t != nil {
		_, tp, _ := net.SplitHostPort(t.String())
		self.TLSPort, _ = strconv.Atoi(tp)
	}
	opts := cluster.Options{
		Dir: filepath.Join(dir, cfg.String(config.ClusterConfigFile)+".d"), Self: self, BindIP: bind, BusPort: bus,
		NodeTimeout: time.Duration(cfg.Int(config.ClusterNodeTimeout)) * time.Millisecond,
		Engine:      srv.Engine, Config: cfg, Logger: log,
		Explicit: !cfg.Bool(config.ClusterSoloOwnsAllSlots),
		SaveID: func(newID string) error {
			n := nodeid.Identity{ID: newID}
			if err := nodeid.Save(dir, n); err != nil {
				return err
			}
			srv.SetNode(n)
			return nil
		},
	}
	ctl, err := cluster.Open(opts)
	if err != nil {
		return nil, err
	}
	srv.SetClusterControl(ctl)
	return ctl, nil
}
