package codec

import (
	"time"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/google/uuid"
)

// Rules every format applies to the values it stores, so that a value
// reads the same whichever format carried it.

// ParseUUID reads a uuid in its canonical text form, the one the Avro
// spec ("Logical Types: UUID", RFC 4122 string form), JSON Schema's
// "uuid" format and RFC 9562 §4 name: 36 characters, 32 hexadecimal
// digits (either case) in groups of 8-4-4-4-12 joined by hyphens
// ("f81d4fae-7dec-11d0-a765-00a0c91e6bf6"). Braces, a "urn:uuid:"
// prefix and the 32 digits without hyphens, which google/uuid's Parse
// also takes, are refused: ok is false.
func ParseUUID(s []byte) (u uuid.UUID, ok bool) {
	if len(s) != 36 {
		return uuid.UUID{}, false
	}
	// At 36 characters uuid.ParseBytes checks the hyphens' positions and
	// every digit.
	u, err := uuid.ParseBytes(s)

	return u, err == nil
}

// The range of dates and timestamps a format stores: years 1 to 9999,
// the range of Java's and Python's date-time types, of SQL's TIMESTAMP
// (ISO 9075) and of google.protobuf.Timestamp. A value outside it is
// nearly always a wrong unit (microseconds read as milliseconds land in
// year 56132), and readers choke on it: pyiceberg reads such a column
// into Arrow, but turning it into Python values (to_pylist, pandas) fails
// with "OverflowError: date value out of range", for the whole table. So
// it is a bad record (ErrOutOfRange), not a row.
const (
	// MinTimestampMicros is 0001-01-01T00:00:00Z in microseconds since
	// the epoch.
	MinTimestampMicros int64 = -62_135_596_800_000_000
	// MaxTimestampMicros is 9999-12-31T23:59:59.999999Z in microseconds
	// since the epoch.
	MaxTimestampMicros int64 = 253_402_300_799_999_999
	// MinDateDays is 0001-01-01 in days since 1970-01-01.
	MinDateDays int64 = -719_162
	// MaxDateDays is 9999-12-31 in days since 1970-01-01.
	MaxDateDays int64 = 2_932_896
)

// TimestampInRange reports whether micros (microseconds since the epoch,
// a timestamp or timestamptz value) lies in years 1 to 9999.
func TimestampInRange(micros int64) bool {
	return micros >= MinTimestampMicros && micros <= MaxTimestampMicros
}

// DateInRange reports whether days (since 1970-01-01, a date value) lies
// in years 1 to 9999.
func DateInRange(days int64) bool { return days >= MinDateDays && days <= MaxDateDays }

// TimestampRangeError is the error for a timestamp outside
// TimestampInRange: a *FieldError at path wrapping ErrOutOfRange that
// says where micros would have been, with what (the value as the format
// read it: "timestamp-millis 1709190000000000") first.
func TimestampRangeError(path string, micros int64, what string) error {
	return FieldErrorf(path, ErrOutOfRange, "%s is in year %d, outside years 1-9999 (wrong unit?)", what, time.UnixMicro(micros).UTC().Year())
}

// DateRangeError is TimestampRangeError for a date outside DateInRange.
func DateRangeError(path string, days int64, what string) error {
	return FieldErrorf(path, ErrOutOfRange, "%s is %d days from 1970-01-01, outside years 1-9999", what, days)
}

// DecimalFromBytes reads a big-endian two's-complement integer, the
// encoding of a decimal's unscaled value in Avro, Kafka Connect and
// Debezium (Java's BigInteger.toByteArray), into a 128-bit number; ok is
// false when it needs more than 128 bits or is empty (Java's BigInteger
// refuses zero-length input too).
func DecimalFromBytes(b []byte) (decimal128.Num, bool) {
	if len(b) == 0 {
		return decimal128.Num{}, false
	}
	var ext byte
	if b[0]&0x80 != 0 {
		ext = 0xff
	}
	// Bytes beyond 16 must be pure sign extension.
	for len(b) > 16 {
		if b[0] != ext || (b[1]&0x80 != 0) != (ext != 0) {
			return decimal128.Num{}, false
		}
		b = b[1:]
	}
	var buf [16]byte
	for i := range 16 - len(b) {
		buf[i] = ext
	}
	copy(buf[16-len(b):], b)
	var hi, lo uint64
	for i := range 8 {
		hi = hi<<8 | uint64(buf[i])
		lo = lo<<8 | uint64(buf[8+i])
	}

	return decimal128.New(int64(hi), lo), true
}

// UnscaledDecimal reads b (as DecimalFromBytes does) as the unscaled
// value of a decimal(prec, scale) column. Errors: a *FieldError at path
// wrapping ErrOutOfRange when b is empty, needs more than 128 bits, or
// has more than prec digits.
func UnscaledDecimal(b []byte, prec, scale int32, path string) (decimal128.Num, error) {
	v, ok := DecimalFromBytes(b)
	if !ok {
		return v, FieldErrorf(path, ErrOutOfRange, "decimal unscaled value 0x%x is empty or wider than 128 bits", b)
	}
	if !v.FitsInPrecision(prec) {
		return v, FieldErrorf(path, ErrOutOfRange, "decimal %s overflows decimal(%d,%d)", v.ToString(scale), prec, scale)
	}

	return v, nil
}
