package auth

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Token defaults.
const (
	// DefaultTokenLifetime is how long an issued token is valid: the
	// issue's one hour; clients refresh before it ends.
	DefaultTokenLifetime = time.Hour
	// DefaultIssuer is the iss of tokens Tarn issues when no --auth-issuer
	// is set.
	DefaultIssuer = "tarn"
	// audience is the aud of tokens Tarn issues, so that a token from
	// another service sharing the issuer name is still refused.
	audience = "tarn"
	// leeway absorbs clock skew between Tarn and external issuers.
	leeway = 30 * time.Second
	// ownLeeway is the skew allowed on Tarn's own tokens, issued and
	// checked by the same clock (or replicas' synchronized ones).
	ownLeeway = 2 * time.Second
	// MinTokenLifetime bounds --auth-token-lifetime from below: shorter
	// tokens would expire while a client is still using a fresh one.
	MinTokenLifetime = 10 * time.Second
	// DefaultMaxSession bounds how long token exchange can keep a
	// session alive: a token obtained by exchange never outlives the
	// client-credentials authentication it descends from (its auth_time)
	// by more than this; after it the client must present its secret
	// again.
	DefaultMaxSession = 24 * time.Hour
)

// tokenClaims are the claims of a token Tarn issues.
type tokenClaims struct {
	Scope string `json:"scope,omitempty"`
	// Gen is the principal's credential generation when the token was
	// issued (principalRecord.Generation): a token whose gen differs
	// from the stored one (secret rotated, principal deleted and
	// re-created, root credential replaced) is refused.
	Gen string `json:"gen,omitempty"`
	// AuthTime is when the principal last presented its secret (Unix
	// seconds); token exchange carries it over unchanged.
	AuthTime int64 `json:"auth_time,omitempty"`
	jwt.RegisteredClaims
}

// issue signs a token for principal of credential generation gen, valid
// for lifetime, whose session began at authTime.
func (k *SigningKey) issue(issuer, principal, gen, scope string, lifetime time.Duration, now, authTime time.Time) (string, error) {
	jti := make([]byte, 16)
	_, _ = rand.Read(jti)
	c := tokenClaims{Scope: scope, Gen: gen, AuthTime: authTime.Unix(), RegisteredClaims: jwt.RegisteredClaims{
		Issuer:    issuer,
		Subject:   principal,
		Audience:  jwt.ClaimStrings{audience},
		IssuedAt:  jwt.NewNumericDate(now),
		NotBefore: jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(lifetime)),
		ID:        hex.EncodeToString(jti),
	}}
	t := jwt.NewWithClaims(jwt.SigningMethodES256, c)
	t.Header["kid"] = k.KID
	return t.SignedString(k.priv)
}

// verify checks a token Tarn issued: ES256 by this key, iss, aud, exp
// (required) and nbf, at now. Errors: ErrTokenInvalid.
func (k *SigningKey) verify(issuer, raw string, now func() time.Time) (*tokenClaims, error) {
	var c tokenClaims
	_, err := jwt.ParseWithClaims(raw, &c, func(t *jwt.Token) (any, error) {
		if kid, _ := t.Header["kid"].(string); kid != k.KID {
			return nil, fmt.Errorf("unknown key %q", kid)
		}
		return &k.priv.PublicKey, nil
	}, jwt.WithValidMethods([]string{"ES256"}), jwt.WithIssuer(issuer), jwt.WithAudience(audience),
		jwt.WithExpirationRequired(), jwt.WithLeeway(ownLeeway), jwt.WithTimeFunc(now))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTokenInvalid, err)
	}
	if c.Subject == "" {
		return nil, fmt.Errorf("%w: no subject", ErrTokenInvalid)
	}
	return &c, nil
}
