package testservice_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/internal/testservice"
)

// recorder is a testing.TB that records how Run ended the test instead
// of ending it.
type recorder struct {
	testing.TB
	fatal, skip string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Fatalf(format string, args ...any) { r.fatal = fmt.Sprintf(format, args...) }
func (r *recorder) Skipf(format string, args ...any)  { r.skip = fmt.Sprintf(format, args...) }

// pathWithout returns a PATH of one directory holding links to the
// commands named (found on the current PATH), so that a script run with it
// finds those and nothing else.
func pathWithout(t *testing.T, cmds ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, c := range cmds {
		p, err := exec.LookPath(c)
		require.NoError(t, err)
		require.NoError(t, os.Symlink(p, filepath.Join(dir, c)))
	}
	return "PATH=" + dir
}

// TestRunMissingTool: a script whose tool is not installed (here python3,
// which every start needs for free ports) exits with ExitMissing, and Run
// ends the test through testenv.Missing: a failure under CI=true, a skip
// elsewhere, with the script's reason. Before, such a script exited 1 and
// failed the test on every machine, so CI could not tell "not installed"
// from "broken", and developers without Java or PostgreSQL could not run
// the rest of the end-to-end suite.
func TestRunMissingTool(t *testing.T) {
	path := pathWithout(t, "bash", "env", "dirname", "ls", "sort")
	for _, tc := range []struct {
		ci   string
		fail bool
	}{{"true", true}, {"", false}} {
		t.Run("CI="+tc.ci, func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			r := &recorder{TB: t}
			testservice.Run(r, []string{path}, "postgres.sh", "start", filepath.Join(t.TempDir(), "pg"))
			if tc.fail {
				assert.Contains(t, r.fatal, "precondition missing (CI=true, so this fails instead of skipping)")
				assert.Contains(t, r.fatal, "python3 not found")
				assert.Empty(t, r.skip)
			} else {
				assert.Contains(t, r.skip, "python3 not found")
				assert.Empty(t, r.fatal)
			}
		})
	}
}

// TestRunFailure: any other failure of a script fails the test, also
// outside CI (here a usage error, exit 2).
func TestRunFailure(t *testing.T) {
	t.Setenv("CI", "")
	r := &recorder{TB: t}
	testservice.Run(r, nil, "postgres.sh", "restart")
	assert.Contains(t, r.fatal, "exit status 2")
	assert.Contains(t, r.fatal, "usage:")
	assert.Empty(t, r.skip)
}

// ownerEnv names the directory in which the child process of
// TestE2EKilledOwnerStopsServices starts its services.
const ownerEnv = "TESTSERVICE_OWNER_DIR"

// TestE2EKilledOwnerStopsServices starts a PostgreSQL server and a Kafka
// broker (a JVM) from a child test process, kills that process with
// SIGKILL (as a CI timeout or go test's -timeout would: no t.Cleanup
// runs), and checks that the services' watchdogs stop both, and every
// process of theirs, within a minute. Without the watchdogs both ran on
// after the test (setsid puts them out of reach of the test's process
// group). Runs only with TARN_E2E=1.
func TestE2EKilledOwnerStopsServices(t *testing.T) {
	if dir := os.Getenv(ownerEnv); dir != "" {
		ownerChild(t, dir)
		return
	}
	if os.Getenv("TARN_E2E") != "1" {
		t.Skip("set TARN_E2E=1 to start PostgreSQL and Kafka")
	}
	dir := t.TempDir()
	child := exec.Command(os.Args[0], "-test.run=^TestE2EKilledOwnerStopsServices$", "-test.v")
	child.Env = append(os.Environ(), ownerEnv+"="+dir)
	out, err := child.StdoutPipe()
	require.NoError(t, err)
	child.Stderr = os.Stderr
	require.NoError(t, child.Start())
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })

	pids := map[string]int{}
	sc := bufio.NewScanner(out)
	for len(pids) < 2 && sc.Scan() {
		var name string
		var pid int
		if _, err := fmt.Sscanf(sc.Text(), "PID %s %d", &name, &pid); err == nil {
			pids[name] = pid
		}
	}
	require.Len(t, pids, 2, "the child printed its services' pids (%v)", sc.Err())
	for name, pid := range pids {
		require.True(t, alive(pid), "%s (pid %d) runs before the kill", name, pid)
	}
	require.NoError(t, child.Process.Kill())
	_ = child.Wait()
	killed := time.Now()

	deadline := killed.Add(time.Minute)
	for name, pid := range pids {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		assert.False(t, alive(pid), "%s (pid %d) still runs a minute after its owner was killed", name, pid)
	}
	for time.Now().Before(deadline) && len(processesIn(dir)) > 0 {
		time.Sleep(100 * time.Millisecond)
	}
	assert.Empty(t, processesIn(dir), "processes left in %s", dir)
	t.Logf("services gone %.1fs after the kill", time.Since(killed).Seconds())
}

// ownerChild is the child of TestE2EKilledOwnerStopsServices: it starts
// the services, prints their pids and waits to be killed.
func ownerChild(t *testing.T, dir string) {
	pg := testservice.Run(t, nil, "postgres.sh", "start", filepath.Join(dir, "postgres"))
	fmt.Printf("PID postgres %s\n", testservice.Need(t, pg, "postgres.sh", "PG_PID"))
	k := testservice.Run(t, nil, "kafka.sh", "start", filepath.Join(dir, "kafka"))
	fmt.Printf("PID kafka %s\n", testservice.Need(t, k, "kafka.sh", "KAFKA_PID"))
	time.Sleep(10 * time.Minute)
}

// alive: pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, after, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(after, "Z") && syscall.Kill(pid, 0) == nil
}

// processesIn lists the live processes whose command line or working
// directory names dir (the services and their children: PostgreSQL's
// backends run in DIR/data).
func processesIn(dir string) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil || pid == os.Getpid() || !alive(pid) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		cwd, _ := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		cmd := strings.ReplaceAll(string(cmdline), "\x00", " ")
		if strings.Contains(cmd, dir) || strings.HasPrefix(cwd, dir) {
			found = append(found, fmt.Sprintf("%d %s", pid, cmd))
		}
	}
	return found
}
