package avro_test

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tarnavro "github.com/tarnhq/tarn/ingest/avro"
	"github.com/tarnhq/tarn/ingest/codec"
	"github.com/tarnhq/tarn/internal/arrowtest"
)

// TestDecodeTypeMapping round-trips one value per row of DESIGN.md "Type
// mapping": encode with hamba/avro, decode into a builder made from
// ToIceberg's schema, read the Arrow value back.
func TestDecodeTypeMapping(t *testing.T) {
	ts := time.Date(2024, 3, 1, 13, 25, 30, 123456000, time.UTC)
	id := uuid.MustParse("f81d4fae-7dec-11d0-a765-00a0c91e6bf6")
	tests := []struct {
		name      string
		avro      string
		in        any
		arrowType string
		want      any
	}{
		{"boolean", `"boolean"`, true, "bool", true},
		{"int", `"int"`, -7, "int32", int32(-7)},
		{"long", `"long"`, int64(1) << 40, "int64", int64(1) << 40},
		{"float", `"float"`, float32(1.5), "float32", float32(1.5)},
		{"double", `"double"`, 2.25, "float64", 2.25},
		{"string", `"string"`, "héllo", "utf8", "héllo"},
		{"bytes", `"bytes"`, []byte{0, 1, 0xff}, "binary", []byte{0, 1, 0xff}},
		{"fixed", `{"type":"fixed","name":"F","size":4}`, [4]byte{1, 2, 3, 4}, "fixed_size_binary[4]", []byte{1, 2, 3, 4}},
		{"enum", `{"type":"enum","name":"E","symbols":["A","B","C"]}`, "B", "utf8", "B"},
		{"record", `{"type":"record","name":"In","fields":[{"name":"x","type":"int"},{"name":"y","type":"string"}]}`,
			map[string]any{"x": 1, "y": "a"}, "struct<x: int32, y: utf8>", map[string]any{"x": int32(1), "y": "a"}},
		{"array", `{"type":"array","items":"string"}`, []any{"a", "b"}, "list<element: utf8>", []any{"a", "b"}},
		{"map", `{"type":"map","values":"long"}`, map[string]any{"k": int64(1), "l": int64(2)}, "map<utf8, int64, items_non_nullable>",
			map[string]any{"k": int64(1), "l": int64(2)}},
		{"union null first", `["null","string"]`, map[string]any{"string": "x"}, "utf8", "x"},
		{"union null last", `["string","null"]`, map[string]any{"string": "x"}, "utf8", "x"},
		{"general union", `["int","string"]`, map[string]any{"string": "s"}, "struct<int: int32 nullable, string: utf8 nullable>",
			map[string]any{"int": nil, "string": "s"}},
		{"decimal bytes", `{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}`, big.NewRat(-12345, 100),
			"decimal(9, 2)", "-123.45"},
		{"decimal fixed", `{"type":"fixed","name":"D","size":8,"logicalType":"decimal","precision":18,"scale":4}`,
			big.NewRat(123456789, 10000), "decimal(18, 4)", "12345.6789"},
		{"date", `{"type":"int","logicalType":"date"}`, time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC), "date32", arrow.Date32(19783)},
		{"time-millis", `{"type":"int","logicalType":"time-millis"}`, 13*time.Hour + 25*time.Minute + 30123*time.Millisecond,
			"time64[us]", arrow.Time64(48_330_123_000)},
		{"time-micros", `{"type":"long","logicalType":"time-micros"}`, 13*time.Hour + 25*time.Minute + 30123456*time.Microsecond,
			"time64[us]", arrow.Time64(48_330_123_456)},
		{"timestamp-millis", `{"type":"long","logicalType":"timestamp-millis"}`, ts,
			"timestamp[us, tz=UTC]", arrow.Timestamp(ts.Truncate(time.Millisecond).UnixMicro())},
		{"timestamp-micros", `{"type":"long","logicalType":"timestamp-micros"}`, ts,
			"timestamp[us, tz=UTC]", arrow.Timestamp(ts.UnixMicro())},
		{"local-timestamp-millis", `{"type":"long","logicalType":"local-timestamp-millis"}`, ts,
			"timestamp[us]", arrow.Timestamp(ts.Truncate(time.Millisecond).UnixMicro())},
		{"local-timestamp-micros", `{"type":"long","logicalType":"local-timestamp-micros"}`, ts,
			"timestamp[us]", arrow.Timestamp(ts.UnixMicro())},
		{"uuid", `{"type":"string","logicalType":"uuid"}`, id.String(), "extension<arrow.uuid>", id},
		{"uuid upper case", `{"type":"string","logicalType":"uuid"}`, strings.ToUpper(id.String()), "extension<arrow.uuid>", id},
		{"uuid on fixed(16)", `{"type":"fixed","name":"Id","size":16,"logicalType":"uuid"}`, [16]byte(id), "extension<arrow.uuid>", id},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := parse(t, record(tt.avro))
			h := newHarness(t, w, table(t, record(tt.avro)))
			require.NoError(t, h.dec.Append(h.rb, encode(t, w, map[string]any{"f": tt.in})))
			rec := h.record(t)
			assert.Equal(t, tt.arrowType, rec.Schema().Field(0).Type.String())
			assert.Equal(t, []any{tt.want}, arrowtest.Column(rec, "f"))
		})
	}
}

