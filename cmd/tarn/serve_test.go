package main_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// shutdownDeadline bounds a graceful stop; serve allows in-flight requests
// 10 s, so a clean exit comes well within this.
const shutdownDeadline = 15 * time.Second

// TestServeSIGTERM: SIGTERM while a commit is in flight lets that commit
// finish and be answered, refuses new connections, and exits 0; the commit
// is there after a restart.
func TestServeSIGTERM(t *testing.T) {
	dataDir := t.TempDir()
	p := startTarn(t, cleanEnv(), "--listen", "127.0.0.1:0", "--data-dir", dataDir)
	uuid := createCrashTable(t, p.URL)

	// Send a commit's headers with Expect: 100-continue and hold back the
	// body. The server answers 100 Continue only when the handler starts
	// reading the body, so after it the request is certainly in flight.
	body, err := json.Marshal(propertyCommit(uuid, "in-flight", "done"))
	require.NoError(t, err)
	conn, err := net.Dial("tcp", p.Address)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(shutdownDeadline)))
	_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n",
		crashTablePath, p.Address, len(body))
	require.NoError(t, err)
	br := bufio.NewReader(conn)
	status, err := br.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "HTTP/1.1 100 Continue\r\n", status)
	blank, err := br.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "\r\n", blank)

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))

	// Shutdown has begun once the listener is closed: new connections are
	// refused. Poll for that (bounded), then finish the in-flight request.
	deadline := time.Now().Add(shutdownDeadline)
	for {
		c, err := net.DialTimeout("tcp", p.Address, time.Second)
		if err != nil {
			break
		}
		c.Close()
		require.True(t, time.Now().Before(deadline), "listener still open %s after SIGTERM", shutdownDeadline)
		time.Sleep(10 * time.Millisecond)
	}
	_, err = conn.Write(body)
	require.NoError(t, err)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	var res struct {
		MetadataLocation string `json:"metadata-location"`
		Metadata         struct {
			Properties map[string]string `json:"properties"`
		} `json:"metadata"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&res))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "done", res.Metadata.Properties["in-flight"])
	// The draining server then closes the now idle connection.
	_, err = br.ReadByte()
	assert.ErrorIs(t, err, io.EOF, "connection must be closed after the in-flight response")

	require.Equal(t, 0, p.wait(t, shutdownDeadline), "exit code after SIGTERM\n%s", p.Stderr())
	assert.Contains(t, p.Stderr(), `"msg":"tarn stopped"`)

	p = startTarn(t, cleanEnv(), "--listen", "127.0.0.1:0", "--data-dir", dataDir)
	checkTable(t, p.URL, uuid, map[string]string{"in-flight": "done"})
}

// TestVersion: `tarn version` prints "tarn <version>": the -X main.version
// value when one is linked in, else one derived from the build.
func TestVersion(t *testing.T) {
	out := mustOutput(t, tarnBin, "version")
	assert.Regexp(t, regexp.MustCompile(`^tarn (dev|dev-[0-9a-f]{12}|v\d+\.\d+\.\d+\S*)\n$`), string(out))

	bin := filepath.Join(t.TempDir(), "tarn")
	build := exec.Command("go", "build", "-o", bin, "-ldflags", "-X main.version=v1.2.3-test", ".")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build with version: %v\n%s", err, b)
	}
	assert.Equal(t, "tarn v1.2.3-test\n", string(mustOutput(t, bin, "version")))

	// serve logs the same version on start.
	p := startTarn(t, cleanEnv(), "--listen", "127.0.0.1:0", "--data-dir", t.TempDir())
	assert.Equal(t, strings.TrimSuffix(strings.TrimPrefix(string(mustOutput(t, tarnBin, "version")), "tarn "), "\n"), p.Version)
}

func mustOutput(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	out, err := exec.Command(name, args...).Output()
	require.NoError(t, err)
	return out
}

// TestConfigPrecedence: a setting comes from the flag if given, else from
// TARN_<FLAG>, else from the YAML file named by --config (or TARN_CONFIG),
// else the default. Checked on listen (the host serve binds) and data-dir,
// both reported in the "tarn serving" line.
func TestConfigPrecedence(t *testing.T) {
	root := t.TempDir()
	dir := func(name string) string { return filepath.Join(root, name) }
	cfgFile := filepath.Join(root, "tarn.yaml")
	require.NoError(t, os.WriteFile(cfgFile, []byte(fmt.Sprintf(
		"listen: 127.0.0.2:0\ndata-dir: %s\nlog-level: debug\nidempotency-key-lifetime: 5m\n", dir("yaml"))), 0o600))

	tests := []struct {
		name     string
		env      []string
		args     []string
		wantHost string
		wantDir  string
	}{
		{
			name:     "yaml only",
			args:     []string{"--config", cfgFile},
			wantHost: "127.0.0.2", wantDir: dir("yaml"),
		},
		{
			name:     "yaml named by TARN_CONFIG",
			env:      []string{"TARN_CONFIG=" + cfgFile},
			wantHost: "127.0.0.2", wantDir: dir("yaml"),
		},
		{
			name:     "env over yaml",
			env:      []string{"TARN_LISTEN=127.0.0.3:0", "TARN_DATA_DIR=" + dir("env")},
			args:     []string{"--config", cfgFile},
			wantHost: "127.0.0.3", wantDir: dir("env"),
		},
		{
			name:     "flags over env over yaml",
			env:      []string{"TARN_LISTEN=127.0.0.3:0", "TARN_DATA_DIR=" + dir("env")},
			args:     []string{"--config", cfgFile, "--listen", "127.0.0.4:0", "--data-dir", dir("flag")},
			wantHost: "127.0.0.4", wantDir: dir("flag"),
		},
		{
			name:     "each key from its own source",
			env:      []string{"TARN_DATA_DIR=" + dir("env")},
			args:     []string{"--config", cfgFile},
			wantHost: "127.0.0.2", wantDir: dir("env"),
		},
		{
			name:     "flag over env without yaml",
			env:      []string{"TARN_LISTEN=127.0.0.3:0", "TARN_DATA_DIR=" + dir("env")},
			args:     []string{"--data-dir", dir("flag2")},
			wantHost: "127.0.0.3", wantDir: dir("flag2"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startTarn(t, cleanEnv(tt.env...), tt.args...)
			host, _, err := net.SplitHostPort(p.Address)
			require.NoError(t, err)
			assert.Equal(t, tt.wantHost, host)
			assert.Equal(t, tt.wantDir, p.DataDir)
			assert.FileExists(t, filepath.Join(tt.wantDir, "tarn.db"))
			resp, err := http.Get(p.URL + "/healthz")
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
			assert.Equal(t, 0, p.wait(t, shutdownDeadline))
		})
	}

	// The YAML's log-level: debug applied (no flag or env overrides it):
	// the health check above was logged at debug.
	t.Run("yaml log-level applied", func(t *testing.T) {
		p := startTarn(t, cleanEnv(), "--config", cfgFile, "--data-dir", dir("loglevel"))
		resp, err := http.Get(p.URL + "/healthz")
		require.NoError(t, err)
		resp.Body.Close()
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
		require.Equal(t, 0, p.wait(t, shutdownDeadline))
		assert.Contains(t, p.Stderr(), `"level":"DEBUG","msg":"request"`)
		assert.Contains(t, p.Stderr(), `"path":"/healthz"`)
	})
	t.Run("env log-level over yaml", func(t *testing.T) {
		p := startTarn(t, cleanEnv("TARN_LOG_LEVEL=info"), "--config", cfgFile, "--data-dir", dir("loglevel"))
		resp, err := http.Get(p.URL + "/healthz")
		require.NoError(t, err)
		resp.Body.Close()
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
		require.Equal(t, 0, p.wait(t, shutdownDeadline))
		assert.NotContains(t, p.Stderr(), `"path":"/healthz"`)
	})
}

// TestConfigErrors: a YAML key that is not a flag, a bad value, or a
// missing file stops serve with exit code 1 and a message naming the problem.
func TestConfigErrors(t *testing.T) {
	root := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(root, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	tests := []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{
			name: "unknown yaml key",
			args: []string{"--config", write("typo.yaml", "lisen: 127.0.0.1:0\n")},
			want: `unknown key "lisen"`,
		},
		{
			name: "config is not a yaml key",
			args: []string{"--config", write("nested.yaml", "config: other.yaml\n")},
			want: `unknown key "config"`,
		},
		{
			name: "bad yaml value",
			args: []string{"--config", write("badval.yaml", "idempotency-key-lifetime: forever\n")},
			want: "idempotency-key-lifetime",
		},
		{
			name: "bad env value",
			env:  []string{"TARN_IDEMPOTENCY_KEY_LIFETIME=forever"},
			want: "TARN_IDEMPOTENCY_KEY_LIFETIME",
		},
		{
			name: "negative idempotency key lifetime",
			args: []string{"--idempotency-key-lifetime", "-5m"},
			want: "--idempotency-key-lifetime must be at least 1s",
		},
		{
			name: "zero idempotency key lifetime",
			env:  []string{"TARN_IDEMPOTENCY_KEY_LIFETIME=0s"},
			want: "--idempotency-key-lifetime must be at least 1s",
		},
		{
			name: "unsupported object store warehouse",
			args: []string{"--warehouse", "gs://bucket/wh"},
			want: "only file:// and s3:// warehouses are supported",
		},
		{
			name: "s3 key id without secret",
			args: []string{"--warehouse", "s3://bucket/wh"},
			env:  []string{"TARN_S3_ACCESS_KEY_ID=AKIAONLY"},
			want: "s3.access-key-id and s3.secret-access-key must be set together",
		},
		{
			name: "bad warehouses entry",
			args: []string{"--config", write("wh.yaml", "warehouses:\n  - name: a\n    s3.secret-access-key: hush-hush\n")},
			want: "needs a name and a location",
		},
		{
			name: "bad warehouse property",
			args: []string{"--config", write("whp.yaml", "warehouses:\n  - name: a\n    location: s3://b/w\n    s3.path-style-access: sometimes\n    s3.secret-access-key: hush-hush\n")},
			want: "s3.path-style-access must be true or false",
		},
		{
			name: "unknown warehouses key",
			args: []string{"--config", write("whk.yaml", "warehouses:\n  - name: a\n    location: s3://b/w\n    s3.endpiont: http://127.0.0.1:9\n    s3.secret-access-key: hush-hush\n")},
			want: `unknown key "s3.endpiont"`,
		},
		{
			name: "bad publish target",
			args: []string{"--config", write("pub.yaml", "publish:\n  - name: athena\n    type: glue\n    regoin: eu-west-1\n")},
			want: `unknown field "regoin"`,
		},
		{
			name: "unity publish target without its catalog",
			env:  []string{`TARN_PUBLISH=[{"name":"dbx","type":"unity","uri":"https://dbc-1.cloud.databricks.com"}]`},
			want: `catalog "": want the name of an existing Unity catalog`,
		},
		{
			name: "unknown store",
			env:  []string{"TARN_STORE=mysql://tarn:hush-hush@db/tarn"},
			want: `--store must be "bolt" or a postgres://`,
		},
		{
			name: "missing config file",
			args: []string{"--config", filepath.Join(root, "absent.yaml")},
			want: "read config",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"serve", "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(root, "data")}, tt.args...)
			out := serveFails(t, exec.Command(tarnBin, args...), tt.env...)
			assert.Contains(t, out, tt.want)
			assert.NotContains(t, out, "hush-hush", "no credential in errors")
		})
	}
}
