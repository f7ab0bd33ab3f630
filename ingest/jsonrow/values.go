package jsonrow

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"

	"github.com/tarnhq/tarn/ingest/codec"
	"github.com/tarnhq/tarn/ingest/internal/jsonlit"
	"github.com/tarnhq/tarn/ingest/internal/tape"
)

// leafKind is one (JSON value → Arrow builder) conversion.
type leafKind uint8

const (
	kBool        leafKind = iota // true/false → Boolean
	kInt                         // integral number → Int32
	kLong                        // integral number → Int64
	kFloat                       // number → Float32
	kDouble                      // number → Float64
	kDecimal                     // number or numeric string → Decimal128
	kString                      // string, or a number's text → String
	kJSONText                    // any value → String (strings as is, others as JSON text)
	kDate                        // "YYYY-MM-DD" → Date32
	kTime                        // "HH:MM:SS[.f]" → Time64 µs
	kTimestamp                   // RFC 3339 (offset optional) or epoch integer → Timestamp µs
	kTimestampTz                 // RFC 3339 with offset or epoch integer → Timestamp µs UTC
	kUUID                        // canonical uuid string → uuid extension (16 bytes)
	kBinary                      // base64 → Binary
	kFixed                       // base64 → FixedSizeBinary(n)
)

// writeKinds maps each conversion to the Arrow builder its column has.
var writeKinds = [...]tape.Kind{
	kBool:        tape.Bool,
	kInt:         tape.Int32,
	kLong:        tape.Int64,
	kFloat:       tape.Float32,
	kDouble:      tape.Float64,
	kDecimal:     tape.Decimal128,
	kString:      tape.String,
	kJSONText:    tape.String,
	kDate:        tape.Date32,
	kTime:        tape.Time64,
	kTimestamp:   tape.Timestamp,
	kTimestampTz: tape.Timestamp,
	kUUID:        tape.UUID,
	kBinary:      tape.Binary,
	kFixed:       tape.FixedBinary,
}

// Units: Iceberg stores timestamps in microseconds.
const (
	microsPerSecond = 1_000_000
	secondsPerDay   = 86_400
)

// Layouts accepted for dates and timestamps (RFC 3339 and its zone-less
// form; times are jsonlit.TimeOfDay's). ".999999999" makes the fraction
// optional.
const (
	layoutDate        = "2006-01-02"
	layoutTimestamp   = "2006-01-02T15:04:05.999999999"
	layoutTimestampTz = time.RFC3339Nano
)

// leafNode converts one primitive value.
type leafNode struct {
	path  string
	kind  leafKind
	size  int           // kFixed: bytes per value
	prec  int32         // kDecimal
	scale int32         // kDecimal
	unit  TimestampUnit // kTimestamp, kTimestampTz: of integers
}

// compileLeaf picks the conversion into a column of primitive type tt;
// integers in timestamp columns count unit.
func compileLeaf(tt iceberg.Type, path string, unit TimestampUnit) (*leafNode, error) {
	n := &leafNode{path: path, unit: unit}
	switch tt := tt.(type) {
	case iceberg.BooleanType:
		n.kind = kBool
	case iceberg.Int32Type:
		n.kind = kInt
	case iceberg.Int64Type:
		n.kind = kLong
	case iceberg.Float32Type:
		n.kind = kFloat
	case iceberg.Float64Type:
		n.kind = kDouble
	case iceberg.DecimalType:
		n.kind, n.prec, n.scale = kDecimal, int32(tt.Precision()), int32(tt.Scale())
	case iceberg.StringType:
		n.kind = kString
	case iceberg.DateType:
		n.kind = kDate
	case iceberg.TimeType:
		n.kind = kTime
	case iceberg.TimestampType:
		n.kind = kTimestamp
	case iceberg.TimestampTzType:
		n.kind = kTimestampTz
	case iceberg.UUIDType:
		n.kind = kUUID
	case iceberg.BinaryType:
		n.kind = kBinary
	case iceberg.FixedType:
		n.kind, n.size = kFixed, tt.Len()
	default:
		return nil, unsupported(path, "column type %s cannot be filled from JSON", tt)
	}

	return n, nil
}

