package main_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
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

// selfSigned writes a certificate for 127.0.0.1 and its key under dir.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "tarn-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600))
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// runCLI runs `tarn args...` with env and returns stdout, stderr, code.
func runCLI(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(tarnBin, args...)
	cmd.Env = env
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return out.String(), errb.String(), code
}

// TestServeOAuth2 runs a real `tarn serve --auth oauth2` over TLS: the
// root credential is generated and printed once (on stdout, not in the
// logs); `tarn principals|roles|grants` set up a principal with write on
// a namespace; its credential gets a token and creates a table there
// but not elsewhere; no token is 401. A restart with
// TARN_ROOT_CREDENTIAL replaces the root secret and prints nothing.
func TestServeOAuth2(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)
	dataDir := filepath.Join(dir, "data")
	args := []string{"--listen", "127.0.0.1:0", "--data-dir", dataDir, "--auth", "oauth2", "--tls-cert", certFile, "--tls-key", keyFile}
	p := startTarn(t, cleanEnv(), args...)
	base := "https://" + p.Address
	// stdout is copied by its own goroutine: the line may trail the log.
	var m []string
	require.Eventually(t, func() bool {
		m = regexp.MustCompile(`(?m)^root:(\S+)$`).FindStringSubmatch(p.stdout.String())
		return m != nil
	}, 5*time.Second, 20*time.Millisecond, "stdout: %s", p.stdout.String())
	rootSecret := m[1]
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}

	caFile := filepath.Join(dir, "ca.pem")
	b, _ := os.ReadFile(certFile)
	require.NoError(t, os.WriteFile(caFile, b, 0o600))
	env := cleanEnv("TARN_SERVER="+base, "TARN_CA_CERT="+caFile, "TARN_CREDENTIAL=root:"+rootSecret)
	out, errOut, code := runCLI(t, env, "principals", "create", "etl")
	require.Equal(t, 0, code, errOut)
	m = regexp.MustCompile(`credential \(shown once\): etl:(\S+)`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	etlSecret := m[1]
	for _, a := range [][]string{
		{"roles", "create", "loaders"},
		{"grants", "add", "loaders", "write", "namespace:lab"},
		{"grants", "add", "loaders", "create", "namespace:lab"},
		{"principals", "assign", "etl", "loaders"},
	} {
		_, errOut, code := runCLI(t, env, a...)
		require.Equal(t, 0, code, "%v: %s", a, errOut)
	}
	_, errOut, code = runCLI(t, env, "maintenance", "status")
	require.Equal(t, 0, code, "tarn maintenance with TARN_CREDENTIAL: %s", errOut)
	// The same as flags (--server, --ca-cert, --credential; --token), as tarn topics.
	out, errOut, code = runCLI(t, cleanEnv(), "maintenance", "status", "-o", "json", "--server", base, "--ca-cert", caFile, "--credential", "root:"+rootSecret)
	require.Equal(t, 0, code, "tarn maintenance --credential: %s", errOut)
	assert.Contains(t, out, `"tables"`)
	_, errOut, code = runCLI(t, cleanEnv(), "maintenance", "status", "--server", base, "--ca-cert", caFile, "--credential", "root:wrong")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "invalid_client")
	_, errOut, code = runCLI(t, cleanEnv(), "maintenance", "status", "--server", base, "--ca-cert", caFile)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "NotAuthorizedException")
	out, _, code = runCLI(t, env, "grants", "list")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "loaders  create     namespace:lab")
	out, _, _ = runCLI(t, env, "principals", "list", "-o", "json")
	assert.Contains(t, out, `"roles": [`)
	// A bad grant is refused by the CLI; a non-admin is refused by the server.
	_, errOut, code = runCLI(t, env, "grants", "add", "loaders", "own", "catalog")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "privilege must be one of")
	_, errOut, code = runCLI(t, cleanEnv("TARN_SERVER="+base, "TARN_CA_CERT="+caFile, "TARN_CREDENTIAL=etl:"+etlSecret), "roles", "list")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "ForbiddenException")
	_, errOut, code = runCLI(t, cleanEnv("TARN_SERVER="+base, "TARN_CA_CERT="+caFile), "topics", "list")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "NotAuthorizedException")

	token := func(id, secret string) string {
		rsp, err := hc.PostForm(base+"/v1/oauth/tokens", url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}})
		require.NoError(t, err)
		defer rsp.Body.Close()
		require.Equal(t, http.StatusOK, rsp.StatusCode)
		var tr struct {
			AccessToken string `json:"access_token"`
		}
		require.NoError(t, json.NewDecoder(rsp.Body).Decode(&tr))
		return tr.AccessToken
	}
	do := func(tok, method, path, body string) int {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		rsp, err := hc.Do(req)
		require.NoError(t, err)
		rsp.Body.Close()
		return rsp.StatusCode
	}
	root := token("root", rootSecret)
	_, errOut, code = runCLI(t, cleanEnv(), "maintenance", "status", "--server", base, "--ca-cert", caFile, "--token", root)
	require.Equal(t, 0, code, "tarn maintenance --token: %s", errOut)
	require.Equal(t, http.StatusOK, do(root, "POST", "/v1/namespaces", `{"namespace":["lab"]}`))
	require.Equal(t, http.StatusOK, do(root, "POST", "/v1/namespaces", `{"namespace":["hr"]}`))
	etl := token("etl", etlSecret)
	schema := `{"name":"t","schema":{"type":"struct","fields":[{"id":1,"name":"id","type":"long","required":false}]}}`
	assert.Equal(t, http.StatusOK, do(etl, "POST", "/v1/namespaces/lab/tables", schema))
	assert.Equal(t, http.StatusForbidden, do(etl, "POST", "/v1/namespaces/hr/tables", schema))
	assert.Equal(t, http.StatusUnauthorized, do("", "GET", "/v1/config", ""))
	// Plain HTTP is not served on the TLS port: Go's TLS server answers a
	// plaintext request with 400 and says why.
	plainRsp, err := http.Get("http://" + p.Address + "/healthz")
	require.NoError(t, err)
	plain, err := io.ReadAll(plainRsp.Body)
	plainRsp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, http.StatusBadRequest, plainRsp.StatusCode)
	assert.Contains(t, string(plain), "HTTP request to an HTTPS server")
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, p.wait(t, shutdownDeadline))
	logs := p.Stderr()
	assert.NotContains(t, logs, rootSecret)
	assert.NotContains(t, logs, etlSecret)
	assert.NotContains(t, logs, etl)

	// Restart with TARN_ROOT_CREDENTIAL: the old secret stops working,
	// the new one works, nothing is printed.
	p = startTarn(t, cleanEnv("TARN_ROOT_CREDENTIAL=root:chosen-secret"), args...)
	base = "https://" + p.Address
	assert.NotContains(t, p.stdout.String(), "root:")
	rsp, err := hc.PostForm(base+"/oauth/tokens", url.Values{"grant_type": {"client_credentials"}, "client_id": {"root"}, "client_secret": {rootSecret}})
	require.NoError(t, err)
	rsp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, rsp.StatusCode)
	token("root", "chosen-secret")
	// The root's tokens of the replaced credential end with it.
	assert.Equal(t, http.StatusUnauthorized, do(root, "GET", "/v1/config", ""))
	// The signing key persisted: etl's token from before still works.
	assert.Equal(t, http.StatusOK, do(etl, "GET", "/v1/namespaces/lab/tables/t", ""))
}