func TestDecodeArrowSchemaCarriesFieldIDs(t *testing.T) {
	w := parse(t, `{"type":"record","name":"R","fields":[{"name":"a","type":"int"},
		{"name":"s","type":{"type":"record","name":"S","fields":[{"name":"b","type":"string"}]}}]}`)
	dec, err := tarnavro.NewDecoder(w, table(t, w.String()))
	require.NoError(t, err)
	sc := dec.ArrowSchema()
	id, ok := sc.Field(0).Metadata.GetValue("PARQUET:field_id")
	assert.True(t, ok)
	assert.Equal(t, "1", id)
	child := sc.Field(1).Type.(*arrow.StructType).Field(0)
	id, _ = child.Metadata.GetValue("PARQUET:field_id")
	assert.Equal(t, "3", id)
}

func TestDecodeNullableUnions(t *testing.T) {
	for _, order := range []string{`["null","long"]`, `["long","null"]`} {
		t.Run(order, func(t *testing.T) {
			w := parse(t, record(order))
			h := newHarness(t, w, table(t, record(order)))
			for _, v := range []any{map[string]any{"long": int64(5)}, nil, map[string]any{"long": int64(-1)}} {
				require.NoError(t, h.dec.Append(h.rb, encode(t, w, map[string]any{"f": v})))
			}
			assert.Equal(t, []any{int64(5), nil, int64(-1)}, arrowtest.Column(h.record(t), "f"))
		})
	}
}

func TestDecodeGeneralUnions(t *testing.T) {
	schema := record(`["null","int","string",{"type":"record","name":"Point","fields":[{"name":"x","type":"double"}]}]`)
	w := parse(t, schema)
	h := newHarness(t, w, table(t, schema))
	rows := []struct {
		name string
		in   any
		want any
	}{
		{"int branch", map[string]any{"int": 3}, map[string]any{"int": int32(3), "string": nil, "Point": nil}},
		{"string branch", map[string]any{"string": "s"}, map[string]any{"int": nil, "string": "s", "Point": nil}},
		{"record branch", map[string]any{"t.Point": map[string]any{"x": 1.5}},
			map[string]any{"int": nil, "string": nil, "Point": map[string]any{"x": 1.5}}},
		{"null", nil, nil},
	}
	var want []any
	for _, r := range rows {
		require.NoError(t, h.dec.Append(h.rb, encode(t, w, map[string]any{"f": r.in})), r.name)
		want = append(want, r.want)
	}
	assert.Equal(t, want, arrowtest.Column(h.record(t), "f"))
}

