package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ratekv/ratekv/config"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// testCA is a certificate authority made for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	file string // its certificate, PEM
}

// pki writes certificates for a test into dir.
type pki struct {
	t      *testing.T
	dir    string
	serial int64
}

func newPKI(t *testing.T) *pki { return &pki{t: t, dir: t.TempDir(), serial: 1} }

func (p *pki) ca(name string) *testCA {
	p.t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(p.t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(p.next()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(p.t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(p.t, err)
	file := p.write(name+".crt", "CERTIFICATE", der)
	return &testCA{cert: cert, key: key, file: file}
}

func (p *pki) next() int64 { p.serial++; return p.serial }

func (p *pki) write(name, typ string, der []byte) string {
	path := filepath.Join(p.dir, name)
	require.NoError(p.t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
	return path
}

// leaf issues a certificate for 127.0.0.1 and localhost, valid for both
// server and client use, and returns its certificate and key files.
// expired makes one whose validity ended an hour ago.
func (p *pki) leaf(ca *testCA, name string, expired bool) (certFile, keyFile string) {
	p.t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(p.t, err)
	notAfter := time.Now().Add(24 * time.Hour)
	if expired {
		notAfter = time.Now().Add(-time.Hour)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(p.next()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-2 * time.Hour), NotAfter: notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(p.t, err)
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(p.t, err)
	return p.write(name+".crt", "CERTIFICATE", der), p.write(name+".key", "PRIVATE KEY", kder)
}

// clientTLS is a client configuration trusting ca, presenting the
// certificate in certFile/keyFile when given.
func clientTLS(t *testing.T, ca *testCA, certFile, keyFile string) *tls.Config {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	c := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		require.NoError(t, err)
		// Sent whatever CAs the server names, as redis-cli does (Go's
		// client would leave out one the server's CA did not sign).
		c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
	}
	return c
}

// freePort returns a TCP port that was free a moment ago (tls-port 0
// means no TLS, so a test needs a real one).
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// tlsServer starts a server with plaintext and TLS on free ports, with the
// server certificate of ca, and conf (name, value pairs) after that.
func tlsServer(t *testing.T, p *pki, ca *testCA, conf ...string) *testServer {
	t.Helper()
	cert, key := p.leaf(ca, "server", false)
	return newTestServer(t, append([]string{"port", freePort(t), "tls-port", freePort(t), "tls-cert-file", cert, "tls-key-file", key, "tls-ca-cert-file", ca.file}, conf...)...)
}

// tlsPing dials the server's TLS port with c and sends PING; it returns
// the error of the handshake or of the exchange.
func tlsPing(ts *testServer, c *tls.Config) error {
	rc := redis.NewClient(&redis.Options{Addr: ts.srv.TLSAddr().String(), TLSConfig: c, MaxRetries: -1, DialerRetries: 1, DialTimeout: 5 * time.Second})
	defer rc.Close()
	return rc.Ping(ctx).Err()
}

// TLS and plaintext side by side: one keyspace, the plaintext clients on
// the event loops, the TLS ones each on a goroutine.
func TestTLSBesidePlaintext(t *testing.T) {
	p := newPKI(t)
	ca := p.ca("ca")
	ts := tlsServer(t, p, ca, "tls-auth-clients", "no")
	require.Equal(t, 1, ts.srv.plain)
	sec := redis.NewClient(&redis.Options{Addr: ts.srv.TLSAddr().String(), TLSConfig: clientTLS(t, ca, "", "")})
	defer sec.Close()
	plain := ts.client(t, 2)
	require.NoError(t, sec.Set(ctx, "k", "over tls", 0).Err())
	require.Equal(t, "over tls", plain.Get(ctx, "k").Val())
	res, err := sec.Do(ctx, "CL.THROTTLE", "rl", "5", "10", "60").Slice()
	require.NoError(t, err)
	require.Equal(t, int64(0), res[0])
	pipe := sec.Pipeline()
	for range 32 {
		pipe.Incr(ctx, "n")
	}
	_, err = pipe.Exec(ctx)
	require.NoError(t, err)
	require.Equal(t, "32", plain.Get(ctx, "n").Val())
	// The plaintext clients are the event loops'; the TLS one is not.
	if len(ts.srv.loops) > 0 {
		for _, c := range ts.srv.clients() {
			_, secure := c.nc.(*tls.Conn)
			require.Equal(t, !secure, c.loop != nil, "client %d (%s): tls %v, loop %v", c.ID, c.Addr, secure, c.loop != nil)
		}
	}
}

// Client certificates under each tls-auth-clients value, and the server
// certificate checks a client makes (expired, another CA's).
func TestTLSCertificates(t *testing.T) {
	p := newPKI(t)
	ca, other := p.ca("ca"), p.ca("other")
	good, goodKey := p.leaf(ca, "client", false)
	expired, expiredKey := p.leaf(ca, "client-expired", true)
	foreign, foreignKey := p.leaf(other, "client-other", false)
	ts := tlsServer(t, p, ca)
	cli := ts.client(t, 2)
	for i, tt := range []struct {
		auth      string
		cert, key string
		ok        bool
	}{
		{"yes", good, goodKey, true},
		{"yes", "", "", false},
		{"yes", expired, expiredKey, false},
		{"yes", foreign, foreignKey, false},
		{"optional", "", "", true},
		{"optional", good, goodKey, true},
		{"optional", foreign, foreignKey, false},
		{"no", "", "", true},
		{"no", foreign, foreignKey, true}, // not asked for, so not checked
	} {
		require.NoError(t, cli.ConfigSet(ctx, "tls-auth-clients", tt.auth).Err())
		err := tlsPing(ts, clientTLS(t, ca, tt.cert, tt.key))
		if tt.ok {
			require.NoError(t, err, "step %d: auth %s, cert %s", i, tt.auth, filepath.Base(tt.cert))
		} else {
			require.Error(t, err, "step %d: auth %s, cert %s", i, tt.auth, filepath.Base(tt.cert))
		}
	}
	require.Equal(t, "ERR CONFIG SET failed (possibly related to argument 'tls-auth-clients') - argument(s) must be one of the following: no, yes, optional",
		cli.ConfigSet(ctx, "tls-auth-clients", "maybe").Err().Error())

	// The client's side: a server certificate of another CA, or expired.
	require.NoError(t, cli.ConfigSet(ctx, "tls-auth-clients", "no").Err())
	require.ErrorContains(t, tlsPing(ts, clientTLS(t, other, "", "")), "certificate signed by unknown authority")
	cert, key := p.leaf(ca, "server-expired", true)
	require.NoError(t, configSet(cli, "tls-cert-file", cert, "tls-key-file", key))
	require.ErrorContains(t, tlsPing(ts, clientTLS(t, ca, "", "")), "expired")
}

// CONFIG SET of the certificate files reloads them for new connections;
// an open connection goes on, and a reload that fails changes nothing.
func TestTLSReload(t *testing.T) {
	p := newPKI(t)
	ca, next := p.ca("ca"), p.ca("next")
	ts := tlsServer(t, p, ca, "tls-auth-clients", "no")
	old := redis.NewClient(&redis.Options{Addr: ts.srv.TLSAddr().String(), TLSConfig: clientTLS(t, ca, "", ""), PoolSize: 1})
	defer old.Close()
	require.NoError(t, old.Set(ctx, "k", "v", 0).Err())

	cert, key := p.leaf(next, "server-next", false)
	require.NoError(t, configSet(old, "tls-cert-file", cert, "tls-key-file", key))
	require.Error(t, tlsPing(ts, clientTLS(t, ca, "", "")), "a new connection must get the new certificate")
	require.NoError(t, tlsPing(ts, clientTLS(t, next, "", "")))
	require.Equal(t, "v", old.Get(ctx, "k").Val(), "the open connection goes on")

	// The files replaced in place, then CONFIG SET of the same path.
	again, againKey := p.leaf(ca, "server-again", false)
	for _, f := range [][2]string{{again, cert}, {againKey, key}} {
		b, err := os.ReadFile(f[0])
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(f[1], b, 0o600))
	}
	require.NoError(t, old.ConfigSet(ctx, "tls-cert-file", cert).Err())
	require.NoError(t, tlsPing(ts, clientTLS(t, ca, "", "")))

	// A certificate whose key does not match, a missing file, a bad
	// protocol: Redis's error, the old values and context stay.
	for i, tt := range []struct {
		kv   []string
		name string // the one the error names: the first with a failing apply, as Redis
	}{
		{[]string{"tls-key-file", againKey + ".missing"}, "tls-key-file"},
		{[]string{"tls-cert-file", cert, "tls-key-file", filepath.Join(p.dir, "server.key")}, "tls-cert-file"},
		{[]string{"maxclients", "7", "tls-protocols", "SSLv3"}, "tls-protocols"},
		{[]string{"tls-ca-cert-file", ""}, ""}, // tls-auth-clients yes would need one, but it is no: fine
	} {
		err := configSet(old, tt.kv...)
		if tt.name == "" {
			require.NoError(t, err)
			continue
		}
		name := tt.name
		require.EqualError(t, err, "ERR CONFIG SET failed (possibly related to argument '"+name+"') - Unable to update TLS configuration. Check server logs.", "step %d", i)
		require.Equal(t, key, old.ConfigGet(ctx, "tls-key-file").Val()["tls-key-file"], "step %d", i)
		require.Equal(t, "10000", old.ConfigGet(ctx, "maxclients").Val()["maxclients"], "step %d", i)
		require.NoError(t, tlsPing(ts, clientTLS(t, ca, "", "")), "step %d", i)
	}
	// With no CA left, tls-auth-clients yes admits no client certificate.
	require.NoError(t, old.ConfigSet(ctx, "tls-auth-clients", "yes").Err())
	cc, ck := p.leaf(ca, "client", false)
	require.Error(t, tlsPing(ts, clientTLS(t, ca, cc, ck)))
}

// Without a TLS port the tls-* parameters are stored and nothing loads,
// as in Redis.
func TestTLSParamsWithoutTLSPort(t *testing.T) {
	ts := newTestServer(t)
	cli := ts.client(t, 2)
	require.NoError(t, cli.ConfigSet(ctx, "tls-cert-file", "/nonexistent").Err())
	require.Equal(t, "/nonexistent", cli.ConfigGet(ctx, "tls-cert-file").Val()["tls-cert-file"])
	require.Nil(t, ts.srv.TLSAddr())
	require.EqualError(t, cli.ConfigSet(ctx, "tls-port", "6390").Err(), "ERR CONFIG SET failed (possibly related to argument 'tls-port') - can't set immutable config")
}

// port 0 with a tls-port is TLS only, as Redis's; INFO says tcp_port 0.
// A start whose files do not load fails.
func TestTLSOnly(t *testing.T) {
	p := newPKI(t)
	ca := p.ca("ca")
	ts := tlsServer(t, p, ca, "port", "0", "tls-auth-clients", "no")
	require.Equal(t, 0, ts.srv.plain)
	require.Equal(t, ts.srv.TLSAddr(), ts.srv.Addr())
	sec := redis.NewClient(&redis.Options{Addr: ts.srv.TLSAddr().String(), TLSConfig: clientTLS(t, ca, "", "")})
	defer sec.Close()
	require.Equal(t, "0", infoFields(t, sec.Info(ctx, "server").Val())["tcp_port"])

	for i, conf := range [][]string{
		{"tls-cert-file", ""},
		{"tls-key-file", filepath.Join(p.dir, "ca.crt")},
		{"tls-auth-clients", "yes", "tls-ca-cert-file", ""},
		{"tls-ca-cert-dir", filepath.Join(p.dir, "missing")},
		{"tls-ciphers", "NULL-MD5:!DEFAULT"},
		{"tls-ciphersuites", "TLS_AES_128_GCM_SHA256:BOGUS"},
	} {
		cfg := config.New()
		cert, key := p.leaf(ca, "server", false)
		for _, kv := range [][2]string{{"port", "0"}, {"tls-port", freePort(t)}, {"tls-cert-file", cert}, {"tls-key-file", key}, {"tls-ca-cert-file", ca.file}} {
			require.NoError(t, cfg.Set(kv[0], kv[1]))
		}
		for j := 0; j < len(conf); j += 2 {
			require.NoError(t, cfg.Set(conf[j], conf[j+1]))
		}
		srv := New(ts.store, cfg, ts.srv.log)
		err := srv.Listen()
		require.Error(t, err, "step %d: %v", i, conf)
		require.True(t, strings.HasPrefix(err.Error(), "TLS: "), "step %d: %v", i, err)
	}
}

// tls-ca-cert-dir: every PEM file of the directory is a CA.
func TestTLSCACertDir(t *testing.T) {
	p := newPKI(t)
	ca := p.ca("ca")
	dir := filepath.Join(p.dir, "cas")
	require.NoError(t, os.Mkdir(dir, 0o700))
	b, err := os.ReadFile(ca.file)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a1b2c3d4.0"), b, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README"), []byte("not a certificate"), 0o600))
	ts := tlsServer(t, p, ca, "tls-ca-cert-file", "", "tls-ca-cert-dir", dir)
	cert, key := p.leaf(ca, "client", false)
	require.NoError(t, tlsPing(ts, clientTLS(t, ca, cert, key)))
	require.Error(t, tlsPing(ts, clientTLS(t, ca, "", "")))
}

