package main

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/internal/dirlock"
	"github.com/stretchr/testify/require"
)

func TestPingArgs(t *testing.T) {
	for i, tt := range []struct {
		args, rest     []string
		host           string
		explicit, ping bool
	}{
		{[]string{"--port", "1"}, []string{"--port", "1"}, "", false, false},
		{[]string{"--host", "h", "--port", "1"}, []string{"--host", "h", "--port", "1"}, "", false, false}, // --host needs --ping
		{[]string{"--ping"}, nil, "", false, true},
		{[]string{"--dir", "/data", "--ping"}, []string{"--dir", "/data"}, "", false, true},
		{[]string{"r.conf", "--ping", "--host", "::1", "--port", "7"}, []string{"r.conf", "--port", "7"}, "::1", true, true},
		{[]string{"--host=10.0.0.1", "--ping"}, nil, "10.0.0.1", true, true},
		{[]string{"--ping", "--port=7"}, []string{"--port=7"}, "", true, true},
	} {
		rest, host, explicit, ping := pingArgs(tt.args)
		if !equalArgs(rest, tt.rest) || host != tt.host || explicit != tt.explicit || ping != tt.ping {
			t.Errorf("step %d: %q: have %q %q %v %v, want %q %q %v %v", i, tt.args, rest, host, explicit, ping, tt.rest, tt.host, tt.explicit, tt.ping)
		}
	}
}

func equalArgs(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") }

func TestPingAddrs(t *testing.T) {
	announced := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(announced, dirlock.FileName), []byte("pid 1\naddr [::]:7777\n"), 0o644))
	for i, tt := range []struct {
		bind, port, host string
		explicit         bool
		dir, want        string
	}{
		{"127.0.0.1", "6380", "", false, "", "127.0.0.1:6380"},
		{"0.0.0.0", "7000", "", false, "", "127.0.0.1:7000"},
		{"* -::*", "7000", "", false, "", "127.0.0.1:7000"},
		{"-::1 127.0.0.1", "7000", "", false, "", "[::1]:7000"},
		{"::", "7000", "", false, "", "127.0.0.1:7000 [::1]:7000"},
		{"::*", "7000", "", false, "", "[::1]:7000"},
		{"10.1.2.3", "7000", "", false, "", "10.1.2.3:7000"},
		{"0.0.0.0", "7000", "db.local", true, "", "db.local:7000"},
		{"0.0.0.0", "0", "", false, "", ""},
		// The server of the data directory said where it listens.
		{"0.0.0.0", "6380", "", false, announced, "127.0.0.1:7777 [::1]:7777"},
		{"0.0.0.0", "6380", "", true, announced, "127.0.0.1:6380"},
		{"0.0.0.0", "0", "", false, announced, "127.0.0.1:7777 [::1]:7777"},
	} {
		cfg := config.New()
		require.NoError(t, cfg.Set("bind", tt.bind))
		require.NoError(t, cfg.Set("port", tt.port))
		dir := tt.dir
		if dir == "" {
			dir = t.TempDir()
		}
		require.NoError(t, cfg.Set("dir", dir))
		addrs, err := pingAddrs(cfg, tt.host, tt.explicit)
		if have := strings.Join(addrs, " "); have != tt.want || (err != nil) != (tt.want == "") {
			t.Errorf("step %d: bind %q port %s host %q: have %q, %v; want %q", i, tt.bind, tt.port, tt.host, have, err, tt.want)
		}
	}
	// TLS only (port 0 with a tls-port): the TLS port.
	cfg := config.New()
	require.NoError(t, cfg.Set("dir", t.TempDir()))
	require.NoError(t, cfg.Set("port", "0"))
	require.NoError(t, cfg.Set("tls-port", "6390"))
	addrs, err := pingAddrs(cfg, "", false)
	require.NoError(t, err)
	require.Equal(t, []string{"127.0.0.1:6390"}, addrs)
}

// fakeServer answers each connection's first line with reply ("" : never).
func fakeServer(t *testing.T, reply string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go answer(ln, reply)
	return ln.Addr().String()
}

// answer answers the first line of each connection ln accepts with reply
// ("": never), until ln is closed.
func answer(ln net.Listener, reply string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			r := bufio.NewReader(c)
			r.ReadString('\n')
			if reply == "" { // a server that hangs, until the client gives up
				io.Copy(io.Discard, r)
				return
			}
			c.Write([]byte(reply))
		}()
	}
}

func TestPingReplies(t *testing.T) {
	for i, tt := range []struct {
		reply, want, err string
	}{
		{"+PONG\r\n", "PONG", ""},
		{"-NOAUTH Authentication required.\r\n", "NOAUTH Authentication required.", ""},
		{"-LOADING Redis is loading the dataset in memory\r\n", "", "unexpected reply"},
		{"+PON", "", "no reply"}, // cut off
		{"", "", "i/o timeout"},
	} {
		addr := fakeServer(t, tt.reply)
		start := time.Now()
		have, err := ping(addr, 500*time.Millisecond)
		if have != tt.want || (tt.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.err) {
			t.Errorf("step %d: %q: have %q, %v; want %q, %q", i, tt.reply, have, err, tt.want, tt.err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("step %d: took %v", i, d)
		}
	}

	// The first address that answers wins; each failure is reported.
	pong, closed := fakeServer(t, "+PONG\r\n"), "127.0.0.1:"+freePort(t)
	have, err := pingAny([]string{closed, pong}, time.Second)
	require.NoError(t, err)
	require.Equal(t, "PONG", have)
	_, err = pingAny([]string{closed, fakeServer(t, "-ERR x\r\n")}, time.Second)
	require.ErrorContains(t, err, "ping "+closed+": dial tcp")
	require.ErrorContains(t, err, `unexpected reply "-ERR x"`)
}

// freePort returns a port nothing listens on.
func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	return port
}

