package delta

import (
	"encoding/json"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/stretchr/testify/require"
)

// allTypes has every Iceberg type Delta can express, nested structs,
// lists and maps, and the types it cannot.
var allTypes = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "b", Type: iceberg.PrimitiveTypes.Bool},
	iceberg.NestedField{ID: 2, Name: "i", Type: iceberg.PrimitiveTypes.Int32, Required: true},
	iceberg.NestedField{ID: 3, Name: "l", Type: iceberg.PrimitiveTypes.Int64},
	iceberg.NestedField{ID: 4, Name: "f", Type: iceberg.PrimitiveTypes.Float32},
	iceberg.NestedField{ID: 5, Name: "d", Type: iceberg.PrimitiveTypes.Float64},
	iceberg.NestedField{ID: 6, Name: "dec", Type: iceberg.DecimalTypeOf(20, 2)},
	iceberg.NestedField{ID: 7, Name: "day", Type: iceberg.PrimitiveTypes.Date},
	iceberg.NestedField{ID: 8, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp},
	iceberg.NestedField{ID: 9, Name: "tstz", Type: iceberg.PrimitiveTypes.TimestampTz},
	iceberg.NestedField{ID: 10, Name: "s", Type: iceberg.PrimitiveTypes.String},
	iceberg.NestedField{ID: 11, Name: "u", Type: iceberg.PrimitiveTypes.UUID},
	iceberg.NestedField{ID: 12, Name: "fx", Type: iceberg.FixedTypeOf(3)},
	iceberg.NestedField{ID: 13, Name: "bin", Type: iceberg.PrimitiveTypes.Binary},
	iceberg.NestedField{ID: 14, Name: "t", Type: iceberg.PrimitiveTypes.Time},
	iceberg.NestedField{ID: 15, Name: "st", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
		{ID: 16, Name: "x", Type: iceberg.PrimitiveTypes.Int32, Required: true},
		{ID: 17, Name: "only_time", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 18, Name: "t", Type: iceberg.PrimitiveTypes.Time}}}},
	}}},
	iceberg.NestedField{ID: 19, Name: "tags", Type: &iceberg.ListType{ElementID: 20, ElementRequired: false, Element: &iceberg.StructType{
		FieldList: []iceberg.NestedField{{ID: 21, Name: "k", Type: iceberg.PrimitiveTypes.String}}}}},
	iceberg.NestedField{ID: 22, Name: "m", Type: &iceberg.MapType{KeyID: 23, KeyType: iceberg.PrimitiveTypes.String,
		ValueID: 24, ValueType: iceberg.PrimitiveTypes.Int64, ValueRequired: true}},
	iceberg.NestedField{ID: 25, Name: "times", Type: &iceberg.ListType{ElementID: 26, Element: iceberg.PrimitiveTypes.Time}},
)

func sameName(_ int, n string) (string, bool, string) { return n, true, "" }

func TestMapSchemaTypes(t *testing.T) {
	m := mapSchema(allTypes, sameName)
	js, err := m.schemaString()
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(js), &got))
	types := map[string]any{}
	for _, f := range got["fields"].([]any) {
		fm := f.(map[string]any)
		types[fm["name"].(string)] = fm["type"]
		md := fm["metadata"].(map[string]any)
		require.Equal(t, fm["name"], md[keyColumnMappingPhysicalName])
		require.NotNil(t, md[keyColumnMappingID])
	}
	require.Equal(t, "boolean", types["b"])
	require.Equal(t, "integer", types["i"])
	require.Equal(t, "long", types["l"])
	require.Equal(t, "float", types["f"])
	require.Equal(t, "double", types["d"])
	require.Equal(t, "decimal(20,2)", types["dec"])
	require.Equal(t, "date", types["day"])
	require.Equal(t, "timestamp_ntz", types["ts"])
	require.Equal(t, "timestamp", types["tstz"])
	require.Equal(t, "string", types["s"])
	require.Equal(t, "binary", types["u"])
	require.Equal(t, "binary", types["fx"])
	require.Equal(t, "binary", types["bin"])
	require.NotContains(t, types, "t", "time has no Delta type")
	require.NotContains(t, types, "times", "a list of times has no Delta type")
	st := types["st"].(map[string]any)
	require.Len(t, st["fields"], 1, "the struct keeps x; only_time has no field left")
	tags := types["tags"].(map[string]any)
	require.Equal(t, "array", tags["type"])
	require.Equal(t, true, tags["containsNull"])
	mp := types["m"].(map[string]any)
	require.Equal(t, "map", mp["type"])
	require.Equal(t, false, mp["valueContainsNull"])
	require.True(t, m.ntz)
	var omitted []string
	for _, o := range m.omitted {
		omitted = append(omitted, o.Column)
	}
	require.ElementsMatch(t, []string{"t", "st.only_time.t", "st.only_time", "times.element", "times"}, omitted)
	// Stats leaves: primitives outside lists and maps, by physical path.
	var leaves [][]string
	for _, l := range m.leaves {
		leaves = append(leaves, l.physical)
	}
	require.Contains(t, leaves, []string{"st", "x"})
	require.NotContains(t, leaves, []string{"tags", "element", "k"})
}

