package server

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/catalog/bolt"
)

// noBodyRoutes are the mutating routes that read no JSON body (the token
// endpoint's body is a form, read by token itself).
var noBodyRoutes = []string{
	"POST /management/v1/topics/:topic/resume",
	"POST /management/v1/principals/:principal/rotate-secret",
	"PUT /management/v1/principals/:principal/roles/:role",
	"POST /oauth/tokens",
	// The console's forms (package ui decodes them and sends the
	// management API's JSON requests, which are decoded here).
	"POST /ui/*",
}

// TestEveryBodyRouteIsDecoded keeps requestBodies and the router in step:
// every POST, PUT and PATCH route either has a body decoder (so its body
// is decoded once, strictly, before authorization) or is one of
// noBodyRoutes, and every decoder belongs to a route that exists. A new
// route with a body that is missing here would answer 500 on its first
// request (requestBody finds nothing), never read the body a second way.
func TestEveryBodyRouteIsDecoded(t *testing.T) {
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

	seen := map[string]bool{}
	for _, r := range s.echo.Routes() {
		switch r.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch:
		default:
			continue
		}
		route := r.Path
		if rest, ok := strings.CutPrefix(route, "/v1/:prefix"); ok {
			route = rest
		} else if rest, ok := strings.CutPrefix(route, "/v1"); ok {
			route = rest
		}
		key := r.Method + " " + route
		seen[key] = true
		_, decoded := requestBodies[key]
		assert.True(t, decoded || slices.Contains(noBodyRoutes, key), "%s has no body decoder and is not listed as taking no body", key)
	}
	for key := range requestBodies {
		assert.True(t, seen[key], "decoder for %s, which is not a route", key)
	}
}
