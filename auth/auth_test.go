package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/crypto/bcrypt"
)

// memRecords is an in-memory RecordStore.
type memRecords struct {
	mu sync.Mutex
	m  map[string]map[string][]byte
}

func (r *memRecords) PutRecord(_ context.Context, c, k string, v []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]map[string][]byte{}
	}
	if r.m[c] == nil {
		r.m[c] = map[string][]byte{}
	}
	r.m[c][k] = v
	return nil
}

func (r *memRecords) CreateRecord(ctx context.Context, c, k string, v []byte) ([]byte, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.m[c][k]; ok {
		return old, false, nil
	}
	if r.m == nil {
		r.m = map[string]map[string][]byte{}
	}
	if r.m[c] == nil {
		r.m[c] = map[string][]byte{}
	}
	r.m[c][k] = v
	return v, true, nil
}

func (r *memRecords) GetRecord(_ context.Context, c, k string) ([]byte, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.m[c][k]
	return v, ok, nil
}

func (r *memRecords) ListRecords(_ context.Context, c string) (map[string][]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]byte{}
	for k, v := range r.m[c] {
		out[k] = v
	}
	return out, nil
}

func (r *memRecords) DeleteRecord(_ context.Context, c, k string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m[c], k)
	return nil
}

func newService(t *testing.T, oidc ...OIDCConfig) *Service {
	t.Helper()
	recs := &memRecords{}
	key, err := LoadOrCreateKey(t.Context(), recs, "")
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewService(Config{Store: NewStore(recs, bcrypt.MinCost), Key: key, OIDC: oidc})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSecurableParseAndCover(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"catalog", "namespace:a", "namespace:a.b", "table:a.b.t", "view:a.v"} {
		s, err := ParseSecurable(v)
		if err != nil || s.String() != v {
			t.Fatalf("%s: %v %v", v, s, err)
		}
	}
	for _, v := range []string{"", "table:a", "namespace:", "thing:a", "namespace:a..b"} {
		if _, err := ParseSecurable(v); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("%q: want ErrInvalidArgument, got %v", v, err)
		}
	}
	ns := Namespace([]string{"a"})
	cases := []struct {
		g, s          Securable
		covers, below bool
	}{
		{Catalog(), Table([]string{"a"}, "t"), true, false},
		{ns, Namespace([]string{"a", "b"}), true, false},
		{ns, Table([]string{"a", "b"}, "t"), true, false},
		{ns, Table([]string{"ab"}, "t"), false, false},
		{ns, Catalog(), false, true},
		{Table([]string{"a", "b"}, "t"), Namespace([]string{"a"}), false, true},
		{Table([]string{"a"}, "t"), View([]string{"a"}, "t"), false, false},
		{Namespace([]string{"a", "b"}), ns, false, true},
	}
	for _, c := range cases {
		if c.g.covers(c.s) != c.covers || c.g.beneath(c.s) != c.below {
			t.Errorf("%s vs %s: covers %v beneath %v", c.g, c.s, c.g.covers(c.s), c.g.beneath(c.s))
		}
	}
}

// Regression: the CLI's securables split every dot ("table:sales.eu.orders"
// is ["sales", "eu"].orders), so a grant on the table orders of namespace
// ["sales.eu"], or on that namespace, could not be added or revoked with
// `tarn grants`, and `tarn grants list` printed grants on both namespaces
// alike. A securable whose levels or name hold a dot is written as JSON
// now (a namespace's levels, a table's or view's REST TableIdentifier),
// read back and printed that way.
func TestSecurableDottedNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		text string
		want Securable
	}{
		{"namespace:sales.eu", Namespace([]string{"sales", "eu"})},
		{`namespace:["sales.eu"]`, Namespace([]string{"sales.eu"})},
		{"table:sales.eu.orders", Table([]string{"sales", "eu"}, "orders")},
		{`table:{"namespace":["sales.eu"],"name":"orders"}`, Table([]string{"sales.eu"}, "orders")},
		{`view:{"namespace":["sales"],"name":"v.1"}`, View([]string{"sales"}, "v.1")},
		{`namespace:["[x"]`, Namespace([]string{"[x"})},
		{`table:{"namespace":["{x"],"name":"t"}`, Table([]string{"{x"}, "t")},
	} {
		s, err := ParseSecurable(tc.text)
		if err != nil || !reflect.DeepEqual(s, tc.want) {
			t.Fatalf("%s: got %#v, %v; want %#v", tc.text, s, err, tc.want)
		}
		if s.String() != tc.text {
			t.Fatalf("%#v prints as %s, want %s", s, s.String(), tc.text)
		}
	}
	// The JSON forms: levels (an array) for a namespace, a
	// TableIdentifier for a table or view; anything else, or a member
	// twice, is refused.
	for _, v := range []string{`table:["a.b"]`, `table:{"namespace":"a","name":"t"}`, `table:{"namespace":["a"]}`,
		`table:{"namespace":["a"],"name":"t","x":1}`, `table:{"namespace":["a"],"name":"t","name":"u"}`, `namespace:["a"]]`, `namespace:[]`} {
		if _, err := ParseSecurable(v); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("%q: want ErrInvalidArgument, got %v", v, err)
		}
	}
}

