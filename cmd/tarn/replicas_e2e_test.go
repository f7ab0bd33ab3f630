package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/auth"
	"github.com/tarnhq/tarn/ingest/topics"
	"github.com/tarnhq/tarn/internal/demo"
	"github.com/tarnhq/tarn/internal/testenv"
	"github.com/tarnhq/tarn/internal/testkafka"
	"github.com/tarnhq/tarn/internal/testpg"
)

// replicaClient calls one replica with a bearer token.
type replicaClient struct {
	t    *testing.T
	base string
}

// call sends body (JSON unless a string) with tok and returns the
// status and response body.
func (c replicaClient) call(tok, method, path string, body any) (int, []byte) {
	c.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		js, err := json.Marshal(b)
		require.NoError(c.t, err)
		r = strings.NewReader(string(js))
	}
	req, err := http.NewRequestWithContext(c.t.Context(), method, c.base+path, r)
	require.NoError(c.t, err)
	req.Header.Set("Content-Type", "application/json")
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	rsp, err := http.DefaultClient.Do(req)
	require.NoError(c.t, err)
	defer rsp.Body.Close()
	out, err := io.ReadAll(rsp.Body)
	require.NoError(c.t, err)
	return rsp.StatusCode, out
}

// token gets a client_credentials token from the replica.
func (c replicaClient) token(id, secret string) string {
	c.t.Helper()
	rsp, err := http.PostForm(c.base+"/v1/oauth/tokens", url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}})
	require.NoError(c.t, err)
	defer rsp.Body.Close()
	require.Equal(c.t, http.StatusOK, rsp.StatusCode)
	var tr struct {
		AccessToken string `json:"access_token"`
	}
	require.NoError(c.t, json.NewDecoder(rsp.Body).Decode(&tr))
	return tr.AccessToken
}

// metadataLocation loads the table at path with tok and returns its
// metadata location.
func (c replicaClient) metadataLocation(tok, path string) string {
	c.t.Helper()
	code, body := c.call(tok, http.MethodGet, path, nil)
	require.Equal(c.t, http.StatusOK, code, "%s", body)
	var res struct {
		MetadataLocation string `json:"metadata-location"`
	}
	require.NoError(c.t, json.Unmarshal(body, &res))
	return res.MetadataLocation
}

// metric returns the value of an unlabelled counter on the replica's /metrics.
func (c replicaClient) metric(tok, name string) float64 {
	c.t.Helper()
	code, body := c.call(tok, http.MethodGet, "/metrics", nil)
	require.Equal(c.t, http.StatusOK, code)
	m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindSubmatch(body)
	require.NotNil(c.t, m, "%s not on /metrics", name)
	v, err := strconv.ParseFloat(string(m[1]), 64)
	require.NoError(c.t, err)
	return v
}

