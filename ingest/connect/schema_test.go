package connect_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/ingest/codec"
	"github.com/tarnhq/tarn/ingest/connect"
	"github.com/tarnhq/tarn/internal/connecttest"
)

func struct1(field string) string {
	return `{"type":"struct","optional":false,"fields":[` + field + `]}`
}

// TestSchemaMapping maps Connect schemas to Iceberg: the base types, and
// the semantic names on types they do not apply to, which keep the base
// type's mapping.
func TestSchemaMapping(t *testing.T) {
	tests := []struct{ field, want string }{
		{`{"type":"int8","field":"f"}`, "int"},
		{`{"type":"int16","field":"f"}`, "int"},
		{`{"type":"int32","field":"f"}`, "int"},
		{`{"type":"int64","field":"f"}`, "long"},
		{`{"type":"float","field":"f"}`, "float"},
		{`{"type":"double","field":"f"}`, "double"},
		{`{"type":"boolean","field":"f"}`, "boolean"},
		{`{"type":"string","field":"f"}`, "string"},
		{`{"type":"bytes","field":"f"}`, "binary"},
		{`{"type":"array","items":{"type":"string","optional":true},"field":"f"}`, "list<optional string>"},
		{`{"type":"map","keys":{"type":"int32"},"values":{"type":"string"},"field":"f"}`, "map<int, string>"},
		{`{"type":"struct","fields":[{"type":"boolean","optional":true,"field":"x"}],"field":"f"}`, "struct<x: optional boolean>"},
		{`{"type":"string","name":"io.debezium.time.MicroTimestamp","field":"f"}`, "string"},
		{`{"type":"int32","name":"io.debezium.time.ZonedTimestamp","field":"f"}`, "int"},
		{`{"type":"int32","name":"org.apache.kafka.connect.data.Timestamp","field":"f"}`, "int"},
		{`{"type":"struct","name":"io.debezium.data.VariableScaleDecimal","fields":[{"type":"int64","field":"scale"},{"type":"bytes","field":"value"}],"field":"f"}`,
			"struct<scale: long, value: binary>"},
		{`{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"3","connect.decimal.precision":"50"},"field":"f"}`, "decimal(38, 3)"},
		{`{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"5","connect.decimal.precision":"2"},"field":"f"}`, "decimal(5, 5)"},
		{`{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"0","connect.decimal.precision":"x"},"field":"f"}`, "decimal(38, 0)"},
		{`{"type":"string","name":"io.debezium.data.Json","field":"f"}`, "string"},
		{`{"type":"bytes","name":"io.debezium.data.Bits","parameters":{"length":"3"},"field":"f"}`, "binary"},
	}
	for _, tt := range tests {
		t.Run(tt.want+" "+tt.field, func(t *testing.T) {
			s, err := connect.ParseSchema([]byte(struct1(tt.field)))
			require.NoError(t, err)
			sc, err := connect.ToIceberg(s)
			require.NoError(t, err)
			assert.Equal(t, tt.want, connecttest.TypeString(sc.Fields()[0].Type))
		})
	}
}

func TestSchemaRequiredness(t *testing.T) {
	s, err := connect.ParseSchema([]byte(`{"type":"struct","fields":[{"type":"int32","field":"a"},
		{"type":"int32","optional":true,"field":"b"},{"type":"int32","optional":"yes","field":"c"}]}`))
	require.NoError(t, err)
	sc, err := connect.ToIceberg(s)
	require.NoError(t, err)
	var req []bool
	for _, f := range sc.Fields() {
		req = append(req, f.Required)
	}
	assert.Equal(t, []bool{true, false, true}, req, `"optional" other than true is required, as JsonConverter reads it`)
}

func TestSchemaRefused(t *testing.T) {
	deep := strings.Repeat(`{"type":"array","items":`, 70) + `{"type":"int32"}` + strings.Repeat(`}`, 70)
	tests := []struct{ name, schema, why string }{
		{"not an object", `[]`, "not a JSON object"},
		{"no type", `{"fields":[]}`, `"type"`},
		{"unknown type", struct1(`{"type":"float32","field":"f"}`), `unknown schema type "float32"`},
		{"array without items", struct1(`{"type":"array","field":"f"}`), `without "items"`},
		{"map without values", struct1(`{"type":"map","keys":{"type":"string"},"field":"f"}`), `without "values"`},
		{"field without name", struct1(`{"type":"int32"}`), `no "field" name`},
		{"parameter not a string", struct1(`{"type":"bytes","parameters":{"scale":2},"field":"f"}`), "not a string"},
		{"nested too deep", struct1(`{"type":"array","items":` + deep + `,"field":"f"}`), "deeper than"},
		{"not a struct", `{"type":"string"}`, "not a struct"},
		{"empty struct", struct1(`{"type":"struct","fields":[],"field":"f"}`), "no fields"},
		{"two fields of one name", struct1(`{"type":"int32","field":"f"},{"type":"int32","field":"f"}`), "two fields"},
		{"struct map keys", struct1(`{"type":"map","keys":{"type":"struct","fields":[{"type":"int32","field":"x"}]},"values":{"type":"int32"},"field":"f"}`), "map keys"},
		{"decimal without scale", struct1(`{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal","field":"f"}`), "scale"},
		{"decimal scale 39", struct1(`{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"39"},"field":"f"}`), "scale 0 to 38"},
		{"decimal negative scale", struct1(`{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"-2"},"field":"f"}`), "scale 0 to 38"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := connect.ParseSchema([]byte(tt.schema))
			if err == nil {
				_, err = connect.ToIceberg(s)
			}
			require.ErrorIs(t, err, codec.ErrUnsupported)
			assert.Contains(t, err.Error(), tt.why)
		})
	}
}
