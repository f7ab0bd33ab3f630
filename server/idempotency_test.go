package server_test

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/server"
	"github.com/tarnhq/tarn/spec"
)

// TestIdempotencyKey checks the spec's Idempotency-Key: the first final
// response of a mutating request is replayed for the same key, whatever
// the state has become since; a key reused elsewhere is refused.
func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const header = "Idempotency-Key"
	createNS := func(t *testing.T, name string, key ...string) rawResponse {
		var h []string
		if len(key) > 0 {
			h = []string{header, key[0]}
		}
		return e.do(t, http.MethodPost, prefixPath("/namespaces"), spec.CreateNamespaceRequest{Namespace: []string{name}, Properties: map[string]string{"k": "v"}}, h...)
	}

	t.Run("config advertises the key lifetime", func(t *testing.T) {
		r := e.do(t, http.MethodGet, "/v1/config", nil)
		require.Equal(t, http.StatusOK, r.Status)
		cfg := decodeJSON[spec.CatalogConfig](t, r)
		assert.Equal(t, "PT30M", cfg.IdempotencyKeyLifetime)
	})

	t.Run("createNamespace replay returns the first response", func(t *testing.T) {
		key := uuid.NewString()
		first := createNS(t, "idem_ns", key)
		require.Equal(t, http.StatusOK, first.Status, "body: %s", first.Body)
		for i := range 2 {
			again := createNS(t, "idem_ns", key)
			assert.Equal(t, http.StatusOK, again.Status, "replay %d", i)
			assert.Equal(t, first.Body, again.Body, "replay %d", i)
			assert.Equal(t, first.Header.Get("Content-Type"), again.Header.Get("Content-Type"))
		}
		// With a fresh key the duplicate is a real second create.
		requireError(t, createNS(t, "idem_ns", uuid.NewString()), http.StatusConflict, "AlreadyExistsException")
	})

	t.Run("without a key a duplicate create conflicts", func(t *testing.T) {
		require.Equal(t, http.StatusOK, createNS(t, "nokey").Status)
		requireError(t, createNS(t, "nokey"), http.StatusConflict, "AlreadyExistsException")
	})

	ns := e.namespace(t, "idem")
	t.Run("createTable replay returns the same metadata-location", func(t *testing.T) {
		key := uuid.NewString()
		body := spec.CreateTableRequest{Name: "t", Schema: idDataSchema()}
		first := e.do(t, http.MethodPost, prefixPath("/namespaces/idem/tables"), body, header, key)
		require.Equal(t, http.StatusOK, first.Status, "body: %s", first.Body)
		again := e.do(t, http.MethodPost, prefixPath("/namespaces/idem/tables"), body, header, key)
		require.Equal(t, http.StatusOK, again.Status, "body: %s", again.Body)
		assert.Equal(t, first.Body, again.Body)

		loc := decodeJSON[spec.LoadTableResult](t, first).MetadataLocation
		require.NotNil(t, loc)
		assert.Equal(t, loc, decodeJSON[spec.LoadTableResult](t, again).MetadataLocation)
		current, md := e.loadRaw(t, ns, "t")
		assert.Equal(t, *loc, current)
		assert.Len(t, metadataFiles(t, md.Location()), 1, "the replay wrote no metadata")
	})

	t.Run("commit replay makes no second metadata version", func(t *testing.T) {
		key := uuid.NewString()
		tbl := e.load(t, tableIdent(ns, "t"))
		body := commitBody(t, ns, "t", nil, []table.Update{table.NewSetPropertiesUpdate(iceberg.Properties{"n": "1"})})
		first := e.do(t, http.MethodPost, tablePath(ns, "t"), body, header, key)
		require.Equal(t, http.StatusOK, first.Status, "body: %s", first.Body)
		again := e.do(t, http.MethodPost, tablePath(ns, "t"), body, header, key)
		require.Equal(t, http.StatusOK, again.Status, "body: %s", again.Body)
		assert.Equal(t, first.Body, again.Body)

		loc, md := e.loadRaw(t, ns, "t")
		assert.Equal(t, decodeJSON[spec.CommitTableResponse](t, first).MetadataLocation, loc)
		assert.Len(t, metadataFiles(t, tbl.Location()), 2, "create and one commit")
		prev := slices.Collect(md.PreviousFiles())
		require.Len(t, prev, 1)
		assert.Equal(t, tbl.MetadataLocation(), prev[0].MetadataFile)
	})

	t.Run("transaction replay applies once", func(t *testing.T) {
		key := uuid.NewString()
		before := e.load(t, tableIdent(ns, "t"))
		files := metadataFiles(t, before.Location())
		body := map[string]any{"table-changes": []any{
			tableChange(t, ns, "t", []table.Requirement{table.AssertTableUUID(before.Metadata().TableUUID())}, table.NewSetPropertiesUpdate(iceberg.Properties{"n": "2"})),
		}}
		for i := range 2 {
			r := e.do(t, http.MethodPost, prefixPath("/transactions/commit"), body, header, key)
			require.Equal(t, http.StatusNoContent, r.Status, "request %d: %s", i, r.Body)
		}
		assert.Len(t, metadataFiles(t, before.Location()), len(files)+1)
		assert.Equal(t, "2", e.load(t, tableIdent(ns, "t")).Properties()["n"])
	})

	t.Run("a 409 is replayed as 409", func(t *testing.T) {
		require.Equal(t, http.StatusOK, createNS(t, "taken").Status)
		key := uuid.NewString()
		first := requireError(t, createNS(t, "taken", key), http.StatusConflict, "AlreadyExistsException")
		// The conflict is gone, but the key still answers with it.
		require.NoError(t, e.cat.DropNamespace(t.Context(), []string{"taken"}))
		again := createNS(t, "taken", key)
		assert.Equal(t, first, requireError(t, again, http.StatusConflict, "AlreadyExistsException"))
		ok, err := e.cat.CheckNamespaceExists(t.Context(), []string{"taken"})
		require.NoError(t, err)
		assert.False(t, ok, "the replay did not create the namespace")
	})

	t.Run("a drop replay returns 204, not 404", func(t *testing.T) {
		require.Equal(t, http.StatusOK, createNS(t, "dropped").Status)
		key := uuid.NewString()
		for i := range 2 {
			r := e.do(t, http.MethodDelete, nsPath([]string{"dropped"}), nil, header, key)
			assert.Equal(t, http.StatusNoContent, r.Status, "request %d: %s", i, r.Body)
		}
	})

	t.Run("the same key on another route", func(t *testing.T) {
		key := uuid.NewString()
		require.Equal(t, http.StatusOK, createNS(t, "route1", key).Status)
		r := e.do(t, http.MethodPost, prefixPath("/namespaces/idem/tables"), spec.CreateTableRequest{Name: "u", Schema: idDataSchema()}, header, key)
		requireError(t, r, http.StatusUnprocessableEntity, "UnprocessableEntityException")
		ok, err := e.cat.CheckTableExists(t.Context(), tableIdent(ns, "u"))
		require.NoError(t, err)
		assert.False(t, ok, "the refused request did not run")
	})

	t.Run("the same key on another table", func(t *testing.T) {
		e.createTable(t, ns, "other")
		key := uuid.NewString()
		body := commitBody(t, ns, "t", nil, []table.Update{table.NewSetPropertiesUpdate(iceberg.Properties{"n": "3"})})
		require.Equal(t, http.StatusOK, e.do(t, http.MethodPost, tablePath(ns, "t"), body, header, key).Status)
		before, _ := e.loadRaw(t, ns, "other")
		r := e.do(t, http.MethodPost, tablePath(ns, "other"), commitBody(t, ns, "other", nil, []table.Update{table.NewSetPropertiesUpdate(iceberg.Properties{"n": "3"})}), header, key)
		requireError(t, r, http.StatusUnprocessableEntity, "UnprocessableEntityException")
		after, _ := e.loadRaw(t, ns, "other")
		assert.Equal(t, before, after)
	})

	// Regression (issue 13 item 3): the fingerprint was only method and
	// path, so the same key with another body replayed the first answer
	// (200) and the client believed a change that never happened.
	t.Run("the same key with another body", func(t *testing.T) {
		key := uuid.NewString()
		require.Equal(t, http.StatusOK, createNS(t, "body1", key).Status)
		body2 := spec.CreateNamespaceRequest{Namespace: []string{"body2"}, Properties: map[string]string{"k": "v"}}
		r := e.do(t, http.MethodPost, prefixPath("/namespaces"), body2, header, key)
		em := requireError(t, r, http.StatusUnprocessableEntity, "UnprocessableEntityException")
		assert.NotContains(t, string(r.Body), "body1", "nothing of the stored response")
		assert.Contains(t, em.Message, key)
		ok, err := e.cat.CheckNamespaceExists(t.Context(), []string{"body2"})
		require.NoError(t, err)
		assert.False(t, ok, "the refused request did not run")
		// The same request in another JSON spelling is the same request.
		again := e.do(t, http.MethodPost, prefixPath("/namespaces"), "{ \"properties\" : {\"k\":\"v\"},\n \"namespace\":[\"body1\"] }", header, key)
		assert.Equal(t, http.StatusOK, again.Status, "body: %s", again.Body)
	})

	t.Run("the same key with another query", func(t *testing.T) {
		e.createTable(t, ns, "q")
		key := uuid.NewString()
		r := e.do(t, http.MethodDelete, tablePath(ns, "q")+"?purgeRequested=false", nil, header, key)
		require.Equal(t, http.StatusNoContent, r.Status, "body: %s", r.Body)
		r = e.do(t, http.MethodDelete, tablePath(ns, "q")+"?purgeRequested=true", nil, header, key)
		requireError(t, r, http.StatusUnprocessableEntity, "UnprocessableEntityException")
	})

	t.Run("keys compare as UUIDs", func(t *testing.T) {
		key := uuid.NewString()
		first := createNS(t, "upper", key)
		require.Equal(t, http.StatusOK, first.Status, "body: %s", first.Body)
		mixed := strings.ToUpper(key[:18]) + key[18:]
		for _, k := range []string{strings.ToUpper(key), mixed} {
			again := createNS(t, "upper", k)
			assert.Equal(t, http.StatusOK, again.Status, "%s: %s", k, again.Body)
			assert.Equal(t, first.Body, again.Body, k)
		}
		// Only the spec's 36-character form (components/parameters/idempotency-key).
		for _, k := range []string{"{" + key + "}", "urn:uuid:" + key, strings.ReplaceAll(key, "-", "")} {
			requireBadRequest(t, createNS(t, "upper", k))
		}
		requireError(t, e.do(t, http.MethodPost, prefixPath("/namespaces"), spec.CreateNamespaceRequest{Namespace: []string{"upper2"}}, header, strings.ToUpper(key)),
			http.StatusUnprocessableEntity, "UnprocessableEntityException")
	})

	t.Run("a key that is not a UUID", func(t *testing.T) {
		for _, key := range []string{"not-a-uuid", "12345", "zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz"} {
			requireBadRequest(t, createNS(t, "badkey", key))
		}
		ok, err := e.cat.CheckNamespaceExists(t.Context(), []string{"badkey"})
		require.NoError(t, err)
		assert.False(t, ok, "the refused request did not run")
	})

	t.Run("concurrent requests with one key run once", func(t *testing.T) {
		key := uuid.NewString()
		const n = 8
		status := make([]int, n)
		bodies := make([][]byte, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				req, err := http.NewRequest(http.MethodPost, e.srv.URL+prefixPath("/namespaces"), strings.NewReader(`{"namespace":["concurrent"]}`))
				if err != nil {
					errs[i] = err
					return
				}
				req.Header.Set(header, key)
				rsp, err := http.DefaultClient.Do(req)
				if err != nil {
					errs[i] = err
					return
				}
				defer rsp.Body.Close()
				status[i] = rsp.StatusCode
				bodies[i], errs[i] = io.ReadAll(rsp.Body)
			})
		}
		wg.Wait()
		for i := range n {
			require.NoError(t, errs[i])
			assert.Equal(t, http.StatusOK, status[i], "request %d: %s", i, bodies[i])
			assert.Equal(t, bodies[0], bodies[i])
		}
	})
}

