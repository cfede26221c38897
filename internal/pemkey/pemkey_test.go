package pemkey

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The keys OpenSSL writes for each way of asking for an encrypted key
// decrypt with the right password and fail with ErrPassword otherwise.
func TestDecodeOpenSSLKeys(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl not installed")
	}
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain.key")
	run(t, "openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", plain)
	for i, args := range [][]string{
		{"pkcs8", "-topk8", "-v2", "aes-256-cbc"},                           // genrsa -aes256's form in OpenSSL 3
		{"pkcs8", "-topk8", "-v2", "aes-128-cbc", "-v2prf", "hmacWithSHA1"}, // OpenSSL 1.1's default PRF
		{"pkcs8", "-topk8", "-v2", "des3", "-v2prf", "hmacWithSHA512"},
		{"ec", "-aes256"}, // legacy PEM encryption (Proc-Type: 4,ENCRYPTED)
	} {
		out := filepath.Join(dir, "enc.key")
		run(t, "openssl", append(args, "-in", plain, "-out", out, "-passout", "pass:s3cret")...)
		enc, err := os.ReadFile(out)
		require.NoError(t, err)
		dec, err := Decode(enc, "s3cret")
		require.NoError(t, err, "step %d: %v", i, args)
		block, _ := pem.Decode(dec)
		require.NotNil(t, block, "step %d", i)
		_, err = parseAny(block.Bytes)
		require.NoError(t, err, "step %d: the decrypted key must parse", i)
		_, err = Decode(enc, "wrong")
		require.ErrorIs(t, err, ErrPassword, "step %d: %v", i, args)
	}
	// genrsa -aes256 itself, as the Redis docs have users run it.
	out := filepath.Join(dir, "rsa.key")
	run(t, "openssl", "genrsa", "-aes256", "-passout", "pass:pw", "-out", out, "1024")
	enc, err := os.ReadFile(out)
	require.NoError(t, err)
	_, err = Decode(enc, "pw")
	require.NoError(t, err)
}

func parseAny(der []byte) (any, error) {
	if k, err := x509.ParsePKCS8PrivateKey(der); err == nil {
		return k, nil
	}
	return x509.ParseECPrivateKey(der)
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	require.NoError(t, err, "%s %v: %s", name, args, out)
}

// An unencrypted key passes through whatever the password; garbage and
// unsupported schemes are errors, never a panic.
func TestDecodePlainAndMalformed(t *testing.T) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(k)
	require.NoError(t, err)
	plain := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	got, err := Decode(plain, "ignored")
	require.NoError(t, err)
	require.Equal(t, plain, got)

	for i, b := range [][]byte{{}, {0x30}, {0x30, 0x03, 0x02, 0x01, 0x01}, der} {
		_, err := Decode(pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: b}), "x")
		require.Error(t, err, "step %d", i)
		require.False(t, errors.Is(err, ErrPassword) && i < 3, "step %d: malformed is not a wrong password", i)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte("-----BEGIN ENCRYPTED PRIVATE KEY-----\nMAA=\n-----END ENCRYPTED PRIVATE KEY-----\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		Decode(pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: b}), "x")
		Decode(b, "x")
	})
}
