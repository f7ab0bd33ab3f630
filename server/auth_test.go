package server_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/catalogtest"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"github.com/tarnhq/tarn/auth"
	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/topics"
	"github.com/tarnhq/tarn/internal/testserver"
	"github.com/tarnhq/tarn/server"
	"github.com/tarnhq/tarn/spec"
)

const rootSecret = "root-secret"

// stubTopics is a TopicManager with one topic, orders → sales.orders,
// counting the calls that would change something.
type stubTopics struct{ writes atomic.Int32 }

func (s *stubTopics) st() topics.Status { return topics.Status{Topic: "orders", Table: "sales.orders"} }
func (s *stubTopics) Enable(context.Context, topics.TopicConfig) (topics.Status, error) {
	s.writes.Add(1)
	return s.st(), nil
}
func (s *stubTopics) List(context.Context) []topics.Status { return []topics.Status{s.st()} }
func (s *stubTopics) Get(_ context.Context, name string) (topics.Status, error) {
	if name != "orders" {
		return topics.Status{}, topics.ErrNoSuchTopic
	}
	return s.st(), nil
}
func (s *stubTopics) Update(context.Context, string, topics.Patch) (topics.Status, error) {
	s.writes.Add(1)
	return s.st(), nil
}
func (s *stubTopics) Resume(context.Context, string) (topics.Status, error) {
	s.writes.Add(1)
	return s.st(), nil
}
func (s *stubTopics) Disable(context.Context, string, bool) error {
	s.writes.Add(1)
	return nil
}

// authEnv is Tarn in oauth2 mode, in process, with a root principal
// (root:rootSecret).
type authEnv struct {
	url    string
	svc    *auth.Service
	key    *auth.SigningKey
	topics *stubTopics
	logs   *bytes.Buffer
	cat    *catalog.Catalog
}

func newAuthEnv(t *testing.T) *authEnv {
	t.Helper()
	dir := t.TempDir()
	cat, _, store := testserver.NewCatalog(t, dir, nil)
	key, err := auth.LoadOrCreateKey(t.Context(), store, dir)
	require.NoError(t, err)
	st := auth.NewStore(store, bcrypt.MinCost)
	_, _, err = st.EnsureRoot(t.Context(), "root", rootSecret)
	require.NoError(t, err)
	svc, err := auth.NewService(auth.Config{Store: st, Key: key})
	require.NoError(t, err)
	logs := &bytes.Buffer{}
	log := slog.New(slog.NewJSONHandler(&lockedWriter{w: logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	tm := &stubTopics{}
	hs := httptest.NewServer(server.New(cat, server.Config{Logger: log, Auth: svc, Topics: tm}).Handler())
	t.Cleanup(hs.Close)
	return &authEnv{url: hs.URL, svc: svc, key: key, topics: tm, logs: logs, cat: cat}
}

// lockedWriter serializes writes to a buffer shared by handlers.
type lockedWriter struct {
	mu chan struct{}
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	if l.mu == nil {
		l.mu = make(chan struct{}, 1)
	}
	l.mu <- struct{}{}
	defer func() { <-l.mu }()
	return l.w.Write(p)
}

// tokenFor fetches a token with client credentials in the form body.
func (e *authEnv) tokenFor(t *testing.T, id, secret string) string {
	t.Helper()
	r := e.post(t, "/v1/oauth/tokens", url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}, "scope": {"catalog"}}, "")
	require.Equal(t, http.StatusOK, r.Status, "body: %s", r.Body)
	return decodeJSON[auth.TokenResponse](t, r).AccessToken
}

func (e *authEnv) post(t *testing.T, path string, form url.Values, basic string) rawResponse {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, e.url+path, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if basic != "" {
		id, secret, _ := strings.Cut(basic, ":")
		req.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
	}
	return send(t, req)
}

func send(t *testing.T, req *http.Request) rawResponse {
	t.Helper()
	rsp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer rsp.Body.Close()
	b, err := io.ReadAll(rsp.Body)
	require.NoError(t, err)
	return rawResponse{Status: rsp.StatusCode, Header: rsp.Header, Body: b}
}

// do sends a request with token as bearer ("" for none).
func (e *authEnv) do(t *testing.T, token, method, path, body string) rawResponse {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, e.url+path, rd)
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return send(t, req)
}

// must sends as token and requires status.
func (e *authEnv) must(t *testing.T, token string, status int, method, path, body string) rawResponse {
	t.Helper()
	r := e.do(t, token, method, path, body)
	require.Equal(t, status, r.Status, "%s %s: %s", method, path, r.Body)
	return r
}

// restClient is iceberg-go's REST client with credential id:secret.
func (e *authEnv) restClient(t *testing.T, credential string) *rest.Catalog {
	t.Helper()
	c, err := rest.NewCatalog(t.Context(), "tarn", e.url, rest.WithCredential(credential))
	require.NoError(t, err)
	return c
}

const schemaJSON = `{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","type":"long","required":false}]}`

// seed creates, as root through iceberg-go with credential=root:secret,
// namespaces sales and hr, tables sales.orders and hr.pay, view sales.v,
// and a principal "nobody" with no role; it returns nobody's secret.
func (e *authEnv) seed(t *testing.T) (nobodySecret string) {
	t.Helper()
	c := e.restClient(t, "root:"+rootSecret)
	ctx := t.Context()
	for _, ns := range []string{"sales", "hr"} {
		require.NoError(t, c.CreateNamespace(ctx, icecat.ToIdentifier(ns), iceberg.Properties{"owner": "x"}))
	}
	_, err := c.CreateTable(ctx, icecat.ToIdentifier("sales", "orders"), idDataSchema())
	require.NoError(t, err)
	_, err = c.CreateTable(ctx, icecat.ToIdentifier("hr", "pay"), idDataSchema())
	require.NoError(t, err)
	_, err = c.CreateView(ctx, icecat.ToIdentifier("sales", "v"), viewVersion(t, icecat.ToIdentifier("sales"), "select 1"), idDataSchema())
	require.NoError(t, err)
	root := e.tokenFor(t, "root", rootSecret)
	r := e.must(t, root, http.StatusCreated, http.MethodPost, "/management/v1/principals", `{"id":"nobody"}`)
	return decodeJSON[server.PrincipalResponse](t, r).Secret
}

// route is one request of the negative suite.
type route struct {
	method, path, body string
	// open: a valid token without privileges succeeds (no privilege
	// needed, or the answer is filtered to nothing).
	open bool
}

