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
)

// AfterSchema returns the row schema of a Debezium change event envelope
// written in Avro (Debezium's AvroConverter or Apicurio's: a record with
// fields before and after, each ["null", row record], op, source,
// ts_ms...; https://debezium.io/documentation/reference/3.6/connectors/postgresql.html#postgresql-change-events-value):
// the record of after's union.
//
// Errors: *FieldError wrapping ErrUnsupported when envelope is no such
// record (the topic is no Debezium change topic, or is flattened by
// ExtractNewRecordState).
func AfterSchema(envelope hamba.Schema) (*hamba.RecordSchema, error) {
	rec, ok := deref(envelope).(*hamba.RecordSchema)
	if !ok {
		return nil, codec.FieldErrorf("", ErrUnsupported, "a Debezium change event's schema is a record, got %s", envelope.Type())
	}
	for _, f := range rec.Fields() {
		if f.Name() != "after" {
			continue
		}
		if row := unionRecord(f.Type()); row != nil {
			return row, nil
		}
		return nil, codec.FieldErrorf("after", ErrUnsupported, `want ["null", a record] (the row), got %s`, f.Type().Type())
	}
	return nil, codec.FieldErrorf("", ErrUnsupported, `the schema %s has no field "after": not a Debezium change event envelope (flattened by ExtractNewRecordState? set the topic's envelope to flattened)`, rec.FullName())
}

// unionRecord returns the record branch of a ["null", record] union (or
// the record itself), nil for anything else.
func unionRecord(s hamba.Schema) *hamba.RecordSchema {
	if rec, ok := deref(s).(*hamba.RecordSchema); ok {
		return rec
	}
	u, ok := deref(s).(*hamba.UnionSchema)
	if !ok || len(u.Types()) != 2 {
		return nil
	}
	for _, b := range u.Types() {
		if rec, ok := deref(b).(*hamba.RecordSchema); ok {
			return rec
		}
	}
	return nil
}

// ChangeDecoder decodes Debezium change events written in Avro (see
// [AfterSchema]) in one pass over the payload: the envelope's fields are
// read in writer order, after's row through the same compiled plan as
// [Decoder] (into the target), op and ts_ms kept, source read for its
// ts_ms only, and every other field (before, transaction, ts_us, ...)
// skipped by its schema. hamba/avro's Reader has no read position, so the
// row cannot be cut out of the payload and handed to a Decoder; this
// walks the envelope instead (BenchmarkChangeDecoder: about the cost of
// decoding the row alone plus skipping the rest).
//
// Not safe for concurrent use.
type ChangeDecoder struct {
	schema *arrow.Schema
	row    recordNode
	// fields are the envelope's, in writer order.
	fields []envelopeField
	st     state
	check  codec.BuilderCheck
}

// envelopeField is what ChangeDecoder does with one envelope field.
type envelopeField struct {
	kind   byte // 'a' after, 'o' op, 't' ts_ms, 's' source, 0 skipped
	schema hamba.Schema
	// row is after's union branch index of the row record, null its
	// null branch (-1: none).
	row, null int64
	// sourceTs is, for source, the index of its ts_ms field (-1: none).
	sourceTs int
}

// NewChangeDecoder compiles the decoder of envelope (see [AfterSchema])
// into target, whose columns are the row's (as [NewDecoder] for the
// row's record). Errors: those of AfterSchema and NewDecoder.
func NewChangeDecoder(envelope hamba.Schema, target *iceberg.Schema, opts ...codec.Option) (*ChangeDecoder, error) {
	rowSchema, err := AfterSchema(envelope)
	if err != nil {
		return nil, err
	}
	if _, err := ToIceberg(rowSchema); err != nil {
		return nil, err
	}
	sc, err := table.SchemaToArrowSchema(target, nil, true, false)
	if err != nil {
		return nil, fmt.Errorf("avro: arrow schema of the target: %w", err)
	}
	o := codec.Apply(opts)
	st := target.AsStruct()
	root, err := compileRecord(rowSchema, &st, "", o.CallerColumns)
	if err != nil {
		return nil, err
	}
	d := &ChangeDecoder{schema: sc, row: *root, st: state{r: hamba.NewReader(nil, 0)}}
	for _, f := range deref(envelope).(*hamba.RecordSchema).Fields() {
		ef := envelopeField{schema: f.Type(), row: -1, null: -1, sourceTs: -1}
		switch f.Name() {
		case "after":
			ef.kind = 'a'
			for i, b := range deref(f.Type()).(*hamba.UnionSchema).Types() {
				if b.Type() == hamba.Null {
					ef.null = int64(i)
				} else {
					ef.row = int64(i)
				}
			}
		case "op":
			if deref(f.Type()).Type() != hamba.String {
				return nil, codec.FieldErrorf("op", ErrUnsupported, "want a string, got %s", f.Type().Type())
			}
			ef.kind = 'o'
		case "ts_ms":
			if isLong(f.Type()) {
				ef.kind = 't'
			}
		case "source":
			if rec, ok := deref(f.Type()).(*hamba.RecordSchema); ok {
				ef.kind = 's'
				ef.sourceTs = slices.IndexFunc(rec.Fields(), func(sf *hamba.Field) bool { return sf.Name() == "ts_ms" && isLong(sf.Type()) })
			}
		}
		d.fields = append(d.fields, ef)
	}
	return d, nil
}

