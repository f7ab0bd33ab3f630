package pipeline

import (
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/tarnhq/tarn/internal/errclass"
)

// Sentinels. Errors of this package wrap one of them (or a sink, catalog
// or registry error) with %w.
var (
	// ErrInvalidConfig: a Config field is missing, out of range or does not
	// parse.
	ErrInvalidConfig = errclass.New(errclass.Internal, "invalid pipeline config")
	// ErrTableShape: the table cannot hold the topic: its _kafka column is
	// missing or not DESIGN.md's shape, or a partition field names a column
	// it lacks.
	ErrTableShape = errclass.New(errclass.Internal, "table does not fit the topic")
	// ErrSuspended: the topic stopped at a record it cannot materialize;
	// see SuspendedError.
	ErrSuspended = errclass.New(errclass.Internal, "topic suspended")
	// ErrRunning: Run was called while another Run of the same Pipeline
	// was still going.
	ErrRunning = errclass.New(errclass.Internal, "pipeline already running")
	// ErrNoSchema: a registry format's topic has no value schema in the
	// registry yet (WriterSchema).
	ErrNoSchema = errclass.New(errclass.Internal, "no schema registered for the topic")
)

// ErrorKind classifies a record the pipeline could not materialize. Status
// counts them; SuspendedError carries one.
type ErrorKind string

// Record-level kinds follow the topic's error mode. Schema-level kinds
// suspend the topic whatever the error mode (DESIGN.md "Schema evolution":
// anything not allowed suspends the topic with a clear reason), unless
// the user resumed it past that schema: in error mode skip or dlq, records
// of a schema id in Config.BadSchemaIDs are bad records like the others.
const (
	// KindBadHeader: the value does not start with the Confluent wire
	// format's magic byte 0 and a 4-byte schema id (or is shorter than 5
	// bytes). Record-level.
	KindBadHeader ErrorKind = "bad_header"
	// KindNoValue: the record has no value at all (a tombstone), which an
	// append-only table cannot hold. Record-level.
	KindNoValue ErrorKind = "no_value"
	// KindNoKey: in upsert mode, the record has no key, so no row it
	// could replace. Record-level.
	KindNoKey ErrorKind = "no_key"
	// KindBadKey: in upsert mode, the record's key cannot be decoded (a
	// registry key whose schema is unknown or not Avro or JSON Schema, or
	// whose payload does not decode). Record-level.
	KindBadKey ErrorKind = "bad_key"
	// KindUnknownSchema: the registry has no schema with the record's id.
	// Record-level.
	KindUnknownSchema ErrorKind = "unknown_schema"
	// KindMalformed: the payload is not a valid encoding of its writer
	// schema (truncated, trailing bytes, bad union index...). Record-level.
	KindMalformed ErrorKind = "malformed"
	// KindOutOfRange: a value does not fit its column (decimal overflow, an
	// invalid uuid, ...). Record-level.
	KindOutOfRange ErrorKind = "out_of_range"
	// KindUnsupportedSchema: the writer schema is not Avro, does not parse,
	// or uses a construct Tarn cannot store. Schema-level.
	KindUnsupportedSchema ErrorKind = "unsupported_schema"
	// KindIncompatibleSchema: the writer schema cannot be written into the
	// table's current schema, and the table cannot evolve to take it (a
	// change DESIGN.md "Schema evolution" does not allow, such as long →
	// int or string → int). Schema-level.
	KindIncompatibleSchema ErrorKind = "incompatible_schema"
)

// schemaLevel reports whether a kind is about the schema, not one record.
func (k ErrorKind) schemaLevel() bool {
	return k == KindUnsupportedSchema || k == KindIncompatibleSchema
}

// RecordError is a record the pipeline could not materialize.
type RecordError struct {
	Topic     string
	Partition int32
	Offset    int64
	Kind      ErrorKind
	// SchemaID is the record's Confluent schema id, or -1 when the header
	// could not be read.
	SchemaID int
	Err      error
	// writer is the record's writer schema mapped to Iceberg, for a
	// KindIncompatibleSchema the table may evolve to take.
	writer *iceberg.Schema
}

func (e *RecordError) Error() string {
	if e.SchemaID >= 0 {
		return fmt.Sprintf("%s partition %d offset %d (schema id %d): %s: %v", e.Topic, e.Partition, e.Offset, e.SchemaID, e.Kind, e.Err)
	}
	return fmt.Sprintf("%s partition %d offset %d: %s: %v", e.Topic, e.Partition, e.Offset, e.Kind, e.Err)
}

func (e *RecordError) Unwrap() error { return e.Err }

// SuspendedError is returned by Run when the topic stops at a record: a
// bad record in ErrorModeSuspend, or a record whose writer schema cannot
// be evolved into the table (whatever the error mode, unless
// Config.BadSchemaIDs passes it). Everything before the
// record was committed, nothing from it on: the table's next offset for
// Partition is Offset, so a resumed pipeline starts with this record.
// It matches ErrSuspended, and the cause (avro.ErrIncompatible,
// avro.ErrBadRecord, sr.ErrBadHeader, ...), with errors.Is.
type SuspendedError struct {
	Partition int32
	Offset    int64
	Kind      ErrorKind
	// SchemaID is the record's schema id (-1 when it has none: a bad
	// header, a schemaless format). For a schema-level Kind, a resume in
	// error mode skip or dlq passes the records of this id when
	// Config.BadSchemaIDs holds it.
	SchemaID int
	// Reason is the status line: what is wrong and with which field, and
	// what resumes the topic.
	Reason string
	Err    error
}

func (e *SuspendedError) Error() string {
	return fmt.Sprintf("topic suspended at partition %d offset %d: %s", e.Partition, e.Offset, e.Reason)
}

func (e *SuspendedError) Unwrap() []error { return []error{ErrSuspended, e.Err} }
