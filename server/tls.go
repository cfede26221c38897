package server

// TLS (tls-port and the tls-* parameters, as Redis's src/tls.c). The
// listeners on tls-port hand each accepted socket to a goroutine that
// runs the handshake; the client is then served from its own goroutine,
// as with event-loop no (the epoll loops read and write plain sockets
// only), while plaintext clients stay on the loops. Each handshake takes
// the TLS context current at that moment through GetConfigForClient: a
// CONFIG SET of the certificate, key or CA files builds a new context and
// swaps it in whole, so new connections get the new files and open ones
// keep theirs, as in Redis 6.2+. A context that does not load changes
// nothing, and CONFIG SET fails with Redis's error.

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ratekv/ratekv/command"
	"github.com/ratekv/ratekv/config"
	"github.com/ratekv/ratekv/internal/pemkey"
)

// tlsHandshakeTimeout bounds a TLS handshake, so that a client that
// connects and never completes one does not keep its goroutine.
const tlsHandshakeTimeout = 10 * time.Second

// tls-auth-clients values, indexes of tlsContext.byAuth.
const (
	authNo int32 = iota
	authYes
	authOptional
)

var authModes = map[string]int32{"no": authNo, "yes": authYes, "optional": authOptional}

// tlsContext is what a handshake is configured from: one tls.Config per
// tls-auth-clients value, so that CONFIG SET tls-auth-clients needs no
// reload (as in Redis, where it applies to the next connections).
type tlsContext struct {
	byAuth [3]*tls.Config
}

// tlsApplied are the parameters that a CONFIG SET puts into effect by
// loading a new context (Redis's applyTlsCfg).
var tlsApplied = []config.Key{
	config.TLSCertFile, config.TLSKeyFile, config.TLSKeyFilePass, config.TLSCACertFile, config.TLSCACertDir,
	config.TLSProtocols, config.TLSCiphers, config.TLSCipherSuites, config.TLSPreferServerCiphers,
	config.TLSSessionCaching, config.TLSSessionCacheSize, config.TLSSessionCacheTimeout,
}

// watchTLS keeps tls-auth-clients current and registers the reload; Listen
// loads the first context.
func (s *Server) watchTLS() {
	apply := func() { s.tlsAuth.Store(authModes[s.cfg.String(config.TLSAuthClients)]) }
	apply()
	s.cfg.OnChange(config.TLSAuthClients, func(string) { apply() })
	s.cfg.OnApply(s.reloadTLS, tlsApplied...)
	s.tlsListen = &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		return s.tlsCtx.Load().byAuth[s.tlsAuth.Load()], nil
	}}
}

// reloadTLS loads the TLS context from the current parameters and makes
// it the one new connections get. Without a TLS listener it does nothing,
// as Redis, which only configures TLS when a TLS port is set.
func (s *Server) reloadTLS() error {
	if s.tlsCtx.Load() == nil {
		return nil
	}
	ctx, err := loadTLS(s.cfg)
	if err != nil {
		s.log.Warn("cannot update the TLS configuration; keeping the one in use", "err", err)
		return command.ErrTLSConfig
	}
	s.tlsCtx.Store(ctx)
	s.log.Info("TLS configuration reloaded")
	return nil
}

// loadTLS builds a TLS context from cfg, reading the files it names.
func loadTLS(cfg *config.Config) (*tlsContext, error) {
	certFile, keyFile := cfg.String(config.TLSCertFile), cfg.String(config.TLSKeyFile)
	if certFile == "" || keyFile == "" {
		return nil, errors.New("tls-cert-file and tls-key-file must both be set")
	}
	cert, err := loadCertificate(cfg)
	if err != nil {
		return nil, err
	}
	cas, err := loadCAs(cfg.String(config.TLSCACertFile), cfg.String(config.TLSCACertDir))
	if err != nil {
		return nil, err
	}
	if cas == nil {
		if cfg.String(config.TLSAuthClients) != "no" {
			return nil, errors.New("either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-auth-clients is yes or optional")
		}
		cas = x509.NewCertPool() // a later tls-auth-clients yes then admits no client
	}
	minV, maxV, suites, err := protocolsAndCiphers(cfg)
	if err != nil {
		return nil, err
	}
	if err := checkCipherSuites13(cfg.String(config.TLSCipherSuites)); err != nil {
		return nil, err
	}
	base := &tls.Config{
		Certificates:           []tls.Certificate{cert},
		ClientCAs:              cas,
		MinVersion:             minV,
		MaxVersion:             maxV,
		CipherSuites:           suites,
		SessionTicketsDisabled: !cfg.Bool(config.TLSSessionCaching),
	}
	timeout := time.Duration(cfg.Int(config.TLSSessionCacheTimeout)) * time.Second
	ctx := &tlsContext{}
	for mode, auth := range [...]tls.ClientAuthType{authNo: tls.NoClientCert, authYes: tls.RequireAndVerifyClientCert, authOptional: tls.VerifyClientCertIfGiven} {
		c := base.Clone()
		c.ClientAuth = auth
		if !c.SessionTicketsDisabled {
			expireSessions(c, timeout)
		}
		ctx.byAuth[mode] = c
	}
	return ctx, nil
}