// TestServeAuthFlagErrors: --auth none off loopback needs
// --insecure-no-auth; bad modes and half TLS configs are refused.
func TestServeAuthFlagErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		args []string
		env  []string
		want string
	}{
		{args: []string{"--listen", "0.0.0.0:0"}, want: "--insecure-no-auth"},
		{args: []string{"--listen", ":0"}, want: "--insecure-no-auth"},
		{args: []string{"--listen", "127.0.0.1:0", "--auth", "basic"}, want: "--auth must be none or oauth2"},
		{args: []string{"--listen", "127.0.0.1:0"}, env: []string{"TARN_AUTH=ldap"}, want: "--auth must be none or oauth2"},
		{args: []string{"--listen", "127.0.0.1:0", "--tls-cert", "x.pem"}, want: "--tls-cert and --tls-key go together"},
		{args: []string{"--listen", "127.0.0.1:0", "--oidc-issuer", "https://idp"}, want: "--oidc-issuer and --oidc-issuers need --auth oauth2"},
		{args: []string{"--listen", "127.0.0.1:0", "--oidc-issuers", `[{"issuer":"https://idp"}]`}, want: "--oidc-issuer and --oidc-issuers need --auth oauth2"},
		{args: []string{"--listen", "127.0.0.1:0", "--auth", "oauth2", "--oidc-issuers", `[{"issuer":"https://idp","audiense":"x"}]`}, want: `unknown field "audiense"`},
		{args: []string{"--listen", "127.0.0.1:0", "--auth", "oauth2", "--oidc-issuers", `[{"audience":"x"}]`}, want: `"issuer" is required`},
		// Regression (issue 13 item 0): a stray "]" after the list was accepted.
		{args: []string{"--listen", "127.0.0.1:0", "--oidc-issuers", `[{"issuer":"https://idp"}]]`}, want: "want a JSON list"},
		{args: []string{"--listen", "127.0.0.1:0", "--oidc-issuers", `[{"issuer":"https://idp","issuer":"https://other"}]`}, want: "duplicate object member name"},
		{args: []string{"--listen", "127.0.0.1:0", "--auth", "oauth2", "--oidc-issuers", `[{"issuer":"https://idp","principal-prefix":"a~"},{"issuer":"https://idp","principal-prefix":"b~"}]`}, want: `"https://idp" is configured twice`},
		{args: []string{"--listen", "127.0.0.1:0", "--auth", "oauth2", "--oidc-issuer", "https://idp", "--oidc-issuers", `[{"issuer":"https://idp2","principal-prefix":"corp~"}]`}, want: `OIDC issuer "https://idp" needs a principal prefix`},
		{args: []string{"--listen", "127.0.0.1:0", "--auth", "oauth2", "--oidc-issuers", `[{"issuer":"https://idp","principal-prefix":"a~"},{"issuer":"https://idp2","principal-prefix":"a~b~"}]`}, want: `principal prefix "a~" starts "a~b~"`},
		{args: []string{"--listen", "127.0.0.1:0", "--auth", "oauth2", "--oidc-issuers", `[{"issuer":"https://idp","principal-prefix":"okta:"}]`}, want: `principal prefix "okta:" cannot start a principal id`},
		{args: []string{"--listen", "127.0.0.1:0", "--auth", "oauth2"}, env: []string{"TARN_ROOT_CREDENTIAL=nocolon"}, want: "TARN_ROOT_CREDENTIAL must be id:secret"},
	} {
		t.Run(strings.Join(append(tt.args, tt.env...), " "), func(t *testing.T) {
			_, errOut, code := runCLI(t, cleanEnv(tt.env...), append([]string{"serve", "--data-dir", filepath.Join(dir, "d")}, tt.args...)...)
			assert.Equal(t, 1, code)
			assert.Contains(t, errOut, tt.want)
		})
	}
	// With --insecure-no-auth it serves on every interface, as before.
	p := startTarn(t, cleanEnv(), "--listen", "0.0.0.0:0", "--insecure-no-auth", "--data-dir", filepath.Join(dir, "open"))
	_, port, _ := net.SplitHostPort(p.Address)
	rsp, err := http.Get("http://127.0.0.1:" + port + "/v1/config")
	require.NoError(t, err)
	rsp.Body.Close()
	assert.Equal(t, http.StatusOK, rsp.StatusCode)
}

// TestServeWarnsOAuth2WithoutTLS: oauth2 on a non-loopback address
// without TLS starts (a TLS-terminating proxy may sit in front) but says
// that secrets and tokens would cross the network in clear text; on
// loopback it does not.
func TestServeWarnsOAuth2WithoutTLS(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		listen string
		warn   bool
	}{{"0.0.0.0:0", true}, {"127.0.0.1:0", false}} {
		p := startTarn(t, cleanEnv("TARN_ROOT_CREDENTIAL=root:chosen-secret"), "--auth", "oauth2", "--listen", tt.listen, "--data-dir", filepath.Join(dir, tt.listen[:3]))
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
		require.Equal(t, 0, p.wait(t, shutdownDeadline))
		if tt.warn {
			assert.Contains(t, p.Stderr(), "oauth2 without TLS on a non-loopback address", tt.listen)
		} else {
			assert.NotContains(t, p.Stderr(), "oauth2 without TLS", tt.listen)
		}
	}
}
