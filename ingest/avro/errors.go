package avro

import (
	"strings"

	"github.com/tarnhq/tarn/ingest/codec"
	"github.com/tarnhq/tarn/internal/errclass"
)

// Parent sentinels: the shared ones of ingest/codec, so that the pipeline
// classifies Avro errors like those of every other format. The first two
// are about a schema (the topic suspends until the schema or the table
// changes); ErrBadRecord is about one record (the topic's error-mode
// decides: suspend, skip or dlq).
var (
	// ErrUnsupported: the Avro schema has a construct Tarn cannot store in an
	// Iceberg table (a recursive record, a null-only union, a decimal wider
	// than 38 digits, ...).
	ErrUnsupported = codec.ErrUnsupported
	// ErrIncompatible: the writer schema cannot be decoded into the table's
	// schema (a type change Iceberg does not allow, a writer field the table
	// lacks, a required column the writer lacks, optional into required).
	ErrIncompatible = codec.ErrIncompatible
	// ErrBadRecord: one payload cannot become a row; nothing was appended.
	ErrBadRecord = codec.ErrBadRecord
)

// Specific sentinels.
var (
	// ErrNotRecord: the top-level schema is not a record.
	ErrNotRecord = errclass.New(ErrUnsupported, "top-level avro schema is not a record")
	// ErrRecursive: a record refers to itself, directly or through other
	// types; Iceberg schemas are finite trees.
	ErrRecursive = errclass.New(ErrUnsupported, "recursive avro record")
	// ErrMalformed: the payload is not a valid Avro binary encoding of the
	// writer schema (truncated, trailing bytes, bad union or enum index,
	// negative length).
	ErrMalformed = codec.ErrMalformed
	// ErrOutOfRange: a decoded value does not fit its column (decimal
	// overflow, an invalid uuid string, a time of day outside one day, a
	// timestamp-millis outside the microsecond range).
	ErrOutOfRange = codec.ErrOutOfRange
	// ErrBuilderSchema: the RecordBuilder passed to Append was not built from
	// Decoder.ArrowSchema. A programming error, not a bad record.
	ErrBuilderSchema = codec.ErrBuilderSchema
)

// FieldError is an error about one field (codec.FieldError). Path is the
// Iceberg name path (dot-separated; list elements are "element", map keys
// and values "key" and "value", general-union branches their branch
// name), or empty for the record as a whole.
type FieldError = codec.FieldError

// sanitize turns an Avro full name into one Iceberg name segment.
func sanitize(fullName string) string { return strings.ReplaceAll(fullName, ".", "_") }
