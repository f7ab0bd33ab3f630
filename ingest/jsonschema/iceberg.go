package jsonschema

import (
	"maps"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	sjs "github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/tarnhq/tarn/ingest/codec"
)

// ToIceberg maps a compiled JSON Schema to an Iceberg schema, following
// DESIGN.md "Type mapping (source → Iceberg)":
//
//   - object with properties → struct, one field per property in the
//     order the schema text lists them; properties named in "required" are
//     required columns, the rest optional. Payload properties the schema
//     does not declare are dropped (they pass validation unless
//     additionalProperties says otherwise).
//   - object without properties (additionalProperties true, a schema, or
//     left out, which JSON Schema reads as true) → map<string, string> with
//     optional values: a string value is stored as is, any other value as
//     its compact JSON text (object keys sorted), null as null.
//   - array with one items schema → list of it.
//   - integer → long, number → double, boolean → boolean, string → string;
//     a string's format date-time → timestamptz, date → date, time → time,
//     uuid → uuid (other formats stay string).
//   - type [T, "null"], or oneOf/anyOf [T, {"type": "null"}] → optional T
//     (also for a required property: its value may be null).
//   - $ref and $defs/definitions are followed; a schema without "type"
//     takes it from its keywords (properties → object, items → array, an
//     enum of strings → string).
//
// Refused with codec.ErrUnsupported, the path naming the property: a
// property without a usable type (true, {}, a bare enum of mixed values),
// several non-null types, only null, oneOf/anyOf other than [T, null], tuple
// arrays, an object with neither properties nor additional ones, a $ref
// that reaches itself (Iceberg schemas are finite trees), and a top level
// that is not an object with properties. Validation-only keywords (allOf,
// not, if/then/else, bounds, patterns) do not change the mapping.
//
// Descriptions become field docs. Field IDs are assigned depth-first
// (pre-order) from 1 by iceberg.AssignFreshSchemaIDs, the same numbering a
// new table gets; a pipeline matches them to a table's IDs by name path.
func ToIceberg(s *Schema) (*iceberg.Schema, error) {
	sc, _, err := s.toIceberg()

	return sc, err
}

// toIceberg also returns the name paths of the map values that hold JSON
// text (objects with additionalProperties), for jsonrow.WithJSONText.
func (s *Schema) toIceberg() (*iceberg.Schema, []string, error) {
	m := mapper{docs: s.docs}
	t, _, err := m.typeOf(s.root, "")
	if err != nil {
		return nil, nil, err
	}
	st, ok := t.(*iceberg.StructType)
	if !ok {
		return nil, nil, unsupported("", "the top level is %s, not an object with properties", t)
	}
	sc, err := iceberg.AssignFreshSchemaIDs(iceberg.NewSchema(0, st.FieldList...), nil)
	if err != nil {
		return nil, nil, unsupported("", "assigning field ids: %v", err)
	}

	return sc, m.jsonText, nil
}

// mapper walks one compiled schema; open holds the schemas being mapped,
// from the root down, to refuse recursion.
type mapper struct {
	docs     map[string]*onode
	open     []*sjs.Schema
	jsonText []string
}

// typeOf returns the Iceberg type of s and whether its values may be null.
func (m *mapper) typeOf(s *sjs.Schema, path string) (iceberg.Type, bool, error) {
	// Follow $ref chains: a schema that is only a reference (in draft-07
	// the siblings of $ref are ignored anyway).
	for s.Ref != nil && s.Types == nil && s.Properties == nil && s.Items == nil && s.Items2020 == nil {
		if slices.Contains(m.open, s) {
			return nil, false, unsupported(path, "recursive $ref %s", s.Location)
		}
		m.open = append(m.open, s)
		defer func(n int) { m.open = m.open[:n] }(len(m.open) - 1)
		s = s.Ref
	}
	if slices.Contains(m.open, s) {
		return nil, false, unsupported(path, "recursive $ref to %s", s.Location)
	}
	m.open = append(m.open, s)
	defer func(n int) { m.open = m.open[:n] }(len(m.open) - 1)

	if s.Bool != nil {
		return nil, false, unsupported(path, "the schema %t gives no type", *s.Bool)
	}
	if alts := alternatives(s); alts != nil {
		if s.Types != nil {
			return nil, false, unsupported(path, "both type and oneOf/anyOf")
		}
		other, ok := nullOr(alts)
		if !ok {
			return nil, false, unsupported(path, "oneOf/anyOf other than [T, null]: store it as a string in a schemaless topic, or split the field")
		}
		t, _, err := m.typeOf(other, path)

		return t, true, err
	}

	typ, nullable, err := m.jsonType(s, path)
	if err != nil {
		return nil, false, err
	}
	switch typ {
	case "object":
		t, err := m.object(s, path)

		return t, nullable, err
	case "array":
		items, ok := s.Items.(*sjs.Schema)
		if s.Items2020 != nil {
			items, ok = s.Items2020, true
		}
		if !ok || len(s.PrefixItems) > 0 {
			return nil, false, unsupported(path, "array without one items schema (tuples have no Iceberg type)")
		}
		ep := codec.JoinPath(path, "element")
		elem, optional, err := m.typeOf(items, ep)
		if err != nil {
			return nil, false, err
		}

		return &iceberg.ListType{Element: elem, ElementRequired: !optional}, nullable, nil
	case "integer":
		return iceberg.PrimitiveTypes.Int64, nullable, nil
	case "number":
		return iceberg.PrimitiveTypes.Float64, nullable, nil
	case "boolean":
		return iceberg.PrimitiveTypes.Bool, nullable, nil
	case "string":
		if s.Format != nil {
			switch s.Format.Name {
			case "date-time":
				return iceberg.PrimitiveTypes.TimestampTz, nullable, nil
			case "date":
				return iceberg.PrimitiveTypes.Date, nullable, nil
			case "time":
				return iceberg.PrimitiveTypes.Time, nullable, nil
			case "uuid":
				return iceberg.PrimitiveTypes.UUID, nullable, nil
			}
		}

		return iceberg.PrimitiveTypes.String, nullable, nil
	}

	return nil, false, unsupported(path, "type %s", typ)
}

