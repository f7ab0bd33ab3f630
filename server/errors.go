package server

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/apache/iceberg-go"
	"github.com/labstack/echo/v4"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/spec"
)

// exceptionFor maps any error to the spec exception it is sent as. Order
// matters: specific sentinels before their parents.
func exceptionFor(err error) spec.Exception {
	var he *echo.HTTPError
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.Is(err, catalog.ErrNoSuchNamespace):
		return spec.NoSuchNamespace
	case errors.Is(err, catalog.ErrNoSuchTable):
		return spec.NoSuchTable
	case errors.Is(err, catalog.ErrNoSuchView):
		return spec.NoSuchView
	case errors.Is(err, catalog.ErrNoSuchWarehouse):
		return spec.NoSuchWarehouse
	case errors.Is(err, catalog.ErrNamespaceNotEmpty):
		return spec.NamespaceNotEmpty
	case errors.Is(err, catalog.ErrCommitFailed):
		return spec.CommitFailed
	case errors.Is(err, catalog.ErrAlreadyExists):
		return spec.AlreadyExists
	case errors.Is(err, catalog.ErrUnprocessable):
		return spec.Unprocessable
	case errors.Is(err, catalog.ErrForbidden):
		return spec.Forbidden
	case errors.Is(err, catalog.ErrUnsupported):
		return spec.NotAcceptable
	case errors.Is(err, catalog.ErrCommitStateUnknown):
		return spec.CommitStateUnknown
	case errors.Is(err, catalog.ErrInvalidArgument), errors.Is(err, iceberg.ErrInvalidArgument),
		errors.As(err, &syntaxErr), errors.As(err, &typeErr), errors.Is(err, errBadRequest):
		return spec.BadRequest
	case errors.As(err, &he):
		switch he.Code {
		case http.StatusNotFound:
			return spec.NotFound
		case http.StatusMethodNotAllowed:
			return spec.MethodNotAllowed
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType:
			return spec.BadRequest
		case http.StatusServiceUnavailable:
			return spec.ServiceUnavailable
		}
	}
	return spec.ServerError
}

// errBadRequest marks request decoding failures (bad JSON, bad parameters).
// Wrapped with %w its text leads the message, so it is kept short.
var errBadRequest = errors.New("bad request")

// errorHandler is echo's HTTPErrorHandler: every error leaves as the
// spec's ErrorModel with the matching status. 5xx messages are logged in
// full and sent generic only for unexpected errors.
func (s *Server) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	ex := exceptionFor(err)
	msg := err.Error()
	var he *echo.HTTPError
	if errors.As(err, &he) {
		if m, ok := he.Message.(string); ok {
			msg = m
		}
	}
	if ex.Status >= 500 {
		s.log.Error("request failed", "method", c.Request().Method, "path", c.Request().URL.Path, "request_id", c.Response().Header().Get(echo.HeaderXRequestID), "err", err)
	}
	if c.Request().Method == http.MethodHead {
		_ = c.NoContent(ex.Status)
		return
	}
	_ = c.JSON(ex.Status, ex.Response(msg))
}
