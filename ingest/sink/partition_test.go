package sink_test

import (
	"context"
	"path"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/sink"
	"github.com/tarnhq/tarn/internal/testserver"
	"github.com/tarnhq/tarn/spec"
)

// dayTable is a topic table as Tarn makes it: _kafka with a timestamptz,
// partitioned by day(_kafka.timestamp).
var dayTable = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "v", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "_kafka", Required: true, Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
		{ID: 3, Name: "partition", Type: iceberg.PrimitiveTypes.Int32, Required: true},
		{ID: 4, Name: "offset", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		{ID: 5, Name: "timestamp", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
	}}},
)

// The sink partitions day(_kafka.timestamp) tables itself instead of
// letting iceberg-go do it row by row. Its data files must be the ones
// iceberg-go writes for the same records: same partition directories,
// partition values, spec, counts, sizes and column statistics; and the
// committed rows must all read back. One batch has a record of one day
// and one crossing midnight (cut into two runs); the other adds a record
// whose days alternate row by row, which the sink leaves to iceberg-go.
func TestDayPartitionerMatchesIcebergGo(t *testing.T) {
	ctx := context.Background()
	cat, wh, _ := testserver.NewCatalog(t, t.TempDir(), nil)
	require.NoError(t, cat.CreateNamespace(ctx, catalog.Namespace{"ns"}, nil))
	ps := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{5}, FieldID: 1000, Name: "_kafka_timestamp_day", Transform: iceberg.DayTransform{}})
	_, err := cat.CreateTable(ctx, wh, catalog.Namespace{"ns"}, spec.CreateTableRequest{Name: "orders", Schema: dayTable,
		PartitionSpec: &iceberg.UnboundPartitionSpec{PartitionSpec: ps}})
	require.NoError(t, err)
	tio := cat.TableIO(wh)
	ident := table.Identifier{"ns", "orders"}

	day := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	var off int64
	build := func(ts ...time.Time) arrow.RecordBatch {
		sc, err := table.SchemaToArrowSchema(dayTable, nil, true, false)
		require.NoError(t, err)
		b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		defer b.Release()
		kb := b.Field(1).(*array.StructBuilder)
		for _, x := range ts {
			b.Field(0).(*array.Int64Builder).Append(off * 10)
			kb.Append(true)
			kb.FieldBuilder(0).(*array.Int32Builder).Append(0)
			kb.FieldBuilder(1).(*array.Int64Builder).Append(off)
			kb.FieldBuilder(2).(*array.TimestampBuilder).Append(arrow.Timestamp(x.UnixMicro()))
			off++
		}
		return b.NewRecordBatch()
	}
	var mixed, oneDay, midnight []time.Time
	for i := range 50 {
		mixed = append(mixed, day.Add(time.Duration(i%2)*24*time.Hour+time.Duration(i)*time.Second))
		oneDay = append(oneDay, day.Add(time.Duration(i)*time.Minute))
		midnight = append(midnight, day.Add(48*time.Hour-25*time.Second+time.Duration(i)*time.Second))
	}
	for _, tc := range []struct {
		name string
		ts   [][]time.Time
		days int
	}{
		// Partitioned by the sink: 11-28, then 11-29 to 11-30 (two runs).
		{name: "runs", ts: [][]time.Time{oneDay, midnight}, days: 3},
		// Left to iceberg-go: days alternate inside a record.
		{name: "interleaved", ts: [][]time.Time{mixed, oneDay, midnight}, days: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var recs []arrow.RecordBatch
			for _, ts := range tc.ts {
				recs = append(recs, build(ts...))
			}
			defer func() {
				for _, r := range recs {
					r.Release()
				}
			}()
			first := recs[0].Column(1).(*array.Struct).Field(1).(*array.Int64).Value(0)
			rows := int64(0)
			for _, r := range recs {
				rows += r.NumRows()
			}
			checkLikeIcebergGo(t, tio, ident, recs, first, rows, tc.days)
		})
	}

	// Committed, every row reads back, also when filtered by partition.
	tbl, err := tio.LoadTable(ctx, ident)
	require.NoError(t, err)
	res, err := tbl.Scan().ToArrowTable(ctx)
	require.NoError(t, err)
	require.EqualValues(t, off, res.NumRows())
	res.Release()
	res, err = tbl.Scan(table.WithRowFilter(iceberg.GreaterThanEqual(iceberg.Reference("_kafka.timestamp"),
		day.Add(48*time.Hour).UnixMicro()))).ToArrowTable(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 50, res.NumRows())
	res.Release()
}

// checkLikeIcebergGo writes recs (offsets first to first+rows of Kafka
// partition 0) through iceberg-go's own partitioned write and through a
// sink, compares the data files, and commits the sink's.
func checkLikeIcebergGo(t *testing.T, tio table.CatalogIO, ident table.Identifier, recs []arrow.RecordBatch, first, rows int64, days int) {
	t.Helper()
	ctx := context.Background()
	tbl, err := tio.LoadTable(ctx, ident)
	require.NoError(t, err)
	it := func(yield func(arrow.RecordBatch, error) bool) {
		for _, r := range recs {
			r.Retain()
			if !yield(r, nil) {
				return
			}
		}
	}
	want := map[string]iceberg.DataFile{}
	for df, err := range table.WriteRecords(ctx, tbl, recs[0].Schema(), it, table.WithMaxWriteWorkers(1)) {
		require.NoError(t, err)
		want[path.Dir(df.FilePath())] = df
	}
	require.Len(t, want, days)

	s, err := sink.Open(ctx, tio, sink.Config{Table: ident, Cluster: "c", Topic: "t"})
	require.NoError(t, err)
	w, err := s.Write(ctx, sink.Batch{Records: recs, Ranges: map[int32]sink.Range{0: {Start: first, End: first + rows}}})
	require.NoError(t, err)
	require.EqualValues(t, rows, w.Rows)
	require.Len(t, w.Files, days)
	for _, got := range w.Files {
		dir := path.Dir(got.FilePath())
		ref, ok := want[dir]
		require.True(t, ok, "no reference file in %s", dir)
		require.NotEqual(t, ref.FilePath(), got.FilePath())
		require.Equal(t, ref.Partition(), got.Partition(), dir)
		require.Equal(t, ref.SpecID(), got.SpecID(), dir)
		require.Equal(t, ref.ContentType(), got.ContentType(), dir)
		require.Equal(t, ref.FileFormat(), got.FileFormat(), dir)
		require.Equal(t, ref.Count(), got.Count(), dir)
		require.Equal(t, ref.FileSizeBytes(), got.FileSizeBytes(), dir)
		require.Equal(t, ref.ColumnSizes(), got.ColumnSizes(), dir)
		require.Equal(t, ref.ValueCounts(), got.ValueCounts(), dir)
		require.Equal(t, ref.NullValueCounts(), got.NullValueCounts(), dir)
		require.Equal(t, ref.NaNValueCounts(), got.NaNValueCounts(), dir)
		require.Equal(t, ref.LowerBoundValues(), got.LowerBoundValues(), dir)
		require.Equal(t, ref.UpperBoundValues(), got.UpperBoundValues(), dir)
		require.Equal(t, ref.SplitOffsets(), got.SplitOffsets(), dir)
		require.Equal(t, ref.SortOrderID(), got.SortOrderID(), dir)
		require.Equal(t, ref.KeyMetadata(), got.KeyMetadata(), dir)
	}
	require.NoError(t, s.CommitWritten(ctx, w))
}
