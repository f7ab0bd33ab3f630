package protobuf_test

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/tarnhq/tarn/ingest/codec"
	tarnpb "github.com/tarnhq/tarn/ingest/protobuf"
	"github.com/tarnhq/tarn/internal/arrowtest"
)

// TestDecodeTypeMapping round-trips one value per mapping row: encode with
// dynamicpb (from protojson text), decode into a builder made from
// ToIceberg's schema, read the Arrow value back.
func TestDecodeTypeMapping(t *testing.T) {
	ts := time.Date(2024, 3, 1, 13, 25, 30, 123456789, time.UTC)
	tests := []struct {
		name      string
		field     string // declaration of field f
		json      string // value of f in protojson
		arrowType string
		want      any
	}{
		{"bool", `bool f = 1;`, `true`, "bool", true},
		{"string", `string f = 1;`, `"héllo"`, "utf8", "héllo"},
		{"bytes", `bytes f = 1;`, `"AAH/"`, "binary", []byte{0, 1, 0xff}},
		{"float", `float f = 1;`, `1.5`, "float32", float32(1.5)},
		{"double", `double f = 1;`, `2.25`, "float64", 2.25},
		{"int32", `int32 f = 1;`, `-7`, "int32", int32(-7)},
		{"sint32", `sint32 f = 1;`, `-2147483648`, "int32", int32(-2147483648)},
		{"sfixed32", `sfixed32 f = 1;`, `2147483647`, "int32", int32(2147483647)},
		{"int64", `int64 f = 1;`, `"-9223372036854775808"`, "int64", int64(-9223372036854775808)},
		{"sint64", `sint64 f = 1;`, `"1099511627776"`, "int64", int64(1) << 40},
		{"sfixed64", `sfixed64 f = 1;`, `"-5"`, "int64", int64(-5)},
		{"uint32", `uint32 f = 1;`, `4294967295`, "int64", int64(4294967295)},
		{"fixed32", `fixed32 f = 1;`, `4000000000`, "int64", int64(4000000000)},
		{"uint64 max", `uint64 f = 1;`, `"18446744073709551615"`, "decimal(20, 0)", "18446744073709551615"},
		{"fixed64", `fixed64 f = 1;`, `"9223372036854775808"`, "decimal(20, 0)", "9223372036854775808"},
		{"enum", `Color f = 1;`, `"BLUE"`, "utf8", "BLUE"},
		{"enum unknown number", `Color f = 1;`, `7`, "utf8", "7"},
		{"message", `In f = 1;`, `{"x": 1, "y": "a"}`, "struct<x: int32, y: utf8>", map[string]any{"x": int32(1), "y": "a"}},
		{"repeated", `repeated string f = 1;`, `["a", "b"]`, "list<element: utf8>", []any{"a", "b"}},
		{"map", `map<string, int64> f = 1;`, `{"l": "2", "k": "1"}`, "map<utf8, int64, items_non_nullable>",
			map[string]any{"k": int64(1), "l": int64(2)}},
		{"map uint64 key", `map<uint64, string> f = 1;`, `{"18446744073709551615": "max"}`, "map<decimal(20, 0), utf8, items_non_nullable>",
			map[any]any{"18446744073709551615": "max"}},
		{"proto3 optional", `optional int32 f = 1;`, `0`, "int32", int32(0)},
		{"oneof member", `oneof o { string f = 1; int32 g = 2; }`, `""`, "utf8", ""},
		{"timestamp", `google.protobuf.Timestamp f = 1;`, `"2024-03-01T13:25:30.123456789Z"`, "timestamp[us, tz=UTC]",
			arrow.Timestamp(ts.UnixMicro())},
		{"timestamp before the epoch", `google.protobuf.Timestamp f = 1;`, `"1969-12-31T23:59:58.999999500Z"`, "timestamp[us, tz=UTC]",
			arrow.Timestamp(-1_000_001)},
		{"duration", `google.protobuf.Duration f = 1;`, `"90.0000015s"`, "int64", int64(90_000_001)},
		{"negative duration", `google.protobuf.Duration f = 1;`, `"-1.5s"`, "int64", int64(-1_500_000)},
		{"DoubleValue", `google.protobuf.DoubleValue f = 1;`, `0.5`, "float64", 0.5},
		{"FloatValue", `google.protobuf.FloatValue f = 1;`, `-0.25`, "float32", float32(-0.25)},
		{"Int64Value", `google.protobuf.Int64Value f = 1;`, `"-3"`, "int64", int64(-3)},
		{"UInt64Value", `google.protobuf.UInt64Value f = 1;`, `"18446744073709551615"`, "decimal(20, 0)", "18446744073709551615"},
		{"Int32Value", `google.protobuf.Int32Value f = 1;`, `-4`, "int32", int32(-4)},
		{"UInt32Value", `google.protobuf.UInt32Value f = 1;`, `4294967295`, "int64", int64(4294967295)},
		{"BoolValue", `google.protobuf.BoolValue f = 1;`, `false`, "bool", false},
		{"StringValue", `google.protobuf.StringValue f = 1;`, `"s"`, "utf8", "s"},
		{"BytesValue", `google.protobuf.BytesValue f = 1;`, `"AQI="`, "binary", []byte{1, 2}},
		{"Struct", `google.protobuf.Struct f = 1;`, `{"b": [1, "x", null], "a": {"n": true}}`, "utf8",
			`{"a":{"n":true},"b":[1,"x",null]}`},
		{"Value", `google.protobuf.Value f = 1;`, `"text"`, "utf8", `"text"`},
		{"Value null", `google.protobuf.Value f = 1;`, `null`, "utf8", `null`},
		{"ListValue", `google.protobuf.ListValue f = 1;`, `[1.5, {"k": "v"}]`, "utf8", `[1.5,{"k":"v"}]`},
		{"Any of a well-known type", `google.protobuf.Any f = 1;`,
			`{"@type": "type.googleapis.com/google.protobuf.Duration", "value": "1s"}`, "utf8",
			`{"@type":"type.googleapis.com/google.protobuf.Duration","value":"1s"}`},
		{"Empty", `google.protobuf.Empty f = 1;`, `{}`, "struct<_present: bool nullable>", map[string]any{"_present": true}},
		{"repeated Empty", `repeated google.protobuf.Empty f = 1;`, `[{}, {}]`, "list<element: struct<_present: bool nullable>>",
			[]any{map[string]any{"_present": true}, map[string]any{"_present": true}}},
		{"repeated timestamp", `repeated google.protobuf.Timestamp f = 1;`, `["1970-01-01T00:00:01Z"]`,
			"list<element: timestamp[us, tz=UTC]>", []any{arrow.Timestamp(1_000_000)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			md := message(t, proto3(tt.field))
			h := newHarness(t, md, table(t, md))
			require.NoError(t, h.dec.Append(h.rb, encode(t, md, `{"f": `+tt.json+`}`)))
			rec := h.record(t)
			assert.Equal(t, tt.arrowType, rec.Schema().Field(0).Type.String())
			assert.Equal(t, []any{tt.want}, arrowtest.Column(rec, "f"))
		})
	}
}

