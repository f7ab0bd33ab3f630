// Package demo holds what `tarn demo` produces: the flights rows of an
// embedded copy of testdata/flights-10k.parquet, their Avro schema, and a
// producer that writes them to Kafka at a steady rate in the Confluent
// wire format (through internal/produce, which `tarn produce` uses too).
package demo

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	hamba "github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tarnhq/tarn/internal/produce"
)

const (
	// Topic is the demo's Kafka topic.
	Topic = "flights"
	// Partitions is the topic's partition count; rows go round-robin.
	Partitions = 3
	// Subject is the registry subject of the topic's values.
	Subject = Topic + "-value"
	// Schema is the Avro schema of a row. The parquet date is a timestamp
	// without zone, so it is a local-timestamp-micros (Iceberg timestamp).
	Schema = `{"type": "record", "name": "Flight", "namespace": "tarn.demo", "fields": [
	{"name": "date", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
	{"name": "delay", "type": "long"},
	{"name": "distance", "type": "long"},
	{"name": "origin", "type": "string"},
	{"name": "destination", "type": "string"}
]}`
)

//go:embed flights-10k.parquet
var flightsParquet []byte

// Flight is one row; Date is microseconds since the epoch, wall clock.
type Flight struct {
	Date        int64  `avro:"date"`
	Delay       int64  `avro:"delay"`
	Distance    int64  `avro:"distance"`
	Origin      string `avro:"origin"`
	Destination string `avro:"destination"`
}

// FlightsParquet returns the embedded parquet file (10,000 rows).
func FlightsParquet() []byte { return flightsParquet }

// Flights returns the 10,000 rows of the embedded parquet file, in order.
func Flights() ([]Flight, error) {
	return ReadFlights(bytes.NewReader(flightsParquet), 0)
}

// ReadFlights reads the first n rows (all when n is 0) of a flights
// parquet file (date timestamp[us], delay and distance int64, origin and
// destination strings, as testdata/flights-10k.parquet and
// ../shared/data/flights-3m.parquet have them), batch by batch.
func ReadFlights(r parquet.ReaderAtSeeker, n int) ([]Flight, error) {
	pf, err := file.NewParquetReader(r)
	if err != nil {
		return nil, err
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		return nil, err
	}
	defer rr.Release()
	type stringCol interface{ Value(int) string }
	var out []Flight
	for (n == 0 || len(out) < n) && rr.Next() {
		rec := rr.RecordBatch()
		col := func(name string) any {
			idx := rec.Schema().FieldIndices(name)
			if len(idx) != 1 {
				return nil
			}
			return rec.Column(idx[0])
		}
		d, ok1 := col("date").(*array.Timestamp)
		dl, ok2 := col("delay").(*array.Int64)
		ds, ok3 := col("distance").(*array.Int64)
		o, ok4 := col("origin").(stringCol)
		de, ok5 := col("destination").(stringCol)
		if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 {
			return nil, fmt.Errorf("flights parquet: unexpected columns %s", rec.Schema())
		}
		if unit := d.DataType().(*arrow.TimestampType).Unit; unit != arrow.Microsecond {
			return nil, fmt.Errorf("flights parquet: date is in %s, want microseconds", unit)
		}
		for i := 0; i < int(rec.NumRows()) && (n == 0 || len(out) < n); i++ {
			out = append(out, Flight{Date: int64(d.Value(i)), Delay: dl.Value(i), Distance: ds.Value(i),
				Origin: o.Value(i), Destination: de.Value(i)})
		}
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return out, nil
}

// Totals are the aggregates testdata/answers.json records for a flights
// file or a prefix of it (e.g. flights-220k.parquet first_200000).
type Totals struct {
	Rows        int64 `json:"rows"`
	SumDelay    int64 `json:"sum_delay"`
	SumDistance int64 `json:"sum_distance"`
}

// TotalsOf sums rows.
func TotalsOf(rows []Flight) Totals {
	var a Totals
	for _, f := range rows {
		a.Rows++
		a.SumDelay += f.Delay
		a.SumDistance += f.Distance
	}
	return a
}

// Encode returns each row as a record value in the Confluent wire format
// (magic byte, schema id, Avro body).
func Encode(rows []Flight, schemaID int) ([][]byte, error) {
	sc, err := hamba.Parse(Schema)
	if err != nil {
		return nil, err
	}
	enc, err := produce.NewAvro(sc, schemaID)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(rows))
	for i, f := range rows {
		if out[i], err = enc.EncodeNative(f); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Producer writes Values to Topic, cycling through them, at Rate records
// a second, record n to partition n % Partitions.
type Producer struct {
	Client *kgo.Client
	Values [][]byte
	// Rate is records per second; at least 1.
	Rate int
	// Limit stops producing after this many records; 0 is no limit.
	Limit int64

	acked atomic.Int64
}

// Produced is the number of records the broker acknowledged.
func (p *Producer) Produced() int64 { return p.acked.Load() }

// Run produces until ctx ends or Limit records are sent, then waits (up
// to 10 s) for the records in flight. It returns the first produce error,
// nil otherwise.
func (p *Producer) Run(ctx context.Context) error {
	return produce.Run(ctx, p.Client, produce.Pace{Rate: p.Rate, Limit: p.Limit}, func(n int64) (*kgo.Record, error) {
		return &kgo.Record{Topic: Topic, Partition: int32(n % Partitions), Value: p.Values[n%int64(len(p.Values))]}, nil
	}, &p.acked)
}
