package publish_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/internal/testicebergrest"
	"github.com/tarnhq/tarn/internal/testserver"
	"github.com/tarnhq/tarn/publish"
	"github.com/tarnhq/tarn/spec"
)

// TestE2EIcebergRESTTarget publishes to Apache Iceberg's Java REST catalog
// (scripts/iceberg-rest-fixture.sh): a table in a nested namespace is
// registered there on its first commit (the namespace levels created),
// and after each append the target's metadata-location is Tarn's current
// file; pyiceberg through the target reads the same 30 rows as pyiceberg
// through Tarn; a schema change is seen through the target; a table
// brought in by registerTable reaches the target without waiting for the
// 5-minute pass; a foreign change in the target stops the table with
// nothing dropped, until resume; a rename moves the target's table and a
// drop removes it.
func TestE2EIcebergRESTTarget(t *testing.T) {
	uri, _ := testicebergrest.Start(t)
	ctx := context.Background()
	srv := testserver.Start(t)
	id := catalog.Ident{Namespace: catalog.Namespace{"air", "eu"}, Name: "Flights"}
	require.NoError(t, srv.Catalog.CreateNamespace(ctx, catalog.Namespace{"air"}, nil))
	require.NoError(t, srv.Catalog.CreateNamespace(ctx, id.Namespace, nil))

	cfg := publish.TargetConfig{Name: "ref", Type: publish.TypeIcebergREST, URI: uri}
	require.NoError(t, cfg.Validate())
	pub := runPublisher(t, srv, cfg)

	fixture, err := rest.NewCatalog(ctx, "fixture", uri)
	require.NoError(t, err)
	// remote is the target's table id (nil when there is none).
	remote := func(id catalog.Ident) *table.Table {
		tbl, err := fixture.LoadTable(ctx, append(table.Identifier{}, append(id.Namespace, id.Name)...))
		if errors.Is(err, icecatalog.ErrNoSuchTable) || errors.Is(err, icecatalog.ErrNoSuchNamespace) {
			return nil
		}
		if err != nil {
			t.Errorf("load %s from the fixture: %v", id, err)
			return nil
		}
		return tbl
	}
	tio := srv.Catalog.TableIO(srv.Warehouse)
	current := func(id catalog.Ident) *table.Table {
		tbl, err := tio.LoadTable(ctx, append(table.Identifier{}, append(id.Namespace, id.Name)...))
		require.NoError(t, err)
		return tbl
	}
	waitTarget := func(id catalog.Ident, loc string) *table.Table {
		t.Helper()
		var got *table.Table
		require.Eventually(t, func() bool {
			got = remote(id)
			return got != nil && got.MetadataLocation() == loc
		}, 20*time.Second, 100*time.Millisecond, "the target's %s never pointed at %s: %+v", id, loc, pub.Status())
		return got
	}

	_, err = srv.Catalog.CreateTable(ctx, srv.Warehouse, id.Namespace, spec.CreateTableRequest{Name: id.Name, Schema: flightsSchema})
	require.NoError(t, err)
	waitTarget(id, current(id).MetadataLocation())
	for b := range 3 {
		_, err := current(id).AppendTable(ctx, flightsBatch(t, b*10, 10), 10, nil)
		require.NoError(t, err)
		got := waitTarget(id, current(id).MetadataLocation())
		require.Equal(t, current(id).CurrentSnapshot().SnapshotID, got.CurrentSnapshot().SnapshotID)
	}

	// The reader: pyiceberg through the target and through Tarn.
	readsSameRows(t, current(id).MetadataLocation(), "rest", uri, "air.eu.Flights", srv.URL, "air.eu.Flights")

	// Schema evolution: the target reads Tarn's metadata file.
	evolved := iceberg.NewSchema(1, append(flightsSchema.Fields(),
		iceberg.NestedField{ID: 3, Name: "gate", Type: iceberg.PrimitiveTypes.Int32})...)
	_, err = srv.Catalog.CommitTable(ctx, srv.Warehouse, catalog.TableCommit{Ident: id, Updates: []table.Update{
		table.NewAddSchemaUpdate(evolved), table.NewSetCurrentSchemaUpdate(-1)}})
	require.NoError(t, err)
	got := waitTarget(id, current(id).MetadataLocation())
	_, ok := got.Schema().FindFieldByName("gate")
	require.True(t, ok, "the target's schema: %s", got.Schema())

	// registerTable in Tarn: published at once (the resync pass is 5 minutes away).
	reg := catalog.Ident{Namespace: catalog.Namespace{"air"}, Name: "registered"}
	src := catalog.Ident{Namespace: catalog.Namespace{"air"}, Name: "src"}
	_, err = srv.Catalog.CreateTable(ctx, srv.Warehouse, src.Namespace, spec.CreateTableRequest{Name: src.Name, Schema: flightsSchema})
	require.NoError(t, err)
	srcLoc := current(src).MetadataLocation()
	waitTarget(src, srcLoc)
	require.NoError(t, srv.Catalog.DropTable(ctx, srv.Warehouse, src, false))
	_, err = srv.Catalog.RegisterTable(ctx, srv.Warehouse, reg.Namespace, spec.RegisterTableRequest{Name: reg.Name, MetadataLocation: srcLoc})
	require.NoError(t, err)
	waitTarget(reg, srcLoc)
	require.Eventually(t, func() bool { return remote(src) == nil }, 20*time.Second, 100*time.Millisecond, "the dropped src stayed in the target")

	// A foreign change: someone points the target's table at a table of
	// the target's own. Tarn stops that table and drops nothing.
	foreign, err := fixture.CreateTable(ctx, table.Identifier{"air", "theirs"}, flightsSchema)
	require.NoError(t, err)
	regIdent := table.Identifier{"air", "registered"}
	require.NoError(t, fixture.DropTable(ctx, regIdent))
	_, err = fixture.RegisterTable(ctx, regIdent, foreign.MetadataLocation())
	require.NoError(t, err)
	_, err = srv.Catalog.CommitTable(ctx, srv.Warehouse, catalog.TableCommit{Ident: reg, Updates: []table.Update{
		table.NewSetPropertiesUpdate(iceberg.Properties{"k": "v"})}})
	require.NoError(t, err)
	var st publish.TableStatus
	require.Eventually(t, func() bool {
		st = tableStatus(pub, reg)
		return st.State == publish.StateConflict
	}, 20*time.Second, 100*time.Millisecond, "no conflict: %+v", pub.Status())
	require.Contains(t, st.Conflict, "was changed outside Tarn")
	require.Equal(t, foreign.MetadataLocation(), remote(reg).MetadataLocation())
	// The operator decides for Tarn.
	_, err = pub.Resume(ctx, "ref", reg)
	require.NoError(t, err)
	waitTarget(reg, current(reg).MetadataLocation())
	require.Equal(t, publish.StatePublished, tableStatus(pub, reg).State)

	// Rename, then drop.
	to := catalog.Ident{Namespace: catalog.Namespace{"air"}, Name: "flights2"}
	require.NoError(t, srv.Catalog.RenameTable(ctx, srv.Warehouse, id, to))
	waitTarget(to, current(to).MetadataLocation())
	require.Eventually(t, func() bool { return remote(id) == nil }, 20*time.Second, 100*time.Millisecond)
	last := current(to).MetadataLocation()
	require.NoError(t, srv.Catalog.DropTable(ctx, srv.Warehouse, to, false))
	require.Eventually(t, func() bool { return remote(to) == nil }, 20*time.Second, 100*time.Millisecond)
	// The files stay (Tarn's drop kept them): the target dropped without purge.
	_, err = os.Stat(filepathOf(t, last))
	require.NoError(t, err)
}

// tableStatus is id's status in pub's only target (zero when absent).
func tableStatus(pub *publish.Publisher, id catalog.Ident) publish.TableStatus {
	for _, ts := range pub.Status().Targets {
		for _, s := range ts.Tables {
			if s.Table == id.String() {
				return s
			}
		}
	}
	return publish.TableStatus{}
}

// filepathOf is the local path of a file:// location.
func filepathOf(t *testing.T, loc string) string {
	t.Helper()
	const p = "file://"
	require.True(t, len(loc) > len(p) && loc[:len(p)] == p, loc)
	return loc[len(p):]
}
