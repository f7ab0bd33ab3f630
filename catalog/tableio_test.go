package catalog_test

import (
	"bytes"
	"context"
	"log"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/internal/testserver"
	"github.com/tarnhq/tarn/spec"
)

func newTestCatalog(t *testing.T) (*catalog.Catalog, *catalog.Warehouse) {
	t.Helper()
	cat, wh, _ := testserver.NewCatalog(t, t.TempDir(), nil)
	return cat, wh
}

// newInt64Table creates the table ns.t, of one required int64 column v,
// in a new namespace ns.
func newInt64Table(t *testing.T, cat *catalog.Catalog, wh *catalog.Warehouse, ns string) table.Identifier {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, cat.CreateNamespace(ctx, catalog.Namespace{ns}, nil))
	_, err := cat.CreateTable(ctx, wh, catalog.Namespace{ns}, spec.CreateTableRequest{
		Name:   "t",
		Schema: iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "v", Type: iceberg.PrimitiveTypes.Int64, Required: true}),
	})
	require.NoError(t, err)
	return table.Identifier{ns, "t"}
}

// int64Rows is an Arrow table of one int64 column v holding vals.
func int64Rows(vals ...int64) arrow.Table {
	sc := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues(vals, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	return array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
}

// TestTableIOAppendAndScan: an in-process writer appends Arrow data through
// iceberg-go's transaction API over TableIO, with snapshot summary
// properties, and reads it back; a second writer holding the stale table
// is refused with ErrCommitFailed.
func TestTableIOAppendAndScan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cat, wh := newTestCatalog(t)
	ident := newInt64Table(t, cat, wh, "ns")
	tio := cat.TableIO(wh)

	stale, err := tio.LoadTable(ctx, ident)
	require.NoError(t, err)
	txn := stale.NewTransaction()
	data := int64Rows(1, 2, 3)
	defer data.Release()
	require.NoError(t, txn.AppendTable(ctx, data, 1024, iceberg.Properties{"tarn.test": "first"}))
	tbl, err := txn.Commit(ctx)
	require.NoError(t, err)
	require.Equal(t, "first", tbl.CurrentSnapshot().Summary.Properties["tarn.test"])

	// The table as loaded before the first append is now stale.
	txn = stale.NewTransaction()
	more := int64Rows(4)
	defer more.Release()
	require.NoError(t, txn.AppendTable(ctx, more, 1024, nil))
	_, err = txn.Commit(ctx)
	require.ErrorIs(t, err, catalog.ErrCommitFailed)

	got, err := tio.LoadTable(ctx, ident)
	require.NoError(t, err)
	res, err := got.Scan().ToArrowTable(ctx)
	require.NoError(t, err)
	defer res.Release()
	require.EqualValues(t, 3, res.NumRows())
	require.Len(t, got.Metadata().Snapshots(), 1)

	_, err = tio.LoadTable(ctx, table.Identifier{"t"})
	require.ErrorIs(t, err, catalog.ErrInvalidArgument)
}

// Regression: `tarn serve --warehouse gs://bucket/wh` must not start and
// fail every create with 500 ("io scheme not registered"): a warehouse
// whose FileIO is not wired is refused up front. s3:// is wired; it needs
// a bucket.
func TestNewWarehouseRefusesUnsupportedStores(t *testing.T) {
	t.Parallel()
	for _, loc := range []string{"gs://b/w", "abfs://c@a.dfs.core.windows.net/w", "relative/path", "file:///", "s3:///nobucket", "s3://user:pw@bucket/w"} {
		_, err := catalog.NewWarehouse(catalog.DefaultWarehouse, loc, nil)
		require.ErrorIs(t, err, catalog.ErrInvalidArgument, loc)
		require.NotContains(t, err.Error(), "pw", loc)
	}
	wh, err := catalog.NewWarehouse(catalog.DefaultWarehouse, "s3://bucket/wh/", nil)
	require.NoError(t, err)
	require.Equal(t, "s3://bucket/wh", wh.Location)
	require.True(t, wh.Contains("s3://bucket/wh/ns/t"))
	require.False(t, wh.Contains("s3://bucket/wh2/t"))
	require.False(t, wh.Contains("s3://other/wh/t"))
}

// Regression: every in-process commit past the 10th (ingest, maintenance)
// logged "Warning: Failed to delete old metadata file ... no such file or
// directory": the catalog's commit deletes the metadata files that leave
// the log (write.metadata.delete-after-commit.enabled), and iceberg-go's
// Transaction.Commit then deleted the same files again through the
// table's FileIO. Each is deleted once now, and old files still go as
// write.metadata.previous-versions-max says.
func TestTableIOOldMetadataDeletedOnce(t *testing.T) {
	t.Parallel()
	var logged bytes.Buffer
	log.SetOutput(&logged) // iceberg-go reports through the standard logger
	t.Cleanup(func() { log.SetOutput(os.Stderr) })

	ctx := context.Background()
	cat, wh := newTestCatalog(t)
	require.NoError(t, cat.CreateNamespace(ctx, catalog.Namespace{"ns"}, nil))
	created, err := cat.CreateTable(ctx, wh, catalog.Namespace{"ns"}, spec.CreateTableRequest{
		Name:   "t",
		Schema: iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "v", Type: iceberg.PrimitiveTypes.Int64, Required: true}),
		Properties: map[string]string{
			table.MetadataDeleteAfterCommitEnabledKey: "true",
			table.MetadataPreviousVersionsMaxKey:      "10",
		},
	})
	require.NoError(t, err)
	tio := cat.TableIO(wh)
	for i := range 15 {
		tbl, err := tio.LoadTable(ctx, table.Identifier{"ns", "t"})
		require.NoError(t, err)
		txn := tbl.NewTransaction()
		require.NoError(t, txn.SetProperties(iceberg.Properties{"n": strconv.Itoa(i)}))
		_, err = txn.Commit(ctx)
		require.NoError(t, err)
	}
	require.NotContains(t, logged.String(), "Failed to delete old metadata file")
	require.Empty(t, logged.String())

	loc, err := url.Parse(created.MetadataLocation)
	require.NoError(t, err)
	files, err := filepath.Glob(filepath.Join(filepath.Dir(loc.Path), "*.metadata.json"))
	require.NoError(t, err)
	require.Len(t, files, 11, "the current file and 10 previous ones: %v", files)
}
