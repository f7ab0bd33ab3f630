package avro

import (
	"errors"
	"strings"
)

// Parent sentinels. The first two are about a schema (the topic suspends
// until the schema or the table changes); ErrBadRecord is about one record
// (the topic's error-mode decides: suspend, skip or dlq).
var (
	// ErrUnsupported: the Avro schema has a construct Tarn cannot store in an
	// Iceberg table (a recursive record, a null-only union, a decimal wider
	// than 38 digits, ...).
	ErrUnsupported = errors.New("unsupported avro schema")
	// ErrIncompatible: the writer schema cannot be decoded into the table's
	// schema (a type change Iceberg does not allow, a writer field the table
	// lacks, a required column the writer lacks, optional into required).
	ErrIncompatible = errors.New("avro writer schema incompatible with table schema")
	// ErrBadRecord: one payload cannot become a row; nothing was appended.
	ErrBadRecord = errors.New("bad avro record")
)

// Specific sentinels.
var (
	// ErrNotRecord: the top-level schema is not a record.
	ErrNotRecord = kindOf(ErrUnsupported, "top-level avro schema is not a record")
	// ErrRecursive: a record refers to itself, directly or through other
	// types; Iceberg schemas are finite trees.
	ErrRecursive = kindOf(ErrUnsupported, "recursive avro record")
	// ErrMalformed: the payload is not a valid Avro binary encoding of the
	// writer schema (truncated, trailing bytes, bad union or enum index,
	// negative length).
	ErrMalformed = kindOf(ErrBadRecord, "malformed avro payload")
	// ErrOutOfRange: a decoded value does not fit its column (decimal
	// overflow, an invalid uuid string, a time of day outside one day, a
	// timestamp-millis outside the microsecond range).
	ErrOutOfRange = kindOf(ErrBadRecord, "value does not fit its column")
	// ErrBuilderSchema: the RecordBuilder passed to Append was not built from
	// Decoder.ArrowSchema. A programming error, not a bad record.
	ErrBuilderSchema = errors.New("record builder schema differs from the decoder's arrow schema")
)

// FieldError is an error about one field. Path is the Iceberg name path
// (dot-separated; list elements are "element", map keys and values "key"
// and "value", general-union branches their branch name), or empty for
// the record as a whole. Err wraps one of the sentinels above.
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

// kind is a specific sentinel: its message stands alone, and errors.Is
// also matches its parent.
type kind struct {
	msg    string
	parent error
}

func kindOf(parent error, msg string) error { return &kind{msg: msg, parent: parent} }

func (k *kind) Error() string { return k.msg }
func (k *kind) Unwrap() error { return k.parent }

// join appends name to a dot-separated path.
func join(path, name string) string {
	if path == "" {
		return name
	}

	return path + "." + name
}

// sanitize turns an Avro full name into one Iceberg name segment.
func sanitize(fullName string) string { return strings.ReplaceAll(fullName, ".", "_") }
