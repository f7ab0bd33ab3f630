package avro

import (
	"fmt"
	"slices"

	"github.com/apache/iceberg-go"
	hamba "github.com/hamba/avro/v2"

	"github.com/tarnhq/tarn/ingest/codec"
)

// ToIceberg maps an Avro record schema to an Iceberg schema, following
// DESIGN.md "Type mapping (source → Iceberg)":
//
//   - boolean, int, long, float, double, string, bytes → boolean, int, long,
//     float, double, string, binary; fixed(n) → fixed[n]; enum → string;
//     record → struct; array → list; map → map<string, V>.
//   - union [null, T] or [T, null] → optional T.
//   - any other union → a struct with one optional field per non-null branch,
//     named by [BranchName]; a null branch makes the struct itself optional.
//     A single-branch union [T] is T.
//   - logical types: decimal(p,s) on bytes or fixed → decimal(p,s); date →
//     date; time-millis, time-micros → time; timestamp-millis,
//     timestamp-micros → timestamptz; local-timestamp-millis/micros →
//     timestamp; uuid, on string or (Avro 1.12) on fixed(16) → uuid.
//     duration is fixed(12) → fixed[12]. Unknown logical types, and known
//     ones on a type they do not apply to (uuid on fixed(8)), are read as
//     their underlying type (Avro spec, "Logical Types").
//
// Everything that is not a union is required. Field docs are kept. Field IDs
// are assigned depth-first (pre-order) from 1 by iceberg.AssignFreshSchemaIDs,
// the same numbering a new table gets; they only identify fields within this
// schema: a pipeline matches them to a table's IDs by name path.
//
// Kafka Connect's and Debezium's semantic types, which a Connect
// converter (Confluent's or Apicurio's AvroData) names in connect.name
// and connect.parameters properties, map as ingest/connect's Of says: a
// long with connect.name io.debezium.time.MicroTimestamp is a timestamp,
// a string io.debezium.time.ZonedTimestamp a timestamptz, a record
// io.debezium.data.VariableScaleDecimal a string, an
// org.apache.kafka.connect.data.Decimal a decimal of its
// connect.decimal.precision (38 when absent or larger: AvroData's
// placeholder precision 64 is not refused), and so on.
//
// Errors are *FieldError wrapping ErrNotRecord (the top level is not a
// record), ErrRecursive (a record contains itself) or ErrUnsupported
// (null-only union, record without fields, fixed(0), decimal precision
// above 38, a Connect Decimal's scale outside 0 to 38, clashing union
// branch names).
func ToIceberg(s hamba.Schema) (*iceberg.Schema, error) { return ToIcebergFor(s, nil) }

// ToIcebergFor is ToIceberg for values bound for table (nil: a new one):
// a field of a Connect or Debezium semantic type whose column in table
// has the type earlier builds mapped it to (its base type: long for a
// MicroTimestamp, string for a ZonedTimestamp, a struct for a
// VariableScaleDecimal) keeps that type, as NewDecoder decodes it, so
// that such a table keeps its columns (and evolves as before) instead of
// suspending on a change of type Iceberg does not allow. Errors are
// ToIceberg's.
func ToIcebergFor(s hamba.Schema, table *iceberg.Schema) (*iceberg.Schema, error) {
	rec, ok := deref(s).(*hamba.RecordSchema)
	if !ok {
		return nil, &FieldError{Err: fmt.Errorf("%w: %s", ErrNotRecord, s.Type())}
	}

	var m mapper
	var target *iceberg.StructType
	if table != nil {
		st := table.AsStruct()
		target = &st
	}
	st, err := m.record(rec, "", target)
	if err != nil {
		return nil, err
	}

	return iceberg.AssignFreshSchemaIDs(iceberg.NewSchema(0, st.FieldList...), nil)
}

// BranchName is the Iceberg field name of a general union's branch: the
// Avro type name for unnamed types ("boolean", "int", "long", "float",
// "double", "string", "bytes", "array", "map"; a logical type keeps its
// underlying type's name, so timestamp-micros is "long", as in Avro's JSON
// encoding of unions), and the simple name for named types (record, enum,
// fixed: "Address"). When two branches of one union would get the same
// name (records a.Address and b.Address), the named ones among them use
// their full name with dots replaced by underscores ("a_Address").
func BranchName(s hamba.Schema) string {
	s = deref(s)
	if n, ok := s.(hamba.NamedSchema); ok {
		return n.Name()
	}

	return string(s.Type())
}

// mapper walks one Avro schema; open holds the full names of the records
// being mapped, from the root down, to refuse recursion.
type mapper struct {
	open []string
}

