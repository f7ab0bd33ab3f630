package connect

import (
	"strconv"

	"github.com/apache/iceberg-go"

	"github.com/tarnhq/tarn/ingest/codec"
)

// Type is a Kafka Connect schema type (Schema.Type), by the name Kafka
// Connect's JsonConverter writes it in a schema's "type"
// (org.apache.kafka.connect.json.JsonSchema).
type Type string

// The Kafka Connect schema types.
const (
	Int8    Type = "int8"
	Int16   Type = "int16"
	Int32   Type = "int32"
	Int64   Type = "int64"
	Float32 Type = "float"
	Float64 Type = "double"
	Boolean Type = "boolean"
	String  Type = "string"
	Bytes   Type = "bytes"
	Array   Type = "array"
	Map     Type = "map"
	Struct  Type = "struct"
)

// The schema names of the semantic types Tarn maps to their own Iceberg
// types (Kafka Connect's logical types, org.apache.kafka.connect.data, and
// Debezium's, io.debezium.time and io.debezium.data; see
// https://debezium.io/documentation/reference/connectors/postgresql.html#postgresql-data-types).
// Every other name (io.debezium.data.Json, Enum, EnumSet, Bits, Xml,
// io.debezium.time.Year, Interval, MicroDuration, the geometry structs,
// a connector's own struct names) leaves its base type's mapping as it is.
const (
	NameDate      = "org.apache.kafka.connect.data.Date"      // int32, days since 1970-01-01
	NameTime      = "org.apache.kafka.connect.data.Time"      // int32, milliseconds since midnight
	NameTimestamp = "org.apache.kafka.connect.data.Timestamp" // int64, milliseconds since the epoch
	NameDecimal   = "org.apache.kafka.connect.data.Decimal"   // bytes, unscaled; parameters scale and connect.decimal.precision

	NameDebeziumDate           = "io.debezium.time.Date"           // int32, days since 1970-01-01
	NameDebeziumTime           = "io.debezium.time.Time"           // int32, milliseconds since midnight
	NameDebeziumMicroTime      = "io.debezium.time.MicroTime"      // int64, microseconds since midnight
	NameDebeziumNanoTime       = "io.debezium.time.NanoTime"       // int64, nanoseconds since midnight
	NameDebeziumTimestamp      = "io.debezium.time.Timestamp"      // int64, milliseconds since the epoch, no time zone
	NameDebeziumMicroTimestamp = "io.debezium.time.MicroTimestamp" // int64, microseconds since the epoch, no time zone
	NameDebeziumNanoTimestamp  = "io.debezium.time.NanoTimestamp"  // int64, nanoseconds since the epoch, no time zone
	NameDebeziumZonedTimestamp = "io.debezium.time.ZonedTimestamp" // string, ISO 8601 date-time with offset
	NameDebeziumZonedTime      = "io.debezium.time.ZonedTime"      // string, ISO 8601 time with offset

	NameVariableScaleDecimal = "io.debezium.data.VariableScaleDecimal" // struct {scale int32, value bytes}
	NameDebeziumUUID         = "io.debezium.data.Uuid"                 // string, canonical uuid text
)

// Parameters of the Decimal schema (Kafka Connect's Decimal.SCALE_FIELD
// and the precision Debezium and Confluent's AvroData add).
const (
	ParamScale     = "scale"
	ParamPrecision = "connect.decimal.precision"
)

// DefaultDecimalPrecision is the precision of a Decimal whose schema does
// not say (Kafka Connect's Decimal has only a scale; Confluent's AvroData
// then writes Avro precision 64 as a placeholder) or says more than
// Iceberg holds: 38, Iceberg's largest (Iceberg spec, "Primitive Types").
// A value with more digits is a bad record (codec.ErrOutOfRange).
const DefaultDecimalPrecision = 38

// Kind is what a semantic type's values become.
type Kind uint8

// The semantic kinds. In each, the unit of the base value, and the
// Iceberg type of the column.
const (
	// Plain: no semantic type; the base type's mapping.
	Plain Kind = iota
	// Date: int32 days since 1970-01-01 → date (Kafka Connect Date,
	// io.debezium.time.Date).
	Date
	// TimeMillis: int32 milliseconds since midnight → time (Kafka Connect
	// Time, io.debezium.time.Time).
	TimeMillis
	// TimeMicros: int64 microseconds since midnight → time
	// (io.debezium.time.MicroTime).
	TimeMicros
	// TimeNanos: int64 nanoseconds since midnight → time, truncated to
	// microseconds (io.debezium.time.NanoTime).
	TimeNanos
	// TimestampMillis: int64 milliseconds since 1970-01-01T00:00:00Z, an
	// instant ("an absolute time", Kafka Connect's Timestamp javadoc) →
	// timestamptz, as Avro's timestamp-millis, which Confluent's AvroData
	// writes it as, and as Apache Iceberg's Kafka Connect sink maps it.
	TimestampMillis
	// LocalTimestampMillis, LocalTimestampMicros, LocalTimestampNanos:
	// int64 milliseconds, microseconds or nanoseconds since
	// 1970-01-01T00:00:00 of a wall clock without time zone → timestamp
	// (io.debezium.time.Timestamp, MicroTimestamp, NanoTimestamp:
	// Debezium's TIMESTAMP WITHOUT TIME ZONE columns); nanoseconds are
	// truncated toward the past to microseconds.
	LocalTimestampMillis
	LocalTimestampMicros
	LocalTimestampNanos
	// ZonedTimestamp: an ISO 8601 date-time with an offset
	// ("2023-11-14T22:13:20.123456+01:00", Java's ISO_OFFSET_DATE_TIME) →
	// timestamptz, the instant it names (io.debezium.time.ZonedTimestamp).
	ZonedTimestamp
	// ZonedTime: an ISO 8601 time with an offset ("22:13:20.123456+01:00",
	// ISO_OFFSET_TIME) → time, converted to UTC modulo one day (Iceberg
	// has no time with a zone; Debezium writes these in UTC already)
	// (io.debezium.time.ZonedTime).
	ZonedTime
	// Decimal: bytes, the unscaled value in two's complement, big-endian
	// (Java's BigInteger.toByteArray) → decimal(Precision, Scale) (Kafka
	// Connect Decimal).
	Decimal
	// VariableScaleDecimal: a struct {scale int32, value bytes} whose
	// every value has its own scale (Debezium's NUMERIC without a scale)
	// → string, the exact number in plain notation as Java's
	// BigDecimal.toPlainString writes it ("1234.567", "-0.005", "1000"):
	// no Iceberg decimal holds every such value (PostgreSQL's numeric
	// has up to 131072 digits before the point and 16383 after), and a
	// fixed scale would round or refuse some, so the column keeps them
	// losslessly as text, for engines to cast.
	VariableScaleDecimal
	// UUID: a uuid's canonical text → uuid (io.debezium.data.Uuid).
	UUID
)

