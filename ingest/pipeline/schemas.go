package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	hamba "github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tarnhq/tarn/ingest/avro"
	"github.com/tarnhq/tarn/ingest/codec"
	"github.com/tarnhq/tarn/ingest/connect"
)

// Registry retries: a registry that is restarting or briefly unreachable
// should not fail the pipeline, one that stays down for several seconds
// should (the status then says why, and the caller restarts it later).
const (
	registryAttempts   = 5
	registryBackoffMin = 100 * time.Millisecond
	registryBackoffMax = 2 * time.Second
	// maxReferenceDepth bounds the walk through schema references, which a
	// broken registry could make cyclic.
	maxReferenceDepth = 32
)

// schemas resolves record values to decoders into the table's current
// schema. For the registry formats a value starts with the Confluent
// header (magic byte 0, 4-byte schema id; for Protobuf then the message
// indexes), and the verdict is cached per schema id (and message): an
// id's schema text never changes, and neither does the table's schema
// while the cache is in use (it is rebuilt when the schema changes). The
// schemaless formats (json, raw) have one decoder for every value.
// connect-json values carry their schema: the verdict is cached per
// schema text (at most maxConnectSchemas), and a value whose schema text
// is the previous value's reuses its verdict after one byte comparison
// (connect.Envelopes), so a stream of one schema parses it once.
type schemas struct {
	reg    Registry
	format Format
	target *iceberg.Schema
	byKey  map[schemaKey]*resolved
	// env and byText are connect-json's: its envelope splitter and the
	// verdicts by schema text.
	env    connect.Envelopes
	byText map[string]*resolved
	// changes is set in mode debezium: a connect-json value's schema is
	// a change event's, whose "after" field is the row's writer schema.
	changes bool
	// flattened is set in mode debezium with EnvelopeFlattened: an Avro
	// value's __deleted and __op are read before its row.
	flattened bool
	// keyFields names, for a binary format (Format.binary) keyed by value
	// columns, the key columns every writer schema must require.
	keyFields []string
	// static is the verdict for every value of a schemaless format.
	static *resolved
	// last and lastKey are the verdict found for the previous value:
	// a topic's values nearly always share one schema, and comparing keys
	// costs less than hashing one into byKey (about 3 % of tarn serve's
	// ingest CPU; BenchmarkForValue). Entries of byKey are never removed,
	// so last stays right.
	last    *resolved
	lastKey schemaKey
}

// schemaKey is a cache key: a schema id and, for Protobuf, the message
// indexes as text ("" for the others).
type schemaKey struct {
	id      int
	message string
}

// resolved is the verdict on one writer schema: a decoder, or why values
// written with it cannot be materialized.
type resolved struct {
	// id is the schema id, -1 for schemaless formats.
	id  int
	dec codec.Decoder
	// writer is the writer schema mapped to Iceberg when it could be
	// (nil for KindUnknownSchema and unparsable schemas): with
	// KindIncompatibleSchema it says what the table lacks.
	writer *iceberg.Schema
	kind   ErrorKind // set when dec is nil
	err    error
}

// newSchemas returns the resolver of format (not FormatAuto) into target;
// opts are the options of a schemaless format's decoder (FormatJSON's,
// Config.jsonOptions). Errors: for FormatJSON and FormatRaw, those of
// building the one decoder (the table does not fit the declared schema).
func newSchemas(reg Registry, format Format, target *iceberg.Schema, opts ...codec.Option) *schemas {
	s := &schemas{reg: reg, format: format, target: target, byKey: map[schemaKey]*resolved{}, byText: map[string]*resolved{}}
	switch format {
	case FormatJSON, FormatRaw:
		f := formats[format]
		s.static = s.verdict(-1, f.schemaless(opts))
	}
	return s
}

// coverage is what the decoder of a schemaless format reports of the
// rows it decoded (codec.CoverageReporter: FormatJSON's); zero for the
// other formats.
func (s *schemas) coverage() codec.Coverage {
	if s == nil || s.static == nil {
		return codec.Coverage{}
	}
	if cr, ok := s.static.dec.(codec.CoverageReporter); ok {
		return cr.Coverage()
	}
	return codec.Coverage{}
}

