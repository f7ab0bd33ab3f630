// Package testconnect starts a real Kafka Connect worker from Go tests
// (scripts/kafka-connect.sh: one distributed-mode worker of Kafka 4.3 with
// the Debezium 3.6.1 PostgreSQL connector and Apicurio Registry's Avro
// converter on its plugin path), creates connectors over its REST API and
// waits for them, for the change-data-capture tests of issue 15. The
// worker runs on a free loopback port, in a directory under t.TempDir(),
// and stops when the test ends. connectors.go holds the tested connector
// configurations (docs/e2e-services.md shows them as JSON).
//
// The first use on a machine resolves the jars into $HOME/.cache/tarn
// (about 2 minutes); a start takes 15–50 s (the worker joins its group and
// reads its topics). StartConnect skips the test under -short; whether a
// suite runs it at all (e.g. only with TARN_E2E=1) is the caller's choice.
package testconnect

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tarnhq/tarn/internal/testkafka"
	"github.com/tarnhq/tarn/internal/testservice"
)

// Worker is a running Kafka Connect worker.
type Worker struct {
	// URL is the REST API root, e.g. http://127.0.0.1:40126.
	URL string
	// GroupID is the worker group; its internal topics are
	// _<GroupID>-{configs,offsets,status}.
	GroupID string
	// Dir holds worker.properties and connect.log.
	Dir string
	// PID of the worker's JVM.
	PID string
	// Broker and Registry are the services the worker and its connectors
	// use; Registry may be nil (JSON connectors only).
	Broker   *testkafka.Broker
	Registry *testkafka.Registry
	t        testing.TB
}

// StartConnect starts a worker on a fresh directory against broker; it
// stops when t ends. registry (may be nil) is where Avro connectors
// register their schemas (AvroConverters(w.Registry.URL)).
func StartConnect(t testing.TB, broker *testkafka.Broker, registry *testkafka.Registry) *Worker {
	t.Helper()
	return StartConnectAt(t, filepath.Join(t.TempDir(), "kafka-connect"), broker, registry)
}

// StartConnectAt starts the worker of dir, which may hold an earlier
// worker's state: it rejoins the same group, so the connectors created
// before (and their source offsets, in Kafka) come back, also after Kill.
func StartConnectAt(t testing.TB, dir string, broker *testkafka.Broker, registry *testkafka.Registry) *Worker {
	t.Helper()
	testservice.SkipShort(t, "testconnect: real Kafka Connect")
	const script = "kafka-connect.sh"
	vars := testservice.Run(t, []string{"KAFKA_BOOTSTRAP=" + broker.Bootstrap}, script, "start", dir)
	w := &Worker{
		URL: testservice.Need(t, vars, script, "CONNECT_URL"), GroupID: vars["CONNECT_GROUP_ID"],
		Dir: vars["CONNECT_DIR"], PID: vars["CONNECT_PID"], Broker: broker, Registry: registry, t: t,
	}
	t.Cleanup(w.Stop)
	return w
}

// Stop stops the worker (SIGTERM: its tasks commit their offsets); its
// directory stays. Safe to call more than once.
func (w *Worker) Stop() {
	w.t.Helper()
	testservice.Run(w.t, nil, "kafka-connect.sh", "stop", w.Dir)
}

// Kill kills the worker with SIGKILL (a crash): offsets not yet flushed
// (every second) are lost, and its connectors replay from the last flushed
// ones when it is started again.
func (w *Worker) Kill() {
	w.t.Helper()
	testservice.Kill(w.t, w.PID)
}

// CreateConnector creates the connector name with config, or replaces its
// config (PUT /connectors/{name}/config).
func (w *Worker) CreateConnector(t testing.TB, name string, config Config) {
	t.Helper()
	body, err := json.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	status, resp := w.do(t, http.MethodPut, "/connectors/"+url.PathEscape(name)+"/config", body)
	if status != http.StatusOK && status != http.StatusCreated {
		t.Fatalf("testconnect: create connector %s: HTTP %d: %s", name, status, resp)
	}
}

// DeleteConnector deletes the connector name (its source offsets stay in
// the offsets topic; Debezium's replication slot stays in Postgres).
func (w *Worker) DeleteConnector(t testing.TB, name string) {
	t.Helper()
	status, resp := w.do(t, http.MethodDelete, "/connectors/"+url.PathEscape(name), nil)
	if status != http.StatusNoContent && status != http.StatusNotFound {
		t.Fatalf("testconnect: delete connector %s: HTTP %d: %s", name, status, resp)
	}
}

// ConnectorStatus is GET /connectors/{name}/status.
type ConnectorStatus struct {
	Name      string `json:"name"`
	Connector struct {
		State string `json:"state"` // UNASSIGNED, RUNNING, PAUSED, STOPPED, FAILED, RESTARTING
		Trace string `json:"trace"`
	} `json:"connector"`
	Tasks []struct {
		ID    int    `json:"id"`
		State string `json:"state"`
		Trace string `json:"trace"`
	} `json:"tasks"`
}

