package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/spec"
)

// An owned table's maintenance settings (snapshot retention, manifest
// merging, metadata cleanup, target file size, tarn.maintenance.*) can be
// changed by a REST client; a commit touching anything else, or mixing
// the two, is still 403 and changes nothing.
func TestOwnedTableTunableProperties(t *testing.T) {
	t.Parallel()
	f := newBadInputFixture(t)
	owners := &fakeOwners{owned: map[string]bool{}}
	f.srv.Catalog.SetOwners(owners)
	owners.set("db.t", true, true)

	tune := `{"requirements":[],"updates":[{"action":"set-properties","updates":{"history.expire.max-snapshot-age-ms":"60000","tarn.maintenance.compact.min-input-files":"4"}},` +
		`{"action":"remove-properties","removals":["commit.manifest.min-count-to-merge"]}]}`
	body := string(f.mustDo(t, http.MethodPost, "/v1/namespaces/db/tables/t", tune, http.StatusOK))
	assert.Contains(t, body, `"history.expire.max-snapshot-age-ms":"60000"`)
	assert.Contains(t, body, `"tarn.maintenance.compact.min-input-files":"4"`)

	before := f.state(t)
	for _, c := range []string{
		`{"requirements":[],"updates":[{"action":"set-properties","updates":{"write.format.default":"orc"}}]}`,
		`{"requirements":[],"updates":[{"action":"set-properties","updates":{"history.expire.max-snapshot-age-ms":"1","k":"v"}}]}`,
		`{"requirements":[],"updates":[{"action":"set-properties","updates":{"history.expire.max-snapshot-age-ms":"1"}},{"action":"set-location","location":"/tmp/x"}]}`,
		`{"requirements":[],"updates":[]}`,
	} {
		em := requireErrorModel(t, f.do(t, http.MethodPost, "/v1/namespaces/db/tables/t", c, nil), http.StatusForbidden)
		assert.Equal(t, spec.Forbidden.Type, em.Type, c)
	}
	require.Equal(t, before, f.state(t))
}

// A REST client can switch an owned table's Delta output on and set its
// checkpoint interval (tunable like the maintenance settings), but not
// the Delta location, which Tarn sets: 400 on any table, owned or not.
func TestOwnedTableDeltaProperties(t *testing.T) {
	t.Parallel()
	f := newBadInputFixture(t)
	owners := &fakeOwners{owned: map[string]bool{}}
	f.srv.Catalog.SetOwners(owners)
	owners.set("db.t", true, true)

	on := `{"requirements":[],"updates":[{"action":"set-properties","updates":{"tarn.delta.enabled":"true","tarn.delta.checkpoint-interval":"20"}}]}`
	body := string(f.mustDo(t, http.MethodPost, "/v1/namespaces/db/tables/t", on, http.StatusOK))
	assert.Contains(t, body, `"tarn.delta.enabled":"true"`)
	assert.Contains(t, body, `"tarn.delta.checkpoint-interval":"20"`)

	before := f.state(t)
	for _, c := range []string{
		`{"requirements":[],"updates":[{"action":"set-properties","updates":{"tarn.delta.location":"file:///tmp/elsewhere"}}]}`,
		`{"requirements":[],"updates":[{"action":"remove-properties","removals":["tarn.delta.location"]}]}`,
	} {
		requireErrorModel(t, f.do(t, http.MethodPost, "/v1/namespaces/db/tables/t", c, nil), http.StatusBadRequest)
	}
	require.Equal(t, before, f.state(t))
}