func TestGrantsAuthorizer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newService(t)
	st := s.Store()
	if _, err := st.CreatePrincipal(ctx, "alice", false); err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"readers", "admins"} {
		if err := st.CreateRole(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(st.AddGrant(ctx, Grant{Role: "readers", Privilege: Write, On: Namespace([]string{"sales"})}))
	must(st.AddGrant(ctx, Grant{Role: "admins", Privilege: Manage, On: Table([]string{"hr"}, "pay")}))
	must(st.SetRole(ctx, "alice", "readers", true))
	if err := st.SetRole(ctx, "alice", "nope", true); !errors.Is(err, ErrNotFound) {
		t.Fatalf("assign missing role: %v", err)
	}
	p, _ := st.GetPrincipal(ctx, "alice")
	id := &Identity{Principal: "alice", Roles: p.Roles}
	az, _ := st.Authorizer(ctx)
	eu := Table([]string{"sales", "eu"}, "orders")
	if !az.Allowed(id, Read, eu) || !az.Allowed(id, Write, eu) || az.Allowed(id, Drop, eu) {
		t.Fatal("write on sales should give read and write beneath it, not drop")
	}
	if az.Allowed(id, Read, Table([]string{"hr"}, "pay")) || az.Visible(id, Namespace([]string{"hr"})) {
		t.Fatal("no grant on hr")
	}
	if !az.Visible(id, Namespace([]string{"sales"})) || !az.Visible(id, eu) {
		t.Fatal("sales is visible")
	}
	id.Roles = []string{"admins"}
	if !az.Allowed(id, Drop, Table([]string{"hr"}, "pay")) || !az.Visible(id, Namespace([]string{"hr"})) || az.Visible(id, Table([]string{"hr"}, "other")) {
		t.Fatal("manage implies drop; hr is visible to reach pay, not its other tables")
	}
	if !az.Allowed(&Identity{Root: true}, Manage, Catalog()) || az.Allowed(nil, Read, eu) {
		t.Fatal("root may do anything, nobody nothing")
	}
	// Deleting a role takes its grants and assignments with it.
	must(st.DeleteRole(ctx, "readers"))
	p, _ = st.GetPrincipal(ctx, "alice")
	gs, _ := st.ListGrants(ctx, "readers")
	if len(p.Roles) != 0 || len(gs) != 0 {
		t.Fatalf("after DeleteRole: roles %v grants %v", p.Roles, gs)
	}
}

func TestTokenEndpoint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newService(t)
	secret, err := s.Store().CreatePrincipal(ctx, "etl", false)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := s.Token(ctx, TokenRequest{GrantType: GrantClientCredentials, ClientID: "etl", ClientSecret: secret, Scope: "catalog"})
	if err != nil || resp.TokenType != "bearer" || resp.ExpiresIn != 3600 || resp.Scope != "catalog" {
		t.Fatalf("token: %+v %v", resp, err)
	}
	id, err := s.Authenticate(ctx, resp.AccessToken)
	if err != nil || id.Principal != "etl" || id.Root {
		t.Fatalf("authenticate: %+v %v", id, err)
	}
	var oe *OAuthError
	for _, r := range []TokenRequest{
		{GrantType: GrantClientCredentials, ClientID: "etl", ClientSecret: "wrong"},
		{GrantType: GrantClientCredentials, ClientID: "nobody", ClientSecret: secret},
	} {
		if _, err := s.Token(ctx, r); !errors.As(err, &oe) || oe.Code != "invalid_client" || oe.Status != 401 {
			t.Fatalf("%+v: %v", r, err)
		}
	}
	if _, err := s.Token(ctx, TokenRequest{GrantType: "password"}); !errors.As(err, &oe) || oe.Code != "unsupported_grant_type" {
		t.Fatalf("password grant: %v", err)
	}
	// Refresh by token exchange, as Iceberg's Java client does.
	ex, err := s.Token(ctx, TokenRequest{GrantType: GrantTokenExchange, SubjectToken: resp.AccessToken, SubjectTokenType: tokenTypeAccess})
	if err != nil || ex.AccessToken == "" {
		t.Fatalf("exchange: %v", err)
	}
	if _, err := s.Token(ctx, TokenRequest{GrantType: GrantTokenExchange, SubjectToken: "x.y.z"}); !errors.As(err, &oe) || oe.Code != "invalid_grant" {
		t.Fatalf("exchange of junk: %v", err)
	}
	// A deleted principal's tokens stop working.
	if err := s.Store().DeletePrincipal(ctx, "etl"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, resp.AccessToken); !errors.Is(err, ErrTokenInvalid) {
		t.Fatalf("deleted principal: %v", err)
	}
}

