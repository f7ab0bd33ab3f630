package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/spec"
)

// TestRegisterPlainPathError: Spark's
// CALL system.register_table(table => ..., metadata_file => '/abs/path')
// sends the metadata file as a plain path. Tarn refused it with "is outside
// warehouse" although the file lies inside the warehouse; the real reason is
// that locations must be URIs with a scheme. The error now says so, and the
// same file registers as a file:// URI.
func TestRegisterPlainPathError(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ns := e.namespace(t, "reg")
	tbl := e.createTable(t, ns, "t")
	loc := tbl.MetadataLocation()
	require.True(t, strings.HasPrefix(loc, "file:///"), loc)
	require.NoError(t, e.cat.DropTable(t.Context(), tableIdent(ns, "t")))

	plain := strings.TrimPrefix(loc, "file://")
	rsp := e.do(t, http.MethodPost, prefixPath("/namespaces/reg/register"), spec.RegisterTableRequest{Name: "plain", MetadataLocation: plain})
	em := requireBadRequest(t, rsp)
	assert.Contains(t, em.Message, "must be a URI with a scheme")
	assert.NotContains(t, em.Message, "outside warehouse")

	rsp = e.do(t, http.MethodPost, prefixPath("/namespaces/reg/register"), spec.RegisterTableRequest{Name: "uri", MetadataLocation: loc})
	require.Equal(t, http.StatusOK, rsp.Status, "body: %s", rsp.Body)
}