// jsonType returns the one non-null JSON type of s and whether null is
// allowed too.
func (m *mapper) jsonType(s *sjs.Schema, path string) (string, bool, error) {
	if s.Types != nil {
		types := s.Types.ToStrings()
		nullable := slices.Contains(types, "null")
		types = slices.DeleteFunc(types, func(t string) bool { return t == "null" })
		switch len(types) {
		case 1:
			return types[0], nullable, nil
		case 0:
			return "", false, unsupported(path, "type null only: no column can hold it")
		}

		return "", false, unsupported(path, "several types %s: Iceberg columns have one", strings.Join(types, ", "))
	}
	switch {
	case s.Properties != nil || s.AdditionalProperties != nil:
		return "object", false, nil
	case s.Items != nil || s.Items2020 != nil:
		return "array", false, nil
	case s.Enum != nil && len(s.Enum.Values) > 0 && !slices.ContainsFunc(s.Enum.Values, func(v any) bool { _, ok := v.(string); return !ok }):
		return "string", false, nil
	}

	return "", false, unsupported(path, "no usable type: give the property a type")
}

// object maps an object schema to a struct, or to map<string, string> when
// it has no properties.
func (m *mapper) object(s *sjs.Schema, path string) (iceberg.Type, error) {
	if len(s.Properties) == 0 {
		if b, ok := s.AdditionalProperties.(bool); ok && !b {
			return nil, unsupported(path, "object without properties or additionalProperties")
		}
		vp := codec.JoinPath(path, "value")
		m.jsonText = append(m.jsonText, vp)

		return &iceberg.MapType{KeyType: iceberg.PrimitiveTypes.String, ValueType: iceberg.PrimitiveTypes.String}, nil
	}

	fields := make([]iceberg.NestedField, 0, len(s.Properties))
	for _, name := range m.order(s) {
		p := s.Properties[name]
		fp := codec.JoinPath(path, name)
		t, optional, err := m.typeOf(p, fp)
		if err != nil {
			return nil, err
		}
		fields = append(fields, iceberg.NestedField{
			Name: name, Type: t, Required: !optional && slices.Contains(s.Required, name), Doc: describe(p),
		})
	}

	return &iceberg.StructType{FieldList: fields}, nil
}

// order returns the property names of s in the order the schema text lists
// them; names the text does not show (it always should) follow, sorted.
func (m *mapper) order(s *sjs.Schema) []string {
	var out []string
	for _, k := range propertyOrder(m.docs, s.Location) {
		if _, ok := s.Properties[k]; ok && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.Properties)) {
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}

	return out
}

// maxRefHops bounds the $ref chains followed outside typeOf (which refuses
// cycles itself), so a reference loop cannot hang them.
const maxRefHops = 64

// describe is a property's description, through a $ref if it has none.
func describe(s *sjs.Schema) string {
	for range maxRefHops {
		if s.Description != "" || s.Ref == nil || s.Types != nil {
			break
		}
		s = s.Ref
	}

	return s.Description
}

// alternatives returns s's oneOf or anyOf branches, or nil.
func alternatives(s *sjs.Schema) []*sjs.Schema {
	if len(s.OneOf) > 0 {
		return s.OneOf
	}

	return s.AnyOf
}

// nullOr reports whether alts is [T, null] or [null, T] and returns T.
func nullOr(alts []*sjs.Schema) (*sjs.Schema, bool) {
	if len(alts) != 2 {
		return nil, false
	}
	switch {
	case isNull(alts[0]) && !isNull(alts[1]):
		return alts[1], true
	case isNull(alts[1]) && !isNull(alts[0]):
		return alts[0], true
	}

	return nil, false
}

// isNull reports whether s admits only null: {"type": "null"}.
func isNull(s *sjs.Schema) bool {
	for range maxRefHops {
		if s.Ref == nil || s.Types != nil {
			break
		}
		s = s.Ref
	}

	return s.Types != nil && slices.Equal(s.Types.ToStrings(), []string{"null"})
}
