package source_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tarnhq/tarn/ingest/source"
)

// BenchmarkPoll measures the source's consume path on kfake: 300,000
// records of 24 bytes (the flights rows' Avro size) in 6 partitions,
// read from the start by a new Source until all arrived. One op is one
// full read. "recycle" gives every record back (Record.Recycle, as the
// pipeline does once a row is copied into its buffer), so franz-go
// decodes later batches into pooled slices; "keep" never does, which
// allocates a fresh []kgo.Record per fetched batch as without the pool.
// Compare B/op and allocs/op.
//
//	go test -run '^$' -bench Poll -benchmem ./ingest/source/
func BenchmarkPoll(b *testing.B) {
	const (
		partitions = 6
		records    = 300_000
	)
	ctx := context.Background()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, testTopic))
	require.NoError(b, err)
	defer c.Close()
	prod, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic(testTopic),
		kgo.ProducerLinger(10*time.Millisecond))
	require.NoError(b, err)
	value := make([]byte, 24)
	for i := range records {
		prod.Produce(ctx, &kgo.Record{Value: value, Partition: int32(i % partitions)}, nil)
	}
	require.NoError(b, prod.Flush(ctx))
	prod.Close()

	for _, recycle := range []bool{true, false} {
		name := "keep"
		if recycle {
			name = "recycle"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				s, err := source.Open(ctx, source.Config{Brokers: c.ListenAddrs(), Topic: testTopic,
					Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, nil)
				if err != nil {
					b.Fatal(err)
				}
				for n := 0; n < records; {
					recs, err := s.Poll(ctx)
					if err != nil {
						b.Fatal(err)
					}
					n += len(recs)
					if recycle {
						for _, r := range recs {
							r.Recycle()
						}
					}
				}
				s.Close()
			}
			b.ReportMetric(float64(b.N*records)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
