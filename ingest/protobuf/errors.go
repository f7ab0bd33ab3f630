package protobuf

import (
	"fmt"

	"github.com/tarnhq/tarn/ingest/codec"
	"github.com/tarnhq/tarn/internal/errclass"
)

// Parent sentinels: the shared ones of ingest/codec, so that the pipeline
// classifies Protobuf errors like those of every other format. The first
// two are about a schema (the topic suspends until the schema or the table
// changes); ErrBadRecord is about one record (the topic's error-mode
// decides: suspend, skip or dlq).
var (
	// ErrUnsupported: the schema text does not compile (syntax error,
	// missing import) or has a construct Tarn cannot store in an Iceberg
	// table (a recursive message).
	ErrUnsupported = codec.ErrUnsupported
	// ErrIncompatible: the writer message cannot be decoded into the
	// table's schema (a type change Iceberg does not allow, a writer field
	// the table lacks, a required column the writer lacks, optional into
	// required).
	ErrIncompatible = codec.ErrIncompatible
	// ErrBadRecord: one payload cannot become a row; nothing was appended.
	ErrBadRecord = codec.ErrBadRecord
)

// Specific sentinels.
var (
	// ErrRecursive: a message contains itself, directly or through other
	// messages, lists or maps; Iceberg schemas are finite trees.
	ErrRecursive = errclass.New(ErrUnsupported, "recursive protobuf message")
	// ErrMalformed: the payload is not a valid Protobuf encoding of the
	// writer message (truncated, a bad tag or wire type, a missing proto2
	// required field), or its message indexes name no message of the
	// schema.
	ErrMalformed = codec.ErrMalformed
	// ErrOutOfRange: a decoded value does not fit its column (a Timestamp
	// or Duration outside the int64 microsecond range or with invalid
	// nanos, a string that is not UTF-8, a Struct or Value that has no
	// JSON form).
	ErrOutOfRange = codec.ErrOutOfRange
	// ErrBuilderSchema: the RecordBuilder passed to Append was not built
	// from Decoder.ArrowSchema. A programming error, not a bad record.
	ErrBuilderSchema = codec.ErrBuilderSchema
)

// FieldError is an error about one field (codec.FieldError). Path is the
// Iceberg name path (dot-separated Protobuf field names; list elements are
// "element", map keys and values "key" and "value"), or empty for the
// message as a whole.
type FieldError = codec.FieldError

func malformed(path string, format string, args ...any) error {
	return codec.FieldErrorf(path, ErrMalformed, format, args...)
}

func outOfRange(path string, format string, args ...any) error {
	return codec.FieldErrorf(path, ErrOutOfRange, format, args...)
}

func incompatible(path string, format string, args ...any) error {
	return codec.FieldErrorf(path, ErrIncompatible, format, args...)
}

// errorf wraps sentinel with a message.
func errorf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)
}
