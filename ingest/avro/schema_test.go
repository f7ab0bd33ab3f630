package avro_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	hamba "github.com/hamba/avro/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tarnavro "github.com/tarnhq/tarn/ingest/avro"
)

// parse parses an Avro schema with a cache of its own, so tests may reuse
// record names with different shapes.
func parse(t testing.TB, schema string) hamba.Schema {
	t.Helper()
	s, err := hamba.ParseWithCache(schema, "", &hamba.SchemaCache{})
	require.NoError(t, err)

	return s
}

// record wraps field type JSON into a one-field record "R" with field "f".
func record(fieldType string) string {
	return `{"type":"record","name":"R","namespace":"t","fields":[{"name":"f","type":` + fieldType + `}]}`
}

// TestToIcebergTypeMapping has one case per row of DESIGN.md "Type mapping".
func TestToIcebergTypeMapping(t *testing.T) {
	tests := []struct {
		name     string
		avro     string
		want     string // iceberg type string of field f
		optional bool
	}{
		{"boolean", `"boolean"`, "boolean", false},
		{"int", `"int"`, "int", false},
		{"long", `"long"`, "long", false},
		{"float", `"float"`, "float", false},
		{"double", `"double"`, "double", false},
		{"string", `"string"`, "string", false},
		{"bytes", `"bytes"`, "binary", false},
		{"fixed", `{"type":"fixed","name":"F","size":4}`, "fixed[4]", false},
		{"enum", `{"type":"enum","name":"E","symbols":["A","B"]}`, "string", false},
		{"record", `{"type":"record","name":"In","fields":[{"name":"x","type":"int"},{"name":"y","type":["null","string"]}]}`,
			"struct<2: x: required int, 3: y: optional string>", false},
		{"array", `{"type":"array","items":"string"}`, "list<string>", false},
		{"map", `{"type":"map","values":"long"}`, "map<string, long>", false},
		{"union null first", `["null","string"]`, "string", true},
		{"union null last", `["string","null"]`, "string", true},
		{"general union", `["int","string"]`, "struct<2: int: optional int, 3: string: optional string>", false},
		{"general union with null", `["null","int","string"]`, "struct<2: int: optional int, 3: string: optional string>", true},
		{"decimal bytes", `{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}`, "decimal(9, 2)", false},
		{"decimal fixed", `{"type":"fixed","name":"D","size":8,"logicalType":"decimal","precision":18,"scale":4}`, "decimal(18, 4)", false},
		{"date", `{"type":"int","logicalType":"date"}`, "date", false},
		{"time-millis", `{"type":"int","logicalType":"time-millis"}`, "time", false},
		{"time-micros", `{"type":"long","logicalType":"time-micros"}`, "time", false},
		{"timestamp-millis", `{"type":"long","logicalType":"timestamp-millis"}`, "timestamptz", false},
		{"timestamp-micros", `{"type":"long","logicalType":"timestamp-micros"}`, "timestamptz", false},
		{"local-timestamp-millis", `{"type":"long","logicalType":"local-timestamp-millis"}`, "timestamp", false},
		{"local-timestamp-micros", `{"type":"long","logicalType":"local-timestamp-micros"}`, "timestamp", false},
		{"uuid", `{"type":"string","logicalType":"uuid"}`, "uuid", false},
		{"uuid on fixed(16)", `{"type":"fixed","name":"Id","size":16,"logicalType":"uuid"}`, "uuid", false},
		{"uuid on fixed(8) is its fixed", `{"type":"fixed","name":"Id8","size":8,"logicalType":"uuid"}`, "fixed[8]", false},
		{"duration is its fixed", `{"type":"fixed","name":"Dur","size":12,"logicalType":"duration"}`, "fixed[12]", false},
		{"unknown logical type is its base type", `{"type":"long","logicalType":"made-up"}`, "long", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc, err := tarnavro.ToIceberg(parse(t, record(tt.avro)))
			require.NoError(t, err)
			require.Len(t, sc.Fields(), 1)
			f := sc.Field(0)
			assert.Equal(t, "f", f.Name)
			assert.Equal(t, 1, f.ID)
			assert.Equal(t, tt.want, f.Type.String())
			assert.Equal(t, !tt.optional, f.Required)
		})
	}
}

