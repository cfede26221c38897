// Package pemkey decrypts the password-protected private keys that
// tls-key-file-pass unlocks, in the two forms OpenSSL writes: PKCS#8
// ("ENCRYPTED PRIVATE KEY", what OpenSSL 3's genrsa -aes256, genpkey and
// pkcs8 -topk8 write) with PBES2, PBKDF2 and AES-CBC or 3DES-CBC, and
// the legacy PEM encryption ("Proc-Type: 4,ENCRYPTED", genrsa -traditional
// and OpenSSL 1.x). PKCS#8's scrypt and PKCS#12 schemes are refused with
// an error naming them.
package pemkey

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/des"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"hash"
)

// ErrPassword is returned when the key does not decrypt with the password
// given (or is corrupt: padding and structure are all there is to tell).
var ErrPassword = errors.New("the private key does not decrypt with the password given")

// maxIterations bounds PBKDF2's work, so that a hostile key file cannot
// keep a reload busy for hours; OpenSSL writes 2048 by default.
const maxIterations = 10_000_000

// Decode returns keyPEM with its private key decrypted by pass, as an
// unencrypted PEM block that tls.X509KeyPair accepts. A key that is not
// encrypted is returned as it is, whatever pass says (OpenSSL ignores
// the password then too). Only the first private key block counts.
func Decode(keyPEM []byte, pass string) ([]byte, error) {
	rest := keyPEM
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return keyPEM, nil // no key block: X509KeyPair gives the error
		}
		switch {
		case block.Type == "ENCRYPTED PRIVATE KEY":
			der, err := decryptPKCS8(block.Bytes, []byte(pass))
			if err != nil {
				return nil, err
			}
			return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
		case x509.IsEncryptedPEMBlock(block):
			// Deprecated in Go for its weak key derivation, but it is
			// what OpenSSL 1.x and genrsa -traditional write.
			der, err := x509.DecryptPEMBlock(block, []byte(pass))
			if err != nil {
				return nil, fmt.Errorf("%w (%v)", ErrPassword, err)
			}
			return pem.EncodeToMemory(&pem.Block{Type: block.Type, Bytes: der}), nil
		case bytes.HasSuffix([]byte(block.Type), []byte("PRIVATE KEY")):
			return keyPEM, nil
		}
	}
}

var (
	oidPBES2       = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2      = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	oidHMACSHA1    = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 7}
	oidHMACSHA224  = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 8}
	oidHMACSHA256  = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}
	oidHMACSHA384  = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 10}
	oidHMACSHA512  = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 11}
	oidAES128CBC   = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 2}
	oidAES192CBC   = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 22}
	oidAES256CBC   = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}
	oidDESEDE3CBC  = asn1.ObjectIdentifier{1, 2, 840, 113549, 3, 7}
	oidScrypt      = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 11591, 4, 11}
	errUnsupported = errors.New("unsupported private key encryption")
)

// PKCS#8 EncryptedPrivateKeyInfo and PKCS#5 v2 (RFC 8018) structures.
type encryptedPrivateKeyInfo struct {
	Algorithm     algorithmIdentifier
	EncryptedData []byte
}

type algorithmIdentifier struct {
	Algorithm  asn1.ObjectIdentifier
	Parameters asn1.RawValue `asn1:"optional"`
}

type pbes2Params struct {
	KeyDerivationFunc algorithmIdentifier
	EncryptionScheme  algorithmIdentifier
}

type pbkdf2Params struct {
	Salt           []byte
	IterationCount int
	KeyLength      int                 `asn1:"optional"`
	PRF            algorithmIdentifier `asn1:"optional"`
}

