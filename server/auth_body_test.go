package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/server"
	"github.com/tarnhq/tarn/spec"
)

// malformedVariants are bodies derived from body (a JSON object) that no
// route may accept: each is refused with 400 BadRequestException before
// authorization, whoever sends it. They are the shapes a privilege check
// and a handler reading the body apart could disagree on.
func malformedVariants(t *testing.T, body string) map[string]string {
	t.Helper()
	require.True(t, strings.HasPrefix(body, "{") && strings.HasSuffix(body, "}"), body)
	key, start, end := firstMember(t, body)
	return map[string]string{
		"trailing }":          body + "}",
		"trailing ]":          body + "]",
		"trailing garbage":    body + "x",
		"second value":        body + " " + body,
		"second value scalar": body + " 1",
		"duplicate key":       `{"` + key + `":null,` + body[1:],
		"wrong type":          body[:start] + `[[true]]` + body[end:],
		"array of the body":   "[" + body + "]",
		"huge float":          body[:len(body)-1] + `,"tarn-test-huge":1e999}`,
		"huge integer":        body[:len(body)-1] + `,"tarn-test-huge":18446744073709551616}`,
		"invalid UTF-8":       body[:len(body)-1] + ",\"tarn-test-utf8\":\"\xff\"}",
		"empty":               " ",
	}
}

// firstMember returns the first key of JSON object body and the byte
// range of its value.
func firstMember(t *testing.T, body string) (key string, start, end int) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(body))
	_, err := dec.Token()
	require.NoError(t, err)
	k, err := dec.Token()
	require.NoError(t, err)
	var raw json.RawMessage
	require.NoError(t, dec.Decode(&raw))
	end = int(dec.InputOffset())
	return k.(string), end - len(raw), end
}

// TestAuthMalformedBodyRefusedOnEveryRoute pins the authorization bypass
// of issue 13 item 0: the privilege check decoded the body on its own and
// ignored a decode error, so it built its checks from an empty request,
// while the handler's decoder accepted the same body (its trailing-data
// check, dec.More(), is false before a "}" or "]"). A principal with no
// grants created a namespace with `{"namespace":["x"]}}` (200; 403
// without the extra "}"). Now every route with a body decodes it once,
// strictly, before authorization: each malformed variant is 400
// BadRequestException for a principal without grants and for root alike,
// and nothing changes.
func TestAuthMalformedBodyRefusedOnEveryRoute(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	nobodySecret := e.seed(t)
	root := e.tokenFor(t, "root", rootSecret)
	e.must(t, root, http.StatusCreated, http.MethodPost, "/management/v1/roles", `{"name":"admins"}`)
	before := e.state(t)
	nobody := e.tokenFor(t, "nobody", nobodySecret)

	n := 0
	for _, r := range allRoutes(t, e) {
		if r.body == "" {
			continue
		}
		for name, body := range malformedVariants(t, r.body) {
			n++
			t.Run(r.method+" "+r.path+"/"+name, func(t *testing.T) {
				for who, tok := range map[string]string{"nobody": nobody, "root": root} {
					rsp := e.do(t, tok, r.method, r.path, body)
					require.Equal(t, http.StatusBadRequest, rsp.Status, "%s: %s", who, rsp.Body)
					em := decodeJSON[spec.ErrorResponse](t, rsp).Error
					assert.Equal(t, "BadRequestException", em.Type, "%s: %s", who, em.Message)
					assert.Equal(t, http.StatusBadRequest, em.Code)
				}
			})
		}
	}
	require.GreaterOrEqual(t, n, 33*12, "every body route (with and without the prefix) and variant is covered")
	assert.Equal(t, before, e.state(t), "refused requests changed nothing")
}

