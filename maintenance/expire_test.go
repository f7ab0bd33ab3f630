package maintenance_test

import (
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/ingest/sink"
	"github.com/tarnhq/tarn/maintenance"
)

// Expiry on a table with a tag and a branch: every retained snapshot
// still scans completely, and the files only expired snapshots
// referenced (the small files compaction replaced) are gone from storage.
func TestExpireKeepsRefsAndDeletesExpiredFiles(t *testing.T) {
	// Snapshots older than 1 s beyond the newest of each branch expire.
	h := newHarness(t, map[string]string{table.MaxSnapshotAgeMsKey: "1000", table.MinSnapshotsToKeepKey: "1"})
	h.ingest(3, 10)
	tagged := h.load().CurrentSnapshot()
	taggedRows := h.next
	h.ingest(3, 10)
	branched := h.load().CurrentSnapshot()
	branchRows := h.next
	_, _, err := h.tio.CommitTable(h.ctx, h.ident, nil, []table.Update{
		table.NewSetSnapshotRefUpdate("audit", tagged.SnapshotID, table.TagRef, 0, 0, 0),
		table.NewSetSnapshotRefUpdate("dev", branched.SnapshotID, table.BranchRef, 0, 0, 0),
	})
	require.NoError(t, err)
	h.ingest(6, 10)
	// Compaction replaces the 24 small files; the replaced ones stay
	// referenced by older snapshots until those expire.
	require.Empty(t, h.run(maintenance.JobCompact).Skipped)
	tbl := h.load()
	taggedFiles, branchFiles := dataFiles(t, tbl, tagged), dataFiles(t, tbl, branched)
	var replaced []string
	for _, s := range tbl.Metadata().Snapshots() {
		if s.ParentSnapshotID != nil && *s.ParentSnapshotID == tbl.CurrentSnapshot().SnapshotID {
			continue
		}
		if p := tbl.CurrentSnapshot().ParentSnapshotID; p != nil && s.SnapshotID == *p {
			replaced = dataFiles(t, tbl, &s)
		}
	}
	require.Len(t, replaced, 24)
	snapsBefore := len(tbl.Metadata().Snapshots())
	offsets := h.headOffsets()

	time.Sleep(1100 * time.Millisecond)
	r := h.run(maintenance.JobExpire)
	require.Empty(t, r.Skipped)
	tbl = h.load()
	kept := tbl.Metadata().Snapshots()
	require.Equal(t, snapsBefore-len(kept), r.SnapshotsExpired)
	// main's head, the tag's and the branch's snapshot remain.
	require.Len(t, kept, 3, "snapshots kept: %v", kept)
	require.Equal(t, offsets, h.headOffsets(), "expiry leaves main's head and its offsets")

	h.check(tbl, nil, h.next)
	h.check(tbl, tagged, taggedRows)
	h.check(tbl, branched, branchRows)
	for _, f := range append(taggedFiles, branchFiles...) {
		require.True(t, exists(f), "file of a retained ref %s", f)
	}
	gone := 0
	for _, f := range replaced {
		if !exists(f) {
			gone++
		}
	}
	// The replaced files the branch still references stay; the 12 the
	// last six ingest commits wrote are referenced by expired snapshots only.
	require.Equal(t, 12, gone, "files of expired snapshots deleted")

	// The next pass has nothing to expire; ingest continues from the head.
	require.Equal(t, "nothing to expire", h.run(maintenance.JobExpire).Skipped)
	o, found, err := sink.ReadOffsets(tbl.Metadata())
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, h.next, o.Next[0])
}