func TestAuthenticateRefusesBadTokens(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newService(t)
	if _, err := s.Store().CreatePrincipal(ctx, "p", false); err != nil {
		t.Fatal(err)
	}
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	forged, _ := newSigningKey(other)
	forged.KID = s.cfg.Key.KID // same kid, other key
	now := time.Now()
	sign := func(k *SigningKey, iss string, life time.Duration, at time.Time) string {
		p, _, _ := s.Store().principal(ctx, "p")
		tok, err := k.issue(iss, "p", p.Generation, "", life, at, at)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	good := sign(s.cfg.Key, DefaultIssuer, time.Hour, now)
	hs := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"iss": DefaultIssuer, "sub": "p", "aud": "tarn", "exp": now.Add(time.Hour).Unix()})
	hsTok, _ := hs.SignedString([]byte("secret"))
	none := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims{"iss": DefaultIssuer, "sub": "p", "aud": "tarn", "exp": now.Add(time.Hour).Unix()})
	noneTok, _ := none.SignedString(jwt.UnsafeAllowNoneSignatureType)
	for name, tok := range map[string]string{
		"malformed":       "not-a-jwt",
		"wrong issuer":    sign(s.cfg.Key, "someone-else", time.Hour, now),
		"wrong signature": sign(forged, DefaultIssuer, time.Hour, now),
		"expired":         sign(s.cfg.Key, DefaultIssuer, time.Hour, now.Add(-2*time.Hour)),
		"tampered":        good[:len(good)-4] + "AAAA",
		"hs256":           hsTok,
		"alg none":        noneTok,
	} {
		if _, err := s.Authenticate(ctx, tok); !errors.Is(err, ErrTokenInvalid) {
			t.Errorf("%s: want ErrTokenInvalid, got %v", name, err)
		}
	}
	if _, err := s.Authenticate(ctx, good); err != nil {
		t.Fatal(err)
	}
}

// fakeOIDC is a minimal OpenID provider: discovery and a JWKS whose key
// the test can rotate.
type fakeOIDC struct {
	srv       *httptest.Server
	mu        sync.Mutex
	key       *rsa.PrivateKey
	kid       string
	jwksFetch atomic.Int32
	// jwksTrailer is written after the key set (a malformed document).
	jwksTrailer string
	// hold, when set, makes a key set request signal held and wait for
	// hold to close before it reads the key (a slow provider).
	hold, held chan struct{}
}

