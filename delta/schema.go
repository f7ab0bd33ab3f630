package delta

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
)

// Column mapping keys (PROTOCOL.md "Column Mapping").
const (
	keyColumnMappingID           = "delta.columnMapping.id"
	keyColumnMappingPhysicalName = "delta.columnMapping.physicalName"
	confColumnMappingMode        = "delta.columnMapping.mode"
	confColumnMappingMaxID       = "delta.columnMapping.maxColumnId"
)

// Table features Tarn uses (PROTOCOL.md "Valid Feature Names in Table
// Features"), and its own.
const (
	featureColumnMapping = "columnMapping"
	featureTimestampNTZ  = "timestampNtz"
	featureInvariants    = "invariants"
	// FeatureTarnManaged is Tarn's own writer feature. No Delta writer
	// implements it, and PROTOCOL.md "Table Features" says that "to
	// write a table, writers must implement and respect all features
	// listed in writerFeatures": Spark's delta-spark checks the writer
	// protocol before every write and before VACUUM (VacuumCommand.gc:
	// deltaLog.protocolWrite), delta-rs before its writes and vacuum.
	// So a foreign VACUUM, which deletes every file under the Delta root
	// (the Iceberg data directory) that the current Delta version does
	// not name — the files older Iceberg snapshots still read, and those
	// of an Iceberg commit not published yet — is refused instead, and so
	// is a foreign write Iceberg would never see. Readers check only
	// readerFeatures, where it is not listed.
	FeatureTarnManaged = "tarnIcebergManaged"
)

// structType, structField, arrayType and mapType are the Delta schema
// as PROTOCOL.md "Schema Serialization Format" spells it; a field's Type
// is a primitive type name (string) or one of the nested types.
type structType struct {
	Type   string        `json:"type"`
	Fields []structField `json:"fields"`
}

type structField struct {
	Name     string         `json:"name"`
	Type     any            `json:"type"`
	Nullable bool           `json:"nullable"`
	Metadata map[string]any `json:"metadata"`
}

type arrayType struct {
	Type         string `json:"type"`
	ElementType  any    `json:"elementType"`
	ContainsNull bool   `json:"containsNull"`
}

type mapType struct {
	Type              string `json:"type"`
	KeyType           any    `json:"keyType"`
	ValueType         any    `json:"valueType"`
	ValueContainsNull bool   `json:"valueContainsNull"`
}

// Omitted is a column of the Iceberg schema that the Delta schema leaves
// out, and why.
type Omitted struct {
	// Column is the Iceberg column's dotted name path.
	Column string `json:"column"`
	Reason string `json:"reason"`
}

// physicalNamer gives the physical name of Iceberg field id (the name
// the Parquet files use for it), or ok=false with a reason when the
// column cannot be mapped so that every Delta reader reads it right.
type physicalNamer func(id int, icebergName string) (name string, ok bool, reason string)

// mappedSchema is the Delta schema of an Iceberg schema.
type mappedSchema struct {
	root structType
	// ntz: a timestamp_ntz column is present (needs timestampNtz).
	ntz bool
	// omitted are the columns left out; leaves holds every mapped
	// primitive column outside lists and maps, for the file stats.
	omitted []Omitted
	leaves  []leaf
}

// leaf is a primitive column of the Delta schema that file stats can
// describe (not inside a list or map): its Iceberg field id and type
// and its physical name path.
type leaf struct {
	id       int
	typ      iceberg.Type
	physical []string
}

// mapSchema converts an Iceberg schema to a Delta schema in column
// mapping mode id: every struct field carries delta.columnMapping.id
// (the Iceberg field id) and delta.columnMapping.physicalName (from
// name). Types map as docs/delta.md documents:
//
//	boolean, int, long, float, double, decimal(P,S), date, string, binary
//	    → the Delta type of the same name (int → integer)
//	fixed[N], uuid   → binary (the file's bytes)
//	timestamptz      → timestamp
//	timestamp        → timestamp_ntz (table feature timestampNtz)
//	struct, list, map → struct, array, map
//
// Types Delta cannot express (time, timestamp_ns, timestamptz_ns,
// variant, geometry, geography, unknown) are omitted with their column,
// as is a list or map over one and a struct left without fields.
func mapSchema(sc *iceberg.Schema, name physicalNamer) mappedSchema {
	var m mappedSchema
	m.root = structType{Type: "struct", Fields: m.fields(sc.Fields(), nil, nil, name, true)}
	return m
}

// fields maps a struct's fields; path is the Iceberg name path of the
// struct and phys its physical path (nil inside lists and maps, where no
// stats are kept).
func (m *mappedSchema) fields(fs []iceberg.NestedField, path, phys []string, name physicalNamer, stats bool) []structField {
	out := make([]structField, 0, len(fs))
	for _, f := range fs {
		p := append(slices.Clone(path), f.Name)
		pn, ok, why := name(f.ID, f.Name)
		if !ok {
			m.omitted = append(m.omitted, Omitted{Column: strings.Join(p, "."), Reason: why})
			continue
		}
		pp := append(slices.Clone(phys), pn)
		t, ok := m.typ(f.Type, p, pp, name, stats)
		if !ok {
			continue
		}
		if stats {
			if _, prim := f.Type.(iceberg.PrimitiveType); prim {
				m.leaves = append(m.leaves, leaf{id: f.ID, typ: f.Type, physical: pp})
			}
		}
		out = append(out, structField{Name: f.Name, Type: t, Nullable: !f.Required,
			Metadata: map[string]any{keyColumnMappingID: f.ID, keyColumnMappingPhysicalName: pn}})
	}
	return out
}

