package protobuf_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tarnpb "github.com/tarnhq/tarn/ingest/protobuf"
	"github.com/tarnhq/tarn/internal/arrowtest"
)

// orderSchema imports a reference that imports another, and a well-known
// type that needs no reference.
const orderSchema = `syntax = "proto3";
package shop;
import "common/address.proto";
import "google/protobuf/timestamp.proto";
message Order {
  int64 id = 1;
  common.Address ship_to = 2;
  google.protobuf.Timestamp placed = 3;
}`

var orderRefs = map[string]string{
	"common/address.proto": `syntax = "proto3";
package common;
import "common/geo.proto";
message Address { string city = 1; Point at = 2; }`,
	"common/geo.proto": `syntax = "proto3";
package common;
message Point { double lat = 1; double lon = 2; }`,
}

func TestCompileReferencesAndWellKnownTypes(t *testing.T) {
	fd := compile(t, orderSchema, orderRefs)
	md, err := tarnpb.MessageByIndexes(fd, nil)
	require.NoError(t, err)
	assert.Equal(t, "shop.Order", string(md.FullName()))

	sc := table(t, md)
	assert.Equal(t, `table {
	1: id: required long
	2: ship_to: optional struct<3: city: required string, 4: at: optional struct<5: lat: required double, 6: lon: required double>>
	7: placed: optional timestamptz
}`, sc.String())

	h := newHarness(t, md, sc)
	placed := time.Date(2024, 3, 1, 13, 25, 30, 123456789, time.UTC)
	require.NoError(t, h.dec.Append(h.rb, encode(t, md,
		`{"id": "7", "shipTo": {"city": "Oslo", "at": {"lat": 59.9, "lon": 10.7}}, "placed": "2024-03-01T13:25:30.123456789Z"}`)))
	rec := h.record(t)
	assert.Equal(t, []any{int64(7)}, arrowtest.Column(rec, "id"))
	assert.Equal(t, []any{map[string]any{"city": "Oslo", "at": map[string]any{"lat": 59.9, "lon": 10.7}}}, arrowtest.Column(rec, "ship_to"))
	assert.Equal(t, []any{arrow.Timestamp(placed.UnixMicro())}, arrowtest.Column(rec, "placed"))
}

// TestCompileWellKnownRefIgnored: a registry may list a well-known type
// among the references; the built-in one is used, so its mapping does not
// depend on the text.
func TestCompileWellKnownRefIgnored(t *testing.T) {
	fd := compile(t, orderSchema, map[string]string{
		"common/address.proto":            orderRefs["common/address.proto"],
		"common/geo.proto":                orderRefs["common/geo.proto"],
		"google/protobuf/timestamp.proto": `this is not protobuf`,
	})
	assert.Equal(t, "timestamptz", table(t, fd.Messages().Get(0)).Field(2).Type.String())
}

func TestCompileTestdataFlights(t *testing.T) {
	text, err := os.ReadFile("testdata/flights.proto")
	require.NoError(t, err)
	md, err := tarnpb.MessageByIndexes(compile(t, string(text), nil), []int{0})
	require.NoError(t, err)
	assert.Equal(t, "tarn.demo.Flight", string(md.FullName()))
	// The columns of internal/demo's Avro schema, date aside (see the file).
	assert.Equal(t, `table {
	1: date: required string (Scheduled departure, local wall clock, "YYYY-MM-DD hh:mm:ss".)
	2: delay: required long (Departure delay in minutes; negative when early.)
	3: distance: required long (Distance in miles.)
	4: origin: required string (IATA code of the departure airport.)
	5: destination: required string (IATA code of the arrival airport.)
}`, table(t, md).String())
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name, schema string
		refs         map[string]string
		contains     string
	}{
		{"syntax error", `syntax = "proto3"; message M { int32 x = ; }`, nil, "syntax error"},
		{"missing import", orderSchema, map[string]string{"common/geo.proto": orderRefs["common/geo.proto"]}, "common/address.proto"},
		{"missing transitive import", orderSchema, map[string]string{"common/address.proto": orderRefs["common/address.proto"]}, "common/geo.proto"},
		{"unknown type", `syntax = "proto3"; message M { Nope x = 1; }`, nil, "Nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tarnpb.Compile(context.Background(), tt.schema, tt.refs)
			require.Error(t, err)
			assert.ErrorIs(t, err, tarnpb.ErrUnsupported)
			assert.NotErrorIs(t, err, tarnpb.ErrBadRecord)
			assert.Contains(t, err.Error(), tt.contains)
		})
	}
}

