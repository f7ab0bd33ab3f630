package jsonrow_test

import (
	"errors"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/ingest/codec"
	"github.com/tarnhq/tarn/ingest/jsonrow"
	"github.com/tarnhq/tarn/internal/arrowtest"
)

// TestDecodeTypeMapping decodes one JSON value per target type into a
// builder made from a one-column schema and reads the Arrow value back.
func TestDecodeTypeMapping(t *testing.T) {
	ts := time.Date(2024, 3, 1, 13, 25, 30, 123456000, time.UTC)
	id := uuid.MustParse("f81d4fae-7dec-11d0-a765-00a0c91e6bf6")
	tests := []struct {
		name      string
		typ       string // Iceberg type, JSON form
		in        string // the JSON value of field f
		arrowType string
		want      any
	}{
		{"boolean", `"boolean"`, `true`, "bool", true},
		{"int", `"int"`, `-7`, "int32", int32(-7)},
		{"int written 2e3", `"int"`, `2e3`, "int32", int32(2000)},
		{"long", `"long"`, `1099511627776`, "int64", int64(1) << 40},
		{"long max", `"long"`, `9223372036854775807`, "int64", int64(9223372036854775807)},
		{"long written 5.0", `"long"`, `5.0`, "int64", int64(5)},
		{"float", `"float"`, `1.5`, "float32", float32(1.5)},
		{"double", `"double"`, `2.25e-3`, "float64", 0.00225},
		{"double from integer", `"double"`, `3`, "float64", 3.0},
		{"decimal number", `"decimal(9,2)"`, `-123.45`, "decimal(9, 2)", "-123.45"},
		{"decimal string", `"decimal(38,10)"`, `"1234567890123456789012345678.0123456789"`, "decimal(38, 10)",
			"1234567890123456789012345678.0123456789"},
		{"decimal padded", `"decimal(9,4)"`, `12.3`, "decimal(9, 4)", "12.3000"},
		{"decimal exponent", `"decimal(9,2)"`, `1.5E2`, "decimal(9, 2)", "150.00"},
		{"decimal trailing zeros", `"decimal(5,2)"`, `"1.23000"`, "decimal(5, 2)", "1.23"},
		{"string", `"string"`, `"héllo \"q\" \u00e9"`, "utf8", `héllo "q" é`},
		{"date", `"date"`, `"2024-03-01"`, "date32", arrow.Date32(19783)},
		{"date before the epoch", `"date"`, `"1969-12-31"`, "date32", arrow.Date32(-1)},
		{"time", `"time"`, `"13:25:30"`, "time64[us]", arrow.Time64(48_330_000_000)},
		{"time fraction", `"time"`, `"13:25:30.123456789"`, "time64[us]", arrow.Time64(48_330_123_456)},
		{"time offset", `"time"`, `"01:00:00+02:00"`, "time64[us]", arrow.Time64(23 * 3600 * 1_000_000)},
		{"timestamptz Z", `"timestamptz"`, `"2024-03-01T13:25:30.123456Z"`, "timestamp[us, tz=UTC]", arrow.Timestamp(ts.UnixMicro())},
		{"timestamptz offset", `"timestamptz"`, `"2024-03-01T14:25:30.123456+01:00"`, "timestamp[us, tz=UTC]", arrow.Timestamp(ts.UnixMicro())},
		{"timestamptz millis", `"timestamptz"`, `1709299530123`, "timestamp[us, tz=UTC]",
			arrow.Timestamp(ts.Truncate(time.Millisecond).UnixMicro())},
		{"timestamp", `"timestamp"`, `"2024-03-01T13:25:30.123456"`, "timestamp[us]", arrow.Timestamp(ts.UnixMicro())},
		{"timestamp offset", `"timestamp"`, `"2024-03-01T15:25:30.123456+02:00"`, "timestamp[us]", arrow.Timestamp(ts.UnixMicro())},
		{"timestamp millis", `"timestamp"`, `-1000`, "timestamp[us]", arrow.Timestamp(-1_000_000)},
		{"timestamp nanos truncated", `"timestamp"`, `"1969-12-31T23:59:59.9999999"`, "timestamp[us]", arrow.Timestamp(-1)},
		{"uuid", `"uuid"`, `"` + id.String() + `"`, "extension<arrow.uuid>", id},
		{"binary", `"binary"`, `"AAH/"`, "binary", []byte{0, 1, 0xff}},
		{"binary unpadded", `"binary"`, `"AAE"`, "binary", []byte{0, 1}},
		{"fixed", `"fixed[4]"`, `"AQIDBA=="`, "fixed_size_binary[4]", []byte{1, 2, 3, 4}},
		{"struct", `{"type":"struct","fields":[{"id":2,"name":"x","required":true,"type":"int"},{"id":3,"name":"y","required":false,"type":"string"}]}`,
			`{"x":1,"y":"a","ignored":[1]}`, "struct<x: int32, y: utf8 nullable>", map[string]any{"x": int32(1), "y": "a"}},
		{"list", `{"type":"list","element-id":2,"element":"string","element-required":true}`, `["a","b"]`,
			"list<element: utf8>", []any{"a", "b"}},
		{"list of optional", `{"type":"list","element-id":2,"element":"long","element-required":false}`, `[1,null,3]`,
			"list<element: int64, nullable>", []any{int64(1), nil, int64(3)}},
		{"map", `{"type":"map","key-id":2,"key":"string","value-id":3,"value":"long","value-required":true}`, `{"l":2,"k":1}`,
			"map<utf8, int64, items_non_nullable>", map[string]any{"k": int64(1), "l": int64(2)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, oneColumn(t, tt.typ, true))
			require.NoError(t, h.appendJSON(`{"f":`+tt.in+`}`))
			rec := h.record(t)
			assert.Equal(t, tt.arrowType, rec.Schema().Field(0).Type.String())
			assert.Equal(t, []any{tt.want}, arrowtest.Column(rec, "f"))
		})
	}
}

