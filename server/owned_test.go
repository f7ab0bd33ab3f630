package server_test

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/spec"
)

// fakeOwners owns tables by identifier, as ingest/topics' Manager does.
type fakeOwners struct {
	mu      sync.Mutex
	owned   map[string]bool // ident string -> enabled
	dropped []string
}

func (o *fakeOwners) Owner(id catalog.Ident) (string, bool, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	enabled, ok := o.owned[id.String()]
	return "orders", enabled, ok
}

func (o *fakeOwners) TableDropped(_ context.Context, id catalog.Ident) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.owned, id.String())
	o.dropped = append(o.dropped, id.String())
	return nil
}

func (o *fakeOwners) set(id string, enabled, owned bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if owned {
		o.owned[id] = enabled
	} else {
		delete(o.owned, id)
	}
}

// TestOwnedTableRefusesExternalWrites: while a topic owns db.t, every
// external write route refuses it (403 ForbiddenException; dropTable 409
// ConflictException while the topic is enabled) and changes nothing; once
// released the same requests succeed. A disabled topic's table may be
// dropped, and the owner is told.
func TestOwnedTableRefusesExternalWrites(t *testing.T) {
	t.Parallel()
	f := newBadInputFixture(t)
	owners := &fakeOwners{owned: map[string]bool{}}
	f.srv.Catalog.SetOwners(owners)
	owners.set("db.t", true, true)

	commit := `{"requirements":[],"updates":[{"action":"set-properties","updates":{"k":"v"}}]}`
	txn := `{"table-changes":[{"identifier":{"namespace":["db"],"name":"t"},"requirements":[],"updates":[{"action":"set-properties","updates":{"k":"v"}}]}]}`
	rename := `{"source":{"namespace":["db"],"name":"t"},"destination":{"namespace":["db"],"name":"t2"}}`
	register := `{"name":"t","metadata-location":"` + f.tableMeta + `","overwrite":true}`

	before := f.state(t)
	refused := []struct {
		name, method, path, body string
		want                     spec.Exception
	}{
		{"commitTable", http.MethodPost, "/v1/namespaces/db/tables/t", commit, spec.Forbidden},
		{"commitTransaction", http.MethodPost, "/v1/transactions/commit", txn, spec.Forbidden},
		{"renameTable", http.MethodPost, "/v1/tables/rename", rename, spec.Forbidden},
		{"registerTable overwrite", http.MethodPost, "/v1/namespaces/db/register", register, spec.Forbidden},
		{"dropTable while enabled", http.MethodDelete, "/v1/namespaces/db/tables/t", "", spec.Conflict},
		{"dropTable purge while enabled", http.MethodDelete, "/v1/namespaces/db/tables/t?purgeRequested=true", "", spec.Conflict},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			em := requireErrorModel(t, f.do(t, tt.method, tt.path, tt.body, nil), tt.want.Status)
			assert.Equal(t, tt.want.Type, em.Type)
			assert.Contains(t, em.Message, "orders")
			assert.Equal(t, before, f.state(t), "a refused request changed the catalog")
		})
	}

	// A multi-table transaction touching the owned table commits nothing,
	// not even its other table's change.
	f.mustDo(t, http.MethodPost, "/v1/namespaces/db/tables", `{"name":"u","schema":`+badInputSchema+`}`, http.StatusOK)
	uBefore := string(f.mustDo(t, http.MethodGet, "/v1/namespaces/db/tables/u", "", http.StatusOK))
	both := `{"table-changes":[{"identifier":{"namespace":["db"],"name":"u"},"requirements":[],"updates":[{"action":"set-properties","updates":{"k":"v"}}]},` +
		`{"identifier":{"namespace":["db"],"name":"t"},"requirements":[],"updates":[{"action":"set-properties","updates":{"k":"v"}}]}]}`
	em := requireErrorModel(t, f.do(t, http.MethodPost, "/v1/transactions/commit", both, nil), http.StatusForbidden)
	assert.Equal(t, spec.Forbidden.Type, em.Type)
	assert.Equal(t, uBefore, string(f.mustDo(t, http.MethodGet, "/v1/namespaces/db/tables/u", "", http.StatusOK)))

	// Reads are not refused.
	f.mustDo(t, http.MethodGet, "/v1/namespaces/db/tables/t", "", http.StatusOK)

	// Disabled (not released): writes still 403, but drop is allowed.
	owners.set("db.t", false, true)
	em = requireErrorModel(t, f.do(t, http.MethodPost, "/v1/namespaces/db/tables/t", commit, nil), http.StatusForbidden)
	assert.Equal(t, spec.Forbidden.Type, em.Type)
	// Released: writable again.
	owners.set("db.t", false, false)
	f.mustDo(t, http.MethodPost, "/v1/namespaces/db/tables/t", commit, http.StatusOK)
	f.mustDo(t, http.MethodPost, "/v1/tables/rename", rename, http.StatusNoContent)

	// Dropping a disabled topic's table works and tells the owner.
	owners.set("db.t2", false, true)
	f.mustDo(t, http.MethodDelete, "/v1/namespaces/db/tables/t2", "", http.StatusNoContent)
	owners.mu.Lock()
	defer owners.mu.Unlock()
	require.Equal(t, []string{"db.t2"}, owners.dropped)
	assert.NotContains(t, owners.owned, "db.t2")
}