func TestDecodeArrowSchemaCarriesFieldIDs(t *testing.T) {
	md := message(t, proto3(`int32 a = 1; In s = 2;`))
	dec, err := tarnpb.NewDecoder(md, table(t, md))
	require.NoError(t, err)
	sc := dec.ArrowSchema()
	id, ok := sc.Field(0).Metadata.GetValue("PARQUET:field_id")
	assert.True(t, ok)
	assert.Equal(t, "1", id)
	assert.False(t, sc.Field(0).Nullable)
	assert.True(t, sc.Field(1).Nullable)
	child := sc.Field(1).Type.(*arrow.StructType).Field(0)
	id, _ = child.Metadata.GetValue("PARQUET:field_id")
	assert.Equal(t, "3", id)
}

// TestDecodeDefaultsAndPresence: proto3 scalars without presence always
// have a value (their default when absent); fields with presence are null
// when absent.
func TestDecodeDefaultsAndPresence(t *testing.T) {
	md := message(t, proto3(`int32 n = 1; string s = 2; Color c = 3; optional int64 o = 4; In m = 5;
		repeated int32 r = 6; map<string, string> mp = 7; google.protobuf.Timestamp ts = 8;`))
	h := newHarness(t, md, table(t, md))
	require.NoError(t, h.dec.Append(h.rb, encode(t, md, `{}`)))
	require.NoError(t, h.dec.Append(h.rb, encode(t, md, `{"n": 1, "s": "x", "c": "GREEN", "o": "0", "m": {}, "r": [0], "mp": {"": ""}}`)))
	rec := h.record(t)
	assert.Equal(t, []any{int32(0), int32(1)}, arrowtest.Column(rec, "n"))
	assert.Equal(t, []any{"", "x"}, arrowtest.Column(rec, "s"))
	assert.Equal(t, []any{"RED", "GREEN"}, arrowtest.Column(rec, "c"))
	assert.Equal(t, []any{nil, int64(0)}, arrowtest.Column(rec, "o"))
	assert.Equal(t, []any{nil, map[string]any{"x": int32(0), "y": ""}}, arrowtest.Column(rec, "m"))
	assert.Equal(t, []any{[]any{}, []any{int32(0)}}, arrowtest.Column(rec, "r"))
	assert.Equal(t, []any{map[string]any{}, map[string]any{"": ""}}, arrowtest.Column(rec, "mp"))
	assert.Equal(t, []any{nil, nil}, arrowtest.Column(rec, "ts"))
}

