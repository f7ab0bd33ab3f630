package connect_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/ingest/codec"
	"github.com/tarnhq/tarn/ingest/connect"
	"github.com/tarnhq/tarn/internal/arrowtest"
	"github.com/tarnhq/tarn/internal/connecttest"
)

// split returns the schema and payload of a JSON-with-schemas value.
func split(t testing.TB, value []byte) (*connect.Schema, []byte) {
	t.Helper()
	var e connect.Envelopes
	sch, payload, _, err := e.Split(value)
	require.NoError(t, err)
	s, err := connect.ParseSchema(sch)
	require.NoError(t, err)

	return s, payload
}

// decodeAll decodes values (one schema) into their own ToIceberg schema.
func decodeAll(t testing.TB, values [][]byte) (*iceberg.Schema, arrow.RecordBatch) {
	t.Helper()
	s, _ := split(t, values[0])
	sc, err := connect.ToIceberg(s)
	require.NoError(t, err)
	dec, err := connect.NewDecoder(s, sc)
	require.NoError(t, err)
	rb := arrowtest.NewRecordBuilder(t, dec.ArrowSchema())
	for _, v := range values {
		_, payload := split(t, v)
		require.NoError(t, dec.Append(rb, payload))
	}

	return sc, arrowtest.Record(t, rb)
}

// TestSemanticTypesJSON reads the fixture rows that Kafka's JsonConverter
// wrote from values made by Debezium's and Kafka Connect's own schema
// builders and conversions (testdata/connect/gen): every semantic type
// gets its Iceberg type, and every value its exact column value
// (connecttest.Columns, worked out by hand).
func TestSemanticTypesJSON(t *testing.T) {
	for _, numeric := range []bool{false, true} {
		t.Run(fmt.Sprintf("decimal.format numeric=%v", numeric), func(t *testing.T) {
			sc, rec := decodeAll(t, connecttest.JSON(t, numeric))
			connecttest.Check(t, sc, rec)
		})
	}
}

// TestEnvelopeJSON reads a Debezium create event (io.debezium.data.Envelope
// over the fixture row, as JsonConverter wrote it) in append mode: the
// envelope's fields are the columns, after holds the row.
func TestEnvelopeJSON(t *testing.T) {
	sc, rec := decodeAll(t, connecttest.Lines(t, "envelope.json.jsonl"))
	var names []string
	for _, f := range sc.Fields() {
		names = append(names, f.Name)
	}
	assert.Equal(t, []string{"before", "after", "source", "op", "ts_ms", "ts_us", "ts_ns", "transaction"}, names)
	assert.Equal(t, []any{"c"}, arrowtest.Column(rec, "op"))
	assert.Equal(t, []any{nil}, arrowtest.Column(rec, "before"))
	after := arrowtest.Column(rec, "after")[0].(map[string]any)
	for _, c := range connecttest.Columns {
		assert.Equal(t, c.Rows[0], after[c.Name], c.Name)
	}
	src := arrowtest.Column(rec, "source")[0].(map[string]any)
	assert.Equal(t, "postgresql", src["connector"])
	assert.Equal(t, int64(24023128), src["lsn"])
	assert.Equal(t, []any{int64(1700000000456)}, arrowtest.Column(rec, "ts_ms"))
}

// value builds a JSON-with-schemas value of one field f.
func value(fieldSchema, payload string) []byte {
	return []byte(`{"schema":{"type":"struct","fields":[` + fieldSchema + `],"optional":false},"payload":{"f":` + payload + `}}`)
}

