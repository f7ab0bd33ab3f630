package avro_test

import (
	"math/big"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tarnavro "github.com/tarnhq/tarn/ingest/avro"
	"github.com/tarnhq/tarn/ingest/codec"
	"github.com/tarnhq/tarn/internal/arrowtest"
	"github.com/tarnhq/tarn/internal/connecttest"
)

// TestSemanticTypesAvro reads the fixture rows as Apicurio's AvroData
// (the converter of the project's Kafka Connect setup) wrote them from
// Debezium's and Kafka Connect's schemas and values
// (testdata/connect/gen): every semantic type, named by connect.name and
// connect.parameters, gets the Iceberg type and the exact values it gets
// in Kafka Connect's JSON (connecttest.Columns).
func TestSemanticTypesAvro(t *testing.T) {
	w := parse(t, connecttest.AvroSchema(t))
	sc, err := tarnavro.ToIceberg(w)
	require.NoError(t, err)
	h := newHarness(t, w, sc)
	for _, v := range connecttest.Avro(t) {
		require.NoError(t, h.dec.Append(h.rb, v))
	}
	connecttest.Check(t, sc, h.record(t))
}

// TestConnectDecimalPrecision: AvroData writes precision 64 for a Connect
// Decimal without connect.decimal.precision, which a plain Avro decimal
// may not have in an Iceberg table; as a Connect Decimal it is
// decimal(38, s), and a value beyond 38 digits is a bad record.
func TestConnectDecimalPrecision(t *testing.T) {
	const placeholder = `{"type":"bytes","scale":2,"precision":64,"connect.version":1,
		"connect.parameters":{"scale":"2"},"connect.name":"org.apache.kafka.connect.data.Decimal","logicalType":"decimal"}`
	w := parse(t, record(placeholder))
	sc, err := tarnavro.ToIceberg(w)
	require.NoError(t, err)
	assert.Equal(t, "decimal(38, 2)", sc.Field(0).Type.String())
	h := newHarness(t, w, sc)
	require.NoError(t, h.dec.Append(h.rb, encode(t, w, map[string]any{"f": big.NewRat(123456, 100)})))
	huge, _ := new(big.Int).SetString("1"+strings.Repeat("0", 38), 10)
	err = h.dec.Append(h.rb, encode(t, w, map[string]any{"f": new(big.Rat).SetInt(huge)}))
	require.ErrorIs(t, err, codec.ErrOutOfRange)
	assert.Equal(t, []any{"1234.56"}, arrowtest.Column(h.record(t), "f"))

	_, err = tarnavro.ToIceberg(parse(t, record(`{"type":"bytes","scale":2,"precision":64,"logicalType":"decimal"}`)))
	require.ErrorIs(t, err, codec.ErrUnsupported, "a plain Avro decimal wider than 38 digits is still refused")
}

