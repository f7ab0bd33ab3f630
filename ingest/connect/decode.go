package connect

import (
	"encoding/json"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/tarnhq/tarn/ingest/codec"
	"github.com/tarnhq/tarn/ingest/internal/jsonlit"
	"github.com/tarnhq/tarn/ingest/internal/tape"
	"github.com/tarnhq/tarn/ingest/jsonrow"
)

// Decoder turns the payloads of one value schema (the "payload" of
// Kafka Connect's JsonConverter envelope, see SplitEnvelope) into rows of
// an Arrow record whose schema comes from a target Iceberg schema (the
// table's, see [Decoder.ArrowSchema]).
//
// The writer schema, mapped by ToIceberg, must fit the target as
// codec.Fits says (DESIGN.md "Schema evolution": fields matched by name
// path, target columns the writer lacks get null, int → long, float →
// double, decimal precision widening); NewDecoder refuses anything else.
//
// Payload values are read as JsonConverter writes them
// (JsonConverter.convertToJson):
//
//   - int8, int16, int32, int64: a JSON number with an integral value
//     within the type's range (a fraction or an overflow is
//     ErrOutOfRange; JsonConverter would truncate silently);
//   - float, double: a JSON number, or the strings "NaN", "Infinity" and
//     "-Infinity" (which Jackson writes for those values);
//   - boolean, string: JSON's own; bytes: a base64 string;
//   - struct: an object (members the schema lacks are ignored, as
//     JsonConverter ignores them; a missing member is null); array: an
//     array; map: an object when the keys are strings, otherwise an
//     array of [key, value] pairs;
//   - the semantic types by their base value (see Kind for each one's
//     unit and format); a Decimal is base64 bytes (decimal.format BASE64,
//     the default) or a JSON number (NUMERIC), converted exactly; a
//     VariableScaleDecimal is {"scale": n, "value": base64}.
//
// Null: an optional value may be null (or, in a struct, missing); a
// required one that is null or missing takes the schema's default when
// it has one (JsonConverter's rule) and is otherwise ErrMalformed. An
// optional value with a default stays null: a producer whose
// JsonConverter replaces nulls with defaults (replace.null.with.default,
// on by default) has already written the default.
//
// Dates and timestamps outside years 1 to 9999, times outside one day, a
// decimal that overflows its column, an invalid uuid: ErrOutOfRange.
//
// # Atomicity
//
// Append works in two passes, like ingest/avro's and ingest/jsonrow's:
// the read pass converts and checks every value of the parsed payload
// onto a tape, and only a fully read payload is replayed into the
// builders. An error never leaves a partial row.
//
// A Decoder is not safe for concurrent use; use one per goroutine.
type Decoder struct {
	schema *arrow.Schema
	root   structNode
	t      tape.Tape
	check  codec.BuilderCheck
}

// NewDecoder compiles a plan from value schema writer into target.
//
// Errors are *codec.FieldError wrapping codec.ErrUnsupported (writer
// cannot be mapped, see ToIceberg) or codec.ErrIncompatible (it does not
// fit target, see codec.Fits: the table must evolve first).
func NewDecoder(writer *Schema, target *iceberg.Schema, opts ...codec.Option) (*Decoder, error) {
	o := codec.Apply(opts)
	w, err := ToIceberg(writer)
	if err != nil {
		return nil, err
	}
	if err := codec.Fits(w, target, o.CallerColumns...); err != nil {
		return nil, err
	}
	sc, err := table.SchemaToArrowSchema(target, nil, true, false)
	if err != nil {
		return nil, unsupported("", "arrow schema of the target: %v", err)
	}
	st := target.AsStruct()
	root, err := compileStruct(writer, &st, "", o.CallerColumns)
	if err != nil {
		return nil, err
	}

	return &Decoder{schema: sc, root: *root}, nil
}

