package delta

import (
	"encoding/json"

	"github.com/apache/iceberg-go"
)

// Column is one top-level column of the Delta schema Tarn writes for an
// Iceberg schema (schema.go's type mapping): its name, its Delta type as
// PROTOCOL.md "Schema Serialization Format" spells it (a JSON string for
// a primitive type such as "long" or "decimal(10,2)", an object for a
// struct, array or map) and whether it is nullable. Catalogs that list a
// Delta table's columns (publish's unity target) take them from here, so
// they list what the Delta log holds.
type Column struct {
	Name     string
	Type     json.RawMessage
	Nullable bool
}

// Columns returns sc's top-level Delta columns, in order, and the columns
// left out (types Delta cannot express, as in the log's metaData). The
// column-mapping metadata (field ids, physical names) is not part of a
// Column: catalogs list logical columns.
func Columns(sc *iceberg.Schema) ([]Column, []Omitted) {
	m := mapSchema(sc, func(_ int, name string) (string, bool, string) { return name, true, "" })
	out := make([]Column, 0, len(m.root.Fields))
	for _, f := range m.root.Fields {
		t, err := json.Marshal(stripMetadata(f.Type))
		if err != nil { // the mapped types are plain strings, slices and structs
			panic(err)
		}
		out = append(out, Column{Name: f.Name, Type: t, Nullable: f.Nullable})
	}
	return out, m.omitted
}

// stripMetadata drops the column-mapping metadata of nested struct
// fields (kept empty, as Delta writers without column mapping write it).
func stripMetadata(t any) any {
	switch t := t.(type) {
	case structType:
		fs := make([]structField, len(t.Fields))
		for i, f := range t.Fields {
			fs[i] = structField{Name: f.Name, Type: stripMetadata(f.Type), Nullable: f.Nullable, Metadata: map[string]any{}}
		}
		return structType{Type: t.Type, Fields: fs}
	case arrayType:
		t.ElementType = stripMetadata(t.ElementType)
		return t
	case mapType:
		t.KeyType, t.ValueType = stripMetadata(t.KeyType), stripMetadata(t.ValueType)
		return t
	}
	return t
}
