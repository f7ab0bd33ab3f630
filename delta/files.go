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

// RootDir is the Delta table's directory inside the Iceberg table's
// location: <location>/_delta, its log in <location>/_delta/_delta_log.
//
// The Delta table root holds nothing but the log. Its add actions name
// the Iceberg table's data files by absolute URI (PROTOCOL.md "Add File
// and Remove File": path is "a relative path ... or an absolute path to
// a file"), so a Delta VACUUM, which only ever deletes unreferenced files
// it lists under the table root, finds nothing of Iceberg's to delete:
// neither metadata nor data files — not even those a Delta version does
// not name yet (a commit not published yet, an older Iceberg snapshot's
// files, a batch being written). Relative paths that climb out of the
// root ("../data/...") would say the same, but readers resolve them
// differently (delta-rs's pyarrow dataset does not normalise "..").
// The leading underscore hides the directory from Iceberg's own
// orphan-file scans (Java's DeleteOrphanFiles skips hidden paths);
// Tarn's orphan removal keeps it explicitly (KeepFiles).
const RootDir = "_delta"

// tableRoot is the Delta table root of an Iceberg table location.
func tableRoot(location string) string { return strings.TrimSuffix(location, "/") + "/" + RootDir }

// deltaPath is the add/remove path of an Iceberg data file: its absolute
// URI, each path segment URI-escaped (PROTOCOL.md: the path "is a URI
// ..., which needs to be decoded to get the data file path"). A path
// without a scheme is taken as a local file (file://).
func deltaPath(file string) string {
	u, err := url.Parse(file)
	if err != nil || u.Scheme == "" {
		return "file://" + escapePath(file)
	}
	return u.Scheme + "://" + u.Host + escapePath(u.Path)
}

// icebergPath is deltaPath's inverse: the data file a path names, as
// the Iceberg manifests spell it. A relative path (another writer's) is
// resolved against the Delta root of location.
func icebergPath(location, p string) string {
	if u, err := url.Parse(p); err == nil && u.Scheme != "" {
		return u.Scheme + "://" + u.Host + unescapePath(u.EscapedPath())
	}
	return tableRoot(location) + "/" + path.Clean(unescapePath(p))
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
