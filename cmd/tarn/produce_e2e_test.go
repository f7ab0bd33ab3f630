package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tarnhq/tarn/internal/testenv"
	"github.com/tarnhq/tarn/internal/testkafka"
)

// `tarn topics create` and `tarn produce` against a real Apache Kafka
// broker and Apicurio's Confluent API (internal/testkafka): a topic of 3
// partitions; Protobuf values from the flights Parquet file and JSON
// Schema values from JSON lines, each schema registered under its
// subject, every record keyed and readable; a second create is refused
// by the broker. Runs only with TARN_E2E=1.
func TestE2EProduce(t *testing.T) {
	testenv.E2E(t, "a real Kafka broker and schema registry (internal/testkafka)")
	b := testkafka.StartBroker(t)
	reg := testkafka.StartRegistry(t)
	e := &kafkaEnv{brokers: b.Bootstrap, registry: reg.URL}
	var err error
	e.cl, err = kgo.NewClient(kgo.SeedBrokers(b.Bootstrap))
	require.NoError(t, err)
	t.Cleanup(e.cl.Close)
	e.rc, err = sr.NewClient(sr.URLs(reg.URL))
	require.NoError(t, err)
	ctx := context.Background()

	for _, topic := range []string{"flights-pb", "flights-js"} {
		out, err := runCLI(t, "", "topics", "create", topic, "--partitions", "3", "--kafka-brokers", b.Bootstrap)
		require.NoError(t, err)
		assert.Equal(t, "created topic "+topic+": 3 partitions, replication factor 1\n", out)
	}
	_, err = runCLI(t, "", "topics", "create", "flights-pb", "--kafka-brokers", b.Bootstrap)
	assert.EqualError(t, err, "topic flights-pb already exists")
	td, err := kadm.NewClient(e.cl).ListTopics(ctx, "flights-pb")
	require.NoError(t, err)
	assert.Len(t, td["flights-pb"].Partitions, 3)

	out, err := runCLI(t, "", append([]string{"produce", "flights-pb", "--schema-file", "../../ingest/protobuf/testdata/flights.proto",
		"--input", "../../testdata/flights-10k.parquet", "--key-field", "origin", "--count", "2000"}, e.flags()...)...)
	require.NoError(t, err)
	ss, err := e.rc.SchemaByVersion(ctx, "flights-pb-value", -1)
	require.NoError(t, err)
	assert.Equal(t, sr.TypeProtobuf, ss.Type)
	assert.Equal(t, fmt.Sprintf("produced 2000 records to flights-pb (protobuf, schema id %d of subject flights-pb-value)\n", ss.ID), out)
	keys := map[string]int32{}
	for _, r := range e.consume(t, "flights-pb", 2000) {
		if p, ok := keys[string(r.Key)]; ok {
			assert.Equal(t, p, r.Partition, "origin %s on one partition", r.Key)
		}
		keys[string(r.Key)] = r.Partition
	}
	assert.Greater(t, len(keys), 10, "origins")

	var lines strings.Builder
	for i := range 300 {
		fmt.Fprintf(&lines, `{"date": "%s", "delay": %d, "distance": 100, "origin": "SFO", "destination": "LAX"}`+"\n",
			time.Date(2001, 1, 1, 0, i, 0, 0, time.UTC).Format(time.RFC3339), i)
	}
	out, err = runCLI(t, lines.String(), append([]string{"produce", "flights-js", "--schema-file", "../../ingest/jsonschema/testdata/flights.schema.json",
		"--rate", "1000"}, e.flags()...)...)
	require.NoError(t, err)
	ss, err = e.rc.SchemaByVersion(ctx, "flights-js-value", -1)
	require.NoError(t, err)
	assert.Equal(t, sr.TypeJSON, ss.Type)
	assert.Equal(t, fmt.Sprintf("produced 300 records to flights-js (json-schema, schema id %d of subject flights-js-value)\n", ss.ID), out)
	assert.Len(t, e.consume(t, "flights-js", 300), 300)
}
