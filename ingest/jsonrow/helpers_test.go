package jsonrow_test

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/ingest/codec"
	"github.com/tarnhq/tarn/ingest/jsonrow"
	"github.com/tarnhq/tarn/internal/arrowtest"
)

// harness is a Decoder and a RecordBuilder on a checked allocator; the
// test fails if any Arrow memory leaks.
type harness struct {
	dec *jsonrow.Decoder
	rb  *array.RecordBuilder
}

func newHarness(t testing.TB, target *iceberg.Schema, opts ...codec.Option) *harness {
	t.Helper()
	dec, err := jsonrow.NewDecoder(target, opts...)
	require.NoError(t, err)

	return &harness{dec: dec, rb: arrowtest.NewRecordBuilder(t, dec.ArrowSchema())}
}

// appendJSON appends one payload given as text.
func (h *harness) appendJSON(payload string) error { return h.dec.Append(h.rb, []byte(payload)) }

// record finishes the builder's rows as a record, validated in full.
func (h *harness) record(t testing.TB) arrow.RecordBatch {
	t.Helper()

	return arrowtest.Record(t, h.rb)
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
