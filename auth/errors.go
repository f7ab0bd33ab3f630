package auth

import "errors"

// Sentinels. Each specific one wraps its HTTP-class parent so errors.Is
// works at every layer.
var (
	// ErrUnauthenticated: the request carries no valid credential (401).
	ErrUnauthenticated = errors.New("not authenticated")
	// ErrForbidden: the caller is known but lacks the privilege (403).
	ErrForbidden = errors.New("forbidden")
	// ErrNotFound: no such principal, role or grant (404).
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists: the principal or role exists already (409).
	ErrAlreadyExists = errors.New("already exists")
	// ErrInvalidArgument: a malformed name, privilege or securable (400).
	ErrInvalidArgument = errors.New("invalid argument")

	// ErrInvalidClient: unknown client id or wrong secret at the token
	// endpoint (OAuth2 invalid_client, 401); wraps ErrUnauthenticated, so
	// it is a 401 wherever it surfaces, not only at the token endpoint.
	ErrInvalidClient = wrap(ErrUnauthenticated, "invalid client credentials")
	// ErrTokenInvalid: a bearer token that does not verify (bad format,
	// signature, issuer, audience or expiry); wraps ErrUnauthenticated.
	ErrTokenInvalid = wrap(ErrUnauthenticated, "invalid token")
)

type wrapped struct {
	parent error
	msg    string
}

func (w *wrapped) Error() string { return w.msg }
func (w *wrapped) Unwrap() error { return w.parent }

func wrap(parent error, msg string) error { return &wrapped{parent: parent, msg: msg} }
