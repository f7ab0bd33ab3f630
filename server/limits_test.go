package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/spec"
)

const limitsSchema = `{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","type":"long","required":true}]}`

func limitsView(name string, props string) string {
	return `{"name":"` + name + `","schema":` + limitsSchema + `,"view-version":{"version-id":1,"timestamp-ms":1700000000000,"schema-id":0,"summary":{"engine-name":"spark"},"representations":[{"type":"sql","sql":"SELECT 1","dialect":"spark"}],"default-namespace":["db"]},"properties":` + props + `}`
}

// requireLimitExceeded asserts a 400 BadRequestException whose message
// names the limit.
func requireLimitExceeded(t *testing.T, r rawResponse, limit int) spec.ErrorModel {
	t.Helper()
	require.Equal(t, http.StatusBadRequest, r.Status, "body: %.500s", r.Body)
	em := decodeJSON[spec.ErrorResponse](t, r).Error
	assert.Equal(t, spec.BadRequest.Type, em.Type, "message: %s", em.Message)
	assert.Contains(t, em.Message, fmt.Sprintf("at most %d", limit))
	assert.Less(t, len(em.Message), 1024, "the message does not echo the request back")
	return em
}

// Regression: levels were capped at 1024 bytes but the whole identifier
// was not, and bbolt refuses keys over 32 KiB: under a 32-level
// namespace of 1000-byte levels a create or rename answered 500
// (CommitStateUnknownException, though nothing was committed) and left
// its metadata file in the warehouse, and a 33rd level was 500 too.
// Depth and whole-identifier size are bounded now, 400 before anything
// is written.
func TestIdentifierLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	wh := e.srv.Warehouse.Location

	// Depth: MaxNamespaceDepth levels are fine, one more is refused.
	var ns []string
	for i := range catalog.MaxNamespaceDepth {
		ns = append(ns, fmt.Sprintf("l%d", i))
		rsp := e.do(t, http.MethodPost, prefixPath("/namespaces"), map[string]any{"namespace": ns})
		require.Equal(t, http.StatusOK, rsp.Status, "depth %d: %s", len(ns), rsp.Body)
	}
	deep := append(append([]string{}, ns...), "one-more")
	requireLimitExceeded(t, e.do(t, http.MethodPost, prefixPath("/namespaces"), map[string]any{"namespace": deep}), catalog.MaxNamespaceDepth)
	rsp := e.do(t, http.MethodGet, nsPath(deep), nil)
	require.Equal(t, http.StatusNotFound, rsp.Status)
	rsp = e.do(t, http.MethodPost, prefixPath("/namespaces/%s/tables", encodeNamespace(ns)), `{"name":"t","schema":`+limitsSchema+`}`)
	require.Equal(t, http.StatusOK, rsp.Status, "a table at the deepest level: %s", rsp.Body)

	// Whole size: four 1024-byte levels are fine; a 1024-byte name in
	// them is 5 KiB in all.
	long := func(c string) string { return strings.Repeat(c, catalog.MaxNameBytes) }
	big := []string{long("a"), long("b"), long("c"), long("d")}
	for i := range big {
		rsp := e.do(t, http.MethodPost, prefixPath("/namespaces"), map[string]any{"namespace": big[:i+1]})
		require.Equal(t, http.StatusOK, rsp.Status, "%s", rsp.Body)
	}
	requireLimitExceeded(t, e.do(t, http.MethodPost, prefixPath("/namespaces/%s/tables", encodeNamespace(big)), `{"name":"`+long("t")+`","schema":`+limitsSchema+`}`), catalog.MaxIdentBytes)

	// What the trial did: a 32-level namespace of 1000-byte levels (one
	// a catalog may hold from before the limits, put in the store
	// directly). Nothing may be created in it, by any route, and
	// nothing is written; reading and dropping it still work.
	var legacy []string
	for i := range 32 {
		legacy = append(legacy, fmt.Sprintf("L%02d", i)+strings.Repeat("x", 997))
		require.NoError(t, e.srv.Store.CreateNamespace(t.Context(), catalog.Namespace(legacy), map[string]string{}))
	}
	before := filesUnder(t, wh)
	rsp = e.do(t, http.MethodPost, prefixPath("/namespaces"), map[string]any{"namespace": []string{"src"}})
	require.Equal(t, http.StatusOK, rsp.Status)
	rsp = e.do(t, http.MethodPost, prefixPath("/namespaces/src/tables"), `{"name":"t","schema":`+limitsSchema+`}`)
	require.Equal(t, http.StatusOK, rsp.Status)
	rsp = e.do(t, http.MethodPost, prefixPath("/namespaces/src/views"), limitsView("v", "{}"))
	require.Equal(t, http.StatusOK, rsp.Status, "%s", rsp.Body)
	before = filesUnder(t, wh)
	lp := prefixPath("/namespaces/%s", encodeNamespace(legacy))
	for _, tc := range []struct{ name, path, body string }{
		{"namespace", prefixPath("/namespaces"), mustJSON(t, map[string]any{"namespace": append(append([]string{}, legacy...), "x")})},
		{"table", lp + "/tables", `{"name":"t","schema":` + limitsSchema + `}`},
		{"staged table", lp + "/tables", `{"name":"t","schema":` + limitsSchema + `,"stage-create":true}`},
		{"create commit", lp + "/tables/t", `{"requirements":[{"type":"assert-create"}],"updates":[{"action":"add-schema","schema":` + limitsSchema + `},{"action":"set-current-schema","schema-id":-1}]}`},
		{"view", lp + "/views", limitsView("v", "{}")},
		{"table rename", prefixPath("/tables/rename"), mustJSON(t, map[string]any{"source": map[string]any{"namespace": []string{"src"}, "name": "t"}, "destination": map[string]any{"namespace": legacy, "name": "t"}})},
		{"view rename", prefixPath("/views/rename"), mustJSON(t, map[string]any{"source": map[string]any{"namespace": []string{"src"}, "name": "v"}, "destination": map[string]any{"namespace": legacy, "name": "v"}})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rsp := e.do(t, http.MethodPost, tc.path, tc.body)
			require.Equal(t, http.StatusBadRequest, rsp.Status, "body: %.300s", rsp.Body)
			em := decodeJSON[spec.ErrorResponse](t, rsp).Error
			assert.Equal(t, spec.BadRequest.Type, em.Type, "message: %.300s", em.Message)
			require.ElementsMatch(t, before, filesUnder(t, wh), "nothing written")
		})
	}
	rsp = e.do(t, http.MethodGet, tablePath([]string{"src"}, "t"), nil)
	require.Equal(t, http.StatusOK, rsp.Status, "the rename's source is unchanged")
	rsp = e.do(t, http.MethodGet, lp, nil)
	require.Equal(t, http.StatusOK, rsp.Status, "an existing deep namespace still loads")
	rsp = e.do(t, http.MethodDelete, lp, nil)
	require.Equal(t, http.StatusNoContent, rsp.Status, "and drops: %s", rsp.Body)

	// A location is bounded too (it is part of a store key): a 40 KB
	// one was a 500 (the key, or the file system's name limit).
	loc := wh + "/src" + strings.Repeat("/"+strings.Repeat("x", 200), 200)
	requireLimitExceeded(t, e.do(t, http.MethodPost, prefixPath("/namespaces/src/tables"), `{"name":"far","schema":`+limitsSchema+`,"location":"`+loc+`"}`), catalog.MaxLocationBytes)
	require.ElementsMatch(t, before, filesUnder(t, wh), "nothing written")
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// Regression: property sizes were unbounded: a 50 MB namespace or table
// property was accepted (four concurrent creates pushed RSS to 1.9 GB
// and grew the bbolt file by 400 MB for good). Count, key, value and
// total sizes are bounded now for namespaces, tables (also through
// commits) and views; 400 and nothing changed beyond them.
func TestPropertyLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	wh := e.srv.Warehouse.Location
	bigValue := strings.Repeat("v", catalog.MaxPropertyValueBytes+1)
	bigKey := strings.Repeat("k", catalog.MaxPropertyKeyBytes+1)
	many := map[string]string{}
	for i := range catalog.MaxProperties + 1 {
		many[fmt.Sprintf("p%05d", i)] = "x"
	}
	heavy := map[string]string{"a": strings.Repeat("a", catalog.MaxPropertyValueBytes), "b": strings.Repeat("b", catalog.MaxPropertyValueBytes)}
	cases := []struct {
		name  string
		props map[string]string
		limit int
	}{
		{"value", map[string]string{"comment": bigValue}, catalog.MaxPropertyValueBytes},
		{"key", map[string]string{bigKey: "x"}, catalog.MaxPropertyKeyBytes},
		{"count", many, catalog.MaxProperties},
		{"total", heavy, catalog.MaxPropertiesBytes},
	}
	rsp := e.do(t, http.MethodPost, prefixPath("/namespaces"), map[string]any{"namespace": []string{"db"}})
	require.Equal(t, http.StatusOK, rsp.Status)
	rsp = e.do(t, http.MethodPost, prefixPath("/namespaces/db/tables"), `{"name":"t","schema":`+limitsSchema+`}`)
	require.Equal(t, http.StatusOK, rsp.Status)
	rsp = e.do(t, http.MethodPost, prefixPath("/namespaces/db/views"), limitsView("v", "{}"))
	require.Equal(t, http.StatusOK, rsp.Status)
	tableLoc, _ := e.loadRaw(t, []string{"db"}, "t")
	viewBefore := e.do(t, http.MethodGet, viewPath([]string{"db"}, "v"), nil).Body
	files := filesUnder(t, wh)

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			props := mustJSON(t, tc.props)
			requireLimitExceeded(t, e.do(t, http.MethodPost, prefixPath("/namespaces"), `{"namespace":["n`+tc.name+`"],"properties":`+props+`}`), tc.limit)
			require.Equal(t, http.StatusNotFound, e.do(t, http.MethodGet, nsPath([]string{"n" + tc.name}), nil).Status)
			requireLimitExceeded(t, e.do(t, http.MethodPost, nsPath([]string{"db"})+"/properties", `{"removals":[],"updates":`+props+`}`), tc.limit)
			requireLimitExceeded(t, e.do(t, http.MethodPost, prefixPath("/namespaces/db/tables"), `{"name":"t`+tc.name+`","schema":`+limitsSchema+`,"properties":`+props+`}`), tc.limit)
			requireLimitExceeded(t, e.do(t, http.MethodPost, tablePath([]string{"db"}, "t"), `{"requirements":[],"updates":[{"action":"set-properties","updates":`+props+`}]}`), tc.limit)
			requireLimitExceeded(t, e.do(t, http.MethodPost, prefixPath("/namespaces/db/views"), limitsView("v"+tc.name, props)), tc.limit)
			requireLimitExceeded(t, e.do(t, http.MethodPost, viewPath([]string{"db"}, "v"), `{"requirements":[],"updates":[{"action":"set-properties","updates":`+props+`}]}`), tc.limit)

			ns := decodeJSON[map[string]any](t, e.do(t, http.MethodGet, nsPath([]string{"db"}), nil))
			require.Equal(t, map[string]any{}, ns["properties"])
			loc, _ := e.loadRaw(t, []string{"db"}, "t")
			require.Equal(t, tableLoc, loc, "no commit")
			require.JSONEq(t, string(viewBefore), string(e.do(t, http.MethodGet, viewPath([]string{"db"}, "v"), nil).Body))
			require.ElementsMatch(t, files, filesUnder(t, wh), "nothing written")
		})
	}

	// At the limits: a value of MaxPropertyValueBytes is accepted.
	rsp = e.do(t, http.MethodPost, tablePath([]string{"db"}, "t"), mustJSON(t, map[string]any{"requirements": []any{},
		"updates": []any{map[string]any{"action": "set-properties", "updates": map[string]string{"comment": heavy["a"]}}}}))
	require.Equal(t, http.StatusOK, rsp.Status, "%.300s", rsp.Body)

	// A namespace's updates are checked with what it holds: two updates
	// each within the limits, past them together.
	rsp = e.do(t, http.MethodPost, nsPath([]string{"db"})+"/properties", mustJSON(t, map[string]any{"updates": map[string]string{"a": heavy["a"]}}))
	require.Equal(t, http.StatusOK, rsp.Status, "%.300s", rsp.Body)
	requireLimitExceeded(t, e.do(t, http.MethodPost, nsPath([]string{"db"})+"/properties", mustJSON(t, map[string]any{"updates": map[string]string{"b": heavy["b"]}})), catalog.MaxPropertiesBytes)
}

