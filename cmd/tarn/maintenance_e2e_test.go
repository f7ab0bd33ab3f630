package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/internal/demo"
	"github.com/tarnhq/tarn/internal/testenv"
	"github.com/tarnhq/tarn/internal/testkafka"
	"github.com/tarnhq/tarn/maintenance"
)

// soakFileBound is the most live data files the soak allows in the
// table: compaction (min-input-files 10) runs every pass (10 s, +10 %
// jitter, plus the pass itself) and leaves one file per partition value;
// between passes a 1 s commit cadence adds one file per commit per
// partition value (one value: day(_kafka.timestamp); two across
// midnight UTC). 10 + 12 s of commits per value, for two values, with
// room for a pass that yields once to ingest.
const soakFileBound = 60

// TestE2EMaintenanceSoak is issue 5's "Done means" for the maintenance
// loop, against a real Kafka broker and Apicurio registry and the real
// `tarn serve` (accelerated: maintenance every 10 s instead of the
// default minute, and 1 min of snapshot history instead of the default
// hour, so that a few minutes show several expiry cycles):
//
//   - the flights topic (3 partitions) is produced at 1,000 rows/s and
//     materialized with target-lag-ms 1000 for TARN_SOAK_MINUTES (default
//     4) minutes;
//   - every 5 s: the table's live data files (never above soakFileBound),
//     snapshots, metadata.json size, manifests of the head and loadTable
//     latency are sampled and logged as curves;
//   - every minute production pauses until the table has every produced
//     row, and pyiceberg and DuckDB (scripts/read-table.py) must read
//     exactly the produced row count and sum(distance), no Kafka record
//     twice;
//   - the topic ends syncing with no commit conflict, no error, and
//     `tarn serve` logged no error; compaction throughput (bytes read by
//     compaction over its duration) is logged.
//
// Runs only with TARN_E2E=1.
func TestE2EMaintenanceSoak(t *testing.T) {
	testenv.E2E(t, "a real Kafka broker and schema registry (internal/testkafka)")
	minutes := 4
	if v, err := strconv.Atoi(os.Getenv("TARN_SOAK_MINUTES")); err == nil && v > 0 {
		minutes = v
	}
	const rate = 1000
	python := setupPython(t)
	b, reg := testkafka.StartBroker(t), testkafka.StartRegistry(t) // before the deadline: a first start fetches jars
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(minutes+10)*time.Minute)
	defer cancel()

	rows, err := demo.Flights()
	require.NoError(t, err)
	cl, values := flightsTopic(ctx, t, b, reg, rows)

	data := t.TempDir()
	tarn := startTarn(t, cleanEnv(), "--listen", "127.0.0.1:0", "--data-dir", data,
		"--kafka-brokers", b.Bootstrap, "--schema-registry-url", reg.URL, "--maintenance-interval", "10s")
	mustCall(t, http.MethodPost, tarn.URL+"/management/v1/topics", map[string]any{
		"topic": demo.Topic, "table": ingestNamespace + "." + ingestName, "target-lag-ms": 1000,
	}, http.StatusCreated)
	// Accelerated: 1 min of snapshots instead of the default hour, set on
	// the owned table through the REST API (a tunable property), so that
	// a few minutes show the metadata reaching its steady size.
	mustCall(t, http.MethodPost, fmt.Sprintf("%s/v1/namespaces/%s/tables/%s", tarn.URL, ingestNamespace, ingestName), map[string]any{
		"requirements": []any{},
		"updates": []any{map[string]any{"action": "set-properties", "updates": map[string]string{
			"history.expire.max-snapshot-age-ms": "60000"}}},
	}, http.StatusOK)

	var (
		produced, sumDistance, sumDelay int64
		samples                         []soakSample
		maxFiles                        int64
		compactBytes                    int64
		compactMs                       int64
		compactions                     int
		seen                            = map[string]bool{}
	)
	start := time.Now()
	sample := func() {
		s := sampleTable(t, tarn)
		s.elapsed = time.Since(start)
		samples = append(samples, s)
		maxFiles = max(maxFiles, s.files)
		require.LessOrEqual(t, s.files, int64(soakFileBound), "live data files at %s", s.elapsed)
		var st maintenance.Status
		require.NoError(t, json.Unmarshal(mustCall(t, http.MethodGet, tarn.URL+"/management/v1/maintenance", nil, http.StatusOK), &st))
		for _, ts := range st.Tables {
			js := ts.Jobs[maintenance.JobCompact]
			if js.LastResult == nil || js.LastRun == nil || js.LastResult.Skipped != "" {
				continue
			}
			key := ts.Table + js.LastRun.String()
			if !seen[key] {
				seen[key] = true
				compactions++
				compactBytes += js.LastResult.BytesRewritten
				compactMs += js.LastResult.DurationMs
			}
		}
	}
	for minute := 1; minute <= minutes; minute++ {
		// A minute of production, sampled every 5 s.
		g := produced
		vals := append(append([][]byte{}, values[g%int64(len(values)):]...), values[:g%int64(len(values))]...)
		prod := &demo.Producer{Client: cl, Values: vals, Rate: rate, Limit: 60 * rate}
		done := make(chan error, 1)
		go func() { done <- prod.Run(ctx) }()
		for running := true; running; {
			select {
			case err := <-done:
				require.NoError(t, err)
				running = false
			case <-time.After(5 * time.Second):
				sample()
			}
		}
		for i := range prod.Produced() {
			r := rows[(g+i)%int64(len(rows))]
			sumDistance += r.Distance
			sumDelay += r.Delay
		}
		produced += prod.Produced()
		// Checkpoint: every produced row in the table, exactly once.
		waitRows(t, tarn, produced)
		readWithEngines(t, python, tarn, map[string]int64{"rows": produced, "sum_delay": sumDelay, "sum_distance": sumDistance})
		t.Logf("minute %d: %d rows, sum(distance) %d and sum(delay) exact in pyiceberg and DuckDB; max live files so far %d", minute, produced, sumDistance, maxFiles)
	}
	sample()

	st := topicStatus(t, tarn)
	require.Equal(t, "syncing", st["state"], "status %v", st)
	require.EqualValues(t, 0, st["commit-conflicts"], "status %v", st)
	require.Empty(t, st["errors"], "status %v", st)
	require.NotContains(t, tarn.Stderr(), `"level":"ERROR"`)
	require.Positive(t, compactions)

	var curve strings.Builder
	fmt.Fprintf(&curve, "%8s %6s %9s %14s %9s %12s\n", "elapsed", "files", "snapshots", "metadata_bytes", "manifests", "loadtable_ms")
	for _, s := range samples {
		fmt.Fprintf(&curve, "%8s %6d %9d %14d %9d %12.1f\n", s.elapsed.Round(time.Second), s.files, s.snapshots, s.metadataBytes, s.manifests,
			float64(s.loadTable.Microseconds())/1000)
	}
	t.Logf("soak curves (%d min at %d rows/s, target-lag-ms 1000, maintenance every 10 s):\n%s", minutes, rate, curve.String())
	mibps := 0.0
	if compactMs > 0 {
		mibps = float64(compactBytes) / (1 << 20) / (float64(compactMs) / 1000)
	}
	t.Logf("max live data files %d (bound %d); %d compactions seen rewrote %d bytes in %d ms: %.1f MiB/s",
		maxFiles, soakFileBound, compactions, compactBytes, compactMs, mibps)
}

