// Command ratekv is a rate-limit datastore that speaks the Redis protocol.
//
// Usage: ratekv [/path/to/ratekv.conf] [--option value ...], or ratekv
// --ping for a health check; see --help.
// main only parses configuration and wires the pieces together: lock the
// data directory → listen → load the data (persistence) → serve, then
// waits for a signal or SHUTDOWN, pauses the server, persists everything
// and exits (or, when that fails, goes on serving). Nothing in the data
// directory changes before the listeners are bound.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/ratekv/ratekv/command"
	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/internal/dirlock"
	"github.com/ratekv/ratekv/internal/nodeid"
	"github.com/ratekv/ratekv/internal/service"
	"github.com/ratekv/ratekv/metrics"
	"github.com/ratekv/ratekv/persist"
	"github.com/ratekv/ratekv/server"
	"github.com/ratekv/ratekv/shards"
)

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	args, pingHost, pingExplicit, pingOnly := pingArgs(args)
	cfg := config.New()
	if err := cfg.Parse(args); err != nil {
		var refused *config.RefusedError
		switch {
		case errors.Is(err, config.ErrHelp):
			fmt.Print(config.Usage())
			return 0
		case errors.Is(err, config.ErrVersion):
			fmt.Println(versionLine(debug.ReadBuildInfo()))
			return 0
		case pingOnly && errors.As(err, &refused):
			// What the server must not start with is no matter to --ping.
		default:
			fmt.Fprintf(os.Stderr, "ratekv: %v\n", err)
			return 1
		}
	}
	if pingOnly {
		return runPing(cfg, pingHost, pingExplicit)
	}

	// RATEKV_CPUPROFILE=file writes a CPU profile until shutdown, for
	// profiling under bench load (see bench/README.md).
	if path := os.Getenv("RATEKV_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "ratekv: RATEKV_CPUPROFILE: %v\n", err)
			return 1
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(os.Stderr, "ratekv: RATEKV_CPUPROFILE: %v\n", err)
			return 1
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}

	var logTo io.Writer = os.Stderr
	var logFile *service.LogFile
	if path := cfg.String(config.LogFile); path != "" {
		f, err := service.OpenLog(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "ratekv: can't open the log file: %v\n", err)
			return 1
		}
		logTo, logFile = f, f
	}
	level := new(slog.LevelVar)
	level.Set(logLevel(cfg.String(config.LogLevel)))
	cfg.OnChange(config.LogLevel, func(v string) { level.Set(logLevel(v)) })
	handler := service.NewLogHandler(logTo, level, cfg.String(config.LogFormat))
	cfg.OnChange(config.LogFormat, handler.SetFormat)
	log := slog.New(handler)
	for _, w := range cfg.Warnings() {
		log.Warn(w.String())
	}

	if err := os.MkdirAll(cfg.String(config.Dir), 0o755); err != nil {
		log.Error("cannot create data directory", "dir", cfg.String(config.Dir), "err", err)
		return 1
	}

	// One server per data directory, and nothing in it changes before the
	// listeners are bound: a start that fails leaves it as it was.
	dir := cfg.String(config.Dir)
	lock, err := dirlock.Acquire(dir)
	if err != nil {
		log.Error("cannot lock the data directory; not starting", "dir", dir, "err", err)
		return 1
	}
	defer lock.Release()

	store := shards.New(shards.Options{Shards: int(cfg.Int(config.Shards))})
	defer store.Close()
	stopRelease := make(chan struct{})
	defer close(stopRelease)
	go releaseMemory(stopRelease, store.Dropped)

	srv := server.New(store, cfg, log)
	if err := srv.LoadUsers(); err != nil {
		log.Error("cannot load the ACL users; not starting", "err", err)
		return 1
	}
	go limitMemory(stopRelease, srv.GoMemoryLimit)
	if err := srv.Listen(); err != nil {
		log.Error("cannot listen; not starting", "err", err)
		return 1
	}
	if cfg.Bool(config.ClusterEnabled) {
		id, err := nodeid.Load(dir)
		if err != nil {
			log.Error("cannot load the cluster node's identity; not starting", "dir", dir, "err", err)
			return 1
		}
		srv.SetNode(id)
		log.Info("cluster mode: one node owning every slot", "id", id.ID, "epoch", id.ConfigEpoch)
	}
	mtr := metrics.New(cfg, srv.Engine, log)
	if err := mtr.Start(); err != nil {
		log.Error("cannot listen for /metrics; not starting", "err", err)
		return 1
	}
	defer mtr.Close()
	if path := cfg.String(config.PidFile); path != "" {
		remove, err := service.WritePidfile(path)
		if err != nil {
			log.Warn("cannot write the pid file", "err", err) // as Redis: not fatal
		}
		defer remove()
	}
	mgr, err := persist.Open(persist.Options{Config: cfg, Store: store, Replay: srv.Replay, Keys: command.RecordKeys, Resets: command.RecordResets, Logger: log, Latency: srv})
	if err != nil {
		log.Error("cannot load the data; not starting", "dir", dir, "err", err)
		return 1
	}
	id, off, ok := mgr.TakeReplState()
	if !ok { // a crash: a replica's log may say where its data is
		id, off, ok = srv.LoggedReplState()
	}
	if ok {
		srv.RestoreReplState(id, off)
	}
	if err := lock.Announce(srv.Addr().String()); err != nil {
		log.Warn("cannot write the lock file", "err", err)
	}
	// Only now: while the log replays, no key counts as expired (a later
	// record may extend its deadline); persist.Open purged the ones whose
	// deadline has passed.
	store.StartExpiry()
	if j := mgr.AOF(); j != nil {
		srv.SetJournal(j)
	}
	srv.SetPersistence(mgr)
	mtr.Collector.SetPersistence(mgr)
	mgr.Start()
	if a := srv.TLSAddr(); a != nil {
		log.Info("TLS listening", "addr", a.String())
	}
	// The signals are caught before anyone hears that ratekv is ready: a
	// SIGTERM that follows the readiness at once must shut it down
	// cleanly, not end it. SIGHUP, which logrotate sends after moving the
	// log, reopens it rather than ending the process.
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM)
	hupc := make(chan os.Signal, 1)
	signal.Notify(hupc, syscall.SIGHUP)
	go func() {
		for range hupc {
			if logFile == nil {
				log.Info("received SIGHUP, no log file to reopen")
			} else if err := logFile.Reopen(); err != nil {
				log.Warn("received SIGHUP, cannot reopen the log file", "err", err)
			} else {
				log.Info("received SIGHUP, log file reopened")
			}
		}
	}()
	srv.StartReplication()
	if cfg.Bool(config.ClusterEnabled) {
		ctl, err := startCluster(cfg, srv, srv.Node(), log)
		if err != nil {
			log.Error("cannot start the cluster topology; not starting", "err", err)
			return 1
		}
		defer ctl.Close()
	}
	log.Info("ready to accept connections", "addr", srv.Addr().String(), "version", command.Version, "shards", store.NumShards())

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve() }()
	notify := cfg.NotifySocket()
	if err := service.Notify(notify, service.Ready); err != nil {
		log.Warn("cannot tell systemd that ratekv is ready", "err", err)
	}

	// Each request pauses the server and persists everything first; when
	// that fails the server goes on (Redis's behaviour), unless FORCE.
	force := false
	for {
		var req *command.ShutdownRequest
		select {
		case sig := <-sigc:
			log.Info("received signal, shutting down", "signal", sig.String())
		case req = <-srv.Shutdowns():
			log.Info("SHUTDOWN requested by a client")
		case err := <-errc:
			if err != nil {
				log.Error("server stopped", "err", err)
				mgr.Close()
				return 1
			}
		}
		mode := persist.SaveAsConfigured
		if req != nil {
			force = req.Force
			switch req.Save {
			case -1:
				mode = persist.SaveNever
			case 1:
				mode = persist.SaveAlways
			}
		}
		srv.Pause()
		srv.PauseReplication() // a replica's stream writes too
		err := mgr.PrepareShutdown(mode)
		if err == nil {
			if id, off, ok := srv.ReplState(); ok {
				if err := mgr.SaveReplState(id, off); err != nil {
					log.Warn("cannot record the replication offset; replicas will resynchronize fully after the restart", "err", err)
				}
			}
			srv.StopReplication()
			break
		}
		if force {
			log.Error("persisting the data failed; exiting anyway (SHUTDOWN FORCE)", "err", err)
			break
		}
		log.Error("errors trying to shut down: persisting the data failed, so the server goes on with everything it holds; "+
			"fix the cause and shut down again, or send SHUTDOWN FORCE to exit without it", "err", err)
		srv.ResumeReplication()
		srv.Resume()
		if req != nil {
			req.Refuse()
		}
	}
	if err := service.Notify(notify, service.Stopping); err != nil {
		log.Warn("cannot tell systemd that ratekv is stopping", "err", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		log.Warn("connections did not finish in time", "err", err)
	}
	mtr.Close()
	// Everything is persisted already: this closes the log (flushed and
	// fsynced once more: nothing was written since).
	if err := mgr.CloseSave(persist.SaveNever); err != nil && !force {
		log.Error("closing the append-only file failed", "err", err)
		return 1
	}
	log.Info("ratekv is now ready to exit, bye bye")
	return 0
}

// logLevel maps redis.conf log levels onto slog's.
func logLevel(name string) slog.Level {
	switch name {
	case "debug", "verbose":
		return slog.LevelDebug
	case "warning":
		return slog.LevelWarn
	}
	return slog.LevelInfo
}