func newFakeOIDC(t *testing.T) *fakeOIDC {
	f := &fakeOIDC{}
	f.rotate("k1")
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/openid-configuration":
			_ = json.NewEncoder(w).Encode(map[string]string{"issuer": f.srv.URL, "jwks_uri": f.srv.URL + "/keys"})
		case "/keys":
			f.jwksFetch.Add(1)
			f.mu.Lock()
			hold, held := f.hold, f.held
			f.mu.Unlock()
			if hold != nil {
				select {
				case held <- struct{}{}:
				default:
				}
				<-hold
			}
			f.mu.Lock()
			pub := f.key.PublicKey
			kid, trailer := f.kid, f.jwksTrailer
			f.mu.Unlock()
			enc := base64.RawURLEncoding.EncodeToString
			_ = json.NewEncoder(w).Encode(JWKS{Keys: []JWK{{Kty: "RSA", Use: "sig", Alg: "RS256", Kid: kid,
				N: enc(pub.N.Bytes()), E: enc(big.NewInt(int64(pub.E)).Bytes())}}})
			_, _ = w.Write([]byte(trailer))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeOIDC) rotate(kid string) {
	k, _ := rsa.GenerateKey(rand.Reader, 2048)
	f.mu.Lock()
	f.key, f.kid = k, kid
	f.mu.Unlock()
}

