package avro

import (
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	hamba "github.com/hamba/avro/v2"

	"github.com/tarnhq/tarn/ingest/codec"
	"github.com/tarnhq/tarn/ingest/connect"
	"github.com/tarnhq/tarn/ingest/internal/tape"
)

// Decoder turns Avro binary payloads written with one writer schema into
// rows of an Arrow record whose schema comes from a target Iceberg schema
// (the table's, see [Decoder.ArrowSchema]).
//
// The target may differ from the writer schema as Iceberg schema evolution
// allows (DESIGN.md "Schema evolution"); fields are matched by name path:
//
//   - target columns the writer lacks, at any depth, get null (they must be
//     optional);
//   - int → long, float → double, decimal(P,S) → decimal(P',S) with P' >= P;
//   - a required writer field may fill an optional column;
//   - a general union's struct may have more branch fields than the writer's
//     union (branches dropped from the writer stay null).
//
// Anything else is refused by [NewDecoder] with ErrIncompatible, including a
// writer field the target lacks (the pipeline must evolve the table first;
// dropping data silently is never right).
//
// # Atomicity
//
// Append works in two passes over a compiled plan. The read pass decodes
// the whole payload with hamba/avro's Reader, converts every value to its
// column's Arrow representation and checks that it fits (decimal precision,
// uuid syntax (codec.ParseUUID), UTF-8, times within a day, dates and
// timestamps within years 1-9999 (codec.TimestampInRange)), storing the results on a tape (flat
// typed slices reused across rows). Only when the payload was read to its
// last byte without error does the write pass replay the tape into the
// builders; the write pass cannot fail. So an error never leaves a partial
// row, and no builder rollback is needed.
//
// Values: timestamps and times in microseconds (millis are scaled, nanos
// truncated), dates in days since the epoch, decimals as decimal128 at the
// column's scale, Connect's and Debezium's semantic types as
// ingest/connect converts them (a ZonedTimestamp's text to its instant, a
// VariableScaleDecimal to its exact text),
// uuids as arrow-go's uuid extension type (16 bytes, as iceberg-go maps
// uuid; a uuid on fixed(16) is its bytes as written), maps as Arrow
// map<string, V>.
//
// A Decoder is not safe for concurrent use; use one per goroutine. In steady
// state Append allocates nothing.
type Decoder struct {
	schema *arrow.Schema
	root   recordNode
	st     state
	check  codec.BuilderCheck
}

// NewDecoder compiles a plan from the writer schema (a record; see
// [ToIceberg] for what is supported) to the target Iceberg schema.
//
// Errors are *FieldError wrapping ErrUnsupported (the writer schema cannot
// be mapped at all) or ErrIncompatible (the pair cannot be decoded: the
// path names the first offending field and the message the change).
func NewDecoder(writer hamba.Schema, target *iceberg.Schema, opts ...codec.Option) (*Decoder, error) {
	o := codec.Apply(opts)

	// Mapping the writer schema on its own refuses recursion and
	// unsupported constructs with their own, clearer errors.
	if _, err := ToIceberg(writer); err != nil {
		return nil, err
	}

	sc, err := table.SchemaToArrowSchema(target, nil, true, false)
	if err != nil {
		return nil, fmt.Errorf("avro: arrow schema of the target: %w", err)
	}

	st := target.AsStruct()
	root, err := compileRecord(deref(writer).(*hamba.RecordSchema), &st, "", o.CallerColumns)
	if err != nil {
		return nil, err
	}

	return &Decoder{schema: sc, root: *root, st: state{r: hamba.NewReader(nil, 0)}}, nil
}

// ArrowSchema is the schema of the RecordBuilder that Append takes: the
// target Iceberg schema converted by iceberg-go's table.SchemaToArrowSchema
// with field IDs ("PARQUET:field_id" metadata) and small (32-bit offset)
// types.
func (d *Decoder) ArrowSchema() *arrow.Schema { return d.schema }

// Append decodes one Avro binary payload (a Kafka record value after the
// Confluent 5-byte header) and appends it as one row to b, whose schema
// must be [Decoder.ArrowSchema] (or have the same names and types). Columns
// named by codec.WithCallerColumns are not touched.
//
// On error nothing was appended. Errors are *FieldError wrapping
// ErrMalformed or ErrOutOfRange (both ErrBadRecord), or ErrBuilderSchema.
func (d *Decoder) Append(b *array.RecordBuilder, payload []byte) error {
	if err := d.check.Check(b, d.schema); err != nil {
		return err
	}

	st := &d.st
	st.reset(payload)
	if err := d.root.readFields(st); err != nil {
		return err
	}
	// Peek sets io.EOF only at the end of the payload: anything left means
	// the payload was not written with this schema.
	st.r.Peek()
	if st.r.Error == nil {
		return &FieldError{Err: fmt.Errorf("%w: trailing bytes after the record", ErrMalformed)}
	}

	t := &st.t
	d.root.cols.WriteRow(b, func(i int, fb array.Builder) { d.root.fields[i].write(t, fb) })

	return nil
}

