package avro

import (
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	hamba "github.com/hamba/avro/v2"

	"github.com/tarnhq/tarn/ingest/codec"
	"github.com/tarnhq/tarn/ingest/connect"
	"github.com/tarnhq/tarn/ingest/internal/tape"
)

// leafKind is one (Avro encoding → Arrow builder) conversion.
type leafKind uint8

const (
	kBool          leafKind = iota // boolean → Boolean
	kInt                           // int → Int32
	kIntToLong                     // int → Int64 (int → long promotion)
	kLong                          // long → Int64
	kFloat                         // float → Float32
	kFloatToDouble                 // float → Float64 (float → double promotion)
	kDouble                        // double → Float64
	kString                        // string → String (UTF-8 checked)
	kBytes                         // bytes → Binary
	kEnum                          // enum index → String (the symbol)
	kFixed                         // fixed(n) → FixedSizeBinary(n)
	kUUID                          // string (uuid, io.debezium.data.Uuid) → uuid extension (16 bytes)
	kUUIDFixed                     // fixed(16) (uuid) → uuid extension
	kDecimalBytes                  // bytes (decimal, Connect Decimal) → Decimal128
	kDecimalFixed                  // fixed (decimal) → Decimal128
	// kIntTemporal: int (date, time-millis; Connect's Date and Time,
	// Debezium's Date and Time) → Date32 or Time64, by conv.
	kIntTemporal
	// kLongTemporal: long (time-micros, (local-)timestamp-millis/micros;
	// Connect's Timestamp, Debezium's MicroTime, NanoTime, Timestamp,
	// MicroTimestamp, NanoTimestamp) → Time64 or Timestamp, by conv.
	kLongTemporal
	// kZoned: string (Debezium's ZonedTimestamp, ZonedTime) → Timestamp
	// or Time64, by conv.
	kZoned
)

// leafNode reads one primitive, enum or fixed value.
type leafNode struct {
	path    string
	kind    leafKind
	out     tape.Kind    // the column's builder
	conv    connect.Kind // k*Temporal, kZoned: the unit and range of the value
	size    int          // kFixed, kDecimalFixed: bytes per value
	prec    int32        // kDecimal*: the target column's precision
	scale   int32        // kDecimal*: the column's scale, for messages
	symbols [][]byte     // kEnum
}

// temporal is the conversion of an Avro logical type (a connect.Kind of
// the same unit and range: timestamp-micros converts as
// LocalTimestampMicros does; the column's type comes from the logical
// type) and the builder of its column.
var temporal = map[hamba.LogicalType]struct {
	conv connect.Kind
	out  tape.Kind
}{
	hamba.Date:                 {connect.Date, tape.Date32},
	hamba.TimeMillis:           {connect.TimeMillis, tape.Time64},
	hamba.TimeMicros:           {connect.TimeMicros, tape.Time64},
	hamba.TimestampMillis:      {connect.TimestampMillis, tape.Timestamp},
	hamba.LocalTimestampMillis: {connect.LocalTimestampMillis, tape.Timestamp},
	hamba.TimestampMicros:      {connect.LocalTimestampMicros, tape.Timestamp},
	hamba.LocalTimestampMicros: {connect.LocalTimestampMicros, tape.Timestamp},
}

