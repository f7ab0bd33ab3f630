package server_test

import (
	"encoding/json"
	"io/fs"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/spec"
)

// createUpdates are the updates iceberg-go (commitStagedCreate), Java
// (RESTSessionCatalog.createChanges) and pyiceberg send to commit a staged
// create from its staged metadata.
func createUpdates(md table.Metadata) []table.Update {
	sp := md.PartitionSpec()
	so := md.SortOrder()
	return []table.Update{
		table.NewAssignUUIDUpdate(md.TableUUID()),
		table.NewUpgradeFormatVersionUpdate(md.Version()),
		table.NewAddSchemaUpdate(md.CurrentSchema()),
		table.NewSetCurrentSchemaUpdate(-1),
		table.NewAddPartitionSpecUpdate(&sp, true),
		table.NewSetDefaultSpecUpdate(-1),
		table.NewAddSortOrderUpdate(&so),
		table.NewSetDefaultSortOrderUpdate(-1),
		table.NewSetLocationUpdate(md.Location()),
		table.NewSetPropertiesUpdate(md.Properties()),
	}
}

// commitBody is a CommitTableRequest body for ns.name.
func commitBody(t *testing.T, ns []string, name string, reqs []table.Requirement, updates []table.Update) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"identifier":   spec.TableIdentifier{Namespace: ns, Name: name},
		"requirements": reqs,
		"updates":      updates,
	})
	require.NoError(t, err)
	return string(b)
}

// stageCreate stage-creates a table over raw HTTP from req (a
// spec.CreateTableRequest or a map of its JSON fields) and returns its
// metadata.
func (e *env) stageCreate(t *testing.T, ns []string, req any) table.Metadata {
	t.Helper()
	switch r := req.(type) {
	case spec.CreateTableRequest:
		r.StageCreate = true
		req = r
	case map[string]any:
		r["stage-create"] = true
	default:
		t.Fatalf("stageCreate: unexpected request type %T", req)
	}
	r := e.do(t, http.MethodPost, prefixPath("/namespaces/%s/tables", encodeNamespace(ns)), req)
	require.Equal(t, http.StatusOK, r.Status, "body: %s", r.Body)
	var raw map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(r.Body, &raw))
	if loc, ok := raw["metadata-location"]; ok {
		assert.Equal(t, "null", string(loc), "a staged table has no metadata file")
	}
	md, err := table.ParseMetadataBytes(raw["metadata"])
	require.NoError(t, err)
	return md
}

// warehouseFiles lists every file in the warehouse directory.
func warehouseFiles(t *testing.T, e *env) []string {
	t.Helper()
	var files []string
	root := strings.TrimPrefix(e.srv.Warehouse.Location, "file://")
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return err
	}))
	return files
}

