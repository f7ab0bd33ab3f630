package jsonrow_test

import (
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/ingest/codec"
	"github.com/tarnhq/tarn/ingest/jsonrow"
	"github.com/tarnhq/tarn/internal/arrowtest"
)

const filmsSchema = `{"type":"struct","fields":[
	{"id":1,"name":"title","required":false,"type":"string"},
	{"id":2,"name":"year","required":false,"type":"int"}]}`

// TestDecodeNumberIntoString pins issue 14 item 7: a JSON number in a
// string column was a malformed record, so the films titled 1776 and
// 2012, which producers write as numbers, went to the dead letter table.
// The number is stored as its text, exactly as written.
func TestDecodeNumberIntoString(t *testing.T) {
	h := newHarness(t, schema(t, filmsSchema))
	for _, row := range []string{
		`{"title": 1776, "year": 1972}`,
		`{"title": 2012, "year": 2009}`,
		`{"title": "Heat", "year": 1995}`,
		`{"title": 1.50}`,
		`{"title": -0}`,
		`{"title": 2E3}`,
		`{"title": 12345678901234567890123}`,
	} {
		require.NoError(t, h.appendJSON(row), row)
	}
	rec := h.record(t)
	assert.Equal(t, []any{"1776", "2012", "Heat", "1.50", "-0", "2E3", "12345678901234567890123"}, arrowtest.Column(rec, "title"))
	assert.Equal(t, []any{int32(1972), int32(2009), int32(1995), nil, nil, nil, nil}, arrowtest.Column(rec, "year"))
}

// instant is 2024-03-01T13:25:30.123456789Z.
var instant = time.Date(2024, 3, 1, 13, 25, 30, 123456789, time.UTC)

// TestDecodeTimestampUnits pins issue 14 item 8: integers in timestamp
// columns were always milliseconds, so a microsecond epoch
// (1709190000000000, 2024-02-29T07:00:00Z) was stored as year 56132, and pyarrow could no
// longer read the table. The unit is an option; a value outside years
// 1-9999 is a bad record.
func TestDecodeTimestampUnits(t *testing.T) {
	tests := []struct {
		unit jsonrow.TimestampUnit
		in   string
		want time.Time
	}{
		{jsonrow.Seconds, "1709299530", instant.Truncate(time.Second)},
		{jsonrow.Millis, "1709299530123", instant.Truncate(time.Millisecond)},
		{jsonrow.Micros, "1709299530123456", instant.Truncate(time.Microsecond)},
		{jsonrow.Nanos, "1709299530123456789", instant.Truncate(time.Microsecond)},
		{jsonrow.Nanos, "-1", time.Unix(0, -1000).UTC()}, // truncated toward the past
		{jsonrow.Seconds, "-62135596800", time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)},
		{jsonrow.Micros, "253402300799999999", time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)},
	}
	for _, tt := range tests {
		for _, typ := range []string{`"timestamptz"`, `"timestamp"`} {
			t.Run(string(tt.unit)+" "+tt.in+" "+typ, func(t *testing.T) {
				h := newHarness(t, oneColumn(t, typ, true), jsonrow.WithTimestampUnit(tt.unit))
				require.NoError(t, h.appendJSON(`{"f":`+tt.in+`}`))
				assert.Equal(t, []any{arrow.Timestamp(tt.want.UnixMicro())}, arrowtest.Column(h.record(t), "f"))
			})
		}
	}

	for _, tt := range []struct {
		unit jsonrow.TimestampUnit
		in   string
		msg  string
	}{
		// The input: a microsecond epoch (2024-02-29T07:00:00Z)
		// read as milliseconds.
		{"", "1709190000000000", "1709190000000000 milliseconds since the epoch is in year 56132, outside years 1-9999"},
		{jsonrow.Millis, "1709299530123456789", "outside years 1-9999"},
		{jsonrow.Seconds, "-62135596801", "in year 0, outside years 1-9999"},
		{jsonrow.Micros, "253402300800000000", "in year 10000, outside years 1-9999"},
		{jsonrow.Seconds, "1709299530123", "outside years 1-9999"},
		{jsonrow.Nanos, "1.5", "not an integer count of nanoseconds"},
	} {
		t.Run("refused "+string(tt.unit)+" "+tt.in, func(t *testing.T) {
			var opts []codec.Option
			if tt.unit != "" {
				opts = append(opts, jsonrow.WithTimestampUnit(tt.unit))
			}
			h := newHarness(t, oneColumn(t, `"timestamptz"`, true), opts...)
			err := h.appendJSON(`{"f":` + tt.in + `}`)
			require.ErrorIs(t, err, codec.ErrOutOfRange)
			assert.ErrorContains(t, err, tt.msg)
			assert.Equal(t, 0, h.rb.Field(0).Len(), "nothing appended")
		})
	}

	_, err := jsonrow.NewDecoder(oneColumn(t, `"timestamptz"`, true), jsonrow.WithTimestampUnit("minutes"))
	require.ErrorIs(t, err, codec.ErrUnsupported)
}