func (f *fakeOIDC) token(t *testing.T, claims jwt.MapClaims) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	tok.Header["kid"] = f.kid
	s, err := tok.SignedString(f.key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestOIDCMalformedKeySetRefused: a key set document with data after
// its JSON value (a stray "}" or "]", or a second value) is refused, not
// read up to its first value as a json.Decoder would (issue 13 item 0:
// every JSON decode is strict), so no token verifies against it.
func TestOIDCMalformedKeySetRefused(t *testing.T) {
	t.Parallel()
	for _, trailer := range []string{"}", "]", `{"keys":[]}`} {
		f := newFakeOIDC(t)
		f.mu.Lock()
		f.jwksTrailer = trailer
		f.mu.Unlock()
		s := newService(t, OIDCConfig{Issuer: f.srv.URL})
		claims := jwt.MapClaims{"iss": f.srv.URL, "sub": "ann", "exp": time.Now().Add(time.Hour).Unix()}
		_, err := s.Authenticate(context.Background(), f.token(t, claims))
		if !errors.Is(err, ErrUnauthenticated) || f.jwksFetch.Load() == 0 {
			t.Errorf("key set with %q after it: %v (fetches %d)", trailer, err, f.jwksFetch.Load())
		}
	}
}

func TestOIDCIssuer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFakeOIDC(t)
	s := newService(t, OIDCConfig{Issuer: f.srv.URL, Audience: "tarn-api", PrincipalClaim: "email", RolesClaim: "groups"})
	if _, err := s.Store().CreatePrincipal(ctx, "ann@example.com", true); err != nil {
		t.Fatal(err)
	}
	if err := s.Store().CreateRole(ctx, "analysts"); err != nil {
		t.Fatal(err)
	}
	if err := s.Store().SetRole(ctx, "ann@example.com", "analysts", true); err != nil {
		t.Fatal(err)
	}
	exp := time.Now().Add(time.Hour).Unix()
	claims := jwt.MapClaims{"iss": f.srv.URL, "aud": "tarn-api", "email": "ann@example.com", "groups": []string{"etl"}, "exp": exp}
	id, err := s.Authenticate(ctx, f.token(t, claims))
	if err != nil || id.Principal != "ann@example.com" || id.Root || len(id.Roles) != 2 {
		t.Fatalf("external token: %+v %v", id, err)
	}
	// Cached: a second token does not refetch the keys.
	if _, err := s.Authenticate(ctx, f.token(t, claims)); err != nil || f.jwksFetch.Load() != 1 {
		t.Fatalf("second token: %v, fetches %d", err, f.jwksFetch.Load())
	}
	bad := func(name string, c jwt.MapClaims) {
		t.Helper()
		if _, err := s.Authenticate(ctx, f.token(t, c)); !errors.Is(err, ErrTokenInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
	bad("wrong audience", jwt.MapClaims{"iss": f.srv.URL, "aud": "other", "email": "x", "exp": exp})
	bad("expired", jwt.MapClaims{"iss": f.srv.URL, "aud": "tarn-api", "email": "x", "exp": time.Now().Add(-time.Hour).Unix()})
	bad("no principal claim", jwt.MapClaims{"iss": f.srv.URL, "aud": "tarn-api", "exp": exp})
	bad("no exp", jwt.MapClaims{"iss": f.srv.URL, "aud": "tarn-api", "email": "x"})
	// An external issuer cannot speak for a local principal: the stored
	// roles of a local principal named by the claim do not apply.
	if _, _, err := s.Store().EnsureRoot(ctx, "root", "root-secret"); err != nil {
		t.Fatal(err)
	}
	id, err = s.Authenticate(ctx, f.token(t, jwt.MapClaims{"iss": f.srv.URL, "aud": "tarn-api", "email": "root", "exp": exp}))
	if err != nil || id.Root || len(id.Roles) != 0 {
		t.Fatalf("external 'root': %+v %v", id, err)
	}
	// Key rotation: a token with a new kid refetches the key set (after
	// the minimum refetch interval, which the test skips over).
	f.rotate("k2")
	iss := s.external[f.srv.URL]
	iss.mu.Lock()
	iss.fetchedAt = time.Now().Add(-time.Minute)
	iss.mu.Unlock()
	if _, err := s.Authenticate(ctx, f.token(t, claims)); err != nil {
		t.Fatalf("after rotation: %v", err)
	}
	if f.jwksFetch.Load() != 2 {
		t.Fatalf("rotation fetched %d times", f.jwksFetch.Load())
	}
}

// TestOIDCRefreshServesCachedKeys: the hourly key set refresh held the
// issuer's mutex across the JWKS fetch, so every request of that issuer
// waited for the provider's network round trip (or its 10 s timeout),
// though its key was cached. Now one request fetches while a request
// whose key is cached is answered at once, and a request for a new kid
// waits for that same fetch instead of starting another.
func TestOIDCRefreshServesCachedKeys(t *testing.T) {
	ctx := context.Background()
	f := newFakeOIDC(t)
	s := newService(t, OIDCConfig{Issuer: f.srv.URL})
	claims := jwt.MapClaims{"iss": f.srv.URL, "sub": "ann", "exp": time.Now().Add(time.Hour).Unix()}
	oldKeyToken := f.token(t, claims)
	if _, err := s.Authenticate(ctx, oldKeyToken); err != nil {
		t.Fatal(err)
	}
	iss := s.external[f.srv.URL]
	iss.mu.Lock()
	iss.fetchedAt = time.Now().Add(-2 * jwksMaxAge) // due for its refresh
	iss.mu.Unlock()
	defer func(d time.Duration) { oidcFetchTimeout = d }(oidcFetchTimeout)
	oidcFetchTimeout = 10 * time.Minute // the held fetch must not end by timing out
	hold := make(chan struct{})
	f.mu.Lock()
	f.hold, f.held = hold, make(chan struct{}, 1)
	f.mu.Unlock()

	refresher := make(chan error, 1)
	go func() { _, err := s.Authenticate(ctx, oldKeyToken); refresher <- err }()
	<-f.held // the refresh is in flight, and stays so until hold closes

	cached := make(chan error, 1)
	go func() { _, err := s.Authenticate(ctx, oldKeyToken); cached <- err }()
	select {
	case err := <-cached:
		if err != nil {
			t.Fatalf("cached key during the refresh: %v", err)
		}
	case <-time.After(time.Minute):
		close(hold)
		t.Fatal("a request with a cached key waited for the key set fetch")
	}

	f.rotate("k2")
	newKeyToken := f.token(t, claims)
	joined := make(chan error, 1)
	go func() { _, err := s.Authenticate(ctx, newKeyToken); joined <- err }()
	close(hold)
	if err := <-joined; err != nil {
		t.Fatalf("new kid after the refresh: %v", err)
	}
	if err := <-refresher; !errors.Is(err, ErrTokenInvalid) {
		t.Fatalf("the refreshing request's k1 token after rotation to k2: %v", err)
	}
	if n := f.jwksFetch.Load(); n != 2 {
		t.Fatalf("key set fetched %d times, want 2 (the new kid joins the refresh in flight)", n)
	}
}

func TestSigningKeyPersists(t *testing.T) {
	t.Parallel()
	recs := &memRecords{}
	k1, err := LoadOrCreateKey(t.Context(), recs, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// Another replica (or a restart) on the same store: the same key.
	k2, err := LoadOrCreateKey(t.Context(), recs, t.TempDir())
	if err != nil || k1.KID != k2.KID {
		t.Fatalf("reload: %v %s %s", err, k1.KID, k2.KID)
	}
	jwks := k1.JWKS()
	pub, err := jwks.Keys[0].PublicKey()
	if err != nil || !pub.(*ecdsa.PublicKey).Equal(&k1.priv.PublicKey) {
		t.Fatalf("jwks round trip: %v", err)
	}
}

// TestSigningKeyImportedFromDataDir: a Tarn that kept its key in
// <data-dir>/auth/signing-key.pem is upgraded; the first start on the
// store imports that key (tokens issued before the upgrade stay valid),
// and a corrupt stored key is refused, never replaced.
func TestSigningKeyImportedFromDataDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pemKey, err := newKeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	want, err := parseKey(pemKey, "test")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "auth"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, KeyFile), pemKey, 0o600); err != nil {
		t.Fatal(err)
	}
	recs := &memRecords{}
	got, err := LoadOrCreateKey(t.Context(), recs, dir)
	if err != nil || got.KID != want.KID {
		t.Fatalf("import: %v, kid %s want %s", err, got.KID, want.KID)
	}
	if v, ok, _ := recs.GetRecord(t.Context(), collKeys, keySigning); !ok || string(v) != string(pemKey) {
		t.Fatal("the imported key is not in the store")
	}
	bad := &memRecords{}
	_ = bad.PutRecord(t.Context(), collKeys, keySigning, []byte("not a key"))
	if _, err := LoadOrCreateKey(t.Context(), bad, dir); err == nil {
		t.Fatal("a corrupt stored key was accepted")
	}
	if v, _, _ := bad.GetRecord(t.Context(), collKeys, keySigning); string(v) != "not a key" {
		t.Fatal("a corrupt stored key was replaced")
	}
}

