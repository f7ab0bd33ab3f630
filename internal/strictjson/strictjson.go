// Package strictjson decodes JSON that must mean one thing only: a request
// body that a privilege check and a handler both act on, a value Tarn
// stored and reads back, a flag. encoding/json alone is lenient in ways
// that let two readers of the same bytes disagree: a json.Decoder stops
// after the first value (and its More reports false before a stray "}"
// or "]"), a member named twice silently keeps its last value, invalid
// UTF-8 becomes U+FFFD, and an integer beyond int64 becomes a rounded
// float64 in an interface value. Here each of these is an error.
//
// RFC 8259 leaves duplicate names (§4) and number range (§6) to the
// implementation; this package refuses both, as encoding/json/v2 does for
// duplicate names.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/tarnhq/tarn/internal/errclass"
)

// ErrInvalid is the parent of every error Valid, Decode and DecodeKnown
// return for input that is not exactly one acceptable JSON value (it is
// not wrapped around the errors of v's own decoding: those are
// encoding/json's).
var ErrInvalid = errclass.New(errclass.Internal, "invalid JSON")

// MaxDepth is the deepest nesting of arrays and objects accepted: that of
// jsontext (and of encoding/json's own decoder).
const MaxDepth = 10000

// Valid checks that data is exactly one JSON value, optionally surrounded
// by whitespace, that is UTF-8, names no object member twice (names
// compared after unescaping), nests at most MaxDepth deep, and holds no
// number that does not fit: an integer literal (no fraction, no exponent)
// beyond int64, or any number beyond float64's range. Syntax, names and
// UTF-8 are checked by jsontext (encoding/json/v2's tokenizer, whose
// defaults refuse duplicate names and invalid UTF-8). Errors wrap
// ErrInvalid and say where.
func Valid(data []byte) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return fmt.Errorf("%w: no JSON value", ErrInvalid)
	}
	dec := jsontext.NewDecoder(bytes.NewReader(data))
	for {
		if dec.PeekKind() == '0' {
			num, err := dec.ReadValue()
			if err != nil {
				return fmt.Errorf("%w: %v", ErrInvalid, err)
			}
			if err := checkNumber(string(num)); err != nil {
				return fmt.Errorf("%w: %v (offset %d)", ErrInvalid, err, dec.InputOffset()-int64(len(num)))
			}
		} else if _, err := dec.ReadToken(); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		if dec.StackDepth() == 0 {
			break
		}
	}
	off := dec.InputOffset()
	if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: data after the JSON value at offset %d", ErrInvalid, off)
	}
	return nil
}

// checkNumber refuses a number Go cannot hold without rounding it away:
// an integer literal beyond int64 (Iceberg's largest integer type is
// long), or a number beyond float64's range. The message does not echo
// the number (the document may be configuration holding secrets).
func checkNumber(s string) error {
	if !strings.ContainsAny(s, ".eE") {
		if _, err := strconv.ParseInt(s, 10, 64); err != nil {
			return fmt.Errorf("an integer of %d digits does not fit in 64 bits", len(strings.TrimPrefix(s, "-")))
		}
		return nil
	}
	if _, err := strconv.ParseFloat(s, 64); err != nil {
		return errors.New("a number is beyond the range of a 64-bit float")
	}
	return nil
}

// Decode checks data with Valid and decodes it into v by encoding/json's
// rules (v's own UnmarshalJSON methods included). Members v does not
// have are ignored, as encoding/json does.
func Decode(data []byte, v any) error {
	if err := Valid(data); err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

// DecodeKnown is Decode that also refuses members v does not have
// (encoding/json's DisallowUnknownFields): for Tarn's own formats, where
// a misspelt member must not be silently ignored.
func DecodeKnown(data []byte, v any) error {
	if err := Valid(data); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v) // Valid saw exactly one value
}

// Canonical returns data (which Valid accepts) in one form whatever its
// whitespace, member order or string escapes: compact, object members
// sorted by name, numbers as written. Two documents with the same
// Canonical form decode to the same value. Errors: those of Valid.
func Canonical(data []byte) ([]byte, error) {
	if err := Valid(data); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return json.Marshal(v) // maps marshal sorted; json.Number as written
}
