package topics_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/catalog/bolt"
	"github.com/tarnhq/tarn/ingest/topics"
	"github.com/tarnhq/tarn/internal/demo"
	"github.com/tarnhq/tarn/internal/testserver"
)

const (
	testTopic   = demo.Topic
	testTable   = "air.flights"
	waitTimeout = 30 * time.Second
)

var tableIdent = catalog.Ident{Namespace: catalog.Namespace{"air"}, Name: "flights"}

// env is one test's world: a kfake cluster with the flights topic (3
// partitions), an srfake registry with the flights Avro schema, a catalog
// on bolt, and a running Manager.
type env struct {
	t      *testing.T
	ctx    context.Context
	kafka  *kfake.Cluster
	rc     *sr.Client
	regURL string
	cat    *catalog.Catalog
	wh     *catalog.Warehouse
	store  *bolt.Store
	prod   *kgo.Client
	values [][]byte
	next   int // index of the next value to produce
	m      *topics.Manager
	reg    *prometheus.Registry
	log    *slog.Logger
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(demo.Partitions, testTopic), kfake.ClusterID("test-cluster"))
	require.NoError(t, err)
	t.Cleanup(kc.Close)
	srv := srfake.New()
	t.Cleanup(srv.Close)
	rc, err := sr.NewClient(sr.URLs(srv.URL()))
	require.NoError(t, err)
	ss, err := rc.CreateSchema(ctx, demo.Subject, sr.Schema{Schema: demo.Schema})
	require.NoError(t, err)
	rows, err := demo.Flights()
	require.NoError(t, err)
	values, err := demo.Encode(rows, ss.ID)
	require.NoError(t, err)

	cat, wh, store := testserver.NewCatalog(t, t.TempDir(), nil)
	prod, err := kgo.NewClient(kgo.SeedBrokers(kc.ListenAddrs()...), kgo.DefaultProduceTopic(testTopic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	t.Cleanup(prod.Close)
	e := &env{t: t, ctx: ctx, kafka: kc, rc: rc, regURL: srv.URL(), cat: cat, wh: wh, store: store, prod: prod, values: values,
		log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	e.start()
	return e
}

// start builds and starts a new Manager over the env's store (a restart).
func (e *env) start() {
	e.t.Helper()
	e.reg = prometheus.NewRegistry()
	m, err := topics.New(topics.Deps{
		Catalog: e.cat, Warehouse: e.wh, Store: e.store,
		Brokers: e.kafka.ListenAddrs(), Registry: e.rc, Logger: e.log, Metrics: e.reg,
	})
	require.NoError(e.t, err)
	require.NoError(e.t, m.Start(e.ctx))
	e.m = m
	e.t.Cleanup(func() { _ = m.Close(context.Background()) })
}

// stop closes the running Manager (its pipelines commit what they hold).
func (e *env) stop() {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, waitTimeout)
	defer cancel()
	require.NoError(e.t, e.m.Close(ctx))
}

// produce produces the next n flights rows round-robin over the
// partitions and returns the total produced so far.
func (e *env) produce(n int) int {
	e.t.Helper()
	var recs []*kgo.Record
	for range n {
		v := e.values[e.next%len(e.values)]
		recs = append(recs, &kgo.Record{Value: v, Partition: int32(e.next % demo.Partitions)})
		e.next++
	}
	require.NoError(e.t, e.prod.ProduceSync(e.ctx, recs...).FirstErr())
	return e.next
}

// produceRaw produces one record with value v to partition p.
func (e *env) produceRaw(p int32, v []byte) {
	e.t.Helper()
	require.NoError(e.t, e.prod.ProduceSync(e.ctx, &kgo.Record{Value: v, Partition: p}).FirstErr())
}

// enable enables the flights topic into air.flights with a 1 s target lag
// and the changes of fn.
func (e *env) enable(fn func(*topics.TopicConfig)) topics.Status {
	e.t.Helper()
	cfg := topics.TopicConfig{Topic: testTopic, Table: testTable, TargetLagMs: 1000}
	if fn != nil {
		fn(&cfg)
	}
	st, err := e.m.Enable(e.ctx, cfg)
	require.NoError(e.t, err)
	return st
}

// loadTable loads air.flights.
func (e *env) loadTable() *table.Table {
	e.t.Helper()
	tbl, err := e.cat.TableIO(e.wh).LoadTable(e.ctx, table.Identifier{"air", "flights"})
	require.NoError(e.t, err)
	return tbl
}

// tableRows is the table's total-records.
func (e *env) tableRows() int64 {
	e.t.Helper()
	tbl := e.loadTable()
	if tbl.CurrentSnapshot() == nil || tbl.CurrentSnapshot().Summary == nil {
		return 0
	}
	n, _ := strconv.ParseInt(tbl.CurrentSnapshot().Summary.Properties["total-records"], 10, 64)
	return n
}

// waitRows waits until the table holds want rows.
func (e *env) waitRows(want int64) {
	e.t.Helper()
	e.eventually("table rows", func() bool { return e.tableRows() >= want })
	require.Equal(e.t, want, e.tableRows(), "table rows")
}

// waitState waits until the topic is in state want.
func (e *env) waitState(want topics.State) topics.Status {
	e.t.Helper()
	var st topics.Status
	e.eventually("state "+string(want), func() bool {
		var err error
		st, err = e.m.Get(e.ctx, testTopic)
		require.NoError(e.t, err)
		return st.State == want
	})
	return st
}

// waitCounted waits until the topic is syncing with at least rows rows
// in its status. A commit's rows are in the table (waitRows) a moment
// before the pipeline adds them to its status: reading the status right
// after waitRows failed under load.
func (e *env) waitCounted(rows int64) topics.Status {
	e.t.Helper()
	var st topics.Status
	e.eventually(fmt.Sprintf("syncing with %d rows counted", rows), func() bool {
		var err error
		st, err = e.m.Get(e.ctx, testTopic)
		require.NoError(e.t, err)
		return st.State == topics.StateSyncing && st.Rows >= rows
	})
	return st
}

func (e *env) eventually(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			st, _ := e.m.Get(e.ctx, testTopic)
			e.t.Fatalf("timed out waiting for %s; status %+v", what, st)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// externalCommit commits a property change to air.flights as a REST
// client would (Catalog.CommitTable).
func (e *env) externalCommit() error {
	_, err := e.cat.CommitTable(e.ctx, e.wh, catalog.TableCommit{Ident: tableIdent,
		Updates: []table.Update{table.NewSetPropertiesUpdate(map[string]string{"external": "yes"})}})
	return err
}
