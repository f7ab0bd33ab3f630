package protobuf

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/tarnhq/tarn/ingest/codec"
	"github.com/tarnhq/tarn/ingest/internal/tape"
)

// Decoder turns serialized Protobuf messages of one writer message type
// into rows of an Arrow record whose schema comes from a target Iceberg
// schema (the table's, see [Decoder.ArrowSchema]).
//
// The target may differ from the writer's [ToIceberg] schema as Iceberg
// schema evolution allows (DESIGN.md "Schema evolution"), as decided by
// codec.Fits; fields are matched by name path:
//
//   - target columns the writer lacks, at any depth, get null (they must
//     be optional);
//   - int → long (int32, sint32, sfixed32, Int32Value), float → double,
//     decimal(20,0) → decimal(P,0) with P > 20 (uint64, fixed64);
//   - a required writer field may fill an optional column.
//
// Anything else is refused by [NewDecoder] with ErrIncompatible, including
// a writer field the target lacks (the pipeline must evolve the table
// first; dropping data silently is never right).
//
// # Atomicity
//
// Append works in two passes. The read pass unmarshals the payload with
// proto.Unmarshal into a dynamicpb message, walks it along a plan compiled
// by NewDecoder, converts every value to its column's Arrow representation
// and checks that it fits (UTF-8, Timestamp and Duration ranges, JSON of
// Struct and Value), storing the results on a tape (flat typed slices
// reused across rows). Only when the whole message was read does the
// write pass replay the tape into the builders; the write pass cannot
// fail. So an error never leaves a partial row.
//
// Values: timestamps in microseconds since the epoch, UTC; durations in
// microseconds; uint64 as decimal128 with scale 0; enums by name; map
// entries in ascending key order (Protobuf maps are unordered; sorting
// makes a payload's row deterministic); Struct, Value, ListValue and Any
// as compact protojson text. An Any whose type is in neither the writer
// schema's files nor the program's registry, or whose value does not
// decode, is kept as {"@type": type URL, "value": base64 of the bytes}
// rather than failing the record.
//
// A Decoder is not safe for concurrent use; use one per goroutine.
type Decoder struct {
	schema *arrow.Schema
	msg    *dynamicpb.Message
	root   messageNode
	st     state
	check  codec.BuilderCheck
}

// NewDecoder compiles a plan from the writer message md (see [Compile] and
// [MessageByIndexes]) to the target Iceberg schema.
//
// Errors are *FieldError wrapping ErrRecursive (md cannot be mapped at
// all) or ErrIncompatible (codec.Fits refuses the pair: the path names the
// first offending field and the message the change).
func NewDecoder(md protoreflect.MessageDescriptor, target *iceberg.Schema, opts ...codec.Option) (*Decoder, error) {
	o := codec.Apply(opts)
	writer, err := ToIceberg(md)
	if err != nil {
		return nil, err
	}
	wst, tst := writer.AsStruct(), target.AsStruct()
	ws := withLegacyEmpty(&wst, &tst).(*iceberg.StructType)
	writer = iceberg.NewSchema(writer.ID, ws.FieldList...)
	if err := codec.Fits(writer, target, o.CallerColumns...); err != nil {
		return nil, err
	}

	sc, err := table.SchemaToArrowSchema(target, nil, true, false)
	if err != nil {
		return nil, fmt.Errorf("protobuf: arrow schema of the target: %w", err)
	}
	st := target.AsStruct()
	root, err := compileMessage(md, &st, "", o.CallerColumns)
	if err != nil {
		return nil, err
	}

	return &Decoder{
		schema: sc,
		msg:    dynamicpb.NewMessage(md),
		root:   *root,
		st:     state{json: protojson.MarshalOptions{Resolver: newResolver(md.ParentFile())}},
	}, nil
}

// ArrowSchema is the schema of the RecordBuilder that Append takes: the
// target Iceberg schema converted by iceberg-go's table.SchemaToArrowSchema
// with field IDs ("PARQUET:field_id" metadata) and small (32-bit offset)
// types.
func (d *Decoder) ArrowSchema() *arrow.Schema { return d.schema }

// unmarshal keeps no unknown fields: fields the writer schema does not
// declare have no column.
var unmarshal = proto.UnmarshalOptions{DiscardUnknown: true}

