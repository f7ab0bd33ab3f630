package jsonschema_test

import (
	"os"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/ingest/codec"
	"github.com/tarnhq/tarn/ingest/jsonschema"
	"github.com/tarnhq/tarn/internal/arrowtest"
)

// harness is a Decoder and a RecordBuilder on a checked allocator; the
// test fails if any Arrow memory leaks.
type harness struct {
	dec *jsonschema.Decoder
	rb  *array.RecordBuilder
}

func newHarness(t testing.TB, s *jsonschema.Schema, target *iceberg.Schema, opts ...codec.Option) *harness {
	t.Helper()
	dec, err := jsonschema.NewDecoder(s, target, opts...)
	require.NoError(t, err)

	return &harness{dec: dec, rb: arrowtest.NewRecordBuilder(t, dec.ArrowSchema())}
}

func (h *harness) appendJSON(payload string) error { return h.dec.Append(h.rb, []byte(payload)) }

// record finishes the builder's rows as a record, validated in full.
func (h *harness) record(t testing.TB) arrow.RecordBatch {
	t.Helper()

	return arrowtest.Record(t, h.rb)
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
