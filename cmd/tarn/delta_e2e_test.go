package main_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/internal/demo"
	"github.com/tarnhq/tarn/internal/testenv"
	"github.com/tarnhq/tarn/internal/testkafka"
	"github.com/tarnhq/tarn/internal/testpython"
)

const (
	// deltaRate is rows produced per second while Tarn is killed: the
	// 200,000 rows take about 25 s, long enough for deltaKills kills.
	deltaRate = 8_000
	// deltaKills is the least number of kill -9 of `tarn serve` while the
	// topic is produced, materialized and published (issue 16: ≥ 10).
	deltaKills = 10
	// deltaCheckpointInterval makes checkpoints frequent, so readers
	// start from one and restarts replay one.
	deltaCheckpointInterval = 2
)

// TestE2EDeltaOutput is issue 16's "a Kafka topic output as a Delta
// table", read by readers nobody here wrote, and its "kill -9 during
// publishing": against a real Kafka 4.4 broker, a real Apicurio registry
// and the real `tarn serve` binary,
//
//  1. the first 200,000 rows of ../shared/data/flights-3m.parquet are
//     produced as Avro to a 3-partition topic enabled with "delta": true
//     (target-lag-ms 1000, --delta-checkpoint-interval 2), while `tarn
//     serve` is killed with SIGKILL at random moments (at least 10 times)
//     and restarted; after each kill the Delta log on disk has versions
//     0..N with no gap and no two versions for one Iceberg snapshot;
//  2. once the Iceberg table holds the 200,000 rows, the Delta log
//     catches up (GET .../formats: the version reflects main's head,
//     lag 0) and its checkpoints exist with _last_checkpoint;
//  3. delta-rs (deltalake 1.6, through DataFusion) and DuckDB
//     1.4's delta extension read exactly answers.json's first_200000
//     (rows, sum(delay), sum(distance)), no (_kafka.partition,
//     _kafka.offset) twice; delta-rs's history has every version, and
//     time travel to a sample of versions gives each the row count of
//     the Iceberg snapshot its commitInfo names.
//
// Runs only with TARN_E2E=1 (scripts/test sets it).
func TestE2EDeltaOutput(t *testing.T) {
	testenv.E2E(t, "a real Kafka broker and schema registry (internal/testkafka)")
	rows, want := sampleFlights(t, ingestRows)
	python := testpython.DeltaPython(t)

	// The services first: their first start on a machine fetches and
	// builds their jars (minutes), which the test's deadline must not count.
	b, reg := testkafka.StartBroker(t), testkafka.StartRegistry(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cl, values := flightsTopic(ctx, t, b, reg, rows)

	data := t.TempDir()
	env := cleanEnv()
	args := []string{"--listen", "127.0.0.1:0", "--data-dir", data, "--kafka-brokers", b.Bootstrap,
		"--schema-registry-url", reg.URL, "--delta-checkpoint-interval", strconv.Itoa(deltaCheckpointInterval)}
	tarn := startTarn(t, env, args...)
	mustCall(t, http.MethodPost, tarn.URL+"/management/v1/topics", map[string]any{
		"topic": demo.Topic, "table": ingestNamespace + "." + ingestName, "target-lag-ms": 1000, "delta": true,
	}, http.StatusCreated)

	// 1. Produce while killing.
	prod := &demo.Producer{Client: cl, Values: values, Rate: deltaRate, Limit: ingestRows}
	produced := make(chan error, 1)
	go func() { produced <- prod.Run(ctx) }()
	kills := 0
	var prodErr error
	for done := false; !done || kills < deltaKills; {
		time.Sleep(time.Duration(700+rand.IntN(2300)) * time.Millisecond)
		select {
		case prodErr = <-produced:
			done = true
		default:
		}
		tarn.kill(t)
		kills++
		n := checkDeltaLog(t, data)
		t.Logf("kill %d after %d rows produced; the table had %d rows, the Delta log %d versions", kills, prod.Produced(), stoppedRows(t, data), n)
		tarn = startTarn(t, env, args...)
	}
	require.NoError(t, prodErr)
	require.EqualValues(t, ingestRows, prod.Produced())

	// 2. Iceberg has every row; the Delta log catches up with it.
	waitRows(t, tarn, ingestRows)
	fm := waitDeltaHead(t, tarn)
	versions := checkDeltaLog(t, data)
	require.EqualValues(t, versions-1, fm.Delta.Version)
	logDir := deltaLogDir(t, data)
	cps, err := filepath.Glob(filepath.Join(logDir, "*.checkpoint.parquet"))
	require.NoError(t, err)
	require.Greater(t, versions, deltaCheckpointInterval, "one version per commit: at least one after each restart, one at the end")
	require.NotEmpty(t, cps, "a checkpoint every %d versions", deltaCheckpointInterval)
	t.Logf("%d Delta versions, checkpoints %v", versions, cps)
	require.FileExists(t, filepath.Join(logDir, "_last_checkpoint"))

	// 3. The readers.
	snapRows := icebergSnapshotRows(t, tarn)
	var sample []string
	for v := int64(0); v < int64(versions); v += max(1, int64(versions)/8) {
		sample = append(sample, strconv.FormatInt(v, 10))
	}
	cmd := exec.Command(python, filepath.Join("..", "..", "scripts", "read-delta.py"), fm.Delta.Location, "delay", "distance")
	cmd.Env = append(os.Environ(), "READ_DELTA_VERSIONS="+strings.Join(sample, ","))
	out, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		t.Fatalf("read-delta.py: %v\n%s", err, ee.Stderr)
	}
	require.NoError(t, err)
	var got struct {
		DeltaRS struct {
			Rows        int64            `json:"rows"`
			Duplicates  int64            `json:"duplicates"`
			SumDelay    int64            `json:"sum_delay"`
			SumDistance int64            `json:"sum_distance"`
			Version     int64            `json:"version"`
			Protocol    []int            `json:"protocol"`
			History     int              `json:"history"`
			Versions    map[string]int64 `json:"versions"`
		} `json:"deltars"`
		DuckDB  map[string]int64 `json:"duckdb"`
		PyArrow struct {
			Error string `json:"error"`
		} `json:"pyarrow"`
	}
	require.NoError(t, json.Unmarshal(out, &got), "%s", out)
	t.Logf("read-delta.py: %s", out)
	d := got.DeltaRS
	assert.Equal(t, []int64{want.Rows, 0, want.SumDelay, want.SumDistance}, []int64{d.Rows, d.Duplicates, d.SumDelay, d.SumDistance}, "delta-rs (DataFusion): rows, duplicates, sum(delay), sum(distance)")
	assert.Equal(t, map[string]int64{"rows": want.Rows, "duplicates": 0, "sum_delay": want.SumDelay, "sum_distance": want.SumDistance}, got.DuckDB, "DuckDB delta_scan")
	assert.EqualValues(t, versions-1, d.Version)
	// delta-rs's pyarrow path refuses any table with the reader feature
	// columnMapping (deltalake/table.py, to_pyarrow_dataset), which every
	// Tarn table lists (reader 3, for Tarn's writer feature).
	assert.Contains(t, got.PyArrow.Error, "columnMapping", "delta-rs to_pyarrow_table")
	assert.Equal(t, []int{3, 7}, d.Protocol, "table features columnMapping, timestampNtz (the flights date), invariants and Tarn's")
	assert.Equal(t, versions, d.History, "DeltaTable.history lists every version")
	commits := deltaCommitSnapshots(t, logDir)
	for _, v := range sample {
		n, err := strconv.Atoi(v)
		require.NoError(t, err)
		snap := commits[n]
		assert.Equal(t, snapRows[snap], d.Versions[v], "version %s reflects Iceberg snapshot %d", v, snap)
	}
}

