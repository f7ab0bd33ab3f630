package catalog_test

import (
	"context"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/view"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/internal/testserver"
	"github.com/tarnhq/tarn/spec"
)

var idSchema = iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})

// Locations that would end the URI's path early ('?', '#'), act as IAM
// wildcards or variables in a vended session policy ('*', '?', "${"),
// decode into those ('%'), or name one file-system directory as two
// ("//") are refused for a new table, a view, set-location and the
// path properties (a trial got credentials for table t through a table
// at "t?" and for a whole namespace through one at "ns/*").
func TestLocationReservedCharactersRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cat, wh, _ := testserver.NewCatalog(t, t.TempDir(), nil)
	ns := catalog.Namespace{"ns"}
	require.NoError(t, cat.CreateNamespace(ctx, ns, nil))
	_, err := cat.CreateTable(ctx, wh, ns, spec.CreateTableRequest{Name: "t", Schema: idSchema})
	require.NoError(t, err)
	base := wh.Location + "/ns/"
	for _, loc := range []string{base + "t?", base + "t?x=1", base + "*", base + "%2A", base + "${aws:username}", base + "t#f", base + "a//b", base + "t\x01", base + "t\u200b"} {
		_, err := cat.CreateTable(ctx, wh, ns, spec.CreateTableRequest{Name: "bad", Schema: idSchema, Location: loc})
		require.ErrorIs(t, err, catalog.ErrInvalidArgument, "create at %q", loc)
		_, err = cat.CreateTable(ctx, wh, ns, spec.CreateTableRequest{Name: "bad", Schema: idSchema, Properties: map[string]string{"write.data.path": loc}})
		require.ErrorIs(t, err, catalog.ErrInvalidArgument, "write.data.path %q", loc)
		_, err = cat.CommitTable(ctx, wh, catalog.TableCommit{Ident: catalog.Ident{Namespace: ns, Name: "t"}, Updates: []table.Update{table.NewSetLocationUpdate(loc)}})
		require.ErrorIs(t, err, catalog.ErrInvalidArgument, "set-location %q", loc)
		_, err = cat.CreateView(ctx, wh, ns, spec.CreateViewRequest{Name: "v", Location: loc, Schema: idSchema, ViewVersion: viewVersion()})
		require.ErrorIs(t, err, catalog.ErrInvalidArgument, "view at %q", loc)
	}
	ok, err := cat.TableExists(ctx, catalog.Ident{Namespace: ns, Name: "bad"})
	require.NoError(t, err)
	require.False(t, ok)
	// A path property outside the warehouse is refused too: the table's
	// files would land where no vended credential or purge reaches.
	_, err = cat.CreateTable(ctx, wh, ns, spec.CreateTableRequest{Name: "bad", Schema: idSchema, Properties: map[string]string{"write.data.path": "file:///tmp/elsewhere"}})
	require.ErrorIs(t, err, catalog.ErrInvalidArgument)
}

// A table is reached only through the prefix of the warehouse it was
// created in. Through another, every route refuses it (400): a trial's
// purge through the wrong prefix answered 204 and left the files behind,
// and a rename answered 204 and moved nothing; and two warehouses that
// nest are refused at start (both would claim the inner one's tables and
// sign for them with their own keys).
func TestOtherWarehousePrefixRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	cat, wh, store := testserver.NewCatalog(t, dir, nil)
	other, err := catalog.NewWarehouse("other", (&url.URL{Scheme: "file", Path: filepath.Join(dir, "other")}).String(), nil)
	require.NoError(t, err)
	ns := catalog.Namespace{"ns"}
	require.NoError(t, cat.CreateNamespace(ctx, ns, nil))
	_, err = cat.CreateTable(ctx, wh, ns, spec.CreateTableRequest{Name: "t", Schema: idSchema})
	require.NoError(t, err)
	_, err = cat.CreateView(ctx, wh, ns, spec.CreateViewRequest{Name: "v", Schema: idSchema, ViewVersion: viewVersion()})
	require.NoError(t, err)
	id, vid := catalog.Ident{Namespace: ns, Name: "t"}, catalog.Ident{Namespace: ns, Name: "v"}
	moved := catalog.Ident{Namespace: ns, Name: "moved"}

	_, err = cat.LoadTable(ctx, other, id)
	require.ErrorIs(t, err, catalog.ErrInvalidArgument)
	_, err = cat.CommitTable(ctx, other, catalog.TableCommit{Ident: id, Updates: []table.Update{table.NewSetPropertiesUpdate(iceberg.Properties{"k": "v"})}})
	require.ErrorIs(t, err, catalog.ErrInvalidArgument)
	require.ErrorIs(t, cat.RenameTable(ctx, other, id, moved), catalog.ErrInvalidArgument)
	require.ErrorIs(t, cat.RenameView(ctx, other, vid, moved), catalog.ErrInvalidArgument)
	_, err = cat.LoadView(ctx, other, vid)
	require.ErrorIs(t, err, catalog.ErrInvalidArgument)
	for _, purge := range []bool{true, false} {
		require.ErrorIs(t, cat.DropTable(ctx, other, id, purge), catalog.ErrInvalidArgument)
	}
	_, err = cat.LoadTable(ctx, wh, id)
	require.NoError(t, err, "the table is still there, unchanged")
	require.NoError(t, cat.RenameTable(ctx, wh, id, moved))
	require.NoError(t, cat.DropTable(ctx, wh, moved, true))

	nested, err := catalog.NewWarehouse("nested", wh.Location+"/inner", nil)
	require.NoError(t, err)
	_, err = catalog.New(catalog.Config{Store: store, Warehouses: []*catalog.Warehouse{wh, nested}})
	require.ErrorIs(t, err, catalog.ErrInvalidArgument)
	_, err = catalog.New(catalog.Config{Store: store, Warehouses: []*catalog.Warehouse{wh, other}})
	require.NoError(t, err)
}

