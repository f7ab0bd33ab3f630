package main_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/tarnhq/tarn/ingest/protobuf"
	"github.com/tarnhq/tarn/internal/demo"
	"github.com/tarnhq/tarn/internal/testenv"
	"github.com/tarnhq/tarn/internal/testkafka"
)

const (
	// ingestRows is answers.json's first_200000 of flights-3m.parquet.
	ingestRows = 200_000
	// ingestRate is rows produced per second while Tarn is killed: the
	// production takes about 40 s, long enough for ingestKills kills.
	ingestRate = 5_000
	// ingestKills is the least number of kill -9 of `tarn serve` while
	// the topic is being produced.
	ingestKills = 5
	// ingestMore is the rows produced in each of the SIGTERM phases.
	ingestMore = 10_000
	// ingestTable is the table the topic is materialized into.
	ingestNamespace, ingestName = "air", "flights"
	ingestWait                  = 3 * time.Minute
)

// TestE2EIngestCrash is issue 3's "exactly once under crashes" and
// "SIGTERM during ingest", against a real Kafka 4.4 broker, a real
// Apicurio registry and the real `tarn serve` binary:
//
//  1. the first 200,000 rows of ../shared/data/flights-3m.parquet are
//     produced as Avro at 5,000 rows/s to a 3-partition topic enabled with
//     target-lag-ms 1000 through the management API, while `tarn serve`
//     is killed with SIGKILL at random moments (at least 5 times) and
//     restarted each time;
//  2. the table then equals the topic: pyiceberg and DuckDB both read
//     exactly answers.json's first_200000 (rows, sum(delay),
//     sum(distance)) and no (_kafka.partition, _kafka.offset) twice;
//  3. with target-lag-ms 60000, 10,000 more rows are produced and
//     fetched, then `tarn serve` gets SIGTERM: a restarted Tarn shows them
//     committed at once (the restarted pipeline, with nothing new to read
//     and a 60 s lag, could not have committed them);
//  4. 10,000 more rows at target-lag-ms 1000: the table holds all 220,000,
//     no gap, no duplicate (pyiceberg and DuckDB again).
//
// Runs only with TARN_E2E=1 (scripts/test sets it).
func TestE2EIngestCrash(t *testing.T) {
	if os.Getenv("TARN_E2E") != "1" {
		t.Skip("set TARN_E2E=1 to run against a real Kafka broker and schema registry (internal/testkafka)")
	}
	dataDir := filepath.Join("..", "..", "..", "shared", "data")
	f, err := os.Open(filepath.Join(dataDir, "flights-3m.parquet"))
	if err != nil {
		testenv.Missing(t, "shared data not found beside the repository (%v); CI checks it out as ../shared/data", err)
	}
	rows, err := demo.ReadFlights(f, ingestRows+2*ingestMore)
	f.Close()
	require.NoError(t, err)
	want := loadAnswers(t, filepath.Join(dataDir, "answers.json"))
	require.Equal(t, want, demo.TotalsOf(rows[:ingestRows]), "the parquet read agrees with answers.json")
	python := setupPython(t)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	b, reg, cl, values := flightsTopic(ctx, t, rows)

	data := t.TempDir()
	env := cleanEnv()
	args := []string{"--listen", "127.0.0.1:0", "--data-dir", data,
		"--kafka-brokers", b.Bootstrap, "--schema-registry-url", reg.URL}
	tarn := startTarn(t, env, args...)
	mustCall(t, http.MethodPost, tarn.URL+"/management/v1/topics", map[string]any{
		"topic": demo.Topic, "table": ingestNamespace + "." + ingestName, "target-lag-ms": 1000,
	}, http.StatusCreated)

	// 1. Produce while killing.
	prod := &demo.Producer{Client: cl, Values: values[:ingestRows], Rate: ingestRate, Limit: ingestRows}
	produced := make(chan error, 1)
	go func() { produced <- prod.Run(ctx) }()
	kills := 0
	var prodErr error
	for done := false; !done || kills < ingestKills; {
		time.Sleep(time.Duration(1000+rand.IntN(4000)) * time.Millisecond)
		select {
		case prodErr = <-produced:
			done = true
		default:
		}
		tarn.kill(t)
		kills++
		total := stoppedRows(t, data)
		t.Logf("kill %d after %d rows produced; the table had %d rows", kills, prod.Produced(), total)
		require.LessOrEqual(t, total, prod.Produced(), "more rows than produced: a duplicate")
		tarn = startTarn(t, env, args...)
	}
	require.NoError(t, prodErr)
	require.EqualValues(t, ingestRows, prod.Produced())
	require.GreaterOrEqual(t, kills, ingestKills)

	// 2. The table equals the topic.
	waitRows(t, tarn, ingestRows)
	readWithEngines(t, python, tarn, map[string]int64{"rows": want.Rows, "sum_delay": want.SumDelay, "sum_distance": want.SumDistance})
	st := topicStatus(t, tarn)
	assert.Equal(t, "syncing", st["state"], "status: %v", st)

	// 3. SIGTERM commits what was fetched.
	mustCall(t, http.MethodPatch, tarn.URL+"/management/v1/topics/"+demo.Topic, map[string]any{"target-lag-ms": 60000}, http.StatusOK)
	produce(t, ctx, cl, values[ingestRows:ingestRows+ingestMore], ingestRows)
	time.Sleep(5 * time.Second) // fetched by now: the broker is local
	require.Equal(t, int64(ingestRows), currentRows(t, tarn), "nothing committed before the 60 s lag")
	require.NoError(t, tarn.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, tarn.wait(t, time.Minute), "exit code after SIGTERM")
	tarn = startTarn(t, env, args...)
	require.Equal(t, int64(ingestRows+ingestMore), currentRows(t, tarn), "rows fetched before SIGTERM were committed before exit")

	// 4. And ingest continues with no gap and no duplicate.
	mustCall(t, http.MethodPatch, tarn.URL+"/management/v1/topics/"+demo.Topic, map[string]any{"target-lag-ms": 1000}, http.StatusOK)
	produce(t, ctx, cl, values[ingestRows+ingestMore:], ingestRows+ingestMore)
	all := demo.TotalsOf(rows)
	waitRows(t, tarn, all.Rows)
	readWithEngines(t, python, tarn, map[string]int64{"rows": all.Rows, "sum_delay": all.SumDelay, "sum_distance": all.SumDistance})
}