// protocolsAndCiphers reads tls-protocols and tls-ciphers.
func protocolsAndCiphers(cfg *config.Config) (minV, maxV uint16, suites []uint16, err error) {
	if minV, maxV, err = parseProtocols(cfg.String(config.TLSProtocols)); err != nil {
		return 0, 0, nil, err
	}
	suites, err = parseCiphers(cfg.String(config.TLSCiphers))
	return minV, maxV, suites, err
}

// loadCertificate reads tls-cert-file and tls-key-file.
func loadCertificate(cfg *config.Config) (tls.Certificate, error) {
	certPEM, err := os.ReadFile(cfg.String(config.TLSCertFile))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tls-cert-file: %w", err)
	}
	keyPEM, err := os.ReadFile(cfg.String(config.TLSKeyFile))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tls-key-file: %w", err)
	}
	if keyPEM, err = pemkey.Decode(keyPEM, cfg.String(config.TLSKeyFilePass)); err != nil {
		return tls.Certificate{}, fmt.Errorf("tls-key-file: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tls-cert-file and tls-key-file: %w", err)
	}
	return cert, nil
}

// dialReplication connects a replica to its primary: over TLS with
// tls-replication yes, as Redis's connectWithMaster. The replica presents
// tls-cert-file when set and checks the primary's certificate against
// tls-ca-cert-file/dir (the system's CAs when neither is set), without
// matching its name to the address, as Redis (OpenSSL's SSL_VERIFY_PEER,
// no host check). The files are read at each connection, so a CONFIG SET
// of them applies to the next one.
func (s *Server) dialReplication(addr string, timeout time.Duration) (io.ReadWriteCloser, error) {
	d := &net.Dialer{Timeout: timeout}
	if !s.cfg.Bool(config.TLSReplication) {
		return d.Dial("tcp", addr)
	}
	conf, err := replicationTLS(s.cfg)
	if err != nil {
		return nil, fmt.Errorf("tls-replication: %w", err)
	}
	return tls.DialWithDialer(d, "tcp", addr, conf)
}

// replicationTLS is a replica's TLS configuration.
func replicationTLS(cfg *config.Config) (*tls.Config, error) {
	cas, err := loadCAs(cfg.String(config.TLSCACertFile), cfg.String(config.TLSCACertDir))
	if err != nil {
		return nil, err
	}
	if cas == nil {
		if cas, err = x509.SystemCertPool(); err != nil {
			return nil, err
		}
	}
	minV, maxV, suites, err := protocolsAndCiphers(cfg)
	if err != nil {
		return nil, err
	}
	conf := &tls.Config{
		MinVersion: minV, MaxVersion: maxV, CipherSuites: suites,
		// The chain is checked in VerifyConnection, without the name.
		InsecureSkipVerify: true,
		VerifyConnection: func(st tls.ConnectionState) error {
			if len(st.PeerCertificates) == 0 {
				return errors.New("the primary sent no certificate")
			}
			inter := x509.NewCertPool()
			for _, c := range st.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := st.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: cas, Intermediates: inter})
			return err
		},
	}
	if cfg.String(config.TLSCertFile) != "" && cfg.String(config.TLSKeyFile) != "" {
		cert, err := loadCertificate(cfg)
		if err != nil {
			return nil, err
		}
		// Sent whatever CAs the primary names, as OpenSSL does.
		conf.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
	}
	return conf, nil
}