func viewVersion() *view.Version {
	return &view.Version{VersionID: 1, SchemaID: 0, TimestampMS: 1, Summary: view.VersionSummary{"engine-name": "test"},
		Representations: []view.Representation{view.NewRepresentation("select 1", "spark")}, DefaultNamespace: table.Identifier{"ns"}}
}

// A staged table's directories are signable through its name until it is
// committed, only through its own warehouse and exact name, and only
// while no recorded table overlaps them (trial: a committed-then-renamed
// table's staged entry kept giving its files away under the old name;
// ["p.q"].t and ["p"]."q.t" shared an entry; a table created at a staged
// location was signable through the staged name).
func TestStagedTableDirectories(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	_, wh, store := testserver.NewCatalog(t, dir, nil)
	other, err := catalog.NewWarehouse("other", (&url.URL{Scheme: "file", Path: filepath.Join(dir, "other")}).String(), nil)
	require.NoError(t, err)
	cat, err := catalog.New(catalog.Config{Store: store, Warehouses: []*catalog.Warehouse{wh, other}})
	require.NoError(t, err)
	for _, ns := range []catalog.Namespace{{"p"}, {"p.q"}, {"z"}} {
		require.NoError(t, cat.CreateNamespace(ctx, ns, nil))
	}
	stage := func(ns catalog.Namespace, name, loc string) []string {
		t.Helper()
		lt, err := cat.CreateTable(ctx, wh, ns, spec.CreateTableRequest{Name: name, Schema: idSchema, Location: loc, StageCreate: true})
		require.NoError(t, err)
		dirs, err := lt.Directories()
		require.NoError(t, err)
		return dirs
	}
	st := catalog.Ident{Namespace: catalog.Namespace{"p.q"}, Name: "t"}
	dirs := stage(st.Namespace, st.Name, "")
	got, err := cat.TableDirectories(ctx, wh, st)
	require.NoError(t, err)
	require.Equal(t, dirs, got)
	for _, tc := range []struct {
		wh *catalog.Warehouse
		id catalog.Ident
	}{{other, st}, {wh, catalog.Ident{Namespace: catalog.Namespace{"p"}, Name: "q.t"}}} {
		_, err := cat.TableDirectories(ctx, tc.wh, tc.id)
		require.ErrorIs(t, err, catalog.ErrNoSuchTable, "%s %s", tc.wh.Name, tc.id)
	}

	// Committed, then renamed: the old name signs nothing any more.
	_, err = cat.CreateTable(ctx, wh, st.Namespace, spec.CreateTableRequest{Name: st.Name, Schema: idSchema, Location: dirs[0]})
	require.NoError(t, err)
	require.NoError(t, cat.RenameTable(ctx, wh, st, catalog.Ident{Namespace: catalog.Namespace{"z"}, Name: "secret"}))
	_, err = cat.TableDirectories(ctx, wh, st)
	require.ErrorIs(t, err, catalog.ErrNoSuchTable)

	// Staged at L, then another table created at L: the staged name no
	// longer reaches L.
	loc := wh.Location + "/p/shared"
	stage(catalog.Namespace{"p"}, "a", loc)
	_, err = cat.CreateTable(ctx, wh, catalog.Namespace{"p"}, spec.CreateTableRequest{Name: "b", Schema: idSchema, Location: loc})
	require.NoError(t, err)
	_, err = cat.TableDirectories(ctx, wh, catalog.Ident{Namespace: catalog.Namespace{"p"}, Name: "a"})
	require.ErrorIs(t, err, catalog.ErrNoSuchTable)
}
