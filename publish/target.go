package publish

import (
	"context"
	"fmt"
	"slices"

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
	// ErrNotDelta: the table cannot be published to the target because
	// it has no Delta view (a unity target takes only Delta tables). The
	// table shows as StateUnsupported with the reason, and is published
	// once a commit turns its Delta output on.
	ErrNotDelta = errclass.New(errclass.Unsupported, "not published: no Delta view")
	// ErrNoSuchTarget: no publish target of that name is configured.
	ErrNoSuchTarget = errclass.New(errclass.NotFound, "no such publish target")
)

// Target is one catalog Tarn pushes table pointers into (one file per
// type: glue.go, icebergrest.go, unity.go). A Target is used by one goroutine at a time.
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
	// exists. An error wrapping ErrConflict stops the table; one wrapping
	// ErrNotDelta marks it unsupported (not retried until its next
	// commit); any other is retried with backoff.
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
	case TypeIcebergREST:
		return NewIcebergREST(cfg), nil
	case TypeUnity:
		return NewUnity(cfg), nil
	}
	return nil, fmt.Errorf("%w: target %s: type %q is not built", ErrInvalidConfig, cfg.Name, cfg.Type)
}

// conflictf returns an ErrConflict with a reason.
func conflictf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrConflict}, args...)...)
}

// checkPointer decides whether a target's table remote, which points at
// metadata file cur, may be moved to tbl's current file: nil when it is
// the one Tarn last wrote (last), or a newer metadata file of this table
// (Tarn's write whose record a crash lost), or when the operator chose to
// take it over (last.TakeOver); otherwise an ErrConflict saying what
// differs. Without a record under remote, any of tbl's metadata files is
// Tarn's (a create whose record was lost).
func checkPointer(remote string, id catalog.Ident, tbl *table.Table, cur string, last Record) error {
	if last.TakeOver {
		return nil
	}
	hist := history(tbl)
	at := slices.Index(hist, cur)
	if last.Remote == remote && last.MetadataLocation != "" {
		if cur == last.MetadataLocation || (at >= 0 && at > slices.Index(hist, last.MetadataLocation)) {
			return nil
		}
		return conflictf("the target's table %s was changed outside Tarn: it points at %s, Tarn published %s", remote, cur, last.MetadataLocation)
	}
	if at >= 0 {
		return nil
	}
	return conflictf("the target's table %s exists and does not point at a metadata file of %s (it points at %s)", remote, id, cur)
}

// history lists tbl's metadata files, oldest first: the metadata log
// and the current file.
func history(tbl *table.Table) []string {
	var out []string
	for e := range tbl.Metadata().PreviousFiles() {
		out = append(out, e.MetadataFile)
	}
	return append(out, tbl.MetadataLocation())
}