func TestDecodeWrappersNullVsSet(t *testing.T) {
	md := message(t, proto3(`google.protobuf.Int32Value i = 1; google.protobuf.StringValue s = 2; google.protobuf.UInt64Value u = 3;`))
	h := newHarness(t, md, table(t, md))
	rows := []string{
		`{}`,
		`{"i": 0, "s": "", "u": "0"}`, // set to the default: not null
		`{"i": 42, "s": "x", "u": "18446744073709551615"}`,
	}
	for _, r := range rows {
		require.NoError(t, h.dec.Append(h.rb, encode(t, md, r)), r)
	}
	rec := h.record(t)
	assert.Equal(t, []any{nil, int32(0), int32(42)}, arrowtest.Column(rec, "i"))
	assert.Equal(t, []any{nil, "", "x"}, arrowtest.Column(rec, "s"))
	assert.Equal(t, []any{nil, "0", "18446744073709551615"}, arrowtest.Column(rec, "u"))
}

func TestDecodeOneof(t *testing.T) {
	md := message(t, proto3(`int64 id = 1; oneof payment { string card = 2; In bank = 3; google.protobuf.Empty cash = 4; }`))
	h := newHarness(t, md, table(t, md))
	rows := []string{
		`{"id": "1", "card": "4111"}`,
		`{"id": "2", "bank": {"x": 9}}`,
		`{"id": "3", "cash": {}}`,
		`{"id": "4"}`,
	}
	for _, r := range rows {
		require.NoError(t, h.dec.Append(h.rb, encode(t, md, r)), r)
	}
	rec := h.record(t)
	assert.Equal(t, []any{"4111", nil, nil, nil}, arrowtest.Column(rec, "card"))
	assert.Equal(t, []any{nil, map[string]any{"x": int32(9), "y": ""}, nil, nil}, arrowtest.Column(rec, "bank"))
	assert.Equal(t, []any{nil, nil, map[string]any{"_present": true}, nil}, arrowtest.Column(rec, "cash"))
}

