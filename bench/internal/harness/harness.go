// Package harness holds what the bench/ programs share: starting the
// repository's service scripts and tarn serve, free ports, readiness polling, a
// process's CPU time and peak RSS from /proc, percentiles and the
// "target NAME: VALUE (goal GOAL) met|missed" lines of bench/run.
package harness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat;
// 100 on every Linux architecture Go supports.
const clockTicks = 100

// CPUSeconds is the CPU time process pid has used so far, user plus
// system (utime + stime of /proc/PID/stat), in seconds. Children are not
// counted.
func CPUSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// count fields from the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no ')'", pid)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime is field 14, stime field 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q stime %q", pid, f[11], f[12])
	}
	return float64(ut+st) / clockTicks, nil
}

// PeakRSSBytes is process pid's peak resident set size (VmHWM of
// /proc/PID/status), in bytes.
func PeakRSSBytes(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no VmHWM", pid)
}

// Script runs NAME args (a repository script such as scripts/kafka.sh)
// and returns the KEY=VALUE lines of its stdout; its stderr is passed on.
func Script(name string, args ...string) (map[string]string, error) {
	cmd := exec.Command(name, args...)
	cmd.Stderr = os.Stderr
	b, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	vars := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			vars[k] = v
		}
	}
	return vars, nil
}

// FreeAddr is a loopback host:port that was free a moment ago.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// Serve starts `tarn serve` (the binary bin) on a free loopback port with
// --data-dir dataDir, --log-level warn and args, env added to ours
// and its stderr ours, and waits up to 30 s for /healthz. It returns the
// server's base URL and the process (the caller kills it when done; it
// is killed already when Serve fails).
func Serve(ctx context.Context, bin, dataDir string, env []string, args ...string) (base string, cmd *exec.Cmd, err error) {
	addr, err := FreeAddr()
	if err != nil {
		return "", nil, err
	}
	cmd = exec.CommandContext(ctx, bin, append([]string{"serve", "--listen", addr, "--data-dir", dataDir, "--log-level", "warn"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	base = "http://" + addr
	if err := WaitHTTP(ctx, base+"/healthz", 30*time.Second); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return "", nil, err
	}
	return base, cmd, nil
}

// WaitHTTP polls GET u until it answers 200, for at most timeout.
func WaitHTTP(ctx context.Context, u string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(u); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s did not answer within %v", u, timeout)
}

// Pct is the q-quantile of sorted values (nearest rank); NaN when empty.
func Pct(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// Target prints bench/run's verdict line for one published target and
// returns whether it was met.
func Target(name, value, goal string, met bool) bool {
	verdict := "missed"
	if met {
		verdict = "met"
	}
	fmt.Printf("target %s: %s (goal %s) %s\n", name, value, goal, verdict)
	return met
}

// WriteJSON writes v, indented, to path (directories created).
func WriteJSON(path string, v any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
