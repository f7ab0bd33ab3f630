package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	hamba "github.com/hamba/avro/v2"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/catalog/bolt"
	"github.com/tarnhq/tarn/ingest/avro"
	"github.com/tarnhq/tarn/ingest/codec"
	"github.com/tarnhq/tarn/ingest/sink"
	"github.com/tarnhq/tarn/internal/demo"
	"github.com/tarnhq/tarn/internal/sample"
)

// BenchmarkBufferToParquet measures the pipeline's data path without
// Kafka and without a commit, into the table tarn serve makes
// (EnsureTable: the flights columns plus _kafka, day(_kafka.timestamp)
// partitions, tableProperties): flights rows (Avro, Confluent wire
// format) decoded by ingest/avro into the buffer, each row's _kafka value
// appended by the buffer as decode does (6 partitions, null key, no
// headers, timestamps 1 ms apart, all on one day), then the buffer taken
// and written by Sink.Write as zstd Parquet. One op is one batch, and so
// one data file, of 1,000,000 rows. This is bench/ingest's "limit" path
// with the pipeline's own buffer and _kafka appender.
//
// The rows are the 220,000 of the committed flights sample
// (internal/sample), repeated; with TARN_BENCH_FLIGHTS set to a flights
// Parquet file (bench/run passes ../shared/data/flights-3m.parquet when
// it is there) its first 1,000,000 rows instead. Repeated rows keep the
// Parquet dictionaries of some columns smaller than the real data does.
// Reported besides ns/op: rows/s (wall), rows/cpu-s
// (the process's CPU time: the writer runs goroutines of its own), and
// payload MB/s (value bytes after the 5-byte header).
//
//	TARN_BENCH_FLIGHTS=$PWD/../shared/data/flights-3m.parquet \
//	  go test -run '^$' -bench BufferToParquet -benchtime 5x ./ingest/pipeline/
func BenchmarkBufferToParquet(b *testing.B) {
	const batchRows = 1_000_000
	e := newWriteEnv(b, batchRows)
	cpu0 := processCPU()
	b.ResetTimer()
	for b.Loop() {
		e.fill(b)
		batch, _ := e.buf.take()
		w, err := e.sink.Write(context.Background(), batch)
		release(batch.Records)
		if err != nil {
			b.Fatal(err)
		}
		if w.Rows != batchRows {
			b.Fatalf("wrote %d rows, want %d", w.Rows, batchRows)
		}
	}
	cpu := processCPU() - cpu0
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(b.N*batchRows)/sec, "rows/s")
	b.ReportMetric(float64(b.N*batchRows)/cpu.Seconds(), "rows/cpu-s")
	b.ReportMetric(float64(int64(b.N)*e.payloadBytes)/sec/1e6, "payload-MB/s")
}

// writeEnv is a table made by EnsureTable, its sink, a buffer and
// decoder for it, and records to fill the buffer with.
type writeEnv struct {
	sink         *sink.Sink
	dec          codec.Decoder
	buf          *buffer
	recs         []kgo.Record
	payloadBytes int64
}

// newWriteEnv makes a writeEnv of n records: flights rows
// (benchFlights), 6 partitions, offsets counting per partition,
// timestamps 1 ms apart from 2026-11-29T00:00Z.
func newWriteEnv(tb testing.TB, n int) *writeEnv {
	tb.Helper()
	const partitions = 6
	ctx := context.Background()
	rows, err := benchFlights(n)
	require.NoError(tb, err)
	values, err := demo.Encode(rows, 1)
	require.NoError(tb, err)
	writer, err := hamba.Parse(demo.Schema)
	require.NoError(tb, err)
	user, err := avro.ToIceberg(writer)
	require.NoError(tb, err)

	dir := tb.TempDir()
	wh, err := catalog.NewWarehouse(catalog.DefaultWarehouse, "file://"+filepath.Join(dir, "warehouse"), nil)
	require.NoError(tb, err)
	store, err := bolt.Open(dir)
	require.NoError(tb, err)
	tb.Cleanup(func() { store.Close() })
	cat, err := catalog.New(catalog.Config{Store: store, Warehouses: []*catalog.Warehouse{wh}})
	require.NoError(tb, err)
	cfg := Config{Topic: "flights", Cluster: "c", Table: catalog.Ident{Namespace: catalog.Namespace{"bench"}, Name: "flights"}}
	_, err = EnsureTable(ctx, cat, wh, cfg, user)
	require.NoError(tb, err)
	s, err := sink.Open(ctx, cat.TableIO(wh), sink.Config{Table: table.Identifier{"bench", "flights"}, Cluster: "c", Topic: "flights"})
	require.NoError(tb, err)
	asc, err := table.SchemaToArrowSchema(s.Table().Schema(), nil, true, false)
	require.NoError(tb, err)
	dec, err := avro.NewDecoder(writer, s.Table().Schema(), codec.WithCallerColumns(KafkaColumn))
	require.NoError(tb, err)
	buf, err := newBuffer(asc)
	require.NoError(tb, err)
	tb.Cleanup(buf.release)

	e := &writeEnv{sink: s, dec: dec, buf: buf, recs: make([]kgo.Record, n)}
	day := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	var h sr.ConfluentHeader
	for i := range e.recs {
		v := values[i%len(values)]
		e.recs[i] = kgo.Record{Value: v, Partition: int32(i % partitions), Offset: int64(i / partitions),
			Timestamp: day.Add(time.Duration(i) * time.Millisecond)}
		_, p, err := h.DecodeID(v)
		if err != nil {
			tb.Fatal(err)
		}
		e.payloadBytes += int64(len(p))
	}
	return e
}

// fill decodes every record into the buffer as Pipeline.decode does.
func (e *writeEnv) fill(tb testing.TB) {
	var h sr.ConfluentHeader
	planned := map[int32]int64{}
	for i := range e.recs {
		rec := &e.recs[i]
		_, p, err := h.DecodeID(rec.Value)
		if err != nil {
			tb.Fatal(err)
		}
		if err := e.dec.Append(e.buf.b, p); err != nil {
			tb.Fatal(err)
		}
		e.buf.cover(rec.Partition, rec.Offset, planned)
		e.buf.addKafka(rec, nil)
	}
}

// benchFlights returns the first n rows of $TARN_BENCH_FLIGHTS, or n
// rows of the committed sample repeated (sample.Repeat) when it is unset.
func benchFlights(n int) ([]demo.Flight, error) {
	path := os.Getenv("TARN_BENCH_FLIGHTS")
	if path == "" {
		rows, err := sample.Flights(0)
		if err != nil {
			return nil, err
		}
		return sample.Repeat(rows, n, sample.Span), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return demo.ReadFlights(f, n)
}

// processCPU is this process's user+system CPU time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
