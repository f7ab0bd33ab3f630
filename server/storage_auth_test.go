package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"github.com/tarnhq/tarn/auth"
	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/catalog/bolt"
	"github.com/tarnhq/tarn/internal/testmoto"
	"github.com/tarnhq/tarn/server"
	"github.com/tarnhq/tarn/spec"
	"github.com/tarnhq/tarn/storage"
)

// stsStub answers STS AssumeRole and records each request's session
// policy, which moto would accept and ignore.
type stsStub struct {
	mu       sync.Mutex
	policies []string
}

func (s *stsStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	s.mu.Lock()
	s.policies = append(s.policies, r.Form.Get("Policy"))
	n := len(s.policies)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/xml")
	fmt.Fprintf(w, `<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult>
<Credentials><AccessKeyId>ASIASTUB%d</AccessKeyId><SecretAccessKey>stub-secret-%d</SecretAccessKey><SessionToken>stub-token-%d</SessionToken><Expiration>2099-01-01T00:00:00Z</Expiration></Credentials>
<AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/tarn-vend/tarn</Arn><AssumedRoleId>AROA:tarn</AssumedRoleId></AssumedRoleUser>
</AssumeRoleResult><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></AssumeRoleResponse>`, n, n, n)
}

func (s *stsStub) last(t *testing.T) map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	require.NotEmpty(t, s.policies)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(s.policies[len(s.policies)-1]), &doc))
	return doc
}

// actions lists the policy's actions.
func actions(doc map[string]any) []string {
	var out []string
	for _, st := range doc["Statement"].([]any) {
		for _, a := range st.(map[string]any)["Action"].([]any) {
			out = append(out, a.(string))
		}
	}
	return out
}

// TestS3VendedCredentialsFollowGrants: with --auth oauth2, a principal
// that may only read the table gets credentials whose session policy
// allows only s3:GetObject and s3:ListBucket; one that may write gets the
// write actions too. STS is a stub that records the policy (moto ignores
// policies); S3 is moto.
func TestS3VendedCredentialsFollowGrants(t *testing.T) {
	t.Parallel()
	ep := testmoto.Endpoint(t)
	stub := &stsStub{}
	sts := httptest.NewServer(stub)
	t.Cleanup(sts.Close)
	dir := t.TempDir()
	wh := testmoto.Warehouse(t, ep, catalog.DefaultWarehouse, map[string]string{storage.PropS3RoleARN: testmoto.RoleARN, storage.PropSTSEndpoint: sts.URL})
	store, err := bolt.Open(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	cat, err := catalog.New(catalog.Config{Store: store, Warehouses: []*catalog.Warehouse{wh}})
	require.NoError(t, err)
	key, err := auth.LoadOrCreateKey(t.Context(), store, dir)
	require.NoError(t, err)
	st := auth.NewStore(store, bcrypt.MinCost)
	_, _, err = st.EnsureRoot(t.Context(), "root", rootSecret)
	require.NoError(t, err)
	svc, err := auth.NewService(auth.Config{Store: st, Key: key})
	require.NoError(t, err)
	logs := &syncBuffer{}
	hs := httptest.NewServer(server.New(cat, server.Config{Auth: svc, Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}).Handler())
	t.Cleanup(hs.Close)

	call := func(token, method, path, body string, hdr map[string]string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, hs.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		if strings.HasPrefix(body, "{") {
			req.Header.Set("Content-Type", "application/json")
		} else if body != "" {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		buf, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, buf
	}
	token := func(id, secret string) string {
		st, b := call("", http.MethodPost, "/v1/oauth/tokens", url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}, "scope": {"catalog"}}.Encode(), nil)
		require.Equal(t, http.StatusOK, st, string(b))
		var tr auth.TokenResponse
		require.NoError(t, json.Unmarshal(b, &tr))
		return tr.AccessToken
	}
	root := token("root", rootSecret)
	must := func(tok string, want int, method, path, body string) []byte {
		t.Helper()
		st, b := call(tok, method, path, body, nil)
		require.Equal(t, want, st, "%s %s: %s", method, path, b)
		return b
	}
	must(root, http.StatusOK, http.MethodPost, "/v1/namespaces", `{"namespace":["sales"]}`)
	must(root, http.StatusOK, http.MethodPost, "/v1/namespaces/sales/tables", `{"name":"orders","schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","type":"long","required":true}]}}`)
	var reader server.PrincipalResponse
	require.NoError(t, json.Unmarshal(must(root, http.StatusCreated, http.MethodPost, "/management/v1/principals", `{"id":"reader"}`), &reader))
	must(root, http.StatusCreated, http.MethodPost, "/management/v1/roles", `{"name":"readers"}`)
	must(root, http.StatusCreated, http.MethodPost, "/management/v1/grants", `{"role":"readers","privilege":"read","on":{"type":"catalog"}}`)
	code, b := call(root, http.MethodPut, "/management/v1/principals/reader/roles/readers", "", nil)
	require.Less(t, code, 300, string(b))
	readerTok := token("reader", reader.Secret)

	vend := map[string]string{"X-Iceberg-Access-Delegation": "vended-credentials"}
	code, b = call(readerTok, http.MethodGet, "/v1/namespaces/sales/tables/orders", "", vend)
	require.Equal(t, http.StatusOK, code, string(b))
	var lt spec.LoadTableResult
	require.NoError(t, json.Unmarshal(b, &lt))
	require.Len(t, lt.StorageCredentials, 1)
	require.ElementsMatch(t, []string{"s3:GetObject", "s3:ListBucket"}, actions(stub.last(t)), "a reader's credentials only read")

	code, b = call(readerTok, http.MethodGet, "/v1/namespaces/sales/tables/orders/credentials", "", nil)
	require.Equal(t, http.StatusOK, code, string(b))
	require.ElementsMatch(t, []string{"s3:GetObject", "s3:ListBucket"}, actions(stub.last(t)))

	code, b = call(root, http.MethodGet, "/v1/namespaces/sales/tables/orders", "", vend)
	require.Equal(t, http.StatusOK, code, string(b))
	require.Contains(t, actions(stub.last(t)), "s3:PutObject", "a writer's credentials write")
	require.Contains(t, actions(stub.last(t)), "s3:DeleteObject")

	// The reader may not have a PUT signed (auth.go: write for anything
	// but GET/HEAD).
	code, _ = call(readerTok, http.MethodPost, "/v1/namespaces/sales/tables/orders/sign",
		`{"region":"us-east-1","method":"PUT","uri":"`+ep+`/x/y","headers":{}}`, nil)
	require.Equal(t, http.StatusForbidden, code)
	require.NotContains(t, logs.String(), "stub-secret")
	require.NotContains(t, logs.String(), testmoto.SecretAccessKey)
}
