package connect

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/tarnhq/tarn/ingest/codec"
)

// Envelopes splits record values written by Kafka Connect's
// JsonConverter with schemas.enable=true, each a JSON object of exactly
// two members, {"schema": S, "payload": P} (JsonConverter.toConnectData
// refuses any other member), into the JSON texts of S and P.
//
// A topic's values nearly always share one schema, often larger than the
// payload (a Debezium change event's schema is several kilobytes), so
// Split first tries the schema text of the previous value: when the value
// starts with exactly {"schema": that text, "payload": (JsonConverter's
// compact output), the schema is known by one byte comparison and only
// the payload remains to be read (by the decoder). Otherwise the value is
// scanned with jsontext (encoding/json/v2's tokenizer: strict syntax,
// UTF-8, no member twice).
//
// The zero Envelopes is ready to use; it is not safe for concurrent use.
type Envelopes struct {
	last []byte // schema text of the previous value split
	rd   bytes.Reader
	dec  *jsontext.Decoder
}

var (
	envelopeStart = []byte(`{"schema":`)
	payloadMember = []byte(`,"payload":`)
)

// Split returns the JSON texts of value's schema and payload (sub-slices
// of value) and whether the schema text is byte for byte that of the
// previous value Split returned.
//
// Errors are *codec.FieldError wrapping codec.ErrMalformed: value is not
// a JSON object, lacks schema or payload or has another member, or
// either of them is null (a null schema is what a JsonConverter with
// schemas.enable=false, or a connector without a value schema, writes; a
// null payload has no row).
func (e *Envelopes) Split(value []byte) (schema, payload []byte, same bool, err error) {
	if e.last != nil && bytes.HasPrefix(value, envelopeStart) {
		rest := value[len(envelopeStart):]
		if bytes.HasPrefix(rest, e.last) && bytes.HasPrefix(rest[len(e.last):], payloadMember) {
			// The schema is a JSON object, which ends where its text
			// does: what follows it is the value's own. The payload is
			// what is left before the closing brace; the decoder
			// refuses it unless it is exactly one JSON value.
			p := bytes.TrimRight(rest[len(e.last)+len(payloadMember):], " \t\r\n")
			if len(p) > 0 && p[len(p)-1] == '}' {
				p = bytes.TrimSpace(p[:len(p)-1])
				if len(p) > 0 && !bytes.Equal(p, []byte("null")) {
					return rest[:len(e.last)], p, true, nil
				}
			}
		}
	}
	schema, payload, err = e.scan(value)
	if err != nil {
		return nil, nil, false, err
	}
	same = bytes.Equal(schema, e.last)
	if !same {
		e.last = append(e.last[:0], schema...)
	}

	return schema, payload, same, nil
}

// scan splits value with the tokenizer.
func (e *Envelopes) scan(value []byte) (schema, payload []byte, err error) {
	e.rd.Reset(value)
	if e.dec == nil {
		e.dec = jsontext.NewDecoder(&e.rd)
	} else {
		e.dec.Reset(&e.rd)
	}
	d := e.dec
	bad := func(format string, args ...any) ([]byte, []byte, error) {
		return nil, nil, codec.FieldErrorf("", codec.ErrMalformed, format, args...)
	}
	tok, err := d.ReadToken()
	if err != nil {
		return bad("not JSON: %v", err)
	}
	if tok.Kind() != '{' {
		return bad(`want a JSON object {"schema": ..., "payload": ...} (Kafka Connect's JsonConverter with schemas.enable=true), got %s`, tok.Kind())
	}
	for d.PeekKind() != '}' {
		tok, err := d.ReadToken()
		if err != nil {
			return bad("not JSON: %v", err)
		}
		name := tok.String() // before ReadValue, which voids tok
		v, err := d.ReadValue()
		if err != nil {
			return bad("not JSON: %v", err)
		}
		end := d.InputOffset()
		raw := value[end-int64(len(v)) : end]
		switch name {
		case "schema":
			schema = raw
		case "payload":
			payload = raw
		default:
			return bad(`the envelope has a member %q besides "schema" and "payload" (written with schemas.enable=false?)`, name)
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return bad("not JSON: %v", err)
	}
	if _, err := d.ReadToken(); !errors.Is(err, io.EOF) {
		return bad("data after the JSON object")
	}
	switch {
	case schema == nil:
		return bad(`the envelope has no "schema" (written with schemas.enable=false?)`)
	case payload == nil:
		return bad(`the envelope has no "payload"`)
	case bytes.Equal(schema, []byte("null")):
		return bad("the schema is null: the producer wrote no value schema (schemas.enable=false, or a connector without one)")
	case bytes.Equal(payload, []byte("null")):
		return bad("the payload is null: no row")
	}

	return schema, payload, nil
}

// Fingerprint is the schema id of a JSON-with-schemas value: the first
// 31 bits of the SHA-256 of schema's canonical JSON text (RFC 8785: no
// whitespace, members sorted), so a schema written with other whitespace
// or member order has the same id, and ids fit the Iceberg int column
// schema_id of a dead letter table. Text that cannot be canonicalized is
// hashed as it is. Two schemas share an id with odds of 1 in 2^31 per
// pair; an id only names a schema in status and error messages, and in
// the schema ids a resume moves past.
func Fingerprint(schema []byte) int {
	v := jsontext.Value(bytes.Clone(schema))
	if err := v.Canonicalize(); err != nil {
		v = schema
	}
	sum := sha256.Sum256(v)

	return int(binary.BigEndian.Uint32(sum[:4]) >> 1)
}
