package testenv_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/internal/testenv"
)

// fakeTB records how a helper stopped the test instead of stopping it.
type fakeTB struct {
	testing.TB
	fatal, skip string
}

func (f *fakeTB) Helper()                        {}
func (f *fakeTB) Fatalf(format string, a ...any) { f.fatal = fmt.Sprintf(format, a...) }
func (f *fakeTB) Skip(a ...any)                  { f.skip = fmt.Sprint(a...) }
func (f *fakeTB) Skipf(format string, a ...any)  { f.skip = fmt.Sprintf(format, a...) }

// Missing is what turns "the data is not here" into a failure in CI:
// before it, TestE2EFlights and TestE2EIngestCrash skipped with ok
// wherever ../shared/data was absent, CI included.
func TestMissing(t *testing.T) {
	for _, tt := range []struct {
		ci        string
		wantFatal bool
	}{
		{"true", true}, {"1", true}, {"TRUE", true},
		{"", false}, {"false", false}, {"0", false},
	} {
		t.Run("CI="+tt.ci, func(t *testing.T) {
			t.Setenv("CI", tt.ci)
			f := &fakeTB{TB: t}
			testenv.Missing(f, "no %s here", "broker")
			if tt.wantFatal {
				assert.Contains(t, f.fatal, "CI=true")
				assert.Empty(t, f.skip)
			} else {
				assert.Equal(t, "precondition missing: no broker here", f.skip)
				assert.Empty(t, f.fatal)
			}
		})
	}
}

// Gates skip whatever CI says: a test that was not asked for is not a
// missing precondition.
func TestGatesSkipUnderCI(t *testing.T) {
	t.Setenv("CI", "true")
	t.Setenv(testenv.EnvE2E, "")
	t.Setenv("TARN_TEST_SOMETHING", "")
	f := &fakeTB{TB: t}
	testenv.E2E(f, "a broker")
	assert.Contains(t, f.skip, "TARN_E2E=1")
	assert.Empty(t, f.fatal)

	f = &fakeTB{TB: t}
	assert.Empty(t, testenv.OptIn(f, "TARN_TEST_SOMETHING", "start it"))
	assert.Contains(t, f.skip, "is not set")

	t.Setenv("TARN_TEST_SOMETHING", "http://127.0.0.1:1")
	f = &fakeTB{TB: t}
	assert.Equal(t, "http://127.0.0.1:1", testenv.OptIn(f, "TARN_TEST_SOMETHING", "start it"))
	assert.Empty(t, f.skip)
}

func TestRepoRoot(t *testing.T) {
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	wd, err := os.Getwd()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(root, "internal", "testenv"), wd)
	assert.FileExists(t, testenv.RepoFile(t, "testdata/answers.json"))

	t.Chdir(t.TempDir())
	_, err = testenv.RepoRoot()
	assert.Error(t, err, "outside the repository")
}

// A missing tool is a missing precondition: a failure under CI.
func TestNeedTools(t *testing.T) {
	t.Setenv("CI", "true")
	f := &fakeTB{TB: t}
	testenv.NeedTools(f, "scripts/x.sh", "sh", "tarn-no-such-tool-1", "tarn-no-such-tool-2")
	assert.Contains(t, f.fatal, "scripts/x.sh needs tarn-no-such-tool-1, tarn-no-such-tool-2 on PATH")

	f = &fakeTB{TB: t}
	testenv.NeedTools(f, "scripts/x.sh", "sh")
	assert.Empty(t, f.fatal)
	assert.Empty(t, f.skip)
}
