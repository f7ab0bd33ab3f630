package server

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/apache/iceberg-go"
	"github.com/labstack/echo/v4"

	"github.com/tarnhq/tarn/auth"
	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/topics"
	"github.com/tarnhq/tarn/internal/errclass"
	"github.com/tarnhq/tarn/internal/recovery"
	"github.com/tarnhq/tarn/spec"
	"github.com/tarnhq/tarn/storage"
)

// classExceptions is the exception each error class (internal/errclass)
// is sent as. errclass.Internal has none: it is the server's own failure,
// sent as ServerErrorException like any error of no class.
var classExceptions = map[*errclass.Class]spec.Exception{
	errclass.Unauthenticated: spec.NotAuthorized,
	errclass.Forbidden:       spec.Forbidden,
	errclass.Upstream:        spec.BadGateway,
	errclass.Unavailable:     spec.ServiceUnavailable,
	errclass.NotFound:        spec.NotFound,
	errclass.AlreadyExists:   spec.AlreadyExists,
	// A bare conflict means the state moved under the request, which the
	// spec reports as CommitFailedException: refresh and retry.
	errclass.Conflict:           spec.CommitFailed,
	errclass.Unprocessable:      spec.Unprocessable,
	errclass.Unsupported:        spec.NotAcceptable,
	errclass.CommitStateUnknown: spec.CommitStateUnknown,
	errclass.InvalidArgument:    spec.InvalidArgument,
}

// overrides are the sentinels sent as a finer exception than their
// class's: the spec's named not-found and not-empty kinds, Tarn's 409 for
// a state that forbids the operation (not a commit to retry), and the
// 400s that keep the BadRequestException type they were first sent with.
// They are checked before the classes (a commit that failed because the
// table was dropped is NoSuchTableException); no sentinel here wraps
// another, so their order does not matter.
var overrides = []struct {
	err error
	ex  spec.Exception
}{
	{catalog.ErrNoSuchNamespace, spec.NoSuchNamespace},
	{catalog.ErrNoSuchTable, spec.NoSuchTable},
	{catalog.ErrNoSuchView, spec.NoSuchView},
	{catalog.ErrNoSuchWarehouse, spec.NoSuchWarehouse},
	{catalog.ErrNamespaceNotEmpty, spec.NamespaceNotEmpty},
	{catalog.ErrTableOwned, spec.Conflict},
	{topics.ErrDLQTaken, spec.Conflict},
	{topics.ErrNotSuspended, spec.Conflict},
	{catalog.ErrLeaseHeld, spec.Conflict},
	{catalog.ErrLeaseLost, spec.Conflict},
	{errBadRequest, spec.BadRequest},
	{catalog.ErrInvalidMetadata, spec.BadRequest},
	{catalog.ErrLimitExceeded, spec.BadRequest},
	{auth.ErrInvalidArgument, spec.BadRequest},
}

// exceptionFor maps any error to the spec exception it is sent as: a body
// over the limit, then an override, then its class, then the errors from
// outside the module that have a kind (iceberg-go's invalid argument,
// echo's routing errors); anything else is a ServerErrorException.
func exceptionFor(err error) spec.Exception {
	// First: the body reader's error is wrapped in errBadRequest.
	if errors.As(err, new(*http.MaxBytesError)) {
		return spec.RequestTooLarge
	}
	for _, o := range overrides {
		if errors.Is(err, o.err) {
			return o.ex
		}
	}
	if ex, ok := classExceptions[errclass.Of(err)]; ok {
		return ex
	}
	// JSON errors are not matched here: request bodies are decoded by
	// decodeRequest, which wraps errBadRequest, so a bare *json.SyntaxError
	// comes from data the server stored (a corrupt pointer or metadata
	// file) and is the server's fault, not the client's.
	if errors.Is(err, iceberg.ErrInvalidArgument) {
		return spec.InvalidArgument
	}
	if he := (*echo.HTTPError)(nil); errors.As(err, &he) {
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
var errBadRequest = errclass.New(errclass.InvalidArgument, "bad request")

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
		// A refusal the handler chose (an *echo.HTTPError such as 503
		// "publishing not configured") is the server's configuration
		// answering, not a failure: INFO, so ERROR lines stay the ones an
		// operator must look at.
		level, what := slog.LevelError, "request failed"
		if he != nil && he.Code == http.StatusServiceUnavailable {
			level, what = slog.LevelInfo, "request refused"
		}
		s.log.Log(c.Request().Context(), level, what, "method", c.Request().Method, "path", c.Request().URL.Path, "request_id", reqID, "err", err)
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