// allRoutes lists every route that needs a token, with a body each would
// accept from a privileged caller.
func allRoutes(t *testing.T, e *authEnv) []route {
	commit := `{"requirements":[],"updates":[{"action":"set-properties","updates":{"k":"v"}}]}`
	txn := `{"table-changes":[{"identifier":{"namespace":["sales"],"name":"orders"},"requirements":[],"updates":[{"action":"set-properties","updates":{"k":"v"}}]}]}`
	view := `{"name":"v2","schema":` + schemaJSON + `,"view-version":{"version-id":1,"timestamp-ms":1,"schema-id":0,"summary":{},"representations":[{"type":"sql","sql":"select 1","dialect":"spark"}],"default-namespace":["sales"]}}`
	rest := []route{
		{method: "GET", path: "/namespaces", open: true},
		{method: "POST", path: "/namespaces", body: `{"namespace":["x"]}`},
		{method: "GET", path: "/namespaces/sales"},
		{method: "HEAD", path: "/namespaces/sales"},
		{method: "DELETE", path: "/namespaces/hr"},
		{method: "POST", path: "/namespaces/sales/properties", body: `{"updates":{"k":"v"}}`},
		{method: "GET", path: "/namespaces/sales/tables"},
		{method: "POST", path: "/namespaces/sales/tables", body: `{"name":"new","schema":` + schemaJSON + `}`},
		{method: "GET", path: "/namespaces/sales/tables/orders"},
		{method: "HEAD", path: "/namespaces/sales/tables/orders"},
		{method: "POST", path: "/namespaces/sales/tables/orders", body: commit},
		{method: "DELETE", path: "/namespaces/sales/tables/orders"},
		{method: "POST", path: "/namespaces/sales/tables/orders/metrics", body: `{"report-type":"scan-report"}`},
		{method: "GET", path: "/namespaces/sales/tables/orders/credentials"},
		{method: "POST", path: "/namespaces/sales/tables/orders/sign", body: `{"region":"us-east-1","method":"GET","uri":"http://127.0.0.1:9000/bkt/wh/sales/orders/x","headers":{}}`},
		{method: "POST", path: "/namespaces/sales/register", body: `{"name":"reg","metadata-location":"file:///nowhere/x.metadata.json"}`},
		{method: "POST", path: "/tables/rename", body: `{"source":{"namespace":["sales"],"name":"orders"},"destination":{"namespace":["sales"],"name":"o2"}}`},
		{method: "POST", path: "/transactions/commit", body: txn},
		{method: "GET", path: "/namespaces/sales/views"},
		{method: "POST", path: "/namespaces/sales/views", body: view},
		{method: "GET", path: "/namespaces/sales/views/v"},
		{method: "HEAD", path: "/namespaces/sales/views/v"},
		{method: "POST", path: "/namespaces/sales/views/v", body: `{"requirements":[],"updates":[{"action":"set-properties","updates":{"k":"v"}}]}`},
		{method: "DELETE", path: "/namespaces/sales/views/v"},
		{method: "POST", path: "/views/rename", body: `{"source":{"namespace":["sales"],"name":"v"},"destination":{"namespace":["sales"],"name":"v3"}}`},
		{method: "POST", path: "/namespaces/sales/register-view", body: `{"name":"rv","metadata-location":"file:///nowhere/x.metadata.json"}`},
	}
	var out []route
	out = append(out, route{method: "GET", path: "/v1/config", open: true})
	for _, r := range rest {
		for _, prefix := range []string{"/v1", "/v1/default"} {
			r2 := r
			r2.path = prefix + r.path
			out = append(out, r2)
		}
	}
	out = append(out,
		route{method: "GET", path: "/management/v1/topics", open: true},
		route{method: "POST", path: "/management/v1/topics", body: `{"topic":"t2","table":"sales.t2"}`},
		route{method: "GET", path: "/management/v1/topics/orders"},
		route{method: "PATCH", path: "/management/v1/topics/orders", body: `{"target-lag-ms":2000}`},
		route{method: "DELETE", path: "/management/v1/topics/orders"},
		route{method: "POST", path: "/management/v1/topics/orders/resume"},
		route{method: "GET", path: "/management/v1/principals"},
		route{method: "POST", path: "/management/v1/principals", body: `{"id":"mallory"}`},
		route{method: "GET", path: "/management/v1/principals/root"},
		route{method: "DELETE", path: "/management/v1/principals/nobody"},
		route{method: "POST", path: "/management/v1/principals/root/rotate-secret"},
		route{method: "PUT", path: "/management/v1/principals/nobody/roles/admins"},
		route{method: "DELETE", path: "/management/v1/principals/nobody/roles/admins"},
		route{method: "GET", path: "/management/v1/roles"},
		route{method: "POST", path: "/management/v1/roles", body: `{"name":"r2"}`},
		route{method: "DELETE", path: "/management/v1/roles/admins"},
		route{method: "GET", path: "/management/v1/grants"},
		route{method: "POST", path: "/management/v1/grants", body: `{"role":"admins","privilege":"manage","on":{"type":"catalog"}}`},
		route{method: "POST", path: "/management/v1/grants/revoke", body: `{"role":"admins","privilege":"read","on":{"type":"catalog"}}`},
		route{method: "GET", path: "/management/v1/maintenance"},
		route{method: "POST", path: "/management/v1/maintenance/run", body: `{"table":"sales.orders","jobs":["expire-snapshots"]}`},
		route{method: "GET", path: "/metrics"},
	)
	return out
}

// state is everything a request could change, read as root.
func (e *authEnv) state(t *testing.T) string {
	t.Helper()
	root := e.tokenFor(t, "root", rootSecret)
	var b strings.Builder
	for _, p := range []string{"/v1/namespaces", "/v1/namespaces/sales", "/v1/namespaces/hr", "/v1/namespaces/sales/tables",
		"/v1/namespaces/hr/tables", "/v1/namespaces/sales/views", "/management/v1/principals", "/management/v1/roles", "/management/v1/grants"} {
		r := e.must(t, root, http.StatusOK, http.MethodGet, p, "")
		b.Write(r.Body)
	}
	for _, p := range []string{"/v1/namespaces/sales/tables/orders", "/v1/namespaces/hr/tables/pay", "/v1/namespaces/sales/views/v"} {
		r := e.must(t, root, http.StatusOK, http.MethodGet, p, "")
		b.WriteString(decodeJSON[struct {
			Loc string `json:"metadata-location"`
		}](t, r).Loc)
	}
	b.WriteString(string(rune('0' + e.topics.writes.Load())))
	return b.String()
}

