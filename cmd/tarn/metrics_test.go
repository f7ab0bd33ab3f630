package main_test

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
)

var updateMetrics = flag.Bool("update-metrics", false, "rewrite testdata/metrics.txt from a running tarn serve")

// The metrics are registered on the registerer serve hands each package
// (catalog, server, maintenance, ingest/topics, delta, the recovered
// panics): a dashboard or alert built on /metrics keeps working only if
// every family keeps its name, type, labels and help text. The expected
// list (testdata/metrics.txt) was written by the binary that registered
// them on package globals, before they were injected; rewrite it with
// -update-metrics only for a deliberate change (and say so in
// docs/operations.md).
func TestServeExportsTheMetrics(t *testing.T) {
	// No maintenance pass (interval 0) adds its per-table series meanwhile.
	p := startTarn(t, cleanEnv(), "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--maintenance-interval", "0")
	createCrashTable(t, p.URL)
	// A report, so that the report counter has its first series.
	mustCall(t, http.MethodPost, p.URL+crashTablePath+"/metrics", map[string]any{
		"report-type": "scan-report", "table-name": "crash.t", "snapshot-id": 1, "filter": true, "schema-id": 0,
		"projected-field-ids": []int{}, "projected-field-names": []string{}, "metrics": map[string]any{},
	}, http.StatusNoContent)

	res, err := http.Get(p.URL + "/metrics")
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(res.Body)
	require.NoError(t, err)
	var got []string
	for name, mf := range mfs {
		if !strings.HasPrefix(name, "tarn_") {
			continue
		}
		labels := map[string]bool{}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = true
			}
		}
		names := make([]string, 0, len(labels))
		for l := range labels {
			names = append(names, l)
		}
		slices.Sort(names)
		got = append(got, fmt.Sprintf("%s %s {%s} %s", name, strings.ToLower(mf.GetType().String()), strings.Join(names, ","), mf.GetHelp()))
	}
	slices.Sort(got)
	file := filepath.Join("testdata", "metrics.txt")
	if *updateMetrics {
		require.NoError(t, os.WriteFile(file, []byte(strings.Join(got, "\n")+"\n"), 0o644))
	}
	want, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Equal(t, string(want), strings.Join(got, "\n")+"\n")
}
