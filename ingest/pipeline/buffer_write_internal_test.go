package pipeline

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/stretchr/testify/require"
)

// The write path's speed-ups (no dictionary for _kafka.offset and
// _kafka.timestamp, builders reused across records) must not change what
// is written: every row's _kafka partition, offset and timestamp, the
// null key and empty headers, and the file's day partition. Two batches
// go through one buffer so that a reused builder is covered.
func TestBufferWriteKeepsKafkaValues(t *testing.T) {
	const n = 3*maxRowsPerRecord + 123
	e := newWriteEnv(t, n)
	ctx := context.Background()
	for range 2 {
		e.fill(t)
		batch, _ := e.buf.take()
		require.Len(t, batch.Records, 4)
		w, err := e.sink.Write(ctx, batch)
		release(batch.Records)
		require.NoError(t, err)
		require.Len(t, w.Files, 1)
		df := w.Files[0]
		require.EqualValues(t, n, df.Count())
		day := iceberg.Date(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC).Unix() / 86400)
		require.Len(t, df.Partition(), 1)
		for _, v := range df.Partition() {
			require.Equal(t, day, v)
		}

		path := strings.TrimPrefix(df.FilePath(), "file://")
		pf, err := file.OpenParquetFile(path, false)
		require.NoError(t, err)
		rg := pf.MetaData().RowGroup(0)
		for c := range rg.NumColumns() {
			cc, err := rg.ColumnChunk(c)
			require.NoError(t, err)
			col := cc.PathInSchema().String()
			switch col {
			case "_kafka.offset", "_kafka.timestamp":
				require.False(t, cc.HasDictionaryPage(), col)
			case "_kafka.partition", "origin":
				require.True(t, cc.HasDictionaryPage(), col)
			}
		}
		fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		require.NoError(t, err)
		tbl, err := fr.ReadTable(ctx)
		require.NoError(t, err)
		idx := tbl.Schema().FieldIndices(KafkaColumn)
		require.Len(t, idx, 1)
		row := 0
		for _, chunk := range tbl.Column(idx[0]).Data().Chunks() {
			st := chunk.(*array.Struct)
			part := st.Field(0).(*array.Int32)
			off := st.Field(1).(*array.Int64)
			ts := st.Field(2).(*array.Timestamp)
			key := st.Field(3)
			headers := st.Field(4).(*array.List)
			for i := range st.Len() {
				rec := e.recs[row]
				require.Equal(t, rec.Partition, part.Value(i), "row %d", row)
				require.Equal(t, rec.Offset, off.Value(i), "row %d", row)
				require.Equal(t, arrow.Timestamp(rec.Timestamp.UnixMicro()), ts.Value(i), "row %d", row)
				require.True(t, key.IsNull(i), "row %d", row)
				start, end := headers.ValueOffsets(i)
				require.Equal(t, start, end, "row %d", row)
				row++
			}
		}
		require.Equal(t, n, row)
		tbl.Release()
		require.NoError(t, pf.Close())
	}
}