// typ maps one type; ok is false (with the column recorded as omitted)
// for a type Delta cannot express.
func (m *mappedSchema) typ(t iceberg.Type, path, phys []string, name physicalNamer, stats bool) (any, bool) {
	omit := func(reason string) (any, bool) {
		m.omitted = append(m.omitted, Omitted{Column: strings.Join(path, "."), Reason: reason})
		return nil, false
	}
	switch t := t.(type) {
	case iceberg.BooleanType:
		return "boolean", true
	case iceberg.Int32Type:
		return "integer", true
	case iceberg.Int64Type:
		return "long", true
	case iceberg.Float32Type:
		return "float", true
	case iceberg.Float64Type:
		return "double", true
	case iceberg.DecimalType:
		return fmt.Sprintf("decimal(%d,%d)", t.Precision(), t.Scale()), true
	case iceberg.DateType:
		return "date", true
	case iceberg.StringType:
		return "string", true
	case iceberg.BinaryType, iceberg.FixedType, iceberg.UUIDType:
		return "binary", true
	case iceberg.TimestampTzType:
		return "timestamp", true
	case iceberg.TimestampType:
		m.ntz = true
		return "timestamp_ntz", true
	case iceberg.TimeType:
		return omit("Delta has no time type")
	case iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		return omit("Delta timestamps are microseconds; the column holds nanoseconds")
	case *iceberg.StructType:
		fs := m.fields(t.FieldList, path, phys, name, stats)
		if len(fs) == 0 {
			return omit("no field of the struct has a Delta type")
		}
		return structType{Type: "struct", Fields: fs}, true
	case *iceberg.ListType:
		el, ok := m.typ(t.Element, append(slices.Clone(path), "element"), nil, name, false)
		if !ok {
			return omit("the list's element has no Delta type")
		}
		return arrayType{Type: "array", ElementType: el, ContainsNull: !t.ElementRequired}, true
	case *iceberg.MapType:
		k, ok := m.typ(t.KeyType, append(slices.Clone(path), "key"), nil, name, false)
		if !ok {
			return omit("the map's key has no Delta type")
		}
		v, ok := m.typ(t.ValueType, append(slices.Clone(path), "value"), nil, name, false)
		if !ok {
			return omit("the map's value has no Delta type")
		}
		return mapType{Type: "map", KeyType: k, ValueType: v, ValueContainsNull: !t.ValueRequired}, true
	}
	return omit(fmt.Sprintf("Delta has no type for Iceberg %s", t))
}

// schemaString is the schema as the metaData action holds it.
func (m mappedSchema) schemaString() (string, error) {
	b, err := json.Marshal(m.root)
	return string(b), err
}

// protocolFor returns the protocol of a table with the given schema,
// never below prev (a protocol only grows, PROTOCOL.md "Supported
// Features": features may not be removed).
//
// Always reader 3 / writer 7 with table features, because Tarn's own
// writer feature (FeatureTarnManaged, which makes Delta writers refuse
// VACUUM) exists only there. Readers need columnMapping, and
// timestampNtz once a column is timestamp_ntz. Writers need those,
// invariants (Spark counts every non-nullable column as an invariant and
// refuses, even to read, a writer-7 table that lists nullable=false
// fields without it: DELTA_FEATURES_PROTOCOL_METADATA_MISMATCH), and
// FeatureTarnManaged. A log written at 2/5 by an earlier release moves
// to 3/7 with only these: Tarn never used the other features writer 5
// implies (appendOnly, checkConstraints, changeDataFeed,
// generatedColumns), which PROTOCOL.md "Table Features for New and
// Existing Tables" lets a writer that can prove it leave out.
//
// vacuumProtocolCheck (which makes even readers-only VACUUM
// implementations check the writer protocol) is not listed: it is a
// reader feature, and delta-rs 1.6 refuses to read a table with it.
func protocolFor(ntz bool, prev *Protocol) Protocol {
	reader := []string{featureColumnMapping}
	if ntz {
		reader = append(reader, featureTimestampNTZ)
	}
	if prev != nil {
		for _, f := range prev.ReaderFeatures {
			if !slices.Contains(reader, f) {
				reader = append(reader, f)
			}
		}
	}
	writer := append(slices.Clone(reader), featureInvariants, FeatureTarnManaged)
	if prev != nil {
		for _, f := range prev.WriterFeatures {
			if !slices.Contains(writer, f) {
				writer = append(writer, f)
			}
		}
	}
	return Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: reader, WriterFeatures: writer}
}

// protocolEqual reports whether two protocol actions say the same.
func protocolEqual(a, b Protocol) bool {
	return a.MinReaderVersion == b.MinReaderVersion && a.MinWriterVersion == b.MinWriterVersion &&
		slices.Equal(a.ReaderFeatures, b.ReaderFeatures) && slices.Equal(a.WriterFeatures, b.WriterFeatures)
}
