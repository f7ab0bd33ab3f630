// Package arrowtest holds test helpers shared by the tests of the ingest
// formats (ingest/avro, ingest/jsonrow, ingest/jsonschema,
// ingest/protobuf): a RecordBuilder that fails the test when Arrow memory
// leaks, and a reading of Arrow values back as plain Go values to compare
// with testify.
package arrowtest

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

// NewRecordBuilder returns a RecordBuilder for sc on a checked allocator.
// At the end of the test it is released, and the test fails if any Arrow
// memory allocated through it is still held.
func NewRecordBuilder(t testing.TB, sc *arrow.Schema) *array.RecordBuilder {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	rb := array.NewRecordBuilder(mem, sc)
	t.Cleanup(func() {
		rb.Release()
		mem.AssertSize(t, 0)
	})

	return rb
}

// Record finishes rb's rows as a record, validated in full (the test fails
// otherwise) and released at the end of the test.
func Record(t testing.TB, rb *array.RecordBuilder) arrow.RecordBatch {
	t.Helper()
	rec := rb.NewRecordBatch()
	t.Cleanup(rec.Release)
	require.NoError(t, array.ValidateRecordFull(rec))

	return rec
}

// Lengths is the length of every top-level builder of rb: after a failed
// Append they must not have moved.
func Lengths(rb *array.RecordBuilder) []int {
	out := make([]int, len(rb.Fields()))
	for i, f := range rb.Fields() {
		out[i] = f.Len()
	}

	return out
}

// Column returns the named top-level column's values, one per row, as
// Value reads them. It panics if rec has no such column.
func Column(rec arrow.RecordBatch, name string) []any {
	idx := rec.Schema().FieldIndices(name)
	if len(idx) != 1 {
		panic("arrowtest: no column " + name)
	}
	col := rec.Column(idx[0])
	out := make([]any, col.Len())
	for i := range out {
		out[i] = Value(col, i)
	}

	return out
}

// Value turns row i of an Arrow array into a Go value for comparison:
//
//   - null as nil;
//   - primitives as their Arrow Go type (int32, arrow.Timestamp in the
//     column's unit, []byte, uuid.UUID for the uuid extension, ...);
//   - decimals as their string with all the column's scale digits
//     ("12.30" in a decimal(9,2));
//   - structs as map[string]any by field name;
//   - maps with string keys as map[string]any, others as map[any]any;
//   - lists as []any.
//
// It panics on an Arrow type no format produces.
func Value(arr arrow.Array, i int) any {
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
			out[st.Field(f).Name] = Value(a.Field(f), i)
		}

		return out
	case *array.Map:
		start, end := a.ValueOffsets(i)
		if _, ok := a.Keys().(*array.String); ok {
			out := map[string]any{}
			for j := start; j < end; j++ {
				out[Value(a.Keys(), int(j)).(string)] = Value(a.Items(), int(j))
			}

			return out
		}
		out := map[any]any{}
		for j := start; j < end; j++ {
			out[Value(a.Keys(), int(j))] = Value(a.Items(), int(j))
		}

		return out
	case *array.List:
		start, end := a.ValueOffsets(i)
		out := []any{}
		for j := start; j < end; j++ {
			out = append(out, Value(a.ListValues(), int(j)))
		}

		return out
	}
	panic("arrowtest: unhandled arrow type " + arr.DataType().String())
}
