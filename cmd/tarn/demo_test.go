package main_test

import (
	"context"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDemo runs `tarn demo` for the 10,000 flights rows and reads the live
// table through iceberg-go's REST client: every row once, with the sums of
// testdata/answers.json; then SIGTERM ends it with exit 0.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("starts tarn demo")
	}
	p := startTarnCmd(t, cleanEnv(), "demo", "--listen", "127.0.0.1:0", "--rows", "10000", "--rate", "20000", "--target-lag", "1s")
	ctx := context.Background()
	cat, err := rest.NewCatalog(ctx, "tarn", p.URL)
	require.NoError(t, err)

	var rows int64
	deadline := time.Now().Add(60 * time.Second)
	for {
		tbl, err := cat.LoadTable(ctx, table.Identifier{"demo", "flights"})
		if err == nil && tbl.CurrentSnapshot() != nil {
			rows = totalRecords(tbl)
			if rows >= 10000 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("demo.flights holds %d rows after 60 s (load error %v)\n%s", rows, err, p.Stderr())
		}
		time.Sleep(200 * time.Millisecond)
	}

	tbl, err := cat.LoadTable(ctx, table.Identifier{"demo", "flights"})
	require.NoError(t, err)
	date, ok := tbl.Schema().FindFieldByName("date")
	require.True(t, ok)
	assert.Equal(t, iceberg.PrimitiveTypes.Timestamp, date.Type) // local-timestamp-micros: no zone
	res, err := tbl.Scan().ToArrowTable(ctx)
	require.NoError(t, err)
	defer res.Release()
	col := func(name string) []arrow.Array {
		idx := res.Schema().FieldIndices(name)
		require.Len(t, idx, 1, name)
		return res.Column(idx[0]).Data().Chunks()
	}
	type pos struct {
		p   int32
		off int64
	}
	seen := map[pos]bool{}
	var count, sumDelay, sumDistance int64
	delays, dists, kafka := col("delay"), col("distance"), col("_kafka")
	for c := range kafka {
		dl, ds, k := delays[c].(*array.Int64), dists[c].(*array.Int64), kafka[c].(*array.Struct)
		st := k.DataType().(*arrow.StructType)
		pi, _ := st.FieldIdx("partition")
		oi, _ := st.FieldIdx("offset")
		ps, offs := k.Field(pi).(*array.Int32), k.Field(oi).(*array.Int64)
		for i := range k.Len() {
			key := pos{ps.Value(i), offs.Value(i)}
			require.False(t, seen[key], "duplicate _kafka position %+v", key)
			seen[key] = true
			count++
			sumDelay += dl.Value(i)
			sumDistance += ds.Value(i)
		}
	}
	assert.EqualValues(t, 10000, count)
	assert.EqualValues(t, 7622019, sumDistance)
	assert.EqualValues(t, 116331, sumDelay)

	out := p.Stdout()
	for _, want := range []string{"load_catalog(\"tarn\", type=\"rest\", uri=\"" + p.URL + "\")", "ENDPOINT '" + p.URL + "'", "spark.sql.catalog.tarn.uri=" + p.URL} {
		assert.Contains(t, out, want)
	}

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, 0, p.wait(t, 30*time.Second), p.Stderr())
}

// totalRecords is the table's row count from its current snapshot summary.
func totalRecords(tbl *table.Table) int64 {
	s := tbl.CurrentSnapshot().Summary
	if s == nil {
		return 0
	}
	n, _ := strconv.ParseInt(s.Properties["total-records"], 10, 64)
	return n
}
