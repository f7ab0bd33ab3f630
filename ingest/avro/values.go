package avro

import (
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	hamba "github.com/hamba/avro/v2"

	"github.com/tarnhq/tarn/ingest/codec"
	"github.com/tarnhq/tarn/ingest/internal/tape"
)

// leafKind is one (Avro encoding → Arrow builder) conversion.
type leafKind uint8

const (
	kBool            leafKind = iota // boolean → Boolean
	kInt                             // int → Int32
	kIntToLong                       // int → Int64 (int → long promotion)
	kLong                            // long → Int64
	kFloat                           // float → Float32
	kFloatToDouble                   // float → Float64 (float → double promotion)
	kDouble                          // double → Float64
	kString                          // string → String (UTF-8 checked)
	kBytes                           // bytes → Binary
	kEnum                            // enum index → String (the symbol)
	kFixed                           // fixed(n) → FixedSizeBinary(n)
	kUUID                            // string (uuid) → uuid extension (16 bytes)
	kUUIDFixed                       // fixed(16) (uuid) → uuid extension
	kDecimalBytes                    // bytes (decimal) → Decimal128
	kDecimalFixed                    // fixed (decimal) → Decimal128
	kDate                            // int (date, days) → Date32
	kTimeMillis                      // int (time-millis) → Time64 µs
	kTimeMicros                      // long (time-micros) → Time64 µs
	kTimestampMillis                 // long ((local-)timestamp-millis) → Timestamp µs
	kTimestampMicros                 // long ((local-)timestamp-micros) → Timestamp µs
)

// writeKinds maps each conversion to the Arrow builder its column has.
var writeKinds = [...]tape.Kind{
	kBool:            tape.Bool,
	kInt:             tape.Int32,
	kIntToLong:       tape.Int64,
	kLong:            tape.Int64,
	kFloat:           tape.Float32,
	kFloatToDouble:   tape.Float64,
	kDouble:          tape.Float64,
	kString:          tape.StringBytes,
	kBytes:           tape.Binary,
	kEnum:            tape.StringBytes,
	kFixed:           tape.FixedBinary,
	kUUID:            tape.UUID,
	kUUIDFixed:       tape.UUID,
	kDecimalBytes:    tape.Decimal128,
	kDecimalFixed:    tape.Decimal128,
	kDate:            tape.Date32,
	kTimeMillis:      tape.Time64,
	kTimeMicros:      tape.Time64,
	kTimestampMillis: tape.Timestamp,
	kTimestampMicros: tape.Timestamp,
}

// microsPerDay bounds an Iceberg time: microseconds since midnight.
const microsPerDay = 86_400_000_000

// leafNode reads one primitive, enum or fixed value.
type leafNode struct {
	path    string
	kind    leafKind
	size    int      // kFixed, kDecimalFixed: bytes per value
	prec    int32    // kDecimal*: the target column's precision
	scale   int32    // kDecimal*: the column's scale, for messages
	symbols [][]byte // kEnum
}

// compileLeaf picks the conversion for writer schema w into a column of
// type tt, refusing pairs Iceberg evolution does not allow.
func compileLeaf(w hamba.Schema, tt iceberg.Type, path string) (node, error) {
	wt, err := primitiveOf(w, path)
	if err != nil {
		return nil, err
	}
	if !codec.Promotes(wt, tt) {
		return nil, incompatible(path, "writer %s, table %s", wt, tt)
	}
	n := &leafNode{path: path}
	if d, ok := tt.(iceberg.DecimalType); ok {
		n.prec, n.scale = int32(d.Precision()), int32(d.Scale())
	}

	switch w := deref(w).(type) {
	case *hamba.EnumSchema:
		n.kind = kEnum
		for _, s := range w.Symbols() {
			n.symbols = append(n.symbols, []byte(s))
		}
	case *hamba.FixedSchema:
		n.size = w.Size()
		n.kind = kFixed
		if _, ok := w.Logical().(*hamba.DecimalLogicalSchema); ok {
			n.kind = kDecimalFixed
		}
		if isUUIDFixed(w) {
			n.kind = kUUIDFixed
		}
	case *hamba.PrimitiveSchema:
		lt := logicalOf(w)
		switch w.Type() {
		case hamba.Boolean:
			n.kind = kBool
		case hamba.Int:
			switch {
			case lt == hamba.Date:
				n.kind = kDate
			case lt == hamba.TimeMillis:
				n.kind = kTimeMillis
			case tt.Equals(iceberg.PrimitiveTypes.Int64):
				n.kind = kIntToLong
			default:
				n.kind = kInt
			}
		case hamba.Long:
			switch lt {
			case hamba.TimeMicros:
				n.kind = kTimeMicros
			case hamba.TimestampMillis, hamba.LocalTimestampMillis:
				n.kind = kTimestampMillis
			case hamba.TimestampMicros, hamba.LocalTimestampMicros:
				n.kind = kTimestampMicros
			default:
				n.kind = kLong
			}
		case hamba.Float:
			n.kind = kFloat
			if tt.Equals(iceberg.PrimitiveTypes.Float64) {
				n.kind = kFloatToDouble
			}
		case hamba.Double:
			n.kind = kDouble
		case hamba.String:
			n.kind = kString
			if lt == hamba.UUID {
				n.kind = kUUID
			}
		case hamba.Bytes:
			n.kind = kBytes
			if _, ok := w.Logical().(*hamba.DecimalLogicalSchema); ok {
				n.kind = kDecimalBytes
			}
		}
	}

	return n, nil
}

