package pipeline_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tarnhq/tarn/ingest/pipeline"
	"github.com/tarnhq/tarn/ingest/sink"
	kafkasource "github.com/tarnhq/tarn/ingest/source"
)

// TestRecreatedTopic: the table records the Kafka topic id with its
// offsets; after the topic is deleted and recreated under the same name
// (new id, offsets from 0 again), the pipeline refuses to resume
// (sink.ErrTopicRecreated) instead of reading the new topic from the old
// offsets and silently skipping its first records. The table is unchanged.
func TestRecreatedTopic(t *testing.T) {
	e := newEnv(t)
	rows := loadFlights(t)
	open := func(ctx context.Context, start map[int32]int64) (pipeline.Source, error) {
		return kafkasource.Open(ctx, kafkasource.Config{Brokers: e.kafka.ListenAddrs(), Topic: testTopic, ControlRecords: true}, start)
	}
	newPipeline := func() *pipeline.Pipeline {
		p, err := pipeline.New(e.config(), pipeline.Deps{Tables: e.tio, Registry: e.rc, OpenSource: open})
		require.NoError(t, err)
		return p
	}
	e.produceFlights(rows[:30], 0)
	p := newPipeline()
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	deadline := time.Now().Add(waitTimeout)
	for p.Status().Rows < 30 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	require.NoError(t, <-done)
	require.Len(t, e.scan().rows, 30)

	adm := kadm.NewClient(e.prod)
	_, err := adm.DeleteTopics(e.ctx, testTopic)
	require.NoError(t, err)
	_, err = adm.CreateTopic(e.ctx, testPartitions, 1, nil, testTopic)
	require.NoError(t, err)
	// A new producer: the old one caches the deleted topic's id.
	prod, err := kgo.NewClient(kgo.SeedBrokers(e.kafka.ListenAddrs()...), kgo.DefaultProduceTopic(testTopic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer prod.Close()
	e.prod = prod
	e.produceFlights(rows[:60], 0) // past the old offsets (10 a partition)

	err = newPipeline().Run(e.ctx)
	require.ErrorIs(t, err, sink.ErrTopicRecreated)
	require.Contains(t, err.Error(), "deleted and recreated")
	require.Len(t, e.scan().rows, 30, "nothing committed from the new topic")
}
