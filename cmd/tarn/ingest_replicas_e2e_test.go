package main_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tarnhq/tarn/internal/testenv"
	"github.com/tarnhq/tarn/internal/testkafka"
	"github.com/tarnhq/tarn/internal/testpg"
)

const (
	sharedTopic      = "shared-ingest"
	sharedPartitions = 12
	sharedLagMs      = 1000
	// sharedRate is records per second, produced in steps of 20 ms.
	sharedRate = 500
	// sharedEvents are the replica events (joins, kill -9, restarts,
	// SIGTERM drains, a pause past the group session) of the test;
	// sharedEventsCI under CI=true, to keep the test near 3 minutes.
	sharedEvents, sharedEventsCI = 20, 12
)

// TestE2EIngestReplicas (issue 18 item 4): a 12-partition topic,
// produced at a steady rate, is materialized by `tarn serve` replicas on
// one PostgreSQL store and one warehouse, sharing its partitions through
// a Kafka consumer group. Replicas are added (1 → 3), killed with
// SIGKILL, restarted, drained with SIGTERM, and one is paused (SIGSTOP)
// past its group session and resumed: a zombie, whose partitions the
// group gave to the others and whose batch the claims fence must refuse.
// At the end the table holds every produced record exactly once: its
// row count and the sum of the values equal the producer's, and no
// (_kafka.partition, _kafka.offset) appears twice. The ingest snapshots
// per minute are measured with 1 and with 3 replicas and held to the
// per-replica bound (one per replica per target lag). 20 events, 12 under
// CI=true. Needs TARN_E2E=1.
func TestE2EIngestReplicas(t *testing.T) {
	testenv.E2E(t, "a real PostgreSQL and Kafka broker")
	pg := testpg.StartPostgres(t)
	b := testkafka.StartBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	wantEvents, window := sharedEvents, 20*time.Second
	if os.Getenv("CI") == "true" {
		wantEvents, window = sharedEventsCI, 15*time.Second
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Bootstrap), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	_, err = kadm.NewClient(cl).CreateTopic(ctx, sharedPartitions, 1, nil, sharedTopic)
	require.NoError(t, err)

	wh := "file://" + filepath.Join(t.TempDir(), "warehouse")
	env := cleanEnv("TARN_STORE=" + pg.URL)
	startReplica := func() *tarnProc {
		return startTarn(t, env, "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--warehouse", wh,
			"--kafka-brokers", b.Bootstrap, "--maintenance-interval", "0")
	}
	var all []*tarnProc // every replica started, for their logs
	start := func() *tarnProc {
		p := startReplica()
		all = append(all, p)
		return p
	}
	live := []*tarnProc{start()}
	mustCall(t, http.MethodPost, live[0].URL+"/management/v1/topics", map[string]any{
		"topic": sharedTopic, "table": "shared.events", "format": "raw", "target-lag-ms": sharedLagMs,
	}, http.StatusCreated)

	// The producer: value n (decimal text) for n = 0, 1, ..., round-robin
	// over the partitions; franz-go's idempotent producer writes each once.
	var produced atomic.Int64
	stopProducing := make(chan struct{})
	var prodWG sync.WaitGroup
	var prodErr error
	prodWG.Go(func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopProducing:
				return
			case <-tick.C:
			}
			recs := make([]*kgo.Record, sharedRate/50)
			for i := range recs {
				recs[i] = &kgo.Record{Topic: sharedTopic, Value: []byte(strconv.FormatInt(produced.Load()+int64(i), 10))}
			}
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				prodErr = err
				return
			}
			produced.Add(int64(len(recs)))
		}
	})

	// Phase 1: one replica; phase 3: three. Each window's ingest
	// snapshots are counted from the table's metadata at the end.
	waitCommitted(t, live[0], 1)
	one0 := time.Now()
	sleepCtx(ctx, window)
	one1 := time.Now()
	live = append(live, start(), start())
	events := 2
	sleepCtx(ctx, 10*time.Second) // the group settles on three members
	three0 := time.Now()
	sleepCtx(ctx, window)
	three1 := time.Now()

	// The events.
	paused := false
	for events < wantEvents {
		i := rng.IntN(len(live))
		switch {
		case len(live) < 3:
			live = append(live, start())
			t.Logf("event %d: started a replica (%d live)", events, len(live))
		case !paused && events >= wantEvents/2:
			// A zombie: paused past its group session (10 s), its
			// partitions go to the others; resumed, it still holds its
			// batch and commits it: the fence refuses it.
			p := live[i]
			require.NoError(t, p.cmd.Process.Signal(syscall.SIGSTOP))
			sleepCtx(ctx, 16*time.Second)
			require.NoError(t, p.cmd.Process.Signal(syscall.SIGCONT))
			paused = true
			t.Logf("event %d: paused replica %s for 16 s", events, p.URL)
		case rng.IntN(2) == 0:
			live[i].kill(t)
			live = slices.Delete(live, i, i+1)
			t.Logf("event %d: kill -9 (%d live)", events, len(live))
		default:
			require.NoError(t, live[i].cmd.Process.Signal(syscall.SIGTERM))
			code := live[i].wait(t, time.Minute)
			assert.Zero(t, code, "SIGTERM exit code\n%s", live[i].Stderr())
			live = slices.Delete(live, i, i+1)
			t.Logf("event %d: SIGTERM drain (%d live)", events, len(live))
		}
		events++
		sleepCtx(ctx, time.Duration(2000+rng.IntN(4000))*time.Millisecond)
	}
	for len(live) < 3 {
		live = append(live, start())
	}
	close(stopProducing)
	prodWG.Wait()
	require.NoError(t, prodErr)
	n := produced.Load()
	t.Logf("%d events; %d records produced", events, n)

	// Every record, exactly once.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got := tableRows(t, live[0], "shared", "events")
		require.LessOrEqual(t, got, n, "more rows than produced: a duplicate")
		if got == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the table has %d rows after 2 min, want %d", got, n)
		}
		time.Sleep(500 * time.Millisecond)
	}
	rows, sum, positions := scanShared(ctx, t, live[0].URL)
	assert.Equal(t, n, rows, "rows")
	assert.Equal(t, n*(n-1)/2, sum, "sum of the values 0..n-1")
	assert.EqualValues(t, n, positions, "distinct (partition, offset)")

	// A zombie's batch was refused by the fence, not committed.
	var refused int
	for _, p := range all {
		refused += strings.Count(p.Stderr(), "batch refused")
	}
	t.Logf("batches refused by the claims fence, all replicas: %d", refused)

	// Snapshots per minute.
	snaps := ingestSnapshots(t, live[0].URL)
	perMin := func(from, to time.Time) float64 {
		c := 0
		for _, ts := range snaps {
			if !ts.Before(from) && ts.Before(to) {
				c++
			}
		}
		return float64(c) / to.Sub(from).Minutes()
	}
	one, three := perMin(one0, one1), perMin(three0, three1)
	t.Logf("ingest snapshots per minute: %.1f with 1 replica, %.1f with 3 (target lag %d ms)", one, three, sharedLagMs)
	bound := 60_000.0 / sharedLagMs
	assert.LessOrEqual(t, one, bound*1.2, "one replica: at most one snapshot per target lag")
	assert.LessOrEqual(t, three, 3*bound*1.2, "three replicas: at most one snapshot per replica per target lag")
}

