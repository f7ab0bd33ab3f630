package server_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/view"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/spec"
)

// viewVersion is a view version with one SQL representation over ns.
func viewVersion(t *testing.T, ns table.Identifier, sql string) *view.Version {
	t.Helper()
	v, err := view.NewVersionFromSQL(1, 0, sql, ns)
	require.NoError(t, err)
	return v
}

// loadViewRaw loads a view over raw HTTP and returns its metadata-location
// and parsed metadata.
func (e *env) loadViewRaw(t *testing.T, ns []string, name string) (string, view.Metadata) {
	t.Helper()
	r := e.do(t, http.MethodGet, viewPath(ns, name), nil)
	require.Equal(t, http.StatusOK, r.Status, "body: %s", r.Body)
	res := decodeJSON[spec.LoadViewResult](t, r)
	md, err := view.ParseMetadataBytes(res.Metadata)
	require.NoError(t, err)
	return res.MetadataLocation, md
}

// TestViews drives the view lifecycle through iceberg-go's REST client:
// create, load, exists, replace (with assert-view-uuid), list, rename
// across namespaces, register from a metadata file, drop.
func TestViews(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.namespace(t, "views")
	other := e.namespace(t, "other")
	id := tableIdent(ns, "v")

	created, err := e.cat.CreateView(t.Context(), id, viewVersion(t, ns, "select id from t"), idDataSchema(),
		catalog.WithViewProperties(iceberg.Properties{"comment": "first"}))
	require.NoError(t, err)
	viewUUID := created.Metadata().ViewUUID()

	t.Run("load", func(t *testing.T) {
		v, err := e.cat.LoadView(t.Context(), id)
		require.NoError(t, err)
		md := v.Metadata()
		assert.Equal(t, created.MetadataLocation(), v.MetadataLocation())
		assert.Equal(t, viewUUID, md.ViewUUID())
		assert.Equal(t, int64(1), md.CurrentVersionID())
		require.Len(t, md.CurrentVersion().Representations, 1)
		assert.Equal(t, "select id from t", md.CurrentVersion().Representations[0].Sql)
		assert.Equal(t, []string(ns), []string(md.CurrentVersion().DefaultNamespace))
		assert.Equal(t, "tarn", md.CurrentVersion().DefaultCatalog, "iceberg-go fills in its catalog name")
		assert.Equal(t, fieldNames(idDataSchema()), fieldNames(md.CurrentSchema()))
		assert.Equal(t, "first", md.Properties()["comment"])
		assert.Len(t, metadataFiles(t, md.Location()), 1)
	})
	t.Run("exists", func(t *testing.T) {
		ok, err := e.cat.CheckViewExists(t.Context(), id)
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, http.StatusNoContent, e.do(t, http.MethodHead, viewPath(ns, "v"), nil).Status)
		ok, err = e.cat.CheckViewExists(t.Context(), tableIdent(ns, "nope"))
		require.NoError(t, err)
		assert.False(t, ok)
		assert.Equal(t, http.StatusNotFound, e.do(t, http.MethodHead, viewPath(ns, "nope"), nil).Status)
	})
	t.Run("create again conflicts", func(t *testing.T) {
		_, err := e.cat.CreateView(t.Context(), id, viewVersion(t, ns, "select 2"), idDataSchema())
		assert.ErrorIs(t, err, catalog.ErrViewAlreadyExists)
	})

	t.Run("replace", func(t *testing.T) {
		before, err := e.cat.LoadView(t.Context(), id)
		require.NoError(t, err)
		v2, err := view.NewVersionFromSQL(2, view.LastAddedID, "select id, data, extra from t", ns)
		require.NoError(t, err)
		replaced, err := e.cat.UpdateView(t.Context(), id,
			[]view.Requirement{view.AssertViewUUID(viewUUID)},
			[]view.Update{
				view.NewAddSchemaUpdate(schemaWithExtra()),
				view.NewAddViewVersionUpdate(v2),
				view.NewSetCurrentVersionUpdate(view.LastAddedID),
				view.NewSetPropertiesUpdate(iceberg.Properties{"comment": "second", "owner": "tarn"}),
			})
		require.NoError(t, err)
		assert.NotEqual(t, before.MetadataLocation(), replaced.MetadataLocation())

		loc, md := e.loadViewRaw(t, ns, "v")
		assert.Equal(t, replaced.MetadataLocation(), loc)
		assert.Equal(t, viewUUID, md.ViewUUID())
		assert.Equal(t, int64(2), md.CurrentVersionID())
		assert.Len(t, md.Versions(), 2)
		assert.Equal(t, "select id, data, extra from t", md.CurrentVersion().Representations[0].Sql)
		assert.Equal(t, []string{"id", "data", "extra"}, fieldNames(md.CurrentSchema()))
		assert.Equal(t, iceberg.Properties{"comment": "second", "owner": "tarn"}, md.Properties())
		assert.Len(t, md.VersionLog(), 2)
		assert.Len(t, metadataFiles(t, md.Location()), 2)

		t.Run("remove-properties and back to version 1", func(t *testing.T) {
			_, err := e.cat.UpdateView(t.Context(), id, []view.Requirement{view.AssertViewUUID(viewUUID)},
				[]view.Update{view.NewRemovePropertiesUpdate([]string{"owner"}), view.NewSetCurrentVersionUpdate(1)})
			require.NoError(t, err)
			_, md := e.loadViewRaw(t, ns, "v")
			assert.Equal(t, int64(1), md.CurrentVersionID())
			assert.Equal(t, "select id from t", md.CurrentVersion().Representations[0].Sql)
			assert.Equal(t, iceberg.Properties{"comment": "second"}, md.Properties())
		})

		t.Run("assert-view-uuid fails", func(t *testing.T) {
			loc, md := e.loadViewRaw(t, ns, "v")
			files := metadataFiles(t, md.Location())
			_, err := e.cat.UpdateView(t.Context(), id, []view.Requirement{view.AssertViewUUID(uuid.New())},
				[]view.Update{view.NewSetPropertiesUpdate(iceberg.Properties{"comment": "lost"})})
			assert.ErrorIs(t, err, rest.ErrCommitFailed)

			r := e.do(t, http.MethodPost, viewPath(ns, "v"), fmt.Sprintf(
				`{"requirements":[{"type":"assert-view-uuid","uuid":%q}],"updates":[{"action":"set-properties","updates":{"comment":"lost"}}]}`, uuid.NewString()))
			requireError(t, r, http.StatusConflict, "CommitFailedException")

			newLoc, newMD := e.loadViewRaw(t, ns, "v")
			assert.Equal(t, loc, newLoc)
			assert.Equal(t, "second", newMD.Properties()["comment"])
			assert.ElementsMatch(t, files, metadataFiles(t, md.Location()), "no metadata file left behind")
		})
		t.Run("invalid update", func(t *testing.T) {
			loc, _ := e.loadViewRaw(t, ns, "v")
			r := e.do(t, http.MethodPost, viewPath(ns, "v"), `{"requirements":[],"updates":[{"action":"set-current-view-version","view-version-id":42}]}`)
			requireBadRequest(t, r)
			newLoc, _ := e.loadViewRaw(t, ns, "v")
			assert.Equal(t, loc, newLoc)
		})
		t.Run("replace a missing view", func(t *testing.T) {
			r := e.do(t, http.MethodPost, viewPath(ns, "missing"), `{"requirements":[],"updates":[{"action":"set-properties","updates":{"a":"b"}}]}`)
			requireError(t, r, http.StatusNotFound, "NoSuchViewException")
		})
	})

	t.Run("list with pagination", func(t *testing.T) {
		paged := e.namespace(t, "paged_views")
		var want []string
		for i := range 25 {
			name := fmt.Sprintf("v%02d", i)
			_, err := e.cat.CreateView(t.Context(), tableIdent(paged, name), viewVersion(t, paged, "select 1"), idDataSchema())
			require.NoError(t, err)
			want = append(want, name)
		}
		e.createTable(t, paged, "a_table") // tables are not views

		var got []string
		var sizes []int
		token := ""
		for range 4 {
			path := prefixPath("/namespaces/paged_views/views?pageSize=10&pageToken=%s", token)
			r := e.do(t, http.MethodGet, path, nil)
			require.Equal(t, http.StatusOK, r.Status, "body: %s", r.Body)
			res := decodeJSON[spec.ListTablesResponse](t, r)
			sizes = append(sizes, len(res.Identifiers))
			for _, v := range res.Identifiers {
				got = append(got, v.Name)
			}
			if res.NextPageToken == nil {
				break
			}
			token = *res.NextPageToken
		}
		assert.Equal(t, []int{10, 10, 5}, sizes)
		assert.Equal(t, want, got)

		var viaClient []string
		for vid, err := range e.cat.ListViews(e.cat.SetPageSize(t.Context(), 10), paged) {
			require.NoError(t, err)
			viaClient = append(viaClient, vid[len(vid)-1])
		}
		assert.Equal(t, want, viaClient)
	})

	t.Run("rename across namespaces", func(t *testing.T) {
		_, err := e.cat.CreateView(t.Context(), tableIdent(ns, "moving"), viewVersion(t, ns, "select 3"), idDataSchema())
		require.NoError(t, err)
		before, _ := e.loadViewRaw(t, ns, "moving")

		moved, err := e.cat.RenameView(t.Context(), tableIdent(ns, "moving"), tableIdent(other, "moved"))
		require.NoError(t, err)
		assert.Equal(t, before, moved.MetadataLocation())
		ok, err := e.cat.CheckViewExists(t.Context(), tableIdent(ns, "moving"))
		require.NoError(t, err)
		assert.False(t, ok)
		_, err = e.cat.LoadView(t.Context(), tableIdent(ns, "moving"))
		assert.ErrorIs(t, err, catalog.ErrNoSuchView)

		rename := func(fromNS []string, from string, toNS []string, to string) spec.RenameTableRequest {
			return spec.RenameTableRequest{
				Source:      &spec.TableIdentifier{Namespace: fromNS, Name: from},
				Destination: &spec.TableIdentifier{Namespace: toNS, Name: to},
			}
		}
		tests := []struct {
			name       string
			req        spec.RenameTableRequest
			wantStatus int
			wantType   string
		}{
			{"to an existing view", rename(other, "moved", ns, "v"), http.StatusConflict, "AlreadyExistsException"},
			{"from a missing view", rename(ns, "missing", other, "x"), http.StatusNotFound, "NoSuchViewException"},
			{"to a missing namespace", rename(other, "moved", []string{"nowhere"}, "x"), http.StatusNotFound, "NoSuchNamespaceException"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				r := e.do(t, http.MethodPost, prefixPath("/views/rename"), tt.req)
				requireError(t, r, tt.wantStatus, tt.wantType)
				loc, _ := e.loadViewRaw(t, other, "moved")
				assert.Equal(t, before, loc)
			})
		}
	})

	t.Run("register from an existing metadata file", func(t *testing.T) {
		_, err := e.cat.CreateView(t.Context(), tableIdent(ns, "regsrc"), viewVersion(t, ns, "select 5"), idDataSchema())
		require.NoError(t, err)
		loc, md := e.loadViewRaw(t, ns, "regsrc")
		// While regsrc exists its location is taken: a second view there
		// would share (and on replace, rewrite) its metadata directory.
		r := e.do(t, http.MethodPost, prefixPath("/namespaces/other/register-view"), spec.RegisterViewRequest{Name: "registered", MetadataLocation: loc})
		requireError(t, r, http.StatusBadRequest, "IllegalArgumentException")
		require.NoError(t, e.cat.DropView(t.Context(), tableIdent(ns, "regsrc")))
		registered, err := e.cat.RegisterView(t.Context(), tableIdent(other, "registered"), loc)
		require.NoError(t, err)
		assert.Equal(t, loc, registered.MetadataLocation())
		assert.Equal(t, md.ViewUUID(), registered.Metadata().ViewUUID())
		got, err := e.cat.LoadView(t.Context(), tableIdent(other, "registered"))
		require.NoError(t, err)
		assert.Equal(t, md.CurrentVersionID(), got.Metadata().CurrentVersionID())

		tbl := e.createTable(t, ns, "regtable")
		tests := []struct {
			name       string
			req        spec.RegisterViewRequest
			wantStatus int
			wantType   string
		}{
			{"onto a taken name", spec.RegisterViewRequest{Name: "registered", MetadataLocation: loc}, http.StatusConflict, "AlreadyExistsException"},
			{"a missing file", spec.RegisterViewRequest{Name: "r2", MetadataLocation: e.srv.Warehouse.Location + "/nope.metadata.json"}, http.StatusBadRequest, "IllegalArgumentException"},
			{"a file outside the warehouse", spec.RegisterViewRequest{Name: "r3", MetadataLocation: "file:///etc/passwd"}, http.StatusBadRequest, "IllegalArgumentException"},
			{"a table's metadata file", spec.RegisterViewRequest{Name: "r4", MetadataLocation: tbl.MetadataLocation()}, http.StatusBadRequest, "IllegalArgumentException"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				r := e.do(t, http.MethodPost, prefixPath("/namespaces/other/register-view"), tt.req)
				requireError(t, r, tt.wantStatus, tt.wantType)
			})
		}
		t.Run("into a missing namespace", func(t *testing.T) {
			_, err := e.cat.RegisterView(t.Context(), tableIdent(table.Identifier{"nowhere"}, "r"), loc)
			assert.ErrorIs(t, err, catalog.ErrNoSuchNamespace)
		})
	})

	t.Run("drop", func(t *testing.T) {
		_, err := e.cat.CreateView(t.Context(), tableIdent(ns, "dropme"), viewVersion(t, ns, "select 4"), idDataSchema())
		require.NoError(t, err)
		require.NoError(t, e.cat.DropView(t.Context(), tableIdent(ns, "dropme")))
		ok, err := e.cat.CheckViewExists(t.Context(), tableIdent(ns, "dropme"))
		require.NoError(t, err)
		assert.False(t, ok)
		assert.ErrorIs(t, e.cat.DropView(t.Context(), tableIdent(ns, "dropme")), catalog.ErrNoSuchView)
		requireError(t, e.do(t, http.MethodDelete, viewPath(ns, "dropme"), nil), http.StatusNotFound, "NoSuchViewException")

		var names []string
		for vid, err := range e.cat.ListViews(t.Context(), ns) {
			require.NoError(t, err)
			names = append(names, vid[len(vid)-1])
		}
		assert.False(t, slices.Contains(names, "dropme"))
		assert.Contains(t, names, "v")
	})
}

