package avro_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	hamba "github.com/hamba/avro/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tarnavro "github.com/tarnhq/tarn/ingest/avro"
	"github.com/tarnhq/tarn/ingest/connect"
	"github.com/tarnhq/tarn/internal/arrowtest"
)

// envelopeSchema is Debezium 3.6.1's Avro envelope of table items (id
// int, name text, body text), as captured from its Postgres connector
// through Apicurio's AvroConverter (ingest/pipeline/testdata/debezium,
// schema 4 of schemas.json).
func envelopeSchema(t testing.TB) hamba.Schema {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("..", "pipeline", "testdata", "debezium", "schemas.json"))
	require.NoError(t, err)
	var schemas map[string]string
	require.NoError(t, json.Unmarshal(text, &schemas))
	return parse(t, schemas["4"])
}

// envelope encodes one change event of items with w.
func envelope(t testing.TB, w hamba.Schema, op string, before, after map[string]any) []byte {
	t.Helper()
	source := map[string]any{"version": "3.6.1.Final", "connector": "postgresql", "name": "avro", "ts_ms": int64(1700000000000),
		"snapshot": "false", "db": "tarn", "schema": "public", "table": "items", "txId": int64(771), "lsn": int64(27030000)}
	v := map[string]any{"source": source, "op": op, "ts_ms": int64(1700000000123)}
	if before != nil {
		v["before"] = map[string]any{"avro.public.items.Value": before}
	}
	if after != nil {
		v["after"] = map[string]any{"avro.public.items.Value": after}
	}
	return encode(t, w, v)
}

// TestChangeDecoder reads Debezium Avro envelopes in one pass: an upsert
// appends after (and only it), a delete and a truncate append nothing;
// op, source.ts_ms and ts_ms come back; a payload cut short or with an
// unknown op is malformed and appends nothing.
func TestChangeDecoder(t *testing.T) {
	w := envelopeSchema(t)
	row, err := tarnavro.AfterSchema(w)
	require.NoError(t, err)
	target, err := tarnavro.ToIceberg(row)
	require.NoError(t, err)
	d, err := tarnavro.NewChangeDecoder(w, target)
	require.NoError(t, err)
	b := arrowtest.NewRecordBuilder(t, d.ArrowSchema())

	name := func(s string) map[string]any { return map[string]any{"string": s} }
	events := [][]byte{
		envelope(t, w, "c", nil, map[string]any{"id": int32(1), "name": name("one"), "body": nil}),
		envelope(t, w, "u", map[string]any{"id": int32(1), "name": name("one"), "body": nil}, map[string]any{"id": int32(1), "name": name("one-v2"), "body": name("b")}),
		envelope(t, w, "d", map[string]any{"id": int32(1), "name": nil, "body": nil}, nil),
		envelope(t, w, "t", nil, nil),
	}
	var ops []connect.Op
	for _, e := range events {
		c, err := d.Read(b, e)
		require.NoError(t, err)
		assert.EqualValues(t, 1700000000000, c.SourceTsMillis)
		assert.EqualValues(t, 1700000000123, c.TsMillis)
		if c.Op.Upsert() {
			d.WriteRow(b)
		}
		ops = append(ops, c.Op)
	}
	assert.Equal(t, []connect.Op{connect.OpCreate, connect.OpUpdate, connect.OpDelete, connect.OpTruncate}, ops)

	for _, bad := range [][]byte{events[1][:len(events[1])-3], envelope(t, w, "x", nil, nil), envelope(t, w, "c", nil, nil)} {
		_, err := d.Read(b, bad)
		require.ErrorIs(t, err, tarnavro.ErrMalformed)
	}
	rec := arrowtest.Record(t, b)
	defer rec.Release()
	assert.Equal(t, []any{int32(1), int32(1)}, arrowtest.Column(rec, "id"))
	assert.Equal(t, []any{"one", "one-v2"}, arrowtest.Column(rec, "name"))
	assert.Equal(t, []any{nil, "b"}, arrowtest.Column(rec, "body"))

	_, err = tarnavro.NewChangeDecoder(row, target)
	require.ErrorIs(t, err, tarnavro.ErrUnsupported, "a row schema is no envelope")
}

// BenchmarkChangeDecoder measures one Debezium Avro update event (before
// and after rows, the source block) to one Arrow row: tarn-envelope is
// ChangeDecoder's one pass; tarn-row decodes the after row alone (the
// floor: what a flattened topic costs); hamba-generic is the envelope
// decoded into map[string]any by hamba/avro, before any Arrow work (the
// alternative of picking after out of a generic map).
func BenchmarkChangeDecoder(b *testing.B) {
	w := envelopeSchema(b)
	row, err := tarnavro.AfterSchema(w)
	require.NoError(b, err)
	target, err := tarnavro.ToIceberg(row)
	require.NoError(b, err)
	str := func(s string) map[string]any { return map[string]any{"string": s} }
	before := map[string]any{"id": int32(7), "name": str("seven"), "body": str("a body of some forty bytes, give or take")}
	after := map[string]any{"id": int32(7), "name": str("seven-v2"), "body": str("a body of some forty bytes, give or take")}
	payloads := [][]byte{envelope(b, w, "u", before, after)}
	rows := [][]byte{encode(b, row, after)}

	b.Run("tarn-envelope", func(b *testing.B) {
		d, err := tarnavro.NewChangeDecoder(w, target)
		require.NoError(b, err)
		arrowtest.BenchmarkAppend(b, d.ArrowSchema(), func(rb *array.RecordBuilder, p []byte) error {
			if _, err := d.Read(rb, p); err != nil {
				return err
			}
			d.WriteRow(rb)
			return nil
		}, payloads)
	})
	b.Run("tarn-row", func(b *testing.B) {
		d, err := tarnavro.NewDecoder(row, target)
		require.NoError(b, err)
		arrowtest.BenchmarkAppend(b, d.ArrowSchema(), d.Append, rows)
	})
	b.Run("hamba-generic", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			var m map[string]any
			if err := hamba.Unmarshal(w, payloads[0], &m); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	})
}