func TestDecodeNestedRecordsListsAndMaps(t *testing.T) {
	schema := `{"type":"record","name":"Order","namespace":"shop","fields":[
		{"name":"id","type":"long"},
		{"name":"customer","type":{"type":"record","name":"Customer","fields":[
			{"name":"name","type":"string"},
			{"name":"address","type":["null",{"type":"record","name":"Address","fields":[{"name":"city","type":"string"}]}]}]}},
		{"name":"lines","type":{"type":"array","items":{"type":"record","name":"Line","fields":[
			{"name":"sku","type":"string"},{"name":"qty","type":"int"},
			{"name":"tags","type":{"type":"array","items":["null","string"]}}]}}},
		{"name":"attrs","type":{"type":"map","values":["null",{"type":"map","values":"int"}]}}]}`
	w := parse(t, schema)
	h := newHarness(t, w, table(t, schema))

	rows := []map[string]any{{
		"id": int64(1),
		"customer": map[string]any{"name": "Ada",
			"address": map[string]any{"shop.Address": map[string]any{"city": "Oslo"}}},
		"lines": []any{
			map[string]any{"sku": "a", "qty": 2, "tags": []any{map[string]any{"string": "x"}, nil}},
			map[string]any{"sku": "b", "qty": 1, "tags": []any{}},
		},
		"attrs": map[string]any{"m": map[string]any{"map": map[string]any{"one": 1}}, "n": nil},
	}, {
		"id":       int64(2),
		"customer": map[string]any{"name": "Bo", "address": nil},
		"lines":    []any{},
		"attrs":    map[string]any{},
	}}
	for _, r := range rows {
		require.NoError(t, h.dec.Append(h.rb, encode(t, w, r)))
	}
	rec := h.record(t)
	assert.Equal(t, []any{int64(1), int64(2)}, arrowtest.Column(rec, "id"))
	assert.Equal(t, []any{
		map[string]any{"name": "Ada", "address": map[string]any{"city": "Oslo"}},
		map[string]any{"name": "Bo", "address": nil},
	}, arrowtest.Column(rec, "customer"))
	assert.Equal(t, []any{
		[]any{
			map[string]any{"sku": "a", "qty": int32(2), "tags": []any{"x", nil}},
			map[string]any{"sku": "b", "qty": int32(1), "tags": []any{}},
		},
		[]any{},
	}, arrowtest.Column(rec, "lines"))
	assert.Equal(t, []any{
		map[string]any{"m": map[string]any{"one": int32(1)}, "n": nil},
		map[string]any{},
	}, arrowtest.Column(rec, "attrs"))
}

func TestDecodeLogicalTypeEdges(t *testing.T) {
	tests := []struct {
		name string
		avro string
		in   any
		want any
	}{
		{"negative decimal in one byte", `{"type":"bytes","logicalType":"decimal","precision":3,"scale":1}`, big.NewRat(-5, 10), "-0.5"},
		{"decimal at full precision 38", `{"type":"bytes","logicalType":"decimal","precision":38,"scale":0}`,
			new(big.Rat).SetInt(mustBigInt("99999999999999999999999999999999999999")), "99999999999999999999999999999999999999"},
		{"negative fixed decimal", `{"type":"fixed","name":"D","size":4,"logicalType":"decimal","precision":9,"scale":3}`,
			big.NewRat(-1234567, 1000), "-1234.567"},
		{"timestamp before the epoch", `{"type":"long","logicalType":"timestamp-millis"}`,
			time.UnixMilli(-1500).UTC(), arrow.Timestamp(-1_500_000)},
		{"date before the epoch", `{"type":"int","logicalType":"date"}`, time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC), arrow.Date32(-1)},
		{"last microsecond of the day", `{"type":"long","logicalType":"time-micros"}`, 24*time.Hour - time.Microsecond,
			arrow.Time64(86_399_999_999)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := parse(t, record(tt.avro))
			h := newHarness(t, w, table(t, record(tt.avro)))
			require.NoError(t, h.dec.Append(h.rb, encode(t, w, map[string]any{"f": tt.in})))
			assert.Equal(t, []any{tt.want}, arrowtest.Column(h.record(t), "f"))
		})
	}
}

