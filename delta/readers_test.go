package delta_test

import (
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/delta"
	"github.com/tarnhq/tarn/internal/testenv"
	"github.com/tarnhq/tarn/internal/testpython"
	"github.com/tarnhq/tarn/maintenance"
)

// readerView is what scripts/read-delta.py reports of one reader.
type readerView struct {
	Error      string           `json:"error"`
	Rows       int64            `json:"rows"`
	Duplicates int64            `json:"duplicates"`
	Sum        int64            `json:"sum_distance"`
	Values     []int64          `json:"values"`
	Versions   map[string]int64 `json:"versions"`
	// History is delta-rs's len(DeltaTable.history()).
	History int `json:"history"`
}

// readDelta runs scripts/read-delta.py on the Delta root at the
// versions given (time travel) and returns, by reader (deltars, pyarrow,
// duckdb), what it read of column distance.
func readDelta(t *testing.T, root string, versions ...string) map[string]readerView {
	t.Helper()
	cmd := exec.Command(testpython.DeltaPython(t), testpython.Script("read-delta.py"), root, "distance")
	cmd.Env = append(os.Environ(), "READ_DELTA_VALUES=1", "READ_DELTA_VERSIONS="+strings.Join(versions, ","))
	out, err := cmd.Output()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		t.Fatalf("read-delta.py: %v\n%s", err, ee.Stderr)
	}
	require.NoError(t, err)
	got := map[string]readerView{}
	require.NoError(t, json.Unmarshal(out, &got), "%s", out)
	t.Logf("read-delta.py: %s", out)
	return got
}

// TestE2EDeltaReaders reads Tarn's Delta log with readers nobody here
// wrote: delta-rs through DataFusion and DuckDB's delta extension, at the
// latest version (after a compaction removed files) and, with delta-rs,
// time-travelled to version 0. delta-rs's pyarrow path
// (DeltaTable.to_pyarrow_table) refuses the table with a clear error:
// it does not implement the reader feature columnMapping, which every
// Tarn table lists since Tarn's writer feature put it at reader 3
// (docs/delta.md "File safety").
//
// It pins a failure: with the Delta root at <location>/_delta and adds
// named "../data/<file>", readers that open add paths through a file
// system rooted at the Delta root (delta-rs's pyarrow path; DuckDB's
// extension joins even a file:// URI onto the root) failed with
// FileNotFoundError on "<root>/%2E%2E/data/<file>". The root is now the
// Iceberg data directory and adds are relative to it without "..".
func TestE2EDeltaReaders(t *testing.T) {
	testenv.E2E(t, "delta-rs and DuckDB's delta extension (the venv of scripts/requirements-delta.txt)")
	root := readersTable(t)
	all, first := readersWant()
	got := readDelta(t, root, "0")
	for _, r := range []string{"deltars", "duckdb"} {
		g := got[r]
		require.Empty(t, g.Error, r)
		require.Equal(t, readerView{Rows: 25, Sum: 300, Values: all}, readerView{Rows: g.Rows, Duplicates: g.Duplicates, Sum: g.Sum, Values: g.Values}, r)
	}
	require.Equal(t, map[string]int64{"0": int64(len(first))}, got["deltars"].Versions)
	require.Contains(t, got["pyarrow"].Error, "columnMapping", "delta-rs's pyarrow path refuses reader 3")
}

// TestE2EDeltaSpark reads the same table as TestE2EDeltaReaders with Spark 4.0
// and Delta Lake's own connector (delta-spark 4.0, jars from Maven
// Central through scripts/setup-spark-delta.sh): the rows and values at
// the latest version, version 0 by time travel, and DESCRIBE HISTORY's
// operations (CREATE TABLE, then WRITE: version 1 adds rows).
func TestE2EDeltaSpark(t *testing.T) {
	testenv.E2E(t, "Spark with delta-spark (scripts/setup-spark-delta.sh: conformance/spark's venv, jars from Maven Central)")
	testenv.NeedTools(t, "Spark", "java")
	root := readersTable(t)
	all, first := readersWant()
	out := sparkDelta(t, []string{"READ_DELTA_VALUES=1", "READ_DELTA_VERSIONS=0"}, root, "distance")
	t.Logf("read-delta-spark.py: %s", out)
	var got struct {
		readerView
		Version    int64    `json:"version"`
		History    int      `json:"history"`
		Operations []string `json:"operations"`
	}
	require.NoError(t, json.Unmarshal(out, &got), "%s", out)
	require.Equal(t, readerView{Rows: 25, Sum: 300, Values: all, Versions: map[string]int64{"0": int64(len(first))}}, got.readerView)
	require.EqualValues(t, 1, got.Version)
	require.Equal(t, []string{"CREATE TABLE", "WRITE"}, got.Operations, "version 1 adds rows (in the compacted file)")
}

