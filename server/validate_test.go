package server_test

import (
	"encoding/json"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/spec"
)

// requireBadRequestException asserts r is 400 BadRequestException whose
// message contains want.
func requireBadRequestException(t *testing.T, r rawResponse, want string) {
	t.Helper()
	require.Equal(t, http.StatusBadRequest, r.Status, "body: %s", r.Body)
	em := decodeJSON[spec.ErrorResponse](t, r).Error
	assert.Equal(t, "BadRequestException", em.Type, "message: %s", em.Message)
	assert.Contains(t, em.Message, want)
}

// Regression (issue 13, item 4): commits whose result breaks the Iceberg
// spec were accepted with 200, because iceberg-go's MetadataBuilder does
// not check these rules, and the table was then unloadable by pyiceberg
// (truncate[-5]: "Could not match truncate[-5]"; blob-metadata null;
// unknown blob type; identifier field not required or missing; unknown
// snapshot operation), unloadable by iceberg-go itself (a negative
// sequence number left last-sequence-number below an older snapshot's), or
// unwritable by every engine (day of a string column, unknown transform,
// bad name mapping or typed property), or left dangling references (a
// statistics file for a snapshot the table does not have, negative sizes,
// an empty ref name, main as a tag). Each is now 400 BadRequestException
// naming the rule, and the table stays exactly as it was.
func TestCommitRefusesUnreadableMetadata(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.namespace(t, "validate")
	tbl := appendRows(t, e.createTable(t, ns, "t"), 1)
	before, beforeMD := e.loadRaw(t, ns, "t")
	files := metadataFiles(t, beforeMD.Location())
	sid := strconv.FormatInt(tbl.CurrentSnapshot().SnapshotID, 10)
	inside := tbl.Location() + "/metadata/stats.puffin"
	stats := func(fields string) string {
		return `{"action":"set-statistics","statistics":{"snapshot-id":` + sid + `,"statistics-path":"` + inside + `",` + fields + `}}`
	}
	blob := `{"type":"apache-datasketches-theta-v1","snapshot-id":` + sid + `,"sequence-number":1,"fields":[1]}`
	snapshot := func(seq int, fields string) string {
		return `{"action":"add-snapshot","snapshot":{"snapshot-id":77,"parent-snapshot-id":` + sid +
			`,"sequence-number":` + strconv.Itoa(seq) + `,"timestamp-ms":9999999999999,"manifest-list":"` + tbl.Location() + `/metadata/snap-77.avro"` + fields + `}}`
	}
	schema := func(fields string) string {
		return `{"action":"add-schema","schema":{"type":"struct","schema-id":1,` + fields + `}}`
	}
	props := func(k, v string) string {
		return `{"action":"set-properties","updates":{"` + k + `":"` + v + `"}}`
	}

	tests := []struct {
		name, update, want string
	}{
		// The examples.
		{"add-spec truncate[-5]", `{"action":"add-spec","spec":{"fields":[{"source-id":2,"field-id":1000,"name":"d","transform":"truncate[-5]"}]}}`, `unknown transform "truncate[-5]"`},
		{"set-statistics blob-metadata null", stats(`"file-size-in-bytes":10,"file-footer-size-in-bytes":2,"blob-metadata":null`), "blob-metadata is required"},
		{"set-statistics unknown snapshot", `{"action":"set-statistics","statistics":{"snapshot-id":42,"statistics-path":"` + inside + `","file-size-in-bytes":10,"file-footer-size-in-bytes":2,"blob-metadata":[]}}`, "snapshot 42 is not a snapshot of the table"},
		{"set-statistics negative sizes", stats(`"file-size-in-bytes":-10,"file-footer-size-in-bytes":-2,"blob-metadata":[]`), "must not be negative"},
		{"set-snapshot-ref empty name", `{"action":"set-snapshot-ref","ref-name":"","type":"tag","snapshot-id":` + sid + `}`, "ref names must not be empty"},
		// Transforms and their source types.
		{"add-spec unknown transform", `{"action":"add-spec","spec":{"fields":[{"source-id":1,"field-id":1000,"name":"q","transform":"frobnicate"}]}}`, `unknown transform "frobnicate"`},
		{"add-spec day of a string", `{"action":"add-spec","spec":{"fields":[{"source-id":2,"field-id":1000,"name":"dd","transform":"day"}]}}`, "transform day cannot be applied to column data of type string"},
		{"add-sort-order truncate[-5]", `{"action":"add-sort-order","sort-order":{"order-id":1,"fields":[{"source-id":2,"transform":"truncate[-5]","direction":"asc","null-order":"nulls-first"}]}}`, `unknown transform "truncate[-5]"`},
		// Statistics and partition statistics files.
		{"set-statistics unknown blob type", stats(`"file-size-in-bytes":10,"file-footer-size-in-bytes":2,"blob-metadata":[{"type":"x","snapshot-id":1,"sequence-number":1,"fields":[1]}]`), `type "x" is not`},
		{"set-statistics blob without fields", stats(`"file-size-in-bytes":10,"file-footer-size-in-bytes":2,"blob-metadata":[{"type":"apache-datasketches-theta-v1","snapshot-id":1,"sequence-number":1}]`), "fields is required"},
		{"set-statistics footer beyond file", stats(`"file-size-in-bytes":10,"file-footer-size-in-bytes":20,"blob-metadata":[` + blob + `]`), "exceeds file-size-in-bytes"},
		{"set-statistics empty path", `{"action":"set-statistics","statistics":{"snapshot-id":` + sid + `,"statistics-path":"","file-size-in-bytes":10,"file-footer-size-in-bytes":2,"blob-metadata":[]}}`, "statistics-path is required"},
		{"set-statistics path outside the table", `{"action":"set-statistics","statistics":{"snapshot-id":` + sid + `,"statistics-path":"file:///elsewhere/s.puffin","file-size-in-bytes":10,"file-footer-size-in-bytes":2,"blob-metadata":[]}}`, "is not inside the table's directories"},
		{"set-statistics snapshot-ids differ", `{"action":"set-statistics","snapshot-id":1,"statistics":{"snapshot-id":` + sid + `,"statistics-path":"` + inside + `","file-size-in-bytes":10,"file-footer-size-in-bytes":2,"blob-metadata":[]}}`, "differs from the statistics file's snapshot-id"},
		{"set-partition-statistics unknown snapshot", `{"action":"set-partition-statistics","partition-statistics":{"snapshot-id":42,"statistics-path":"` + inside + `","file-size-in-bytes":1}}`, "snapshot 42 is not a snapshot of the table"},
		{"set-partition-statistics negative size", `{"action":"set-partition-statistics","partition-statistics":{"snapshot-id":` + sid + `,"statistics-path":"` + inside + `","file-size-in-bytes":-1}}`, "must not be negative"},
		// Refs.
		{"set-snapshot-ref main as a tag", `{"action":"set-snapshot-ref","ref-name":"main","type":"tag","snapshot-id":` + sid + `}`, "main must be a branch"},
		// Schemas.
		{"add-schema missing identifier field", schema(`"identifier-field-ids":[9],"fields":[{"id":1,"name":"id","type":"long","required":true}]`), "identifier field 9 does not exist"},
		{"add-schema optional identifier field", schema(`"identifier-field-ids":[2],"fields":[{"id":1,"name":"id","type":"long","required":true},{"id":2,"name":"d","type":"long","required":false}]`), "identifier field d must be required"},
		{"add-schema double identifier field", schema(`"identifier-field-ids":[2],"fields":[{"id":1,"name":"id","type":"long","required":true},{"id":2,"name":"d","type":"double","required":true}]`), "identifier field d cannot be double"},
		{"add-schema fixed[0]", schema(`"fields":[{"id":1,"name":"id","type":"long","required":true},{"id":2,"name":"f","type":"fixed[0]","required":false}]`), "fixed length must be at least 1"},
		// Snapshots.
		{"add-snapshot negative sequence number", strings.Replace(snapshot(-2, `,"summary":{"operation":"append"}`), `"parent-snapshot-id":`+sid+`,`, "", 1), "sequence-number -2 must not be negative"},
		{"add-snapshot unknown operation", snapshot(2, `,"summary":{"operation":"frob"}`), `summary operation "frob"`},
		{"add-snapshot without summary", snapshot(2, ``), "summary is required"},
		{"add-snapshot unknown schema-id", snapshot(2, `,"summary":{"operation":"append"},"schema-id":55`), "schema-id 55 is not a schema of the table"},
		{"add-snapshot negative snapshot-id", strings.Replace(snapshot(2, `,"summary":{"operation":"append"}`), `"snapshot-id":77`, `"snapshot-id":-1`, 1), "snapshot-id must not be negative"},
		// Properties engines parse.
		{"set-properties bad name mapping", props("schema.name-mapping.default", "not json"), "is not a JSON name mapping"},
		{"set-properties bad previous-versions-max", props("write.metadata.previous-versions-max", "abc"), "must be a positive integer"},
		{"set-properties bad write.format.default", props("write.format.default", "csv"), "must be one of parquet, avro, orc"},
		{"set-properties bad delete-after-commit", props("write.metadata.delete-after-commit.enabled", "yes"), "must be one of true, false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(t, http.MethodPost, tablePath(ns, "t"), `{"requirements":[],"updates":[`+tt.update+`]}`)
			requireBadRequestException(t, r, tt.want)
			loc, md := e.loadRaw(t, ns, "t")
			assert.Equal(t, before, loc)
			assert.Equal(t, summarize(beforeMD), summarize(md))
			assert.ElementsMatch(t, files, metadataFiles(t, md.Location()), "no metadata file left behind")
		})
	}

	// The same rules hold for the valid neighbours of those updates.
	t.Run("valid neighbours are accepted", func(t *testing.T) {
		for _, u := range []string{
			`{"action":"add-spec","spec":{"fields":[{"source-id":2,"field-id":1000,"name":"d","transform":"truncate[5]"}]}}`,
			stats(`"file-size-in-bytes":10,"file-footer-size-in-bytes":2,"blob-metadata":[` + blob + `]`),
			`{"action":"set-snapshot-ref","ref-name":"audit","type":"tag","snapshot-id":` + sid + `,"max-ref-age-ms":60000}`,
			schema(`"identifier-field-ids":[1],"fields":[{"id":1,"name":"id","type":"long","required":true},{"id":2,"name":"data","type":"string","required":false}]`),
			props("write.format.default", "PARQUET"),
			// Java's Hadoop spelling of a local file (file:/x) is inside too.
			`{"action":"set-partition-statistics","partition-statistics":{"snapshot-id":` + sid + `,"statistics-path":"` +
				strings.Replace(tbl.Location(), "file:///", "file:/", 1) + `/metadata/p.parquet","file-size-in-bytes":1}}`,
		} {
			r := e.do(t, http.MethodPost, tablePath(ns, "t"), `{"requirements":[],"updates":[`+u+`]}`)
			require.Equal(t, http.StatusOK, r.Status, "update %s: %s", u, r.Body)
		}
	})
}

