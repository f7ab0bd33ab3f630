package server_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/internal/testserver"
	"github.com/tarnhq/tarn/server"
)

func TestHealthAndReady(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, path := range []string{"/healthz", "/readyz"} {
		rsp := e.do(t, http.MethodGet, path, nil)
		require.Equal(t, http.StatusOK, rsp.Status, path)
	}
	// Without a topic manager there is nothing but the catalog to report.
	rsp := e.do(t, http.MethodGet, "/readyz", nil)
	require.JSONEq(t, `{"status": "ready", "checks": {"catalog": {"status": "ok"}}}`, string(rsp.Body))
}

// TestMetadataDeleteAfterCommit: with write.metadata.delete-after-commit.enabled
// and write.metadata.previous-versions-max=2, a table keeps its current
// metadata file and the two before it; older files are deleted from the
// warehouse as they drop out of the metadata log.
func TestMetadataDeleteAfterCommit(t *testing.T) {
	t.Parallel()
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

// TestPrometheusMetrics checks that /metrics counts what happened: each
// request once under its route template, method and status (and once in
// the latency histogram), the create as a commit, the refused commit as
// a conflict and the client's report by type. The counters are the
// test server's own (testserver.Server.Metrics), so no other test moves
// them; the test compares them before and after its own setup requests.
func TestPrometheusMetrics(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.namespace(t, "obs")
	const tableRoute = "/v1/:prefix/namespaces/:namespace/tables/:table"
	const tablesRoute = "/v1/:prefix/namespaces/:namespace/tables"
	before := scrapeMetrics(t, e.srv.URL)
	e.createTable(t, ns, "t")
	e.load(t, tableIdent(ns, "t"))
	rsp := e.do(t, http.MethodPost, tablePath(ns, "t")+"/metrics", `{"report-type":"scan-report","table-name":"obs.t","snapshot-id":1,"filter":true,"schema-id":0,"projected-field-ids":[],"projected-field-names":[],"metrics":{}}`)
	require.Equal(t, http.StatusNoContent, rsp.Status, "body: %s", rsp.Body)
	rsp = e.do(t, http.MethodPost, tablePath(ns, "t"), `{"requirements":[{"type":"assert-current-schema-id","current-schema-id":7}],"updates":[]}`)
	require.Equal(t, http.StatusConflict, rsp.Status)
	after := scrapeMetrics(t, e.srv.URL)

	for series, want := range map[string]float64{
		`tarn_http_requests_total{code="200",method="POST",route="` + tablesRoute + `"}`:                1,
		`tarn_http_requests_total{code="200",method="GET",route="` + tableRoute + `"}`:                  1,
		`tarn_http_requests_total{code="204",method="POST",route="` + tableRoute + `/metrics"}`:         1,
		`tarn_http_requests_total{code="409",method="POST",route="` + tableRoute + `"}`:                 1,
		`tarn_http_requests_total{code="200",method="POST",route="` + tableRoute + `"}`:                 0,
		`tarn_http_request_duration_seconds_count{method="GET",route="` + tableRoute + `"}`:             1,
		`tarn_http_request_duration_seconds_count{method="POST",route="` + tableRoute + `"}`:            1,
		`tarn_http_request_duration_seconds_bucket{le="+Inf",method="POST",route="` + tableRoute + `"}`: 1,
		`tarn_catalog_metrics_reports_total{report_type="scan-report"}`:                                 1,
		`tarn_catalog_metrics_reports_total{report_type="commit-report"}`:                               0,
		`tarn_catalog_commits_total`:          1,
		`tarn_catalog_commit_conflicts_total`: 1,
		`tarn_catalog_commit_retries_total`:   0,
	} {
		assert.Equal(t, want, after[series]-before[series], "%s: before %v, after %v", series, before[series], after[series])
		if want > 0 {
			assert.Contains(t, after, series)
		}
	}
	// The latency histogram observed the requests' real durations: its
	// sum moved, and no more than the test took.
	sum := `tarn_http_request_duration_seconds_sum{method="GET",route="` + tableRoute + `"}`
	assert.Positive(t, after[sum]-before[sum])
}

// scrapeMetrics GETs base/metrics and returns every sample by series,
// `name{label="value",...}` with labels sorted by name (histograms as
// name_bucket / name_sum / name_count, as exposed).
func scrapeMetrics(t *testing.T, base string) map[string]float64 {
	t.Helper()
	res, err := http.Get(base + "/metrics")
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(res.Body)
	require.NoError(t, err)
	out := map[string]float64{}
	series := func(name string, labels []*dto.LabelPair, extra ...string) string {
		var ls []string
		for _, l := range labels {
			ls = append(ls, l.GetName()+`="`+l.GetValue()+`"`)
		}
		ls = append(ls, extra...)
		if len(ls) == 0 {
			return name
		}
		sort.Strings(ls)
		return name + "{" + strings.Join(ls, ",") + "}"
	}
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch {
			case m.Counter != nil:
				out[series(name, m.GetLabel())] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				out[series(name, m.GetLabel())] = m.GetGauge().GetValue()
			case m.Histogram != nil:
				h := m.GetHistogram()
				out[series(name+"_count", m.GetLabel())] = float64(h.GetSampleCount())
				out[series(name+"_sum", m.GetLabel())] = h.GetSampleSum()
				for _, b := range h.GetBucket() {
					out[series(name+"_bucket", m.GetLabel(), `le="`+strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64)+`"`)] = float64(b.GetCumulativeCount())
				}
				out[series(name+"_bucket", m.GetLabel(), `le="+Inf"`)] = float64(h.GetSampleCount())
			case m.Untyped != nil:
				out[series(name, m.GetLabel())] = m.GetUntyped().GetValue()
			}
		}
	}
	return out
}

