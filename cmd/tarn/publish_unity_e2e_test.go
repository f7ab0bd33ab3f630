package main_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	hamba "github.com/hamba/avro/v2"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	avroenc "github.com/tarnhq/tarn/internal/produce"
	"github.com/tarnhq/tarn/internal/testenv"
	"github.com/tarnhq/tarn/internal/testkafka"
	"github.com/tarnhq/tarn/internal/testpython"
	"github.com/tarnhq/tarn/internal/testunity"
	"github.com/tarnhq/tarn/publish"
)

// Avro writer schemas of the unity E2E topic: v2 adds an optional field
// (the table gains a column).
const (
	unityTopic    = "uflights"
	unitySchemaV1 = `{"type":"record","name":"flight","fields":[{"name":"id","type":"long"},{"name":"origin","type":"string"}]}`
	unitySchemaV2 = `{"type":"record","name":"flight","fields":[{"name":"id","type":"long"},{"name":"origin","type":"string"},{"name":"gate","type":["null","int"],"default":null}]}`
)

// TestE2EUnityTarget is issue 17's unity target for a live topic table:
// against a real Kafka broker and schema registry and the real `tarn
// serve` binary, a topic enabled with "delta": true is published to the
// Unity API stand-in (internal/testunity: the Unity Catalog OSS server
// cannot be had here; see its package doc) with a bearer token:
//
//  1. after each of a stream of produced batches, the table's status is
//     published at Tarn's current metadata and the Unity table is the
//     EXTERNAL DELTA table at the Delta root with the table's columns;
//     Unity's own Python client (unitycatalog-client) lists it with its
//     columns and location, and delta-rs reads, at that location, the
//     same rows as pyiceberg through Tarn;
//  2. a new schema version with an added field reaches Unity's columns
//     and delta-rs's rows;
//  3. with Unity down, a commit shows as failing with the error; once it
//     is back the table catches up and no error is left;
//  4. a drop of the table removes it from Unity.
//
// Runs only with TARN_E2E=1 (scripts/test sets it).
func TestE2EUnityTarget(t *testing.T) {
	testenv.E2E(t, "a real Kafka broker and schema registry (internal/testkafka)")
	python := unityPython(t)
	b, reg := testkafka.StartBroker(t), testkafka.StartRegistry(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	uc := testunity.Start(t, "uc-token-e2e")
	uc.CreateCatalog("lake")
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Bootstrap))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	created, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, unityTopic)
	require.NoError(t, err)
	require.NoError(t, created.Err)
	rc := reg.Client(t)
	encoder := func(subject, schema string) *avroenc.Avro {
		// The registry's store times out under a loaded machine
		// ("acquisition timeout"): a failed registration is tried again.
		var ss sr.SubjectSchema
		var err error
		for try := 0; try < 5; try++ {
			if ss, err = rc.CreateSchema(ctx, subject, sr.Schema{Schema: schema, Type: sr.TypeAvro}); err == nil {
				break
			}
			t.Logf("register the schema (try %d): %v", try+1, err)
		}
		require.NoError(t, err)
		enc, err := avroenc.NewAvro(hamba.MustParse(schema), ss.ID)
		require.NoError(t, err)
		return enc
	}
	produced := 0
	produceRows := func(enc *avroenc.Avro, n int, gate bool) {
		var recs []*kgo.Record
		for range n {
			row := avroenc.Row{"id": json.Number(fmt.Sprint(produced)), "origin": fmt.Sprintf("O%d", produced%7)}
			if gate {
				row["gate"] = json.Number(fmt.Sprint(produced % 40))
			}
			v, err := enc.Encode(row)
			require.NoError(t, err)
			recs = append(recs, &kgo.Record{Topic: unityTopic, Value: v})
			produced++
		}
		require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr())
	}

	v1 := encoder(unityTopic+"-value", unitySchemaV1) // the topic is enabled with its schema registered
	// v2 is registered now, under a subject of its own: Apicurio's store
	// times out ("acquisition timeout") on a second version of the
	// topic's subject on this machine. Records carry the schema id, so
	// Tarn meets v2 with the first record written with it.
	v2 := encoder(unityTopic+"-evolved-value", unitySchemaV2)
	targets := fmt.Sprintf(`[{"name":"uc","type":"unity","uri":%q,"token":%q,"catalog":"lake"}]`, uc.URI, uc.Token)
	args := []string{"--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--kafka-brokers", b.Bootstrap,
		"--schema-registry-url", reg.URL, "--publish", targets}
	tarn := startTarn(t, cleanEnv(), args...)
	mustCall(t, http.MethodPost, tarn.URL+"/management/v1/topics", map[string]any{
		"topic": unityTopic, "table": "air.uflights", "target-lag-ms": 500, "delta": true,
	}, http.StatusCreated)

	const full = "lake.air.uflights"
	status := func() publish.TableStatus {
		var st publish.Status
		require.NoError(t, json.Unmarshal(mustCall(t, http.MethodGet, tarn.URL+"/management/v1/publish", nil, http.StatusOK), &st))
		for _, ts := range st.Targets {
			for _, s := range ts.Tables {
				if s.Table == "air.uflights" {
					return s
				}
			}
		}
		return publish.TableStatus{}
	}
	location := func() (string, map[string]string) {
		var lt struct {
			MetadataLocation string `json:"metadata-location"`
			Metadata         struct {
				Properties map[string]string `json:"properties"`
			} `json:"metadata"`
		}
		require.NoError(t, json.Unmarshal(mustCall(t, http.MethodGet, tarn.URL+"/v1/namespaces/air/tables/uflights", nil, http.StatusOK), &lt))
		return lt.MetadataLocation, lt.Metadata.Properties
	}
	// published waits until the status is published at the head and the
	// Unity table lists cols.
	published := func(when string, cols ...string) *testunity.Table {
		t.Helper()
		var got *testunity.Table
		require.Eventually(t, func() bool {
			loc, _ := location()
			st := status()
			got = uc.Table(full)
			return st.State == publish.StatePublished && st.MetadataLocation == loc && got != nil && len(got.Columns) == len(cols)
		}, 60*time.Second, 100*time.Millisecond, "%s: not published: %+v, unity %+v\n%s", when, status(), uc.Table(full), tarn.Stderr())
		var names []string
		for _, c := range got.Columns {
			names = append(names, c.Name)
		}
		require.ElementsMatch(t, cols, names, when)
		_, props := location()
		require.Equal(t, props["tarn.delta.location"], got.StorageLocation, when)
		require.Equal(t, "EXTERNAL", got.TableType, when)
		require.Equal(t, "DELTA", got.DataSourceFormat, when)
		require.Empty(t, status().Error, when)
		return got
	}

	// 1. A stream of commits.
	v1cols := []string{"id", "origin", "_kafka"}
	for i := range 4 {
		produceRows(v1, 25, false)
		waitTableRows(t, tarn, "air", "uflights", int64(produced))
		published(fmt.Sprintf("batch %d", i), v1cols...)
	}
	read := readUnity(t, python, uc, full, tarn.URL, int64(produced))
	require.ElementsMatch(t, []string{full}, read.Unity.Listed)
	require.Equal(t, "EXTERNAL", read.Unity.TableType)
	require.Equal(t, "DELTA", read.Unity.DataSourceFormat)
	require.Contains(t, read.columns(), "id LONG bigint false")
	require.Contains(t, read.columns(), "origin STRING string false")
	require.Equal(t, map[string]any{"id": 42.0, "origin": "O0"}, read.Delta.Rows[42])

	// 2. Schema evolution: a field added by the producer's new schema.
	produceRows(v2, 25, true)
	waitTableRows(t, tarn, "air", "uflights", int64(produced))
	published("after the new field", "id", "origin", "_kafka", "gate")
	read = readUnity(t, python, uc, full, tarn.URL, int64(produced))
	require.Contains(t, read.columns(), "gate INT int true")
	require.Equal(t, map[string]any{"id": 110.0, "origin": "O5", "gate": 30.0}, read.Delta.Rows[110])
	require.Nil(t, read.Delta.Rows[0]["gate"])

	// 3. Unity down, then back.
	uc.Stop()
	produceRows(v2, 25, true)
	waitTableRows(t, tarn, "air", "uflights", int64(produced))
	require.Eventually(t, func() bool {
		st := status()
		return st.State == publish.StateFailing && strings.Contains(st.Error, "connection refused")
	}, 60*time.Second, 100*time.Millisecond, "no failing status while Unity is down: %+v", status())
	uc.Restart(t)
	published("after Unity came back", "id", "origin", "_kafka", "gate")
	readUnity(t, python, uc, full, tarn.URL, int64(produced))

	// 4. Drop: the topic lets go of its table, the table is dropped.
	mustCall(t, http.MethodDelete, tarn.URL+"/management/v1/topics/"+unityTopic, nil, http.StatusNoContent)
	mustCall(t, http.MethodDelete, tarn.URL+"/v1/namespaces/air/tables/uflights", nil, http.StatusNoContent)
	require.Eventually(t, func() bool { return uc.Table(full) == nil }, 60*time.Second, 100*time.Millisecond,
		"the dropped table stayed in Unity: %+v\n%s", uc.Table(full), tarn.Stderr())
}

