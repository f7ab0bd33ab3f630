package server_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/internal/testserver"
	"github.com/tarnhq/tarn/server"
	"github.com/tarnhq/tarn/spec"
)

// panickingStore panics in ListNamespaces, as a bug in a handler's path
// would (a nil map write, an index out of range).
type panickingStore struct{ catalog.Store }

func (panickingStore) ListNamespaces(context.Context, catalog.Namespace, catalog.Page) ([]catalog.Namespace, string, error) {
	var levels []string
	return []catalog.Namespace{{levels[3]}}, "", nil // index out of range
}

// panicsRecovered scrapes tarn_panics_recovered_total{component} from
// /metrics.
func panicsRecovered(t *testing.T, base, component string) float64 {
	t.Helper()
	rsp, err := http.Get(base + "/metrics")
	require.NoError(t, err)
	defer rsp.Body.Close()
	body, err := io.ReadAll(rsp.Body)
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^tarn_panics_recovered_total\{component="` + component + `"\} (\S+)$`).FindSubmatch(body)
	require.NotNil(t, m, "tarn_panics_recovered_total{component=%q} in /metrics", component)
	v, err := strconv.ParseFloat(string(m[1]), 64)
	require.NoError(t, err)
	return v
}

// Regression: a panic in a handler dropped the connection (net/http
// recovers it, logs "http: panic serving" on its own log and closes the
// connection): the client got no response at all, nothing was counted,
// and the log line had no request id. Now it is a 500 ErrorModel, logged
// with the request id and the stack, and counted.
func TestHandlerPanicIs500(t *testing.T) {
	t.Parallel()
	wh, err := catalog.NewWarehouse(catalog.DefaultWarehouse, "file://"+t.TempDir(), nil)
	require.NoError(t, err)
	cat, err := catalog.New(catalog.Config{Store: panickingStore{}, Warehouses: []*catalog.Warehouse{wh}})
	require.NoError(t, err)
	var logs syncBuffer
	hs := httptest.NewServer(server.New(cat, server.Config{Logger: slog.New(slog.NewJSONHandler(&logs, nil))}).Handler())
	t.Cleanup(hs.Close)

	before := panicsRecovered(t, hs.URL, "http")
	rsp, err := http.Get(hs.URL + "/v1/namespaces")
	require.NoError(t, err, "the connection must not be dropped")
	reqID := rsp.Header.Get("X-Request-Id")
	require.NotEmpty(t, reqID)
	em := requireErrorModel(t, rsp, http.StatusInternalServerError)
	assert.Equal(t, spec.ServerError.Type, em.Type)
	assert.Equal(t, "internal server error (request id "+reqID+")", em.Message, "the panic's text stays in the log")
	require.Equal(t, before+1, panicsRecovered(t, hs.URL, "http"))

	var line map[string]any
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, `"msg":"request failed"`) {
			require.NoError(t, json.Unmarshal([]byte(l), &line))
		}
	}
	require.NotNil(t, line, "logs: %s", logs.String())
	assert.Equal(t, reqID, line["request_id"])
	perr, _ := line["err"].(map[string]any)
	require.NotNil(t, perr, "err is logged as the panic and its stack: %v", line)
	assert.Contains(t, perr["panic"], "index out of range")
	assert.Contains(t, perr["stack"], "recover_test.go")

	rsp, err = http.Get(hs.URL + "/healthz")
	require.NoError(t, err)
	rsp.Body.Close()
	require.Equal(t, http.StatusOK, rsp.StatusCode, "the server serves on")
}

// A 503 the server chose to send ("publishing not configured") was logged
// at ERROR as "request failed" beside real failures; it is INFO, "request
// refused", with the same fields.
func TestRefusalIsLoggedAtInfo(t *testing.T) {
	t.Parallel()
	cat, _, _ := testserver.NewCatalog(t, t.TempDir(), nil)
	var logs syncBuffer
	hs := httptest.NewServer(server.New(cat, server.Config{Logger: slog.New(slog.NewJSONHandler(&logs, nil))}).Handler())
	t.Cleanup(hs.Close)

	rsp, err := http.Get(hs.URL + "/management/v1/publish")
	require.NoError(t, err)
	em := requireErrorModel(t, rsp, http.StatusServiceUnavailable)
	assert.Contains(t, em.Message, "publishing not configured")

	var line map[string]any
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, `"msg":"request failed"`) || strings.Contains(l, `"msg":"request refused"`) {
			require.Nil(t, line, "one line for the refusal: %s", logs.String())
			require.NoError(t, json.Unmarshal([]byte(l), &line))
		}
	}
	require.NotNil(t, line, "logs: %s", logs.String())
	assert.Equal(t, "INFO", line["level"])
	assert.Equal(t, "request refused", line["msg"])
	assert.Equal(t, rsp.Header.Get("X-Request-Id"), line["request_id"])
}