// TestE2EIngestFormats is issue 3's "the same for Protobuf and JSON
// Schema encodings": the first 200,000 rows of flights-3m.parquet
// produced to a real Kafka broker as Protobuf (ingest/protobuf's
// testdata/flights.proto) and as JSON Schema (ingest/jsonschema's
// testdata/flights.schema.json), both registered in a real Apicurio
// registry, enabled with format auto (resolved from the subjects) through
// `tarn serve`'s management API, then read with pyiceberg and DuckDB:
// answers.json's first_200000, no duplicated Kafka record.
// Runs only with TARN_E2E=1.
func TestE2EIngestFormats(t *testing.T) {
	if os.Getenv("TARN_E2E") != "1" {
		t.Skip("set TARN_E2E=1 to run against a real Kafka broker and schema registry (internal/testkafka)")
	}
	dataDir := filepath.Join("..", "..", "..", "shared", "data")
	f, err := os.Open(filepath.Join(dataDir, "flights-3m.parquet"))
	if err != nil {
		testenv.Missing(t, "shared data not found beside the repository (%v); CI checks it out as ../shared/data", err)
	}
	rows, err := demo.ReadFlights(f, ingestRows)
	f.Close()
	require.NoError(t, err)
	want := loadAnswers(t, filepath.Join(dataDir, "answers.json"))
	python := setupPython(t)
	protoText, err := os.ReadFile(filepath.Join("..", "..", "ingest", "protobuf", "testdata", "flights.proto"))
	require.NoError(t, err)
	jsText, err := os.ReadFile(filepath.Join("..", "..", "ingest", "jsonschema", "testdata", "flights.schema.json"))
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	b := testkafka.StartBroker(t)
	reg := testkafka.StartRegistry(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Bootstrap), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	rc, err := sr.NewClient(sr.URLs(reg.URL))
	require.NoError(t, err)
	tarn := startTarn(t, cleanEnv(), "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(),
		"--kafka-brokers", b.Bootstrap, "--schema-registry-url", reg.URL)

	var h sr.ConfluentHeader
	formats := []struct {
		topic  string
		schema sr.Schema
		encode func(id int, f demo.Flight) []byte
	}{
		{"flights-protobuf", sr.Schema{Type: sr.TypeProtobuf, Schema: string(protoText)}, nil},
		{"flights-json", sr.Schema{Type: sr.TypeJSON, Schema: string(jsText)}, func(id int, f demo.Flight) []byte {
			body, err := json.Marshal(map[string]any{"date": time.UnixMicro(f.Date).UTC().Format(time.RFC3339Nano),
				"delay": f.Delay, "distance": f.Distance, "origin": f.Origin, "destination": f.Destination})
			require.NoError(t, err)
			out, err := h.AppendEncode(nil, id, nil)
			require.NoError(t, err)
			return append(out, body...)
		}},
	}
	formats[0].encode = protobufFlights(t, string(protoText))
	for _, fm := range formats {
		created, err := kadm.NewClient(cl).CreateTopic(ctx, demo.Partitions, 1, nil, fm.topic)
		require.NoError(t, err)
		require.NoError(t, created.Err)
		ss, err := rc.CreateSchema(ctx, fm.topic+"-value", fm.schema)
		require.NoError(t, err)
		recs := make([]*kgo.Record, len(rows))
		for i, f := range rows {
			recs[i] = &kgo.Record{Topic: fm.topic, Partition: int32(i % demo.Partitions), Value: fm.encode(ss.ID, f)}
		}
		require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr())
		table := strings.ReplaceAll(fm.topic, "-", "_")
		mustCall(t, http.MethodPost, tarn.URL+"/management/v1/topics", map[string]any{
			"topic": fm.topic, "table": ingestNamespace + "." + table, "target-lag-ms": 1000,
		}, http.StatusCreated)
	}
	for _, fm := range formats {
		table := strings.ReplaceAll(fm.topic, "-", "_")
		waitTableRows(t, tarn, ingestNamespace, table, ingestRows)
		readTableWithEngines(t, python, tarn, ingestNamespace+"."+table,
			map[string]int64{"rows": want.Rows, "sum_delay": want.SumDelay, "sum_distance": want.SumDistance})
	}
}

