package connect

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/tarnhq/tarn/ingest/codec"
	"github.com/tarnhq/tarn/ingest/internal/jsonlit"
)

// The value conversions of the semantic kinds, shared by every format
// that carries them (Avro through connect.name, Kafka Connect's JSON):
// each takes the base value as decoded and returns what the column holds,
// or a *codec.FieldError at path wrapping codec.ErrOutOfRange or
// codec.ErrMalformed.

const (
	microsPerDay = 86_400_000_000
	// maxVariableScale bounds the scale of a VariableScaleDecimal either
	// way: PostgreSQL's numeric has up to 16383 digits after the point and
	// 131072 before it (a negative scale appends zeros), so a larger one
	// is corruption, and writing it out could take gigabytes.
	maxVariableScale = 131072
)

// Int converts v, the int32 or int64 base value of a semantic kind that
// has one (Date, the times, the timestamps), to the column's value: days
// (Date), microseconds since midnight (times; within one day), or
// microseconds since the epoch (timestamps; nanoseconds truncated toward
// the past). Dates and timestamps outside years 1 to 9999 are
// ErrOutOfRange (codec.TimestampInRange), as are times outside a day:
// Iceberg's time stops at 23:59:59.999999, so PostgreSQL's 24:00:00,
// which Debezium passes on, does not fit.
func (k Kind) Int(v int64, path string) (int64, error) {
	switch k {
	case Date:
		if !codec.DateInRange(v) {
			return 0, codec.DateRangeError(path, v, fmt.Sprintf("date %d", v))
		}

		return v, nil
	case TimeMillis, TimeMicros, TimeNanos:
		us, ok := k.micros(v)
		if !ok || us < 0 || us >= microsPerDay {
			return 0, codec.FieldErrorf(path, codec.ErrOutOfRange, "%s is not a time of day (00:00:00 to 23:59:59.999999)", k.describe(v))
		}

		return us, nil
	case TimestampMillis, LocalTimestampMillis, LocalTimestampMicros, LocalTimestampNanos:
		us, ok := k.micros(v)
		if !ok {
			return 0, codec.FieldErrorf(path, codec.ErrOutOfRange, "%s is outside years 1-9999 (wrong unit?)", k.describe(v))
		}
		if !codec.TimestampInRange(us) {
			return 0, codec.TimestampRangeError(path, us, k.describe(v))
		}

		return us, nil
	}

	return v, nil
}

// micros scales a value of k's unit to microseconds; ok is false on
// overflow.
func (k Kind) micros(v int64) (int64, bool) {
	switch k {
	case TimeMillis, TimestampMillis, LocalTimestampMillis:
		return v * 1000, v <= math.MaxInt64/1000 && v >= math.MinInt64/1000
	case TimeNanos, LocalTimestampNanos:
		us := v / 1000
		if v%1000 < 0 {
			us--
		}

		return us, true
	}

	return v, true
}

// describe names a base value of k with its unit, for messages.
func (k Kind) describe(v int64) string {
	switch k {
	case TimeMillis, TimestampMillis, LocalTimestampMillis:
		return strconv.FormatInt(v, 10) + " ms"
	case TimeNanos, LocalTimestampNanos:
		return strconv.FormatInt(v, 10) + " ns"
	}

	return strconv.FormatInt(v, 10) + " µs"
}

// Text converts s, the string base value of ZonedTimestamp or ZonedTime,
// to microseconds since the epoch (the instant s names) or since
// midnight UTC. s is RFC 3339 with an offset, which is what Java's
// ISO_OFFSET_DATE_TIME and ISO_OFFSET_TIME write (seconds always,
// fraction digits as needed); anything else is ErrMalformed, and
// PostgreSQL's "infinity" and "-infinity", which Debezium passes on, and
// instants outside years 1 to 9999 are ErrOutOfRange.
func (k Kind) Text(s string, path string) (int64, error) {
	if k == ZonedTime {
		us, err := jsonlit.TimeOfDay(s)
		if err != nil {
			return 0, codec.FieldErrorf(path, codec.ErrMalformed, "%q is not a time with an offset (HH:MM:SS[.ffffff]+hh:mm)", s)
		}

		return us, nil
	}
	if s == "infinity" || s == "-infinity" {
		return 0, codec.FieldErrorf(path, codec.ErrOutOfRange, "%q (PostgreSQL's infinite timestamp) is outside years 1-9999", s)
	}
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, codec.FieldErrorf(path, codec.ErrMalformed, "%q is not an ISO 8601 date-time with an offset", s)
	}
	us := ts.UnixMicro()
	if !codec.TimestampInRange(us) {
		return 0, codec.TimestampRangeError(path, us, strconv.Quote(s))
	}

	return us, nil
}

// VariableScaleDecimalText writes the value of a VariableScaleDecimal,
// unscaled × 10^-scale with unscaled in two's complement, big-endian, as
// Java's BigDecimal.toPlainString does: "1234.567", "-0.005", "0.00",
// "1000" (scale -3). An empty unscaled value (Java's BigInteger refuses
// it) and a scale beyond ±131072 are ErrOutOfRange.
func VariableScaleDecimalText(scale int64, unscaled []byte, path string) (string, error) {
	switch {
	case len(unscaled) == 0:
		return "", codec.FieldErrorf(path, codec.ErrOutOfRange, "%s with an empty value", NameVariableScaleDecimal)
	case scale > maxVariableScale || scale < -maxVariableScale:
		return "", codec.FieldErrorf(path, codec.ErrOutOfRange, "%s scale %d is beyond ±%d", NameVariableScaleDecimal, scale, maxVariableScale)
	}
	v := new(big.Int).SetBytes(unscaled)
	if unscaled[0]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(unscaled))))
	}
	neg := v.Sign() < 0
	digits := v.Abs(v).String()
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	switch n := int(scale); {
	case n <= 0:
		b.WriteString(digits)
		if digits != "0" {
			b.WriteString(strings.Repeat("0", -n))
		}
	case len(digits) > n:
		b.WriteString(digits[:len(digits)-n])
		b.WriteByte('.')
		b.WriteString(digits[len(digits)-n:])
	default:
		b.WriteString("0.")
		b.WriteString(strings.Repeat("0", n-len(digits)))
		b.WriteString(digits)
	}

	return b.String(), nil
}
