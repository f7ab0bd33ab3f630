package errclass_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tarnhq/tarn/internal/errclass"
)

func TestSentinel(t *testing.T) {
	parent := errclass.New(errclass.Unauthenticated, "not authenticated")
	child := errclass.New(parent, "invalid token")
	err := fmt.Errorf("verify: %w", errclass.Errorf(child, "token expired at %d", 17))

	assert.Equal(t, "verify: token expired at 17", err.Error(), "a sentinel's message stands alone")
	assert.ErrorIs(t, err, child)
	assert.ErrorIs(t, err, parent)
	assert.ErrorIs(t, err, errclass.Unauthenticated)
	assert.Same(t, errclass.Unauthenticated, errclass.Of(err))
	assert.Nil(t, errclass.Of(errors.New("boom")), "an error from outside the module has no class")
}

func TestOfPrecedence(t *testing.T) {
	// An error of two classes is of the first in Classes, whatever the
	// order it wraps them in; Internal never hides the other.
	internal := errclass.New(errclass.Internal, "corrupt log")
	for _, err := range []error{
		fmt.Errorf("%w: %w", internal, errclass.NotFound),
		fmt.Errorf("%w: %w", errclass.NotFound, internal),
		errors.Join(internal, errclass.NotFound),
	} {
		assert.Same(t, errclass.NotFound, errclass.Of(err), "%v", err)
	}
	assert.Same(t, errclass.NotFound, errclass.Of(fmt.Errorf("%w: %w", errclass.CommitStateUnknown, errclass.NotFound)))
	assert.Same(t, errclass.Internal, errclass.Of(internal))
}

func TestNewPanicsOnUnclassifiedParent(t *testing.T) {
	// A sentinel built on a parent of no class would map to nothing; New
	// refuses it at package initialization instead.
	assert.PanicsWithValue(t, `errclass.New("child"): parent plain wraps no class`, func() {
		errclass.New(errors.New("plain"), "child")
	})
}

func TestClassesDistinct(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range errclass.Classes {
		assert.False(t, seen[c.Error()], "two classes read %q", c.Error())
		seen[c.Error()] = true
	}
	assert.Len(t, errclass.Classes, 12)
}