// loadCAs reads the CA certificates of tls-ca-cert-file and every PEM file
// of tls-ca-cert-dir; nil when neither is set.
func loadCAs(file, dir string) (*x509.CertPool, error) {
	if file == "" && dir == "" {
		return nil, nil
	}
	pool := x509.NewCertPool()
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("tls-ca-cert-file: %w", err)
		}
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("tls-ca-cert-file: no certificate in %s", file)
		}
	}
	if dir != "" {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("tls-ca-cert-dir: %w", err)
		}
		for _, e := range entries {
			// OpenSSL's hashed names are symbolic links: follow them.
			if b, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil {
				pool.AppendCertsFromPEM(b)
			}
		}
	}
	return pool, nil
}

// parseProtocols maps tls-protocols onto Go's version range: Go cannot
// leave a version out of the middle, so "TLSv1 TLSv1.3" accepts 1.0 to 1.3.
func parseProtocols(v string) (minV, maxV uint16, err error) {
	words := strings.Fields(v)
	if len(words) == 0 {
		return tls.VersionTLS12, tls.VersionTLS13, nil
	}
	versions := map[string]uint16{"tlsv1": tls.VersionTLS10, "tlsv1.1": tls.VersionTLS11, "tlsv1.2": tls.VersionTLS12, "tlsv1.3": tls.VersionTLS13}
	for _, w := range words {
		ver, ok := versions[strings.ToLower(w)]
		if !ok {
			return 0, 0, errors.New("invalid tls-protocols specified. Use a combination of 'TLSv1', 'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'")
		}
		if minV == 0 || ver < minV {
			minV = ver
		}
		maxV = max(maxV, ver)
	}
	return minV, maxV, nil
}

// openSSLCiphers maps OpenSSL's names of the TLS 1.2 suites Go implements
// to Go's.
var openSSLCiphers = map[string]uint16{
	"ECDHE-ECDSA-AES128-GCM-SHA256": tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	"ECDHE-RSA-AES128-GCM-SHA256":   tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	"ECDHE-ECDSA-AES256-GCM-SHA384": tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	"ECDHE-RSA-AES256-GCM-SHA384":   tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	"ECDHE-ECDSA-CHACHA20-POLY1305": tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	"ECDHE-RSA-CHACHA20-POLY1305":   tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
	"ECDHE-ECDSA-AES128-SHA":        tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA,
	"ECDHE-RSA-AES128-SHA":          tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA,
	"ECDHE-ECDSA-AES256-SHA":        tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA,
	"ECDHE-RSA-AES256-SHA":          tls.TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA,
	"ECDHE-ECDSA-AES128-SHA256":     tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256,
	"ECDHE-RSA-AES128-SHA256":       tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256,
	"AES128-GCM-SHA256":             tls.TLS_RSA_WITH_AES_128_GCM_SHA256,
	"AES256-GCM-SHA384":             tls.TLS_RSA_WITH_AES_256_GCM_SHA384,
	"AES128-SHA":                    tls.TLS_RSA_WITH_AES_128_CBC_SHA,
	"AES256-SHA":                    tls.TLS_RSA_WITH_AES_256_CBC_SHA,
	"AES128-SHA256":                 tls.TLS_RSA_WITH_AES_128_CBC_SHA256,
	"ECDHE-RSA-DES-CBC3-SHA":        tls.TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA,
	"DES-CBC3-SHA":                  tls.TLS_RSA_WITH_3DES_EDE_CBC_SHA,
}