// Append decodes one serialized message (a Kafka record value after the
// Confluent header and message indexes, which the pipeline strips) and
// appends it as one row to b, whose schema must be [Decoder.ArrowSchema]
// (or have the same names and types). Columns named by codec.WithCallerColumns
// are not touched.
//
// Protobuf has no end marker: a payload cut at a field boundary is a valid,
// shorter message, and Append cannot tell; a payload cut inside a field
// is malformed.
//
// On error nothing was appended. Errors are *FieldError wrapping
// ErrMalformed or ErrOutOfRange (both ErrBadRecord), or ErrBuilderSchema.
func (d *Decoder) Append(b *array.RecordBuilder, payload []byte) error {
	if err := d.check.Check(b, d.schema); err != nil {
		return err
	}

	if err := unmarshal.Unmarshal(payload, d.msg); err != nil {
		// protobuf-go reports a proto3 string that is not UTF-8 with an
		// error of no distinct type (errors.Is matches only proto.Error),
		// so the message text is all there is to tell it from corruption.
		if strings.Contains(err.Error(), "invalid UTF-8") {
			return outOfRange("", "%v", err)
		}

		return malformed("", "%v", err)
	}

	st := &d.st
	st.t.Reset()
	if err := d.root.readFields(st, d.msg); err != nil {
		return err
	}

	t := &st.t
	d.root.cols.WriteRow(b, func(i int, fb array.Builder) { d.root.fields[i].write(t, fb) })

	return nil
}

// state is the per-Decoder scratch of one Append.
type state struct {
	t    tape.Tape
	json protojson.MarshalOptions
	jbuf []byte       // protojson output, before compaction
	cbuf bytes.Buffer // json.Compact output
}

// node is one compiled step of the plan: read converts and checks a value
// of the writer type and records it on the tape; write appends the
// recorded value to the column's builder and cannot fail.
type node interface {
	read(s *state, v protoreflect.Value) error
	write(t *tape.Tape, b array.Builder)
}

// messageNode is a message written to an Iceberg struct (or, at the top,
// to the record builder's columns).
type messageNode struct {
	fields  []fieldNode // writer fields, in declaration order
	cols    tape.Fields // their target columns; Missing: target columns the writer lacks, appended null
	markers []int       // MarkerField columns the writer lacks: appended true
}

// fieldNode is one field of a message. When the field is optional (it has
// presence), the tape holds 1 before its value, or 0 when absent.
type fieldNode struct {
	fd       protoreflect.FieldDescriptor
	nullable bool
	node     node
}

func (f *fieldNode) write(t *tape.Tape, b array.Builder) {
	if !f.nullable || t.Present(b) {
		f.node.write(t, b)
	}
}

func compileMessage(md protoreflect.MessageDescriptor, target *iceberg.StructType, path string, callerColumns []string) (*messageNode, error) {
	n := &messageNode{}
	used := make([]bool, len(target.FieldList))
	fds := md.Fields()
	for i := range fds.Len() {
		fd := fds.Get(i)
		name := string(fd.Name())
		fp := codec.JoinPath(path, name)
		col := slices.IndexFunc(target.FieldList, func(f iceberg.NestedField) bool { return f.Name == name })
		if col < 0 || (path == "" && slices.Contains(callerColumns, name)) {
			// codec.Fits refused both already; kept so a plan can never
			// index a column it does not own.
			return nil, incompatible(fp, "the table has no column for this field")
		}
		fn, err := compileField(fd, target.FieldList[col].Type, fp)
		if err != nil {
			return nil, err
		}
		used[col] = true
		n.fields = append(n.fields, fieldNode{fd: fd, nullable: optional(fd), node: fn})
		n.cols.Add(col)
	}
	for col, tf := range target.FieldList {
		switch {
		case used[col] || (path == "" && slices.Contains(callerColumns, tf.Name)):
		case path != "" && isMarker(tf):
			// A message that had no fields when the table was made:
			// present, so the marker stays true however it grew.
			n.markers = append(n.markers, col)
		default:
			n.cols.Missing = append(n.cols.Missing, col)
		}
	}

	return n, nil
}

func (n *messageNode) readFields(s *state, m protoreflect.Message) error {
	for i := range n.fields {
		f := &n.fields[i]
		if f.nullable {
			if !m.Has(f.fd) {
				s.t.PutInt(0)

				continue
			}
			s.t.PutInt(1)
		}
		if err := f.node.read(s, m.Get(f.fd)); err != nil {
			return err
		}
	}

	return nil
}

func (n *messageNode) read(s *state, v protoreflect.Value) error { return n.readFields(s, v.Message()) }

func (n *messageNode) write(t *tape.Tape, b array.Builder) {
	sb := n.cols.WriteStruct(b, func(i int, fb array.Builder) { n.fields[i].write(t, fb) })
	for _, col := range n.markers {
		sb.FieldBuilder(col).(*array.BooleanBuilder).Append(true)
	}
}