// sparkDelta runs scripts/read-delta-spark.py with args (and env, beside
// what Spark needs) in conformance/spark's venv with delta-spark's jars
// (scripts/setup-spark-delta.sh) and returns its output.
func sparkDelta(t *testing.T, env []string, args ...string) []byte {
	t.Helper()
	setup := exec.Command(testpython.Script("setup-spark-delta.sh"))
	setup.Stderr = os.Stderr
	out, err := setup.Output()
	require.NoError(t, err, "scripts/setup-spark-delta.sh")
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.GreaterOrEqual(t, len(lines), 2, "%s", out)
	py, jars := lines[len(lines)-2], lines[len(lines)-1]
	cmd := exec.Command(py, append([]string{testpython.Script("read-delta-spark.py")}, args...)...)
	cmd.Env = append(append(os.Environ(), "TARN_DELTA_SPARK_JARS="+jars,
		"SPARK_LOCAL_IP=127.0.0.1", "PYSPARK_PYTHON="+py, "PYSPARK_DRIVER_PYTHON="+py), env...)
	out, err = cmd.Output()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		t.Fatalf("read-delta-spark.py: %v\n%s", err, ee.Stderr)
	}
	require.NoError(t, err)
	return out
}

// TestE2EDeltaVacuum: Delta's own VACUUM, run by Spark on Tarn's Delta
// view with retention 0 (RETAIN 0 HOURS, Spark's retention check off),
// deletes none of the files Iceberg reads: Tarn's writer feature
// (delta.FeatureTarnManaged) makes Spark refuse it, so every retained
// Iceberg snapshot, the head and the older ones, still reads every row
// with pyiceberg afterwards.
//
// It pins a failure: at the protocol Tarn wrote before (reader 2 /
// writer 5) the VACUUM ran and deleted every file under the Delta root
// (the Iceberg data directory) that the latest Delta version did not
// name: the five files a compaction had replaced, which the older
// Iceberg snapshots still read, and the file of an Iceberg commit not
// published to Delta yet, which the Iceberg head reads.
func TestE2EDeltaVacuum(t *testing.T) {
	testenv.E2E(t, "Spark with delta-spark (scripts/setup-spark-delta.sh) and pyiceberg (scripts/setup-python.sh)")
	testenv.NeedTools(t, "Spark", "java")
	h, _ := readersHarness(t)
	h.ingest(1, 5) // distances 25..29, committed to Iceberg, not published yet
	tbl, err := h.tio.LoadTable(h.ctx, table.Identifier{"air", "flights"})
	require.NoError(t, err)
	want := map[string]snapshotRows{}
	var files []string
	for _, s := range tbl.Metadata().Snapshots() {
		fs := h.dataFiles(&s)
		files = append(files, fs...)
		n, err := strconv.ParseInt(s.Summary.Properties["total-records"], 10, 64)
		require.NoError(t, err)
		want[strconv.FormatInt(s.SnapshotID, 10)] = snapshotRows{Rows: n, Sum: n * (n - 1) / 2}
	}
	require.Len(t, want, 7, "five appends, a compaction, an append")

	out := sparkDelta(t, nil, "--vacuum", deltaRootOf(t, h))
	t.Logf("read-delta-spark.py --vacuum: %.400s", out)
	var v struct{ Vacuum, Error string }
	require.NoError(t, json.Unmarshal(out, &v), "%s", out)
	require.Equal(t, "error", v.Vacuum, "Spark refuses VACUUM")
	require.Contains(t, v.Error, "DELTA_UNSUPPORTED_FEATURES_FOR_WRITE")
	require.Contains(t, v.Error, delta.FeatureTarnManaged)

	for _, f := range files {
		u, err := url.Parse(f)
		require.NoError(t, err)
		require.FileExists(t, u.Path, "a data file a retained Iceberg snapshot reads")
	}
	cmd := exec.Command(testpython.Python(t), testpython.Script("read-iceberg-snapshots.py"), tbl.MetadataLocation(), "distance")
	out, err = cmd.Output()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		t.Fatalf("read-iceberg-snapshots.py: %v\n%s", err, ee.Stderr)
	}
	require.NoError(t, err)
	got := map[string]snapshotRows{}
	require.NoError(t, json.Unmarshal(out, &got), "%s", out)
	require.Equal(t, want, got, "pyiceberg reads every snapshot (time travel) after the VACUUM")
}

// snapshotRows is what read-iceberg-snapshots.py reads of one snapshot.
type snapshotRows struct {
	Rows  int64  `json:"rows"`
	Sum   int64  `json:"sum"`
	Error string `json:"error,omitempty"`
}

// deltaRootOf is the Delta root the publisher recorded on h's table.
func deltaRootOf(t *testing.T, h *harness) string {
	t.Helper()
	tbl, err := h.tio.LoadTable(h.ctx, table.Identifier{"air", "flights"})
	require.NoError(t, err)
	root := tbl.Properties()[delta.PropLocation]
	require.NotEmpty(t, root)
	return root
}

// readersWant is the distances of readersTable: 0..24 at the latest
// version, 0..14 at version 0.
func readersWant() (all, first []int64) {
	for d := range int64(25) {
		all = append(all, d)
		if d < 15 {
			first = append(first, d)
		}
	}
	return all, first
}

