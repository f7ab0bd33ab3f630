package storage

import (
	"errors"
	"fmt"
)

// The classes of storage's errors. They are also the catalog's
// (catalog.ErrInvalidArgument and catalog.ErrForbidden are these same
// values), so a storage error keeps the HTTP status of its class
// through every layer above.
var (
	// ErrInvalidArgument: the request, a location or a warehouse
	// property is invalid (400).
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrForbidden: the operation is refused whatever the caller's rights (403).
	ErrForbidden = errors.New("forbidden")
)

// classError is an error with a message of its own that matches its
// class with errors.Is: a specific sentinel (ErrSignOutsideLocation), or
// one failure's message (errorf), as catalog.Error is.
type classError struct {
	msg   string
	class error
}

// errorf returns a *classError for class with a formatted message.
func errorf(class error, format string, args ...any) error {
	return &classError{msg: fmt.Sprintf(format, args...), class: class}
}

func (e *classError) Error() string { return e.msg }
func (e *classError) Unwrap() error { return e.class }
