package produce_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"math/big"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	hamba "github.com/hamba/avro/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/tarnhq/tarn/ingest/jsonschema"
	"github.com/tarnhq/tarn/ingest/protobuf"
	"github.com/tarnhq/tarn/internal/demo"
	"github.com/tarnhq/tarn/internal/produce"
)

const ordersAvro = `{"type": "record", "name": "Order", "namespace": "shop", "fields": [
  {"name": "id", "type": "long"},
  {"name": "customer", "type": "string"},
  {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
  {"name": "ordered_at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
  {"name": "day", "type": {"type": "int", "logicalType": "date"}},
  {"name": "note", "type": ["null", "string"], "default": null},
  {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID"]}, "default": "NEW"},
  {"name": "tags", "type": {"type": "array", "items": "string"}, "default": []},
  {"name": "attrs", "type": {"type": "map", "values": "long"}, "default": {}},
  {"name": "ship", "type": ["null", {"type": "record", "name": "Address", "fields": [
    {"name": "city", "type": "string"}, {"name": "zip", "type": ["null", "int"]}]}], "default": null},
  {"name": "ref", "type": ["long", "string"]},
  {"name": "code", "type": {"type": "fixed", "name": "Code", "size": 2}}
]}`

// header reads the Confluent header: magic 0 and the schema id.
func header(t *testing.T, v []byte) (int, []byte) {
	t.Helper()
	require.GreaterOrEqual(t, len(v), 5)
	require.Equal(t, byte(0), v[0], "magic byte")
	return int(binary.BigEndian.Uint32(v[1:5])), v[5:]
}

func readAll(t *testing.T, rows produce.Rows) []produce.Row {
	t.Helper()
	var out []produce.Row
	for {
		r, err := rows.Next()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		out = append(out, r)
	}
}

// The Avro encoder turns JSON values into the writer schema's values:
// logical types from their text, unions by value or by Avro's JSON
// encoding, defaults for fields left out; what it writes decodes back to
// the same values.
func TestAvroEncode(t *testing.T) {
	sc, err := hamba.Parse(ordersAvro)
	require.NoError(t, err)
	enc, err := produce.NewAvro(sc, 7)
	require.NoError(t, err)
	in := `{"id": 1, "customer": "ada", "amount": 12.30, "ordered_at": "2026-03-01T10:00:00.250Z", "day": "2026-03-01", "note": "gift", "status": "PAID", "tags": ["a", "b"], "attrs": {"n": 2}, "ship": {"city": "Oslo", "zip": 150}, "ref": "x-1", "code": "AQI="}

{"id": 2, "customer": "bob", "amount": "0.05", "ordered_at": 1772359200000, "day": 20513, "ship": {"Address": {"city": "Bergen", "zip": null}}, "ref": {"long": 9}, "code": "AAA="}
`
	rows := readAll(t, produce.JSONLines(strings.NewReader(in)))
	require.Len(t, rows, 2)
	var got []map[string]any
	for _, r := range rows {
		v, err := enc.Encode(r)
		require.NoError(t, err)
		id, body := header(t, v)
		assert.Equal(t, 7, id)
		var m map[string]any
		require.NoError(t, hamba.Unmarshal(sc, body, &m))
		got = append(got, m)
	}
	assert.Equal(t, int64(1), got[0]["id"])
	assert.Equal(t, 0, got[0]["amount"].(*big.Rat).Cmp(big.NewRat(1230, 100)))
	assert.Equal(t, time.Date(2026, 3, 1, 10, 0, 0, 250e6, time.UTC), got[0]["ordered_at"].(time.Time).UTC())
	assert.Equal(t, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), got[0]["day"].(time.Time).UTC())
	assert.Equal(t, "gift", got[0]["note"])
	assert.Equal(t, "PAID", got[0]["status"])
	assert.Equal(t, []any{"a", "b"}, got[0]["tags"])
	assert.Equal(t, map[string]any{"n": int64(2)}, got[0]["attrs"])
	assert.Equal(t, map[string]any{"shop.Address": map[string]any{"city": "Oslo", "zip": 150}}, got[0]["ship"], "hamba names a union's record branch")
	assert.Equal(t, "x-1", got[0]["ref"])
	assert.Equal(t, [2]byte{1, 2}, got[0]["code"])

	assert.Equal(t, 0, got[1]["amount"].(*big.Rat).Cmp(big.NewRat(5, 100)))
	assert.Equal(t, time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), got[1]["ordered_at"].(time.Time).UTC())
	assert.Equal(t, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), got[1]["day"].(time.Time).UTC())
	assert.Nil(t, got[1]["note"], "left out: the default null")
	assert.Equal(t, "NEW", got[1]["status"], "left out: the default")
	assert.Equal(t, []any{}, got[1]["tags"])
	assert.Equal(t, map[string]any{"shop.Address": map[string]any{"city": "Bergen", "zip": nil}}, got[1]["ship"])
	assert.Equal(t, int64(9), got[1]["ref"])
}