// badTokens are tokens that must each get 401: malformed, another
// issuer, another key under Tarn's kid, expired.
func (e *authEnv) badTokens(t *testing.T) map[string]string {
	now := time.Now()
	mk := func(iss string, exp time.Time, key *ecdsa.PrivateKey) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{"iss": iss, "sub": "root", "aud": "tarn", "iat": now.Unix(), "exp": exp.Unix()})
		tok.Header["kid"] = e.key.KID
		s, err := tok.SignedString(key)
		require.NoError(t, err)
		return s
	}
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	// The same claims Tarn would issue, signed by another key: the
	// wrong-signature case. With Tarn's key (IssueFor) a good token is
	// issued as a control that the forged ones differ only in the key.
	expired := e.expiredToken(t)
	return map[string]string{
		"malformed":       "not.a.jwt",
		"wrong issuer":    mk("https://evil.example", now.Add(time.Hour), other),
		"wrong signature": mk(auth.DefaultIssuer, now.Add(time.Hour), other),
		"expired":         expired,
	}
}

// expiredToken is a token of root signed with Tarn's own key that
// expired an hour ago.
func (e *authEnv) expiredToken(t *testing.T) string {
	t.Helper()
	svc, err := auth.NewService(auth.Config{Store: e.svc.Store(), Key: e.key, Now: func() time.Time { return time.Now().Add(-3 * time.Hour) }})
	require.NoError(t, err)
	tok, err := svc.IssueFor(t.Context(), "root", time.Hour)
	require.NoError(t, err)
	return tok
}

// TestAuthEveryRouteRefusesWithoutPrivilege: on every /v1 and
// /management route (both with and without the {prefix} segment) and
// /metrics, no token → 401 and a bad token (malformed, wrong issuer,
// wrong signature, expired) → 401, each an ErrorModel of
// NotAuthorizedException with WWW-Authenticate; a valid token of a
// principal without grants → 403 ForbiddenException (or, for the
// routes that need no privilege, an answer filtered to nothing); and
// after all of it nothing changed.
func TestAuthEveryRouteRefusesWithoutPrivilege(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	nobodySecret := e.seed(t)
	root := e.tokenFor(t, "root", rootSecret)
	e.must(t, root, http.StatusCreated, http.MethodPost, "/management/v1/roles", `{"name":"admins"}`)
	e.must(t, root, http.StatusCreated, http.MethodPost, "/management/v1/grants", `{"role":"admins","privilege":"read","on":{"type":"catalog"}}`)
	before := e.state(t)
	nobody := e.tokenFor(t, "nobody", nobodySecret)
	bad := e.badTokens(t)

	for _, r := range allRoutes(t, e) {
		t.Run(r.method+" "+r.path, func(t *testing.T) {
			check401 := func(name string, rsp rawResponse) {
				require.Equal(t, http.StatusUnauthorized, rsp.Status, "%s: %s", name, rsp.Body)
				assert.Contains(t, rsp.Header.Get("WWW-Authenticate"), "Bearer", name)
				if r.method != http.MethodHead {
					em := decodeJSON[spec.ErrorResponse](t, rsp).Error
					assert.Equal(t, "NotAuthorizedException", em.Type, name)
					assert.Equal(t, http.StatusUnauthorized, em.Code, name)
				}
			}
			check401("no token", e.do(t, "", r.method, r.path, r.body))
			for name, tok := range bad {
				check401(name, e.do(t, tok, r.method, r.path, r.body))
			}
			rsp := e.do(t, nobody, r.method, r.path, r.body)
			if r.open {
				require.Equal(t, http.StatusOK, rsp.Status, "body: %s", rsp.Body)
				assert.NotContains(t, string(rsp.Body), "sales", "a principal without grants sees nothing")
				return
			}
			require.Equal(t, http.StatusForbidden, rsp.Status, "body: %s", rsp.Body)
			if r.method != http.MethodHead {
				em := decodeJSON[spec.ErrorResponse](t, rsp).Error
				assert.Equal(t, "ForbiddenException", em.Type)
			}
		})
	}
	assert.Equal(t, before, e.state(t), "refused requests changed nothing")
}

