// Package testservice runs the project's test-service scripts
// (scripts/kafka.sh, scripts/schema-registry.sh, scripts/postgres.sh,
// scripts/kafka-connect.sh: `start|stop|status [DIR]`, see
// scripts/lib/service.sh) from Go tests and reads the KEY=value lines their
// `start` prints. The helpers built on it (internal/testkafka,
// internal/testpg, internal/testconnect) skip under -short and fail the
// test when a service cannot start; whether a suite uses them at all (e.g.
// only with TARN_E2E=1) is the caller's choice.
package testservice

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// SkipShort skips t under -short: what names the service, for the message.
func SkipShort(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("%s not started under -short", what)
	}
}

// Run runs scripts/<script> args... with env added to the environment and
// returns the KEY=VALUE lines it printed on stdout. It fails t (with the
// script's stderr) when the script exits non-zero, and logs its stderr
// otherwise.
func Run(t testing.TB, env []string, script string, args ...string) map[string]string {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatalf("testservice: %v", err)
	}
	cmd := exec.Command(filepath.Join(root, "scripts", script), args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("scripts/%s %s: %v\n%s", script, strings.Join(args, " "), err, stderr.String())
	}
	t.Logf("scripts/%s %s: %s", script, strings.Join(args, " "), strings.TrimSpace(stderr.String()))
	vars := map[string]string{}
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			vars[k] = v
		}
	}
	return vars
}

// Need returns vars[key], failing t when the script printed no such line.
func Need(t testing.TB, vars map[string]string, script, key string) string {
	t.Helper()
	v := vars[key]
	if v == "" {
		t.Fatalf("scripts/%s start printed no %s: %v", script, key, vars)
	}
	return v
}

// Kill sends SIGKILL to pid (a crash) and waits, up to 10 s, until the
// process is gone, so that a restart right after it does not find the old
// process still there. Nothing else is waited for: not its children (a
// killed postmaster's backends), not its ports.
func Kill(t testing.TB, pid string) {
	t.Helper()
	n, err := strconv.Atoi(pid)
	if err != nil || n <= 0 {
		t.Fatalf("kill -9 %q: not a pid", pid)
	}
	if err := syscall.Kill(n, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %d: %v", n, err)
	}
	// Until it is gone from /proc: a zombie still counts (PostgreSQL, for
	// one, refuses to start while the pid in its postmaster.pid exists).
	// The services run in their own sessions, reparented to init, which
	// reaps them.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", n)); os.IsNotExist(err) {
			return
		}
	}
	t.Fatalf("kill -9 %d: still alive after 10 s", n)
}

// RepoRoot finds the directory of Tarn's go.mod above the working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil &&
			bytes.Contains(b, []byte("module github.com/tarnhq/tarn\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of github.com/tarnhq/tarn above the working directory")
		}
		dir = parent
	}
}
