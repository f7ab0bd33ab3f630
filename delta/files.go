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
// the Iceberg table's data files relative to the root ("../data/...";
// PROTOCOL.md "Add File and Remove File": a path is a URI relative to
// the table root, or absolute), so a Delta VACUUM, which only ever
// deletes unreferenced files it lists under the table root, finds
// nothing of Iceberg's to delete: neither metadata nor data files — not
// even those a Delta version does not name yet (a commit not published
// yet, an older Iceberg snapshot's files, a batch being written).
//
// Relative rather than absolute paths because readers handle them
// better: DuckDB's delta extension (1.4) and delta-rs's pyarrow dataset
// join an absolute add path onto the root (delta-io/delta-rs#865), while
// delta-rs's own scan and DuckDB resolve "../". A file outside the table
// location (a client's add_files) gets its absolute URI.
//
// The leading underscore hides the directory from Iceberg's own
// orphan-file scans (Java's DeleteOrphanFiles skips hidden paths);
// Tarn's orphan removal keeps it explicitly (KeepFiles).
const RootDir = "_delta"

// tableRoot is the Delta table root of an Iceberg table location.
func tableRoot(location string) string { return strings.TrimSuffix(location, "/") + "/" + RootDir }

// deltaPath is the add/remove path of an Iceberg data file: relative to
// the Delta root when the file lies in the table location, else the
// file's absolute URI; either URI-escaped segment by segment
// (PROTOCOL.md: the path "is a URI ..., which needs to be decoded to get
// the data file path").
func deltaPath(location, file string) string {
	loc := strings.TrimSuffix(location, "/") + "/"
	if rel, ok := strings.CutPrefix(file, loc); ok {
		return "../" + escapePath(rel)
	}
	u, err := url.Parse(file)
	if err != nil || u.Scheme == "" {
		return "file://" + escapePath(file)
	}
	return u.Scheme + "://" + u.Host + escapePath(u.Path)
}

// icebergPath is deltaPath's inverse: the data file a path names, as
// the Iceberg manifests spell it. Another relative path (another
// writer's) is resolved against the Delta root of location.
func icebergPath(location, p string) string {
	loc := strings.TrimSuffix(location, "/")
	if rel, ok := strings.CutPrefix(p, "../"); ok {
		return loc + "/" + unescapePath(rel)
	}
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
