package postgres_test

import (
	"context"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/catalog/postgres"
	"github.com/tarnhq/tarn/internal/testpg"
	"github.com/tarnhq/tarn/internal/testserver"
	"github.com/tarnhq/tarn/spec"
)

// countingStore counts the store calls the catalog makes (each one or
// more SQL statements, see BenchmarkPostgresCommitAndLoad).
type countingStore struct {
	catalog.Store
	loads, commits atomic.Int64
	// loadNanos, commitNanos: time spent in those calls.
	loadNanos, commitNanos atomic.Int64
}

func (s *countingStore) LoadPointer(ctx context.Context, id catalog.Ident, k catalog.Kind) (catalog.Pointer, error) {
	s.loads.Add(1)
	t0 := time.Now()
	defer func() { s.loadNanos.Add(int64(time.Since(t0))) }()
	return s.Store.LoadPointer(ctx, id, k)
}

func (s *countingStore) CommitPointers(ctx context.Context, c []catalog.PointerChange) error {
	s.commits.Add(1)
	t0 := time.Now()
	defer func() { s.commitNanos.Add(int64(time.Since(t0))) }()
	return s.Store.CommitPointers(ctx, c)
}

// BenchmarkPostgresCommitAndLoad measures, on a real PostgreSQL on this
// machine (TARN_E2E=1), a property commit to one table and a loadTable
// of it through the catalog service over catalog/postgres (file
// warehouse, metadata cache warm), with the store calls each makes:
// the capacity model of docs/replicas.md is built on these.
//
//	TARN_E2E=1 go test -run '^$' -bench BenchmarkPostgresCommitAndLoad ./catalog/postgres/
func BenchmarkPostgresCommitAndLoad(b *testing.B) {
	if os.Getenv("TARN_E2E") != "1" {
		b.Skip("set TARN_E2E=1 to start a real PostgreSQL server")
	}
	d := &db{srv: testpg.StartPostgres(b)}
	url := d.srv.URL + "?search_path=bench"
	d.srv.Exec(b, "CREATE SCHEMA bench")
	pg, err := postgresOpen(b, url)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("postgres", func(b *testing.B) { benchCommitAndLoad(b, func(catalog.Store) catalog.Store { return pg }) })
	b.Run("bolt", func(b *testing.B) { benchCommitAndLoad(b, func(s catalog.Store) catalog.Store { return s }) })
}

func benchCommitAndLoad(b *testing.B, store func(catalog.Store) catalog.Store) {
	var cs *countingStore
	cat, wh, _ := testserver.NewCatalog(b, b.TempDir(), func(s catalog.Store) catalog.Store {
		cs = &countingStore{Store: store(s)}
		return cs
	})
	ctx := context.Background()
	ns := catalog.Namespace{"bench"}
	id := catalog.Ident{Namespace: ns, Name: "t"}
	if err := cat.CreateNamespace(ctx, ns, nil); err != nil {
		b.Fatal(err)
	}
	schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	if _, err := cat.CreateTable(ctx, wh, ns, spec.CreateTableRequest{Name: "t", Schema: schema}); err != nil {
		b.Fatal(err)
	}
	b.Run("commit", func(b *testing.B) {
		l0, c0 := cs.loads.Load(), cs.commits.Load()
		i := 0
		for b.Loop() {
			i++
			if _, err := cat.CommitTable(ctx, wh, catalog.TableCommit{Ident: id, Updates: []table.Update{
				table.NewSetPropertiesUpdate(iceberg.Properties{"n": string(rune('a' + i%26))})}}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(cs.loads.Load()-l0)/float64(b.N), "pointer-loads/op")
		b.ReportMetric(float64(cs.commits.Load()-c0)/float64(b.N), "pointer-commits/op")
		b.ReportMetric(float64(cs.commitNanos.Load())/1e6/float64(b.N), "store-commit-ms/op")
	})
	b.Run("loadTable", func(b *testing.B) {
		l0, n0 := cs.loads.Load(), cs.loadNanos.Load()
		for b.Loop() {
			if _, err := cat.LoadTable(ctx, wh, id); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(cs.loads.Load()-l0)/float64(b.N), "pointer-loads/op")
		b.ReportMetric(float64(cs.loadNanos.Load()-n0)/1e6/float64(b.N), "store-load-ms/op")
	})
}

func postgresOpen(b *testing.B, url string) (catalog.Store, error) {
	s, err := postgres.Open(b.Context(), url)
	if err != nil {
		return nil, err
	}
	b.Cleanup(func() { _ = s.Close() })
	return s, nil
}
