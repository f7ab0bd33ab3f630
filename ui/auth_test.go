package ui_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/auth"
	"github.com/tarnhq/tarn/ingest/topics"
)

// signIn signs b in with client credentials through the console's form
// and returns where it was sent.
func signIn(t *testing.T, b *browser, id, secret, next string) page {
	t.Helper()
	p := b.get("/ui/login?next=" + url.QueryEscape(next))
	require.Equal(t, http.StatusOK, p.status, p.body)
	return b.post("/ui/login", url.Values{"csrf": {b.csrf()}, "client_id": {id}, "client_secret": {secret}, "next": {next}})
}

// postForms lists the actions of the page's POST forms.
func postForms(body string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<form method="post" action="([^"]*)"`).FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestOAuth2Console: with --auth oauth2 the console asks for client
// credentials; a principal that may only read namespace demo sees the
// table but no topic and no button that changes anything, and an action
// it sends anyway is refused by the management API's checks (403) and
// changes nothing; root sees the buttons and may act. No token is in a
// URL or in the log.
func TestOAuth2Console(t *testing.T) {
	f := newFixture(t, true)
	f.enable(t)
	f.produce(t, 0, f.values[:20]...)
	f.waitTopic(t, func(st topics.Status) bool { return st.Rows == 20 })

	st := f.auth.Store()
	ctx := t.Context()
	readerSecret, err := st.CreatePrincipal(ctx, "reader", false)
	require.NoError(t, err)
	require.NoError(t, st.CreateRole(ctx, "readers"))
	require.NoError(t, st.SetRole(ctx, "reader", "readers", true))
	require.NoError(t, st.AddGrant(ctx, auth.Grant{Role: "readers", Privilege: auth.Read, On: auth.Namespace([]string{"demo"})}))

	anon := f.browser(t)
	p := anon.get("/ui/topics/flights")
	require.Equal(t, http.StatusSeeOther, p.status)
	assert.Equal(t, "/ui/login?next=%2Fui%2Ftopics%2Fflights", p.location)
	p = anon.get("/ui/login")
	assert.Contains(t, p.body, `name="client_secret" type="password"`)
	p = signIn(t, anon, "reader", "wrong", "/ui/topics")
	assert.Equal(t, http.StatusUnauthorized, p.status)
	assert.Contains(t, p.body, "Unknown client id or wrong secret.")
	// An action without a session is refused before the API is asked.
	p = anon.post("/ui/topics/flights/disable", url.Values{"csrf": {anon.csrf()}, "confirmed": {"yes"}})
	assert.Equal(t, http.StatusUnauthorized, p.status)

	reader := f.browser(t)
	p = signIn(t, reader, "reader", readerSecret, "/ui/namespaces/demo/tables/flights")
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	assert.Equal(t, "/ui/namespaces/demo/tables/flights", p.location)
	p = reader.get(p.location)
	require.Equal(t, http.StatusOK, p.status, p.body)
	assert.Contains(t, p.body, "data-snapshot-id=")
	assert.Contains(t, p.body, `credential=&#34;&lt;client-id&gt;:&lt;client-secret&gt;&#34;`)
	assert.Equal(t, []string{"/ui/logout"}, postForms(p.body), "a reader gets no button that changes anything")
	p = reader.get("/ui/topics")
	require.Equal(t, http.StatusOK, p.status)
	assert.NotContains(t, p.body, `data-topic="flights"`, "the API lists only the topics a principal manages")
	assert.Equal(t, []string{"/ui/logout"}, postForms(p.body))
	p = reader.get("/ui/topics/flights")
	assert.Equal(t, http.StatusForbidden, p.status)
	assert.Contains(t, p.body, `principal &#34;reader&#34; may not manage topic flights`)
	assert.Equal(t, []string{"/ui/logout"}, postForms(p.body))
	for _, action := range []string{"disable", "resume", "error-mode"} {
		for _, confirmed := range []string{"yes", ""} { // nor a confirmation page
			p = reader.post("/ui/topics/flights/"+action, url.Values{"csrf": {reader.csrf()}, "confirmed": {confirmed}, "error-mode": {"skip"}})
			assert.Equal(t, http.StatusForbidden, p.status, "%s: %s", action, p.body)
			assert.Equal(t, []string{"/ui/logout"}, postForms(p.body))
		}
	}
	// Nor a form to enable a topic; a forged enable is refused by the API.
	p = reader.get("/ui/topics")
	assert.NotContains(t, p.body, `href="/ui/enable"`)
	assert.Equal(t, http.StatusForbidden, reader.get("/ui/enable").status)
	enableForm := url.Values{"csrf": {reader.csrf()}, "topic": {"flights2"}, "table": {"demo.flights2"}, "format": {"auto"}, "mode": {"append"}, "error-mode": {"suspend"}}
	p = reader.post("/ui/enable", enableForm)
	assert.Equal(t, http.StatusForbidden, p.status, "no confirmation page")
	enableForm.Set("confirmed", "yes")
	p = reader.post("/ui/enable", enableForm)
	assert.Equal(t, http.StatusForbidden, p.status, p.body)
	assert.Contains(t, p.body, `principal &#34;reader&#34; may not manage`)
	assert.Equal(t, []string{"/ui/logout"}, postForms(p.body))
	_, err = f.mgr.Get(ctx, "flights2")
	assert.ErrorIs(t, err, topics.ErrNoSuchTopic, "nothing enabled")
	s := f.waitTopic(t, func(topics.Status) bool { return true })
	assert.Equal(t, topics.StateSyncing, s.State)
	assert.Equal(t, "suspend", s.Config.ErrorMode)

	root := f.browser(t)
	p = signIn(t, root, "root", rootSecret, "/ui/topics/flights")
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	assert.Equal(t, "/ui/topics/flights", p.location)
	require.Len(t, p.cookies, 1)
	assert.Regexp(t, `^tarn_session=[^;]+; Path=/ui; Max-Age=\d+; HttpOnly; SameSite=Strict$`, p.cookies[0])
	tokens := []string{strings.TrimPrefix(strings.Split(p.cookies[0], ";")[0], "tarn_session="), sessionToken(t, f, reader)}
	p = root.get("/ui/topics/flights")
	require.Equal(t, http.StatusOK, p.status, p.body)
	assert.Equal(t, []string{"/ui/logout", "/ui/topics/flights/error-mode", "/ui/topics/flights/disable"}, postForms(p.body))
	p = root.post("/ui/topics/flights/error-mode", url.Values{"csrf": {root.csrf()}, "confirmed": {"yes"}, "error-mode": {"dlq"}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	s = f.waitTopic(t, func(topics.Status) bool { return true })
	assert.Equal(t, "dlq", s.Config.ErrorMode)
	p = root.get("/ui/topics/flights")
	assert.Contains(t, p.body, `<a href="/ui/namespaces/demo/tables/flights_dlq">demo.flights_dlq</a>`)

	// Signing out ends the session.
	p = root.post("/ui/logout", url.Values{"csrf": {root.csrf()}})
	require.Equal(t, http.StatusSeeOther, p.status)
	assert.Equal(t, http.StatusSeeOther, root.get("/ui/topics/flights").status)

	// The tokens: in HttpOnly cookies, never in a URL or the log.
	logs := f.logs.String()
	assert.Contains(t, logs, `"path":"/management/v1/topics/flights"`, "the console's API requests are logged")
	for _, tok := range tokens {
		require.Greater(t, len(tok), 100, "a JWT")
		assert.NotContains(t, logs, tok)
	}
}

// sessionToken is b's session cookie.
func sessionToken(t *testing.T, f *fixture, b *browser) string {
	t.Helper()
	u, err := url.Parse(f.url + "/ui/")
	require.NoError(t, err)
	for _, c := range b.c.Jar.Cookies(u) {
		if c.Name == "tarn_session" {
			return c.Value
		}
	}
	t.Fatal("no session cookie")
	return ""
}
