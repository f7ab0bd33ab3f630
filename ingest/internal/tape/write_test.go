package tape_test

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/ingest/internal/tape"
)

func TestWrite(t *testing.T) {
	uuid := [16]byte{0xf8, 0x1d, 0x4f, 0xae, 0x7d, 0xec, 0x11, 0xd0, 0xa7, 0x65, 0x00, 0xa0, 0xc9, 0x1e, 0x6b, 0xf6}
	tests := []struct {
		name string
		kind tape.Kind
		typ  arrow.DataType
		put  func(*tape.Tape)
		want string // the array's String(): times and timestamps as their raw µs
	}{
		{"bool", tape.Bool, arrow.FixedWidthTypes.Boolean, func(t *tape.Tape) { t.PutBool(true) }, "[true]"},
		{"int32", tape.Int32, arrow.PrimitiveTypes.Int32, func(t *tape.Tape) { t.PutInt(-3) }, "[-3]"},
		{"int64", tape.Int64, arrow.PrimitiveTypes.Int64, func(t *tape.Tape) { t.PutInt(1 << 40) }, "[1099511627776]"},
		{"float32", tape.Float32, arrow.PrimitiveTypes.Float32, func(t *tape.Tape) { t.PutFloat(0.5) }, "[0.5]"},
		{"float64", tape.Float64, arrow.PrimitiveTypes.Float64, func(t *tape.Tape) { t.PutFloat(0.25) }, "[0.25]"},
		{"decimal", tape.Decimal128, &arrow.Decimal128Type{Precision: 9, Scale: 2}, func(t *tape.Tape) { t.PutDec(decimal128.FromI64(-12345)) }, "[-123.45]"},
		{"string", tape.String, arrow.BinaryTypes.String, func(t *tape.Tape) { t.PutStr("a") }, `["a"]`},
		{"string bytes", tape.StringBytes, arrow.BinaryTypes.String, func(t *tape.Tape) { t.PutBytes([]byte("b")) }, `["b"]`},
		{"binary", tape.Binary, arrow.BinaryTypes.Binary, func(t *tape.Tape) { t.PutBytes([]byte{1}) }, `["\x01"]`},
		{"fixed", tape.FixedBinary, &arrow.FixedSizeBinaryType{ByteWidth: 2}, func(t *tape.Tape) { t.PutBytes([]byte{1, 2}) }, `["\x01\x02"]`},
		{"uuid", tape.UUID, extensions.NewUUIDType(), func(t *tape.Tape) { t.Keep(uuid[:]) }, `["f81d4fae-7dec-11d0-a765-00a0c91e6bf6"]`},
		{"date", tape.Date32, arrow.FixedWidthTypes.Date32, func(t *tape.Tape) { t.PutInt(1) }, "[1970-01-02]"},
		{"time", tape.Time64, arrow.FixedWidthTypes.Time64us, func(t *tape.Tape) { t.PutInt(1_500_000) }, "[1500000]"},
		{"timestamp", tape.Timestamp, &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, func(t *tape.Tape) { t.PutInt(1) }, "[1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
			defer mem.AssertSize(t, 0)
			b := array.NewBuilder(mem, tt.typ)
			defer b.Release()
			var tp tape.Tape
			tt.put(&tp)
			tp.Write(tt.kind, b)
			arr := b.NewArray()
			defer arr.Release()
			require.Equal(t, 1, arr.Len())
			assert.Equal(t, tt.want, arr.String())
		})
	}
}

func TestWriteListAndMap(t *testing.T) {
	var tp tape.Tape
	tp.PutInt(2) // list of two
	tp.PutInt(7)
	tp.PutInt(8)
	tp.PutInt(1) // map of one
	tp.PutStr("k")
	tp.PutInt(9)
	lb := array.NewListBuilder(memory.DefaultAllocator, arrow.PrimitiveTypes.Int64)
	defer lb.Release()
	mb := array.NewMapBuilder(memory.DefaultAllocator, arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64, false)
	defer mb.Release()
	tp.WriteList(lb, func(vb array.Builder) { tp.Write(tape.Int64, vb) })
	tp.WriteMap(mb, func(kb, ib array.Builder) {
		tp.Write(tape.String, kb)
		tp.Write(tape.Int64, ib)
	})
	l, m := lb.NewArray(), mb.NewArray()
	defer l.Release()
	defer m.Release()
	assert.Equal(t, "[[7 8]]", l.String())
	assert.Equal(t, `[{["k"] [9]}]`, m.String())
}

// TestWriteFields writes a row's columns and a struct's fields through
// Fields: each planned field into its column (plan order need not be
// column order), null into the missing ones, a null through Present, and
// nothing into a column the plan leaves to the caller.
func TestWriteFields(t *testing.T) {
	inner := arrow.StructOf(
		arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "b", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "c", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	)
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "s", Type: inner, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "gone", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "caller", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rb := array.NewRecordBuilder(mem, sc)
	defer rb.Release()

	row := tape.Fields{Missing: []int{2}}
	row.Add(1) // n
	row.Add(0) // s
	st := tape.Fields{Missing: []int{1}}
	st.Add(2) // c
	st.Add(0) // a

	var tp tape.Tape
	tp.PutBool(false) // n: null
	tp.PutInt(30)     // s.c
	tp.PutBool(true)  // s.a: present
	tp.PutInt(10)
	var order []int
	row.WriteRow(rb, func(i int, fb array.Builder) {
		order = append(order, i)
		switch i {
		case 0:
			if tp.Present(fb) {
				tp.Write(tape.Int64, fb)
			}
		case 1:
			st.WriteStruct(fb, func(j int, gb array.Builder) {
				if j == 1 && !tp.Present(gb) {
					return
				}
				tp.Write(tape.Int64, gb)
			})
		}
	})
	rb.Field(3).(*array.Int64Builder).Append(99)
	assert.Equal(t, []int{0, 1}, order)

	rec := rb.NewRecord()
	defer rec.Release()
	require.EqualValues(t, 1, rec.NumRows())
	assert.Equal(t, `{[10] [(null)] [30]}`, rec.Column(0).String())
	assert.Equal(t, "[(null)]", rec.Column(1).String())
	assert.Equal(t, "[(null)]", rec.Column(2).String())
	assert.Equal(t, "[99]", rec.Column(3).String())
}
