// Command noop is the protocol ceiling the benchmarks measure against: a
// redcon server that does no work (PING answers PONG, anything else OK).
// Issue 6 defines "the no-op ceiling" as this server's PING throughput;
// bench/compare.sh runs it beside redis-server and ratekv when CEILING=1.
package main

import (
	"flag"
	"log"
	"strings"

	"github.com/tidwall/redcon"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	flag.Parse()
	err := redcon.ListenAndServe(*addr,
		func(conn redcon.Conn, cmd redcon.Command) {
			if len(cmd.Args) > 0 && strings.EqualFold(string(cmd.Args[0]), "ping") {
				conn.WriteString("PONG")
				return
			}
			conn.WriteString("OK")
		},
		func(conn redcon.Conn) bool { return true },
		nil)
	if err != nil {
		log.Fatal(err)
	}
}