// TestDecodeDateTimeRange: dates and timestamps outside years 1-9999 are
// bad records in every format (codec.TimestampInRange), not rows that
// engines cannot read. A producer's raw long stands for each value: a
// twin schema without the logical type writes the same bytes.
func TestDecodeDateTimeRange(t *testing.T) {
	tests := []struct {
		avro, raw string
		in        any
		want      any // nil: refused
	}{
		{`{"type":"long","logicalType":"timestamp-micros"}`, `"long"`, codec.MaxTimestampMicros, arrow.Timestamp(codec.MaxTimestampMicros)},
		{`{"type":"long","logicalType":"timestamp-micros"}`, `"long"`, codec.MaxTimestampMicros + 1, nil},
		{`{"type":"long","logicalType":"local-timestamp-micros"}`, `"long"`, codec.MinTimestampMicros - 1, nil},
		{`{"type":"long","logicalType":"timestamp-millis"}`, `"long"`, codec.MinTimestampMicros / 1000, arrow.Timestamp(codec.MinTimestampMicros)},
		// A microsecond epoch (2024-02-29T07:00:00Z) written as millis.
		{`{"type":"long","logicalType":"timestamp-millis"}`, `"long"`, int64(1709190000000000), nil},
		{`{"type":"long","logicalType":"local-timestamp-millis"}`, `"long"`, int64(math.MaxInt64), nil},
		{`{"type":"int","logicalType":"date"}`, `"int"`, int(codec.MaxDateDays), arrow.Date32(codec.MaxDateDays)},
		{`{"type":"int","logicalType":"date"}`, `"int"`, int(codec.MaxDateDays + 1), nil},
		{`{"type":"int","logicalType":"date"}`, `"int"`, int(codec.MinDateDays - 1), nil},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s %v", tt.avro, tt.in), func(t *testing.T) {
			w := parse(t, record(tt.avro))
			h := newHarness(t, w, table(t, record(tt.avro)))
			err := h.dec.Append(h.rb, encode(t, parse(t, record(tt.raw)), map[string]any{"f": tt.in}))
			if tt.want == nil {
				require.ErrorIs(t, err, tarnavro.ErrOutOfRange)
				assert.ErrorContains(t, err, "outside years 1-9999")
				t.Log(err)
				assert.Equal(t, 0, h.rb.Field(0).Len())

				return
			}
			require.NoError(t, err)
			assert.Equal(t, []any{tt.want}, arrowtest.Column(h.record(t), "f"))
		})
	}
}

func mustBigInt(s string) *big.Int {
	v, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic(s)
	}

	return v
}

