package catalog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/google/uuid"

	"github.com/tarnhq/tarn/spec"
	"github.com/tarnhq/tarn/storage"
)

// DefaultWarehouse is the name (REST prefix) of the warehouse Tarn serves
// when none is configured by name.
const DefaultWarehouse = "default"

// Warehouse is a root location that holds tables' files, and the FileIO
// properties used to reach it. Table and view locations never escape it.
type Warehouse struct {
	// Name is the REST {prefix} that selects this warehouse.
	Name string
	// Location is the root URI without a trailing slash, e.g.
	// "file:///var/lib/tarn/warehouse" or "s3://bucket/prefix".
	Location string
	// Properties are the warehouse's properties: iceberg-go FileIO
	// properties (s3.region, ...) and Tarn's own (storage.PropS3RoleARN, ...). They
	// may hold credentials: never log or print them (String and LogValue
	// leave them out).
	Properties iceberg.Properties

	root *url.URL
	// s3 is set for s3:// warehouses.
	s3 *storage.S3
}

// NewWarehouse checks location, an absolute file:// URI (the directory is
// created) or s3://bucket[/prefix] with props holding the S3 settings
// (storage.PropS3Endpoint, ...). Errors wrap ErrInvalidArgument and
// never quote a credential.
func NewWarehouse(name, location string, props iceberg.Properties) (*Warehouse, error) {
	location = strings.TrimSuffix(location, "/")
	u, err := storage.ParseLocation(location)
	if err != nil {
		return nil, err
	}
	if props == nil {
		props = iceberg.Properties{}
	}
	switch u.Scheme {
	case "file":
		if !path.IsAbs(u.Path) || u.Path == "/" {
			return nil, fmt.Errorf("%w: warehouse %q must be an absolute directory below /", ErrInvalidArgument, location)
		}
		if err := storage.MkdirAllDurable(u.Path); err != nil {
			return nil, fmt.Errorf("create warehouse directory: %w", err)
		}
		location = "file://" + u.Path
		return &Warehouse{Name: name, Location: location, Properties: props, root: u}, nil
	case "s3":
		if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			// Not quoted: user info would be a credential.
			return nil, fmt.Errorf("%w: an s3:// warehouse location is s3://bucket/prefix, without user info, query or fragment", ErrInvalidArgument)
		}
		st, err := storage.NewS3(location, props)
		if err != nil {
			return nil, err
		}
		return &Warehouse{Name: name, Location: location, Properties: props, root: u, s3: st}, nil
	}
	return nil, fmt.Errorf("%w: warehouse %q: only file:// and s3:// warehouses are supported", ErrInvalidArgument, location)
}

// String names the warehouse without its properties (which may hold
// credentials).
func (w *Warehouse) String() string { return w.Name + " (" + w.Location + ")" }

// LogValue keeps the properties, which may hold credentials, out of logs.
func (w *Warehouse) LogValue() slog.Value {
	return slog.GroupValue(slog.String("name", w.Name), slog.String("location", w.Location))
}

// IsObjectStore reports whether the warehouse is in an object store (s3://).
func (w *Warehouse) IsObjectStore() bool { return w.s3 != nil }

// Contains reports whether loc lies strictly inside the warehouse root.
func (w *Warehouse) Contains(loc string) bool {
	u, err := storage.ParseLocation(loc)
	if err != nil || u.Scheme != w.root.Scheme || (u.Scheme != "file" && u.Host != w.root.Host) {
		return false
	}
	root := strings.TrimSuffix(w.root.Path, "/")
	return strings.HasPrefix(path.Clean(u.Path), root+"/")
}

// checkOwns returns ErrInvalidArgument unless the table or view id,
// whose pointer is p, belongs to this warehouse: its metadata file lies
// inside it. A table is reached only through the prefix of the warehouse
// it was made in; through another prefix every route refuses it (and
// warehouses may not nest: New refuses that).
func (w *Warehouse) checkOwns(kind Kind, id Ident, p Pointer) error {
	if !w.Contains(p.MetadataLocation) {
		return Errorf(ErrInvalidArgument, "%s %s is not in warehouse %q: use the prefix of the warehouse it was created in", kind, id, w.Name)
	}
	return nil
}

// checkTableLocation returns ErrInvalidArgument unless a table's
// location lies inside the warehouse (a table of another warehouse,
// reached through the wrong prefix, is not this warehouse's to vend or
// sign for).
func (w *Warehouse) checkTableLocation(loc string) error {
	if !w.Contains(strings.TrimSuffix(loc, "/") + "/x") {
		return Errorf(ErrInvalidArgument, "table location %q is outside warehouse %q (%s): use the prefix of the warehouse the table was created in", loc, w.Name, w.Location)
	}
	return nil
}

