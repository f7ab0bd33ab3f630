package catalog_test

import (
	"fmt"
	"path/filepath"
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