// A value that does not fit is refused, naming the field.
func TestAvroEncodeRefuses(t *testing.T) {
	sc, err := hamba.Parse(ordersAvro)
	require.NoError(t, err)
	enc, err := produce.NewAvro(sc, 1)
	require.NoError(t, err)
	base := `"id": 1, "customer": "c", "amount": 1, "ordered_at": 0, "day": 0, "ref": 1, "code": "AAA="`
	for _, tc := range []struct{ row, want string }{
		{`{"customer": "c", "amount": 1, "ordered_at": 0, "day": 0, "ref": 1, "code": "AAA="}`, "id: missing"},
		{`{` + base + `, "colour": "red"}`, `field "colour" is not in the schema`},
		{`{` + strings.Replace(base, `"id": 1`, `"id": "one"`, 1) + `}`, "id: wrong type"},
		{`{` + strings.Replace(base, `"id": 1`, `"id": 1.5`, 1) + `}`, "id: 1.5 is not an integer"},
		{`{` + strings.Replace(base, `"amount": 1`, `"amount": 1.234`, 1) + `}`, "amount: 1.234 has more than 2 fraction digits"},
		{`{` + base + `, "status": "LOST"}`, `status: "LOST" is not a symbol`},
		{`{` + strings.Replace(base, `"code": "AAA="`, `"code": "AAAA"`, 1) + `}`, "code: fixed shop.Code holds 2 bytes, got 3"},
		{`{` + strings.Replace(base, `"ordered_at": 0`, `"ordered_at": "yesterday"`, 1) + `}`, `ordered_at: "yesterday" is not a timestamp`},
	} {
		rows := readAll(t, produce.JSONLines(strings.NewReader(tc.row)))
		_, err := enc.Encode(rows[0])
		assert.ErrorContains(t, err, tc.want, tc.row)
	}
}

// Parquet rows encoded with the demo's schema are byte for byte what the
// demo encodes from the same rows: the Parquet reader, the timestamp
// text arrow-go writes and the Avro conversion lose nothing.
func TestParquetToAvroMatchesDemo(t *testing.T) {
	flights, err := demo.Flights()
	require.NoError(t, err)
	want, err := demo.Encode(flights, 3)
	require.NoError(t, err)
	sc, err := hamba.Parse(demo.Schema)
	require.NoError(t, err)
	enc, err := produce.NewAvro(sc, 3)
	require.NoError(t, err)
	rows, err := produce.Parquet(bytes.NewReader(demo.FlightsParquet()))
	require.NoError(t, err)
	n := 0
	for ; ; n++ {
		r, err := rows.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		v, err := enc.Encode(r)
		require.NoError(t, err)
		require.Equal(t, want[n], v, "row %d: %v", n, r)
	}
	assert.Equal(t, len(flights), n)
}

// CSV cells are typed by the columns the schema maps to, then encoded
// like JSON; an empty cell is null.
func TestCSVCoerce(t *testing.T) {
	sc, err := hamba.Parse(`{"type": "record", "name": "R", "fields": [
	  {"name": "id", "type": "long"}, {"name": "title", "type": "string"},
	  {"name": "ok", "type": "boolean"}, {"name": "score", "type": ["null", "double"]},
	  {"name": "at", "type": {"type": "long", "logicalType": "timestamp-micros"}}]}`)
	require.NoError(t, err)
	enc, err := produce.NewAvro(sc, 1)
	require.NoError(t, err)
	rows := readAll(t, produce.CSV(strings.NewReader("id,title,ok,score,at\n1,1776,true,,2026-01-02 03:04:05.000006\n2,\"Up, up\",false,4.5,2026-01-02T03:04:05Z\n")))
	require.Len(t, rows, 2)
	var got []map[string]any
	for _, r := range rows {
		require.NoError(t, produce.Coerce(r, enc.Columns()))
		v, err := enc.Encode(r)
		require.NoError(t, err)
		_, body := header(t, v)
		var m map[string]any
		require.NoError(t, hamba.Unmarshal(sc, body, &m))
		got = append(got, m)
	}
	assert.Equal(t, map[string]any{"id": int64(1), "title": "1776", "ok": true, "score": nil,
		"at": time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)}, utc(got[0]))
	assert.Equal(t, map[string]any{"id": int64(2), "title": "Up, up", "ok": false, "score": 4.5,
		"at": time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}, utc(got[1]))

	bad := readAll(t, produce.CSV(strings.NewReader("id,ok\nx,true\n")))
	assert.ErrorContains(t, produce.Coerce(bad[0], enc.Columns()), `field id: "x": not a number`)
}

func utc(m map[string]any) map[string]any {
	for k, v := range m {
		if t, ok := v.(time.Time); ok {
			m[k] = t.UTC()
		}
	}
	return m
}

