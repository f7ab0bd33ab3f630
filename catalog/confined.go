package catalog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"strings"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/tarnhq/tarn/storage"
)

// ConfineRemovals returns tbl with a FileIO that deletes only files
// inside the table's recorded directories (Pointer.Locations): a removal
// of any other file is skipped and logged. Reads are the warehouse's.
// Like every table TableIO loads, it removes no metadata file
// (TableIO.LoadTable).
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
	c, _, err := t.confine(ctx, tbl, false, keep)
	return c, err
}

// ConfineReads is ConfineRemovals for a job that writes what it reads
// into the table (compaction, manifest rewriting, Delta publishing): its
// FileIO also refuses to open or read a file outside the table's recorded
// directories, with an error wrapping ErrOutsideTable. It returns the
// check too (inside: whether a file lies in those directories), for the
// job to skip such files, with a reason, before it reads any.
//
// Tarn's jobs read with Tarn's storage credentials, not the committer's:
// a client that names another table's data file in its own table's
// manifests (add_files of a path it guessed) must not get Tarn to read
// that file and rewrite its rows into a table the client can read — Tarn
// would be a confused deputy.
//
// Errors: those of loading the table's pointer.
func (t *TableIO) ConfineReads(ctx context.Context, tbl *table.Table) (confined *table.Table, inside func(file string) bool, err error) {
	return t.confine(ctx, tbl, true, nil)
}

func (t *TableIO) confine(ctx context.Context, tbl *table.Table, reads bool, keep []func(string) bool) (*table.Table, func(string) bool, error) {
	id, err := identFromIceberg(tbl.Identifier())
	if err != nil {
		return nil, nil, err
	}
	p, err := t.cat.store.LoadPointer(ctx, id, KindTable)
	if err != nil {
		return nil, nil, err
	}
	dirs := PointerLocations(p)
	fsF := t.fileIOFunc(tbl.MetadataLocation(), id, dirs, reads, keep)
	inside := func(file string) bool { return insideAny(file, dirs) }
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), fsF, t), inside, nil
}

// RemovalFS returns the warehouse's FileIO for tbl, which removes what
// it is asked to, metadata files included: the orphan sweep's, which
// lists the table's location and removes the metadata files no log names
// any more (a commit that lost its race, a crash before the pointer
// swap), which the table's own IO leaves alone.
func (t *TableIO) RemovalFS(ctx context.Context, tbl *table.Table) (icebergio.IO, error) {
	return t.wh.fileIO(ctx, tbl.MetadataLocation())
}

// fileIOFunc is the warehouse's FileIO for loc wrapped in a confinedIO
// for table id: no removal of a metadata file, and the others only
// inside dirs (nil: anywhere) and not kept by keep; with reads, no read
// outside dirs either.
func (t *TableIO) fileIOFunc(loc string, id Ident, dirs []string, reads bool, keep []func(string) bool) func(context.Context) (icebergio.IO, error) {
	inner := t.wh.FileIOFunc(loc)
	return func(ctx context.Context) (icebergio.IO, error) {
		fs, err := inner(ctx)
		if err != nil {
			return nil, err
		}
		return &confinedIO{IO: fs, table: id, dirs: dirs, reads: reads, keep: keep, log: t.cat.log}, nil
	}
}

// confinedIO is an icebergio.IO (with ReadFile, Create, WriteFile,
// DeleteFiles, Stat and WalkDir) that removes no metadata file and
// nothing outside dirs (when dirs is not nil), and with reads opens and
// reads nothing outside dirs.
//
// Metadata files are the catalog's: its commit deletes those that leave
// the metadata log (deleteOldMetadata: within the table's location, never
// a shared one), and iceberg-go's Transaction.Commit would delete the
// same files again afterwards (table.deleteOldMetadata, through this IO),
// logging "Failed to delete old metadata file ... no such file or
// directory" on every in-process commit past
// write.metadata.previous-versions-max, and deleting a file the catalog
// chose to keep.
type confinedIO struct {
	icebergio.IO
	table Ident
	dirs  []string
	reads bool
	keep  []func(string) bool
	log   *slog.Logger
}

// Unwrap returns the warehouse's IO c wraps: for writes c has no
// method for, such as the Delta log's put-if-absent commit files
// (package delta, on object stores gocloud's IfNotExist), which lie
// inside the table's directories and are no metadata files.
func (c *confinedIO) Unwrap() icebergio.IO { return c.IO }

