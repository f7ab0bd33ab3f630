package sink_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/sink"
	"github.com/tarnhq/tarn/internal/testwriter"
	"github.com/tarnhq/tarn/offsets"
)

// TestFirstCommitRecordsOffsets: an empty table has no offsets; the first
// commit writes the rows and one snapshot whose summary holds the next
// offset of each partition and the added-records count.
func TestFirstCommitRecordsOffsets(t *testing.T) {
	h := newHarness(t, nil)
	s := h.open(nil)

	head, err := s.Head(h.ctx)
	require.NoError(t, err)
	assert.Equal(t, offsets.Offsets{Cluster: testCluster, Topic: testTopic, Next: map[int32]int64{}}, head)

	require.NoError(t, s.Commit(h.ctx, h.plan(head, map[int32]int{0: 3, 1: 2}, 100)))

	snaps := h.load().Metadata().Snapshots()
	require.Len(t, snaps, 1)
	sum := snaps[0].Summary
	assert.Equal(t, table.OpAppend, sum.Operation)
	assert.Equal(t, "5", sum.Properties["added-records"])
	assert.JSONEq(t, `{"cluster":"cluster-1","topic":"orders","offsets":{"0":3,"1":2}}`, sum.Properties[offsets.Property])

	head, err = s.Head(h.ctx)
	require.NoError(t, err)
	assert.Equal(t, map[int32]int64{0: 3, 1: 2}, head.Next)
	assert.Equal(t, expect(head.Next), h.scan())
}

// TestCumulativeOffsetsKeepIdlePartitions: every snapshot carries every
// partition's offset, including partitions the batch did not touch, so
// the head snapshot alone (no lineage walk) is the whole position.
func TestCumulativeOffsetsKeepIdlePartitions(t *testing.T) {
	h := newHarness(t, nil)
	s := h.open(nil)
	want := map[int32]int64{}
	for i := range 12 {
		head, err := s.Head(h.ctx)
		require.NoError(t, err)
		// Partition i%4 moves (by 1..3 records); on odd rounds partition 7
		// also moves, on even ones it idles.
		counts := map[int32]int{int32(i % 4): 1 + i%3}
		if i%2 == 1 {
			counts[7] = 2
		}
		require.NoError(t, s.Commit(h.ctx, h.plan(head, counts, 2)))
		for p, n := range counts {
			want[p] += int64(n)
		}

		own, err := offsets.Parse(h.headProperty())
		require.NoError(t, err)
		require.Equal(t, want, own.Next, "round %d", i)
	}
	assert.Len(t, h.load().Metadata().Snapshots(), 12)
	assert.Equal(t, expect(want), h.scan())
}

