package protobuf_test

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	tarnpb "github.com/tarnhq/tarn/ingest/protobuf"
)

// compile compiles schema text with refs, failing the test on error.
func compile(t testing.TB, schema string, refs map[string]string) protoreflect.FileDescriptor {
	t.Helper()
	fd, err := tarnpb.Compile(context.Background(), schema, refs)
	require.NoError(t, err)

	return fd
}

// message compiles schema text and returns the message at indexes (the
// first top-level message without any).
func message(t testing.TB, schema string, indexes ...int) protoreflect.MessageDescriptor {
	t.Helper()
	md, err := tarnpb.MessageByIndexes(compile(t, schema, nil), indexes)
	require.NoError(t, err)

	return md
}

// proto3 wraps field declarations into a proto3 file with the well-known
// imports, one message M, and helpers: message In {int32 x; string y} and
// enum Color {RED, GREEN, BLUE}.
func proto3(fields string) string {
	return `syntax = "proto3";
package t;
import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/wrappers.proto";
import "google/protobuf/struct.proto";
import "google/protobuf/any.proto";
import "google/protobuf/empty.proto";
message M {
` + fields + `
}
message In { int32 x = 1; string y = 2; }
enum Color { RED = 0; GREEN = 1; BLUE = 2; }
`
}

// table maps a message to Iceberg (as the table's schema).
func table(t testing.TB, md protoreflect.MessageDescriptor) *iceberg.Schema {
	t.Helper()
	sc, err := tarnpb.ToIceberg(md)
	require.NoError(t, err)

	return sc
}

// encode builds a message of type md from its protojson text and
// serializes it.
func encode(t testing.TB, md protoreflect.MessageDescriptor, jsonText string) []byte {
	t.Helper()
	m := dynamicpb.NewMessage(md)
	require.NoError(t, protojson.Unmarshal([]byte(jsonText), m), jsonText)
	b, err := proto.Marshal(m)
	require.NoError(t, err)

	return b
}

// harness is a Decoder and a RecordBuilder on a checked allocator; the
// test fails if any Arrow memory leaks.
type harness struct {
	dec *tarnpb.Decoder
	rb  *array.RecordBuilder
}

func newHarness(t testing.TB, md protoreflect.MessageDescriptor, target *iceberg.Schema, opts ...tarnpb.Option) *harness {
	t.Helper()
	dec, err := tarnpb.NewDecoder(md, target, opts...)
	require.NoError(t, err)
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	rb := array.NewRecordBuilder(mem, dec.ArrowSchema())
	t.Cleanup(func() {
		rb.Release()
		mem.AssertSize(t, 0)
	})

	return &harness{dec: dec, rb: rb}
}

// record finishes the builder's rows as a record, validated in full.
func (h *harness) record(t testing.TB) arrow.RecordBatch {
	t.Helper()
	rec := h.rb.NewRecordBatch()
	t.Cleanup(rec.Release)
	require.NoError(t, array.ValidateRecordFull(rec))

	return rec
}

// lengths is the length of every top-level builder.
func (h *harness) lengths() []int {
	out := make([]int, len(h.rb.Fields()))
	for i, f := range h.rb.Fields() {
		out[i] = f.Len()
	}

	return out
}

// value turns row i of an Arrow array into a Go value for comparison:
// primitives as their Arrow Go type, decimals as their string at the
// column's scale, structs as map[string]any, maps as map[any]any, lists
// as []any, nulls as nil.
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
	case *array.Decimal128:
		return a.ValueStr(i)
	case *array.Timestamp:
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
		out := map[any]any{}
		for j := start; j < end; j++ {
			out[value(a.Keys(), int(j))] = value(a.Items(), int(j))
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