// tls-protocols bounds the versions; tls-session-caching and its timeout
// decide whether a client resumes.
func TestTLSProtocolsAndSessions(t *testing.T) {
	p := newPKI(t)
	ca := p.ca("ca")
	ts := tlsServer(t, p, ca, "tls-auth-clients", "no", "tls-protocols", "TLSv1.3")
	cli := ts.client(t, 2)
	c := clientTLS(t, ca, "", "")
	c.MaxVersion = tls.VersionTLS12
	require.ErrorContains(t, tlsPing(ts, c), "protocol version")
	require.NoError(t, configSet(cli, "tls-protocols", "tlsv1.2 TLSv1.3"))
	require.NoError(t, tlsPing(ts, c))

	resumed := func() bool {
		t.Helper()
		c := clientTLS(t, ca, "", "")
		c.ClientSessionCache = tls.NewLRUClientSessionCache(4)
		var did bool
		for range 2 {
			conn, err := tls.Dial("tcp", ts.srv.TLSAddr().String(), c)
			require.NoError(t, err)
			_, err = conn.Write([]byte("PING\r\n"))
			require.NoError(t, err)
			buf := make([]byte, 7)
			_, err = conn.Read(buf) // TLS 1.3 tickets come after the handshake
			require.NoError(t, err)
			did = conn.ConnectionState().DidResume
			conn.Close()
		}
		return did
	}
	require.True(t, resumed())
	require.NoError(t, cli.ConfigSet(ctx, "tls-session-cache-timeout", "0").Err())
	require.False(t, resumed())
	require.NoError(t, configSet(cli, "tls-session-cache-timeout", "300", "tls-session-caching", "no"))
	require.False(t, resumed())
	require.NoError(t, cli.ConfigSet(ctx, "tls-session-caching", "yes").Err())
	require.True(t, resumed())
}

