package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/catalog/postgres"
	"github.com/tarnhq/tarn/catalog/storetest"
	"github.com/tarnhq/tarn/internal/testpg"
)

// db is one real PostgreSQL server for the package's tests; each store
// gets a schema of its own (the URL's search_path), so every store
// starts empty and migrates its own schema.
type db struct {
	srv *testpg.Server
	n   atomic.Int64
}

// schema creates a new schema and returns a store URL that uses it.
func (d *db) schema(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("s%d", d.n.Add(1))
	d.srv.Exec(t, "CREATE SCHEMA "+name)
	return d.srv.URL + "?search_path=" + name
}

func open(t *testing.T, url string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(t.Context(), url)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	return s
}

// TestPostgresE2E runs the store's tests on a real PostgreSQL server
// (internal/testpg: Debian's postgresql package), so only with TARN_E2E=1
// (TARN_E2E=1 go test -run E2E ./catalog/postgres/).
func TestPostgresE2E(t *testing.T) {
	if os.Getenv("TARN_E2E") != "1" {
		t.Skip("set TARN_E2E=1 to start a real PostgreSQL server")
	}
	d := &db{srv: testpg.StartPostgres(t)}
	t.Run("StoreSuite", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) catalog.Store { return open(t, d.schema(t)) })
	})
	t.Run("Leases", func(t *testing.T) {
		storetest.RunLeases(t, func(t *testing.T) catalog.Leases { return open(t, d.schema(t)) })
	})
	t.Run("DataSurvivesReopen", func(t *testing.T) { testReopen(t, d) })
	t.Run("SchemaVersion", func(t *testing.T) { testSchemaVersion(t, d) })
	t.Run("ConcurrentOpenMigratesOnce", func(t *testing.T) { testConcurrentOpen(t, d) })
	t.Run("ReplicasCompareAndSwap", func(t *testing.T) { testReplicasCAS(t, d) })
	t.Run("MultiTableCommitsInOppositeOrders", func(t *testing.T) { testOppositeOrders(t, d) })
	t.Run("ConcurrentCreatesOnOneLocation", func(t *testing.T) { testConcurrentLocations(t, d) })
	t.Run("Records", func(t *testing.T) { testRecords(t, d) })
	t.Run("ClaimsFence", func(t *testing.T) { testClaimsFence(t, d) })
}

func testReopen(t *testing.T, d *db) {
	url := d.schema(t)
	ctx := t.Context()
	s, err := postgres.Open(ctx, url)
	require.NoError(t, err)
	tbl := catalog.Ident{Namespace: catalog.Namespace{"a"}, Name: "t"}
	require.NoError(t, s.CreateNamespace(ctx, tbl.Namespace, map[string]string{"owner": "alice"}))
	require.NoError(t, s.CommitPointers(ctx, []catalog.PointerChange{{Ident: tbl, Kind: catalog.KindTable,
		MetadataLocation: "file:///w/a/t/metadata/1.json", Locations: []string{"file:///w/a/t"}}}))
	require.NoError(t, s.CommitPointers(ctx, []catalog.PointerChange{{Ident: tbl, Kind: catalog.KindTable, ExpectedVersion: 1,
		MetadataLocation: "file:///w/a/t/metadata/2.json"}}))
	require.NoError(t, s.Close())

	s = open(t, url)
	props, err := s.LoadNamespace(ctx, tbl.Namespace)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"owner": "alice"}, props)
	p, err := s.LoadPointer(ctx, tbl, catalog.KindTable)
	require.NoError(t, err)
	assert.Equal(t, catalog.Pointer{Kind: catalog.KindTable, MetadataLocation: "file:///w/a/t/metadata/2.json", Version: 2,
		Locations: []string{"file:///w/a/t"}}, p)
	// The location index survived too.
	err = s.CommitPointers(ctx, []catalog.PointerChange{{Ident: catalog.Ident{Namespace: tbl.Namespace, Name: "u"}, Kind: catalog.KindTable,
		MetadataLocation: "file:///w/a/t/u/metadata/1.json", Locations: []string{"file:///w/a/t/u"}}})
	require.ErrorIs(t, err, catalog.ErrInvalidArgument)
}

