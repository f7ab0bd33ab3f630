package protobuf

import (
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/tarnhq/tarn/ingest/codec"
)

// ToIceberg maps a Protobuf message to an Iceberg schema (its fields are
// the columns), following
// DESIGN.md "Type mapping (source → Iceberg)":
//
//   - bool, string, bytes, float, double → boolean, string, binary, float,
//     double; int32, sint32, sfixed32 → int; int64, sint64, sfixed64 →
//     long; uint32, fixed32 → long; uint64, fixed64 → decimal(20,0) (their
//     whole range, up to 18446744073709551615).
//   - enum → string: the value's name; a number the enum does not declare
//     (proto3 enums are open) is its decimal string, as protojson writes it.
//   - message → struct; a message without fields (google.protobuf.Empty,
//     or a marker message used as a oneof arm) → a struct with one
//     optional boolean field, [MarkerField], true whenever the message is
//     present (see MarkerField for why).
//   - repeated → list; map<K, V> → map, keys mapped by their type.
//   - oneof → its members as optional fields of the enclosing struct.
//   - well-known types: google.protobuf.Timestamp → timestamptz (µs,
//     nanos truncated); Duration → long, microseconds (nanos truncated
//     toward zero); the wrappers (DoubleValue, FloatValue, Int64Value,
//     UInt64Value, Int32Value, UInt32Value, BoolValue, StringValue,
//     BytesValue) → their primitive, as above; Struct, Value, ListValue
//     and Any → string holding their canonical JSON (protojson, compact).
//
// Required-ness: a field with explicit presence (message fields, wrappers
// included; proto3 optional; oneof members; proto2 optional) is optional,
// null when absent. A proto2 required field, and a proto3 singular scalar
// without presence (it always has a value, its default when not on the
// wire), is required. Repeated and map fields are required lists and maps
// with required elements, keys and values: an element is never null on
// the wire (an empty message element is the message's defaults).
//
// Field names are the Protobuf field names (not their JSON names). Docs
// come from the fields' leading comments when the descriptor has source
// info (see [Compile]). Field IDs are assigned depth-first (pre-order) from
// 1 by iceberg.AssignFreshSchemaIDs, the numbering a new table gets; they
// only identify fields within this schema: a pipeline matches them to a
// table's by name path.
//
// Errors are *FieldError wrapping ErrRecursive (a message contains itself;
// the path names the field where it does).
func ToIceberg(md protoreflect.MessageDescriptor) (*iceberg.Schema, error) {
	var m mapper
	st, err := m.structOf(md, "")
	if err != nil {
		return nil, err
	}

	return iceberg.AssignFreshSchemaIDs(iceberg.NewSchema(0, st.FieldList...), nil)
}

// MarkerField is the one field of the struct a message without fields
// maps to: an optional boolean, true in every row where the message is
// present (the struct itself is null where it is absent). Parquet cannot
// store a group without columns, and several engines cannot read a
// struct without fields, so the struct needs one; and a struct (unlike
// the boolean Tarn once mapped such messages to) has room to grow: when
// a later schema gives the message fields (a oneof arm `Cancelled {}`
// that becomes `Cancelled { string reason = 1; }`), they are added to the
// struct as optional columns, an Iceberg schema evolution, and the topic
// keeps running. The decoder keeps filling MarkerField with true for
// messages that have fields but no field of that name, so the column
// means the same in every row.
const MarkerField = "_present"

// markerStruct is the type of a message without fields.
func markerStruct() *iceberg.StructType {
	return &iceberg.StructType{FieldList: []iceberg.NestedField{{Name: MarkerField, Type: iceberg.PrimitiveTypes.Bool,
		Doc: "true where the message is present"}}}
}

// isMarker reports whether a target struct field is a MarkerField.
func isMarker(f iceberg.NestedField) bool {
	return f.Name == MarkerField && f.Type.Equals(iceberg.PrimitiveTypes.Bool)
}

// withLegacyEmpty returns writer type w with every marker struct (a
// message without fields, markerStruct) whose column in target type t is
// a boolean replaced by boolean: builds before MarkerField mapped such
// messages to boolean, and their tables keep decoding instead of
// suspending on an evolution Iceberg does not allow (boolean to struct).
// Such a message that gains fields still cannot be stored there.
func withLegacyEmpty(w, t iceberg.Type) iceberg.Type {
	switch wt := w.(type) {
	case *iceberg.StructType:
		switch tt := t.(type) {
		case iceberg.BooleanType:
			if len(wt.FieldList) == 1 && isMarker(wt.FieldList[0]) {
				return iceberg.PrimitiveTypes.Bool
			}
		case *iceberg.StructType:
			fields := slices.Clone(wt.FieldList)
			for i, f := range fields {
				if j := slices.IndexFunc(tt.FieldList, func(g iceberg.NestedField) bool { return g.Name == f.Name }); j >= 0 {
					fields[i].Type = withLegacyEmpty(f.Type, tt.FieldList[j].Type)
				}
			}
			return &iceberg.StructType{FieldList: fields}
		}
	case *iceberg.ListType:
		if tt, ok := t.(*iceberg.ListType); ok {
			l := *wt
			l.Element = withLegacyEmpty(wt.Element, tt.Element)
			return &l
		}
	case *iceberg.MapType:
		if tt, ok := t.(*iceberg.MapType); ok {
			m := *wt
			m.ValueType = withLegacyEmpty(wt.ValueType, tt.ValueType)
			return &m
		}
	}

	return w
}

// wkt classifies the well-known message types that do not map to a struct.
type wkt uint8

