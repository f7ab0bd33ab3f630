package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tarnhq/tarn/auth"
	"github.com/tarnhq/tarn/ingest/topics"
	"github.com/tarnhq/tarn/internal/strictjson"
	"github.com/tarnhq/tarn/spec"
)

// bodyContext is the echo context key of the request's decodedBody.
const bodyContext = "tarn.body"

// decodedBody is a request body decoded once, before authorization: the
// privilege check (checksFor), the idempotency fingerprint and the
// handler all read this value, never the bytes again.
type decodedBody struct {
	raw   []byte
	value any
}

// bodyDecoder decodes a route's body bytes into a new value of its type.
type bodyDecoder func(raw []byte) (any, error)

// lenient decodes an Iceberg REST body strictly in syntax (strictjson:
// one value, no member named twice, no number that does not fit, UTF-8)
// while ignoring members T does not have: newer clients send fields of
// newer versions of the spec.
func lenient[T any](raw []byte) (any, error) {
	v := new(T)
	return v, strictjson.Decode(raw, v)
}

// known is lenient refusing members T does not have too: the management
// API's bodies, where a misspelt field must not be silently ignored.
func known[T any](raw []byte) (any, error) {
	v := new(T)
	return v, strictjson.DecodeKnown(raw, v)
}

// topicPatch decodes a PATCH of a topic: only topics.PatchFields may be
// sent; naming any other field of the topic is a 400 that says which may
// change.
func topicPatch(raw []byte) (any, error) {
	var fields map[string]json.RawMessage
	if err := strictjson.Decode(raw, &fields); err != nil {
		return nil, err
	}
	for k := range fields {
		if !slices.Contains(topics.PatchFields, k) {
			return nil, fmt.Errorf("%w: field %q cannot be changed; a PATCH may set %s", errBadRequest, k, strings.Join(topics.PatchFields, ", "))
		}
	}
	return known[topics.Patch](raw)
}

// requestBodies maps each route that takes a JSON body (method and route
// template as routeOf gives it) to its decoder. decodeRequest refuses a
// body that does not decode before authorization and before the
// handler, so no handler and no check ever sees a body but this one
// decoded value. TestEveryBodyRouteIsDecoded keeps this list and the
// router in step.
var requestBodies = map[string]bodyDecoder{
	"POST /namespaces":                                  lenient[spec.CreateNamespaceRequest],
	"POST /namespaces/:namespace/properties":            lenient[spec.UpdateNamespacePropertiesRequest],
	"POST /namespaces/:namespace/tables":                lenient[spec.CreateTableRequest],
	"POST /namespaces/:namespace/tables/:table":         lenient[spec.CommitTableRequest],
	"POST /namespaces/:namespace/tables/:table/metrics": lenient[spec.ReportMetricsRequest],
	"POST /namespaces/:namespace/tables/:table/sign":    lenient[spec.RemoteSignRequest],
	"POST /namespaces/:namespace/register":              lenient[spec.RegisterTableRequest],
	"POST /tables/rename":                               lenient[spec.RenameTableRequest],
	"POST /transactions/commit":                         lenient[spec.CommitTransactionRequest],
	"POST /namespaces/:namespace/views":                 lenient[spec.CreateViewRequest],
	"POST /namespaces/:namespace/views/:view":           lenient[spec.CommitViewRequest],
	"POST /views/rename":                                lenient[spec.RenameTableRequest],
	"POST /namespaces/:namespace/register-view":         lenient[spec.RegisterViewRequest],
	"POST /management/v1/topics":                        known[topics.TopicConfig],
	"PATCH /management/v1/topics/:topic":                topicPatch,
	"POST /management/v1/principals":                    known[CreatePrincipalRequest],
	"POST /management/v1/roles":                         known[CreateRoleRequest],
	"POST /management/v1/grants":                        known[auth.Grant],
	"POST /management/v1/grants/revoke":                 known[auth.Grant],
	"POST /management/v1/maintenance/run":               known[RunMaintenanceRequest],
	"POST /management/v1/publish/resume":                known[PublishRequest],
	"POST /management/v1/publish/sync":                  known[PublishRequest],
}

// routeOf is the request's route template with the REST prefix removed
// (/v1/{prefix}/namespaces and /v1/namespaces are both /namespaces);
// management routes keep their full path.
func routeOf(c echo.Context) string {
	route := c.Path()
	if r, ok := strings.CutPrefix(route, "/v1/:prefix"); ok {
		return r
	}
	if r, ok := strings.CutPrefix(route, "/v1"); ok {
		return r
	}
	return route
}

// decodeRequest is the middleware that decodes the JSON body of a route
// in requestBodies once, strictly, before authorize: a body that is not
// exactly one JSON value (trailing bytes, a second value), names a member
// twice, holds a number that does not fit, is not UTF-8, or does not fit
// the route's type is 400 BadRequestException, and nothing else runs. A
// body over the size limit is 413 (limitBody).
func (s *Server) decodeRequest(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		decode, ok := requestBodies[c.Request().Method+" "+routeOf(c)]
		if !ok {
			return next(c)
		}
		r := c.Request()
		raw, err := io.ReadAll(r.Body)
		if err != nil {
			// %w: limitBody's *http.MaxBytesError is a 413 (exceptionFor).
			return fmt.Errorf("%w: read request body: %w", errBadRequest, err)
		}
		// Nothing may read the bytes again.
		r.Body = http.NoBody
		v, err := decode(raw)
		if err != nil {
			if !errors.Is(err, errBadRequest) {
				err = fmt.Errorf("%w: malformed request body: %v", errBadRequest, err)
			}
			return err
		}
		c.Set(bodyContext, &decodedBody{raw: raw, value: v})
		return next(c)
	}
}

// requestBody returns the route's body as decodeRequest decoded it.
// Errors: a 500 when the route is missing from requestBodies (a bug,
// which TestEveryBodyRouteIsDecoded catches).
func requestBody[T any](c echo.Context) (*T, error) {
	if d, ok := c.Get(bodyContext).(*decodedBody); ok {
		if v, ok := d.value.(*T); ok {
			return v, nil
		}
	}
	var zero T
	return nil, fmt.Errorf("server: %s %s has no decoded %T body", c.Request().Method, c.Path(), zero)
}
