package jsonrow_test

import (
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/ingest/codec"
	"github.com/tarnhq/tarn/ingest/jsonrow"
)

func TestParseSchema(t *testing.T) {
	sc, err := jsonrow.ParseSchema([]byte(`{"type":"struct","schema-id":4,"fields":[
		{"id":10,"name":"origin","required":true,"type":"string","doc":"IATA code"},
		{"id":20,"name":"legs","required":false,"type":{"type":"list","element-id":30,"element-required":true,"element":
			{"type":"struct","fields":[{"id":40,"name":"delay","required":false,"type":"long"}]}}},
		{"id":50,"name":"price","required":false,"type":"decimal(9,2)"}]}`))
	require.NoError(t, err)

	want := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "origin", Type: iceberg.PrimitiveTypes.String, Required: true, Doc: "IATA code"},
		iceberg.NestedField{ID: 2, Name: "legs", Type: &iceberg.ListType{ElementID: 3, ElementRequired: true, Element: &iceberg.StructType{
			FieldList: []iceberg.NestedField{{ID: 4, Name: "delay", Type: iceberg.PrimitiveTypes.Int64}},
		}}},
		iceberg.NestedField{ID: 5, Name: "price", Type: iceberg.DecimalTypeOf(9, 2)},
	)
	assert.True(t, want.Equals(sc), "got %s", sc)
	assert.Equal(t, 0, sc.ID)
}

func TestParseSchemaErrors(t *testing.T) {
	tests := map[string]string{
		"not json":      `{"type":`,
		"not a struct":  `{"type":"list","fields":[]}`,
		"no type":       `{"fields":[{"id":1,"name":"a","required":true,"type":"int"}]}`,
		"no fields":     `{"type":"struct","fields":[]}`,
		"null fields":   `{"type":"struct","fields":null}`,
		"unknown type":  `{"type":"struct","fields":[{"id":1,"name":"a","required":true,"type":"int128"}]}`,
		"duplicate ids": `{"type":"struct","fields":[{"id":1,"name":"a","required":true,"type":"int"},{"id":1,"name":"b","required":true,"type":"int"}]}`,
	}
	for name, text := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := jsonrow.ParseSchema([]byte(text))
			require.ErrorIs(t, err, codec.ErrUnsupported)
			t.Log(err)
		})
	}
}