// state is the per-Decoder scratch of one Append.
type state struct {
	r     *hamba.Reader
	t     tape.Tape
	limit int64 // payload length: no length or count in it can be larger
}

func (s *state) reset(payload []byte) {
	s.r.Reset(payload)
	s.r.Error = nil // Reset keeps the previous payload's error
	s.limit = int64(len(payload))
	s.t.Reset()
}

// node is one compiled step of the plan: read decodes a value of the writer
// type, converts and checks it and records it on the tape; write appends
// the recorded value to the column's builder and cannot fail.
type node interface {
	read(s *state) error
	write(t *tape.Tape, b array.Builder)
}

func malformed(path string, format string, args ...any) error {
	return codec.FieldErrorf(path, ErrMalformed, format, args...)
}

func outOfRange(path string, format string, args ...any) error {
	return codec.FieldErrorf(path, ErrOutOfRange, format, args...)
}

func incompatible(path string, format string, args ...any) error {
	return codec.FieldErrorf(path, ErrIncompatible, format, args...)
}

// readErr turns the Reader's error, if any, into a malformed-payload error.
func readErr(s *state, path string) error {
	if s.r.Error == nil {
		return nil
	}

	return malformed(path, "%v", s.r.Error)
}

// readLen reads a length or count and checks it against the payload size:
// every encoded value takes at least one byte (ToIceberg refuses empty
// records and fixed(0)), so a larger count can only be corruption, and
// refusing it early bounds both allocation and looping.
func readLen(s *state, path, what string) (int64, error) {
	n := s.r.ReadLong()
	if err := readErr(s, path); err != nil {
		return 0, err
	}
	if n < 0 || n > s.limit {
		return 0, malformed(path, "%s %d out of range for a %d-byte payload", what, n, s.limit)
	}

	return n, nil
}

// readBytes reads an Avro bytes or string value into the tape's buffer.
func readBytes(s *state, path string) ([]byte, error) {
	n, err := readLen(s, path, "length")
	if err != nil {
		return nil, err
	}
	b := s.t.Take(int(n))
	if n > 0 {
		s.r.Read(b)
	}

	return b, readErr(s, path)
}

// recordNode is an Avro record written to an Iceberg struct (or, at the
// top, to the record builder's columns).
type recordNode struct {
	path   string
	fields []node      // writer fields, in writer order
	cols   tape.Fields // their target columns; Missing: target columns the writer lacks, appended null
}

func compileRecord(w *hamba.RecordSchema, target *iceberg.StructType, path string, callerColumns []string) (*recordNode, error) {
	n := &recordNode{path: path}
	used := make([]bool, len(target.FieldList))
	for _, wf := range w.Fields() {
		fp := codec.JoinPath(path, wf.Name())
		if slices.Contains(callerColumns, wf.Name()) {
			return nil, incompatible(fp, "the writer has a field named like the reserved column %q", wf.Name())
		}
		col := slices.IndexFunc(target.FieldList, func(f iceberg.NestedField) bool { return f.Name == wf.Name() })
		if col < 0 {
			return nil, incompatible(fp, "the table has no such column; evolve the table first")
		}
		tf := target.FieldList[col]
		fn, err := compile(wf.Type(), tf.Type, tf.Required, fp)
		if err != nil {
			return nil, err
		}
		used[col] = true
		n.fields = append(n.fields, fn)
		n.cols.Add(col)
	}
	for col, tf := range target.FieldList {
		if used[col] || slices.Contains(callerColumns, tf.Name) {
			continue
		}
		if tf.Required {
			return nil, incompatible(codec.JoinPath(path, tf.Name), "required column missing from the writer schema")
		}
		n.cols.Missing = append(n.cols.Missing, col)
	}

	return n, nil
}

func (n *recordNode) readFields(s *state) error {
	for _, f := range n.fields {
		if err := f.read(s); err != nil {
			return err
		}
	}

	return nil
}

func (n *recordNode) read(s *state) error { return n.readFields(s) }

