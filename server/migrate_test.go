package server

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMigrateRuntime: MIGRATE through both runtimes. While it waits for
// its target, the client's event loop serves other clients, and a client
// writing the key in flight waits for it; then both get their replies.
func TestMigrateRuntime(t *testing.T) {
	for _, mode := range []string{"yes", "no"} {
		t.Run("event-loop "+mode, func(t *testing.T) {
			src := newTestServer(t, "event-loop", mode)
			dst := newTestServer(t, "event-loop", mode)
			m, w, o := src.raw(t), src.raw(t), src.raw(t)
			h, p, err := net.SplitHostPort(dst.addr)
			require.NoError(t, err)
			require.Equal(t, "+OK\r\n", m.do("SET", "k", "v"))
			require.Equal(t, "+OK\r\n", m.do("MIGRATE", h, p, "k", "0", "5000"))
			require.Equal(t, "$1\r\nv\r\n", dst.raw(t).do("GET", "k"))

			// A target that answers only when released.
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			defer ln.Close()
			release, got := make(chan struct{}), make(chan struct{}, 4)
			go func() {
				nc, err := ln.Accept()
				if err != nil {
					return
				}
				defer nc.Close()
				rd := bufio.NewReader(nc)
				for {
					line, err := rd.ReadString('\n')
					if err != nil {
						return
					}
					if w := strings.TrimSpace(line); w == "SELECT" || w == "RESTORE" {
						got <- struct{}{}
						<-release
						fmt.Fprint(nc, "+OK\r\n")
					}
				}
			}()
			h, p, err = net.SplitHostPort(ln.Addr().String())
			require.NoError(t, err)
			require.Equal(t, "+OK\r\n", m.do("SET", "k", "v"))
			_, err = fmt.Fprintf(m.nc, "*6\r\n$7\r\nMIGRATE\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n$1\r\nk\r\n$1\r\n0\r\n$4\r\n5000\r\n", len(h), h, len(p), p)
			require.NoError(t, err)
			<-got
			_, err = fmt.Fprint(w.nc, "*3\r\n$6\r\nAPPEND\r\n$1\r\nk\r\n$1\r\nx\r\n")
			require.NoError(t, err)
			require.Equal(t, "+PONG\r\n", o.do("PING"))
			require.Equal(t, "$1\r\nv\r\n", o.do("GET", "k"))
			w.nc.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			_, err = w.rd.Peek(1)
			require.Error(t, err, "APPEND ran while its key was in flight")
			close(release)
			require.Equal(t, "+OK\r\n", m.reply())
			require.Equal(t, ":1\r\n", w.reply())
			require.Equal(t, "$1\r\nx\r\n", o.do("GET", "k"))
		})
	}
}
