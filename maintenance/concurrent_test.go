package maintenance_test

import (
	"context"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/internal/testwriter"
	"github.com/tarnhq/tarn/maintenance"
)

// interposingStore runs a function, once, ahead of the next pointer swap
// after arm: a commit that lands while another writer (compaction) has
// planned and written, just before its compare-and-swap.
type interposingStore struct {
	catalog.Store
	mu     sync.Mutex
	before func()
}

func (s *interposingStore) arm(f func()) {
	s.mu.Lock()
	s.before = f
	s.mu.Unlock()
}

func (s *interposingStore) CommitPointers(ctx context.Context, changes []catalog.PointerChange) error {
	s.mu.Lock()
	f := s.before
	s.before = nil
	s.mu.Unlock()
	if f != nil {
		f()
	}
	return s.Store.CommitPointers(ctx, changes)
}

// Regression: compaction brought deleted rows back. A client planned a
// delete on the head; compaction started; the delete's commit landed
// during the compaction with a summary of only {"operation": "delete"};
// compaction's commit lost the race, saw the same total-delete-files (none)
// on the new head, staged its rewrite there and committed it: its new
// files hold the deleted row, and the delete now names a removed file. The
// snapshots since the plan are read instead: compaction yields, and the
// next pass compacts with the delete applied.
func TestCompactionYieldsToDeleteCommittedDuringIt(t *testing.T) {
	deleteSeven := func(t *testing.T, txn *table.Transaction) {
		require.NoError(t, txn.Delete(context.Background(), iceberg.EqualTo(iceberg.Reference("distance"), int64(7)), nil))
	}
	for _, tc := range []struct {
		name   string
		mode   string // write.delete.mode
		reason string
		stage  func(t *testing.T, txn *table.Transaction)
	}{
		{"position delete", table.WriteModeMergeOnRead, "delete files added during compaction", deleteSeven},
		{"copy-on-write delete", table.WriteModeCopyOnWrite, "files changed during compaction", deleteSeven},
		{"equality delete", table.WriteModeMergeOnRead, "delete files added during compaction", func(t *testing.T, txn *table.Transaction) {
			// distance = 7, in partition origin = B (odd offsets).
			sc := arrow.NewSchema([]arrow.Field{{Name: "distance", Type: arrow.PrimitiveTypes.Int64}, {Name: "origin", Type: arrow.BinaryTypes.String}}, nil)
			b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
			defer b.Release()
			b.Field(0).(*array.Int64Builder).Append(7)
			b.Field(1).(*array.StringBuilder).Append("B")
			rec := b.NewRecordBatch()
			defer rec.Release()
			recs := func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) }
			require.NoError(t, txn.CommitEqualityDeletes(context.Background(), []int{5}, recs, nil))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var store *interposingStore
			h := newHarnessOn(t, map[string]string{table.WriteDeleteModeKey: tc.mode, maintenance.CompactMinFilesProperty: "4"},
				func(s catalog.Store) catalog.Store { store = &interposingStore{Store: s}; return store })
			h.ingest(6, 20) // 12 files, 6 per partition
			var want []int64
			for off := range int64(120) {
				if off != 7 {
					want = append(want, off)
				}
			}

			// The client plans its delete on the head, and commits it
			// once compaction has planned and written its files.
			txn := h.load().NewTransaction()
			tc.stage(t, txn)
			store.arm(func() { testwriter.Commit(t, h.ctx, h.tio, h.ident, txn) })

			r := h.run(maintenance.JobCompact)
			require.Equal(t, tc.reason, r.Skipped)
			require.Equal(t, 1, r.Attempts, "the one commit tried lost to the delete")
			head := h.load().CurrentSnapshot()
			require.NotEqual(t, table.OpReplace, head.Summary.Operation, "the delete is main's head, no replace on top")
			require.Empty(t, head.Summary.Properties)
			requireDistances(t, h, want, "the deleted row stays deleted")

			// The next pass plans on the new head: the delete is applied
			// while compacting.
			r = h.run(maintenance.JobCompact)
			require.Empty(t, r.Skipped)
			require.GreaterOrEqual(t, r.FilesRewritten, 12)
			require.EqualValues(t, 12, r.FilesBefore, "counted from the manifest list: the head's summary has no totals")
			requireDistances(t, h, want, "compacted, the deleted row stays deleted")
		})
	}
}

// A delete committed during the compaction of rows compaction did not
// rewrite (an append's to another partition, landed meanwhile) does not
// make it yield: the rewrite is staged on the new head.
func TestCompactionKeepsGoingPastDeleteInOtherPartition(t *testing.T) {
	var store *interposingStore
	h := newHarnessOn(t, map[string]string{table.WriteDeleteModeKey: table.WriteModeMergeOnRead, maintenance.CompactMinFilesProperty: "4"},
		func(s catalog.Store) catalog.Store { store = &interposingStore{Store: s}; return store })
	h.ingest(6, 20)
	store.arm(func() {
		// Another writer appends 1000..1019 with origin C, then deletes 1011.
		rec := h.records(1, 1000, 20, func(int64) string { return "C" })
		rows := array.NewTableFromRecords(rec.Schema(), []arrow.RecordBatch{rec})
		defer rows.Release()
		txn := h.load().NewTransaction()
		require.NoError(t, txn.AppendTable(h.ctx, rows, 1024, nil))
		_, err := txn.Commit(h.ctx)
		require.NoError(t, err)
		txn = h.load().NewTransaction()
		require.NoError(t, txn.Delete(h.ctx, iceberg.EqualTo(iceberg.Reference("distance"), int64(1011)), nil))
		testwriter.Commit(t, h.ctx, h.tio, h.ident, txn)
	})
	r := h.run(maintenance.JobCompact)
	require.Empty(t, r.Skipped)
	require.Equal(t, 12, r.FilesRewritten)
	require.Equal(t, 2, r.Attempts, "staged again on the new head")
	var want []int64
	for off := range int64(120) {
		want = append(want, off)
	}
	for off := range int64(20) {
		if off != 11 {
			want = append(want, 1000+off)
		}
	}
	requireDistances(t, h, want, "after compaction")
}

// Regression: compaction removed a position delete file that also
// applied to a data file it did not rewrite (one too large to compact, in
// the same partition), and the row it deleted there came back. A delete
// file is removed only when every data file it applies to is rewritten.
func TestCompactionKeepsDeletesOfFilesItDoesNotRewrite(t *testing.T) {
	h := newHarness(t, map[string]string{table.WriteDeleteModeKey: table.WriteModeMergeOnRead,
		maintenance.CompactMinFilesProperty: "4", table.WriteTargetFileSizeBytesKey: "20000"})
	h.ingest(6, 20)   // 12 small files, offsets 0..119
	h.ingest(1, 6000) // 120..6119: files of about the target size, not compacted
	// One delete, in partition B (odd offsets): a small file's row and a large one's.
	txn := h.load().NewTransaction()
	require.NoError(t, txn.Delete(h.ctx, iceberg.IsIn(iceberg.Reference("distance"), int64(7), int64(5001)), nil))
	_, err := txn.Commit(h.ctx)
	require.NoError(t, err)
	var want []int64
	for off := range int64(6120) {
		if off != 7 && off != 5001 {
			want = append(want, off)
		}
	}
	requireDistances(t, h, want, "after compaction")

	r := h.run(maintenance.JobCompact)
	require.Empty(t, r.Skipped)
	require.Equal(t, 12, r.FilesRewritten, "the small files only")
	requireDistances(t, h, want, "both deleted rows stay deleted")
}
