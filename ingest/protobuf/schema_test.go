package protobuf_test

import (
	"errors"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tarnpb "github.com/tarnhq/tarn/ingest/protobuf"
)

// TestToIcebergTypeMapping has one case per Protobuf row of DESIGN.md
// "Type mapping" (and per scalar kind): field f of message M.
func TestToIcebergTypeMapping(t *testing.T) {
	tests := []struct {
		name     string
		field    string // declaration of field f
		want     string // iceberg type string of field f
		optional bool
	}{
		{"bool", `bool f = 1;`, "boolean", false},
		{"string", `string f = 1;`, "string", false},
		{"bytes", `bytes f = 1;`, "binary", false},
		{"float", `float f = 1;`, "float", false},
		{"double", `double f = 1;`, "double", false},
		{"int32", `int32 f = 1;`, "int", false},
		{"sint32", `sint32 f = 1;`, "int", false},
		{"sfixed32", `sfixed32 f = 1;`, "int", false},
		{"int64", `int64 f = 1;`, "long", false},
		{"sint64", `sint64 f = 1;`, "long", false},
		{"sfixed64", `sfixed64 f = 1;`, "long", false},
		{"uint32", `uint32 f = 1;`, "long", false},
		{"fixed32", `fixed32 f = 1;`, "long", false},
		{"uint64", `uint64 f = 1;`, "decimal(20, 0)", false},
		{"fixed64", `fixed64 f = 1;`, "decimal(20, 0)", false},
		{"enum", `Color f = 1;`, "string", false},
		{"message", `In f = 1;`, "struct<2: x: required int, 3: y: required string>", true},
		{"repeated scalar", `repeated string f = 1;`, "list<string>", false},
		{"repeated message", `repeated In f = 1;`, "list<struct<3: x: required int, 4: y: required string>>", false},
		{"map string key", `map<string, int64> f = 1;`, "map<string, long>", false},
		{"map int32 key", `map<int32, string> f = 1;`, "map<int, string>", false},
		{"map uint64 key", `map<uint64, bool> f = 1;`, "map<decimal(20, 0), boolean>", false},
		{"map bool key, message value", `map<bool, In> f = 1;`, "map<boolean, struct<4: x: required int, 5: y: required string>>", false},
		{"proto3 optional", `optional int32 f = 1;`, "int", true},
		{"oneof member", `oneof o { string f = 1; int32 g = 2; }`, "string", true},
		{"timestamp", `google.protobuf.Timestamp f = 1;`, "timestamptz", true},
		{"duration", `google.protobuf.Duration f = 1;`, "long", true},
		{"DoubleValue", `google.protobuf.DoubleValue f = 1;`, "double", true},
		{"FloatValue", `google.protobuf.FloatValue f = 1;`, "float", true},
		{"Int64Value", `google.protobuf.Int64Value f = 1;`, "long", true},
		{"UInt64Value", `google.protobuf.UInt64Value f = 1;`, "decimal(20, 0)", true},
		{"Int32Value", `google.protobuf.Int32Value f = 1;`, "int", true},
		{"UInt32Value", `google.protobuf.UInt32Value f = 1;`, "long", true},
		{"BoolValue", `google.protobuf.BoolValue f = 1;`, "boolean", true},
		{"StringValue", `google.protobuf.StringValue f = 1;`, "string", true},
		{"BytesValue", `google.protobuf.BytesValue f = 1;`, "binary", true},
		{"Struct", `google.protobuf.Struct f = 1;`, "string", true},
		{"Value", `google.protobuf.Value f = 1;`, "string", true},
		{"ListValue", `google.protobuf.ListValue f = 1;`, "string", true},
		{"Any", `google.protobuf.Any f = 1;`, "string", true},
		{"Empty", `google.protobuf.Empty f = 1;`, "struct<2: _present: optional boolean (true where the message is present)>", true},
		{"repeated timestamp", `repeated google.protobuf.Timestamp f = 1;`, "list<timestamptz>", false},
		{"repeated wrapper", `repeated google.protobuf.Int32Value f = 1;`, "list<int>", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := table(t, message(t, proto3(tt.field)))
			f := sc.Field(0)
			assert.Equal(t, "f", f.Name)
			assert.Equal(t, 1, f.ID)
			assert.Equal(t, tt.want, f.Type.String())
			assert.Equal(t, !tt.optional, f.Required)
		})
	}
}