// TestRebaseOverConcurrentNonIngestCommit: a commit that does not move the
// batch's partitions lands between plan and commit. The batch still
// applies: it is committed on the new head with the same data files (not
// rewritten), every row exactly once, offsets cumulative.
func TestRebaseOverConcurrentNonIngestCommit(t *testing.T) {
	cases := []struct {
		name string
		// interfere commits to the table through its own load.
		interfere func(h *harness)
		// rows the interfering commit adds, and those it deletes.
		extraRows int
		deleted   []key
		// attempts is how many commits the sink sends for the batch.
		attempts int
	}{
		{
			// Main does not move: the catalog re-stages our commit over
			// the new metadata under its compare-and-swap; no rebase.
			name: "property change",
			interfere: func(h *harness) {
				txn := h.load().NewTransaction()
				require.NoError(t, txn.SetProperties(iceberg.Properties{"owner": "ops"}))
				_, err := txn.Commit(h.ctx)
				require.NoError(t, err)
			},
			attempts: 1,
		},
		{
			// A maintenance job carries the head's offsets into its
			// snapshot, as DESIGN.md requires of every Tarn snapshot.
			name: "maintenance snapshot carrying the offsets",
			interfere: func(h *harness) {
				tbl := h.load()
				o, found, err := offsets.Read(tbl.Metadata())
				require.NoError(t, err)
				require.True(t, found)
				txn := tbl.NewTransaction()
				require.NoError(t, txn.AddFiles(h.ctx, nil, o.Properties(), true))
				_, err = txn.Commit(h.ctx)
				require.NoError(t, err)
			},
			attempts: 2,
		},
		{
			// A snapshot without offsets (an external writer's on a
			// released table) consumed nothing from Kafka: the head's
			// offsets are its parent's.
			name: "external append without offsets",
			interfere: func(h *harness) {
				s, err := sink.Open(h.ctx, h.tio, h.config())
				require.NoError(t, err)
				w, err := s.Write(h.ctx, h.plan(offsets.Offsets{}, map[int32]int{9: 4}, 10))
				require.NoError(t, err)
				txn := h.load().NewTransaction()
				require.NoError(t, txn.AddDataFiles(h.ctx, w.Files, nil))
				_, err = txn.Commit(h.ctx)
				require.NoError(t, err)
			},
			extraRows: 4,
			attempts:  2,
		},
		{
			// Another writer's delete (of p0 offset 2), its summary only
			// {"operation": "delete"} as DuckDB 1.4 writes it, and in
			// both of the spec's ways: a position delete file, and a
			// rewrite of the data file without the row. An append needs
			// no more: its rows are not the deleted ones, and the delete
			// stays.
			name:      "external position delete with a summary of only its operation",
			interfere: externalDelete(table.WriteModeMergeOnRead),
			deleted:   []key{{0, 2}},
			attempts:  2,
		},
		{
			name:      "external copy-on-write delete with a summary of only its operation",
			interfere: externalDelete(table.WriteModeCopyOnWrite),
			deleted:   []key{{0, 2}},
			attempts:  2,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			spy := &spyCatalog{CatalogIO: h.tio}
			s := h.open(spy)
			head, err := s.Head(h.ctx)
			require.NoError(t, err)
			require.NoError(t, s.Commit(h.ctx, h.plan(head, map[int32]int{0: 5, 1: 5}, 4)))

			head, err = s.Head(h.ctx)
			require.NoError(t, err)
			w, err := s.Write(h.ctx, h.plan(head, map[int32]int{1: 3}, 4))
			require.NoError(t, err)
			tc.interfere(h)
			spy.errs = nil
			require.NoError(t, s.CommitWritten(h.ctx, w))
			require.Len(t, spy.errs, tc.attempts)
			if tc.attempts > 1 {
				require.ErrorIs(t, spy.errs[0], catalog.ErrCommitFailed, "the first attempt conflicts")
			}

			head, err = s.Head(h.ctx)
			require.NoError(t, err)
			assert.Equal(t, map[int32]int64{0: 5, 1: 8}, head.Next)
			assert.JSONEq(t, `{"cluster":"cluster-1","topic":"orders","offsets":{"0":5,"1":8}}`, h.headProperty())
			got := h.scan()
			assert.Len(t, got, 13+tc.extraRows-len(tc.deleted))
			tarn := slicesDelete(got, func(k key) bool { return k.P == 9 })
			assert.Equal(t, slicesDelete(expect(head.Next), func(k key) bool { return slices.Contains(tc.deleted, k) }), tarn)

			// The committed snapshot added exactly the files Write wrote.
			snap := h.load().CurrentSnapshot()
			assert.Equal(t, "3", snap.Summary.Properties["added-records"])
			assert.Equal(t, paths(w.Files), addedPaths(t, h, snap))
		})
	}
}

// externalDelete deletes the row of partition 0 offset 2 in write
// mode mode (write.delete.mode), committed with a summary of only its
// operation.
func externalDelete(mode string) func(h *harness) {
	return func(h *harness) {
		txn := h.load().NewTransaction()
		require.NoError(h.t, txn.SetProperties(iceberg.Properties{table.WriteDeleteModeKey: mode}))
		require.NoError(h.t, txn.Delete(h.ctx, iceberg.EqualTo(iceberg.Reference("v"), "p0-o2"), nil))
		testwriter.Commit(h.t, h.ctx, h.tio, h.ident, txn)
	}
}