func TestDecodeArrowSchemaCarriesFieldIDs(t *testing.T) {
	sc := schema(t, `{"type":"struct","fields":[{"id":7,"name":"a","required":true,"type":"int"},
		{"id":8,"name":"s","required":true,"type":{"type":"struct","fields":[{"id":9,"name":"b","required":true,"type":"string"}]}}]}`)
	dec, err := jsonrow.NewDecoder(sc)
	require.NoError(t, err)
	id, ok := dec.ArrowSchema().Field(0).Metadata.GetValue("PARQUET:field_id")
	assert.True(t, ok)
	assert.Equal(t, "1", id)
	child := dec.ArrowSchema().Field(1).Type.(*arrow.StructType).Field(0)
	id, _ = child.Metadata.GetValue("PARQUET:field_id")
	assert.Equal(t, "3", id)
}

// TestDecodeMapEntriesInKeyOrder: encoding/json forgets the order of an
// object's keys, so maps are stored sorted, the same for every run.
func TestDecodeMapEntriesInKeyOrder(t *testing.T) {
	h := newHarness(t, oneColumn(t, `{"type":"map","key-id":2,"key":"string","value-id":3,"value":"int","value-required":false}`, true))
	require.NoError(t, h.appendJSON(`{"f":{"c":3,"a":1,"b":null}}`))
	m := h.record(t).Column(0).(*array.Map)
	keys := m.Keys().(*array.String)
	assert.Equal(t, []string{"a", "b", "c"}, []string{keys.Value(0), keys.Value(1), keys.Value(2)})
	assert.True(t, m.Items().IsNull(1))
}

func TestDecodeOptionalColumns(t *testing.T) {
	sc := schema(t, `{"type":"struct","fields":[
		{"id":1,"name":"id","required":true,"type":"long"},
		{"id":2,"name":"note","required":false,"type":"string"},
		{"id":3,"name":"addr","required":false,"type":{"type":"struct","fields":[
			{"id":4,"name":"city","required":true,"type":"string"},
			{"id":5,"name":"zip","required":false,"type":"string"}]}}]}`)
	h := newHarness(t, sc)
	for _, row := range []string{
		`{"id":1,"note":"n","addr":{"city":"Oslo","zip":"0150"}}`,
		`{"id":2,"note":null,"addr":null}`,
		`{"id":3,"addr":{"city":"Rome"}}`,
	} {
		require.NoError(t, h.appendJSON(row), row)
	}
	rec := h.record(t)
	assert.Equal(t, []any{int64(1), int64(2), int64(3)}, arrowtest.Column(rec, "id"))
	assert.Equal(t, []any{"n", nil, nil}, arrowtest.Column(rec, "note"))
	assert.Equal(t, []any{
		map[string]any{"city": "Oslo", "zip": "0150"}, nil, map[string]any{"city": "Rome", "zip": nil},
	}, arrowtest.Column(rec, "addr"))
}

