package connect

import (
	"github.com/apache/iceberg-go"

	"github.com/tarnhq/tarn/ingest/codec"
	"github.com/tarnhq/tarn/ingest/jsonrow"
)

// maxDepth bounds the nesting of a schema (structs, arrays, maps): a
// Debezium change event nests four or five deep, so a much deeper schema
// is hostile, and walking it must not exhaust the stack.
const maxDepth = 64

// Schema is a Kafka Connect schema as Kafka Connect's JsonConverter writes
// it in the "schema" of a value with schemas.enable=true
// (org.apache.kafka.connect.json.JsonConverter.asJsonSchema):
//
//	{"type": "struct", "optional": false, "name": "server.public.t.Value",
//	 "fields": [{"type": "int64", "optional": false,
//	             "name": "io.debezium.time.MicroTimestamp", "version": 1,
//	             "field": "created"}, ...]}
type Schema struct {
	Type Type
	// Optional: the value may be null. Absent (or anything but true)
	// means required, as JsonConverter reads it.
	Optional bool
	// Name is the schema's name: a semantic type's
	// ("io.debezium.time.MicroTimestamp"), a connector's struct name, or
	// "".
	Name string
	Doc  string
	// Parameters are the schema's parameters ("scale": "2").
	Parameters map[string]string
	// Default is the schema's default value, in the payload's encoding,
	// as jsonrow.Parse represents JSON (json.Number for numbers); nil for
	// none.
	Default any
	// Field is the name of a struct's field this schema is the type of.
	Field string
	// Items is an Array's element schema; Keys and Values a Map's.
	Items, Keys, Values *Schema
	// Fields are a Struct's fields, in order.
	Fields []*Schema
}

// ParseSchema reads a schema from the JSON text of an envelope's
// "schema" (see Schema), as JsonConverter's asConnectSchema does: the
// type is required and must be one of Kafka Connect's (int8, int16,
// int32, int64, float, double, boolean, string, bytes, array, map,
// struct); an array needs items, a map keys and values, a struct an
// array of fields each with a "field" name; parameters must be strings;
// "optional", "name", "doc" and "version" of another JSON type are
// ignored, and so are members JsonConverter does not know.
//
// Errors: *codec.FieldError (the path names struct fields by name, list
// items "element", map keys and values "key" and "value") wrapping
// codec.ErrUnsupported.
func ParseSchema(text []byte) (*Schema, error) {
	obj, err := jsonrow.Parse(text)
	if err != nil {
		return nil, codec.FieldErrorf("", codec.ErrUnsupported, "the schema is not a JSON object: %v", err)
	}

	return parseSchema(obj, "", 0)
}

func parseSchema(obj map[string]any, path string, depth int) (*Schema, error) {
	if depth > maxDepth {
		return nil, unsupported(path, "schema nested deeper than %d", maxDepth)
	}
	t, ok := obj["type"].(string)
	if !ok {
		return nil, unsupported(path, `schema without a "type" string`)
	}
	s := &Schema{Type: Type(t)}
	s.Optional, _ = obj["optional"].(bool)
	s.Name, _ = obj["name"].(string)
	s.Doc, _ = obj["doc"].(string)
	s.Field, _ = obj["field"].(string)
	if params, ok := obj["parameters"].(map[string]any); ok {
		s.Parameters = make(map[string]string, len(params))
		for k, v := range params {
			str, ok := v.(string)
			if !ok {
				return nil, unsupported(path, "schema parameter %q is not a string", k)
			}
			s.Parameters[k] = str
		}
	}
	s.Default = obj["default"]

	child := func(member, name string) (*Schema, error) {
		c, ok := obj[member].(map[string]any)
		if !ok {
			return nil, unsupported(path, "%s schema without %q", t, member)
		}

		return parseSchema(c, codec.JoinPath(path, name), depth+1)
	}
	var err error
	switch s.Type {
	case Int8, Int16, Int32, Int64, Float32, Float64, Boolean, String, Bytes:
	case Array:
		s.Items, err = child("items", "element")
	case Map:
		if s.Keys, err = child("keys", "key"); err == nil {
			s.Values, err = child("values", "value")
		}
	case Struct:
		fields, ok := obj["fields"].([]any)
		if !ok {
			return nil, unsupported(path, `struct schema whose "fields" is not an array`)
		}
		for i, f := range fields {
			fo, ok := f.(map[string]any)
			if !ok {
				return nil, unsupported(path, "struct field %d is not a schema object", i)
			}
			name, ok := fo["field"].(string)
			if !ok {
				return nil, unsupported(path, `struct field %d has no "field" name`, i)
			}
			fs, err := parseSchema(fo, codec.JoinPath(path, name), depth+1)
			if err != nil {
				return nil, err
			}
			s.Fields = append(s.Fields, fs)
		}
	default:
		return nil, unsupported(path, "unknown schema type %q", t)
	}

	return s, err
}

