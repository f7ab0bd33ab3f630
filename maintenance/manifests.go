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
	var lost func() // removes the manifests the attempt that lost merged
	err := t.commitRetrying(ctx, &res, "manifest rewrite", func() (bool, error) {
		if lost != nil {
			// The merged manifests of the attempt that lost are orphans now.
			lost()
			lost = nil
		}
		h, err := t.loadHead(ctx, JobManifests, &res)
		if h == nil || err != nil {
			// Nothing to rewrite (loadHead): rewriting manifests outside
			// the table's directories would copy another table's file
			// list and column bounds into this table's manifests.
			return true, err
		}
		ms, err := h.snap.Manifests(h.fs)
		if err != nil {
			return true, err
		}
		res.ManifestsBefore, res.ManifestsAfter = len(ms), len(ms)
		limit := t.pol.ManifestMaxCount
		if t.force {
			limit = 1
		}
		if len(ms) <= limit {
			res.Skipped = "few manifests"
			return true, nil
		}
		props, err := offsetProps(h.tbl)
		if err != nil {
			return true, err
		}
		txn := h.tbl.NewTransaction()
		if err := txn.AssertRefSnapshotID(table.MainBranch); err != nil {
			return true, err
		}
		rr, err := txn.RewriteManifests(ctx)
		if err != nil {
			return true, fmt.Errorf("rewrite manifests of %s: %w", t.name(), err)
		}
		if rr.IsNoOp() {
			res.Skipped = "manifests already optimal"
			return true, nil
		}
		tc, err := txn.TableCommit()
		if err != nil {
			return true, err
		}
		updates, err := withSummary(tc.Updates, props)
		if err != nil {
			return true, err
		}
		res.Attempts++
		md, _, err := t.io.CommitTable(ctx, t.ident, tc.Requirements, updates)
		if err != nil {
			lost = func() {
				for _, m := range rr.AddedManifests {
					_ = h.fs.Remove(m.FilePath())
				}
			}
			return false, err
		}
		txn.MarkCommitted()
		if s := md.CurrentSnapshot(); s != nil {
			if after, err := s.Manifests(h.fs); err == nil {
				res.ManifestsAfter = len(after)
			}
		}
		return true, nil
	})
	return res, err
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
