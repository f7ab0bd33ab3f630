package jsonrow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/tarnhq/tarn/ingest/codec"
	"github.com/tarnhq/tarn/ingest/internal/jsonlit"
	"github.com/tarnhq/tarn/ingest/internal/tape"
)

// Decoder turns JSON objects into rows of an Arrow record whose schema
// comes from a target Iceberg schema (the table's, see
// [Decoder.ArrowSchema]).
//
// Fields are matched by name, at every depth, exactly (names are case
// sensitive, as in JSON) unless [WithCaseInsensitiveNames] is given:
//
//   - a JSON field the target lacks is ignored: a schemaless topic's
//     declared schema says which fields the table keeps, and the rest of
//     each document is dropped on purpose; [Decoder.Coverage] lists such
//     fields, and the columns no row has filled;
//   - a target column that is missing from the object, or null, gets null
//     if the column is optional, and is a malformed record (ErrMalformed,
//     naming the path) if it is required; the same holds for list elements
//     and map values against their element or value requiredness;
//   - top-level columns named by [codec.WithCallerColumns] are left alone, and a
//     JSON field of that name is ignored.
//
// Conversions by target type (anything else is ErrMalformed: a JSON value
// of the wrong type):
//
//   - boolean: true or false.
//   - int, long: a JSON number with an integral value (1, -7, 1.0, 2e3);
//     a fraction, or a value outside the column's range, is ErrOutOfRange.
//   - float, double: a JSON number; one beyond the type's range is
//     ErrOutOfRange.
//   - decimal(P,S): a JSON number or a string holding one ("12.30"),
//     converted exactly from its text: more than S significant fraction
//     digits or more than P digits in all is ErrOutOfRange (no rounding).
//   - string: a JSON string, or a JSON number stored as its text exactly
//     as written (a film titled 1776 arrives as a number: "1776"; 1.50
//     stays "1.50"); any JSON value, stored as its JSON text, for the
//     paths named by [WithJSONText].
//   - date: "YYYY-MM-DD".
//   - time: "HH:MM:SS" with up to nine fraction digits; an optional RFC
//     3339 offset ("Z", "+02:00") converts the time to UTC (modulo one day).
//   - timestamptz: an RFC 3339 string with an offset or Z
//     ("2024-03-01T13:25:30.5+01:00"), or a JSON integer counting
//     milliseconds since 1970-01-01T00:00:00Z (another unit with
//     [WithTimestampUnit]).
//   - timestamp (without zone): the same, except that the offset may be
//     left out ("2024-03-01T13:25:30"): the wall clock is stored as is. A
//     string with an offset is converted to UTC first; integers count
//     from 1970-01-01T00:00:00 wall clock.
//   - dates and timestamps outside years 1 to 9999 are ErrOutOfRange
//     (codec.TimestampInRange: a microsecond epoch read as milliseconds
//     would be in year 56132).
//   - uuid: the canonical 36-character form
//     ("f81d4fae-7dec-11d0-a765-00a0c91e6bf6", codec.ParseUUID, the rule
//     of every format); another string is ErrOutOfRange.
//   - binary, fixed[N]: a base64 string (standard alphabet, padding
//     optional); a fixed value of another length is ErrOutOfRange.
//   - struct: a JSON object; list: a JSON array; map<string, V>: a JSON
//     object, its entries stored in key order.
//
// Times and timestamps are stored in microseconds; digits below a
// microsecond are truncated (toward the past). Dates are days since the
// epoch, decimals decimal128 at the column's scale, uuids arrow-go's uuid
// extension type, as iceberg-go maps them.
//
// # Atomicity
//
// Append works in two passes over a compiled plan, like ingest/avro's
// decoder: the read pass walks the parsed document, converts every value
// and checks that it fits, storing the results on a tape; only when the
// whole document was read without error does the write pass replay the tape
// into the builders, and the write pass cannot fail. An error never leaves
// a partial row.
//
// A Decoder is not safe for concurrent use; use one per goroutine.
type Decoder struct {
	schema *arrow.Schema
	root   *structNode
	t      tape.Tape
	check  codec.BuilderCheck
	cov    *coverage
}

