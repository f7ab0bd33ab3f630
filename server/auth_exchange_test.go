package server_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/auth"
	"github.com/tarnhq/tarn/server"
)

// TestAuthTokenExchangeOwnTokensOnly: POST /v1/oauth/tokens used to
// exchange any valid subject token for a fresh one of its principal,
// whoever the client authenticated as, so bob, handed etl's token,
// could mint etl tokens with his own credentials. Now the client (HTTP
// Basic, or the bearer token Iceberg's Java client sends with its
// refresh, or actor_token) must be the subject's principal or hold
// manage on the catalog; otherwise 400 unauthorized_client.
func TestAuthTokenExchangeOwnTokensOnly(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	root := e.tokenFor(t, "root", rootSecret)
	secret := map[string]string{}
	for _, id := range []string{"etl", "bob", "ops"} {
		r := e.must(t, root, http.StatusCreated, http.MethodPost, "/management/v1/principals", `{"id":"`+id+`"}`)
		secret[id] = decodeJSON[server.PrincipalResponse](t, r).Secret
	}
	e.must(t, root, http.StatusCreated, http.MethodPost, "/management/v1/roles", `{"name":"admins"}`)
	e.must(t, root, http.StatusCreated, http.MethodPost, "/management/v1/grants", `{"role":"admins","privilege":"manage","on":{"type":"catalog"}}`)
	e.must(t, root, http.StatusNoContent, http.MethodPut, "/management/v1/principals/ops/roles/admins", "")
	tok := map[string]string{}
	for id, sec := range secret {
		tok[id] = e.tokenFor(t, id, sec)
	}
	exchange := func(t *testing.T, basic, bearer string, extra url.Values) rawResponse {
		t.Helper()
		form := url.Values{"grant_type": {auth.GrantTokenExchange}, "subject_token": {tok["etl"]},
			"subject_token_type": {"urn:ietf:params:oauth:token-type:access_token"}}
		for k, v := range extra {
			form[k] = v
		}
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, e.url+"/v1/oauth/tokens", strings.NewReader(form.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if basic != "" {
			id, sec, _ := strings.Cut(basic, ":")
			req.SetBasicAuth(id, sec)
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		return send(t, req)
	}
	actor := func(id string) url.Values {
		return url.Values{"actor_token": {tok[id]}, "actor_token_type": {"urn:ietf:params:oauth:token-type:access_token"}}
	}

	for name, c := range map[string]struct {
		basic, bearer string
		extra         url.Values
		code          string // "" = 200 with a token of etl
	}{
		"refresh (Java: own bearer)":    {bearer: tok["etl"]},
		"own Basic credentials":         {basic: "etl:" + secret["etl"]},
		"catalog manager's bearer":      {bearer: tok["ops"]},
		"catalog manager as actor":      {bearer: tok["ops"], extra: actor("ops")},
		"root's Basic credentials":      {basic: "root:" + rootSecret},
		"another principal's Basic":     {basic: "bob:" + secret["bob"], code: "unauthorized_client"},
		"another principal's bearer":    {bearer: tok["bob"], code: "unauthorized_client"},
		"another principal as actor":    {extra: actor("bob"), code: "unauthorized_client"},
		"another principal's client_id": {extra: url.Values{"client_id": {"bob"}}, code: "unauthorized_client"},
		"invalid bearer":                {bearer: "x.y.z", code: "invalid_client"},
	} {
		t.Run(name, func(t *testing.T) {
			r := exchange(t, c.basic, c.bearer, c.extra)
			if c.code != "" {
				want := http.StatusBadRequest
				if c.code == "invalid_client" {
					want = http.StatusUnauthorized
				}
				require.Equal(t, want, r.Status, "body: %s", r.Body)
				assert.Equal(t, c.code, decodeJSON[auth.OAuthError](t, r).Code)
				return
			}
			require.Equal(t, http.StatusOK, r.Status, "body: %s", r.Body)
			id, err := e.svc.Authenticate(t.Context(), decodeJSON[auth.TokenResponse](t, r).AccessToken)
			require.NoError(t, err)
			assert.Equal(t, "etl", id.Principal)
		})
	}
	// Refused exchanges leave no trace of the tokens in the logs.
	logs := e.logs.String()
	for id, v := range tok {
		assert.NotContains(t, logs, v, id)
	}
}
