package auth

import (
	"context"
	"errors"
	"net/http"
)

// exchangeCallers authenticates the parties of a token exchange (RFC
// 8693) other than its subject token: client credentials (body or HTTP
// Basic), the request's own bearer token (Iceberg's Java client sends
// its session's Authorization header with the exchange it refreshes
// by) and actor_token. Each sent one must verify (fail closed: a
// credential that does not verify is refused, never ignored); none at
// all is the plain refresh, where the subject token is the only
// credential. A client_id without a secret proves nothing: it is
// returned unverified, and mayExchange allows it only when it names the
// subject. Errors:
// *OAuthError invalid_client (401) for credentials or a bearer token
// that do not verify, invalid_grant (400) for an actor_token that does
// not; others are the store's.
func (s *Service) exchangeCallers(ctx context.Context, r TokenRequest) ([]exchangeCaller, error) {
	var callers []exchangeCaller
	switch {
	case r.ClientSecret != "":
		p, err := s.cfg.Store.checkSecret(ctx, r.ClientID, r.ClientSecret)
		if errors.Is(err, ErrInvalidClient) {
			return nil, &OAuthError{http.StatusUnauthorized, "invalid_client", "unknown client or wrong secret"}
		} else if err != nil {
			return nil, err
		}
		callers = append(callers, exchangeCaller{&Identity{Principal: p.ID, Issuer: s.cfg.Issuer, Root: p.Root, Roles: p.Roles}, true})
	case r.ClientID != "":
		callers = append(callers, exchangeCaller{&Identity{Principal: r.ClientID, Issuer: s.cfg.Issuer}, false})
	}
	if r.ClientToken != "" {
		id, err := s.Authenticate(ctx, r.ClientToken)
		if errors.Is(err, ErrUnauthenticated) {
			return nil, &OAuthError{http.StatusUnauthorized, "invalid_client", "the bearer token is not valid"}
		} else if err != nil {
			return nil, err
		}
		callers = append(callers, exchangeCaller{id, true})
	}
	if r.ActorToken != "" {
		if r.ActorTokenType != "" && r.ActorTokenType != tokenTypeAccess && r.ActorTokenType != tokenTypeJWT {
			return nil, &OAuthError{http.StatusBadRequest, "invalid_request", "unsupported actor_token_type"}
		}
		id, err := s.Authenticate(ctx, r.ActorToken)
		if errors.Is(err, ErrUnauthenticated) {
			return nil, &OAuthError{http.StatusBadRequest, "invalid_grant", "actor_token is not a valid token"}
		} else if err != nil {
			return nil, err
		}
		callers = append(callers, exchangeCaller{id, true})
	}
	return callers, nil
}

// exchangeCaller is one party of a token exchange besides its subject.
type exchangeCaller struct {
	id *Identity
	// verified is false for a client_id sent without a secret.
	verified bool
}

// mayExchange decides whether callers (exchangeCallers) may exchange a
// token of subject: a client may exchange only its own tokens, so each
// caller must be subject itself (a Tarn identity: an external issuer's
// token whose claim happens to equal a local id is someone else) or hold
// manage on the catalog (an administrator minting a token for another
// principal). Otherwise a client holding a token it was handed, say a
// service a user called, could turn it into fresh tokens of that user.
// Errors: *OAuthError unauthorized_client (400, RFC 6749 §5.2); others
// are the store's.
func (s *Service) mayExchange(ctx context.Context, callers []exchangeCaller, subject principalRecord) error {
	var az Authorizer
	for _, c := range callers {
		if c.id.Principal == subject.ID && c.id.Issuer == s.cfg.Issuer {
			continue
		}
		if !c.verified { // a bare client_id: nobody to ask grants about
			return &OAuthError{http.StatusBadRequest, "unauthorized_client", "a client may exchange only its own tokens"}
		}
		if az == nil {
			var err error
			if az, err = s.cfg.Store.Authorizer(ctx); err != nil {
				return err
			}
		}
		if !az.Allowed(c.id, Manage, Catalog()) {
			return &OAuthError{http.StatusBadRequest, "unauthorized_client",
				"a client may exchange only its own tokens (another principal's needs manage on the catalog)"}
		}
	}
	return nil
}