// testSchemaVersion: a database whose schema a later Tarn migrated (a
// version this build does not know), or that a failed migration left
// dirty, is refused by Open, and left as it was.
func testSchemaVersion(t *testing.T, d *db) {
	url := d.schema(t)
	s, err := postgres.Open(t.Context(), url)
	require.NoError(t, err)
	require.NoError(t, s.CreateNamespace(t.Context(), catalog.Namespace{"a"}, nil))
	require.NoError(t, s.Close())
	schema := url[strings.LastIndex(url, "=")+1:]
	var version int
	var dirty bool
	require.NoError(t, d.srv.Connect(t).QueryRow(t.Context(), "SELECT version, dirty FROM "+schema+"."+postgres.MigrationsTable).Scan(&version, &dirty))
	assert.Equal(t, postgres.SchemaVersion, version)
	assert.False(t, dirty)

	for _, tc := range []struct {
		name, set, want string
	}{
		{"newer", fmt.Sprintf("version = %d", postgres.SchemaVersion+1), fmt.Sprintf("schema version %d", postgres.SchemaVersion+1)},
		{"dirty", "dirty = true", "dirty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d.srv.Exec(t, "UPDATE "+schema+"."+postgres.MigrationsTable+" SET "+tc.set)
			_, err := postgres.Open(t.Context(), url)
			require.ErrorIs(t, err, postgres.ErrSchemaVersion)
			assert.Contains(t, err.Error(), tc.want)
			d.srv.Exec(t, fmt.Sprintf("UPDATE %s.%s SET version = %d, dirty = false", schema, postgres.MigrationsTable, postgres.SchemaVersion))
			s := open(t, url)
			_, err = s.LoadNamespace(t.Context(), catalog.Namespace{"a"})
			require.NoError(t, err, "the refused Open changed nothing")
		})
	}
}

