package server_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/require"
	"github.com/twmb/avro"
	"github.com/twmb/avro/ocf"
)

// Regression: purging a table whose snapshot DuckDB 1.4 wrote left the
// snapshot's manifest list, manifests and data files behind (only the
// metadata JSON files went), logging "purge: list referenced files ...
// avro: incompatible at manifest_path: reader string vs writer null".
// DuckDB writes every manifest-list field as optional (a ["null", T]
// union) and no format-version key; iceberg-go's manifest-list reader
// resolves against the spec's schema, where manifest_path is required, and
// refuses the file. Seen in conformance/duckdb: pyiceberg's purge_table of
// a table DuckDB had inserted into.
//
// The files below copy the Avro schemas of a DuckDB 1.4.4 (iceberg
// extension 1095c1fa) manifest list and manifest.

const duckdbManifestListSchema = `{"type": "record", "name": "manifest_file", "fields": [
 {"name": "manifest_path", "type": ["null", {"type": "string"}], "field-id": 500},
 {"name": "manifest_length", "type": ["null", {"type": "long"}], "field-id": 501},
 {"name": "partition_spec_id", "type": ["null", {"type": "int"}], "field-id": 502},
 {"name": "content", "type": ["null", {"type": "int"}], "field-id": 517},
 {"name": "sequence_number", "type": ["null", {"type": "long"}], "field-id": 515},
 {"name": "min_sequence_number", "type": ["null", {"type": "long"}], "field-id": 516},
 {"name": "added_snapshot_id", "type": ["null", {"type": "long"}], "field-id": 503},
 {"name": "added_files_count", "type": ["null", {"type": "int"}], "field-id": 504},
 {"name": "existing_files_count", "type": ["null", {"type": "int"}], "field-id": 505},
 {"name": "deleted_files_count", "type": ["null", {"type": "int"}], "field-id": 506},
 {"name": "added_rows_count", "type": ["null", {"type": "long"}], "field-id": 512},
 {"name": "existing_rows_count", "type": ["null", {"type": "long"}], "field-id": 513},
 {"name": "deleted_rows_count", "type": ["null", {"type": "long"}], "field-id": 514},
 {"name": "partitions", "type": ["null", {"type": "array", "element-id": 508, "items": ["null", {"type": "record", "name": "element0", "fields": [
   {"name": "contains_null", "type": ["null", {"type": "boolean"}], "field-id": 509},
   {"name": "contains_nan", "type": ["null", {"type": "boolean"}], "field-id": 518},
   {"name": "lower_bound", "type": ["null", {"type": "bytes"}], "field-id": 510},
   {"name": "upper_bound", "type": ["null", {"type": "bytes"}], "field-id": 511}]}]}], "field-id": 507}]}`

const duckdbManifestSchema = `{"type": "record", "name": "manifest_entry", "fields": [
 {"name": "status", "type": {"type": "int"}, "field-id": 0},
 {"name": "snapshot_id", "type": ["null", {"type": "long"}], "field-id": 1},
 {"name": "sequence_number", "type": ["null", {"type": "long"}], "field-id": 3},
 {"name": "file_sequence_number", "type": ["null", {"type": "long"}], "field-id": 4},
 {"name": "data_file", "type": {"type": "record", "name": "data_file", "fields": [
   {"name": "content", "type": {"type": "int"}, "field-id": 134},
   {"name": "file_path", "type": {"type": "string"}, "field-id": 100},
   {"name": "file_format", "type": {"type": "string"}, "field-id": 101},
   {"name": "partition", "type": {"type": "record", "name": "partition", "fields": []}, "field-id": 102},
   {"name": "record_count", "type": {"type": "long"}, "field-id": 103},
   {"name": "file_size_in_bytes", "type": {"type": "long"}, "field-id": 104},
   {"name": "lower_bounds", "type": ["null", {"type": "array", "logicalType": "map", "items": {"type": "record", "name": "element0", "fields": [
     {"name": "key", "type": {"type": "int"}, "field-id": 126}, {"name": "value", "type": {"type": "bytes"}, "field-id": 127}]}}], "field-id": 125},
   {"name": "upper_bounds", "type": ["null", {"type": "array", "logicalType": "map", "items": {"type": "record", "name": "element1", "fields": [
     {"name": "key", "type": {"type": "int"}, "field-id": 129}, {"name": "value", "type": {"type": "bytes"}, "field-id": 130}]}}], "field-id": 128}]}, "field-id": 2}]}`

