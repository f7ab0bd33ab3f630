package catalog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/avro/ocf"

	"github.com/tarnhq/tarn/storage"
)

// purgeTable deletes the files a dropped table's metadata references:
// every snapshot's manifest list, manifests and data/delete files,
// statistics files, the metadata log and the current metadata file, then
// (file:// only) the directories left empty under the table location. Only
// files inside the table's recorded directories (Pointer.Locations) are
// touched: a table may reference files Tarn or the table does not own. The pointer is already gone, so failures are
// logged, not returned (the maintenance orphan sweep catches leftovers).
//
// iceberg-go's reachability walk (Table.getReferencedFiles) is unexported,
// so this is the small equivalent over its exported snapshot and manifest API.
func (c *Catalog) purgeTable(ctx context.Context, wh *Warehouse, id Ident, p Pointer) {
	metadataLoc := p.MetadataLocation
	log := c.log.With("table", id.String(), "metadata-location", metadataLoc)
	js, err := wh.readMetadataJSON(ctx, metadataLoc)
	if err != nil {
		log.Error("purge: read metadata", "err", err)
		return
	}
	md, err := table.ParseMetadataBytes(js)
	if err != nil {
		log.Error("purge: parse metadata", "err", err)
		return
	}
	// Another table or view whose metadata lives in this table's location
	// (a registered copy of its metadata, a table created inside its
	// directory) may share its files: then nothing is deleted.
	if other, shared, err := c.sharedLocation(ctx, md.Location(), id); err != nil {
		log.Error("purge: check for tables sharing the location; not purging", "err", err)
		return
	} else if shared {
		log.Warn("purge: files may be shared with another table; dropped without deleting files", "shared_with", other.String(), "location", md.Location())
		return
	}
	files, err := referencedFiles(ctx, wh, md)
	if err != nil {
		log.Error("purge: list referenced files; deleting what was found", "err", err)
	}
	files = append(files, metadataLoc)
	removed := 0
	dirs := PointerLocations(p)
	for _, f := range files {
		// Only files inside the table's own directories (its location,
		// data and metadata paths, and those it moved away from: no other
		// table may use them): a table may also reference files it does
		// not own (added from elsewhere).
		if !wh.Contains(f) || !insideAny(f, dirs) {
			continue
		}
		if err := wh.Remove(ctx, f); err != nil {
			log.Warn("purge: remove file", "file", f, "err", err)
			continue
		}
		removed++
	}
	c.metrics.purgedFiles.Add(float64(removed))
	if u, err := storage.ParseLocation(md.Location()); err == nil && u.Scheme == "file" && wh.Contains(md.Location()) {
		removeEmptyDirs(u.Path)
	}
	log.Info("purged table", "files", removed)
}

// referencedFiles lists every file md references, metadata files last.
func referencedFiles(ctx context.Context, wh *Warehouse, md table.Metadata) ([]string, error) {
	fs, err := wh.fileIO(ctx, md.Location())
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	add := func(f string) {
		if f != "" && !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	var errs []error
	for _, snap := range md.Snapshots() {
		manifests, err := snap.Manifests(fs)
		if err != nil {
			// A manifest list iceberg-go cannot read even through the
			// warehouse's FileIO (which reads DuckDB 1.4's, specio.go): a
			// null in a required field, say. Purge needs only the paths:
			// read them with the file's own schema.
			paths, lerr := avroStrings(fs, snap.ManifestList, "manifest_path")
			if lerr != nil {
				errs = append(errs, fmt.Errorf("%w (and reading its paths: %w)", err, lerr))
			}
			for _, p := range paths {
				if seen[p] {
					continue
				}
				files, err := avroStrings(fs, p, "data_file", "file_path")
				if err != nil {
					errs = append(errs, err)
				}
				for _, f := range files {
					add(f)
				}
				add(p)
			}
		}
		for _, m := range manifests {
			if seen[m.FilePath()] {
				continue
			}
			entries, err := m.FetchEntries(fs, false)
			if err != nil {
				errs = append(errs, err)
			}
			for _, e := range entries {
				add(e.DataFile().FilePath())
			}
			add(m.FilePath())
		}
		add(snap.ManifestList)
	}
	for s := range md.Statistics() {
		add(s.StatisticsPath)
	}
	for s := range md.PartitionStatistics() {
		add(s.StatisticsPath)
	}
	for e := range md.PreviousFiles() {
		add(e.MetadataFile)
	}
	return out, errors.Join(errs...)
}

// avroStrings reads the Avro file at loc with its own schema and returns,
// for every record, the string at the path of field names (a missing or
// null value is skipped).
func avroStrings(fs icebergio.IO, loc string, path ...string) ([]string, error) {
	f, err := fs.Open(loc)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rd, err := ocf.NewReader(f)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	var out []string
	for {
		var rec map[string]any
		if err := rd.Decode(&rec); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, err
		}
		var v any = rec
		for _, name := range path {
			m, _ := v.(map[string]any)
			v = m[name]
		}
		if s, ok := v.(string); ok && s != "" {
			out = append(out, s)
		}
	}
}

