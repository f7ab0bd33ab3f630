package connect

import (
	"bytes"
	"errors"
	"io"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/tarnhq/tarn/ingest/codec"
)

// Op is a Debezium change event's operation, the envelope's "op"
// (https://debezium.io/documentation/reference/3.6/connectors/postgresql.html#postgresql-change-events-value).
type Op byte

const (
	// OpCreate ("c"): an insert; after is the new row.
	OpCreate Op = 'c'
	// OpRead ("r"): a row read by a snapshot (initial, incremental or a
	// re-snapshot); after is the row.
	OpRead Op = 'r'
	// OpUpdate ("u"): an update; after is the row after it (before only
	// under REPLICA IDENTITY FULL).
	OpUpdate Op = 'u'
	// OpDelete ("d"): a delete; after is null, before holds the old row
	// (only its key columns under REPLICA IDENTITY DEFAULT).
	OpDelete Op = 'd'
	// OpTruncate ("t"): a TRUNCATE of the source table; the event has no
	// key, no before and no after.
	OpTruncate Op = 't'
)

// Upsert reports whether op makes after the key's row (c, r, u).
func (op Op) Upsert() bool { return op == OpCreate || op == OpRead || op == OpUpdate }

// UnavailableValue is the default of the Debezium connectors'
// unavailable.value.placeholder: the value an update carries for a
// TOASTed PostgreSQL column it did not change (pgoutput sends none under
// REPLICA IDENTITY DEFAULT), as a string, or for a bytea column as these
// bytes. The column's value is the one it had before the update.
const UnavailableValue = "__debezium_unavailable_value"

// Change is one Debezium change event, read from the JSON text of its
// envelope (the value with JsonConverter's schemas.enable=false, or the
// "payload" of one with schemas.enable=true):
//
//	{"before": {...} | null, "after": {...} | null, "source": {...},
//	 "op": "c" | "r" | "u" | "d" | "t", "ts_ms": 1700000000123, ...}
type Change struct {
	Op Op
	// After is the JSON text of the row after the change (a sub-slice of
	// the payload); nil when the event's after is null or absent.
	After []byte
	// Before is the JSON text of the row before the change (a sub-slice
	// of the payload): on a d, its key columns (all its columns under
	// REPLICA IDENTITY FULL); nil when null or absent, and in the
	// flattened form.
	Before []byte
	// SourceTsMillis is source.ts_ms, the time the change was committed
	// in the database (ms since the epoch); TsMillis the envelope's ts_ms,
	// when the connector processed it. -1 when absent or null.
	SourceTsMillis, TsMillis int64
}

// ChangeReader reads Debezium change events (see [Change]). The zero
// ChangeReader is ready to use; it is not safe for concurrent use.
type ChangeReader struct {
	rd  bytes.Reader
	dec *jsontext.Decoder
}