// TestProtocolFor pins the protocol Tarn writes: reader 3 / writer 7
// with Tarn's writer feature (which makes Delta writers refuse VACUUM,
// TestE2EDeltaVacuum) and invariants (without which Spark refuses a
// writer-7 table with non-nullable columns); a protocol never goes down.
func TestProtocolFor(t *testing.T) {
	p := protocolFor(false, nil)
	require.Equal(t, Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"columnMapping"},
		WriterFeatures: []string{"columnMapping", "invariants", "tarnIcebergManaged"}}, p)
	ntz := protocolFor(true, &p)
	require.Equal(t, Protocol{MinReaderVersion: 3, MinWriterVersion: 7,
		ReaderFeatures: []string{"columnMapping", "timestampNtz"},
		WriterFeatures: []string{"columnMapping", "timestampNtz", "invariants", "tarnIcebergManaged"}}, ntz)
	require.Equal(t, ntz, protocolFor(true, &ntz), "stable: the next version writes no protocol action")
	// A protocol never goes down, even when the timestamp column goes.
	require.Equal(t, ntz, protocolFor(false, &ntz))
	// A log an earlier release wrote at reader 2 / writer 5 moves up.
	require.Equal(t, p, protocolFor(false, &Protocol{MinReaderVersion: 2, MinWriterVersion: 5}))
}

func TestFileNamerRenameDropReadd(t *testing.T) {
	sc := iceberg.NewSchema(2,
		iceberg.NestedField{ID: 1, Name: "a2", Type: iceberg.PrimitiveTypes.Int64}, // renamed from a
		iceberg.NestedField{ID: 3, Name: "b", Type: iceberg.PrimitiveTypes.String}, // re-added; b was id 2
		iceberg.NestedField{ID: 4, Name: "c", Type: iceberg.PrimitiveTypes.String},
	)
	old := &fileColumns{names: map[int]string{1: "a", 2: "b", 4: "c"},
		siblings: map[sibling]int{{rootParent, "a"}: 1, {rootParent, "b"}: 2, {rootParent, "c"}: 4}}
	newer := &fileColumns{names: map[int]string{1: "a2", 3: "b", 4: "c"},
		siblings: map[sibling]int{{rootParent, "a2"}: 1, {rootParent, "b"}: 3, {rootParent, "c"}: 4}}

	name := fileNamer(sc, []*fileColumns{old, newer})
	_, ok, why := name(1, "a2")
	require.False(t, ok, "files disagree on id 1's name")
	require.Contains(t, why, "a and a2")
	_, ok, why = name(3, "b")
	require.False(t, ok, "an older file holds another column named b")
	require.Contains(t, why, "field id 2")
	n, ok, _ := name(4, "c")
	require.True(t, ok)
	require.Equal(t, "c", n)

	// Once the old file is rewritten, every column is published.
	name = fileNamer(sc, []*fileColumns{newer})
	n, ok, _ = name(1, "a2")
	require.True(t, ok)
	require.Equal(t, "a2", n)
	n, ok, _ = name(3, "b")
	require.True(t, ok)
	require.Equal(t, "b", n)
}

func TestPhysicalNamesRoundTrip(t *testing.T) {
	m := mapSchema(allTypes, func(id int, n string) (string, bool, string) { return "p" + n, true, "" })
	js, err := m.schemaString()
	require.NoError(t, err)
	got := physicalNames(js)
	require.Equal(t, "pst", got[15])
	require.Equal(t, "px", got[16])
	require.Equal(t, "pk", got[21], "fields of structs in lists too")
}
