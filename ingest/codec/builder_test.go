package codec_test

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/ingest/codec"
)

func TestSameShape(t *testing.T) {
	base := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64, Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{"1"})},
		{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	tests := []struct {
		name   string
		fields []arrow.Field
		want   bool
	}{
		{"metadata aside", []arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}, {Name: "b", Type: arrow.BinaryTypes.String, Nullable: true}}, true},
		{"other name", []arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}, {Name: "b", Type: arrow.BinaryTypes.String, Nullable: true}}, false},
		{"other type", []arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int32}, {Name: "b", Type: arrow.BinaryTypes.String, Nullable: true}}, false},
		{"other nullability", []arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}, {Name: "b", Type: arrow.BinaryTypes.String}}, false},
		{"fewer fields", []arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, codec.SameShape(arrow.NewSchema(tt.fields, nil), base))
		})
	}
}

func TestBuilderCheck(t *testing.T) {
	want := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}}, nil)
	other := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int32}}, nil)
	good := array.NewRecordBuilder(memory.DefaultAllocator, want)
	defer good.Release()
	bad := array.NewRecordBuilder(memory.DefaultAllocator, other)
	defer bad.Release()

	var c codec.BuilderCheck
	require.NoError(t, c.Check(good, want))
	require.ErrorIs(t, c.Check(bad, want), codec.ErrBuilderSchema)
	require.NoError(t, c.Check(good, want), "a refused builder does not spoil the remembered one")
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = c.Check(good, want) }))
}
