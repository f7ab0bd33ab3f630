// Package connecttest holds the Kafka Connect fixtures of testdata/connect
// for the tests of ingest/connect, ingest/avro and ingest/pipeline: rows
// of every Kafka Connect and Debezium semantic type as Kafka's
// JsonConverter and Apicurio's AvroData wrote them (testdata/connect/gen),
// and what each column must hold once Tarn has read them.
package connecttest

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/internal/arrowtest"
)

// Dir is the absolute path of testdata/connect.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)

	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "connect")
}

// Lines returns the non-empty lines of testdata/connect/name.
func Lines(t testing.TB, name string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(Dir(), name))
	if err != nil {
		t.Fatalf("connecttest: %v", err)
	}
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if len(sc.Bytes()) > 0 {
			out = append(out, bytes.Clone(sc.Bytes()))
		}
	}

	return out
}

// JSON returns the values of types.json.jsonl (decimal.format BASE64) or,
// with numeric, types-numeric.json.jsonl (decimal.format NUMERIC).
func JSON(t testing.TB, numeric bool) [][]byte {
	if numeric {
		return Lines(t, "types-numeric.json.jsonl")
	}

	return Lines(t, "types.json.jsonl")
}

// AvroSchema returns the text of types.avsc.
func AvroSchema(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(Dir(), "types.avsc"))
	if err != nil {
		t.Fatalf("connecttest: %v", err)
	}

	return string(b)
}

// Avro returns the Avro binary values of types.avro.b64 (no Confluent
// header).
func Avro(t testing.TB) [][]byte {
	t.Helper()
	var out [][]byte
	for _, l := range Lines(t, "types.avro.b64") {
		b, err := base64.StdEncoding.DecodeString(string(l))
		if err != nil {
			t.Fatalf("connecttest: types.avro.b64: %v", err)
		}
		out = append(out, b)
	}

	return out
}

// Column is one column of the fixture table.
type Column struct {
	Name string
	// Type is the Iceberg type, as TypeString writes it.
	Type     string
	Required bool
	// Rows are the values of the two fixture rows as arrowtest.Value
	// reads them from Arrow.
	Rows [2]any
}