// TestDecodeEvolvedTable decodes into table schemas that evolved past the
// writer's, as DESIGN.md "Schema evolution" allows.
func TestDecodeEvolvedTable(t *testing.T) {
	tests := []struct {
		name   string
		writer string
		table  string
		in     map[string]any
		want   map[string][]any
	}{
		{
			name:   "missing top-level columns get null",
			writer: `{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}`,
			table: `{"type":"record","name":"R","fields":[{"name":"z","type":["null","string"]},{"name":"a","type":"int"},
				{"name":"s","type":["null",{"type":"record","name":"S","fields":[{"name":"x","type":"int"}]}]}]}`,
			in:   map[string]any{"a": 1},
			want: map[string][]any{"a": {int32(1)}, "z": {nil}, "s": {nil}},
		},
		{
			name: "missing nested columns get null",
			writer: `{"type":"record","name":"R","fields":[
				{"name":"s","type":{"type":"record","name":"S","fields":[{"name":"x","type":"int"}]}}]}`,
			table: `{"type":"record","name":"R","fields":[
				{"name":"s","type":{"type":"record","name":"S","fields":[{"name":"x","type":"int"},{"name":"y","type":["null","long"]}]}}]}`,
			in:   map[string]any{"s": map[string]any{"x": 4}},
			want: map[string][]any{"s": {map[string]any{"x": int32(4), "y": nil}}},
		},
		{
			name:   "int widens to long",
			writer: `{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}`,
			table:  `{"type":"record","name":"R","fields":[{"name":"a","type":"long"}]}`,
			in:     map[string]any{"a": -2147483648},
			want:   map[string][]any{"a": {int64(-2147483648)}},
		},
		{
			name:   "float widens to double",
			writer: `{"type":"record","name":"R","fields":[{"name":"a","type":"float"}]}`,
			table:  `{"type":"record","name":"R","fields":[{"name":"a","type":"double"}]}`,
			in:     map[string]any{"a": float32(0.25)},
			want:   map[string][]any{"a": {0.25}},
		},
		{
			name:   "decimal precision widens at equal scale",
			writer: `{"type":"record","name":"R","fields":[{"name":"a","type":{"type":"bytes","logicalType":"decimal","precision":5,"scale":2}}]}`,
			table:  `{"type":"record","name":"R","fields":[{"name":"a","type":{"type":"bytes","logicalType":"decimal","precision":12,"scale":2}}]}`,
			in:     map[string]any{"a": big.NewRat(99999, 100)},
			want:   map[string][]any{"a": {"999.99"}},
		},
		{
			name:   "required fills an optional column",
			writer: `{"type":"record","name":"R","fields":[{"name":"a","type":"string"}]}`,
			table:  `{"type":"record","name":"R","fields":[{"name":"a","type":["null","string"]}]}`,
			in:     map[string]any{"a": "v"},
			want:   map[string][]any{"a": {"v"}},
		},
		{
			name: "widening inside lists and map values",
			writer: `{"type":"record","name":"R","fields":[{"name":"l","type":{"type":"array","items":"int"}},
				{"name":"m","type":{"type":"map","values":"float"}}]}`,
			table: `{"type":"record","name":"R","fields":[{"name":"l","type":{"type":"array","items":["null","long"]}},
				{"name":"m","type":{"type":"map","values":"double"}}]}`,
			in:   map[string]any{"l": []any{1, 2}, "m": map[string]any{"k": float32(0.5)}},
			want: map[string][]any{"l": {[]any{int64(1), int64(2)}}, "m": {map[string]any{"k": 0.5}}},
		},
		{
			name:   "a union branch the writer dropped stays null",
			writer: `{"type":"record","name":"R","fields":[{"name":"u","type":["int","string"]}]}`,
			table:  `{"type":"record","name":"R","fields":[{"name":"u","type":["int","string","bytes"]}]}`,
			in:     map[string]any{"u": map[string]any{"int": 9}},
			want:   map[string][]any{"u": {map[string]any{"int": int32(9), "string": nil, "bytes": nil}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := parse(t, tt.writer)
			h := newHarness(t, w, table(t, tt.table))
			require.NoError(t, h.dec.Append(h.rb, encode(t, w, tt.in)))
			rec := h.record(t)
			for col, want := range tt.want {
				assert.Equal(t, want, arrowtest.Column(rec, col), col)
			}
		})
	}
}

func TestNewDecoderRefusesIncompatiblePairs(t *testing.T) {
	tests := []struct {
		name   string
		writer string
		table  string
		path   string
		inMsg  string
	}{
		{"narrowing long to int", record(`"long"`), record(`"int"`), "f", "writer long, table int"},
		{"string to int", record(`"string"`), record(`"int"`), "f", "writer string, table int"},
		{"int to double", record(`"int"`), record(`"double"`), "f", "writer int, table double"},
		{"decimal scale change", record(`{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}`),
			record(`{"type":"bytes","logicalType":"decimal","precision":9,"scale":3}`), "f", "decimal(9, 2)"},
		{"decimal precision narrowing", record(`{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}`),
			record(`{"type":"bytes","logicalType":"decimal","precision":5,"scale":2}`), "f", "table decimal(5, 2)"},
		{"optional into required", record(`["null","string"]`), record(`"string"`), "f", "optional in the writer schema, required in the table"},
		{"writer field the table lacks", `{"type":"record","name":"R","fields":[{"name":"f","type":"int"},{"name":"g","type":"int"}]}`,
			record(`"int"`), "g", "no such column"},
		{"required table column the writer lacks", record(`"int"`),
			`{"type":"record","name":"R","fields":[{"name":"f","type":"int"},{"name":"g","type":"int"}]}`, "g", "required column missing"},
		{"nested required column the writer lacks",
			record(`{"type":"record","name":"S","fields":[{"name":"x","type":"int"}]}`),
			record(`{"type":"record","name":"S","fields":[{"name":"x","type":"int"},{"name":"y","type":"int"}]}`), "f.y", "required column missing"},
		{"array into map", record(`{"type":"array","items":"int"}`), record(`{"type":"map","values":"int"}`), "f", "writer array"},
		{"record into string", record(`{"type":"record","name":"S","fields":[{"name":"x","type":"int"}]}`), record(`"string"`), "f", "writer record t.S"},
		{"incompatible list element", record(`{"type":"array","items":"long"}`), record(`{"type":"array","items":"int"}`),
			"f.element", "writer long, table int"},
		{"union branch the table lacks", record(`["int","string","bytes"]`), record(`["int","string"]`), "f.bytes", "no field for this branch"},
		{"union into a struct with required fields", record(`["int","string"]`),
			record(`{"type":"record","name":"U","fields":[{"name":"int","type":"int"},{"name":"string","type":"string"}]}`),
			"f.int", "must be optional"},
		{"nullable general union into a required struct", record(`["null","int","string"]`), record(`["int","string"]`), "f", "optional in the writer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tarnavro.NewDecoder(parse(t, tt.writer), table(t, tt.table))
			require.Error(t, err)
			assert.ErrorIs(t, err, tarnavro.ErrIncompatible)
			var fe *tarnavro.FieldError
			require.True(t, errors.As(err, &fe))
			assert.Equal(t, tt.path, fe.Path)
			assert.Contains(t, err.Error(), tt.inMsg)
		})
	}

	t.Run("recursive writer schema", func(t *testing.T) {
		w := parse(t, `{"type":"record","name":"Node","fields":[{"name":"next","type":["null","Node"]}]}`)
		_, err := tarnavro.NewDecoder(w, table(t, record(`"int"`)))
		assert.ErrorIs(t, err, tarnavro.ErrRecursive)
		assert.Contains(t, err.Error(), "Node")
	})
}

