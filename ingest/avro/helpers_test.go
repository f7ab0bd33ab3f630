package avro_test

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	hamba "github.com/hamba/avro/v2"
	"github.com/stretchr/testify/require"

	tarnavro "github.com/tarnhq/tarn/ingest/avro"
	"github.com/tarnhq/tarn/ingest/codec"
	"github.com/tarnhq/tarn/internal/arrowtest"
)

// harness is a Decoder and a RecordBuilder on a checked allocator; the
// test fails if any Arrow memory leaks.
type harness struct {
	dec *tarnavro.Decoder
	rb  *array.RecordBuilder
}

func newHarness(t testing.TB, writer hamba.Schema, target *iceberg.Schema, opts ...codec.Option) *harness {
	t.Helper()
	dec, err := tarnavro.NewDecoder(writer, target, opts...)
	require.NoError(t, err)

	return &harness{dec: dec, rb: arrowtest.NewRecordBuilder(t, dec.ArrowSchema())}
}

// record finishes the builder's rows as a record, validated in full.
func (h *harness) record(t testing.TB) arrow.RecordBatch {
	t.Helper()

	return arrowtest.Record(t, h.rb)
}

// table maps an Avro schema (written as the table's schema) to Iceberg.
func table(t testing.TB, avroSchema string) *iceberg.Schema {
	t.Helper()
	sc, err := tarnavro.ToIceberg(parse(t, avroSchema))
	require.NoError(t, err)

	return sc
}

func encode(t testing.TB, s hamba.Schema, v any) []byte {
	t.Helper()
	b, err := hamba.Marshal(s, v)
	require.NoError(t, err)

	return b
}
