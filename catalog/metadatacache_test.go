package catalog_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/catalog/bolt"
	"github.com/tarnhq/tarn/spec"
)

// BenchmarkLoadTableMetadata loads and parses a table's metadata (what a
// commit, an ingest batch or a maintenance job does first) with the
// replica's metadata cache and without it (MetadataCacheBytes -1): the
// pointer is read from the store either way; the cache saves the file
// read and the parse.
func BenchmarkLoadTableMetadata(b *testing.B) {
	for _, bc := range []struct {
		name   string
		budget int64
	}{{"cached", 0}, {"uncached", -1}} {
		b.Run(bc.name, func(b *testing.B) {
			cat, wh, id := newCachedTable(b, bc.budget)
			ctx := b.Context()
			for i := range 50 { // a metadata log and properties of some size
				_, err := cat.CommitTable(ctx, wh, catalog.TableCommit{Ident: id,
					Updates: []table.Update{table.NewSetPropertiesUpdate(iceberg.Properties{fmt.Sprintf("k%d", i): "v"})}})
				require.NoError(b, err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				lt, err := cat.LoadTable(ctx, wh, id)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := lt.TableMetadata(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestLoadWithMissingMetadataFileFails pins a regression of the metadata
// cache: a table whose current metadata file was deleted loaded from the
// cache as if nothing had happened (the REST Compatibility Kit's
// testLoadTableWithMissingMetadataFile failed: "Expecting code to raise
// a throwable"), though no client could read the location it was given.
func TestLoadWithMissingMetadataFileFails(t *testing.T) {
	t.Parallel()
	cat, wh, id := newCachedTable(t, 0)
	ctx := t.Context()
	lt, err := cat.LoadTable(ctx, wh, id) // cached now
	require.NoError(t, err)
	require.NoError(t, os.Remove(strings.TrimPrefix(lt.MetadataLocation, "file://")))
	_, err = cat.LoadTable(ctx, wh, id)
	require.Error(t, err, "a table whose metadata file is gone must not load from the cache")
}

// newCachedTable is a catalog on bbolt and a file warehouse in a temp
// dir, with a metadata cache of budget bytes (0: the default, -1: none),
// and a new table b.t in it.
func newCachedTable(tb testing.TB, budget int64) (*catalog.Catalog, *catalog.Warehouse, catalog.Ident) {
	tb.Helper()
	dir := tb.TempDir()
	store, err := bolt.Open(dir)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = store.Close() })
	wh, err := catalog.NewWarehouse(catalog.DefaultWarehouse, "file://"+filepath.Join(dir, "warehouse"), nil)
	require.NoError(tb, err)
	cat, err := catalog.New(catalog.Config{Store: store, Warehouses: []*catalog.Warehouse{wh}, MetadataCacheBytes: budget})
	require.NoError(tb, err)
	ns := catalog.Namespace{"b"}
	require.NoError(tb, cat.CreateNamespace(tb.Context(), ns, nil))
	id := catalog.Ident{Namespace: ns, Name: "t"}
	_, err = cat.CreateTable(tb.Context(), wh, ns, spec.CreateTableRequest{Name: id.Name, Schema: idSchema})
	require.NoError(tb, err)
	return cat, wh, id
}
