package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Config configures a Service.
type Config struct {
	// Store holds principals, roles and grants.
	Store *Store
	// Key signs and verifies Tarn's own tokens.
	Key *SigningKey
	// Issuer is the iss of Tarn's tokens; DefaultIssuer when empty.
	Issuer string
	// TokenLifetime of issued tokens; DefaultTokenLifetime when 0.
	TokenLifetime time.Duration
	// MaxSession bounds token exchange (DefaultMaxSession, or the token
	// lifetime if longer, when 0): no
	// token is issued by exchange past the subject token's auth_time
	// plus MaxSession.
	MaxSession time.Duration
	// OIDC lists the external issuers whose tokens are accepted.
	OIDC []OIDCConfig
	// Now is the clock; time.Now when nil (tests set it).
	Now func() time.Time
}

// Service authenticates bearer tokens and serves the token endpoint.
type Service struct {
	cfg      Config
	external map[string]*oidcIssuer
}

// NewService validates cfg. Errors: ErrInvalidArgument.
func NewService(cfg Config) (*Service, error) {
	if cfg.Store == nil || cfg.Key == nil {
		return nil, fmt.Errorf("%w: auth needs a store and a signing key", ErrInvalidArgument)
	}
	if cfg.Issuer == "" {
		cfg.Issuer = DefaultIssuer
	}
	if cfg.TokenLifetime == 0 {
		cfg.TokenLifetime = DefaultTokenLifetime
	}
	if cfg.TokenLifetime < MinTokenLifetime {
		return nil, fmt.Errorf("%w: token lifetime must be at least %s, got %s", ErrInvalidArgument, MinTokenLifetime, cfg.TokenLifetime)
	}
	if cfg.MaxSession == 0 {
		cfg.MaxSession = max(DefaultMaxSession, cfg.TokenLifetime)
	}
	if cfg.MaxSession < cfg.TokenLifetime {
		return nil, fmt.Errorf("%w: the maximum session (%s) must be at least the token lifetime (%s)", ErrInvalidArgument, cfg.MaxSession, cfg.TokenLifetime)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if err := checkPrincipalPrefixes(cfg.OIDC); err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, external: map[string]*oidcIssuer{}}
	for _, o := range cfg.OIDC {
		if o.Issuer == cfg.Issuer {
			return nil, fmt.Errorf("%w: OIDC issuer %q is Tarn's own issuer", ErrInvalidArgument, o.Issuer)
		}
		if _, dup := s.external[o.Issuer]; dup {
			return nil, fmt.Errorf("%w: OIDC issuer %q is configured twice", ErrInvalidArgument, o.Issuer)
		}
		if o.PrincipalPrefix != "" && ValidatePrincipalID(o.PrincipalPrefix+"x") != nil {
			return nil, fmt.Errorf("%w: OIDC issuer %q: principal prefix %q cannot start a principal id", ErrInvalidArgument, o.Issuer, o.PrincipalPrefix)
		}
		iss, err := newOIDCIssuer(o)
		if err != nil {
			return nil, err
		}
		s.external[o.Issuer] = iss
	}
	return s, nil
}

// Store returns the principals, roles and grants.
func (s *Service) Store() *Store { return s.cfg.Store }

// JWKS returns the public keys of Tarn's tokens.
func (s *Service) JWKS() JWKS { return s.cfg.Key.JWKS() }

// Issuer returns the iss of Tarn's tokens.
func (s *Service) Issuer() string { return s.cfg.Issuer }