// deltaLogDir is the _delta_log of air.flights in a data dir ("" before
// the table exists).
func deltaLogDir(t *testing.T, dataDir string) string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(dataDir, "warehouse", ingestNamespace, ingestName+"*", "data", "_delta_log"))
	require.NoError(t, err)
	require.LessOrEqual(t, len(dirs), 1)
	if len(dirs) == 0 {
		return ""
	}
	return dirs[0]
}

// deltaCommit is what the checks read of one commit file.
type deltaCommit struct {
	txn      int64
	snapshot int64
}

func readDeltaCommits(t *testing.T, dir string) []deltaCommit {
	t.Helper()
	if dir == "" {
		return nil
	}
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	require.NoError(t, err)
	var out []deltaCommit
	for i, n := range names {
		require.Equal(t, fmt.Sprintf("%020d.json", i), filepath.Base(n), "no gap in the versions")
		b, err := os.ReadFile(n)
		require.NoError(t, err)
		var c deltaCommit
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var a struct {
				Txn *struct {
					Version int64 `json:"version"`
				} `json:"txn"`
				CommitInfo *struct {
					Snapshot int64 `json:"tarnIcebergSnapshotId"`
				} `json:"commitInfo"`
			}
			require.NoError(t, json.Unmarshal([]byte(line), &a), "%s: a whole JSON action a line: %s", n, line)
			if a.Txn != nil {
				c.txn = a.Txn.Version
			}
			if a.CommitInfo != nil {
				c.snapshot = a.CommitInfo.Snapshot
			}
		}
		out = append(out, c)
	}
	return out
}

