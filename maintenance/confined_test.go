package maintenance_test

import (
	"bytes"
	"encoding/binary"
	"os"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/internal/testserver"
	"github.com/tarnhq/tarn/maintenance"
	"github.com/tarnhq/tarn/spec"
)

// foreignTable creates vault.secrets, a table of another namespace with
// air.flights' schema and spec, holding one file of rows whose origin is
// A and distance 900000..900019, and returns the table.
func foreignTable(t *testing.T, h *harness) *table.Table {
	t.Helper()
	require.NoError(t, h.cat.CreateNamespace(h.ctx, catalog.Namespace{"vault"}, nil))
	ps := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{4}, FieldID: 1000, Name: "origin", Transform: iceberg.IdentityTransform{}})
	_, err := h.cat.CreateTable(h.ctx, h.wh, catalog.Namespace{"vault"}, spec.CreateTableRequest{Name: "secrets", Schema: testSchema,
		PartitionSpec: &iceberg.UnboundPartitionSpec{PartitionSpec: ps}})
	require.NoError(t, err)
	tbl, err := h.tio.LoadTable(h.ctx, table.Identifier{"vault", "secrets"})
	require.NoError(t, err)
	rec := h.records(0, 900000, 20, func(int64) string { return "A" })
	rows := array.NewTableFromRecords(rec.Schema(), []arrow.RecordBatch{rec})
	defer rows.Release()
	txn := tbl.NewTransaction()
	require.NoError(t, txn.AppendTable(h.ctx, rows, 1024, nil))
	tbl, err = txn.Commit(h.ctx)
	require.NoError(t, err)
	return tbl
}

// Regression: Tarn was a confused deputy. Its jobs read with Tarn's
// storage credentials; a principal who may write air.flights only added
// a data file of vault.secrets (a path it guessed) to air.flights with
// add_files, and compaction read that file and rewrote its rows into
// air.flights' own directory, where the principal's credentials reach.
// Compaction now leaves files outside the table's recorded directories
// unread: it compacts the rest, logs and counts the file, and
// vault.secrets' file stays as it was.
func TestCompactionLeavesFilesOfOtherTablesUnread(t *testing.T) {
	onFileWarehouse(t)
	h := newHarness(t, map[string]string{maintenance.CompactMinFilesProperty: "4"})
	h.ingest(6, 20) // 12 files of air.flights
	secrets := foreignTable(t, h)
	foreign := dataFiles(t, secrets, secrets.CurrentSnapshot())
	require.Len(t, foreign, 1)
	before, err := os.ReadFile(strings.TrimPrefix(foreign[0], "file://"))
	require.NoError(t, err)
	st, err := os.Stat(strings.TrimPrefix(foreign[0], "file://"))
	require.NoError(t, err)

	txn := h.load().NewTransaction()
	require.NoError(t, txn.AddFiles(h.ctx, foreign, nil, false), "add_files of the other table's file")
	_, err = txn.Commit(h.ctx)
	require.NoError(t, err)
	require.Len(t, dataFiles(t, h.load(), h.load().CurrentSnapshot()), 13)

	r := h.run(maintenance.JobCompact)
	require.Empty(t, r.Skipped)
	require.Equal(t, 12, r.FilesRewritten, "air.flights' own files only")
	require.Equal(t, 1, r.FilesOutside)
	require.InDelta(t, 1, metricValue(t, h, "tarn_maintenance_files_skipped_total"), 0, "counted, reason outside-table-directories")

	// The foreign file is still the table's, as it was; no file in
	// air.flights' directory holds its rows.
	files := h.load().CurrentSnapshot()
	tasks, err := h.load().Scan(table.WithSnapshotID(files.SnapshotID)).PlanFiles(h.ctx)
	require.NoError(t, err)
	own := strings.TrimPrefix(h.load().Location(), "file://") + "/"
	seen := false
	for _, task := range tasks {
		p := task.File.FilePath()
		if p == foreign[0] {
			seen = true
			continue
		}
		require.True(t, strings.HasPrefix(strings.TrimPrefix(p, "file://"), own), p)
		hi := task.File.UpperBoundValues()[5]
		require.Less(t, int64(binary.LittleEndian.Uint64(hi)), int64(900000), "%s holds none of vault.secrets' rows", p)
	}
	require.True(t, seen, "the foreign file is left in place")
	after, err := os.ReadFile(strings.TrimPrefix(foreign[0], "file://"))
	require.NoError(t, err)
	require.True(t, bytes.Equal(before, after))
	st2, err := os.Stat(strings.TrimPrefix(foreign[0], "file://"))
	require.NoError(t, err)
	require.Equal(t, st.ModTime(), st2.ModTime())
}

