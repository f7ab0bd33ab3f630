package main_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/maintenance"
)

// runMaintenance runs `tarn maintenance args...` and returns its stdout,
// stderr and exit code.
func runMaintenance(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(tarnBin, append([]string{"maintenance"}, args...)...)
	cmd.Env = cleanEnv()
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errorsAs(err, &ee):
		code = ee.ExitCode()
	default:
		require.NoError(t, err)
	}
	return out.String(), errb.String(), code
}

// TestMaintenanceCLI drives `tarn maintenance run|status` against a real
// `tarn serve` (periodic passes off) holding a table of 12 small files
// written by iceberg-go through the REST API.
func TestMaintenanceCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("starts tarn serve")
	}
	ctx := context.Background()
	p := startTarn(t, cleanEnv(), "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--maintenance-interval", "0")
	cat, err := rest.NewCatalog(ctx, "tarn", p.URL)
	require.NoError(t, err)
	require.NoError(t, cat.CreateNamespace(ctx, table.Identifier{"air"}, nil))
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "distance", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	tbl, err := cat.CreateTable(ctx, table.Identifier{"air", "flights"}, sc)
	require.NoError(t, err)
	asc, err := table.SchemaToArrowSchema(sc, nil, false, false)
	require.NoError(t, err)
	for i := range 12 {
		b := array.NewRecordBuilder(memory.DefaultAllocator, asc)
		for j := range 10 {
			b.Field(0).(*array.Int64Builder).Append(int64(i*10 + j))
		}
		rec := b.NewRecordBatch()
		at := array.NewTableFromRecords(asc, []arrow.RecordBatch{rec})
		tbl, err = tbl.AppendTable(ctx, at, 100, nil)
		require.NoError(t, err)
		at.Release()
		rec.Release()
		b.Release()
	}
	server := "--server=" + p.URL

	out, errOut, code := runMaintenance(t, "run", server, "--table", "air.flights", "--job", "compact")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "12 files → 1", out)

	out, errOut, code = runMaintenance(t, "status", server, "-o", "json")
	require.Equal(t, 0, code, errOut)
	var st maintenance.Status
	require.NoError(t, json.Unmarshal([]byte(out), &st), out)
	require.False(t, st.Enabled)
	require.Len(t, st.Tables, 1)
	require.EqualValues(t, 1, st.Tables[0].Files)
	require.False(t, st.Tables[0].Enabled, "not owned and not opted in: no periodic maintenance")

	out, errOut, code = runMaintenance(t, "status", server)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "periodic maintenance off")
	require.Contains(t, out, "air.flights")

	out, errOut, code = runMaintenance(t, "run", server, "--table", "air.flights")
	require.Equal(t, 0, code, errOut)
	for _, j := range maintenance.Jobs {
		require.Contains(t, out, j)
	}

	_, errOut, code = runMaintenance(t, "run", server, "--table", "air.flights", "--job", "vacuum")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "unknown maintenance job")
	_, errOut, code = runMaintenance(t, "run", server, "--table", "air.nope")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "NoSuchTableException")

	// The table reads back whole after compaction and expiry.
	tbl, err = cat.LoadTable(ctx, table.Identifier{"air", "flights"})
	require.NoError(t, err)
	res, err := tbl.Scan().ToArrowTable(ctx)
	require.NoError(t, err)
	defer res.Release()
	require.EqualValues(t, 120, res.NumRows())
}

func TestServeMaintenanceFlags(t *testing.T) {
	cmd := exec.Command(tarnBin, "serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--maintenance-interval", "10ms")
	cmd.Env = cleanEnv()
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "%s", out)
	require.Equal(t, 1, ee.ExitCode(), "a refused flag exits 1: %s", out)
	require.Contains(t, string(out), "--maintenance-interval")
}
