package storage

import "github.com/tarnhq/tarn/internal/errclass"

// The classes of storage's errors (internal/errclass), as catalog
// re-exports them too (catalog.ErrInvalidArgument and
// catalog.ErrForbidden are these same values), so a storage error keeps
// the HTTP status of its class through every layer above.
var (
	// ErrInvalidArgument: the request, a location or a warehouse
	// property is invalid (400).
	ErrInvalidArgument error = errclass.InvalidArgument
	// ErrForbidden: the operation is refused whatever the caller's rights (403).
	ErrForbidden error = errclass.Forbidden
)