func TestDecodeNestedMapsAndRepeatedMessages(t *testing.T) {
	md := message(t, `syntax = "proto3";
package shop;
message Order {
  int64 id = 1;
  repeated Line lines = 2;
  map<string, Line> by_sku = 3;
  map<int32, Tags> tags = 4;
}
message Line { string sku = 1; uint32 qty = 2; repeated string notes = 3; }
message Tags { map<string, bool> flags = 1; }`)
	h := newHarness(t, md, table(t, md))
	rows := []string{
		`{"id": "1",
		  "lines": [{"sku": "a", "qty": 2, "notes": ["x", "y"]}, {"sku": "b", "qty": 1}],
		  "bySku": {"b": {"sku": "b", "qty": 1}, "a": {"sku": "a"}},
		  "tags": {"2": {"flags": {"z": true, "a": false}}, "-1": {}}}`,
		`{"id": "2"}`,
	}
	for _, r := range rows {
		require.NoError(t, h.dec.Append(h.rb, encode(t, md, r)))
	}
	rec := h.record(t)
	assert.Equal(t, []any{
		[]any{
			map[string]any{"sku": "a", "qty": int64(2), "notes": []any{"x", "y"}},
			map[string]any{"sku": "b", "qty": int64(1), "notes": []any{}},
		},
		[]any{},
	}, arrowtest.Column(rec, "lines"))
	assert.Equal(t, []any{
		map[string]any{
			"a": map[string]any{"sku": "a", "qty": int64(0), "notes": []any{}},
			"b": map[string]any{"sku": "b", "qty": int64(1), "notes": []any{}},
		},
		map[string]any{},
	}, arrowtest.Column(rec, "by_sku"))
	assert.Equal(t, []any{
		map[any]any{
			int32(-1): map[string]any{"flags": map[string]any{}},
			int32(2):  map[string]any{"flags": map[string]any{"a": false, "z": true}},
		},
		map[any]any{},
	}, arrowtest.Column(rec, "tags"))

	// Entries are in ascending key order, whatever the map's iteration
	// order: the same payload always gives the same row.
	m := rec.Column(3).(*array.Map)
	keys := m.Keys().(*array.Int32)
	assert.Equal(t, []int32{-1, 2}, keys.Int32Values())
}

func TestDecodeAny(t *testing.T) {
	md := message(t, `syntax = "proto3";
package p;
import "google/protobuf/any.proto";
message Event { google.protobuf.Any body = 1; }
message Click { string button = 1; int64 at = 2; }`)
	h := newHarness(t, md, table(t, md))

	// event is an Event whose body is an Any of typeURL holding value.
	event := func(typeURL string, value []byte) []byte {
		a := protowire.AppendTag(nil, 1, protowire.BytesType)
		a = protowire.AppendString(a, typeURL)
		a = protowire.AppendTag(a, 2, protowire.BytesType)
		a = protowire.AppendBytes(a, value)
		b := protowire.AppendTag(nil, 1, protowire.BytesType)

		return protowire.AppendBytes(b, a)
	}
	click, err := tarnpb.MessageByIndexes(md.ParentFile(), []int{1})
	require.NoError(t, err)

	// A type of the writer schema's own file resolves.
	require.NoError(t, h.dec.Append(h.rb, event("type.googleapis.com/p.Click", encode(t, click, `{"button": "left", "at": "5"}`))))
	// A type nobody knows is kept as its URL and base64 bytes.
	require.NoError(t, h.dec.Append(h.rb, event("type.googleapis.com/elsewhere.Thing", []byte{0x08, 0x01})))

	assert.Equal(t, []any{
		`{"@type":"type.googleapis.com/p.Click","button":"left","at":"5"}`,
		`{"@type":"type.googleapis.com/elsewhere.Thing","value":"CAE="}`,
	}, arrowtest.Column(h.record(t), "body"))
}

