package codec_test

import (
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/ingest/codec"
)

func schema(fields ...iceberg.NestedField) *iceberg.Schema {
	for i := range fields {
		fields[i].ID = i + 1
	}
	return iceberg.NewSchema(0, fields...)
}

func TestFits(t *testing.T) {
	pt := iceberg.PrimitiveTypes
	kafka := iceberg.NestedField{Name: "_kafka", Type: pt.Int64, Required: true}
	point := &iceberg.StructType{FieldList: []iceberg.NestedField{{ID: 10, Name: "x", Type: pt.Int32, Required: true}}}
	pointWide := &iceberg.StructType{FieldList: []iceberg.NestedField{
		{ID: 10, Name: "x", Type: pt.Int64, Required: true}, {ID: 11, Name: "y", Type: pt.Int64}}}
	cases := []struct {
		name           string
		writer, target *iceberg.Schema
		path           string // "" means it fits
	}{
		{"same", schema(iceberg.NestedField{Name: "a", Type: pt.Int32, Required: true}),
			schema(iceberg.NestedField{Name: "a", Type: pt.Int32, Required: true}, kafka), ""},
		{"int to long, required into optional", schema(iceberg.NestedField{Name: "a", Type: pt.Int32, Required: true}),
			schema(iceberg.NestedField{Name: "a", Type: pt.Int64}, kafka), ""},
		{"decimal widened", schema(iceberg.NestedField{Name: "d", Type: iceberg.DecimalTypeOf(9, 2), Required: true}),
			schema(iceberg.NestedField{Name: "d", Type: iceberg.DecimalTypeOf(18, 2), Required: true}, kafka), ""},
		{"decimal scale change", schema(iceberg.NestedField{Name: "d", Type: iceberg.DecimalTypeOf(9, 2), Required: true}),
			schema(iceberg.NestedField{Name: "d", Type: iceberg.DecimalTypeOf(18, 3), Required: true}, kafka), "d"},
		{"nested promotion and extra optional", schema(iceberg.NestedField{Name: "p", Type: point, Required: true}),
			schema(iceberg.NestedField{Name: "p", Type: pointWide, Required: true}, kafka), ""},
		{"long to int", schema(iceberg.NestedField{Name: "a", Type: pt.Int64, Required: true}),
			schema(iceberg.NestedField{Name: "a", Type: pt.Int32, Required: true}, kafka), "a"},
		{"new writer field", schema(iceberg.NestedField{Name: "a", Type: pt.Int32, Required: true}, iceberg.NestedField{Name: "b", Type: pt.String}),
			schema(iceberg.NestedField{Name: "a", Type: pt.Int32, Required: true}, kafka), "b"},
		{"new nested writer field", schema(iceberg.NestedField{Name: "p", Type: pointWide, Required: true}),
			schema(iceberg.NestedField{Name: "p", Type: point, Required: true}, kafka), "p.x"},
		{"optional into required", schema(iceberg.NestedField{Name: "a", Type: pt.Int32}),
			schema(iceberg.NestedField{Name: "a", Type: pt.Int32, Required: true}, kafka), "a"},
		{"required column missing", schema(iceberg.NestedField{Name: "a", Type: pt.Int32, Required: true}),
			schema(iceberg.NestedField{Name: "a", Type: pt.Int32, Required: true}, iceberg.NestedField{Name: "b", Type: pt.Int32, Required: true}, kafka), "b"},
		{"list element optional into required",
			schema(iceberg.NestedField{Name: "l", Required: true, Type: &iceberg.ListType{ElementID: 20, Element: pt.String}}),
			schema(iceberg.NestedField{Name: "l", Required: true, Type: &iceberg.ListType{ElementID: 20, Element: pt.String, ElementRequired: true}}, kafka), "l.element"},
		{"map value promoted",
			schema(iceberg.NestedField{Name: "m", Required: true, Type: &iceberg.MapType{KeyID: 20, KeyType: pt.String, ValueID: 21, ValueType: pt.Float32, ValueRequired: true}}),
			schema(iceberg.NestedField{Name: "m", Required: true, Type: &iceberg.MapType{KeyID: 20, KeyType: pt.String, ValueID: 21, ValueType: pt.Float64}}, kafka), ""},
		{"writer has the caller column", schema(iceberg.NestedField{Name: "_kafka", Type: pt.Int64, Required: true}),
			schema(kafka), "_kafka"},
		{"struct into primitive", schema(iceberg.NestedField{Name: "p", Type: point, Required: true}),
			schema(iceberg.NestedField{Name: "p", Type: pt.String, Required: true}, kafka), "p"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := codec.Fits(c.writer, c.target, "_kafka")
			if c.path == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, codec.ErrIncompatible)
			var fe *codec.FieldError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, c.path, fe.Path, err.Error())
		})
	}
}

func TestKindMatchesParent(t *testing.T) {
	assert.ErrorIs(t, codec.ErrMalformed, codec.ErrBadRecord)
	assert.ErrorIs(t, codec.ErrOutOfRange, codec.ErrBadRecord)
	assert.NotErrorIs(t, codec.ErrMalformed, codec.ErrIncompatible)
	assert.Equal(t, "field a.b: malformed payload", (&codec.FieldError{Path: "a.b", Err: codec.ErrMalformed}).Error())
}