// TestConcurrentIngestCommitIsStale: two pipelines (a zombie and its
// successor) plan the same partition from the same head. The first commit
// wins; the second gets StaleBatchError with the winner's offsets, adds no
// rows, and its data files are deleted.
func TestConcurrentIngestCommitIsStale(t *testing.T) {
	h := newHarness(t, nil)
	a, b := h.open(nil), h.open(nil)
	head, err := a.Head(h.ctx)
	require.NoError(t, err)
	require.NoError(t, a.Commit(h.ctx, h.plan(head, map[int32]int{0: 2, 1: 2}, 10)))

	headA, err := a.Head(h.ctx)
	require.NoError(t, err)
	headB, err := b.Head(h.ctx)
	require.NoError(t, err)
	wa, err := a.Write(h.ctx, h.plan(headA, map[int32]int{0: 3}, 10))
	require.NoError(t, err)
	// b read partition 0 a little further, and partition 1 too.
	wb, err := b.Write(h.ctx, h.plan(headB, map[int32]int{0: 4, 1: 1}, 10))
	require.NoError(t, err)

	require.NoError(t, a.CommitWritten(h.ctx, wa))
	err = b.CommitWritten(h.ctx, wb)
	var stale *sink.StaleBatchError
	require.ErrorAs(t, err, &stale)
	require.ErrorIs(t, err, sink.ErrStaleBatch)
	assert.Equal(t, int32(0), stale.Partition)
	assert.Equal(t, int64(2), stale.Start)
	assert.Equal(t, int64(5), stale.Next)
	assert.Equal(t, map[int32]int64{0: 5, 1: 2}, stale.Head.Next)

	assert.Equal(t, expect(map[int32]int64{0: 5, 1: 2}), h.scan())
	for _, f := range wb.Files {
		_, err := os.Stat(localPath(f.FilePath()))
		assert.True(t, os.IsNotExist(err), "dropped file %s still exists", f.FilePath())
	}
	require.ErrorIs(t, b.CommitWritten(h.ctx, wb), sink.ErrWrittenDone)

	// b re-seeks from the head and continues without loss or duplicate.
	require.NoError(t, b.Commit(h.ctx, h.plan(stale.Head, map[int32]int{0: 1, 1: 1}, 10)))
	assert.Equal(t, expect(map[int32]int64{0: 6, 1: 3}), h.scan())
}