// TestAuthGrants: grants on a namespace are inherited by its tables and
// child namespaces; write implies read, not drop; lists show only what
// the caller may see; revoking takes effect on the next request.
func TestAuthGrants(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	e.seed(t)
	root := e.tokenFor(t, "root", rootSecret)
	r := e.must(t, root, http.StatusCreated, http.MethodPost, "/management/v1/principals", `{"id":"ann"}`)
	ann := decodeJSON[server.PrincipalResponse](t, r)
	require.NotEmpty(t, ann.Secret)
	e.must(t, root, http.StatusCreated, http.MethodPost, "/management/v1/roles", `{"name":"sales-rw"}`)
	e.must(t, root, http.StatusCreated, http.MethodPost, "/management/v1/grants", `{"role":"sales-rw","privilege":"write","on":{"type":"namespace","namespace":["sales"]}}`)
	e.must(t, root, http.StatusNoContent, http.MethodPut, "/management/v1/principals/ann/roles/sales-rw", "")
	tok := e.tokenFor(t, "ann", ann.Secret)

	// Lists: only sales, and in it orders and v.
	r = e.must(t, tok, http.StatusOK, http.MethodGet, "/v1/namespaces", "")
	assert.Equal(t, [][]string{{"sales"}}, decodeJSON[spec.ListNamespacesResponse](t, r).Namespaces)
	r = e.must(t, tok, http.StatusOK, http.MethodGet, "/v1/namespaces/sales/tables", "")
	assert.Len(t, decodeJSON[spec.ListTablesResponse](t, r).Identifiers, 1)
	e.must(t, tok, http.StatusForbidden, http.MethodGet, "/v1/namespaces/hr/tables", "")
	// Read and write in sales, not drop, not hr.
	e.must(t, tok, http.StatusOK, http.MethodGet, "/v1/namespaces/sales/tables/orders", "")
	e.must(t, tok, http.StatusOK, http.MethodPost, "/v1/namespaces/sales/tables/orders", `{"requirements":[],"updates":[{"action":"set-properties","updates":{"k":"v"}}]}`)
	e.must(t, tok, http.StatusForbidden, http.MethodDelete, "/v1/namespaces/sales/tables/orders", "")
	e.must(t, tok, http.StatusForbidden, http.MethodGet, "/v1/namespaces/hr/tables/pay", "")
	e.must(t, tok, http.StatusForbidden, http.MethodPost, "/v1/namespaces/sales/tables", `{"name":"n","schema":`+schemaJSON+`}`)
	// A transaction touching hr is refused whole.
	e.must(t, tok, http.StatusForbidden, http.MethodPost, "/v1/transactions/commit",
		`{"table-changes":[{"identifier":{"namespace":["sales"],"name":"orders"},"requirements":[],"updates":[]},{"identifier":{"namespace":["hr"],"name":"pay"},"requirements":[],"updates":[]}]}`)
	// Inherited by a child namespace created by root.
	e.must(t, root, http.StatusOK, http.MethodPost, "/v1/namespaces", `{"namespace":["sales","eu"]}`)
	e.must(t, root, http.StatusOK, http.MethodPost, "/v1/namespaces/sales%1Feu/tables", `{"name":"t","schema":`+schemaJSON+`}`)
	e.must(t, tok, http.StatusOK, http.MethodGet, "/v1/namespaces/sales%1Feu/tables/t", "")
	// Topics: manage on the namespace, not write. A refusal names the
	// topic only, so an existing topic and a missing one read the same.
	r = e.must(t, tok, http.StatusForbidden, http.MethodGet, "/management/v1/topics/orders", "")
	assert.Equal(t, `forbidden: principal "ann" may not manage topic orders`, decodeJSON[spec.ErrorResponse](t, r).Error.Message)
	r = e.must(t, tok, http.StatusForbidden, http.MethodGet, "/management/v1/topics/nosuch", "")
	assert.Equal(t, `forbidden: principal "ann" may not manage topic nosuch`, decodeJSON[spec.ErrorResponse](t, r).Error.Message)
	r = e.must(t, tok, http.StatusOK, http.MethodGet, "/management/v1/topics", "")
	assert.Empty(t, decodeJSON[server.ListTopicsResponse](t, r).Topics)
	e.must(t, root, http.StatusCreated, http.MethodPost, "/management/v1/grants", `{"role":"sales-rw","privilege":"manage","on":{"type":"namespace","namespace":["sales"]}}`)
	e.must(t, tok, http.StatusOK, http.MethodGet, "/management/v1/topics/orders", "")
	r = e.must(t, tok, http.StatusOK, http.MethodGet, "/management/v1/topics", "")
	assert.Len(t, decodeJSON[server.ListTopicsResponse](t, r).Topics, 1)
	// Manage on a namespace does not reach the principals API.
	e.must(t, tok, http.StatusForbidden, http.MethodGet, "/management/v1/principals", "")
	// Revoke: the next request is refused.
	e.must(t, root, http.StatusNoContent, http.MethodPost, "/management/v1/grants/revoke", `{"role":"sales-rw","privilege":"manage","on":{"type":"namespace","namespace":["sales"]}}`)
	e.must(t, root, http.StatusNoContent, http.MethodPost, "/management/v1/grants/revoke", `{"role":"sales-rw","privilege":"write","on":{"type":"namespace","namespace":["sales"]}}`)
	e.must(t, tok, http.StatusForbidden, http.MethodGet, "/v1/namespaces/sales/tables/orders", "")
	// A deleted principal's token is refused (401).
	e.must(t, root, http.StatusNoContent, http.MethodDelete, "/management/v1/principals/ann", "")
	e.must(t, tok, http.StatusUnauthorized, http.MethodGet, "/v1/config", "")
}

// TestAuthTokenEndpoint: both token paths, credentials in the form body
// or HTTP Basic, OAuth2-form errors, token exchange (refresh), the JWKS,
// and no secret or token in the logs.
func TestAuthTokenEndpoint(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {"root"}, "client_secret": {rootSecret}}
	for _, p := range []string{"/oauth/tokens", "/v1/oauth/tokens"} {
		r := e.post(t, p, form, "")
		require.Equal(t, http.StatusOK, r.Status, "%s: %s", p, r.Body)
		tr := decodeJSON[auth.TokenResponse](t, r)
		assert.Equal(t, "bearer", tr.TokenType)
		assert.Equal(t, int64(3600), tr.ExpiresIn)
		assert.Equal(t, "no-store", r.Header.Get("Cache-Control"))
		e.must(t, tr.AccessToken, http.StatusOK, http.MethodGet, "/v1/config", "")
	}
	r := e.post(t, "/oauth/tokens", url.Values{"grant_type": {"client_credentials"}}, "root:"+rootSecret)
	require.Equal(t, http.StatusOK, r.Status, "basic: %s", r.Body)
	tok := decodeJSON[auth.TokenResponse](t, r).AccessToken

	for name, c := range map[string]struct {
		form  url.Values
		basic string
		code  string
		st    int
	}{
		"wrong secret": {url.Values{"grant_type": {"client_credentials"}, "client_id": {"root"}, "client_secret": {"nope"}}, "", "invalid_client", 401},
		"basic wrong":  {url.Values{"grant_type": {"client_credentials"}}, "root:nope", "invalid_client", 401},
		"unknown":      {url.Values{"grant_type": {"client_credentials"}, "client_id": {"x"}, "client_secret": {"y"}}, "", "invalid_client", 401},
		"no grant":     {url.Values{"client_id": {"root"}, "client_secret": {rootSecret}}, "", "invalid_request", 400},
		"password":     {url.Values{"grant_type": {"password"}}, "", "unsupported_grant_type", 400},
		"bad exchange": {url.Values{"grant_type": {auth.GrantTokenExchange}, "subject_token": {"x.y.z"}}, "", "invalid_grant", 400},
	} {
		r := e.post(t, "/v1/oauth/tokens", c.form, c.basic)
		require.Equal(t, c.st, r.Status, "%s: %s", name, r.Body)
		assert.Equal(t, c.code, decodeJSON[auth.OAuthError](t, r).Code, name)
	}
	// JSON instead of a form.
	req, _ := http.NewRequest(http.MethodPost, e.url+"/v1/oauth/tokens", strings.NewReader(`{"grant_type":"client_credentials"}`))
	req.Header.Set("Content-Type", "application/json")
	assert.Equal(t, http.StatusBadRequest, send(t, req).Status)

	// Refresh by token exchange, as Iceberg's Java client does.
	r = e.post(t, "/v1/oauth/tokens", url.Values{"grant_type": {auth.GrantTokenExchange}, "subject_token": {tok},
		"subject_token_type": {"urn:ietf:params:oauth:token-type:access_token"}}, "")
	require.Equal(t, http.StatusOK, r.Status, "exchange: %s", r.Body)

	r = e.must(t, "", http.StatusOK, http.MethodGet, "/.well-known/jwks.json", "")
	jwks := decodeJSON[auth.JWKS](t, r)
	require.Len(t, jwks.Keys, 1)
	assert.Equal(t, "ES256", jwks.Keys[0].Alg)
	e.must(t, "", http.StatusOK, http.MethodGet, "/healthz", "")

	// Failed requests are logged; neither the secret nor any token is.
	e.must(t, "not.a.token", http.StatusUnauthorized, http.MethodGet, "/v1/config", "")
	e.must(t, tok, http.StatusNotFound, http.MethodGet, "/v1/namespaces/missing", "")
	logs := e.logs.String()
	require.Contains(t, logs, `"status":401`)
	for _, secret := range []string{rootSecret, tok, "not.a.token", url.QueryEscape(rootSecret)} {
		assert.NotContains(t, logs, secret)
	}
}

