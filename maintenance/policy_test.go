package maintenance_test

import (
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/internal/testserver"
	"github.com/tarnhq/tarn/maintenance"
	"github.com/tarnhq/tarn/spec"
)

// Maintenance properties with a value that does not parse, or a
// misspelt key, are refused (400) when a table is created or a commit
// sets them, instead of being read as the default; other properties, and
// valid values, pass.
func TestMaintenancePropertiesValidated(t *testing.T) {
	ctx := t.Context()
	cat, wh, _ := testserver.NewCatalog(t, t.TempDir(), nil)
	ns := catalog.Namespace{"ns"}
	require.NoError(t, cat.CreateNamespace(ctx, ns, nil))
	schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	bad := []iceberg.Properties{
		{maintenance.EnabledProperty: "yes"},
		{maintenance.CompactMinFilesProperty: "ten"},
		{maintenance.OrphanOlderThanProperty: "-1"},
		{"tarn.maintenance.orphan.older-than-ms": "3600000"},
	}
	for _, props := range bad {
		_, err := cat.CreateTable(ctx, wh, ns, spec.CreateTableRequest{Name: "t", Schema: schema, Properties: props})
		require.ErrorIs(t, err, catalog.ErrInvalidArgument, "%v", props)
	}
	_, err := cat.CreateTable(ctx, wh, ns, spec.CreateTableRequest{Name: "t", Schema: schema,
		Properties: iceberg.Properties{maintenance.EnabledProperty: "true", maintenance.OrphanIntervalProperty: "86400000", "owner": "x"}})
	require.NoError(t, err)
	id := catalog.Ident{Namespace: ns, Name: "t"}
	for _, props := range bad {
		_, err := cat.CommitTable(ctx, wh, catalog.TableCommit{Ident: id, Updates: []table.Update{table.NewSetPropertiesUpdate(props)}})
		require.ErrorIs(t, err, catalog.ErrInvalidArgument, "%v", props)
	}
	_, err = cat.CommitTable(ctx, wh, catalog.TableCommit{Ident: id, Updates: []table.Update{table.NewSetPropertiesUpdate(iceberg.Properties{maintenance.ManifestMaxCountProperty: "50"})}})
	require.NoError(t, err)
}
