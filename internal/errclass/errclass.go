// Package errclass holds Tarn's error classes and the one sentinel type
// every package builds its sentinels from.
//
// A class says what kind of failure an error is, as a caller acts on it
// (the thing is missing, the name is taken, the state moved, the input is
// invalid, ...). Every exported sentinel of every package wraps exactly one
// class, directly or through a parent sentinel, so errors.Is(err, class)
// works at every layer and the server turns any error into the REST
// spec's ErrorModel by its class (server/errors.go), with a few finer
// exceptions for named sentinels (NoSuchTableException, ...).
//
// The package sits at the bottom of the module (it imports nothing of
// Tarn's) so that every package, catalog's storage below it included,
// can classify its errors; it carries no HTTP: the class → exception
// table is server's. catalog re-exports the classes under its own names
// (catalog.ErrNotFound is NotFound), which are the names its callers use.
package errclass

import (
	"errors"
	"fmt"
)

// Class is an error class. Classes are compared by identity; each one's
// Error is a short lower-case phrase, which leads the message of an error
// wrapping it with fmt.Errorf("%w: ...").
type Class struct{ msg string }

func (c *Class) Error() string { return c.msg }

// The classes. Every class but Internal is sent with an exception of its
// own (server/errors.go); Internal is the server's own failure.
var (
	// Unauthenticated: the request carries no valid credential (401).
	Unauthenticated = &Class{"not authenticated"}
	// Forbidden: the operation is refused, for the caller's rights or
	// whatever they are (403).
	Forbidden = &Class{"forbidden"}
	// Upstream: a service Tarn depends on (Kafka, the schema registry)
	// failed the request (502).
	Upstream = &Class{"upstream service failed"}
	// Unavailable: Tarn cannot serve the request now (not configured,
	// closing, credentials not obtainable) (503).
	Unavailable = &Class{"unavailable"}
	// NotFound: the named resource does not exist (404).
	NotFound = &Class{"not found"}
	// AlreadyExists: the name is taken (409).
	AlreadyExists = &Class{"already exists"}
	// Conflict: the state changed under the request or forbids the
	// operation (409; bare, CommitFailedException: refresh and retry).
	Conflict = &Class{"conflict"}
	// Unprocessable: the request is well formed but contradicts itself (422).
	Unprocessable = &Class{"unprocessable"}
	// Unsupported: the server does not offer this operation (406).
	Unsupported = &Class{"unsupported operation"}
	// CommitStateUnknown: a commit may or may not have been applied (500).
	CommitStateUnknown = &Class{"commit state unknown"}
	// InvalidArgument: the request is invalid (400).
	InvalidArgument = &Class{"invalid argument"}
	// Internal: the server's own failure (a programming error, corrupt
	// stored state, an invalid configuration, an ingest error its caller
	// classifies before it reaches a client); 500 if it reaches one.
	Internal = &Class{"internal error"}
)

// Classes lists every class in precedence order: an error that carries
// two (fmt.Errorf with two %w, errors.Join) is of the first listed,
// whatever order it wraps them in. In Tarn an error carries two mainly
// as a commit-state-unknown over a store failure, or as an internal
// sentinel over the error that caused it (a corrupt Delta log over a
// missing file is not found): Internal is last, so it never hides the
// class of its cause.
var Classes = []*Class{
	Unauthenticated, Forbidden, Upstream, Unavailable, NotFound, AlreadyExists, Conflict,
	Unprocessable, Unsupported, CommitStateUnknown, InvalidArgument, Internal,
}

// Of returns err's class (the first of Classes that errors.Is finds in
// its tree), or nil when err wraps none: an error from outside the module
// (a library's, the standard library's), or a sentinel someone forgot to
// classify (server's TestErrorMapping fails on those).
func Of(err error) *Class {
	for _, c := range Classes {
		if errors.Is(err, c) {
			return c
		}
	}
	return nil
}

// New returns a sentinel: an error whose message stands alone and that
// matches parent with errors.Is. parent is a class, or another sentinel
// made by New (auth.ErrInvalidClient wraps auth.ErrUnauthenticated, which
// wraps Unauthenticated); New panics on a parent of no class, so an
// unclassified sentinel fails at package initialization.
func New(parent error, msg string) error {
	if Of(parent) == nil {
		panic(fmt.Sprintf("errclass.New(%q): parent %v wraps no class", msg, parent))
	}
	return &sentinel{msg: msg, parent: parent}
}

type sentinel struct {
	msg    string
	parent error
}

func (s *sentinel) Error() string { return s.msg }
func (s *sentinel) Unwrap() error { return s.parent }

// Errorf returns an error with a message of its own, formatted from format
// and args as by fmt.Sprintf (a %w is not a wrap here), that matches
// sentinel (and so its class) with errors.Is. Messages that clients match
// follow the wording of Apache Iceberg's Java reference catalog ("Table
// does not exist: ns.tbl"), which the REST Compatibility Kit checks.
func Errorf(sentinel error, format string, args ...any) error {
	return &message{msg: fmt.Sprintf(format, args...), sentinel: sentinel}
}

type message struct {
	msg      string
	sentinel error
}

func (e *message) Error() string { return e.msg }
func (e *message) Unwrap() error { return e.sentinel }
