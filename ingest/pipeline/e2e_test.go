package pipeline_test

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/pipeline"
	kafkasource "github.com/tarnhq/tarn/ingest/source"
	"github.com/tarnhq/tarn/internal/demo"
	"github.com/tarnhq/tarn/internal/sample"
	"github.com/tarnhq/tarn/internal/testenv"
	"github.com/tarnhq/tarn/internal/testkafka"
	"github.com/tarnhq/tarn/offsets"
)

const (
	e2ePartitions = 6
	e2eRows       = 200_000
	e2eMoreRows   = 10_000
	e2eTxnSize    = 20_000
	e2eBogusRows  = 1_000
	// e2eBogusDelay marks the rows of the aborted transaction; no real
	// flight is that late.
	e2eBogusDelay = 987_654_321
	// e2eWait bounds each wait for the table to reach the topic's last
	// stable offsets.
	e2eWait = 90 * time.Second
)

// TestE2EFlights materializes the first 200,000 rows of the committed
// flights sample (internal/sample: testdata/flights-220k.parquet), produced
// as Avro (internal/demo's schema, Confluent wire format, registered in a
// real Apicurio Registry) in Kafka transactions to a real Kafka 4.4 broker,
// with one aborted transaction among them, and matches the sample's
// first_200000 in testdata/answers.json: no row lost, none duplicated,
// none of the aborted ones. A second pipeline on the same catalog then
// resumes from the table and adds exactly the next 10,000 rows. Runs only
// with TARN_E2E=1.
func TestE2EFlights(t *testing.T) {
	testenv.E2E(t, "a real Kafka broker and schema registry (internal/testkafka)")
	if testing.Short() {
		t.Skip("not under -short")
	}
	a, err := sample.LoadAnswers()
	require.NoError(t, err)
	want := answers(a.First200000)
	began := time.Now()
	rows, err := sample.Flights(e2eRows + e2eMoreRows)
	require.NoError(t, err)
	require.Len(t, rows, e2eRows+e2eMoreRows)
	require.Equal(t, want, answers(demo.TotalsOf(rows[:e2eRows])), "the parquet read agrees with answers.json")
	t.Logf("read %d rows of %s in %v", len(rows), sample.File, time.Since(began).Round(time.Millisecond))

	// The services before the deadline: their first start on a machine
	// fetches and builds their jars (minutes).
	began = time.Now()
	b := testkafka.StartBroker(t)
	reg := testkafka.StartRegistry(t)
	t.Logf("broker %s and registry %s started in %v", b.Bootstrap, reg.URL, time.Since(began).Round(time.Millisecond))
	ctx, cancelAll := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancelAll()

	// Topic and schema.
	admCl, err := kgo.NewClient(kgo.SeedBrokers(b.Bootstrap))
	require.NoError(t, err)
	t.Cleanup(admCl.Close)
	adm := kadm.NewClient(admCl)
	created, err := adm.CreateTopic(ctx, e2ePartitions, 1, nil, demo.Topic)
	require.NoError(t, err)
	require.NoError(t, created.Err)

	rc := reg.Client(t)
	ss, err := rc.CreateSchema(ctx, demo.Subject, sr.Schema{Schema: demo.Schema, Type: sr.TypeAvro})
	require.NoError(t, err)
	values, err := demo.Encode(rows, ss.ID)
	require.NoError(t, err)
	bogus := make([]demo.Flight, e2eBogusRows)
	for i := range bogus {
		bogus[i] = demo.Flight{Date: rows[i].Date, Delay: e2eBogusDelay, Distance: 1, Origin: "XXX", Destination: "YYY"}
	}
	bogusValues, err := demo.Encode(bogus, ss.ID)
	require.NoError(t, err)

	// Produce: ten committed transactions of 20,000 rows, row i to
	// partition i%6 with key k<i>, and after the fifth one aborted
	// transaction of 1,000 bogus rows (keys bogus<j>).
	prod, err := kgo.NewClient(kgo.SeedBrokers(b.Bootstrap), kgo.DefaultProduceTopic(demo.Topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionalID("tarn-e2e-flights"))
	require.NoError(t, err)
	t.Cleanup(prod.Close)
	txn := func(commit bool, keyPrefix string, vals [][]byte, first int) {
		t.Helper()
		require.NoError(t, prod.BeginTransaction())
		var mu sync.Mutex
		var firstErr error
		for j, v := range vals {
			i := first + j
			rec := &kgo.Record{Partition: int32(i % e2ePartitions), Key: []byte(keyPrefix + strconv.Itoa(i)), Value: v}
			prod.Produce(ctx, rec, func(_ *kgo.Record, err error) {
				if err != nil {
					mu.Lock()
					firstErr = cmpErr(firstErr, err)
					mu.Unlock()
				}
			})
		}
		require.NoError(t, prod.Flush(ctx))
		require.NoError(t, firstErr)
		require.NoError(t, prod.EndTransaction(ctx, kgo.TransactionEndTry(commit)))
	}
	began = time.Now()
	for n := 0; n < e2eRows/e2eTxnSize; n++ {
		if n == e2eRows/e2eTxnSize/2 {
			txn(false, "bogus", bogusValues, 0)
		}
		txn(true, "k", values[n*e2eTxnSize:(n+1)*e2eTxnSize], n*e2eTxnSize)
	}
	stable := waitStable(t, ctx, adm)
	t.Logf("produced %d rows in %d committed transactions and %d rows in 1 aborted one in %v; last stable offsets %v",
		e2eRows, e2eRows/e2eTxnSize, e2eBogusRows, time.Since(began).Round(time.Millisecond), stable)
	for p := range int32(e2ePartitions) {
		// Every transaction touched every partition: 11 markers each.
		wantEnd := int64(countMod(e2eRows, p)+countMod(e2eBogusRows, p)) + e2eRows/e2eTxnSize + 1
		require.Equal(t, wantEnd, stable[p], "partition %d: rows, aborted rows and markers", p)
	}

	// Catalog and table.
	cat, wh := newCatalog(t)
	tio := cat.TableIO(wh)
	cfg := pipeline.Config{
		Topic: demo.Topic, Cluster: b.ClusterID, TargetLag: time.Second,
		Table: catalog.Ident{Namespace: catalog.Namespace{"air"}, Name: "flights"},
	}
	user, format, err := pipeline.WriterSchema(ctx, rc, cfg)
	require.NoError(t, err)
	require.Equal(t, pipeline.FormatAvro, format)
	cfg.Format = format
	ok, err := pipeline.EnsureTable(ctx, cat, wh, cfg, user)
	require.NoError(t, err)
	require.True(t, ok)
	e := &env{t: t, ctx: ctx, tio: tio} // for scan(), which reads air.flights
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	newPipeline := func() *pipeline.Pipeline {
		p, err := pipeline.New(cfg, pipeline.Deps{Tables: tio, Registry: rc, Logger: logger,
			OpenSource: func(ctx context.Context, start map[int32]int64) (pipeline.Source, error) {
				s, err := kafkasource.Open(ctx, kafkasource.Config{Brokers: []string{b.Bootstrap}, Topic: demo.Topic,
					ControlRecords: true, Logger: logger}, start)
				if err != nil {
					return nil, err
				}
				return s, nil
			}})
		require.NoError(t, err)
		return p
	}
	head := func() map[int32]int64 {
		tbl, err := tio.LoadTable(ctx, table.Identifier{"air", "flights"})
		require.NoError(t, err)
		o, found, err := offsets.Read(tbl.Metadata())
		require.NoError(t, err)
		if !found {
			return map[int32]int64{}
		}
		require.Equal(t, b.ClusterID, o.Cluster)
		require.Equal(t, demo.Topic, o.Topic)
		return o.Next
	}
	waitHead := func(r *running, want map[int32]int64) {
		t.Helper()
		deadline := time.Now().Add(e2eWait)
		for {
			got := head()
			if mapsEqual(got, want) {
				return
			}
			select {
			case err := <-r.done:
				r.done <- err
				t.Fatalf("Run returned %v before the table reached %v (at %v)", err, want, got)
			case <-time.After(100 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("table offsets %v did not reach the last stable offsets %v within %v", got, want, e2eWait)
			}
		}
	}
	// check scans the table and matches it with rows[:n]: totals, no
	// duplicate position, every key k0..k<n-1> exactly once on its
	// partition, no bogus row.
	check := func(n int, wantTotals answers) {
		t.Helper()
		began := time.Now()
		s := e.scan()
		t.Logf("scanned %d rows in %v", len(s.rows), time.Since(began).Round(time.Millisecond))
		assert.Equal(t, wantTotals, s.totals())
		assert.Empty(t, s.duplicates(), "duplicate (_kafka.partition, _kafka.offset)")
		seen := make([]bool, n)
		var bad []string
		for _, r := range s.rows {
			k := string(r.Key)
			i, err := strconv.Atoi(strings.TrimPrefix(k, "k"))
			switch {
			case r.Delay == e2eBogusDelay || strings.HasPrefix(k, "bogus"):
				bad = append(bad, fmt.Sprintf("aborted row %q at %d/%d", k, r.P, r.Off))
			case !strings.HasPrefix(k, "k") || err != nil || i < 0 || i >= n:
				bad = append(bad, fmt.Sprintf("unexpected key %q at %d/%d", k, r.P, r.Off))
			case seen[i]:
				bad = append(bad, fmt.Sprintf("row %d twice", i))
			case int32(i%e2ePartitions) != r.P || rows[i].Delay != r.Delay || rows[i].Distance != r.Distance:
				bad = append(bad, fmt.Sprintf("row %d at %d/%d does not match the parquet row", i, r.P, r.Off))
			default:
				seen[i] = true
			}
			if len(bad) > 20 {
				break
			}
		}
		require.Empty(t, bad)
		for i, ok := range seen {
			require.True(t, ok, "row %d (key k%d) missing", i, i)
		}
	}

	// First pipeline: everything up to the last stable offsets.
	began = time.Now()
	first := newPipeline()
	r := e.start(first)
	waitHead(r, stable)
	t.Logf("first pipeline reached the last stable offsets in %v: %+v", time.Since(began).Round(time.Millisecond), first.Status())
	require.NoError(t, r.stop(t))
	check(e2eRows, want)
	st := first.Status()
	assert.Equal(t, int64(e2eRows), st.Rows)
	assert.Empty(t, st.Errors)
	assert.Equal(t, stable, st.Next)

	// Second pipeline, same catalog: 10,000 more rows in one transaction.
	second := newPipeline()
	r = e.start(second)
	began = time.Now()
	txn(true, "k", values[e2eRows:], e2eRows)
	stable2 := waitStable(t, ctx, adm)
	for p := range int32(e2ePartitions) {
		require.Equal(t, stable[p]+int64(countMod(e2eRows+e2eMoreRows, p)-countMod(e2eRows, p))+1, stable2[p], "partition %d", p)
	}
	waitHead(r, stable2)
	t.Logf("second pipeline reached the last stable offsets %v in %v (from produce): %+v",
		stable2, time.Since(began).Round(time.Millisecond), second.Status())
	require.NoError(t, r.stop(t))
	check(e2eRows+e2eMoreRows, answers(demo.TotalsOf(rows)))
	st = second.Status()
	assert.Equal(t, int64(e2eMoreRows), st.Rows, "the second pipeline read only the new rows")
	assert.Empty(t, st.Errors)
}

func cmpErr(have, err error) error {
	if have != nil {
		return have
	}
	return err
}

// countMod counts i in [0, n) with i%6 == p.
func countMod(n int, p int32) int {
	c := n / e2ePartitions
	if int(p) < n%e2ePartitions {
		c++
	}
	return c
}

// waitStable waits until no transaction is open on the topic (its last
// stable offsets equal its high watermarks: the markers EndTransaction
// asked for are written) and returns those offsets.
func waitStable(t *testing.T, ctx context.Context, adm *kadm.Client) map[int32]int64 {
	t.Helper()
	list := func(lo kadm.ListedOffsets, err error) map[int32]int64 {
		require.NoError(t, err)
		require.NoError(t, lo.Error())
		out := map[int32]int64{}
		lo.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
		return out
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		lso := list(adm.ListCommittedOffsets(ctx, demo.Topic))
		hwm := list(adm.ListEndOffsets(ctx, demo.Topic))
		if len(lso) == e2ePartitions && mapsEqual(lso, hwm) {
			return lso
		}
		if time.Now().After(deadline) {
			t.Fatalf("last stable offsets %v did not reach the high watermarks %v", lso, hwm)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
