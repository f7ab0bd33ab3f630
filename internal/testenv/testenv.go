// Package testenv holds the rule for tests whose precondition is missing:
// they skip on a developer's machine and fail in CI, so a suite that CI
// believes it ran cannot pass by skipping (a sample not checked out, a
// tool not installed).
package testenv

import (
	"os"
	"testing"
)

// InCI reports whether the tests run in CI: the environment variable CI
// is "true", as GitHub Actions, GitLab CI and most others set it.
func InCI() bool { return os.Getenv("CI") == "true" }

// Missing ends the test for a missing precondition described by format
// and args: t.Fatalf under CI (InCI), t.Skipf elsewhere. Use it for what
// the test needs, not for what selects it (TARN_E2E, -short).
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if InCI() {
		t.Fatalf("CI=true and a precondition is missing: "+format, args...)
		return
	}
	t.Skipf(format, args...)
}