func TestEnsureRoot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := NewStore(&memRecords{}, bcrypt.MinCost)
	sec, gen, err := st.EnsureRoot(ctx, "root", "")
	if err != nil || !gen || sec == "" {
		t.Fatalf("generate: %v %v", gen, err)
	}
	if _, gen, _ := st.EnsureRoot(ctx, "root", ""); gen {
		t.Fatal("a second start must not generate again")
	}
	if _, err := st.checkSecret(ctx, "root", sec); err != nil {
		t.Fatal(err)
	}
	// TARN_ROOT_CREDENTIAL replaces the secret.
	if _, _, err := st.EnsureRoot(ctx, "root", "new-secret"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.checkSecret(ctx, "root", sec); !errors.Is(err, ErrInvalidClient) {
		t.Fatal("old secret still works")
	}
	if err := st.DeletePrincipal(ctx, "root"); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("delete root: %v", err)
	}
}

// TestTokensEndWithCredentials: a token (and a token exchanged from it)
// stops working when the principal's secret is rotated; a deleted and
// re-created principal's old token is refused; a token of the root whose
// credential is replaced (TARN_ROOT_CREDENTIAL at restart) is refused,
// not when the same credential is ensured again.
func TestTokensEndWithCredentials(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newService(t)
	st := s.Store()
	tokenOf := func(id, secret string) string {
		t.Helper()
		r, err := s.Token(ctx, TokenRequest{GrantType: GrantClientCredentials, ClientID: id, ClientSecret: secret})
		if err != nil {
			t.Fatal(err)
		}
		return r.AccessToken
	}
	exchange := func(tok string) (TokenResponse, error) {
		return s.Token(ctx, TokenRequest{GrantType: GrantTokenExchange, SubjectToken: tok, SubjectTokenType: tokenTypeAccess})
	}
	refused := func(what, tok string) {
		t.Helper()
		if _, err := s.Authenticate(ctx, tok); !errors.Is(err, ErrTokenInvalid) {
			t.Fatalf("%s: Authenticate = %v, want ErrTokenInvalid", what, err)
		}
		_, err := exchange(tok)
		var oe *OAuthError
		if !errors.As(err, &oe) || oe.Code != "invalid_grant" || oe.Status != http.StatusBadRequest {
			t.Fatalf("%s: exchange = %v, want invalid_grant", what, err)
		}
	}

	// Rotation.
	secret, err := st.CreatePrincipal(ctx, "etl", false)
	if err != nil {
		t.Fatal(err)
	}
	old := tokenOf("etl", secret)
	ex, err := exchange(old)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := s.Authenticate(ctx, ex.AccessToken); err != nil || id.Principal != "etl" {
		t.Fatalf("before rotation: %v %v", id, err)
	}
	newSecret, err := st.RotateSecret(ctx, "etl")
	if err != nil {
		t.Fatal(err)
	}
	refused("rotated", old)
	refused("exchanged before rotation", ex.AccessToken)
	if id, err := s.Authenticate(ctx, tokenOf("etl", newSecret)); err != nil || id.Principal != "etl" {
		t.Fatalf("new secret's token: %v %v", id, err)
	}

	// Delete and re-create.
	secret, err = st.CreatePrincipal(ctx, "nobody", false)
	if err != nil {
		t.Fatal(err)
	}
	old = tokenOf("nobody", secret)
	if err := st.DeletePrincipal(ctx, "nobody"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreatePrincipal(ctx, "nobody", false); err != nil {
		t.Fatal(err)
	}
	refused("re-created", old)

	// Root credential replaced.
	if _, _, err := st.EnsureRoot(ctx, "root", "first-secret"); err != nil {
		t.Fatal(err)
	}
	old = tokenOf("root", "first-secret")
	if _, _, err := st.EnsureRoot(ctx, "root", "first-secret"); err != nil {
		t.Fatal(err)
	}
	if id, err := s.Authenticate(ctx, old); err != nil || !id.Root {
		t.Fatalf("same root credential: %v %v", id, err)
	}
	if _, _, err := st.EnsureRoot(ctx, "root", "second-secret"); err != nil {
		t.Fatal(err)
	}
	refused("root replaced", old)
}

// TestTokenExchangeSessionBounded: exchange keeps the original auth
// time; tokens from exchange end by auth_time + MaxSession, and past it
// exchange is refused (invalid_grant) until the client authenticates
// with its secret again.
func TestTokenExchangeSessionBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	key, err := LoadOrCreateKey(t.Context(), &memRecords{}, "")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now().Truncate(time.Second)
	var now atomic.Int64
	now.Store(start.Unix())
	s, err := NewService(Config{Store: NewStore(&memRecords{}, bcrypt.MinCost), Key: key, MaxSession: 3 * time.Hour,
		Now: func() time.Time { return time.Unix(now.Load(), 0) }})
	if err != nil {
		t.Fatal(err)
	}
	secret, err := s.Store().CreatePrincipal(ctx, "etl", false)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Token(ctx, TokenRequest{GrantType: GrantClientCredentials, ClientID: "etl", ClientSecret: secret})
	if err != nil {
		t.Fatal(err)
	}
	tok := r.AccessToken
	claims := func(tok string) *tokenClaims {
		t.Helper()
		var c tokenClaims
		if _, _, err := jwt.NewParser().ParseUnverified(tok, &c); err != nil {
			t.Fatal(err)
		}
		return &c
	}
	// Refresh every 50 minutes: after 2h30 the next token ends at 3h, not 3h30.
	for i, want := range []int64{3600, 3600, 1800} {
		now.Store(start.Add(time.Duration(i+1) * 50 * time.Minute).Unix())
		r, err = s.Token(ctx, TokenRequest{GrantType: GrantTokenExchange, SubjectToken: tok})
		if err != nil {
			t.Fatalf("exchange %d: %v", i, err)
		}
		if r.ExpiresIn != want {
			t.Fatalf("exchange %d: expires_in %d, want %d", i, r.ExpiresIn, want)
		}
		c := claims(r.AccessToken)
		if c.AuthTime != start.Unix() || c.ExpiresAt.Unix() > start.Add(3*time.Hour).Unix() {
			t.Fatalf("exchange %d: auth_time %d (want %d), exp %v", i, c.AuthTime, start.Unix(), c.ExpiresAt)
		}
		tok = r.AccessToken
	}
	now.Store(start.Add(3 * time.Hour).Unix())
	_, err = s.Token(ctx, TokenRequest{GrantType: GrantTokenExchange, SubjectToken: tok})
	var oe *OAuthError
	if !errors.As(err, &oe) || oe.Code != "invalid_grant" {
		t.Fatalf("exchange past the session: %v, want invalid_grant", err)
	}
}

