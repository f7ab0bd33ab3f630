package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/spec"
)

// TestReportMetricsForStagedCreate: Spark's CREATE TABLE AS SELECT stages
// the table (stage-create), writes the data and, before it commits the
// create, Iceberg's Java client posts the append's commit report to
// .../tables/{table}/metrics. Tarn answered 404 NoSuchTableException because
// the table was not in the catalog yet, and Spark logged a RESTException
// warning on every CTAS. A report for a table that does not exist (yet) is
// accepted, as Java's reference server does; only a missing namespace is 404.
func TestReportMetricsForStagedCreate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := []string{"ctas"}
	e.namespace(t, ns...)
	e.stageCreate(t, ns, spec.CreateTableRequest{Name: "staged", Schema: idDataSchema()})

	report := `{"report-type":"commit-report","table-name":"tarn.ctas.staged","snapshot-id":1,"sequence-number":1,"operation":"append","metrics":{}}`
	rsp := e.do(t, http.MethodPost, tablePath(ns, "staged")+"/metrics", report)
	require.Equal(t, http.StatusNoContent, rsp.Status, "body: %s", rsp.Body)

	rsp = e.do(t, http.MethodPost, tablePath([]string{"missing"}, "staged")+"/metrics", report)
	requireError(t, rsp, http.StatusNotFound, spec.NoSuchNamespace.Type)
}