// TestAuthIcebergGoCredential: iceberg-go's REST client with
// credential=id:secret fetches its token from /v1/oauth/tokens and runs
// a table lifecycle as a principal granted create and drop on a
// namespace; with a wrong secret it cannot connect.
func TestAuthIcebergGoCredential(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	root := e.tokenFor(t, "root", rootSecret)
	e.must(t, root, http.StatusOK, http.MethodPost, "/v1/namespaces", `{"namespace":["lab"]}`)
	r := e.must(t, root, http.StatusCreated, http.MethodPost, "/management/v1/principals", `{"id":"spark-job"}`)
	secret := decodeJSON[server.PrincipalResponse](t, r).Secret
	e.must(t, root, http.StatusCreated, http.MethodPost, "/management/v1/roles", `{"name":"lab"}`)
	for _, p := range []string{"write", "create", "drop"} {
		e.must(t, root, http.StatusCreated, http.MethodPost, "/management/v1/grants", `{"role":"lab","privilege":"`+p+`","on":{"type":"namespace","namespace":["lab"]}}`)
	}
	e.must(t, root, http.StatusNoContent, http.MethodPut, "/management/v1/principals/spark-job/roles/lab", "")

	c := e.restClient(t, "spark-job:"+secret)
	ctx := t.Context()
	id := icecat.ToIdentifier("lab", "t")
	tbl, err := c.CreateTable(ctx, id, idDataSchema())
	require.NoError(t, err)
	tbl = appendRows(t, tbl, 1, 2, 3)
	n, sum := scanCountAndSum(t, tbl)
	assert.Equal(t, int64(3), n)
	assert.Equal(t, int64(6), sum)
	var names []string
	for ident, err := range c.ListTables(ctx, icecat.ToIdentifier("lab")) {
		require.NoError(t, err)
		names = append(names, strings.Join(ident, "."))
	}
	assert.Equal(t, []string{"lab.t"}, names)
	_, err = c.CreateTable(ctx, icecat.ToIdentifier("other", "t"), idDataSchema())
	require.ErrorIs(t, err, rest.ErrForbidden)
	require.ErrorContains(t, err, "ForbiddenException")
	require.NoError(t, c.DropTable(ctx, id))

	// A wrong secret fails at the token endpoint with OAuth2's
	// invalid_client, which iceberg-go reports as ErrOAuthError.
	_, err = rest.NewCatalog(ctx, "tarn", e.url, rest.WithCredential("spark-job:wrong"))
	require.ErrorIs(t, err, rest.ErrOAuthError)
	require.ErrorContains(t, err, "invalid_client")
}

// TestAuthNoneModeUnchanged: without Config.Auth no route asks for a
// token and the auth routes are absent (the principals API answers 503).
func TestAuthNoneModeUnchanged(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	for _, p := range []string{"/v1/config", "/v1/namespaces", "/metrics"} {
		rsp, err := http.Get(srv.URL + p)
		require.NoError(t, err)
		rsp.Body.Close()
		assert.Equal(t, http.StatusOK, rsp.StatusCode, p)
	}
	rsp, err := http.Get(srv.URL + "/management/v1/principals")
	require.NoError(t, err)
	var em spec.ErrorResponse
	require.NoError(t, json.NewDecoder(rsp.Body).Decode(&em))
	rsp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, rsp.StatusCode)
	assert.Equal(t, spec.ServiceUnavailable.Type, em.Error.Type)
	assert.Equal(t, http.StatusServiceUnavailable, em.Error.Code)
	rsp, err = http.PostForm(srv.URL+"/v1/oauth/tokens", url.Values{"grant_type": {"client_credentials"}})
	require.NoError(t, err)
	rsp.Body.Close()
	assert.Equal(t, http.StatusNotFound, rsp.StatusCode)
}

// TestAuthOwnedTableRefusedWhateverGrants: a table a topic owns refuses
// external commits (403) even to root, who may do anything else; reads
// still work.
func TestAuthOwnedTableRefusedWhateverGrants(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	e.seed(t)
	owners := &fakeOwners{owned: map[string]bool{}}
	e.cat.SetOwners(owners)
	owners.set("sales.orders", true, true)
	root := e.tokenFor(t, "root", rootSecret)
	before := e.must(t, root, http.StatusOK, http.MethodGet, "/v1/namespaces/sales/tables/orders", "").Body
	r := e.must(t, root, http.StatusForbidden, http.MethodPost, "/v1/namespaces/sales/tables/orders",
		`{"requirements":[],"updates":[{"action":"set-properties","updates":{"k":"v"}}]}`)
	assert.Equal(t, "ForbiddenException", decodeJSON[spec.ErrorResponse](t, r).Error.Type)
	after := e.must(t, root, http.StatusOK, http.MethodGet, "/v1/namespaces/sales/tables/orders", "").Body
	assert.Equal(t, string(before), string(after))
}

