package main_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/internal/testmoto"
)

// TestServeS3Warehouses runs `tarn serve` with its default warehouse in S3
// from TARN_S3_* (STS from the standard AWS_ENDPOINT_URL_STS) and a second
// one from the YAML `warehouses` list in FileIO property names:
// /v1/config?warehouse= selects each by prefix; tables are created in
// both buckets; loadTable with vended-credentials returns STS credentials
// for the default one (it has a role) and none for the other; no
// credential reaches the logs.
func TestServeS3Warehouses(t *testing.T) {
	ep := testmoto.Endpoint(t)
	b1, b2 := testmoto.NewBucket(t, ep), testmoto.NewBucket(t, ep)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "tarn.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(`warehouses:
  - name: analytics
    location: s3://`+b2+`/lake
    s3.endpoint: `+ep+`
    s3.region: us-east-1
    s3.path-style-access: true
    s3.access-key-id: AKIASECOND
    s3.secret-access-key: second-secret-never-logged
`), 0o600))
	p := startTarn(t, cleanEnv(
		"TARN_S3_ENDPOINT="+ep, "TARN_S3_REGION=us-east-1", "TARN_S3_PATH_STYLE_ACCESS=true",
		"TARN_S3_ACCESS_KEY_ID="+testmoto.AccessKeyID, "TARN_S3_SECRET_ACCESS_KEY="+testmoto.SecretAccessKey,
		"TARN_S3_ROLE_ARN="+testmoto.RoleARN, "AWS_ENDPOINT_URL_STS="+ep,
		"TARN_LOG_LEVEL=debug",
	), "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data"), "--config", cfg, "--warehouse", "s3://"+b1+"/wh")

	var conf struct {
		Overrides map[string]string `json:"overrides"`
	}
	require.NoError(t, json.Unmarshal(mustCall(t, http.MethodGet, p.URL+"/v1/config?warehouse=analytics", nil, 200), &conf))
	require.Equal(t, "analytics", conf.Overrides["prefix"])
	require.NoError(t, json.Unmarshal(mustCall(t, http.MethodGet, p.URL+"/v1/config", nil, 200), &conf))
	require.Equal(t, "default", conf.Overrides["prefix"])
	mustCall(t, http.MethodGet, p.URL+"/v1/config?warehouse=nope", nil, 404)

	schema := map[string]any{"type": "struct", "schema-id": 0, "fields": []any{map[string]any{"id": 1, "name": "id", "type": "long", "required": true}}}
	var secrets []string
	// Warehouses share one namespace tree (one store), so each gets its own
	// namespace here.
	for _, prefix := range []string{"default", "analytics"} {
		ns := "ns_" + prefix
		mustCall(t, http.MethodPost, p.URL+"/v1/"+prefix+"/namespaces", map[string]any{"namespace": []string{ns}}, 200)
		mustCall(t, http.MethodPost, p.URL+"/v1/"+prefix+"/namespaces/"+ns+"/tables", map[string]any{"name": "t", "schema": schema}, 200)
		req, err := http.NewRequest(http.MethodGet, p.URL+"/v1/"+prefix+"/namespaces/"+ns+"/tables/t", nil)
		require.NoError(t, err)
		req.Header.Set("X-Iceberg-Access-Delegation", "vended-credentials")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		var lt struct {
			Config             map[string]string `json:"config"`
			StorageCredentials []struct {
				Prefix string            `json:"prefix"`
				Config map[string]string `json:"config"`
			} `json:"storage-credentials"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&lt))
		resp.Body.Close()
		require.Equal(t, ep, lt.Config["s3.endpoint"])
		if prefix == "default" {
			require.Len(t, lt.StorageCredentials, 1)
			require.NotEmpty(t, lt.StorageCredentials[0].Config["s3.session-token"])
			secrets = append(secrets, lt.StorageCredentials[0].Config["s3.secret-access-key"], lt.StorageCredentials[0].Config["s3.session-token"])
		} else {
			require.Empty(t, lt.StorageCredentials, "no role, no opt-in: nothing vended")
			require.Empty(t, lt.Config["s3.secret-access-key"])
		}
	}
	for bucket, root := range map[string]string{b1: "wh/ns_default/", b2: "lake/ns_analytics/"} {
		keys := testmoto.Keys(t, ep, bucket, root)
		require.Len(t, keys, 1, bucket)
		require.True(t, strings.HasSuffix(keys[0], ".metadata.json"), keys[0])
	}
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, p.wait(t, shutdownDeadline))
	logs := p.Stderr()
	require.Contains(t, logs, "tarn serving")
	for _, s := range append(secrets, testmoto.SecretAccessKey, "second-secret-never-logged") {
		require.NotContains(t, logs, s)
	}
}