type soakSample struct {
	elapsed       time.Duration
	files         int64
	snapshots     int
	metadataBytes int64
	manifests     int
	loadTable     time.Duration
}

// sampleTable loads air.flights through the REST API (timed) and reads
// its head's file and manifest counts and its metadata file's size.
func sampleTable(t *testing.T, tarn *tarnProc) soakSample {
	t.Helper()
	begin := time.Now()
	b := mustCall(t, http.MethodGet, fmt.Sprintf("%s/v1/namespaces/%s/tables/%s", tarn.URL, ingestNamespace, ingestName), nil, http.StatusOK)
	s := soakSample{loadTable: time.Since(begin)}
	var lt struct {
		Location string          `json:"metadata-location"`
		Metadata json.RawMessage `json:"metadata"`
	}
	require.NoError(t, json.Unmarshal(b, &lt))
	md, err := table.ParseMetadataBytes(lt.Metadata)
	require.NoError(t, err)
	s.snapshots = len(md.Snapshots())
	if fi, err := os.Stat(strings.TrimPrefix(lt.Location, "file://")); err == nil {
		s.metadataBytes = fi.Size()
	}
	head := md.CurrentSnapshot()
	if head == nil {
		return s
	}
	s.files, _ = strconv.ParseInt(head.Summary.Properties["total-data-files"], 10, 64)
	fs, err := icebergio.LoadFSFunc(nil, lt.Location)(context.Background())
	require.NoError(t, err)
	if ms, err := head.Manifests(fs); err == nil {
		s.manifests = len(ms)
	}
	return s
}
