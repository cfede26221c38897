package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// The binary TLS-only (port 0, as Redis's), with a key encrypted the way
// `openssl genrsa -aes256` writes it: clients get in with a certificate,
// and the Docker health check (--ping through the data directory) finds
// the server over TLS.
func TestTLSOnlyBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl not installed")
	}
	bin, err := buildBinary()
	require.NoError(t, err)
	certs := t.TempDir()
	sh := func(script string) {
		cmd := exec.Command("sh", "-ec", script)
		cmd.Dir = certs
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	sh(`openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=ca -keyout ca.key -out ca.crt 2>/dev/null
openssl genrsa -aes256 -passout pass:s3cret -out server.key 1024 2>/dev/null
openssl req -new -key server.key -passin pass:s3cret -subj /CN=server -out server.csr
printf 'subjectAltName=IP:127.0.0.1\n' > san.ext
openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 -extfile san.ext -out server.crt 2>/dev/null`)
	port := freePort(t)
	dir := t.TempDir()
	_, _ = startRatekv(t, bin, dir, "--tls-port", port, "--tls-cert-file", filepath.Join(certs, "server.crt"),
		"--tls-key-file", filepath.Join(certs, "server.key"), "--tls-key-file-pass", "s3cret", "--tls-auth-clients", "no")

	ca, err := os.ReadFile(filepath.Join(certs, "ca.crt"))
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(ca))
	c := redis.NewClient(&redis.Options{Addr: net.JoinHostPort("127.0.0.1", port), TLSConfig: &tls.Config{RootCAs: pool}})
	defer c.Close()
	require.NoError(t, c.Set(context.Background(), "k", "v", 0).Err())
	require.Equal(t, "0", c.ConfigGet(context.Background(), "port").Val()["port"])

	out, err := exec.Command(bin, "--dir", dir, "--ping").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, "PONG (TLS)\n", string(out))
}
