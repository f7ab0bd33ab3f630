package jsonschema

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"

	"github.com/tarnhq/tarn/ingest/codec"
	"github.com/tarnhq/tarn/ingest/jsonrow"
)

// Decoder turns JSON payloads written with one JSON Schema into rows of an
// Arrow record whose schema comes from a target Iceberg schema (the
// table's, see [Decoder.ArrowSchema]).
//
// Each payload is parsed once, validated against the JSON Schema, and
// converted by ingest/jsonrow into the target, fields matched by name
// path. The target may differ from [ToIceberg] of the writer schema as
// Iceberg schema evolution allows (DESIGN.md "Schema evolution", checked
// by codec.Fits): target columns the writer lacks get null, long and double
// columns take the writer's long and double, a required property may fill
// an optional column. Values are converted as jsonrow.Decoder describes
// (date-time strings into timestamptz must carry an offset, as the
// date-time format requires anyway).
//
// A Decoder is not safe for concurrent use; use one per goroutine.
type Decoder struct {
	schema *Schema
	rows   *jsonrow.Decoder
}

// NewDecoder prepares decoding of payloads written with s into target.
//
// Errors are *codec.FieldError wrapping codec.ErrUnsupported (s cannot be
// mapped, see [ToIceberg]) or codec.ErrIncompatible (codec.Fits refuses
// the pair: a writer property the table lacks, a type change Iceberg does
// not allow, a required column the writer lacks or may leave null).
func NewDecoder(s *Schema, target *iceberg.Schema, opts ...codec.Option) (*Decoder, error) {
	o := codec.Apply(opts)
	writer, jsonText, err := s.toIceberg()
	if err != nil {
		return nil, err
	}
	if err := codec.Fits(writer, target, o.CallerColumns...); err != nil {
		return nil, err
	}
	rows, err := jsonrow.NewDecoder(target, codec.WithCallerColumns(o.CallerColumns...), jsonrow.WithJSONText(jsonText...))
	if err != nil {
		return nil, err
	}

	return &Decoder{schema: s, rows: rows}, nil
}

// ArrowSchema is the schema of the RecordBuilder that Append takes: the
// target Iceberg schema converted by iceberg-go's table.SchemaToArrowSchema
// with field IDs and small (32-bit offset) types.
func (d *Decoder) ArrowSchema() *arrow.Schema { return d.rows.ArrowSchema() }

// Append parses one JSON payload (the record value after the Confluent
// 5-byte header, which the pipeline strips), validates it against the JSON
// Schema and appends it as one row to b, whose schema must be
// [Decoder.ArrowSchema]. Columns named by codec.WithCallerColumns are not
// touched.
//
// On error nothing was appended. Errors are *codec.FieldError wrapping
// codec.ErrMalformed (not a JSON object, or the payload fails validation:
// the message is the validator's), codec.ErrOutOfRange (a valid value that
// does not fit its column, such as an integer beyond a long), or
// codec.ErrBuilderSchema.
func (d *Decoder) Append(b *array.RecordBuilder, payload []byte) error {
	obj, err := jsonrow.Parse(payload)
	if err != nil {
		return err
	}
	if err := d.schema.Validate(obj); err != nil {
		return err
	}

	return d.rows.AppendValue(b, obj)
}

var _ codec.Decoder = (*Decoder)(nil)
