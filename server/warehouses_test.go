package server_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/internal/testserver"
	"github.com/tarnhq/tarn/server"
	"github.com/tarnhq/tarn/spec"
)

// Warehouses share one namespace tree; a listing through a warehouse's
// prefix shows only its own tables and views (a trial listed another
// warehouse's table through default, whose load, drop and rename then
// answered 400).
func TestListingsPerWarehouse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, wh, store := testserver.NewCatalog(t, dir, nil)
	other, err := catalog.NewWarehouse("other", (&url.URL{Scheme: "file", Path: filepath.Join(dir, "other")}).String(), nil)
	require.NoError(t, err)
	cat, err := catalog.New(catalog.Config{Store: store, Warehouses: []*catalog.Warehouse{wh, other}})
	require.NoError(t, err)
	hs := httptest.NewServer(server.New(cat, server.Config{}).Handler())
	t.Cleanup(hs.Close)
	call := func(method, path, body string) []byte {
		t.Helper()
		req, err := http.NewRequest(method, hs.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		rsp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer rsp.Body.Close()
		var b json.RawMessage
		_ = json.NewDecoder(rsp.Body).Decode(&b)
		require.Equal(t, http.StatusOK, rsp.StatusCode, "%s %s: %s", method, path, b)
		return b
	}
	call(http.MethodPost, "/v1/default/namespaces", `{"namespace":["ns"]}`)
	schema := `{"type":"struct","fields":[{"id":1,"name":"id","type":"long","required":true}]}`
	call(http.MethodPost, "/v1/default/namespaces/ns/tables", `{"name":"d","schema":`+schema+`}`)
	call(http.MethodPost, "/v1/other/namespaces/ns/tables", `{"name":"o","schema":`+schema+`}`)
	for prefix, want := range map[string]string{"default": "d", "other": "o"} {
		var lt spec.ListTablesResponse
		require.NoError(t, json.Unmarshal(call(http.MethodGet, "/v1/"+prefix+"/namespaces/ns/tables", ""), &lt))
		require.Equal(t, []spec.TableIdentifier{{Namespace: []string{"ns"}, Name: want}}, lt.Identifiers, prefix)
	}
}
