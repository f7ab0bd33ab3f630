package server

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ui"
)

// namespaceSeparator joins namespace levels in paths and in the `parent`
// query parameter (REST spec: the unit separator, %1F when encoded).
const namespaceSeparator = "\x1f"

// maxBodyBytes bounds request bodies (limitBody answers 413 past it):
// table commits with many snapshots stay far below it, and it bounds the
// memory one request can make the server hold while decoding.
const maxBodyBytes = 64 << 20

// bodyTooLargeMessage is the message of every 413.
var bodyTooLargeMessage = fmt.Sprintf("request body is larger than the server's limit of %d MiB", maxBodyBytes>>20)

// limitBody refuses a request body over maxBodyBytes with 413
// RequestTooLargeException: at once when Content-Length says so, else
// when a read passes the limit (http.MaxBytesReader; whoever decodes the
// body wraps its error with %w, and exceptionFor finds it).
func limitBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.ContentLength > maxBodyBytes {
			return echo.NewHTTPError(http.StatusRequestEntityTooLarge, bodyTooLargeMessage)
		}
		r.Body = http.MaxBytesReader(c.Response(), r.Body, maxBodyBytes)
		return next(c)
	}
}

// pathParam returns a path parameter decoded as the spec's clients encode
// it: percent-escapes and "+" for space (Java's URLEncoder). The Pre hook
// escapedPath makes echo always route on the escaped path, so params are
// raw here.
func pathParam(c echo.Context, name string) (string, error) {
	v, err := url.QueryUnescape(c.Param(name))
	if err != nil {
		return "", fmt.Errorf("%w: path parameter %s: %v", errBadRequest, name, err)
	}
	return v, nil
}

func namespaceParam(c echo.Context) (catalog.Namespace, error) {
	v, err := pathParam(c, "namespace")
	if err != nil {
		return nil, err
	}
	ns := catalog.Namespace(strings.Split(v, namespaceSeparator))
	return ns, ns.Validate()
}

func identParam(c echo.Context, nameParam string) (catalog.Ident, error) {
	ns, err := namespaceParam(c)
	if err != nil {
		return catalog.Ident{}, err
	}
	name, err := pathParam(c, nameParam)
	if err != nil {
		return catalog.Ident{}, err
	}
	id := catalog.Ident{Namespace: ns, Name: name}
	return id, id.Validate()
}

// pageParams reads pageToken and pageSize (a positive integer). The spec
// (parameters/page-token): a client opts into paging by sending pageToken,
// empty on the first request; without it the server returns everything in
// one response, whatever pageSize says.
func pageParams(c echo.Context) (catalog.Page, error) {
	var p catalog.Page
	if s := c.QueryParam("pageSize"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return p, fmt.Errorf("%w: pageSize must be a positive integer, got %q", errBadRequest, s)
		}
		p.Size = n
	}
	if _, paging := c.QueryParams()["pageToken"]; !paging {
		p.Size = 0
	}
	p.Token = c.QueryParam("pageToken")
	return p, nil
}

func nextToken(t string) *string {
	if t == "" {
		return nil
	}
	return &t
}

// refuseCrossOrigin refuses, with 403 ForbiddenException, a request with
// an unsafe method (POST, PUT, PATCH, DELETE) that a browser sent from
// another origin: Go's http.CrossOriginProtection, which reads the
// browser's Sec-Fetch-Site header, or compares Origin with Host when that
// is missing. Clients that are not browsers send neither header and pass.
//
// Why: a page on any site that the user of a Tarn on localhost or the
// intranet visits can send "simple" requests (a form or fetch with a
// text/plain body, no preflight) to it; the body is decoded as JSON
// whatever its Content-Type, and with --auth none nothing else stops
// such a request from committing to a table or enabling a topic. Tarn
// sends no CORS headers, so no page of another origin can use the API
// legitimately anyway. The console under /ui runs its own check (the
// same protection) to answer with a page rather than JSON.
func refuseCrossOrigin() echo.MiddlewareFunc {
	p := http.NewCrossOriginProtection()
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if strings.HasPrefix(r.URL.Path, ui.Prefix+"/") {
				return next(c)
			}
			if err := p.Check(r); err != nil {
				return fmt.Errorf("%w: refused a cross-origin %s from a browser (%v); Tarn's API takes no requests from other sites' pages", catalog.ErrForbidden, r.Method, err)
			}
			return next(c)
		}
	}
}