func (n *leafNode) read(s *state) error {
	r, t := s.r, &s.t
	switch n.kind {
	case kBool:
		t.PutBool(r.ReadBool())
	case kInt, kIntToLong:
		t.PutInt(int64(r.ReadInt()))
	case kDate:
		v := int64(r.ReadInt())
		if err := readErr(s, n.path); err != nil {
			return err
		}
		if !codec.DateInRange(v) {
			return codec.DateRangeError(n.path, v, fmt.Sprintf("date %d", v))
		}
		t.PutInt(v)
	case kLong:
		t.PutInt(r.ReadLong())
	case kTimestampMicros:
		v := r.ReadLong()
		if err := readErr(s, n.path); err != nil {
			return err
		}
		if !codec.TimestampInRange(v) {
			return codec.TimestampRangeError(n.path, v, fmt.Sprintf("timestamp-micros %d", v))
		}
		t.PutInt(v)
	case kTimeMillis:
		v := int64(r.ReadInt()) * 1000
		if err := readErr(s, n.path); err != nil {
			return err
		}
		if v < 0 || v >= microsPerDay {
			return outOfRange(n.path, "time-millis %d is not a time of day", v/1000)
		}
		t.PutInt(v)
	case kTimeMicros:
		v := r.ReadLong()
		if err := readErr(s, n.path); err != nil {
			return err
		}
		if v < 0 || v >= microsPerDay {
			return outOfRange(n.path, "time-micros %d is not a time of day", v)
		}
		t.PutInt(v)
	case kTimestampMillis:
		v := r.ReadLong()
		if err := readErr(s, n.path); err != nil {
			return err
		}
		if v > math.MaxInt64/1000 || v < math.MinInt64/1000 {
			return outOfRange(n.path, "timestamp-millis %d is outside years 1-9999", v)
		}
		if !codec.TimestampInRange(v * 1000) {
			return codec.TimestampRangeError(n.path, v*1000, fmt.Sprintf("timestamp-millis %d", v))
		}
		t.PutInt(v * 1000)
	case kFloat, kFloatToDouble:
		t.PutFloat(float64(r.ReadFloat()))
	case kDouble:
		t.PutFloat(r.ReadDouble())
	case kString:
		b, err := readString(s, n.path)
		if err != nil {
			return err
		}
		t.PutBytes(b)
	case kBytes:
		b, err := readBytes(s, n.path)
		if err != nil {
			return err
		}
		t.PutBytes(b)
	case kEnum:
		i := r.ReadInt()
		if err := readErr(s, n.path); err != nil {
			return err
		}
		if i < 0 || int(i) >= len(n.symbols) {
			return malformed(n.path, "enum index %d, the enum has %d symbols", i, len(n.symbols))
		}
		t.PutBytes(n.symbols[i])
	case kFixed, kUUIDFixed: // every 16 bytes are a uuid
		b := t.Take(n.size)
		r.Read(b)
		t.PutBytes(b)
	case kUUID:
		return n.readUUID(s)
	case kDecimalBytes, kDecimalFixed:
		return n.readDecimal(s)
	}

	return readErr(s, n.path)
}

// readString reads an Avro string; Iceberg strings are UTF-8.
func readString(s *state, path string) ([]byte, error) {
	b, err := readBytes(s, path)
	if err != nil {
		return nil, err
	}
	if !utf8.Valid(b) {
		return nil, outOfRange(path, "string is not valid UTF-8")
	}

	return b, nil
}

func (n *leafNode) readUUID(s *state) error {
	str, err := readBytes(s, n.path)
	if err != nil {
		return err
	}
	u, ok := codec.ParseUUID(str)
	if !ok {
		return outOfRange(n.path, "%q is not a uuid in canonical form (8-4-4-4-12 hex digits)", str)
	}
	s.t.Keep(u[:])

	return nil
}

func (n *leafNode) readDecimal(s *state) error {
	var b []byte
	if n.kind == kDecimalFixed {
		b = s.t.Take(n.size)
		s.r.Read(b)
		if err := readErr(s, n.path); err != nil {
			return err
		}
	} else {
		var err error
		if b, err = readBytes(s, n.path); err != nil {
			return err
		}
	}
	v, ok := codec.DecimalFromBytes(b)
	if !ok {
		return outOfRange(n.path, "decimal unscaled value 0x%x is empty or wider than 128 bits", b)
	}
	if !v.FitsInPrecision(n.prec) {
		return outOfRange(n.path, "decimal %s overflows decimal(%d,%d)", v.ToString(n.scale), n.prec, n.scale)
	}
	s.t.PutDec(v)

	return nil
}

func (n *leafNode) write(t *tape.Tape, b array.Builder) { t.Write(writeKinds[n.kind], b) }