// checkLocation returns ErrInvalidArgument unless loc lies inside the
// warehouse; a location that does not parse gets storage.ParseLocation's reason
// (a path without a scheme is not "outside" the warehouse).
func (w *Warehouse) checkLocation(what, loc string) error {
	if _, err := storage.ParseLocation(loc); err != nil {
		return err
	}
	if !w.Contains(loc) {
		return fmt.Errorf("%w: %s %q is outside warehouse %q (%s)", ErrInvalidArgument, what, loc, w.Name, w.Location)
	}
	return nil
}

var unsafePathChars = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// pathSegment turns a namespace level or name into one safe directory name.
// It keeps at most maxSegmentBytes, so that with the uuid suffix a table
// directory stays far below file systems' 255-byte name limit; uniqueness
// comes from the suffix, not the name.
func pathSegment(s string) string {
	s = unsafePathChars.ReplaceAllString(s, "_")
	if len(s) > maxSegmentBytes {
		s = s[:maxSegmentBytes]
	}
	if strings.Trim(s, ".") == "" {
		s = strings.ReplaceAll(s, ".", "_")
	}
	return s
}

// maxSegmentBytes bounds a directory name derived from a namespace level or
// a table/view name (ASCII after pathSegment's replacement).
const maxSegmentBytes = 64

// newLocation is the default location of a new table or view:
// <base>/<name>-<uuid>, where base is the namespace's "location" property if
// set (and inside the warehouse), else <warehouse>/<level>/<level>... The
// uuid keeps a re-created or renamed-then-re-created name from sharing files.
func (w *Warehouse) newLocation(id Ident, nsProps map[string]string) string {
	base := strings.TrimSuffix(nsProps["location"], "/")
	if base == "" || !w.Contains(base+"/x") {
		segs := []string{w.Location}
		for _, l := range id.Namespace {
			segs = append(segs, pathSegment(l))
		}
		base = strings.Join(segs, "/")
	}
	return base + "/" + pathSegment(id.Name) + "-" + strings.ReplaceAll(uuid.NewString(), "-", "")
}

// resolveLocation picks the location of a new table or view: the
// requested one when it lies inside the warehouse; otherwise (none
// requested, or one outside) a new one from newLocation. Overriding a
// location outside the warehouse, rather than refusing it, is what the
// REST Compatibility Kit calls overrides-requested-location; a requested
// location that is malformed or holds '.'/'..' segments is refused with
// ErrInvalidArgument.
func (w *Warehouse) resolveLocation(requested string, id Ident, nsProps map[string]string) (string, error) {
	if requested != "" {
		if _, err := storage.ParseLocation(requested); err != nil {
			return "", err
		}
		if w.Contains(requested) {
			return strings.TrimSuffix(requested, "/"), nil
		}
	}
	return w.newLocation(id, nsProps), nil
}

// fileIO returns the iceberg-go FileIO for loc, reading manifest lists
// in the shape iceberg-go's reader accepts (specIO, manifestlist.go). An
// object store's is built once per warehouse (one client, one connection
// pool) for its bucket; a location in another bucket gets one of its own.
func (w *Warehouse) fileIO(ctx context.Context, loc string) (icebergio.IO, error) {
	fs, err := w.rawFileIO(ctx, loc)
	if err != nil {
		return nil, err
	}
	return specIO(fs), nil
}

// rawFileIO is fileIO without specIO.
func (w *Warehouse) rawFileIO(ctx context.Context, loc string) (icebergio.IO, error) {
	if w.s3 == nil {
		return icebergio.LoadFS(ctx, w.Properties, loc)
	}
	return w.s3.FileIO(ctx, loc)
}

// ClientConfig is the table `config` an engine needs to reach the
// warehouse's files, without credentials: for S3 the endpoint, region
// and addressing (both spellings of path style). Empty for file://.
func (w *Warehouse) ClientConfig() map[string]string {
	if w.s3 == nil {
		return map[string]string{}
	}
	return w.s3.ClientConfig()
}

// CanVend reports whether VendCredentials returns credentials: STS is
// enabled (a role is configured) or the operator opted in to vending the
// static keys (storage.S3.CanVend).
func (w *Warehouse) CanVend() bool { return w.s3 != nil && w.s3.CanVend() }

// VendCredentials returns credentials for the files under dirs (a
// table's directories inside the warehouse, Loaded.Directories), scoped
// to access (storage.S3.VendCredentials); nil for file:// or when there
// is nothing to vend. Errors: ErrInvalidArgument for a directory outside
// the warehouse; storage.ErrVending for an STS failure (wrapped, without
// credentials).
func (w *Warehouse) VendCredentials(ctx context.Context, dirs []string, access storage.Access) ([]spec.StorageCredential, error) {
	if w.s3 == nil {
		return nil, nil
	}
	for _, d := range dirs {
		if err := w.checkTableLocation(d); err != nil {
			return nil, err
		}
	}
	return w.s3.VendCredentials(ctx, dirs, access)
}

