package delta

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// Physical names.
//
// In column mapping mode id a reader should find a column in a data file
// by its Parquet field id (PROTOCOL.md "Reader Requirements for Column
// Mapping"), and then the physical name would matter only for stats.
// Not every reader does: delta-rs 1.6 (its DataFusion scan) and DuckDB
// 1.4's delta extension (duckdb-delta's ApplyDeltaColumnMapping lets
// delta.columnMapping.physicalName win over the field id) look columns
// up by physical name even in id mode; Spark uses the ids. So Tarn gives
// every column the name its Parquet files use for it, and a version is
// read the same by all three only if, among the version's files, one
// name means one field id: every file holding field X calls it the same
// name n, and no file holds a different field named n beside it.
//
// Iceberg writers name a file's columns after the schema current when
// they write, so that holds until a column is renamed, or dropped and
// another added under its name. While the files of a version disagree,
// the column is left out of the Delta schema (Omitted, with the reason)
// rather than read wrong by some readers; once the files are rewritten
// (compaction) the column comes back under its new name.
//
// Finding the names costs a read of each file's Parquet footer. When no
// schema in the table's history renamed or reused a name (owned tables
// never do: Tarn's schema evolution only adds columns and relaxes
// required), every file uses the current names and no footer is read.

// rootParent is the parent id of top-level columns.
const rootParent = -1

// sibling names a column by its parent's field id and its name.
type sibling struct {
	parent int
	name   string
}

// fileColumns are the columns of one data file's Parquet schema, by
// field id: the name of each and the nearest ancestor with a field id
// (list and map wrapper groups carry none).
type fileColumns struct {
	names    map[int]string
	siblings map[sibling]int
}

// readFileColumns reads the Parquet footer of the data file at path.
func readFileColumns(fsys icebergio.IO, path string) (*fileColumns, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	pf, err := file.NewParquetReader(f)
	if err != nil {
		return nil, fmt.Errorf("read the Parquet footer of %s: %w", path, err)
	}
	defer pf.Close()
	fc := &fileColumns{names: map[int]string{}, siblings: map[sibling]int{}}
	var walk func(g *schema.GroupNode, parent int)
	walk = func(g *schema.GroupNode, parent int) {
		for i := range g.NumFields() {
			n := g.Field(i)
			p := parent
			if id := int(n.FieldID()); id >= 0 {
				fc.names[id] = n.Name()
				fc.siblings[sibling{parent, n.Name()}] = id
				p = id
			}
			if sub, ok := n.(*schema.GroupNode); ok {
				walk(sub, p)
			}
		}
	}
	walk(pf.MetaData().Schema.Root(), rootParent)
	return fc, nil
}

// icebergParents maps every field id of sc to its parent's id: the
// enclosing struct field, list element or map value (rootParent at the
// top), as readFileColumns finds it in a file.
func icebergParents(sc *iceberg.Schema) map[int]int {
	out := map[int]int{}
	var walk func(t iceberg.Type, parent int)
	walk = func(t iceberg.Type, parent int) {
		switch t := t.(type) {
		case *iceberg.StructType:
			for _, f := range t.FieldList {
				out[f.ID] = parent
				walk(f.Type, f.ID)
			}
		case *iceberg.ListType:
			out[t.ElementID] = parent
			walk(t.Element, t.ElementID)
		case *iceberg.MapType:
			out[t.KeyID] = parent
			out[t.ValueID] = parent
			walk(t.KeyType, t.KeyID)
			walk(t.ValueType, t.ValueID)
		}
	}
	for _, f := range sc.Fields() {
		out[f.ID] = rootParent
		walk(f.Type, f.ID)
	}
	return out
}

// namesStable reports whether every schema of md names each field id
// with one name path and each name path with one id, and prev (the
// physical names of the last published Delta schema) agrees with the
// current schema: then every Iceberg-written file uses the current names.
func namesStable(md table.Metadata, prev map[int]string) bool {
	byID, byPath := map[int]string{}, map[string]int{}
	for _, sc := range md.Schemas() {
		for _, id := range sc.FieldIDs() {
			p, ok := sc.FindColumnName(id)
			if !ok {
				continue
			}
			if q, seen := byID[id]; seen && q != p {
				return false
			}
			if j, seen := byPath[p]; seen && j != id {
				return false
			}
			byID[id], byPath[p] = p, id
		}
	}
	cur := md.CurrentSchema()
	for id, name := range prev {
		if f, ok := cur.FindFieldByID(id); ok && f.Name != name {
			return false
		}
	}
	return true
}

// fileNamer is the physicalNamer of a version's files: the name the
// files agree on, or the column is left out with the reason.
func fileNamer(sc *iceberg.Schema, files []*fileColumns) physicalNamer {
	parents := icebergParents(sc)
	return func(id int, icebergName string) (string, bool, string) {
		var names []string
		for _, fc := range files {
			if n, ok := fc.names[id]; ok && !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
		switch len(names) {
		case 0:
			names = []string{icebergName}
		case 1:
		default:
			slices.Sort(names)
			return "", false, fmt.Sprintf("its data files name it %s (renamed); it is published once the older files are rewritten (compaction)",
				strings.Join(names, " and "))
		}
		key := sibling{parents[id], names[0]}
		for _, fc := range files {
			if other, ok := fc.siblings[key]; ok && other != id {
				return "", false, fmt.Sprintf("data files still hold another column named %s (field id %d, dropped); it is published once they are rewritten (compaction)",
					names[0], other)
			}
		}
		return names[0], true, ""
	}
}

// schemaNamer returns the physicalNamer for a version: the current names
// when they are stable (no footer read), else fileNamer over the files'
// footers (read through footers).
func schemaNamer(sc *iceberg.Schema, stable bool, footers func() ([]*fileColumns, error)) (physicalNamer, error) {
	if stable {
		return func(_ int, n string) (string, bool, string) { return n, true, "" }, nil
	}
	files, err := footers()
	if err != nil {
		return nil, err
	}
	return fileNamer(sc, files), nil
}

// physicalNames parses a metaData schemaString and returns the physical
// name of every struct field by its column mapping id.
func physicalNames(schemaString string) map[int]string {
	out := map[int]string{}
	if schemaString == "" {
		return out
	}
	var root any
	if json.Unmarshal([]byte(schemaString), &root) != nil {
		return out
	}
	var walk func(v any)
	walk = func(v any) {
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		switch m["type"] {
		case "struct":
			fs, _ := m["fields"].([]any)
			for _, f := range fs {
				fm, ok := f.(map[string]any)
				if !ok {
					continue
				}
				if md, ok := fm["metadata"].(map[string]any); ok {
					id, iok := md[keyColumnMappingID].(float64)
					pn, pok := md[keyColumnMappingPhysicalName].(string)
					if iok && pok {
						out[int(id)] = pn
					}
				}
				walk(fm["type"])
			}
		case "array":
			walk(m["elementType"])
		case "map":
			walk(m["keyType"])
			walk(m["valueType"])
		}
	}
	walk(root)
	return out
}
