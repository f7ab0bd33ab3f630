package maintenance_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/require"
	"github.com/twmb/avro"
	"github.com/twmb/avro/ocf"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/maintenance"
)

// readAvro decodes the object container at path (file:// or plain):
// its writer schema, metadata (without avro.* keys) and records.
func readAvro(t *testing.T, path string) (*avro.Schema, map[string][]byte, []map[string]any) {
	t.Helper()
	raw, err := os.ReadFile(strings.TrimPrefix(path, "file://"))
	require.NoError(t, err)
	rd, err := ocf.NewReader(bytes.NewReader(raw))
	require.NoError(t, err)
	defer rd.Close()
	meta := map[string][]byte{}
	for k, v := range rd.Metadata() {
		if !strings.HasPrefix(k, "avro.") {
			meta[k] = v
		}
	}
	var recs []map[string]any
	for {
		var rec map[string]any
		if err := rd.Decode(&rec); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err)
		}
		recs = append(recs, rec)
	}
	return rd.Schema(), meta, recs
}

// writeAvro writes recs as an object container at path, without a codec.
func writeAvro(t *testing.T, path string, sch *avro.Schema, meta map[string][]byte, recs []map[string]any) int64 {
	t.Helper()
	var buf bytes.Buffer
	w, err := ocf.NewWriter(&buf, sch, ocf.WithMetadata(meta))
	require.NoError(t, err)
	for _, r := range recs {
		require.NoError(t, w.Encode(r))
	}
	require.NoError(t, w.Close())
	require.NoError(t, os.WriteFile(strings.TrimPrefix(path, "file://"), buf.Bytes(), 0o644))
	return int64(buf.Len())
}

// duckdbShape rewrites, in place, every manifest list and manifest of
// tbl's snapshots in the shape DuckDB 1.4.4 writes them (the files in
// testdata/duckdb-1.4.4): a list in DuckDB's schema (every field
// optional, the field summary record named element0) with no metadata;
// manifests without a codec, their file_format in lower case, a delete
// manifest labelled content=data. The records are the same.
func duckdbShape(t *testing.T, tbl *table.Table) {
	t.Helper()
	listSchema, _, _ := readAvro(t, filepath.Join("..", "testdata", "duckdb-1.4.4", "manifest-list.avro"))
	var listFields []string
	for _, f := range listSchema.Root().Fields {
		listFields = append(listFields, f.Name)
	}
	lengths := map[string]int64{}
	for _, s := range tbl.Metadata().Snapshots() {
		_, _, list := readAvro(t, s.ManifestList)
		for _, m := range list {
			p := m["manifest_path"].(string)
			if _, done := lengths[p]; !done {
				sch, meta, entries := readAvro(t, p)
				meta["content"] = []byte("data")
				for _, e := range entries {
					df := e["data_file"].(map[string]any)
					df["file_format"] = strings.ToLower(df["file_format"].(string))
				}
				lengths[p] = writeAvro(t, p, sch, meta, entries)
			}
			m["manifest_length"] = lengths[p]
			for k := range m {
				if !slices.Contains(listFields, k) {
					delete(m, k) // key_metadata, first_row_id: DuckDB writes neither
				}
			}
		}
		writeAvro(t, s.ManifestList, listSchema, nil, list)
	}
}

// scanDistances returns the distance column of main's head, sorted.
func scanDistances(t *testing.T, h *harness) []int64 {
	t.Helper()
	res, err := h.load().Scan().ToArrowTable(h.ctx)
	require.NoError(t, err)
	defer res.Release()
	var out []int64
	for _, c := range res.Column(2).Data().Chunks() {
		d := c.(*array.Int64)
		for i := range d.Len() {
			out = append(out, d.Value(i))
		}
	}
	slices.Sort(out)
	return out
}

