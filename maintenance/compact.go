package maintenance

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"
)

// compact bin-packs main's small data files with iceberg-go: the plan is
// compaction.Config.PlanCompaction over main's scan tasks (per partition,
// files under 75 % of the target; a group needs pol.CompactMinFiles
// files), each group is read with its deletes applied and written in the
// table's partitioning and sort order by table.ExecuteCompactionGroup,
// and the groups are committed as one replace snapshot with
// Transaction.NewRewrite (which validates that the replaced files are
// still live), removing the position delete files that apply to no data
// file but rewritten ones (keepSharedDeletes).
//
// Compaction reads only inside the table's recorded directories
// (target.loadConfined): a data file the head names elsewhere, or one
// whose delete file lies elsewhere, is left as it is, logged and counted
// (Result.FilesOutside, tarn_maintenance_files_skipped_total); a head
// whose manifest list or manifests lie elsewhere is not compacted at all.
//
// The files are written once, on the head the plan was made on; the
// commit asserts main's head (assert-ref-snapshot-id) and carries that
// head's ingest offsets. When a commit moved main meanwhile, the
// snapshots since the plan are read (changesSince, concurrent.go): if one
// added a delete that may apply to a rewritten file or removed one,
// compaction yields (its new files are deleted) and plans again next
// pass; otherwise (an ingest append) the same rewrite is staged again on
// the new head, with the new head's offsets, up to maxCommitAttempts
// times, then it yields. It never replays a commit onto
// a newer head with an older head's offsets (see ingest/sink's doc).
func compact(ctx context.Context, t *target) (Result, error) {
	res := Result{Table: t.name(), Job: JobCompact}
	h, err := t.loadHead(ctx, JobCompact, &res)
	if h == nil || err != nil {
		return res, err
	}
	tbl, head, fs := h.tbl, h.snap, h.fs
	all, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return res, fmt.Errorf("plan scan of %s: %w", t.name(), err)
	}
	tasks, outside := tasksInside(all, h.inside)
	t.skipOutside(JobCompact, outside)
	res.FilesOutside = len(outside)
	cfg := compaction.DefaultConfig()
	cfg.TargetFileSizeBytes = t.pol.CompactTargetBytes
	cfg.MinFileSizeBytes = t.pol.CompactTargetBytes * 3 / 4
	cfg.MaxFileSizeBytes = t.pol.CompactTargetBytes * 9 / 5
	cfg.MinInputFiles = uint(t.pol.CompactMinFiles)
	plan, err := cfg.PlanCompaction(tasks)
	if err != nil {
		return res, err
	}
	if len(plan.Groups) == 0 {
		res.Skipped = "nothing to compact"
		return res, nil
	}

	// The new files are deleted on every way out but two: the commit
	// landed, or its outcome is unknown (they may be live).
	var results []table.CompactionGroupResult
	keep := false
	defer func() {
		if keep {
			return
		}
		for _, gr := range results {
			for _, df := range gr.NewDataFiles {
				_ = fs.Remove(df.FilePath())
			}
		}
	}()
	for _, g := range plan.Groups {
		gr, err := table.ExecuteCompactionGroup(ctx, tbl, table.CompactionTaskGroup{
			PartitionKey: g.PartitionKey, Tasks: g.Tasks, TotalSizeBytes: g.TotalSizeBytes,
		}, table.WithCompactionTargetFileSize(t.pol.CompactTargetBytes))
		if err != nil {
			return res, fmt.Errorf("compact %s partition %q: %w", t.name(), g.PartitionKey, err)
		}
		results = append(results, gr)
	}

	var rewritten []iceberg.DataFile
	for _, gr := range results {
		rewritten = append(rewritten, gr.OldDataFiles...)
	}
	keepSharedDeletes(results, all, rewritten)
	base := tbl
	err = t.commitRetrying(ctx, &res, "compaction", func() (bool, error) {
		if res.Attempts > 0 {
			var err error
			if base, _, err = t.loadConfined(ctx); err != nil {
				return true, err
			}
		}
		if cur := base.CurrentSnapshot(); cur == nil || cur.SnapshotID != head.SnapshotID {
			// Main moved while the files were written: what the new
			// snapshots did to the rewritten rows must not be undone.
			c, err := changesSince(ctx, base, head.SnapshotID, rewritten)
			if err != nil {
				return true, fmt.Errorf("compaction of %s: read the snapshots since the plan: %w", t.name(), err)
			}
			if c != conflictNone {
				res.Skipped = string(c)
				return true, nil
			}
		}
		res.Attempts++
		next, err := commitRewrite(ctx, base, results)
		switch {
		case err == nil:
			keep = true
			for _, gr := range results {
				res.FilesRewritten += len(gr.OldDataFiles)
				res.FilesAdded += len(gr.NewDataFiles)
				res.BytesRewritten += gr.BytesBefore
			}
			res.FilesAfter = liveFiles(ctx, next)
			return true, nil
		case errors.Is(err, errStage):
			// Not sent: the head no longer has every replaced file (someone
			// else rewrote or deleted them).
			res.Skipped = string(conflictFiles)
			return true, nil
		}
		keep = !isCommitFailed(err)
		return false, err
	})
	return res, err
}

