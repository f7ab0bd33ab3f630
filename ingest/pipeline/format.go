package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tarnhq/tarn/ingest/codec"
)

// Format is how a topic's record values are encoded (issue 3, management
// API "format").
type Format string

const (
	// FormatAuto: the format of the latest schema of the registry subject
	// <topic>-value (TopicNameStrategy), resolved once, when the topic is
	// enabled. The default.
	FormatAuto Format = "auto"
	// FormatAvro: Confluent wire format (magic byte 0, 4-byte schema id),
	// Avro binary values.
	FormatAvro Format = "avro"
	// FormatProtobuf: Confluent wire format with message indexes, Protobuf
	// values.
	FormatProtobuf Format = "protobuf"
	// FormatJSONSchema: Confluent wire format, JSON values valid against a
	// registered JSON Schema.
	FormatJSONSchema Format = "json-schema"
	// FormatJSON: plain JSON objects (no header, no registry), stored by
	// the Iceberg schema declared on enable (Config.Schema).
	FormatJSON Format = "json"
	// FormatRaw: any bytes. The table has one column, value (binary,
	// optional: a tombstone's value is null), besides _kafka, which holds
	// the key.
	FormatRaw Format = "raw"
	// FormatConnectJSON: Kafka Connect's JsonConverter with
	// schemas.enable=true, every value a JSON object {"schema": ...,
	// "payload": ...} carrying its own Connect schema (ingest/connect).
	// No registry: the table starts with the _kafka column only and
	// evolves from each new schema (its columns added optional, as
	// schema evolution adds them); a schema's id is its fingerprint
	// (connect.Fingerprint), a value that is not such an envelope a
	// malformed record.
	FormatConnectJSON Format = "connect-json"
)

// RawValueColumn is the column of a FormatRaw table that holds the record
// value.
const RawValueColumn = "value"

// registered reports whether values of f carry a Confluent header and
// are decoded through the schema registry.
func (f Format) registered() bool {
	return f == FormatAvro || f == FormatProtobuf || f == FormatJSONSchema || f == FormatAuto
}

// binary reports whether values of f are not JSON text (Avro,
// Protobuf): their key columns (Config.KeyFields) are read from the row
// once decoded, not from the value's text.
func (f Format) binary() bool { return f == FormatAvro || f == FormatProtobuf }

// formatOf maps a registry schema type to the format reading it.
func formatOf(t sr.SchemaType) (Format, error) {
	for f, fm := range formats {
		if fm.srType == t && fm.compile != nil {
			return f, nil
		}
	}
	return "", fmt.Errorf("%w: registry schemas of type %s are not read", codec.ErrUnsupported, t)
}

// ValueSubject is the registry subject of a topic's value schemas
// (Confluent's TopicNameStrategy).
func ValueSubject(topic string) string { return topic + "-value" }

// WriterSchema resolves the format and the writer schema of a topic being
// enabled: for the registry formats (and FormatAuto, which takes the
// format of the schema) the latest version of subject
// ValueSubject(cfg.Topic), mapped to Iceberg; for FormatJSON the schema
// declared in cfg.Schema; for FormatRaw the one value column; for
// FormatConnectJSON none (the records' schemas add the columns). The
// returned schema has the user columns only (fresh IDs, no _kafka):
// EnsureTable adds _kafka. format is never FormatAuto.
//
// Errors: ErrInvalidConfig; ErrNoSchema (wrapped) when the subject has no
// schema; codec.ErrUnsupported (wrapped) when the schema cannot be
// mapped; a registry error otherwise.
func WriterSchema(ctx context.Context, reg Registry, cfg Config) (*iceberg.Schema, Format, error) {
	if err := cfg.Validate(); err != nil {
		return nil, "", err
	}
	cfg = cfg.WithDefaults()
	switch cfg.Format {
	case FormatJSON:
		return cfg.Schema, FormatJSON, nil
	case FormatRaw:
		return rawWriter(nil).writer, FormatRaw, nil
	case FormatConnectJSON:
		// The columns come with the records: each schema evolves the table.
		return iceberg.NewSchema(0), FormatConnectJSON, nil
	}
	if reg == nil {
		return nil, "", fmt.Errorf("%w: format %s needs a schema registry (--schema-registry-url)", ErrInvalidConfig, cfg.Format)
	}
	subject := ValueSubject(cfg.Topic)
	var ss sr.SubjectSchema
	err := retry(ctx, func() (err error) {
		ss, err = reg.SchemaByVersion(ctx, subject, -1)
		return err
	})
	var re *sr.ResponseError
	switch {
	case errors.As(err, &re) && re.StatusCode == 404:
		return nil, "", fmt.Errorf("%w: subject %s has no schema; register the topic's value schema first, or enable it with format json or raw", ErrNoSchema, subject)
	case err != nil:
		return nil, "", fmt.Errorf("schema registry: subject %s: %w", subject, err)
	}
	f := cfg.Format
	if f == FormatAuto {
		if f, err = formatOf(ss.Type); err != nil {
			return nil, "", fmt.Errorf("subject %s: %w", subject, err)
		}
	}
	c, err := compileSchema(ctx, reg, f, ss.Schema, nil)
	if err == nil && c.avro != nil && cfg.Mode == ModeDebezium {
		// A change event's columns are its row's.
		c, err = debeziumAvro(c, cfg.Envelope == EnvelopeFlattened)
	}
	if err != nil {
		return nil, "", fmt.Errorf("subject %s version %d: %w", subject, ss.Version, err)
	}
	if cfg.Mode == ModeDebezium && f != FormatAvro {
		return nil, "", fmt.Errorf("%w: subject %s holds %s schemas; mode debezium reads avro, connect-json or json", ErrInvalidConfig, subject, f)
	}
	return c.writer, f, nil
}

// rawWriter is FormatRaw's writer: one optional binary column, value.
// Declared schemas (FormatJSON) use Config.Schema instead.
func rawWriter([]codec.Option) compiled {
	w := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: RawValueColumn, Type: iceberg.PrimitiveTypes.Binary,
		Doc: "record value as written to Kafka; null for a tombstone"})
	return compiled{writer: w, decoder: func(target *iceberg.Schema) (codec.Decoder, error) {
		if err := codec.Fits(w, target, callerColumns...); err != nil {
			return nil, err
		}
		return newRawDecoder(target)
	}}
}

// rawDecoder appends the whole value (nil: null) to the value column and
// nulls to any other optional user column the table has.
type rawDecoder struct {
	schema *arrow.Schema
	value  int
	others []int
}

func newRawDecoder(target *iceberg.Schema) (*rawDecoder, error) {
	asc, err := table.SchemaToArrowSchema(target, nil, true, false)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", codec.ErrUnsupported, err)
	}
	d := &rawDecoder{schema: asc, value: -1}
	for i, f := range asc.Fields() {
		switch f.Name {
		case KafkaColumn:
		case RawValueColumn:
			d.value = i
		default:
			d.others = append(d.others, i)
		}
	}
	return d, nil
}

func (d *rawDecoder) ArrowSchema() *arrow.Schema { return d.schema }

func (d *rawDecoder) Append(b *array.RecordBuilder, payload []byte) error {
	vb, ok := b.Field(d.value).(*array.BinaryBuilder)
	if !ok {
		return codec.ErrBuilderSchema
	}
	if payload == nil {
		vb.AppendNull()
	} else {
		vb.Append(payload)
	}
	for _, i := range d.others {
		b.Field(i).AppendNull()
	}
	return nil
}

var _ codec.Decoder = (*rawDecoder)(nil)
