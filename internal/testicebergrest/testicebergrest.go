// Package testicebergrest starts Apache Iceberg's Java REST catalog server
// (scripts/iceberg-rest-fixture.sh: RESTCatalogServer, a JdbcCatalog on
// a SQLite file with a file:// warehouse) for a test, on a free port,
// stopped when the test ends. It needs Java (and Maven for the first
// resolve of the jars, cached in $HOME/.cache/tarn); the tests that use
// it run with TARN_E2E=1.
package testicebergrest

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/tarnhq/tarn/internal/testenv"
)

// Start starts a fixture server and returns its URI (http://127.0.0.1:PORT)
// and warehouse directory. It skips unless TARN_E2E=1, goes through
// testenv.Missing without java or mvn, and fails t when the server does not
// answer.
func Start(t testing.TB) (uri, warehouse string) {
	t.Helper()
	testenv.E2E(t, "Apache Iceberg's REST catalog server (scripts/iceberg-rest-fixture.sh)")
	testenv.NeedTools(t, "scripts/iceberg-rest-fixture.sh", "java", "mvn", "curl")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	dir := t.TempDir()
	script := testenv.RepoFile(t, "scripts/iceberg-rest-fixture.sh")
	// The fixture's default JDBC URI is an in-memory SQLite database,
	// which is per connection: a second pooled connection (any
	// concurrency) sees no iceberg_tables and fails. A file database is
	// shared by all of them (RESTCatalogServer reads CATALOG_URI).
	env := []string{"TARN_RUN_DIR=" + dir, "CATALOG_URI=jdbc:sqlite:file:" + filepath.Join(dir, "catalog.db")}
	run := func(args ...string) ([]byte, error) {
		cmd := exec.Command(script, args...)
		cmd.Env = append(cmd.Environ(), env...)
		return cmd.CombinedOutput()
	}
	warehouse = filepath.Join(dir, "warehouse")
	if out, err := run("start", port, warehouse); err != nil {
		t.Fatalf("scripts/iceberg-rest-fixture.sh start %s: %v\n%s", port, err, out)
	}
	t.Cleanup(func() {
		if t.Failed() {
			if b, err := os.ReadFile(filepath.Join(dir, "iceberg-rest-fixture-"+port+".log")); err == nil {
				t.Logf("iceberg-rest-fixture log (last 8 KiB):\n%s", b[max(0, len(b)-8192):])
			}
		}
		if out, err := run("stop", port); err != nil {
			t.Errorf("scripts/iceberg-rest-fixture.sh stop %s: %v\n%s", port, err, out)
		}
	})
	return "http://127.0.0.1:" + port, warehouse
}