const (
	wktNone      wkt = iota
	wktTimestamp     // google.protobuf.Timestamp
	wktDuration      // google.protobuf.Duration
	wktWrapper       // google.protobuf.*Value wrappers: their field "value"
	wktJSON          // Struct, Value, ListValue, Any
	wktEmpty         // any message without fields: markerStruct
)

func wktOf(md protoreflect.MessageDescriptor) wkt {
	switch md.FullName() {
	case "google.protobuf.Timestamp":
		return wktTimestamp
	case "google.protobuf.Duration":
		return wktDuration
	case "google.protobuf.DoubleValue", "google.protobuf.FloatValue",
		"google.protobuf.Int64Value", "google.protobuf.UInt64Value",
		"google.protobuf.Int32Value", "google.protobuf.UInt32Value",
		"google.protobuf.BoolValue", "google.protobuf.StringValue",
		"google.protobuf.BytesValue":
		return wktWrapper
	case "google.protobuf.Struct", "google.protobuf.Value",
		"google.protobuf.ListValue", "google.protobuf.Any":
		return wktJSON
	}
	if md.Fields().Len() == 0 {
		return wktEmpty
	}

	return wktNone
}

// optional reports whether a field maps to an optional Iceberg field: it
// has explicit presence and is not proto2 required.
func optional(fd protoreflect.FieldDescriptor) bool {
	return fd.HasPresence() && fd.Cardinality() != protoreflect.Required
}

// mapper walks one message; open holds the full names of the messages
// being mapped, from the root down, to refuse recursion.
type mapper struct {
	open []protoreflect.FullName
}

// message maps a message to a struct, or to its well-known type's
// primitive.
func (m *mapper) message(md protoreflect.MessageDescriptor, path string) (iceberg.Type, error) {
	switch wktOf(md) {
	case wktTimestamp:
		return iceberg.PrimitiveTypes.TimestampTz, nil
	case wktDuration:
		return iceberg.PrimitiveTypes.Int64, nil
	case wktWrapper:
		return scalarOf(md.Fields().ByNumber(1)), nil
	case wktJSON:
		return iceberg.PrimitiveTypes.String, nil
	case wktEmpty:
		return markerStruct(), nil
	}

	return m.structOf(md, path)
}

// structOf maps a message to a struct of its fields. At the top level it
// is called directly: a record value is always a struct, whatever its
// message (google.protobuf.Empty gives a schema without columns).
func (m *mapper) structOf(md protoreflect.MessageDescriptor, path string) (*iceberg.StructType, error) {
	if slices.Contains(m.open, md.FullName()) {
		return nil, &FieldError{Path: path, Err: errorf(ErrRecursive, "%s contains itself", md.FullName())}
	}
	m.open = append(m.open, md.FullName())
	defer func() { m.open = m.open[:len(m.open)-1] }()

	fds := md.Fields()
	fields := make([]iceberg.NestedField, 0, fds.Len())
	for i := range fds.Len() {
		fd := fds.Get(i)
		fp := codec.JoinPath(path, string(fd.Name()))
		t, err := m.field(fd, fp)
		if err != nil {
			return nil, err
		}
		fields = append(fields, iceberg.NestedField{Name: string(fd.Name()), Type: t, Required: !optional(fd), Doc: docOf(fd)})
	}

	return &iceberg.StructType{FieldList: fields}, nil
}

// field maps a field's type, repeated and map included.
func (m *mapper) field(fd protoreflect.FieldDescriptor, path string) (iceberg.Type, error) {
	switch {
	case fd.IsMap():
		k, v := fd.MapKey(), fd.MapValue()
		vt, err := m.single(v, codec.JoinPath(path, "value"))
		if err != nil {
			return nil, err
		}

		return &iceberg.MapType{KeyType: scalarOf(k), ValueType: vt, ValueRequired: true}, nil
	case fd.IsList():
		et, err := m.single(fd, codec.JoinPath(path, "element"))
		if err != nil {
			return nil, err
		}

		return &iceberg.ListType{Element: et, ElementRequired: true}, nil
	}

	return m.single(fd, path)
}

// single maps one value of a field, ignoring its cardinality.
func (m *mapper) single(fd protoreflect.FieldDescriptor, path string) (iceberg.Type, error) {
	if k := fd.Kind(); k == protoreflect.MessageKind || k == protoreflect.GroupKind {
		return m.message(fd.Message(), path)
	}

	return scalarOf(fd), nil
}

// scalarOf maps a non-message kind.
func scalarOf(fd protoreflect.FieldDescriptor) iceberg.Type {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return iceberg.PrimitiveTypes.Bool
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return iceberg.PrimitiveTypes.Int32
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
		protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return iceberg.PrimitiveTypes.Int64
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return uint64Type
	case protoreflect.FloatKind:
		return iceberg.PrimitiveTypes.Float32
	case protoreflect.DoubleKind:
		return iceberg.PrimitiveTypes.Float64
	case protoreflect.BytesKind:
		return iceberg.PrimitiveTypes.Binary
	}
	// StringKind, EnumKind.

	return iceberg.PrimitiveTypes.String
}

// uint64Type holds every uint64: 18446744073709551615 has 20 digits.
var uint64Type = iceberg.DecimalTypeOf(20, 0)

// docOf returns a field's leading comment, or "" without source info.
func docOf(fd protoreflect.FieldDescriptor) string {
	loc := fd.ParentFile().SourceLocations().ByDescriptor(fd)

	return strings.TrimSpace(loc.LeadingComments)
}
