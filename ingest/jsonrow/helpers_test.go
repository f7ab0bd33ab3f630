package jsonrow_test

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/ingest/jsonrow"
)

// harness is a Decoder and a RecordBuilder on a checked allocator; the
// test fails if any Arrow memory leaks.
type harness struct {
	dec *jsonrow.Decoder
	rb  *array.RecordBuilder
}

func newHarness(t testing.TB, target *iceberg.Schema, opts ...jsonrow.Option) *harness {
	t.Helper()
	dec, err := jsonrow.NewDecoder(target, opts...)
	require.NoError(t, err)
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	rb := array.NewRecordBuilder(mem, dec.ArrowSchema())
	t.Cleanup(func() {
		rb.Release()
		mem.AssertSize(t, 0)
	})

	return &harness{dec: dec, rb: rb}
}

// appendJSON appends one payload given as text.
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

// schema parses an Iceberg schema in the spec's JSON form.
func schema(t testing.TB, text string) *iceberg.Schema {
	t.Helper()
	sc, err := jsonrow.ParseSchema([]byte(text))
	require.NoError(t, err)

	return sc
}

// oneColumn is a schema with one column f of the given Iceberg type (its
// JSON form).
func oneColumn(t testing.TB, typ string, required bool) *iceberg.Schema {
	req := "false"
	if required {
		req = "true"
	}

	return schema(t, `{"type":"struct","fields":[{"id":1,"name":"f","required":`+req+`,"type":`+typ+`}]}`)
}

// value turns row i of an Arrow array into a Go value for comparison:
// primitives as their Arrow Go type, decimals as their string with all the
// column's scale digits, structs and maps as map[string]any, lists as []any,
// nulls as nil.
func value(arr arrow.Array, i int) any {
	if arr.IsNull(i) {
		return nil
	}
	switch a := arr.(type) {
	case *array.Boolean:
		return a.Value(i)
	case *array.Int32:
		return a.Value(i)
	case *array.Int64:
		return a.Value(i)
	case *array.Float32:
		return a.Value(i)
	case *array.Float64:
		return a.Value(i)
	case *array.String:
		return a.Value(i)
	case *array.Binary:
		return a.Value(i)
	case *array.FixedSizeBinary:
		return a.Value(i)
	case *array.Decimal128:
		return a.Value(i).ToString(a.DataType().(*arrow.Decimal128Type).Scale)
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