// An encrypted key loads with tls-key-file-pass (here the legacy PEM
// encryption Go can write; internal/pemkey tests OpenSSL's PKCS#8 ones).
func TestTLSKeyFilePass(t *testing.T) {
	p := newPKI(t)
	ca := p.ca("ca")
	cert, key := p.leaf(ca, "server", false)
	b, err := os.ReadFile(key)
	require.NoError(t, err)
	block, _ := pem.Decode(b)
	enc, err := x509.EncryptPEMBlock(rand.Reader, "PRIVATE KEY", block.Bytes, []byte("s3cret"), x509.PEMCipherAES256) //nolint:staticcheck // the legacy form on purpose
	require.NoError(t, err)
	encFile := filepath.Join(p.dir, "enc.key")
	require.NoError(t, os.WriteFile(encFile, pem.EncodeToMemory(enc), 0o600))
	ts := newTestServer(t, "tls-port", freePort(t), "tls-cert-file", cert, "tls-key-file", encFile, "tls-key-file-pass", "s3cret", "tls-auth-clients", "no")
	require.NoError(t, tlsPing(ts, clientTLS(t, ca, "", "")))
	cli := redis.NewClient(&redis.Options{Addr: ts.srv.TLSAddr().String(), TLSConfig: clientTLS(t, ca, "", "")})
	defer cli.Close()
	require.Error(t, cli.ConfigSet(ctx, "tls-key-file-pass", "wrong").Err())
}