// isLong reports a long or a ["null", long] union.
func isLong(s hamba.Schema) bool {
	switch s := deref(s).(type) {
	case *hamba.PrimitiveSchema:
		return s.Type() == hamba.Long
	case *hamba.UnionSchema:
		return len(s.Types()) == 2 && slices.ContainsFunc(s.Types(), func(b hamba.Schema) bool { return b.Type() == hamba.Long }) &&
			slices.ContainsFunc(s.Types(), func(b hamba.Schema) bool { return b.Type() == hamba.Null })
	}
	return false
}

// ArrowSchema is the schema of the RecordBuilder that Append takes.
func (d *ChangeDecoder) ArrowSchema() *arrow.Schema { return d.schema }

// Read decodes one change event (a Kafka record value after the
// Confluent header) and returns it; for an upsert (op c, r or u),
// WriteRow then appends the event's after as one row to b. Read appends
// nothing: a caller may still refuse the event (its key, say). The
// Change's After is nil.
//
// Errors are *FieldError wrapping ErrMalformed (also: op not one of c,
// r, u, d, t, an upsert without after), or ErrBuilderSchema.
func (d *ChangeDecoder) Read(b *array.RecordBuilder, payload []byte) (connect.Change, error) {
	c := connect.Change{SourceTsMillis: -1, TsMillis: -1}
	if err := d.check.Check(b, d.schema); err != nil {
		return c, err
	}
	st := &d.st
	st.reset(payload)
	r := st.r
	after := false
	var op string
	for _, f := range d.fields {
		switch f.kind {
		case 'a':
			i := r.ReadLong()
			switch {
			case r.Error != nil:
			case i == f.row:
				after = true
				if err := d.row.readFields(st); err != nil {
					return c, err
				}
			case i != f.null:
				return c, malformed("after", "union index %d out of range", i)
			}
		case 'o':
			op = r.ReadString()
		case 't':
			c.TsMillis = readOptionalLong(r, f.schema)
		case 's':
			for i, sf := range deref(f.schema).(*hamba.RecordSchema).Fields() {
				if i == f.sourceTs {
					c.SourceTsMillis = readOptionalLong(r, sf.Type())
				} else {
					skip(r, sf.Type())
				}
			}
		default:
			skip(r, f.schema)
		}
		if err := readErr(st, ""); err != nil {
			return c, err
		}
	}
	r.Peek()
	if r.Error == nil {
		return c, &FieldError{Err: fmt.Errorf("%w: trailing bytes after the record", ErrMalformed)}
	}
	if len(op) != 1 {
		return c, malformed("op", `want one of "c", "r", "u", "d", "t", got %q`, op)
	}
	c.Op = connect.Op(op[0])
	switch {
	case c.Op.Upsert() && !after:
		return c, malformed("after", "op %q without an after row", op)
	case c.Op.Upsert():
	case c.Op == connect.OpDelete, c.Op == connect.OpTruncate:
	default:
		return c, malformed("op", `want one of "c", "r", "u", "d", "t", got %q`, op)
	}
	return c, nil
}

// WriteRow appends the row of the upsert Read last returned to b (the
// builder Read checked). It cannot fail.
func (d *ChangeDecoder) WriteRow(b *array.RecordBuilder) {
	t := &d.st.t
	d.row.cols.WriteRow(b, func(i int, fb array.Builder) { d.row.fields[i].write(t, fb) })
}

// readOptionalLong reads a long or a ["null", long] union (null: -1).
func readOptionalLong(r *hamba.Reader, s hamba.Schema) int64 {
	u, ok := deref(s).(*hamba.UnionSchema)
	if !ok {
		return r.ReadLong()
	}
	i := r.ReadLong()
	if i < 0 || int(i) >= len(u.Types()) {
		r.ReportError("union", fmt.Sprintf("union index %d out of range", i))
		return -1
	}
	if u.Types()[i].Type() == hamba.Null {
		return -1
	}
	return r.ReadLong()
}

