package pipeline

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/twmb/franz-go/pkg/sr"

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
