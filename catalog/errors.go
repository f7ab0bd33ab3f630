package catalog

import "github.com/tarnhq/tarn/internal/errclass"

// The error classes (internal/errclass), under the names catalog's
// callers use: catalog.ErrNotFound is errclass.NotFound. Every specific
// sentinel below, and every other package's, wraps one of them, so
// errors.Is works at every layer and the server maps any error by its
// class (server/errors.go).
var (
	// ErrNotFound: the named resource does not exist (404).
	ErrNotFound error = errclass.NotFound
	// ErrAlreadyExists: the name is taken (409 AlreadyExistsException).
	ErrAlreadyExists error = errclass.AlreadyExists
	// ErrConflict: the state changed or forbids the operation (409).
	ErrConflict error = errclass.Conflict
	// ErrInvalidArgument: the request is invalid (400).
	ErrInvalidArgument error = errclass.InvalidArgument
	// ErrUnprocessable: the request is well formed but contradicts itself (422).
	ErrUnprocessable error = errclass.Unprocessable
	// ErrForbidden: the operation is refused whatever the caller's rights (403).
	ErrForbidden error = errclass.Forbidden
	// ErrCommitStateUnknown: the commit may or may not have been applied (500).
	ErrCommitStateUnknown error = errclass.CommitStateUnknown
	// ErrUnsupported: the server does not offer this operation (406).
	ErrUnsupported error = errclass.Unsupported
)

// Specific sentinels.
var (
	// ErrNoSuchNamespace: the namespace (or a table's namespace) does not exist.
	ErrNoSuchNamespace = errclass.New(ErrNotFound, "no such namespace")
	// ErrNoSuchTable: no table has this identifier.
	ErrNoSuchTable = errclass.New(ErrNotFound, "no such table")
	// ErrNoSuchView: no view has this identifier.
	ErrNoSuchView = errclass.New(ErrNotFound, "no such view")
	// ErrNoSuchWarehouse: the warehouse (REST prefix) is not configured.
	ErrNoSuchWarehouse = errclass.New(ErrNotFound, "no such warehouse")
	// ErrMetadataNotFound: a pointer names a metadata file that is gone.
	ErrMetadataNotFound = errclass.New(ErrNotFound, "metadata file not found")
	// ErrNamespaceAlreadyExists: a namespace with this name exists.
	ErrNamespaceAlreadyExists = errclass.New(ErrAlreadyExists, "namespace already exists")
	// ErrTableAlreadyExists: a table with this identifier exists.
	ErrTableAlreadyExists = errclass.New(ErrAlreadyExists, "table already exists")
	// ErrViewAlreadyExists: a view with this identifier exists.
	ErrViewAlreadyExists = errclass.New(ErrAlreadyExists, "view already exists")
	// ErrNamespaceNotEmpty: the namespace still holds tables, views or namespaces.
	ErrNamespaceNotEmpty = errclass.New(ErrConflict, "namespace not empty")
	// ErrCommitFailed: a requirement failed, or the pointer moved; the client
	// should refresh and retry (CommitFailedException).
	ErrCommitFailed = errclass.New(ErrConflict, "commit failed")
	// ErrTableOwned: the table is materialized from an enabled Kafka topic,
	// so it cannot be dropped (409) until the topic is disabled.
	ErrTableOwned = errclass.New(ErrConflict, "table is owned by an enabled topic")
	// ErrTableOwnedForbidden: the table is owned by Tarn (a topic, enabled
	// or disabled, materializes into it), so external writes are refused
	// (403) until it is released.
	ErrTableOwnedForbidden = errclass.New(ErrForbidden, "table is owned by Tarn")
	// ErrInvalidMetadata: the change would leave table or view metadata
	// that breaks the Iceberg spec, so some client could not load or write
	// it (validate.go); sent as 400 BadRequestException.
	ErrInvalidMetadata = errclass.New(ErrInvalidArgument, "invalid metadata")
	// ErrOutsideTable: a file a table's metadata names lies outside the
	// table's recorded directories, and Tarn does not read it for the
	// table (TableIO.ConfineReads).
	ErrOutsideTable = errclass.New(ErrForbidden, "file outside the table's directories")
	// ErrLimitExceeded: a request would create or grow something past one
	// of the limits of limits.go (400 BadRequestException).
	ErrLimitExceeded = errclass.New(ErrInvalidArgument, "limit exceeded")
	// ErrIdempotencyKeyReused: an Idempotency-Key came back with another request.
	ErrIdempotencyKeyReused = errclass.New(ErrUnprocessable, "idempotency key reused for a different request")
)

// Errorf returns an error with a formatted message of its own that
// matches sentinel (and so its class) with errors.Is (errclass.Errorf).
// Messages follow the wording of Apache Iceberg's Java reference catalog
// ("Table does not exist: ns.tbl"), which Java clients pass through and
// the REST Compatibility Kit checks.
func Errorf(sentinel error, format string, args ...any) error {
	return errclass.Errorf(sentinel, format, args...)
}

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
