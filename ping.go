package main

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/internal/dirlock"
)

// `ratekv --ping` is a health check for images without a shell or
// redis-cli: it sends PING to the server the configuration describes (or
// to --host and --port, see pingAddr) and exits 0 when the server answers +PONG, or
// -NOAUTH, which a live server that wants a password answers.

// pingTimeout bounds the whole check: connecting, writing, reading.
const pingTimeout = 2 * time.Second

// runPing is ratekv --ping; it returns the exit code.
func runPing(cfg *config.Config, host string, explicit bool) int {
	addrs, err := pingAddrs(cfg, host, explicit)
	if err == nil {
		var reply string
		if reply, err = pingAny(addrs, pingTimeout); err == nil {
			fmt.Println(reply)
			return 0
		}
	}
	fmt.Fprintf(os.Stderr, "ratekv: %v\n", err)
	return 1
}

// pingArgs takes --ping and --host out of args. host is "" unless given;
// --host counts only with --ping. explicit reports a --host or --port.
func pingArgs(args []string) (rest []string, host string, explicit, ping bool) {
	for _, a := range args {
		if a == "--ping" {
			ping = true
		}
	}
	if !ping {
		return args, "", false, false
	}
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--ping":
		case a == "--host" && i+1 < len(args):
			host, explicit = args[i+1], true
			i++
		case strings.HasPrefix(a, "--host="):
			host, explicit = strings.TrimPrefix(a, "--host="), true
		default:
			explicit = explicit || a == "--port" || strings.HasPrefix(a, "--port=")
			rest = append(rest, a)
		}
	}
	return rest, host, explicit, true
}

// pingAddrs is where to find the server: at --host and --port when one is
// given (explicit); else where the server of the configured data directory
// said it listens, in its lock file, so that the Docker image's health
// check finds the server whatever port its configuration gave it; else at
// the first bind address and the configured port (tls-port when port is 0).
// A wildcard address
// gives this host's loopback addresses, to be tried in turn.
func pingAddrs(cfg *config.Config, host string, explicit bool) ([]string, error) {
	if !explicit {
		if _, addr, err := dirlock.Announced(cfg.String(config.Dir)); err == nil && addr != "" {
			if h, port, err := net.SplitHostPort(addr); err == nil {
				return joinAll(local(h), port), nil
			}
		}
	}
	port := strconv.FormatInt(cfg.Int(config.Port), 10)
	if port == "0" && cfg.Int(config.TLSPort) != 0 { // TLS only: ping answers over TLS
		port = strconv.FormatInt(cfg.Int(config.TLSPort), 10)
	}
	if port == "0" {
		return nil, errors.New("port 0: give the server's port with --port")
	}
	if host != "" {
		return joinAll([]string{host}, port), nil
	}
	if f := strings.Fields(cfg.String(config.Bind)); len(f) > 0 {
		return joinAll(local(strings.TrimPrefix(f[0], "-")), port), nil
	}
	return joinAll(local(""), port), nil
}

// local maps a listening address onto the addresses to reach it from this
// host. Go's listener on 0.0.0.0 is a dual-stack one on "::", which IPv4
// reaches too; ::1 may not exist where IPv6 is off (containers).
func local(host string) []string {
	switch host {
	case "*", "0.0.0.0", "":
		return []string{"127.0.0.1"}
	case "::":
		return []string{"127.0.0.1", "::1"}
	case "::*":
		return []string{"::1"}
	}
	return []string{host}
}

func joinAll(hosts []string, port string) []string {
	out := make([]string, len(hosts))
	for i, h := range hosts {
		out[i] = net.JoinHostPort(h, port)
	}
	return out
}

// pingAny pings addrs in turn, each within timeout, and returns the first
// reply that shows a live server.
func pingAny(addrs []string, timeout time.Duration) (string, error) {
	var errs []error
	for _, addr := range addrs {
		reply, err := ping(addr, timeout)
		if err == nil {
			return reply, nil
		}
		errs = append(errs, fmt.Errorf("ping %s: %w", addr, err))
	}
	return "", errors.Join(errs...)
}

// ping sends PING to addr and returns the reply when it shows a live
// server (+PONG, or -NOAUTH). A server that closes the connection without
// a reply may be a TLS port (a TLS-only server announces that one): the
// PING goes again over TLS (see pingTLS).
func ping(addr string, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", err
	}
	reply, err := pingOn(conn, deadline)
	if err != nil && errors.Is(err, errNoReply) && time.Now().Before(deadline) {
		if r, terr := pingTLS(addr, deadline); terr == nil {
			return r, nil
		}
	}
	return reply, err
}

// errNoReply: the server closed the connection before any reply.
var errNoReply = errors.New("no reply")

// pingTLS is ping over TLS. It checks that the server is alive, not who
// it is, so it verifies no certificate and presents none: a server that
// wants a client certificate answers the handshake with an alert, which
// shows it alive as well.
func pingTLS(addr string, deadline time.Time) (string, error) {
	d := &net.Dialer{Deadline: deadline}
	conn, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		return tlsAlive(err)
	}
	reply, err := pingOn(conn, deadline)
	if err != nil {
		return tlsAlive(err)
	}
	return reply + " (TLS)", nil
}

// tlsAlive reports a TLS alert from the server as a live server's answer.
func tlsAlive(err error) (string, error) {
	if m := err.Error(); strings.Contains(m, "remote error: tls: ") {
		return "TLS server answered: " + m[strings.Index(m, "remote error: ")+len("remote error: "):], nil
	}
	return "", err
}

// pingOn sends PING on conn, closes it, and returns the reply of a live
// server.
func pingOn(conn net.Conn, deadline time.Time) (string, error) {
	defer conn.Close()
	if err := conn.SetDeadline(deadline); err != nil {
		return "", err
	}
	if _, err := conn.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
			err = fmt.Errorf("%w: %w", errNoReply, err)
		} else {
			err = fmt.Errorf("no reply: %w", err)
		}
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	switch {
	case line == "+PONG":
		return "PONG", nil
	case strings.HasPrefix(line, "-NOAUTH"):
		return line[1:], nil
	}
	return "", fmt.Errorf("unexpected reply %q", line)
}