// TestDebeziumTypesIntoLegacyColumns: tables made before Tarn knew
// Connect's and Debezium's names hold such fields as their base types
// (a MicroTimestamp as long, a ZonedTimestamp and a Uuid as string, a
// VariableScaleDecimal as a struct); they keep decoding as before, and
// the writer mapped against them keeps those columns, so that the table
// neither suspends nor needs a type change Iceberg does not allow.
func TestDebeziumTypesIntoLegacyColumns(t *testing.T) {
	const schema = `{"type":"record","name":"Value","namespace":"s.public.t","fields":[
		{"name":"ts","type":{"type":"long","connect.version":1,"connect.name":"io.debezium.time.MicroTimestamp"}},
		{"name":"zts","type":{"type":"string","connect.version":1,"connect.name":"io.debezium.time.ZonedTimestamp"}},
		{"name":"id","type":{"type":"string","connect.version":1,"connect.name":"io.debezium.data.Uuid"}},
		{"name":"n","type":{"type":"record","name":"VariableScaleDecimal","namespace":"io.debezium.data",
			"fields":[{"name":"scale","type":"int"},{"name":"value","type":"bytes"}],
			"connect.version":1,"connect.name":"io.debezium.data.VariableScaleDecimal"}},
		{"name":"added","type":["null",{"type":"long","connect.version":1,"connect.name":"io.debezium.time.MicroTimestamp"}],"default":null}]}`
	pt := iceberg.PrimitiveTypes
	legacy := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "ts", Type: pt.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "zts", Type: pt.String, Required: true},
		iceberg.NestedField{ID: 3, Name: "id", Type: pt.String, Required: true},
		iceberg.NestedField{ID: 4, Name: "n", Required: true, Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 6, Name: "scale", Type: pt.Int32, Required: true},
			{ID: 7, Name: "value", Type: pt.Binary, Required: true}}}},
		iceberg.NestedField{ID: 5, Name: "_kafka", Type: pt.Int64, Required: true})
	w := parse(t, schema)

	fresh, err := tarnavro.ToIceberg(w)
	require.NoError(t, err)
	assert.Equal(t, []string{"timestamp", "timestamptz", "uuid", "string", "timestamp"},
		[]string{fresh.Field(0).Type.String(), fresh.Field(1).Type.String(), fresh.Field(2).Type.String(), fresh.Field(3).Type.String(), fresh.Field(4).Type.String()},
		"a new table gets the semantic types")

	against, err := tarnavro.ToIcebergFor(w, legacy)
	require.NoError(t, err)
	assert.Equal(t, "long", against.Field(0).Type.String())
	assert.Equal(t, "string", against.Field(1).Type.String())
	assert.Equal(t, "string", against.Field(2).Type.String())
	assert.Equal(t, "struct<scale: int, value: binary>", connecttest.TypeString(against.Field(3).Type))
	assert.Equal(t, "timestamp", against.Field(4).Type.String(), "a column the table lacks gets the semantic type")

	// The table evolved to take the writer (the pipeline evolves it to
	// ToIcebergFor's schema): the new column has the semantic type.
	evolved := iceberg.NewSchema(1, append(legacy.Fields(), iceberg.NestedField{ID: 8, Name: "added", Type: pt.Timestamp})...)
	w2 := parse(t, schema)
	h := newHarness(t, w2, evolved, codec.WithCallerColumns("_kafka"))
	require.NoError(t, h.dec.Append(h.rb, encode(t, w2, map[string]any{
		"ts": int64(1700000000123456), "zts": "2023-11-14T22:13:20Z", "id": "f81d4fae-7dec-11d0-a765-00a0c91e6bf6",
		"n": map[string]any{"scale": 3, "value": []byte{0x12, 0xd6, 0x87}}, "added": map[string]any{"long": int64(5)}})))
	h.rb.Field(4).AppendNull()
	rec := h.record(t)
	assert.Equal(t, []any{int64(1700000000123456)}, arrowtest.Column(rec, "ts"))
	assert.Equal(t, []any{"2023-11-14T22:13:20Z"}, arrowtest.Column(rec, "zts"))
	assert.Equal(t, []any{map[string]any{"scale": int32(3), "value": []byte{0x12, 0xd6, 0x87}}}, arrowtest.Column(rec, "n"))
	assert.Equal(t, []any{arrow.Timestamp(5)}, arrowtest.Column(rec, "added"))
}

