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
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tarnhq/tarn/internal/testenv"
)

// SkipShort skips t under -short: what names the service, for the message.
func SkipShort(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("%s not started under -short", what)
	}
}

// ExitMissing is the exit status of a script whose precondition is
// missing (`missing` in scripts/lib/service.sh: Java, Maven or PostgreSQL
// not installed and not installable).
const ExitMissing = 3

// Run runs scripts/<script> args... with env added to the environment and
// returns the KEY=VALUE lines it printed on stdout. When the script exits
// with ExitMissing it ends t through testenv.Missing (a skip, a failure
// under CI=true); on any other non-zero exit it fails t, with the script's
// stderr; otherwise it logs its stderr.
//
// A start gets TARN_OWNER_LOCK, a file this process holds an exclusive
// flock on until it exits: a service started by the script is stopped by
// its watchdog (watch_owner in scripts/lib/service.sh) when this process
// ends without running t's cleanups (killed, or go test's -timeout).
func Run(t testing.TB, env []string, script string, args ...string) map[string]string {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatalf("testservice: %v", err)
	}
	cmd := exec.Command(filepath.Join(root, "scripts", script), args...)
	cmd.Env = append(os.Environ(), env...)
	if len(args) > 0 && args[0] == "start" {
		lock, err := ownerLock()
		if err != nil {
			t.Fatalf("testservice: %v", err)
		}
		cmd.Env = append(cmd.Env, "TARN_OWNER_LOCK="+lock)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == ExitMissing {
			testenv.Missing(t, "scripts/%s %s: %s", script, strings.Join(args, " "), strings.TrimSpace(stderr.String()))
			return nil
		}
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

var owner struct {
	once sync.Once
	file *os.File // held open (and locked) until the process exits
	path string
	err  error
}

// ownerLock returns the path of this process's owner lock, a file in
// $TMPDIR/tarn-test-owners-<uid> created and locked on the first call. The
// file is never closed: the kernel releases the lock when the process
// exits, which is what the watchdogs wait for (the first of them removes
// the file). Opened close-on-exec (as os.CreateTemp always does), so the
// scripts and the services they start never inherit it. It is locked
// under a temporary name and then renamed, so a lock file under its final
// name that anyone can lock exclusively belongs to a process that has
// exited; the first call removes those (left when no watchdog was
// started, e.g. a start that found a tool missing).
func ownerLock() (string, error) {
	owner.once.Do(func() {
		dir := filepath.Join(os.TempDir(), fmt.Sprintf("tarn-test-owners-%d", os.Getuid()))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			owner.err = fmt.Errorf("owner lock: %w", err)
			return
		}
		pruneOwnerLocks(dir)
		f, err := os.CreateTemp(dir, ".new-*")
		if err != nil {
			owner.err = fmt.Errorf("owner lock: %w", err)
			return
		}
		path := filepath.Join(dir, strings.TrimPrefix(filepath.Base(f.Name()), ".new-")+".lock")
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			f.Close()
			owner.err = fmt.Errorf("owner lock %s: %w", f.Name(), err)
			return
		}
		if err := os.Rename(f.Name(), path); err != nil {
			f.Close()
			owner.err = fmt.Errorf("owner lock: %w", err)
			return
		}
		owner.file, owner.path = f, path
	})
	return owner.path, owner.err
}

// pruneOwnerLocks removes the owner locks in dir whose owners have exited
// (an exclusive lock on them succeeds). A watchdog that opened one before
// its removal still gets its lock and stops its service; one that opens
// it after finds none, creates it, gets the lock at once and stops its
// service too: either way the owner is gone.
func pruneOwnerLocks(dir string) {
	paths, _ := filepath.Glob(filepath.Join(dir, "*.lock"))
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			_ = os.Remove(p)
		}
		f.Close()
	}
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
