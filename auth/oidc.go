package auth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tarnhq/tarn/internal/strictjson"
)

// OIDC defaults.
const (
	// DefaultPrincipalClaim names the principal of an external token.
	DefaultPrincipalClaim = "sub"
	// jwksMaxAge: keys are refetched at least this often, so a key the
	// provider withdrew stops verifying within the hour.
	jwksMaxAge = time.Hour
	// jwksMinRefetch: an unknown kid triggers a refetch (key rotation) at
	// most this often, so forged kids cannot make Tarn hammer the
	// provider.
	jwksMinRefetch = 10 * time.Second
)

// oidcFetchTimeout bounds one discovery or JWKS request (a variable so
// that a test can hold a fetch open longer than it waits).
var oidcFetchTimeout = 10 * time.Second

// OIDCConfig configures one external OpenID Connect issuer.
type OIDCConfig struct {
	// Issuer is the issuer URL; tokens' iss must equal it, and its
	// discovery document is Issuer + "/.well-known/openid-configuration".
	Issuer string
	// Audience, when set, must be one of the token's aud values.
	Audience string
	// PrincipalClaim names the claim (a string) that is the principal;
	// DefaultPrincipalClaim when empty.
	PrincipalClaim string
	// RolesClaim, when set, names a claim (a list of strings, or one
	// space-separated string) whose values are role names.
	RolesClaim string
	// PrincipalPrefix is put before the principal claim's value to make
	// the principal id (e.g. "okta~" gives okta~ann), so that two issuers'
	// users with the same claim stay two principals. Empty: none.
	PrincipalPrefix string
	// HTTPClient fetches discovery and keys; http.DefaultClient when nil.
	HTTPClient *http.Client
}

// oidcIssuer verifies one external issuer's tokens.
type oidcIssuer struct {
	cfg OIDCConfig

	mu        sync.Mutex // guards the fields below; never held across a fetch
	jwksURI   string
	keys      map[string]crypto.PublicKey
	fetchedAt time.Time
	// refreshing is non-nil while one request fetches the key set; it is
	// closed when the fetch ends. Requests for a known key meanwhile are
	// served from the cache; requests for an unknown kid wait on it.
	refreshing chan struct{}
}

func newOIDCIssuer(cfg OIDCConfig) (*oidcIssuer, error) {
	if !strings.HasPrefix(cfg.Issuer, "https://") && !strings.HasPrefix(cfg.Issuer, "http://") {
		return nil, fmt.Errorf("%w: OIDC issuer must be an http(s) URL, got %q", ErrInvalidArgument, cfg.Issuer)
	}
	if cfg.PrincipalClaim == "" {
		cfg.PrincipalClaim = DefaultPrincipalClaim
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	return &oidcIssuer{cfg: cfg}, nil
}

func (o *oidcIssuer) getJSON(ctx context.Context, url string, out any) error {
	ctx, cancel := context.WithTimeout(ctx, oidcFetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := o.cfg.HTTPClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxOIDCDocumentBytes+1))
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	if len(b) > maxOIDCDocumentBytes {
		return fmt.Errorf("GET %s: document over %d bytes", url, maxOIDCDocumentBytes)
	}
	// Strictly: keys that verify tokens are read from exactly one JSON
	// value, never from the first of several.
	if err := strictjson.Decode(b, out); err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	return nil
}

// maxOIDCDocumentBytes bounds a discovery document or key set: real ones
// are a few KiB.
const maxOIDCDocumentBytes = 1 << 20

