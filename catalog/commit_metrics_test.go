package catalog_test

import (
	"context"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/view"
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

// counterValue reads a counter of the test's registry.
func counterValue(t *testing.T, g prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("counter %s not registered", name)
	return 0
}

func newRacingCatalog(t *testing.T) (*catalog.Catalog, *catalog.Warehouse, *racingStore, catalog.Ident, *prometheus.Registry) {
	t.Helper()
	var rs *racingStore
	reg := prometheus.NewRegistry()
	cat, wh, _ := testserver.NewMeteredCatalog(t, t.TempDir(), func(s catalog.Store) catalog.Store {
		rs = &racingStore{Store: s}
		return rs
	}, reg)
	ctx := context.Background()
	require.NoError(t, cat.CreateNamespace(ctx, catalog.Namespace{"ns"}, nil))
	_, err := cat.CreateTable(ctx, wh, catalog.Namespace{"ns"}, spec.CreateTableRequest{
		Name:   "t",
		Schema: iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true}),
	})
	require.NoError(t, err)
	return cat, wh, rs, catalog.Ident{Namespace: catalog.Namespace{"ns"}, Name: "t"}, reg
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
	t.Parallel()
	ctx := context.Background()

	t.Run("requirements fail on the new head", func(t *testing.T) {
		cat, wh, rs, id, reg := newRacingCatalog(t)
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
		retries0 := counterValue(t, reg, "tarn_catalog_commit_retries_total")
		conflicts0 := counterValue(t, reg, "tarn_catalog_commit_conflicts_total")

		_, err = cat.CommitTable(ctx, wh, catalog.TableCommit{
			Ident:        id,
			Requirements: []table.Requirement{table.AssertCurrentSchemaID(md.CurrentSchema().ID)},
			Updates:      []table.Update{table.NewSetPropertiesUpdate(iceberg.Properties{"k": "v"})},
		})
		require.ErrorIs(t, err, catalog.ErrCommitFailed)
		assert.Equal(t, 0.0, counterValue(t, reg, "tarn_catalog_commit_retries_total")-retries0, "nothing was rebased")
		assert.Equal(t, 1.0, counterValue(t, reg, "tarn_catalog_commit_conflicts_total")-conflicts0)
	})

	t.Run("requirements hold on the new head", func(t *testing.T) {
		cat, wh, rs, id, reg := newRacingCatalog(t)
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
		retries0 := counterValue(t, reg, "tarn_catalog_commit_retries_total")
		conflicts0 := counterValue(t, reg, "tarn_catalog_commit_conflicts_total")

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
		assert.Equal(t, 1.0, counterValue(t, reg, "tarn_catalog_commit_retries_total")-retries0, "one rebase")
		assert.Equal(t, 0.0, counterValue(t, reg, "tarn_catalog_commit_conflicts_total")-conflicts0)
	})
}

// Regression: tarn_catalog_commits_total ("table metadata pointers
// swapped by commits, creates included") counted only commits and staged
// creates: a plain createTable, createView or register left it where it
// was, so a dashboard of catalog writes missed every table made in one
// step. Each pointer write counts once; a refused commit and a commit
// with nothing to apply count nothing.
func TestCommitsMetricCountsEveryPointerWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	cat, wh, _ := testserver.NewMeteredCatalog(t, t.TempDir(), nil, reg)
	ns := catalog.Namespace{"m"}
	require.NoError(t, cat.CreateNamespace(ctx, ns, nil))
	tid := catalog.Ident{Namespace: ns, Name: "t"}
	vid := catalog.Ident{Namespace: ns, Name: "v"}
	counts := func(what string, want float64, f func() error) {
		t.Helper()
		before := counterValue(t, reg, "tarn_catalog_commits_total")
		err := f()
		if want == 0 && what != "no-op commit" {
			require.Error(t, err, what)
		} else {
			require.NoError(t, err, what)
		}
		assert.Equal(t, want, counterValue(t, reg, "tarn_catalog_commits_total")-before, what)
	}
	var tableLoc, viewLoc string
	counts("create table", 1, func() error {
		l, err := cat.CreateTable(ctx, wh, ns, spec.CreateTableRequest{Name: "t", Schema: idSchema})
		if l != nil {
			tableLoc = l.MetadataLocation
		}
		return err
	})
	counts("commit", 1, func() error {
		_, err := cat.CommitTable(ctx, wh, catalog.TableCommit{Ident: tid, Updates: []table.Update{
			table.NewSetPropertiesUpdate(iceberg.Properties{"k": "v"})}})
		return err
	})
	counts("no-op commit", 0, func() error {
		_, err := cat.CommitTable(ctx, wh, catalog.TableCommit{Ident: tid})
		return err
	})
	counts("refused commit", 0, func() error {
		_, err := cat.CommitTable(ctx, wh, catalog.TableCommit{Ident: tid,
			Requirements: []table.Requirement{table.AssertCurrentSchemaID(7)},
			Updates:      []table.Update{table.NewSetPropertiesUpdate(iceberg.Properties{"k": "w"})}})
		return err
	})
	counts("staged create, committed", 1, func() error {
		staged, err := cat.CreateTable(ctx, wh, ns, spec.CreateTableRequest{Name: "s", Schema: idSchema, StageCreate: true})
		if err != nil {
			return err
		}
		_, err = commitStaged(ctx, cat, wh, catalog.Ident{Namespace: ns, Name: "s"}, staged)
		return err
	})
	counts("create view", 1, func() error {
		l, err := cat.CreateView(ctx, wh, ns, spec.CreateViewRequest{Name: "v", Schema: idSchema, ViewVersion: viewVersion()})
		if l != nil {
			viewLoc = l.MetadataLocation
		}
		return err
	})
	counts("replace view", 1, func() error {
		_, err := cat.ReplaceView(ctx, wh, vid, nil, []view.Update{view.NewSetPropertiesUpdate(iceberg.Properties{"k": "v"})})
		return err
	})
	require.NoError(t, cat.DropTable(ctx, wh, tid, false))
	require.NoError(t, cat.DropView(ctx, vid))
	counts("register table", 1, func() error {
		_, err := cat.RegisterTable(ctx, wh, ns, spec.RegisterTableRequest{Name: "t", MetadataLocation: tableLoc})
		return err
	})
	counts("register view", 1, func() error {
		_, err := cat.RegisterView(ctx, wh, ns, spec.RegisterViewRequest{Name: "v", MetadataLocation: viewLoc})
		return err
	})
}