// pingStore is a store whose backend answers Ping with err.
type pingStore struct {
	catalog.Store
	err atomic.Pointer[error]
}

func (s *pingStore) Ping(context.Context) error {
	if p := s.err.Load(); p != nil {
		return *p
	}
	return nil
}

// TestReadyReflectsStore: a store that does not answer (PostgreSQL down)
// makes /readyz 503, naming the cause, so a load balancer routes to
// another replica; it is ready again once the store answers. Before,
// /readyz said ready whatever the store did.
func TestReadyReflectsStore(t *testing.T) {
	t.Parallel()
	var ps *pingStore
	cat, _, _ := testserver.NewCatalog(t, t.TempDir(), func(s catalog.Store) catalog.Store { ps = &pingStore{Store: s}; return ps })
	hs := httptest.NewServer(server.New(cat, server.Config{}).Handler())
	t.Cleanup(hs.Close)
	get := func() (int, string) {
		rsp, err := http.Get(hs.URL + "/readyz")
		require.NoError(t, err)
		defer rsp.Body.Close()
		b, err := io.ReadAll(rsp.Body)
		require.NoError(t, err)
		return rsp.StatusCode, string(b)
	}
	code, body := get()
	require.Equal(t, http.StatusOK, code)
	assert.JSONEq(t, `{"status": "ready", "checks": {"catalog": {"status": "ok"}}}`, body)
	down := errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")
	ps.err.Store(&down)
	code, body = get()
	require.Equal(t, http.StatusServiceUnavailable, code)
	assert.JSONEq(t, `{"status": "unavailable", "checks": {"catalog": {"status": "unreachable", "error": "store: dial tcp 127.0.0.1:5432: connect: connection refused"}}}`, body)
	ps.err.Store(nil)
	code, _ = get()
	assert.Equal(t, http.StatusOK, code)
}

// TestServeDrains: after its context ends, Serve keeps serving for
// DrainDelay with /readyz 503 (a load balancer takes the replica out
// before the listener closes), then closes the listener. Before, the
// listener closed at once and requests routed meanwhile failed.
func TestServeDrains(t *testing.T) {
	t.Parallel()
	cat, _, _ := testserver.NewCatalog(t, t.TempDir(), nil)
	srv := server.New(cat, server.Config{DrainDelay: time.Second})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	base := "http://" + l.Addr().String()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, l) }()
	status := func(path string) int {
		rsp, err := http.Get(base + path)
		if err != nil {
			return 0
		}
		rsp.Body.Close()
		return rsp.StatusCode
	}
	require.Eventually(t, func() bool { return status("/readyz") == http.StatusOK }, 5*time.Second, 10*time.Millisecond)
	cancel()
	require.Eventually(t, func() bool { return status("/readyz") == http.StatusServiceUnavailable }, time.Second, 5*time.Millisecond)
	assert.Equal(t, http.StatusOK, status("/v1/config"), "requests are still served while draining")
	select {
	case err := <-done:
		t.Fatalf("Serve returned before the drain delay: %v", err)
	default:
	}
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("Serve did not return after the drain delay")
	}
	assert.Equal(t, 0, status("/v1/config"), "the listener is closed")
}
