package catalog

import (
	"errors"
	"fmt"

	"github.com/tarnhq/tarn/storage"
)

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
	// ErrInvalidArgument: the request is invalid (400). It is
	// storage.ErrInvalidArgument, so that storage's errors (a location,
	// a warehouse property, a signing request) are of this class too.
	ErrInvalidArgument = storage.ErrInvalidArgument
	// ErrUnprocessable: the request is well formed but contradicts itself (422).
	ErrUnprocessable = errors.New("unprocessable")
	// ErrForbidden: the operation is refused whatever the caller's
	// rights (403). It is storage.ErrForbidden
	// (storage.ErrSignOutsideLocation wraps it).
	ErrForbidden = storage.ErrForbidden
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
	// ErrMetadataNotFound: a pointer names a metadata file that is gone.
	ErrMetadataNotFound = kindOf(ErrNotFound, "metadata file not found")
	// ErrNamespaceAlreadyExists: a namespace with this name exists.
	ErrNamespaceAlreadyExists = kindOf(ErrAlreadyExists, "namespace already exists")
	// ErrTableAlreadyExists: a table with this identifier exists.
	ErrTableAlreadyExists = kindOf(ErrAlreadyExists, "table already exists")
	// ErrViewAlreadyExists: a view with this identifier exists.
	ErrViewAlreadyExists = kindOf(ErrAlreadyExists, "view already exists")
	// ErrNamespaceNotEmpty: the namespace still holds tables, views or namespaces.
	ErrNamespaceNotEmpty = kindOf(ErrConflict, "namespace not empty")
	// ErrCommitFailed: a requirement failed, or the pointer moved; the client
	// should refresh and retry (CommitFailedException).
	ErrCommitFailed = kindOf(ErrConflict, "commit failed")
	// ErrTableOwned: the table is materialized from an enabled Kafka topic,
	// so it cannot be dropped (409) until the topic is disabled.
	ErrTableOwned = kindOf(ErrConflict, "table is owned by an enabled topic")
	// ErrTableOwnedForbidden: the table is owned by Tarn (a topic, enabled
	// or disabled, materializes into it), so external writes are refused
	// (403) until it is released.
	ErrTableOwnedForbidden = kindOf(ErrForbidden, "table is owned by Tarn")
	// ErrInvalidMetadata: the change would leave table or view metadata
	// that breaks the Iceberg spec, so some client could not load or write
	// it (validate.go); sent as 400 BadRequestException.
	ErrInvalidMetadata = kindOf(ErrInvalidArgument, "invalid metadata")
	// ErrOutsideTable: a file a table's metadata names lies outside the
	// table's recorded directories, and Tarn does not read it for the
	// table (TableIO.ConfineReads).
	ErrOutsideTable = kindOf(ErrForbidden, "file outside the table's directories")
	// ErrLimitExceeded: a request would create or grow something past one
	// of the limits of limits.go (400 BadRequestException).
	ErrLimitExceeded = kindOf(ErrInvalidArgument, "limit exceeded")
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

// Error is an error with a message of its own that matches a sentinel (and
// so the sentinel's parent) with errors.Is. Messages follow the wording of
// Apache Iceberg's Java reference catalog ("Table does not exist: ns.tbl"),
// which Java clients pass through and the REST Compatibility Kit checks.
type Error struct {
	msg      string
	sentinel error
}

// Errorf returns an *Error for sentinel with a formatted message.
func Errorf(sentinel error, format string, args ...any) error {
	return &Error{msg: fmt.Sprintf(format, args...), sentinel: sentinel}
}

func (e *Error) Error() string { return e.msg }
func (e *Error) Unwrap() error { return e.sentinel }

// Title is "Table" or "View", as messages start.
func (k Kind) Title() string {
	if k == KindView {
		return "View"
	}
	return "Table"
}

// NotFoundError is "<Kind> does not exist: <ident>".
func NotFoundError(k Kind, id Ident) error {
	return Errorf(k.NotFound(), "%s does not exist: %s", k.Title(), id)
}

// AlreadyExistsError reports that creating a wanted-kind object found existing
// in its place: "Table already exists: ns.t", or "View with same name
// already exists: ns.t" when the name is taken by the other kind.
func AlreadyExistsError(wanted, existing Kind, id Ident) error {
	if wanted != existing && wanted != 0 {
		return Errorf(existing.AlreadyExists(), "%s with same name already exists: %s", existing.Title(), id)
	}
	return Errorf(existing.AlreadyExists(), "%s already exists: %s", existing.Title(), id)
}

// RenameTargetExistsError is "Cannot rename <from> to <to>. <Kind> already exists".
func RenameTargetExistsError(from, to Ident, existing Kind) error {
	return Errorf(existing.AlreadyExists(), "Cannot rename %s to %s. %s already exists", from, to, existing.Title())
}

// NamespaceNotFoundError is "Namespace does not exist: <ns>".
func NamespaceNotFoundError(ns Namespace) error {
	return Errorf(ErrNoSuchNamespace, "Namespace does not exist: %s", ns)
}
