package pipeline_test

import (
	"context"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/pipeline"
	"github.com/tarnhq/tarn/internal/testserver"
	"github.com/tarnhq/tarn/tabledefaults"
)

// A topic's table (and its dead letter table) is created with
// the defaults for owned tables (tabledefaults), zstd, and no Parquet dictionary
// for _kafka.offset and _kafka.timestamp.
func TestEnsureTableSetsMaintenanceDefaults(t *testing.T) {
	ctx := context.Background()
	cat, wh, _ := testserver.NewCatalog(t, t.TempDir(), nil)
	cfg := pipeline.Config{Table: catalog.Ident{Namespace: catalog.Namespace{"air"}, Name: "flights"},
		Topic: "flights", Cluster: "c", ErrorMode: pipeline.ErrorModeDLQ}
	user := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "distance", Type: iceberg.PrimitiveTypes.Int64})
	created, err := pipeline.EnsureTable(ctx, cat, wh, cfg, user)
	require.NoError(t, err)
	require.True(t, created)
	for _, name := range []string{"flights", "flights_dlq"} {
		tbl, err := cat.TableIO(wh).LoadTable(ctx, table.Identifier{"air", name})
		require.NoError(t, err)
		props := tbl.Properties()
		for k, v := range tabledefaults.Properties() {
			require.Equal(t, v, props[k], "%s: %s", name, k)
		}
		require.Equal(t, "3600000", props[table.MaxSnapshotAgeMsKey])
		require.Equal(t, "true", props[table.ManifestMergeEnabledKey])
		require.Equal(t, pipeline.CompressionCodec, props[pipeline.CompressionProperty])
		// Unique per row: a dictionary would only be built and dropped.
		require.Equal(t, "false", props["write.parquet.dict-encoding-enabled.column._kafka.offset"])
		require.Equal(t, "false", props["write.parquet.dict-encoding-enabled.column._kafka.timestamp"])
	}
}
