package pipeline_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	hamba "github.com/hamba/avro/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/codec"
	"github.com/tarnhq/tarn/ingest/jsonrow"
	"github.com/tarnhq/tarn/ingest/pipeline"
	"github.com/tarnhq/tarn/ingest/protobuf"
	kafkasource "github.com/tarnhq/tarn/ingest/source"
	"github.com/tarnhq/tarn/internal/arrowtest"
)

// The tests of this file hold the data users expect to land against a
// pipeline on kfake (issue 14 items 7-10): each topic is one partition,
// its values produced in order, and the table is read back with
// iceberg-go.

// world is a kfake cluster, an srfake registry and a catalog.
type world struct {
	t    *testing.T
	ctx  context.Context
	kc   *kfake.Cluster
	rc   *sr.Client
	cat  *catalog.Catalog
	wh   *catalog.Warehouse
	prod *kgo.Client
}

func newWorld(t *testing.T, topics ...string) *world {
	t.Helper()
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topics...))
	require.NoError(t, err)
	t.Cleanup(kc.Close)
	reg := srfake.New()
	t.Cleanup(reg.Close)
	rc, err := sr.NewClient(sr.URLs(reg.URL()))
	require.NoError(t, err)
	prod, err := kgo.NewClient(kgo.SeedBrokers(kc.ListenAddrs()...))
	require.NoError(t, err)
	t.Cleanup(prod.Close)
	cat, wh := newCatalog(t)
	return &world{t: t, ctx: context.Background(), kc: kc, rc: rc, cat: cat, wh: wh, prod: prod}
}

func (w *world) produce(topic string, values ...[]byte) {
	w.t.Helper()
	recs := make([]*kgo.Record, len(values))
	for i, v := range values {
		recs[i] = &kgo.Record{Topic: topic, Value: v}
	}
	require.NoError(w.t, w.prod.ProduceSync(w.ctx, recs...).FirstErr())
}

// confluent prefixes body with the Confluent header of schema id (and,
// for Protobuf, the first message's index).
func confluent(t *testing.T, id int, indexes []int, body []byte) []byte {
	t.Helper()
	b, err := new(sr.ConfluentHeader).AppendEncode(nil, id, indexes)
	require.NoError(t, err)
	return append(b, body...)
}

// config is a topic's pipeline config into table ns.<topic>.
func (w *world) config(topic string, format pipeline.Format) pipeline.Config {
	return pipeline.Config{Topic: topic, Cluster: testCluster, TargetLag: time.Second, Format: format,
		Table: catalog.Ident{Namespace: catalog.Namespace{"ns"}, Name: topic}}
}

