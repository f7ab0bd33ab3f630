// Package codec is the contract between the ingest pipeline and the
// formats it decodes (ingest/avro, ingest/protobuf, ingest/jsonschema,
// ingest/jsonrow): a writer schema maps to an Iceberg schema, and a
// Decoder appends one Kafka record value per call as one row of an Arrow
// record built from a target Iceberg schema (the table's).
//
// Every format follows DESIGN.md "Type mapping (source → Iceberg)" and
// "Schema evolution", and classifies its errors with the sentinels below,
// so that the pipeline can apply the topic's error mode without knowing
// the format: schema-level errors (ErrUnsupported, ErrIncompatible)
// suspend the topic; record-level ones (ErrBadRecord, through
// ErrMalformed or ErrOutOfRange) follow the error mode.
package codec

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/tarnhq/tarn/internal/errclass"
)

// Parent sentinels. Errors of a format wrap exactly one of them. Each is
// of class errclass.Internal: ingest/topics classifies them for a client
// (a schema Tarn cannot store is ErrInvalid) before they reach one.
var (
	// ErrUnsupported: the writer schema has a construct Tarn cannot store
	// in an Iceberg table (a recursive type, a null-only union, a decimal
	// wider than 38 digits, ...). Schema-level.
	ErrUnsupported = errclass.New(errclass.Internal, "unsupported schema")
	// ErrIncompatible: the writer schema cannot be decoded into the
	// target schema (a type change Iceberg does not allow, a writer field
	// the target lacks, a required target column the writer lacks, an
	// optional writer field into a required column). Schema-level: the
	// table's schema must evolve first.
	ErrIncompatible = errclass.New(errclass.Internal, "writer schema incompatible with table schema")
	// ErrBadRecord: one payload cannot become a row; nothing was
	// appended. Record-level.
	ErrBadRecord = errclass.New(errclass.Internal, "bad record")
)

// Record-level sentinels; both match ErrBadRecord with errors.Is.
var (
	// ErrMalformed: the payload is not a valid encoding of its writer
	// schema (truncated, trailing bytes, not JSON, fails JSON Schema
	// validation, bad union or enum index).
	ErrMalformed = errclass.New(ErrBadRecord, "malformed payload")
	// ErrOutOfRange: a decoded value does not fit its column (decimal
	// overflow, an invalid uuid, a time outside one day, a number where
	// the column holds an int that overflows it).
	ErrOutOfRange = errclass.New(ErrBadRecord, "value does not fit its column")
)

// ErrBuilderSchema: the RecordBuilder passed to Append was not built from
// the decoder's ArrowSchema. A programming error, not a bad record.
var ErrBuilderSchema = errclass.New(errclass.Internal, "record builder schema differs from the decoder's arrow schema")

// Decoder appends Kafka record values written with one writer schema as
// rows of a record whose schema comes from a target Iceberg schema.
type Decoder interface {
	// ArrowSchema is the schema of the RecordBuilder Append takes: the
	// target schema converted by iceberg-go's table.SchemaToArrowSchema
	// with field IDs and small (32-bit offset) types.
	ArrowSchema() *arrow.Schema
	// Append decodes one payload (the record value after any wire-format
	// header the pipeline strips: the Confluent magic byte and schema id)
	// and appends it as exactly one row to b, leaving the caller columns
	// (the pipeline's _kafka) alone. On error nothing was appended, and
	// the error wraps ErrMalformed or ErrOutOfRange (both ErrBadRecord),
	// or ErrBuilderSchema.
	Append(b *array.RecordBuilder, payload []byte) error
}

// FieldError is an error about one field. Path is the Iceberg name path
// (dot-separated; list elements are "element", map keys and values "key"
// and "value"), or empty for the record as a whole. Err wraps one of the
// sentinels above.
type FieldError struct {
	Path string
	Err  error
}

func (e *FieldError) Error() string {
	if e.Path == "" {
		return e.Err.Error()
	}
	return "field " + e.Path + ": " + e.Err.Error()
}

func (e *FieldError) Unwrap() error { return e.Err }

// FieldErrorf returns a *FieldError at path whose Err wraps sentinel
// (ErrMalformed, ErrIncompatible, ...) and reads "<sentinel>: <message>",
// the message formatted from format and args as by fmt.Errorf (so a %w
// in format wraps its argument too).
func FieldErrorf(path string, sentinel error, format string, args ...any) error {
	return &FieldError{Path: path, Err: fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)}
}

// JoinPath appends name (a field name, or "element", "key", "value") to
// a FieldError path; an empty path is the record itself.
func JoinPath(path, name string) string {
	if path == "" {
		return name
	}

	return path + "." + name
}