// A Protobuf row is read as the message's JSON and written with the
// message indexes of its place in the file.
func TestProtobufEncode(t *testing.T) {
	fd, err := protobuf.Compile(context.Background(), `syntax = "proto3";
import "google/protobuf/timestamp.proto";
message Other { string x = 1; }
message Outer {
  message Click { int64 id = 1; string page = 2; google.protobuf.Timestamp at = 3; bool ok = 4; }
}`, nil)
	require.NoError(t, err)
	md := fd.Messages().ByName("Outer").Messages().ByName("Click")
	enc, err := produce.NewProtobuf(md, 5)
	require.NoError(t, err)
	rows := readAll(t, produce.CSV(strings.NewReader("id,page,at,ok\n42,/home,2026-01-02T03:04:05Z,true\n")))
	require.NoError(t, produce.Coerce(rows[0], enc.Columns()))
	v, err := enc.Encode(rows[0])
	require.NoError(t, err)
	var h sr.ConfluentHeader
	id, rest, err := h.DecodeID(v)
	require.NoError(t, err)
	assert.Equal(t, 5, id)
	idx, body, err := h.DecodeIndex(rest, 4)
	require.NoError(t, err)
	assert.Equal(t, []int{1, 0}, idx, "Outer is message 1, Click its message 0")
	m := dynamicpb.NewMessage(md)
	require.NoError(t, proto.Unmarshal(body, m))
	assert.Equal(t, int64(42), m.Get(md.Fields().ByName("id")).Int())
	assert.Equal(t, "/home", m.Get(md.Fields().ByName("page")).String())
	assert.True(t, m.Get(md.Fields().ByName("ok")).Bool())

	bad := readAll(t, produce.JSONLines(strings.NewReader(`{"id": 1, "colour": "red"}`)))
	_, err = enc.Encode(bad[0])
	assert.ErrorContains(t, err, "colour")
}

// A JSON Schema row is validated before it is written.
func TestJSONSchemaEncode(t *testing.T) {
	s, err := jsonschema.Compile(`{"type": "object", "properties": {"id": {"type": "integer"}, "page": {"type": "string"}}, "required": ["id"]}`, nil)
	require.NoError(t, err)
	enc, err := produce.NewJSONSchema(s, 9)
	require.NoError(t, err)
	rows := readAll(t, produce.JSONLines(strings.NewReader("{\"id\": 1, \"page\": \"/a\"}\n{\"page\": \"/b\"}\n")))
	v, err := enc.Encode(rows[0])
	require.NoError(t, err)
	id, body := header(t, v)
	assert.Equal(t, 9, id)
	assert.JSONEq(t, `{"id": 1, "page": "/a"}`, string(body))
	_, err = enc.Encode(rows[1])
	assert.ErrorContains(t, err, "id")

	plain, err := produce.NewJSON(nil).Encode(rows[0])
	require.NoError(t, err)
	assert.JSONEq(t, `{"id": 1, "page": "/a"}`, string(plain), "no header")
}

func TestKey(t *testing.T) {
	row := readAll(t, produce.JSONLines(strings.NewReader(`{"s": "a", "n": 12, "o": {"b": 1}, "z": null}`)))[0]
	for field, want := range map[string]string{"s": "a", "n": "12", "o": `{"b":1}`} {
		k, err := produce.Key(row, field)
		require.NoError(t, err)
		assert.Equal(t, want, string(k), field)
	}
	k, err := produce.Key(row, "z")
	require.NoError(t, err)
	assert.Nil(t, k)
	_, err = produce.Key(row, "missing")
	assert.ErrorContains(t, err, `no key field "missing"`)
}

// Run stops at the limit, at the end of the input or at next's error,
// and paces a rate: 40 records at 100 a second take at least 0.35 s.
func TestRun(t *testing.T) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	require.NoError(t, err)
	defer kc.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(kc.ListenAddrs()...), kgo.DefaultProduceTopic("t"))
	require.NoError(t, err)
	defer cl.Close()
	ctx := context.Background()
	rec := func(n int64) (*kgo.Record, error) { return &kgo.Record{Value: []byte{byte(n)}}, nil }

	var acked atomic.Int64
	start := time.Now()
	require.NoError(t, produce.Run(ctx, cl, produce.Pace{Rate: 100, Limit: 40}, rec, &acked))
	assert.GreaterOrEqual(t, time.Since(start), 350*time.Millisecond)
	assert.Equal(t, int64(40), acked.Load())

	acked.Store(0)
	require.NoError(t, produce.Run(ctx, cl, produce.Pace{}, func(n int64) (*kgo.Record, error) {
		if n == 25 {
			return nil, nil
		}
		return rec(n)
	}, &acked))
	assert.Equal(t, int64(25), acked.Load(), "the input ended")

	err = produce.Run(ctx, cl, produce.Pace{}, func(n int64) (*kgo.Record, error) {
		if n == 3 {
			return nil, io.ErrUnexpectedEOF
		}
		return rec(n)
	}, nil)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
}
