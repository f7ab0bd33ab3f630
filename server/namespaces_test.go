package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/spec"
)

// TestUpdateNamespacePropertiesAllFields: the answer of
// POST /namespaces/{ns}/properties always holds "updated", "removed" and
// "missing", empty lists included: pyiceberg 0.12 refuses an answer
// without "missing" (a ValidationError).
func TestUpdateNamespacePropertiesAllFields(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.namespace(t, "props")
	path := prefixPath("/namespaces/props/properties")

	rsp := e.do(t, http.MethodPost, path, spec.UpdateNamespacePropertiesRequest{Updates: map[string]string{"c": "1"}})
	require.Equal(t, http.StatusOK, rsp.Status, "body: %s", rsp.Body)
	assert.JSONEq(t, `{"updated":["c"],"removed":[],"missing":[]}`, string(rsp.Body))

	rsp = e.do(t, http.MethodPost, path, spec.UpdateNamespacePropertiesRequest{Removals: []string{"c", "nope"}})
	require.Equal(t, http.StatusOK, rsp.Status, "body: %s", rsp.Body)
	assert.JSONEq(t, `{"updated":[],"removed":["c"],"missing":["nope"]}`, string(rsp.Body))

	rsp = e.do(t, http.MethodPost, path, spec.UpdateNamespacePropertiesRequest{})
	require.Equal(t, http.StatusOK, rsp.Status, "body: %s", rsp.Body)
	assert.JSONEq(t, `{"updated":[],"removed":[],"missing":[]}`, string(rsp.Body))
}