// redis-cli --tls, as the Redis docs show it.
func TestTLSRedisCli(t *testing.T) {
	bin, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli not installed")
	}
	m := newMutualTLS(t)
	ca, cert, key, port := m.ca, m.cert, m.key, m.port
	out, err := exec.Command(bin, "--tls", "--cacert", ca.file, "--cert", cert, "--key", key, "-p", port, "CL.THROTTLE", "k", "1", "2", "60").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, "0\n2\n1\n-1\n30\n", string(out))
	out, _ = exec.Command(bin, "--tls", "--cacert", ca.file, "-p", port, "PING").CombinedOutput()
	require.NotContains(t, string(out), "PONG", "no client certificate with tls-auth-clients yes")
}

// configSet sends CONFIG SET with the name, value pairs kv.
func configSet(c *redis.Client, kv ...string) error {
	args := []any{"CONFIG", "SET"}
	for _, a := range kv {
		args = append(args, a)
	}
	return c.Do(ctx, args...).Err()
}

// mutualTLS is a server on a TLS port that wants client certificates
// (tls-auth-clients yes), and a client certificate it takes.
type mutualTLS struct {
	ca        *testCA
	cert, key string // the client's
	port      string // the TLS port
}

func newMutualTLS(t *testing.T) mutualTLS {
	t.Helper()
	p := newPKI(t)
	ca := p.ca("ca")
	ts := tlsServer(t, p, ca)
	cert, key := p.leaf(ca, "client", false)
	_, port, _ := net.SplitHostPort(ts.srv.TLSAddr().String())
	return mutualTLS{ca: ca, cert: cert, key: key, port: port}
}

