package pipeline_test

import (
	"encoding/json"
	"testing"

	hamba "github.com/hamba/avro/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/tarnhq/tarn/ingest/pipeline"
	"github.com/tarnhq/tarn/ingest/protobuf"
)

// TestUpsertKeyFieldsFormats: key-fields (region, id) key the rows of an
// upsert topic in every value format — Avro and Protobuf (the key read
// from the decoded row), JSON Schema and plain JSON (from the value's
// text) — whatever the records' Kafka keys (none here): the last row of
// each key wins, a tombstone deletes the key its Kafka key's columns
// name, and after a restart (the key index rebuilt from the table's key
// columns) an update replaces the committed row and a tombstone retires
// it. The key columns are the table's identifier-field-ids. Before
// key-fields read Avro, Protobuf and JSON Schema, enable refused those
// formats (ErrInvalidConfig).
func TestUpsertKeyFieldsFormats(t *testing.T) {
	const avroSchema = `{"type":"record","name":"Row","fields":[{"name":"id","type":"long"},{"name":"region","type":"string"},{"name":"name","type":["null","string"],"default":null}]}`
	const protoSchema = `syntax = "proto3"; message Row { int64 id = 1; string region = 2; optional string name = 3; }`
	const jsonSchema = `{"type":"object","properties":{"id":{"type":"integer"},"region":{"type":"string"},"name":{"type":"string"}},"required":["id","region"]}`
	type row struct {
		ID     int64   `avro:"id" json:"id"`
		Region string  `avro:"region" json:"region"`
		Name   *string `avro:"name" json:"name,omitempty"`
	}
	cases := []struct {
		format pipeline.Format
		// encode returns the value of r in the format (registering its
		// schema in w's registry under <topic>-value first).
		encode func(t *testing.T, w *world, topic string) func(r row) []byte
	}{
		{pipeline.FormatAvro, func(t *testing.T, w *world, topic string) func(row) []byte {
			ss, err := w.rc.CreateSchema(w.ctx, topic+"-value", sr.Schema{Schema: avroSchema})
			require.NoError(t, err)
			sc := hamba.MustParse(avroSchema)
			return func(r row) []byte {
				b, err := hamba.Marshal(sc, r)
				require.NoError(t, err)
				return confluent(t, ss.ID, nil, b)
			}
		}},
		{pipeline.FormatProtobuf, func(t *testing.T, w *world, topic string) func(row) []byte {
			ss, err := w.rc.CreateSchema(w.ctx, topic+"-value", sr.Schema{Type: sr.TypeProtobuf, Schema: protoSchema})
			require.NoError(t, err)
			fd, err := protobuf.Compile(w.ctx, protoSchema, nil)
			require.NoError(t, err)
			return func(r row) []byte {
				text, err := json.Marshal(r)
				require.NoError(t, err)
				m := dynamicpb.NewMessage(fd.Messages().ByName("Row"))
				require.NoError(t, protojson.Unmarshal(text, m))
				b, err := proto.Marshal(m)
				require.NoError(t, err)
				return confluent(t, ss.ID, []int{0}, b)
			}
		}},
		{pipeline.FormatJSONSchema, func(t *testing.T, w *world, topic string) func(row) []byte {
			ss, err := w.rc.CreateSchema(w.ctx, topic+"-value", sr.Schema{Type: sr.TypeJSON, Schema: jsonSchema})
			require.NoError(t, err)
			return func(r row) []byte {
				text, err := json.Marshal(r)
				require.NoError(t, err)
				return confluent(t, ss.ID, nil, text)
			}
		}},
		{pipeline.FormatJSON, func(t *testing.T, _ *world, _ string) func(row) []byte {
			return func(r row) []byte {
				text, err := json.Marshal(r)
				require.NoError(t, err)
				return text
			}
		}},
	}
	name := func(s string) *string { return &s }
	for _, c := range cases {
		t.Run(string(c.format), func(t *testing.T) {
			topic := "kf-" + string(c.format)
			w := newWorld(t, topic)
			enc := c.encode(t, w, topic)
			cfg := w.config(topic, c.format)
			cfg.Mode, cfg.KeyFields = pipeline.ModeUpsert, []string{"region", "id"}
			if c.format == pipeline.FormatJSON {
				cfg.Schema = declared(t, `{"type":"struct","fields":[{"id":1,"name":"id","type":"long","required":true},{"id":2,"name":"region","type":"string","required":true},{"id":3,"name":"name","type":"string","required":false}]}`)
			}
			value := func(r row) *kgo.Record { return &kgo.Record{Topic: topic, Value: enc(r)} }
			tombstone := func(key string) *kgo.Record { return &kgo.Record{Topic: topic, Key: []byte(key)} }

			round1 := []*kgo.Record{
				value(row{1, "eu", name("a")}),
				value(row{1, "us", name("b")}),
				value(row{1, "eu", name("a2")}), // the key of the first
				value(row{2, "eu", name("c")}),
				tombstone(`{"id":2,"region":"eu"}`),
				value(row{4, "eu", name("d")}),
			}
			require.NoError(t, w.prod.ProduceSync(w.ctx, round1...).FirstErr())
			p, stop := w.start(cfg)
			st := w.waitNext(p, int64(len(round1)))
			require.NoError(t, stop())
			assert.Empty(t, st.Errors)
			assert.Equal(t, map[string]any{"eu/1": "a2", "us/1": "b", "eu/4": "d"}, w.regionRows(topic))
			assert.ElementsMatch(t, []string{"region", "id"}, w.identifierFields(topic), "identifier-field-ids")

			round2 := []*kgo.Record{
				value(row{4, "eu", name("d2")}),
				tombstone(`{"region":"us","id":1}`),
			}
			require.NoError(t, w.prod.ProduceSync(w.ctx, round2...).FirstErr())
			p, stop = w.start(cfg) // the index is rebuilt from the key columns
			st = w.waitNext(p, int64(len(round1)+len(round2)))
			require.NoError(t, stop())
			assert.Empty(t, st.Errors)
			assert.Equal(t, map[string]any{"eu/1": "a2", "eu/4": "d2"}, w.regionRows(topic))
			assert.EqualValues(t, 2, st.RowsDeleted)
		})
	}
}

