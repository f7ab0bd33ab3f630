package catalog_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
)

// FormatIdent prints every identifier so that ParseIdent reads it back
// as the same one: dotted when no part holds a dot, else as the REST
// spec's TableIdentifier.
func TestFormatAndParseIdent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		id   catalog.Ident
		text string
	}{
		{catalog.Ident{Namespace: catalog.Namespace{"sales"}, Name: "orders"}, "sales.orders"},
		{catalog.Ident{Namespace: catalog.Namespace{"sales", "eu"}, Name: "orders"}, "sales.eu.orders"},
		{catalog.Ident{Namespace: catalog.Namespace{"sales.eu"}, Name: "orders"}, `{"namespace":["sales.eu"],"name":"orders"}`},
		{catalog.Ident{Namespace: catalog.Namespace{"sales"}, Name: "orders.v2"}, `{"namespace":["sales"],"name":"orders.v2"}`},
		{catalog.Ident{Namespace: catalog.Namespace{"a b", "é"}, Name: "t"}, "a b.é.t"},
	} {
		require.Equal(t, tc.text, catalog.FormatIdent(tc.id))
		got, err := catalog.ParseIdent(tc.text)
		require.NoError(t, err, tc.text)
		require.True(t, got.Equal(tc.id), "%s: %v", tc.text, got)

		var tn catalog.TableName
		js, err := json.Marshal(map[string]any{"namespace": tc.id.Namespace, "name": tc.id.Name})
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(js, &tn))
		require.Equal(t, catalog.TableName(tc.text), tn, "an object decodes to the text")
	}
	got, err := catalog.ParseIdent(` {"name":"orders","namespace":["sales","eu"]}`)
	require.NoError(t, err)
	require.Equal(t, "sales.eu.orders", catalog.FormatIdent(got))

	for _, bad := range []string{"orders", ".orders", "sales.", "", `{"namespace":"sales","name":"t"}`,
		`{"namespace":["s"],"name":"t","x":1}`, `{"namespace":["s"],"name":"t"}x`, `{"namespace":["s"],"name":"t"}}`, `{"namespace":["s"],"name":"t","name":"u"}`, `{"namespace":[],"name":"t"}`, `{"namespace":["s"],"name":""}`} {
		_, err := catalog.ParseIdent(bad)
		require.ErrorIs(t, err, catalog.ErrInvalidArgument, bad)
	}
	var tn catalog.TableName
	require.ErrorIs(t, json.Unmarshal([]byte(`42`), &tn), catalog.ErrInvalidArgument)
}
