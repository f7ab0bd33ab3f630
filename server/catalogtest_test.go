package server_test

import (
	"context"
	"testing"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/catalogtest"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/internal/testserver"
)

// newRESTCatalog returns iceberg-go's REST client pointed at srv.
func newRESTCatalog(t *testing.T, srv *testserver.Server) *rest.Catalog {
	t.Helper()
	cat, err := rest.NewCatalog(context.Background(), "tarn", srv.URL)
	require.NoError(t, err)
	return cat
}

// TestIcebergGoCatalogConformance runs iceberg-go's shared catalog suite
// (catalog/catalogtest) through its REST client against Tarn's handler.
func TestIcebergGoCatalogConformance(t *testing.T) {
	t.Parallel()
	catalogtest.RunCatalogTests(t, catalogtest.Config{
		SupportsNamespaceProperties: true,
		NewCatalog: func(t *testing.T) catalog.Catalog {
			return newRESTCatalog(t, testserver.Start(t))
		},
	})
}
