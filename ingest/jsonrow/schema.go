package jsonrow

import (
	"encoding/json"
	"fmt"

	"github.com/apache/iceberg-go"

	"github.com/tarnhq/tarn/ingest/codec"
)

// ParseSchema reads the Iceberg schema a user declares for a schemaless
// JSON topic (DESIGN.md "Type mapping"), in the Iceberg spec's JSON form,
// as table metadata holds it ("Appendix C: JSON serialization"):
//
//	{"type": "struct", "fields": [
//	  {"id": 1, "name": "origin", "required": true, "type": "string"},
//	  {"id": 2, "name": "delay", "required": false, "type": "long"}]}
//
// iceberg-go parses it. The ids in the text only need to be unique; they
// are replaced by fresh ones assigned depth-first from 1
// (iceberg.AssignFreshSchemaIDs), the numbering a new table gets;
// identifier-field-ids follow their fields, and the schema id is 0.
//
// Errors wrap codec.ErrUnsupported: the text is not a schema (bad JSON,
// "type" not "struct", duplicate ids, an unknown type), it has no fields,
// or it has a type a [Decoder] cannot fill from JSON (see [NewDecoder]).
func ParseSchema(data []byte) (*iceberg.Schema, error) {
	var sc iceberg.Schema
	if err := json.Unmarshal(data, &sc); err != nil {
		return nil, &codec.FieldError{Err: fmt.Errorf("%w: not an Iceberg schema: %w", codec.ErrUnsupported, err)}
	}
	if len(sc.Fields()) == 0 {
		// Parquet cannot store a row without columns.
		return nil, &codec.FieldError{Err: fmt.Errorf("%w: the schema has no fields", codec.ErrUnsupported)}
	}
	fresh, err := iceberg.AssignFreshSchemaIDs(&sc, nil)
	if err != nil {
		return nil, &codec.FieldError{Err: fmt.Errorf("%w: assigning field ids: %w", codec.ErrUnsupported, err)}
	}
	if _, err := NewDecoder(fresh); err != nil {
		return nil, err
	}

	return fresh, nil
}
