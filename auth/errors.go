package auth

import "github.com/tarnhq/tarn/internal/errclass"

// Sentinels. Each wraps its error class (internal/errclass), directly or
// through its parent here, so errors.Is works at every layer and the
// server maps them like any other package's.
var (
	// ErrUnauthenticated: the request carries no valid credential (401).
	ErrUnauthenticated = errclass.New(errclass.Unauthenticated, "not authenticated")
	// ErrForbidden: the caller is known but lacks the privilege (403).
	ErrForbidden = errclass.New(errclass.Forbidden, "forbidden")
	// ErrNotFound: no such principal, role or grant (404).
	ErrNotFound = errclass.New(errclass.NotFound, "not found")
	// ErrAlreadyExists: the principal or role exists already (409).
	ErrAlreadyExists = errclass.New(errclass.AlreadyExists, "already exists")
	// ErrInvalidArgument: a malformed name, privilege or securable (400
	// BadRequestException).
	ErrInvalidArgument = errclass.New(errclass.InvalidArgument, "invalid argument")

	// ErrInvalidClient: unknown client id or wrong secret at the token
	// endpoint (OAuth2 invalid_client, 401); wraps ErrUnauthenticated, so
	// it is a 401 wherever it surfaces, not only at the token endpoint.
	ErrInvalidClient = errclass.New(ErrUnauthenticated, "invalid client credentials")
	// ErrTokenInvalid: a bearer token that does not verify (bad format,
	// signature, issuer, audience or expiry); wraps ErrUnauthenticated.
	ErrTokenInvalid = errclass.New(ErrUnauthenticated, "invalid token")
)