// TestDecodeBadRecords feeds payloads that cannot become a row. Each must
// fail with a *FieldError wrapping ErrBadRecord and append nothing: the
// record built afterwards holds exactly the good rows around it.
func TestDecodeBadRecords(t *testing.T) {
	schema := `{"type":"record","name":"R","fields":[
		{"name":"id","type":"long"},
		{"name":"name","type":"string"},
		{"name":"kind","type":{"type":"enum","name":"K","symbols":["A","B"]}},
		{"name":"price","type":{"type":"bytes","logicalType":"decimal","precision":4,"scale":2}},
		{"name":"ref","type":["null",{"type":"string","logicalType":"uuid"}]},
		{"name":"at","type":{"type":"int","logicalType":"time-millis"}},
		{"name":"tags","type":{"type":"array","items":{"type":"record","name":"T","fields":[{"name":"k","type":"string"}]}}},
		{"name":"u","type":["int","string"]}]}`
	w := parse(t, schema)
	good := func(id int64) map[string]any {
		return map[string]any{"id": id, "name": "n", "kind": "B", "price": big.NewRat(1234, 100),
			"ref": map[string]any{"string.uuid": "f81d4fae-7dec-11d0-a765-00a0c91e6bf6"}, "at": time.Second,
			"tags": []any{map[string]any{"k": "x"}, map[string]any{"k": "y"}}, "u": map[string]any{"string": "s"}}
	}
	with := func(field string, v any) []byte {
		r := good(0)
		r[field] = v

		return encode(t, w, r)
	}
	valid := encode(t, w, good(0))
	// hamba/avro refuses to encode a decimal beyond its precision, so a lax
	// producer is played by a twin schema that declares more digits.
	lax := parse(t, strings.Replace(schema, `"precision":4`, `"precision":9`, 1))
	tooWide := good(0)
	tooWide["price"] = big.NewRat(123456, 100)
	overflow := encode(t, lax, tooWide)

	type bad struct {
		name    string
		payload []byte
		wantErr error
		path    string
	}
	tests := []bad{
		{"trailing bytes", append(append([]byte{}, valid...), 0), tarnavro.ErrMalformed, ""},
		{"empty payload", nil, tarnavro.ErrMalformed, "id"},
		{"decimal overflows its precision", overflow, tarnavro.ErrOutOfRange, "price"},
		{"not a uuid", with("ref", map[string]any{"string.uuid": "not-a-uuid"}), tarnavro.ErrOutOfRange, "ref"},
		// One uuid rule for every format (codec.ParseUUID): the canonical
		// form only, as in JSON.
		{"uuid in braces", with("ref", map[string]any{"string.uuid": "{f81d4fae-7dec-11d0-a765-00a0c91e6bf6}"}), tarnavro.ErrOutOfRange, "ref"},
		{"uuid without hyphens", with("ref", map[string]any{"string.uuid": "f81d4fae7dec11d0a76500a0c91e6bf6"}), tarnavro.ErrOutOfRange, "ref"},
		{"uuid urn", with("ref", map[string]any{"string.uuid": "urn:uuid:f81d4fae-7dec-11d0-a765-00a0c91e6bf6"}), tarnavro.ErrOutOfRange, "ref"},
		{"time of day past midnight", with("at", 25*time.Hour), tarnavro.ErrOutOfRange, "at"},
		{"invalid UTF-8", with("name", "\xff\xfe"), tarnavro.ErrOutOfRange, "name"},
		{"bad union index", corrupt(t, with("u", map[string]any{"int": 1}), []byte{0x00, 0x02}, []byte{0x06, 0x02}), tarnavro.ErrMalformed, "u"},
		{"bad enum index", corrupt(t, with("kind", "B"), []byte{0x00, 0x02, 0x6e, 0x02}, []byte{0x00, 0x02, 0x6e, 0x08}), tarnavro.ErrMalformed, "kind"},
		{"negative string length", corrupt(t, with("name", "n"), []byte{0x00, 0x02, 0x6e}, []byte{0x00, 0x01, 0x6e}), tarnavro.ErrMalformed, "name"},
	}
	// Every proper prefix of a valid payload is a truncated payload.
	for n := 1; n < len(valid); n++ {
		tests = append(tests, bad{"truncated to " + itoa(n) + " bytes", valid[:n], tarnavro.ErrMalformed, "*"})
	}

	h := newHarness(t, w, table(t, schema))
	require.NoError(t, h.dec.Append(h.rb, encode(t, w, good(1))))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := h.dec.Append(h.rb, tt.payload)
			require.Error(t, err)
			t.Log(err)
			assert.ErrorIs(t, err, tt.wantErr)
			assert.ErrorIs(t, err, tarnavro.ErrBadRecord)
			var fe *tarnavro.FieldError
			require.True(t, errors.As(err, &fe))
			if tt.path != "*" {
				assert.Equal(t, tt.path, fe.Path)
			}
			for i, f := range h.rb.Fields() {
				assert.Equal(t, 1, f.Len(), "column %d", i)
			}
		})
	}
	require.NoError(t, h.dec.Append(h.rb, encode(t, w, good(2))))
	rec := h.record(t)
	assert.Equal(t, []any{int64(1), int64(2)}, arrowtest.Column(rec, "id"))
	assert.Equal(t, []any{"12.34", "12.34"}, arrowtest.Column(rec, "price"))
	tags := map[string]any{"k": "x"}
	assert.Equal(t, []any{[]any{tags, map[string]any{"k": "y"}}, []any{tags, map[string]any{"k": "y"}}}, arrowtest.Column(rec, "tags"))
}

