// Package testkafka starts the real services of Tarn's ingest end-to-end
// tests from Go tests: an Apache Kafka broker (scripts/kafka.sh: Kafka 4.4,
// KRaft, single node, transactions enabled) and a Confluent-compatible schema
// registry (scripts/schema-registry.sh: Apicurio Registry, API at
// /apis/ccompat/v7). Each runs in its own process on free loopback ports, in
// a directory under t.TempDir(), and is stopped when the test ends.
//
// They need Java 17+, Maven and python3 on the machine; the first use on a
// machine downloads the jars into $HOME/.cache/tarn (about 2 minutes), later
// starts take about 5 s each. Both helpers skip the test under -short.
// Whether a suite runs them at all (e.g. only with TARN_E2E=1) is the
// caller's choice.
package testkafka

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tarnhq/tarn/internal/testservice"
)

// Broker is a running Kafka broker.
type Broker struct {
	// Bootstrap is host:port of the PLAINTEXT listener, e.g. 127.0.0.1:40123.
	Bootstrap string
	// ClusterID is the KRaft cluster id the storage was formatted with.
	ClusterID string
	// Dir holds server.properties, data/ and kafka.log.
	Dir string
	// PID of the broker's JVM.
	PID string
	t   testing.TB
}

// StartBroker starts a broker on a fresh directory; it stops when t ends.
func StartBroker(t testing.TB) *Broker {
	t.Helper()
	return StartBrokerAt(t, filepath.Join(t.TempDir(), "kafka"), nil)
}

// StartBrokerAt starts a broker on dir, which may hold an earlier broker's
// state (same cluster id, topics and offsets; same port if free).
// overrides are broker properties ("k=v") on top of the script's defaults,
// e.g. "log.retention.check.interval.ms=1000".
func StartBrokerAt(t testing.TB, dir string, overrides []string) *Broker {
	t.Helper()
	skipShort(t)
	env := []string{"KAFKA_OVERRIDES=" + strings.Join(overrides, " ")}
	vars := run(t, env, "kafka.sh", "start", dir)
	b := &Broker{Bootstrap: vars["KAFKA_BOOTSTRAP"], ClusterID: vars["KAFKA_CLUSTER_ID"],
		Dir: vars["KAFKA_DIR"], PID: vars["KAFKA_PID"], t: t}
	if b.Bootstrap == "" {
		t.Fatalf("testkafka: scripts/kafka.sh start printed no KAFKA_BOOTSTRAP: %v", vars)
	}
	t.Cleanup(b.Stop)
	return b
}

// Stop stops the broker (SIGTERM, then waits); its directory stays. Safe to
// call more than once; Start it again with StartBrokerAt(t, b.Dir, ...).
func (b *Broker) Stop() {
	b.t.Helper()
	run(b.t, nil, "kafka.sh", "stop", b.Dir)
}

// Kill kills the broker with SIGKILL (a crash) and waits until its
// process is gone (nothing else: not a clean shutdown, not its ports).
func (b *Broker) Kill() {
	b.t.Helper()
	testservice.Kill(b.t, b.PID)
}

// Registry is a running Confluent-compatible schema registry.
type Registry struct {
	// URL is the Confluent API root, e.g. http://127.0.0.1:40124/apis/ccompat/v7;
	// pass it as is to sr.URLs.
	URL string
	// Dir holds the registry's H2 database and registry.log.
	Dir string
	t   testing.TB
}

// StartRegistry starts a registry with no schemas; it stops when t ends.
func StartRegistry(t testing.TB) *Registry {
	t.Helper()
	skipShort(t)
	dir := filepath.Join(t.TempDir(), "schema-registry")
	vars := run(t, nil, "schema-registry.sh", "start", dir)
	r := &Registry{URL: vars["SCHEMA_REGISTRY_URL"], Dir: vars["SCHEMA_REGISTRY_DIR"], t: t}
	if r.URL == "" {
		t.Fatalf("testkafka: scripts/schema-registry.sh start printed no SCHEMA_REGISTRY_URL: %v", vars)
	}
	t.Cleanup(r.Stop)
	return r
}

// ClientTimeout bounds each request of Client. franz-go's default (5 s)
// is shorter than Apicurio's first requests take on a busy 2-core machine
// (JIT, H2 and Hibernate warming up: a first registration timed out at
// load average 39); the tests' own contexts bound the whole.
const ClientTimeout = time.Minute

// Client returns a franz-go registry client of URL whose requests time
// out after ClientTimeout.
func (r *Registry) Client(t testing.TB) *sr.Client {
	t.Helper()
	cl, err := sr.NewClient(sr.URLs(r.URL), sr.HTTPClient(&http.Client{Timeout: ClientTimeout}))
	if err != nil {
		t.Fatalf("testkafka: registry client: %v", err)
	}
	return cl
}

// Stop stops the registry; safe to call more than once.
func (r *Registry) Stop() {
	r.t.Helper()
	run(r.t, nil, "schema-registry.sh", "stop", r.Dir)
}

func skipShort(t testing.TB) {
	t.Helper()
	testservice.SkipShort(t, "testkafka: real Kafka / schema registry")
}

func run(t testing.TB, env []string, script string, args ...string) map[string]string {
	t.Helper()
	return testservice.Run(t, env, script, args...)
}
