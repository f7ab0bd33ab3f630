package auth

import (
	"context"
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

// KeyFile is where Tarn before the signing key moved into the store kept
// it, under the data dir: a PKCS#8 ECDSA P-256 private key in PEM.
// LoadOrCreateKey imports it once, so that tokens issued before an
// upgrade stay valid.
const KeyFile = "auth/signing-key.pem"

// Key record: the signing key lives in the catalog's store (collection
// collKeys, key keySigning, the PEM as the value), so that every replica
// sharing the store signs and verifies with the same key.
const (
	collKeys   = "auth-keys"
	keySigning = "signing"
)

// KeyStore is what LoadOrCreateKey needs of the catalog's store
// (catalog.RecordStore).
type KeyStore interface {
	GetRecord(ctx context.Context, collection, key string) ([]byte, bool, error)
	CreateRecord(ctx context.Context, collection, key string, value []byte) ([]byte, bool, error)
}

// SigningKey is Tarn's token signing key (ES256).
type SigningKey struct {
	priv *ecdsa.PrivateKey
	// KID names the key in token headers and the JWKS: base64url of the
	// first 12 bytes of SHA-256 over the public key's DER.
	KID string
}

// LoadOrCreateKey returns the signing key stored in ks, creating it when
// there is none: from dataDir/KeyFile when that file exists (the key of
// an earlier Tarn; dataDir "" skips this), else a new P-256 key. The
// create is catalog.RecordStore.CreateRecord, so replicas starting
// together on one store agree on one key. Errors: the store's; a stored
// key or a KeyFile that does not parse (fail closed: never replace a key
// that exists, which would void every issued token silently).
func LoadOrCreateKey(ctx context.Context, ks KeyStore, dataDir string) (*SigningKey, error) {
	b, ok, err := ks.GetRecord(ctx, collKeys, keySigning)
	if err != nil {
		return nil, fmt.Errorf("auth: read signing key: %w", err)
	}
	if ok {
		return parseKey(b, "the stored signing key")
	}
	var candidate []byte
	if dataDir != "" {
		path := filepath.Join(dataDir, KeyFile)
		candidate, err = os.ReadFile(path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("auth: read signing key: %w", err)
		}
		if err == nil {
			if _, err := parseKey(candidate, path); err != nil {
				return nil, err
			}
		}
	}
	if candidate == nil {
		if candidate, err = newKeyPEM(); err != nil {
			return nil, err
		}
	}
	stored, _, err := ks.CreateRecord(ctx, collKeys, keySigning, candidate)
	if err != nil {
		return nil, fmt.Errorf("auth: store signing key: %w", err)
	}
	return parseKey(stored, "the stored signing key")
}

// parseKey parses a PEM PKCS#8 P-256 private key; what names it in errors.
func parseKey(b []byte, what string) (*SigningKey, error) {
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, fmt.Errorf("auth: signing key %s: not PEM", what)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("auth: signing key %s: %w", what, err)
	}
	ec, ok := k.(*ecdsa.PrivateKey)
	if !ok || ec.Curve != elliptic.P256() {
		return nil, fmt.Errorf("auth: signing key %s: not an ECDSA P-256 key", what)
	}
	return newSigningKey(ec)
}

// newKeyPEM generates a P-256 key as PEM PKCS#8.
func newKeyPEM() ([]byte, error) {
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(ec)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
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