// parseCiphers reads tls-ciphers, an OpenSSL cipher list reduced to what
// Go can do: suite names (OpenSSL's or IANA's) add a suite; DEFAULT, HIGH
// and ALL add Go's secure suites; "!name" and "-name" take one away (and
// leave the others: Go's secure set has no NULL, export, RC4 or MD5
// suites to exclude); "+…" and "@…" orderings are ignored, since Go
// orders suites itself. As in OpenSSL, names it does not know are skipped,
// and a list that leaves no suite is an error. "" is Go's secure set.
func parseCiphers(v string) ([]uint16, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	byName := map[string]uint16{}
	for name, id := range openSSLCiphers {
		byName[name] = id
	}
	var secure []uint16
	for _, cs := range tls.CipherSuites() {
		byName[cs.Name] = cs.ID
		if cs.SupportedVersions[0] <= tls.VersionTLS12 {
			secure = append(secure, cs.ID)
		}
	}
	for _, cs := range tls.InsecureCipherSuites() {
		byName[cs.Name] = cs.ID
	}
	var out []uint16
	add := func(id uint16) {
		for _, x := range out {
			if x == id {
				return
			}
		}
		out = append(out, id)
	}
	for _, w := range strings.FieldsFunc(v, func(r rune) bool { return r == ':' || r == ',' || r == ' ' }) {
		switch {
		case w[0] == '!' || w[0] == '-':
			if id, ok := byName[strings.ToUpper(w[1:])]; ok {
				out = removeID(out, id)
			}
		case w[0] == '+' || w[0] == '@':
		case w == "DEFAULT" || w == "HIGH" || w == "ALL":
			for _, id := range secure {
				add(id)
			}
		default:
			if id, ok := byName[strings.ToUpper(w)]; ok {
				add(id)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("tls-ciphers %q leaves no cipher suite Go implements", v)
	}
	return out, nil
}

func removeID(ids []uint16, id uint16) []uint16 {
	out := ids[:0]
	for _, x := range ids {
		if x != id {
			out = append(out, x)
		}
	}
	return out
}

// checkCipherSuites13 checks the names of tls-ciphersuites. Go does not
// let a server choose its TLS 1.3 suites, so the value changes nothing.
func checkCipherSuites13(v string) error {
	known := map[string]bool{"TLS_AES_128_GCM_SHA256": true, "TLS_AES_256_GCM_SHA384": true, "TLS_CHACHA20_POLY1305_SHA256": true,
		"TLS_AES_128_CCM_SHA256": true, "TLS_AES_128_CCM_8_SHA256": true}
	for _, w := range strings.Split(v, ":") {
		if w = strings.TrimSpace(w); w != "" && !known[w] {
			return fmt.Errorf("tls-ciphersuites: unknown TLS 1.3 cipher suite %q", w)
		}
	}
	return nil
}

// sessionStamp marks the creation time a session ticket carries.
var sessionStamp = []byte("ratekv-created:")

// expireSessions makes c's session tickets resumable for timeout only
// (tls-session-cache-timeout), counted from when the ticket was issued
// (Go issues a new one on each resumption); Go's own limit is 7 days.
func expireSessions(c *tls.Config, timeout time.Duration) {
	c.WrapSession = func(cs tls.ConnectionState, ss *tls.SessionState) ([]byte, error) {
		stamp := binary.BigEndian.AppendUint64(append([]byte(nil), sessionStamp...), uint64(time.Now().UnixNano()))
		ss.Extra = append(ss.Extra, stamp)
		return c.EncryptTicket(cs, ss)
	}
	c.UnwrapSession = func(identity []byte, cs tls.ConnectionState) (*tls.SessionState, error) {
		ss, err := c.DecryptTicket(identity, cs)
		if ss == nil || err != nil {
			return ss, err
		}
		if created, ok := sessionCreated(ss); ok && time.Since(created) < timeout {
			return ss, nil
		}
		return nil, nil // expired or unstamped: a full handshake
	}
}

// sessionCreated returns the creation time stamped on ss, if any.
func sessionCreated(ss *tls.SessionState) (time.Time, bool) {
	for _, e := range ss.Extra {
		if rest, ok := bytes.CutPrefix(e, sessionStamp); ok && len(rest) == 8 {
			return time.Unix(0, int64(binary.BigEndian.Uint64(rest))), true
		}
	}
	return time.Time{}, false
}

// handshake runs the TLS handshake of a connection accepted on a TLS
// port (counted in s.handshakes by accept), then serves it.
func (s *Server) handshake(nc net.Conn) {
	setSocketOptions(nc)
	tc := tls.Server(nc, s.tlsListen)
	tc.SetDeadline(time.Now().Add(tlsHandshakeTimeout))
	err := tc.Handshake()
	s.handshakes.Add(-1)
	if err != nil {
		s.log.Debug("TLS handshake failed", "addr", nc.RemoteAddr().String(), "err", err)
		nc.Close()
		return
	}
	tc.SetDeadline(time.Time{})
	s.startConn(tc)
}

// closeNow closes nc without waiting on the client: a TLS connection's
// close_notify alert could wait for a client that does not read.
func closeNow(nc net.Conn) error {
	if tc, ok := nc.(*tls.Conn); ok {
		return tc.NetConn().Close()
	}
	return nc.Close()
}