// TestUnknownOutcomeResolvedByHead is the crash-safety argument as a test.
// A commit whose reply is lost (or a process killed around the commit)
// leaves the caller not knowing whether the batch landed. The table knows:
// Head is at the batch's Ends if it did, at its Starts if not. Re-seeking
// from Head therefore neither loses nor duplicates a record.
func TestUnknownOutcomeResolvedByHead(t *testing.T) {
	t.Run("commit landed, reply lost", func(t *testing.T) {
		h := newHarness(t, nil)
		spy := &spyCatalog{CatalogIO: h.tio}
		s := h.open(spy)
		head, err := s.Head(h.ctx)
		require.NoError(t, err)
		require.NoError(t, s.Commit(h.ctx, h.plan(head, map[int32]int{0: 4}, 10)))

		head, err = s.Head(h.ctx)
		require.NoError(t, err)
		w, err := s.Write(h.ctx, h.plan(head, map[int32]int{0: 3, 1: 2}, 10))
		require.NoError(t, err)
		spy.loseReply = true
		err = s.CommitWritten(h.ctx, w)
		require.ErrorIs(t, err, errLostReply)
		require.NotErrorIs(t, err, sink.ErrStaleBatch)
		spy.loseReply = false

		// A retry of the same files is refused by the offsets check, and
		// the files, which are live, are kept.
		var stale *sink.StaleBatchError
		require.ErrorAs(t, s.CommitWritten(h.ctx, w), &stale)
		for _, f := range w.Files {
			require.FileExists(t, localPath(f.FilePath()))
		}

		// Restart: a new sink asks the table where to resume.
		s = h.open(nil)
		head, err = s.Head(h.ctx)
		require.NoError(t, err)
		assert.Equal(t, map[int32]int64{0: 7, 1: 2}, head.Next)
		require.NoError(t, s.Commit(h.ctx, h.plan(head, map[int32]int{0: 1, 1: 1}, 10)))
		assert.Equal(t, expect(map[int32]int64{0: 8, 1: 3}), h.scan())
	})

	t.Run("crash before commit", func(t *testing.T) {
		h := newHarness(t, nil)
		s := h.open(nil)
		head, err := s.Head(h.ctx)
		require.NoError(t, err)
		require.NoError(t, s.Commit(h.ctx, h.plan(head, map[int32]int{0: 4}, 10)))
		head, err = s.Head(h.ctx)
		require.NoError(t, err)
		_, err = s.Write(h.ctx, h.plan(head, map[int32]int{0: 3}, 10))
		require.NoError(t, err)
		// Killed here: files written, never committed (orphans).

		s = h.open(nil)
		head, err = s.Head(h.ctx)
		require.NoError(t, err)
		assert.Equal(t, map[int32]int64{0: 4}, head.Next)
		require.NoError(t, s.Commit(h.ctx, h.plan(head, map[int32]int{0: 3}, 10)))
		assert.Equal(t, expect(map[int32]int64{0: 7}), h.scan())
	})
}

// TestCommitAssertsMainSnapshot: the commit carries assert-ref-snapshot-id
// for main at the snapshot the batch was planned on (absent on an empty
// table), and that is the requirement that fails when main moved.
func TestCommitAssertsMainSnapshot(t *testing.T) {
	h := newHarness(t, nil)
	spy := &spyCatalog{CatalogIO: h.tio}
	s := h.open(spy)
	head, err := s.Head(h.ctx)
	require.NoError(t, err)
	require.NoError(t, s.Commit(h.ctx, h.plan(head, map[int32]int{0: 1}, 10)))
	planned := h.load().CurrentSnapshot().SnapshotID
	head, err = s.Head(h.ctx)
	require.NoError(t, err)
	require.NoError(t, s.Commit(h.ctx, h.plan(head, map[int32]int{0: 1}, 10)))

	require.Len(t, spy.reqs, 2)
	assert.Equal(t, []string{`{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":null}`}, refReqs(t, spy.reqs[0]))
	assert.Equal(t, []string{fmt.Sprintf(`{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":%d}`, planned)}, refReqs(t, spy.reqs[1]))
}

// TestEmptyBatchAdvancesOffsets: a batch with no rows (say, only records
// of an aborted transaction) still commits a snapshot that moves offsets,
// so a restart does not read those records again.
func TestEmptyBatchAdvancesOffsets(t *testing.T) {
	h := newHarness(t, nil)
	s := h.open(nil)
	head, err := s.Head(h.ctx)
	require.NoError(t, err)
	require.NoError(t, s.Commit(h.ctx, h.plan(head, map[int32]int{0: 2, 1: 1}, 10)))
	require.NoError(t, s.Commit(h.ctx, sink.Batch{Ranges: map[int32]sink.Range{0: {Start: 2, End: 9}}}))

	head, err = s.Head(h.ctx)
	require.NoError(t, err)
	assert.Equal(t, map[int32]int64{0: 9, 1: 1}, head.Next)
	snap := h.load().CurrentSnapshot()
	assert.Equal(t, "3", snap.Summary.Properties["total-records"])
	assert.Len(t, h.scan(), 3)
}