// ArrowSchema is the schema of the RecordBuilder that Append takes: the
// target Iceberg schema converted by iceberg-go's table.SchemaToArrowSchema
// with field IDs ("PARQUET:field_id" metadata) and small (32-bit offset)
// types.
func (d *Decoder) ArrowSchema() *arrow.Schema { return d.schema }

// Append decodes one payload (the JSON text of an envelope's "payload", a
// JSON object) and appends it as one row to b, whose schema must be
// [Decoder.ArrowSchema] (or have the same names and types). Columns named
// by codec.WithCallerColumns are not touched.
//
// On error nothing was appended. Errors are *codec.FieldError wrapping
// codec.ErrMalformed (not JSON, not an object, a value of the wrong JSON
// type, a required value null) or codec.ErrOutOfRange, or
// codec.ErrBuilderSchema.
func (d *Decoder) Append(b *array.RecordBuilder, payload []byte) error {
	if err := d.check.Check(b, d.schema); err != nil {
		return err
	}
	obj, err := jsonrow.Parse(payload)
	if err != nil {
		return err
	}
	t := &d.t
	t.Reset()
	if err := d.root.readFields(t, obj); err != nil {
		return err
	}
	d.root.cols.WriteRow(b, func(i int, fb array.Builder) { d.root.fields[i].write(t, fb) })

	return nil
}

// node is one compiled step of the plan: read converts a non-null JSON
// value and checks it, recording the result on the tape; write appends
// the recorded value to the column's builder and cannot fail.
type node interface {
	read(t *tape.Tape, v any) error
	write(t *tape.Tape, b array.Builder)
}

// slot is a position that may hold null: a struct field, a list element,
// a map value. The tape holds 1 before a value, 0 for null.
type slot struct {
	path     string
	optional bool // in the writer schema
	def      any  // the writer schema's default, nil for none
	node     node
}