// WithJSONText names string-typed positions of the target, as Iceberg name
// paths ("attrs.value" for the values of a map column attrs,
// "tags.element" for a list's elements), that take any JSON value: strings
// are stored as they are, other values as their compact JSON text (object
// keys sorted, numbers as written). ingest/jsonschema uses it for the
// map<string, string> of objects with additionalProperties. Paths that do
// not name a string position of the target make NewDecoder fail with
// ErrUnsupported.
func WithJSONText(paths ...string) codec.Option {
	return func(o *codec.Options) { o.JSONText = append(o.JSONText, paths...) }
}

// WithTimestampUnit sets the unit of JSON integers in timestamp and
// timestamptz columns: a count of unit since 1970-01-01T00:00:00 (UTC for
// timestamptz). The default is Millis. NewDecoder refuses a unit not in
// TimestampUnits with ErrUnsupported.
func WithTimestampUnit(unit TimestampUnit) codec.Option {
	return func(o *codec.Options) { o.TimestampUnit = string(unit) }
}

// WithCaseInsensitiveNames matches JSON field names to columns regardless
// of case (Unicode simple case folding, strings.EqualFold: "Title",
// "TITLE" and "title" all fill a column title). A field named exactly as
// the column is found first; two fields of one object that both match a
// column ({"title": 1, "Title": 2}) make the record ErrMalformed rather
// than one being dropped. NewDecoder refuses, with ErrUnsupported, a
// target with two sibling columns whose names differ only in case.
func WithCaseInsensitiveNames() codec.Option {
	return func(o *codec.Options) { o.FoldNames = true }
}

// TimestampUnit is the unit of a JSON integer in a timestamp column.
type TimestampUnit string

// The units of WithTimestampUnit.
const (
	Seconds TimestampUnit = "s"
	Millis  TimestampUnit = "ms"
	Micros  TimestampUnit = "us"
	Nanos   TimestampUnit = "ns"
)

// TimestampUnits lists the units WithTimestampUnit takes, the default
// first.
var TimestampUnits = []TimestampUnit{Millis, Micros, Nanos, Seconds}

// NewDecoder compiles a plan that fills target's columns from JSON objects.
//
// Errors are *codec.FieldError wrapping codec.ErrUnsupported: the target
// has a type JSON cannot fill (a map whose keys are not strings, a
// nanosecond timestamp, variant, geometry, ...), a WithJSONText path
// is not a string position of the target, the timestamp unit is unknown,
// or (WithCaseInsensitiveNames) two sibling columns differ only in case.
func NewDecoder(target *iceberg.Schema, opts ...codec.Option) (*Decoder, error) {
	o := codec.Apply(opts)

	unit := Millis
	if o.TimestampUnit != "" {
		unit = TimestampUnit(o.TimestampUnit)
	}
	if !slices.Contains(TimestampUnits, unit) {
		return nil, unsupported("", "timestamp unit %q: want one of %v", o.TimestampUnit, TimestampUnits)
	}
	c := compiler{jsonText: map[string]bool{}, unit: unit, fold: o.FoldNames, cov: &coverage{}, parent: -1}
	for _, p := range o.JSONText {
		c.jsonText[p] = false
	}
	root, err := c.structOf(target.AsStruct().FieldList, "", o.CallerColumns)
	if err != nil {
		return nil, err
	}
	for _, p := range slices.Sorted(maps.Keys(c.jsonText)) {
		if !c.jsonText[p] {
			return nil, unsupported(p, "WithJSONText names no string column or element of the target")
		}
	}

	sc, err := table.SchemaToArrowSchema(target, nil, true, false)
	if err != nil {
		return nil, &codec.FieldError{Err: fmt.Errorf("%w: arrow schema of the target: %w", codec.ErrUnsupported, err)}
	}

	return &Decoder{schema: sc, root: root, cov: c.cov}, nil
}