// sleepCtx sleeps d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// waitCommitted waits until the shared table has at least n rows.
func waitCommitted(t *testing.T, p *tarnProc, n int64) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for tableRowsOrZero(t, p) < n {
		if time.Now().After(deadline) {
			t.Fatalf("no commit within a minute\n%s", p.Stderr())
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func tableRowsOrZero(t *testing.T, p *tarnProc) int64 {
	code, _, err := call(context.Background(), http.DefaultClient, http.MethodGet, p.URL+"/v1/namespaces/shared/tables/events", nil)
	if err != nil || code != http.StatusOK {
		return 0
	}
	return tableRows(t, p, "shared", "events")
}

// scanShared reads the shared table through Tarn's REST catalog
// (iceberg-go) and returns its rows, the sum of its values and the
// number of distinct (_kafka.partition, _kafka.offset).
func scanShared(ctx context.Context, t *testing.T, base string) (rows, sum int64, positions int) {
	t.Helper()
	cat, err := rest.NewCatalog(ctx, "tarn", base)
	require.NoError(t, err)
	tbl, err := cat.LoadTable(ctx, table.Identifier{"shared", "events"})
	require.NoError(t, err)
	_, recs, err := tbl.Scan(table.WithSelectedFields("_kafka", "value")).ToArrowRecords(ctx)
	require.NoError(t, err)
	seen := map[[2]int64]bool{}
	for rec, err := range recs {
		require.NoError(t, err)
		kafka := rec.Column(rec.Schema().FieldIndices("_kafka")[0]).(*array.Struct)
		st := kafka.DataType().(*arrow.StructType)
		pi, _ := st.FieldIdx("partition")
		oi, _ := st.FieldIdx("offset")
		parts, offs := kafka.Field(pi).(*array.Int32), kafka.Field(oi).(*array.Int64)
		vals := rec.Column(rec.Schema().FieldIndices("value")[0]).(*array.Binary)
		for i := range int(rec.NumRows()) {
			v, err := strconv.ParseInt(string(vals.Value(i)), 10, 64)
			require.NoError(t, err)
			sum += v
			rows++
			seen[[2]int64{int64(parts.Value(i)), offs.Value(i)}] = true
		}
		rec.Release()
	}
	return rows, sum, len(seen)
}

// ingestSnapshots returns the commit times of the shared table's
// snapshots that carry Kafka offsets (ingest snapshots).
func ingestSnapshots(t *testing.T, base string) []time.Time {
	t.Helper()
	var lt struct {
		Metadata struct {
			Snapshots []struct {
				TimestampMs int64             `json:"timestamp-ms"`
				Summary     map[string]string `json:"summary"`
			} `json:"snapshots"`
		} `json:"metadata"`
	}
	require.NoError(t, json.Unmarshal(mustCall(t, http.MethodGet, base+"/v1/namespaces/shared/tables/events", nil, http.StatusOK), &lt))
	var out []time.Time
	for _, s := range lt.Metadata.Snapshots {
		if _, ok := s.Summary["tarn.kafka.offsets"]; ok {
			out = append(out, time.UnixMilli(s.TimestampMs))
		}
	}
	require.NotEmpty(t, out, "no ingest snapshot")
	return out
}