// Authenticate verifies a bearer token, Tarn's own or a configured
// external issuer's, and returns the caller. A token of Tarn's whose
// principal was deleted, or whose credential generation is no longer
// the principal's (secret rotated, deleted and re-created), fails; an external token's principal need not
// be stored (a stored external principal adds its roles). Errors:
// ErrTokenInvalid (never says more than why the token failed).
func (s *Service) Authenticate(ctx context.Context, raw string) (*Identity, error) {
	var peek jwt.RegisteredClaims
	if _, _, err := jwt.NewParser().ParseUnverified(raw, &peek); err != nil {
		return nil, fmt.Errorf("%w: malformed token", ErrTokenInvalid)
	}
	if peek.Issuer == s.cfg.Issuer {
		c, err := s.cfg.Key.verify(s.cfg.Issuer, raw, s.cfg.Now)
		if err != nil {
			return nil, err
		}
		p, ok, err := s.cfg.Store.principal(ctx, c.Subject)
		if err != nil {
			return nil, err
		}
		if !ok || p.External {
			return nil, fmt.Errorf("%w: principal %q no longer exists", ErrTokenInvalid, c.Subject)
		}
		if c.Gen != p.Generation {
			return nil, fmt.Errorf("%w: the credentials of principal %q changed since the token was issued", ErrTokenInvalid, c.Subject)
		}
		return &Identity{Principal: p.ID, Issuer: s.cfg.Issuer, Root: p.Root, Roles: p.Roles, ExpiresUnix: c.ExpiresAt.Unix()}, nil
	}
	o, ok := s.external[peek.Issuer]
	if !ok {
		return nil, fmt.Errorf("%w: unknown issuer", ErrTokenInvalid)
	}
	principal, roles, exp, err := o.verify(ctx, raw)
	if err != nil {
		return nil, err
	}
	// A stored principal adds its roles only when it is external: an
	// outside issuer must not be able to speak for a local principal
	// (the root least of all) by minting its id as a claim.
	if p, ok, err := s.cfg.Store.principal(ctx, principal); err != nil {
		return nil, err
	} else if ok && p.External {
		for _, r := range p.Roles {
			if !slices.Contains(roles, r) {
				roles = append(roles, r)
			}
		}
	}
	return &Identity{Principal: principal, Issuer: peek.Issuer, Roles: roles, ExpiresUnix: exp.Unix()}, nil
}

// OAuth2 grant types the token endpoint accepts.
const (
	GrantClientCredentials = "client_credentials"
	GrantTokenExchange     = "urn:ietf:params:oauth:grant-type:token-exchange"
	tokenTypeAccess        = "urn:ietf:params:oauth:token-type:access_token"
	tokenTypeJWT           = "urn:ietf:params:oauth:token-type:jwt"
)

// TokenRequest is a decoded token endpoint request (RFC 6749 §4.4, RFC
// 8693 for the exchange Iceberg clients use to refresh).
type TokenRequest struct {
	GrantType    string
	ClientID     string
	ClientSecret string
	Scope        string
	// SubjectToken and SubjectTokenType are the token exchange's.
	SubjectToken     string
	SubjectTokenType string
	// ActorToken and ActorTokenType name the party acting for the
	// subject in a token exchange (RFC 8693 §2.1).
	ActorToken     string
	ActorTokenType string
	// ClientToken is the request's own bearer token (its Authorization
	// header), if any: in a token exchange it authenticates the client.
	ClientToken string
}

// TokenResponse is the token endpoint's 200 body (the spec's
// OAuthTokenResponse).
type TokenResponse struct {
	AccessToken     string `json:"access_token"`
	TokenType       string `json:"token_type"`
	ExpiresIn       int64  `json:"expires_in"`
	IssuedTokenType string `json:"issued_token_type"`
	Scope           string `json:"scope,omitempty"`
}

