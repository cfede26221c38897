// Command ratekv is a rate-limit datastore that speaks the Redis protocol.
//
// Usage: ratekv [/path/to/ratekv.conf] [--option value ...]; see --help.
// main only parses configuration and wires the pieces together:
// keyspace → server → listen, then waits for a signal or SHUTDOWN.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/resp"
	"github.com/ratekv/ratekv/shards"
)

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	cfg := config.New()
	if err := cfg.Parse(args); err != nil {
		switch {
		case errors.Is(err, config.ErrHelp):
			fmt.Print(config.Usage())
			return 0
		case errors.Is(err, config.ErrVersion):
			fmt.Printf("ratekv %s (follows Redis %s semantics)\n", resp.Version, resp.RedisVersion)
			return 0
		}
		fmt.Fprintf(os.Stderr, "ratekv: %v\n", err)
		return 1
	}

	level := new(slog.LevelVar)
	level.Set(logLevel(cfg.Get("loglevel")))
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	cfg.OnChange = func(name, value string) {
		if name == "loglevel" {
			level.Set(logLevel(value))
		}
	}

	if err := os.MkdirAll(cfg.Get("dir"), 0o755); err != nil {
		log.Error("cannot create data directory", "dir", cfg.Get("dir"), "err", err)
		return 1
	}

	store := shards.New(shards.Options{Shards: int(cfg.Int("shards"))})
	store.StartExpiry()
	defer store.Close()

	srv := resp.New(store, cfg, log)
	if err := srv.Listen(); err != nil {
		log.Error("cannot listen", "err", err)
		return 1
	}
	log.Info("ready to accept connections", "addr", srv.Addr().String(), "version", resp.Version, "shards", store.NumShards())

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve() }()

	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM)
	select {
	case sig := <-sigc:
		log.Info("received signal, shutting down", "signal", sig.String())
	case <-srv.ShutdownRequested():
		log.Info("SHUTDOWN requested by a client")
	case err := <-errc:
		if err != nil {
			log.Error("server stopped", "err", err)
			return 1
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		log.Warn("connections did not finish in time", "err", err)
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