// readersTable makes the table the reader tests read and returns its
// Delta root: version 0 holds three files of five rows (distances
// 0..14), version 1 the Iceberg head after two more and a compaction of
// all five into one (the five removed, the compacted file added).
func readersTable(t *testing.T) string {
	_, root := readersHarness(t)
	return root
}

// readersHarness is readersTable with its harness.
func readersHarness(t *testing.T) (*harness, string) {
	h := newHarness(t, map[string]string{delta.PropEnabled: "true", maintenance.CompactMinFilesProperty: "2"})
	h.ingest(3, 5) // offsets and distances 0..14
	st, err := h.pub.Publish(h.ctx, tableIdent)
	require.NoError(t, err)
	require.EqualValues(t, 0, *st.Version)
	h.ingest(2, 5) // 15..24
	sched, err := maintenance.New(maintenance.Config{Disabled: true}, maintenance.Deps{Catalog: h.cat, Keep: h.pub.KeepFiles})
	require.NoError(t, err)
	_, err = sched.RunJobs(h.ctx, tableIdent, []string{maintenance.JobCompact})
	require.NoError(t, err)
	st, err = h.pub.Publish(h.ctx, tableIdent)
	require.NoError(t, err)
	require.EqualValues(t, 1, *st.Version)
	vs := readLog(t, h.logDir())
	require.NotEmpty(t, vs[1].removes, "the compaction removed files in version 1")
	return h, st.Location
}

// TestE2EDeltaTimeTravelAfterExpiry: the Delta log's retention follows
// Iceberg's snapshot retention. After a compaction and an Iceberg expiry
// that removed every snapshot but the head, Iceberg no longer needs the
// compacted-away files, yet version 0 of the log still names them:
// KeepFiles keeps them from the expiry's deletes, so delta-rs still
// time-travels to version 0 and reads its rows.
func TestE2EDeltaTimeTravelAfterExpiry(t *testing.T) {
	testenv.E2E(t, "delta-rs and DuckDB's delta extension (the venv of scripts/requirements-delta.txt)")
	h := newHarness(t, map[string]string{delta.PropEnabled: "true", maintenance.CompactMinFilesProperty: "2",
		"history.expire.max-snapshot-age-ms": "1", "history.expire.min-snapshots-to-keep": "1"})
	h.ingest(4, 5) // distances 0..19
	_, err := h.pub.Publish(h.ctx, tableIdent)
	require.NoError(t, err)
	sched, err := maintenance.New(maintenance.Config{Disabled: true}, maintenance.Deps{Catalog: h.cat, Keep: h.pub.KeepFiles})
	require.NoError(t, err)
	_, err = sched.RunJobs(h.ctx, tableIdent, []string{maintenance.JobCompact})
	require.NoError(t, err)
	st, err := h.pub.Publish(h.ctx, tableIdent)
	require.NoError(t, err)
	require.EqualValues(t, 1, *st.Version)
	_, err = sched.RunJobs(h.ctx, tableIdent, []string{maintenance.JobExpire})
	require.NoError(t, err)
	tbl, err := h.tio.LoadTable(h.ctx, table.Identifier{"air", "flights"})
	require.NoError(t, err)
	require.Len(t, tbl.Metadata().Snapshots(), 1, "expiry removed the older snapshots")

	var all []int64
	for d := range int64(20) {
		all = append(all, d)
	}
	got := readDelta(t, st.Location, "0")
	g := got["deltars"]
	require.Empty(t, g.Error)
	require.Equal(t, readerView{Rows: 20, Sum: 190, Values: all, Versions: map[string]int64{"0": 20}},
		readerView{Rows: g.Rows, Sum: g.Sum, Values: g.Values, Versions: g.Versions})
}

// TestE2EDeltaLogCleanup: after the log cleanup deleted the commits and
// checkpoints that described only expired Iceberg snapshots
// (cleanedLog: versions 4..6 left, checkpoints 4 and 6), delta-rs still
// loads the table, which it can only do from the newest checkpoint
// (version 0 is gone), DeltaTable.history lists the versions left,
// time travel to the oldest left reads its rows, and DuckDB reads the
// latest version.
func TestE2EDeltaLogCleanup(t *testing.T) {
	testenv.E2E(t, "delta-rs and DuckDB's delta extension (the venv of scripts/requirements-delta.txt)")
	h := cleanedLog(t)
	got := readDelta(t, deltaRootOf(t, h), "4")
	var all []int64
	for d := range int64(28) {
		all = append(all, d)
	}
	for _, r := range []string{"deltars", "duckdb"} {
		g := got[r]
		require.Empty(t, g.Error, r)
		require.Equal(t, readerView{Rows: 28, Sum: 378, Values: all}, readerView{Rows: g.Rows, Sum: g.Sum, Values: g.Values}, r)
	}
	require.Equal(t, map[string]int64{"4": 20}, got["deltars"].Versions, "version 4 reflects the fifth append")
	require.Equal(t, 3, got["deltars"].History, "DeltaTable.history: versions 4, 5 and 6")
}