// OAuthError is the token endpoint's error body (RFC 6749 §5.2, the
// spec's OAuthError), with the HTTP status it is sent with.
type OAuthError struct {
	Status      int    `json:"-"`
	Code        string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

func (e *OAuthError) Error() string { return e.Code + ": " + e.Description }

// Token serves the token endpoint: client_credentials against a local
// principal's secret, or a token exchange of a valid Tarn token for a
// fresh one (how Iceberg's Java client refreshes), by its own principal
// or by a caller with manage on the catalog. Errors: *OAuthError
// (invalid_request, invalid_client 401, unsupported_grant_type,
// invalid_grant, unauthorized_client); others are the store's.
func (s *Service) Token(ctx context.Context, r TokenRequest) (TokenResponse, error) {
	now := s.cfg.Now()
	var p principalRecord
	authTime, lifetime := now, s.cfg.TokenLifetime
	switch r.GrantType {
	case GrantClientCredentials:
		if r.ClientID == "" || r.ClientSecret == "" {
			return TokenResponse{}, &OAuthError{http.StatusUnauthorized, "invalid_client", "client_id and client_secret are required"}
		}
		var err error
		p, err = s.cfg.Store.checkSecret(ctx, r.ClientID, r.ClientSecret)
		if errors.Is(err, ErrInvalidClient) {
			return TokenResponse{}, &OAuthError{http.StatusUnauthorized, "invalid_client", "unknown client or wrong secret"}
		} else if err != nil {
			return TokenResponse{}, err
		}
	case GrantTokenExchange:
		if r.SubjectToken == "" {
			return TokenResponse{}, &OAuthError{http.StatusBadRequest, "invalid_request", "subject_token is required"}
		}
		if r.SubjectTokenType != "" && r.SubjectTokenType != tokenTypeAccess && r.SubjectTokenType != tokenTypeJWT {
			return TokenResponse{}, &OAuthError{http.StatusBadRequest, "invalid_request", "unsupported subject_token_type"}
		}
		// Client credentials are optional here (the subject token is the
		// credential), but sent ones must be right, and must be the
		// subject's or an administrator's (mayExchange).
		callers, err := s.exchangeCallers(ctx, r)
		if err != nil {
			return TokenResponse{}, err
		}
		c, err := s.cfg.Key.verify(s.cfg.Issuer, r.SubjectToken, s.cfg.Now)
		if err != nil {
			return TokenResponse{}, &OAuthError{http.StatusBadRequest, "invalid_grant", "subject_token is not a valid token of this server"}
		}
		var ok bool
		if p, ok, err = s.cfg.Store.principal(ctx, c.Subject); err != nil {
			return TokenResponse{}, err
		} else if !ok || p.External {
			return TokenResponse{}, &OAuthError{http.StatusBadRequest, "invalid_grant", "the token's principal no longer exists"}
		}
		if c.Gen != p.Generation {
			return TokenResponse{}, &OAuthError{http.StatusBadRequest, "invalid_grant", "the token's principal changed its credentials since"}
		}
		if err := s.mayExchange(ctx, callers, p); err != nil {
			return TokenResponse{}, err
		}
		// The session keeps its start: exchange refreshes a token, it
		// does not extend the session past MaxSession.
		authTime = time.Unix(c.AuthTime, 0)
		if c.AuthTime == 0 && c.IssuedAt != nil {
			authTime = c.IssuedAt.Time
		}
		end := authTime.Add(s.cfg.MaxSession)
		if !now.Before(end.Add(-time.Second)) {
			return TokenResponse{}, &OAuthError{http.StatusBadRequest, "invalid_grant", "the session ended: request a token with client credentials"}
		}
		if end.Sub(now) < lifetime {
			lifetime = end.Sub(now).Truncate(time.Second)
		}
	case "":
		return TokenResponse{}, &OAuthError{http.StatusBadRequest, "invalid_request", "grant_type is required"}
	default:
		return TokenResponse{}, &OAuthError{http.StatusBadRequest, "unsupported_grant_type", "grant_type must be client_credentials or token exchange"}
	}
	tok, err := s.cfg.Key.issue(s.cfg.Issuer, p.ID, p.Generation, r.Scope, lifetime, now, authTime)
	if err != nil {
		return TokenResponse{}, err
	}
	return TokenResponse{AccessToken: tok, TokenType: "bearer", ExpiresIn: int64(lifetime / time.Second),
		IssuedTokenType: tokenTypeAccess, Scope: r.Scope}, nil
}

// IssueFor signs a token for an existing local principal without its
// secret (tests and the CLI's bootstrap). Errors: ErrNotFound.
func (s *Service) IssueFor(ctx context.Context, principal string, lifetime time.Duration) (string, error) {
	p, ok, err := s.cfg.Store.principal(ctx, principal)
	if err != nil {
		return "", err
	} else if !ok || p.External {
		return "", fmt.Errorf("%w: principal %q", ErrNotFound, principal)
	}
	if lifetime == 0 {
		lifetime = s.cfg.TokenLifetime
	}
	now := s.cfg.Now()
	return s.cfg.Key.issue(s.cfg.Issuer, principal, p.Generation, "", lifetime, now, now)
}

// checkPrincipalPrefixes refuses external issuers whose principals could
// collide: with more than one issuer each needs a principal prefix, and
// no prefix may start another (an issuer with prefix "a~" could mint
// "a~b~x", a principal of the issuer with prefix "a~b~"). External
// principals are stored by id alone, so the prefix is what ties one to
// its issuer.
func checkPrincipalPrefixes(issuers []OIDCConfig) error {
	if len(issuers) < 2 {
		return nil
	}
	for i, a := range issuers {
		if a.PrincipalPrefix == "" {
			return fmt.Errorf("%w: OIDC issuer %q needs a principal prefix: with several issuers, one without a prefix could mint any other's principals", ErrInvalidArgument, a.Issuer)
		}
		for j, b := range issuers {
			if i != j && strings.HasPrefix(b.PrincipalPrefix, a.PrincipalPrefix) {
				return fmt.Errorf("%w: OIDC issuers %q and %q: principal prefix %q starts %q", ErrInvalidArgument, a.Issuer, b.Issuer, a.PrincipalPrefix, b.PrincipalPrefix)
			}
		}
	}
	return nil
}