// TestOIDCIssuers: two external issuers at once, each with its own
// principal prefix: the same sub at each is two principals, and a
// principal's stored roles apply to its own issuer's tokens only.
func TestOIDCIssuers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fa, fb := newFakeOIDC(t), newFakeOIDC(t)
	s := newService(t, OIDCConfig{Issuer: fa.srv.URL, PrincipalPrefix: "a~"}, OIDCConfig{Issuer: fb.srv.URL, PrincipalPrefix: "b~"})
	if _, err := s.Store().CreatePrincipal(ctx, "a~ann", true); err != nil {
		t.Fatal(err)
	}
	if err := s.Store().CreateRole(ctx, "analysts"); err != nil {
		t.Fatal(err)
	}
	if err := s.Store().SetRole(ctx, "a~ann", "analysts", true); err != nil {
		t.Fatal(err)
	}
	exp := time.Now().Add(time.Hour).Unix()
	for _, tt := range []struct {
		f         *fakeOIDC
		principal string
		roles     int
	}{{fa, "a~ann", 1}, {fb, "b~ann", 0}} {
		id, err := s.Authenticate(ctx, tt.f.token(t, jwt.MapClaims{"iss": tt.f.srv.URL, "sub": "ann", "exp": exp}))
		if err != nil || id.Principal != tt.principal || id.Issuer != tt.f.srv.URL || len(id.Roles) != tt.roles {
			t.Errorf("token of %s: %+v %v; want principal %s with %d roles", tt.f.srv.URL, id, err, tt.principal, tt.roles)
		}
	}
	// A token of one issuer signed with the other's key is refused.
	forged := fb.token(t, jwt.MapClaims{"iss": fa.srv.URL, "sub": "ann", "exp": exp})
	if _, err := s.Authenticate(ctx, forged); !errors.Is(err, ErrTokenInvalid) {
		t.Errorf("cross-signed token: %v", err)
	}
}