// Regression (issue 13, item 4): a create-table request carrying a spec or
// order the builder lets through (truncate[-5], a day transform of a
// string) created a table pyiceberg could not load; create is now checked
// by the same rules as a commit.
func TestCreateTableRefusesUnreadableMetadata(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.namespace(t, "validate")
	base := `{"name":"%s","schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","type":"long","required":true},{"id":2,"name":"data","type":"string","required":false}]}`
	for name, extra := range map[string]string{
		"truncate":   `,"partition-spec":{"spec-id":0,"fields":[{"source-id":2,"field-id":1000,"name":"d","transform":"truncate[-5]"}]}}`,
		"day":        `,"partition-spec":{"spec-id":0,"fields":[{"source-id":2,"field-id":1000,"name":"d","transform":"day"}]}}`,
		"properties": `,"properties":{"write.metadata.previous-versions-max":"0"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			r := e.do(t, http.MethodPost, prefixPath("/namespaces/validate/tables"), strings.Replace(base, "%s", name, 1)+extra)
			require.Equal(t, http.StatusBadRequest, r.Status, "body: %s", r.Body)
			assert.Equal(t, "BadRequestException", decodeJSON[spec.ErrorResponse](t, r).Error.Type)
			assert.Equal(t, http.StatusNotFound, e.do(t, http.MethodGet, tablePath(ns, name), nil).Status)
		})
	}
}

// A table registered with metadata that already breaks one of the rules
// (here: a statistics file with a blob type pyiceberg does not know,
// written by another catalog) can still be committed to: only problems a
// commit introduces are refused.
func TestCommitToleratesProblemsAlreadyThere(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.namespace(t, "validate")
	tbl := appendRows(t, e.createTable(t, ns, "src"), 1)
	loc, _ := e.loadRaw(t, ns, "src")
	require.Equal(t, http.StatusNoContent, e.do(t, http.MethodDelete, tablePath(ns, "src"), nil).Status)

	var md map[string]any
	js, err := os.ReadFile(strings.TrimPrefix(loc, "file://"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(js, &md))
	md["statistics"] = []any{map[string]any{
		"snapshot-id": tbl.CurrentSnapshot().SnapshotID, "statistics-path": tbl.Location() + "/metadata/s.puffin",
		"file-size-in-bytes": 10, "file-footer-size-in-bytes": 2,
		"blob-metadata": []any{map[string]any{"type": "vendor-sketch-v9", "snapshot-id": 1, "sequence-number": 1, "fields": []int{1}}},
	}}
	js, err = json.Marshal(md)
	require.NoError(t, err)
	forged := strings.TrimSuffix(loc, ".metadata.json") + "-forged.metadata.json"
	require.NoError(t, os.WriteFile(strings.TrimPrefix(forged, "file://"), js, 0o644))
	_, err = table.ParseMetadataBytes(js)
	require.NoError(t, err, "iceberg-go loads it")

	r := e.do(t, http.MethodPost, prefixPath("/namespaces/validate/register"), spec.RegisterTableRequest{Name: "reg", MetadataLocation: forged})
	require.Equal(t, http.StatusOK, r.Status, "body: %s", r.Body)
	r = e.do(t, http.MethodPost, tablePath(ns, "reg"), `{"requirements":[],"updates":[{"action":"set-properties","updates":{"k":"v"}}]}`)
	require.Equal(t, http.StatusOK, r.Status, "body: %s", r.Body)
	// A second such file is a new problem.
	r = e.do(t, http.MethodPost, tablePath(ns, "reg"), `{"requirements":[],"updates":[{"action":"set-statistics","statistics":{"snapshot-id":`+
		strconv.FormatInt(tbl.CurrentSnapshot().SnapshotID, 10)+`,"statistics-path":"`+tbl.Location()+`/metadata/t.puffin","file-size-in-bytes":10,"file-footer-size-in-bytes":2,"blob-metadata":[{"type":"vendor-sketch-v8","snapshot-id":1,"sequence-number":1,"fields":[1]}]}}]}`)
	requireBadRequestException(t, r, `type "vendor-sketch-v8" is not`)
}

// Regression (issue 13, item 4): a view version without default-namespace
// or summary was accepted and pyiceberg could not load the view
// (ViewVersion requires both).
func TestReplaceViewRefusesUnreadableMetadata(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.namespace(t, "validate")
	_, err := e.cat.CreateView(t.Context(), tableIdent(ns, "v"), viewVersion(t, ns, "select 1"), idDataSchema())
	require.NoError(t, err)
	before, _ := e.loadViewRaw(t, ns, "v")
	version := func(fields string) string {
		return `{"requirements":[],"updates":[{"action":"add-view-version","view-version":{"version-id":2,"schema-id":0,"timestamp-ms":1,` +
			`"representations":[{"type":"sql","sql":"select 2","dialect":"default"}]` + fields + `}},{"action":"set-current-view-version","view-version-id":-1}]}`
	}
	for name, tt := range map[string]struct{ body, want string }{
		"default-namespace null": {version(`,"summary":{"engine-name":"x"},"default-namespace":null`), "default-namespace is required"},
		"summary missing":        {version(`,"default-namespace":["validate"]`), "summary is required"},
	} {
		t.Run(name, func(t *testing.T) {
			r := e.do(t, http.MethodPost, viewPath(ns, "v"), tt.body)
			requireBadRequestException(t, r, tt.want)
			loc, _ := e.loadViewRaw(t, ns, "v")
			assert.Equal(t, before, loc)
		})
	}
	r := e.do(t, http.MethodPost, viewPath(ns, "v"), version(`,"summary":{"engine-name":"x"},"default-namespace":[]`))
	require.Equal(t, http.StatusOK, r.Status, "body: %s", r.Body)
}