// protobufFlights returns an encoder of flights as ingest/protobuf's
// testdata Flight message (date as "YYYY-MM-DD hh:mm:ss" text), in the
// Confluent wire format with message index [0].
func protobufFlights(t *testing.T, text string) func(id int, f demo.Flight) []byte {
	fd, err := protobuf.Compile(context.Background(), text, nil)
	require.NoError(t, err)
	md := fd.Messages().ByName("Flight")
	require.NotNil(t, md)
	var h sr.ConfluentHeader
	return func(id int, f demo.Flight) []byte {
		m := dynamicpb.NewMessage(md)
		m.Set(md.Fields().ByName("date"), protoreflect.ValueOfString(time.UnixMicro(f.Date).UTC().Format(time.DateTime)))
		m.Set(md.Fields().ByName("delay"), protoreflect.ValueOfInt64(f.Delay))
		m.Set(md.Fields().ByName("distance"), protoreflect.ValueOfInt64(f.Distance))
		m.Set(md.Fields().ByName("origin"), protoreflect.ValueOfString(f.Origin))
		m.Set(md.Fields().ByName("destination"), protoreflect.ValueOfString(f.Destination))
		body, err := proto.Marshal(m)
		require.NoError(t, err)
		out, err := h.AppendEncode(nil, id, []int{0})
		require.NoError(t, err)
		return append(out, body...)
	}
}

// produce writes values synchronously, record n (counting from first) to
// partition n % demo.Partitions, as demo.Producer does.
func produce(t *testing.T, ctx context.Context, cl *kgo.Client, values [][]byte, first int) {
	t.Helper()
	recs := make([]*kgo.Record, len(values))
	for i, v := range values {
		recs[i] = &kgo.Record{Topic: demo.Topic, Partition: int32((first + i) % demo.Partitions), Value: v}
	}
	require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr())
}

// waitRows waits until the table's current snapshot counts n rows, and
// fails at once if it counts more.
func waitRows(t *testing.T, tarn *tarnProc, n int64) {
	t.Helper()
	waitTableRows(t, tarn, ingestNamespace, ingestName, n)
}

// waitTableRows is waitRows for table ns.name.
func waitTableRows(t *testing.T, tarn *tarnProc, ns, name string, n int64) {
	t.Helper()
	deadline := time.Now().Add(ingestWait)
	for {
		got := tableRows(t, tarn, ns, name)
		require.LessOrEqual(t, got, n, "more rows than produced: a duplicate")
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the table has %d rows after %v, want %d; status %v", got, ingestWait, n, topicStatus(t, tarn))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// currentRows is the total-records of the table's current snapshot, read
// through loadTable.
func currentRows(t *testing.T, tarn *tarnProc) int64 {
	t.Helper()
	return tableRows(t, tarn, ingestNamespace, ingestName)
}

// tableRows is currentRows of table ns.name.
func tableRows(t *testing.T, tarn *tarnProc, ns, name string) int64 {
	t.Helper()
	b := mustCall(t, http.MethodGet, fmt.Sprintf("%s/v1/namespaces/%s/tables/%s", tarn.URL, ns, name), nil, http.StatusOK)
	var lt struct {
		Metadata json.RawMessage `json:"metadata"`
	}
	require.NoError(t, json.Unmarshal(b, &lt))
	return snapshotRows(t, lt.Metadata)
}

// stoppedRows is currentRows read from the latest metadata file in the
// warehouse of a stopped Tarn (the catalog is down between kill and start).
func stoppedRows(t *testing.T, dataDir string) int64 {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dataDir, "warehouse", ingestNamespace, ingestName+"*", "metadata", "*.metadata.json"))
	require.NoError(t, err)
	var latest string
	var version int
	for _, f := range files {
		v, err := strconv.Atoi(strings.SplitN(filepath.Base(f), "-", 2)[0])
		if err == nil && v >= version {
			latest, version = f, v
		}
	}
	if latest == "" {
		return 0
	}
	b, err := os.ReadFile(latest)
	require.NoError(t, err)
	return snapshotRows(t, b)
}