// TestDecodeEvolution: the writer's message into a table schema that
// evolved (DESIGN.md "Schema evolution").
func TestDecodeEvolution(t *testing.T) {
	writer := message(t, proto3(`int32 n = 1; float x = 2; In in = 3; google.protobuf.Int32Value w = 4;`))

	t.Run("extra optional columns get null, int and float promote", func(t *testing.T) {
		target := iceberg.NewSchema(0,
			iceberg.NestedField{ID: 1, Name: "n", Type: iceberg.PrimitiveTypes.Int64, Required: true},
			iceberg.NestedField{ID: 2, Name: "x", Type: iceberg.PrimitiveTypes.Float64, Required: true},
			iceberg.NestedField{ID: 3, Name: "in", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
				{ID: 5, Name: "x", Type: iceberg.PrimitiveTypes.Int64, Required: true},
				{ID: 6, Name: "y", Type: iceberg.PrimitiveTypes.String},
				{ID: 7, Name: "added", Type: iceberg.PrimitiveTypes.Date},
			}}},
			iceberg.NestedField{ID: 4, Name: "w", Type: iceberg.PrimitiveTypes.Int64},
			iceberg.NestedField{ID: 8, Name: "added", Type: iceberg.PrimitiveTypes.String},
		)
		h := newHarness(t, writer, target)
		require.NoError(t, h.dec.Append(h.rb, encode(t, writer, `{"n": -5, "x": 0.5, "in": {"x": 3, "y": "a"}, "w": 2147483647}`)))
		require.NoError(t, h.dec.Append(h.rb, encode(t, writer, `{}`)))
		rec := h.record(t)
		assert.Equal(t, []any{int64(-5), int64(0)}, arrowtest.Column(rec, "n"))
		assert.Equal(t, []any{0.5, 0.0}, arrowtest.Column(rec, "x"))
		assert.Equal(t, []any{map[string]any{"x": int64(3), "y": "a", "added": nil}, nil}, arrowtest.Column(rec, "in"))
		assert.Equal(t, []any{int64(2147483647), nil}, arrowtest.Column(rec, "w"))
		assert.Equal(t, []any{nil, nil}, arrowtest.Column(rec, "added"))
	})

	t.Run("uint64 into a wider decimal", func(t *testing.T) {
		w := message(t, proto3(`uint64 f = 1;`))
		target := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "f", Type: iceberg.DecimalTypeOf(25, 0), Required: true})
		h := newHarness(t, w, target)
		require.NoError(t, h.dec.Append(h.rb, encode(t, w, `{"f": "18446744073709551615"}`)))
		assert.Equal(t, []any{"18446744073709551615"}, arrowtest.Column(h.record(t), "f"))
	})

	refused := []struct {
		name   string
		target *iceberg.Schema
		path   string
	}{
		{"writer field missing in target", iceberg.NewSchema(0,
			iceberg.NestedField{ID: 1, Name: "n", Type: iceberg.PrimitiveTypes.Int32, Required: true},
			iceberg.NestedField{ID: 2, Name: "x", Type: iceberg.PrimitiveTypes.Float32, Required: true},
			iceberg.NestedField{ID: 4, Name: "w", Type: iceberg.PrimitiveTypes.Int32},
		), "in"},
		{"narrowing long to int", iceberg.NewSchema(0,
			iceberg.NestedField{ID: 1, Name: "n", Type: iceberg.PrimitiveTypes.Int32, Required: true},
			iceberg.NestedField{ID: 2, Name: "x", Type: iceberg.PrimitiveTypes.Float32, Required: true},
			iceberg.NestedField{ID: 3, Name: "in", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
				{ID: 5, Name: "x", Type: iceberg.PrimitiveTypes.String, Required: true},
				{ID: 6, Name: "y", Type: iceberg.PrimitiveTypes.String, Required: true},
			}}},
			iceberg.NestedField{ID: 4, Name: "w", Type: iceberg.PrimitiveTypes.Int32},
		), "in.x"},
		{"optional writer field into a required column", iceberg.NewSchema(0,
			iceberg.NestedField{ID: 1, Name: "n", Type: iceberg.PrimitiveTypes.Int32, Required: true},
			iceberg.NestedField{ID: 2, Name: "x", Type: iceberg.PrimitiveTypes.Float32, Required: true},
			iceberg.NestedField{ID: 3, Name: "in", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
				{ID: 5, Name: "x", Type: iceberg.PrimitiveTypes.Int32, Required: true},
				{ID: 6, Name: "y", Type: iceberg.PrimitiveTypes.String, Required: true},
			}}},
			iceberg.NestedField{ID: 4, Name: "w", Type: iceberg.PrimitiveTypes.Int32, Required: true},
		), "w"},
		{"required column the writer lacks", iceberg.NewSchema(0,
			iceberg.NestedField{ID: 1, Name: "n", Type: iceberg.PrimitiveTypes.Int32, Required: true},
			iceberg.NestedField{ID: 2, Name: "x", Type: iceberg.PrimitiveTypes.Float32, Required: true},
			iceberg.NestedField{ID: 3, Name: "in", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
				{ID: 5, Name: "x", Type: iceberg.PrimitiveTypes.Int32, Required: true},
				{ID: 6, Name: "y", Type: iceberg.PrimitiveTypes.String, Required: true},
			}}},
			iceberg.NestedField{ID: 4, Name: "w", Type: iceberg.PrimitiveTypes.Int32},
			iceberg.NestedField{ID: 7, Name: "must", Type: iceberg.PrimitiveTypes.Int32, Required: true},
		), "must"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tarnpb.NewDecoder(writer, tt.target)
			require.Error(t, err)
			assert.ErrorIs(t, err, tarnpb.ErrIncompatible)
			var fe *tarnpb.FieldError
			require.True(t, errors.As(err, &fe))
			assert.Equal(t, tt.path, fe.Path)
		})
	}
}

