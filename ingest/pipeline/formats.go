package pipeline

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	hamba "github.com/hamba/avro/v2"

	"github.com/apache/iceberg-go"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tarnhq/tarn/ingest/avro"
	"github.com/tarnhq/tarn/ingest/codec"
	"github.com/tarnhq/tarn/ingest/connect"
	"github.com/tarnhq/tarn/ingest/jsonrow"
	"github.com/tarnhq/tarn/ingest/jsonschema"
	"github.com/tarnhq/tarn/ingest/protobuf"
)

// The formats besides Avro and raw (schemas.go, format.go): each maps its
// writer schema to Iceberg with its package's ToIceberg and decodes with
// its package's Decoder, _kafka being the caller column. connect-json's
// writer schemas come with the records (schemas.forEnvelope).

// compileProtobuf compiles a Protobuf schema with its references (keyed by
// import path, the Confluent reference name) and picks the message the
// indexes name (nil: the first). Compiling is local work: ctx only bounds
// it (protocompile stops when it ends, and the error is ctx's).
func compileProtobuf(ctx context.Context, sch sr.Schema, refs []reference, indexes []int) (compiled, error) {
	texts := make(map[string]string, len(refs))
	for _, r := range refs {
		texts[r.name] = r.schema.Schema
	}
	fd, err := protobuf.Compile(ctx, sch.Schema, texts)
	if err != nil {
		return compiled{}, err
	}
	md, err := protobuf.MessageByIndexes(fd, indexes)
	if err != nil {
		return compiled{}, err
	}
	user, err := protobuf.ToIceberg(md)
	if err != nil {
		return compiled{}, err
	}
	return compiled{writer: user, decoder: func(target *iceberg.Schema) (codec.Decoder, error) {
		return protobuf.NewDecoder(md, target, codec.WithCallerColumns(callerColumns...))
	}}, nil
}

// compileJSONSchema compiles a JSON Schema with its references (keyed by
// the $ref they answer, the Confluent reference name).
func compileJSONSchema(_ context.Context, sch sr.Schema, refs []reference, _ []int) (compiled, error) {
	texts := make(map[string]string, len(refs))
	for _, r := range refs {
		texts[r.name] = r.schema.Schema
	}
	s, err := jsonschema.Compile(sch.Schema, texts)
	if err != nil {
		return compiled{}, err
	}
	user, err := jsonschema.ToIceberg(s)
	if err != nil {
		return compiled{}, err
	}
	return compiled{writer: user, decoder: func(target *iceberg.Schema) (codec.Decoder, error) {
		return jsonschema.NewDecoder(s, target, codec.WithCallerColumns(callerColumns...))
	}}, nil
}

// jsonWriter is FormatJSON's: plain JSON objects stored by the table's own
// schema (declared on enable), fields the table lacks ignored, decoded
// with opts (Config.jsonOptions). The declared schema is the writer, so it
// never needs evolving: writer is nil.
func jsonWriter(opts []codec.Option) compiled {
	return compiled{decoder: func(target *iceberg.Schema) (codec.Decoder, error) {
		d, err := jsonrow.NewDecoder(target, append([]codec.Option{codec.WithCallerColumns(callerColumns...)}, opts...)...)
		if err != nil {
			return nil, fmt.Errorf("the table cannot be filled from JSON: %w", err)
		}
		return d, nil
	}}
}

// compileConnect compiles the embedded schema of a connect-json value
// (its JSON text); with changes, that of a Debezium change event, whose
// rows are its after (connect.AfterSchema). Errors wrap
// codec.ErrUnsupported.
func compileConnect(text []byte, changes bool) (compiled, error) {
	s, err := connect.ParseSchema(text)
	if err != nil {
		return compiled{}, err
	}
	if changes {
		if s, err = connect.AfterSchema(s); err != nil {
			return compiled{}, err
		}
	}
	user, err := connect.ToIceberg(s)
	if err != nil {
		return compiled{}, err
	}
	return compiled{writer: user, decoder: func(target *iceberg.Schema) (codec.Decoder, error) {
		return connect.NewDecoder(s, target, codec.WithCallerColumns(callerColumns...))
	}}, nil
}