// ToIceberg maps a value schema, a struct, to an Iceberg schema (DESIGN.md
// "Type mapping"):
//
//   - int8, int16, int32 → int; int64 → long; float → float; double →
//     double; boolean → boolean; string → string; bytes → binary;
//     struct → struct; array → list; map → map (keys of a primitive
//     type).
//   - the semantic types of Of by their name and parameters (Kind says
//     each one's type); any other name keeps its base type's mapping.
//   - "optional": true → optional; otherwise required (list elements and
//     map values likewise).
//
// Field docs are kept. Field IDs are assigned depth-first from 1 by
// iceberg.AssignFreshSchemaIDs; a pipeline matches them to a table's by
// name path.
//
// Errors: *codec.FieldError wrapping codec.ErrUnsupported: the schema is
// not a struct, a struct has no fields (Parquet cannot store an empty
// group) or two of the same name, a map's keys are not of a primitive
// type, a Decimal's scale is missing or outside 0 to 38.
func ToIceberg(s *Schema) (*iceberg.Schema, error) {
	if s.Type != Struct {
		return nil, unsupported("", "the value schema is %s, not a struct: a table needs columns", s.Type)
	}
	st, err := structOf(s, "")
	if err != nil {
		return nil, err
	}

	return iceberg.AssignFreshSchemaIDs(iceberg.NewSchema(0, st.FieldList...), nil)
}

func structOf(s *Schema, path string) (*iceberg.StructType, error) {
	if len(s.Fields) == 0 {
		return nil, unsupported(path, "struct %s has no fields", s.Name)
	}
	seen := make(map[string]bool, len(s.Fields))
	fields := make([]iceberg.NestedField, 0, len(s.Fields))
	for _, f := range s.Fields {
		fp := codec.JoinPath(path, f.Field)
		if seen[f.Field] {
			return nil, unsupported(fp, "two fields named %q", f.Field)
		}
		seen[f.Field] = true
		t, err := typeOf(f, fp)
		if err != nil {
			return nil, err
		}
		fields = append(fields, iceberg.NestedField{Name: f.Field, Type: t, Required: !f.Optional, Doc: f.Doc})
	}

	return &iceberg.StructType{FieldList: fields}, nil
}

// semanticOf is Of for s, with VariableScaleDecimal's shape checked.
func semanticOf(s *Schema, path string) (Semantic, error) {
	sem, err := Of(s.Name, s.Type, s.Parameters, path)
	if err == nil && sem.Kind == VariableScaleDecimal && !isVariableScaleDecimal(s) {
		sem = Semantic{}
	}

	return sem, err
}

// isVariableScaleDecimal reports whether struct s has exactly
// VariableScaleDecimal's fields: scale int32 and value bytes, required.
func isVariableScaleDecimal(s *Schema) bool {
	if len(s.Fields) != 2 {
		return false
	}
	var scale, value bool
	for _, f := range s.Fields {
		switch {
		case f.Optional:
		case f.Field == "scale" && f.Type == Int32:
			scale = true
		case f.Field == "value" && f.Type == Bytes:
			value = true
		}
	}

	return scale && value
}

func typeOf(s *Schema, path string) (iceberg.Type, error) {
	sem, err := semanticOf(s, path)
	if err != nil {
		return nil, err
	}
	if t := sem.IcebergType(); t != nil {
		return t, nil
	}
	switch s.Type {
	case Int8, Int16, Int32:
		return iceberg.PrimitiveTypes.Int32, nil
	case Int64:
		return iceberg.PrimitiveTypes.Int64, nil
	case Float32:
		return iceberg.PrimitiveTypes.Float32, nil
	case Float64:
		return iceberg.PrimitiveTypes.Float64, nil
	case Boolean:
		return iceberg.PrimitiveTypes.Bool, nil
	case String:
		return iceberg.PrimitiveTypes.String, nil
	case Bytes:
		return iceberg.PrimitiveTypes.Binary, nil
	case Array:
		elem, err := typeOf(s.Items, codec.JoinPath(path, "element"))
		if err != nil {
			return nil, err
		}

		return &iceberg.ListType{Element: elem, ElementRequired: !s.Items.Optional}, nil
	case Map:
		key, err := typeOf(s.Keys, codec.JoinPath(path, "key"))
		if err != nil {
			return nil, err
		}
		if _, ok := key.(iceberg.PrimitiveType); !ok {
			return nil, unsupported(codec.JoinPath(path, "key"), "map keys of type %s: Tarn takes maps with keys of a primitive type", s.Keys.Type)
		}
		val, err := typeOf(s.Values, codec.JoinPath(path, "value"))
		if err != nil {
			return nil, err
		}

		return &iceberg.MapType{KeyType: key, ValueType: val, ValueRequired: !s.Values.Optional}, nil
	case Struct:
		return structOf(s, path)
	}

	return nil, unsupported(path, "unknown schema type %q", s.Type)
}

func unsupported(path string, format string, args ...any) error {
	return codec.FieldErrorf(path, codec.ErrUnsupported, format, args...)
}

func malformed(path string, format string, args ...any) error {
	return codec.FieldErrorf(path, codec.ErrMalformed, format, args...)
}

func outOfRange(path string, format string, args ...any) error {
	return codec.FieldErrorf(path, codec.ErrOutOfRange, format, args...)
}
