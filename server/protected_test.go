package server

import (
	"bufio"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ratekv/ratekv/resp"
	"github.com/stretchr/testify/require"
)

// nonLoopbackIP returns an IPv4 address of this host that is not a
// loopback one: a client connecting to it from here comes from it.
func nonLoopbackIP(t *testing.T) net.IP {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	require.NoError(t, err)
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && !ipn.IP.IsLoopback() {
			return ipn.IP
		}
	}
	t.Skip("this host has no non-loopback IPv4 address")
	return nil
}

// firstLine dials addr from laddr (nil: any) over dial, sends PING and
// returns the first reply line; after -DENIED, closed reports whether
// the server closed the connection after it.
func firstLine(t *testing.T, dial func(net.Conn) net.Conn, laddr *net.TCPAddr, addr string) (line string, closed bool) {
	t.Helper()
	d := net.Dialer{LocalAddr: laddr, Timeout: 5 * time.Second}
	raw, err := d.Dial("tcp", addr)
	require.NoError(t, err)
	nc := dial(raw)
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	_, err = nc.Write([]byte("PING\r\n"))
	require.NoError(t, err)
	rd := bufio.NewReader(nc)
	line, err = rd.ReadString('\n')
	require.NoError(t, err)
	if !strings.HasPrefix(line, "-DENIED") {
		return line, false
	}
	_, err = rd.ReadByte() // EOF, or a reset: the PING was never read
	var ne net.Error
	return line, err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

func plainDial(nc net.Conn) net.Conn { return nc }

// Protected mode as Redis's: with no password, a client from a
// non-loopback address gets -DENIED and is closed; 127.0.0.0/8 is
// loopback; a password or protected-mode no lets everyone in.
func TestProtectedMode(t *testing.T) {
	ip := nonLoopbackIP(t)
	ts := newTestServer(t, "bind", "0.0.0.0")
	_, port, _ := net.SplitHostPort(ts.addr)
	outside := net.JoinHostPort(ip.String(), port)
	loop := net.JoinHostPort("127.0.0.1", port)
	denied := "-" + resp.ErrProtectedMode + "\r\n"

	line, closed := firstLine(t, plainDial, nil, outside)
	require.Equal(t, denied, line)
	require.True(t, closed, "the connection must be closed after -DENIED")
	line, _ = firstLine(t, plainDial, nil, loop)
	require.Equal(t, "+PONG\r\n", line)
	line, _ = firstLine(t, plainDial, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, loop)
	require.Equal(t, "+PONG\r\n", line, "127.0.0.2 is a loopback address")

	cli := ts.client(t, 2)
	info := infoFields(t, cli.Info(ctx, "stats").Val())
	require.Equal(t, "1", info["rejected_connections"])

	require.NoError(t, cli.ConfigSet(ctx, "requirepass", "pw").Err())
	require.Equal(t, "-NOAUTH Authentication required.\r\n", must(firstLine(t, plainDial, nil, outside)))
	require.NoError(t, cli.Do(ctx, "AUTH", "pw").Err())
	require.NoError(t, cli.ConfigSet(ctx, "requirepass", "").Err())
	require.Equal(t, denied, must(firstLine(t, plainDial, nil, outside)))
	require.NoError(t, cli.ConfigSet(ctx, "protected-mode", "no").Err())
	require.Equal(t, "+PONG\r\n", must(firstLine(t, plainDial, nil, outside)))
	require.Equal(t, "no", cli.ConfigGet(ctx, "protected-mode").Val()["protected-mode"])
}

func must(line string, _ bool) string { return line }

// Over TLS the client reads -DENIED after the handshake, as from Redis.
func TestProtectedModeTLS(t *testing.T) {
	ip := nonLoopbackIP(t)
	p := newPKI(t)
	ca := p.ca("ca")
	ts := tlsServer(t, p, ca, "bind", "0.0.0.0", "tls-auth-clients", "no")
	_, port, _ := net.SplitHostPort(ts.srv.TLSAddr().String())
	c := clientTLS(t, ca, "", "")
	c.InsecureSkipVerify = true // the certificate names 127.0.0.1
	dial := func(nc net.Conn) net.Conn { return tls.Client(nc, c) }
	line, closed := firstLine(t, dial, nil, net.JoinHostPort(ip.String(), port))
	require.Equal(t, "-"+resp.ErrProtectedMode+"\r\n", line)
	require.True(t, closed)
	require.Equal(t, "+PONG\r\n", must(firstLine(t, dial, nil, net.JoinHostPort("127.0.0.1", port))))
}