// Status returns the connector's status; ok is false while the worker
// does not know the connector (HTTP 404).
func (w *Worker) Status(t testing.TB, name string) (s ConnectorStatus, ok bool) {
	t.Helper()
	status, resp := w.do(t, http.MethodGet, "/connectors/"+url.PathEscape(name)+"/status", nil)
	if status == http.StatusNotFound {
		return s, false
	}
	if status != http.StatusOK {
		t.Fatalf("testconnect: status of %s: HTTP %d: %s", name, status, resp)
	}
	if err := json.Unmarshal(resp, &s); err != nil {
		t.Fatalf("testconnect: status of %s: %v: %s", name, err, resp)
	}
	return s, true
}

// AwaitRunning waits until the connector and at least one task are
// RUNNING and no task is not. A FAILED connector or task fails t at once,
// with its stack trace.
func (w *Worker) AwaitRunning(t testing.TB, name string, timeout time.Duration) {
	t.Helper()
	var last ConnectorStatus
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		s, ok := w.Status(t, name)
		if !ok {
			continue
		}
		last = s
		if s.Connector.State == "FAILED" {
			t.Fatalf("testconnect: connector %s FAILED:\n%s", name, s.Connector.Trace)
		}
		running := s.Connector.State == "RUNNING" && len(s.Tasks) > 0
		for _, task := range s.Tasks {
			if task.State == "FAILED" {
				t.Fatalf("testconnect: task %d of %s FAILED:\n%s", task.ID, name, task.Trace)
			}
			running = running && task.State == "RUNNING"
		}
		if running {
			return
		}
	}
	t.Fatalf("testconnect: connector %s not RUNNING after %v: %+v", name, timeout, last)
}

// AwaitStreaming waits until the Debezium connector name runs, its
// snapshot is done and its task streams changes: this run's worker log has
// the task's "Processing messages" line (PostgresStreamingChangeEventSource,
// once the replication stream is open; Debezium's coordinator starts
// streaming only after the snapshot, or after skipping it). Changes
// committed after it returns reach Kafka as streamed events (op c/u/d),
// never as snapshot reads (op r). A FAILED task fails t at once.
func (w *Worker) AwaitStreaming(t testing.TB, name string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	w.AwaitRunning(t, name, timeout)
	// Kafka Connect's MDC connector.context, in the log pattern of
	// scripts/kafka-connect.sh.
	line := []byte("[" + name + "|task-0] Processing messages")
	for ; time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		log, err := os.ReadFile(filepath.Join(w.Dir, "connect.log"))
		if err != nil {
			t.Fatalf("testconnect: %v", err)
		}
		if bytes.Contains(log, line) {
			return
		}
		s, _ := w.Status(t, name)
		for _, task := range s.Tasks {
			if task.State == "FAILED" {
				t.Fatalf("testconnect: task %d of %s FAILED:\n%s", task.ID, name, task.Trace)
			}
		}
	}
	t.Fatalf("testconnect: connector %s did not finish its snapshot and start streaming within %v (log %s)",
		name, timeout, filepath.Join(w.Dir, "connect.log"))
}

// LogErrors returns the ERROR lines of this run's worker log, each with the
// line after it (an exception's message), for a failing test to show.
func (w *Worker) LogErrors(t testing.TB) string {
	t.Helper()
	log, err := os.ReadFile(filepath.Join(w.Dir, "connect.log"))
	if err != nil {
		t.Fatalf("testconnect: %v", err)
	}
	var out []string
	lines := strings.Split(string(log), "\n")
	for i, l := range lines {
		if strings.Contains(l, "] ERROR ") {
			out = append(out, l)
			if i+1 < len(lines) {
				out = append(out, "  "+lines[i+1])
			}
		}
	}
	return strings.Join(out, "\n")
}

func (w *Worker) do(t testing.TB, method, path string, body []byte) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, w.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("testconnect: %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("testconnect: %s %s: %v", method, path, err)
	}
	return resp.StatusCode, bytes.TrimSpace(b)
}

// apicurioURL is the Apicurio native API (/apis/registry/v2) of the
// registry whose Confluent-compatible root is ccompat
// (http://host:port/apis/ccompat/v7, as testkafka.Registry.URL).
func apicurioURL(ccompat string) string {
	root, ok := strings.CutSuffix(strings.TrimRight(ccompat, "/"), "/apis/ccompat/v7")
	if !ok {
		panic(fmt.Sprintf("testconnect: %q is not an Apicurio ccompat v7 URL", ccompat))
	}
	return root + "/apis/registry/v2"
}