func snapshotRows(t *testing.T, metadata []byte) int64 {
	t.Helper()
	var md struct {
		Current   *int64 `json:"current-snapshot-id"`
		Snapshots []struct {
			ID      int64             `json:"snapshot-id"`
			Summary map[string]string `json:"summary"`
		} `json:"snapshots"`
	}
	require.NoError(t, json.Unmarshal(metadata, &md))
	if md.Current == nil || *md.Current < 0 {
		return 0
	}
	for _, s := range md.Snapshots {
		if s.ID == *md.Current {
			n, err := strconv.ParseInt(s.Summary["total-records"], 10, 64)
			require.NoError(t, err, "summary %v", s.Summary)
			return n
		}
	}
	t.Fatalf("current snapshot %d not among the snapshots", *md.Current)
	return 0
}

func topicStatus(t *testing.T, tarn *tarnProc) map[string]any {
	t.Helper()
	var st map[string]any
	require.NoError(t, json.Unmarshal(mustCall(t, http.MethodGet, tarn.URL+"/management/v1/topics/"+demo.Topic, nil, http.StatusOK), &st))
	return st
}

// readWithEngines reads the table with pyiceberg and DuckDB
// (scripts/read-table.py) and compares both with want; neither may see a
// duplicated Kafka record.
func readWithEngines(t *testing.T, python string, tarn *tarnProc, want map[string]int64) {
	t.Helper()
	readTableWithEngines(t, python, tarn, ingestNamespace+"."+ingestName, want)
}

// readTableWithEngines is readWithEngines for table ident (ns.name).
func readTableWithEngines(t *testing.T, python string, tarn *tarnProc, ident string, want map[string]int64) {
	t.Helper()
	cmd := exec.Command(python, filepath.Join("..", "..", "scripts", "read-table.py"), tarn.URL,
		ident, "delay", "distance")
	out, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		t.Fatalf("read-table.py: %v\n%s", err, ee.Stderr)
	}
	require.NoError(t, err)
	var got map[string]map[string]int64
	require.NoError(t, json.Unmarshal(out, &got), "%s", out)
	for _, engine := range []string{"pyiceberg", "duckdb"} {
		w := map[string]int64{"duplicates": 0}
		for k, v := range want {
			w[k] = v
		}
		assert.Equal(t, w, got[engine], engine)
	}
	t.Logf("pyiceberg and DuckDB read %v", got)
}

// setupPython returns the venv python of scripts/setup-python.sh
// (pyiceberg, DuckDB and its iceberg extension; cached in $HOME/.cache/tarn).
func setupPython(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(filepath.Join("..", "..", "scripts", "setup-python.sh"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	require.NoError(t, err, "scripts/setup-python.sh")
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return filepath.Join(lines[len(lines)-1], "bin", "python")
}

// loadAnswers reads answers.json's flights-3m.parquet first_200000.
func loadAnswers(t *testing.T, path string) demo.Totals {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var all map[string]map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &all))
	var a demo.Totals
	require.NoError(t, json.Unmarshal(all["flights-3m.parquet"]["first_200000"], &a))
	require.Equal(t, int64(ingestRows), a.Rows)
	return a
}

// flightsTopic starts a real broker and registry (testkafka), creates the
// demo's topic (demo.Partitions partitions) and registers its Avro schema,
// and returns them with a producing client (manual partitioner) and rows
// encoded in the registry's wire format.
func flightsTopic(ctx context.Context, t *testing.T, rows []demo.Flight) (*testkafka.Broker, *testkafka.Registry, *kgo.Client, [][]byte) {
	t.Helper()
	b := testkafka.StartBroker(t)
	reg := testkafka.StartRegistry(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Bootstrap), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	created, err := kadm.NewClient(cl).CreateTopic(ctx, demo.Partitions, 1, nil, demo.Topic)
	require.NoError(t, err)
	require.NoError(t, created.Err)
	// A minute for the registry's first answer: a freshly started
	// Apicurio on a loaded machine took longer than the client's default.
	rc, err := sr.NewClient(sr.URLs(reg.URL), sr.HTTPClient(&http.Client{Timeout: time.Minute}))
	require.NoError(t, err)
	ss, err := rc.CreateSchema(ctx, demo.Subject, sr.Schema{Schema: demo.Schema, Type: sr.TypeAvro})
	require.NoError(t, err)
	values, err := demo.Encode(rows, ss.ID)
	require.NoError(t, err)
	return b, reg, cl, values
}
