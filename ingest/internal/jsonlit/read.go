package jsonlit

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strconv"

	"github.com/tarnhq/tarn/ingest/codec"
	"github.com/tarnhq/tarn/ingest/internal/tape"
)

// The readers below are the read pass of the leaves, arrays and objects
// both JSON decoders (ingest/jsonrow, ingest/connect) share: each takes a
// JSON value as encoding/json parses it with UseNumber (v), checks and
// converts it, and records the result on t for the write pass. Errors are
// *codec.FieldError at path, wrapping codec.ErrMalformed for a value of
// the wrong JSON type or bad syntax and codec.ErrOutOfRange for one that
// does not fit its column.

// WrongType is the error for v, which is not the JSON value the column
// takes (want: "a boolean", "a uuid string"): codec.ErrMalformed.
func WrongType(path string, v any, want string) error {
	return codec.FieldErrorf(path, codec.ErrMalformed, "want %s, got %s", want, Kind(v))
}

// ReadBool records a JSON true or false.
func ReadBool(t *tape.Tape, v any, path string) error {
	b, ok := v.(bool)
	if !ok {
		return WrongType(path, v, "a boolean")
	}
	t.PutBool(b)

	return nil
}

// ReadFloat records a JSON number as a float of bits (32 or 64) bits;
// one beyond the type's range is ErrOutOfRange.
func ReadFloat(t *tape.Tape, v any, bits int, path string) error {
	num, ok := v.(json.Number)
	if !ok {
		return WrongType(path, v, "a number")
	}
	f, err := strconv.ParseFloat(string(num), bits)
	if err != nil {
		return codec.FieldErrorf(path, codec.ErrOutOfRange, "%s overflows a float%d", num, bits)
	}
	t.PutFloat(f)

	return nil
}

// ReadDecimal records lit, the text of a JSON number, exactly as a
// decimal(prec, scale) (Decimal): bad syntax is ErrMalformed, more
// fraction digits than scale (no rounding) or more digits than prec
// ErrOutOfRange.
func ReadDecimal(t *tape.Tape, lit string, prec, scale int32, path string) error {
	d, err := Decimal(lit, prec, scale)
	switch {
	case errors.Is(err, ErrSyntax):
		return codec.FieldErrorf(path, codec.ErrMalformed, "%q is not a decimal number", lit)
	case errors.Is(err, ErrFraction):
		return codec.FieldErrorf(path, codec.ErrOutOfRange, "%s has more than %d fraction digits, decimal(%d,%d) would round it", lit, scale, prec, scale)
	case err != nil:
		return codec.FieldErrorf(path, codec.ErrOutOfRange, "%s overflows decimal(%d,%d)", lit, prec, scale)
	}
	t.PutDec(d)

	return nil
}

// ReadUUID records a uuid string in the canonical 36-character form
// (codec.ParseUUID, every format's rule); another string is
// ErrOutOfRange.
func ReadUUID(t *tape.Tape, v any, path string) error {
	s, ok := v.(string)
	if !ok {
		return WrongType(path, v, "a uuid string")
	}
	u, ok := codec.ParseUUID([]byte(s))
	if !ok {
		return codec.FieldErrorf(path, codec.ErrOutOfRange, "%q is not a uuid in canonical form (8-4-4-4-12 hex digits)", s)
	}
	t.Keep(u[:])

	return nil
}

// Bytes decodes a base64 string (Base64) into bytes of t's buffer, which
// the caller checks and records (PutBytes) or converts.
func Bytes(t *tape.Tape, v any, path string) ([]byte, error) {
	s, ok := v.(string)
	if !ok {
		return nil, WrongType(path, v, "a base64 string")
	}
	b, err := Base64(t, s)
	if err != nil {
		return nil, codec.FieldErrorf(path, codec.ErrMalformed, "not base64: %v", err)
	}

	return b, nil
}

// ReadArray reads a JSON array: it records the element count, then calls
// elem once per element, in order, to read it (the write pass is
// tape.WriteList). want names the array in the error for another value.
func ReadArray(t *tape.Tape, v any, path, want string, elem func(e any) error) error {
	arr, ok := v.([]any)
	if !ok {
		return WrongType(path, v, want)
	}
	t.PutInt(int64(len(arr)))
	for _, e := range arr {
		if err := elem(e); err != nil {
			return err
		}
	}

	return nil
}

// ReadObject reads a JSON object as a map: it records the entry count,
// then calls entry once per member, in key order (so the stored map, and
// the data files, are deterministic), to read its key and value (the
// write pass is tape.WriteMap). want names the map in the error for
// another value.
func ReadObject(t *tape.Tape, v any, path, want string, entry func(k string, v any) error) error {
	obj, ok := v.(map[string]any)
	if !ok {
		return WrongType(path, v, want)
	}
	t.PutInt(int64(len(obj)))
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if err := entry(k, obj[k]); err != nil {
			return err
		}
	}

	return nil
}