// ArrowSchema is the schema of the RecordBuilder that Append takes: the
// target Iceberg schema converted by iceberg-go's table.SchemaToArrowSchema
// with field IDs ("PARQUET:field_id" metadata) and small (32-bit offset)
// types.
func (d *Decoder) ArrowSchema() *arrow.Schema { return d.schema }

// Append parses one JSON object (UTF-8, a Kafka record value after any
// header the pipeline strips) and appends it as one row to b, whose schema
// must be [Decoder.ArrowSchema] (or have the same names and types).
//
// On error nothing was appended. Errors are *codec.FieldError wrapping
// codec.ErrMalformed (not UTF-8, not JSON, not an object, data after the
// object, a value of the wrong JSON type, a required value missing or
// null) or codec.ErrOutOfRange (see [Decoder] for each type's limits), or
// codec.ErrBuilderSchema.
func (d *Decoder) Append(b *array.RecordBuilder, payload []byte) error {
	obj, err := Parse(payload)
	if err != nil {
		return err
	}

	return d.AppendValue(b, obj)
}

// AppendValue appends an already parsed JSON object, as returned by
// [Parse], as one row to b. ingest/jsonschema uses it to validate and
// convert one parse of the payload. Errors are those of Append.
func (d *Decoder) AppendValue(b *array.RecordBuilder, obj map[string]any) error {
	if err := d.check.Check(b, d.schema); err != nil {
		return err
	}

	t := &d.t
	t.Reset()
	d.cov.begin()
	if err := d.root.readFields(t, obj); err != nil {
		return err
	}
	d.root.cols.WriteRow(b, func(i int, fb array.Builder) { d.root.fields[i].write(t, fb) })
	d.cov.commit()

	return nil
}

// Coverage reports how the rows appended so far filled the target: the
// columns none of them carried a value for, and the fields of their
// objects that match no column (see codec.Coverage).
func (d *Decoder) Coverage() codec.Coverage { return d.cov.report() }

