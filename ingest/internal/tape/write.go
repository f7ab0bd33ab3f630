package tape

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
)

// Kind says how one leaf value recorded on a Tape is appended to its Arrow
// builder: which slice it is popped from and which builder type the column
// has (iceberg-go's table.SchemaToArrowSchema mapping). Formats pick a Kind
// per leaf column when they compile their plan.
type Kind uint8

const (
	Bool        Kind = iota // Int (0 or 1) → BooleanBuilder
	Int32                   // Int → Int32Builder
	Int64                   // Int → Int64Builder
	Float32                 // Float → Float32Builder
	Float64                 // Float → Float64Builder
	Decimal128              // Dec → Decimal128Builder
	String                  // Str → StringBuilder
	StringBytes             // Bytes (UTF-8) → StringBuilder
	Binary                  // Bytes → BinaryBuilder
	FixedBinary             // Bytes (the column's width) → FixedSizeBinaryBuilder
	UUID                    // Bytes (16) → extensions.UUIDBuilder
	Date32                  // Int, days since 1970-01-01 → Date32Builder
	Time64                  // Int, microseconds since midnight → Time64Builder
	Timestamp               // Int, microseconds since the epoch → TimestampBuilder
)

// Write pops the next value of kind k and appends it to b, which must be
// the builder type k names (a mismatch is a plan bug and panics).
func (t *Tape) Write(k Kind, b array.Builder) {
	switch k {
	case Bool:
		b.(*array.BooleanBuilder).Append(t.Int() != 0)
	case Int32:
		b.(*array.Int32Builder).Append(int32(t.Int()))
	case Int64:
		b.(*array.Int64Builder).Append(t.Int())
	case Float32:
		b.(*array.Float32Builder).Append(float32(t.Float()))
	case Float64:
		b.(*array.Float64Builder).Append(t.Float())
	case Decimal128:
		b.(*array.Decimal128Builder).Append(t.Dec())
	case String:
		b.(*array.StringBuilder).Append(t.Str())
	case StringBytes:
		b.(*array.StringBuilder).BinaryBuilder.Append(t.Bytes())
	case Binary:
		b.(*array.BinaryBuilder).Append(t.Bytes())
	case FixedBinary:
		b.(*array.FixedSizeBinaryBuilder).Append(t.Bytes())
	case UUID:
		b.(*extensions.UUIDBuilder).AppendBytes([16]byte(t.Bytes()))
	case Date32:
		b.(*array.Date32Builder).Append(arrow.Date32(t.Int()))
	case Time64:
		b.(*array.Time64Builder).Append(arrow.Time64(t.Int()))
	case Timestamp:
		b.(*array.TimestampBuilder).Append(arrow.Timestamp(t.Int()))
	}
}

// WriteList pops the element count of a list (recorded before its
// elements) and appends the list to b, which must be a ListBuilder,
// calling elem once per element with the list's value builder: the
// write pass of every format's list.
func (t *Tape) WriteList(b array.Builder, elem func(vb array.Builder)) {
	lb := b.(*array.ListBuilder)
	c := t.Int()
	lb.Append(true)
	vb := lb.ValueBuilder()
	for range c {
		elem(vb)
	}
}

// WriteMap pops the entry count of a map (recorded before its entries)
// and appends the map to b, which must be a MapBuilder, calling entry
// once per entry with the map's key and item builders: the write pass of
// every format's map.
func (t *Tape) WriteMap(b array.Builder, entry func(kb, ib array.Builder)) {
	mb := b.(*array.MapBuilder)
	c := t.Int()
	mb.Append(true)
	kb, ib := mb.KeyBuilder(), mb.ItemBuilder()
	for range c {
		entry(kb, ib)
	}
}

// Present pops the presence flag a nullable position (a field, element or
// value that may be null) records before its value: 1 when a value
// follows, 0 for null (PutBool(present), or PutInt). For null it appends
// null to b and returns false; for a value it returns true, and the caller
// writes the value into b.
func (t *Tape) Present(b array.Builder) bool {
	if t.Int() == 0 {
		b.AppendNull()

		return false
	}

	return true
}

// Fields is the write half of a struct's fields, or at the top of a row's
// columns, shared by every format: Cols[i] is the index of the target
// column that the plan's field i fills, in plan order; Missing are the
// target columns no field of the plan fills (the writer lacks them),
// which get null. A format's plan holds one per struct beside its fields.
type Fields struct {
	Cols    []int
	Missing []int
}

// Add appends field i's column to the plan: the fields' order is the
// order of Add calls.
func (f *Fields) Add(col int) { f.Cols = append(f.Cols, col) }

// WriteStruct appends a present struct to b, a StructBuilder, and returns
// it: field(i, fb) writes the plan's field i into fb, the builder of its
// column, for each field in plan order; then every Missing column gets
// null. The caller may append to further columns of the struct it
// returns.
func (f *Fields) WriteStruct(b array.Builder, field func(i int, fb array.Builder)) *array.StructBuilder {
	sb := b.(*array.StructBuilder)
	sb.Append(true)
	f.write(sb.FieldBuilder, field)

	return sb
}

// WriteRow is WriteStruct at the top of a row: it appends one value to
// each of rb's columns the plan fills or names Missing, and leaves the
// others (the caller's columns, codec.WithCallerColumns) to the caller.
func (f *Fields) WriteRow(rb *array.RecordBuilder, field func(i int, fb array.Builder)) {
	f.write(rb.Field, field)
}

func (f *Fields) write(col func(int) array.Builder, field func(i int, fb array.Builder)) {
	for i, c := range f.Cols {
		field(i, col(c))
	}
	for _, c := range f.Missing {
		col(c).AppendNull()
	}
}
