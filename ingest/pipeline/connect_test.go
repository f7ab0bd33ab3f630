package pipeline_test

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	hamba "github.com/hamba/avro/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/connect"
	"github.com/tarnhq/tarn/ingest/pipeline"
	"github.com/tarnhq/tarn/internal/connecttest"
)

// The tests of this file run Kafka Connect's data (issue 15 item 3)
// through a pipeline on kfake and read the table back with iceberg-go:
// the fixture rows of every Kafka Connect and Debezium semantic type, as
// Kafka's JsonConverter (format connect-json) and Apicurio's AvroData
// (format avro) wrote them.

// checkColumns compares the table's columns and every row with
// connecttest.Columns; rows are the fixture rows in offset order, each
// repeated times times. evolved says the columns were added by schema
// evolution, which adds them optional, nested fields too.
func (w *world) checkColumns(name string, times int, evolved bool) {
	w.t.Helper()
	tbl, err := w.cat.TableIO(w.wh).LoadTable(w.ctx, table.Identifier{"ns", name})
	require.NoError(w.t, err)
	for _, c := range connecttest.Columns {
		f, ok := tbl.Schema().FindFieldByName(c.Name)
		if !assert.True(w.t, ok, c.Name) {
			continue
		}
		want, got := c.Type, connecttest.TypeString(f.Type)
		if evolved {
			want, got = strings.ReplaceAll(want, "optional ", ""), strings.ReplaceAll(got, "optional ", "")
			assert.False(w.t, f.Required, c.Name)
		}
		assert.Equal(w.t, want, got, c.Name)
		var rows []any
		for range times {
			rows = append(rows, c.Rows[:]...)
		}
		assert.Equal(w.t, rows, w.column(name, c.Name), c.Name)
	}
}

// TestConnectJSONSemanticTypes enables a connect-json topic holding the
// fixture rows in both of JsonConverter's decimal formats: the table,
// made with the _kafka column alone, takes its columns from the first
// record's schema (one schema update; the numeric rows' schema is the
// same), and every value lands exactly.
func TestConnectJSONSemanticTypes(t *testing.T) {
	w := newWorld(t, "dbz")
	w.produce("dbz", connecttest.JSON(t, false)...)
	w.produce("dbz", connecttest.JSON(t, true)...)
	p, stop := w.start(w.config("dbz", pipeline.FormatConnectJSON))
	st := w.waitNext(p, 4)
	require.NoError(t, stop())
	require.Empty(t, st.Errors)
	assert.EqualValues(t, 1, st.SchemaUpdates)
	w.checkColumns("dbz", 2, true)
}

// TestAvroSemanticTypes is the same for Avro: the fixture rows in the
// Confluent wire format under the schema Apicurio's AvroData made, its
// semantic types named by connect.name.
func TestAvroSemanticTypes(t *testing.T) {
	w := newWorld(t, "dbz-avro")
	ss, err := w.rc.CreateSchema(w.ctx, "dbz-avro-value", sr.Schema{Schema: connecttest.AvroSchema(t)})
	require.NoError(t, err)
	for _, v := range connecttest.Avro(t) {
		w.produce("dbz-avro", confluent(t, ss.ID, nil, v))
	}
	p, stop := w.start(w.config("dbz-avro", pipeline.FormatAvro))
	st := w.waitNext(p, 2)
	require.NoError(t, stop())
	require.Empty(t, st.Errors)
	w.checkColumns("dbz-avro", 1, false)
}

// TestConnectJSONEvolvesAndFollowsTheErrorMode: a connect-json topic
// whose schema gains a field and widens another evolves the table, as a
// registry topic does; values that are no envelope, payloads that do not
// match their schema and values out of range are bad records (skipped
// here, counted by kind); a schema that cannot be a table (not a struct)
// suspends the topic with its fingerprint as the schema id, which a
// resume in skip mode moves past.
func TestConnectJSONEvolvesAndFollowsTheErrorMode(t *testing.T) {
	const (
		v1 = `{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"},{"type":"string","optional":true,"field":"name"}],"optional":false,"name":"s.public.t.Value"}`
		v2 = `{"type":"struct","fields":[{"type":"int64","optional":false,"field":"id"},{"type":"string","optional":true,"field":"name"},` +
			`{"type":"int64","optional":true,"name":"io.debezium.time.MicroTimestamp","version":1,"field":"at"}],"optional":false,"name":"s.public.t.Value"}`
		notStruct = `{"type":"string","optional":false}`
	)
	env := func(schema, payload string) []byte {
		return []byte(`{"schema":` + schema + `,"payload":` + payload + `}`)
	}
	w := newWorld(t, "evolving")
	w.produce("evolving",
		env(v1, `{"id":1,"name":"a"}`),
		env(v1, `{"id":2,"name":null}`),
		[]byte(`{"id":3}`),    // plain JSON: no envelope
		env(v1, `{"id":"4"}`), // payload does not match
		env(v2, `{"id":5,"name":"e","at":1700000000123456}`),
		env(v2, `{"id":6,"at":1700000000123456000}`), // microseconds read as if more: year 55899
		env(v1, `{"id":7,"name":"g"}`),
		env(notStruct, `"x"`),
		env(v2, `{"id":9,"name":"i","at":-1}`),
	)
	cfg := w.config("evolving", pipeline.FormatConnectJSON)
	cfg.ErrorMode = pipeline.ErrorModeSkip
	p, stop := w.start(cfg)
	st := w.waitNext(p, 7)
	err := stop()
	var se *pipeline.SuspendedError
	require.ErrorAs(t, err, &se, "the string schema suspends the topic")
	assert.Equal(t, pipeline.KindUnsupportedSchema, se.Kind)
	assert.Equal(t, int64(7), se.Offset)
	assert.Equal(t, connect.Fingerprint([]byte(notStruct)), se.SchemaID)
	assert.Equal(t, map[pipeline.ErrorKind]int64{pipeline.KindMalformed: 2, pipeline.KindOutOfRange: 1, pipeline.KindUnsupportedSchema: 1}, p.Status().Errors)
	assert.EqualValues(t, 2, st.SchemaUpdates, "the first schema, then the second")

	cfg.BadSchemaIDs = []int{se.SchemaID}
	p, stop = w.start(cfg)
	w.waitNext(p, 9)
	require.NoError(t, stop())

	tbl, err := w.cat.TableIO(w.wh).LoadTable(w.ctx, table.Identifier{"ns", "evolving"})
	require.NoError(t, err)
	id, _ := tbl.Schema().FindFieldByName("id")
	at, _ := tbl.Schema().FindFieldByName("at")
	assert.Equal(t, iceberg.PrimitiveTypes.Int64, id.Type, "int32 widened to long")
	assert.Equal(t, iceberg.PrimitiveTypes.Timestamp, at.Type)
	assert.Equal(t, []any{int64(1), int64(2), int64(5), int64(7), int64(9)}, w.column("evolving", "id"))
	assert.Equal(t, []any{"a", nil, "e", "g", "i"}, w.column("evolving", "name"))
	assert.Equal(t, []any{nil, nil, arrow.Timestamp(1700000000123456), nil, arrow.Timestamp(-1)}, w.column("evolving", "at"))
}