// record maps rec; target is its column's struct in a table (nil if
// none), whose fields' types semanticFor checks.
func (m *mapper) record(rec *hamba.RecordSchema, path string, target *iceberg.StructType) (*iceberg.StructType, error) {
	if slices.Contains(m.open, rec.FullName()) {
		return nil, &FieldError{Path: path, Err: fmt.Errorf("%w: %s contains itself", ErrRecursive, rec.FullName())}
	}
	if len(rec.Fields()) == 0 {
		// Parquet cannot store a group without columns.
		return nil, &FieldError{Path: path, Err: fmt.Errorf("%w: record %s has no fields", ErrUnsupported, rec.FullName())}
	}

	m.open = append(m.open, rec.FullName())
	defer func() { m.open = m.open[:len(m.open)-1] }()

	fields := make([]iceberg.NestedField, 0, len(rec.Fields()))
	for _, f := range rec.Fields() {
		fp := codec.JoinPath(path, f.Name())
		t, optional, err := m.typeOf(f.Type(), fp, fieldType(target, f.Name()))
		if err != nil {
			return nil, err
		}
		fields = append(fields, iceberg.NestedField{Name: f.Name(), Type: t, Required: !optional, Doc: f.Doc()})
	}

	return &iceberg.StructType{FieldList: fields}, nil
}

// typeOf returns the Iceberg type of s and whether its values may be null
// (only a union with a null branch can be); tt is the type of its column
// in a table, or nil.
func (m *mapper) typeOf(s hamba.Schema, path string, tt iceberg.Type) (iceberg.Type, bool, error) {
	switch s := deref(s).(type) {
	case *hamba.RecordSchema:
		sem, err := semanticFor(s, tt, path)
		if err != nil {
			return nil, false, err
		}
		if t := sem.IcebergType(); t != nil {
			return t, false, nil
		}
		st, _ := tt.(*iceberg.StructType)
		t, err := m.record(s, path, st)

		return t, false, err
	case *hamba.ArraySchema:
		var et iceberg.Type
		if lt, ok := tt.(*iceberg.ListType); ok {
			et = lt.Element
		}
		elem, optional, err := m.typeOf(s.Items(), codec.JoinPath(path, "element"), et)
		if err != nil {
			return nil, false, err
		}

		return &iceberg.ListType{Element: elem, ElementRequired: !optional}, false, nil
	case *hamba.MapSchema:
		var vt iceberg.Type
		if mt, ok := tt.(*iceberg.MapType); ok {
			vt = mt.ValueType
		}
		val, optional, err := m.typeOf(s.Values(), codec.JoinPath(path, "value"), vt)
		if err != nil {
			return nil, false, err
		}

		return &iceberg.MapType{KeyType: iceberg.PrimitiveTypes.String, ValueType: val, ValueRequired: !optional}, false, nil
	case *hamba.UnionSchema:
		u, err := classify(s, path)
		if err != nil {
			return nil, false, err
		}
		if u.plain() {
			t, _, err := m.typeOf(u.branches[0].schema, path, tt)

			return t, u.null >= 0, err
		}
		st, _ := tt.(*iceberg.StructType)
		fields := make([]iceberg.NestedField, 0, len(u.branches))
		for _, b := range u.branches {
			t, _, err := m.typeOf(b.schema, codec.JoinPath(path, b.name), fieldType(st, b.name))
			if err != nil {
				return nil, false, err
			}
			fields = append(fields, iceberg.NestedField{Name: b.name, Type: t})
		}

		return &iceberg.StructType{FieldList: fields}, u.null >= 0, nil
	default:
		t, _, err := leafType(s, tt, path)

		return t, false, err
	}
}

// fieldType is the type of st's field name; nil when st is nil or has
// no such field.
func fieldType(st *iceberg.StructType, name string) iceberg.Type {
	if st == nil {
		return nil
	}
	for _, f := range st.FieldList {
		if f.Name == name {
			return f.Type
		}
	}

	return nil
}