// testConcurrentOpen: replicas starting together on an empty database
// all start; golang-migrate's advisory lock lets one migrate.
func testConcurrentOpen(t *testing.T, d *db) {
	url := d.schema(t)
	const replicas = 4
	var wg sync.WaitGroup
	errs := make([]error, replicas)
	for i := range replicas {
		wg.Go(func() {
			s, err := postgres.Open(t.Context(), url)
			if err == nil {
				err = s.CreateNamespace(t.Context(), catalog.Namespace{fmt.Sprint("r", i)}, nil)
				_ = s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "replica %d", i)
	}
	got, _, err := open(t, url).ListNamespaces(t.Context(), nil, catalog.Page{})
	require.NoError(t, err)
	assert.Len(t, got, replicas)
}

// testReplicasCAS: writers spread over three stores (three replicas'
// connection pools) on one database commit on one table, each from the
// version it read, retrying on ErrCommitFailed: every acknowledged commit
// got its own version, none was lost.
func testReplicasCAS(t *testing.T, d *db) {
	url := d.schema(t)
	stores := []*postgres.Store{open(t, url), open(t, url), open(t, url)}
	ctx := t.Context()
	tbl := catalog.Ident{Namespace: catalog.Namespace{"a"}, Name: "t"}
	require.NoError(t, stores[0].CreateNamespace(ctx, tbl.Namespace, nil))
	require.NoError(t, stores[0].CommitPointers(ctx, []catalog.PointerChange{{Ident: tbl, Kind: catalog.KindTable, MetadataLocation: "file:///w/0.json"}}))
	const writers, k = 12, 10
	var mu sync.Mutex
	landed := map[int64]string{}
	errc := make(chan error, writers)
	var wg sync.WaitGroup
	for w := range writers {
		s := stores[w%len(stores)]
		wg.Go(func() {
			for i := 0; i < k; {
				p, err := s.LoadPointer(ctx, tbl, catalog.KindTable)
				if err != nil {
					errc <- err
					return
				}
				l := fmt.Sprintf("file:///w/%d-%d.json", w, i)
				err = s.CommitPointers(ctx, []catalog.PointerChange{{Ident: tbl, Kind: catalog.KindTable, ExpectedVersion: p.Version, MetadataLocation: l}})
				switch {
				case err == nil:
					mu.Lock()
					if prev, dup := landed[p.Version+1]; dup {
						mu.Unlock()
						errc <- fmt.Errorf("lost update: version %d written by %s and %s", p.Version+1, prev, l)
						return
					}
					landed[p.Version+1] = l
					mu.Unlock()
					i++
				case !errors.Is(err, catalog.ErrCommitFailed):
					errc <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		require.NoError(t, err)
	}
	require.Len(t, landed, writers*k)
	p, err := stores[1].LoadPointer(ctx, tbl, catalog.KindTable)
	require.NoError(t, err)
	assert.Equal(t, int64(1+writers*k), p.Version)
	assert.Equal(t, landed[p.Version], p.MetadataLocation)
}

// testOppositeOrders: multi-table commits that name two tables in
// opposite orders, from two stores at once, never deadlock (the rows are
// locked in (namespace, name) order whatever the order of the changes):
// each ends committed or refused as a conflict, never with PostgreSQL's
// deadlock error, and every acknowledged commit moved both tables.
func testOppositeOrders(t *testing.T, d *db) {
	url := d.schema(t)
	stores := []*postgres.Store{open(t, url), open(t, url)}
	ctx := t.Context()
	a := catalog.Ident{Namespace: catalog.Namespace{"n"}, Name: "a"}
	b := catalog.Ident{Namespace: catalog.Namespace{"n"}, Name: "b"}
	require.NoError(t, stores[0].CreateNamespace(ctx, a.Namespace, nil))
	for _, id := range []catalog.Ident{a, b} {
		require.NoError(t, stores[0].CommitPointers(ctx, []catalog.PointerChange{{Ident: id, Kind: catalog.KindTable, MetadataLocation: "file:///w/" + id.Name + "/0.json"}}))
	}
	var ok atomic.Int64
	errc := make(chan error, 8)
	var wg sync.WaitGroup
	for w := range 8 {
		s := stores[w%2]
		wg.Go(func() {
			for i := range 15 {
				pa, err := s.LoadPointer(ctx, a, catalog.KindTable)
				if err != nil {
					errc <- err
					return
				}
				pb, err := s.LoadPointer(ctx, b, catalog.KindTable)
				if err != nil {
					errc <- err
					return
				}
				changes := []catalog.PointerChange{
					{Ident: a, Kind: catalog.KindTable, ExpectedVersion: pa.Version, MetadataLocation: fmt.Sprintf("file:///w/a/%d-%d.json", w, i)},
					{Ident: b, Kind: catalog.KindTable, ExpectedVersion: pb.Version, MetadataLocation: fmt.Sprintf("file:///w/b/%d-%d.json", w, i)},
				}
				if w%2 == 1 {
					changes[0], changes[1] = changes[1], changes[0]
				}
				err = s.CommitPointers(ctx, changes)
				switch {
				case err == nil:
					ok.Add(1)
				case strings.Contains(err.Error(), "deadlock"):
					errc <- err
					return
				case !errors.Is(err, catalog.ErrCommitFailed):
					errc <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		require.NoError(t, err)
	}
	pa, err := stores[0].LoadPointer(ctx, a, catalog.KindTable)
	require.NoError(t, err)
	pb, err := stores[1].LoadPointer(ctx, b, catalog.KindTable)
	require.NoError(t, err)
	require.Positive(t, ok.Load())
	assert.Equal(t, 1+ok.Load(), pa.Version, "every acknowledged commit moved a")
	assert.Equal(t, 1+ok.Load(), pb.Version, "every acknowledged commit moved b")
	t.Logf("%d of %d two-table commits landed", ok.Load(), 8*15)
}

// testConcurrentLocations pins the race locationsLockKey closes: creates
// of different tables on directories inside one another, racing on two
// stores, lock no common row; without serialising their overlap checks
// several could each see only committed entries and all land, so that
// tables share files. Exactly one may win each round.
func testConcurrentLocations(t *testing.T, d *db) {
	url := d.schema(t)
	stores := []*postgres.Store{open(t, url), open(t, url)}
	ctx := t.Context()
	require.NoError(t, stores[0].CreateNamespace(ctx, catalog.Namespace{"n"}, nil))
	const rounds, racers = 10, 6
	for r := range rounds {
		start := make(chan struct{})
		var wins atomic.Int64
		errc := make(chan error, racers)
		var wg sync.WaitGroup
		for i := range racers {
			// racer 0 at the root, the others nested ever deeper.
			dir := fmt.Sprintf("s3://b/wh/r%d", r) + strings.Repeat("/x", i)
			s := stores[i%2]
			wg.Go(func() {
				<-start
				err := s.CommitPointers(ctx, []catalog.PointerChange{{Ident: catalog.Ident{Namespace: catalog.Namespace{"n"}, Name: fmt.Sprintf("r%d-%d", r, i)},
					Kind: catalog.KindTable, MetadataLocation: dir + "/metadata/1.json", Locations: []string{dir}}})
				switch {
				case err == nil:
					wins.Add(1)
				case !errors.Is(err, catalog.ErrInvalidArgument):
					errc <- err
				}
			})
		}
		close(start)
		wg.Wait()
		close(errc)
		for err := range errc {
			require.NoError(t, err)
		}
		require.Equal(t, int64(1), wins.Load(), "round %d: tables on overlapping directories landed together", r)
	}
}

// testRecords: the record seam of catalog/bolt (topic configs, auth),
// shared by every store on the database.
func testRecords(t *testing.T, d *db) {
	url := d.schema(t)
	s, other := open(t, url), open(t, url)
	ctx := t.Context()
	got, err := s.ListRecords(ctx, "topics")
	require.NoError(t, err)
	assert.Empty(t, got)
	_, ok, err := s.GetRecord(ctx, "topics", "orders")
	require.NoError(t, err)
	assert.False(t, ok)
	require.NoError(t, s.DeleteRecord(ctx, "topics", "orders"), "deleting a missing record is not an error")
	require.NoError(t, s.PutRecord(ctx, "topics", "orders", []byte(`{"v":1}`)))
	require.NoError(t, s.PutRecord(ctx, "topics", "orders", []byte(`{"v":2}`)))
	require.NoError(t, s.PutRecord(ctx, "topics", "clicks", []byte(`{"v":3}`)))
	require.NoError(t, s.PutRecord(ctx, "other", "orders", []byte(`x`)))
	require.ErrorIs(t, s.PutRecord(ctx, "topics", "", []byte(`x`)), catalog.ErrInvalidArgument)
	require.ErrorIs(t, s.PutRecord(ctx, "", "k", []byte(`x`)), catalog.ErrInvalidArgument)
	_, err = s.ListRecords(ctx, "")
	require.ErrorIs(t, err, catalog.ErrInvalidArgument)

	v, ok, err := other.GetRecord(ctx, "topics", "orders")
	require.NoError(t, err)
	require.True(t, ok)
	assert.JSONEq(t, `{"v":2}`, string(v))
	got, err = other.ListRecords(ctx, "topics")
	require.NoError(t, err)
	assert.Equal(t, map[string][]byte{"orders": []byte(`{"v":2}`), "clicks": []byte(`{"v":3}`)}, got)
	require.NoError(t, other.DeleteRecord(ctx, "topics", "orders"))
	_, ok, err = s.GetRecord(ctx, "topics", "orders")
	require.NoError(t, err)
	assert.False(t, ok)
	v, ok, err = s.GetRecord(ctx, "other", "orders")
	require.NoError(t, err)
	assert.True(t, ok, "collections are separate")
	assert.Equal(t, "x", string(v))
}

// The Open of an unreachable server fails instead of hanging (no server
// needed: a closed port).
func TestOpenUnreachable(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err := postgres.Open(ctx, "postgres://tarn:tarn@127.0.0.1:1/tarn?connect_timeout=5")
	require.Error(t, err)
	_, err = postgres.Open(ctx, "mysql://nope")
	require.Error(t, err)
}