// TestReplicasShareAuthState: two replicas (two Stores and Services)
// over one record store. A token issued by one is accepted by the
// other, whose snapshot was read before the principal existed; a
// principal deleted through one is refused by the other once its
// snapshot is RefreshInterval old (before this bound existed the other
// replica kept accepting it until restart).
func TestReplicasShareAuthState(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	recs := &memRecords{}
	key, err := LoadOrCreateKey(ctx, recs, "")
	if err != nil {
		t.Fatal(err)
	}
	keyB, err := LoadOrCreateKey(ctx, recs, "")
	if err != nil || keyB.KID != key.KID {
		t.Fatalf("second replica's key: %v %s != %s", err, keyB.KID, key.KID)
	}
	stA, stB := NewStore(recs, bcrypt.MinCost), NewStore(recs, bcrypt.MinCost)
	var mu sync.Mutex
	clock := time.Now()
	stB.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	a, err := NewService(Config{Store: stA, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewService(Config{Store: stB, Key: keyB})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stB.ListPrincipals(ctx); err != nil { // B reads its snapshot now
		t.Fatal(err)
	}
	secret, err := stA.CreatePrincipal(ctx, "etl", false)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := a.Token(ctx, TokenRequest{GrantType: GrantClientCredentials, ClientID: "etl", ClientSecret: secret, Scope: "catalog"})
	if err != nil {
		t.Fatal(err)
	}
	// B's snapshot predates etl: within the bound B may not know it yet,
	// past the bound it must.
	advance(RefreshInterval)
	if id, err := b.Authenticate(ctx, tok.AccessToken); err != nil || id.Principal != "etl" {
		t.Fatalf("replica B refused replica A's token: %v", err)
	}
	if err := stA.DeletePrincipal(ctx, "etl"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(ctx, tok.AccessToken); err == nil {
		t.Fatal("replica A accepted a deleted principal's token")
	}
	advance(RefreshInterval)
	if _, err := b.Authenticate(ctx, tok.AccessToken); err == nil {
		t.Fatalf("replica B accepted a principal deleted through A %s ago", RefreshInterval)
	}
}
