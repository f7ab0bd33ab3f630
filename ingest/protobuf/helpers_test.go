package protobuf_test

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/tarnhq/tarn/ingest/codec"
	tarnpb "github.com/tarnhq/tarn/ingest/protobuf"
	"github.com/tarnhq/tarn/internal/arrowtest"
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

func newHarness(t testing.TB, md protoreflect.MessageDescriptor, target *iceberg.Schema, opts ...codec.Option) *harness {
	t.Helper()
	dec, err := tarnpb.NewDecoder(md, target, opts...)
	require.NoError(t, err)

	return &harness{dec: dec, rb: arrowtest.NewRecordBuilder(t, dec.ArrowSchema())}
}

// record finishes the builder's rows as a record, validated in full.
func (h *harness) record(t testing.TB) arrow.RecordBatch {
	t.Helper()

	return arrowtest.Record(t, h.rb)
}
