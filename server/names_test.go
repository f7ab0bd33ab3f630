package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/spec"
)

// Regression: a 230-character table name (or 240 emoji, each a '_' in the
// directory name) made a directory name longer than the file system's 255
// bytes, and create failed with 500. Directory names are now truncated
// (the uuid suffix keeps them unique) and names over MaxNameBytes are 400.
func TestLongNames(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.namespace(t, strings.Repeat("n", 300))
	schema := `{"type":"struct","fields":[{"id":1,"name":"id","required":false,"type":"long"}]}`
	for _, name := range []string{strings.Repeat("x", 230), strings.Repeat("😀", 240), strings.Repeat("y", 1024)} {
		rsp := e.do(t, http.MethodPost, prefixPath("/namespaces/%s/tables", encodeNamespace(ns)), `{"name":"`+name+`","schema":`+schema+`}`)
		require.Equal(t, http.StatusOK, rsp.Status, "body: %s", rsp.Body)
		res := decodeJSON[spec.LoadTableResult](t, rsp)
		u, err := url.Parse(*res.MetadataLocation)
		require.NoError(t, err)
		for _, seg := range strings.Split(u.Path, "/") {
			require.LessOrEqual(t, len(seg), 255, "segment %q", seg)
		}
		require.Equal(t, "metadata", path.Base(path.Dir(u.Path)))
		rsp = e.do(t, http.MethodGet, tablePath(ns, name), nil)
		require.Equal(t, http.StatusOK, rsp.Status)
	}
	tooLong := strings.Repeat("z", 1025)
	rsp := e.do(t, http.MethodPost, prefixPath("/namespaces/%s/tables", encodeNamespace(ns)), `{"name":"`+tooLong+`","schema":`+schema+`}`)
	em := requireBadRequest(t, rsp)
	require.Contains(t, em.Message, "at most 1024")
	rsp = e.do(t, http.MethodPost, prefixPath("/namespaces"), `{"namespace":["`+tooLong+`"]}`)
	requireBadRequest(t, rsp)
}

// Regression: locations refused invisible and bidirectional-control
// characters, names did not: "a\u200bb" (a zero-width space) made a
// namespace, table or view that lists as "ab" beside a real "ab", and
// U+202E shows a name reversed. Names follow the locations' rule now
// (400); visible non-ASCII names and ASCII spaces stay allowed.
func TestHiddenCharactersInNames(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	schema := `{"type":"struct","fields":[{"id":1,"name":"id","required":false,"type":"long"}]}`
	view := func(name string) string {
		return mustJSON(t, map[string]any{"name": name, "schema": json.RawMessage(schema),
			"view-version": json.RawMessage(`{"version-id":1,"timestamp-ms":1700000000000,"schema-id":0,"summary":{},"representations":[{"type":"sql","sql":"SELECT 1","dialect":"spark"}],"default-namespace":["ok"]}`)})
	}
	rsp := e.do(t, http.MethodPost, prefixPath("/namespaces"), `{"namespace":["ok"]}`)
	require.Equal(t, http.StatusOK, rsp.Status)
	rsp = e.do(t, http.MethodPost, prefixPath("/namespaces/ok/tables"), `{"name":"src","schema":`+schema+`}`)
	require.Equal(t, http.StatusOK, rsp.Status)
	for _, name := range []string{"a\u200bb", "\u202eabc", "ab\u2066", "a\u200db", "a\u00a0b", "\ufeffab", "a\u2028b", "a\U000E0041b"} {
		t.Run(fmt.Sprintf("%+q", name), func(t *testing.T) {
			em := requireBadRequest(t, e.do(t, http.MethodPost, prefixPath("/namespaces"), mustJSON(t, map[string]any{"namespace": []string{name}})))
			require.Contains(t, em.Message, "may not contain")
			requireBadRequest(t, e.do(t, http.MethodPost, prefixPath("/namespaces"), mustJSON(t, map[string]any{"namespace": []string{"ok", name}})))
			requireBadRequest(t, e.do(t, http.MethodPost, prefixPath("/namespaces/ok/tables"), mustJSON(t, map[string]any{"name": name, "schema": json.RawMessage(schema)})))
			requireBadRequest(t, e.do(t, http.MethodPost, prefixPath("/namespaces/ok/views"), view(name)))
			requireBadRequest(t, e.do(t, http.MethodPost, prefixPath("/tables/rename"), mustJSON(t, map[string]any{
				"source": map[string]any{"namespace": []string{"ok"}, "name": "src"}, "destination": map[string]any{"namespace": []string{"ok"}, "name": name}})))
		})
	}
	rsp = e.do(t, http.MethodGet, prefixPath("/namespaces"), nil)
	require.JSONEq(t, `{"namespaces":[["ok"]]}`, string(rsp.Body))
	rsp = e.do(t, http.MethodGet, tablePath([]string{"ok"}, "src"), nil)
	require.Equal(t, http.StatusOK, rsp.Status, "the rename's source is unchanged")

	for _, name := range []string{"a b", "données", "数据", "😀", "a-b.c_d"} {
		rsp := e.do(t, http.MethodPost, prefixPath("/namespaces"), mustJSON(t, map[string]any{"namespace": []string{name}}))
		require.Equal(t, http.StatusOK, rsp.Status, "%q: %s", name, rsp.Body)
		rsp = e.do(t, http.MethodPost, prefixPath("/namespaces/%s/tables", encodeNamespace([]string{name})), mustJSON(t, map[string]any{"name": name, "schema": json.RawMessage(schema)}))
		require.Equal(t, http.StatusOK, rsp.Status, "%q: %s", name, rsp.Body)
	}
}
