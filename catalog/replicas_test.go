package catalog_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/catalog/bolt"
	"github.com/tarnhq/tarn/spec"
)

// replica is one catalog over a store shared with others, with its own
// metrics registry.
type replica struct {
	cat *catalog.Catalog
	reg *prometheus.Registry
}

// twoReplicas returns two catalogs over one bolt store and one file://
// warehouse: as two replicas on one PostgreSQL store, they share nothing
// but the store and the warehouse.
func twoReplicas(t *testing.T) (a, b replica, wh *catalog.Warehouse) {
	t.Helper()
	dir := t.TempDir()
	store, err := bolt.Open(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	wh, err = catalog.NewWarehouse(catalog.DefaultWarehouse, "file://"+filepath.Join(dir, "warehouse"), nil)
	require.NoError(t, err)
	open := func() replica {
		reg := prometheus.NewRegistry()
		cat, err := catalog.New(catalog.Config{Store: store, Warehouses: []*catalog.Warehouse{wh}, Metrics: reg})
		require.NoError(t, err)
		return replica{cat, reg}
	}
	return open(), open(), wh
}

// commitStaged commits the create of a table staged with metadata
// staged (what an engine sends after stage-create: assert-create and the
// staged metadata as updates).
func commitStaged(ctx context.Context, cat *catalog.Catalog, wh *catalog.Warehouse, id catalog.Ident, staged *catalog.Loaded) (*catalog.Loaded, error) {
	md, err := table.ParseMetadataBytes(staged.MetadataJSON)
	if err != nil {
		return nil, err
	}
	sp, so := md.PartitionSpec(), md.SortOrder()
	return cat.CommitTable(ctx, wh, catalog.TableCommit{Ident: id,
		Requirements: []table.Requirement{table.AssertCreate()},
		Updates: []table.Update{table.NewAssignUUIDUpdate(md.TableUUID()), table.NewUpgradeFormatVersionUpdate(md.Version()),
			table.NewAddSchemaUpdate(md.CurrentSchema()), table.NewSetCurrentSchemaUpdate(-1),
			table.NewAddPartitionSpecUpdate(&sp, true), table.NewSetDefaultSpecUpdate(-1),
			table.NewAddSortOrderUpdate(&so), table.NewSetDefaultSortOrderUpdate(-1),
			table.NewSetLocationUpdate(md.Location())}})
}

// TestStagedCreateOnAnyReplica: a table staged through one replica has
// its directories signed through another (where the engine's /sign
// request lands) and its create committed through a third request on
// that other one; once committed, the staged entry is gone from the
// shared store. Before staged tables lived in the store, the second
// replica answered ErrNoSuchTable to the signing request.
func TestStagedCreateOnAnyReplica(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	a, b, wh := twoReplicas(t)
	ns := catalog.Namespace{"s"}
	require.NoError(t, a.cat.CreateNamespace(ctx, ns, nil))
	id := catalog.Ident{Namespace: ns, Name: "ctas"}
	staged, err := a.cat.CreateTable(ctx, wh, ns, spec.CreateTableRequest{Name: id.Name, Schema: idSchema, StageCreate: true})
	require.NoError(t, err)
	want, err := staged.Directories()
	require.NoError(t, err)

	got, err := b.cat.TableDirectories(ctx, wh, id)
	require.NoError(t, err, "replica B signs for a table staged through A")
	assert.Equal(t, want, got)

	created, err := commitStaged(ctx, b.cat, wh, id, staged)
	require.NoError(t, err)
	loaded, err := a.cat.LoadTable(ctx, wh, id)
	require.NoError(t, err)
	assert.Equal(t, created.MetadataLocation, loaded.MetadataLocation)
	got, err = a.cat.TableDirectories(ctx, wh, id)
	require.NoError(t, err)
	assert.Equal(t, want, got, "signed as a table now")
}

// TestLoadSeesOtherReplicasCommit: the metadata cache is keyed by the
// metadata location read from the store on every load, so a replica
// whose cache holds a table's metadata sees a commit made through
// another at its next load (read-after-write), and a load of an
// unchanged table is served from the cache without reading the file
// (the counters, and a file removed behind the cache's back, show it).
func TestLoadSeesOtherReplicasCommit(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	a, b, wh := twoReplicas(t)
	ns := catalog.Namespace{"s"}
	require.NoError(t, a.cat.CreateNamespace(ctx, ns, nil))
	id := catalog.Ident{Namespace: ns, Name: "t"}
	_, err := a.cat.CreateTable(ctx, wh, ns, spec.CreateTableRequest{Name: id.Name, Schema: idSchema})
	require.NoError(t, err)

	first, err := b.cat.LoadTable(ctx, wh, id)
	require.NoError(t, err)
	assert.Equal(t, 1.0, counterValue(t, b.reg, "tarn_catalog_metadata_cache_misses_total"))
	again, err := b.cat.LoadTable(ctx, wh, id)
	require.NoError(t, err)
	assert.Equal(t, 1.0, counterValue(t, b.reg, "tarn_catalog_metadata_cache_hits_total"), "an unchanged pointer is a hit")
	assert.Equal(t, 1.0, counterValue(t, b.reg, "tarn_catalog_metadata_cache_misses_total"))
	assert.Equal(t, first.MetadataLocation, again.MetadataLocation)

	committed, err := a.cat.CommitTable(ctx, wh, catalog.TableCommit{Ident: id,
		Updates: []table.Update{table.NewSetPropertiesUpdate(iceberg.Properties{"k": "from-a"})}})
	require.NoError(t, err)
	loaded, err := b.cat.LoadTable(ctx, wh, id)
	require.NoError(t, err)
	assert.Equal(t, committed.MetadataLocation, loaded.MetadataLocation, "B's next load sees A's commit")
	md, err := loaded.TableMetadata()
	require.NoError(t, err)
	assert.Equal(t, "from-a", md.Properties()["k"])
	assert.Equal(t, 2.0, counterValue(t, b.reg, "tarn_catalog_metadata_cache_misses_total"), "a new pointer is read from the warehouse")

	// A's own commit put the new file in A's cache; the file is not read
	// again (only checked to exist: TestLoadWithMissingMetadataFileFails).
	loaded, err = a.cat.LoadTable(ctx, wh, id)
	require.NoError(t, err)
	md, err = loaded.TableMetadata()
	require.NoError(t, err)
	assert.Equal(t, "from-a", md.Properties()["k"])
	assert.Equal(t, 0.0, counterValue(t, a.reg, "tarn_catalog_metadata_cache_misses_total"), "A wrote every file it loaded")
}