// TestSemanticValues checks each conversion on hand-written values,
// the examples of issue 15 among them, and the edges each one refuses.
func TestSemanticValues(t *testing.T) {
	const (
		microTS   = `{"type":"int64","optional":false,"name":"io.debezium.time.MicroTimestamp","version":1,"field":"f"}`
		nanoTS    = `{"type":"int64","optional":false,"name":"io.debezium.time.NanoTimestamp","version":1,"field":"f"}`
		zonedTS   = `{"type":"string","optional":false,"name":"io.debezium.time.ZonedTimestamp","version":1,"field":"f"}`
		zonedTime = `{"type":"string","optional":false,"name":"io.debezium.time.ZonedTime","version":1,"field":"f"}`
		microTime = `{"type":"int64","optional":false,"name":"io.debezium.time.MicroTime","version":1,"field":"f"}`
		connTime  = `{"type":"int32","optional":false,"name":"org.apache.kafka.connect.data.Time","version":1,"field":"f"}`
		connDate  = `{"type":"int32","optional":false,"name":"org.apache.kafka.connect.data.Date","version":1,"field":"f"}`
		decimal2  = `{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2"},"field":"f"}`
		decimal52 = `{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2","connect.decimal.precision":"5"},"field":"f"}`
		vsd       = `{"type":"struct","fields":[{"type":"int32","optional":false,"field":"scale"},{"type":"bytes","optional":false,"field":"value"}],"optional":false,"name":"io.debezium.data.VariableScaleDecimal","version":1,"field":"f"}`
		uuidT     = `{"type":"string","optional":false,"name":"io.debezium.data.Uuid","version":1,"field":"f"}`
		int8T     = `{"type":"int8","optional":false,"field":"f"}`
		floatT    = `{"type":"float","optional":false,"field":"f"}`
	)
	tests := []struct {
		name, schema, payload string
		want                  any
		err                   error // when the value is refused
	}{
		{"MicroTimestamp", microTS, `1700000000123456`, arrow.Timestamp(1700000000123456), nil},
		{"NanoTimestamp truncates toward the past", nanoTS, `-1500`, arrow.Timestamp(-2), nil},
		{"ZonedTimestamp with offset", zonedTS, `"2023-11-14T22:13:20.123456+01:00"`, arrow.Timestamp(1699996400123456), nil},
		{"ZonedTimestamp nanoseconds truncated", zonedTS, `"2023-11-14T22:13:20.123456789Z"`, arrow.Timestamp(1700000000123456), nil},
		{"ZonedTimestamp infinity", zonedTS, `"infinity"`, nil, codec.ErrOutOfRange},
		{"ZonedTimestamp without offset", zonedTS, `"2023-11-14T22:13:20"`, nil, codec.ErrMalformed},
		{"ZonedTime", zonedTime, `"23:30:00-01:00"`, arrow.Time64(1_800_000_000), nil},
		{"MicroTime 24:00:00 does not fit", microTime, `86400000000`, nil, codec.ErrOutOfRange},
		{"Connect Time", connTime, `1`, arrow.Time64(1000), nil},
		{"Connect Time negative", connTime, `-1`, nil, codec.ErrOutOfRange},
		{"Connect Date year 10000", connDate, `2932897`, nil, codec.ErrOutOfRange},
		{"MicroTimestamp read as if millis", microTS, `1700000000123456000`, nil, codec.ErrOutOfRange},
		{"Decimal base64", decimal2, `"AeJA"`, "1234.56", nil},
		{"Decimal numeric", decimal2, `1234.56`, "1234.56", nil},
		{"Decimal numeric rounds", decimal2, `1234.567`, nil, codec.ErrOutOfRange},
		{"Decimal overflows precision 5", decimal52, `"AeJA"`, nil, codec.ErrOutOfRange},
		{"Decimal not base64", decimal2, `"!!"`, nil, codec.ErrMalformed},
		{"VariableScaleDecimal", vsd, `{"scale":3,"value":"EtaH"}`, "1234.567", nil},
		{"VariableScaleDecimal below one", vsd, `{"scale":5,"value":"+w=="}`, "-0.00005", nil},
		{"VariableScaleDecimal zero scale 2", vsd, `{"scale":2,"value":"AA=="}`, "0.00", nil},
		{"VariableScaleDecimal of 2^160", vsd, `{"scale":1,"value":"AQAAAAAAAAAAAAAAAAAAAAAAAAAA"}`, "146150163733090291820368483271628301965593254297.6", nil},
		{"VariableScaleDecimal empty", vsd, `{"scale":1,"value":""}`, nil, codec.ErrOutOfRange},
		{"VariableScaleDecimal no scale", vsd, `{"value":"AQ=="}`, nil, codec.ErrMalformed},
		{"Uuid", uuidT, `"F81D4FAE-7DEC-11D0-A765-00A0C91E6BF6"`, "f81d4fae-7dec-11d0-a765-00a0c91e6bf6", nil},
		{"Uuid braces", uuidT, `"{f81d4fae-7dec-11d0-a765-00a0c91e6bf6}"`, nil, codec.ErrOutOfRange},
		{"int8 overflow", int8T, `128`, nil, codec.ErrOutOfRange},
		{"int8 fraction", int8T, `1.5`, nil, codec.ErrOutOfRange},
		{"int8 as text", int8T, `"1"`, nil, codec.ErrMalformed},
		{"float NaN", floatT, `"NaN"`, "NaN", nil},
		{"float Infinity", floatT, `"-Infinity"`, "-Inf", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, payload := split(t, value(tt.schema, tt.payload))
			sc, err := connect.ToIceberg(s)
			require.NoError(t, err)
			dec, err := connect.NewDecoder(s, sc)
			require.NoError(t, err)
			rb := arrowtest.NewRecordBuilder(t, dec.ArrowSchema())
			err = dec.Append(rb, payload)
			if tt.err != nil {
				require.ErrorIs(t, err, tt.err)
				var fe *codec.FieldError
				require.ErrorAs(t, err, &fe)
				assert.True(t, strings.HasPrefix(fe.Path, "f"), fe.Path)
				assert.Equal(t, []int{0}, arrowtest.Lengths(rb), "nothing appended")

				return
			}
			require.NoError(t, err)
			got := arrowtest.Column(arrowtest.Record(t, rb), "f")[0]
			switch g := got.(type) {
			case float32:
				got = fmt.Sprint(g)
			case fmt.Stringer:
				if _, ok := tt.want.(string); ok {
					got = g.String()
				}
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestNullsAndDefaults: optional values may be null or missing; a
// required one takes its default when null or missing, and is malformed
// without one.
func TestNullsAndDefaults(t *testing.T) {
	schema := `{"type":"struct","optional":false,"fields":[
		{"type":"int64","optional":true,"field":"opt"},
		{"type":"int64","optional":true,"default":7,"field":"optdef"},
		{"type":"string","optional":false,"default":"none","field":"def"},
		{"type":"int64","optional":false,"name":"io.debezium.time.MicroTimestamp","default":0,"field":"ts"},
		{"type":"array","items":{"type":"int32","optional":true},"optional":false,"field":"l"},
		{"type":"int32","optional":false,"field":"req"}]}`
	env := func(payload string) []byte { return []byte(`{"schema":` + schema + `,"payload":` + payload + `}`) }
	s, _ := split(t, env(`{}`))
	sc, err := connect.ToIceberg(s)
	require.NoError(t, err)
	dec, err := connect.NewDecoder(s, sc)
	require.NoError(t, err)
	rb := arrowtest.NewRecordBuilder(t, dec.ArrowSchema())
	for _, p := range []string{
		`{"opt":1,"optdef":2,"def":"x","ts":5,"l":[1,null],"req":1}`,
		`{"opt":null,"optdef":null,"def":null,"ts":null,"l":[],"req":2}`,
		`{"l":[],"req":3,"extra":"ignored"}`,
	} {
		_, payload := split(t, env(p))
		require.NoError(t, dec.Append(rb, payload), p)
	}
	for _, p := range []string{`{"l":[]}`, `{"l":null,"req":1}`, `{"req":1,"l":[],"opt":"x"}`, `[]`} {
		_, payload := split(t, env(p))
		err := dec.Append(rb, payload)
		require.ErrorIs(t, err, codec.ErrMalformed, p)
	}
	rec := arrowtest.Record(t, rb)
	assert.Equal(t, []any{int64(1), nil, nil}, arrowtest.Column(rec, "opt"))
	assert.Equal(t, []any{int64(2), nil, nil}, arrowtest.Column(rec, "optdef"), "an optional null stays null")
	assert.Equal(t, []any{"x", "none", "none"}, arrowtest.Column(rec, "def"))
	assert.Equal(t, []any{arrow.Timestamp(5), arrow.Timestamp(0), arrow.Timestamp(0)}, arrowtest.Column(rec, "ts"))
	assert.Equal(t, []any{[]any{int32(1), nil}, []any{}, []any{}}, arrowtest.Column(rec, "l"))
}

// TestMaps reads both of JsonConverter's map encodings: an object for
// string keys (stored in key order), [key, value] pairs for others.
func TestMaps(t *testing.T) {
	schema := `{"type":"struct","optional":false,"fields":[
		{"type":"map","keys":{"type":"string","optional":false},"values":{"type":"int32","optional":true},"optional":false,"field":"m"},
		{"type":"map","keys":{"type":"int64","optional":false,"name":"io.debezium.time.MicroTimestamp"},"values":{"type":"string","optional":false},"optional":false,"field":"byts"}]}`
	v := []byte(`{"schema":` + schema + `,"payload":{"m":{"b":2,"a":null},"byts":[[1,"one"],[-1,"minus"]]}}`)
	_, rec := decodeAll(t, [][]byte{v})
	assert.Equal(t, []any{map[string]any{"a": nil, "b": int32(2)}}, arrowtest.Column(rec, "m"))
	assert.Equal(t, []any{map[any]any{arrow.Timestamp(1): "one", arrow.Timestamp(-1): "minus"}}, arrowtest.Column(rec, "byts"))
	mcol := rec.Column(0).(*array.Map)
	assert.Equal(t, "a", mcol.Keys().(*array.String).Value(0), "keys in order")

	s, _ := split(t, v)
	sc, err := connect.ToIceberg(s)
	require.NoError(t, err)
	dec, err := connect.NewDecoder(s, sc)
	require.NoError(t, err)
	rb := arrowtest.NewRecordBuilder(t, dec.ArrowSchema())
	for _, bad := range []string{`{"m":{},"byts":[[1]]}`, `{"m":{},"byts":[[null,"x"]]}`, `{"m":[],"byts":[]}`, `{"m":{},"byts":{"1":"x"}}`} {
		_, payload := split(t, []byte(`{"schema":`+schema+`,"payload":`+bad+`}`))
		require.ErrorIs(t, dec.Append(rb, payload), codec.ErrMalformed, bad)
	}
}

// TestDecoderEvolution: a writer decodes into a wider table (int32 →
// long, float → double, decimal precision widened, columns it lacks
// null), and NewDecoder refuses what codec.Fits refuses.
func TestDecoderEvolution(t *testing.T) {
	s, payload := split(t, []byte(`{"schema":{"type":"struct","optional":false,"fields":[
		{"type":"int16","optional":false,"field":"i"},
		{"type":"float","optional":false,"field":"f"},
		{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"2","connect.decimal.precision":"5"},"field":"d"}]},
		"payload":{"i":-3,"f":1.5,"d":"AeJA"}}`))
	pt := iceberg.PrimitiveTypes
	wide := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "i", Type: pt.Int64},
		iceberg.NestedField{ID: 2, Name: "f", Type: pt.Float64},
		iceberg.NestedField{ID: 3, Name: "d", Type: iceberg.DecimalTypeOf(12, 2)},
		iceberg.NestedField{ID: 4, Name: "new", Type: pt.String},
		iceberg.NestedField{ID: 5, Name: "_kafka", Type: pt.Int64, Required: true})
	dec, err := connect.NewDecoder(s, wide, codec.WithCallerColumns("_kafka"))
	require.NoError(t, err)
	rb := arrowtest.NewRecordBuilder(t, dec.ArrowSchema())
	require.NoError(t, dec.Append(rb, payload))
	rb.Field(4).(*array.Int64Builder).Append(0)
	rec := arrowtest.Record(t, rb)
	assert.Equal(t, []any{int64(-3)}, arrowtest.Column(rec, "i"))
	assert.Equal(t, []any{1.5}, arrowtest.Column(rec, "f"))
	assert.Equal(t, []any{"1234.56"}, arrowtest.Column(rec, "d"))
	assert.Equal(t, []any{nil}, arrowtest.Column(rec, "new"))

	narrow := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "i", Type: pt.Int32})
	_, err = connect.NewDecoder(s, narrow)
	require.ErrorIs(t, err, codec.ErrIncompatible, "the table lacks f and d")
}