// TestIcebergGoCatalogConformanceOAuth2 runs iceberg-go's shared catalog
// suite (catalog/catalogtest) through its REST client with
// credential=root:secret against Tarn in oauth2 mode: the catalog core
// behaves the same behind tokens.
func TestIcebergGoCatalogConformanceOAuth2(t *testing.T) {
	t.Parallel()
	catalogtest.RunCatalogTests(t, catalogtest.Config{
		SupportsNamespaceProperties: true,
		NewCatalog: func(t *testing.T) icecat.Catalog {
			return newAuthEnv(t).restClient(t, "root:"+rootSecret)
		},
	})
}

// TestAuthLocationHijackRefused: a principal with write and create on
// sales only may not register hr.pay's metadata as sales.stolen (it
// would read hr's rows through it), nor create or stage-create a sales
// table, nor set a sales table's location, pointing into hr's directory:
// each is 403 ForbiddenException and changes nothing (so is a
// write.data.path / write.metadata.path or a view location there). A
// location under sales's own directory is allowed unless it overlaps
// another table's files (400, for root too).
func TestAuthLocationHijackRefused(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	e.seed(t)
	root := e.tokenFor(t, "root", rootSecret)
	r := e.must(t, root, http.StatusCreated, http.MethodPost, "/management/v1/principals", `{"id":"eve"}`)
	eve := decodeJSON[server.PrincipalResponse](t, r)
	e.must(t, root, http.StatusCreated, http.MethodPost, "/management/v1/roles", `{"name":"sales-rw"}`)
	for _, p := range []string{"write", "create"} {
		e.must(t, root, http.StatusCreated, http.MethodPost, "/management/v1/grants", `{"role":"sales-rw","privilege":"`+p+`","on":{"type":"namespace","namespace":["sales"]}}`)
	}
	e.must(t, root, http.StatusNoContent, http.MethodPut, "/management/v1/principals/eve/roles/sales-rw", "")
	tok := e.tokenFor(t, "eve", eve.Secret)

	r = e.must(t, root, http.StatusOK, http.MethodGet, "/v1/namespaces/hr/tables/pay", "")
	pay := decodeJSON[struct {
		MetadataLocation string         `json:"metadata-location"`
		Metadata         map[string]any `json:"metadata"`
	}](t, r)
	hrLoc := pay.Metadata["location"].(string)
	require.Contains(t, hrLoc, "/warehouse/hr/pay")
	whLoc := hrLoc[:strings.Index(hrLoc, "/hr/pay")]
	before := e.state(t)

	forbidden := func(method, path, body string) {
		t.Helper()
		r := e.must(t, tok, http.StatusForbidden, method, path, body)
		assert.Equal(t, "ForbiddenException", decodeJSON[spec.ErrorResponse](t, r).Error.Type)
	}
	forbidden(http.MethodPost, "/v1/namespaces/sales/register", `{"name":"stolen","metadata-location":"`+pay.MetadataLocation+`"}`)
	forbidden(http.MethodPost, "/v1/namespaces/sales/register-view", `{"name":"stolen","metadata-location":"`+pay.MetadataLocation+`"}`)
	for _, loc := range []string{hrLoc, whLoc + "/hr/x", whLoc + "/sales/../hr/pay", whLoc + "/sales", whLoc + "/salesx/t", whLoc + "/sales%2F..%2Fhr/t"} {
		if !strings.Contains(loc, "..") { // createTable refuses '..' itself (400)
			forbidden(http.MethodPost, "/v1/namespaces/sales/tables", `{"name":"stolen","location":"`+loc+`","schema":`+schemaJSON+`}`)
			forbidden(http.MethodPost, "/v1/namespaces/sales/tables", `{"name":"stolen","location":"`+loc+`","stage-create":true,"schema":`+schemaJSON+`}`)
			forbidden(http.MethodPost, "/v1/namespaces/sales/views", `{"name":"stolen","location":"`+loc+`","schema":`+schemaJSON+`,"view-version":{}}`)
		}
		forbidden(http.MethodPost, "/v1/namespaces/sales/tables/orders", `{"requirements":[],"updates":[{"action":"set-location","location":"`+loc+`"}]}`)
		for _, prop := range []string{"write.data.path", "write.metadata.path"} {
			forbidden(http.MethodPost, "/v1/namespaces/sales/tables/orders", `{"requirements":[],"updates":[{"action":"set-properties","updates":{"`+prop+`":"`+loc+`"}}]}`)
			forbidden(http.MethodPost, "/v1/namespaces/sales/tables", `{"name":"stolen","properties":{"`+prop+`":"`+loc+`"},"schema":`+schemaJSON+`}`)
		}
		forbidden(http.MethodPost, "/v1/namespaces/sales/views/v", `{"requirements":[],"updates":[{"action":"set-location","location":"`+loc+`"}]}`)
		forbidden(http.MethodPost, "/v1/transactions/commit", `{"table-changes":[{"identifier":{"namespace":["sales"],"name":"orders"},"requirements":[],"updates":[{"action":"set-location","location":"`+loc+`"}]}]}`)
	}
	// The namespace's location property is the parent of its new
	// tables: outside its own directory it needs manage too.
	for _, loc := range []string{whLoc + "/hr", whLoc + "/sales//../hr", whLoc} {
		forbidden(http.MethodPost, "/v1/namespaces/sales/properties", `{"updates":{"location":"`+loc+`"}}`)
		forbidden(http.MethodPost, "/v1/namespaces", `{"namespace":["sales","sub"],"properties":{"location":"`+loc+`"}}`)
	}
	assert.Equal(t, before, e.state(t), "refused requests changed nothing")
	e.must(t, tok, http.StatusOK, http.MethodPost, "/v1/namespaces/sales/properties", `{"updates":{"location":"`+whLoc+`/sales/here"}}`)

	// Under sales's own directory: allowed.
	r = e.must(t, tok, http.StatusOK, http.MethodPost, "/v1/namespaces/sales/tables", `{"name":"mine","location":"`+whLoc+`/sales/mine-here","schema":`+schemaJSON+`}`)
	assert.Equal(t, whLoc+"/sales/mine-here", decodeJSON[struct {
		Metadata map[string]any `json:"metadata"`
	}](t, r).Metadata["location"])

	// Inside sales's own directory, another table's files are still not
	// eve's: a location at, inside or above sales.orders's, or a data or
	// metadata path inside it, is 400 for a new table and for a commit.
	r = e.must(t, root, http.StatusOK, http.MethodGet, "/v1/namespaces/sales/tables/orders", "")
	ordersLoc := decodeJSON[struct {
		Metadata map[string]any `json:"metadata"`
	}](t, r).Metadata["location"].(string)
	before = e.state(t)
	overlapping := func(method, path, body string) {
		t.Helper()
		r := e.must(t, tok, http.StatusBadRequest, method, path, body)
		assert.Regexp(t, "overlaps the files of another table or view|empty path segment", decodeJSON[spec.ErrorResponse](t, r).Error.Message)
	}
	for _, loc := range []string{ordersLoc, ordersLoc + "/data", strings.Replace(ordersLoc, "/sales/", "/sales//", 1), strings.Replace(ordersLoc, "file:", "FILE:", 1)} {
		overlapping(http.MethodPost, "/v1/namespaces/sales/tables", `{"name":"stolen","location":"`+loc+`","schema":`+schemaJSON+`}`)
		overlapping(http.MethodPost, "/v1/namespaces/sales/tables", `{"name":"stolen","location":"`+loc+`","stage-create":true,"schema":`+schemaJSON+`}`)
		overlapping(http.MethodPost, "/v1/namespaces/sales/tables/mine", `{"requirements":[],"updates":[{"action":"set-location","location":"`+loc+`"}]}`)
	}
	for _, prop := range []string{"write.data.path", "write.metadata.path"} {
		overlapping(http.MethodPost, "/v1/namespaces/sales/tables", `{"name":"stolen","properties":{"`+prop+`":"`+ordersLoc+`/data"},"schema":`+schemaJSON+`}`)
		overlapping(http.MethodPost, "/v1/namespaces/sales/tables/mine", `{"requirements":[],"updates":[{"action":"set-properties","updates":{"`+prop+`":"`+ordersLoc+`/data"}}]}`)
	}
	assert.Equal(t, before, e.state(t), "refused requests changed nothing")

	// Not even root may register hr.pay's metadata as a second table
	// while hr.pay lives: both would own the same files.
	r = e.must(t, root, http.StatusBadRequest, http.MethodPost, "/v1/namespaces/sales/register", `{"name":"adopted","metadata-location":"`+pay.MetadataLocation+`"}`)
	assert.Contains(t, decodeJSON[spec.ErrorResponse](t, r).Error.Message, "overlaps the files of another table or view")
}

