package delta

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/io/gocloud/blobfs"
	"github.com/google/uuid"
	"github.com/tarnhq/tarn/internal/errclass"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// ErrVersionExists: a log file that must be new already exists (another
// writer, or an earlier run of this one, wrote that version).
var ErrVersionExists = errclass.New(errclass.Internal, "delta log file already exists")

// logStore is a table's _delta_log directory. Commit files are written
// put-if-absent, so a version is never written twice (PROTOCOL.md
// "Creation of New Log Entries": writers must never overwrite an
// existing log entry):
//
//   - file://: the bytes go to a temporary file in the directory
//     (".<name>.<uuid>.tmp", hidden from Delta readers, which match log
//     file names exactly), which is fsynced and then hard-linked to its
//     name — link(2) fails when the name exists, so the file appears whole
//     or not at all — and the directory is fsynced;
//   - object stores (s3:// and the others gocloud serves): one PUT with
//     If-None-Match: * (gocloud's IfNotExist), which the store refuses
//     with 412 when the key exists.
type logStore interface {
	// putIfAbsent writes a new file; ErrVersionExists if name exists.
	putIfAbsent(ctx context.Context, name string, data []byte) error
	// replace writes name atomically, over an existing file
	// (_last_checkpoint, a hint readers may find stale).
	replace(ctx context.Context, name string, data []byte) error
	// read returns a file; errors wrap fs.ErrNotExist when it is missing.
	read(ctx context.Context, name string) ([]byte, error)
	// list returns the names of the files directly in the directory
	// (none when it does not exist), sorted.
	list(ctx context.Context) ([]string, error)
	// remove deletes a file; a missing one is no error.
	remove(ctx context.Context, name string) error
	// uri is the directory's URI.
	uri() string
}

// openLogStore returns the store of the log directory dir (a URI)
// through fsys, the table's FileIO. Errors: a FileIO that can do neither
// (only file:// and gocloud's object stores can write put-if-absent).
func openLogStore(fsys icebergio.IO, dir string) (logStore, error) {
	dir = strings.TrimSuffix(dir, "/")
	u, err := url.Parse(dir)
	if err != nil {
		return nil, fmt.Errorf("delta log location %q: %w", dir, err)
	}
	if u.Scheme == "file" || u.Scheme == "" {
		return &localLog{dir: filepath.FromSlash(u.Path), loc: dir}, nil
	}
	if b, ok := fsys.(*blobfs.FileIO); ok {
		return &objectLog{fs: b, dir: dir}, nil
	}
	if w, ok := fsys.(interface{ Unwrap() icebergio.IO }); ok {
		return openLogStore(w.Unwrap(), dir)
	}
	return nil, fmt.Errorf("delta log at %s: the warehouse's file IO (%T) cannot write put-if-absent", dir, fsys)
}

// localLog is a log directory on a local file system.
type localLog struct {
	dir string
	loc string
}

func (l *localLog) uri() string { return l.loc }

// temp writes data to a new hidden file in the directory, fsynced.
func (l *localLog) temp(name string, data []byte) (string, error) {
	if err := os.MkdirAll(l.dir, 0o755); err != nil {
		return "", err
	}
	tmp := filepath.Join(l.dir, "."+name+"."+uuid.NewString()+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

func (l *localLog) putIfAbsent(_ context.Context, name string, data []byte) error {
	tmp, err := l.temp(name, data)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, filepath.Join(l.dir, name)); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: %s/%s", ErrVersionExists, l.loc, name)
		}
		return err
	}
	return syncDir(l.dir)
}

func (l *localLog) replace(_ context.Context, name string, data []byte) error {
	tmp, err := l.temp(name, data)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(l.dir, name)); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return syncDir(l.dir)
}

func (l *localLog) read(_ context.Context, name string) ([]byte, error) {
	return os.ReadFile(filepath.Join(l.dir, name))
}

func (l *localLog) list(context.Context) ([]string, error) {
	es, err := os.ReadDir(l.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range es {
		if !e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

func (l *localLog) remove(_ context.Context, name string) error {
	if err := os.Remove(filepath.Join(l.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// objectLog is a log directory in an object store, through iceberg-go's
// gocloud FileIO.
type objectLog struct {
	fs  *blobfs.FileIO
	dir string
}

func (o *objectLog) uri() string { return o.dir }

func (o *objectLog) put(ctx context.Context, name string, data []byte, opts *blob.WriterOptions) error {
	w, err := o.fs.NewWriter(ctx, o.dir+"/"+name, true, opts)
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		_ = w.Close()
		return err
	}
	return w.Close()
}

func (o *objectLog) putIfAbsent(ctx context.Context, name string, data []byte) error {
	err := o.put(ctx, name, data, &blob.WriterOptions{IfNotExist: true})
	if err != nil && gcerrors.Code(err) == gcerrors.FailedPrecondition {
		return fmt.Errorf("%w: %s/%s", ErrVersionExists, o.dir, name)
	}
	return err
}

func (o *objectLog) replace(ctx context.Context, name string, data []byte) error {
	return o.put(ctx, name, data, nil)
}

func (o *objectLog) read(_ context.Context, name string) ([]byte, error) {
	f, err := o.fs.Open(o.dir + "/" + name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

func (o *objectLog) list(context.Context) ([]string, error) {
	var out []string
	err := o.fs.WalkDir(o.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		rel, ok := strings.CutPrefix(p, o.dir+"/")
		switch {
		case !ok || rel == "":
			return nil
		case d.IsDir():
			return fs.SkipDir
		case !strings.Contains(rel, "/"):
			out = append(out, path.Base(rel))
		}
		return nil
	})
	slices.Sort(out)
	return out, err
}

func (o *objectLog) remove(_ context.Context, name string) error {
	if err := o.fs.Remove(o.dir + "/" + name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
