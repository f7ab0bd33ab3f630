package main_test

import (
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/internal/demo"
	"github.com/tarnhq/tarn/internal/testenv"
)

// printedBlock returns the indented lines that follow the line starting
// with header in the demo's instructions, without their indent.
func printedBlock(t *testing.T, out, header string) string {
	t.Helper()
	_, after, ok := strings.Cut(out, "\n"+header)
	require.True(t, ok, "no %q section in the demo's output:\n%s", header, out)
	var code []string
	for _, l := range strings.Split(after, "\n")[1:] {
		if rest, ok := strings.CutPrefix(l, "  "); ok {
			code = append(code, rest)
			continue
		}
		if len(code) > 0 || strings.TrimSpace(l) == "" {
			break
		}
	}
	require.NotEmpty(t, code, "no code under %q", header)
	return strings.Join(code, "\n") + "\n"
}

// TestE2EDemoDuckDBOffline pins a trial failure: the demo printed `INSTALL
// iceberg`, which downloads the extension and fails without internet
// access (and the README named three of the four wheels needed). The
// DuckDB snippet `tarn demo` prints is run as printed, by the Python of
// scripts/setup-python.sh's venv (duckdb 1.4.4 and the duckdb-ext wheels),
// in a network namespace with nothing but loopback (the demo runs in the
// same one) and an empty $HOME (no cached extension): it must load
// iceberg from the wheels and print the demo table's busiest origins
// with their counts. Runs with TARN_E2E=1 (the venv is a download).
func TestE2EDemoDuckDBOffline(t *testing.T) {
	testenv.E2E(t, "the demo's DuckDB snippet in the venv of scripts/setup-python.sh")
	testenv.NeedTools(t, "the offline DuckDB check (util-linux, iproute2)", "unshare", "nsenter", "ip")
	python := setupPython(t)

	// The demo in a new user and network namespace: loopback only.
	cmd := exec.Command("unshare", "--user", "--map-root-user", "--net", "sh", "-c",
		`ip link set lo up && exec "$0" "$@"`, tarnBin,
		"demo", "--listen", "127.0.0.1:0", "--rows", "10000", "--rate", "20000", "--target-lag", "1s")
	p := startProc(t, cmd, cleanEnv())
	deadline := time.Now().Add(90 * time.Second)
	for !strings.Contains(p.Stderr(), `"rows":10000,`) {
		require.True(t, time.Now().Before(deadline), "the demo did not commit its 10000 rows in 90 s:\n%s", p.Stderr())
		time.Sleep(200 * time.Millisecond)
	}

	snippet := printedBlock(t, p.Stdout(), "DuckDB (")
	assert.NotContains(t, snippet, "INSTALL", "INSTALL downloads")
	assert.Contains(t, snippet, "ENDPOINT '"+p.URL+"'")
	file := filepath.Join(t.TempDir(), "duckdb_snippet.py")
	require.NoError(t, os.WriteFile(file, []byte(snippet), 0o644))
	home := t.TempDir()
	run := exec.Command("nsenter", "--target", fmt.Sprint(p.cmd.Process.Pid), "--user", "--net", "--preserve-credentials",
		python, file)
	run.Env = cleanEnv("HOME=" + home)
	out, err := run.CombinedOutput()
	require.NoError(t, err, "the printed DuckDB snippet:\n%s\nprinted:\n%s", snippet, out)

	// The busiest origins of the 10,000 rows, as the query orders them.
	flights, err := demo.Flights()
	require.NoError(t, err)
	counts := map[string]int{}
	for _, f := range flights {
		counts[f.Origin]++
	}
	origins := make([]string, 0, len(counts))
	for o := range counts {
		origins = append(origins, o)
	}
	slices.SortFunc(origins, func(a, b string) int { return cmp.Or(counts[b]-counts[a], strings.Compare(a, b)) })
	for _, o := range origins[:5] {
		assert.Regexp(t, fmt.Sprintf(`│ %s\s+│\s+%d │`, o, counts[o]), string(out), "origin %s", o)
	}
	// The README's DuckDB snippet sets DuckDB up the same way.
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	setup := strings.Join(strings.Split(snippet, "\n")[:3], "\n")
	assert.Contains(t, strings.ReplaceAll(string(readme), "\n\n", "\n"), setup, "README.md's DuckDB snippet")

	entries, err := os.ReadDir(home)
	require.NoError(t, err)
	for _, e := range entries {
		assert.NotEqual(t, ".duckdb", e.Name(), "nothing installed under $HOME: the extensions came from the wheels")
	}
}