// forValue returns the verdict for a record value and the payload its
// decoder takes (the value after the wire-format header). A value whose
// header cannot be read gets a KindBadHeader verdict. The error is a
// *transientError when the registry could not be asked (after retries),
// or ctx's error.
func (s *schemas) forValue(ctx context.Context, value []byte) (*resolved, []byte, error) {
	if s.static != nil {
		return s.static, value, nil
	}
	if s.format == FormatConnectJSON {
		r, payload := s.forEnvelope(value)
		return r, payload, nil
	}
	id, payload, err := confluentHeader.DecodeID(value)
	if err != nil {
		return &resolved{id: -1, kind: KindBadHeader, err: err}, nil, nil
	}
	key := schemaKey{id: id}
	var indexes []int
	if s.format == FormatProtobuf {
		indexes, payload, err = confluentHeader.DecodeIndex(payload, maxMessageDepth)
		if err != nil {
			return &resolved{id: id, kind: KindBadHeader, err: fmt.Errorf("protobuf message indexes: %w", err)}, nil, nil
		}
		key.message = indexKey(indexes)
	}
	if s.last != nil && key == s.lastKey {
		return s.last, payload, nil
	}
	r, ok := s.byKey[key]
	if !ok {
		if r, err = s.resolve(ctx, id, indexes); err != nil {
			return nil, nil, err
		}
		s.byKey[key] = r
	}
	s.last, s.lastKey = r, key
	return r, payload, nil
}

// maxMessageDepth bounds the Protobuf message-index path (nesting depth).
const maxMessageDepth = 64

// maxConnectSchemas bounds the connect-json verdicts cached, so that a
// topic whose schema text keeps changing (a producer that puts a
// timestamp in a schema doc, say) holds a bounded set: past it the cache
// starts over.
const maxConnectSchemas = 256

// forEnvelope is forValue for connect-json: the verdict on value's
// embedded schema (cached by its text) and its payload's text. A value
// that is no envelope gets a KindMalformed verdict.
func (s *schemas) forEnvelope(value []byte) (*resolved, []byte) {
	text, payload, same, err := s.env.Split(value)
	if err != nil {
		return &resolved{id: -1, kind: KindMalformed, err: err}, nil
	}
	if same && s.last != nil {
		return s.last, payload
	}
	r, ok := s.byText[string(text)]
	if !ok {
		id := connect.Fingerprint(text)
		if c, err := compileConnect(text, s.changes); err != nil {
			r = &resolved{id: id, kind: KindUnsupportedSchema, err: fmt.Errorf("schema id %d: %w", id, err)}
		} else {
			r = s.verdict(id, c)
		}
		if len(s.byText) >= maxConnectSchemas {
			clear(s.byText)
		}
		s.byText[string(text)] = r
	}
	s.last = r
	return r, payload
}

func indexKey(indexes []int) string {
	var b strings.Builder
	for i, x := range indexes {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(strconv.Itoa(x))
	}
	return b.String()
}

func (s *schemas) resolve(ctx context.Context, id int, indexes []int) (*resolved, error) {
	var sch sr.Schema
	err := retry(ctx, func() (err error) {
		sch, err = s.reg.SchemaByID(ctx, id)
		return err
	})
	switch {
	case isSchemaNotFound(err):
		return &resolved{id: id, kind: KindUnknownSchema, err: fmt.Errorf("the registry has no schema with id %d", id)}, nil
	case err != nil:
		return nil, err
	}
	c, err := compileSchema(ctx, s.reg, s.format, sch, indexes)
	if err == nil && c.avro != nil && (s.changes || s.flattened) {
		c, err = debeziumAvro(c, s.flattened)
	}
	var te *transientError
	switch {
	case errors.As(err, &te) || ctx.Err() != nil:
		return nil, err
	case errors.Is(err, codec.ErrBadRecord):
		// A message index the schema does not have.
		return &resolved{id: id, kind: KindBadHeader, err: fmt.Errorf("schema id %d: %w", id, err)}, nil
	case err != nil:
		return &resolved{id: id, kind: KindUnsupportedSchema, err: fmt.Errorf("schema id %d: %w", id, err)}, nil
	}
	return s.verdict(id, c), nil
}

// verdict builds the decoder of c into the target schema.
func (s *schemas) verdict(id int, c compiled) *resolved {
	writer := c.writer
	if c.writerFor != nil {
		writer = c.writerFor(s.target)
	}
	if err := requireKeyFields(writer, s.keyFields); err != nil {
		return &resolved{id: id, kind: KindUnsupportedSchema, err: fmt.Errorf("%s: %w", describe(id), err)}
	}
	dec, err := c.decoder(s.target)
	switch {
	case err == nil:
		return &resolved{id: id, dec: dec, writer: writer}
	case errors.Is(err, codec.ErrIncompatible):
		return &resolved{id: id, writer: writer, kind: KindIncompatibleSchema, err: fmt.Errorf(
			"%s does not fit the table's schema: %w", describe(id), err)}
	default:
		return &resolved{id: id, writer: writer, kind: KindUnsupportedSchema, err: fmt.Errorf("%s: %w", describe(id), err)}
	}
}