// TestDecodeCallerColumns: the pipeline's _kafka column is left alone, and
// a writer field named like it is refused.
func TestDecodeCallerColumns(t *testing.T) {
	md := message(t, proto3(`string s = 1;`))
	target := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "s", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 2, Name: "_kafka", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 3, Name: "offset", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		}}, Required: true},
	)
	h := newHarness(t, md, target, codec.WithCallerColumns("_kafka"))
	require.NoError(t, h.dec.Append(h.rb, encode(t, md, `{"s": "a"}`)))
	assert.Equal(t, []int{1, 0}, arrowtest.Lengths(h.rb))
	kb := h.rb.Field(1).(*array.StructBuilder)
	kb.Append(true)
	kb.FieldBuilder(0).(*array.Int64Builder).Append(42)
	rec := h.record(t)
	assert.Equal(t, []any{"a"}, arrowtest.Column(rec, "s"))
	assert.Equal(t, []any{map[string]any{"offset": int64(42)}}, arrowtest.Column(rec, "_kafka"))

	clash := message(t, proto3(`string _kafka = 1;`))
	_, err := tarnpb.NewDecoder(clash, target, codec.WithCallerColumns("_kafka"))
	assert.ErrorIs(t, err, tarnpb.ErrIncompatible)
}

// TestDecodeBadRecordsAppendNothing: every record-level error leaves the
// builder as it was, and the next good row lands in place.
func TestDecodeBadRecordsAppendNothing(t *testing.T) {
	md := message(t, proto3(`string s = 1; repeated In l = 2; google.protobuf.Timestamp ts = 3;
		google.protobuf.Duration d = 4; google.protobuf.Value v = 5; map<string, int32> m = 6;`))
	proto2 := message(t, `syntax = "proto2"; message P { optional string s = 1; required int32 r = 2; }`)

	good := encode(t, md, `{"s": "ok", "l": [{"x": 1}], "ts": "2024-01-01T00:00:00Z", "d": "1s", "v": 1, "m": {"a": 1}}`)
	// A prefix of good that ends inside the string "ok".
	truncated := good[:3]

	// Valid fields ahead of the bad one, so a partial row would show.
	prefix := func(b []byte) []byte {
		p := protowire.AppendTag(nil, 1, protowire.BytesType)
		p = protowire.AppendString(p, "first")
		l := protowire.AppendTag(nil, 1, protowire.VarintType)
		l = protowire.AppendVarint(l, 5)
		p = protowire.AppendTag(p, 2, protowire.BytesType)
		p = protowire.AppendBytes(p, l)

		return append(p, b...)
	}
	timestamp := func(sec int64, nanos int32) []byte {
		m := protowire.AppendTag(nil, 1, protowire.VarintType)
		m = protowire.AppendVarint(m, uint64(sec))
		m = protowire.AppendTag(m, 2, protowire.VarintType)
		m = protowire.AppendVarint(m, uint64(int64(nanos)))

		return m
	}
	field := func(num protowire.Number, msg []byte) []byte {
		b := protowire.AppendTag(nil, num, protowire.BytesType)

		return protowire.AppendBytes(b, msg)
	}
	badUTF8 := protowire.AppendTag(nil, 1, protowire.BytesType)
	badUTF8 = protowire.AppendBytes(badUTF8, []byte{'a', 0xff})

	tests := []struct {
		name    string
		md      bool // decode with md (true) or the proto2 message
		payload []byte
		want    error
		path    string
	}{
		{"truncated", true, truncated, tarnpb.ErrMalformed, ""},
		{"bad wire type", true, prefix([]byte{0x0f}), tarnpb.ErrMalformed, ""},
		{"length past the end", true, prefix([]byte{0x0a, 0x7f, 'x'}), tarnpb.ErrMalformed, ""},
		{"proto3 string not UTF-8", true, badUTF8, tarnpb.ErrOutOfRange, ""},
		{"timestamp beyond int64 microseconds", true, prefix(field(3, timestamp(1<<62, 0))), tarnpb.ErrOutOfRange, "ts"},
		{"timestamp at the very edge", true, prefix(field(3, timestamp(9223372036854, 999999999))), tarnpb.ErrOutOfRange, "ts"},
		{"timestamp with negative nanos", true, prefix(field(3, timestamp(1, -1))), tarnpb.ErrOutOfRange, "ts"},
		// timestamp.proto's range, years 1-9999, as for every format.
		{"timestamp in year 10000", true, prefix(field(3, timestamp(253402300800, 0))), tarnpb.ErrOutOfRange, "ts"},
		{"timestamp in year 0", true, prefix(field(3, timestamp(-62135596801, 999999999))), tarnpb.ErrOutOfRange, "ts"},
		{"duration with nanos of the wrong sign", true, prefix(field(4, timestamp(1, -5))), tarnpb.ErrOutOfRange, "d"},
		{"value without a kind", true, prefix(field(5, nil)), tarnpb.ErrOutOfRange, "v"},
		{"proto2 string not UTF-8", false, append(badUTF8, 0x10, 0x01), tarnpb.ErrOutOfRange, "s"},
		{"proto2 required field missing", false, protowire.AppendString([]byte{0x0a}, "s"), tarnpb.ErrMalformed, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, ok := md, `{"s": "ok"}`
			if !tt.md {
				m, ok = proto2, `{"s": "ok", "r": 1}`
			}
			h := newHarness(t, m, table(t, m))
			require.NoError(t, h.dec.Append(h.rb, encode(t, m, ok)))
			before := arrowtest.Lengths(h.rb)

			err := h.dec.Append(h.rb, tt.payload)
			require.Error(t, err)
			assert.ErrorIs(t, err, tt.want)
			assert.ErrorIs(t, err, tarnpb.ErrBadRecord)
			var fe *tarnpb.FieldError
			require.True(t, errors.As(err, &fe))
			assert.Equal(t, tt.path, fe.Path)
			assert.Equal(t, before, arrowtest.Lengths(h.rb), "a failed Append must append nothing")

			require.NoError(t, h.dec.Append(h.rb, encode(t, m, ok)))
			rec := h.record(t)
			assert.Equal(t, []any{"ok", "ok"}, arrowtest.Column(rec, "s"))
		})
	}

	t.Run("good row after a truncated one has all its values", func(t *testing.T) {
		h := newHarness(t, md, table(t, md))
		require.ErrorIs(t, h.dec.Append(h.rb, truncated), tarnpb.ErrMalformed)
		assert.Equal(t, []int{0, 0, 0, 0, 0, 0}, arrowtest.Lengths(h.rb))
		require.NoError(t, h.dec.Append(h.rb, good))
		rec := h.record(t)
		assert.Equal(t, []any{"ok"}, arrowtest.Column(rec, "s"))
		assert.Equal(t, []any{[]any{map[string]any{"x": int32(1), "y": ""}}}, arrowtest.Column(rec, "l"))
		assert.Equal(t, []any{arrow.Timestamp(1704067200_000000)}, arrowtest.Column(rec, "ts"))
		assert.Equal(t, []any{int64(1_000_000)}, arrowtest.Column(rec, "d"))
		assert.Equal(t, []any{"1"}, arrowtest.Column(rec, "v"))
		assert.Equal(t, []any{map[string]any{"a": int32(1)}}, arrowtest.Column(rec, "m"))
	})
}