// primitiveOf maps a non-container Avro schema (primitive, enum, fixed,
// with or without a logical type) to its Iceberg primitive type, without
// Connect's semantic types (leafType adds them).
func primitiveOf(s hamba.Schema, path string) (iceberg.Type, error) {
	switch s := deref(s).(type) {
	case *hamba.EnumSchema:
		return iceberg.PrimitiveTypes.String, nil
	case *hamba.FixedSchema:
		if d, ok := s.Logical().(*hamba.DecimalLogicalSchema); ok {
			return decimalOf(d, path)
		}
		if s.Size() == 0 {
			return nil, &FieldError{Path: path, Err: fmt.Errorf("%w: fixed %s has size 0", ErrUnsupported, s.FullName())}
		}
		if isUUIDFixed(s) {
			return iceberg.PrimitiveTypes.UUID, nil
		}

		return iceberg.FixedTypeOf(s.Size()), nil
	case *hamba.PrimitiveSchema:
		lt := logicalOf(s)
		switch s.Type() {
		case hamba.Boolean:
			return iceberg.PrimitiveTypes.Bool, nil
		case hamba.Int:
			switch lt {
			case hamba.Date:
				return iceberg.PrimitiveTypes.Date, nil
			case hamba.TimeMillis:
				return iceberg.PrimitiveTypes.Time, nil
			}

			return iceberg.PrimitiveTypes.Int32, nil
		case hamba.Long:
			switch lt {
			case hamba.TimeMicros:
				return iceberg.PrimitiveTypes.Time, nil
			case hamba.TimestampMillis, hamba.TimestampMicros:
				return iceberg.PrimitiveTypes.TimestampTz, nil
			case hamba.LocalTimestampMillis, hamba.LocalTimestampMicros:
				return iceberg.PrimitiveTypes.Timestamp, nil
			}

			return iceberg.PrimitiveTypes.Int64, nil
		case hamba.Float:
			return iceberg.PrimitiveTypes.Float32, nil
		case hamba.Double:
			return iceberg.PrimitiveTypes.Float64, nil
		case hamba.String:
			if lt == hamba.UUID {
				return iceberg.PrimitiveTypes.UUID, nil
			}

			return iceberg.PrimitiveTypes.String, nil
		case hamba.Bytes:
			if d, ok := s.Logical().(*hamba.DecimalLogicalSchema); ok {
				return decimalOf(d, path)
			}

			return iceberg.PrimitiveTypes.Binary, nil
		}
	case *hamba.NullSchema:
		return nil, &FieldError{Path: path, Err: fmt.Errorf("%w: null outside a union", ErrUnsupported)}
	}

	return nil, &FieldError{Path: path, Err: fmt.Errorf("%w: avro type %s", ErrUnsupported, s.Type())}
}

func decimalOf(d *hamba.DecimalLogicalSchema, path string) (iceberg.Type, error) {
	// Iceberg decimals hold at most 38 digits (Iceberg spec, "Primitive Types").
	if d.Precision() < 1 || d.Precision() > 38 || d.Scale() < 0 || d.Scale() > d.Precision() {
		return nil, &FieldError{Path: path, Err: fmt.Errorf("%w: decimal(%d,%d): Iceberg needs 1 <= precision <= 38 and 0 <= scale <= precision",
			ErrUnsupported, d.Precision(), d.Scale())}
	}

	return iceberg.DecimalTypeOf(d.Precision(), d.Scale()), nil
}

// isUUIDFixed reports whether s is a uuid on fixed(16), the Avro 1.12
// form: its 16 bytes are the uuid in RFC 4122 byte order. hamba/avro
// (v2.31) parses the logical type only on strings and leaves it among a
// fixed's properties.
func isUUIDFixed(s *hamba.FixedSchema) bool {
	lt, _ := s.Prop("logicalType").(string)

	return s.Size() == 16 && s.Logical() == nil && hamba.LogicalType(lt) == hamba.UUID
}

// logicalOf returns the logical type of a primitive schema, or "".
func logicalOf(s *hamba.PrimitiveSchema) hamba.LogicalType {
	if s.Logical() == nil {
		return ""
	}

	return s.Logical().Type()
}

// deref follows a reference to a named type defined earlier in the schema.
func deref(s hamba.Schema) hamba.Schema {
	if r, ok := s.(*hamba.RefSchema); ok {
		return r.Schema()
	}

	return s
}

// union is a classified Avro union.
type union struct {
	null     int      // index of the null branch, -1 if none
	branches []branch // the non-null branches, in union order
}

type branch struct {
	index  int          // position in the Avro union: what the payload carries
	name   string       // Iceberg field name when the union is a struct
	schema hamba.Schema // dereferenced
}

// plain reports whether the union maps to its only non-null branch's type:
// [null, T], [T, null] (optional T) or [T] (T).
func (u union) plain() bool { return len(u.branches) == 1 }

func classify(s *hamba.UnionSchema, path string) (union, error) {
	u := union{null: -1}
	for i, t := range s.Types() {
		t = deref(t)
		if t.Type() == hamba.Null {
			u.null = i

			continue
		}
		u.branches = append(u.branches, branch{index: i, name: BranchName(t), schema: t})
	}
	if len(u.branches) == 0 {
		return u, &FieldError{Path: path, Err: fmt.Errorf("%w: union without a non-null branch", ErrUnsupported)}
	}

	// Resolve clashing names: named types fall back to their full name.
	count := map[string]int{}
	for _, b := range u.branches {
		count[b.name]++
	}
	for i, b := range u.branches {
		if n, ok := b.schema.(hamba.NamedSchema); ok && count[b.name] > 1 {
			u.branches[i].name = sanitize(n.FullName())
		}
	}
	seen := map[string]bool{}
	for _, b := range u.branches {
		if seen[b.name] {
			return u, &FieldError{Path: path, Err: fmt.Errorf("%w: two union branches named %q", ErrUnsupported, b.name)}
		}
		seen[b.name] = true
	}

	return u, nil
}