// unityRead is scripts/read-unity.py's answer.
type unityRead struct {
	Unity struct {
		Listed           []string `json:"listed"`
		TableType        string   `json:"table_type"`
		DataSourceFormat string   `json:"data_source_format"`
		StorageLocation  string   `json:"storage_location"`
		Columns          []struct {
			Name     string `json:"name"`
			TypeName string `json:"type_name"`
			TypeText string `json:"type_text"`
			Nullable bool   `json:"nullable"`
		} `json:"columns"`
	} `json:"unity"`
	Delta struct {
		Version int64            `json:"version"`
		Rows    []map[string]any `json:"rows"`
	} `json:"delta"`
	Tarn struct {
		Rows []map[string]any `json:"rows"`
	} `json:"tarn"`
}

func (r unityRead) columns() []string {
	var out []string
	for _, c := range r.Unity.Columns {
		out = append(out, fmt.Sprintf("%s %s %s %v", c.Name, c.TypeName, c.TypeText, c.Nullable))
	}
	return out
}

// readUnity runs scripts/read-unity.py against the stand-in and Tarn: the
// Unity client's view of full, delta-rs's rows at the location Unity
// returned, pyiceberg's through Tarn; it checks that delta-rs reads n
// rows, the same as pyiceberg, and that the location is the table's.
func readUnity(t *testing.T, python string, uc *testunity.Server, full, tarnURI string, n int64) unityRead {
	t.Helper()
	ns, name, _ := strings.Cut(strings.TrimPrefix(full, "lake."), ".")
	var got unityRead
	// The Delta log lags the Iceberg commit by one publish: wait for it.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		cmd := exec.Command(python, testpython.Script("read-unity.py"), uc.URI, uc.Token, full, tarnURI, ns+"."+name, "id")
		out, err := cmd.Output()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("read-unity.py: %v\n%s", err, ee.Stderr)
		}
		require.NoError(t, err)
		got = unityRead{}
		require.NoError(t, json.Unmarshal(out, &got), "%s", out)
		if int64(len(got.Delta.Rows)) == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("delta-rs read %d rows at %s after 60 s, want %d", len(got.Delta.Rows), got.Unity.StorageLocation, n)
		}
	}
	require.Len(t, got.Tarn.Rows, int(n))
	require.Equal(t, got.Tarn.Rows, got.Delta.Rows, "delta-rs through Unity's location and pyiceberg through Tarn")
	require.Equal(t, uc.Table(full).StorageLocation, got.Unity.StorageLocation)
	return got
}

// unityPython is the venv of scripts/requirements-unity.txt:
// unitycatalog-client, deltalake and pyiceberg.
func unityPython(t *testing.T) string {
	t.Helper()
	t.Setenv("TARN_VENV", filepath.Join(os.Getenv("HOME"), ".cache", "tarn", "venv-unity"))
	t.Setenv("TARN_REQUIREMENTS", testpython.Script("requirements-unity.txt"))
	t.Setenv("TARN_VENV_PROBE", "import unitycatalog.client, deltalake, pyiceberg, pyarrow")
	return testpython.Python(t)
}
