package server_test

import (
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
