package publish

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go/table"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/internal/errclass"
)

// Sentinel errors; each wraps an error class (internal/errclass), so the
// management API answers them with its status (409, 404).
var (
	// ErrConflict: the target's table was changed by someone else than
	// this publisher (or holds another table). Publishing that table to
	// the target stops, with the error as the reason, until
	// Publisher.Resume.
	ErrConflict = errclass.New(errclass.Conflict, "publish conflict")
	// ErrNoSuchTarget: no publish target of that name is configured.
	ErrNoSuchTarget = errclass.New(errclass.NotFound, "no such publish target")
)

// Target is one catalog Tarn pushes table pointers into (one file per
// type: glue.go). A Target is used by one goroutine at a time.
type Target interface {
	// Name is the target's name of table id (glue: "database.table").
	// An error wrapping ErrConflict says the table cannot be published
	// there (a name the target refuses).
	Name(id catalog.Ident) (string, error)
	// Publish points the target's table of id at tbl's current metadata
	// and returns its name and version token after the write (the
	// record's Remote and RemoteVersion). last is the table's record: the
	// zero Record before the first publish; its Remote may be another
	// name (a rename), whose table Publish then removes once the new one
	// exists. An error wrapping ErrConflict stops the table; any other is
	// retried with backoff.
	Publish(ctx context.Context, id catalog.Ident, tbl *table.Table, last Record) (remote, version string, err error)
	// Remove deletes the target's table last.Remote when Tarn's table was
	// dropped, only if it still points at last.MetadataLocation; removed
	// is false when it was gone already or changed by someone else (then
	// it is left).
	Remove(ctx context.Context, last Record) (removed bool, err error)
}

// NewTarget builds the Target of cfg. Errors: the client's (an AWS
// configuration that cannot be loaded).
func NewTarget(ctx context.Context, cfg TargetConfig) (Target, error) {
	switch cfg.Type {
	case TypeGlue:
		return NewGlue(ctx, cfg)
	}
	return nil, fmt.Errorf("%w: target %s: type %q is not built", ErrInvalidConfig, cfg.Name, cfg.Type)
}

// conflictf returns an ErrConflict with a reason.
func conflictf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrConflict}, args...)...)
}
