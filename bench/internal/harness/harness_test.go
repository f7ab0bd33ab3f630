package harness_test

import (
	"math"
	"os"
	"testing"

	"github.com/tarnhq/tarn/bench/internal/harness"
)

func TestProc(t *testing.T) {
	// Burn a little CPU so that utime+stime is past one clock tick.
	x := 0
	for i := range 50_000_000 {
		x += i
	}
	_ = x
	cpu, err := harness.CPUSeconds(os.Getpid())
	if err != nil || cpu <= 0 {
		t.Fatalf("CPUSeconds = %v, %v; want > 0", cpu, err)
	}
	rss, err := harness.PeakRSSBytes(os.Getpid())
	if err != nil || rss < 1<<20 {
		t.Fatalf("PeakRSSBytes = %d, %v; want at least 1 MiB", rss, err)
	}
	if _, err := harness.CPUSeconds(-1); err == nil {
		t.Fatal("CPUSeconds(-1): no error")
	}
}

func TestPct(t *testing.T) {
	sorted := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tc := range []struct {
		name string
		q    float64
		want float64
	}{
		{"p50", 0.5, 5},
		{"p90", 0.9, 9},
		{"p99", 0.99, 10},
		{"max", 1, 10},
		{"min", 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := harness.Pct(sorted, tc.q); got != tc.want {
				t.Fatalf("Pct(%v) = %v, want %v", tc.q, got, tc.want)
			}
		})
	}
	if !math.IsNaN(harness.Pct(nil, 0.5)) {
		t.Fatal("Pct of nothing is not NaN")
	}
}