// checkDeltaLog checks the log of a stopped (or running) Tarn: versions
// 0..N with no gap, each reflecting a newer Iceberg snapshot than the
// one before (no snapshot published twice). It returns N+1.
func checkDeltaLog(t *testing.T, dataDir string) int {
	t.Helper()
	cs := readDeltaCommits(t, deltaLogDir(t, dataDir))
	for i := 1; i < len(cs); i++ {
		require.Greater(t, cs[i].txn, cs[i-1].txn, "version %d reflects a newer snapshot than version %d", i, i-1)
	}
	return len(cs)
}

// deltaCommitSnapshots returns, by version, the Iceberg snapshot id each
// commit's commitInfo names.
func deltaCommitSnapshots(t *testing.T, dir string) []int64 {
	t.Helper()
	var out []int64
	for _, c := range readDeltaCommits(t, dir) {
		out = append(out, c.snapshot)
	}
	return out
}

// tableFormats is GET /management/v1/tables/air.flights/formats.
type tableFormats struct {
	Iceberg struct {
		SnapshotID *int64 `json:"snapshot-id"`
	} `json:"iceberg"`
	Delta struct {
		Enabled    bool    `json:"enabled"`
		Location   string  `json:"location"`
		Version    int64   `json:"version"`
		SnapshotID *int64  `json:"snapshot-id"`
		LagSeconds float64 `json:"lag-seconds"`
		Error      string  `json:"error"`
	} `json:"delta"`
}

// waitDeltaHead waits until the Delta log reflects main's head.
func waitDeltaHead(t *testing.T, tarn *tarnProc) tableFormats {
	t.Helper()
	deadline := time.Now().Add(ingestWait)
	for {
		var f tableFormats
		b := mustCall(t, http.MethodGet, tarn.URL+"/management/v1/tables/"+ingestNamespace+"."+ingestName+"/formats", nil, http.StatusOK)
		require.NoError(t, json.Unmarshal(b, &f))
		if f.Delta.SnapshotID != nil && f.Iceberg.SnapshotID != nil && *f.Delta.SnapshotID == *f.Iceberg.SnapshotID && f.Delta.LagSeconds == 0 {
			require.True(t, f.Delta.Enabled)
			u, err := url.Parse(f.Delta.Location)
			require.NoError(t, err)
			require.Equal(t, "file", u.Scheme)
			return f
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Delta log does not reflect the head after %v: %s", ingestWait, b)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// icebergSnapshotRows returns total-records of every snapshot of
// air.flights, by snapshot id.
func icebergSnapshotRows(t *testing.T, tarn *tarnProc) map[int64]int64 {
	t.Helper()
	b := mustCall(t, http.MethodGet, fmt.Sprintf("%s/v1/namespaces/%s/tables/%s", tarn.URL, ingestNamespace, ingestName), nil, http.StatusOK)
	var lt struct {
		Metadata struct {
			Snapshots []struct {
				ID      int64             `json:"snapshot-id"`
				Summary map[string]string `json:"summary"`
			} `json:"snapshots"`
		} `json:"metadata"`
	}
	require.NoError(t, json.Unmarshal(b, &lt))
	out := map[int64]int64{}
	for _, s := range lt.Metadata.Snapshots {
		n, err := strconv.ParseInt(s.Summary["total-records"], 10, 64)
		require.NoError(t, err)
		out[s.ID] = n
	}
	return out
}