func (s *slot) read(t *tape.Tape, v any) error {
	if v == nil && !s.optional {
		if s.def == nil {
			return malformed(s.path, "required value is null or missing")
		}
		v = s.def
	}
	if v == nil {
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

func newSlot(w *Schema, tt iceberg.Type, path string) (slot, error) {
	n, err := compile(w, tt, path)

	return slot{path: path, optional: w.Optional, def: w.Default, node: n}, err
}

// structNode is a struct filled from a JSON object (or, at the top, the
// record builder's columns).
type structNode struct {
	path   string
	fields []fieldNode // writer fields, in writer order
	cols   tape.Fields // their target columns; Missing: target fields the writer lacks, appended null
}

type fieldNode struct {
	slot
	name string
}

// compileStruct builds the node of struct schema w into target st.
// codec.Fits has checked that every writer field has a target field.
func compileStruct(w *Schema, st *iceberg.StructType, path string, callerColumns []string) (*structNode, error) {
	n := &structNode{path: path}
	used := make([]bool, len(st.FieldList))
	for _, f := range w.Fields {
		fp := codec.JoinPath(path, f.Field)
		col := slices.IndexFunc(st.FieldList, func(tf iceberg.NestedField) bool { return tf.Name == f.Field })
		if col < 0 {
			return nil, codec.FieldErrorf(fp, codec.ErrIncompatible, "the table has no such column; evolve the table first")
		}
		s, err := newSlot(f, st.FieldList[col].Type, fp)
		if err != nil {
			return nil, err
		}
		used[col] = true
		n.fields = append(n.fields, fieldNode{slot: s, name: f.Field})
		n.cols.Add(col)
	}
	for col, tf := range st.FieldList {
		if !used[col] && !slices.Contains(callerColumns, tf.Name) {
			n.cols.Missing = append(n.cols.Missing, col)
		}
	}

	return n, nil
}

func (n *structNode) readFields(t *tape.Tape, obj map[string]any) error {
	for i := range n.fields {
		f := &n.fields[i]
		if err := f.read(t, obj[f.name]); err != nil {
			return err
		}
	}

	return nil
}

func (n *structNode) read(t *tape.Tape, v any) error {
	obj, ok := v.(map[string]any)
	if !ok {
		return malformed(n.path, "want a JSON object (a struct), got %s", jsonlit.Kind(v))
	}

	return n.readFields(t, obj)
}

func (n *structNode) write(t *tape.Tape, b array.Builder) {
	n.cols.WriteStruct(b, func(i int, fb array.Builder) { n.fields[i].write(t, fb) })
}

// listNode is an array. The tape holds the element count, then the
// elements.
type listNode struct {
	path string
	elem slot
}

func (n *listNode) read(t *tape.Tape, v any) error {
	return jsonlit.ReadArray(t, v, n.path, "a JSON array", func(e any) error { return n.elem.read(t, e) })
}

func (n *listNode) write(t *tape.Tape, b array.Builder) {
	t.WriteList(b, func(vb array.Builder) { n.elem.write(t, vb) })
}

// mapNode is a map: a JSON object when its keys are strings (entries
// stored in key order, so data files are deterministic), an array of
// [key, value] pairs otherwise (JsonConverter's two encodings). The tape
// holds the entry count, then per entry the key and the value.
type mapNode struct {
	path    string
	strKeys bool
	key     node // never null: Iceberg map keys are required
	val     slot
}

func (n *mapNode) read(t *tape.Tape, v any) error {
	kp := codec.JoinPath(n.path, "key")
	if n.strKeys {
		return jsonlit.ReadObject(t, v, n.path, "a JSON object (a map with string keys)", func(k string, v any) error {
			if err := n.key.read(t, k); err != nil {
				return err
			}

			return n.val.read(t, v)
		})
	}
	arr, ok := v.([]any)
	if !ok {
		return malformed(n.path, "want a JSON array of [key, value] pairs, got %s", jsonlit.Kind(v))
	}
	t.PutInt(int64(len(arr)))
	for _, e := range arr {
		pair, ok := e.([]any)
		if !ok || len(pair) != 2 {
			return malformed(n.path, "want a [key, value] pair, got %s", jsonlit.Kind(e))
		}
		if pair[0] == nil {
			return malformed(kp, "map key is null")
		}
		if err := n.key.read(t, pair[0]); err != nil {
			return err
		}
		if err := n.val.read(t, pair[1]); err != nil {
			return err
		}
	}

	return nil
}

func (n *mapNode) write(t *tape.Tape, b array.Builder) {
	t.WriteMap(b, func(kb, ib array.Builder) {
		n.key.write(t, kb)
		n.val.write(t, ib)
	})
}

// compile builds the node of writer schema w into a target column of
// type tt (codec.Fits has checked that w's mapping fits it).
func compile(w *Schema, tt iceberg.Type, path string) (node, error) {
	sem, err := semanticOf(w, path)
	if err != nil {
		return nil, err
	}
	if sem.Kind != Plain {
		return compileLeaf(w, sem, tt, path)
	}
	switch w.Type {
	case Struct:
		st, ok := tt.(*iceberg.StructType)
		if !ok {
			return nil, codec.FieldErrorf(path, codec.ErrIncompatible, "writer struct, table %s", tt)
		}

		return compileStruct(w, st, path, nil)
	case Array:
		lt, ok := tt.(*iceberg.ListType)
		if !ok {
			return nil, codec.FieldErrorf(path, codec.ErrIncompatible, "writer array, table %s", tt)
		}
		elem, err := newSlot(w.Items, lt.Element, codec.JoinPath(path, "element"))
		if err != nil {
			return nil, err
		}

		return &listNode{path: path, elem: elem}, nil
	case Map:
		mt, ok := tt.(*iceberg.MapType)
		if !ok {
			return nil, codec.FieldErrorf(path, codec.ErrIncompatible, "writer map, table %s", tt)
		}
		key, err := compile(w.Keys, mt.KeyType, codec.JoinPath(path, "key"))
		if err != nil {
			return nil, err
		}
		val, err := newSlot(w.Values, mt.ValueType, codec.JoinPath(path, "value"))
		if err != nil {
			return nil, err
		}

		return &mapNode{path: path, strKeys: w.Keys.Type == String, key: key, val: val}, nil
	}

	return compileLeaf(w, sem, tt, path)
}

// leafKind is one (JSON value → Arrow builder) conversion.
type leafKind uint8

const (
	kBool          leafKind = iota // boolean → Boolean
	kInt                           // int8, int16, int32 → Int32 (range of the writer type)
	kIntToLong                     // int8, int16, int32 → Int64 (int → long promotion)
	kLong                          // int64 → Int64
	kFloat                         // float → Float32
	kFloatToDouble                 // float → Float64 (float → double promotion)
	kDouble                        // double → Float64
	kString                        // string → String
	kBytes                         // base64 → Binary
	kSemInt                        // a semantic kind on int32 or int64 (Kind.Int) → Date32, Time64 or Timestamp
	kSemText                       // ZonedTimestamp, ZonedTime (Kind.Text) → Timestamp or Time64
	kDecimal                       // base64 unscaled bytes, or a number → Decimal128
	kVarDecimal                    // {"scale", "value"} → String
	kUUID                          // canonical uuid text → uuid extension
)

// leafNode reads one primitive (or semantic) value.
type leafNode struct {
	path  string
	kind  leafKind
	sem   Kind
	base  Type      // the writer's type
	out   tape.Kind // the column's builder
	min   int64     // kInt, kIntToLong: the writer type's range
	max   int64
	prec  int32 // kDecimal: the column's
	scale int32
}

func compileLeaf(w *Schema, sem Semantic, tt iceberg.Type, path string) (node, error) {
	n := &leafNode{path: path, sem: sem.Kind, base: w.Type, min: math.MinInt64, max: math.MaxInt64}
	if w.Type == Int32 {
		n.min, n.max = math.MinInt32, math.MaxInt32
	}
	switch sem.Kind {
	case Date:
		n.kind, n.out = kSemInt, tape.Date32
	case TimeMillis, TimeMicros, TimeNanos:
		n.kind, n.out = kSemInt, tape.Time64
	case TimestampMillis, LocalTimestampMillis, LocalTimestampMicros, LocalTimestampNanos:
		n.kind, n.out = kSemInt, tape.Timestamp
	case ZonedTimestamp:
		n.kind, n.out = kSemText, tape.Timestamp
	case ZonedTime:
		n.kind, n.out = kSemText, tape.Time64
	case Decimal:
		d, ok := tt.(iceberg.DecimalType) // codec.Fits: a decimal of the same scale
		if !ok {
			return nil, codec.FieldErrorf(path, codec.ErrIncompatible, "writer decimal, table %s", tt)
		}
		n.kind, n.out, n.prec, n.scale = kDecimal, tape.Decimal128, int32(d.Precision()), int32(d.Scale())
	case VariableScaleDecimal:
		n.kind, n.out = kVarDecimal, tape.String
	case UUID:
		n.kind, n.out = kUUID, tape.UUID
	default:
		switch w.Type {
		case Boolean:
			n.kind, n.out = kBool, tape.Bool
		case Int8, Int16, Int32:
			bits := map[Type]int{Int8: 8, Int16: 16, Int32: 32}[w.Type]
			n.min, n.max = -1<<(bits-1), 1<<(bits-1)-1
			n.kind, n.out = kInt, tape.Int32
			if tt.Equals(iceberg.PrimitiveTypes.Int64) {
				n.kind, n.out = kIntToLong, tape.Int64
			}
		case Int64:
			n.kind, n.out = kLong, tape.Int64
		case Float32:
			n.kind, n.out = kFloat, tape.Float32
			if tt.Equals(iceberg.PrimitiveTypes.Float64) {
				n.kind, n.out = kFloatToDouble, tape.Float64
			}
		case Float64:
			n.kind, n.out = kDouble, tape.Float64
		case String:
			n.kind, n.out = kString, tape.String
		case Bytes:
			n.kind, n.out = kBytes, tape.Binary
		default:
			return nil, unsupported(path, "schema type %s is not a leaf", w.Type)
		}
	}

	return n, nil
}

func (n *leafNode) read(t *tape.Tape, v any) error {
	switch n.kind {
	case kBool:
		return jsonlit.ReadBool(t, v, n.path)
	case kInt, kIntToLong, kLong, kSemInt:
		i, err := n.integer(v)
		if err != nil {
			return err
		}
		if n.kind == kSemInt {
			if i, err = n.sem.Int(i, n.path); err != nil {
				return err
			}
		}
		t.PutInt(i)
	case kFloat, kFloatToDouble, kDouble:
		return n.readFloat(t, v)
	case kString:
		s, ok := v.(string)
		if !ok {
			return n.wrongType(v, "a string")
		}
		t.PutStr(s)
	case kBytes:
		b, err := jsonlit.Bytes(t, v, n.path)
		if err != nil {
			return err
		}
		t.PutBytes(b)
	case kSemText:
		s, ok := v.(string)
		if !ok {
			return n.wrongType(v, "a string")
		}
		us, err := n.sem.Text(s, n.path)
		if err != nil {
			return err
		}
		t.PutInt(us)
	case kDecimal:
		return n.readDecimal(t, v)
	case kVarDecimal:
		return n.readVariableScale(t, v)
	case kUUID:
		return jsonlit.ReadUUID(t, v, n.path)
	}

	return nil
}

func (n *leafNode) wrongType(v any, want string) error { return jsonlit.WrongType(n.path, v, want) }

// integer reads an integral JSON number within [n.min, n.max].
func (n *leafNode) integer(v any) (int64, error) {
	return jsonlit.Integer(v, n.min, n.max, "an "+string(n.base), n.path)
}

// readFloat reads a JSON number, or the text Jackson writes for NaN and
// the infinities.
func (n *leafNode) readFloat(t *tape.Tape, v any) error {
	bits := 64
	if n.kind != kDouble {
		bits = 32
	}
	s, ok := v.(string)
	if !ok {
		return jsonlit.ReadFloat(t, v, bits, n.path)
	}
	switch s {
	case "NaN":
		t.PutFloat(math.NaN())
	case "Infinity":
		t.PutFloat(math.Inf(1))
	case "-Infinity":
		t.PutFloat(math.Inf(-1))
	default:
		return n.wrongType(v, "a number")
	}

	return nil
}

func (n *leafNode) readDecimal(t *tape.Tape, v any) error {
	if num, ok := v.(json.Number); ok {
		return jsonlit.ReadDecimal(t, string(num), n.prec, n.scale, n.path)
	}
	b, err := jsonlit.Bytes(t, v, n.path)
	if err != nil {
		return err
	}
	d, err := codec.UnscaledDecimal(b, n.prec, n.scale, n.path)
	if err != nil {
		return err
	}
	t.PutDec(d)

	return nil
}

func (n *leafNode) readVariableScale(t *tape.Tape, v any) error {
	obj, ok := v.(map[string]any)
	if !ok {
		return n.wrongType(v, `a {"scale", "value"} object`)
	}
	sp := codec.JoinPath(n.path, "scale")
	num, ok := obj["scale"].(json.Number)
	if !ok {
		return malformed(sp, "want an integer, got %s", jsonlit.Kind(obj["scale"]))
	}
	scale, err := jsonlit.Int(string(num))
	if err != nil || scale < math.MinInt32 || scale > math.MaxInt32 {
		return outOfRange(sp, "%s is not an int32", num)
	}
	b, err := jsonlit.Bytes(t, obj["value"], codec.JoinPath(n.path, "value"))
	if err != nil {
		return err
	}
	s, err := VariableScaleDecimalText(scale, b, n.path)
	if err != nil {
		return err
	}
	t.PutStr(s)

	return nil
}

func (n *leafNode) write(t *tape.Tape, b array.Builder) { t.Write(n.out, b) }

var _ codec.Decoder = (*Decoder)(nil)