// wkb are the geometries' Well-Known Binary points: POINT(1.5 -2.25) and
// POINT(0 0).
var wkb = [2][]byte{
	{1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f, 0, 0, 0, 0, 0, 0, 2, 0xc0},
	{1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
}

// Columns are the fixture table's columns, in order, with the values
// Tarn must store: each worked out by hand from the values Fixtures.java
// gives Debezium's and Kafka Connect's conversions (2023-11-14 is day
// 19675; 22:13:20 is second 80000 of the day; 1700000000 s since the
// epoch is 2023-11-14T22:13:20Z).
var Columns = []Column{
	{"id", "int", true, [2]any{int32(1), int32(2)}},
	{"connect_date", "date", true, [2]any{arrow.Date32(19675), arrow.Date32(-1)}},
	{"connect_time", "time", true, [2]any{arrow.Time64(80_000_123_000), arrow.Time64(0)}},
	// An instant: timestamptz.
	{"connect_timestamp", "timestamptz", true, [2]any{arrow.Timestamp(1_700_000_000_123_000), arrow.Timestamp(-1000)}},
	// Base64 "AeJA" is 123456 unscaled.
	{"connect_decimal", "decimal(10, 2)", true, [2]any{"1234.56", "-0.01"}},
	// No connect.decimal.precision: 38.
	{"connect_decimal_unbounded", "decimal(38, 3)", true, [2]any{"98765432109876543210.123", "-0.001"}},
	{"dbz_date", "date", true, [2]any{arrow.Date32(19675), arrow.Date32(-1)}},
	{"dbz_time", "time", true, [2]any{arrow.Time64(80_000_123_000), arrow.Time64(0)}},
	{"dbz_micro_time", "time", true, [2]any{arrow.Time64(80_000_123_456), arrow.Time64(86_399_999_999)}},
	// Nanoseconds truncated: ...456789 ns is ...456 µs, 1 ns is 0.
	{"dbz_nano_time", "time", true, [2]any{arrow.Time64(80_000_123_456), arrow.Time64(0)}},
	// Wall clocks without zone: timestamp. 1969-12-31T23:59:59.999999999
	// is -1 ms, -1 µs and -1 ns, the last truncated toward the past.
	{"dbz_timestamp", "timestamp", true, [2]any{arrow.Timestamp(1_700_000_000_123_000), arrow.Timestamp(-1000)}},
	{"dbz_micro_timestamp", "timestamp", true, [2]any{arrow.Timestamp(1_700_000_000_123_456), arrow.Timestamp(-1)}},
	{"dbz_nano_timestamp", "timestamp", true, [2]any{arrow.Timestamp(1_700_000_000_123_456), arrow.Timestamp(-1)}},
	// 22:13:20.123456+01:00 is 21:13:20.123456Z, one hour before
	// 1700000000.123456; 1999-12-31T23:59:59Z is 946684799.
	{"dbz_zoned_timestamp", "timestamptz", true, [2]any{arrow.Timestamp(1_699_996_400_123_456), arrow.Timestamp(946_684_799_000_000)}},
	// In UTC: 21:13:20.123456, and 00:30+05:30 is 19:00 the day before.
	{"dbz_zoned_time", "time", true, [2]any{arrow.Time64(76_400_123_456), arrow.Time64(68_400_000_000)}},
	{"dbz_variable_scale_decimal", "string", true, [2]any{"1234.567", "-0.005"}},
	{"dbz_uuid", "uuid", true, [2]any{uuid.MustParse("f81d4fae-7dec-11d0-a765-00a0c91e6bf6"), uuid.UUID{}}},
	{"dbz_json", "string", true, [2]any{`{"a": [1, 2.50], "b": null}`, "[]"}},
	{"dbz_enum", "string", true, [2]any{"medium", "large"}},
	{"dbz_enum_set", "string", true, [2]any{"a,c", ""}},
	// java.util.BitSet.toByteArray, little-endian: bits 0, 2 and 9.
	{"dbz_bits", "binary", true, [2]any{[]byte{0x05, 0x02}, []byte{}}},
	{"dbz_year", "int", true, [2]any{int32(2023), int32(1901)}},
	{"dbz_interval", "string", true, [2]any{"P1Y2M3DT4H5M6.78S", "P0Y0M0DT0H0M-1.5S"}},
	// 1 day 2 h 3 min 4.5 s in microseconds.
	{"dbz_micro_duration", "long", true, [2]any{int64(93_784_500_000), int64(-1)}},
	{"dbz_xml", "string", true, [2]any{`<a b="1">x</a>`, ""}},
	{"dbz_point", "struct<x: double, y: double, wkb: optional binary, srid: optional int>", true, [2]any{
		map[string]any{"x": 1.5, "y": -2.25, "wkb": wkb[0], "srid": nil},
		map[string]any{"x": 0.0, "y": 0.0, "wkb": wkb[1], "srid": nil}}},
	{"dbz_geometry", "struct<wkb: binary, srid: optional int>", false, [2]any{
		map[string]any{"wkb": wkb[0], "srid": int32(4326)},
		map[string]any{"wkb": wkb[1], "srid": nil}}},
	{"opt_micro_timestamp", "timestamp", false, [2]any{arrow.Timestamp(1_700_000_000_123_456), nil}},
	// 1E+3: scale -3.
	{"opt_variable_scale_decimal", "string", false, [2]any{"1000", nil}},
	{"dates", "list<date>", true, [2]any{[]any{arrow.Date32(1), arrow.Date32(19675)}, []any{}}},
	{"stamps", "map<string, timestamp>", true, [2]any{
		map[string]any{"first": arrow.Timestamp(1_700_000_000_123_456), "second": arrow.Timestamp(946_684_800_000_000)},
		map[string]any{}}},
}

// TypeString writes t without field IDs (which depend on a field's place
// in the whole schema): primitives as Iceberg names them, "struct<x:
// double, srid: optional int>", "list<date>", "map<string, optional
// long>".
func TypeString(t iceberg.Type) string {
	opt := func(required bool) string {
		if required {
			return ""
		}

		return "optional "
	}
	switch t := t.(type) {
	case *iceberg.StructType:
		parts := make([]string, len(t.FieldList))
		for i, f := range t.FieldList {
			parts[i] = f.Name + ": " + opt(f.Required) + TypeString(f.Type)
		}

		return "struct<" + strings.Join(parts, ", ") + ">"
	case *iceberg.ListType:
		return "list<" + opt(t.ElementRequired) + TypeString(t.Element) + ">"
	case *iceberg.MapType:
		return "map<" + TypeString(t.KeyType) + ", " + opt(t.ValueRequired) + TypeString(t.ValueType) + ">"
	}

	return t.String()
}

// Check compares a schema that ToIceberg mapped from the fixture schema,
// and the record its decoder made of the two fixture rows, with Columns:
// each column's name, type, requiredness and values.
func Check(t *testing.T, sc *iceberg.Schema, rec arrow.RecordBatch) {
	t.Helper()
	require.Len(t, sc.Fields(), len(Columns))
	for i, c := range Columns {
		t.Run(c.Name, func(t *testing.T) {
			f := sc.Fields()[i]
			assert.Equal(t, c.Name, f.Name)
			assert.Equal(t, c.Type, TypeString(f.Type))
			assert.Equal(t, c.Required, f.Required)
			assert.Equal(t, c.Rows[:], arrowtest.Column(rec, c.Name))
		})
	}
}