// Regression (issue 21 item 6): a compile stopped by its context was
// reported as an unsupported schema (ErrUnsupported, the cause flattened
// with %v), a verdict a pipeline caches and suspends the topic on. It
// now fails with the context's error and no verdict.
func TestCompileCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := tarnpb.Compile(ctx, orderSchema, orderRefs)
	require.ErrorIs(t, err, context.Canceled)
	assert.NotErrorIs(t, err, tarnpb.ErrUnsupported)

	_, err = tarnpb.Compile(context.Background(), orderSchema, orderRefs)
	require.NoError(t, err, "the same schema compiles with a live context")
}

func TestMessageByIndexes(t *testing.T) {
	fd := compile(t, `syntax = "proto3";
message A { int32 a = 1; }
message B {
  message C { message D { int32 d = 1; } int32 c = 1; }
  message E { int32 e = 1; }
  int32 b = 1;
}`, nil)
	tests := []struct {
		indexes []int
		want    string
	}{
		{nil, "A"},
		{[]int{0}, "A"},
		{[]int{1}, "B"},
		{[]int{1, 0}, "B.C"},
		{[]int{1, 1}, "B.E"},
		{[]int{1, 0, 0}, "B.C.D"},
	}
	for _, tt := range tests {
		md, err := tarnpb.MessageByIndexes(fd, tt.indexes)
		require.NoError(t, err, tt.indexes)
		assert.Equal(t, tt.want, string(md.FullName()), tt.indexes)
	}

	for _, bad := range [][]int{{2}, {-1}, {0, 0}, {1, 2}, {1, 0, 0, 0}} {
		_, err := tarnpb.MessageByIndexes(fd, bad)
		require.Error(t, err, bad)
		assert.ErrorIs(t, err, tarnpb.ErrMalformed, bad)
		assert.True(t, errors.Is(err, tarnpb.ErrBadRecord), bad)
		assert.NotErrorIs(t, err, tarnpb.ErrUnsupported, bad)
	}
}

// TestDecodeNestedMessageByIndexes decodes into the message a payload's
// indexes [1,0] name: the first message nested in the second top-level one.
func TestDecodeNestedMessageByIndexes(t *testing.T) {
	fd := compile(t, `syntax = "proto3";
package p;
message Envelope { string id = 1; }
message Outer {
  message Inner { string name = 1; int32 n = 2; }
  Inner inner = 1;
}`, nil)
	md, err := tarnpb.MessageByIndexes(fd, []int{1, 0})
	require.NoError(t, err)
	assert.Equal(t, "p.Outer.Inner", string(md.FullName()))
	h := newHarness(t, md, table(t, md))
	require.NoError(t, h.dec.Append(h.rb, encode(t, md, `{"name": "x", "n": 3}`)))
	rec := h.record(t)
	assert.Equal(t, []any{"x"}, arrowtest.Column(rec, "name"))
	assert.Equal(t, []any{int32(3)}, arrowtest.Column(rec, "n"))
}

// TestCompileRefNamedLikeTheRoot: the schema is compiled under a file name
// of its own; a reference that happens to use it still resolves.
func TestCompileRefNamedLikeTheRoot(t *testing.T) {
	fd := compile(t, `syntax = "proto3"; import "tarn-writer-schema.proto"; message M { Dep d = 1; }`,
		map[string]string{"tarn-writer-schema.proto": `syntax = "proto3"; message Dep { string s = 1; }`})
	assert.Equal(t, "struct<2: s: required string>", table(t, fd.Messages().Get(0)).Field(0).Type.String())
}