// requireDistances requires main's head to hold exactly the distances
// want (sorted), and names what is missing or extra when it does not.
func requireDistances(t *testing.T, h *harness, want []int64, msg string) {
	t.Helper()
	got := scanDistances(t, h)
	if slices.Equal(got, want) {
		return
	}
	count := map[int64]int{}
	for _, v := range want {
		count[v]++
	}
	for _, v := range got {
		count[v]--
	}
	var missing, extra []int64
	for v, n := range count {
		for ; n > 0; n-- {
			missing = append(missing, v)
		}
		for ; n < 0; n++ {
			extra = append(extra, v)
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	t.Fatalf("%s: %d rows, want %d; missing %v, extra or repeated %v", msg, len(got), len(want), missing, extra)
}

// Regression: compaction of a table whose head DuckDB 1.4 wrote failed
// with 500 ("plan scan: ... avro: incompatible at manifest_path: reader
// string vs writer null"), and so did expiry, manifest rewriting and
// orphan removal, which read the same manifest lists. Here a table with
// 24 small files and a position delete has every manifest list and
// manifest in DuckDB's shape (duckdbShape); each job runs, and the table
// reads the same rows before and after each.
func TestMaintenanceOfDuckDBWrittenTable(t *testing.T) {
	h := newHarness(t, map[string]string{
		table.WriteDeleteModeKey:  table.WriteModeMergeOnRead,
		table.MaxSnapshotAgeMsKey: "1", table.MinSnapshotsToKeepKey: "1",
		maintenance.OrphanOlderThanProperty: "3600000",
	})
	h.ingest(12, 20)
	txn := h.load().NewTransaction()
	require.NoError(t, txn.Delete(h.ctx, iceberg.EqualTo(iceberg.Reference("distance"), int64(7)), nil))
	_, err := txn.Commit(h.ctx)
	require.NoError(t, err)
	var want []int64
	for off := range int64(240) {
		if off != 7 {
			want = append(want, off)
		}
	}
	requireDistances(t, h, want, "the position delete applies")
	duckdbShape(t, h.load())

	r := h.run(maintenance.JobCompact)
	require.Empty(t, r.Skipped)
	require.Equal(t, 24, r.FilesRewritten)
	require.Equal(t, 2, r.FilesAdded)
	require.EqualValues(t, 2, r.FilesAfter)
	requireDistances(t, h, want, "compacted: row 7 stays deleted, no other row lost")

	time.Sleep(5 * time.Millisecond)
	r = h.run(maintenance.JobExpire)
	require.Empty(t, r.Skipped)
	require.Positive(t, r.SnapshotsExpired)
	requireDistances(t, h, want, "expired")

	h.ingest(3, 20) // more manifests for the rewrite, on the DuckDB-shaped head
	duckdbShape(t, h.load())
	r = h.run(maintenance.JobManifests)
	require.Empty(t, r.Skipped)
	require.Less(t, r.ManifestsAfter, r.ManifestsBefore)

	orphan := filepath.Join(h.tableDir(), "data", "orphan.parquet")
	require.NoError(t, os.WriteFile(orphan, []byte("orphan"), 0o644))
	age(t, 2*time.Hour, orphan)
	r = h.run(maintenance.JobOrphans)
	require.Empty(t, r.Skipped)
	require.Equal(t, 1, r.OrphansRemoved)
	require.False(t, exists(orphan))
	for off := range int64(60) {
		want = append(want, 240+off)
	}
	requireDistances(t, h, want, "every job kept every row")
}

// Regression: maintenance of a table no topic writes (DuckDB's, Spark's,
// ...) failed with 500 once expiry had dropped its first snapshot:
// manifest rewriting and compaction read the ingest offsets to carry,
// found none on a truncated lineage and took it for offsets lost
// ("lineage truncated before any snapshot with offsets"). Such a table
// has none to carry.
func TestMaintenanceOfTableWithoutOffsetsAfterExpiry(t *testing.T) {
	h := newHarness(t, nil)
	secrets := foreignTable(t, h) // vault.secrets, written without offsets
	_, _, err := h.tio.CommitTable(h.ctx, secrets.Identifier(), nil, []table.Update{table.NewSetPropertiesUpdate(iceberg.Properties{
		table.MaxSnapshotAgeMsKey: "1", table.MinSnapshotsToKeepKey: "1", maintenance.CompactMinFilesProperty: "2"})})
	require.NoError(t, err)
	for i := range int64(3) {
		rec := h.records(0, 900100+20*i, 20, func(int64) string { return "A" })
		rows := array.NewTableFromRecords(rec.Schema(), []arrow.RecordBatch{rec})
		txn := secrets.NewTransaction()
		require.NoError(t, txn.AppendTable(h.ctx, rows, 1024, nil))
		secrets, err = txn.Commit(h.ctx)
		rows.Release()
		require.NoError(t, err)
	}
	id := catalog.Ident{Namespace: catalog.Namespace{"vault"}, Name: "secrets"}
	for _, job := range []string{maintenance.JobExpire, maintenance.JobCompact, maintenance.JobExpire, maintenance.JobManifests, maintenance.JobCompact} {
		rs, err := h.sched.RunJobs(h.ctx, id, []string{job})
		require.NoError(t, err, job)
		require.NotContains(t, rs[0].Skipped, "yielded", job)
	}
	tbl, err := h.tio.LoadTable(h.ctx, secrets.Identifier())
	require.NoError(t, err)
	res, err := tbl.Scan().ToArrowTable(h.ctx)
	require.NoError(t, err)
	defer res.Release()
	require.EqualValues(t, 80, res.NumRows())
}
