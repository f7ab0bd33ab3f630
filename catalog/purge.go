package catalog

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/apache/iceberg-go/table"
)

// purgeTable deletes the files a dropped table's metadata references:
// every snapshot's manifest list, manifests and data/delete files,
// statistics files, the metadata log and the current metadata file, then
// (file:// only) the directories left empty under the table location. Files
// outside the warehouse are never touched: a registered table may reference
// files Tarn does not own. The pointer is already gone, so failures are
// logged, not returned (the maintenance orphan sweep catches leftovers).
//
// iceberg-go's reachability walk (Table.getReferencedFiles) is unexported,
// so this is the small equivalent over its exported snapshot and manifest API.
func (c *Catalog) purgeTable(ctx context.Context, wh *Warehouse, id Ident, metadataLoc string) {
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
	files, err := referencedFiles(ctx, wh, md)
	if err != nil {
		log.Error("purge: list referenced files; deleting what was found", "err", err)
	}
	files = append(files, metadataLoc)
	removed := 0
	for _, f := range files {
		if !wh.Contains(f) {
			continue
		}
		if err := wh.Remove(ctx, f); err != nil {
			log.Warn("purge: remove file", "file", f, "err", err)
			continue
		}
		removed++
	}
	purgedFilesTotal.Add(float64(removed))
	if u, err := parseLocation(md.Location()); err == nil && u.Scheme == "file" && wh.Contains(md.Location()) {
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
			errs = append(errs, err)
			continue
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