// doKey is authEnv.do with an Idempotency-Key.
func (e *authEnv) doKey(t *testing.T, token, key, method, path, body string) rawResponse {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, e.url+path, rd)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Idempotency-Key", key)
	return send(t, req)
}

// TestIdempotencyKeyIsPerPrincipal pins the replay to anyone of issue 13
// item 3: the fingerprint was only method and path, so a principal with
// create on its own namespace that presented root's key received the
// stored answer of root's create (the properties of a namespace it may
// not see), and a principal without grants replayed root's rename with an
// empty body and got 204. Now another principal under a used key is 422
// with nothing of the stored response, and a body that does not decode
// is 400 before any replay.
func TestIdempotencyKeyIsPerPrincipal(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	nobodySecret := e.seed(t)
	root := e.tokenFor(t, "root", rootSecret)
	r := e.must(t, root, http.StatusCreated, http.MethodPost, "/management/v1/principals", `{"id":"eve"}`)
	eve := e.tokenFor(t, "eve", decodeJSON[server.PrincipalResponse](t, r).Secret)
	e.must(t, root, http.StatusCreated, http.MethodPost, "/management/v1/roles", `{"name":"sales-c"}`)
	e.must(t, root, http.StatusCreated, http.MethodPost, "/management/v1/grants", `{"role":"sales-c","privilege":"create","on":{"type":"namespace","namespace":["sales"]}}`)
	e.must(t, root, http.StatusNoContent, http.MethodPut, "/management/v1/principals/eve/roles/sales-c", "")
	nobody := e.tokenFor(t, "nobody", nobodySecret)

	key := uuid.NewString()
	r = e.doKey(t, root, key, http.MethodPost, "/v1/namespaces", `{"namespace":["hr","secret"],"properties":{"pw":"hunter2"}}`)
	require.Equal(t, http.StatusOK, r.Status, "body: %s", r.Body)
	for _, body := range []string{`{"namespace":["sales","x"]}`, `{"namespace":["hr","secret"],"properties":{"pw":"hunter2"}}`} {
		r = e.doKey(t, eve, key, http.MethodPost, "/v1/namespaces", body)
		if strings.Contains(body, "hr") {
			requireError(t, r, http.StatusForbidden, "ForbiddenException")
		} else {
			requireError(t, r, http.StatusUnprocessableEntity, "UnprocessableEntityException")
		}
		assert.NotContains(t, string(r.Body), "hunter2")
		assert.NotContains(t, string(r.Body), "secret")
	}
	_, err := e.cat.LoadNamespace(t.Context(), []string{"sales", "x"})
	require.ErrorIs(t, err, catalog.ErrNoSuchNamespace, "the refused request did not run")

	// Root's rename, then nobody presents the key.
	key = uuid.NewString()
	rename := `{"source":{"namespace":["sales"],"name":"orders"},"destination":{"namespace":["sales"],"name":"orders2"}}`
	r = e.doKey(t, root, key, http.MethodPost, "/v1/tables/rename", rename)
	require.Equal(t, http.StatusNoContent, r.Status, "body: %s", r.Body)
	requireBadRequest(t, e.doKey(t, nobody, key, http.MethodPost, "/v1/tables/rename", ""))
	requireBadRequest(t, e.doKey(t, nobody, key, http.MethodPost, "/v1/tables/rename", "{}"))
	requireError(t, e.doKey(t, nobody, key, http.MethodPost, "/v1/tables/rename", rename), http.StatusForbidden, "ForbiddenException")
	// Root's own retry is still the replay.
	r = e.doKey(t, root, key, http.MethodPost, "/v1/tables/rename", rename)
	assert.Equal(t, http.StatusNoContent, r.Status, "body: %s", r.Body)
}
