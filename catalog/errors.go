package catalog

import "errors"

// Parent sentinels: one per HTTP status class the REST spec uses. Every
// specific sentinel below wraps one of them, so errors.Is works at every
// layer and the server maps any error with one switch.
var (
	// ErrNotFound: the named resource does not exist (404).
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists: the name is taken (409 AlreadyExistsException).
	ErrAlreadyExists = errors.New("already exists")
	// ErrConflict: the state changed or forbids the operation (409).
	ErrConflict = errors.New("conflict")
	// ErrInvalidArgument: the request is malformed or invalid (400).
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrUnprocessable: the request is well formed but contradicts itself (422).
	ErrUnprocessable = errors.New("unprocessable")
	// ErrForbidden: the operation is refused whatever the caller's rights (403).
	ErrForbidden = errors.New("forbidden")
	// ErrCommitStateUnknown: the commit may or may not have been applied (500).
	ErrCommitStateUnknown = errors.New("commit state unknown")
	// ErrUnsupported: the server does not offer this operation (406).
	ErrUnsupported = errors.New("unsupported operation")
)

// Specific sentinels.
var (
	// ErrNoSuchNamespace: the namespace (or a table's namespace) does not exist.
	ErrNoSuchNamespace = kindOf(ErrNotFound, "no such namespace")
	// ErrNoSuchTable: no table has this identifier.
	ErrNoSuchTable = kindOf(ErrNotFound, "no such table")
	// ErrNoSuchView: no view has this identifier.
	ErrNoSuchView = kindOf(ErrNotFound, "no such view")
	// ErrNoSuchWarehouse: the warehouse (REST prefix) is not configured.
	ErrNoSuchWarehouse = kindOf(ErrNotFound, "no such warehouse")
	// ErrNamespaceAlreadyExists: a namespace with this name exists.
	ErrNamespaceAlreadyExists = kindOf(ErrAlreadyExists, "namespace")
	// ErrTableAlreadyExists: a table with this identifier exists.
	ErrTableAlreadyExists = kindOf(ErrAlreadyExists, "table")
	// ErrViewAlreadyExists: a view with this identifier exists.
	ErrViewAlreadyExists = kindOf(ErrAlreadyExists, "view")
	// ErrNamespaceNotEmpty: the namespace still holds tables, views or namespaces.
	ErrNamespaceNotEmpty = kindOf(ErrConflict, "namespace not empty")
	// ErrCommitFailed: a requirement failed, or the pointer moved; the client
	// should refresh and retry (CommitFailedException).
	ErrCommitFailed = kindOf(ErrConflict, "commit failed")
	// ErrIdempotencyKeyReused: an Idempotency-Key came back with another request.
	ErrIdempotencyKeyReused = kindOf(ErrUnprocessable, "idempotency key reused for a different request")
)

// kind is a specific sentinel: its message stands alone, and errors.Is
// also matches its parent.
type kind struct {
	msg    string
	parent error
}

func kindOf(parent error, msg string) error { return &kind{msg: msg, parent: parent} }

func (k *kind) Error() string { return k.msg }
func (k *kind) Unwrap() error { return k.parent }