// compileLeaf picks the conversion for writer schema w into a column of
// type tt, refusing pairs Iceberg evolution does not allow.
func compileLeaf(w hamba.Schema, tt iceberg.Type, path string) (node, error) {
	wt, sem, err := leafType(w, tt, path)
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
	if sem.Kind != connect.Plain {
		compileSemantic(n, sem.Kind)

		return n, nil
	}

	switch w := deref(w).(type) {
	case *hamba.EnumSchema:
		n.kind, n.out = kEnum, tape.StringBytes
		for _, s := range w.Symbols() {
			n.symbols = append(n.symbols, []byte(s))
		}
	case *hamba.FixedSchema:
		n.size = w.Size()
		n.kind, n.out = kFixed, tape.FixedBinary
		if _, ok := w.Logical().(*hamba.DecimalLogicalSchema); ok {
			n.kind, n.out = kDecimalFixed, tape.Decimal128
		}
		if isUUIDFixed(w) {
			n.kind, n.out = kUUIDFixed, tape.UUID
		}
	case *hamba.PrimitiveSchema:
		lt := logicalOf(w)
		if c, ok := temporal[lt]; ok {
			n.kind, n.conv, n.out = kLongTemporal, c.conv, c.out
			if w.Type() == hamba.Int {
				n.kind = kIntTemporal
			}

			return n, nil
		}
		switch w.Type() {
		case hamba.Boolean:
			n.kind, n.out = kBool, tape.Bool
		case hamba.Int:
			n.kind, n.out = kInt, tape.Int32
			if tt.Equals(iceberg.PrimitiveTypes.Int64) {
				n.kind, n.out = kIntToLong, tape.Int64
			}
		case hamba.Long:
			n.kind, n.out = kLong, tape.Int64
		case hamba.Float:
			n.kind, n.out = kFloat, tape.Float32
			if tt.Equals(iceberg.PrimitiveTypes.Float64) {
				n.kind, n.out = kFloatToDouble, tape.Float64
			}
		case hamba.Double:
			n.kind, n.out = kDouble, tape.Float64
		case hamba.String:
			n.kind, n.out = kString, tape.StringBytes
			if lt == hamba.UUID {
				n.kind, n.out = kUUID, tape.UUID
			}
		case hamba.Bytes:
			n.kind, n.out = kBytes, tape.Binary
			if _, ok := w.Logical().(*hamba.DecimalLogicalSchema); ok {
				n.kind, n.out = kDecimalBytes, tape.Decimal128
			}
		}
	}

	return n, nil
}

// compileSemantic sets n's conversion for a Connect or Debezium semantic
// type (connectSemantic) on a primitive.
func compileSemantic(n *leafNode, k connect.Kind) {
	n.conv = k
	switch k {
	case connect.Date:
		n.kind, n.out = kIntTemporal, tape.Date32
	case connect.TimeMillis:
		n.kind, n.out = kIntTemporal, tape.Time64
	case connect.TimeMicros, connect.TimeNanos:
		n.kind, n.out = kLongTemporal, tape.Time64
	case connect.TimestampMillis, connect.LocalTimestampMillis, connect.LocalTimestampMicros, connect.LocalTimestampNanos:
		n.kind, n.out = kLongTemporal, tape.Timestamp
	case connect.ZonedTimestamp:
		n.kind, n.out = kZoned, tape.Timestamp
	case connect.ZonedTime:
		n.kind, n.out = kZoned, tape.Time64
	case connect.Decimal:
		n.kind, n.out = kDecimalBytes, tape.Decimal128
	case connect.UUID:
		n.kind, n.out = kUUID, tape.UUID
	}
}

func (n *leafNode) read(s *state) error {
	r, t := s.r, &s.t
	switch n.kind {
	case kBool:
		t.PutBool(r.ReadBool())
	case kInt, kIntToLong:
		t.PutInt(int64(r.ReadInt()))
	case kLong:
		t.PutInt(r.ReadLong())
	case kIntTemporal, kLongTemporal:
		var v int64
		if n.kind == kIntTemporal {
			v = int64(r.ReadInt())
		} else {
			v = r.ReadLong()
		}
		if err := readErr(s, n.path); err != nil {
			return err
		}
		v, err := n.conv.Int(v, n.path)
		if err != nil {
			return err
		}
		t.PutInt(v)
	case kZoned:
		b, err := readString(s, n.path)
		if err != nil {
			return err
		}
		v, err := n.conv.Text(string(b), n.path)
		if err != nil {
			return err
		}
		t.PutInt(v)
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
	v, err := codec.UnscaledDecimal(b, n.prec, n.scale, n.path)
	if err != nil {
		return err
	}
	s.t.PutDec(v)

	return nil
}

func (n *leafNode) write(t *tape.Tape, b array.Builder) { t.Write(n.out, b) }
