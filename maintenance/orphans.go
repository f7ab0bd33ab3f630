package maintenance

import (
	"context"
	"fmt"
	"sync"

	"github.com/apache/iceberg-go/table"

	"github.com/tarnhq/tarn/catalog"
)

// removeOrphans deletes, with iceberg-go's Table.DeleteOrphanFiles, the
// files under the table's location that its metadata does not reference
// (data files, manifests and manifest lists of every retained snapshot,
// branch and tag; the current and logged metadata files; statistics) and
// that are older than pol.OrphanAge (at least MinOrphanAge). Written but
// never committed files (a failed or abandoned batch or compaction) and
// unreferenced metadata files (a commit that lost its race, files past
// write.metadata.previous-versions-max) are what it finds.
//
// A file an in-process writer holds (catalog.Catalog.FileHeld: an ingest
// batch written but not committed yet) is kept whatever its age, and so
// is one the Delta log needs (Deps.Keep: the log itself, which Iceberg's
// metadata does not name, and the data files its retained versions
// name); the delete function checks it file by file, at deletion time.
func removeOrphans(ctx context.Context, t *target) (Result, error) {
	res := Result{Table: t.name(), Job: JobOrphans}
	tbl, err := t.load(ctx)
	if err != nil {
		return res, err
	}
	res.FilesBefore = liveFiles(ctx, tbl)
	res.FilesAfter = res.FilesBefore
	id := catalog.Ident{Namespace: catalog.Namespace(t.ident[:len(t.ident)-1]), Name: t.ident[len(t.ident)-1]}
	if other, shared, err := t.cat.LocationShared(ctx, tbl.Location(), id); err != nil {
		return res, err
	} else if shared {
		// Another table's files may lie in this location, and they are
		// not in this table's metadata: listing the directory would take
		// them for orphans.
		res.Skipped = "location shared with " + other.String()
		return res, nil
	}
	// The table's own IO leaves metadata files to the catalog's commits;
	// unreferenced ones are this job's to remove.
	fs, err := t.io.RemovalFS(ctx, tbl)
	if err != nil {
		return res, err
	}
	keep, err := t.kept(ctx)
	if err != nil {
		return res, err
	}
	var (
		mu      sync.Mutex
		removed = map[string]bool{}
	)
	out, err := tbl.DeleteOrphanFiles(ctx,
		table.WithFilesOlderThan(max(t.pol.OrphanAge, MinOrphanAge)),
		table.WithDeleteFunc(func(path string) error {
			if t.cat.FileHeld(path) || keep(path) {
				mu.Lock()
				res.OrphansHeld++
				mu.Unlock()
				return nil
			}
			if err := fs.Remove(path); err != nil {
				return err
			}
			mu.Lock()
			removed[path] = true
			mu.Unlock()
			return nil
		}))
	for _, f := range out.OrphanFiles {
		if removed[f.Path] {
			res.OrphansRemoved++
			res.OrphanBytes += f.SizeBytes
		}
	}
	if err != nil {
		return res, fmt.Errorf("remove orphan files of %s: %w", t.name(), err)
	}
	return res, nil
}