// A head whose manifest list names another table's manifest (written by
// a client into its own table's snapshot) is neither compacted nor has
// its manifests rewritten: either would read the other table's manifest
// for this one (and copy its file list and column bounds).
func TestJobsSkipHeadsWithManifestsOfOtherTables(t *testing.T) {
	onFileWarehouse(t)
	h := newHarness(t, map[string]string{maintenance.CompactMinFilesProperty: "4"})
	h.ingest(6, 20)
	secrets := foreignTable(t, h)
	fs, err := h.load().FS(h.ctx)
	require.NoError(t, err)
	theirs, err := secrets.CurrentSnapshot().Manifests(fs)
	require.NoError(t, err)
	head := h.load().CurrentSnapshot()
	ours, err := head.Manifests(fs)
	require.NoError(t, err)

	// A snapshot of air.flights whose list holds both tables' manifests.
	id := commitSnapshot(t, h, table.OpAppend, h.load().Metadata().LastSequenceNumber()+1, int64(uuid.New().ID()), append(ours, theirs...))

	for _, job := range []string{maintenance.JobCompact, maintenance.JobManifests} {
		r := h.run(job)
		require.Equal(t, "manifests outside the table's directories", r.Skipped, job)
		require.Equal(t, len(theirs), r.FilesOutside, job)
		require.Equal(t, id, h.load().CurrentSnapshot().SnapshotID, "%s committed nothing", job)
	}
}

// commitSnapshot commits to air.flights, as a client may, a snapshot id
// with sequence number seq whose manifest list (written into the table's
// metadata directory) holds ms; it carries the head's summary properties
// (its ingest offsets). It returns id.
func commitSnapshot(t *testing.T, h *harness, op table.Operation, seq, id int64, ms []iceberg.ManifestFile) int64 {
	t.Helper()
	head := h.load().CurrentSnapshot()
	list := strings.TrimPrefix(h.load().Location(), "file://") + "/metadata/snap-" + uuid.NewString() + ".avro"
	var buf bytes.Buffer
	require.NoError(t, iceberg.WriteManifestList(2, &buf, id, &head.SnapshotID, &seq, 0, ms))
	require.NoError(t, os.WriteFile(list, buf.Bytes(), 0o644))
	snap := &table.Snapshot{SnapshotID: id, ParentSnapshotID: &head.SnapshotID, SequenceNumber: seq,
		TimestampMs: head.TimestampMs + 1, ManifestList: "file://" + list, SchemaID: head.SchemaID,
		Summary: &table.Summary{Operation: op, Properties: head.Summary.Properties}}
	_, _, err := h.tio.CommitTable(h.ctx, h.ident, []table.Requirement{table.AssertRefSnapshotID(table.MainBranch, &head.SnapshotID)},
		[]table.Update{table.NewAddSnapshotUpdate(snap), table.NewSetSnapshotRefUpdate(table.MainBranch, id, table.BranchRef, 0, 0, 0)})
	require.NoError(t, err)
	return id
}

