package arrowtest_test

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/internal/arrowtest"
)

func TestColumn(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "d", Type: &arrow.Decimal128Type{Precision: 9, Scale: 2}, Nullable: true},
		{Name: "sm", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32)},
		{Name: "im", Type: arrow.MapOf(arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int32)},
	}, nil)
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, sc, strings.NewReader(
		`[{"d": "12.30", "sm": [{"key": "a", "value": 1}], "im": [{"key": 2, "value": 3}]},
		  {"d": null, "sm": [], "im": []}]`))
	require.NoError(t, err)
	defer rec.Release()

	assert.Equal(t, []any{"12.30", nil}, arrowtest.Column(rec, "d"))
	assert.Equal(t, []any{map[string]any{"a": int32(1)}, map[string]any{}}, arrowtest.Column(rec, "sm"))
	assert.Equal(t, []any{map[any]any{int32(2): int32(3)}, map[any]any{}}, arrowtest.Column(rec, "im"))
	assert.Panics(t, func() { arrowtest.Column(rec, "nope") })
}

func TestRecordBuilderAndLengths(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}}, nil)
	rb := arrowtest.NewRecordBuilder(t, sc)
	rb.Field(0).(*array.Int64Builder).Append(7)
	assert.Equal(t, []int{1}, arrowtest.Lengths(rb))
	assert.Equal(t, []any{int64(7)}, arrowtest.Column(arrowtest.Record(t, rb), "a"))
}