// TestConnectJSONNeedsNoRegistry: a connect-json topic is enabled and run
// without a schema registry; its table starts with the _kafka column only.
func TestConnectJSONNeedsNoRegistry(t *testing.T) {
	cfg := pipeline.Config{Topic: "t", Cluster: testCluster, Format: pipeline.FormatConnectJSON,
		Table: catalog.Ident{Namespace: catalog.Namespace{"ns"}, Name: "t"}}
	user, format, err := pipeline.WriterSchema(t.Context(), nil, cfg)
	require.NoError(t, err)
	assert.Equal(t, pipeline.FormatConnectJSON, format)
	assert.Empty(t, user.Fields())
	sc, err := pipeline.TableSchema(user)
	require.NoError(t, err)
	assert.Equal(t, []string{pipeline.KafkaColumn}, []string{sc.Fields()[0].Name})
	require.Len(t, sc.Fields(), 1)
	_, err = pipeline.New(cfg, pipeline.Deps{Tables: nil, OpenSource: nil})
	require.ErrorIs(t, err, pipeline.ErrInvalidConfig, "Tables and OpenSource, not a Registry, are missing")
	assert.NotContains(t, err.Error(), "Registry")
}

// TestAvroDebeziumTableOfAnEarlierBuild: a table made before Tarn knew
// Debezium's names holds a MicroTimestamp as a long column. Its topic
// keeps syncing, as before, when its schema gains a field (another
// MicroTimestamp, which the table gains as a timestamp column), instead
// of suspending on a long-to-timestamp change that schema evolution
// does not allow.
func TestAvroDebeziumTableOfAnEarlierBuild(t *testing.T) {
	const (
		micro = `{"type":"long","connect.version":1,"connect.name":"io.debezium.time.MicroTimestamp"}`
		v1    = `{"type":"record","name":"Value","namespace":"s.public.t","fields":[{"name":"id","type":"int"},{"name":"ts","type":` + micro + `}]}`
		v2    = `{"type":"record","name":"Value","namespace":"s.public.t","fields":[{"name":"id","type":"int"},{"name":"ts","type":` + micro + `},` +
			`{"name":"seen","type":["null",` + micro + `],"default":null}]}`
	)
	w := newWorld(t, "legacy")
	cfg := w.config("legacy", pipeline.FormatAvro)
	earlier := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int32, Required: true},
		iceberg.NestedField{ID: 2, Name: "ts", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	_, err := pipeline.EnsureTable(w.ctx, w.cat, w.wh, cfg, earlier)
	require.NoError(t, err)

	encode := func(text string, v map[string]any) []byte {
		ss, err := w.rc.CreateSchema(w.ctx, "legacy-value", sr.Schema{Schema: text})
		require.NoError(t, err)
		sc, err := hamba.Parse(text)
		require.NoError(t, err)
		body, err := hamba.Marshal(sc, v)
		require.NoError(t, err)
		return confluent(t, ss.ID, nil, body)
	}
	w.produce("legacy", encode(v1, map[string]any{"id": 1, "ts": int64(1700000000123456)}))
	w.produce("legacy", encode(v2, map[string]any{"id": 2, "ts": int64(5), "seen": map[string]any{"long": int64(7)}}))
	p, stop := w.start(cfg)
	st := w.waitNext(p, 2)
	require.NoError(t, stop())
	require.Empty(t, st.Errors)
	assert.Equal(t, pipeline.StatePending, p.Status().State)
	assert.Equal(t, []any{int64(1700000000123456), int64(5)}, w.column("legacy", "ts"), "the long column keeps its values")
	assert.Equal(t, []any{nil, arrow.Timestamp(7)}, w.column("legacy", "seen"))
	tbl, err := w.cat.TableIO(w.wh).LoadTable(w.ctx, table.Identifier{"ns", "legacy"})
	require.NoError(t, err)
	seen, _ := tbl.Schema().FindFieldByName("seen")
	assert.Equal(t, iceberg.PrimitiveTypes.Timestamp, seen.Type)
}