// A delete file of another table, named by a delete manifest of this
// table's own (written by a client into its table's directory), is not
// read for this table: compaction leaves the data file it applies to as
// it is (rewriting it would read the other table's file) and compacts
// the rest, and counts the file.
func TestCompactionLeavesFilesWithDeletesOfOtherTablesUnread(t *testing.T) {
	onFileWarehouse(t)
	h := newHarness(t, map[string]string{maintenance.CompactMinFilesProperty: "4"})
	h.ingest(6, 20) // 12 files: 6 in origin=A (even offsets), 6 in origin=B
	secrets := foreignTable(t, h)

	// vault.secrets' own equality delete (distance = 7, origin B: its bounds overlap
	// air.flights' rows, so a scan of air.flights would apply it).
	sc := arrow.NewSchema([]arrow.Field{{Name: "distance", Type: arrow.PrimitiveTypes.Int64}, {Name: "origin", Type: arrow.BinaryTypes.String}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).Append(7)
	b.Field(1).(*array.StringBuilder).Append("B")
	rec := b.NewRecordBatch()
	defer rec.Release()
	txn := secrets.NewTransaction()
	require.NoError(t, txn.CommitEqualityDeletes(h.ctx, []int{5}, func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) }, nil))
	secrets, err := txn.Commit(h.ctx)
	require.NoError(t, err)
	fs, err := secrets.FS(h.ctx)
	require.NoError(t, err)
	theirs, err := secrets.CurrentSnapshot().Manifests(fs)
	require.NoError(t, err)
	var del iceberg.DataFile
	for _, m := range theirs {
		for e, err := range m.Entries(fs, false) {
			require.NoError(t, err)
			if e.DataFile().ContentType() == iceberg.EntryContentEqDeletes {
				del = e.DataFile()
			}
		}
	}
	require.NotNil(t, del)
	foreign := strings.TrimPrefix(del.FilePath(), "file://")
	before, err := os.ReadFile(foreign)
	require.NoError(t, err)

	// A delete manifest of air.flights' own naming that file.
	tbl := h.load()
	head := tbl.CurrentSnapshot()
	ours, err := head.Manifests(fs)
	require.NoError(t, err)
	ours0 := dataFiles(t, tbl, head)
	id, seq := int64(uuid.New().ID()), tbl.Metadata().LastSequenceNumber()+1
	path := strings.TrimPrefix(tbl.Location(), "file://") + "/metadata/" + uuid.NewString() + "-m0.avro"
	var buf bytes.Buffer
	w, err := iceberg.NewManifestWriter(2, &buf, tbl.Spec(), tbl.Schema(), id, iceberg.WithManifestWriterContent(iceberg.ManifestContentDeletes))
	require.NoError(t, err)
	require.NoError(t, w.Add(iceberg.NewManifestEntry(iceberg.EntryStatusADDED, &id, &seq, &seq, del)))
	require.NoError(t, w.Close())
	m, err := w.ToManifestFile("file://"+path, int64(buf.Len()))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
	commitSnapshot(t, h, table.OpDelete, seq, id, append(ours, m))

	r := h.run(maintenance.JobCompact)
	require.Empty(t, r.Skipped)
	require.Equal(t, 11, r.FilesRewritten, "all but the file the foreign delete applies to (the one whose bounds hold distance 7)")
	require.Equal(t, 1, r.FilesOutside)
	require.InDelta(t, 1, metricValue(t, h, "tarn_maintenance_files_skipped_total"), 0)
	tasks, err := h.load().Scan().PlanFiles(h.ctx)
	require.NoError(t, err)
	require.Len(t, tasks, 3, "one compacted file per partition, and the file left")
	var left []string
	for _, task := range tasks {
		if len(task.EqualityDeleteFiles) > 0 {
			require.Equal(t, del.FilePath(), task.EqualityDeleteFiles[0].FilePath())
			left = append(left, task.File.FilePath())
		}
	}
	require.Len(t, left, 1, "the foreign delete still applies to one file, as it did")
	require.Contains(t, ours0, left[0], "and that file is one of the ingested ones, not rewritten")
	after, err := os.ReadFile(foreign)
	require.NoError(t, err)
	require.True(t, bytes.Equal(before, after))
}

// onFileWarehouse runs the test on a file:// warehouse also in the S3
// pass of scripts/test (testserver.EnvWarehouse): these tests plant and
// inspect the other table's files with package os.
func onFileWarehouse(t *testing.T) {
	t.Setenv(testserver.EnvWarehouse, "")
}
