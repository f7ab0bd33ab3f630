package pipeline

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	hamba "github.com/hamba/avro/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/tarnhq/tarn/ingest/avro"
)

const (
	airportSchema = `{"type": "record", "name": "Airport", "namespace": "tarn.test", "fields": [{"name": "code", "type": "string"}]}`
	routeSchema   = `{"type": "record", "name": "Route", "namespace": "tarn.test", "fields": [
		{"name": "from", "type": "tarn.test.Airport"}, {"name": "km", "type": "long"}]}`
)

// registry returns an srfake registry holding Airport (subject airport)
// and Route (subject routes-value, referencing Airport), the client, and
// Route's id and parsed schema.
func registry(t testing.TB) (*srfake.Registry, *sr.Client, int, hamba.Schema) {
	t.Helper()
	ctx := context.Background()
	reg := srfake.New()
	t.Cleanup(reg.Close)
	rc, err := sr.NewClient(sr.URLs(reg.URL()))
	require.NoError(t, err)
	_, err = rc.CreateSchema(ctx, "airport", sr.Schema{Schema: airportSchema})
	require.NoError(t, err)
	route, err := rc.CreateSchema(ctx, "routes-value", sr.Schema{Schema: routeSchema,
		References: []sr.SchemaReference{{Name: "tarn.test.Airport", Subject: "airport", Version: 1}}})
	require.NoError(t, err)
	cache := &hamba.SchemaCache{}
	_, err = hamba.ParseWithCache(airportSchema, "", cache)
	require.NoError(t, err)
	sc, err := hamba.ParseWithCache(routeSchema, "", cache)
	require.NoError(t, err)
	return reg, rc, route.ID, sc
}

// TestSchemasResolveReferences: a schema id whose Avro schema references
// another subject's named type resolves to a decoder into the table's
// schema, and the verdict is cached (one registry lookup per id).
func TestSchemasResolveReferences(t *testing.T) {
	reg, rc, id, writer := registry(t)
	var lookups atomic.Int32
	reg.Intercept(func(_ http.ResponseWriter, r *http.Request) bool {
		if strings.HasPrefix(r.URL.Path, "/schemas/ids/") {
			lookups.Add(1)
		}
		return false
	})
	target, err := TableSchema(userColumns(t, writer))
	require.NoError(t, err)
	s := newSchemas(rc, FormatAvro, target)

	r, err := getID(s, context.Background(), id)
	require.NoError(t, err)
	require.NotNil(t, r.dec, "%v", r.err)
	r2, err := getID(s, context.Background(), id)
	require.NoError(t, err)
	assert.Same(t, r, r2)
	assert.Equal(t, int32(1), lookups.Load())

	asc, err := table.SchemaToArrowSchema(target, nil, true, false)
	require.NoError(t, err)
	b := array.NewRecordBuilder(memory.DefaultAllocator, asc)
	defer b.Release()
	payload, err := hamba.Marshal(writer, map[string]any{"from": map[string]any{"code": "SFO"}, "km": int64(543)})
	require.NoError(t, err)
	require.NoError(t, r.dec.Append(b, payload))
	assert.Equal(t, 1, b.Field(0).Len())
}

