package auth

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TestTokenExchangeRefusesImpersonation: a token exchange used to issue
// a fresh token for the subject token's principal whoever the
// authenticated client was, so a client holding a token it had been
// handed (bob, given alice's token) could mint alice tokens with its
// own credentials. Now every party that authenticates to the exchange
// (client credentials, the request's bearer token, actor_token, or a
// bare client_id) must be the subject or hold manage on the catalog;
// an external issuer's token whose claim equals the subject's id is not
// the subject.
func TestTokenExchangeRefusesImpersonation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	idp := newFakeOIDC(t)
	s := newService(t, OIDCConfig{Issuer: idp.srv.URL, Audience: "tarn-api", PrincipalClaim: "email", RolesClaim: "groups"})
	st := s.Store()
	secrets := map[string]string{}
	for _, id := range []string{"alice", "bob", "admin", "nsadmin"} {
		sec, err := st.CreatePrincipal(ctx, id, false)
		if err != nil {
			t.Fatal(err)
		}
		secrets[id] = sec
	}
	rootSecret, _, err := st.EnsureRoot(ctx, "root", "")
	if err != nil {
		t.Fatal(err)
	}
	secrets["root"] = rootSecret
	for _, err := range []error{
		st.CreateRole(ctx, "admins"),
		st.CreateRole(ctx, "sales-admins"),
		st.AddGrant(ctx, Grant{Role: "admins", Privilege: Manage, On: Catalog()}),
		st.AddGrant(ctx, Grant{Role: "sales-admins", Privilege: Manage, On: Namespace([]string{"sales"})}),
		st.SetRole(ctx, "admin", "admins", true),
		st.SetRole(ctx, "nsadmin", "sales-admins", true),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	tokens := map[string]string{}
	for id, sec := range secrets {
		r, err := s.Token(ctx, TokenRequest{GrantType: GrantClientCredentials, ClientID: id, ClientSecret: sec})
		if err != nil {
			t.Fatal(err)
		}
		tokens[id] = r.AccessToken
	}
	external := func(email string, groups ...string) TokenRequest {
		return TokenRequest{ClientToken: idp.token(t, jwt.MapClaims{"iss": idp.srv.URL, "aud": "tarn-api",
			"email": email, "groups": groups, "exp": time.Now().Add(time.Hour).Unix()})}
	}
	creds := func(id string) TokenRequest { return TokenRequest{ClientID: id, ClientSecret: secrets[id]} }
	bearer := func(id string) TokenRequest { return TokenRequest{ClientToken: tokens[id]} }
	actor := func(id string) TokenRequest {
		return TokenRequest{ActorToken: tokens[id], ActorTokenType: tokenTypeAccess}
	}
	both := func(a, b TokenRequest) TokenRequest {
		a.ActorToken, a.ActorTokenType = b.ActorToken, b.ActorTokenType
		return a
	}

	for name, c := range map[string]struct {
		caller TokenRequest // its client fields; the subject is alice's token
		code   string       // "" = alice gets a fresh token
		status int
	}{
		"refresh, no client":             {TokenRequest{}, "", 200},
		"own client credentials":         {creds("alice"), "", 200},
		"own bearer token":               {bearer("alice"), "", 200},
		"own actor token":                {actor("alice"), "", 200},
		"own client_id, no secret":       {TokenRequest{ClientID: "alice"}, "", 200},
		"root":                           {creds("root"), "", 200},
		"catalog manager, credentials":   {creds("admin"), "", 200},
		"catalog manager, bearer":        {bearer("admin"), "", 200},
		"catalog manager, actor":         {actor("admin"), "", 200},
		"external catalog manager":       {external("ops@example.com", "admins"), "", 200},
		"external token named alice":     {external("alice"), "unauthorized_client", 400},
		"other's client credentials":     {creds("bob"), "unauthorized_client", 400},
		"other's bearer token":           {bearer("bob"), "unauthorized_client", 400},
		"other's actor token":            {actor("bob"), "unauthorized_client", 400},
		"other's client_id, no secret":   {TokenRequest{ClientID: "bob"}, "unauthorized_client", 400},
		"namespace manager only":         {creds("nsadmin"), "unauthorized_client", 400},
		"own credentials, other's actor": {both(creds("alice"), actor("bob")), "unauthorized_client", 400},
		"wrong secret":                   {TokenRequest{ClientID: "alice", ClientSecret: "nope"}, "invalid_client", 401},
		"junk bearer token":              {TokenRequest{ClientToken: "x.y.z"}, "invalid_client", 401},
		"junk actor token":               {TokenRequest{ActorToken: "x.y.z"}, "invalid_grant", 400},
		"unknown actor token type":       {TokenRequest{ActorToken: tokens["alice"], ActorTokenType: "urn:x"}, "invalid_request", 400},
	} {
		t.Run(name, func(t *testing.T) {
			r := c.caller
			r.GrantType, r.SubjectToken, r.SubjectTokenType = GrantTokenExchange, tokens["alice"], tokenTypeAccess
			resp, err := s.Token(ctx, r)
			if c.code != "" {
				var oe *OAuthError
				if !errors.As(err, &oe) || oe.Code != c.code || oe.Status != c.status {
					t.Fatalf("want %d %s, got %+v, %v", c.status, c.code, resp, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			id, err := s.Authenticate(ctx, resp.AccessToken)
			if err != nil || id.Principal != "alice" || id.Root {
				t.Fatalf("issued token is %+v, %v; want alice's", id, err)
			}
		})
	}
}