// TestStageCreate stage-creates tables over raw HTTP (nothing persisted),
// then commits them with assert-create and the create updates clients
// send; and creates one through iceberg-go's staged CreateTable.
func TestStageCreate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.namespace(t, "staging")
	order := dataDescOrder(t)

	t.Run("nothing is persisted until the commit", func(t *testing.T) {
		md := e.stageCreate(t, ns, map[string]any{
			"name": "staged", "schema": idDataSchema(), "partition-spec": bucketSpec(), "write-order": order,
			"properties": map[string]string{"owner": "stager"},
		})
		assert.Equal(t, 2, md.Version())
		assert.True(t, strings.HasPrefix(md.Location(), e.srv.Warehouse.Location+"/staging/staged-"), "location %s", md.Location())

		assert.Equal(t, http.StatusNotFound, e.do(t, http.MethodHead, tablePath(ns, "staged"), nil).Status)
		requireError(t, e.do(t, http.MethodGet, tablePath(ns, "staged"), nil), http.StatusNotFound, "NoSuchTableException")
		exists, err := e.cat.CheckTableExists(t.Context(), tableIdent(ns, "staged"))
		require.NoError(t, err)
		assert.False(t, exists)
		assert.Empty(t, warehouseFiles(t, e), "no file is written for a staged create")

		r := e.do(t, http.MethodPost, tablePath(ns, "staged"), commitBody(t, ns, "staged", []table.Requirement{table.AssertCreate()}, createUpdates(md)))
		require.Equal(t, http.StatusOK, r.Status, "body: %s", r.Body)
		res := decodeJSON[spec.CommitTableResponse](t, r)
		assert.True(t, strings.HasPrefix(res.MetadataLocation, md.Location()+"/metadata/00000-"), "metadata %s", res.MetadataLocation)

		tbl := e.load(t, tableIdent(ns, "staged"))
		assert.Equal(t, res.MetadataLocation, tbl.MetadataLocation())
		assert.Equal(t, md.TableUUID(), tbl.Metadata().TableUUID())
		assert.Equal(t, md.Location(), tbl.Location())
		assert.Equal(t, 2, tbl.Metadata().Version())
		assert.Equal(t, "stager", tbl.Properties()["owner"])
		assert.Equal(t, fieldNames(idDataSchema()), fieldNames(tbl.Schema()))
		sp := tbl.Spec()
		require.Equal(t, 1, sp.NumFields())
		assert.Equal(t, "id_bucket", sp.Field(0).Name)
		assert.Equal(t, iceberg.BucketTransform{NumBuckets: 4}, sp.Field(0).Transform)
		require.Equal(t, 1, tbl.SortOrder().Len())
		assert.Equal(t, table.SortDESC, tbl.SortOrder().Field(0).Direction)
		assert.Empty(t, tbl.Metadata().Snapshots())
		assert.Len(t, metadataFiles(t, tbl.Location()), 1)

		// The table takes data like any other.
		tbl = appendRows(t, tbl, 5, 6)
		count, sum := scanCountAndSum(t, tbl)
		assert.Equal(t, int64(2), count)
		assert.Equal(t, int64(11), sum)

		t.Run("committing the create again conflicts", func(t *testing.T) {
			before := e.load(t, tableIdent(ns, "staged")).MetadataLocation()
			r := e.do(t, http.MethodPost, tablePath(ns, "staged"), commitBody(t, ns, "staged", []table.Requirement{table.AssertCreate()}, createUpdates(md)))
			requireError(t, r, http.StatusConflict, "CommitFailedException")
			assert.Equal(t, before, e.load(t, tableIdent(ns, "staged")).MetadataLocation())
		})
	})

	t.Run("pyiceberg's wire form", func(t *testing.T) {
		md := e.stageCreate(t, ns, spec.CreateTableRequest{Name: "py", Schema: idDataSchema(), Properties: map[string]string{"created-by": "pyiceberg"}})
		schema, err := json.Marshal(md.CurrentSchema())
		require.NoError(t, err)
		// As pyiceberg 0.9 sends it: add-schema with the deprecated
		// last-column-id, unpartitioned spec and unsorted order in full.
		body := `{"identifier":{"namespace":["staging"],"name":"py"},
			"requirements":[{"type":"assert-create"}],
			"updates":[
				{"action":"assign-uuid","uuid":"` + md.TableUUID().String() + `"},
				{"action":"upgrade-format-version","format-version":2},
				{"action":"add-schema","schema":` + string(schema) + `,"last-column-id":2},
				{"action":"set-current-schema","schema-id":-1},
				{"action":"add-spec","spec":{"spec-id":0,"fields":[]}},
				{"action":"set-default-spec","spec-id":-1},
				{"action":"add-sort-order","sort-order":{"order-id":0,"fields":[]}},
				{"action":"set-default-sort-order","sort-order-id":-1},
				{"action":"set-location","location":"` + md.Location() + `"},
				{"action":"set-properties","updates":{"created-by":"pyiceberg"}}
			]}`
		r := e.do(t, http.MethodPost, tablePath(ns, "py"), body)
		require.Equal(t, http.StatusOK, r.Status, "body: %s", r.Body)
		tbl := e.load(t, tableIdent(ns, "py"))
		assert.Equal(t, md.TableUUID(), tbl.Metadata().TableUUID())
		assert.Equal(t, "pyiceberg", tbl.Properties()["created-by"])
		assert.True(t, tbl.Spec().IsUnpartitioned())
		assert.True(t, tbl.SortOrder().IsUnsorted())
		assert.Equal(t, 2, tbl.Metadata().LastColumnID())
	})

	formatTests := []struct {
		name    string
		version string
		want    int
	}{
		{"format version 1", "1", 1},
		{"format version 3", "3", 3},
	}
	for _, tt := range formatTests {
		t.Run(tt.name, func(t *testing.T) {
			name := "v" + tt.version
			md := e.stageCreate(t, ns, spec.CreateTableRequest{Name: name, Schema: idDataSchema(), Properties: map[string]string{table.PropertyFormatVersion: tt.version}})
			assert.Equal(t, tt.want, md.Version())
			r := e.do(t, http.MethodPost, tablePath(ns, name), commitBody(t, ns, name, []table.Requirement{table.AssertCreate()}, createUpdates(md)))
			require.Equal(t, http.StatusOK, r.Status, "body: %s", r.Body)
			tbl := e.load(t, tableIdent(ns, name))
			assert.Equal(t, tt.want, tbl.Metadata().Version())
			tbl = appendRows(t, tbl, 1, 2, 3)
			count, _ := scanCountAndSum(t, tbl)
			assert.Equal(t, int64(3), count)
		})
	}

	t.Run("commit without assert-create finds no table", func(t *testing.T) {
		md := e.stageCreate(t, ns, spec.CreateTableRequest{Name: "noassert", Schema: idDataSchema()})
		r := e.do(t, http.MethodPost, tablePath(ns, "noassert"), commitBody(t, ns, "noassert", nil, createUpdates(md)))
		requireError(t, r, http.StatusNotFound, "NoSuchTableException")
		assert.Equal(t, http.StatusNotFound, e.do(t, http.MethodHead, tablePath(ns, "noassert"), nil).Status)
	})

	t.Run("name taken between stage and commit", func(t *testing.T) {
		md := e.stageCreate(t, ns, spec.CreateTableRequest{Name: "raced", Schema: idDataSchema()})
		winner := e.createTable(t, ns, "raced")
		files := warehouseFiles(t, e)
		r := e.do(t, http.MethodPost, tablePath(ns, "raced"), commitBody(t, ns, "raced", []table.Requirement{table.AssertCreate()}, createUpdates(md)))
		requireError(t, r, http.StatusConflict, "CommitFailedException")
		assert.Equal(t, winner.MetadataLocation(), e.load(t, tableIdent(ns, "raced")).MetadataLocation())
		assert.ElementsMatch(t, files, warehouseFiles(t, e), "the losing create leaves no file")
	})

	t.Run("name taken by a view between stage and commit", func(t *testing.T) {
		md := e.stageCreate(t, ns, spec.CreateTableRequest{Name: "viewed", Schema: idDataSchema()})
		_, err := e.cat.CreateView(t.Context(), tableIdent(ns, "viewed"), viewVersion(t, ns, "select 1"), idDataSchema())
		require.NoError(t, err)
		r := e.do(t, http.MethodPost, tablePath(ns, "viewed"), commitBody(t, ns, "viewed", []table.Requirement{table.AssertCreate()}, createUpdates(md)))
		requireError(t, r, http.StatusConflict, "AlreadyExistsException")
	})

	t.Run("namespace dropped between stage and commit", func(t *testing.T) {
		gone := e.namespace(t, "gone")
		md := e.stageCreate(t, gone, spec.CreateTableRequest{Name: "t", Schema: idDataSchema()})
		require.NoError(t, e.cat.DropNamespace(t.Context(), gone))
		files := warehouseFiles(t, e)
		r := e.do(t, http.MethodPost, tablePath(gone, "t"), commitBody(t, gone, "t", []table.Requirement{table.AssertCreate()}, createUpdates(md)))
		requireError(t, r, http.StatusNotFound, "NoSuchNamespaceException")
		assert.ElementsMatch(t, files, warehouseFiles(t, e))
	})

	t.Run("stage-create of an existing name", func(t *testing.T) {
		r := e.do(t, http.MethodPost, prefixPath("/namespaces/staging/tables"), spec.CreateTableRequest{Name: "staged", Schema: idDataSchema(), StageCreate: true})
		requireError(t, r, http.StatusConflict, "AlreadyExistsException")
	})

	t.Run("stage-create in a missing namespace", func(t *testing.T) {
		r := e.do(t, http.MethodPost, prefixPath("/namespaces/nowhere/tables"), spec.CreateTableRequest{Name: "t", Schema: idDataSchema(), StageCreate: true})
		requireError(t, r, http.StatusNotFound, "NoSuchNamespaceException")
	})

	t.Run("through iceberg-go's staged CreateTable", func(t *testing.T) {
		// iceberg-go has no CreateTableTransaction; CreateTable with staged
		// updates sends stage-create and then commits assert-create with the
		// create updates followed by the staged ones.
		tbl, err := e.cat.CreateTable(t.Context(), tableIdent(ns, "go"), idDataSchema(),
			catalog.WithProperties(iceberg.Properties{"a": "1"}),
			catalog.WithStagedUpdates(table.NewSetPropertiesUpdate(iceberg.Properties{"b": "2"})))
		require.NoError(t, err)
		loaded := e.load(t, tableIdent(ns, "go"))
		assert.Equal(t, tbl.MetadataLocation(), loaded.MetadataLocation())
		assert.Equal(t, tbl.Metadata().TableUUID(), loaded.Metadata().TableUUID())
		assert.Equal(t, "1", loaded.Properties()["a"])
		assert.Equal(t, "2", loaded.Properties()["b"])
		assert.Len(t, metadataFiles(t, loaded.Location()), 1, "one metadata file: the staged create wrote none")
	})
}
