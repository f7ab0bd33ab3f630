package server

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/catalog/bolt"
)

// TestConfigEndpointsMatchRoutes keeps /v1/config's `endpoints` equal to
// the REST routes registered under /v1/:prefix, in the spec's notation.
func TestConfigEndpointsMatchRoutes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store, err := bolt.Open(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	wh, err := catalog.NewWarehouse(catalog.DefaultWarehouse, "file://"+dir+"/wh", nil)
	require.NoError(t, err)
	cat, err := catalog.New(catalog.Config{Store: store, Warehouses: []*catalog.Warehouse{wh}})
	require.NoError(t, err)
	s := New(cat, Config{})

	var served []string
	for _, r := range s.echo.Routes() {
		if !strings.HasPrefix(r.Path, "/v1/:prefix/") {
			continue
		}
		p := strings.TrimPrefix(r.Path, "/v1/:prefix")
		for _, param := range []string{"namespace", "table", "view"} {
			p = strings.ReplaceAll(p, ":"+param, "{"+param+"}")
		}
		served = append(served, r.Method+" /v1/{prefix}"+p)
	}
	slices.Sort(served)
	advertised := slices.Clone(endpoints)
	slices.Sort(advertised)
	require.Equal(t, advertised, served)
}
