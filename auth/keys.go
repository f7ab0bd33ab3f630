package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// KeyFile is the signing key's path under the data dir: a PKCS#8 ECDSA
// P-256 private key in PEM, mode 0600, created on first start and kept
// so that tokens survive restarts.
const KeyFile = "auth/signing-key.pem"

// SigningKey is Tarn's token signing key (ES256).
type SigningKey struct {
	priv *ecdsa.PrivateKey
	// KID names the key in token headers and the JWKS: base64url of the
	// first 12 bytes of SHA-256 over the public key's DER.
	KID string
}

// LoadOrCreateKey reads dataDir/KeyFile, creating it when missing.
// Errors: an unreadable or malformed file (fail closed: never replace a
// key that exists, which would void every issued token silently).
func LoadOrCreateKey(dataDir string) (*SigningKey, error) {
	path := filepath.Join(dataDir, KeyFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return createKey(path)
	}
	if err != nil {
		return nil, fmt.Errorf("auth: read signing key: %w", err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, fmt.Errorf("auth: signing key %s: not PEM", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("auth: signing key %s: %w", path, err)
	}
	ec, ok := k.(*ecdsa.PrivateKey)
	if !ok || ec.Curve != elliptic.P256() {
		return nil, fmt.Errorf("auth: signing key %s: not an ECDSA P-256 key", path)
	}
	return newSigningKey(ec)
}

func createKey(path string) (*SigningKey, error) {
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(ec)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("auth: create signing key: %w", err)
	}
	if err := pem.Encode(f, &pem.Block{Type: "PRIVATE KEY", Bytes: der}); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	return newSigningKey(ec)
}

// NewSigningKey wraps an existing P-256 key (tests).
func newSigningKey(ec *ecdsa.PrivateKey) (*SigningKey, error) {
	der, err := x509.MarshalPKIXPublicKey(&ec.PublicKey)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(der)
	return &SigningKey{priv: ec, KID: base64.RawURLEncoding.EncodeToString(sum[:12])}, nil
}

// JWK is one JSON Web Key (RFC 7517) as Tarn publishes and reads them.
type JWK struct {
	Kty string `json:"kty"`
	Use string `json:"use,omitempty"`
	Alg string `json:"alg,omitempty"`
	Kid string `json:"kid,omitempty"`
	Crv string `json:"crv,omitempty"`
	X   string `json:"x,omitempty"`
	Y   string `json:"y,omitempty"`
	N   string `json:"n,omitempty"`
	E   string `json:"e,omitempty"`
}

// JWKS is a key set, the body of /.well-known/jwks.json.
type JWKS struct {
	Keys []JWK `json:"keys"`
}

// JWKS returns the public half of k as a key set.
func (k *SigningKey) JWKS() JWKS {
	pub := k.priv.PublicKey
	b, _ := pub.Bytes() // uncompressed point: 0x04 || X || Y
	size := (len(b) - 1) / 2
	enc := base64.RawURLEncoding.EncodeToString
	return JWKS{Keys: []JWK{{Kty: "EC", Use: "sig", Alg: "ES256", Kid: k.KID, Crv: "P-256",
		X: enc(b[1 : 1+size]), Y: enc(b[1+size:])}}}
}