// Read reads the change event whose envelope is the JSON text payload.
// Members other than op, before, after, source and ts_ms (transaction,
// ts_us, ts_ns, ...) are checked for syntax only.
//
// Errors are *codec.FieldError wrapping codec.ErrMalformed: payload is not
// a JSON object, op is missing or not one of c, r, u, d, t, an upsert (c,
// r, u) has no after object, a member appears twice.
func (cr *ChangeReader) Read(payload []byte) (Change, error) {
	c := Change{SourceTsMillis: -1, TsMillis: -1}
	bad := func(path, format string, args ...any) (Change, error) {
		return Change{}, codec.FieldErrorf(path, codec.ErrMalformed, format, args...)
	}
	d, err := cr.object(payload, `a Debezium change event, a JSON object {"before", "after", "op", ...}`)
	if err != nil {
		return Change{}, err
	}
	var op string
	for d.PeekKind() != '}' {
		tok, err := d.ReadToken()
		if err != nil {
			return bad("", "not JSON: %v", err)
		}
		name := tok.String() // before ReadValue, which voids tok
		v, err := d.ReadValue()
		if err != nil {
			return bad(name, "not JSON: %v", err)
		}
		switch name {
		case "op":
			if v.Kind() != '"' {
				return bad("op", "want a string, got %s", v.Kind())
			}
			if len(v) == 3 && v[1] != '\\' {
				op = string(v[1:2]) // the common case: no escape
			} else {
				tok, _ := jsontext.NewDecoder(bytes.NewReader(v)).ReadToken()
				op = tok.String()
			}
		case "after", "before":
			switch v.Kind() {
			case 'n':
			case '{':
				end := d.InputOffset()
				if name == "after" {
					c.After = payload[end-int64(len(v)) : end]
				} else {
					c.Before = payload[end-int64(len(v)) : end]
				}
			default:
				return bad(name, "want an object (the row) or null, got %s", v.Kind())
			}
		case "ts_ms":
			if c.TsMillis, err = millis(v, "ts_ms"); err != nil {
				return Change{}, err
			}
		case "source":
			if c.SourceTsMillis, err = sourceMillis(v); err != nil {
				return Change{}, err
			}
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return bad("", "not JSON: %v", err)
	}
	if _, err := d.ReadToken(); !errors.Is(err, io.EOF) {
		return bad("", "data after the JSON object")
	}
	if len(op) != 1 {
		return bad("op", `want one of "c", "r", "u", "d", "t", got %q (is the topic a Debezium change topic? flattened by the ExtractNewRecordState transform? then set the topic's envelope to flattened)`, op)
	}
	c.Op = Op(op[0])
	switch {
	case c.Op.Upsert():
		if c.After == nil {
			return bad("after", "op %q without an after row", op)
		}
	case c.Op == OpDelete, c.Op == OpTruncate:
	default:
		return bad("op", `want one of "c", "r", "u", "d", "t", got %q`, op)
	}
	return c, nil
}

// millis reads a JSON integer or null (-1).
func millis(v jsontext.Value, path string) (int64, error) {
	switch v.Kind() {
	case 'n':
		return -1, nil
	case '0':
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err == nil {
			return n, nil
		}
	}
	return 0, codec.FieldErrorf(path, codec.ErrMalformed, "want an integer (ms since the epoch), got %s", v)
}

// sourceMillis reads source.ts_ms of a source block (null: -1).
func sourceMillis(v jsontext.Value) (int64, error) {
	switch v.Kind() {
	case 'n':
		return -1, nil
	case '{':
	default:
		return 0, codec.FieldErrorf("source", codec.ErrMalformed, "want an object, got %s", v.Kind())
	}
	d := jsontext.NewDecoder(bytes.NewReader(v))
	if _, err := d.ReadToken(); err != nil {
		return 0, codec.FieldErrorf("source", codec.ErrMalformed, "not JSON: %v", err)
	}
	for d.PeekKind() != '}' {
		tok, err := d.ReadToken()
		if err != nil {
			return 0, codec.FieldErrorf("source", codec.ErrMalformed, "not JSON: %v", err)
		}
		name := tok.String()
		mv, err := d.ReadValue()
		if err != nil {
			return 0, codec.FieldErrorf("source", codec.ErrMalformed, "not JSON: %v", err)
		}
		if name == "ts_ms" {
			return millis(mv, "source.ts_ms")
		}
	}
	return -1, nil
}

// AfterSchema returns the schema of the rows of a Debezium change event
// whose envelope has Connect schema envelope: its field "after" (a
// struct, optional in the envelope), made required, since the rows it
// describes are never null.
//
// Errors: *codec.FieldError wrapping codec.ErrUnsupported when envelope
// is not a struct with a struct field "after" (the topic is no Debezium
// change topic, or is flattened by ExtractNewRecordState).
func AfterSchema(envelope *Schema) (*Schema, error) {
	if envelope.Type != Struct {
		return nil, unsupported("", "a Debezium change event's schema is a struct, got %s", envelope.Type)
	}
	for _, f := range envelope.Fields {
		if f.Field == "after" {
			if f.Type != Struct {
				return nil, unsupported("after", "want a struct (the row), got %s", f.Type)
			}
			after := *f
			after.Optional = false
			return &after, nil
		}
	}
	return nil, unsupported("", `the schema %q has no field "after": not a Debezium change event envelope (flattened by ExtractNewRecordState? set the topic's envelope to flattened)`, envelope.Name)
}

// The fields Debezium's ExtractNewRecordState transform adds to the row
// (https://debezium.io/documentation/reference/3.6/transformations/event-flattening.html):
// __deleted (delete.tombstone.handling.mode rewrite or
// rewrite-with-tombstone: "true" on a delete, whose row is then the
// before row, else "false") and, with add.fields (prefix "__"), __op and
// __source_ts_ms.
const (
	FlatDeleted       = "__deleted"
	FlatOp            = "__op"
	FlatSourceTsMilli = "__source_ts_ms"
	FlatTsMilli       = "__ts_ms"
)

// ReadFlattened reads a change event flattened by Debezium's
// ExtractNewRecordState transform: row is the JSON text of the row (the
// value with schemas.enable=false, or the payload of one with
// schemas.enable=true), which carries the transform's added fields.
//
// The Change's After is row. Op is OpDelete when __deleted is "true"
// (or the JSON true) or __op is "d"; else the op __op names (c, r, u,
// t), or 0 when the row has no __op (add.fields without op): an upsert
// of an unknown kind. SourceTsMillis is __source_ts_ms and TsMillis
// __ts_ms (add.fields source.ts_ms and ts_ms), -1 when absent.
//
// Errors are *codec.FieldError wrapping codec.ErrMalformed: row is not a
// JSON object, __op is not one of c, r, u, d, t, __deleted is not a
// string, a boolean or null.
func (cr *ChangeReader) ReadFlattened(row []byte) (Change, error) {
	c := Change{SourceTsMillis: -1, TsMillis: -1, After: row}
	bad := func(path, format string, args ...any) (Change, error) {
		return Change{}, codec.FieldErrorf(path, codec.ErrMalformed, format, args...)
	}
	d, err := cr.object(row, "the row of a flattened Debezium change event, a JSON object")
	if err != nil {
		return Change{}, err
	}
	deleted := false
	for d.PeekKind() != '}' {
		tok, err := d.ReadToken()
		if err != nil {
			return bad("", "not JSON: %v", err)
		}
		name := tok.String()
		if len(name) < 2 || name[0] != '_' || name[1] != '_' {
			if err := d.SkipValue(); err != nil {
				return bad(name, "not JSON: %v", err)
			}
			continue
		}
		v, err := d.ReadValue()
		if err != nil {
			return bad(name, "not JSON: %v", err)
		}
		switch name {
		case FlatDeleted:
			switch v.Kind() {
			case '"':
				s, err := unquote(v)
				if err != nil {
					return bad(name, "%v", err)
				}
				deleted = s == "true"
			case 't':
				deleted = true
			case 'f', 'n':
			default:
				return bad(name, `want "true" or "false", got %s`, v.Kind())
			}
		case FlatOp:
			switch v.Kind() {
			case 'n':
			case '"':
				s, err := unquote(v)
				if err != nil {
					return bad(name, "%v", err)
				}
				switch op := Op(firstByte(s)); {
				case len(s) == 1 && (op.Upsert() || op == OpDelete || op == OpTruncate):
					c.Op = op
				default:
					return bad(name, `want one of "c", "r", "u", "d", "t", got %q`, s)
				}
			default:
				return bad(name, "want a string, got %s", v.Kind())
			}
		case FlatSourceTsMilli:
			if c.SourceTsMillis, err = millis(v, name); err != nil {
				return Change{}, err
			}
		case FlatTsMilli:
			if c.TsMillis, err = millis(v, name); err != nil {
				return Change{}, err
			}
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return bad("", "not JSON: %v", err)
	}
	if _, err := d.ReadToken(); !errors.Is(err, io.EOF) {
		return bad("", "data after the JSON object")
	}
	if deleted {
		c.Op = OpDelete
	}
	return c, nil
}

// unquote returns the text of a JSON string value.
func unquote(v jsontext.Value) (string, error) {
	tok, err := jsontext.NewDecoder(bytes.NewReader(v)).ReadToken()
	if err != nil {
		return "", err
	}
	return tok.String(), nil
}

func firstByte(s string) byte {
	if s == "" {
		return 0
	}
	return s[0]
}

// object points the reader's decoder at payload and reads the opening
// brace of the JSON object it must hold (want names it, for the error).
// Errors are *codec.FieldError wrapping codec.ErrMalformed: payload is
// not JSON or not an object.
func (cr *ChangeReader) object(payload []byte, want string) (*jsontext.Decoder, error) {
	cr.rd.Reset(payload)
	if cr.dec == nil {
		cr.dec = jsontext.NewDecoder(&cr.rd)
	} else {
		cr.dec.Reset(&cr.rd)
	}
	tok, err := cr.dec.ReadToken()
	if err != nil {
		return nil, codec.FieldErrorf("", codec.ErrMalformed, "not JSON: %v", err)
	}
	if tok.Kind() != '{' {
		return nil, codec.FieldErrorf("", codec.ErrMalformed, "want %s, got %s", want, tok.Kind())
	}
	return cr.dec, nil
}
