package codec_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/ingest/codec"
)

func TestParseUUID(t *testing.T) {
	want := uuid.MustParse("f81d4fae-7dec-11d0-a765-00a0c91e6bf6")
	for _, in := range []string{"f81d4fae-7dec-11d0-a765-00a0c91e6bf6", "F81D4FAE-7DEC-11D0-A765-00A0C91E6BF6"} {
		u, ok := codec.ParseUUID([]byte(in))
		assert.True(t, ok, in)
		assert.Equal(t, want, u, in)
	}
	for _, in := range []string{
		"", "nope",
		"{f81d4fae-7dec-11d0-a765-00a0c91e6bf6}",
		"urn:uuid:f81d4fae-7dec-11d0-a765-00a0c91e6bf6",
		"f81d4fae7dec11d0a76500a0c91e6bf6",
		"f81d4fae-7dec-11d0-a765_00a0c91e6bf6",
		"f81d4fae-7dec-11d0-a765-00a0c91e6bfg",
		"f81d4fae-7dec-11d0-a765-00a0c91e6bf",
	} {
		_, ok := codec.ParseUUID([]byte(in))
		assert.False(t, ok, in)
	}
}

func TestDateTimeRange(t *testing.T) {
	first := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	last := time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)
	assert.Equal(t, first.UnixMicro(), codec.MinTimestampMicros)
	assert.Equal(t, last.UnixMicro(), codec.MaxTimestampMicros)
	assert.Equal(t, first.Unix()/86400, codec.MinDateDays)
	assert.Equal(t, last.Unix()/86400, codec.MaxDateDays)

	assert.True(t, codec.TimestampInRange(codec.MinTimestampMicros))
	assert.True(t, codec.TimestampInRange(codec.MaxTimestampMicros))
	assert.False(t, codec.TimestampInRange(codec.MinTimestampMicros-1))
	assert.False(t, codec.TimestampInRange(codec.MaxTimestampMicros+1))
	assert.True(t, codec.DateInRange(codec.MinDateDays))
	assert.True(t, codec.DateInRange(codec.MaxDateDays))
	assert.False(t, codec.DateInRange(codec.MinDateDays-1))
	assert.False(t, codec.DateInRange(codec.MaxDateDays+1))

	err := codec.TimestampRangeError("t", 1709190000000000*1000, "timestamp-millis 1709190000000000")
	require.ErrorIs(t, err, codec.ErrOutOfRange)
	var fe *codec.FieldError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "t", fe.Path)
	assert.EqualError(t, err, "field t: value does not fit its column: timestamp-millis 1709190000000000 is in year 56132, outside years 1-9999 (wrong unit?)")
	require.ErrorIs(t, codec.DateRangeError("d", codec.MaxDateDays+1, "date 2932897"), codec.ErrOutOfRange)
}