// TestServeS3CredentialsFromAWSChain: without --s3-access-key-id, Tarn
// uses the standard AWS chain (here its environment variables) for its
// own S3 access, and STS from the standard AWS_ENDPOINT_URL_STS.
func TestServeS3CredentialsFromAWSChain(t *testing.T) {
	ep := testmoto.Endpoint(t)
	bucket := testmoto.NewBucket(t, ep)
	dir := t.TempDir()
	p := startTarn(t, cleanEnv(
		"TARN_S3_ENDPOINT="+ep, "AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=AKIAFROMENV", "AWS_SECRET_ACCESS_KEY=env-secret-never-logged",
		"AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_EC2_METADATA_DISABLED=true",
		"TARN_S3_ROLE_ARN="+testmoto.RoleARN, "AWS_ENDPOINT_URL_STS="+ep,
	), "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data"), "--warehouse", "s3://"+bucket+"/wh")
	mustCall(t, http.MethodPost, p.URL+"/v1/namespaces", map[string]any{"namespace": []string{"envns"}}, 200)
	schema := map[string]any{"type": "struct", "schema-id": 0, "fields": []any{map[string]any{"id": 1, "name": "id", "type": "long", "required": true}}}
	mustCall(t, http.MethodPost, p.URL+"/v1/namespaces/envns/tables", map[string]any{"name": "t", "schema": schema}, 200)
	require.Len(t, testmoto.Keys(t, ep, bucket, "wh/envns/"), 1)
	b := mustCall(t, http.MethodGet, p.URL+"/v1/namespaces/envns/tables/t/credentials", nil, 200)
	require.Contains(t, string(b), "s3.session-token")
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, p.wait(t, shutdownDeadline))
	require.NotContains(t, p.Stderr(), "env-secret-never-logged")
}

// noAWSEnv is cleanEnv without any AWS_* variable of the outer
// environment, and with no shared config files and no instance metadata
// unless extra sets them: the credential source under test is then the
// only one the AWS chain can find.
func noAWSEnv(extra ...string) []string {
	var env []string
	for _, kv := range cleanEnv() {
		if !strings.HasPrefix(kv, "AWS_") {
			env = append(env, kv)
		}
	}
	env = append(env, "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_REGION=us-east-1")
	return append(env, extra...)
}

// s3TableRoundTrip creates namespace ns and a table in it through p and
// returns the keys the warehouse then holds under wh/ns/.
func s3TableRoundTrip(t *testing.T, p *tarnProc, ep, bucket, ns string, wantStatus int) []string {
	t.Helper()
	mustCall(t, http.MethodPost, p.URL+"/v1/namespaces", map[string]any{"namespace": []string{ns}}, 200)
	schema := map[string]any{"type": "struct", "schema-id": 0, "fields": []any{map[string]any{"id": 1, "name": "id", "type": "long", "required": true}}}
	mustCall(t, http.MethodPost, p.URL+"/v1/namespaces/"+ns+"/tables", map[string]any{"name": "t", "schema": schema}, wantStatus)
	return testmoto.Keys(t, ep, bucket, "wh/"+ns+"/")
}

