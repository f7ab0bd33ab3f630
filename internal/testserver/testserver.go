// Package testserver starts a Tarn catalog server in process for tests: a
// bbolt store and a file:// warehouse in a temporary directory, served by
// httptest on a free loopback port, closed with the test.
package testserver

import (
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/catalog/bolt"
	"github.com/tarnhq/tarn/delta"
	"github.com/tarnhq/tarn/internal/testmoto"
	"github.com/tarnhq/tarn/maintenance"
	"github.com/tarnhq/tarn/server"
	"github.com/tarnhq/tarn/storage"
	"github.com/tarnhq/tarn/tabledefaults"
)

// Server is a running in-process Tarn.
type Server struct {
	// URL is the base URL, e.g. http://127.0.0.1:40123.
	URL string
	// DataDir holds tarn.db and the warehouse directory.
	DataDir string
	// Warehouse is the default warehouse (file://<DataDir>/warehouse).
	Warehouse *catalog.Warehouse
	Catalog   *catalog.Catalog
	Store     *bolt.Store
	// Metrics is the server's own registry: the catalog's and the
	// server's metrics, which its /metrics serves.
	Metrics *prometheus.Registry
}

// Start starts a server on a fresh data directory; it stops when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	dir := t.TempDir()
	return StartAt(t, dir)
}

// EnvWarehouse set to "s3" makes NewCatalog, Start and StartAt use an S3
// warehouse (s3://<fresh bucket>/wh) on the moto server of
// testmoto.EnvEndpoint instead of a file:// one, so that a whole suite
// runs against object storage.
const EnvWarehouse = "TARN_TEST_WAREHOUSE"

// NewCatalog opens a bolt store in dir and a file:// warehouse at
// dir/warehouse (see EnvWarehouse), and returns a Catalog over the store — or over wrap(store)
// when wrap is not nil (a test double that injects races or failures).
// The store closes when t ends. The catalog's metrics are registered
// nowhere (NewMeteredCatalog).
func NewCatalog(t testing.TB, dir string, wrap func(catalog.Store) catalog.Store) (*catalog.Catalog, *catalog.Warehouse, *bolt.Store) {
	t.Helper()
	return NewMeteredCatalog(t, dir, wrap, nil)
}

// NewMeteredCatalog is NewCatalog with the catalog's metrics registered
// on reg, a registry of the test's own.
func NewMeteredCatalog(t testing.TB, dir string, wrap func(catalog.Store) catalog.Store, reg prometheus.Registerer) (*catalog.Catalog, *catalog.Warehouse, *bolt.Store) {
	t.Helper()
	var wh *catalog.Warehouse
	if os.Getenv(EnvWarehouse) == "s3" {
		// Clients get vended credentials (iceberg-go's REST client asks
		// for them), so they need no keys of their own.
		ep := testmoto.Endpoint(t)
		wh = testmoto.Warehouse(t, ep, catalog.DefaultWarehouse, map[string]string{
			storage.PropS3RoleARN: testmoto.RoleARN, storage.PropSTSEndpoint: ep})
	} else {
		var err error
		if wh, err = catalog.NewWarehouse(catalog.DefaultWarehouse, "file://"+filepath.Join(dir, "warehouse"), nil); err != nil {
			t.Fatal(err)
		}
	}
	store, err := bolt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	var s catalog.Store = store
	if wrap != nil {
		s = wrap(store)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// The tunable properties as tarn serve sets them (cmd/tarn).
	cat, err := catalog.New(catalog.Config{Store: s, Warehouses: []*catalog.Warehouse{wh}, Logger: log, ValidateTableProperties: maintenance.ValidateProperties,
		TunablePrefixes: slices.Concat(tabledefaults.TunablePrefixes, maintenance.TunablePrefixes, delta.TunableProperties), Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	return cat, wh, store
}

// StartAt starts a server on dir, which may hold an earlier server's state.
func StartAt(t testing.TB, dir string) *Server {
	t.Helper()
	reg := prometheus.NewRegistry()
	cat, wh, store := NewMeteredCatalog(t, dir, nil, reg)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	hs := httptest.NewServer(server.New(cat, server.Config{Logger: log, Metrics: reg}).Handler())
	t.Cleanup(hs.Close)
	return &Server{URL: hs.URL, DataDir: dir, Warehouse: wh, Catalog: cat, Store: store, Metrics: reg}
}