// TestInvalidBatches: malformed batches are refused, each with its own
// error, and nothing is written: no snapshot, no data file left behind.
func TestInvalidBatches(t *testing.T) {
	h := newHarness(t, nil)
	s := h.open(nil)
	good := h.plan(offsets.Offsets{}, map[int32]int{0: 1}, 10)
	xs := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	xb := array.NewRecordBuilder(memory.DefaultAllocator, xs)
	defer xb.Release()
	xb.Field(0).(*array.Int64Builder).Append(1)
	odd := xb.NewRecordBatch()
	defer odd.Release()
	cases := []struct {
		name  string
		batch sink.Batch
		want  error
		msg   string // in the error's text
	}{
		{"no ranges", sink.Batch{Records: good.Records}, sink.ErrInvalidBatch, "no partition ranges"},
		{"end before start", sink.Batch{Ranges: map[int32]sink.Range{0: {Start: 5, End: 4}}}, sink.ErrInvalidBatch, "partition 0 range [5, 4)"},
		{"negative partition", sink.Batch{Ranges: map[int32]sink.Range{-1: {Start: 0, End: 1}}}, sink.ErrInvalidBatch, "partition -1 range [0, 1)"},
		{"negative offset", sink.Batch{Ranges: map[int32]sink.Range{0: {Start: -2, End: 1}}}, sink.ErrInvalidBatch, "partition 0 range [-2, 1)"},
		{"records of two schemas", sink.Batch{Records: []arrow.RecordBatch{good.Records[0], odd}, Ranges: good.Ranges}, sink.ErrInvalidBatch, "record 1 has another schema"},
		// iceberg-go refuses the write (Write's doc: its errors, wrapped).
		{"schema not the table's", sink.Batch{Records: []arrow.RecordBatch{odd}, Ranges: good.Ranges}, iceberg.ErrInvalidArgument, "not compatible with the table schema"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := s.Commit(h.ctx, tc.batch)
			require.ErrorIs(t, err, tc.want)
			assert.Contains(t, err.Error(), tc.msg)
			if tc.want != sink.ErrInvalidBatch {
				assert.NotErrorIs(t, err, sink.ErrInvalidBatch, "a well-formed batch is not ErrInvalidBatch")
			}
		})
	}
	assert.Nil(t, h.load().CurrentSnapshot())
	assert.Empty(t, dataFiles(t, h.load()), "a refused batch leaves no data file")
}

// dataFiles lists the files under tbl's data/ directory through the
// table's own FileIO (none when the directory does not exist).
func dataFiles(t *testing.T, tbl *table.Table) []string {
	t.Helper()
	fsys, err := tbl.FS(t.Context())
	require.NoError(t, err)
	lio, ok := fsys.(iceio.ListableIO)
	require.True(t, ok, "%T cannot list", fsys)
	var out []string
	err = lio.WalkDir(strings.TrimSuffix(tbl.Location(), "/")+"/data", func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err == nil && !d.IsDir() {
			out = append(out, path)
		}
		return err
	})
	require.NoError(t, err)
	return out
}