// changeDecoder decodes Debezium change events that are no JSON text
// (Avro): ReadChange reads one event without appending anything (its
// key may still be refused); for an upsert (op c, r, u, or a flattened
// row that is no delete) AppendRow then appends its row. Errors: those
// of codec.Decoder.Append.
type changeDecoder interface {
	codec.Decoder
	ReadChange(b *array.RecordBuilder, payload []byte) (connect.Change, error)
	AppendRow(b *array.RecordBuilder, payload []byte) error
}

// debeziumAvro turns c, an Avro writer, into mode debezium's: for the
// full envelope the row schema is after's record (avro.AfterSchema) and
// the decoder an avro.ChangeDecoder; flattened, the row is the value and
// its __deleted / __op are read first (avro.ReadFlattened). Errors wrap
// codec.ErrUnsupported.
func debeziumAvro(c compiled, flattened bool) (compiled, error) {
	w := c.avro
	if flattened {
		rec, ok := w.(*hamba.RecordSchema)
		if !ok {
			return compiled{}, fmt.Errorf("%w: a flattened Debezium row is an Avro record, got %s", codec.ErrUnsupported, w.Type())
		}
		if _, err := avro.AfterSchema(w); err == nil {
			return compiled{}, fmt.Errorf("%w: the schema %s is Debezium's full envelope, not its ExtractNewRecordState form: set the topic's envelope to full", codec.ErrUnsupported, rec.FullName())
		}
		rows := c.decoder
		c.decoder = func(target *iceberg.Schema) (codec.Decoder, error) {
			d, err := rows(target)
			if err != nil {
				return nil, err
			}
			return &avroFlat{Decoder: d, w: rec, r: hamba.NewReader(nil, 0)}, nil
		}
		return c, nil
	}
	row, err := avro.AfterSchema(w)
	if err != nil {
		return compiled{}, err
	}
	user, err := avro.ToIceberg(row)
	if err != nil {
		return compiled{}, err
	}
	out := avroRows(row, user)
	out.decoder = func(target *iceberg.Schema) (codec.Decoder, error) {
		d, err := avro.NewChangeDecoder(w, target, codec.WithCallerColumns(callerColumns...))
		if err != nil {
			return nil, err
		}
		return avroChanges{d}, nil
	}
	return out, nil
}

// avroChanges is an avro.ChangeDecoder as a changeDecoder.
type avroChanges struct{ d *avro.ChangeDecoder }

func (a avroChanges) ArrowSchema() *arrow.Schema { return a.d.ArrowSchema() }

// Append reads an event and appends its row; it refuses an event without
// one (d, t). The pipeline calls ReadChange and AppendRow instead.
func (a avroChanges) Append(b *array.RecordBuilder, payload []byte) error {
	c, err := a.d.Read(b, payload)
	if err != nil {
		return err
	}
	if !c.Op.Upsert() {
		return fmt.Errorf("%w: op %q has no row", codec.ErrMalformed, c.Op)
	}
	a.d.WriteRow(b)
	return nil
}

func (a avroChanges) ReadChange(b *array.RecordBuilder, payload []byte) (connect.Change, error) {
	return a.d.Read(b, payload)
}

// AppendRow appends the row ReadChange read (payload is not read again).
func (a avroChanges) AppendRow(b *array.RecordBuilder, _ []byte) error {
	a.d.WriteRow(b)
	return nil
}

// avroFlat reads a flattened Avro row's __deleted and __op, then (in
// AppendRow) decodes the row.
type avroFlat struct {
	codec.Decoder
	w *hamba.RecordSchema
	r *hamba.Reader
}

func (a *avroFlat) ReadChange(_ *array.RecordBuilder, payload []byte) (connect.Change, error) {
	return avro.ReadFlattened(a.r, a.w, payload)
}

func (a *avroFlat) AppendRow(b *array.RecordBuilder, payload []byte) error {
	return a.Append(b, payload)
}