// TestUpsertKeyFieldsNullableRefused: an Avro row's key columns are read
// once it is decoded, when it can no longer be refused alone, so a writer
// schema that lets a key column be null (a union with null) is refused as
// a whole: the topic suspends on its first record, naming key-fields,
// and nothing of it reaches the table.
func TestUpsertKeyFieldsNullableRefused(t *testing.T) {
	const topic = "kf-nullable"
	const avroSchema = `{"type":"record","name":"Row","fields":[{"name":"id","type":["null","long"]},{"name":"name","type":"string"}]}`
	w := newWorld(t, topic)
	ss, err := w.rc.CreateSchema(w.ctx, topic+"-value", sr.Schema{Schema: avroSchema})
	require.NoError(t, err)
	type row struct {
		ID   *int64 `avro:"id"`
		Name string `avro:"name"`
	}
	b, err := hamba.Marshal(hamba.MustParse(avroSchema), row{Name: "no id"})
	require.NoError(t, err)
	w.produce(topic, confluent(t, ss.ID, nil, b))
	cfg := w.config(topic, pipeline.FormatAvro)
	cfg.Mode, cfg.KeyFields = pipeline.ModeUpsert, []string{"id"}
	p, stop := w.start(cfg)
	st := w.waitNext(p, 1)
	_ = stop()
	require.Equal(t, pipeline.StateSuspended, st.State)
	assert.Contains(t, st.Reason, `key-fields: field "id" is optional`)
	assert.Equal(t, map[pipeline.ErrorKind]int64{pipeline.KindUnsupportedSchema: 1}, st.Errors)
}
