package maintenance

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tarnhq/tarn/internal/recovery"
)

// metrics are the scheduler's Prometheus metrics (docs/operations.md lists them).
// Per-table gauges are refreshed after every job on the table.
type metrics struct {
	files          *prometheus.GaugeVec
	bytes          *prometheus.GaugeVec
	snapshots      *prometheus.GaugeVec
	compacted      *prometheus.CounterVec
	bytesRewritten *prometheus.CounterVec
	expired        *prometheus.CounterVec
	orphans        *prometheus.CounterVec
	skipped        *prometheus.CounterVec
	conflicts      *prometheus.CounterVec
	failures       *prometheus.CounterVec
	duration       *prometheus.HistogramVec
	// panics counts the panics a job or a pass recovers from
	// (tarn_panics_recovered_total, shared with the other packages on
	// the same registerer).
	panics *recovery.Panics
}

// newMetrics builds the metrics and registers them with reg (when not nil).
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		files: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tarn_maintenance_table_files",
			Help: "Live data files in the table's current snapshot."}, []string{"table"}),
		bytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tarn_maintenance_table_bytes",
			Help: "Bytes of the live data files in the table's current snapshot."}, []string{"table"}),
		snapshots: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tarn_maintenance_table_snapshots",
			Help: "Snapshots in the table's metadata."}, []string{"table"}),
		compacted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tarn_maintenance_files_compacted_total",
			Help: "Data files replaced by compaction."}, []string{"table"}),
		bytesRewritten: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tarn_maintenance_rewritten_bytes_total",
			Help: "Bytes of data files read and rewritten by compaction."}, []string{"table"}),
		expired: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tarn_maintenance_snapshots_expired_total",
			Help: "Snapshots removed by expiry."}, []string{"table"}),
		orphans: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tarn_maintenance_orphans_removed_total",
			Help: "Unreferenced files deleted by orphan removal."}, []string{"table"}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tarn_maintenance_files_skipped_total",
			Help: "Files a table's metadata names that jobs left unread and unchanged, by reason (outside-table-directories: not in the table's recorded directories)."},
			[]string{"table", "reason"}),
		conflicts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tarn_maintenance_commit_conflicts_total",
			Help: "Maintenance commits that lost to a concurrent commit (ingest) and were staged again."}, []string{"job"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tarn_maintenance_job_failures_total",
			Help: "Job runs that ended in an error."}, []string{"job"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "tarn_maintenance_job_duration_seconds",
			Help:    "Duration of job runs that acted or failed (not skipped ones).",
			Buckets: prometheus.ExponentialBuckets(0.01, 4, 9)}, []string{"job"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.files, m.bytes, m.snapshots, m.compacted, m.bytesRewritten,
			m.expired, m.orphans, m.skipped, m.conflicts, m.failures, m.duration} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("maintenance: register metrics: %w", err)
			}
		}
	}
	var err error
	if m.panics, err = recovery.NewPanics(reg); err != nil {
		return nil, err
	}
	return m, nil
}

// forget deletes the series of table (the scheduler no longer lists
// it): its gauges and its per-table counters, which a table of the same
// name created later starts from zero (Prometheus reads the drop as a
// counter reset).
func (m *metrics) forget(table string) {
	for _, v := range []interface {
		DeletePartialMatch(prometheus.Labels) int
	}{m.files, m.bytes, m.snapshots, m.compacted, m.bytesRewritten, m.expired, m.orphans, m.skipped} {
		v.DeletePartialMatch(prometheus.Labels{"table": table})
	}
}

// observe records one job run.
func (m *metrics) observe(r Result, err error) {
	if err != nil {
		m.failures.WithLabelValues(r.Job).Inc()
	}
	if r.Attempts > 1 {
		m.conflicts.WithLabelValues(r.Job).Add(float64(r.Attempts - 1))
	}
	if err != nil || r.Skipped == "" {
		m.duration.WithLabelValues(r.Job).Observe(float64(r.DurationMs) / 1000)
	}
	m.compacted.WithLabelValues(r.Table).Add(float64(r.FilesRewritten))
	m.bytesRewritten.WithLabelValues(r.Table).Add(float64(r.BytesRewritten))
	m.expired.WithLabelValues(r.Table).Add(float64(r.SnapshotsExpired))
	m.orphans.WithLabelValues(r.Table).Add(float64(r.OrphansRemoved))
	if r.FilesOutside > 0 {
		m.skipped.WithLabelValues(r.Table, reasonOutside).Add(float64(r.FilesOutside))
	}
}