// TestAuthTokensEndWithCredentials: over HTTP, after
// `tarn principals rotate-secret etl` the old token is 401 and cannot be
// exchanged (400 invalid_grant); after `tarn principals delete nobody`
// and `create nobody` nobody's old token is 401.
func TestAuthTokensEndWithCredentials(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	nobodySecret := e.seed(t)
	root := e.tokenFor(t, "root", rootSecret)
	r := e.must(t, root, http.StatusCreated, http.MethodPost, "/management/v1/principals", `{"id":"etl"}`)
	etl := e.tokenFor(t, "etl", decodeJSON[server.PrincipalResponse](t, r).Secret)
	e.must(t, etl, http.StatusOK, http.MethodGet, "/v1/config", "")
	r = e.must(t, root, http.StatusOK, http.MethodPost, "/management/v1/principals/etl/rotate-secret", "")
	newSecret := decodeJSON[server.PrincipalResponse](t, r).Secret
	e.must(t, etl, http.StatusUnauthorized, http.MethodGet, "/v1/config", "")
	r = e.post(t, "/v1/oauth/tokens", url.Values{"grant_type": {auth.GrantTokenExchange}, "subject_token": {etl},
		"subject_token_type": {"urn:ietf:params:oauth:token-type:access_token"}}, "")
	require.Equal(t, http.StatusBadRequest, r.Status, "body: %s", r.Body)
	assert.Equal(t, "invalid_grant", decodeJSON[auth.OAuthError](t, r).Code)
	e.must(t, e.tokenFor(t, "etl", newSecret), http.StatusOK, http.MethodGet, "/v1/config", "")

	nobody := e.tokenFor(t, "nobody", nobodySecret)
	e.must(t, nobody, http.StatusOK, http.MethodGet, "/v1/config", "")
	e.must(t, root, http.StatusNoContent, http.MethodDelete, "/management/v1/principals/nobody", "")
	e.must(t, root, http.StatusCreated, http.MethodPost, "/management/v1/principals", `{"id":"nobody"}`)
	e.must(t, nobody, http.StatusUnauthorized, http.MethodGet, "/v1/config", "")
}

// TestAuthTokenExchangeChecksClientCredentials: a token exchange that
// also sends client credentials (HTTP Basic or in the body) is refused
// with 401 invalid_client when they are wrong, and succeeds when they
// are right or absent.
func TestAuthTokenExchangeChecksClientCredentials(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	tok := e.tokenFor(t, "root", rootSecret)
	form := func(extra ...string) url.Values {
		v := url.Values{"grant_type": {auth.GrantTokenExchange}, "subject_token": {tok},
			"subject_token_type": {"urn:ietf:params:oauth:token-type:access_token"}}
		for i := 0; i+1 < len(extra); i += 2 {
			v.Set(extra[i], extra[i+1])
		}
		return v
	}
	for name, c := range map[string]struct {
		form  url.Values
		basic string
	}{
		"basic wrong secret": {form(), "root:nope"},
		"basic unknown":      {form(), "mallory:x"},
		"body wrong secret":  {form("client_id", "root", "client_secret", "nope"), ""},
		"body secret, no id": {form("client_secret", rootSecret), ""},
	} {
		r := e.post(t, "/v1/oauth/tokens", c.form, c.basic)
		require.Equal(t, http.StatusUnauthorized, r.Status, "%s: %s", name, r.Body)
		assert.Equal(t, "invalid_client", decodeJSON[auth.OAuthError](t, r).Code, name)
		assert.Contains(t, r.Header.Get("WWW-Authenticate"), "Basic", name)
	}
	for name, c := range map[string]struct {
		form  url.Values
		basic string
	}{
		"basic right": {form(), "root:" + rootSecret},
		"body right":  {form("client_id", "root", "client_secret", rootSecret), ""},
		"none":        {form(), ""},
	} {
		r := e.post(t, "/v1/oauth/tokens", c.form, c.basic)
		require.Equal(t, http.StatusOK, r.Status, "%s: %s", name, r.Body)
		e.must(t, decodeJSON[auth.TokenResponse](t, r).AccessToken, http.StatusOK, http.MethodGet, "/v1/config", "")
	}
}

