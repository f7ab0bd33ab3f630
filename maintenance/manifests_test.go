package maintenance_test

import (
	"testing"

	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/maintenance"
	"github.com/tarnhq/tarn/offsets"
	"github.com/tarnhq/tarn/tabledefaults"
)

// Without manifest merging every append adds a manifest; past
// max-count the job merges them, and its replace snapshot carries the
// head's offsets (iceberg-go's RewriteManifests cannot; see withSummary).
func TestRewriteManifestsCarriesOffsets(t *testing.T) {
	h := newHarness(t, map[string]string{maintenance.ManifestMaxCountProperty: "8"})
	h.ingest(12, 10)
	before := h.headOffsets()

	r := h.run(maintenance.JobManifests)
	require.Empty(t, r.Skipped)
	require.Equal(t, 12, r.ManifestsBefore)
	require.Equal(t, 1, r.ManifestsAfter)
	tbl := h.load()
	require.Equal(t, table.OpReplace, tbl.CurrentSnapshot().Summary.Operation)
	require.Equal(t, before, h.headOffsets())
	h.check(tbl, nil, h.next)

	require.Equal(t, "few manifests", h.run(maintenance.JobManifests).Skipped)
	h.ingest(2, 10)
	h.check(h.load(), nil, h.next)
}

// Tables Tarn creates get tabledefaults.Properties, with which appends merge
// manifests themselves.
func TestTableDefaultsMergeManifestsOnAppend(t *testing.T) {
	props := map[string]string{}
	for k, v := range tabledefaults.Properties() {
		props[k] = v
	}
	h := newHarness(t, props)
	h.ingest(40, 5)
	tbl := h.load()
	fs, err := tbl.FS(h.ctx)
	require.NoError(t, err)
	ms, err := tbl.CurrentSnapshot().Manifests(fs)
	require.NoError(t, err)
	require.LessOrEqual(t, len(ms), 16, "manifests of the head")
	h.check(tbl, nil, h.next)
}

func TestStatusAndMetrics(t *testing.T) {
	h := newHarness(t, nil)
	h.ingest(10, 10)
	rs, err := h.sched.RunJobs(h.ctx, tableIdent, nil)
	require.NoError(t, err)
	require.Len(t, rs, len(maintenance.Jobs))
	for i, r := range rs {
		require.Equal(t, maintenance.Jobs[i], r.Job)
	}

	st := h.sched.Status()
	require.Len(t, st.Tables, 1)
	ts := st.Tables[0]
	require.Equal(t, "air.flights", ts.Table)
	require.True(t, ts.Owned)
	require.True(t, ts.Enabled)
	require.EqualValues(t, 2, ts.Files)
	require.Positive(t, ts.Bytes)
	require.Equal(t, int64(1), ts.Jobs[maintenance.JobCompact].Runs)
	require.Equal(t, 20, ts.Jobs[maintenance.JobCompact].LastResult.FilesRewritten)

	require.Equal(t, 20.0, metricValue(t, h, "tarn_maintenance_files_compacted_total"))
	require.Equal(t, 2.0, metricValue(t, h, "tarn_maintenance_table_files"))
	// One duration sample per job that acted (skipped runs are not timed).
	acted := 0
	for _, r := range rs {
		want := uint64(0)
		if r.Skipped == "" {
			want = 1
			acted++
		}
		require.Equal(t, want, jobDurationCount(t, h, r.Job), "%s (skipped %q)", r.Job, r.Skipped)
	}
	require.Positive(t, acted)

	_, err = h.sched.RunJobs(h.ctx, tableIdent, []string{"vacuum"})
	require.ErrorIs(t, err, maintenance.ErrUnknownJob)
	o, found, err := offsets.Read(h.load().Metadata())
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, h.next, o.Next[0])
}

// jobDurationCount is the sample count of
// tarn_maintenance_job_duration_seconds{job}.
func jobDurationCount(t *testing.T, h *harness, job string) uint64 {
	t.Helper()
	mfs, err := h.reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "tarn_maintenance_job_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "job" && l.GetValue() == job {
					return m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return 0
}

// metricValue gathers metric name's sample for table air.flights.
func metricValue(t *testing.T, h *harness, name string) float64 {
	t.Helper()
	v, ok := metricWith(t, h.reg, name, "table", "air.flights")
	if !ok {
		t.Fatalf("metric %s not found", name)
	}
	return v
}
