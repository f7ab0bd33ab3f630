package catalog

import (
	"context"
	"errors"
	"io"
	"log/slog"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// ConfineRemovals returns tbl with a FileIO that deletes only files
// inside the table's recorded directories (Pointer.Locations): a removal
// of any other file is skipped and logged. Reads are the warehouse's.
//
// Table metadata is what clients committed, and a client may have added
// another table's data file to its own table (pyiceberg's add_files does
// not care whose file it is). Snapshot expiry then deletes the files
// that only expired snapshots reference, which would include the other
// table's file: a trial deleted a table's data that way, through a
// table of its own in a namespace it could write. Maintenance jobs that
// delete what metadata names run on the confined table.
//
// keep, when given, names more files to skip: files Iceberg no longer
// needs but something else still does (the Delta log's retained
// versions, delta.Publisher.KeepFiles); a removal of one is skipped
// and logged too.
//
// Errors: those of loading the table's pointer.
func (t *TableIO) ConfineRemovals(ctx context.Context, tbl *table.Table, keep ...func(path string) bool) (*table.Table, error) {
	id, err := identFromIceberg(tbl.Identifier())
	if err != nil {
		return nil, err
	}
	p, err := t.cat.store.LoadPointer(ctx, id, KindTable)
	if err != nil {
		return nil, err
	}
	dirs := PointerLocations(p)
	inner := t.wh.FileIOFunc(tbl.MetadataLocation())
	fsF := func(ctx context.Context) (icebergio.IO, error) {
		fs, err := inner(ctx)
		if err != nil {
			return nil, err
		}
		return &confinedIO{IO: fs, table: id, dirs: dirs, keep: keep, log: t.cat.log}, nil
	}
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), fsF, t), nil
}

// confinedIO is an icebergio.IO (with ReadFile, Create, WriteFile and
// DeleteFiles) whose
// removals stay inside dirs.
type confinedIO struct {
	icebergio.IO
	table Ident
	dirs  []string
	keep  []func(string) bool
	log   *slog.Logger
}

var (
	_ icebergio.ReadFileIO      = (*confinedIO)(nil)
	_ icebergio.WriteFileIO     = (*confinedIO)(nil)
	_ icebergio.BulkRemovableIO = (*confinedIO)(nil)
)

// errNoWrite: the warehouse's IO cannot write (never so for file:// and
// s3://, whose IOs both implement WriteFileIO).
var errNoWrite = errors.New("the warehouse's file IO cannot write")

// Create creates name through the warehouse's IO.
func (c *confinedIO) Create(name string) (icebergio.FileWriter, error) {
	if w, ok := c.IO.(icebergio.WriteFileIO); ok {
		return w.Create(name)
	}
	return nil, errNoWrite
}

// WriteFile writes name through the warehouse's IO.
func (c *confinedIO) WriteFile(name string, p []byte) error {
	if w, ok := c.IO.(icebergio.WriteFileIO); ok {
		return w.WriteFile(name, p)
	}
	return errNoWrite
}

// inside reports whether file lies inside one of the table's
// directories and no keep function keeps it: whether it may be removed.
func (c *confinedIO) inside(file string) bool {
	if !insideAny(file, c.dirs) {
		return false
	}
	for _, k := range c.keep {
		if k(file) {
			return false
		}
	}
	return true
}

// insideAny reports whether file lies inside one of dirs (normalised, as
// Pointer.Locations are).
func insideAny(file string, dirs []string) bool {
	f := normLocation(file)
	for _, d := range dirs {
		if within(f, d) {
			return true
		}
	}
	return false
}

func (c *confinedIO) skip(file string) {
	if insideAny(file, c.dirs) {
		c.log.Info("kept a file Iceberg no longer needs but the Delta log still names", "table", c.table.String(), "file", file)
		return
	}
	c.log.Warn("kept a file outside the table's directories that its metadata named for deletion", "table", c.table.String(), "file", file)
}

// Remove removes name if it lies inside the table's directories.
func (c *confinedIO) Remove(name string) error {
	if !c.inside(name) {
		c.skip(name)
		return nil
	}
	return c.IO.Remove(name)
}

// ReadFile reads name through the warehouse's IO.
func (c *confinedIO) ReadFile(name string) ([]byte, error) {
	if rf, ok := c.IO.(icebergio.ReadFileIO); ok {
		return rf.ReadFile(name)
	}
	f, err := c.IO.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	b := make([]byte, st.Size())
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return b, nil
}

// DeleteFiles deletes the names inside the table's directories (in bulk
// when the warehouse's IO can) and reports the others as deleted: they
// are not this table's to delete, and must not be retried.
func (c *confinedIO) DeleteFiles(ctx context.Context, names []string) ([]string, error) {
	var mine, done []string
	for _, n := range names {
		if c.inside(n) {
			mine = append(mine, n)
		} else {
			c.skip(n)
			done = append(done, n)
		}
	}
	if bulk, ok := c.IO.(icebergio.BulkRemovableIO); ok {
		deleted, err := bulk.DeleteFiles(ctx, mine)
		return append(done, deleted...), err
	}
	var errs []error
	for _, n := range mine {
		if err := c.IO.Remove(n); err != nil {
			errs = append(errs, err)
			continue
		}
		done = append(done, n)
	}
	return done, errors.Join(errs...)
}
