package main_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/internal/testenv"
)

// startOIDCProvider runs scripts/oidc-provider.sh (panva's oidc-provider
// from npm, cached in $HOME/.cache/tarn) on a free port with one
// client_credentials client whose tokens carry groups; it returns the
// issuer URL.
func startOIDCProvider(t *testing.T, clientID, secret, groups string) string {
	t.Helper()
	testenv.NeedTools(t, "scripts/oidc-provider.sh", "node", "npm")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	cmd := exec.Command(filepath.Join("..", "..", "scripts", "oidc-provider.sh"))
	cmd.Env = append(os.Environ(), "OIDC_PORT="+strconv.Itoa(port), "OIDC_CLIENT_ID="+clientID,
		"OIDC_CLIENT_SECRET="+secret, "OIDC_GROUPS="+groups, "OIDC_AUDIENCE=tarn-catalog")
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	issuer := "http://127.0.0.1:" + strconv.Itoa(port)
	deadline := time.Now().Add(3 * time.Minute) // the first run installs it
	for {
		rsp, err := http.Get(issuer + "/.well-known/openid-configuration")
		if err == nil {
			rsp.Body.Close()
			if rsp.StatusCode == http.StatusOK {
				return issuer
			}
		}
		require.True(t, time.Now().Before(deadline), "oidc-provider did not start")
		time.Sleep(300 * time.Millisecond)
	}
}