// TestViewsAndTablesShareNames checks that tables and views share one
// identifier space (409 whichever way round) and that neither loads,
// drops or commits as the other (404 of the asked-for kind).
func TestViewsAndTablesShareNames(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.namespace(t, "shared")
	tbl := e.createTable(t, ns, "a_table")
	vw, err := e.cat.CreateView(t.Context(), tableIdent(ns, "a_view"), viewVersion(t, ns, "select 1"), idDataSchema())
	require.NoError(t, err)
	_, err = e.cat.CreateView(t.Context(), tableIdent(ns, "v2"), viewVersion(t, ns, "select 2"), idDataSchema())
	require.NoError(t, err)
	e.createTable(t, ns, "t2")

	viewBody := spec.CreateViewRequest{Name: "a_table", Schema: idDataSchema(), ViewVersion: viewVersion(t, ns, "select 1"), Properties: map[string]string{}}
	rename := func(from, to string) spec.RenameTableRequest {
		return spec.RenameTableRequest{
			Source:      &spec.TableIdentifier{Namespace: ns, Name: from},
			Destination: &spec.TableIdentifier{Namespace: ns, Name: to},
		}
	}
	tests := []struct {
		name       string
		method     string
		path       string
		body       any
		wantStatus int
		wantType   string
	}{
		{"create a view over a table", http.MethodPost, prefixPath("/namespaces/shared/views"), viewBody, http.StatusConflict, "AlreadyExistsException"},
		{"create a table over a view", http.MethodPost, prefixPath("/namespaces/shared/tables"), spec.CreateTableRequest{Name: "a_view", Schema: idDataSchema()}, http.StatusConflict, "AlreadyExistsException"},
		{"stage-create a table over a view", http.MethodPost, prefixPath("/namespaces/shared/tables"), spec.CreateTableRequest{Name: "a_view", Schema: idDataSchema(), StageCreate: true}, http.StatusConflict, "AlreadyExistsException"},
		{"rename a table onto a view", http.MethodPost, prefixPath("/tables/rename"), rename("t2", "a_view"), http.StatusConflict, "AlreadyExistsException"},
		{"rename a view onto a table", http.MethodPost, prefixPath("/views/rename"), rename("v2", "a_table"), http.StatusConflict, "AlreadyExistsException"},
		{"register a view over a table", http.MethodPost, prefixPath("/namespaces/shared/register-view"), spec.RegisterViewRequest{Name: "a_table", MetadataLocation: vw.MetadataLocation()}, http.StatusConflict, "AlreadyExistsException"},
		{"register a table over a view", http.MethodPost, prefixPath("/namespaces/shared/register"), spec.RegisterTableRequest{Name: "a_view", MetadataLocation: tbl.MetadataLocation()}, http.StatusConflict, "AlreadyExistsException"},
		{"load a view as a table", http.MethodGet, tablePath(ns, "a_view"), nil, http.StatusNotFound, "NoSuchTableException"},
		{"load a table as a view", http.MethodGet, viewPath(ns, "a_table"), nil, http.StatusNotFound, "NoSuchViewException"},
		{"drop a view as a table", http.MethodDelete, tablePath(ns, "a_view"), nil, http.StatusNotFound, "NoSuchTableException"},
		{"drop a table as a view", http.MethodDelete, viewPath(ns, "a_table"), nil, http.StatusNotFound, "NoSuchViewException"},
		{"commit to a view as a table", http.MethodPost, tablePath(ns, "a_view"), `{"requirements":[],"updates":[{"action":"set-properties","updates":{"a":"b"}}]}`, http.StatusNotFound, "NoSuchTableException"},
		{"replace a table as a view", http.MethodPost, viewPath(ns, "a_table"), `{"requirements":[],"updates":[{"action":"set-properties","updates":{"a":"b"}}]}`, http.StatusNotFound, "NoSuchViewException"},
		{"rename a view as a table", http.MethodPost, prefixPath("/tables/rename"), rename("a_view", "x"), http.StatusNotFound, "NoSuchTableException"},
		{"rename a table as a view", http.MethodPost, prefixPath("/views/rename"), rename("a_table", "x"), http.StatusNotFound, "NoSuchViewException"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(t, tt.method, tt.path, tt.body)
			requireError(t, r, tt.wantStatus, tt.wantType)

			// Both still stand as they were.
			tblLoc, _ := e.loadRaw(t, ns, "a_table")
			assert.Equal(t, tbl.MetadataLocation(), tblLoc)
			viewLoc, _ := e.loadViewRaw(t, ns, "a_view")
			assert.Equal(t, vw.MetadataLocation(), viewLoc)
		})
	}

	t.Run("HEAD answers per kind", func(t *testing.T) {
		assert.Equal(t, http.StatusNotFound, e.do(t, http.MethodHead, tablePath(ns, "a_view"), nil).Status)
		assert.Equal(t, http.StatusNotFound, e.do(t, http.MethodHead, viewPath(ns, "a_table"), nil).Status)
		assert.Equal(t, http.StatusNoContent, e.do(t, http.MethodHead, tablePath(ns, "a_table"), nil).Status)
		assert.Equal(t, http.StatusNoContent, e.do(t, http.MethodHead, viewPath(ns, "a_view"), nil).Status)
	})
	t.Run("through the client", func(t *testing.T) {
		_, err := e.cat.LoadTable(t.Context(), tableIdent(ns, "a_view"))
		assert.ErrorIs(t, err, catalog.ErrNoSuchTable)
		_, err = e.cat.LoadView(t.Context(), tableIdent(ns, "a_table"))
		assert.ErrorIs(t, err, catalog.ErrNoSuchView)
		_, err = e.cat.CreateView(t.Context(), tableIdent(ns, "a_table"), viewVersion(t, ns, "select 1"), idDataSchema())
		assert.ErrorIs(t, err, catalog.ErrViewAlreadyExists)
		_, err = e.cat.CreateTable(t.Context(), tableIdent(ns, "a_view"), idDataSchema())
		assert.ErrorIs(t, err, catalog.ErrTableAlreadyExists)
		ok, err := e.cat.CheckTableExists(t.Context(), tableIdent(ns, "a_view"))
		require.NoError(t, err)
		assert.False(t, ok)
		ok, err = e.cat.CheckViewExists(t.Context(), tableIdent(ns, "a_table"))
		require.NoError(t, err)
		assert.False(t, ok)
	})
	t.Run("listings keep kinds apart", func(t *testing.T) {
		var tables, views []string
		for id, err := range e.cat.ListTables(t.Context(), ns) {
			require.NoError(t, err)
			tables = append(tables, id[len(id)-1])
		}
		for id, err := range e.cat.ListViews(t.Context(), ns) {
			require.NoError(t, err)
			views = append(views, id[len(id)-1])
		}
		assert.Equal(t, []string{"a_table", "t2"}, tables)
		assert.Equal(t, []string{"a_view", "v2"}, views)
	})
}