// TestToIcebergListAndMapElementsRequired: elements, keys and values are
// never null on the wire.
func TestToIcebergListAndMapElementsRequired(t *testing.T) {
	sc := table(t, message(t, proto3(`repeated In l = 1; map<string, google.protobuf.StringValue> m = 2;`)))
	l := sc.Field(0).Type.(*iceberg.ListType)
	assert.True(t, l.ElementRequired)
	assert.True(t, sc.Field(0).Required)
	m := sc.Field(1).Type.(*iceberg.MapType)
	assert.True(t, m.ValueRequired)
	assert.Equal(t, "string", m.ValueType.String())
	assert.True(t, sc.Field(1).Required)
}

func TestToIcebergProto2Presence(t *testing.T) {
	md := message(t, `syntax = "proto2";
		message M { required int32 a = 1; optional string b = 2; repeated int64 c = 3; optional int32 d = 4 [default = 7]; }`)
	sc := table(t, md)
	assert.Equal(t, `table {
	1: a: required int
	2: b: optional string
	3: c: required list<long>
	5: d: optional int
}`, sc.String())
}

func TestToIcebergOneofFlattens(t *testing.T) {
	sc := table(t, message(t, proto3(`int64 id = 1; oneof payment { string card = 2; In bank = 3; google.protobuf.Empty cash = 4; }`)))
	require.Len(t, sc.Fields(), 4)
	for i, want := range []string{"1: id: required long", "2: card: optional string",
		"3: bank: optional struct<4: x: required int, 5: y: required string>", "6: cash: optional struct<7: _present: optional boolean (true where the message is present)>"} {
		assert.Equal(t, want, sc.Field(i).String())
	}
}

// TestToIcebergFieldIDsAndDocs: IDs depth-first from 1 (a new table's
// numbering), docs from leading comments.
func TestToIcebergFieldIDsAndDocs(t *testing.T) {
	md := message(t, `syntax = "proto3";
message Order {
  // The order number.
  int64 id = 1;
  Line line = 2;
  map<string, Line> by_sku = 3;
}
message Line {
  // Stock keeping unit.
  string sku = 1;
}`)
	sc := table(t, md)
	assert.Equal(t, `table {
	1: id: required long (The order number.)
	2: line: optional struct<3: sku: required string (Stock keeping unit.)>
	4: by_sku: required map<string, struct<7: sku: required string (Stock keeping unit.)>>
}`, sc.String())
}

func TestToIcebergRecursionRefused(t *testing.T) {
	tests := []struct {
		name, schema, path string
	}{
		{"direct", `syntax = "proto3"; message Node { int32 v = 1; Node next = 2; }`, "next"},
		{"through a list", `syntax = "proto3"; message Tree { repeated Tree children = 1; }`, "children.element"},
		{"through a map", `syntax = "proto3"; message Dir { map<string, Dir> entries = 1; }`, "entries.value"},
		{"mutual", `syntax = "proto3"; message A { B b = 1; } message B { int32 x = 1; A a = 2; }`, "b.a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tarnpb.ToIceberg(message(t, tt.schema))
			require.Error(t, err)
			assert.ErrorIs(t, err, tarnpb.ErrRecursive)
			assert.ErrorIs(t, err, tarnpb.ErrUnsupported)
			var fe *tarnpb.FieldError
			require.True(t, errors.As(err, &fe))
			assert.Equal(t, tt.path, fe.Path)

			// NewDecoder refuses it the same way.
			_, err = tarnpb.NewDecoder(message(t, tt.schema), iceberg.NewSchema(0))
			assert.ErrorIs(t, err, tarnpb.ErrRecursive)
		})
	}
}

// TestToIcebergRecursiveWellKnownTypes: Struct and Value contain each
// other, but map to JSON text, so a message holding them is fine.
func TestToIcebergRecursiveWellKnownTypes(t *testing.T) {
	sc := table(t, message(t, proto3(`google.protobuf.Struct s = 1; repeated google.protobuf.Value v = 2;`)))
	assert.Equal(t, "string", sc.Field(0).Type.String())
	assert.Equal(t, "list<string>", sc.Field(1).Type.String())
}