// Handshakes under way are bounded by maxclients: connections that never
// handshake cannot pile up goroutines; the next one is closed at once.
func TestTLSHandshakesBounded(t *testing.T) {
	p := newPKI(t)
	ca := p.ca("ca")
	ts := tlsServer(t, p, ca, "tls-auth-clients", "no", "maxclients", "2")
	addr := ts.srv.TLSAddr().String()
	var idle []net.Conn
	for range 2 {
		nc, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		idle = append(idle, nc)
	}
	require.Eventually(t, func() bool { return ts.srv.handshakes.Load() == 2 }, 5*time.Second, time.Millisecond)
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = nc.Read(make([]byte, 1))
	require.Error(t, err)
	require.False(t, errors.Is(err, os.ErrDeadlineExceeded), "the third must be closed, not left waiting")
	nc.Close()
	for _, c := range idle {
		c.Close()
	}
	require.Eventually(t, func() bool { return ts.srv.handshakes.Load() == 0 }, 5*time.Second, time.Millisecond)
	require.NoError(t, tlsPing(ts, clientTLS(t, ca, "", "")))
	require.Equal(t, "1", infoFields(t, ts.client(t, 2).Info(ctx, "stats").Val())["rejected_connections"])
}

// CLIENT KILL closes a TLS client as any other, without waiting on it.
func TestTLSClientKill(t *testing.T) {
	p := newPKI(t)
	ca := p.ca("ca")
	ts := tlsServer(t, p, ca, "tls-auth-clients", "no")
	sec := redis.NewClient(&redis.Options{Addr: ts.srv.TLSAddr().String(), TLSConfig: clientTLS(t, ca, "", ""), PoolSize: 1, MaxRetries: -1})
	defer sec.Close()
	id, err := sec.ClientID(ctx).Result()
	require.NoError(t, err)
	require.Equal(t, int64(1), ts.client(t, 2).ClientKillByFilter(ctx, "ID", strconv.FormatInt(id, 10)).Val())
	require.Error(t, sec.Ping(ctx).Err())
	require.Eventually(t, func() bool { return len(ts.srv.clients()) == 1 }, 5*time.Second, time.Millisecond)
}