// ReadFlattened reads the fields Debezium's ExtractNewRecordState adds
// (connect.FlatDeleted, FlatOp, FlatSourceTsMilli, FlatTsMilli) from a
// flattened row written in Avro with writer schema w, skipping the
// others, as connect's ChangeReader.ReadFlattened does for JSON: Op is
// OpDelete when __deleted is "true" or __op is "d", else __op's (0 when
// absent). After is nil. Errors: *FieldError wrapping ErrMalformed.
func ReadFlattened(r *hamba.Reader, w *hamba.RecordSchema, payload []byte) (connect.Change, error) {
	c := connect.Change{SourceTsMillis: -1, TsMillis: -1}
	r.Reset(payload)
	r.Error = nil
	deleted := false
	for _, f := range w.Fields() {
		switch f.Name() {
		case connect.FlatDeleted, connect.FlatOp:
			s, ok := readOptionalString(r, f.Type())
			if !ok {
				skip(r, f.Type())
				break
			}
			if f.Name() == connect.FlatDeleted {
				deleted = s == "true"
				break
			}
			switch op := connect.Op(firstByte(s)); {
			case s == "":
			case len(s) == 1 && (op.Upsert() || op == connect.OpDelete || op == connect.OpTruncate):
				c.Op = op
			default:
				return c, malformed(f.Name(), `want one of "c", "r", "u", "d", "t", got %q`, s)
			}
		case connect.FlatSourceTsMilli, connect.FlatTsMilli:
			if !isLong(f.Type()) {
				skip(r, f.Type())
				break
			}
			v := readOptionalLong(r, f.Type())
			if f.Name() == connect.FlatTsMilli {
				c.TsMillis = v
			} else {
				c.SourceTsMillis = v
			}
		default:
			skip(r, f.Type())
		}
		if r.Error != nil {
			return c, malformed(f.Name(), "%v", r.Error)
		}
	}
	if deleted {
		c.Op = connect.OpDelete
	}
	return c, nil
}

func firstByte(s string) byte {
	if s == "" {
		return 0
	}
	return s[0]
}

// readOptionalString reads a string or a ["null", string] union (null:
// ""); ok is false, with nothing read, for another schema.
func readOptionalString(r *hamba.Reader, s hamba.Schema) (string, bool) {
	switch s := deref(s).(type) {
	case *hamba.PrimitiveSchema:
		if s.Type() != hamba.String {
			return "", false
		}
		return r.ReadString(), true
	case *hamba.UnionSchema:
		if len(s.Types()) != 2 || !slices.ContainsFunc(s.Types(), func(b hamba.Schema) bool { return b.Type() == hamba.String }) ||
			!slices.ContainsFunc(s.Types(), func(b hamba.Schema) bool { return b.Type() == hamba.Null }) {
			return "", false
		}
		i := r.ReadLong()
		if i < 0 || i > 1 {
			r.ReportError("union", fmt.Sprintf("union index %d out of range", i))
			return "", true
		}
		if s.Types()[i].Type() == hamba.Null {
			return "", true
		}
		return r.ReadString(), true
	}
	return "", false
}

// skip reads past one value of schema s (Avro specification, "Binary
// Encoding"). hamba/avro skips fields internally but exposes no skip by
// schema; errors are left on r.
func skip(r *hamba.Reader, s hamba.Schema) {
	switch s := deref(s).(type) {
	case *hamba.NullSchema:
	case *hamba.PrimitiveSchema:
		switch s.Type() {
		case hamba.Boolean:
			r.SkipBool()
		case hamba.Int:
			r.SkipInt()
		case hamba.Long:
			r.SkipLong()
		case hamba.Float:
			r.SkipFloat()
		case hamba.Double:
			r.SkipDouble()
		case hamba.String:
			r.SkipString()
		case hamba.Bytes:
			r.SkipBytes()
		}
	case *hamba.FixedSchema:
		r.SkipNBytes(s.Size())
	case *hamba.EnumSchema:
		r.SkipInt()
	case *hamba.RecordSchema:
		for _, f := range s.Fields() {
			skip(r, f.Type())
		}
	case *hamba.UnionSchema:
		i := r.ReadLong()
		if i < 0 || int(i) >= len(s.Types()) {
			r.ReportError("union", fmt.Sprintf("union index %d out of range", i))
			return
		}
		skip(r, s.Types()[i])
	case *hamba.ArraySchema:
		skipBlocks(r, func() { skip(r, s.Items()) })
	case *hamba.MapSchema:
		skipBlocks(r, func() { r.SkipString(); skip(r, s.Values()) })
	default:
		r.ReportError("skip", fmt.Sprintf("cannot skip a %s", s.Type()))
	}
}

// skipBlocks reads past the blocks of an array or map, item reading one
// item (a negative count is followed by the block's size in bytes).
func skipBlocks(r *hamba.Reader, item func()) {
	for r.Error == nil {
		n := r.ReadLong()
		if n == 0 {
			return
		}
		if n < 0 {
			size := r.ReadLong()
			r.SkipNBytes(int(size))
			continue
		}
		for range n {
			item()
			if r.Error != nil {
				return
			}
		}
	}
}