// Parse decodes one JSON payload into a JSON object as encoding/json
// represents it with UseNumber: map[string]any, []any, json.Number,
// string, bool and nil. It refuses (with *codec.FieldError wrapping
// codec.ErrMalformed) input that is not UTF-8, not JSON, not an object, or
// has anything but whitespace after the object. When a key repeats, the
// last value wins (encoding/json's rule).
func Parse(payload []byte) (map[string]any, error) {
	// encoding/json would replace invalid bytes with U+FFFD and carry on;
	// JSON text is UTF-8 (RFC 8259 §8.1), so such a payload is refused.
	if !utf8.Valid(payload) {
		return nil, malformed("", "payload is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, malformed("", "empty payload")
		}

		return nil, malformed("", "not JSON: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, malformed("", "data after the JSON value")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, malformed("", "want a JSON object, got %s", jsonlit.Kind(v))
	}

	return obj, nil
}

// node is one compiled step of the plan: read converts a non-null JSON
// value and checks it, recording the result on the tape; write appends the
// recorded value to the column's builder and cannot fail.
type node interface {
	read(t *tape.Tape, v any) error
	write(t *tape.Tape, b array.Builder)
}

// slot is a position that may hold null: a struct field, a list element or
// a map value. The tape holds 1 before a value, 0 for null.
type slot struct {
	path     string
	required bool
	node     node
}

func (s *slot) read(t *tape.Tape, v any, present bool) error {
	if !present || v == nil {
		if s.required {
			if !present {
				return malformed(s.path, "required value is missing")
			}

			return malformed(s.path, "required value is null")
		}
		t.PutInt(0)

		return nil
	}
	t.PutInt(1)

	return s.node.read(t, v)
}

func (s *slot) write(t *tape.Tape, b array.Builder) {
	if t.Present(b) {
		s.node.write(t, b)
	}
}

// structNode is an Iceberg struct filled from a JSON object (or, at the
// top, the record builder's columns).
type structNode struct {
	path   string
	fields []fieldNode     // target fields, in target order, caller columns left out
	cols   tape.Fields     // the fields' columns
	index  map[string]bool // the fields' names
	fold   bool            // WithCaseInsensitiveNames
	cov    *coverage
	// unmatched are the keys of this struct's objects that matched no
	// field, in rows appended so far.
	unmatched map[string]bool
}

type fieldNode struct {
	slot
	name string
	id   int // in the coverage
}

func (n *structNode) readFields(t *tape.Tape, obj map[string]any) error {
	found := 0
	for i := range n.fields {
		f := &n.fields[i]
		v, ok, err := n.lookup(obj, f.name)
		if err != nil {
			return err
		}
		if ok {
			found++
			if v != nil {
				n.cov.filled(f.id)
			}
		}
		if err := f.read(t, v, ok); err != nil {
			return err
		}
	}
	if found < len(obj) {
		return n.unmatchedKeys(obj)
	}

	return nil
}

// lookup finds the value of field name in obj: by its exact name, or, in
// fold mode, by the one key equal to it under case folding.
func (n *structNode) lookup(obj map[string]any, name string) (v any, ok bool, err error) {
	if v, ok := obj[name]; ok || !n.fold {
		return v, ok, nil
	}
	var key string
	for k, kv := range obj {
		if !strings.EqualFold(k, name) {
			continue
		}
		if ok {
			a, b := min(k, key), max(k, key)

			return nil, false, malformed(codec.JoinPath(n.path, name), "fields %q and %q both match the column (case-insensitive names)", a, b)
		}
		key, v, ok = k, kv, true
	}

	return v, ok, nil
}

// unmatchedKeys notes the keys of obj that fill no field, which readFields
// found there are. In fold mode a key that differs from a field's name
// only in case is the field's, unless obj also has the exact name: then
// two keys match one column, and the record is malformed.
func (n *structNode) unmatchedKeys(obj map[string]any) error {
	for k := range obj {
		if n.index[k] || n.unmatched[k] {
			continue
		}
		if n.fold {
			i := slices.IndexFunc(n.fields, func(f fieldNode) bool { return strings.EqualFold(f.name, k) })
			if i >= 0 {
				name := n.fields[i].name
				if _, exact := obj[name]; exact {
					return malformed(codec.JoinPath(n.path, name), "fields %q and %q both match the column (case-insensitive names)", min(k, name), max(k, name))
				}

				continue
			}
		}
		n.cov.unmatched(n, k)
	}

	return nil
}

func (n *structNode) read(t *tape.Tape, v any) error {
	obj, ok := v.(map[string]any)
	if !ok {
		return malformed(n.path, "want a JSON object, got %s", jsonlit.Kind(v))
	}

	return n.readFields(t, obj)
}

func (n *structNode) write(t *tape.Tape, b array.Builder) {
	n.cols.WriteStruct(b, func(i int, fb array.Builder) { n.fields[i].write(t, fb) })
}

// listNode is an Iceberg list filled from a JSON array. The tape holds the
// element count, then the elements.
type listNode struct {
	path string
	elem slot
}

func (n *listNode) read(t *tape.Tape, v any) error {
	return jsonlit.ReadArray(t, v, n.path, "a JSON array", func(e any) error { return n.elem.read(t, e, true) })
}

func (n *listNode) write(t *tape.Tape, b array.Builder) {
	t.WriteList(b, func(vb array.Builder) { n.elem.write(t, vb) })
}

// mapNode is an Iceberg map<string, V> filled from a JSON object. The tape
// holds the entry count, then per entry the key (strs) and the value.
type mapNode struct {
	path string
	val  slot
}

func (n *mapNode) read(t *tape.Tape, v any) error {
	return jsonlit.ReadObject(t, v, n.path, "a JSON object", func(k string, v any) error {
		t.PutStr(k)

		return n.val.read(t, v, true)
	})
}

func (n *mapNode) write(t *tape.Tape, b array.Builder) {
	t.WriteMap(b, func(kb, ib array.Builder) {
		t.Write(tape.String, kb)
		n.val.write(t, ib)
	})
}

// compiler builds a plan; jsonText holds the WithJSONText paths and
// whether each was found; parent is the coverage id of the field being
// compiled (-1 at the top).
type compiler struct {
	jsonText map[string]bool
	unit     TimestampUnit
	fold     bool
	cov      *coverage
	parent   int
}

func (c *compiler) structOf(fields []iceberg.NestedField, path string, callerColumns []string) (*structNode, error) {
	n := &structNode{path: path, index: map[string]bool{}, fold: c.fold, cov: c.cov, unmatched: map[string]bool{}}
	c.cov.nodes = append(c.cov.nodes, n)
	parent := c.parent
	for col, f := range fields {
		if slices.Contains(callerColumns, f.Name) {
			continue
		}
		fp := codec.JoinPath(path, f.Name)
		if c.fold {
			for _, g := range n.fields {
				if strings.EqualFold(g.name, f.Name) {
					return nil, unsupported(fp, "columns %s and %s differ only in case: names cannot be matched case-insensitively", g.path, fp)
				}
			}
		}
		id := c.cov.declare(fp, parent)
		c.parent = id
		fn, err := c.compile(f.Type, fp)
		c.parent = parent
		if err != nil {
			return nil, err
		}
		n.fields = append(n.fields, fieldNode{slot: slot{path: fp, required: f.Required, node: fn}, name: f.Name, id: id})
		n.cols.Add(col)
		n.index[f.Name] = true
	}

	return n, nil
}

func (c *compiler) compile(tt iceberg.Type, path string) (node, error) {
	switch tt := tt.(type) {
	case *iceberg.StructType:
		if len(tt.FieldList) == 0 {
			// Parquet cannot store a group without columns.
			return nil, unsupported(path, "struct without fields")
		}

		return c.structOf(tt.FieldList, path, nil)
	case *iceberg.ListType:
		ep := codec.JoinPath(path, "element")
		elem, err := c.compile(tt.Element, ep)
		if err != nil {
			return nil, err
		}

		return &listNode{path: path, elem: slot{path: ep, required: tt.ElementRequired, node: elem}}, nil
	case *iceberg.MapType:
		if !tt.KeyType.Equals(iceberg.PrimitiveTypes.String) {
			return nil, unsupported(path, "map keys of type %s: JSON object keys are strings", tt.KeyType)
		}
		vp := codec.JoinPath(path, "value")
		val, err := c.compile(tt.ValueType, vp)
		if err != nil {
			return nil, err
		}

		return &mapNode{path: path, val: slot{path: vp, required: tt.ValueRequired, node: val}}, nil
	default:
		n, err := compileLeaf(tt, path, c.unit)
		if err != nil {
			return nil, err
		}
		if _, ok := c.jsonText[path]; ok && n.kind == kString {
			c.jsonText[path] = true
			n.kind = kJSONText
		}

		return n, nil
	}
}

// TypeName names the JSON type of a value as [Parse] returns them ("a
// number", "an object", "null"), for messages (jsonlit.Kind, which
// ingest/connect shares).
func TypeName(v any) string { return jsonlit.Kind(v) }

func malformed(path string, format string, args ...any) error {
	return codec.FieldErrorf(path, codec.ErrMalformed, format, args...)
}

func outOfRange(path string, format string, args ...any) error {
	return codec.FieldErrorf(path, codec.ErrOutOfRange, format, args...)
}

func unsupported(path string, format string, args ...any) error {
	return codec.FieldErrorf(path, codec.ErrUnsupported, format, args...)
}

var _ codec.Decoder = (*Decoder)(nil)
