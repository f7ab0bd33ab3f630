package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	hamba "github.com/hamba/avro/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/tarnhq/tarn/ingest/avro"
	"github.com/tarnhq/tarn/ingest/protobuf"
	"github.com/tarnhq/tarn/internal/demo"
)

// runCLI runs the tarn command tree in process with args and stdin,
// returning what it printed.
func runCLI(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

// kafkaEnv is a kfake cluster and srfake registry for the CLI.
type kafkaEnv struct {
	brokers, registry string
	cl                *kgo.Client
	rc                *sr.Client
}

func newKafkaEnv(t *testing.T) *kafkaEnv {
	t.Helper()
	for _, kv := range os.Environ() { // flags only: no TARN_* from outside
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, envPrefix) {
			t.Setenv(k, "")
			require.NoError(t, os.Unsetenv(k))
		}
	}
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation())
	require.NoError(t, err)
	t.Cleanup(kc.Close)
	reg := srfake.New()
	t.Cleanup(reg.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(kc.ListenAddrs()...))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	rc, err := sr.NewClient(sr.URLs(reg.URL()))
	require.NoError(t, err)
	return &kafkaEnv{brokers: strings.Join(kc.ListenAddrs(), ","), registry: reg.URL(), cl: cl, rc: rc}
}

func (e *kafkaEnv) flags() []string {
	return []string{"--kafka-brokers", e.brokers, "--schema-registry-url", e.registry}
}

// consume reads n records of topic from the start.
func (e *kafkaEnv) consume(t *testing.T, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(e.brokers, ",")...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "%d of %d records", len(out), n)
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}

// The README's walkthrough files through `tarn topics create` and `tarn
// produce`: 3 partitions; 20 Avro records keyed by id (a key always on
// the same partition) that ingest/avro decodes to the file's ids and
// amounts; the schema registered once and looked up the second time;
// --count cycles the input, --rate paces it.
func TestProduceAvroWithKey(t *testing.T) {
	e := newKafkaEnv(t)
	out, err := runCLI(t, "", "topics", "create", "orders", "--partitions", "3", "--kafka-brokers", e.brokers)
	require.NoError(t, err)
	assert.Equal(t, "created topic orders: 3 partitions, replication factor 1\n", out)
	td, err := kadm.NewClient(e.cl).ListTopics(context.Background(), "orders")
	require.NoError(t, err)
	assert.Len(t, td["orders"].Partitions, 3)
	_, err = runCLI(t, "", "topics", "create", "orders", "--partitions", "3", "--kafka-brokers", e.brokers)
	assert.EqualError(t, err, "topic orders already exists")

	args := append([]string{"produce", "orders", "--schema-file", "../../testdata/orders.avsc",
		"--input", "../../testdata/orders.jsonl", "--key-field", "id"}, e.flags()...)
	out, err = runCLI(t, "", args...)
	require.NoError(t, err)
	ss, err := e.rc.SchemaByVersion(context.Background(), "orders-value", -1)
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("produced 20 records to orders (avro, schema id %d of subject orders-value)\n", ss.ID), out)

	recs := e.consume(t, "orders", 20)
	writer, err := hamba.Parse(ss.Schema.Schema)
	require.NoError(t, err)
	target, err := avro.ToIceberg(writer)
	require.NoError(t, err)
	dec, err := avro.NewDecoder(writer, target)
	require.NoError(t, err)
	b := array.NewRecordBuilder(memory.DefaultAllocator, dec.ArrowSchema())
	defer b.Release()
	partitionOf := map[string]int32{}
	var ids int64
	for _, r := range recs {
		var h sr.ConfluentHeader
		id, body, err := h.DecodeID(r.Value)
		require.NoError(t, err)
		assert.Equal(t, ss.ID, id)
		require.NoError(t, dec.Append(b, body))
		k, err := strconv.ParseInt(string(r.Key), 10, 64)
		require.NoError(t, err, "the key is the id as text")
		ids += k
		partitionOf[string(r.Key)] = r.Partition
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var sumID int64
	var sumAmount float64
	for i := 0; i < int(rec.NumRows()); i++ {
		sumID += rec.Column(0).(*array.Int64).Value(i)
		sumAmount += rec.Column(2).(*array.Decimal128).Value(i).ToFloat64(2)
	}
	assert.Equal(t, int64(210), sumID)
	assert.Equal(t, int64(210), ids)
	assert.InDelta(t, 307.70, sumAmount, 1e-9)

	// Again, 50 records at 200 a second: the same schema id, the input
	// cycled, each key on the partition it had.
	start := time.Now()
	out, err = runCLI(t, "", append(args, "--count", "50", "--rate", "200")...)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond)
	assert.Equal(t, fmt.Sprintf("produced 50 records to orders (avro, schema id %d of subject orders-value)\n", ss.ID), out)
	for _, r := range e.consume(t, "orders", 70)[20:] {
		assert.Equal(t, partitionOf[string(r.Key)], r.Partition, "key %s", r.Key)
	}
}

