package maintenance

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"
)

// tagTimeLayout is the UTC time in a tag's name: sortable, and free of
// the ':' that SQL identifiers and URLs would have to quote.
const tagTimeLayout = "20060102T150405Z"

// TagName is the name the tag job gives the snapshot committed at ms
// (Unix milliseconds): TagPrefix and its UTC time to the second, e.g.
// tarn-20261201T201500Z.
func TagName(ms int64) string {
	return TagPrefix + time.UnixMilli(ms).UTC().Format(tagTimeLayout)
}

// tagHead tags main's head so that time travel reaches back past the
// dense history expiry keeps (Policy.MaxSnapshots, MaxSnapshotAge): when
// the newest tag named TagPrefix… points at a snapshot at least
// pol.TagInterval older than the head (or there is none), the head gets
// the tag TagName(its timestamp), with max-ref-age-ms pol.TagMaxAge, so
// that expiry (iceberg-go's ExpireSnapshots, which keeps every retained
// ref's snapshot) drops the tag, and then its snapshot and the files only
// it references, once the snapshot is older than that.
//
// Timing is read from the snapshots' own timestamps, not a clock kept in
// memory: after a restart, or on another replica, the next tag is due at
// the same time. A forced run (tarn maintenance run --job tag) tags the
// head now unless it is tagged already. Tags of other names (a user's)
// are neither counted nor touched.
//
// The tag is committed asserting main's head and the tag's absence, so
// an ingest commit in between fails it cleanly and it is planned again.
func tagHead(ctx context.Context, t *target) (Result, error) {
	res := Result{Table: t.name(), Job: JobTag}
	if t.pol.TagInterval <= 0 {
		res.Skipped = "tags off"
		return res, nil
	}
	err := t.commitRetrying(ctx, &res, "tag", func() (bool, error) {
		tbl, err := t.load(ctx)
		if err != nil {
			return true, err
		}
		n := liveFiles(ctx, tbl)
		res.FilesBefore, res.FilesAfter = n, n
		md := tbl.Metadata()
		head := tbl.CurrentSnapshot()
		if head == nil {
			res.Skipped = "no snapshot"
			return true, nil
		}
		newest := int64(-1)
		for name, ref := range md.Refs() {
			if ref.SnapshotRefType != table.TagRef || !strings.HasPrefix(name, TagPrefix) {
				continue
			}
			if ref.SnapshotID == head.SnapshotID {
				res.Skipped = "head tagged already"
				return true, nil
			}
			if s := md.SnapshotByID(ref.SnapshotID); s != nil {
				newest = max(newest, s.TimestampMs)
			}
		}
		if !t.force && newest >= 0 && head.TimestampMs-newest < t.pol.TagInterval.Milliseconds() {
			res.Skipped = "not due"
			return true, nil
		}
		name := TagName(head.TimestampMs)
		if _, taken := refNamed(md, name); taken {
			// Another head committed in the same second was tagged.
			res.Skipped = "tag name taken"
			return true, nil
		}
		res.Attempts++
		main := head.SnapshotID
		_, _, err = t.io.CommitTable(ctx, t.ident,
			[]table.Requirement{table.AssertRefSnapshotID(table.MainBranch, &main), table.AssertRefSnapshotID(name, nil)},
			[]table.Update{table.NewSetSnapshotRefUpdate(name, main, table.TagRef, t.pol.TagMaxAge.Milliseconds(), 0, 0)})
		if err == nil {
			res.Tag = name
			return true, nil
		}
		if isCommitFailed(err) {
			return false, err
		}
		return true, fmt.Errorf("tag %s of %s: %w", name, t.name(), err)
	})
	return res, err
}

// refNamed returns md's ref name, and whether there is one.
func refNamed(md table.Metadata, name string) (table.SnapshotRef, bool) {
	for n, ref := range md.Refs() {
		if n == name {
			return ref, true
		}
	}
	return table.SnapshotRef{}, false
}
