package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/stretchr/testify/require"
)

func TestHealthAndReady(t *testing.T) {
	e := newEnv(t)
	for _, path := range []string{"/healthz", "/readyz"} {
		rsp := e.do(t, http.MethodGet, path, nil)
		require.Equal(t, http.StatusOK, rsp.Status, path)
	}
}

// TestMetadataDeleteAfterCommit: with write.metadata.delete-after-commit.enabled
// and write.metadata.previous-versions-max=2, a table keeps its current
// metadata file and the two before it; older files are deleted from the
// warehouse as they drop out of the metadata log.
func TestMetadataDeleteAfterCommit(t *testing.T) {
	e := newEnv(t)
	ns := e.namespace(t, "m")
	tbl := e.createTable(t, ns, "t")
	txn := tbl.NewTransaction()
	require.NoError(t, txn.SetProperties(iceberg.Properties{
		"write.metadata.delete-after-commit.enabled": "true",
		"write.metadata.previous-versions-max":       "2",
	}))
	tbl, err := txn.Commit(t.Context())
	require.NoError(t, err)
	for i := range 5 {
		txn := tbl.NewTransaction()
		require.NoError(t, txn.SetProperties(iceberg.Properties{"k": strings.Repeat("x", i+1)}))
		tbl, err = txn.Commit(t.Context())
		require.NoError(t, err)
	}
	loc, md := e.loadRaw(t, ns, "t")
	var log []string
	for entry := range md.PreviousFiles() {
		log = append(log, entry.MetadataFile)
	}
	require.Len(t, log, 2, "metadata log trimmed to previous-versions-max")
	files := metadataFiles(t, md.Location())
	require.Len(t, files, 3, "current + 2 previous metadata files remain: %v", files)
	for _, f := range append(log, loc) {
		require.Contains(t, files, f[strings.LastIndex(f, "/")+1:])
	}

	// Without the property, nothing is deleted.
	other := e.createTable(t, ns, "keep")
	for i := range 3 {
		txn := other.NewTransaction()
		require.NoError(t, txn.SetProperties(iceberg.Properties{"k": strings.Repeat("y", i+1)}))
		other, err = txn.Commit(t.Context())
		require.NoError(t, err)
	}
	require.Len(t, metadataFiles(t, other.Location()), 4)
}

// TestPrometheusMetrics checks that /metrics carries per-route request
// counts and latencies, commit conflicts and reported client metrics.
func TestPrometheusMetrics(t *testing.T) {
	e := newEnv(t)
	ns := e.namespace(t, "obs")
	e.createTable(t, ns, "t")
	e.load(t, tableIdent(ns, "t"))
	rsp := e.do(t, http.MethodPost, tablePath(ns, "t")+"/metrics", `{"report-type":"scan-report","table-name":"obs.t","snapshot-id":1,"filter":true,"schema-id":0,"projected-field-ids":[],"projected-field-names":[],"metrics":{}}`)
	require.Equal(t, http.StatusNoContent, rsp.Status, "body: %s", rsp.Body)
	rsp = e.do(t, http.MethodPost, tablePath(ns, "t"), `{"requirements":[{"type":"assert-current-schema-id","current-schema-id":7}],"updates":[]}`)
	require.Equal(t, http.StatusConflict, rsp.Status)

	res, err := http.Get(e.srv.URL + "/metrics")
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	text := string(body)
	for _, want := range []string{
		`tarn_http_requests_total{code="200",method="GET",route="/v1/:prefix/namespaces/:namespace/tables/:table"}`,
		`tarn_http_request_duration_seconds_bucket{method="GET",route="/v1/:prefix/namespaces/:namespace/tables/:table",le=`,
		`tarn_http_requests_total{code="409",method="POST",route="/v1/:prefix/namespaces/:namespace/tables/:table"}`,
		`tarn_catalog_metrics_reports_total{report_type="scan-report"}`,
		`tarn_catalog_commit_conflicts_total`,
	} {
		require.Contains(t, text, want)
	}
}
