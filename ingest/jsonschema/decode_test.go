package jsonschema_test

import (
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/ingest/codec"
	"github.com/tarnhq/tarn/ingest/jsonschema"
	"github.com/tarnhq/tarn/internal/arrowtest"
)

// TestDecodeTypeMapping decodes one value per row of DESIGN.md "Type
// mapping" (JSON Schema) into a table made by ToIceberg and reads the Arrow
// value back.
func TestDecodeTypeMapping(t *testing.T) {
	ts := time.Date(2024, 3, 1, 13, 25, 30, 123456000, time.UTC)
	id := uuid.MustParse("f81d4fae-7dec-11d0-a765-00a0c91e6bf6")
	tests := []struct {
		name      string
		schema    string // property f, required
		in        string // its JSON value
		arrowType string
		want      any
	}{
		{"integer", `{"type":"integer"}`, `-9007199254740993`, "int64", int64(-9007199254740993)},
		{"number", `{"type":"number"}`, `2.5`, "float64", 2.5},
		{"boolean", `{"type":"boolean"}`, `true`, "bool", true},
		{"string", `{"type":"string"}`, `"héllo"`, "utf8", "héllo"},
		{"date-time", `{"type":"string","format":"date-time"}`, `"2024-03-01T14:25:30.123456+01:00"`, "timestamp[us, tz=UTC]",
			arrow.Timestamp(ts.UnixMicro())},
		{"date", `{"type":"string","format":"date"}`, `"2024-03-01"`, "date32", arrow.Date32(19783)},
		{"time", `{"type":"string","format":"time"}`, `"13:25:30.5Z"`, "time64[us]", arrow.Time64(48_330_500_000)},
		{"uuid", `{"type":"string","format":"uuid"}`, `"` + id.String() + `"`, "extension<arrow.uuid>", id},
		{"object", `{"type":"object","properties":{"x":{"type":"integer"},"y":{"type":"string"}},"required":["x"]}`,
			`{"x":1,"extra":true}`, "struct<x: int64, y: utf8 nullable>", map[string]any{"x": int64(1), "y": nil}},
		{"array", `{"type":"array","items":{"type":["string","null"]}}`, `["a",null]`, "list<element: utf8, nullable>", []any{"a", nil}},
		{"additionalProperties", `{"type":"object","additionalProperties":true}`, `{"s":"x","n":12.50,"o":{"b":[1],"a":null},"z":null}`,
			"map<utf8, utf8, items_nullable>", map[string]any{"s": "x", "n": "12.50", "o": `{"a":null,"b":[1]}`, "z": nil}},
		{"nullable", `{"type":["integer","null"]}`, `null`, "int64", nil},
		{"oneOf with null", `{"oneOf":[{"type":"null"},{"type":"string","format":"date"}]}`, `"1970-01-02"`, "date32", arrow.Date32(1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := compile(t, property(tt.schema), nil)
			h := newHarness(t, s, table(t, s))
			require.NoError(t, h.appendJSON(`{"f":`+tt.in+`}`))
			rec := h.record(t)
			assert.Equal(t, tt.arrowType, rec.Schema().Field(0).Type.String())
			assert.Equal(t, []any{tt.want}, arrowtest.Column(rec, "f"))
		})
	}
}

func TestDecodeFlights(t *testing.T) {
	s := compile(t, readFile(t, "testdata/flights.schema.json"), nil)
	h := newHarness(t, s, table(t, s))
	require.NoError(t, h.appendJSON(`{"date":"2001-01-01T06:05:00Z","delay":-3,"distance":2475,"origin":"JFK","destination":"LAX"}`))
	require.NoError(t, h.appendJSON(`{"date":"2001-12-31T23:59:00Z","delay":240,"distance":187,"origin":"SFO","destination":"LAX"}`))
	rec := h.record(t)
	assert.Equal(t, []any{
		arrow.Timestamp(time.Date(2001, 1, 1, 6, 5, 0, 0, time.UTC).UnixMicro()),
		arrow.Timestamp(time.Date(2001, 12, 31, 23, 59, 0, 0, time.UTC).UnixMicro()),
	}, arrowtest.Column(rec, "date"))
	assert.Equal(t, []any{int64(-3), int64(240)}, arrowtest.Column(rec, "delay"))
	assert.Equal(t, []any{int64(2475), int64(187)}, arrowtest.Column(rec, "distance"))
	assert.Equal(t, []any{"JFK", "SFO"}, arrowtest.Column(rec, "origin"))
	assert.Equal(t, []any{"LAX", "LAX"}, arrowtest.Column(rec, "destination"))
}

