package spec

import (
	"log/slog"
	"net/http"
)

// ErrorModel is the body of every non-2xx response: the spec's
// IcebergErrorResponse, {"error": {"message", "type", "code"}}.
type ErrorModel struct {
	Message string   `json:"message"`
	Type    string   `json:"type"`
	Code    int      `json:"code"`
	Stack   []string `json:"stack,omitempty"`
}

// ErrorResponse wraps ErrorModel as the spec's IcebergErrorResponse.
type ErrorResponse struct {
	Error ErrorModel `json:"error"`
}

// LogValue logs an ErrorModel as a structured group.
func (e ErrorModel) LogValue() slog.Value {
	return slog.GroupValue(slog.String("type", e.Type), slog.Int("code", e.Code), slog.String("message", e.Message))
}

// Exception is one of the exception kinds the spec names in its error
// responses, with the HTTP status it is sent with.
type Exception struct {
	// Type is the `type` field of ErrorModel, as Java and Python clients
	// match it (e.g. "NoSuchTableException").
	Type string
	// Status is the HTTP status code, also sent as ErrorModel.code.
	Status int
	// Meaning is the one-line description from the spec.
	Meaning string
}

// The exception kinds of the REST spec (components/responses and examples of
// rest-catalog-open-api.yaml).
var (
	BadRequest = Exception{"BadRequestException", http.StatusBadRequest, "the request is malformed or invalid"}
	// InvalidArgument is a 400 for a well-formed request with invalid
	// content. Its type is the Java reference's, which Java clients turn
	// into IllegalArgumentException (ErrorHandlers.DefaultErrorHandler);
	// other clients treat it as any 400.
	InvalidArgument   = Exception{"IllegalArgumentException", http.StatusBadRequest, "the request's content is invalid"}
	NotAuthorized     = Exception{"NotAuthorizedException", http.StatusUnauthorized, "the request is not authenticated"}
	Forbidden         = Exception{"ForbiddenException", http.StatusForbidden, "the caller may not perform this operation"}
	NoSuchNamespace   = Exception{"NoSuchNamespaceException", http.StatusNotFound, "the namespace does not exist"}
	NoSuchTable       = Exception{"NoSuchTableException", http.StatusNotFound, "the table does not exist"}
	NoSuchView        = Exception{"NoSuchViewException", http.StatusNotFound, "the view does not exist"}
	NoSuchWarehouse   = Exception{"NoSuchWarehouseException", http.StatusNotFound, "the warehouse does not exist"}
	NotFound          = Exception{"NotFoundException", http.StatusNotFound, "the route does not exist"}
	MethodNotAllowed  = Exception{"MethodNotAllowedException", http.StatusMethodNotAllowed, "the route does not accept this method"}
	NotAcceptable     = Exception{"UnsupportedOperationException", http.StatusNotAcceptable, "the server does not support this operation"}
	AlreadyExists     = Exception{"AlreadyExistsException", http.StatusConflict, "the namespace, table or view already exists"}
	NamespaceNotEmpty = Exception{"NamespaceNotEmptyException", http.StatusConflict, "the namespace still holds tables, views or namespaces"}
	CommitFailed      = Exception{"CommitFailedException", http.StatusConflict, "a requirement of the commit failed; refresh and retry"}
	// Conflict is Tarn's own 409 for an operation the resource's state
	// forbids (dropping a table an enabled topic materializes into,
	// resuming a topic that is not suspended); the spec has no kind for it.
	Conflict           = Exception{"ConflictException", http.StatusConflict, "the resource's state forbids the operation"}
	AuthTimeout        = Exception{"AuthenticationTimeoutException", 419, "the credentials have expired"}
	Unprocessable      = Exception{"UnprocessableEntityException", http.StatusUnprocessableEntity, "the request is well formed but cannot be processed"}
	ServerError        = Exception{"ServerErrorException", http.StatusInternalServerError, "an internal server error occurred"}
	CommitStateUnknown = Exception{"CommitStateUnknownException", http.StatusInternalServerError, "the commit may or may not have been applied"}
	ServiceUnavailable = Exception{"ServiceUnavailableException", http.StatusServiceUnavailable, "the service is not ready"}
	GatewayTimeout     = Exception{"GatewayTimeoutException", http.StatusGatewayTimeout, "an upstream request timed out"}
	BadGateway         = Exception{"BadGatewayException", http.StatusBadGateway, "an upstream request failed"}
	// RequestTooLarge is Tarn's own 413 for a request body over the
	// server's limit; the spec has no kind for it.
	RequestTooLarge = Exception{"RequestTooLargeException", http.StatusRequestEntityTooLarge, "the request body is larger than the server accepts"}
)

// Exceptions lists every kind above, for tests and documentation.
var Exceptions = []Exception{
	BadRequest, InvalidArgument, NotAuthorized, Forbidden, NoSuchNamespace, NoSuchTable,
	NoSuchView, NoSuchWarehouse, NotFound, MethodNotAllowed, NotAcceptable,
	AlreadyExists, NamespaceNotEmpty, CommitFailed, Conflict, RequestTooLarge, AuthTimeout, Unprocessable,
	ServerError, CommitStateUnknown, ServiceUnavailable, GatewayTimeout, BadGateway,
}

// Response builds the response body for this exception with message.
func (e Exception) Response(message string) ErrorResponse {
	return ErrorResponse{Error: ErrorModel{Message: message, Type: e.Type, Code: e.Status}}
}