func TestDecodeNestedListsAndMaps(t *testing.T) {
	sc := schema(t, `{"type":"struct","fields":[
		{"id":1,"name":"lines","required":true,"type":{"type":"list","element-id":2,"element-required":true,"element":
			{"type":"struct","fields":[{"id":3,"name":"sku","required":true,"type":"string"},
				{"id":4,"name":"tags","required":false,"type":{"type":"list","element-id":5,"element":"string","element-required":false}}]}}},
		{"id":6,"name":"attrs","required":false,"type":{"type":"map","key-id":7,"key":"string","value-id":8,"value-required":false,
			"value":{"type":"map","key-id":9,"key":"string","value-id":10,"value":"int","value-required":true}}}]}`)
	h := newHarness(t, sc)
	require.NoError(t, h.appendJSON(`{"lines":[{"sku":"a","tags":["x",null]},{"sku":"b"}],"attrs":{"m":{"k":1},"n":null}}`))
	require.NoError(t, h.appendJSON(`{"lines":[]}`))
	rec := h.record(t)
	assert.Equal(t, []any{
		[]any{map[string]any{"sku": "a", "tags": []any{"x", nil}}, map[string]any{"sku": "b", "tags": nil}},
		[]any{},
	}, arrowtest.Column(rec, "lines"))
	assert.Equal(t, []any{map[string]any{"m": map[string]any{"k": int32(1)}, "n": nil}, nil}, arrowtest.Column(rec, "attrs"))
}

// TestDecodeIgnoresUnknownFields: a schemaless topic's declared schema
// names what the table keeps; other fields are dropped at every depth.
func TestDecodeIgnoresUnknownFields(t *testing.T) {
	sc := schema(t, `{"type":"struct","fields":[{"id":1,"name":"a","required":true,"type":
		{"type":"struct","fields":[{"id":2,"name":"b","required":true,"type":"int"}]}}]}`)
	h := newHarness(t, sc)
	require.NoError(t, h.appendJSON(`{"x":{"deep":[1,2]},"a":{"b":1,"c":"dropped"},"y":null}`))
	assert.Equal(t, []any{map[string]any{"b": int32(1)}}, arrowtest.Column(h.record(t), "a"))
}

func TestDecodeCallerColumns(t *testing.T) {
	sc := schema(t, `{"type":"struct","fields":[
		{"id":1,"name":"a","required":true,"type":"int"},
		{"id":2,"name":"_kafka","required":true,"type":{"type":"struct","fields":[{"id":3,"name":"offset","required":true,"type":"long"}]}}]}`)
	h := newHarness(t, sc, codec.WithCallerColumns("_kafka"))
	// A payload field named like the caller column is ignored.
	require.NoError(t, h.appendJSON(`{"a":1,"_kafka":{"offset":99}}`))
	assert.Equal(t, []int{1, 0}, arrowtest.Lengths(h.rb), "the _kafka column is the caller's")
	kb := h.rb.Field(1).(*array.StructBuilder)
	kb.Append(true)
	kb.FieldBuilder(0).(*array.Int64Builder).Append(42)
	rec := h.record(t)
	assert.Equal(t, []any{map[string]any{"offset": int64(42)}}, arrowtest.Column(rec, "_kafka"))
}

// TestDecodeJSONText: positions named by WithJSONText take any JSON value,
// as ingest/jsonschema's map<string, string> of additionalProperties does.
func TestDecodeJSONText(t *testing.T) {
	h := newHarness(t, oneColumn(t, `{"type":"map","key-id":2,"key":"string","value-id":3,"value":"string","value-required":false}`, true),
		jsonrow.WithJSONText("f.value"))
	require.NoError(t, h.appendJSON(`{"f":{"s":"plain","n":1.50,"b":true,"o":{"z":1,"a":"<&>"},"l":[1,"x"],"nil":null}}`))
	assert.Equal(t, []any{map[string]any{
		"s": "plain", "n": "1.50", "b": "true", "o": `{"a":"<&>","z":1}`, "l": `[1,"x"]`, "nil": nil,
	}}, arrowtest.Column(h.record(t), "f"))

	_, err := jsonrow.NewDecoder(oneColumn(t, `"long"`, true), jsonrow.WithJSONText("f"))
	require.ErrorIs(t, err, codec.ErrUnsupported)
}

