package catalog

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// Namespace is a namespace's levels, outermost first.
type Namespace []string

// String joins the levels with ".", as engines print namespaces.
func (n Namespace) String() string { return strings.Join(n, ".") }

// Parent is the namespace one level up; the root's parent is empty.
func (n Namespace) Parent() Namespace {
	if len(n) == 0 {
		return nil
	}
	return n[:len(n)-1]
}

// Ident names a table or a view: its namespace and its name. Tables and
// views share one identifier space.
type Ident struct {
	Namespace Namespace
	Name      string
}

func (i Ident) String() string {
	if len(i.Namespace) == 0 {
		return i.Name
	}
	return i.Namespace.String() + "." + i.Name
}

// Equal reports whether both name the same thing.
func (i Ident) Equal(o Ident) bool {
	return i.Name == o.Name && slices.Equal(i.Namespace, o.Namespace)
}

// Validate checks a namespace: at least one level, each non-empty, not "."
// or "..", without control characters, at most MaxNameBytes. Errors wrap
// ErrInvalidArgument. What an existing namespace may be called; one
// being created is checked by ValidateNew too (limits.go).
func (n Namespace) Validate() error {
	if len(n) == 0 {
		return fmt.Errorf("%w: namespace must have at least one level", ErrInvalidArgument)
	}
	for _, level := range n {
		if err := validateName("namespace level", level); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks an identifier's namespace and name, as Namespace.Validate.
func (i Ident) Validate() error {
	if err := i.Namespace.Validate(); err != nil {
		return err
	}
	return validateName("name", i.Name)
}

func validateName(what, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%w: %s must not be empty", ErrInvalidArgument, what)
	case len(s) > MaxNameBytes:
		return Errorf(ErrLimitExceeded, "%s is %d bytes long; at most %d are allowed", what, len(s), MaxNameBytes)
	case s == "." || s == "..":
		return fmt.Errorf("%w: %s must not be %q", ErrInvalidArgument, what, s)
	case strings.Contains(s, "../") || strings.Contains(s, "/..") || strings.Contains(s, `..\`) || strings.Contains(s, `\..`):
		return fmt.Errorf("%w: %s %q must not contain a '..' path segment", ErrInvalidArgument, what, s)
	case strings.ContainsFunc(s, unicode.IsControl):
		return fmt.Errorf("%w: %s %q must not contain control characters", ErrInvalidArgument, what, s)
	}
	return nil
}