// requireKeyFields checks that writer has each key column (names) as a
// required top-level field of a key type (int, long, string or
// boolean): an Avro or Protobuf row's key is read once the row is
// decoded, when it can no longer be refused, so a writer that could
// leave it null is refused as a whole.
func requireKeyFields(writer *iceberg.Schema, names []string) error {
	if writer == nil || len(names) == 0 {
		return nil
	}
	if err := checkKeyFields(writer, names, false); err != nil {
		return err
	}
	for _, n := range names {
		if f, _ := writer.FindFieldByName(n); !f.Required {
			return fmt.Errorf("key-fields: field %q is optional in the writer schema; a key column must be required (not a union with null, not a field with explicit presence)", n)
		}
	}
	return nil
}

func describe(id int) string {
	if id < 0 {
		return "the declared schema"
	}
	return "schema id " + strconv.Itoa(id)
}

// compiled is a writer schema ready to decode: its Iceberg mapping and a
// constructor of decoders into a target schema.
type compiled struct {
	writer  *iceberg.Schema
	decoder func(target *iceberg.Schema) (codec.Decoder, error)
	// writerFor, if set, is the writer's mapping against a table's
	// schema, which the table evolves to when the decoder refuses it
	// (Avro's: columns of earlier builds keep their types,
	// avro.ToIcebergFor).
	writerFor func(target *iceberg.Schema) *iceberg.Schema
	// avro is the parsed writer schema of FormatAvro (for mode
	// debezium's change decoders, debeziumAvro).
	avro hamba.Schema
}

// format is how Tarn reads one value format.
type format struct {
	// srType is the registry schema type of a registry format; "" for
	// schemaless ones.
	srType sr.SchemaType
	// compile maps a registry schema (its references fetched, in
	// dependency order: each after those it references) to a writer;
	// indexes are the Protobuf message indexes (nil for the first message).
	// ctx is the caller's: a compile that takes time (Protobuf's) stops
	// when it ends, with ctx's error. Other errors wrap
	// codec.ErrUnsupported (or codec.ErrBadRecord for a message index the
	// schema lacks).
	compile func(ctx context.Context, sch sr.Schema, refs []reference, indexes []int) (compiled, error)
	// schemaless is the one writer of a schemaless format, its decoder
	// built with opts.
	schemaless func(opts []codec.Option) compiled
}

// reference is one schema a registry schema references, directly or not.
type reference struct {
	// name is the reference's name: an Avro full name, a Protobuf import
	// path, a JSON Schema $ref URL.
	name   string
	schema sr.Schema
}

// formats are the formats Tarn reads (DESIGN.md "Type mapping").
var formats = map[Format]format{
	FormatAvro:       {srType: sr.TypeAvro, compile: compileAvro},
	FormatProtobuf:   {srType: sr.TypeProtobuf, compile: compileProtobuf},
	FormatJSONSchema: {srType: sr.TypeJSON, compile: compileJSONSchema},
	FormatJSON:       {schemaless: jsonWriter},
	FormatRaw:        {schemaless: rawWriter},
}

// compileSchema checks that sch is of f's registry type, fetches its
// references and compiles it.
func compileSchema(ctx context.Context, reg Registry, f Format, sch sr.Schema, indexes []int) (compiled, error) {
	fm, ok := formats[f]
	if !ok || fm.compile == nil {
		return compiled{}, fmt.Errorf("%w: format %s is not read from a registry", codec.ErrUnsupported, f)
	}
	if sch.Type != fm.srType {
		return compiled{}, fmt.Errorf("%w: the schema is %s, the topic's format is %s", codec.ErrUnsupported, sch.Type, f)
	}
	var refs []reference
	if err := collectReferences(ctx, reg, sch, &refs, map[string]bool{}, 0); err != nil {
		return compiled{}, err
	}
	return fm.compile(ctx, sch, refs, indexes)
}

