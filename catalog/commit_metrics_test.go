package catalog_test

import (
	"context"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/internal/testserver"
	"github.com/tarnhq/tarn/spec"
)

// racingStore lets a test slip a competing commit in just before the next
// CommitPointers, so a commit loses the pointer swap deterministically.
type racingStore struct {
	catalog.Store
	before func()
}

func (s *racingStore) CommitPointers(ctx context.Context, changes []catalog.PointerChange) error {
	if f := s.before; f != nil {
		s.before = nil
		f()
	}
	return s.Store.CommitPointers(ctx, changes)
}

// counterValue reads a counter of the default registry.
func counterValue(t *testing.T, name string) float64 {
	t.Helper()
	mfs, err := prometheus.DefaultGatherer.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("counter %s not registered", name)
	return 0
}

func newRacingCatalog(t *testing.T) (*catalog.Catalog, *catalog.Warehouse, *racingStore, catalog.Ident) {
	t.Helper()
	var rs *racingStore
	cat, wh, _ := testserver.NewCatalog(t, t.TempDir(), func(s catalog.Store) catalog.Store {
		rs = &racingStore{Store: s}
		return rs
	})
	ctx := context.Background()
	require.NoError(t, cat.CreateNamespace(ctx, catalog.Namespace{"ns"}, nil))
	_, err := cat.CreateTable(ctx, wh, catalog.Namespace{"ns"}, spec.CreateTableRequest{
		Name:   "t",
		Schema: iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true}),
	})
	require.NoError(t, err)
	return cat, wh, rs, catalog.Ident{Namespace: catalog.Namespace{"ns"}, Name: "t"}
}

// Regression: tarn_catalog_commit_retries_total ("commits that lost the
// pointer swap and were rebased server-side because their requirements
// still held") was incremented as soon as a commit lost the swap, before
// its requirements were re-checked against the new head. A commit whose
// requirements then failed was counted both as a retry and as a conflict:
// under eight concurrent iceberg-go appenders (assert-ref-snapshot-id, which
// can never survive a rebase) the server reported 47 rebases and 130
// conflicts where no commit had been rebased at all.
func TestCommitRetryMetricCountsOnlyRebases(t *testing.T) {
	ctx := context.Background()

	t.Run("requirements fail on the new head", func(t *testing.T) {
		cat, wh, rs, id := newRacingCatalog(t)
		loaded, err := cat.LoadTable(ctx, wh, id)
		require.NoError(t, err)
		md, err := table.ParseMetadataBytes(loaded.MetadataJSON)
		require.NoError(t, err)
		// The competitor changes the current schema; the losing commit
		// asserted the old one.
		newSchema := iceberg.NewSchema(1,
			iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
			iceberg.NestedField{ID: 2, Name: "v", Type: iceberg.PrimitiveTypes.String})
		rs.before = func() {
			_, err := cat.CommitTable(ctx, wh, catalog.TableCommit{Ident: id, Updates: []table.Update{
				table.NewAddSchemaUpdate(newSchema), table.NewSetCurrentSchemaUpdate(-1),
			}})
			require.NoError(t, err)
		}
		retries0 := counterValue(t, "tarn_catalog_commit_retries_total")
		conflicts0 := counterValue(t, "tarn_catalog_commit_conflicts_total")

		_, err = cat.CommitTable(ctx, wh, catalog.TableCommit{
			Ident:        id,
			Requirements: []table.Requirement{table.AssertCurrentSchemaID(md.CurrentSchema().ID)},
			Updates:      []table.Update{table.NewSetPropertiesUpdate(iceberg.Properties{"k": "v"})},
		})
		require.ErrorIs(t, err, catalog.ErrCommitFailed)
		assert.Equal(t, 0.0, counterValue(t, "tarn_catalog_commit_retries_total")-retries0, "nothing was rebased")
		assert.Equal(t, 1.0, counterValue(t, "tarn_catalog_commit_conflicts_total")-conflicts0)
	})

	t.Run("requirements hold on the new head", func(t *testing.T) {
		cat, wh, rs, id := newRacingCatalog(t)
		loaded, err := cat.LoadTable(ctx, wh, id)
		require.NoError(t, err)
		md, err := table.ParseMetadataBytes(loaded.MetadataJSON)
		require.NoError(t, err)
		rs.before = func() {
			_, err := cat.CommitTable(ctx, wh, catalog.TableCommit{Ident: id, Updates: []table.Update{
				table.NewSetPropertiesUpdate(iceberg.Properties{"other": "1"}),
			}})
			require.NoError(t, err)
		}
		retries0 := counterValue(t, "tarn_catalog_commit_retries_total")
		conflicts0 := counterValue(t, "tarn_catalog_commit_conflicts_total")

		out, err := cat.CommitTable(ctx, wh, catalog.TableCommit{
			Ident:        id,
			Requirements: []table.Requirement{table.AssertTableUUID(md.TableUUID())},
			Updates:      []table.Update{table.NewSetPropertiesUpdate(iceberg.Properties{"k": "v"})},
		})
		require.NoError(t, err)
		assert.Equal(t, int64(3), out.Version, "create, competitor, rebased commit")
		got, err := table.ParseMetadataBytes(out.MetadataJSON)
		require.NoError(t, err)
		assert.Equal(t, "1", got.Properties()["other"])
		assert.Equal(t, "v", got.Properties()["k"])
		assert.Equal(t, 1.0, counterValue(t, "tarn_catalog_commit_retries_total")-retries0, "one rebase")
		assert.Equal(t, 0.0, counterValue(t, "tarn_catalog_commit_conflicts_total")-conflicts0)
	})
}