// start creates the table as an enable does (WriterSchema, EnsureTable)
// and runs a pipeline; the returned function stops it and returns Run's
// result.
func (w *world) start(cfg pipeline.Config) (*pipeline.Pipeline, func() error) {
	w.t.Helper()
	user, format, err := pipeline.WriterSchema(w.ctx, w.rc, cfg)
	require.NoError(w.t, err)
	cfg.Format = format
	_, err = pipeline.EnsureTable(w.ctx, w.cat, w.wh, cfg, user)
	require.NoError(w.t, err)
	p, err := pipeline.New(cfg, pipeline.Deps{Tables: w.cat.TableIO(w.wh), Registry: w.rc,
		OpenSource: func(ctx context.Context, start map[int32]int64) (pipeline.Source, error) {
			return kafkasource.Open(ctx, kafkasource.Config{Brokers: w.kc.ListenAddrs(), Topic: cfg.Topic, ControlRecords: true}, start)
		}})
	require.NoError(w.t, err)
	ctx, cancel := context.WithCancel(w.ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	stopped := false
	var result error
	stop := func() error {
		if !stopped {
			cancel()
			result, stopped = <-done, true
		}
		return result
	}
	w.t.Cleanup(func() { _ = stop() })
	return p, stop
}

// waitNext waits until the pipeline's table holds every offset below n
// (rows, skipped and dead letter records alike), or Run ended.
func (w *world) waitNext(p *pipeline.Pipeline, n int64) pipeline.Status {
	w.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		st := p.Status()
		if st.Next[0] >= n || st.State == pipeline.StateSuspended || st.State == pipeline.StateFailed {
			return st
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("timed out waiting for offset %d; status %+v", n, st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// column reads a column of table ns.<name>, its rows in offset order
// (one partition).
func (w *world) column(name, col string) []any {
	w.t.Helper()
	tbl, err := w.cat.TableIO(w.wh).LoadTable(w.ctx, table.Identifier{"ns", name})
	require.NoError(w.t, err)
	if tbl.CurrentSnapshot() == nil {
		return nil
	}
	// Record by record: iceberg-go 0.7.0's ToArrowTable panics on a map
	// whose values are required (the batches it reads have nullable map
	// items, its table schema does not).
	_, recs, err := tbl.Scan(table.WithSelectedFields("_kafka.offset", col)).ToArrowRecords(w.ctx)
	require.NoError(w.t, err)
	byOffset := map[int64]any{}
	var offsets []int64
	for rec, err := range recs {
		require.NoError(w.t, err)
		defer rec.Release()
		for i, k := range arrowtest.Column(rec, "_kafka") {
			o := k.(map[string]any)["offset"].(int64)
			offsets = append(offsets, o)
			byOffset[o] = arrowtest.Value(rec.Column(rec.Schema().FieldIndices(col)[0]), i)
		}
	}
	slices.Sort(offsets)
	out := make([]any, 0, len(offsets))
	for _, o := range offsets {
		out = append(out, byOffset[o])
	}
	return out
}

// dlqRows counts the rows of the dead letter table of ns.<name>.
func (w *world) dlqRows(name string) int64 {
	w.t.Helper()
	id := pipeline.DLQTable(catalog.Ident{Namespace: catalog.Namespace{"ns"}, Name: name})
	tbl, err := w.cat.TableIO(w.wh).LoadTable(w.ctx, table.Identifier{"ns", id.Name})
	require.NoError(w.t, err)
	if tbl.CurrentSnapshot() == nil {
		return 0
	}
	res, err := tbl.Scan().ToArrowTable(w.ctx)
	require.NoError(w.t, err)
	defer res.Release()
	return res.NumRows()
}

func declared(t *testing.T, text string) *iceberg.Schema {
	t.Helper()
	sc, err := jsonrow.ParseSchema([]byte(text))
	require.NoError(t, err)
	return sc
}

// TestJSONFilmsTitledByNumbers pins issue 14 item 7 through a pipeline: the
// films titled 1776 and 2012 arrive with their titles as JSON numbers,
// which a string column refused, so in error mode dlq they ended up in
// the dead letter table. They land as "1776" and "2012". Names match
// exactly by default (a field Title leaves the column title null, and
// the status's coverage says so), or case-insensitively when asked.
func TestJSONFilmsTitledByNumbers(t *testing.T) {
	films := [][]byte{
		[]byte(`{"title": 1776, "year": 1972}`),
		[]byte(`{"title": 2012, "year": 2009}`),
		[]byte(`{"title": "Heat", "year": 1995}`),
		[]byte(`{"Title": "Ran", "year": 1985, "rating": 8.2}`),
	}
	schema := declared(t, `{"type":"struct","fields":[
		{"id":1,"name":"title","required":false,"type":"string"},
		{"id":2,"name":"year","required":false,"type":"int"},
		{"id":3,"name":"director","required":false,"type":"string"}]}`)
	w := newWorld(t, "films", "films-ci")

	cfg := w.config("films", pipeline.FormatJSON)
	cfg.Schema, cfg.ErrorMode = schema, pipeline.ErrorModeDLQ
	w.produce("films", films...)
	p, stop := w.start(cfg)
	st := w.waitNext(p, int64(len(films)))
	require.NoError(t, stop())
	assert.Empty(t, st.Errors)
	assert.Zero(t, w.dlqRows("films"), "no film in the dead letter table")
	assert.Equal(t, []any{"1776", "2012", "Heat", nil}, w.column("films", "title"))
	assert.Equal(t, []any{int32(1972), int32(2009), int32(1995), int32(1985)}, w.column("films", "year"))
	assert.Equal(t, codec.Coverage{Rows: 4, Unfilled: []string{"director"}, Unmatched: []string{"Title", "rating"}}, p.Status().Coverage)

	cfg = w.config("films-ci", pipeline.FormatJSON)
	cfg.Schema, cfg.FieldNameMatching = schema, pipeline.FieldNamesCaseInsensitive
	w.produce("films-ci", films...)
	p, stop = w.start(cfg)
	st = w.waitNext(p, int64(len(films)))
	require.NoError(t, stop())
	assert.Empty(t, st.Errors)
	assert.Equal(t, []any{"1776", "2012", "Heat", "Ran"}, w.column("films-ci", "title"))
	assert.Equal(t, codec.Coverage{Rows: 4, Unfilled: []string{"director"}, Unmatched: []string{"rating"}}, p.Status().Coverage)
}

// TestJSONMicrosecondEpochs pins issue 14 item 8 through a pipeline: an
// integer in a timestamptz column was read as milliseconds, so a
// microsecond epoch (1709190000000000, 2024-02-29T07:00:00Z) was stored
// in year 56132 and pyarrow could no longer read the table. With the
// default unit (ms) the record is now out of range and follows the error
// mode; with timestamp-unit us it lands as the instant it is.
func TestJSONMicrosecondEpochs(t *testing.T) {
	const epochMicros = 1709190000000000
	want := time.Date(2024, 2, 29, 7, 0, 0, 0, time.UTC)
	schema := declared(t, `{"type":"struct","fields":[
		{"id":1,"name":"id","required":true,"type":"long"},
		{"id":2,"name":"at","required":false,"type":"timestamptz"}]}`)
	values := [][]byte{
		fmt.Appendf(nil, `{"id": 1, "at": %d}`, epochMicros),
		[]byte(`{"id": 2, "at": "2024-02-29T07:00:00Z"}`),
	}
	w := newWorld(t, "events-ms", "events-us")

	cfg := w.config("events-ms", pipeline.FormatJSON)
	cfg.Schema, cfg.ErrorMode = schema, pipeline.ErrorModeDLQ
	w.produce("events-ms", values...)
	p, stop := w.start(cfg)
	st := w.waitNext(p, int64(len(values)))
	require.NoError(t, stop())
	assert.Equal(t, map[pipeline.ErrorKind]int64{pipeline.KindOutOfRange: 1}, st.Errors)
	assert.EqualValues(t, 1, w.dlqRows("events-ms"))
	assert.Equal(t, []any{int64(2)}, w.column("events-ms", "id"), "only the RFC 3339 row is in the table")

	cfg = w.config("events-us", pipeline.FormatJSON)
	cfg.Schema, cfg.TimestampUnit = schema, jsonrow.Micros
	w.produce("events-us", values...)
	p, stop = w.start(cfg)
	st = w.waitNext(p, int64(len(values)))
	require.NoError(t, stop())
	assert.Empty(t, st.Errors)
	ts := arrow.Timestamp(want.UnixMicro())
	assert.Equal(t, []any{ts, ts}, w.column("events-us", "at"))
}

// TestAvroUUIDOnFixed pins issue 14 item 9 through a pipeline: Avro 1.12's
// uuid on fixed(16) was stored as fixed[16]; it is an Iceberg uuid
// column, like uuid on string, and both read back as the same uuid.
func TestAvroUUIDOnFixed(t *testing.T) {
	const text = `{"type":"record","name":"Order","fields":[
		{"name":"id","type":{"type":"fixed","name":"OrderId","size":16,"logicalType":"uuid"}},
		{"name":"ref","type":["null",{"type":"string","logicalType":"uuid"}]}]}`
	id := uuid.MustParse("f81d4fae-7dec-11d0-a765-00a0c91e6bf6")
	w := newWorld(t, "orders")
	ss, err := w.rc.CreateSchema(w.ctx, "orders-value", sr.Schema{Schema: text})
	require.NoError(t, err)
	sc, err := hamba.Parse(text)
	require.NoError(t, err)
	body, err := hamba.Marshal(sc, map[string]any{"id": [16]byte(id), "ref": map[string]any{"string.uuid": id.String()}})
	require.NoError(t, err)
	w.produce("orders", confluent(t, ss.ID, nil, body))

	p, stop := w.start(w.config("orders", pipeline.FormatAvro))
	st := w.waitNext(p, 1)
	require.NoError(t, stop())
	require.Empty(t, st.Errors)
	tbl, err := w.cat.TableIO(w.wh).LoadTable(w.ctx, table.Identifier{"ns", "orders"})
	require.NoError(t, err)
	for _, col := range []string{"id", "ref"} {
		f, ok := tbl.Schema().FindFieldByName(col)
		require.True(t, ok)
		assert.Equal(t, iceberg.PrimitiveTypes.UUID, f.Type, col)
		assert.Equal(t, []any{id}, w.column("orders", col), col)
	}
}

// TestProtobufMarkerArmGainsFields pins issue 14 item 10 through a
// pipeline: an empty message used as a oneof arm was a boolean column,
// so when a later schema gave the message a field the table could not
// evolve (boolean to struct) and the topic was suspended. The arm is a
// struct with the marker field _present from the first schema, and the
// new field is added to it: the topic keeps syncing.
func TestProtobufMarkerArmGainsFields(t *testing.T) {
	w := newWorld(t, "orders")
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "protobuf", "testdata", name))
		require.NoError(t, err)
		return string(b)
	}
	ordersProtoV1, ordersProtoV2 := read("orders-v1.proto"), read("orders-v2.proto")
	encode := func(schema string, id int, jsonText string) []byte {
		fd, err := protobuf.Compile(w.ctx, schema, nil)
		require.NoError(t, err)
		m := dynamicpb.NewMessage(fd.Messages().ByName("Order"))
		require.NoError(t, protojson.Unmarshal([]byte(jsonText), m))
		body, err := proto.Marshal(m)
		require.NoError(t, err)
		return confluent(t, id, []int{0}, body)
	}
	v1, err := w.rc.CreateSchema(w.ctx, "orders-value", sr.Schema{Type: sr.TypeProtobuf, Schema: ordersProtoV1})
	require.NoError(t, err)
	w.produce("orders",
		encode(ordersProtoV1, v1.ID, `{"id": "1", "cancelled": {}}`),
		encode(ordersProtoV1, v1.ID, `{"id": "2", "shipped": {"carrier": "ups"}}`))

	p, stop := w.start(w.config("orders", pipeline.FormatProtobuf))
	st := w.waitNext(p, 2)
	require.Equal(t, pipeline.StateSyncing, st.State, st.Reason)

	v2, err := w.rc.CreateSchema(w.ctx, "orders-value", sr.Schema{Type: sr.TypeProtobuf, Schema: ordersProtoV2})
	require.NoError(t, err)
	w.produce("orders",
		encode(ordersProtoV2, v2.ID, `{"id": "3", "cancelled": {"reason": "fraud"}}`),
		encode(ordersProtoV1, v1.ID, `{"id": "4", "cancelled": {}}`))
	st = w.waitNext(p, 4)
	require.Equal(t, pipeline.StateSyncing, st.State, st.Reason)
	require.NoError(t, stop())
	assert.EqualValues(t, 1, p.Status().SchemaUpdates)
	assert.Empty(t, p.Status().Errors)

	tbl, err := w.cat.TableIO(w.wh).LoadTable(w.ctx, table.Identifier{"ns", "orders"})
	require.NoError(t, err)
	f, ok := tbl.Schema().FindFieldByName("cancelled")
	require.True(t, ok)
	var fields []string
	for _, sf := range f.Type.(*iceberg.StructType).FieldList {
		fields = append(fields, fmt.Sprintf("%s %s required=%v", sf.Name, sf.Type, sf.Required))
	}
	assert.Equal(t, []string{"_present boolean required=false", "reason string required=false"}, fields)
	assert.Equal(t, []any{
		map[string]any{"_present": true, "reason": nil},
		nil,
		map[string]any{"_present": true, "reason": "fraud"},
		map[string]any{"_present": true, "reason": nil},
	}, w.column("orders", "cancelled"))
}