func TestDecodeBadRecords(t *testing.T) {
	sc := schema(t, `{"type":"struct","fields":[
		{"id":1,"name":"i","required":true,"type":"int"},
		{"id":2,"name":"l","required":false,"type":"long"},
		{"id":3,"name":"d","required":false,"type":"decimal(5,2)"},
		{"id":4,"name":"s","required":false,"type":"string"},
		{"id":5,"name":"ts","required":false,"type":"timestamptz"},
		{"id":6,"name":"u","required":false,"type":"uuid"},
		{"id":7,"name":"fx","required":false,"type":"fixed[2]"},
		{"id":8,"name":"xs","required":false,"type":{"type":"list","element-id":9,"element":"int","element-required":true}},
		{"id":10,"name":"dt","required":false,"type":"date"},
		{"id":11,"name":"tm","required":false,"type":"time"},
		{"id":12,"name":"f","required":false,"type":"float"},
		{"id":13,"name":"b","required":false,"type":"binary"},
		{"id":14,"name":"st","required":false,"type":{"type":"struct","fields":[{"id":15,"name":"r","required":true,"type":"boolean"}]}},
		{"id":16,"name":"m","required":false,"type":{"type":"map","key-id":17,"key":"string","value-id":18,"value":"int","value-required":true}}]}`)
	tests := []struct {
		name    string
		payload string
		want    error
		path    string
	}{
		{"empty", ``, codec.ErrMalformed, ""},
		{"not json", `{"i":`, codec.ErrMalformed, ""},
		{"not utf-8", "{\"i\":1,\"s\":\"\xff\"}", codec.ErrMalformed, ""},
		{"array", `[1]`, codec.ErrMalformed, ""},
		{"null document", `null`, codec.ErrMalformed, ""},
		{"trailing data", `{"i":1} {"i":2}`, codec.ErrMalformed, ""},
		{"trailing garbage", `{"i":1}x`, codec.ErrMalformed, ""},
		{"required missing", `{"l":1}`, codec.ErrMalformed, "i"},
		{"required null", `{"i":null}`, codec.ErrMalformed, "i"},
		{"wrong type", `{"i":"1"}`, codec.ErrMalformed, "i"},
		{"int overflow", `{"i":2147483648}`, codec.ErrOutOfRange, "i"},
		{"long overflow", `{"i":1,"l":9223372036854775808}`, codec.ErrOutOfRange, "l"},
		{"long fraction", `{"i":1,"l":1.5}`, codec.ErrOutOfRange, "l"},
		{"long huge exponent", `{"i":1,"l":1e999999999}`, codec.ErrOutOfRange, "l"},
		{"float overflow", `{"i":1,"f":1e39}`, codec.ErrOutOfRange, "f"},
		{"decimal overflow", `{"i":1,"d":1000}`, codec.ErrOutOfRange, "d"},
		{"decimal scale", `{"i":1,"d":1.234}`, codec.ErrOutOfRange, "d"},
		{"decimal bad string", `{"i":1,"d":"12,5"}`, codec.ErrMalformed, "d"},
		{"decimal bool", `{"i":1,"d":true}`, codec.ErrMalformed, "d"},
		{"string boolean", `{"i":1,"s":true}`, codec.ErrMalformed, "s"},
		{"string object", `{"i":1,"s":{"a":1}}`, codec.ErrMalformed, "s"},
		{"timestamptz without offset", `{"i":1,"ts":"2024-03-01T13:25:30"}`, codec.ErrMalformed, "ts"},
		{"timestamptz fraction millis", `{"i":1,"ts":1.5}`, codec.ErrOutOfRange, "ts"},
		{"timestamptz micros read as millis", `{"i":1,"ts":1709299530123456}`, codec.ErrOutOfRange, "ts"},
		{"timestamptz year 0", `{"i":1,"ts":"0000-12-31T23:00:00Z"}`, codec.ErrOutOfRange, "ts"},
		{"timestamptz past 9999", `{"i":1,"ts":"9999-12-31T23:00:00-02:00"}`, codec.ErrOutOfRange, "ts"},
		{"timestamptz millis overflow", `{"i":1,"ts":9223372036854775807}`, codec.ErrOutOfRange, "ts"},
		{"date year 0", `{"i":1,"dt":"0000-01-01"}`, codec.ErrOutOfRange, "dt"},
		{"uuid braces", `{"i":1,"u":"{f81d4fae-7dec-11d0-a765-00a0c91e6bf6}"}`, codec.ErrOutOfRange, "u"},
		{"uuid urn", `{"i":1,"u":"urn:uuid:f81d4fae-7dec-11d0-a765-00a0c91e6bf6"}`, codec.ErrOutOfRange, "u"},
		{"uuid without hyphens", `{"i":1,"u":"f81d4fae7dec11d0a76500a0c91e6bf6"}`, codec.ErrOutOfRange, "u"},
		{"uuid junk", `{"i":1,"u":"nope"}`, codec.ErrOutOfRange, "u"},
		{"fixed length", `{"i":1,"fx":"AQID"}`, codec.ErrOutOfRange, "fx"},
		{"bad base64", `{"i":1,"b":"@@@@"}`, codec.ErrMalformed, "b"},
		{"list element null", `{"i":1,"xs":[1,null]}`, codec.ErrMalformed, "xs.element"},
		{"list not array", `{"i":1,"xs":{"a":1}}`, codec.ErrMalformed, "xs"},
		{"bad date", `{"i":1,"dt":"2024-02-30"}`, codec.ErrMalformed, "dt"},
		{"bad time", `{"i":1,"tm":"25:00:00"}`, codec.ErrMalformed, "tm"},
		{"struct required field", `{"i":1,"st":{}}`, codec.ErrMalformed, "st.r"},
		{"map value null", `{"i":1,"m":{"a":null}}`, codec.ErrMalformed, "m.value"},
		{"map value overflow", `{"i":1,"m":{"a":1e10}}`, codec.ErrOutOfRange, "m.value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, sc)
			err := h.appendJSON(tt.payload)
			require.ErrorIs(t, err, tt.want)
			require.ErrorIs(t, err, codec.ErrBadRecord)
			var fe *codec.FieldError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, tt.path, fe.Path, err.Error())
		})
	}
}

