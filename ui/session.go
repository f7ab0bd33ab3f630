package ui

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tarnhq/tarn/auth"
)

// Cookies of the console, all HttpOnly (no script reads them),
// SameSite=Strict (no other site's page sends them) and scoped to
// Prefix; Secure when the console is served over TLS.
const (
	// sessionCookie holds the principal's bearer token (--auth oauth2):
	// kept out of URLs and logs, sent only to the console, which passes
	// it to the API in process.
	sessionCookie = "tarn_session"
	// csrfCookie holds the CSRF token every form repeats in csrfField.
	csrfCookie = "tarn_csrf"
	csrfField  = "csrf"
)

type sessionKey struct{}

// session is the caller of a console request.
type session struct {
	token string         // the bearer token; empty under --auth none
	id    *auth.Identity // nil under --auth none
	az    auth.Authorizer
	csrf  string
	reqID string // the request id the API's middleware gave this request
}

func sessionOf(r *http.Request) *session {
	if s, ok := r.Context().Value(sessionKey{}).(*session); ok {
		return s
	}
	return &session{}
}

// api is the in-process API client acting as r's principal.
func (c *Console) api(r *http.Request) apiClient {
	s := sessionOf(r)
	return apiClient{h: c.cfg.API, token: s.token, requestID: s.reqID}
}

// mayManage reports whether r's principal may manage namespace ns, the
// privilege the management API asks for every change of a topic of ns
// (server's checksFor): the console shows a topic's buttons only then.
func mayManage(r *http.Request, ns []string) bool {
	s := sessionOf(r)
	if s.az == nil {
		return false
	}
	return s.az.Allowed(s.id, auth.Manage, auth.Namespace(ns))
}

// secure reports whether cookies must be Secure: served over TLS, by
// Tarn or by a TLS-terminating proxy that says so.
func secure(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

func setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: Prefix, MaxAge: maxAge,
		HttpOnly: true, Secure: secure(r), SameSite: http.SameSiteStrictMode})
}

// csrfToken returns r's CSRF token, setting a new one (32 random bytes)
// when r has none.
func csrfToken(w http.ResponseWriter, r *http.Request) string {
	if ck, err := r.Cookie(csrfCookie); err == nil && len(ck.Value) >= 32 {
		return ck.Value
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	tok := base64.RawURLEncoding.EncodeToString(b)
	setCookie(w, r, csrfCookie, tok, 0)
	return tok
}

// checkCSRF refuses an unsafe request whose form does not repeat the
// CSRF cookie: a page of another site can make the browser send the
// cookie (when SameSite is not honoured) but cannot read it. The
// cross-origin check (http.CrossOriginProtection, in ServeHTTP) ran
// before.
func checkCSRF(r *http.Request) error {
	ck, err := r.Cookie(csrfCookie)
	form := r.PostFormValue(csrfField)
	if err != nil || form == "" || subtle.ConstantTimeCompare([]byte(ck.Value), []byte(form)) != 1 {
		return &APIError{Status: http.StatusForbidden}
	}
	return nil
}

// errCSRF is the message of a refused form.
const errCSRF = "Refused: the form did not carry this session's CSRF token. Reload the page and try again."

// signedIn wraps a page or action: it sets the CSRF cookie, checks the
// CSRF token of an unsafe request, and in oauth2 mode resolves the
// session cookie's token to the principal (a missing or expired one
// sends a page to the sign-in form, and refuses an action).
func (c *Console) signedIn(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s := &session{csrf: csrfToken(w, r), az: auth.AllowAll{}, reqID: w.Header().Get("X-Request-Id")}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if err := checkCSRF(r); err != nil {
				c.fail(w, r, err, errCSRF)
				return
			}
		}
		if c.cfg.Auth != nil {
			ck, err := r.Cookie(sessionCookie)
			var id *auth.Identity
			if err == nil {
				id, err = c.cfg.Auth.Authenticate(r.Context(), ck.Value)
			}
			if err != nil {
				if ck != nil {
					setCookie(w, r, sessionCookie, "", -1)
				}
				if r.Method == http.MethodGet {
					http.Redirect(w, r, Prefix+"/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
					return
				}
				c.fail(w, r, &APIError{Status: http.StatusUnauthorized}, "Your session has ended: sign in again.")
				return
			}
			az, err := c.cfg.Auth.Store().Authorizer(r.Context())
			if err != nil {
				c.fail(w, r, err, "")
				return
			}
			s.token, s.id, s.az = ck.Value, id, az
		}
		h(w, r.WithContext(context.WithValue(r.Context(), sessionKey{}, s)))
	}
}

// loginData is the sign-in form.
type loginData struct {
	Next     string
	ClientID string
}

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	if c.cfg.Auth == nil {
		http.Redirect(w, r, Prefix+"/topics", http.StatusSeeOther)
		return
	}
	s := &session{csrf: csrfToken(w, r)}
	r = r.WithContext(context.WithValue(r.Context(), sessionKey{}, s))
	c.render(w, r, http.StatusOK, "login", page{Title: "Sign in", Data: loginData{Next: safeNext(r.URL.Query().Get("next"))}})
}

// login exchanges client credentials for a token at the API's token
// endpoint and keeps it in the session cookie until it expires.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	if c.cfg.Auth == nil {
		http.Redirect(w, r, Prefix+"/topics", http.StatusSeeOther)
		return
	}
	s := &session{csrf: csrfToken(w, r)}
	r = r.WithContext(context.WithValue(r.Context(), sessionKey{}, s))
	if err := checkCSRF(r); err != nil {
		c.fail(w, r, err, errCSRF)
		return
	}
	next := safeNext(r.PostFormValue("next"))
	id := strings.TrimSpace(r.PostFormValue("client_id"))
	tr, err := c.api(r).tokenFor(r.Context(), id, r.PostFormValue("client_secret"))
	if err != nil {
		msg := "Signing in failed: " + err.Error()
		var ae *APIError
		if errors.As(err, &ae) && (ae.Status == http.StatusUnauthorized || ae.Type == "invalid_client") {
			msg = "Unknown client id or wrong secret."
		}
		c.render(w, r, http.StatusUnauthorized, "login", page{Title: "Sign in", Error: msg, Data: loginData{Next: next, ClientID: id}})
		return
	}
	maxAge := int(tr.ExpiresIn)
	if maxAge <= 0 {
		maxAge = int(time.Hour / time.Second)
	}
	setCookie(w, r, sessionCookie, tr.AccessToken, maxAge)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	if err := checkCSRF(r); err != nil {
		c.fail(w, r, err, errCSRF)
		return
	}
	setCookie(w, r, sessionCookie, "", -1)
	http.Redirect(w, r, Prefix+"/login", http.StatusSeeOther)
}

// safeNext is where to go after signing in: a console path, never
// another site (an open redirect).
func safeNext(next string) string {
	if strings.HasPrefix(next, Prefix+"/") && !strings.HasPrefix(next, "//") && !strings.ContainsAny(next, "\\\r\n") {
		return next
	}
	return Prefix + "/topics"
}
