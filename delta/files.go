package delta

import (
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// The Delta table root is the Iceberg table's data directory (iceberg-go's
// location provider: write.data.path, else <location>/data), its log in
// <root>/_delta_log, and the add actions name the data files relative to
// it ("00000-0-....parquet", "k=v/....parquet"; a file outside the data
// directory, say a client's add_files, by its absolute URI).
//
// Why the data directory, found by reading Tarn's output with each
// reader: delta-rs's pyarrow path (DeltaTable.to_pyarrow_table,
// to_pyarrow_dataset, to_pandas) opens every add path through a file
// system rooted at the Delta root, so it reads only relative paths
// without "..": "../data/x" becomes "<root>/%2E%2E/data/x" and an
// absolute URI is joined onto the root (delta-io/delta-rs#865). DuckDB's
// delta extension (1.4) likewise joins a file:// URI onto the root.
// Relative paths under the root are read by all of them and by Spark.
// Rooting the Delta table at the table location instead would put
// Iceberg's metadata/ under it, which a Delta VACUUM deletes as
// unreferenced; under the data directory a VACUUM can reach data files
// only (see docs/delta.md "File safety").
//
// A log that was started elsewhere (PropLocation names a root inside
// the table location, like <location>/_delta of earlier releases) stays
// where it is: its readers are configured with that root, and paths
// already written keep resolving against it (icebergPath).
func deltaRoot(tbl *table.Table) string {
	loc := strings.TrimSuffix(tbl.Location(), "/")
	props := tbl.Properties()
	if r := strings.TrimSuffix(props[PropLocation], "/"); r != "" && strings.HasPrefix(r, loc+"/") {
		return r
	}
	if d := strings.TrimSuffix(props[table.WriteDataPathKey], "/"); d != "" {
		return d
	}
	return loc + "/data"
}

// deltaPath is the add/remove path of an Iceberg data file: relative to
// the Delta root when the file lies under it, else the file's absolute
// URI; either URI-escaped segment by segment (PROTOCOL.md "Add File and
// Remove File": the path "is a URI ..., which needs to be decoded to get
// the data file path").
func deltaPath(root, file string) string {
	if rel, ok := strings.CutPrefix(file, root+"/"); ok {
		return escapePath(rel)
	}
	u, err := url.Parse(file)
	if err != nil || u.Scheme == "" {
		return "file://" + escapePath(file)
	}
	return u.Scheme + "://" + u.Host + escapePath(u.Path)
}

// icebergPath is deltaPath's inverse: the data file a path names, as
// the Iceberg manifests spell it. A relative path (also another
// writer's, or "../data/x" of a log rooted at <location>/_delta) is
// resolved against root as a URI reference (RFC 3986 section 5.2).
func icebergPath(root, p string) string {
	ref, err := url.Parse(p)
	if err != nil {
		return root + "/" + path.Clean(unescapePath(p))
	}
	if ref.Scheme != "" {
		return ref.Scheme + "://" + ref.Host + unescapePath(ref.EscapedPath())
	}
	base, err := url.Parse(root + "/")
	if err != nil {
		return root + "/" + path.Clean(unescapePath(p))
	}
	u := base.ResolveReference(ref)
	if u.Scheme == "" {
		return unescapePath(u.EscapedPath())
	}
	return u.Scheme + "://" + u.Host + unescapePath(u.EscapedPath())
}

func escapePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

func unescapePath(p string) string {
	if s, err := url.PathUnescape(p); err == nil {
		return s
	}
	return p
}

// liveFile is a data file of an Iceberg snapshot.
type liveFile struct {
	df iceberg.DataFile
	// addedBy is the snapshot that added the file.
	addedBy int64
}

// manifestCache keeps the live entries of the manifests last read, by
// manifest path: manifests are immutable, so a new snapshot costs only
// the reads of the manifests it added.
type manifestCache map[string][]liveFile

// snapshotFiles returns the live data files of snap by path (none for a
// nil snapshot) and the number of live delete files; it reads the
// manifests cache lacks and returns the cache for snap's manifests.
func snapshotFiles(fsys icebergio.IO, snap *table.Snapshot, cache manifestCache) (map[string]liveFile, int, manifestCache, error) {
	files := map[string]liveFile{}
	next := manifestCache{}
	if snap == nil {
		return files, 0, next, nil
	}
	mfs, err := snap.Manifests(fsys)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("read the manifest list of snapshot %d: %w", snap.SnapshotID, err)
	}
	deletes := 0
	for _, mf := range mfs {
		if mf.ManifestContent() == iceberg.ManifestContentDeletes {
			if mf.AddedDataFiles()+mf.ExistingDataFiles() > 0 {
				deletes += int(mf.AddedDataFiles() + mf.ExistingDataFiles())
				continue
			}
			entries, err := mf.FetchEntries(fsys, true)
			if err != nil {
				return nil, 0, nil, fmt.Errorf("read manifest %s: %w", mf.FilePath(), err)
			}
			deletes += len(entries)
			continue
		}
		live, ok := cache[mf.FilePath()]
		if !ok {
			entries, err := mf.FetchEntries(fsys, true)
			if err != nil {
				return nil, 0, nil, fmt.Errorf("read manifest %s: %w", mf.FilePath(), err)
			}
			for _, e := range entries {
				if e.Status() == iceberg.EntryStatusDELETED || e.DataFile().ContentType() != iceberg.EntryContentData {
					continue
				}
				live = append(live, liveFile{df: e.DataFile(), addedBy: e.SnapshotID()})
			}
		}
		next[mf.FilePath()] = live
		for _, f := range live {
			files[f.df.FilePath()] = f
		}
	}
	return files, deletes, next, nil
}

// ancestorsSince returns main's snapshots newer than sequence number seq
// (head first): the snapshots one Delta version coalesces.
func ancestorsSince(md table.Metadata, head *table.Snapshot, seq int64) []*table.Snapshot {
	var out []*table.Snapshot
	for s := head; s != nil && s.SequenceNumber > seq; {
		out = append(out, s)
		if s.ParentSnapshotID == nil {
			break
		}
		s = md.SnapshotByID(*s.ParentSnapshotID)
	}
	return out
}
