package main_test

import (
	"context"
	"math/rand/v2"
	"os/exec"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/require"
)

// TestKillDuringCompaction: `tarn serve` is killed with SIGKILL at a
// random moment while `tarn maintenance run --job compact` compacts a
// table of small files, three times; after each restart the table loads,
// scans, and holds every row exactly once (count, distinct ids and sum).
func TestKillDuringCompaction(t *testing.T) {
	if testing.Short() {
		t.Skip("starts tarn serve")
	}
	ctx := context.Background()
	dir := t.TempDir()
	args := []string{"--listen", "127.0.0.1:0", "--data-dir", dir, "--maintenance-interval", "0"}
	p := startTarn(t, cleanEnv(), args...)
	cat, err := rest.NewCatalog(ctx, "tarn", p.URL)
	require.NoError(t, err)
	require.NoError(t, cat.CreateNamespace(ctx, table.Identifier{"air"}, nil))
	ident := table.Identifier{"air", "flights"}
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	_, err = cat.CreateTable(ctx, ident, sc)
	require.NoError(t, err)
	asc, err := table.SchemaToArrowSchema(sc, nil, false, false)
	require.NoError(t, err)

	var next int64 // ids 0..next-1 are in the table
	appendFiles := func(files, rows int) {
		t.Helper()
		tbl, err := cat.LoadTable(ctx, ident)
		require.NoError(t, err)
		for range files {
			b := array.NewRecordBuilder(memory.DefaultAllocator, asc)
			for range rows {
				b.Field(0).(*array.Int64Builder).Append(next)
				next++
			}
			rec := b.NewRecordBatch()
			at := array.NewTableFromRecords(asc, []arrow.RecordBatch{rec})
			tbl, err = tbl.AppendTable(ctx, at, int64(rows), nil)
			require.NoError(t, err)
			at.Release()
			rec.Release()
			b.Release()
		}
	}
	check := func() {
		t.Helper()
		tbl, err := cat.LoadTable(ctx, ident)
		require.NoError(t, err)
		res, err := tbl.Scan().ToArrowTable(ctx)
		require.NoError(t, err)
		defer res.Release()
		seen := make(map[int64]bool, next)
		var sum int64
		for _, c := range res.Column(0).Data().Chunks() {
			ids := c.(*array.Int64)
			for i := range ids.Len() {
				require.False(t, seen[ids.Value(i)], "id %d twice", ids.Value(i))
				seen[ids.Value(i)] = true
				sum += ids.Value(i)
			}
		}
		require.EqualValues(t, next, len(seen), "rows")
		require.Equal(t, next*(next-1)/2, sum, "sum")
	}

	for round := range 3 {
		appendFiles(40, 200)
		run := exec.Command(tarnBin, "maintenance", "run", "--server", p.URL, "--table", "air.flights", "--job", "compact")
		run.Env = cleanEnv()
		require.NoError(t, run.Start())
		time.Sleep(time.Duration(50+rand.IntN(700)) * time.Millisecond)
		p.kill(t)
		_ = run.Wait()
		p = startTarn(t, cleanEnv(), args...)
		cat, err = rest.NewCatalog(ctx, "tarn", p.URL)
		require.NoError(t, err)
		check()
		tbl, err := cat.LoadTable(ctx, ident)
		require.NoError(t, err)
		t.Logf("round %d: killed; after restart %s data files, %d rows exact", round, tbl.CurrentSnapshot().Summary.Properties["total-data-files"], next)
	}
	// And compaction completes on the table the kills left.
	out, errOut, code := runMaintenance(t, "run", "--server="+p.URL, "--table", "air.flights", "--job", "compact")
	require.Equal(t, 0, code, errOut)
	t.Log(out)
	check()
}