// TestDecodeNothingAppendedOnError: a record that fails deep inside (after
// several columns, list elements and a map entry were read) leaves every
// builder as it was, and the next good row lands alone.
func TestDecodeNothingAppendedOnError(t *testing.T) {
	sc := schema(t, `{"type":"struct","fields":[
		{"id":1,"name":"a","required":true,"type":"long"},
		{"id":2,"name":"xs","required":true,"type":{"type":"list","element-id":3,"element":"string","element-required":true}},
		{"id":4,"name":"m","required":true,"type":{"type":"map","key-id":5,"key":"string","value-id":6,"value":"int","value-required":true}},
		{"id":7,"name":"z","required":true,"type":"decimal(3,0)"}]}`)
	h := newHarness(t, sc)
	require.NoError(t, h.appendJSON(`{"a":1,"xs":["p"],"m":{"k":1},"z":1}`))
	before := arrowtest.Lengths(h.rb)
	err := h.appendJSON(`{"a":2,"xs":["q","r"],"m":{"k":2},"z":1000}`)
	require.ErrorIs(t, err, codec.ErrOutOfRange)
	assert.Equal(t, before, arrowtest.Lengths(h.rb))
	assert.Equal(t, 1, h.rb.Field(1).(*array.ListBuilder).ValueBuilder().Len(), "no list values appended")
	require.NoError(t, h.appendJSON(`{"a":3,"xs":["s"],"m":{"k":3},"z":-999}`))
	rec := h.record(t)
	assert.Equal(t, []any{int64(1), int64(3)}, arrowtest.Column(rec, "a"))
	assert.Equal(t, []any{[]any{"p"}, []any{"s"}}, arrowtest.Column(rec, "xs"))
	assert.Equal(t, []any{map[string]any{"k": int32(1)}, map[string]any{"k": int32(3)}}, arrowtest.Column(rec, "m"))
	assert.Equal(t, []any{"1", "-999"}, arrowtest.Column(rec, "z"))
}

func TestDecodeBuilderSchemaMismatch(t *testing.T) {
	dec, err := jsonrow.NewDecoder(oneColumn(t, `"int"`, true))
	require.NoError(t, err)
	other, err := jsonrow.NewDecoder(oneColumn(t, `"long"`, true))
	require.NoError(t, err)
	rb := array.NewRecordBuilder(memory.DefaultAllocator, other.ArrowSchema())
	defer rb.Release()
	err = dec.Append(rb, []byte(`{"f":1}`))
	require.ErrorIs(t, err, codec.ErrBuilderSchema)
	assert.False(t, errors.Is(err, codec.ErrBadRecord))
}

func TestNewDecoderRefusesTypesJSONCannotFill(t *testing.T) {
	for name, typ := range map[string]string{
		"int keys":     `{"type":"map","key-id":2,"key":"int","value-id":3,"value":"string","value-required":true}`,
		"timestamp_ns": `"timestamp_ns"`,
		"empty struct": `{"type":"struct","fields":[]}`,
	} {
		t.Run(name, func(t *testing.T) {
			var sc = `{"type":"struct","fields":[{"id":1,"name":"f","required":true,"type":` + typ + `}]}`
			_, err := jsonrow.ParseSchema([]byte(sc))
			require.ErrorIs(t, err, codec.ErrUnsupported)
			var fe *codec.FieldError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, "f", fe.Path)
		})
	}
}
