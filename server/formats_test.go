package server_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/delta"
	"github.com/tarnhq/tarn/internal/testserver"
	"github.com/tarnhq/tarn/server"
	"github.com/tarnhq/tarn/spec"
)

// TestTableFormats: GET /management/v1/tables/{table}/formats shows the
// Iceberg head and the Delta log (location, version, the snapshot it
// reflects); a missing table is a 404 and a malformed name a 400, both
// in the spec's ErrorModel; a server without a publisher answers 503.
func TestTableFormats(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cat, wh, _ := testserver.NewCatalog(t, t.TempDir(), nil)
	require.NoError(t, cat.CreateNamespace(ctx, catalog.Namespace{"air"}, nil))
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "distance", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	_, err := cat.CreateTable(ctx, wh, catalog.Namespace{"air"}, spec.CreateTableRequest{Name: "flights", Schema: sc,
		Properties: map[string]string{delta.PropEnabled: "true"}})
	require.NoError(t, err)
	pub, err := delta.New(delta.Config{}, delta.Deps{Tables: delta.CatalogTables(cat)})
	require.NoError(t, err)
	id := catalog.Ident{Namespace: catalog.Namespace{"air"}, Name: "flights"}
	_, err = pub.Publish(ctx, id)
	require.NoError(t, err)

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	hs := httptest.NewServer(server.New(cat, server.Config{Logger: log, Formats: pub}).Handler())
	t.Cleanup(hs.Close)
	get := func(url string) (int, []byte) {
		resp, err := http.Get(url)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, b
	}

	code, b := get(hs.URL + "/management/v1/tables/air.flights/formats")
	require.Equal(t, http.StatusOK, code, "%s", b)
	var f delta.Formats
	require.NoError(t, json.Unmarshal(b, &f))
	require.Equal(t, "air.flights", f.Table)
	require.True(t, f.Delta.Enabled)
	require.NotNil(t, f.Delta.Version)
	require.EqualValues(t, 0, *f.Delta.Version)
	require.True(t, strings.HasSuffix(f.Delta.Location, "/data"), f.Delta.Location)
	require.Nil(t, f.Iceberg.SnapshotID, "an empty table has no snapshot")
	require.Nil(t, f.Delta.SnapshotID)

	for path, want := range map[string]int{"air.nope": http.StatusNotFound, "nonamespace": http.StatusBadRequest} {
		code, b = get(hs.URL + "/management/v1/tables/" + path + "/formats")
		require.Equal(t, want, code, "%s: %s", path, b)
		var em struct {
			Error struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal(b, &em), "%s", b)
		require.Equal(t, want, em.Error.Code)
	}

	// A level holding a dot: the table is named by its TableIdentifier
	// JSON, percent-encoded in the path. (It was read unescaped, so no
	// such table could be asked for: 400 or 404.)
	require.NoError(t, cat.CreateNamespace(ctx, catalog.Namespace{"air.eu"}, nil))
	_, err = cat.CreateTable(ctx, wh, catalog.Namespace{"air.eu"}, spec.CreateTableRequest{Name: "flights", Schema: sc})
	require.NoError(t, err)
	code, b = get(hs.URL + "/management/v1/tables/" + url.QueryEscape(`{"namespace":["air.eu"],"name":"flights"}`) + "/formats")
	require.Equal(t, http.StatusOK, code, "%s", b)
	require.NoError(t, json.Unmarshal(b, &f))
	require.False(t, f.Delta.Enabled)

	bare := httptest.NewServer(server.New(cat, server.Config{Logger: log}).Handler())
	t.Cleanup(bare.Close)
	code, b = get(bare.URL + "/management/v1/tables/air.flights/formats")
	require.Equal(t, http.StatusServiceUnavailable, code, "%s", b)
}