// TestAuthListPagesLeakNoHiddenName: a principal that may see one
// namespace (and one table) of many pages through the listings with
// pageSize 1: every page holds an entry it may see, and no page token
// decodes to a hidden name (a trial read hidden namespaces a, aa, ab, c
// off the tokens of empty pages).
func TestAuthListPagesLeakNoHiddenName(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	e.seed(t) // namespaces sales and hr, tables sales.orders and hr.pay
	root := e.tokenFor(t, "root", rootSecret)
	for _, ns := range []string{"a", "aa", "ab", "b", "c"} {
		e.must(t, root, http.StatusOK, http.MethodPost, "/v1/namespaces", `{"namespace":["`+ns+`"]}`)
	}
	for _, name := range []string{"a1", "b1", "hidden", "zz"} {
		e.must(t, root, http.StatusOK, http.MethodPost, "/v1/namespaces/b/tables", `{"name":"`+name+`","schema":`+schemaJSON+`}`)
	}
	r := e.must(t, root, http.StatusCreated, http.MethodPost, "/management/v1/principals", `{"id":"bob"}`)
	bob := decodeJSON[server.PrincipalResponse](t, r)
	e.must(t, root, http.StatusCreated, http.MethodPost, "/management/v1/roles", `{"name":"b-reader"}`)
	e.must(t, root, http.StatusCreated, http.MethodPost, "/management/v1/grants", `{"role":"b-reader","privilege":"read","on":{"type":"table","namespace":["b"],"name":"b1"}}`)
	e.must(t, root, http.StatusNoContent, http.MethodPut, "/management/v1/principals/bob/roles/b-reader", "")
	tok := e.tokenFor(t, "bob", bob.Secret)

	hidden := []string{"a", "aa", "ab", "c", "hr", "sales", "a1", "hidden", "zz"}
	walk := func(path, field string) []string {
		t.Helper()
		var seen []string
		token := ""
		for range 20 {
			r := e.must(t, tok, http.StatusOK, http.MethodGet, path+"?pageSize=1&pageToken="+url.QueryEscape(token), "")
			var page map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(r.Body, &page))
			var entries []json.RawMessage
			require.NoError(t, json.Unmarshal(page[field], &entries))
			for _, en := range entries {
				seen = append(seen, string(en))
			}
			token = ""
			if raw, ok := page["next-page-token"]; ok {
				require.NoError(t, json.Unmarshal(raw, &token))
			}
			if token == "" {
				return seen
			}
			require.NotEmpty(t, entries, "a page that is not the last holds an entry")
			dec, err := base64.RawURLEncoding.DecodeString(token)
			require.NoError(t, err)
			for _, h := range hidden {
				assert.NotRegexp(t, `(^|[^a-z0-9])`+h+`($|[^a-z0-9])`, string(dec)[1:], "token %q names hidden %s", token, h)
			}
		}
		t.Fatal("listing did not end")
		return nil
	}
	assert.Equal(t, []string{`["b"]`}, walk("/v1/namespaces", "namespaces"))
	assert.Equal(t, []string{`{"namespace":["b"],"name":"b1"}`}, walk("/v1/namespaces/b/tables", "identifiers"))
}

// TestAuthNamespaceManagerGrants: manage on a namespace covers the grants
// under it (issue 7: "manage — topics, maintenance and grants under that
// securable"): its holder grants and revokes privileges on the namespace
// and its tables, not on another namespace or the catalog, and may not
// list every grant nor make principals or roles.
func TestAuthNamespaceManagerGrants(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	e.seed(t)
	root := e.tokenFor(t, "root", rootSecret)
	r := e.must(t, root, http.StatusCreated, http.MethodPost, "/management/v1/principals", `{"id":"lead"}`)
	lead := decodeJSON[server.PrincipalResponse](t, r)
	for _, role := range []string{"sales-admin", "analysts"} {
		e.must(t, root, http.StatusCreated, http.MethodPost, "/management/v1/roles", `{"name":"`+role+`"}`)
	}
	e.must(t, root, http.StatusCreated, http.MethodPost, "/management/v1/grants", `{"role":"sales-admin","privilege":"manage","on":{"type":"namespace","namespace":["sales"]}}`)
	e.must(t, root, http.StatusNoContent, http.MethodPut, "/management/v1/principals/lead/roles/sales-admin", "")
	tok := e.tokenFor(t, "lead", lead.Secret)

	onOrders := `{"role":"analysts","privilege":"read","on":{"type":"table","namespace":["sales"],"name":"orders"}}`
	e.must(t, tok, http.StatusCreated, http.MethodPost, "/management/v1/grants", onOrders)
	e.must(t, tok, http.StatusCreated, http.MethodPost, "/management/v1/grants", `{"role":"analysts","privilege":"read","on":{"type":"namespace","namespace":["sales"]}}`)
	before := e.state(t)
	for _, body := range []string{
		`{"role":"analysts","privilege":"read","on":{"type":"table","namespace":["hr"],"name":"pay"}}`,
		`{"role":"analysts","privilege":"read","on":{"type":"namespace","namespace":["hr"]}}`,
		`{"role":"analysts","privilege":"manage","on":{"type":"catalog"}}`,
		`{"role":"analysts","privilege":"read","on":{"type":"bogus"}}`,
	} {
		e.must(t, tok, http.StatusForbidden, http.MethodPost, "/management/v1/grants", body)
		e.must(t, tok, http.StatusForbidden, http.MethodPost, "/management/v1/grants/revoke", body)
	}
	e.must(t, tok, http.StatusForbidden, http.MethodGet, "/management/v1/grants", "")
	e.must(t, tok, http.StatusForbidden, http.MethodPost, "/management/v1/roles", `{"name":"mine"}`)
	e.must(t, tok, http.StatusForbidden, http.MethodPost, "/management/v1/principals", `{"id":"mine"}`)
	assert.Equal(t, before, e.state(t), "refused requests changed nothing")

	r = e.must(t, root, http.StatusOK, http.MethodGet, "/management/v1/grants?role=analysts", "")
	assert.Len(t, decodeJSON[server.ListGrantsResponse](t, r).Grants, 2)
	e.must(t, tok, http.StatusNoContent, http.MethodPost, "/management/v1/grants/revoke", onOrders)
	r = e.must(t, root, http.StatusOK, http.MethodGet, "/management/v1/grants?role=analysts", "")
	assert.Len(t, decodeJSON[server.ListGrantsResponse](t, r).Grants, 1)
}