// collectReferences appends sch's references to refs, depth first, each
// after the ones it references, each subject version once.
func collectReferences(ctx context.Context, reg Registry, sch sr.Schema, refs *[]reference, seen map[string]bool, depth int) error {
	if depth > maxReferenceDepth {
		return fmt.Errorf("%w: schema references nested deeper than %d", codec.ErrUnsupported, maxReferenceDepth)
	}
	for _, ref := range sch.References {
		key := ref.Subject + "\x00" + strconv.Itoa(ref.Version)
		if seen[key] {
			continue
		}
		seen[key] = true
		var ss sr.SubjectSchema
		err := retry(ctx, func() (err error) {
			ss, err = reg.SchemaByVersion(ctx, ref.Subject, ref.Version)
			return err
		})
		var re *sr.ResponseError
		switch {
		case errors.As(err, &re) && re.StatusCode == 404:
			return fmt.Errorf("%w: reference %s (subject %s version %d) not found", codec.ErrUnsupported, ref.Name, ref.Subject, ref.Version)
		case err != nil:
			// Says nothing about the schema (the registry is down, or
			// refuses us): fail rather than suspend on a good schema.
			var te *transientError
			if !errors.As(err, &te) {
				err = &transientError{err}
			}
			return err
		case ss.Type != sch.Type:
			return fmt.Errorf("%w: reference %s is %s, not %s", codec.ErrUnsupported, ref.Name, ss.Type, sch.Type)
		}
		if err := collectReferences(ctx, reg, ss.Schema, refs, seen, depth+1); err != nil {
			return fmt.Errorf("reference %s: %w", ref.Name, err)
		}
		*refs = append(*refs, reference{name: ref.Name, schema: ss.Schema})
	}
	return nil
}

// compileAvro parses an Avro schema after the schemas it references
// (Confluent schema references: named types defined in other subjects),
// all into one fresh cache so that named types of different schema ids
// never mix.
func compileAvro(_ context.Context, sch sr.Schema, refs []reference, _ []int) (compiled, error) {
	cache := &hamba.SchemaCache{}
	for _, ref := range refs {
		if _, err := hamba.ParseWithCache(ref.schema.Schema, "", cache); err != nil {
			return compiled{}, fmt.Errorf("%w: reference %s: %v", codec.ErrUnsupported, ref.name, err)
		}
	}
	w, err := hamba.ParseWithCache(sch.Schema, "", cache)
	if err != nil {
		return compiled{}, fmt.Errorf("%w: %v", codec.ErrUnsupported, err)
	}
	user, err := avro.ToIceberg(w)
	if err != nil {
		return compiled{}, err
	}
	return avroRows(w, user), nil
}

// avroRows is the compiled form of rows written with Avro schema w
// (user: its Iceberg mapping).
func avroRows(w hamba.Schema, user *iceberg.Schema) compiled {
	return compiled{writer: user, avro: w, decoder: func(target *iceberg.Schema) (codec.Decoder, error) {
		return avro.NewDecoder(w, target, codec.WithCallerColumns(callerColumns...))
	}, writerFor: func(target *iceberg.Schema) *iceberg.Schema {
		if sc, err := avro.ToIcebergFor(w, target); err == nil {
			return sc
		}
		return user
	}}
}

// isSchemaNotFound reports the registry's answer for an unknown schema id:
// error code 40403 (Confluent and Apicurio alike).
func isSchemaNotFound(err error) bool {
	var re *sr.ResponseError
	return errors.As(err, &re) && re.ErrorCode == sr.ErrSchemaNotFound.Code
}

// transientError is a registry failure that says nothing about the
// schema: the lookup may succeed later, so it is not cached.
type transientError struct{ err error }

func (e *transientError) Error() string { return "schema registry: " + e.err.Error() }
func (e *transientError) Unwrap() error { return e.err }

// retry calls fn until it succeeds, fails with an answer from the registry
// that retrying cannot change (a 4xx other than 408 and 429), ctx ends, or
// registryAttempts calls failed; the last two return a *transientError.
func retry(ctx context.Context, fn func() error) error {
	backoff := registryBackoffMin
	for attempt := 1; ; attempt++ {
		err := fn()
		var re *sr.ResponseError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &re) && re.StatusCode >= 400 && re.StatusCode < 500 && re.StatusCode != 408 && re.StatusCode != 429:
			return err
		case ctx.Err() != nil:
			return &transientError{ctx.Err()}
		case attempt == registryAttempts:
			return &transientError{err}
		}
		select {
		case <-ctx.Done():
			return &transientError{ctx.Err()}
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, registryBackoffMax)
	}
}