func TestDecodeBuilderSchemaMismatch(t *testing.T) {
	md := message(t, proto3(`string s = 1;`))
	dec, err := tarnpb.NewDecoder(md, table(t, md))
	require.NoError(t, err)
	other := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.Binary}}, nil)
	rb := array.NewRecordBuilder(memory.DefaultAllocator, other)
	defer rb.Release()
	assert.ErrorIs(t, dec.Append(rb, encode(t, md, `{"s": "a"}`)), tarnpb.ErrBuilderSchema)
	assert.Equal(t, 0, rb.Field(0).Len())
}

// TestDecodeMarkerMessageGainsFields pins issue 14 item 10: an empty
// message used as a oneof arm was mapped to boolean, so when the message
// later gained a field the table's boolean could not become a struct and
// the topic was suspended. Now the arm is a struct with the marker field
// _present from the first schema; the new field is an optional column
// added to it (codec.Fits asks for exactly that), and rows of both
// schemas decode into the evolved table with _present true.
func TestDecodeMarkerMessageGainsFields(t *testing.T) {
	v1, v2 := message(t, readFile(t, "testdata/orders-v1.proto")), message(t, readFile(t, "testdata/orders-v2.proto"))
	t1 := table(t, v1)
	cancelled, ok := t1.FindFieldByName("cancelled")
	require.True(t, ok)
	assert.Equal(t, "struct<5: _present: optional boolean (true where the message is present)>", cancelled.Type.String())

	_, err := tarnpb.NewDecoder(v2, t1)
	require.ErrorIs(t, err, codec.ErrIncompatible)
	assert.ErrorContains(t, err, "add it as an optional column", "the change is an allowed evolution")

	// The table after the pipeline's evolution: reason added, optional.
	evolved := iceberg.NewSchema(1, t1.Field(0), t1.Field(1), iceberg.NestedField{ID: cancelled.ID, Name: "cancelled",
		Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			cancelled.Type.(*iceberg.StructType).FieldList[0],
			{ID: 6, Name: "reason", Type: iceberg.PrimitiveTypes.String},
		}}})
	require.NoError(t, codec.Fits(table(t, v2), evolved))
	h1 := newHarness(t, v1, evolved)
	h2 := newHarness(t, v2, evolved)
	require.NoError(t, h1.dec.Append(h1.rb, encode(t, v1, `{"id": "1", "cancelled": {}}`)))
	require.NoError(t, h1.dec.Append(h1.rb, encode(t, v1, `{"id": "2", "shipped": {"carrier": "ups"}}`)))
	require.NoError(t, h2.dec.Append(h2.rb, encode(t, v2, `{"id": "3", "cancelled": {"reason": "fraud"}}`)))
	require.NoError(t, h2.dec.Append(h2.rb, encode(t, v2, `{"id": "4", "cancelled": {}}`)))
	require.NoError(t, h2.dec.Append(h2.rb, encode(t, v2, `{"id": "5"}`)))
	assert.Equal(t, []any{map[string]any{"_present": true, "reason": nil}, nil}, arrowtest.Column(h1.record(t), "cancelled"))
	assert.Equal(t, []any{
		map[string]any{"_present": true, "reason": "fraud"},
		map[string]any{"_present": true, "reason": ""},
		nil,
	}, arrowtest.Column(h2.record(t), "cancelled"))
}