// TestServeS3CredentialsFromWebIdentity: on Kubernetes with IRSA (or any
// OIDC web identity) the pod gets AWS_ROLE_ARN and
// AWS_WEB_IDENTITY_TOKEN_FILE and no keys; Tarn's S3 access then comes
// from STS AssumeRoleWithWebIdentity (moto's, via AWS_ENDPOINT_URL_STS).
// Without the token file the same start has no credentials at all: the
// createTable is 503 and nothing is written.
func TestServeS3CredentialsFromWebIdentity(t *testing.T) {
	ep := testmoto.Endpoint(t)
	bucket := testmoto.NewBucket(t, ep)
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(token, []byte("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6dGFybjp0YXJuIn0.c2ln"), 0o600))
	base := []string{"TARN_S3_ENDPOINT=" + ep, "TARN_S3_PATH_STYLE_ACCESS=true", "AWS_ENDPOINT_URL_STS=" + ep, "AWS_EC2_METADATA_DISABLED=true"}

	p := startTarn(t, noAWSEnv(base...), "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "none"), "--warehouse", "s3://"+bucket+"/wh")
	require.Empty(t, s3TableRoundTrip(t, p, ep, bucket, "nocreds", http.StatusServiceUnavailable))
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, p.wait(t, shutdownDeadline))

	p = startTarn(t, noAWSEnv(append(base, "AWS_ROLE_ARN="+testmoto.RoleARN, "AWS_WEB_IDENTITY_TOKEN_FILE="+token, "AWS_ROLE_SESSION_NAME=tarn")...),
		"--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "irsa"), "--warehouse", "s3://"+bucket+"/wh")
	keys := s3TableRoundTrip(t, p, ep, bucket, "irsa", http.StatusOK)
	require.Len(t, keys, 1)
	require.True(t, strings.HasSuffix(keys[0], ".metadata.json"), keys[0])
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, p.wait(t, shutdownDeadline))
	require.NotContains(t, p.Stderr(), "eyJhbGciOiJSUzI1NiJ9", "the web identity token is not logged")
}

// TestServeS3CredentialsFromInstanceRole: on EC2 (or ECS/EKS with the
// instance role) Tarn's S3 access comes from the instance metadata
// service's role credentials. The service here is a stand-in speaking
// IMDSv2 (token PUT, then the role's credentials) at the address the SDK
// takes from AWS_EC2_METADATA_SERVICE_ENDPOINT; the credentials it hands
// out are then used against moto's S3.
func TestServeS3CredentialsFromInstanceRole(t *testing.T) {
	ep := testmoto.Endpoint(t)
	bucket := testmoto.NewBucket(t, ep)
	var credentialCalls atomic.Int32
	imds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPut && r.URL.Path == "/latest/api/token":
			w.Header().Set("X-Aws-Ec2-Metadata-Token-Ttl-Seconds", "21600")
			_, _ = w.Write([]byte("imds-session-token"))
		case r.Header.Get("X-Aws-Ec2-Metadata-Token") != "imds-session-token":
			http.Error(w, "no IMDSv2 token", http.StatusUnauthorized)
		case r.URL.Path == "/latest/meta-data/iam/security-credentials/" || r.URL.Path == "/latest/meta-data/iam/security-credentials":
			_, _ = w.Write([]byte("tarn-node"))
		case r.URL.Path == "/latest/meta-data/iam/security-credentials/tarn-node":
			credentialCalls.Add(1)
			_ = json.NewEncoder(w).Encode(map[string]string{
				"Code": "Success", "Type": "AWS-HMAC", "AccessKeyId": "ASIAINSTANCEROLE",
				"SecretAccessKey": "instance-secret-never-logged", "Token": "instance-session-token",
				"Expiration": time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "LastUpdated": time.Now().UTC().Format(time.RFC3339),
			})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(imds.Close)
	dir := t.TempDir()
	p := startTarn(t, noAWSEnv("TARN_S3_ENDPOINT="+ep, "TARN_S3_PATH_STYLE_ACCESS=true", "AWS_EC2_METADATA_SERVICE_ENDPOINT="+imds.URL),
		"--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data"), "--warehouse", "s3://"+bucket+"/wh")
	keys := s3TableRoundTrip(t, p, ep, bucket, "ec2", http.StatusOK)
	require.Len(t, keys, 1)
	require.Positive(t, credentialCalls.Load(), "credentials came from the instance metadata service")
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, p.wait(t, shutdownDeadline))
	require.NotContains(t, p.Stderr(), "instance-secret-never-logged")
}
