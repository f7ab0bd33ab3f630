package sink_test

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	hamba "github.com/hamba/avro/v2"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/avro"
	"github.com/tarnhq/tarn/ingest/sink"
	"github.com/tarnhq/tarn/internal/demo"
	"github.com/tarnhq/tarn/internal/testserver"
	"github.com/tarnhq/tarn/spec"
)

// BenchmarkDecodeToParquet measures the ingest data path without Kafka
// and without a commit: the 10,000 flights rows of testdata (internal/demo,
// Avro in the Confluent wire format, ~25 bytes a row) decoded by
// ingest/avro into Arrow records of 64 Ki rows, then written by Sink.Write
// as zstd Parquet data files (iceberg-go's writer: field IDs, column
// statistics) into a file:// warehouse. One op is one batch of
// batchRows rows. Reported: rows/s and payload MB/s (value bytes after the
// 5-byte header).
//
//	go test -run '^$' -bench DecodeToParquet -benchtime 10x ./ingest/sink/
func BenchmarkDecodeToParquet(b *testing.B) {
	const batchRows = 500_000
	ctx := context.Background()
	rows, err := demo.Flights()
	require.NoError(b, err)
	values, err := demo.Encode(rows, 1)
	require.NoError(b, err)
	writer, err := hamba.Parse(demo.Schema)
	require.NoError(b, err)
	user, err := avro.ToIceberg(writer)
	require.NoError(b, err)

	cat, wh, _ := testserver.NewCatalog(b, b.TempDir(), nil)
	require.NoError(b, cat.CreateNamespace(ctx, catalog.Namespace{"bench"}, nil))
	_, err = cat.CreateTable(ctx, wh, catalog.Namespace{"bench"}, spec.CreateTableRequest{Name: "flights", Schema: user,
		PartitionSpec: &iceberg.UnboundPartitionSpec{}})
	require.NoError(b, err)
	s, err := sink.Open(ctx, cat.TableIO(wh), sink.Config{Table: table.Identifier{"bench", "flights"}, Cluster: "c", Topic: "t"})
	require.NoError(b, err)
	dec, err := avro.NewDecoder(writer, s.Table().Schema())
	require.NoError(b, err)
	var h sr.ConfluentHeader
	var payloadBytes int64
	for i := range batchRows {
		_, p, err := h.DecodeID(values[i%len(values)])
		require.NoError(b, err)
		payloadBytes += int64(len(p))
	}

	b.ResetTimer()
	for b.Loop() {
		bld := array.NewRecordBuilder(memory.DefaultAllocator, dec.ArrowSchema())
		var recs []arrow.RecordBatch
		for i := range batchRows {
			_, p, _ := h.DecodeID(values[i%len(values)])
			if err := dec.Append(bld, p); err != nil {
				b.Fatal(err)
			}
			if bld.Field(0).Len() == 64<<10 {
				recs = append(recs, bld.NewRecordBatch())
			}
		}
		recs = append(recs, bld.NewRecordBatch())
		bld.Release()
		w, err := s.Write(ctx, sink.Batch{Records: recs, Ranges: map[int32]sink.Range{0: {Start: 0, End: batchRows}}})
		if err != nil {
			b.Fatal(err)
		}
		if w.Rows != batchRows {
			b.Fatalf("wrote %d rows, want %d", w.Rows, batchRows)
		}
		for _, r := range recs {
			r.Release()
		}
	}
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(b.N*batchRows)/sec, "rows/s")
	b.ReportMetric(float64(int64(b.N)*payloadBytes)/sec/1e6, "payload-MB/s")
}
