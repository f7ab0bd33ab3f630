package main_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
)

// serveFails runs cmd, a `tarn serve`, with cleanEnv(env...), requires
// exit code 1 and no "tarn serving", and returns its output.
func serveFails(t *testing.T, cmd *exec.Cmd, env ...string) string {
	t.Helper()
	cmd.Env = cleanEnv(env...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "serve must fail; output:\n%s", out)
	assert.Equal(t, 1, ee.ExitCode())
	assert.NotContains(t, string(out), "tarn serving")
	return string(out)
}

// Before: `tarn serve --listen 18381` was refused by the --auth check
// ("--auth none on 18381 would let anyone...", a wrong reason), and a
// listen error net.Listen caught came after the data dir was created;
// `--log-level loud` printed slog's `level string "loud": unknown name`
// without the valid values. Both now fail first, creating nothing.
func TestServeBadFlagsCreateNothing(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"bare port", []string{"--listen", "18381"},
			`tarn: --listen "18381" is not host:port: use 127.0.0.1:18381 (this machine only) or :18381 (every interface)`},
		{"no port", []string{"--listen", "127.0.0.1"},
			`tarn: --listen "127.0.0.1" is not host:port (e.g. 127.0.0.1:8181, or :8181 for every interface)`},
		{"port out of range", []string{"--listen", "127.0.0.1:99999"},
			`tarn: --listen "127.0.0.1:99999": the port must be a number from 0 to 65535, got "99999"`},
		{"bad log level", []string{"--listen", "127.0.0.1:0", "--log-level", "loud"},
			`tarn: --log-level must be debug, info, warn or error, got "loud"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dataDir := filepath.Join(t.TempDir(), "data")
			out := serveFails(t, exec.Command(tarnBin, append([]string{"serve", "--data-dir", dataDir}, tt.args...)...))
			assert.Equal(t, tt.want+"\n", out)
			assert.NoDirExists(t, dataDir, "nothing is created before the flags are checked")
		})
	}
	// The level names are slog's, in any case.
	p := startTarn(t, cleanEnv(), "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--log-level", "DEBUG")
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, p.wait(t, shutdownDeadline))
}

// Before: a second `tarn serve` on a data dir another one holds waited
// 2.3 s for bbolt's lock and printed `tarn: bolt: open .../tarn.db:
// timeout`. Now it says at once which flag and which process.
func TestServeDataDirInUse(t *testing.T) {
	dataDir := t.TempDir()
	first := startTarn(t, cleanEnv(), "--listen", "127.0.0.1:0", "--data-dir", dataDir)
	began := time.Now()
	out := serveFails(t, exec.Command(tarnBin, "serve", "--listen", "127.0.0.1:0", "--data-dir", dataDir))
	t.Logf("second serve failed after %v", time.Since(began).Round(time.Millisecond))
	assert.Equal(t, fmt.Sprintf("tarn: --data-dir %s is in use by another tarn process (pid %d): stop it, or give this one another --data-dir\n",
		dataDir, first.cmd.Process.Pid), out)

	// The one that holds it is unaffected.
	rsp, err := http.Get(first.URL + "/v1/config")
	require.NoError(t, err)
	rsp.Body.Close()
	assert.Equal(t, http.StatusOK, rsp.StatusCode)
}

// Before: `--data-dir /ro/data` in a directory the user cannot write
// failed with `tarn: --warehouse: create warehouse directory: mkdir
// /ro/data: permission denied`, naming a flag the user never gave; a
// tarn.db the user cannot open named only the derived file. Both now name
// --data-dir as given. As root (who may write anywhere) the binary runs as
// nobody.
func TestServeDataDirPermission(t *testing.T) {
	root := t.TempDir()
	bin, cred := tarnBin, (*syscall.Credential)(nil)
	if os.Geteuid() == 0 {
		// nobody must reach the binary and the directories.
		for d := root; d != filepath.Dir(d) && d != os.TempDir(); d = filepath.Dir(d) {
			require.NoError(t, os.Chmod(d, 0o755))
		}
		bin = filepath.Join(root, "tarn")
		copyFile(t, tarnBin, bin, 0o755)
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	readOnly := filepath.Join(root, "ro")
	require.NoError(t, os.Mkdir(readOnly, 0o555))
	require.NoError(t, os.Chmod(readOnly, 0o555))
	// A data dir the user may enter but whose tarn.db is not theirs.
	notMine := filepath.Join(root, "not-mine")
	require.NoError(t, os.Mkdir(notMine, 0o777))
	require.NoError(t, os.Chmod(notMine, 0o777))
	require.NoError(t, os.WriteFile(filepath.Join(notMine, "tarn.db"), nil, 0o600))
	if cred == nil {
		require.NoError(t, os.Chmod(filepath.Join(notMine, "tarn.db"), 0o000))
	}

	for _, tt := range []struct {
		name, dataDir, want string
	}{
		{"data dir cannot be created", filepath.Join(readOnly, "data"),
			fmt.Sprintf("tarn: --data-dir %[1]s: create warehouse directory: mkdir %[1]s: permission denied\n", filepath.Join(readOnly, "data"))},
		{"catalog file cannot be opened", notMine,
			fmt.Sprintf("tarn: --data-dir %s: bolt: open %s: permission denied\n", notMine, filepath.Join(notMine, "tarn.db"))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--data-dir", tt.dataDir)
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
			out := serveFails(t, cmd)
			assert.Equal(t, tt.want, out)
			assert.NotContains(t, out, "--warehouse")
		})
	}
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	src, err := os.Open(from)
	require.NoError(t, err)
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	require.NoError(t, err)
	_, err = io.Copy(dst, src)
	require.NoError(t, err)
	require.NoError(t, dst.Close())
}

// readiness is GET /readyz's body (server.Readiness).
type readiness struct {
	Status string `json:"status"`
	Checks map[string]struct {
		Status  string   `json:"status"`
		Error   string   `json:"error"`
		Since   string   `json:"since"`
		Targets []string `json:"targets"`
	} `json:"checks"`
}

func getReadiness(t *testing.T, url string) readiness {
	t.Helper()
	rsp, err := http.Get(url + "/readyz")
	require.NoError(t, err)
	defer rsp.Body.Close()
	require.Equal(t, http.StatusOK, rsp.StatusCode, "the catalog serves: /readyz is 200 whatever Kafka does")
	var r readiness
	require.NoError(t, json.NewDecoder(rsp.Body).Decode(&r))
	return r
}

// Before: `tarn serve --kafka-brokers 127.0.0.1:<nothing>` started
// silently ("ingest":"on") and /readyz said "ready"; the broker was found
// unreachable only when a topic was enabled. Now the start logs it and
// /readyz shows it, while the catalog serves; a reachable broker shows as
// ok.
func TestServeUnreachableBrokers(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := l.Addr().String()
	require.NoError(t, l.Close()) // nothing listens there now

	p := startTarn(t, cleanEnv(), "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--kafka-brokers", dead)
	var r readiness
	require.Eventually(t, func() bool {
		r = getReadiness(t, p.URL)
		return r.Checks["kafka"].Status != "unknown"
	}, 20*time.Second, 100*time.Millisecond, "the first probe answers within its timeout")
	assert.Equal(t, "degraded", r.Status)
	assert.Equal(t, "ok", r.Checks["catalog"].Status)
	k := r.Checks["kafka"]
	assert.Equal(t, "unreachable", k.Status)
	assert.Contains(t, k.Error, dead)
	assert.Equal(t, []string{dead}, k.Targets)
	_, err = time.Parse(time.RFC3339, k.Since)
	assert.NoError(t, err, "since %q", k.Since)
	require.Eventually(t, func() bool { return strings.Contains(p.Stderr(), `"msg":"kafka brokers unreachable`) }, 5*time.Second, 50*time.Millisecond)
	var line struct {
		Level   string `json:"level"`
		Brokers string `json:"kafka_brokers"`
		Err     string `json:"err"`
	}
	for _, s := range strings.Split(p.Stderr(), "\n") {
		if strings.Contains(s, `"msg":"kafka brokers unreachable`) {
			require.NoError(t, json.Unmarshal([]byte(s), &line))
		}
	}
	assert.Equal(t, "ERROR", line.Level)
	assert.Equal(t, dead, line.Brokers)
	assert.Contains(t, line.Err, dead)

	// The catalog serves meanwhile.
	mustCall(t, http.MethodPost, p.URL+"/v1/namespaces", map[string]any{"namespace": []string{"still"}}, http.StatusOK)

	// A broker that answers is ok, and a catalog without Kafka has no
	// kafka check.
	kc, err := kfake.NewCluster(kfake.NumBrokers(1))
	require.NoError(t, err)
	t.Cleanup(kc.Close)
	live := startTarn(t, cleanEnv(), "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--kafka-brokers", strings.Join(kc.ListenAddrs(), ","))
	require.Eventually(t, func() bool {
		r = getReadiness(t, live.URL)
		return r.Checks["kafka"].Status == "ok"
	}, 20*time.Second, 100*time.Millisecond)
	assert.Equal(t, "ready", r.Status)
	// The log line is written just after the state /readyz reports
	// (and reaches the test through a pipe): wait for it too.
	require.Eventually(t, func() bool { return strings.Contains(live.Stderr(), `"msg":"kafka brokers reachable"`) }, 5*time.Second, 50*time.Millisecond)
	off := startTarn(t, cleanEnv(), "--listen", "127.0.0.1:0", "--data-dir", t.TempDir())
	r = getReadiness(t, off.URL)
	assert.Equal(t, "ready", r.Status)
	assert.NotContains(t, r.Checks, "kafka")
}
