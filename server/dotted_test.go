package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/internal/testserver"
	"github.com/tarnhq/tarn/maintenance"
	"github.com/tarnhq/tarn/server"
)

// Regression: the management API named tables by dotted text only, so
// "sales.eu.orders" always meant ["sales", "eu"].orders and the table
// orders of namespace ["sales.eu"] could not be enabled for a topic;
// both tables' maintenance shared one status entry (and lock). A table
// is now also named by the REST spec's TableIdentifier, as a JSON object
// or its text, and printed unambiguously (catalog.FormatIdent).
func TestTopicsDottedNamespaces(t *testing.T) {
	t.Parallel()
	f := newTopicsFixture(t)
	const dotted = `{"namespace":["sales.eu"],"name":"orders"}`
	a := f.status(t, http.MethodPost, "/management/v1/topics", `{"topic":"flights","table":"sales.eu.orders"}`, http.StatusCreated)
	b := f.status(t, http.MethodPost, "/management/v1/topics", `{"topic":"clicks","format":"raw","table":`+dotted+`}`, http.StatusCreated)
	assert.Equal(t, "sales.eu.orders", a.Table)
	assert.Equal(t, dotted, b.Table)

	for _, ns := range [][]string{{"sales", "eu"}, {"sales.eu"}} {
		rsp := f.do(t, http.MethodGet, "/v1/namespaces/"+encodeNamespace(ns)+"/tables/orders", "")
		rsp.Body.Close()
		require.Equal(t, http.StatusOK, rsp.StatusCode, "%q.orders", ns)
	}
	got := map[string]string{}
	for _, st := range f.list(t) {
		got[st.Topic] = st.Table
	}
	assert.Equal(t, map[string]string{"flights": "sales.eu.orders", "clicks": dotted}, got)

	// The text form of the object is taken too, and names the same table
	// (taken by clicks now).
	em := requireErrorModel(t, f.do(t, http.MethodPost, "/management/v1/topics", `{"topic":"other","format":"raw","table":`+mustJSON(t, dotted)+`}`), http.StatusConflict)
	assert.Contains(t, em.Message, "clicks")
	// A malformed identifier is 400.
	requireErrorModel(t, f.do(t, http.MethodPost, "/management/v1/topics", `{"topic":"other","format":"raw","table":{"namespace":"sales","name":"x"}}`), http.StatusBadRequest)
	requireErrorModel(t, f.do(t, http.MethodPost, "/management/v1/topics", `{"topic":"other","format":"raw","table":{"namespace":["sales"],"name":"x","extra":1}}`), http.StatusBadRequest)
}

func TestMaintenanceDottedNamespaces(t *testing.T) {
	t.Parallel()
	cat, wh, _ := testserver.NewCatalog(t, t.TempDir(), nil)
	for _, ns := range []catalog.Namespace{{"sales"}, {"sales", "eu"}, {"sales.eu"}} {
		require.NoError(t, cat.CreateNamespace(t.Context(), ns, nil))
	}
	plain := catalog.Ident{Namespace: catalog.Namespace{"sales", "eu"}, Name: "orders"}
	dotted := catalog.Ident{Namespace: catalog.Namespace{"sales.eu"}, Name: "orders"}
	smallFilesTable(t, cat, wh, plain)
	smallFilesTable(t, cat, wh, dotted)
	base := serveMaintenance(t, cat, true)

	run := func(table string) maintenance.Result {
		t.Helper()
		code, body := call(t, http.MethodPost, base+"/management/v1/maintenance/run", `{"table":`+table+`,"jobs":["compact"]}`)
		require.Equal(t, http.StatusOK, code, "%s", body)
		var out server.RunMaintenanceResponse
		require.NoError(t, json.Unmarshal(body, &out))
		require.Len(t, out.Results, 1)
		return out.Results[0]
	}
	r := run(`{"namespace":["sales.eu"],"name":"orders"}`)
	assert.Equal(t, `{"namespace":["sales.eu"],"name":"orders"}`, r.Table)
	assert.EqualValues(t, 12, r.FilesBefore)
	assert.EqualValues(t, 1, r.FilesAfter)

	code, body := call(t, http.MethodGet, base+"/management/v1/maintenance", "")
	require.Equal(t, http.StatusOK, code)
	var st maintenance.Status
	require.NoError(t, json.Unmarshal(body, &st))
	require.Len(t, st.Tables, 1, "only the table run: %s", body)
	assert.Equal(t, `{"namespace":["sales.eu"],"name":"orders"}`, st.Tables[0].Table)
	assert.EqualValues(t, 1, st.Tables[0].Files)

	// The other one, by its dotted name: untouched until now, then
	// compacted, and listed apart.
	r = run(`"sales.eu.orders"`)
	assert.Equal(t, "sales.eu.orders", r.Table)
	assert.EqualValues(t, 12, r.FilesBefore, "the plain table had not been compacted")
	r = run(mustJSON(t, `{"namespace":["sales.eu"],"name":"orders"}`)) // the object's text, as the CLI sends it
	assert.Equal(t, "nothing to compact", r.Skipped)
	_, body = call(t, http.MethodGet, base+"/management/v1/maintenance", "")
	require.NoError(t, json.Unmarshal(body, &st))
	tables := map[string]int64{}
	for _, ts := range st.Tables {
		tables[ts.Table] = ts.Files
	}
	assert.Equal(t, map[string]int64{"sales.eu.orders": 1, `{"namespace":["sales.eu"],"name":"orders"}`: 1}, tables)
}