// TestServeReplicasShareStateE2E: two `tarn serve --auth oauth2`
// processes on one PostgreSQL store, one warehouse and one Kafka share
// every piece of state that used to live per process (issue 18, item
// 2): a token issued by A is accepted by B (one signing key, in the
// store); a principal deleted through A is refused by B within
// auth.RefreshInterval; a topic enabled and updated through A shows on
// B, whose catalog refuses external writes to its table, within
// topics.DefaultSyncInterval; a table staged through A has its create
// committed through B. And item 3: a load through B sees a commit
// through A at once, and B's second load of an unchanged table is a hit
// of its metadata cache. Needs TARN_E2E=1.
func TestServeReplicasShareStateE2E(t *testing.T) {
	testenv.E2E(t, "a real PostgreSQL, Kafka broker and schema registry")
	pg := testpg.StartPostgres(t)
	b, reg := testkafka.StartBroker(t), testkafka.StartRegistry(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rows, err := demo.Flights()
	require.NoError(t, err)
	flightsTopic(ctx, t, b, reg, rows)

	const rootSecret = "replica-root-secret"
	wh := "file://" + filepath.Join(t.TempDir(), "warehouse")
	env := cleanEnv("TARN_STORE="+pg.URL, "TARN_ROOT_CREDENTIAL=root:"+rootSecret)
	args := func() []string {
		return []string{"--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--warehouse", wh, "--auth", "oauth2",
			"--kafka-brokers", b.Bootstrap, "--schema-registry-url", reg.URL}
	}
	pa, pb := startTarn(t, env, args()...), startTarn(t, env, args()...)
	a, bb := replicaClient{t, pa.URL}, replicaClient{t, pb.URL}

	// One signing key: A's token works on B.
	root := a.token("root", rootSecret)
	code, body := bb.call(root, http.MethodPost, "/v1/namespaces", map[string]any{"namespace": []string{"lab"}})
	require.Equal(t, http.StatusOK, code, "%s", body)

	// A principal made on A, its token used on B, then deleted on A.
	code, body = a.call(root, http.MethodPost, "/management/v1/principals", map[string]any{"id": "etl"})
	require.Equal(t, http.StatusCreated, code, "%s", body)
	var created struct {
		Secret string `json:"secret"`
	}
	require.NoError(t, json.Unmarshal(body, &created))
	etl := a.token("etl", created.Secret)
	require.Eventually(t, func() bool {
		code, _ := bb.call(etl, http.MethodGet, "/v1/config", nil)
		return code == http.StatusOK
	}, auth.RefreshInterval+5*time.Second, 100*time.Millisecond, "B accepts the token of a principal created through A")
	code, body = a.call(root, http.MethodDelete, "/management/v1/principals/etl", nil)
	require.Equal(t, http.StatusNoContent, code, "%s", body)
	deleted := time.Now()
	code, _ = a.call(etl, http.MethodGet, "/v1/config", nil)
	assert.Equal(t, http.StatusUnauthorized, code, "A refuses it at once")
	require.Eventually(t, func() bool {
		code, _ := bb.call(etl, http.MethodGet, "/v1/config", nil)
		return code == http.StatusUnauthorized
	}, auth.RefreshInterval+2*time.Second, 50*time.Millisecond, "B refuses the deleted principal's token within the bound")
	t.Logf("B refused the deleted principal's token %s after the delete on A (bound %s)", time.Since(deleted).Round(time.Millisecond), auth.RefreshInterval)

	// A topic enabled and updated through A: known on B, its table owned there.
	tbl := ingestNamespace + "." + ingestName
	code, body = a.call(root, http.MethodPost, "/management/v1/topics", map[string]any{"topic": demo.Topic, "table": tbl, "target-lag-ms": 1000})
	require.Equal(t, http.StatusCreated, code, "%s", body)
	code, body = a.call(root, http.MethodPatch, "/management/v1/topics/"+demo.Topic, map[string]any{"target-lag-ms": 3000})
	require.Equal(t, http.StatusOK, code, "%s", body)
	require.Eventually(t, func() bool {
		code, body := bb.call(root, http.MethodGet, "/management/v1/topics/"+demo.Topic, nil)
		var st topics.Status
		return code == http.StatusOK && json.Unmarshal(body, &st) == nil && st.Config.TargetLagMs == 3000
	}, topics.DefaultSyncInterval+5*time.Second, 100*time.Millisecond, "B shows the topic config set through A")
	code, body = bb.call(root, http.MethodPost, fmt.Sprintf("/v1/namespaces/%s/tables/%s", ingestNamespace, ingestName),
		map[string]any{"requirements": []any{}, "updates": []any{map[string]any{"action": "set-properties", "updates": map[string]string{"x": "y"}}}})
	assert.Equal(t, http.StatusForbidden, code, "B refuses external writes to the table of a topic enabled through A: %s", body)

	// Staged create through A, committed through B.
	schema := map[string]any{"type": "struct", "fields": []any{map[string]any{"id": 1, "name": "id", "type": "long", "required": false}}}
	code, body = a.call(root, http.MethodPost, "/v1/namespaces/lab/tables", map[string]any{"name": "ctas", "schema": schema, "stage-create": true})
	require.Equal(t, http.StatusOK, code, "%s", body)
	var staged struct {
		Metadata json.RawMessage `json:"metadata"`
	}
	require.NoError(t, json.Unmarshal(body, &staged))
	md, err := table.ParseMetadataBytes(staged.Metadata)
	require.NoError(t, err)
	sp, so := md.PartitionSpec(), md.SortOrder()
	updates := []table.Update{table.NewAssignUUIDUpdate(md.TableUUID()), table.NewUpgradeFormatVersionUpdate(md.Version()),
		table.NewAddSchemaUpdate(md.CurrentSchema()), table.NewSetCurrentSchemaUpdate(-1),
		table.NewAddPartitionSpecUpdate(&sp, true), table.NewSetDefaultSpecUpdate(-1),
		table.NewAddSortOrderUpdate(&so), table.NewSetDefaultSortOrderUpdate(-1),
		table.NewSetLocationUpdate(md.Location())}
	code, body = bb.call(root, http.MethodPost, "/v1/namespaces/lab/tables/ctas",
		map[string]any{"requirements": []any{map[string]string{"type": "assert-create"}}, "updates": updates})
	require.Equal(t, http.StatusOK, code, "B commits the create staged through A: %s", body)
	var committed struct {
		MetadataLocation string `json:"metadata-location"`
	}
	require.NoError(t, json.Unmarshal(body, &committed))

	// Read-after-write across replicas, and B's metadata cache.
	loadLocation := func(c replicaClient) string { return c.metadataLocation(root, "/v1/namespaces/lab/tables/ctas") }
	assert.Equal(t, committed.MetadataLocation, loadLocation(a))
	code, body = a.call(root, http.MethodPost, "/v1/namespaces/lab/tables/ctas",
		map[string]any{"requirements": []any{}, "updates": []any{map[string]any{"action": "set-properties", "updates": map[string]string{"k": "from-a"}}}})
	require.Equal(t, http.StatusOK, code, "%s", body)
	require.NoError(t, json.Unmarshal(body, &committed))
	assert.Equal(t, committed.MetadataLocation, loadLocation(bb), "B's next load sees A's commit")
	hits := bb.metric(root, "tarn_catalog_metadata_cache_hits_total")
	assert.Equal(t, committed.MetadataLocation, loadLocation(bb))
	assert.Equal(t, hits+1, bb.metric(root, "tarn_catalog_metadata_cache_hits_total"), "B's load of an unchanged table is a cache hit")
}
