package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/tarnhq/tarn/spec"
)

// APIError is an answer of the API other than 2xx: its status and the
// spec's ErrorModel (for the token endpoint, OAuth2's error and
// description in Message).
type APIError struct {
	Status int
	spec.ErrorModel
}

func (e *APIError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("%d %s", e.Status, http.StatusText(e.Status))
	}
	return e.Message
}

// apiClient sends the console's requests to the API's http.Handler in
// process, as the signed-in principal: no network hop, and the request
// passes the API's whole middleware chain (authentication with the
// bearer token, strict body decoding, authorization, idempotency, the
// access log).
type apiClient struct {
	h         http.Handler
	token     string // bearer token; empty under --auth none
	requestID string // the console request's id, so both log lines match
}

// do sends method path (the API's escaped path, with any query) with
// body as JSON (nil: none), and decodes a 2xx answer into out (nil:
// ignored). Errors: *APIError for an answer outside 2xx.
func (a apiClient) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader = http.NoBody
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return a.send(req, out)
}

// token asks the API's token endpoint (POST /v1/oauth/tokens, RFC 6749
// §4.4) for a client-credentials token.
func (a apiClient) tokenFor(ctx context.Context, clientID, secret string) (tokenResponse, error) {
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {clientID}, "client_secret": {secret}, "scope": {"catalog"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "/v1/oauth/tokens", strings.NewReader(form.Encode()))
	if err != nil {
		return tokenResponse{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	var tr tokenResponse
	err = apiClient{h: a.h, requestID: a.requestID}.send(req, &tr)
	return tr, err
}

// tokenResponse is what the console reads of the token endpoint's answer.
type tokenResponse struct {
	AccessToken string `json:"access_token"`
	ExpiresIn   int64  `json:"expires_in"`
}

func (a apiClient) send(req *http.Request, out any) error {
	req.RemoteAddr = "console"
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	if a.requestID != "" {
		req.Header.Set("X-Request-Id", a.requestID)
	}
	w := &recorder{header: http.Header{}, status: http.StatusOK}
	a.h.ServeHTTP(w, req)
	if w.status < 200 || w.status > 299 {
		e := &APIError{Status: w.status}
		var model spec.ErrorResponse
		var oauth struct {
			Error       string `json:"error"`
			Description string `json:"error_description"`
		}
		switch {
		case json.Unmarshal(w.body.Bytes(), &model) == nil && model.Error.Message != "":
			e.ErrorModel = model.Error
		case json.Unmarshal(w.body.Bytes(), &oauth) == nil && oauth.Error != "":
			e.Type, e.Message = oauth.Error, oauth.Description
		}
		return e
	}
	if out == nil || w.status == http.StatusNoContent {
		return nil
	}
	if err := json.Unmarshal(w.body.Bytes(), out); err != nil {
		return fmt.Errorf("ui: %s %s: decode the answer: %w", req.Method, req.URL.Path, err)
	}
	return nil
}

// recorder is the http.ResponseWriter of an in-process API request.
type recorder struct {
	header      http.Header
	status      int
	wroteHeader bool
	body        bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if !r.wroteHeader {
		r.status, r.wroteHeader = code, true
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}

// escapeLevel escapes one namespace level or name for an API path as
// the server reads it back (url.QueryUnescape: "+" is a space).
func escapeLevel(s string) string { return url.QueryEscape(s) }

// nsPath is namespace ns as the API's {namespace} path parameter: the
// levels escaped and joined by the unit separator (%1F), as the REST
// spec says.
func nsPath(ns []string) string {
	parts := make([]string, len(ns))
	for i, l := range ns {
		parts[i] = escapeLevel(l)
	}
	return strings.Join(parts, "%1F")
}
