package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/internal/testserver"
	"github.com/tarnhq/tarn/publish"
	"github.com/tarnhq/tarn/server"
)

// fakePublisher answers the management API's publish calls and records
// what it was asked.
type fakePublisher struct {
	calls []string
	err   error
}

func (f *fakePublisher) Status() publish.Status {
	return publish.Status{Targets: []publish.TargetStatus{{Name: "athena", Type: "glue", Drop: "remove",
		Tables: []publish.TableStatus{{Table: "sales.orders", State: publish.StateConflict, Conflict: "changed outside Tarn"}}}}}
}

func (f *fakePublisher) Resume(_ context.Context, target string, id catalog.Ident) (publish.Status, error) {
	f.calls = append(f.calls, fmt.Sprintf("resume %q %q %s", target, []string(id.Namespace), id.Name))
	return f.Status(), f.err
}

func (f *fakePublisher) Sync(_ context.Context, target string, id catalog.Ident) (publish.Status, error) {
	f.calls = append(f.calls, fmt.Sprintf("sync %q %q %s", target, []string(id.Namespace), id.Name))
	return f.Status(), f.err
}

// TestPublishAPI: GET /management/v1/publish answers the status; resume
// and sync decode their body strictly and pass the table and target on;
// the publisher's errors keep their status (404 no such target, 409 a
// conflict); without targets every route is a 503.
func TestPublishAPI(t *testing.T) {
	cat, _, _ := testserver.NewCatalog(t, t.TempDir(), nil)
	fp := &fakePublisher{}
	hs := httptest.NewServer(server.New(cat, server.Config{Publish: fp}).Handler())
	t.Cleanup(hs.Close)
	do := func(method, path, body string) (int, string) {
		req, err := http.NewRequest(method, hs.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := do(http.MethodGet, "/management/v1/publish", "")
	require.Equal(t, http.StatusOK, code, body)
	var st publish.Status
	require.NoError(t, json.Unmarshal([]byte(body), &st))
	require.Equal(t, publish.StateConflict, st.Targets[0].Tables[0].State)

	code, body = do(http.MethodPost, "/management/v1/publish/resume", `{"table":"sales.orders","target":"athena"}`)
	require.Equal(t, http.StatusOK, code, body)
	code, body = do(http.MethodPost, "/management/v1/publish/sync", `{"table":{"namespace":["a.b"],"name":"c"}}`)
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, []string{`resume "athena" ["sales"] orders`, `sync "" ["a.b"] c`}, fp.calls)

	code, body = do(http.MethodPost, "/management/v1/publish/sync", `{"table":"sales.orders","targte":"x"}`)
	require.Equal(t, http.StatusBadRequest, code, body)
	for err, want := range map[error]int{
		fmt.Errorf("%w %q", publish.ErrNoSuchTarget, "x"): http.StatusNotFound,
		fmt.Errorf("%w: edited", publish.ErrConflict):     http.StatusConflict,
		fmt.Errorf("%w: gone", catalog.ErrNoSuchTable):    http.StatusNotFound,
	} {
		fp.err = err
		code, body = do(http.MethodPost, "/management/v1/publish/sync", `{"table":"sales.orders"}`)
		require.Equal(t, want, code, body)
		require.Contains(t, body, `"error"`)
	}

	none := httptest.NewServer(server.New(cat, server.Config{}).Handler())
	t.Cleanup(none.Close)
	resp, err := http.Get(none.URL + "/management/v1/publish")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
}
