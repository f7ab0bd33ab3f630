// Package testenv is how Tarn's tests meet their environment: the
// repository root, the opt-in gates of the tests that need real services
// (TARN_E2E=1, TARN_TEST_S3_ENDPOINT) and preconditions that are not met.
//
// A gate that is off skips, everywhere: the test was not asked for. A
// precondition that is missing once a test runs (data, a tool, a service
// it was told to use) skips on a developer's machine but fails under
// CI=true, so that a CI run never passes by skipping what it was meant to
// run.
package testenv

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// EnvE2E is the gate of the tests that start a real Kafka broker, schema
// registry, OIDC provider or engine: they run only when it is "1".
const EnvE2E = "TARN_E2E"

// modulePath is the first line of Tarn's go.mod, which marks the root.
const modulePath = "module github.com/tarnhq/tarn\n"

// CI reports whether the tests run in CI: the CI environment variable,
// which GitHub Actions, GitLab CI, Buildkite and CircleCI set to "true",
// parses as a true boolean ("true", "1").
func CI() bool {
	ci, _ := strconv.ParseBool(os.Getenv("CI"))
	return ci
}

// Missing stops t because one of its preconditions is not met (format
// says which, and how to provide it): under CI it fails t, elsewhere it
// skips it.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if CI() {
		t.Fatalf("precondition missing (CI=true, so this fails instead of skipping): %s", msg)
	} else {
		t.Skip("precondition missing: " + msg)
	}
}

// NeedTools stops t through Missing unless every tool is on PATH; user says
// what needs them (e.g. "scripts/kafka.sh"), for the message.
func NeedTools(t testing.TB, user string, tools ...string) {
	t.Helper()
	var missing []string
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) > 0 {
		Missing(t, "%s needs %s on PATH", user, strings.Join(missing, ", "))
	}
}

// E2E skips t unless TARN_E2E=1; needs names what the test starts, for
// the skip message. It is an opt-in gate, so it skips under CI too; what
// the test needs once it runs (Java, Maven, node: NeedTools) goes through
// Missing.
func E2E(t testing.TB, needs string) {
	t.Helper()
	if os.Getenv(EnvE2E) != "1" {
		t.Skipf("set %s=1 to run against %s", EnvE2E, needs)
	}
}

// OptIn returns the value of the environment variable name, or skips t
// when it is unset or empty: a gate that also carries the service's
// address (TARN_TEST_S3_ENDPOINT=http://127.0.0.1:PORT). how says how to
// get one, for the skip message.
func OptIn(t testing.TB, name, how string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		t.Skipf("%s is not set (%s)", name, how)
	}
	return v
}

// RepoRoot returns the directory of Tarn's go.mod at or above the working
// directory (a test binary runs in its package's directory). Errors: no
// such go.mod, or the working directory is unknown.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.HasPrefix(b, []byte(modulePath)) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testenv: no go.mod of github.com/tarnhq/tarn at or above the working directory")
		}
		dir = parent
	}
}

// RepoFile returns the absolute path of rel (slash-separated, relative to
// the repository root), failing t when the root is not found.
func RepoFile(t testing.TB, rel string) string {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, filepath.FromSlash(rel))
}
