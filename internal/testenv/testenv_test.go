package testenv_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tarnhq/tarn/internal/testenv"
)

// recorder is a testing.TB that records how Missing ended the test
// instead of ending it.
type recorder struct {
	testing.TB
	fatal, skip string
}

func (r *recorder) Helper()                        {}
func (r *recorder) Fatalf(format string, _ ...any) { r.fatal = format }
func (r *recorder) Skipf(format string, _ ...any)  { r.skip = format }

// TestMissing: a missing precondition fails the test under CI=true and
// skips it otherwise (CI unset, or any other value).
func TestMissing(t *testing.T) {
	for _, tc := range []struct {
		ci   string
		fail bool
	}{{"true", true}, {"", false}, {"false", false}} {
		t.Run("CI="+tc.ci, func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			r := &recorder{TB: t}
			testenv.Missing(r, "sample %s not found", "x")
			if tc.fail {
				assert.Contains(t, r.fatal, "sample %s not found")
				assert.Empty(t, r.skip)
			} else {
				assert.Equal(t, "sample %s not found", r.skip)
				assert.Empty(t, r.fatal)
			}
		})
	}
}
