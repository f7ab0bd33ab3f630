package maintenance_test

import (
	"testing"
	"time"

	"github.com/tarnhq/tarn/maintenance"
)

// BenchmarkCompact measures compaction throughput: a table of 100 small
// data files (50 commits of 20,000 rows, two identity partitions, as a
// topic's pipeline writes them at a short target lag) compacted by the
// compact job into one file per partition (iceberg-go's planner,
// ExecuteCompactionGroup and a replace snapshot). Reported: MiB/s of data
// files read and rows/s; setup is not timed.
//
//	go test -run '^$' -bench Compact -benchtime 3x ./maintenance/
func BenchmarkCompact(b *testing.B) {
	const commits, rows = 50, 20_000
	var bytes int64
	var elapsed time.Duration
	for b.Loop() {
		b.StopTimer()
		h := newHarness(b, nil)
		h.ingest(commits, rows)
		b.StartTimer()
		began := time.Now()
		r := h.run(maintenance.JobCompact)
		elapsed += time.Since(began)
		if r.Skipped != "" || r.FilesRewritten != 2*commits || r.FilesAfter != 2 {
			b.Fatalf("compaction: %+v", r)
		}
		bytes += r.BytesRewritten
	}
	b.ReportMetric(float64(bytes)/(1<<20)/elapsed.Seconds(), "MiB/s")
	b.ReportMetric(float64(b.N*commits*rows)/elapsed.Seconds(), "rows/s")
}