// key returns the public key kid, fetching discovery and the JWKS when
// the cache is older than jwksMaxAge, or the kid is unknown and the last
// fetch is older than jwksMinRefetch (the provider rotated its keys).
//
// One request fetches at a time, without holding mu: while it does, a
// request whose key is cached (even past jwksMaxAge) is answered from the
// cache at once, and a request for an unknown kid waits for the fetch (or
// its own ctx). A failed fetch keeps serving the keys already known.
func (o *oidcIssuer) key(ctx context.Context, kid string) (crypto.PublicKey, error) {
	for {
		o.mu.Lock()
		k, ok := o.keys[kid]
		age := time.Since(o.fetchedAt)
		if ok && age < jwksMaxAge {
			o.mu.Unlock()
			return k, nil
		}
		if !ok && o.keys != nil && age < jwksMinRefetch {
			o.mu.Unlock()
			return nil, fmt.Errorf("no key %q in %s's key set", kid, o.cfg.Issuer)
		}
		if wait := o.refreshing; wait != nil {
			o.mu.Unlock()
			if ok {
				return k, nil // stale but known: serve it while another request refreshes
			}
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		done := make(chan struct{})
		o.refreshing = done
		jwksURI := o.jwksURI
		o.mu.Unlock()

		// The fetch is shared by the requests waiting on it, so one
		// client's cancellation does not fail it; getJSON bounds it.
		uri, keys, err := o.fetchKeys(context.WithoutCancel(ctx), jwksURI)

		o.mu.Lock()
		o.refreshing = nil
		close(done)
		o.fetchedAt = time.Now()
		if err == nil {
			o.jwksURI, o.keys = uri, keys
		} else if o.keys == nil {
			o.keys = map[string]crypto.PublicKey{}
		}
		o.mu.Unlock()
		if err != nil {
			if ok {
				return k, nil // keep serving a known key while the provider is down
			}
			return nil, err
		}
		if k, ok = keys[kid]; !ok {
			return nil, fmt.Errorf("no key %q in %s's key set", kid, o.cfg.Issuer)
		}
		return k, nil
	}
}

// fetchKeys fetches discovery (when jwksURI is still unknown) and the key
// set; it touches no field of o but cfg, so it runs without mu.
func (o *oidcIssuer) fetchKeys(ctx context.Context, jwksURI string) (string, map[string]crypto.PublicKey, error) {
	if jwksURI == "" {
		var doc struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		if err := o.getJSON(ctx, strings.TrimSuffix(o.cfg.Issuer, "/")+"/.well-known/openid-configuration", &doc); err != nil {
			return "", nil, fmt.Errorf("OIDC discovery: %w", err)
		}
		if doc.Issuer != o.cfg.Issuer || doc.JWKSURI == "" {
			return "", nil, fmt.Errorf("OIDC discovery of %s: issuer %q, jwks_uri %q", o.cfg.Issuer, doc.Issuer, doc.JWKSURI)
		}
		jwksURI = doc.JWKSURI
	}
	var set JWKS
	if err := o.getJSON(ctx, jwksURI, &set); err != nil {
		return "", nil, fmt.Errorf("OIDC keys: %w", err)
	}
	keys := map[string]crypto.PublicKey{}
	for _, j := range set.Keys {
		if j.Use != "" && j.Use != "sig" {
			continue
		}
		if k, err := j.PublicKey(); err == nil {
			keys[j.Kid] = k
		}
	}
	return jwksURI, keys, nil
}

// PublicKey decodes an RSA or EC (P-256, P-384, P-521) JWK.
func (j JWK) PublicKey() (crypto.PublicKey, error) {
	dec := base64.RawURLEncoding.DecodeString
	switch j.Kty {
	case "RSA":
		n, err1 := dec(j.N)
		e, err2 := dec(j.E)
		if err := errors.Join(err1, err2); err != nil || len(e) > 4 || len(n) < 256 {
			return nil, fmt.Errorf("bad RSA key %q", j.Kid)
		}
		return &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}, nil
	case "EC":
		var c elliptic.Curve
		switch j.Crv {
		case "P-256":
			c = elliptic.P256()
		case "P-384":
			c = elliptic.P384()
		case "P-521":
			c = elliptic.P521()
		default:
			return nil, fmt.Errorf("unsupported curve %q", j.Crv)
		}
		x, err1 := dec(j.X)
		y, err2 := dec(j.Y)
		if errors.Join(err1, err2) != nil {
			return nil, fmt.Errorf("bad EC key %q", j.Kid)
		}
		size := (c.Params().BitSize + 7) / 8
		point := append([]byte{4}, append(leftPad(x, size), leftPad(y, size)...)...)
		return ecdsa.ParseUncompressedPublicKey(c, point)
	}
	return nil, fmt.Errorf("unsupported key type %q", j.Kty)
}

func leftPad(b []byte, n int) []byte {
	if len(b) >= n {
		return b
	}
	return append(make([]byte, n-len(b)), b...)
}

// externalAlgs are the algorithms accepted from external issuers (never
// "none" or HMAC, whose key would be public).
var externalAlgs = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"}

// verify checks an external token: signature by a key of the issuer's
// JWKS, iss, exp (required), nbf, aud when configured. It returns the
// principal and the roles of the claims. Errors: ErrTokenInvalid.
func (o *oidcIssuer) verify(ctx context.Context, raw string) (principal string, roles []string, exp time.Time, err error) {
	opts := []jwt.ParserOption{jwt.WithValidMethods(externalAlgs), jwt.WithIssuer(o.cfg.Issuer),
		jwt.WithExpirationRequired(), jwt.WithLeeway(leeway)}
	if o.cfg.Audience != "" {
		opts = append(opts, jwt.WithAudience(o.cfg.Audience))
	}
	claims := jwt.MapClaims{}
	_, err = jwt.ParseWithClaims(raw, claims, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		return o.key(ctx, kid)
	}, opts...)
	if err != nil {
		return "", nil, time.Time{}, fmt.Errorf("%w: %v", ErrTokenInvalid, err)
	}
	principal, _ = claims[o.cfg.PrincipalClaim].(string)
	if principal != "" {
		principal = o.cfg.PrincipalPrefix + principal
	}
	if ValidatePrincipalID(principal) != nil {
		return "", nil, time.Time{}, fmt.Errorf("%w: claim %q is not a principal id", ErrTokenInvalid, o.cfg.PrincipalClaim)
	}
	if o.cfg.RolesClaim != "" {
		switch v := claims[o.cfg.RolesClaim].(type) {
		case string:
			roles = strings.Fields(v)
		case []any:
			for _, r := range v {
				if s, ok := r.(string); ok {
					roles = append(roles, s)
				}
			}
		}
	}
	e, _ := claims.GetExpirationTime()
	return principal, roles, e.Time, nil
}