func (n *recordNode) write(t *tape.Tape, b array.Builder) {
	n.cols.WriteStruct(b, func(i int, fb array.Builder) { n.fields[i].write(t, fb) })
}

// compile builds the node for writer schema w into a target column of type
// tt; required tells whether that column is required.
func compile(w hamba.Schema, tt iceberg.Type, required bool, path string) (node, error) {
	switch w := deref(w).(type) {
	case *hamba.UnionSchema:
		return compileUnion(w, tt, required, path)
	case *hamba.RecordSchema:
		sem, err := semanticFor(w, tt, path)
		if err != nil {
			return nil, err
		}
		if sem.Kind == connect.VariableScaleDecimal {
			if !tt.Equals(iceberg.PrimitiveTypes.String) {
				return nil, incompatible(path, "writer %s (a string column), table %s", connect.NameVariableScaleDecimal, tt)
			}

			return newVariableScaleNode(w, path), nil
		}
		st, ok := tt.(*iceberg.StructType)
		if !ok {
			return nil, incompatible(path, "writer record %s, table %s", w.FullName(), tt)
		}

		return compileRecord(w, st, path, nil)
	case *hamba.ArraySchema:
		lt, ok := tt.(*iceberg.ListType)
		if !ok {
			return nil, incompatible(path, "writer array, table %s", tt)
		}
		ep := codec.JoinPath(path, "element")
		elem, err := compile(w.Items(), lt.Element, lt.ElementRequired, ep)
		if err != nil {
			return nil, err
		}

		return &listNode{path: path, elem: elem}, nil
	case *hamba.MapSchema:
		mt, ok := tt.(*iceberg.MapType)
		if !ok || !mt.KeyType.Equals(iceberg.PrimitiveTypes.String) {
			return nil, incompatible(path, "writer map<string, ...>, table %s", tt)
		}
		val, err := compile(w.Values(), mt.ValueType, mt.ValueRequired, codec.JoinPath(path, "value"))
		if err != nil {
			return nil, err
		}

		return &mapNode{path: path, val: val}, nil
	default:
		return compileLeaf(w, tt, path)
	}
}

func compileUnion(w *hamba.UnionSchema, tt iceberg.Type, required bool, path string) (node, error) {
	u, err := classify(w, path)
	if err != nil {
		return nil, err
	}
	if u.null >= 0 && required {
		return nil, incompatible(path, "optional in the writer schema, required in the table")
	}
	if u.plain() {
		inner, err := compile(u.branches[0].schema, tt, required, path)
		if err != nil {
			return nil, err
		}

		return &optionNode{path: path, null: u.null, index: u.branches[0].index, inner: inner, branches: len(w.Types())}, nil
	}

	st, ok := tt.(*iceberg.StructType)
	if !ok {
		return nil, incompatible(path, "writer union %s maps to a struct, table %s", w, tt)
	}
	// Every field of a union's struct is null in rows of the other branches.
	for _, tf := range st.FieldList {
		if tf.Required {
			return nil, incompatible(codec.JoinPath(path, tf.Name), "union branch fields must be optional in the table")
		}
	}
	n := &choiceNode{path: path, null: u.null, byIndex: make([]choice, len(w.Types())), width: len(st.FieldList)}
	for _, b := range u.branches {
		bp := codec.JoinPath(path, b.name)
		col := slices.IndexFunc(st.FieldList, func(f iceberg.NestedField) bool { return f.Name == b.name })
		if col < 0 {
			return nil, incompatible(bp, "the table's union struct has no field for this branch; evolve the table first")
		}
		inner, err := compile(b.schema, st.FieldList[col].Type, false, bp)
		if err != nil {
			return nil, err
		}
		n.byIndex[b.index] = choice{col: col, node: inner}
	}

	return n, nil
}

// optionNode is a union with one non-null branch: [null, T], [T, null]
// (optional T) or [T]. The tape holds 1 for a value, 0 for null.
type optionNode struct {
	path     string
	null     int // -1 if the union has no null branch
	index    int
	branches int
	inner    node
}

func (n *optionNode) read(s *state) error {
	i := s.r.ReadLong()
	if err := readErr(s, n.path); err != nil {
		return err
	}
	switch {
	case i == int64(n.index):
		s.t.PutInt(1)

		return n.inner.read(s)
	case i == int64(n.null) && n.null >= 0:
		s.t.PutInt(0)

		return nil
	}

	return malformed(n.path, "union index %d, the union has %d branches", i, n.branches)
}

func (n *optionNode) write(t *tape.Tape, b array.Builder) {
	if t.Present(b) {
		n.inner.write(t, b)
	}
}

