package maintenance_test

import (
	"path/filepath"
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

// Regression (trial): the scheduler reached every table through the
// default warehouse, so a table of another warehouse was never
// maintained and `tarn maintenance run` on it answered 400. Each table is
// reached through its own warehouse now.
func TestMaintenanceInOtherWarehouse(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	_, wh, store := testserver.NewCatalog(t, dir, nil)
	other, err := catalog.NewWarehouse("other", "file://"+filepath.Join(dir, "other"), nil)
	require.NoError(t, err)
	cat, err := catalog.New(catalog.Config{Store: store, Warehouses: []*catalog.Warehouse{wh, other}})
	require.NoError(t, err)
	ns := catalog.Namespace{"an"}
	require.NoError(t, cat.CreateNamespace(ctx, ns, nil))
	schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	_, err = cat.CreateTable(ctx, other, ns, spec.CreateTableRequest{Name: "mt", Schema: schema,
		Properties: iceberg.Properties{maintenance.EnabledProperty: "true"}})
	require.NoError(t, err)
	sched, err := maintenance.New(maintenance.Config{Disabled: true}, maintenance.Deps{Catalog: cat})
	require.NoError(t, err)
	rs, err := sched.RunJobs(ctx, catalog.Ident{Namespace: ns, Name: "mt"}, []string{maintenance.JobExpire, maintenance.JobManifests})
	require.NoError(t, err)
	require.Len(t, rs, 2)
	require.NoError(t, sched.Pass(ctx))
	st := sched.Status()
	require.Len(t, st.Tables, 1)
	require.Equal(t, "an.mt", st.Tables[0].Table)
}