// compileField builds the node for field fd (repeated and map included)
// into a target column of type tt.
func compileField(fd protoreflect.FieldDescriptor, tt iceberg.Type, path string) (node, error) {
	switch {
	case fd.IsMap():
		mt, ok := tt.(*iceberg.MapType)
		if !ok {
			return nil, incompatible(path, "writer map, table %s", tt)
		}
		key, err := compileLeaf(fd.MapKey(), mt.KeyType, codec.JoinPath(path, "key"))
		if err != nil {
			return nil, err
		}
		val, err := compileSingle(fd.MapValue(), mt.ValueType, codec.JoinPath(path, "value"))
		if err != nil {
			return nil, err
		}

		return &mapNode{key: key, val: val, kind: fd.MapKey().Kind()}, nil
	case fd.IsList():
		lt, ok := tt.(*iceberg.ListType)
		if !ok {
			return nil, incompatible(path, "writer repeated field, table %s", tt)
		}
		elem, err := compileSingle(fd, lt.Element, codec.JoinPath(path, "element"))
		if err != nil {
			return nil, err
		}

		return &listNode{elem: elem}, nil
	}

	return compileSingle(fd, tt, path)
}

// compileSingle builds the node for one value of fd, ignoring its
// cardinality.
func compileSingle(fd protoreflect.FieldDescriptor, tt iceberg.Type, path string) (node, error) {
	if k := fd.Kind(); k != protoreflect.MessageKind && k != protoreflect.GroupKind {
		return compileLeaf(fd, tt, path)
	}
	md := fd.Message()
	switch wktOf(md) {
	case wktTimestamp:
		return compileTime(md, tt, iceberg.PrimitiveTypes.TimestampTz, path)
	case wktDuration:
		return compileTime(md, tt, iceberg.PrimitiveTypes.Int64, path)
	case wktWrapper:
		inner, err := compileLeaf(md.Fields().ByNumber(1), tt, path)
		if err != nil {
			return nil, err
		}

		return &wrapperNode{value: md.Fields().ByNumber(1), inner: inner}, nil
	case wktJSON:
		if !tt.Equals(iceberg.PrimitiveTypes.String) {
			return nil, incompatible(path, "writer %s (JSON text), table %s", md.FullName(), tt)
		}

		return &jsonNode{path: path, any: md.FullName() == "google.protobuf.Any"}, nil
	case wktEmpty:
		if tt.Equals(iceberg.PrimitiveTypes.Bool) {
			return emptyNode{}, nil // a table of an earlier build: withLegacyEmpty
		}
	}
	// Messages without fields too: their target is a struct holding
	// MarkerField (and whatever fields the message had or gained).
	st, ok := tt.(*iceberg.StructType)
	if !ok {
		return nil, incompatible(path, "writer message %s, table %s", md.FullName(), tt)
	}

	return compileMessage(md, st, path, nil)
}

// listNode is a repeated field. The tape holds the element count, then
// the elements.
type listNode struct {
	elem node
}

func (n *listNode) read(s *state, v protoreflect.Value) error {
	l := v.List()
	s.t.PutInt(int64(l.Len()))
	for i := range l.Len() {
		if err := n.elem.read(s, l.Get(i)); err != nil {
			return err
		}
	}

	return nil
}

func (n *listNode) write(t *tape.Tape, b array.Builder) {
	t.WriteList(b, func(vb array.Builder) { n.elem.write(t, vb) })
}

// mapNode is a map field. The tape holds the entry count, then per entry
// the key and the value, in ascending key order.
type mapNode struct {
	key, val node
	kind     protoreflect.Kind // of the key
}

func (n *mapNode) read(s *state, v protoreflect.Value) error {
	m := v.Map()
	keys := make([]protoreflect.MapKey, 0, m.Len())
	m.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
		keys = append(keys, k)

		return true
	})
	slices.SortFunc(keys, n.compare)
	s.t.PutInt(int64(len(keys)))
	for _, k := range keys {
		if err := n.key.read(s, k.Value()); err != nil {
			return err
		}
		if err := n.val.read(s, m.Get(k)); err != nil {
			return err
		}
	}

	return nil
}

// compare orders map keys of the map's key kind (protobuf-go's own order
// for deterministic output, which it does not export).
func (n *mapNode) compare(a, b protoreflect.MapKey) int {
	switch n.kind {
	case protoreflect.BoolKind:
		return cmp.Compare(boolInt(a.Bool()), boolInt(b.Bool()))
	case protoreflect.StringKind:
		return strings.Compare(a.String(), b.String())
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return cmp.Compare(a.Uint(), b.Uint())
	}

	return cmp.Compare(a.Int(), b.Int())
}

func boolInt(b bool) int {
	if b {
		return 1
	}

	return 0
}

func (n *mapNode) write(t *tape.Tape, b array.Builder) {
	t.WriteMap(b, func(kb, ib array.Builder) {
		n.key.write(t, kb)
		n.val.write(t, ib)
	})
}

var _ codec.Decoder = (*Decoder)(nil)
