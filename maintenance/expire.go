package maintenance

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/apache/iceberg-go/table"
)

// expire removes snapshots with iceberg-go's Transaction.ExpireSnapshots:
// on every branch, snapshots older than pol.MaxSnapshotAge beyond the
// newest history.expire.min-snapshots-to-keep are dropped; a ref's own
// max-snapshot-age-ms, min-snapshots-to-keep and max-ref-age-ms win over
// the table's; the snapshot of every retained branch and tag is kept.
// Once the commit lands iceberg-go deletes the manifests, manifest lists
// and data files that only the expired snapshots referenced; files of any
// retained snapshot stay, and so does any file outside the table's
// recorded directories (TableIO.ConfineRemovals), and any file the Delta
// log's retained versions name (Deps.Keep).
//
// Expiry adds no snapshot, so main's head and its ingest offsets are
// untouched. Its commit asserts every ref's snapshot; an ingest commit in
// between fails it cleanly and it is planned again on the new head.
func expire(ctx context.Context, t *target) (Result, error) {
	res := Result{Table: t.name(), Job: JobExpire}
	err := t.commitRetrying(ctx, &res, "expiry", func() (bool, error) {
		res.Attempts++
		tbl, err := t.load(ctx)
		if err != nil {
			return true, err
		}
		// Expiry deletes what the expired snapshots alone reference; a
		// client may have put another table's file there (add_files),
		// and the Delta log's retained versions may still name one.
		keep, err := t.kept(ctx)
		if err != nil {
			return true, err
		}
		if tbl, err = t.io.ConfineRemovals(ctx, tbl, keep); err != nil {
			return true, err
		}
		n := liveFiles(ctx, tbl)
		res.FilesBefore, res.FilesAfter = n, n
		before := len(tbl.Metadata().Snapshots())
		txn := tbl.NewTransaction()
		if err := txn.ExpireSnapshots(table.WithOlderThan(t.maxAge(tbl))); err != nil {
			return true, fmt.Errorf("expire snapshots of %s: %w", t.name(), err)
		}
		tc, err := txn.TableCommit()
		if err != nil {
			return true, err
		}
		if len(tc.Updates) == 0 {
			res.Attempts--
			res.Skipped = "nothing to expire"
			return true, nil
		}
		next, err := txn.Commit(ctx)
		switch {
		case err == nil:
			res.SnapshotsExpired = before - len(next.Metadata().Snapshots())
			return true, nil
		case next != nil && onlyNotExist(err):
			// Committed; the files left to delete were gone already (a
			// compaction's replace snapshot lists the files it rewrote as
			// deleted, and an earlier expiry removed them): done.
			res.SnapshotsExpired = before - len(next.Metadata().Snapshots())
			return true, nil
		case next != nil:
			// Committed; a post-commit file deletion failed. What stays is
			// left to orphan removal.
			res.SnapshotsExpired = before - len(next.Metadata().Snapshots())
			return true, fmt.Errorf("expire snapshots of %s: delete expired files: %w", t.name(), err)
		}
		return false, err
	})
	return res, err
}

// capSlack widens the age maxAge derives from the snapshot cap: iceberg-go
// measures ages against its own clock, read microseconds later, in whole
// milliseconds, and without slack the cap's oldest snapshot could fall
// just past the cutoff. Commits are at least MinTargetLag (250 ms) apart
// on an owned table, so no snapshot beyond the cap falls within it; a
// clock read more than capSlack late keeps one snapshot fewer, never more.
const capSlack = 5 * time.Millisecond

// maxAge is the snapshot age the expiry of tbl applies: pol.MaxSnapshotAge,
// or, when main has more than pol.MaxSnapshots snapshots in its history,
// the (lower) age of the newest pol.MaxSnapshots-th, so that main keeps at
// most that many (history.expire.min-snapshots-to-keep still wins, and
// so do a ref's own retention settings, inside ExpireSnapshots). The cap
// is expressed as an age because that is the rule iceberg-go's
// ExpireSnapshots applies to every branch and to snapshots no ref reaches.
func (t *target) maxAge(tbl *table.Table) time.Duration {
	age := t.pol.MaxSnapshotAge
	head := tbl.CurrentSnapshot()
	if t.pol.MaxSnapshots <= 0 || head == nil {
		return age
	}
	line := table.AncestorsOf(head.SnapshotID, tbl.Metadata().SnapshotByID) // newest first
	if len(line) <= t.pol.MaxSnapshots {
		return age
	}
	oldestKept := line[t.pol.MaxSnapshots-1]
	return min(age, max(time.Since(time.UnixMilli(oldestKept.TimestampMs))+capSlack, 0))
}

// onlyNotExist reports whether err (possibly wrapping an errors.Join of
// several) is made only of fs.ErrNotExist errors: files already gone.
func onlyNotExist(err error) bool {
	switch x := err.(type) {
	case nil:
		return false
	case interface{ Unwrap() []error }:
		for _, e := range x.Unwrap() {
			if !onlyNotExist(e) {
				return false
			}
		}
		return true
	case interface{ Unwrap() error }:
		if inner := x.Unwrap(); inner != nil {
			return onlyNotExist(inner)
		}
	}
	return errors.Is(err, fs.ErrNotExist)
}