// TestAuthMalformedBodyBypassReproducers are the trials of issue 13 item
// 0, each with one extra "}" (or "]") after a body the caller may not
// send: a principal without grants creating a namespace (was 200); a
// principal with write on sales changing hr.pay through a transaction
// (was 204), renaming hr.pay into sales, and enabling a topic into hr.
// Each is 400 now, and the request without the extra byte is 403.
func TestAuthMalformedBodyBypassReproducers(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	nobodySecret := e.seed(t)
	root := e.tokenFor(t, "root", rootSecret)
	r := e.must(t, root, http.StatusCreated, http.MethodPost, "/management/v1/principals", `{"id":"eve"}`)
	eve := e.tokenFor(t, "eve", decodeJSON[server.PrincipalResponse](t, r).Secret)
	e.must(t, root, http.StatusCreated, http.MethodPost, "/management/v1/roles", `{"name":"sales-all"}`)
	e.must(t, root, http.StatusCreated, http.MethodPost, "/management/v1/grants", `{"role":"sales-all","privilege":"manage","on":{"type":"namespace","namespace":["sales"]}}`)
	e.must(t, root, http.StatusNoContent, http.MethodPut, "/management/v1/principals/eve/roles/sales-all", "")
	nobody := e.tokenFor(t, "nobody", nobodySecret)
	before := e.state(t)

	for _, tc := range []struct {
		who, tok, method, path, body string
	}{
		{"nobody", nobody, http.MethodPost, "/v1/namespaces", `{"namespace":["x"]}`},
		{"eve", eve, http.MethodPost, "/v1/transactions/commit", `{"table-changes":[{"identifier":{"namespace":["hr"],"name":"pay"},"requirements":[],"updates":[{"action":"set-properties","updates":{"owner":"eve"}}]}]}`},
		{"eve", eve, http.MethodPost, "/v1/tables/rename", `{"source":{"namespace":["hr"],"name":"pay"},"destination":{"namespace":["sales"],"name":"pay"}}`},
		{"eve", eve, http.MethodPost, "/v1/namespaces/hr/register", `{"name":"x","metadata-location":"file:///nowhere/x.metadata.json"}`},
		{"eve", eve, http.MethodPost, "/management/v1/topics", `{"topic":"payroll","table":"hr.payroll"}`},
		{"eve", eve, http.MethodPost, "/management/v1/grants", `{"role":"sales-all","privilege":"manage","on":{"type":"catalog"}}`},
	} {
		t.Run(tc.who+" "+tc.path, func(t *testing.T) {
			rsp := e.do(t, tc.tok, tc.method, tc.path, tc.body)
			require.Equal(t, http.StatusForbidden, rsp.Status, "the well-formed body: %s", rsp.Body)
			for _, tail := range []string{"}", "]", "}}", "]}"} {
				rsp := e.do(t, tc.tok, tc.method, tc.path, tc.body+tail)
				require.Equal(t, http.StatusBadRequest, rsp.Status, "with %q: %s", tail, rsp.Body)
				assert.Equal(t, "BadRequestException", decodeJSON[spec.ErrorResponse](t, rsp).Error.Type)
			}
		})
	}
	assert.Equal(t, before, e.state(t), "refused requests changed nothing")
}

// TestAuthDuplicateKeysRefused: a JSON object naming a member twice (at
// any depth: an identifier, a property map, an update) is 400, so a check
// and an action can never read different members; encoding/json alone
// would take the last one silently.
func TestAuthDuplicateKeysRefused(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	e.seed(t)
	root := e.tokenFor(t, "root", rootSecret)
	before := e.state(t)
	for _, tc := range []struct{ path, body string }{
		{"/v1/namespaces", `{"namespace":["a"],"namespace":["b"]}`},
		{"/v1/namespaces", `{"namespace":["a"],"properties":{"k":"1","k":"2"}}`},
		{"/v1/namespaces/sales/properties", `{"updates":{"location":"file:///a","location":"file:///b"}}`},
		{"/v1/namespaces/sales/tables/orders", `{"requirements":[],"updates":[{"action":"set-location","location":"file:///a","location":"file:///b"}]}`},
		{"/v1/namespaces/sales/tables/orders", `{"requirements":[],"updates":[{"action":"set-properties","action":"set-location","updates":{"k":"v"}}]}`},
		{"/v1/transactions/commit", `{"table-changes":[{"identifier":{"namespace":["sales"],"name":"orders","name":"x"},"requirements":[],"updates":[]}]}`},
		{"/v1/tables/rename", `{"source":{"namespace":["sales"],"name":"orders"},"destination":{"namespace":["sales"],"name":"a"},"destination":{"namespace":["hr"],"name":"b"}}`},
	} {
		rsp := e.do(t, root, http.MethodPost, tc.path, tc.body)
		require.Equal(t, http.StatusBadRequest, rsp.Status, "%s %s: %s", tc.path, tc.body, rsp.Body)
		em := decodeJSON[spec.ErrorResponse](t, rsp).Error
		assert.Equal(t, "BadRequestException", em.Type)
		assert.Contains(t, em.Message, "duplicate object member name")
	}
	assert.Equal(t, before, e.state(t), "refused requests changed nothing")
}

