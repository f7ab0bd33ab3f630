package maintenance

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/tarnhq/tarn/catalog"
)

// rewriteManifests merges main's small data manifests with iceberg-go's
// Transaction.RewriteManifests (bin-packed to
// commit.manifest.target-size-bytes) when main's head has more than
// pol.ManifestMaxCount manifests (any number when forced).
//
// iceberg-go's RewriteManifests takes no snapshot summary properties, so
// its replace snapshot would lack the ingest offsets every Tarn snapshot
// must carry. The smallest piece beside it: stage the rewrite, take the
// staged commit (Transaction.TableCommit), add the head's offsets to the
// new snapshot's summary (withSummary) and commit that through the
// catalog, conditional on main's head; on a conflict with ingest, stage
// again on the new head. A head with its manifest list or a manifest
// outside the table's recorded directories is skipped (see compact).
func rewriteManifests(ctx context.Context, t *target) (Result, error) {
	res := Result{Table: t.name(), Job: JobManifests}
	for {
		tbl, inside, err := t.loadConfined(ctx)
		if err != nil {
			return res, err
		}
		res.FilesBefore = liveFiles(ctx, tbl)
		res.FilesAfter = res.FilesBefore
		head := tbl.CurrentSnapshot()
		if head == nil {
			res.Skipped = "no snapshot"
			return res, nil
		}
		fs, err := tbl.FS(ctx)
		if err != nil {
			return res, err
		}
		if out, err := outsideManifests(head, fs, inside); err != nil {
			return res, err
		} else if len(out) > 0 {
			// Rewriting them would copy another table's file list and
			// column bounds into this table's manifests.
			t.skipOutside(JobManifests, out)
			res.FilesOutside = len(out)
			res.Skipped = "manifests outside the table's directories"
			return res, nil
		}
		ms, err := head.Manifests(fs)
		if err != nil {
			return res, err
		}
		res.ManifestsBefore, res.ManifestsAfter = len(ms), len(ms)
		limit := t.pol.ManifestMaxCount
		if t.force {
			limit = 1
		}
		if len(ms) <= limit {
			res.Skipped = "few manifests"
			return res, nil
		}
		props, err := offsetProps(tbl)
		if err != nil {
			return res, err
		}
		txn := tbl.NewTransaction()
		if err := txn.AssertRefSnapshotID(table.MainBranch); err != nil {
			return res, err
		}
		rr, err := txn.RewriteManifests(ctx)
		if err != nil {
			return res, fmt.Errorf("rewrite manifests of %s: %w", t.name(), err)
		}
		if rr.IsNoOp() {
			res.Skipped = "manifests already optimal"
			return res, nil
		}
		tc, err := txn.TableCommit()
		if err != nil {
			return res, err
		}
		updates, err := withSummary(tc.Updates, props)
		if err != nil {
			return res, err
		}
		res.Attempts++
		md, _, err := t.io.CommitTable(ctx, t.ident, tc.Requirements, updates)
		switch {
		case err == nil:
			txn.MarkCommitted()
			if s := md.CurrentSnapshot(); s != nil {
				if after, err := s.Manifests(fs); err == nil {
					res.ManifestsAfter = len(after)
				}
			}
			return res, nil
		case !isCommitFailed(err):
			return res, fmt.Errorf("commit manifest rewrite of %s: %w", t.name(), err)
		case res.Attempts >= maxCommitAttempts:
			res.Skipped = "yielded to concurrent commits"
			return res, nil
		}
		// The merged manifests of this attempt are orphans now.
		for _, m := range rr.AddedManifests {
			_ = fs.Remove(m.FilePath())
		}
		if err := backoff(ctx, res.Attempts); err != nil {
			return res, err
		}
	}
}

// withSummary returns updates with props added to the summary of every
// add-snapshot update. The snapshot is read with catalog.AddedSnapshot
// (iceberg-go's add-snapshot update type is unexported) and staged again
// with table.NewAddSnapshotUpdate.
func withSummary(updates []table.Update, props iceberg.Properties) ([]table.Update, error) {
	out := make([]table.Update, len(updates))
	for i, u := range updates {
		out[i] = u
		if u.Action() != table.UpdateAddSnapshot || len(props) == 0 {
			continue
		}
		snap, err := catalog.AddedSnapshot(u)
		if err != nil {
			return nil, fmt.Errorf("read staged snapshot: %w", err)
		}
		if snap.Summary == nil {
			snap.Summary = &table.Summary{Operation: table.OpReplace}
		}
		if snap.Summary.Properties == nil {
			snap.Summary.Properties = iceberg.Properties{}
		}
		for k, val := range props {
			snap.Summary.Properties[k] = val
		}
		out[i] = table.NewAddSnapshotUpdate(snap)
	}
	return out, nil
}