// decryptPKCS8 returns the PKCS#8 PrivateKeyInfo inside an
// EncryptedPrivateKeyInfo encrypted with PBES2.
func decryptPKCS8(der, pass []byte) ([]byte, error) {
	var info encryptedPrivateKeyInfo
	if rest, err := asn1.Unmarshal(der, &info); err != nil || len(rest) > 0 {
		return nil, errors.New("malformed encrypted private key")
	}
	if !info.Algorithm.Algorithm.Equal(oidPBES2) {
		return nil, fmt.Errorf("%w: %v (only PBES2 is supported)", errUnsupported, info.Algorithm.Algorithm)
	}
	var params pbes2Params
	if _, err := asn1.Unmarshal(info.Algorithm.Parameters.FullBytes, &params); err != nil {
		return nil, errors.New("malformed PBES2 parameters")
	}
	kdf := params.KeyDerivationFunc
	if kdf.Algorithm.Equal(oidScrypt) {
		return nil, fmt.Errorf("%w: scrypt (only PBKDF2 is supported)", errUnsupported)
	}
	if !kdf.Algorithm.Equal(oidPBKDF2) {
		return nil, fmt.Errorf("%w: key derivation %v", errUnsupported, kdf.Algorithm)
	}
	var kp pbkdf2Params
	if _, err := asn1.Unmarshal(kdf.Parameters.FullBytes, &kp); err != nil {
		return nil, errors.New("malformed PBKDF2 parameters")
	}
	if kp.IterationCount < 1 || kp.IterationCount > maxIterations {
		return nil, fmt.Errorf("%w: %d PBKDF2 iterations", errUnsupported, kp.IterationCount)
	}
	prf, err := prfHash(kp.PRF.Algorithm)
	if err != nil {
		return nil, err
	}
	scheme := params.EncryptionScheme
	var keyLen int
	var newBlock func([]byte) (cipher.Block, error)
	switch {
	case scheme.Algorithm.Equal(oidAES128CBC):
		keyLen, newBlock = 16, aes.NewCipher
	case scheme.Algorithm.Equal(oidAES192CBC):
		keyLen, newBlock = 24, aes.NewCipher
	case scheme.Algorithm.Equal(oidAES256CBC):
		keyLen, newBlock = 32, aes.NewCipher
	case scheme.Algorithm.Equal(oidDESEDE3CBC):
		keyLen, newBlock = 24, des.NewTripleDESCipher
	default:
		return nil, fmt.Errorf("%w: cipher %v", errUnsupported, scheme.Algorithm)
	}
	if kp.KeyLength != 0 && kp.KeyLength != keyLen {
		return nil, errors.New("malformed PBKDF2 parameters: key length does not fit the cipher")
	}
	var iv []byte
	if _, err := asn1.Unmarshal(scheme.Parameters.FullBytes, &iv); err != nil {
		return nil, errors.New("malformed cipher parameters")
	}
	key, err := pbkdf2.Key(prf, string(pass), kp.Salt, kp.IterationCount, keyLen)
	if err != nil {
		return nil, err
	}
	block, err := newBlock(key)
	if err != nil {
		return nil, err
	}
	data := info.EncryptedData
	if len(iv) != block.BlockSize() || len(data) == 0 || len(data)%block.BlockSize() != 0 {
		return nil, errors.New("malformed encrypted private key")
	}
	out := make([]byte, len(data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(out, data)
	out, ok := unpad(out, block.BlockSize())
	if !ok {
		return nil, ErrPassword
	}
	// A wrong password that happens to leave valid padding gives garbage.
	if _, err := x509.ParsePKCS8PrivateKey(out); err != nil {
		return nil, ErrPassword
	}
	return out, nil
}

// prfHash maps PBKDF2's pseudo-random function to its hash; absent, it is
// HMAC-SHA1 (RFC 8018's default).
func prfHash(oid asn1.ObjectIdentifier) (func() hash.Hash, error) {
	switch {
	case len(oid) == 0, oid.Equal(oidHMACSHA1):
		return sha1.New, nil
	case oid.Equal(oidHMACSHA224):
		return sha256.New224, nil
	case oid.Equal(oidHMACSHA256):
		return sha256.New, nil
	case oid.Equal(oidHMACSHA384):
		return sha512.New384, nil
	case oid.Equal(oidHMACSHA512):
		return sha512.New, nil
	}
	return nil, fmt.Errorf("%w: PBKDF2 function %v", errUnsupported, oid)
}

// unpad removes PKCS#7 padding, in constant time as far as the padding
// length goes.
func unpad(b []byte, size int) ([]byte, bool) {
	n := int(b[len(b)-1])
	if n == 0 || n > size {
		return nil, false
	}
	want := bytes.Repeat([]byte{byte(n)}, n)
	if !hmac.Equal(b[len(b)-n:], want) {
		return nil, false
	}
	return b[:len(b)-n], true
}
