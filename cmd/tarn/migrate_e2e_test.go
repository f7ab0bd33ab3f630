package main_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/internal/testenv"
	"github.com/tarnhq/tarn/internal/testpg"
)

// runMigrate runs `tarn migrate args...` and returns its output and exit code.
func runMigrate(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(tarnBin, append([]string{"migrate"}, args...)...)
	cmd.Env = cleanEnv()
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil {
		require.ErrorAs(t, err, &ee, "%s", out)
		return string(out), ee.ExitCode()
	}
	return string(out), 0
}

// stopTarn sends SIGTERM and waits for exit 0.
func stopTarn(t *testing.T, p *tarnProc) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, p.wait(t, time.Minute))
}

// TestMigrateBoltToPostgresE2E (issue 18, `tarn migrate`): a bbolt data
// dir populated by `tarn demo` (a topic and its table with ingest
// commits) and then by `tarn serve --auth oauth2` (the signing key, the
// root and a principal with a role and a grant) is copied into an empty
// PostgreSQL store; `tarn serve --store postgres://` then serves it: a
// token issued before the migration is still accepted, the table loads
// with the same metadata location and the topic is listed. A data dir a
// running tarn holds is refused, and so is a target that is not empty.
// Needs TARN_E2E=1.
func TestMigrateBoltToPostgresE2E(t *testing.T) {
	testenv.E2E(t, "a real PostgreSQL (internal/testpg)")
	pg := testpg.StartPostgres(t)
	data := t.TempDir()

	demoProc := startTarnCmd(t, cleanEnv(), "demo", "--listen", "127.0.0.1:0", "--data-dir", data, "--rows", "2000", "--rate", "20000", "--target-lag", "1s")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cat, err := rest.NewCatalog(ctx, "tarn", demoProc.URL)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		tbl, err := cat.LoadTable(ctx, table.Identifier{"demo", "flights"})
		return err == nil && tbl.CurrentSnapshot() != nil && totalRecords(tbl) >= 2000
	}, 90*time.Second, 200*time.Millisecond, "the demo table never held its rows")
	stopTarn(t, demoProc)

	const rootSecret = "migrate-root-secret"
	bolt := startTarn(t, cleanEnv("TARN_ROOT_CREDENTIAL=root:"+rootSecret), "--listen", "127.0.0.1:0", "--data-dir", data, "--auth", "oauth2")
	bc := replicaClient{t, bolt.URL}
	root := bc.token("root", rootSecret)
	code, body := bc.call(root, http.MethodPost, "/management/v1/principals", map[string]any{"id": "etl"})
	require.Equal(t, http.StatusCreated, code, "%s", body)
	var created struct {
		Secret string `json:"secret"`
	}
	require.NoError(t, json.Unmarshal(body, &created))
	code, body = bc.call(root, http.MethodPost, "/management/v1/roles", map[string]any{"name": "readers"})
	require.Equal(t, http.StatusCreated, code, "%s", body)
	code, body = bc.call(root, http.MethodPost, "/management/v1/grants", `{"role":"readers","privilege":"manage","on":{"type":"namespace","namespace":["demo"]}}`)
	require.Equal(t, http.StatusCreated, code, "%s", body)
	code, body = bc.call(root, http.MethodPut, "/management/v1/principals/etl/roles/readers", nil)
	require.Equal(t, http.StatusNoContent, code, "%s", body)
	etl := bc.token("etl", created.Secret)
	location := func(c replicaClient) string { return c.metadataLocation(etl, "/v1/namespaces/demo/tables/flights") }
	before := location(bc)

	// The bolt file is held by the running tarn: refused, nothing copied.
	out, exit := runMigrate(t, "--from", "bolt", "--to", pg.URL, "--data-dir", data)
	assert.NotEqual(t, 0, exit)
	assert.Contains(t, out, "is in use by another tarn process")
	stopTarn(t, bolt)

	out, exit = runMigrate(t, "--from", "bolt", "--to", pg.URL, "--data-dir", data)
	require.Equal(t, 0, exit, "%s", out)
	t.Logf("tarn migrate:\n%s", out)
	assert.NotContains(t, out, "tarn:tarn@", "the password is not printed")
	for _, want := range []string{`(?m)^namespaces\t1$`, `(?m)^tables\t[1-9]`, `(?m)^records topics\t1$`, `(?m)^records auth-keys\t1$`,
		`(?m)^records auth-principals\t2$`, `(?m)^records auth-roles\t1$`, `(?m)^records auth-grants\t1$`} {
		assert.Regexp(t, regexp.MustCompile(want), out)
	}
	// Again: the target is not empty any more.
	out, exit = runMigrate(t, "--from", "bolt", "--to", pg.URL, "--data-dir", data)
	assert.NotEqual(t, 0, exit)
	assert.Contains(t, out, "already holds catalog state")

	// Served from PostgreSQL (the warehouse stays in the data dir).
	pgTarn := startTarn(t, cleanEnv("TARN_STORE="+pg.URL), "--listen", "127.0.0.1:0", "--data-dir", data, "--auth", "oauth2")
	pc := replicaClient{t, pgTarn.URL}
	assert.Equal(t, before, location(pc), "the table loads with the same metadata location, with a token issued before the migration")
	code, body = pc.call(root, http.MethodGet, "/management/v1/topics", nil)
	require.Equal(t, http.StatusOK, code, "%s", body)
	assert.Contains(t, string(body), `"flights"`)
	code, body = pc.call(etl, http.MethodPost, "/v1/namespaces", map[string]any{"namespace": []string{"other"}})
	assert.Equal(t, http.StatusForbidden, code, "the migrated grants still bound etl: %s", body)
}
