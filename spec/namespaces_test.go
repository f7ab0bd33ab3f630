package spec_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/spec"
)

// TestUpdateNamespacePropertiesResponseJSON: "missing" was tagged
// omitempty, so an answer with nothing missing lacked it and pyiceberg
// 0.12 refused it (the server had to keep its own copy of the type).
// "updated" and "removed" are required by the spec, "missing" is sent
// always.
func TestUpdateNamespacePropertiesResponseJSON(t *testing.T) {
	for name, c := range map[string]struct {
		in   spec.UpdateNamespacePropertiesResponse
		want string
	}{
		"all empty": {spec.UpdateNamespacePropertiesResponse{Updated: []string{}, Removed: []string{}, Missing: []string{}},
			`{"updated":[],"removed":[],"missing":[]}`},
		"partial success": {spec.UpdateNamespacePropertiesResponse{Updated: []string{"owner"}, Removed: []string{"foo"}, Missing: []string{"bar"}},
			`{"updated":["owner"],"removed":["foo"],"missing":["bar"]}`},
		"nothing missing": {spec.UpdateNamespacePropertiesResponse{Updated: []string{"owner"}, Removed: []string{}, Missing: []string{}},
			`{"updated":["owner"],"removed":[],"missing":[]}`},
	} {
		t.Run(name, func(t *testing.T) {
			b, err := json.Marshal(c.in)
			require.NoError(t, err)
			assert.JSONEq(t, c.want, string(b))
			var back spec.UpdateNamespacePropertiesResponse
			require.NoError(t, json.Unmarshal(b, &back))
			assert.Equal(t, c.in, back)
		})
	}
}
