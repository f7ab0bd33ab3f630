package delta_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
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
// wrote: delta-rs through DataFusion and through its pyarrow path
// (DeltaTable.to_pyarrow_table), and DuckDB's delta extension, at the
// latest version (after a compaction removed files) and time-travelled
// to version 0.
//
// It pins a failure: with the Delta root at <location>/_delta and adds
// named "../data/<file>", to_pyarrow_table failed with FileNotFoundError
// on "<root>/%2E%2E/data/<file>" (delta-rs opens add paths through a file
// system rooted at the Delta root and encodes the ".." segment; an
// absolute file:// URI is joined onto the root too). The root is now the
// Iceberg data directory and adds are relative to it without "..".
func TestE2EDeltaReaders(t *testing.T) {
	testenv.E2E(t, "delta-rs and DuckDB's delta extension (the venv of scripts/requirements-delta.txt)")
	root := readersTable(t)
	all, first := readersWant()
	got := readDelta(t, root, "0")
	for _, r := range []string{"deltars", "pyarrow", "duckdb"} {
		g := got[r]
		require.Empty(t, g.Error, r)
		require.Equal(t, readerView{Rows: 25, Sum: 300, Values: all}, readerView{Rows: g.Rows, Duplicates: g.Duplicates, Sum: g.Sum, Values: g.Values}, r)
	}
	require.Equal(t, map[string]int64{"0": int64(len(first))}, got["deltars"].Versions)
	require.Equal(t, map[string]int64{"0": int64(len(first))}, got["pyarrow"].Versions)
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
	setup := exec.Command(testpython.Script("setup-spark-delta.sh"))
	setup.Stderr = os.Stderr
	out, err := setup.Output()
	require.NoError(t, err, "scripts/setup-spark-delta.sh")
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.GreaterOrEqual(t, len(lines), 2, "%s", out)
	py, jars := lines[len(lines)-2], lines[len(lines)-1]

	cmd := exec.Command(py, testpython.Script("read-delta-spark.py"), root, "distance")
	cmd.Env = append(os.Environ(), "TARN_DELTA_SPARK_JARS="+jars, "READ_DELTA_VALUES=1", "READ_DELTA_VERSIONS=0",
		"SPARK_LOCAL_IP=127.0.0.1", "PYSPARK_PYTHON="+py, "PYSPARK_DRIVER_PYTHON="+py)
	out, err = cmd.Output()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		t.Fatalf("read-delta-spark.py: %v\n%s", err, ee.Stderr)
	}
	require.NoError(t, err)
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

	return st.Location
}

// TestE2EDeltaTimeTravelAfterExpiry: the Delta log's retention follows
// Iceberg's snapshot retention. After a compaction and an Iceberg expiry
// that removed every snapshot but the head, Iceberg no longer needs the
// compacted-away files, yet version 0 of the log still names them:
// KeepFiles keeps them from the expiry's deletes, so delta-rs (both
// paths) still time-travels to version 0 and reads its rows.
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
	for _, r := range []string{"deltars", "pyarrow"} {
		g := got[r]
		require.Empty(t, g.Error, r)
		require.Equal(t, readerView{Rows: 20, Sum: 190, Values: all, Versions: map[string]int64{"0": 20}},
			readerView{Rows: g.Rows, Sum: g.Sum, Values: g.Values, Versions: g.Versions}, r)
	}
}
