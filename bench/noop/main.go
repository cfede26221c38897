// Command noop is the protocol ceiling the benchmarks measure against: a
// server that does no work (PING answers PONG, anything else OK).
//
// It has two engines. -loop redcon (the default) is a redcon server, a
// goroutine per connection: "the no-op ceiling" is its PING throughput,
// and bench/compare.sh runs it beside redis-server and ratekv when
// CEILING=1. -loop epoll (Linux) is the floor: one thread, one epoll set,
// a read and a write per turn and socket (floor_linux.go), the least a
// server can do per request; compare.sh's persistence runs use it
// to show where the load generator, not the server, sets the pace.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"strings"

	"github.com/tidwall/redcon"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	loop := flag.String("loop", "redcon", "engine: redcon (a goroutine per connection) or epoll (Linux: the floor)")
	flag.Parse()
	var err error
	switch *loop {
	case "redcon":
		err = redcon.ListenAndServe(*addr,
			func(conn redcon.Conn, cmd redcon.Command) {
				if len(cmd.Args) > 0 && strings.EqualFold(string(cmd.Args[0]), "ping") {
					conn.WriteString("PONG")
					return
				}
				conn.WriteString("OK")
			},
			func(conn redcon.Conn) bool { return true },
			nil)
	case "epoll":
		err = serveFloor(*addr, func(a net.Addr) { fmt.Fprintln(os.Stderr, "noop: floor listening on", a) })
	default:
		fmt.Fprintf(os.Stderr, "noop: unknown -loop %q (want redcon or epoll)\n", *loop)
		os.Exit(2)
	}
	if err != nil {
		log.Fatal(err)
	}
}