// writeAvro writes records as an Avro object container file at path.
func writeAvro(t *testing.T, path, schema string, meta map[string][]byte, records ...map[string]any) {
	t.Helper()
	var buf bytes.Buffer
	w, err := ocf.NewWriter(&buf, avro.MustParse(schema), ocf.WithMetadata(meta))
	require.NoError(t, err)
	for _, r := range records {
		require.NoError(t, w.Encode(r))
	}
	require.NoError(t, w.Close())
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
}

func TestDropTablePurgeDuckDBManifests(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.namespace(t, "p")
	tbl := e.createTable(t, ns, "duck")
	u, err := url.Parse(tbl.Location())
	require.NoError(t, err)
	dir := u.Path

	const snapshotID = int64(6113456135230114665)
	dataFiles := []string{"data/01a228fd-a26a-75a4-83fa-b25ba45fb212.parquet", "data/01a228fd-a26a-75a4-83fa-b25ba45fb213.parquet"}
	var entries []map[string]any
	for _, f := range dataFiles {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "data"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte("PAR1 stand-in"), 0o644))
		entries = append(entries, map[string]any{
			"status": int32(1), "snapshot_id": snapshotID, "sequence_number": int64(1), "file_sequence_number": int64(1),
			"data_file": map[string]any{
				"content": int32(0), "file_path": tbl.Location() + "/" + f, "file_format": "PARQUET",
				"partition": map[string]any{}, "record_count": int64(2), "file_size_in_bytes": int64(13),
				"lower_bounds": nil, "upper_bounds": nil,
			},
		})
	}
	manifest := tbl.Location() + "/metadata/a10a4ab7-f068-4301-89b9-f1777a3b3ad9-m0.avro"
	writeAvro(t, filepath.Join(dir, "metadata", "a10a4ab7-f068-4301-89b9-f1777a3b3ad9-m0.avro"), duckdbManifestSchema,
		map[string][]byte{"format-version": []byte("2"), "content": []byte("data"), "partition-spec-id": []byte("0"),
			"partition-spec": []byte("[]"), "schema-id": []byte("0")},
		entries...)
	fi, err := os.Stat(filepath.Join(dir, "metadata", "a10a4ab7-f068-4301-89b9-f1777a3b3ad9-m0.avro"))
	require.NoError(t, err)
	listName := fmt.Sprintf("snap-%d-1fce7ccf-f91e-472a-b3c8-93fc03d274cf.avro", snapshotID)
	writeAvro(t, filepath.Join(dir, "metadata", listName), duckdbManifestListSchema, nil, map[string]any{
		"manifest_path": manifest, "manifest_length": fi.Size(), "partition_spec_id": int32(0), "content": int32(0),
		"sequence_number": int64(1), "min_sequence_number": int64(1), "added_snapshot_id": snapshotID,
		"added_files_count": int32(2), "existing_files_count": int32(0), "deleted_files_count": int32(0),
		"added_rows_count": int64(4), "existing_rows_count": int64(0), "deleted_rows_count": int64(0),
		"partitions": []any{},
	})

	schemaID := 0
	_, _, err = e.cat.CommitTable(t.Context(), tbl.Identifier(),
		[]table.Requirement{table.AssertRefSnapshotID("main", nil)},
		[]table.Update{
			table.NewAddSnapshotUpdate(&table.Snapshot{
				SnapshotID: snapshotID, SequenceNumber: 1, TimestampMs: time.Now().UnixMilli(),
				ManifestList: tbl.Location() + "/metadata/" + listName,
				Summary:      &table.Summary{Operation: table.OpAppend}, SchemaID: &schemaID,
			}),
			table.NewSetSnapshotRefUpdate("main", snapshotID, table.BranchRef, -1, -1, -1),
		})
	require.NoError(t, err)
	before := filesUnder(t, tbl.Location())
	// 2 metadata files, 1 manifest list, 1 manifest, 2 data files.
	require.Len(t, before, 6, "files: %v", before)

	rsp := e.do(t, http.MethodDelete, tablePath(ns, "duck")+"?purgeRequested=true", nil)
	require.Equal(t, http.StatusNoContent, rsp.Status, "body: %s", rsp.Body)
	require.Empty(t, filesUnder(t, tbl.Location()), "purge left files behind")
	require.NoDirExists(t, dir, "the table directory is removed once empty")
}
