package produce

import (
	"encoding/json"
	"fmt"

	"github.com/apache/iceberg-go"
	hamba "github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/tarnhq/tarn/ingest/avro"
	"github.com/tarnhq/tarn/ingest/jsonrow"
	"github.com/tarnhq/tarn/ingest/jsonschema"
	"github.com/tarnhq/tarn/ingest/protobuf"
)

// Encoder turns rows into record values.
type Encoder interface {
	// Encode returns row as a record value. Errors name the field that
	// does not fit the schema.
	Encode(row Row) ([]byte, error)
	// Columns is the Iceberg schema the values map to (ingest's mapping
	// of the writer schema), for typing CSV text with [Coerce]; nil when
	// the values have no schema.
	Columns() *iceberg.Schema
}

// header is the Confluent wire-format prefix: magic byte 0, the schema
// id, for Protobuf the message indexes.
func header(id int, indexes []int) ([]byte, error) {
	var h sr.ConfluentHeader
	return h.AppendEncode(nil, id, indexes)
}

// Avro encodes values with an Avro writer schema registered as ID.
type Avro struct {
	schema  hamba.Schema
	id      int
	columns *iceberg.Schema
	// Lenient also reads strings as numbers and booleans (CSV text).
	Lenient bool
}

// NewAvro returns the encoder of schema, registered under id. Errors:
// the schema cannot become a table (ingest/avro.ToIceberg).
func NewAvro(schema hamba.Schema, id int) (*Avro, error) {
	cols, err := avro.ToIceberg(schema)
	if err != nil {
		return nil, err
	}
	return &Avro{schema: schema, id: id, columns: cols}, nil
}

// Columns is the table schema the writer schema maps to.
func (a *Avro) Columns() *iceberg.Schema { return a.columns }

// Encode converts row to the schema's values (see avroNative) and
// encodes it.
func (a *Avro) Encode(row Row) ([]byte, error) {
	v, err := avroNative(a.schema, row, "", a.Lenient)
	if err != nil {
		return nil, err
	}
	return a.EncodeNative(v)
}

// EncodeNative encodes v, a value hamba/avro marshals for the schema (a
// struct with avro tags, or maps as Encode builds them).
func (a *Avro) EncodeNative(v any) ([]byte, error) {
	out, err := header(a.id, nil)
	if err != nil {
		return nil, err
	}
	body, err := hamba.Marshal(a.schema, v)
	if err != nil {
		return nil, err
	}
	return append(out, body...), nil
}

// Protobuf encodes one message type of a Protobuf schema registered as
// ID.
type Protobuf struct {
	md      protoreflect.MessageDescriptor
	id      int
	indexes []int
	columns *iceberg.Schema
}

// NewProtobuf returns the encoder of message md of a schema registered
// under id. Errors: the message cannot become a table
// (ingest/protobuf.ToIceberg).
func NewProtobuf(md protoreflect.MessageDescriptor, id int) (*Protobuf, error) {
	cols, err := protobuf.ToIceberg(md)
	if err != nil {
		return nil, err
	}
	return &Protobuf{md: md, id: id, indexes: messageIndexes(md), columns: cols}, nil
}

// messageIndexes is md's path in its file as Confluent's message
// indexes: the index of the top-level message, then of each nested one.
func messageIndexes(md protoreflect.MessageDescriptor) []int {
	var idx []int
	for d := protoreflect.Descriptor(md); ; d = d.Parent() {
		if _, ok := d.(protoreflect.MessageDescriptor); !ok {
			break
		}
		idx = append([]int{d.Index()}, idx...)
	}
	return idx
}

// Columns is the table schema the message maps to.
func (p *Protobuf) Columns() *iceberg.Schema { return p.columns }

// Encode reads row as the message's canonical JSON (protojson: field
// names or their JSON names, numbers or their text, enums by name,
// Timestamps in RFC 3339) and encodes it. A field the message lacks is
// an error.
func (p *Protobuf) Encode(row Row) ([]byte, error) {
	text, err := json.Marshal(row)
	if err != nil {
		return nil, err
	}
	m := dynamicpb.NewMessage(p.md)
	if err := protojson.Unmarshal(text, m); err != nil {
		return nil, fmt.Errorf("%s: %w", p.md.FullName(), err)
	}
	body, err := proto.Marshal(m)
	if err != nil {
		return nil, err
	}
	out, err := header(p.id, p.indexes)
	if err != nil {
		return nil, err
	}
	return append(out, body...), nil
}

// JSONSchema encodes JSON values valid against a JSON Schema registered
// as ID.
type JSONSchema struct {
	schema  *jsonschema.Schema
	id      int
	columns *iceberg.Schema
}

// NewJSONSchema returns the encoder of s, registered under id. Errors:
// the schema cannot become a table (ingest/jsonschema.ToIceberg).
func NewJSONSchema(s *jsonschema.Schema, id int) (*JSONSchema, error) {
	cols, err := jsonschema.ToIceberg(s)
	if err != nil {
		return nil, err
	}
	return &JSONSchema{schema: s, id: id, columns: cols}, nil
}

// Columns is the table schema the JSON Schema maps to.
func (j *JSONSchema) Columns() *iceberg.Schema { return j.columns }

// Encode validates row against the schema and encodes it as JSON.
func (j *JSONSchema) Encode(row Row) ([]byte, error) {
	body, err := json.Marshal(row)
	if err != nil {
		return nil, err
	}
	if err := j.schema.Validate(row); err != nil {
		return nil, err
	}
	out, err := header(j.id, nil)
	if err != nil {
		return nil, err
	}
	return append(out, body...), nil
}

// JSON encodes rows as plain JSON objects, no header (a `json` topic).
type JSON struct {
	columns *iceberg.Schema
}

// NewJSON returns the plain JSON encoder; columns (the table's Iceberg
// schema, as `tarn topics enable --schema-file` takes it; may be nil)
// only types CSV text.
func NewJSON(columns *iceberg.Schema) *JSON { return &JSON{columns: columns} }

// ParseColumns reads an Iceberg schema in the spec's JSON form
// (ingest/jsonrow.ParseSchema).
func ParseColumns(text []byte) (*iceberg.Schema, error) { return jsonrow.ParseSchema(text) }

// Columns is the declared table schema, or nil.
func (j *JSON) Columns() *iceberg.Schema { return j.columns }

// Encode returns row as compact JSON.
func (j *JSON) Encode(row Row) ([]byte, error) { return json.Marshal(row) }