func TestToIcebergNested(t *testing.T) {
	sc, err := tarnavro.ToIceberg(parse(t, `{
		"type": "record", "name": "Order", "namespace": "shop",
		"fields": [
			{"name": "id", "type": "long", "doc": "order id"},
			{"name": "customer", "type": {"type": "record", "name": "Customer", "fields": [
				{"name": "name", "type": "string"},
				{"name": "address", "type": ["null", {"type": "record", "name": "Address", "fields": [
					{"name": "city", "type": "string"}]}]}]}},
			{"name": "lines", "type": {"type": "array", "items": {"type": "record", "name": "Line", "fields": [
				{"name": "sku", "type": "string"},
				{"name": "qty", "type": "int"}]}}},
			{"name": "attrs", "type": {"type": "map", "values": ["null", "string"]}},
			{"name": "billing", "type": ["null", "Address"]}
		]}`))
	require.NoError(t, err)

	// IDs are depth-first (pre-order) from 1; list elements and map keys
	// and values take IDs too.
	wantIDs := map[string]int{
		"id": 1, "customer": 2, "customer.name": 3, "customer.address": 4, "customer.address.city": 5,
		"lines": 6, "lines.element": 7, "lines.element.sku": 8, "lines.element.qty": 9,
		"attrs": 10, "attrs.key": 11, "attrs.value": 12,
		"billing": 13, "billing.city": 14,
	}
	for path, id := range wantIDs {
		f, ok := sc.FindFieldByName(path)
		if assert.True(t, ok, path) {
			assert.Equal(t, id, f.ID, path)
		}
	}
	assert.Equal(t, 14, sc.HighestFieldID())

	id, _ := sc.FindFieldByName("id")
	assert.Equal(t, "order id", id.Doc)
	addr, _ := sc.FindFieldByName("customer.address")
	assert.False(t, addr.Required)
	attrs, _ := sc.FindFieldByName("attrs")
	assert.False(t, attrs.Type.(*iceberg.MapType).ValueRequired)
	lines, _ := sc.FindFieldByName("lines")
	assert.True(t, lines.Type.(*iceberg.ListType).ElementRequired)
	// A named type used twice (Address) is expanded twice: that is reuse,
	// not recursion.
	billing, _ := sc.FindFieldByName("billing")
	assert.Equal(t, "struct<14: city: required string>", billing.Type.String())
}

// TestToIcebergUnionBranchNames pins the naming rule for general unions.
func TestToIcebergUnionBranchNames(t *testing.T) {
	tests := []struct {
		name  string
		union string
		want  []string
	}{
		{"primitives", `["int","long","float","double","boolean","string","bytes"]`,
			[]string{"int", "long", "float", "double", "boolean", "string", "bytes"}},
		{"logical types keep their base type's name", `[{"type":"long","logicalType":"timestamp-micros"},"string"]`,
			[]string{"long", "string"}},
		{"named types use their simple name", `[{"type":"record","name":"Click","namespace":"ev","fields":[{"name":"x","type":"int"}]},
			{"type":"enum","name":"Kind","symbols":["A"]},{"type":"fixed","name":"Hash","size":2}]`,
			[]string{"Click", "Kind", "Hash"}},
		{"containers", `[{"type":"array","items":"int"},{"type":"map","values":"int"}]`, []string{"array", "map"}},
		{"clashing simple names use full names", `[{"type":"record","name":"A","namespace":"x","fields":[{"name":"v","type":"int"}]},
			{"type":"record","name":"A","namespace":"y","fields":[{"name":"v","type":"int"}]},"int"]`,
			[]string{"x_A", "y_A", "int"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc, err := tarnavro.ToIceberg(parse(t, record(tt.union)))
			require.NoError(t, err)
			st := sc.Field(0).Type.(*iceberg.StructType)
			var names []string
			for _, f := range st.FieldList {
				names = append(names, f.Name)
				assert.False(t, f.Required, f.Name)
			}
			assert.Equal(t, tt.want, names)
		})
	}
}

func TestToIcebergSingleBranchUnion(t *testing.T) {
	sc, err := tarnavro.ToIceberg(parse(t, record(`["string"]`)))
	require.NoError(t, err)
	assert.Equal(t, "string", sc.Field(0).Type.String())
	assert.True(t, sc.Field(0).Required)
}

func TestToIcebergRefused(t *testing.T) {
	tests := []struct {
		name    string
		schema  string
		wantErr error
		path    string
		inMsg   string
	}{
		{"recursive through a union", `{"type":"record","name":"Node","namespace":"g","fields":[
			{"name":"value","type":"int"},{"name":"next","type":["null","Node"]}]}`,
			tarnavro.ErrRecursive, "next", "g.Node"},
		{"recursive through an array", `{"type":"record","name":"Tree","fields":[
			{"name":"children","type":{"type":"array","items":"Tree"}}]}`,
			tarnavro.ErrRecursive, "children.element", "Tree"},
		{"mutually recursive", `{"type":"record","name":"A","fields":[
			{"name":"b","type":{"type":"record","name":"B","fields":[{"name":"a","type":["null","A"]}]}}]}`,
			tarnavro.ErrRecursive, "b.a", "A contains itself"},
		{"top level not a record", `"string"`, tarnavro.ErrNotRecord, "", "string"},
		{"null outside a union", record(`"null"`), tarnavro.ErrUnsupported, "f", "null"},
		{"null-only union", record(`["null"]`), tarnavro.ErrUnsupported, "f", "non-null"},
		{"record without fields", record(`{"type":"record","name":"Empty","fields":[]}`), tarnavro.ErrUnsupported, "f", "no fields"},
		{"decimal wider than 38 digits", record(`{"type":"bytes","logicalType":"decimal","precision":40,"scale":0}`),
			tarnavro.ErrUnsupported, "f", "decimal(40,0)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tarnavro.ToIceberg(parse(t, tt.schema))
			require.Error(t, err)
			assert.ErrorIs(t, err, tt.wantErr)
			assert.ErrorIs(t, err, tarnavro.ErrUnsupported)
			var fe *tarnavro.FieldError
			require.True(t, errors.As(err, &fe))
			assert.Equal(t, tt.path, fe.Path)
			assert.True(t, strings.Contains(err.Error(), tt.inMsg), "error %q should mention %q", err, tt.inMsg)
		})
	}
}