func (n *leafNode) read(t *tape.Tape, v any) error {
	switch n.kind {
	case kBool:
		return jsonlit.ReadBool(t, v, n.path)
	case kInt, kLong:
		min, max, what := int64(math.MinInt64), int64(math.MaxInt64), "a long"
		if n.kind == kInt {
			min, max, what = math.MinInt32, math.MaxInt32, "an int"
		}
		i, err := jsonlit.Integer(v, min, max, what, n.path)
		if err != nil {
			return err
		}
		t.PutInt(i)
	case kFloat:
		return jsonlit.ReadFloat(t, v, 32, n.path)
	case kDouble:
		return jsonlit.ReadFloat(t, v, 64, n.path)
	case kDecimal:
		return n.readDecimal(t, v)
	case kString:
		switch v := v.(type) {
		case string:
			t.PutStr(v)
		case json.Number:
			// The literal as written: lossless, and what the producer
			// meant when a title happens to be numeric (1776).
			t.PutStr(string(v))
		default:
			return n.wrongType(v, "a string or a number")
		}
	case kJSONText:
		s, ok := v.(string)
		if !ok {
			var err error
			if s, err = jsonText(v); err != nil {
				return malformed(n.path, "%v", err)
			}
		}
		t.PutStr(s)
	case kDate:
		s, ok := v.(string)
		if !ok {
			return n.wrongType(v, `a date string "YYYY-MM-DD"`)
		}
		d, err := time.Parse(layoutDate, s)
		if err != nil {
			return malformed(n.path, "%q is not a date (YYYY-MM-DD)", s)
		}
		days := d.Unix() / secondsPerDay // midnight UTC: exact
		if !codec.DateInRange(days) {
			return codec.DateRangeError(n.path, days, strconv.Quote(s))
		}
		t.PutInt(days)
	case kTime:
		s, ok := v.(string)
		if !ok {
			return n.wrongType(v, `a time string "HH:MM:SS"`)
		}
		micros, err := jsonlit.TimeOfDay(s)
		if err != nil {
			return malformed(n.path, "%q is not a time of day (HH:MM:SS[.ffffff])", s)
		}
		t.PutInt(micros)
	case kTimestamp, kTimestampTz:
		return n.readTimestamp(t, v)
	case kUUID:
		return jsonlit.ReadUUID(t, v, n.path)
	case kBinary, kFixed:
		return n.readBase64(t, v)
	}

	return nil
}

func (n *leafNode) wrongType(v any, want string) error { return jsonlit.WrongType(n.path, v, want) }

func (n *leafNode) readDecimal(t *tape.Tape, v any) error {
	var lit string
	switch v := v.(type) {
	case json.Number:
		lit = string(v)
	case string:
		lit = v
	default:
		return n.wrongType(v, "a number or a numeric string")
	}

	return jsonlit.ReadDecimal(t, lit, n.prec, n.scale, n.path)
}

func (n *leafNode) readTimestamp(t *tape.Tape, v any) error {
	switch v := v.(type) {
	case json.Number:
		i, err := jsonlit.Int(string(v))
		if err != nil {
			return outOfRange(n.path, "%s is not an integer count of %s that fits a long", v, n.unit.plural())
		}
		us, ok := n.unit.micros(i)
		if !ok {
			return outOfRange(n.path, "%s %s since the epoch is outside years 1-9999 (wrong unit?)", v, n.unit.plural())
		}
		if !codec.TimestampInRange(us) {
			return codec.TimestampRangeError(n.path, us, string(v)+" "+n.unit.plural()+" since the epoch")
		}
		t.PutInt(us)
	case string:
		ts, err := time.Parse(layoutTimestampTz, v)
		if err != nil && n.kind == kTimestamp {
			ts, err = time.Parse(layoutTimestamp, v)
		}
		if err != nil {
			if n.kind == kTimestampTz {
				return malformed(n.path, "%q is not an RFC 3339 timestamp with an offset", v)
			}

			return malformed(n.path, "%q is not an RFC 3339 timestamp", v)
		}
		// A year of 0000 parses, and an offset can push a 9999 wall clock
		// past the range.
		us := ts.UnixMicro()
		if !codec.TimestampInRange(us) {
			return codec.TimestampRangeError(n.path, us, strconv.Quote(v))
		}
		t.PutInt(us)
	default:
		return n.wrongType(v, "an RFC 3339 string or an integer count of "+n.unit.plural()+" since the epoch")
	}

	return nil
}

// micros converts a count of u since the epoch to microseconds,
// truncating nanoseconds toward the past; ok is false on overflow.
func (u TimestampUnit) micros(i int64) (int64, bool) {
	switch u {
	case Seconds:
		return i * microsPerSecond, i <= math.MaxInt64/microsPerSecond && i >= math.MinInt64/microsPerSecond
	case Micros:
		return i, true
	case Nanos:
		us := i / 1000
		if i%1000 < 0 {
			us--
		}

		return us, true
	}

	return i * 1000, i <= math.MaxInt64/1000 && i >= math.MinInt64/1000
}

// plural names the unit in messages.
func (u TimestampUnit) plural() string {
	switch u {
	case Seconds:
		return "seconds"
	case Micros:
		return "microseconds"
	case Nanos:
		return "nanoseconds"
	}

	return "milliseconds"
}

func (n *leafNode) readBase64(t *tape.Tape, v any) error {
	b, err := jsonlit.Bytes(t, v, n.path)
	if err != nil {
		return err
	}
	if n.kind == kFixed && len(b) != n.size {
		return outOfRange(n.path, "%d bytes, fixed[%d] holds %d", len(b), n.size, n.size)
	}
	t.PutBytes(b)

	return nil
}

// jsonText renders a parsed JSON value compactly: object keys sorted,
// numbers as written, no HTML escaping.
func jsonText(v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}

	return string(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}

func (n *leafNode) write(t *tape.Tape, b array.Builder) { t.Write(writeKinds[n.kind], b) }