// TestHeadFailsClosed: offsets the sink cannot trust stop it instead of
// letting the pipeline start over (duplicates) or skip ahead (loss).
func TestHeadFailsClosed(t *testing.T) {
	commitProps := func(h *harness, props iceberg.Properties) {
		txn := h.load().NewTransaction()
		require.NoError(t, txn.AddFiles(h.ctx, nil, props, true))
		_, err := txn.Commit(h.ctx)
		require.NoError(t, err)
	}
	cases := []struct {
		name  string
		props string
		want  error
	}{
		{"another topic", `{"cluster":"cluster-1","topic":"payments","offsets":{"0":1}}`, sink.ErrForeignOffsets},
		{"another cluster", `{"cluster":"cluster-2","topic":"orders","offsets":{"0":1}}`, sink.ErrForeignOffsets},
		{"not json", `{"cluster":`, offsets.ErrInvalid},
		{"negative offset", `{"cluster":"cluster-1","topic":"orders","offsets":{"0":-1}}`, offsets.ErrInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			s := h.open(nil)
			commitProps(h, iceberg.Properties{offsets.Property: tc.props})
			_, err := s.Head(h.ctx)
			require.ErrorIs(t, err, tc.want)
			require.ErrorIs(t, s.Commit(h.ctx, sink.Batch{Ranges: map[int32]sink.Range{0: {Start: 1, End: 2}}}), tc.want)
		})
	}

	t.Run("lineage expired before any offsets", func(t *testing.T) {
		h := newHarness(t, nil)
		s := h.open(nil)
		require.NoError(t, s.Commit(h.ctx, h.plan(offsets.Offsets{}, map[int32]int{0: 2}, 10)))
		commitProps(h, nil)
		commitProps(h, nil)
		txn := h.load().NewTransaction()
		require.NoError(t, txn.ExpireSnapshots(table.WithRetainLast(1), table.WithOlderThan(0)))
		_, err := txn.Commit(h.ctx)
		require.NoError(t, err)
		require.Len(t, h.load().Metadata().Snapshots(), 1)

		_, err = s.Head(h.ctx)
		require.ErrorIs(t, err, offsets.ErrLost)
	})
}

// TestSortedTableRefused: a table with a sort order would have each batch
// sorted by iceberg-go's writer, breaking the row-position contract.
func TestSortedTableRefused(t *testing.T) {
	h := newHarness(t, nil)
	txn := h.load().NewTransaction()
	order, err := table.NewSortOrder(1, []table.SortField{{SourceIDs: []int{3}, Transform: iceberg.IdentityTransform{}, Direction: table.SortASC, NullOrder: table.NullsFirst}})
	require.NoError(t, err)
	require.NoError(t, txn.ReplaceSortOrder(order))
	_, err = txn.Commit(h.ctx)
	require.NoError(t, err)

	s := h.open(nil)
	err = s.Commit(h.ctx, h.plan(offsets.Offsets{}, map[int32]int{0: 2}, 10))
	require.ErrorIs(t, err, sink.ErrSortedTable)
}

// refReqs returns the JSON of reqs' assert-ref-snapshot-id requirements.
func refReqs(t *testing.T, reqs []table.Requirement) []string {
	var out []string
	for _, r := range reqs {
		if r.GetType() == "assert-ref-snapshot-id" {
			js, err := json.Marshal(r)
			require.NoError(t, err)
			out = append(out, string(js))
		}
	}
	return out
}

func paths(files []iceberg.DataFile) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.FilePath())
	}
	return out
}

// addedPaths lists the data files snap added, from its manifests.
func addedPaths(t *testing.T, h *harness, snap *table.Snapshot) []string {
	t.Helper()
	fs, err := h.load().FS(h.ctx)
	require.NoError(t, err)
	mfs, err := snap.Manifests(fs)
	require.NoError(t, err)
	var out []string
	for _, mf := range mfs {
		if mf.SnapshotID() != snap.SnapshotID {
			continue
		}
		entries, err := mf.FetchEntries(fs, true)
		require.NoError(t, err)
		for _, e := range entries {
			out = append(out, e.DataFile().FilePath())
		}
	}
	return out
}

func localPath(loc string) string { return strings.TrimPrefix(loc, "file://") }

func slicesDelete(keys []key, del func(key) bool) []key {
	var out []key
	for _, k := range keys {
		if !del(k) {
			out = append(out, k)
		}
	}
	return out
}

