package main_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/internal/testpg"
)

// TestServePostgresE2E: two `tarn serve` processes on one PostgreSQL
// store (TARN_STORE) and one warehouse act as one catalog: a table
// created on one loads on the other, a commit on either is seen at once
// by the next load on the other (the pointer is read from PostgreSQL on
// every load), and an Idempotency-Key used on one replica is replayed by
// the other instead of committing twice. The log names the store without
// its password. With PostgreSQL stopped /readyz is 503; restarted, the
// replica is ready again and serves the same table. Needs TARN_E2E=1 (a real PostgreSQL, internal/testpg).
func TestServePostgresE2E(t *testing.T) {
	if os.Getenv("TARN_E2E") != "1" {
		t.Skip("set TARN_E2E=1 to start a real PostgreSQL server")
	}
	pg := testpg.StartPostgres(t)
	wh := "file://" + filepath.Join(t.TempDir(), "warehouse")
	env := cleanEnv("TARN_STORE=" + pg.URL)
	a := startTarn(t, env, "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--warehouse", wh)
	b := startTarn(t, env, "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--warehouse", wh)
	assert.Contains(t, a.Stderr(), `"store":"postgres://tarn:xxxxx@`)
	assert.NotContains(t, a.Stderr(), "tarn:tarn@", "the store's password is not logged")

	uuid := createCrashTable(t, a.URL)
	checkTable(t, b.URL, uuid, nil)
	mustCall(t, http.MethodPost, b.URL+crashTablePath, propertyCommit(uuid, "k1", "from-b"), http.StatusOK)
	checkTable(t, a.URL, uuid, map[string]string{"k1": "from-b"})
	mustCall(t, http.MethodPost, a.URL+crashTablePath, propertyCommit(uuid, "k2", "from-a"), http.StatusOK)
	checkTable(t, b.URL, uuid, map[string]string{"k1": "from-b", "k2": "from-a"})

	// The same Idempotency-Key on the other replica: replayed, not applied again.
	const key = "5f0c8e0a-3b7e-4c1d-9a2f-6d8b1e4a7c39"
	first := idempotentCommit(t, a.URL, key, propertyCommit(uuid, "k3", "once"))
	again := idempotentCommit(t, b.URL, key, propertyCommit(uuid, "k3", "once"))
	assert.Equal(t, first, again, "the second replica replays the first one's response")
	loaded := mustCall(t, http.MethodGet, b.URL+crashTablePath, nil, http.StatusOK)
	var res struct {
		MetadataLocation string `json:"metadata-location"`
	}
	require.NoError(t, json.Unmarshal(loaded, &res))
	var replayed struct {
		MetadataLocation string `json:"metadata-location"`
	}
	require.NoError(t, json.Unmarshal(first, &replayed))
	assert.Equal(t, replayed.MetadataLocation, res.MetadataLocation, "the replay committed nothing more")
	assert.True(t, strings.HasPrefix(res.MetadataLocation, wh))

	// PostgreSQL down: /readyz is 503 and names the store (a load
	// balancer routes elsewhere); back up, the replica recovers by itself.
	pg.Stop()
	code, body := readyz(t, a.URL)
	assert.Equal(t, http.StatusServiceUnavailable, code, "%s", body)
	assert.Contains(t, body, `"status":"unreachable"`)
	assert.NotContains(t, body, "tarn:tarn@", "the store's password is not shown")
	pg = testpg.StartPostgresAt(t, pg.Dir, nil)
	require.Eventually(t, func() bool { code, _ := readyz(t, a.URL); return code == http.StatusOK }, 30*time.Second, 100*time.Millisecond)
	checkTable(t, a.URL, uuid, map[string]string{"k1": "from-b", "k2": "from-a", "k3": "once"})
}

// readyz returns GET /readyz's status and body.
func readyz(t *testing.T, base string) (int, string) {
	t.Helper()
	rsp, err := http.Get(base + "/readyz")
	require.NoError(t, err)
	defer rsp.Body.Close()
	b, err := io.ReadAll(rsp.Body)
	require.NoError(t, err)
	return rsp.StatusCode, string(b)
}

// idempotentCommit posts body to base's crash table with an
// Idempotency-Key and returns the 200 response's body.
func idempotentCommit(t *testing.T, base, key string, body any) []byte {
	t.Helper()
	js, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+crashTablePath, bytes.NewReader(js))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", out)
	return out
}
