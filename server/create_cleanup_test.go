package server_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/spec"
)

// Regression: of 20 concurrent creates of one table, the 19 that lost left
// empty <table>-<uuid>/metadata directories behind in the warehouse.
func TestConcurrentCreatesLeaveNoDirectories(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.namespace(t, "c")
	body := `{"name":"same","schema":{"type":"struct","fields":[{"id":1,"name":"id","required":false,"type":"long"}]}}`
	codes := make([]int, 20)
	var wg sync.WaitGroup
	for i := range codes {
		wg.Go(func() { codes[i] = e.do(t, http.MethodPost, prefixPath("/namespaces/c/tables"), body).Status })
	}
	wg.Wait()
	ok := 0
	for _, c := range codes {
		require.Contains(t, []int{http.StatusOK, http.StatusConflict}, c)
		if c == http.StatusOK {
			ok++
		}
	}
	require.Equal(t, 1, ok)
	entries, err := os.ReadDir(filepath.Join(e.srv.DataDir, "warehouse", "c"))
	require.NoError(t, err)
	require.Len(t, entries, 1, "only the winner's table directory remains")
	require.True(t, strings.HasPrefix(entries[0].Name(), "same-"))
}

// Regression: a create commit (assert-create) without a set-location update
// failed with 400 `location "" must be a URI with a scheme`; it now gets a
// server-assigned location, as createTable would give.
func TestCreateCommitWithoutLocation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.namespace(t, "c")
	body := `{"requirements":[{"type":"assert-create"}],"updates":[
		{"action":"assign-uuid","uuid":"9c12d441-03fe-4693-9a96-a0705ddf69c1"},
		{"action":"upgrade-format-version","format-version":2},
		{"action":"add-schema","schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","required":false,"type":"long"}]},"last-column-id":1},
		{"action":"set-current-schema","schema-id":-1},
		{"action":"add-spec","spec":{"spec-id":0,"fields":[]}},
		{"action":"set-default-spec","spec-id":-1},
		{"action":"add-sort-order","sort-order":{"order-id":0,"fields":[]}},
		{"action":"set-default-sort-order","sort-order-id":-1}]}`
	rsp := e.do(t, http.MethodPost, tablePath([]string{"c"}, "noloc"), body)
	require.Equal(t, http.StatusOK, rsp.Status, "body: %s", rsp.Body)
	res := decodeJSON[spec.CommitTableResponse](t, rsp)
	require.True(t, strings.HasPrefix(res.MetadataLocation, "file://"+filepath.Join(e.srv.DataDir, "warehouse", "c", "noloc-")), res.MetadataLocation)
}