// TestTopicID: offsets written before a topic id was bound adopt the id at
// the next commit; once recorded, a sink bound to another id (the topic
// was deleted and recreated) refuses the table with ErrTopicRecreated and
// commits nothing.
func TestTopicID(t *testing.T) {
	h := newHarness(t, nil)
	s := h.open(nil)
	head, err := s.Head(h.ctx)
	require.NoError(t, err)
	require.NoError(t, s.Commit(h.ctx, h.plan(head, map[int32]int{0: 2}, 100)))
	assert.JSONEq(t, `{"cluster":"cluster-1","topic":"orders","offsets":{"0":2}}`, h.headProperty())

	require.NoError(t, s.BindTopicID(h.ctx, "id-A"))
	head, err = s.Head(h.ctx)
	require.NoError(t, err)
	assert.Equal(t, "id-A", head.TopicID, "adopted")
	require.NoError(t, s.Commit(h.ctx, h.plan(head, map[int32]int{0: 1}, 100)))
	assert.JSONEq(t, `{"cluster":"cluster-1","topic":"orders","topic-id":"id-A","offsets":{"0":3}}`, h.headProperty())

	s2 := h.open(nil)
	err = s2.BindTopicID(h.ctx, "id-B")
	require.ErrorIs(t, err, sink.ErrTopicRecreated)
	require.ErrorIs(t, err, sink.ErrForeignOffsets)
	assert.Contains(t, err.Error(), "id-A")
	_, err = s2.Head(h.ctx)
	require.ErrorIs(t, err, sink.ErrTopicRecreated)
	assert.Equal(t, expect(map[int32]int64{0: 3}), h.scan(), "nothing else committed")

	require.NoError(t, h.open(nil).BindTopicID(h.ctx, ""), "no id checks nothing")
}

// TestNoRebaseDropsOnMovedMain: with Config.NoRebase (upsert tables), a
// batch planned before another writer's commit (here a maintenance-like
// snapshot carrying the offsets, which a rebase would go over) is dropped
// with ErrMainMoved and its files are deleted; the table keeps only what
// was committed before it.
func TestNoRebaseDropsOnMovedMain(t *testing.T) {
	h := newHarness(t, nil)
	cfg := h.config()
	cfg.NoRebase = true
	s, err := sink.Open(h.ctx, h.tio, cfg)
	require.NoError(t, err)
	head, err := s.Head(h.ctx)
	require.NoError(t, err)
	require.NoError(t, s.Commit(h.ctx, h.plan(head, map[int32]int{0: 5}, 4)))

	head, err = s.Head(h.ctx)
	require.NoError(t, err)
	w, err := s.Write(h.ctx, h.plan(head, map[int32]int{0: 3}, 4))
	require.NoError(t, err)
	tbl := h.load()
	o, _, err := offsets.Read(tbl.Metadata())
	require.NoError(t, err)
	txn := tbl.NewTransaction()
	require.NoError(t, txn.AddFiles(h.ctx, nil, o.Properties(), true))
	_, err = txn.Commit(h.ctx)
	require.NoError(t, err)

	require.ErrorIs(t, s.CommitWritten(h.ctx, w), sink.ErrMainMoved)
	head, err = s.Head(h.ctx)
	require.NoError(t, err)
	assert.Equal(t, map[int32]int64{0: 5}, head.Next)
	assert.Len(t, h.scan(), 5)
	fs, err := h.load().FS(h.ctx)
	require.NoError(t, err)
	for _, f := range w.Files {
		_, err := fs.Open(f.FilePath())
		assert.Error(t, err, "file %s of the dropped batch was deleted", f.FilePath())
	}
	require.ErrorIs(t, s.CommitWritten(h.ctx, w), sink.ErrWrittenDone)
}

func TestConfigValidate(t *testing.T) {
	good := sink.Config{Table: []string{"ns", "t"}, Cluster: "c", Topic: "t"}
	require.NoError(t, good.Validate())
	for name, mutate := range map[string]func(*sink.Config){
		"no namespace":       func(c *sink.Config) { c.Table = []string{"t"} },
		"no cluster":         func(c *sink.Config) { c.Cluster = "" },
		"no topic":           func(c *sink.Config) { c.Topic = "" },
		"negative file size": func(c *sink.Config) { c.TargetFileSizeBytes = -1 },
	} {
		t.Run(name, func(t *testing.T) {
			c := good
			mutate(&c)
			require.ErrorIs(t, c.Validate(), sink.ErrInvalidConfig)
		})
	}
}