// corrupt replaces the last occurrence of old in payload with repl.
func corrupt(t *testing.T, payload, old, repl []byte) []byte {
	t.Helper()
	i := strings.LastIndex(string(payload), string(old))
	require.GreaterOrEqual(t, i, 0, "pattern %x not in payload %x", old, payload)
	out := append([]byte{}, payload...)
	copy(out[i:], repl)

	return out
}

func itoa(n int) string { return big.NewInt(int64(n)).String() }

func TestDecodeCallerColumns(t *testing.T) {
	w := parse(t, record(`"string"`))
	target := table(t, `{"type":"record","name":"R","fields":[{"name":"f","type":"string"},
		{"name":"_kafka","type":{"type":"record","name":"K","fields":[{"name":"offset","type":"long"}]}}]}`)
	h := newHarness(t, w, target, codec.WithCallerColumns("_kafka"))
	require.NoError(t, h.dec.Append(h.rb, encode(t, w, map[string]any{"f": "v"})))
	k := h.rb.Field(1)
	assert.Equal(t, 0, k.Len(), "the decoder must not touch a caller column")

	t.Run("writer field named like a caller column", func(t *testing.T) {
		w := parse(t, record(`"string"`))
		_, err := tarnavro.NewDecoder(w, target, codec.WithCallerColumns("f"))
		assert.ErrorIs(t, err, tarnavro.ErrIncompatible)
	})
	// Keep the builder consistent for the leak check.
	k.AppendNull()
}

func TestDecodeRefusesAForeignBuilder(t *testing.T) {
	w := parse(t, record(`"string"`))
	other := newHarness(t, parse(t, record(`"long"`)), table(t, record(`"long"`)))
	dec, err := tarnavro.NewDecoder(w, table(t, record(`"string"`)))
	require.NoError(t, err)
	err = dec.Append(other.rb, encode(t, w, map[string]any{"f": "v"}))
	assert.ErrorIs(t, err, tarnavro.ErrBuilderSchema)
	assert.Equal(t, 0, other.rb.Field(0).Len())
}