// TestDecodeReferences decodes through a $ref to another subject's schema.
func TestDecodeReferences(t *testing.T) {
	s := compile(t, `{"type":"object","properties":{
			"id":{"type":"integer"},
			"home":{"$ref":"address.json"},
			"work":{"oneOf":[{"type":"null"},{"$ref":"address.json"}]}},
		"required":["id","home"]}`,
		map[string]string{"address.json": `{"type":"object","properties":{"city":{"type":"string","minLength":1}},"required":["city"]}`})
	h := newHarness(t, s, table(t, s))
	require.NoError(t, h.appendJSON(`{"id":1,"home":{"city":"Oslo"},"work":{"city":"Bergen"}}`))
	require.NoError(t, h.appendJSON(`{"id":2,"home":{"city":"Rome"},"work":null}`))
	err := h.appendJSON(`{"id":3,"home":{"city":""}}`)
	require.ErrorIs(t, err, codec.ErrMalformed, "the referenced schema validates too")
	rec := h.record(t)
	assert.Equal(t, []any{map[string]any{"city": "Oslo"}, map[string]any{"city": "Rome"}}, arrowtest.Column(rec, "home"))
	assert.Equal(t, []any{map[string]any{"city": "Bergen"}, nil}, arrowtest.Column(rec, "work"))
}

// TestDecodeEvolution: the table may be wider than the writer (an optional
// column the writer lacks gets null), but a writer property the table lacks
// must be added to the table first.
func TestDecodeEvolution(t *testing.T) {
	s := compile(t, `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["a","b"]}`, nil)

	t.Run("extra optional column", func(t *testing.T) {
		target := iceberg.NewSchema(0,
			iceberg.NestedField{ID: 1, Name: "a", Type: iceberg.PrimitiveTypes.Int64, Required: true},
			iceberg.NestedField{ID: 2, Name: "added", Type: iceberg.PrimitiveTypes.Float64},
			iceberg.NestedField{ID: 3, Name: "b", Type: iceberg.PrimitiveTypes.String},
		)
		h := newHarness(t, s, target)
		// added in the payload is no writer property, yet the table has it:
		// it passes validation, so it is kept.
		require.NoError(t, h.appendJSON(`{"a":1,"b":"x"}`))
		require.NoError(t, h.appendJSON(`{"a":2,"b":"y","added":0.5}`))
		rec := h.record(t)
		assert.Equal(t, []any{nil, 0.5}, arrowtest.Column(rec, "added"))
		assert.Equal(t, []any{"x", "y"}, arrowtest.Column(rec, "b"))
	})
	t.Run("writer property the table lacks", func(t *testing.T) {
		target := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "a", Type: iceberg.PrimitiveTypes.Int64, Required: true})
		_, err := jsonschema.NewDecoder(s, target)
		require.ErrorIs(t, err, codec.ErrIncompatible)
		var fe *codec.FieldError
		require.ErrorAs(t, err, &fe)
		assert.Equal(t, "b", fe.Path)
	})
	t.Run("optional property into required column", func(t *testing.T) {
		w := compile(t, `{"type":"object","properties":{"a":{"type":"integer"}}}`, nil)
		target := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "a", Type: iceberg.PrimitiveTypes.Int64, Required: true})
		_, err := jsonschema.NewDecoder(w, target)
		require.ErrorIs(t, err, codec.ErrIncompatible)
	})
	t.Run("type change", func(t *testing.T) {
		target := iceberg.NewSchema(0,
			iceberg.NestedField{ID: 1, Name: "a", Type: iceberg.PrimitiveTypes.Int32, Required: true},
			iceberg.NestedField{ID: 2, Name: "b", Type: iceberg.PrimitiveTypes.String, Required: true})
		_, err := jsonschema.NewDecoder(s, target)
		require.ErrorIs(t, err, codec.ErrIncompatible)
	})
	t.Run("caller column", func(t *testing.T) {
		target := iceberg.NewSchema(0,
			iceberg.NestedField{ID: 1, Name: "a", Type: iceberg.PrimitiveTypes.Int64, Required: true},
			iceberg.NestedField{ID: 2, Name: "b", Type: iceberg.PrimitiveTypes.String, Required: true},
			iceberg.NestedField{ID: 3, Name: "_kafka", Type: iceberg.PrimitiveTypes.Int64, Required: true})
		h := newHarness(t, s, target, codec.WithCallerColumns("_kafka"))
		require.NoError(t, h.appendJSON(`{"a":1,"b":"x"}`))
		assert.Equal(t, []int{1, 1, 0}, arrowtest.Lengths(h.rb))
		h.rb.Field(2).(*array.Int64Builder).Append(7)
		assert.Equal(t, []any{int64(7)}, arrowtest.Column(h.record(t), "_kafka"))

		w := compile(t, `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"},"_kafka":{"type":"integer"}},"required":["a","b"]}`, nil)
		_, err := jsonschema.NewDecoder(w, target, codec.WithCallerColumns("_kafka"))
		require.ErrorIs(t, err, codec.ErrIncompatible)
	})
}