// checkRead refuses name, when reads are confined, outside dirs.
func (c *confinedIO) checkRead(name string) error {
	if c.reads && !c.inside(name) {
		return fmt.Errorf("%w: %s names %s", ErrOutsideTable, c.table, name)
	}
	return nil
}

// Open opens name through the warehouse's IO (see checkRead).
func (c *confinedIO) Open(name string) (icebergio.File, error) {
	if err := c.checkRead(name); err != nil {
		return nil, err
	}
	return c.IO.Open(name)
}

// It has every optional interface iceberg-go's table package looks for
// (reads, writes, bulk removal, Stat, WalkDir), so that wrapping an IO
// changes nothing but removals (and confined reads).
var (
	_ icebergio.ReadFileIO      = (*confinedIO)(nil)
	_ icebergio.WriteFileIO     = (*confinedIO)(nil)
	_ icebergio.BulkRemovableIO = (*confinedIO)(nil)
	_ icebergio.StatIO          = (*confinedIO)(nil)
	_ icebergio.ListableIO      = (*confinedIO)(nil)
)

// errNoWrite, errNoList: the warehouse's IO cannot write or list (never
// so for file:// and s3://, whose IOs implement both).
var (
	errNoWrite = errors.New("the warehouse's file IO cannot write")
	errNoList  = errors.New("the warehouse's file IO cannot list")
)

// Stat returns name's file info through the warehouse's IO.
func (c *confinedIO) Stat(name string) (fs.FileInfo, error) {
	if s, ok := c.IO.(icebergio.StatIO); ok {
		return s.Stat(name)
	}
	f, err := c.IO.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Stat()
}

// WalkDir walks root through the warehouse's IO (orphan removal lists
// the table's location).
func (c *confinedIO) WalkDir(root string, fn fs.WalkDirFunc) error {
	if l, ok := c.IO.(icebergio.ListableIO); ok {
		return l.WalkDir(root, fn)
	}
	return errNoList
}

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

// inside reports whether file lies inside one of the table's directories.
func (c *confinedIO) inside(file string) bool { return insideAny(file, c.dirs) }

// kept reports whether a keep function names file: Iceberg no longer
// needs it, something else (the Delta log) still does.
func (c *confinedIO) kept(file string) bool {
	for _, k := range c.keep {
		if k(file) {
			return true
		}
	}
	return false
}

// insideAny reports whether file (as written) lies inside one of dirs
// (recorded directories, as Pointer.Locations are), by storage.Within, which
// normalises each once.
func insideAny(file string, dirs []string) bool {
	for _, d := range dirs {
		if storage.Within(file, d) {
			return true
		}
	}
	return false
}

// removable reports whether name may be removed through c; a file
// outside the table's directories is logged, as is one a keep function
// keeps, a metadata file skipped silently (the catalog's commit handled
// it).
func (c *confinedIO) removable(name string) bool {
	if strings.HasSuffix(name, metadataFileSuffix) {
		return false
	}
	if c.dirs != nil && !c.inside(name) {
		c.log.Warn("kept a file outside the table's directories that its metadata named for deletion", "table", c.table.String(), "file", name)
		return false
	}
	if c.kept(name) {
		c.log.Info("kept a file Iceberg no longer needs but the Delta log still names", "table", c.table.String(), "file", name)
		return false
	}
	return true
}

// metadataFileSuffix ends every table metadata file's name, compressed
// or not (iceberg-go's NNNNN-<uuid>[.gz].metadata.json, Java's, Hadoop's
// v<N>[.gz].metadata.json).
const metadataFileSuffix = ".metadata.json"

// Remove removes name if c allows it (removable), else does nothing.
func (c *confinedIO) Remove(name string) error {
	if !c.removable(name) {
		return nil
	}
	return c.IO.Remove(name)
}

// ReadFile reads name through the warehouse's IO (see checkRead).
func (c *confinedIO) ReadFile(name string) ([]byte, error) {
	if err := c.checkRead(name); err != nil {
		return nil, err
	}
	if rf, ok := c.IO.(icebergio.ReadFileIO); ok {
		return rf.ReadFile(name)
	}
	f, err := c.Open(name)
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

// DeleteFiles deletes the names c allows (removable; in bulk when the
// warehouse's IO can) and reports the others as deleted: they are not
// this IO's to delete, and must not be retried.
func (c *confinedIO) DeleteFiles(ctx context.Context, names []string) ([]string, error) {
	var mine, done []string
	for _, n := range names {
		if c.removable(n) {
			mine = append(mine, n)
		} else {
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
