package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/internal/testserver"
	"github.com/tarnhq/tarn/spec"
)

// TestCrossOriginWritesRefused pins a forgery hole: with --auth none, a
// page on any site the user visited could POST a text/plain body to a
// Tarn on localhost (a "simple" request, no CORS preflight), and the
// body was decoded as JSON whatever its Content-Type: the namespace was
// created, as a commit or a topic enable would have been. Now a
// browser's cross-origin write is a 403 ForbiddenException and changes
// nothing; same-origin browser requests and clients that are not
// browsers (no Sec-Fetch-Site, no Origin) pass.
func TestCrossOriginWritesRefused(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	post := func(name string, headers map[string]string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/namespaces", strings.NewReader(`{"namespace":["`+name+`"]}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "text/plain;charset=UTF-8")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		rsp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { rsp.Body.Close() })
		return rsp
	}
	exists := func(name string) int {
		t.Helper()
		rsp, err := http.Head(srv.URL + "/v1/namespaces/" + name)
		require.NoError(t, err)
		rsp.Body.Close()
		return rsp.StatusCode
	}

	for name, h := range map[string]map[string]string{
		"fetchsite": {"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"},
		"samesite":  {"Sec-Fetch-Site": "same-site", "Origin": "https://other.localhost:8181"},
		"origin":    {"Origin": "https://evil.example"},
	} {
		rsp := post(name, h)
		assert.Equal(t, http.StatusForbidden, rsp.StatusCode, name)
		var em spec.ErrorResponse
		require.NoError(t, json.NewDecoder(rsp.Body).Decode(&em), name)
		assert.Equal(t, "ForbiddenException", em.Error.Type, name)
		assert.Contains(t, em.Error.Message, "cross-origin", name)
		assert.Equal(t, http.StatusNotFound, exists(name), "%s: the forged request created the namespace", name)
	}

	host := strings.TrimPrefix(srv.URL, "http://")
	for name, h := range map[string]map[string]string{
		"client":     nil,
		"sameorigin": {"Sec-Fetch-Site": "same-origin", "Origin": srv.URL},
		"originhost": {"Origin": "http://" + host},
	} {
		rsp := post(name, h)
		assert.Equal(t, http.StatusOK, rsp.StatusCode, name)
		assert.Equal(t, http.StatusNoContent, exists(name), name)
	}
}
