package server

import (
	"errors"
	"net/http"

	"github.com/apache/iceberg-go"
	"github.com/labstack/echo/v4"

	"github.com/tarnhq/tarn/auth"
	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/topics"
	"github.com/tarnhq/tarn/internal/recovery"
	"github.com/tarnhq/tarn/spec"
	"github.com/tarnhq/tarn/storage"
)

// exceptionFor maps any error to the spec exception it is sent as. Order
// matters: specific sentinels before their parents.
func exceptionFor(err error) spec.Exception {
	var he *echo.HTTPError
	switch {
	case errors.Is(err, auth.ErrUnauthenticated):
		return spec.NotAuthorized
	case errors.Is(err, auth.ErrForbidden):
		return spec.Forbidden
	case errors.Is(err, auth.ErrNotFound):
		return spec.NotFound
	case errors.Is(err, auth.ErrAlreadyExists):
		return spec.AlreadyExists
	case errors.Is(err, auth.ErrInvalidArgument):
		return spec.BadRequest
	case errors.Is(err, topics.ErrNotSuspended), errors.Is(err, topics.ErrDLQTaken):
		return spec.Conflict
	case errors.Is(err, topics.ErrUpstream):
		return spec.BadGateway
	case errors.Is(err, topics.ErrNotConfigured), errors.Is(err, topics.ErrClosed):
		return spec.ServiceUnavailable
	case errors.Is(err, storage.ErrVending):
		// STS refused or failed; the message names its code, never a key.
		return spec.ServiceUnavailable
	case errors.Is(err, catalog.ErrNoSuchNamespace):
		return spec.NoSuchNamespace
	case errors.Is(err, catalog.ErrNoSuchTable):
		return spec.NoSuchTable
	case errors.Is(err, catalog.ErrNoSuchView):
		return spec.NoSuchView
	case errors.Is(err, catalog.ErrNoSuchWarehouse):
		return spec.NoSuchWarehouse
	case errors.Is(err, catalog.ErrMetadataNotFound):
		return spec.NotFound
	case errors.Is(err, catalog.ErrNamespaceNotEmpty):
		return spec.NamespaceNotEmpty
	case errors.Is(err, catalog.ErrCommitFailed):
		return spec.CommitFailed
	case errors.Is(err, catalog.ErrTableOwned):
		return spec.Conflict
	case errors.Is(err, catalog.ErrAlreadyExists):
		return spec.AlreadyExists
	case errors.Is(err, catalog.ErrNotFound):
		return spec.NotFound
	case errors.Is(err, catalog.ErrConflict):
		// A bare conflict means the state moved under the request, which
		// the spec reports as CommitFailedException: refresh and retry.
		return spec.CommitFailed
	case errors.Is(err, catalog.ErrUnprocessable):
		return spec.Unprocessable
	case errors.Is(err, catalog.ErrForbidden):
		return spec.Forbidden
	case errors.Is(err, catalog.ErrUnsupported):
		return spec.NotAcceptable
	case errors.Is(err, catalog.ErrCommitStateUnknown):
		return spec.CommitStateUnknown
	// JSON errors are not matched here: request bodies are decoded by
	// decodeRequest, which wraps errBadRequest, so a bare *json.SyntaxError
	// comes from data the server stored (a corrupt pointer or metadata
	// file) and is the server's fault, not the client's.
	case errors.As(err, new(*http.MaxBytesError)):
		return spec.RequestTooLarge
	case errors.Is(err, errBadRequest), errors.Is(err, catalog.ErrInvalidMetadata), errors.Is(err, catalog.ErrLimitExceeded):
		return spec.BadRequest
	case errors.Is(err, catalog.ErrInvalidArgument), errors.Is(err, iceberg.ErrInvalidArgument):
		return spec.InvalidArgument
	case errors.As(err, &he):
		switch he.Code {
		case http.StatusNotFound:
			return spec.NotFound
		case http.StatusMethodNotAllowed:
			return spec.MethodNotAllowed
		case http.StatusRequestEntityTooLarge:
			return spec.RequestTooLarge
		case http.StatusBadRequest, http.StatusUnsupportedMediaType:
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
		// Nothing can be sent any more; a panic is still logged.
		if pe := (*recovery.PanicError)(nil); errors.As(err, &pe) {
			s.log.Error("request failed after its response started", "method", c.Request().Method, "path", c.Request().URL.Path,
				"request_id", c.Response().Header().Get(echo.HeaderXRequestID), "err", pe)
		}
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
	if ex == spec.RequestTooLarge {
		msg = bodyTooLargeMessage // not the decoder's or the reader's wording
	}
	storageMsg := ""
	if ex == spec.ServerError {
		// An object-store failure: name its class (never a credential);
		// 503 when the store was unreachable, timed out or throttled.
		if f, ok := storage.ClassifyError(err); ok {
			storageMsg = f.Message()
			if f.Transient {
				ex = spec.ServiceUnavailable
			}
		}
	}
	if ex.Status >= 500 {
		reqID := c.Response().Header().Get(echo.HeaderXRequestID)
		s.log.Error("request failed", "method", c.Request().Method, "path", c.Request().URL.Path, "request_id", reqID, "err", err)
		switch {
		case storageMsg != "":
			msg = storageMsg
			if reqID != "" {
				msg += " (request id " + reqID + ")"
			}
		case ex == spec.ServerError:
			// Unexpected: its text may name files and internals; it is in the log.
			msg = "internal server error"
			if reqID != "" {
				msg += " (request id " + reqID + ")"
			}
		}
	}
	if c.Request().Method == http.MethodHead {
		_ = c.NoContent(ex.Status)
		return
	}
	_ = c.JSON(ex.Status, ex.Response(msg))
}
