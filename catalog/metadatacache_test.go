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
			dir := b.TempDir()
			store, err := bolt.Open(dir)
			require.NoError(b, err)
			b.Cleanup(func() { _ = store.Close() })
			wh, err := catalog.NewWarehouse(catalog.DefaultWarehouse, "file://"+filepath.Join(dir, "warehouse"), nil)
			require.NoError(b, err)
			cat, err := catalog.New(catalog.Config{Store: store, Warehouses: []*catalog.Warehouse{wh}, MetadataCacheBytes: bc.budget})
			require.NoError(b, err)
			ctx := b.Context()
			ns := catalog.Namespace{"b"}
			require.NoError(b, cat.CreateNamespace(ctx, ns, nil))
			id := catalog.Ident{Namespace: ns, Name: "t"}
			_, err = cat.CreateTable(ctx, wh, ns, spec.CreateTableRequest{Name: id.Name, Schema: idSchema})
			require.NoError(b, err)
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
	dir := t.TempDir()
	store, err := bolt.Open(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	wh, err := catalog.NewWarehouse(catalog.DefaultWarehouse, "file://"+filepath.Join(dir, "warehouse"), nil)
	require.NoError(t, err)
	cat, err := catalog.New(catalog.Config{Store: store, Warehouses: []*catalog.Warehouse{wh}})
	require.NoError(t, err)
	ctx := t.Context()
	ns := catalog.Namespace{"m"}
	require.NoError(t, cat.CreateNamespace(ctx, ns, nil))
	id := catalog.Ident{Namespace: ns, Name: "t"}
	_, err = cat.CreateTable(ctx, wh, ns, spec.CreateTableRequest{Name: id.Name, Schema: idSchema})
	require.NoError(t, err)
	lt, err := cat.LoadTable(ctx, wh, id) // cached now
	require.NoError(t, err)
	require.NoError(t, os.Remove(strings.TrimPrefix(lt.MetadataLocation, "file://")))
	_, err = cat.LoadTable(ctx, wh, id)
	require.Error(t, err, "a table whose metadata file is gone must not load from the cache")
}