// choiceNode is a general union written to a struct with one optional
// field per branch. The tape holds the branch index.
type choiceNode struct {
	path    string
	null    int      // -1 if the union has no null branch
	byIndex []choice // by Avro branch index; the null branch's entry is unused
	width   int      // fields of the target struct
}

type choice struct {
	col  int
	node node
}

func (n *choiceNode) read(s *state) error {
	i := s.r.ReadLong()
	if err := readErr(s, n.path); err != nil {
		return err
	}
	if i < 0 || i >= int64(len(n.byIndex)) {
		return malformed(n.path, "union index %d, the union has %d branches", i, len(n.byIndex))
	}
	s.t.PutInt(i)
	if int(i) == n.null {
		return nil
	}

	return n.byIndex[i].node.read(s)
}

func (n *choiceNode) write(t *tape.Tape, b array.Builder) {
	sb := b.(*array.StructBuilder)
	i := int(t.Int())
	if i == n.null {
		sb.AppendNull()

		return
	}
	c := &n.byIndex[i]
	sb.Append(true)
	for col := range n.width {
		if col == c.col {
			c.node.write(t, sb.FieldBuilder(col))
		} else {
			sb.FieldBuilder(col).AppendNull()
		}
	}
}

// listNode is an Avro array. The tape holds the item count, then the items.
type listNode struct {
	path string
	elem node
}

func (n *listNode) read(s *state) error {
	return readBlocks(s, n.path, func() error { return n.elem.read(s) })
}

func (n *listNode) write(t *tape.Tape, b array.Builder) {
	t.WriteList(b, func(vb array.Builder) { n.elem.write(t, vb) })
}

// readBlock reads an array or map block header and returns its item count
// (a negative count announces the block's byte size, which is not needed).
func readBlock(s *state, path string) (int64, error) {
	c, _ := s.r.ReadBlockHeader()
	if err := readErr(s, path); err != nil {
		return 0, err
	}
	if c < 0 || c > s.limit {
		return 0, malformed(path, "block count %d out of range for a %d-byte payload", c, s.limit)
	}

	return c, nil
}

// readBlocks reads the blocks of an array or map, calling item once per
// item, and puts the total item count on the tape ahead of the items.
func readBlocks(s *state, path string, item func() error) error {
	at := s.t.PutCount()
	var total int64
	for {
		c, err := readBlock(s, path)
		if err != nil {
			return err
		}
		if c == 0 {
			break
		}
		for range c {
			if err := item(); err != nil {
				return err
			}
		}
		total += c
	}
	s.t.SetCount(at, total)
	return nil
}

// mapNode is an Avro map. The tape holds the entry count, then per entry
// the key (bytes) and the value.
type mapNode struct {
	path string
	val  node
}

func (n *mapNode) read(s *state) error {
	kp := codec.JoinPath(n.path, "key")
	return readBlocks(s, n.path, func() error {
		k, err := readString(s, kp)
		if err != nil {
			return err
		}
		s.t.PutBytes(k)
		return n.val.read(s)
	})
}

func (n *mapNode) write(t *tape.Tape, b array.Builder) {
	t.WriteMap(b, func(kb, ib array.Builder) {
		t.Write(tape.StringBytes, kb)
		n.val.write(t, ib)
	})
}

// variableScaleNode is Debezium's VariableScaleDecimal record {scale
// int, value bytes} (fields in the writer's order) written to a string
// column as the exact number (connect.VariableScaleDecimalText).
type variableScaleNode struct {
	path       string
	scaleFirst bool
}

func newVariableScaleNode(w *hamba.RecordSchema, path string) *variableScaleNode {
	return &variableScaleNode{path: path, scaleFirst: w.Fields()[0].Name() == "scale"}
}

func (n *variableScaleNode) read(s *state) error {
	var scale int64
	var value []byte
	for i := range 2 {
		if (i == 0) == n.scaleFirst {
			scale = int64(s.r.ReadInt())
			if err := readErr(s, codec.JoinPath(n.path, "scale")); err != nil {
				return err
			}

			continue
		}
		var err error
		if value, err = readBytes(s, codec.JoinPath(n.path, "value")); err != nil {
			return err
		}
	}
	text, err := connect.VariableScaleDecimalText(scale, value, n.path)
	if err != nil {
		return err
	}
	s.t.PutStr(text)

	return nil
}

func (n *variableScaleNode) write(t *tape.Tape, b array.Builder) { t.Write(tape.String, b) }

var _ codec.Decoder = (*Decoder)(nil)