// TestSchemasVerdicts: an unknown id is a record-level verdict; a
// non-Avro schema and a writer that does not fit are schema-level; a registry
// that keeps failing is a transient error after the retries, not a
// verdict, and is not cached.
func TestSchemasVerdicts(t *testing.T) {
	ctx := context.Background()
	reg, rc, _, writer := registry(t)
	target, err := TableSchema(userColumns(t, writer))
	require.NoError(t, err)

	proto, err := rc.CreateSchema(ctx, "p-value", sr.Schema{Type: sr.TypeProtobuf, Schema: `syntax = "proto3"; message M { int64 a = 1; }`})
	require.NoError(t, err)
	plain, err := rc.CreateSchema(ctx, "d-value", sr.Schema{Schema: `{"type": "record", "name": "D", "fields": [{"name": "a", "type": "long"}]}`})
	require.NoError(t, err)

	s := newSchemas(rc, FormatAvro, target)
	r, err := getID(s, ctx, 4242)
	require.NoError(t, err)
	assert.Equal(t, KindUnknownSchema, r.kind)

	r, err = getID(s, ctx, proto.ID)
	require.NoError(t, err)
	assert.Equal(t, KindUnsupportedSchema, r.kind)
	assert.Contains(t, r.err.Error(), "the schema is PROTOBUF, the topic's format is avro")

	// A writer without the table's required columns.
	r, err = getID(s, ctx, plain.ID)
	require.NoError(t, err)
	assert.Equal(t, KindIncompatibleSchema, r.kind)
	assert.Contains(t, r.err.Error(), "field a:")

	var fail atomic.Bool
	fail.Store(true)
	reg.Intercept(func(w http.ResponseWriter, _ *http.Request) bool {
		if fail.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return true
		}
		return false
	})
	fresh := newSchemas(rc, FormatAvro, target)
	_, err = getID(fresh, ctx, 1)
	var te *transientError
	require.True(t, errors.As(err, &te), "%v", err)
	fail.Store(false)
	r, err = getID(fresh, ctx, 1)
	require.NoError(t, err, "a transient failure is not cached")
	assert.Equal(t, KindIncompatibleSchema, r.kind, "Airport alone lacks the table's columns")
}

// getID resolves a value that has the Confluent header of schema id and
// no payload.
func getID(s *schemas, ctx context.Context, id int) (*resolved, error) {
	value, err := confluentHeader.AppendEncode(nil, id, nil)
	if err != nil {
		return nil, err
	}
	r, _, err := s.forValue(ctx, value)
	return r, err
}

// userColumns maps an Avro writer schema to its Iceberg user columns.
func userColumns(t testing.TB, writer hamba.Schema) *iceberg.Schema {
	t.Helper()
	sc, err := avro.ToIceberg(writer)
	require.NoError(t, err)
	return sc
}

// BenchmarkForValue measures the per-record schema lookup of registry
// formats: values alternating between two schema ids ("alternating", the
// map each time) and all of one id ("same", the usual topic: the last
// verdict is reused).
//
//	go test -run '^$' -bench ForValue ./ingest/pipeline/
func BenchmarkForValue(b *testing.B) {
	_, rc, id, writer := registry(b)
	target, err := TableSchema(userColumns(b, writer))
	require.NoError(b, err)
	s := newSchemas(rc, FormatAvro, target)
	ctx := context.Background()
	one, err := confluentHeader.AppendEncode(nil, id, nil)
	require.NoError(b, err)
	other, err := confluentHeader.AppendEncode(nil, id+1000, nil)
	require.NoError(b, err)
	s.byKey[schemaKey{id: id + 1000}] = &resolved{id: id + 1000, kind: KindUnknownSchema}
	for _, alternate := range []bool{false, true} {
		name := "same"
		if alternate {
			name = "alternating"
		}
		b.Run(name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				v := one
				if alternate && i%2 == 1 {
					v = other
				}
				i++
				if _, _, err := s.forValue(ctx, v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Regression (issue 21 item 6): a Protobuf schema compiled under
// context.Background() whatever the caller's context, so a pipeline
// stopping waited for it. compileSchema passes the caller's context to
// protocompile: a cancelled one fails the compile with its error, which
// resolve returns instead of caching a verdict.
func TestCompileProtobufHonoursContext(t *testing.T) {
	sch := sr.Schema{Type: sr.TypeProtobuf, Schema: `syntax = "proto3"; message M { int64 a = 1; }`}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := compileSchema(ctx, nil, FormatProtobuf, sch, nil)
	require.ErrorIs(t, err, context.Canceled)

	c, err := compileSchema(context.Background(), nil, FormatProtobuf, sch, nil)
	require.NoError(t, err)
	f, ok := c.writer.FindFieldByName("a")
	require.True(t, ok, "writer %s", c.writer)
	require.Equal(t, iceberg.PrimitiveTypes.Int64, f.Type)
}