// A table already past a limit (registered from a metadata file another
// catalog wrote) stays committable: only what a commit adds or grows is
// checked.
func TestPropertyLimitsExistingTable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rsp := e.do(t, http.MethodPost, prefixPath("/namespaces"), map[string]any{"namespace": []string{"db"}})
	require.Equal(t, http.StatusOK, rsp.Status)
	rsp = e.do(t, http.MethodPost, prefixPath("/namespaces/db/tables"), `{"name":"t","schema":`+limitsSchema+`}`)
	require.Equal(t, http.StatusOK, rsp.Status)
	res := decodeJSON[spec.LoadTableResult](t, rsp)
	var md map[string]any
	require.NoError(t, json.Unmarshal(res.Metadata, &md))
	props := map[string]string{}
	for i := range catalog.MaxProperties + 10 {
		props[fmt.Sprintf("p%05d", i)] = "x"
	}
	md["properties"] = props
	md["location"] = e.srv.Warehouse.Location + "/db/imported"
	b, err := json.Marshal(md)
	require.NoError(t, err)
	dir := filepath.Join(strings.TrimPrefix(e.srv.Warehouse.Location, "file://"), "db", "imported", "metadata")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "00000-imported.metadata.json"), b, 0o644))
	rsp = e.do(t, http.MethodPost, prefixPath("/namespaces/db/register"), map[string]string{"name": "imported", "metadata-location": "file://" + filepath.Join(dir, "00000-imported.metadata.json")})
	require.Equal(t, http.StatusOK, rsp.Status, "%.300s", rsp.Body)

	path := tablePath([]string{"db"}, "imported")
	rsp = e.do(t, http.MethodPost, path, `{"requirements":[],"updates":[{"action":"set-properties","updates":{"p00001":"changed"}}]}`)
	require.Equal(t, http.StatusOK, rsp.Status, "changing a property: %.300s", rsp.Body)
	rsp = e.do(t, http.MethodPost, path, `{"requirements":[],"updates":[{"action":"remove-properties","removals":["p00002"]}]}`)
	require.Equal(t, http.StatusOK, rsp.Status, "removing one: %.300s", rsp.Body)
	requireLimitExceeded(t, e.do(t, http.MethodPost, path, `{"requirements":[],"updates":[{"action":"set-properties","updates":{"new-1":"x","new-2":"x"}}]}`), catalog.MaxProperties)
}

// Regression: a body over the server's limit was answered 400 with echo's
// internal text ("code=413, message=Request Entity Too Large"), and one
// sent without Content-Length with the JSON decoder's. Both are 413
// RequestTooLargeException with one message now.
func TestRequestBodyLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const limit = 64 << 20
	body := `{"namespace":["big"],"properties":{"k":"` + strings.Repeat("a", limit) + `"}}`
	for _, tc := range []struct {
		name string
		body io.Reader
	}{
		{"with Content-Length", strings.NewReader(body)},
		{"chunked", struct{ io.Reader }{strings.NewReader(body)}}, // no Len: sent without Content-Length
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, e.srv.URL+prefixPath("/namespaces"), tc.body)
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			rsp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			em := requireErrorModel(t, rsp, http.StatusRequestEntityTooLarge)
			assert.Equal(t, spec.RequestTooLarge.Type, em.Type)
			assert.Equal(t, "request body is larger than the server's limit of 64 MiB", em.Message)
			require.Equal(t, http.StatusNotFound, e.do(t, http.MethodGet, nsPath([]string{"big"}), nil).Status)
		})
	}
}
