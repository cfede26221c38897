package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/ratekv/ratekv/config"
)

// `ratekv --ping` is a health check for images without a shell or
// redis-cli: it sends PING to the server the configuration describes (or
// to --host and --port) and exits 0 when the server answers +PONG, or
// -NOAUTH, which a live server that wants a password answers.

// pingTimeout bounds the whole check: connecting, writing, reading.
const pingTimeout = 2 * time.Second

// pingArgs takes --ping and --host out of args. host is "" unless given;
// --host counts only with --ping.
func pingArgs(args []string) (rest []string, host string, ping bool) {
	for _, a := range args {
		if a == "--ping" {
			ping = true
		}
	}
	if !ping {
		return args, "", false
	}
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--ping":
		case a == "--host" && i+1 < len(args):
			host = args[i+1]
			i++
		case strings.HasPrefix(a, "--host="):
			host = strings.TrimPrefix(a, "--host=")
		default:
			rest = append(rest, a)
		}
	}
	return rest, host, true
}

// pingAddr is where to find the server: host, or else the first bind
// address (a wildcard meaning this host), at the configured port.
func pingAddr(cfg *config.Config, host string) (string, error) {
	port := cfg.Int(config.Port)
	if port == 0 {
		return "", errors.New("port 0: give the server's port with --port")
	}
	if host == "" {
		host = "127.0.0.1"
		if f := strings.Fields(cfg.String(config.Bind)); len(f) > 0 {
			host = strings.TrimPrefix(f[0], "-")
		}
		switch host {
		case "*", "0.0.0.0":
			host = "127.0.0.1"
		case "::*", "::":
			host = "::1"
		}
	}
	return net.JoinHostPort(host, strconv.FormatInt(port, 10)), nil
}

// ping sends PING to addr and returns the reply when it shows a live
// server (+PONG, or -NOAUTH).
func ping(addr string, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if err := conn.SetDeadline(deadline); err != nil {
		return "", err
	}
	if _, err := conn.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("no reply: %w", err)
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