// ratekv --ping against a running server (found through its options or
// its config file, with or without a password) and a closed port.
func TestPingCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin, err := buildBinary()
	require.NoError(t, err)
	run := func(args ...string) (string, error) {
		out, err := exec.Command(bin, args...).CombinedOutput()
		return string(out), err
	}

	dir := t.TempDir()
	addr, _ := startRatekv(t, bin, dir)
	host, port, _ := net.SplitHostPort(addr)
	out, err := run("--ping", "--port", port)
	require.NoError(t, err, out)
	require.Equal(t, "PONG\n", out)
	out, err = run("--dir", dir, "--ping") // the port it announced in the data directory
	require.NoError(t, err, out)
	require.Equal(t, "PONG\n", out)
	out, err = run("--ping", "--host", host, "--port", port)
	require.NoError(t, err, out)

	// The port from a config file, which the server would refuse to start
	// with: no matter to --ping.
	conf := filepath.Join(t.TempDir(), "ratekv.conf")
	require.NoError(t, os.WriteFile(conf, []byte("port "+port+"\ndir "+t.TempDir()+"\ndaemonize yes\n"), 0o644))
	out, err = run(conf, "--ping")
	require.NoError(t, err, out)

	// A server with a password answers NOAUTH: alive.
	addr, _ = startRatekv(t, bin, t.TempDir(), "--requirepass", "secret")
	_, port, _ = net.SplitHostPort(addr)
	out, err = run("--ping", "--port", port)
	require.NoError(t, err, out)
	require.Contains(t, out, "NOAUTH")

	start := time.Now()
	closed := freePort(t)
	out, err = run("--ping", "--port", closed)
	require.Error(t, err)
	require.Equal(t, 1, err.(*exec.ExitError).ExitCode())
	require.Contains(t, out, "ratekv: ping 127.0.0.1:"+closed)
	require.Less(t, time.Since(start), 10*time.Second)

	out, err = run("--ping", "--port", "0")
	require.Error(t, err)
	require.Contains(t, out, "give the server's port")
}

var versionShape = regexp.MustCompile(`^ratekv \d+\.\d+\.\d+ \(commit ([0-9a-f]{12}(, modified)?|unknown)\) follows Redis \d+\.\d+\.\d+ semantics\n$`)

func TestVersionLine(t *testing.T) {
	info := func(kv ...string) *debug.BuildInfo {
		b := &debug.BuildInfo{}
		for i := 0; i+1 < len(kv); i += 2 {
			b.Settings = append(b.Settings, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return b
	}
	for i, tt := range []struct {
		info   *debug.BuildInfo
		ok     bool
		commit string // -X main.commit
		want   string
	}{
		{info("vcs.revision", "abc1234def5678900000", "vcs.modified", "true"), true, "", "(commit abc1234def56, modified)"},
		{info("vcs.revision", "abc1234def5678900000", "vcs.modified", "false"), true, "", "(commit abc1234def56)"},
		{info(), true, "", "(commit unknown)"},
		{nil, false, "", "(commit unknown)"},
		{info(), true, "0123456789abcdef", "(commit 0123456789ab)"},
		{info("vcs.revision", "abc1234def5678900000"), true, "0123456789abcdef", "(commit abc1234def56)"},
	} {
		commit = tt.commit
		have := versionLine(tt.info, tt.ok)
		if !strings.Contains(have, tt.want) || !versionShape.MatchString(have+"\n") {
			t.Errorf("step %d: have %q, want %q in it", i, have, tt.want)
		}
	}
	commit = ""
}

func TestVersionCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin, err := buildBinary()
	require.NoError(t, err)
	out, err := exec.Command(bin, "--version").Output()
	require.NoError(t, err)
	require.Regexp(t, versionShape, string(out))
}

// A TLS-only server (the port a TLS-only ratekv announces) answers the
// PING over TLS; one that wants a client certificate answers with an
// alert, alive all the same.
func TestPingTLS(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	for i, tt := range []struct {
		auth tls.ClientAuthType
		want string
	}{
		{tls.NoClientCert, "PONG (TLS)"},
		{tls.RequireAnyClientCert, "TLS server answered: tls: certificate required"},
	} {
		ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tt.auth})
		require.NoError(t, err)
		go answer(ln, "+PONG\r\n")
		have, err := ping(ln.Addr().String(), 2*time.Second)
		require.NoError(t, err, "step %d", i)
		require.Equal(t, tt.want, have, "step %d", i)
		ln.Close()
	}
}
