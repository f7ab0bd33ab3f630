package jsonschema_test

import (
	"os"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/ingest/jsonschema"
)

// harness is a Decoder and a RecordBuilder on a checked allocator; the
// test fails if any Arrow memory leaks.
type harness struct {
	dec *jsonschema.Decoder
	rb  *array.RecordBuilder
}

func newHarness(t testing.TB, s *jsonschema.Schema, target *iceberg.Schema, opts ...jsonschema.Option) *harness {
	t.Helper()
	dec, err := jsonschema.NewDecoder(s, target, opts...)
	require.NoError(t, err)
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	rb := array.NewRecordBuilder(mem, dec.ArrowSchema())
	t.Cleanup(func() {
		rb.Release()
		mem.AssertSize(t, 0)
	})

	return &harness{dec: dec, rb: rb}
}

func (h *harness) appendJSON(payload string) error { return h.dec.Append(h.rb, []byte(payload)) }

// record finishes the builder's rows as a record, validated in full.
func (h *harness) record(t testing.TB) arrow.RecordBatch {
	t.Helper()
	rec := h.rb.NewRecordBatch()
	t.Cleanup(rec.Release)
	require.NoError(t, array.ValidateRecordFull(rec))

	return rec
}

// lens returns the length of every top-level builder.
func (h *harness) lens() []int {
	out := make([]int, h.rb.Schema().NumFields())
	for i := range out {
		out[i] = h.rb.Field(i).Len()
	}

	return out
}

func compile(t testing.TB, schema string, refs map[string]string) *jsonschema.Schema {
	t.Helper()
	s, err := jsonschema.Compile(schema, refs)
	require.NoError(t, err)

	return s
}

// table is the Iceberg schema of a JSON Schema, as a table created from it
// has.
func table(t testing.TB, s *jsonschema.Schema) *iceberg.Schema {
	t.Helper()
	sc, err := jsonschema.ToIceberg(s)
	require.NoError(t, err)

	return sc
}

// property wraps one property schema as the required property f of an
// object schema.
func property(schema string) string {
	return `{"type":"object","properties":{"f":` + schema + `},"required":["f"]}`
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)

	return string(b)
}

// value turns row i of an Arrow array into a Go value for comparison:
// primitives as their Arrow Go type, structs and maps as map[string]any,
// lists as []any, nulls as nil.
func value(arr arrow.Array, i int) any {
	if arr.IsNull(i) {
		return nil
	}
	switch a := arr.(type) {
	case *array.Boolean:
		return a.Value(i)
	case *array.Int64:
		return a.Value(i)
	case *array.Float64:
		return a.Value(i)
	case *array.String:
		return a.Value(i)
	case *array.Date32:
		return a.Value(i)
	case *array.Time64:
		return a.Value(i)
	case *array.Timestamp:
		return a.Value(i)
	case *extensions.UUIDArray:
		return a.Value(i)
	case *array.Struct:
		out := map[string]any{}
		st := a.DataType().(*arrow.StructType)
		for f := range st.NumFields() {
			out[st.Field(f).Name] = value(a.Field(f), i)
		}

		return out
	case *array.Map:
		start, end := a.ValueOffsets(i)
		out := map[string]any{}
		for j := start; j < end; j++ {
			out[value(a.Keys(), int(j)).(string)] = value(a.Items(), int(j))
		}

		return out
	case *array.List:
		start, end := a.ValueOffsets(i)
		out := []any{}
		for j := start; j < end; j++ {
			out = append(out, value(a.ListValues(), int(j)))
		}

		return out
	}
	panic("value: unhandled arrow type " + arr.DataType().String())
}

// column returns the named top-level column's values, one per row.
func column(rec arrow.RecordBatch, name string) []any {
	idx := rec.Schema().FieldIndices(name)
	if len(idx) != 1 {
		panic("no column " + name)
	}
	col := rec.Column(idx[0])
	out := make([]any, col.Len())
	for i := range out {
		out[i] = value(col, i)
	}

	return out
}
