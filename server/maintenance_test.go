package server_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/internal/testserver"
	"github.com/tarnhq/tarn/maintenance"
	"github.com/tarnhq/tarn/server"
	"github.com/tarnhq/tarn/spec"
)

// maintenanceFixture serves a catalog holding air.flights (12 appends of
// 10 rows, one small file each) with a maintenance scheduler, or none.
func maintenanceFixture(t *testing.T, withScheduler bool) string {
	t.Helper()
	cat, wh, _ := testserver.NewCatalog(t, t.TempDir(), nil)
	require.NoError(t, cat.CreateNamespace(t.Context(), catalog.Namespace{"air"}, nil))
	smallFilesTable(t, cat, wh, catalog.Ident{Namespace: catalog.Namespace{"air"}, Name: "flights"})
	return serveMaintenance(t, cat, withScheduler)
}

// smallFilesTable creates table id (maintenance enabled) with 12
// appends of 10 rows, one small file each.
func smallFilesTable(t *testing.T, cat *catalog.Catalog, wh *catalog.Warehouse, id catalog.Ident) {
	t.Helper()
	ctx := t.Context()
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "distance", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	_, err := cat.CreateTable(ctx, wh, id.Namespace, spec.CreateTableRequest{Name: id.Name, Schema: sc,
		Properties: map[string]string{maintenance.EnabledProperty: "true"}})
	require.NoError(t, err)
	tio := cat.TableIO(wh)
	asc, err := table.SchemaToArrowSchema(sc, nil, true, false)
	require.NoError(t, err)
	ident := append(table.Identifier{}, id.Namespace...)
	ident = append(ident, id.Name)
	for i := range 12 {
		tbl, err := tio.LoadTable(ctx, ident)
		require.NoError(t, err)
		b := array.NewRecordBuilder(memory.DefaultAllocator, asc)
		for j := range 10 {
			b.Field(0).(*array.Int64Builder).Append(int64(i*10 + j))
		}
		rec := b.NewRecordBatch()
		at := array.NewTableFromRecords(asc, []arrow.RecordBatch{rec})
		txn := tbl.NewTransaction()
		require.NoError(t, txn.AppendTable(ctx, at, 100, nil))
		_, err = txn.Commit(ctx)
		require.NoError(t, err)
		at.Release()
		rec.Release()
		b.Release()
	}
}

// serveMaintenance serves cat, with a maintenance scheduler (passes only
// on request) or none.
func serveMaintenance(t *testing.T, cat *catalog.Catalog, withScheduler bool) string {
	t.Helper()
	cfg := server.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if withScheduler {
		s, err := maintenance.New(maintenance.Config{Disabled: true}, maintenance.Deps{Catalog: cat,
			Logger: cfg.Logger, Metrics: prometheus.NewRegistry()})
		require.NoError(t, err)
		cfg.Maintenance = s
	}
	hs := httptest.NewServer(server.New(cat, cfg).Handler())
	t.Cleanup(hs.Close)
	return hs.URL
}

func call(t *testing.T, method, url, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

func TestMaintenanceAPI(t *testing.T) {
	t.Parallel()
	url := maintenanceFixture(t, true)

	code, body := call(t, http.MethodPost, url+"/management/v1/maintenance/run", `{"table": "air.flights", "jobs": ["compact"]}`)
	require.Equal(t, http.StatusOK, code, string(body))
	var run server.RunMaintenanceResponse
	require.NoError(t, json.Unmarshal(body, &run))
	require.Len(t, run.Results, 1)
	r := run.Results[0]
	require.Equal(t, "compact", r.Job)
	require.EqualValues(t, 12, r.FilesBefore)
	require.EqualValues(t, 1, r.FilesAfter)
	require.Equal(t, 12, r.FilesRewritten)

	code, body = call(t, http.MethodGet, url+"/management/v1/maintenance", "")
	require.Equal(t, http.StatusOK, code, string(body))
	var st maintenance.Status
	require.NoError(t, json.Unmarshal(body, &st))
	require.False(t, st.Enabled, "periodic passes are off in this fixture")
	require.Len(t, st.Tables, 1)
	require.Equal(t, "air.flights", st.Tables[0].Table)
	require.True(t, st.Tables[0].Enabled, "tarn.maintenance.enabled=true")
	require.EqualValues(t, 1, st.Tables[0].Files)
	require.EqualValues(t, 1, st.Tables[0].Jobs["compact"].Runs)
	require.Contains(t, string(body), `"files-rewritten":12`)

	// Every job when none is named.
	code, body = call(t, http.MethodPost, url+"/management/v1/maintenance/run", `{"table": "air.flights"}`)
	require.Equal(t, http.StatusOK, code, string(body))
	require.NoError(t, json.Unmarshal(body, &run))
	require.Len(t, run.Results, len(maintenance.Jobs))

	for _, tc := range []struct {
		name, body string
		status     int
		typ        string
	}{
		{"unknown job", `{"table": "air.flights", "jobs": ["vacuum"]}`, 400, "IllegalArgumentException"},
		{"no such table", `{"table": "air.nope"}`, 404, "NoSuchTableException"},
		{"no namespace", `{"table": "flights"}`, 400, "IllegalArgumentException"},
		{"malformed", `{"table": `, 400, "BadRequestException"},
		{"misspelt field", `{"table": "air.flights", "job": ["compact"]}`, 400, "BadRequestException"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := call(t, http.MethodPost, url+"/management/v1/maintenance/run", tc.body)
			require.Equal(t, tc.status, code, string(body))
			var em spec.ErrorResponse
			require.NoError(t, json.Unmarshal(body, &em), string(body))
			require.Equal(t, tc.typ, em.Error.Type)
			require.Equal(t, tc.status, em.Error.Code)
		})
	}
}

func TestMaintenanceAPINotConfigured(t *testing.T) {
	t.Parallel()
	url := maintenanceFixture(t, false)
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		path := "/management/v1/maintenance"
		if m == http.MethodPost {
			path += "/run"
		}
		code, body := call(t, m, url+path, `{"table": "air.flights"}`)
		require.Equal(t, http.StatusServiceUnavailable, code, string(body))
		var em spec.ErrorResponse
		require.NoError(t, json.Unmarshal(body, &em))
		require.Contains(t, em.Error.Message, "maintenance not configured")
	}
}
