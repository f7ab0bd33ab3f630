package pipeline

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	hamba "github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tarnhq/tarn/ingest/connect"
)

// errNoKey is a record without a key in upsert mode.
var errNoKey = errors.New("the record has no key; an upsert topic needs one per record")

// keyDecoder turns a Kafka record key into its identity in an upsert
// table: the canonical JSON text of the decoded key (object keys sorted,
// numbers as written), never the raw bytes, because the Confluent wire
// format embeds a schema id and two ids may carry the same key.
//
//   - A registry format's key in the wire format (magic byte 0, schema
//     id) is decoded with its schema (the subject <topic>-key): Avro
//     through hamba/avro, JSON Schema as JSON. Protobuf keys are refused.
//   - Otherwise a key that is valid JSON is that JSON value; any other
//     UTF-8 key is a string (Kafka's StringSerializer), so "k1" and the
//     JSON text "\"k1\"" are one key.
//   - A key that is neither is its bytes behind a 0x00 byte, which no
//     JSON text starts with.
//   - For format connect-json, a key that is a JsonConverter envelope
//     {"schema": ..., "payload": ...} (schemas.enable=true, as Debezium's
//     key struct is written) is its payload: the schema is no part of the
//     key's identity.
type keyDecoder struct {
	reg        Registry
	registered bool
	// envelopes is set for format connect-json.
	envelopes *connect.Envelopes
	// avro caches parsed key schemas by id; a nil entry is a JSON Schema
	// key.
	avro map[int]hamba.Schema
}

func newKeyDecoder(reg Registry, f Format) *keyDecoder {
	d := &keyDecoder{reg: reg, registered: f.registered(), avro: map[int]hamba.Schema{}}
	if f == FormatConnectJSON {
		d.envelopes = &connect.Envelopes{}
	}
	return d
}

// key returns raw's identity. bad reports a record error (KindNoKey,
// KindBadKey); err a failure that is not the record's (the registry could
// not be asked).
func (d *keyDecoder) key(ctx context.Context, raw []byte) (key string, kind ErrorKind, bad, err error) {
	if raw == nil {
		return "", KindNoKey, errNoKey, nil
	}
	if d.registered && len(raw) >= 5 && raw[0] == 0 {
		return d.registryKey(ctx, raw)
	}
	if json.Valid(raw) {
		if d.envelopes != nil && bytes.HasPrefix(raw, []byte("{")) {
			if _, payload, _, err := d.envelopes.Split(raw); err == nil {
				raw = payload
			}
		}
		k, err := canonicalJSON(raw)
		if err != nil {
			return "", KindBadKey, err, nil
		}
		return k, "", nil, nil
	}
	if utf8.Valid(raw) {
		b, _ := json.Marshal(string(raw))
		return string(b), "", nil, nil
	}
	return "\x00" + string(raw), "", nil, nil
}

func (d *keyDecoder) registryKey(ctx context.Context, raw []byte) (string, ErrorKind, error, error) {
	id := int(binary.BigEndian.Uint32(raw[1:5]))
	payload := raw[5:]
	sc, ok := d.avro[id]
	if !ok {
		s, err := d.reg.SchemaByID(ctx, id)
		switch {
		case isSchemaNotFound(err):
			return "", KindBadKey, fmt.Errorf("key schema id %d: not in the registry", id), nil
		case err != nil:
			return "", "", nil, fmt.Errorf("resolve key schema id %d: %w", id, err)
		}
		switch s.Type {
		case sr.TypeAvro:
			if len(s.References) > 0 {
				return "", KindBadKey, fmt.Errorf("key schema id %d: Avro key schemas with references are not supported", id), nil
			}
			if sc, err = hamba.Parse(s.Schema); err != nil {
				return "", KindBadKey, fmt.Errorf("key schema id %d: %v", id, err), nil
			}
		case sr.TypeJSON:
			sc = nil
		default:
			return "", KindBadKey, fmt.Errorf("key schema id %d is %s: upsert keys are Avro, JSON Schema, JSON or strings", id, s.Type), nil
		}
		d.avro[id] = sc
	}
	if sc == nil {
		k, err := canonicalJSON(payload)
		if err != nil {
			return "", KindBadKey, fmt.Errorf("key schema id %d: %v", id, err), nil
		}
		return k, "", nil, nil
	}
	var v any
	if err := hamba.Unmarshal(sc, payload, &v); err != nil {
		return "", KindBadKey, fmt.Errorf("key schema id %d: %v", id, err), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", KindBadKey, fmt.Errorf("key schema id %d: %v", id, err), nil
	}
	return string(b), "", nil, nil
}

// canonicalJSON re-encodes a JSON text with object keys sorted and no
// insignificant space (encoding/json sorts map keys); numbers keep their
// text.
func canonicalJSON(raw []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", fmt.Errorf("key: %v", err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("key: %v", err)
	}
	return string(b), nil
}