// CanSign reports whether the warehouse signs requests (an S3 warehouse).
func (w *Warehouse) CanSign() bool { return w.s3 != nil }

// SignS3Request signs req with SigV4 and Tarn's own credentials if it
// addresses only objects under the table's directories dirs
// (Loaded.Directories; storage.S3.Sign). Errors: ErrInvalidArgument for
// a malformed request or a table location outside this warehouse (a
// table of another warehouse); storage.ErrSignOutsideLocation (403) for
// a request outside the table's directories; ErrUnsupported for a
// warehouse that is not S3.
func (w *Warehouse) SignS3Request(ctx context.Context, dirs []string, req spec.RemoteSignRequest) (*spec.RemoteSignResult, error) {
	if w.s3 == nil {
		return nil, Errorf(ErrUnsupported, "warehouse %s is not in S3: nothing to sign", w.Name)
	}
	// A table of another warehouse (reached through the wrong prefix) is
	// refused as loadTable's vending and /credentials refuse it: its
	// objects are not this warehouse's to sign for.
	for _, d := range dirs {
		if err := w.checkTableLocation(d); err != nil {
			return nil, err
		}
	}
	return w.s3.Sign(ctx, dirs, req)
}

// FileIOFunc returns the FileIO for loc lazily, for iceberg-go's table.New.
func (w *Warehouse) FileIOFunc(loc string) func(context.Context) (icebergio.IO, error) {
	return func(ctx context.Context) (icebergio.IO, error) { return w.fileIO(ctx, loc) }
}

// WriteNew writes data to a new file at loc and returns once it is durable:
// for file:// the file and its directory are fsynced (iceberg-go's LocalFS
// does not fsync); object stores acknowledge a PUT only once it is durable.
// An existing file is an error wrapping os.ErrExist (file://: O_EXCL; S3:
// If-None-Match: *, answered 412): metadata files are never overwritten.
func (w *Warehouse) WriteNew(ctx context.Context, loc string, data []byte) error {
	if w.root.Scheme == "file" {
		u, err := storage.ParseLocation(loc)
		if err != nil {
			return err
		}
		return storage.WriteFileDurable(u.Path, data)
	}
	return w.s3.WriteNew(ctx, loc, data)
}

// Read returns the content of the file at loc. Errors wrap os.ErrNotExist
// when it is missing.
func (w *Warehouse) Read(ctx context.Context, loc string) ([]byte, error) {
	fs, err := w.fileIO(ctx, loc)
	if err != nil {
		return nil, err
	}
	f, err := fs.Open(loc)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// checkExists returns nil when the file at loc can be opened; errors wrap
// os.ErrNotExist when it is missing. It reads nothing.
func (w *Warehouse) checkExists(ctx context.Context, loc string) error {
	fs, err := w.fileIO(ctx, loc)
	if err != nil {
		return err
	}
	f, err := fs.Open(loc)
	if err != nil {
		return err
	}
	return f.Close()
}

// Remove deletes the file at loc; a missing file is not an error.
func (w *Warehouse) Remove(ctx context.Context, loc string) error {
	fs, err := w.fileIO(ctx, loc)
	if err != nil {
		return err
	}
	if err := fs.Remove(loc); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// prepareLocation creates a file:// table location's data and metadata
// directories; object stores have no directories, so it does nothing there.
func (w *Warehouse) prepareLocation(loc string) error {
	if w.root.Scheme != "file" {
		return nil
	}
	u, err := storage.ParseLocation(loc)
	if err != nil {
		return err
	}
	for _, dir := range []string{"data", "metadata"} {
		if err := storage.MkdirAllDurable(filepath.Join(u.Path, dir)); err != nil {
			return fmt.Errorf("create table directory: %w", err)
		}
	}
	return nil
}

// pruneEmptyParents removes, on a file:// warehouse, up to levels parent
// directories of loc that are empty, stopping at the first that is not
// (os.Remove refuses a non-empty directory) and never at or above the root.
func (w *Warehouse) pruneEmptyParents(loc string, levels int) {
	if w.root.Scheme != "file" {
		return
	}
	u, err := storage.ParseLocation(loc)
	if err != nil {
		return
	}
	dir := filepath.Dir(u.Path)
	for range levels {
		if !strings.HasPrefix(dir, w.root.Path+"/") || os.Remove(dir) != nil {
			return
		}
		dir = filepath.Dir(dir)
	}
}
