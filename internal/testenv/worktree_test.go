package testenv_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/internal/testenv"
)

// git runs git in dir and returns its combined output, failing t on error.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return string(out)
}

// TestWorktreeCheck pins issue 14: a `scripts/test` run rewrote the
// committed conformance/results/*.json and conformance/RESULTS.md (and
// `bench/run` bench/results/), so every run left a dirty work tree. Both
// now source scripts/lib/worktree.sh, which fails the run when it changed
// or added a file git would pick up, and lets through what goes to an
// ignored directory and what was already modified before the run.
func TestWorktreeCheck(t *testing.T) {
	testenv.NeedTools(t, "scripts/lib/worktree.sh", "git", "bash")
	lib := testenv.RepoFile(t, "scripts/lib/worktree.sh")
	require.FileExists(t, lib)

	// run sources worktree.sh in dir, runs before, snapshots (with
	// pathspecs), runs during, then checks; it returns the exit code and
	// stderr.
	run := func(t *testing.T, dir, before, during string, pathspecs ...string) (int, string) {
		t.Helper()
		script := `set -euo pipefail; . "$0"; ` + before + `; worktree_snapshot "$@"; ` + during + `; worktree_unchanged the-run`
		cmd := exec.Command("bash", append([]string{"-c", script, lib}, pathspecs...)...)
		cmd.Dir = dir
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), stderr.String()
		}
		require.NoError(t, err)
		return 0, stderr.String()
	}
	repo := func(t *testing.T) string {
		dir := t.TempDir()
		git(t, dir, "init", "-q")
		require.NoError(t, os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("/results/\n"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "tracked.txt"), []byte("a\n"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "RESULTS.md"), []byte("old\n"), 0o644))
		git(t, dir, "add", ".")
		git(t, dir, "commit", "-q", "-m", "init")
		return dir
	}

	for _, tt := range []struct {
		name, before, during string
		pathspecs            []string
		wantFail             string // a line of the report, or "" when the run passes
	}{
		{name: "nothing changed"},
		{name: "results in an ignored directory", during: "mkdir -p results && echo r >results/suite.json"},
		{name: "a tracked file rewritten", during: "echo b >tracked.txt", wantFail: "tracked.txt"},
		{name: "a new file git would pick up", during: "echo n >new.json", wantFail: "?? new.json"},
		{name: "a tracked file deleted", during: "rm tracked.txt", wantFail: "tracked.txt"},
		// A developer's uncommitted edit is not the run's doing...
		{name: "edited before the run, untouched by it", before: "echo mine >tracked.txt"},
		// ...but the run changing the edited file again is.
		{name: "edited before the run, changed by it", before: "echo mine >tracked.txt", during: "echo run >tracked.txt",
			wantFail: "the-run: the run changed the work tree"},
		// scripts/test with TARN_UPDATE_RESULTS=1 excludes conformance/RESULTS.md.
		{name: "an excluded path asked for", during: "echo new >RESULTS.md", pathspecs: []string{".", ":(exclude)RESULTS.md"}},
		{name: "excluded path, another file changed", during: "echo new >RESULTS.md; echo b >tracked.txt",
			pathspecs: []string{".", ":(exclude)RESULTS.md"}, wantFail: "tracked.txt"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before, during := orNoop(tt.before), orNoop(tt.during)
			code, stderr := run(t, repo(t), before, during, tt.pathspecs...)
			if tt.wantFail == "" {
				assert.Equal(t, 0, code, "stderr: %s", stderr)
				assert.Empty(t, stderr)
				return
			}
			assert.Equal(t, 1, code)
			assert.Contains(t, stderr, "the-run: the run changed the work tree (results belong in an ignored directory):")
			assert.Contains(t, stderr, tt.wantFail)
		})
	}

	t.Run("outside a git work tree", func(t *testing.T) {
		dir := t.TempDir()
		t.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(dir))
		code, stderr := run(t, dir, ":", "echo x >file")
		assert.Equal(t, 0, code, "stderr: %s", stderr)
	})
}

// orNoop returns s, or ":" (bash's no-op) when s is empty.
func orNoop(s string) string {
	if s == "" {
		return ":"
	}
	return s
}

// TestGitIgnoresWhatRunsWrite: what scripts/test, .ci/run, bench/run and
// conformance/run write inside the repository is ignored by the
// repository's .gitignore (else TestWorktreeCheck's rule would fail every
// CI run), and the committed write-ups they are compared with are not.
func TestGitIgnoresWhatRunsWrite(t *testing.T) {
	testenv.NeedTools(t, "git check-ignore", "git")
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(root, ".git")); err != nil {
		testenv.Missing(t, "%s is not a git work tree (%v)", root, err)
	}
	ignored := []string{
		"bench/results/all.txt", "bench/results/ingest.json", "bench/results/ingest-tarn-cpu.pprof", // bench/run
		"conformance/results/rck.json", "conformance/results/RESULTS.md", // conformance/run
		"bin/tarn",          // .ci/run's scripts/build
		"tarn-data/tarn.db", // tarn serve's default --data-dir
		"conformance/pyiceberg/__pycache__/x.pyc",      // Python
		"conformance/duckdb/.pytest_cache/v/x",         // pytest
		"cmd/tarn/tarn.test", "ingest/pipeline/x.test", // go test -c
	}
	kept := []string{"bench/RESULTS.md", "conformance/RESULTS.md", "bench/record/ingest.json", "testdata/answers.json"}
	for _, p := range ignored {
		cmd := exec.Command("git", "check-ignore", "-q", "--no-index", p)
		cmd.Dir = root
		assert.NoError(t, cmd.Run(), "%s is not git-ignored", p)
	}
	for _, p := range kept {
		cmd := exec.Command("git", "check-ignore", "-q", "--no-index", p)
		cmd.Dir = root
		assert.Error(t, cmd.Run(), "%s is git-ignored", p)
		assert.FileExists(t, filepath.Join(root, p))
	}
}
