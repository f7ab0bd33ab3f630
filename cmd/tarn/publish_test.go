package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/glue"
	"github.com/aws/aws-sdk-go-v2/service/glue/types"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/internal/testmoto"
	"github.com/tarnhq/tarn/publish"
)

// runPublish runs `tarn publish args...` against server and returns its
// stdout; it fails the test on a non-zero exit.
func runPublish(t *testing.T, server string, args ...string) string {
	t.Helper()
	cmd := exec.Command(tarnBin, append([]string{"publish", "--server", server}, args...)...)
	cmd.Env = cleanEnv()
	var errb strings.Builder
	cmd.Stderr = &errb
	out, err := cmd.Output()
	require.NoError(t, err, errb.String())
	return string(out)
}

// TestServePublishesToGlueS3: `tarn serve` with a YAML `publish` list
// pointing at moto's Glue: a table opted in with tarn.publish.moto is
// published after its create and each commit; a foreign change of the
// Glue table stops it (`tarn publish status` says why, the foreign
// pointer stays); `tarn publish resume` puts Tarn's pointer back.
// (Named S3 for scripts/test's moto pass.)
func TestServePublishesToGlueS3(t *testing.T) {
	ep := testmoto.Endpoint(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "tarn.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(`publish:
  - name: moto
    type: glue
    region: us-east-1
    endpoint: `+ep+`
    namespaces: [nothing]
`), 0o600))
	p := startTarn(t, cleanEnv("AWS_ACCESS_KEY_ID="+testmoto.AccessKeyID, "AWS_SECRET_ACCESS_KEY="+testmoto.SecretAccessKey),
		"--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data"), "--config", cfg)
	ns := fmt.Sprintf("pub%d", time.Now().UnixNano()%1e9) // moto's state outlives the test
	mustCall(t, http.MethodPost, p.URL+"/v1/namespaces", map[string]any{"namespace": []string{ns}}, 200)
	schema := map[string]any{"type": "struct", "schema-id": 0, "fields": []any{map[string]any{"id": 1, "name": "id", "type": "long", "required": true}}}
	mustCall(t, http.MethodPost, p.URL+"/v1/namespaces/"+ns+"/tables", map[string]any{"name": "skipped", "schema": schema}, 200)
	mustCall(t, http.MethodPost, p.URL+"/v1/namespaces/"+ns+"/tables", map[string]any{"name": "t", "schema": schema,
		"properties": map[string]string{"tarn.publish.moto": "true"}}, 200)
	mustCall(t, http.MethodPost, p.URL+"/v1/namespaces/"+ns+"/tables", map[string]any{"name": "bad", "schema": schema,
		"properties": map[string]string{"tarn.publish.moto": "maybe"}}, 400)

	gc := glue.New(glue.Options{Region: testmoto.Region, BaseEndpoint: aws.String(ep),
		Credentials: credentials.NewStaticCredentialsProvider(testmoto.AccessKeyID, testmoto.SecretAccessKey, "")})
	ctx := context.Background()
	location := func() string {
		var lt struct {
			MetadataLocation string `json:"metadata-location"`
		}
		require.NoError(t, json.Unmarshal(mustCall(t, http.MethodGet, p.URL+"/v1/namespaces/"+ns+"/tables/t", nil, 200), &lt))
		return lt.MetadataLocation
	}
	glueLocation := func(name string) string {
		out, err := gc.GetTable(ctx, &glue.GetTableInput{DatabaseName: aws.String(ns), Name: aws.String(name)})
		if err != nil {
			return ""
		}
		return out.Table.Parameters["metadata_location"]
	}
	commit := func() {
		mustCall(t, http.MethodPost, p.URL+"/v1/namespaces/"+ns+"/tables/t", map[string]any{"updates": []any{
			map[string]any{"action": "set-properties", "updates": map[string]string{"k": time.Now().String()}}}}, 200)
	}
	require.Eventually(t, func() bool { return glueLocation("t") == location() }, 20*time.Second, 20*time.Millisecond)
	commit()
	require.Eventually(t, func() bool { return glueLocation("t") == location() }, 20*time.Second, 20*time.Millisecond)
	require.Empty(t, glueLocation("skipped"), "a table the target does not cover is not published")

	status := func() publish.TableStatus {
		var st publish.Status
		require.NoError(t, json.Unmarshal([]byte(runPublish(t, p.URL, "status", "-o", "json")), &st))
		require.Len(t, st.Targets, 1)
		for _, s := range st.Targets[0].Tables {
			if s.Table == ns+".t" {
				return s
			}
		}
		return publish.TableStatus{}
	}
	require.Equal(t, publish.StatePublished, status().State)

	// A foreign writer points the Glue table elsewhere.
	out, err := gc.GetTable(ctx, &glue.GetTableInput{DatabaseName: aws.String(ns), Name: aws.String("t")})
	require.NoError(t, err)
	params := out.Table.Parameters
	params["metadata_location"] = "s3://elsewhere/00001-foreign.metadata.json"
	_, err = gc.UpdateTable(ctx, &glue.UpdateTableInput{DatabaseName: aws.String(ns), TableInput: &types.TableInput{
		Name: aws.String("t"), TableType: out.Table.TableType, Parameters: params, StorageDescriptor: out.Table.StorageDescriptor}})
	require.NoError(t, err)
	commit()
	require.Eventually(t, func() bool { return status().State == publish.StateConflict }, 20*time.Second, 50*time.Millisecond)
	require.Contains(t, status().Conflict, "changed outside Tarn")
	require.Contains(t, runPublish(t, p.URL, "status"), "conflict")
	require.Equal(t, "s3://elsewhere/00001-foreign.metadata.json", glueLocation("t"))

	runPublish(t, p.URL, "resume", "--table", ns+".t", "--target", "moto")
	require.Equal(t, location(), glueLocation("t"))
	require.Equal(t, publish.StatePublished, status().State)
	require.Contains(t, string(mustCall(t, http.MethodGet, p.URL+"/metrics", nil, 200)), `tarn_publish_lag_seconds{table="`+ns+`.t",target="moto"} 0`)
}