func TestDecodeBadRecords(t *testing.T) {
	s := compile(t, `{"type":"object","additionalProperties":false,"required":["n","when"],"properties":{
		"n":{"type":"integer","minimum":0},
		"when":{"type":"string","format":"date-time"},
		"tags":{"type":"array","items":{"type":"string"}}}}`, nil)
	tests := []struct {
		name    string
		payload string
		want    error
		message string // part of the error's message
	}{
		{"not json", `{"n":`, codec.ErrMalformed, "not JSON"},
		{"not an object", `[1,2]`, codec.ErrMalformed, "want a JSON object"},
		{"trailing data", `{"n":1,"when":"2024-03-01T00:00:00Z"}{}`, codec.ErrMalformed, "data after"},
		{"missing required", `{"n":1}`, codec.ErrMalformed, "missing property 'when'"},
		{"wrong type", `{"n":"1","when":"2024-03-01T00:00:00Z"}`, codec.ErrMalformed, "at '/n'"},
		{"below minimum", `{"n":-1,"when":"2024-03-01T00:00:00Z"}`, codec.ErrMalformed, "minimum"},
		{"bad format", `{"n":1,"when":"yesterday"}`, codec.ErrMalformed, "date-time"},
		{"timestamp without offset", `{"n":1,"when":"2024-03-01T00:00:00"}`, codec.ErrMalformed, "date-time"},
		{"additional property", `{"n":1,"when":"2024-03-01T00:00:00Z","x":1}`, codec.ErrMalformed, "additional properties 'x'"},
		{"nested", `{"n":1,"when":"2024-03-01T00:00:00Z","tags":["a",2]}`, codec.ErrMalformed, "at '/tags/1'"},
		{"integer beyond long", `{"n":9223372036854775808,"when":"2024-03-01T00:00:00Z"}`, codec.ErrOutOfRange, "overflows a long"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, s, table(t, s))
			err := h.appendJSON(tt.payload)
			require.ErrorIs(t, err, tt.want)
			require.ErrorIs(t, err, codec.ErrBadRecord)
			assert.Contains(t, err.Error(), tt.message)
			assert.NotContains(t, err.Error(), "\n")
			assert.Equal(t, []int{0, 0, 0}, arrowtest.Lengths(h.rb))
		})
	}
}

// TestDecodeNothingAppendedOnError: after a payload that fails validation
// or conversion, every builder is as it was and the next good row lands.
func TestDecodeNothingAppendedOnError(t *testing.T) {
	s := compile(t, `{"type":"object","required":["a","xs"],"properties":{
		"a":{"type":"integer"},"xs":{"type":"array","items":{"type":"integer"}}}}`, nil)
	h := newHarness(t, s, table(t, s))
	require.NoError(t, h.appendJSON(`{"a":1,"xs":[1]}`))
	for _, bad := range []string{`{"a":2,"xs":[2,"x"]}`, `{"a":2,"xs":[2,1e30]}`} {
		require.ErrorIs(t, h.appendJSON(bad), codec.ErrBadRecord, bad)
		assert.Equal(t, []int{1, 1}, arrowtest.Lengths(h.rb))
		assert.Equal(t, 1, h.rb.Field(1).(*array.ListBuilder).ValueBuilder().Len())
	}
	require.NoError(t, h.appendJSON(`{"a":3,"xs":[3,4]}`))
	rec := h.record(t)
	assert.Equal(t, []any{int64(1), int64(3)}, arrowtest.Column(rec, "a"))
	assert.Equal(t, []any{[]any{int64(1)}, []any{int64(3), int64(4)}}, arrowtest.Column(rec, "xs"))
}

func TestNewDecoderUnsupportedSchema(t *testing.T) {
	s := compile(t, `{"type":"object","properties":{"a":{"type":["string","integer"]}}}`, nil)
	_, err := jsonschema.NewDecoder(s, iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "a", Type: iceberg.PrimitiveTypes.String}))
	require.ErrorIs(t, err, codec.ErrUnsupported)
	assert.True(t, strings.Contains(err.Error(), "field a"), err.Error())
}
