package jsonschema_test

import (
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/ingest/codec"
	"github.com/tarnhq/tarn/ingest/jsonschema"
)

// TestToIcebergTypeMapping maps one property per row of DESIGN.md "Type
// mapping" (JSON Schema) and the rules ToIceberg documents.
func TestToIcebergTypeMapping(t *testing.T) {
	tests := []struct {
		name     string
		schema   string // property f, listed in required
		want     string // the Iceberg type
		required bool
	}{
		{"integer", `{"type":"integer"}`, "long", true},
		{"number", `{"type":"number"}`, "double", true},
		{"boolean", `{"type":"boolean"}`, "boolean", true},
		{"string", `{"type":"string"}`, "string", true},
		{"string email", `{"type":"string","format":"email"}`, "string", true},
		{"date-time", `{"type":"string","format":"date-time"}`, "timestamptz", true},
		{"date", `{"type":"string","format":"date"}`, "date", true},
		{"time", `{"type":"string","format":"time"}`, "time", true},
		{"uuid", `{"type":"string","format":"uuid"}`, "uuid", true},
		{"object", `{"type":"object","properties":{"x":{"type":"integer"},"y":{"type":"string"}},"required":["x"]}`,
			"struct<2: x: required long, 3: y: optional string>", true},
		{"array", `{"type":"array","items":{"type":"string"}}`, "list<string>", true},
		{"array of nullable", `{"type":"array","items":{"type":["integer","null"]}}`, "list<long>", true},
		{"additionalProperties true", `{"type":"object","additionalProperties":true}`, "map<string, string>", true},
		{"additionalProperties schema", `{"type":"object","additionalProperties":{"type":"integer"}}`, "map<string, string>", true},
		{"bare object", `{"type":"object"}`, "map<string, string>", true},
		{"nullable type", `{"type":["string","null"]}`, "string", false},
		{"null first", `{"type":["null","integer"]}`, "long", false},
		{"oneOf with null", `{"oneOf":[{"type":"null"},{"type":"number"}]}`, "double", false},
		{"anyOf with null", `{"anyOf":[{"type":"string","format":"date"},{"type":"null"}]}`, "date", false},
		{"no type, properties", `{"properties":{"x":{"type":"boolean"}}}`, "struct<2: x: optional boolean>", true},
		{"no type, items", `{"items":{"type":"number"}}`, "list<double>", true},
		{"string enum", `{"enum":["a","b"]}`, "string", true},
		{"local ref", `{"$ref":"#/definitions/pos"}`, "long", true},
		{"validation keywords", `{"type":"integer","minimum":0,"allOf":[{"maximum":9}],"not":{"const":5}}`, "long", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			schema := `{"type":"object","properties":{"f":` + tt.schema + `},"required":["f"],
				"definitions":{"pos":{"type":"integer","minimum":1}}}`
			sc := table(t, compile(t, schema, nil))
			require.Len(t, sc.Fields(), 1)
			f := sc.Fields()[0]
			assert.Equal(t, "f", f.Name)
			assert.Equal(t, tt.want, f.Type.String())
			assert.Equal(t, tt.required, f.Required)
		})
	}
}

func TestToIcebergFieldsInTextOrderWithDocsAndIDs(t *testing.T) {
	s := compile(t, `{"type":"object","required":["zeta","alpha"],"properties":{
		"zeta":{"type":"integer","description":"last letter"},
		"mid":{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"string"}}},
		"alpha":{"$ref":"#/$defs/described"}},
		"$defs":{"described":{"type":"boolean","description":"from the definition"}}}`, nil)
	sc := table(t, s)
	want := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "zeta", Type: iceberg.PrimitiveTypes.Int64, Required: true, Doc: "last letter"},
		iceberg.NestedField{ID: 2, Name: "mid", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 3, Name: "b", Type: iceberg.PrimitiveTypes.String},
			{ID: 4, Name: "a", Type: iceberg.PrimitiveTypes.String},
		}}},
		iceberg.NestedField{ID: 5, Name: "alpha", Type: iceberg.PrimitiveTypes.Bool, Required: true, Doc: "from the definition"},
	)
	assert.True(t, want.Equals(sc), "got %s", sc)
}

func TestToIcebergFlights(t *testing.T) {
	sc := table(t, compile(t, readFile(t, "testdata/flights.schema.json"), nil))
	want := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "date", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true, Doc: "Departure, RFC 3339 with an offset or Z."},
		iceberg.NestedField{ID: 2, Name: "delay", Type: iceberg.PrimitiveTypes.Int64, Required: true, Doc: "Departure delay in minutes; negative when early."},
		iceberg.NestedField{ID: 3, Name: "distance", Type: iceberg.PrimitiveTypes.Int64, Required: true, Doc: "Distance in miles."},
		iceberg.NestedField{ID: 4, Name: "origin", Type: iceberg.PrimitiveTypes.String, Required: true, Doc: "Origin airport, IATA code."},
		iceberg.NestedField{ID: 5, Name: "destination", Type: iceberg.PrimitiveTypes.String, Required: true, Doc: "Destination airport, IATA code."},
	)
	assert.True(t, want.Equals(sc), "got %s", sc)
}