// removeEmptyDirs removes dir and every directory below it that is empty
// after its children are removed; non-empty directories stay.
func removeEmptyDirs(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() {
			removeEmptyDirs(filepath.Join(dir, e.Name()))
		}
	}
	_ = os.Remove(dir) // fails, as intended, when dir is not empty
}

// locationOfMetadata guesses a table's or view's location from its
// metadata file: the parent of the metadata/ directory that holds it.
//
// It cuts the string at slashes rather than using path.Dir, which would
// clean "file:///tmp/t" into "file:/tmp/t" and then compare unequal with
// locations as the catalog stores them.
func locationOfMetadata(mloc string) string {
	dir := mloc[:max(strings.LastIndex(mloc, "/"), 0)]
	if parent, ok := strings.CutSuffix(dir, "/metadata"); ok {
		return parent
	}
	return dir
}

// sharedLocation reports another table or view (not except) whose
// metadata lies under loc (a registered copy of the table's metadata, or a
// table created inside its directory) or whose location is loc. It walks
// every namespace: a purge is rare enough to pay for that.
func (c *Catalog) sharedLocation(ctx context.Context, loc string, except Ident) (Ident, bool, error) {
	return c.locationShared(ctx, loc, except, false)
}

// LocationShared reports a table or view other than except whose files
// may lie under loc: its metadata is under loc, its location is loc, or
// loc lies inside its location. A job that deletes by directory listing
// (orphan removal) must skip a table whose location another shares: the
// other's files are not in this table's metadata. The walk loads every
// pointer of the catalog (no metadata file is read).
func (c *Catalog) LocationShared(ctx context.Context, loc string, except Ident) (Ident, bool, error) {
	return c.locationShared(ctx, loc, except, true)
}

// locationShared is sharedLocation, and with nested also a loc inside
// another table's or view's location.
func (c *Catalog) locationShared(ctx context.Context, loc string, except Ident, nested bool) (Ident, bool, error) {
	return c.findPointer(ctx, except, func(p Pointer) bool {
		other := locationOfMetadata(p.MetadataLocation)
		return storage.Within(p.MetadataLocation, loc) || storage.SameLocation(other, loc) || (nested && storage.Within(loc, other))
	})
}

// findPointer returns the first table or view other than except whose
// pointer match accepts, walking every namespace. The walk reads every
// pointer (no metadata file).
func (c *Catalog) findPointer(ctx context.Context, except Ident, match func(Pointer) bool) (Ident, bool, error) {
	var walk func(parent Namespace) (Ident, bool, error)
	walk = func(parent Namespace) (Ident, bool, error) {
		children, _, err := c.store.ListNamespaces(ctx, parent, Page{})
		if err != nil {
			return Ident{}, false, err
		}
		for _, ns := range children {
			for _, kind := range []Kind{KindTable, KindView} {
				ids, _, err := c.store.ListPointers(ctx, ns, kind, Page{})
				if err != nil {
					return Ident{}, false, err
				}
				for _, id := range ids {
					if id.Equal(except) {
						continue
					}
					p, err := c.store.LoadPointer(ctx, id, kind)
					if errors.Is(err, ErrNotFound) {
						continue
					} else if err != nil {
						return Ident{}, false, err
					}
					if match(p) {
						return id, true, nil
					}
				}
			}
			if id, found, err := walk(ns); err != nil || found {
				return id, found, err
			}
		}
		return Ident{}, false, nil
	}
	return walk(nil)
}