// TestTLSReplication: a replica with tls-replication yes replicates from
// its primary's TLS port, presenting its certificate (the primary has
// tls-auth-clients yes) and checking the primary's against its CA; one
// whose certificate another CA signed, or one without TLS, never links.
func TestTLSReplication(t *testing.T) {
	p := newPKI(t)
	ca, other := p.ca("ca"), p.ca("other")
	node := func(name string, ca *testCA, conf ...string) *testServer {
		cert, key := p.leaf(ca, name, false)
		ts := newTestServer(t, append([]string{"port", freePort(t), "tls-port", freePort(t), "tls-cert-file", cert, "tls-key-file", key,
			"tls-ca-cert-file", ca.file, "dir", t.TempDir(), "repl-timeout", "2", "repl-ping-replica-period", "1"}, conf...)...)
		ts.srv.StartReplication()
		t.Cleanup(ts.srv.StopReplication)
		return ts
	}
	primary := node("primary", ca)
	pc := primary.client(t, 2)
	require.NoError(t, pc.Set(ctx, "k", "v", 0).Err())
	_, port, _ := net.SplitHostPort(primary.srv.TLSAddr().String())

	replica := node("replica", ca, "tls-replication", "yes")
	rc := replica.client(t, 2)
	require.NoError(t, rc.Do(ctx, "REPLICAOF", "127.0.0.1", port).Err())
	require.Eventually(t, func() bool { return rc.Get(ctx, "k").Val() == "v" }, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, pc.Set(ctx, "k", "streamed", 0).Err())
	require.Equal(t, int64(1), pc.Do(ctx, "WAIT", "1", "5000").Val())
	require.Equal(t, "streamed", rc.Get(ctx, "k").Val())
	require.Contains(t, pc.Info(ctx, "replication").Val(), "connected_slaves:1")

	for i, conf := range [][]string{
		{"tls-replication", "yes"}, // its certificate is the other CA's
		{"tls-replication", "no"},
	} {
		r := node("replica-other", other, conf...)
		c := r.client(t, 2)
		require.NoError(t, c.Do(ctx, "REPLICAOF", "127.0.0.1", port).Err())
		time.Sleep(1500 * time.Millisecond) // past the first attempt
		require.Contains(t, c.Info(ctx, "replication").Val(), "master_link_status:down", "step %d", i)
		require.Empty(t, c.Get(ctx, "k").Val(), "step %d", i)
	}
	require.Contains(t, pc.Info(ctx, "replication").Val(), "connected_slaves:1")
}
