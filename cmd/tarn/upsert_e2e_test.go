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
	"slices"
	"strconv"
	"testing"
	"time"

	hamba "github.com/hamba/avro/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tarnhq/tarn/internal/testkafka"
)

const (
	upsertTopic     = "customers"
	upsertKeys      = 2000
	upsertChanges   = 20000
	upsertKeySchema = `{"type":"record","name":"CustomerKey","fields":[{"name":"id","type":"long"}]}`
	upsertValSchema = `{"type":"record","name":"Customer","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"},{"name":"v","type":"long"}]}`
)

// TestE2EUpsert is issue 15's "upsert mode from a compacted topic (null
// value deletes)" end to end: a compacted topic on a real Kafka broker
// with Avro keys and values through a real registry (subjects
// customers-key and customers-value), 20,000 random changes (a third of
// them tombstones) on 2,000 keys, enabled in mode upsert through `tarn
// serve`'s management API; `tarn serve` is killed with SIGKILL once while
// it ingests and restarted. At the end pyiceberg and DuckDB both read
// exactly the rows of an in-memory model of the changes, one per live
// key. Runs only with TARN_E2E=1.
func TestE2EUpsert(t *testing.T) {
	if os.Getenv("TARN_E2E") != "1" {
		t.Skip("set TARN_E2E=1 to run against a real Kafka broker and schema registry (internal/testkafka)")
	}
	python := setupPython(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	b := testkafka.StartBroker(t)
	reg := testkafka.StartRegistry(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Bootstrap), kgo.DefaultProduceTopic(upsertTopic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	compact := "compact"
	created, err := kadm.NewClient(cl).CreateTopic(ctx, 3, 1, map[string]*string{"cleanup.policy": &compact}, upsertTopic)
	require.NoError(t, err)
	require.NoError(t, created.Err)

	// A fresh registry on a loaded machine answers its first requests slowly.
	rc, err := sr.NewClient(sr.URLs(reg.URL), sr.HTTPClient(&http.Client{Timeout: time.Minute}))
	require.NoError(t, err)
	keySS, err := rc.CreateSchema(ctx, upsertTopic+"-key", sr.Schema{Schema: upsertKeySchema})
	require.NoError(t, err)
	valSS, err := rc.CreateSchema(ctx, upsertTopic+"-value", sr.Schema{Schema: upsertValSchema})
	require.NoError(t, err)
	keySc, valSc := hamba.MustParse(upsertKeySchema), hamba.MustParse(upsertValSchema)
	wire := func(id int, sc hamba.Schema, v any) []byte {
		out, err := new(sr.ConfluentHeader).AppendEncode(nil, id, nil)
		require.NoError(t, err)
		body, err := hamba.Marshal(sc, v)
		require.NoError(t, err)
		return append(out, body...)
	}

	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	type row struct {
		name string
		v    int64
	}
	model := map[int64]row{}
	recs := make([]*kgo.Record, upsertChanges)
	for i := range recs {
		id := int64(rng.IntN(upsertKeys))
		r := &kgo.Record{Partition: int32(id % 3), Key: wire(keySS.ID, keySc, map[string]any{"id": id})}
		if rng.IntN(3) == 0 {
			delete(model, id)
		} else {
			v := row{name: "c" + strconv.FormatInt(id, 10) + "-" + strconv.Itoa(i), v: int64(i)}
			r.Value = wire(valSS.ID, valSc, map[string]any{"id": id, "name": v.name, "v": v.v})
			model[id] = v
		}
		recs[i] = r
	}
	half := upsertChanges / 2
	require.NoError(t, cl.ProduceSync(ctx, recs[:half]...).FirstErr())

	data := t.TempDir()
	env := cleanEnv()
	args := []string{"--listen", "127.0.0.1:0", "--data-dir", data,
		"--kafka-brokers", b.Bootstrap, "--schema-registry-url", reg.URL}
	tarn := startTarn(t, env, args...)
	mustCall(t, http.MethodPost, tarn.URL+"/management/v1/topics", map[string]any{
		"topic": upsertTopic, "table": "crm.customers", "mode": "upsert", "target-lag-ms": 1000,
		"target-file-size-bytes": 64 << 10,
	}, http.StatusCreated)
	time.Sleep(time.Duration(1500+rand.IntN(2000)) * time.Millisecond)
	tarn.kill(t)
	tarn = startTarn(t, env, args...)
	require.NoError(t, cl.ProduceSync(ctx, recs[half:]...).FirstErr())

	// Wait until the table's offsets are the topic's end offsets.
	st := awaitTopicEnd(t, ctx, cl, tarn.URL, upsertTopic, 3*time.Minute)
	require.NotNil(t, st.Upsert)
	assert.Equal(t, int64(len(model)), st.Upsert.IndexKeys, "key index keys")

	// Both engines read exactly the model.
	wantRows := make([][]any, 0, len(model))
	for _, id := range slices.Sorted(func(yield func(int64) bool) {
		for id := range model {
			if !yield(id) {
				return
			}
		}
	}) {
		wantRows = append(wantRows, []any{float64(id), model[id].name, float64(model[id].v)})
	}
	got := readTableRows(t, python, tarn.URL, "crm.customers", "id", "name", "v")
	for _, engine := range []string{"pyiceberg", "duckdb"} {
		require.Len(t, got[engine], len(wantRows), engine)
		assert.Equal(t, wantRows, got[engine], engine)
	}
	t.Logf("pyiceberg and DuckDB each read the %d live keys of %d changes exactly", len(wantRows), upsertChanges)
}

// keyedStatus is what the upsert and debezium end-to-end tests read of
// GET /management/v1/topics/{topic}.
type keyedStatus struct {
	State   string           `json:"state"`
	Reason  string           `json:"reason"`
	Offsets map[string]int64 `json:"offsets"`
	Errors  map[string]int64 `json:"errors"`
	Upsert  *struct {
		IndexKeys int64 `json:"index-keys"`
		Truncates int64 `json:"truncates"`
	} `json:"upsert"`
}

// awaitTopicEnd waits up to timeout until the status of topic on the
// tarn serve at url shows the topic's end offsets (listed now, through
// cl) as the table's, and returns that status.
func awaitTopicEnd(t *testing.T, ctx context.Context, cl *kgo.Client, url, topic string, timeout time.Duration) keyedStatus {
	t.Helper()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	require.NoError(t, err)
	want := map[string]int64{}
	ends.Each(func(o kadm.ListedOffset) { want[strconv.Itoa(int(o.Partition))] = o.Offset })
	var st keyedStatus
	deadline := time.Now().Add(timeout)
	for {
		require.NoError(t, json.Unmarshal(mustCall(t, http.MethodGet, url+"/management/v1/topics/"+topic, nil, http.StatusOK), &st))
		if fmt.Sprint(st.Offsets) == fmt.Sprint(want) {
			return st
		}
		require.True(t, time.Now().Before(deadline), "offsets %v, want %v; state %s %s", st.Offsets, want, st.State, st.Reason)
		time.Sleep(250 * time.Millisecond)
	}
}

// readTableRows reads every row of columns cols of table ident through
// the tarn serve at url with pyiceberg and DuckDB (scripts/read-table.py
// --rows): engine → rows sorted, values as JSON decodes them.
func readTableRows(t *testing.T, python, url, ident string, cols ...string) map[string][][]any {
	t.Helper()
	args := append([]string{filepath.Join("..", "..", "scripts", "read-table.py"), url, ident, "--rows"}, cols...)
	out, err := exec.Command(python, args...).Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		t.Fatalf("read-table.py: %v\n%s", err, ee.Stderr)
	}
	require.NoError(t, err)
	var got map[string][][]any
	require.NoError(t, json.Unmarshal(out, &got), "%.2000s", out)
	return got
}
