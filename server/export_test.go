package server

import (
	"errors"

	"github.com/tarnhq/tarn/internal/errclass"
	"github.com/tarnhq/tarn/spec"
)

// ClassException is the exception of err's class alone, as exceptionFor
// would send err were no override to match: ServerError for Internal.
func ClassException(err error) spec.Exception {
	if ex, ok := classExceptions[errclass.Of(err)]; ok {
		return ex
	}
	return spec.ServerError
}

// Overridden reports whether err matches one of the overrides.
func Overridden(err error) bool {
	for _, o := range overrides {
		if errors.Is(err, o.err) {
			return true
		}
	}
	return false
}