// A Parquet file produced with the demo's Avro schema is byte for byte
// what the demo produces; with the Protobuf schema of the same rows each
// value decodes to the row.
func TestProduceParquet(t *testing.T) {
	e := newKafkaEnv(t)
	dir := t.TempDir()
	avsc := filepath.Join(dir, "flights.avsc")
	require.NoError(t, os.WriteFile(avsc, []byte(demo.Schema), 0o644))
	flights, err := demo.Flights()
	require.NoError(t, err)

	out, err := runCLI(t, "", append([]string{"produce", "flights", "--schema-file", avsc,
		"--input", "../../testdata/flights-10k.parquet"}, e.flags()...)...)
	require.NoError(t, err)
	assert.Contains(t, out, "produced 10000 records to flights (avro, schema id ")
	ss, err := e.rc.SchemaByVersion(context.Background(), "flights-value", -1)
	require.NoError(t, err)
	want, err := demo.Encode(flights, ss.ID)
	require.NoError(t, err)
	got := map[string]bool{}
	for _, r := range e.consume(t, "flights", len(flights)) {
		got[string(r.Value)] = true
	}
	for i, v := range want {
		require.True(t, got[string(v)], "row %d", i)
	}

	protoFile := "../../ingest/protobuf/testdata/flights.proto"
	out, err = runCLI(t, "", append([]string{"produce", "flights-pb", "--schema-file", protoFile,
		"--input", "../../testdata/flights-10k.parquet", "--count", "100"}, e.flags()...)...)
	require.NoError(t, err)
	assert.Contains(t, out, "produced 100 records to flights-pb (protobuf, schema id ")
	text, err := os.ReadFile(protoFile)
	require.NoError(t, err)
	fd, err := protobuf.Compile(context.Background(), string(text), nil)
	require.NoError(t, err)
	md := fd.Messages().ByName("Flight")
	seen := map[string]bool{}
	for _, r := range e.consume(t, "flights-pb", 100) {
		var h sr.ConfluentHeader
		_, rest, err := h.DecodeID(r.Value)
		require.NoError(t, err)
		idx, body, err := h.DecodeIndex(rest, 4)
		require.NoError(t, err)
		assert.Equal(t, []int{0}, idx)
		m := dynamicpb.NewMessage(md)
		require.NoError(t, proto.Unmarshal(body, m))
		seen[fmt.Sprintf("%s %d %d %s %s", m.Get(md.Fields().ByName("date")).String(), m.Get(md.Fields().ByName("delay")).Int(),
			m.Get(md.Fields().ByName("distance")).Int(), m.Get(md.Fields().ByName("origin")).String(), m.Get(md.Fields().ByName("destination")).String())] = true
	}
	for _, f := range flights[:100] {
		// A Parquet timestamp is read as arrow-go's text of it, ISO 8601.
		key := fmt.Sprintf("%s %d %d %s %s", time.UnixMicro(f.Date).UTC().Format("2006-01-02T15:04:05"), f.Delay, f.Distance, f.Origin, f.Destination)
		assert.True(t, seen[key], key)
	}
}