// TestAuthEnginesE2E: a real `tarn serve --auth oauth2` with a real
// external OpenID provider (oidc-provider from npm) as --oidc-issuer.
// iceberg-go, pyiceberg and Spark connect with a token from that provider
// (its groups claim maps to a Tarn role granted on namespace ext), and
// pyiceberg with credential=id:secret of a local principal (token from
// Tarn); each writes and reads in its namespace and is refused (403)
// elsewhere. Runs only with TARN_E2E=1 (needs node, npm and
// scripts/setup-python.sh's venv).
func TestAuthEnginesE2E(t *testing.T) {
	testenv.E2E(t, "a real OIDC provider, pyiceberg and Spark")
	issuer := startOIDCProvider(t, "etl-idp", "idp-secret", "analysts")
	py := setupPython(t)
	dir := t.TempDir()
	p := startTarn(t, cleanEnv("TARN_ROOT_CREDENTIAL=root:root-secret"), "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data"),
		"--auth", "oauth2", "--oidc-issuer", issuer, "--oidc-audience", "tarn-catalog", "--oidc-roles-claim", "groups")
	env := cleanEnv("TARN_SERVER="+p.URL, "TARN_CREDENTIAL=root:root-secret")
	for _, a := range [][]string{
		{"roles", "create", "analysts"},
		{"roles", "create", "loaders"},
		{"grants", "add", "analysts", "write", "namespace:ext"},
		{"grants", "add", "analysts", "create", "namespace:ext"},
		{"grants", "add", "analysts", "drop", "namespace:ext"},
		{"grants", "add", "loaders", "manage", "namespace:local"},
		{"principals", "create", "loader"},
	} {
		out, errOut, code := runCLI(t, env, a...)
		require.Equal(t, 0, code, "%v: %s", a, errOut)
		if a[0] == "principals" {
			i := strings.Index(out, "loader:")
			require.GreaterOrEqual(t, i, 0, out)
			t.Setenv("LOADER_CRED", strings.TrimSpace(out[i:]))
		}
	}
	_, errOut, code := runCLI(t, env, "principals", "assign", "loader", "loaders")
	require.Equal(t, 0, code, errOut)
	ctx := context.Background()
	root, err := rest.NewCatalog(ctx, "tarn", p.URL, rest.WithCredential("root:root-secret"))
	require.NoError(t, err)
	for _, ns := range []string{"ext", "local", "hr"} {
		require.NoError(t, root.CreateNamespace(ctx, icecat.ToIdentifier(ns), nil))
	}

	// A token from the external provider (client_credentials).
	rsp, err := http.PostForm(issuer+"/token", url.Values{"grant_type": {"client_credentials"}, "client_id": {"etl-idp"},
		"client_secret": {"idp-secret"}, "scope": {"catalog"}})
	require.NoError(t, err)
	var tr struct {
		AccessToken string `json:"access_token"`
	}
	require.NoError(t, json.NewDecoder(rsp.Body).Decode(&tr))
	rsp.Body.Close()
	require.NotEmpty(t, tr.AccessToken)

	// iceberg-go with the provider's token.
	ext, err := rest.NewCatalog(ctx, "tarn", p.URL, rest.WithOAuthToken(tr.AccessToken))
	require.NoError(t, err)
	schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64})
	tbl, err := ext.CreateTable(ctx, icecat.ToIdentifier("ext", "go"), schema)
	require.NoError(t, err)
	bld := array.NewInt64Builder(memory.DefaultAllocator)
	bld.AppendValues([]int64{1, 2, 3}, nil)
	col := bld.NewArray()
	rec := array.NewRecord(arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil), []arrow.Array{col}, 3)
	at := array.NewTableFromRecords(rec.Schema(), []arrow.Record{rec})
	tbl, err = tbl.AppendTable(ctx, at, 3, nil)
	require.NoError(t, err)
	got, err := tbl.Scan().ToArrowTable(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(3), got.NumRows())
	_, err = ext.CreateTable(ctx, icecat.ToIdentifier("hr", "go"), schema)
	require.ErrorContains(t, err, "Forbidden")

	// pyiceberg with the provider's token, and with a local credential.
	run := func(mode, secret, ns string) {
		t.Helper()
		out, err := exec.Command(py, filepath.Join("..", "..", "scripts", "auth-check.py"), p.URL, mode, secret, ns, "hr").CombinedOutput()
		require.NoError(t, err, "%s", out)
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		assert.JSONEq(t, `{"rows":3,"sum":6,"forbidden":true}`, lines[len(lines)-1], mode)
	}
	run("token", tr.AccessToken, "ext")
	run("credential", os.Getenv("LOADER_CRED"), "local")

	// Spark (iceberg-spark-runtime's REST catalog) with the provider's token.
	setup, err := exec.Command(filepath.Join("..", "..", "scripts", "setup-spark.sh")).Output()
	require.NoError(t, err, "scripts/setup-spark.sh")
	lines := strings.Split(strings.TrimSpace(string(setup)), "\n")
	require.Len(t, lines, 2, "setup-spark.sh prints the python and the jars: %s", setup)
	spark := exec.Command(lines[0], filepath.Join("..", "..", "scripts", "spark-auth-check.py"), p.URL, "token", tr.AccessToken, "ext", "hr")
	spark.Env = append(os.Environ(), "TARN_SPARK_JARS="+lines[1], "TARN_SPARK_RUN_DIR="+t.TempDir(), "SPARK_LOCAL_IP=127.0.0.1")
	var sparkErr strings.Builder
	spark.Stderr = &sparkErr
	out, err := spark.Output()
	require.NoError(t, err, "%s", sparkErr.String())
	outLines := strings.Split(strings.TrimSpace(string(out)), "\n")
	assert.JSONEq(t, `{"rows":3,"sum":6,"forbidden":true}`, outLines[len(outLines)-1], "spark with the provider's token")

	// The provider's token is refused once Tarn no longer trusts the
	// issuer. With 10 s tokens pyiceberg outlives its token mid-run, gets
	// a 401, fetches a new one with its credential and carries on.
	require.NoError(t, p.cmd.Process.Kill())
	<-p.done
	p = startTarn(t, cleanEnv("TARN_ROOT_CREDENTIAL=root:root-secret"), "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data"),
		"--auth", "oauth2", "--auth-token-lifetime", "10s")
	t.Setenv("AUTH_CHECK_SLEEP_SECONDS", "14")
	run("credential", os.Getenv("LOADER_CRED"), "local")
	assert.Contains(t, p.Stderr(), `"status":401`, "pyiceberg's token expired during the run and was replaced")
	req, _ := http.NewRequest(http.MethodGet, p.URL+"/v1/config", nil)
	req.Header.Set("Authorization", "Bearer "+tr.AccessToken)
	rsp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	rsp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, rsp.StatusCode)
}