// TestAuthLegacyPropertyFieldChecked pins issue 13 item 0b: the check on
// set-properties read only "updates", while iceberg-go also accepts the
// legacy name "updated" and applies it, so a principal with write on its
// own table set write.data.path / write.metadata.path (or Java's
// object-storage / folder-storage paths) into another namespace's
// directory: refused with "updates", 200 with "updated" (204 through
// /v1/transactions/commit). The check now reads the decoded TableUpdates
// the catalog applies, whatever their JSON spelling.
func TestAuthLegacyPropertyFieldChecked(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	e.seed(t)
	root := e.tokenFor(t, "root", rootSecret)
	r := e.must(t, root, http.StatusCreated, http.MethodPost, "/management/v1/principals", `{"id":"eve"}`)
	eve := e.tokenFor(t, "eve", decodeJSON[server.PrincipalResponse](t, r).Secret)
	e.must(t, root, http.StatusCreated, http.MethodPost, "/management/v1/roles", `{"name":"sales-rw"}`)
	for _, p := range []string{"write", "create"} {
		e.must(t, root, http.StatusCreated, http.MethodPost, "/management/v1/grants", `{"role":"sales-rw","privilege":"`+p+`","on":{"type":"namespace","namespace":["sales"]}}`)
	}
	e.must(t, root, http.StatusNoContent, http.MethodPut, "/management/v1/principals/eve/roles/sales-rw", "")

	r = e.must(t, root, http.StatusOK, http.MethodGet, "/v1/namespaces/hr/tables/pay", "")
	hrLoc := decodeJSON[struct {
		Metadata map[string]any `json:"metadata"`
	}](t, r).Metadata["location"].(string)
	wh := hrLoc[:strings.Index(hrLoc, "/hr/pay")]
	before := e.state(t)

	for _, prop := range []string{"write.data.path", "write.metadata.path", "write.object-storage.path", "write.folder-storage.path"} {
		for _, dir := range []string{wh + "/hr/claimed", wh + "/future/ns"} {
			for _, field := range []string{"updates", "updated"} {
				upd := `{"action":"set-properties","` + field + `":{"` + prop + `":"` + dir + `"}}`
				for _, req := range []struct{ path, body string }{
					{"/v1/namespaces/sales/tables/orders", `{"requirements":[],"updates":[` + upd + `]}`},
					{"/v1/transactions/commit", `{"table-changes":[{"identifier":{"namespace":["sales"],"name":"orders"},"requirements":[],"updates":[` + upd + `]}]}`},
				} {
					rsp := e.do(t, eve, http.MethodPost, req.path, req.body)
					require.Equal(t, http.StatusForbidden, rsp.Status, "%s %s: %s", req.path, upd, rsp.Body)
					assert.Equal(t, "ForbiddenException", decodeJSON[spec.ErrorResponse](t, rsp).Error.Type)
				}
			}
		}
	}
	assert.Equal(t, before, e.state(t), "refused requests changed nothing")

	// Inside sales's own directory the legacy name works as the modern one.
	e.must(t, eve, http.StatusOK, http.MethodPost, "/v1/namespaces/sales/tables/orders",
		`{"requirements":[],"updates":[{"action":"set-properties","updated":{"write.data.path":"`+wh+`/sales/orders-data"}}]}`)
}

// TestAuthCreateByCommitNeedsCreate: a table commit or a transaction
// whose requirements hold assert-create creates the table, so it needs
// create on the namespace as createTable does, not only write.
func TestAuthCreateByCommitNeedsCreate(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	e.seed(t)
	root := e.tokenFor(t, "root", rootSecret)
	r := e.must(t, root, http.StatusCreated, http.MethodPost, "/management/v1/principals", `{"id":"wanda"}`)
	wanda := e.tokenFor(t, "wanda", decodeJSON[server.PrincipalResponse](t, r).Secret)
	e.must(t, root, http.StatusCreated, http.MethodPost, "/management/v1/roles", `{"name":"sales-w"}`)
	e.must(t, root, http.StatusCreated, http.MethodPost, "/management/v1/grants", `{"role":"sales-w","privilege":"write","on":{"type":"namespace","namespace":["sales"]}}`)
	e.must(t, root, http.StatusNoContent, http.MethodPut, "/management/v1/principals/wanda/roles/sales-w", "")
	before := e.state(t)

	create := `"requirements":[{"type":"assert-create"}],"updates":[{"action":"add-schema","schema":` + schemaJSON + `},{"action":"set-current-schema","schema-id":-1},` +
		`{"action":"add-spec","spec":{"spec-id":0,"fields":[]}},{"action":"set-default-spec","spec-id":-1},` +
		`{"action":"add-sort-order","sort-order":{"order-id":0,"fields":[]}},{"action":"set-default-sort-order","sort-order-id":-1}]`
	rsp := e.do(t, wanda, http.MethodPost, "/v1/namespaces/sales/tables/made", `{`+create+`}`)
	require.Equal(t, http.StatusForbidden, rsp.Status, "body: %s", rsp.Body)
	rsp = e.do(t, wanda, http.MethodPost, "/v1/transactions/commit", `{"table-changes":[{"identifier":{"namespace":["sales"],"name":"made"},`+create+`}]}`)
	require.Equal(t, http.StatusForbidden, rsp.Status, "body: %s", rsp.Body)
	assert.Equal(t, before, e.state(t), "refused requests changed nothing")

	e.must(t, root, http.StatusCreated, http.MethodPost, "/management/v1/grants", `{"role":"sales-w","privilege":"create","on":{"type":"namespace","namespace":["sales"]}}`)
	e.must(t, wanda, http.StatusOK, http.MethodPost, "/v1/namespaces/sales/tables/made", `{`+create+`}`)
}
