// Package testpython gives tests the Python of scripts/setup-python.sh's
// venv (pyiceberg, pyarrow, DuckDB and its iceberg extension; cached in
// $HOME/.cache/tarn), to read tables with real engines.
package testpython

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Root is the repository's root directory.
func Root() string {
	_, file, _, _ := runtime.Caller(0)

	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Python runs scripts/setup-python.sh (which creates the venv or finds
// it up to date) and returns the venv's python; the test fails if it
// cannot.
func Python(t testing.TB) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(Root(), "scripts", "setup-python.sh"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/setup-python.sh: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")

	return filepath.Join(lines[len(lines)-1], "bin", "python")
}

// Script is the path of scripts/name.
func Script(name string) string { return filepath.Join(Root(), "scripts", name) }

// DeltaPython returns the python of the Delta readers' venv: delta-rs
// (deltalake), pyarrow and DuckDB with its delta extension, from
// scripts/requirements-delta.txt (scripts/setup-python.sh with
// TARN_VENV=$HOME/.cache/tarn/venv-delta); the test fails if it cannot.
func DeltaPython(t testing.TB) string {
	t.Helper()
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatalf("home directory: %v", err)
	}
	cmd := exec.Command(filepath.Join(Root(), "scripts", "setup-python.sh"))
	cmd.Env = append(os.Environ(), "TARN_VENV="+filepath.Join(home, ".cache", "tarn", "venv-delta"),
		"TARN_REQUIREMENTS="+filepath.Join(Root(), "scripts", "requirements-delta.txt"),
		`TARN_VENV_PROBE=import deltalake, pyarrow, duckdb, duckdb_ext, os, glob
assert glob.glob(os.path.join(duckdb_ext.get_extension_dir(), "v" + duckdb.__version__, "*", "delta.duckdb_extension"))`)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/setup-python.sh (Delta readers): %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")

	return filepath.Join(lines[len(lines)-1], "bin", "python")
}