// TestDecodeEmptyMessageIntoLegacyBoolean: tables of builds that mapped
// a message without fields to boolean keep decoding it (true when
// present) instead of suspending on a boolean-to-struct change Iceberg
// does not allow.
func TestDecodeEmptyMessageIntoLegacyBoolean(t *testing.T) {
	md := message(t, proto3(`int64 id = 1; oneof payment { string card = 2; google.protobuf.Empty cash = 3; }
		repeated google.protobuf.Empty pings = 4;`))
	legacy := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "card", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "cash", Type: iceberg.PrimitiveTypes.Bool},
		iceberg.NestedField{ID: 4, Name: "pings", Required: true, Type: &iceberg.ListType{ElementID: 5, Element: iceberg.PrimitiveTypes.Bool, ElementRequired: true}})
	h := newHarness(t, md, legacy)
	require.NoError(t, h.dec.Append(h.rb, encode(t, md, `{"id": "1", "cash": {}, "pings": [{}, {}]}`)))
	require.NoError(t, h.dec.Append(h.rb, encode(t, md, `{"id": "2", "card": "4111"}`)))
	rec := h.record(t)
	assert.Equal(t, []any{true, nil}, arrowtest.Column(rec, "cash"))
	assert.Equal(t, []any{[]any{true, true}, []any{}}, arrowtest.Column(rec, "pings"))
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	require.NoError(t, err)

	return string(b)
}