func TestToIcebergUnsupported(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		path   string
	}{
		{"top-level string", `{"type":"string"}`, ""},
		{"top-level map", `{"type":"object"}`, ""},
		{"no type", `{"type":"object","properties":{"a":{}}}`, "a"},
		{"true schema", `{"type":"object","properties":{"a":true}}`, "a"},
		{"mixed enum", `{"type":"object","properties":{"a":{"enum":["x",1]}}}`, "a"},
		{"two types", `{"type":"object","properties":{"a":{"type":["string","integer"]}}}`, "a"},
		{"null only", `{"type":"object","properties":{"a":{"type":"null"}}}`, "a"},
		{"oneOf", `{"type":"object","properties":{"a":{"oneOf":[{"type":"string"},{"type":"integer"}]}}}`, "a"},
		{"anyOf three", `{"type":"object","properties":{"a":{"anyOf":[{"type":"string"},{"type":"null"},{"type":"integer"}]}}}`, "a"},
		{"tuple", `{"type":"object","properties":{"a":{"type":"array","items":[{"type":"string"}]}}}`, "a"},
		{"array without items", `{"type":"object","properties":{"a":{"type":"array"}}}`, "a"},
		{"closed empty object", `{"type":"object","properties":{"a":{"type":"object","additionalProperties":false}}}`, "a"},
		{"nested", `{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"array","items":{}}}}}}`, "a.b.element"},
		{"recursive", `{"type":"object","properties":{"name":{"type":"string"},"child":{"$ref":"#"}}}`, "child"},
		{"recursive via defs", `{"type":"object","properties":{"n":{"$ref":"#/definitions/node"}},
			"definitions":{"node":{"type":"object","properties":{"next":{"$ref":"#/definitions/node"}}}}}`, "n.next"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := jsonschema.ToIceberg(compile(t, tt.schema, nil))
			require.ErrorIs(t, err, codec.ErrUnsupported)
			var fe *codec.FieldError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, tt.path, fe.Path, err.Error())
		})
	}
}

// TestCompileReferences: a $ref to another subject resolves through the
// references the registry lists with the schema, by URL or by file name.
func TestCompileReferences(t *testing.T) {
	address := `{"$id":"https://example.com/schemas/address.json","type":"object",
		"properties":{"city":{"type":"string"},"zip":{"type":"string"}},"required":["city"]}`
	want := "struct<2: city: required string, 3: zip: optional string>"
	tests := []struct {
		name   string
		schema string
		refs   map[string]string
	}{
		{"by URL", `{"type":"object","properties":{"home":{"$ref":"https://example.com/schemas/address.json"}},"required":["home"]}`,
			map[string]string{"https://example.com/schemas/address.json": address}},
		{"by file name", `{"type":"object","properties":{"home":{"$ref":"address.json"}},"required":["home"]}`,
			map[string]string{"address.json": address}},
		{"relative to the root's $id", `{"$id":"https://example.com/schemas/customer.json","type":"object",
			"properties":{"home":{"$ref":"address.json"}},"required":["home"]}`,
			map[string]string{"address.json": address}},
		{"by $id under another name", `{"type":"object","properties":{"home":{"$ref":"https://example.com/schemas/address.json"}},"required":["home"]}`,
			map[string]string{"Address": address}},
		{"pointer into a reference", `{"type":"object","properties":{"home":{"$ref":"defs.json#/definitions/addr"}},"required":["home"]}`,
			map[string]string{"defs.json": `{"definitions":{"addr":` + address + `}}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := table(t, compile(t, tt.schema, tt.refs))
			f, ok := sc.FindFieldByName("home")
			require.True(t, ok)
			assert.Equal(t, want, f.Type.String())
		})
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		refs   map[string]string
	}{
		{"not json", `{"type":`, nil},
		{"invalid schema", `{"type":"object","properties":{"a":{"type":"strin"}}}`, nil},
		{"missing reference", `{"type":"object","properties":{"a":{"$ref":"other.json"}}}`, nil},
		{"no files", `{"type":"object","properties":{"a":{"$ref":"file:///etc/hostname"}}}`, nil},
		{"bad reference text", `{"type":"object","properties":{"a":{"$ref":"other.json"}}}`, map[string]string{"other.json": `{`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := jsonschema.Compile(tt.schema, tt.refs)
			require.ErrorIs(t, err, codec.ErrUnsupported)
			t.Log(err)
		})
	}
}

// TestToIcebergRefLoopInOneOf pins a hang: a oneOf branch that is a $ref
// chain reaching itself must be refused, not followed forever.
func TestToIcebergRefLoopInOneOf(t *testing.T) {
	s, err := jsonschema.Compile(`{"type":"object","properties":{"a":{"oneOf":[{"$ref":"#/definitions/x"},{"type":"null"}]}},
		"definitions":{"x":{"$ref":"#/definitions/y"},"y":{"$ref":"#/definitions/x"}}}`, nil)
	if err != nil {
		require.ErrorIs(t, err, codec.ErrUnsupported)

		return
	}
	_, err = jsonschema.ToIceberg(s)
	require.ErrorIs(t, err, codec.ErrUnsupported)
}