// TestVariableScaleDecimalAvro reads Debezium's record, whichever order
// its fields come in, into the exact number.
func TestVariableScaleDecimalAvro(t *testing.T) {
	for name, fields := range map[string]string{
		"scale first": `[{"name":"scale","type":"int"},{"name":"value","type":"bytes"}]`,
		"value first": `[{"name":"value","type":"bytes"},{"name":"scale","type":"int"}]`,
	} {
		t.Run(name, func(t *testing.T) {
			w := parse(t, record(`{"type":"record","name":"VariableScaleDecimal","namespace":"io.debezium.data","fields":`+fields+`}`))
			sc, err := tarnavro.ToIceberg(w)
			require.NoError(t, err)
			assert.Equal(t, "string", sc.Field(0).Type.String())
			h := newHarness(t, w, sc)
			for _, v := range []map[string]any{
				{"scale": 3, "value": []byte{0x12, 0xd6, 0x87}},
				{"scale": 3, "value": []byte{0xfb}},
				{"scale": -3, "value": []byte{0x01}},
			} {
				require.NoError(t, h.dec.Append(h.rb, encode(t, w, map[string]any{"f": v})))
			}
			require.ErrorIs(t, h.dec.Append(h.rb, encode(t, w, map[string]any{"f": map[string]any{"scale": 1, "value": []byte{}}})), codec.ErrOutOfRange)
			assert.Equal(t, []any{"1234.567", "-0.005", "1000"}, arrowtest.Column(h.record(t), "f"))
		})
	}
	w := parse(t, record(`{"type":"record","name":"VariableScaleDecimal","namespace":"io.debezium.data",
		"fields":[{"name":"scale","type":"int"},{"name":"value","type":"bytes"},{"name":"extra","type":"int"}]}`))
	sc, err := tarnavro.ToIceberg(w)
	require.NoError(t, err)
	assert.Equal(t, "struct<2: scale: required int, 3: value: required binary, 4: extra: required int>", sc.Field(0).Type.String(),
		"another shape is an ordinary record")
}

// TestDebeziumTimesAvro covers the conversions Avro has no logical type
// for, with the edges each refuses.
func TestDebeziumTimesAvro(t *testing.T) {
	tests := []struct {
		name, typ string
		in        any
		want      any
		err       error
	}{
		{"NanoTimestamp", `{"type":"long","connect.name":"io.debezium.time.NanoTimestamp"}`, int64(1700000000123456789), arrow.Timestamp(1700000000123456), nil},
		{"NanoTime", `{"type":"long","connect.name":"io.debezium.time.NanoTime"}`, int64(86_399_999_999_999), arrow.Time64(86_399_999_999), nil},
		{"MicroTime 24:00", `{"type":"long","connect.name":"io.debezium.time.MicroTime"}`, int64(86_400_000_000), nil, codec.ErrOutOfRange},
		{"Time", `{"type":"int","connect.name":"io.debezium.time.Time"}`, 1, arrow.Time64(1000), nil},
		{"Date", `{"type":"int","connect.name":"io.debezium.time.Date"}`, -719163, nil, codec.ErrOutOfRange},
		{"Timestamp", `{"type":"long","connect.name":"io.debezium.time.Timestamp"}`, int64(-62135596800001), nil, codec.ErrOutOfRange},
		{"ZonedTimestamp", `{"type":"string","connect.name":"io.debezium.time.ZonedTimestamp"}`, "2023-11-14T22:13:20.123456+01:00", arrow.Timestamp(1699996400123456), nil},
		{"ZonedTimestamp -infinity", `{"type":"string","connect.name":"io.debezium.time.ZonedTimestamp"}`, "-infinity", nil, codec.ErrOutOfRange},
		{"ZonedTime", `{"type":"string","connect.name":"io.debezium.time.ZonedTime"}`, "00:30:00+05:30", arrow.Time64(68_400_000_000), nil},
		{"Uuid", `{"type":"string","connect.name":"io.debezium.data.Uuid"}`, "nope", nil, codec.ErrOutOfRange},
		{"MicroTimestamp on a string is a string", `{"type":"string","connect.name":"io.debezium.time.MicroTimestamp"}`, "x", "x", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := parse(t, record(tt.typ))
			h := newHarness(t, w, table(t, record(tt.typ)))
			err := h.dec.Append(h.rb, encode(t, w, map[string]any{"f": tt.in}))
			if tt.err != nil {
				require.ErrorIs(t, err, tt.err)
				assert.Equal(t, []int{0}, arrowtest.Lengths(h.rb))

				return
			}
			require.NoError(t, err)
			assert.Equal(t, []any{tt.want}, arrowtest.Column(h.record(t), "f"))
		})
	}
}
