package main

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The Docker image's setting: every interface, protected until a password
// comes from a secret file through --include (never the command line).
func TestProtectedUntilSecretPassword(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	var outside net.IP
	addrs, err := net.InterfaceAddrs()
	require.NoError(t, err)
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && !ipn.IP.IsLoopback() {
			outside = ipn.IP
		}
	}
	if outside == nil {
		t.Skip("this host has no non-loopback IPv4 address")
	}
	bin, err := buildBinary()
	require.NoError(t, err)
	secret := filepath.Join(t.TempDir(), "ratekv.conf")
	require.NoError(t, os.WriteFile(secret, []byte("requirepass s3cret\n"), 0o600))

	for i, tt := range []struct {
		args []string
		want string
	}{
		{nil, "-DENIED Redis is running in protected mode"},
		{[]string{"--include", secret}, "-NOAUTH Authentication required."},
	} {
		addr, _ := startRatekv(t, bin, t.TempDir(), append([]string{"--bind", "0.0.0.0"}, tt.args...)...)
		_, port, _ := net.SplitHostPort(addr)
		nc, err := net.DialTimeout("tcp", net.JoinHostPort(outside.String(), port), 5*time.Second)
		require.NoError(t, err)
		nc.SetDeadline(time.Now().Add(5 * time.Second))
		_, err = nc.Write([]byte("PING\r\n"))
		require.NoError(t, err)
		line, err := bufio.NewReader(nc).ReadString('\n')
		nc.Close()
		require.NoError(t, err, "step %d", i)
		require.True(t, strings.HasPrefix(line, tt.want), "step %d: %q", i, line)
	}
}