// JSON Schema values are validated before they are produced (a bad
// record names its line and nothing after it is sent); schemaless JSON
// from CSV is typed by the Iceberg schema `tarn topics enable` takes, and
// needs no registry.
func TestProduceJSON(t *testing.T) {
	e := newKafkaEnv(t)
	schema := "../../ingest/jsonschema/testdata/flights.schema.json"
	good := `{"date": "2001-01-01T00:05:00Z", "delay": 3, "distance": 300, "origin": "SFO", "destination": "LAX"}` + "\n"
	out, err := runCLI(t, good+good, append([]string{"produce", "fl-json", "--schema-file", schema}, e.flags()...)...)
	require.NoError(t, err)
	assert.Contains(t, out, "produced 2 records to fl-json (json-schema, schema id ")
	for _, r := range e.consume(t, "fl-json", 2) {
		assert.JSONEq(t, strings.TrimSpace(good), string(r.Value[5:]))
	}
	_, err = runCLI(t, good+`{"date": "2001-01-01 00:05:00", "delay": 3, "distance": 300, "origin": "SFO", "destination": "LAX"}`+"\n"+good,
		append([]string{"produce", "fl-json", "--schema-file", schema}, e.flags()...)...)
	assert.ErrorContains(t, err, "--input -: record 2: ")
	assert.ErrorContains(t, err, "date-time")

	dir := t.TempDir()
	csvPath := filepath.Join(dir, "clicks.csv")
	require.NoError(t, os.WriteFile(csvPath, []byte("id,page,ms,ok\n1,/a,12.5,true\n2,1776,,false\n"), 0o644))
	cols := filepath.Join(dir, "clicks.schema.json")
	require.NoError(t, os.WriteFile(cols, []byte(`{"type": "struct", "fields": [
	  {"id": 1, "name": "id", "type": "long", "required": true},
	  {"id": 2, "name": "page", "type": "string", "required": false},
	  {"id": 3, "name": "ms", "type": "double", "required": false},
	  {"id": 4, "name": "ok", "type": "boolean", "required": false}]}`), 0o644))
	out, err = runCLI(t, "", "produce", "clicks", "--format", "json", "--schema-file", cols, "--input", csvPath, "--key-field", "page",
		"--kafka-brokers", e.brokers)
	require.NoError(t, err)
	assert.Equal(t, "produced 2 records to clicks (plain JSON)\n", out)
	recs := e.consume(t, "clicks", 2)
	var rows []map[string]any
	for _, r := range recs {
		var m map[string]any
		require.NoError(t, json.Unmarshal(r.Value, &m))
		rows = append(rows, m)
	}
	assert.ElementsMatch(t, []map[string]any{{"id": 1.0, "page": "/a", "ms": 12.5, "ok": true}, {"id": 2.0, "page": "1776", "ok": false}}, rows)
	assert.ElementsMatch(t, []string{"/a", "1776"}, []string{string(recs[0].Key), string(recs[1].Key)})
}

// --tombstone produces each row's key with a null value (not an empty
// one: a tombstone is a record whose value is null), which an upsert
// topic reads as a delete; before it, `tarn produce` could not write one.
func TestProduceTombstones(t *testing.T) {
	e := newKafkaEnv(t)
	out, err := runCLI(t, "{\"id\": 7}\n{\"id\": \"x-8\", \"other\": 1}\n", "produce", "orders", "--key-field", "id", "--tombstone", "--kafka-brokers", e.brokers)
	require.NoError(t, err)
	assert.Equal(t, "produced 2 records to orders (tombstones: keys with null values)\n", out)
	recs := e.consume(t, "orders", 2)
	var keys []string
	for _, r := range recs {
		keys = append(keys, string(r.Key))
		assert.Nil(t, r.Value, "record %s: a tombstone's value is null", r.Key)
	}
	assert.ElementsMatch(t, []string{"7", "x-8"}, keys)

	// One record is "1 record": the CLI printed "1 records".
	out, err = runCLI(t, "{\"id\": 9}\n", "produce", "orders", "--key-field", "id", "--tombstone", "--kafka-brokers", e.brokers)
	require.NoError(t, err)
	assert.Equal(t, "produced 1 record to orders (tombstones: keys with null values)\n", out)
}

// Bad flags and inputs are refused with the flag or record named.
func TestProduceErrors(t *testing.T) {
	e := newKafkaEnv(t)
	for _, tc := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{"", []string{"--schema-file", "../../testdata/orders.avsc", "--kafka-brokers", e.brokers}, "--format avro needs --schema-registry-url"},
		{"", []string{"--schema-file", "x.txt"}, "give --format"},
		{"", []string{"--input-format", "xml"}, "--input-format must be json, csv or parquet"},
		{"", []string{"--format", "json", "--message", "M"}, "--message is for --format protobuf"},
		{"", []string{"--tombstone"}, "--tombstone needs --key-field"},
		{"{}\n", nil, "--kafka-brokers (or TARN_KAFKA_BROKERS) is required"},
		{"{\"a\": 1}\n", []string{"--key-field", "id", "--kafka-brokers", e.brokers}, `--input -: record 1: no key field "id"`},
		{"{\"a\": 1}\nnot json\n", []string{"--kafka-brokers", e.brokers}, "--input -: line 2: not JSON"},
		{"", []string{"--kafka-brokers", e.brokers}, "--input -: no records"},
		{"{\"a\": 1}\n", []string{"--count", "5", "--kafka-brokers", e.brokers}, "stdin is read once"},
		{"{\"id\": \"x\"}\n", append([]string{"--schema-file", "../../testdata/orders.avsc"}, e.flags()...), "record 1: id: wrong type"},
	} {
		_, err := runCLI(t, tc.stdin, append([]string{"produce", "t"}, tc.args...)...)
		assert.ErrorContains(t, err, tc.want, "%v", tc.args)
	}
}