// tasksInside returns the tasks whose data file and delete files all lie
// inside the table's directories, and the files of the others that do
// not: compaction leaves those tasks as they are (a data file with a
// delete file elsewhere is not rewritten either: reading the delete file
// would read another table's file for this one).
func tasksInside(tasks []table.FileScanTask, inside func(string) bool) (own []table.FileScanTask, outside []string) {
	for _, task := range tasks {
		var out []string
		for _, f := range slices.Concat([]iceberg.DataFile{task.File}, task.DeleteFiles, task.EqualityDeleteFiles, task.DeletionVectorFiles) {
			if !inside(f.FilePath()) {
				out = append(out, f.FilePath())
			}
		}
		if len(out) == 0 {
			own = append(own, task)
		}
		outside = append(outside, out...)
	}
	slices.Sort(outside)
	return own, slices.Compact(outside)
}

// keepSharedDeletes takes out of each result's SafePosDeletes (the
// position delete files the rewrite removes, applied to the rows it
// rewrote) every file that also applies to a data file the rewrite keeps:
// one the planner left out (too large, too few in its partition) or one
// of another group. iceberg-go's ExecuteCompactionGroup counts a delete
// file safe when one of the group's files uses it (its
// CollectSafePositionDeletes leaves the whole rewrite to the caller);
// removing it from the table brought the row it deleted in a kept file
// back. tasks are the scan tasks of the head the plan was made on: each
// lists the delete files that apply to its data file.
func keepSharedDeletes(results []table.CompactionGroupResult, tasks []table.FileScanTask, rewritten []iceberg.DataFile) {
	gone := map[string]bool{}
	for _, df := range rewritten {
		gone[df.FilePath()] = true
	}
	shared := map[string]bool{} // delete files that apply to a kept data file
	for _, task := range tasks {
		if gone[task.File.FilePath()] {
			continue
		}
		for _, d := range task.DeleteFiles {
			shared[d.FilePath()] = true
		}
	}
	for i := range results {
		results[i].SafePosDeletes = slices.DeleteFunc(slices.Clone(results[i].SafePosDeletes),
			func(d iceberg.DataFile) bool { return shared[d.FilePath()] })
	}
}

// errStage marks a rewrite iceberg-go refused to stage on a head.
var errStage = errors.New("stage rewrite")

// commitRewrite stages the rewrite of results on base, carrying base's
// offsets and asserting base's main head, and commits it.
func commitRewrite(ctx context.Context, base *table.Table, results []table.CompactionGroupResult) (*table.Table, error) {
	props, err := offsetProps(base)
	if err != nil {
		return nil, err
	}
	txn := base.NewTransaction()
	// Pinned: iceberg-go would otherwise refresh and replay the snapshot
	// onto a moved main, keeping base's (older) offsets.
	if err := txn.AssertRefSnapshotID(table.MainBranch); err != nil {
		return nil, err
	}
	rw := txn.NewRewrite(props)
	for _, gr := range results {
		rw.ApplyResult(gr)
	}
	if err := rw.Commit(ctx); err != nil {
		return nil, fmt.Errorf("%w: %w", errStage, err)
	}
	return txn.Commit(ctx)
}