// Semantic is the semantic type of one schema.
type Semantic struct {
	Kind Kind
	// Precision and Scale are a Decimal's column: Scale from the schema's
	// scale parameter, Precision from connect.decimal.precision (or
	// DefaultDecimalPrecision when absent or above 38), at least Scale.
	Precision, Scale int
}

// Of returns the semantic type that schema name, with parameters params,
// gives a value of Kafka Connect type base; Plain for names without one,
// and for a name on a base type it does not apply to (MicroTimestamp on a
// string), as Avro reads a logical type on the wrong type as the
// underlying type. A struct named VariableScaleDecimal is that type only
// if it has exactly the fields scale (int32) and value (bytes): the caller
// checks, by its format's representation.
//
// Errors: *codec.FieldError at path wrapping codec.ErrUnsupported for a
// Decimal whose scale parameter is missing, not an integer, or outside 0
// to 38 (the scales an Iceberg decimal has).
func Of(name string, base Type, params map[string]string, path string) (Semantic, error) {
	want, k := semantics(name)
	if k == Plain || want != base {
		return Semantic{}, nil
	}
	if k != Decimal {
		return Semantic{Kind: k}, nil
	}
	s, ok := params[ParamScale]
	scale, err := strconv.Atoi(s)
	switch {
	case !ok:
		return Semantic{}, codec.FieldErrorf(path, codec.ErrUnsupported, "%s without its %q parameter", NameDecimal, ParamScale)
	case err != nil:
		return Semantic{}, codec.FieldErrorf(path, codec.ErrUnsupported, "%s scale %q is not an integer", NameDecimal, s)
	}

	return DecimalOf(params[ParamPrecision], scale, path)
}

// DecimalOf is the Decimal of scale and the precision parameter text
// prec ("" when absent): see Semantic. Errors as Of's.
func DecimalOf(prec string, scale int, path string) (Semantic, error) {
	if scale < 0 || scale > DefaultDecimalPrecision {
		return Semantic{}, codec.FieldErrorf(path, codec.ErrUnsupported, "%s scale %d: Iceberg decimals have scale 0 to 38", NameDecimal, scale)
	}
	p, err := strconv.Atoi(prec)
	if err != nil || p < 1 || p > DefaultDecimalPrecision {
		p = DefaultDecimalPrecision
	}

	return Semantic{Kind: Decimal, Precision: max(p, scale), Scale: scale}, nil
}

// semantics returns the base type and the kind of a semantic type name.
func semantics(name string) (Type, Kind) {
	switch name {
	case NameDate, NameDebeziumDate:
		return Int32, Date
	case NameTime, NameDebeziumTime:
		return Int32, TimeMillis
	case NameDebeziumMicroTime:
		return Int64, TimeMicros
	case NameDebeziumNanoTime:
		return Int64, TimeNanos
	case NameTimestamp:
		return Int64, TimestampMillis
	case NameDebeziumTimestamp:
		return Int64, LocalTimestampMillis
	case NameDebeziumMicroTimestamp:
		return Int64, LocalTimestampMicros
	case NameDebeziumNanoTimestamp:
		return Int64, LocalTimestampNanos
	case NameDebeziumZonedTimestamp:
		return String, ZonedTimestamp
	case NameDebeziumZonedTime:
		return String, ZonedTime
	case NameDecimal:
		return Bytes, Decimal
	case NameVariableScaleDecimal:
		return Struct, VariableScaleDecimal
	case NameDebeziumUUID:
		return String, UUID
	}

	return "", Plain
}

// IcebergType is the type of s's column; nil for Plain.
func (s Semantic) IcebergType() iceberg.Type {
	switch s.Kind {
	case Date:
		return iceberg.PrimitiveTypes.Date
	case TimeMillis, TimeMicros, TimeNanos, ZonedTime:
		return iceberg.PrimitiveTypes.Time
	case TimestampMillis, ZonedTimestamp:
		return iceberg.PrimitiveTypes.TimestampTz
	case LocalTimestampMillis, LocalTimestampMicros, LocalTimestampNanos:
		return iceberg.PrimitiveTypes.Timestamp
	case Decimal:
		return iceberg.DecimalTypeOf(s.Precision, s.Scale)
	case VariableScaleDecimal:
		return iceberg.PrimitiveTypes.String
	case UUID:
		return iceberg.PrimitiveTypes.UUID
	}

	return nil
}
