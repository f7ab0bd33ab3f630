package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	hamba "github.com/hamba/avro/v2"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/avro"
	"github.com/tarnhq/tarn/ingest/pipeline"
	"github.com/tarnhq/tarn/internal/testserver"
	"github.com/tarnhq/tarn/offsets"
)

const (
	testCluster    = "test-cluster"
	testTopic      = "flights"
	testPartitions = 3
	// waitTimeout bounds every wait for the table to catch up; the tests
	// themselves finish in a few seconds, but the race pass on a loaded
	// two-core machine took over 20 s for the budget test's 6,000 rows
	// in 48 KiB flushes. A wait ends as soon as its condition holds, so
	// the margin costs a passing run nothing.
	waitTimeout = 60 * time.Second
)

// flightsSchema is the Avro schema of testdata/flights-10k.parquet's rows
// (its date is timestamp[us]).
const flightsSchema = `{"type": "record", "name": "Flight", "namespace": "tarn.test", "fields": [
	{"name": "date", "type": {"type": "long", "logicalType": "timestamp-micros"}},
	{"name": "delay", "type": "long"},
	{"name": "distance", "type": "long"},
	{"name": "origin", "type": "string"},
	{"name": "destination", "type": "string"}
]}`

type flight struct {
	Date        time.Time `avro:"date"`
	Delay       int64     `avro:"delay"`
	Distance    int64     `avro:"distance"`
	Origin      string    `avro:"origin"`
	Destination string    `avro:"destination"`
}

var (
	flightsOnce sync.Once
	flightsRows []flight
	flightsErr  error
)

// loadFlights reads the 10,000 rows of testdata/flights-10k.parquet.
func loadFlights(t *testing.T) []flight {
	t.Helper()
	flightsOnce.Do(func() { flightsRows, flightsErr = readFlights() })
	require.NoError(t, flightsErr)
	return flightsRows
}

func readFlights() ([]flight, error) {
	pf, err := file.OpenParquetFile(filepath.Join("..", "..", "testdata", "flights-10k.parquet"), false)
	if err != nil {
		return nil, err
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		return nil, err
	}
	defer tbl.Release()
	col := func(name string) []arrow.Array {
		return tbl.Column(tbl.Schema().FieldIndices(name)[0]).Data().Chunks()
	}
	dates, delays, dists, origins, dests := col("date"), col("delay"), col("distance"), col("origin"), col("destination")
	var out []flight
	for c := range dates {
		d, dl, ds := dates[c].(*array.Timestamp), delays[c].(*array.Int64), dists[c].(*array.Int64)
		o, de := origins[c].(*array.LargeString), dests[c].(*array.LargeString)
		for i := range d.Len() {
			out = append(out, flight{
				Date: time.UnixMicro(int64(d.Value(i))).UTC(), Delay: dl.Value(i), Distance: ds.Value(i),
				Origin: o.Value(i), Destination: de.Value(i),
			})
		}
	}
	return out, nil
}

// answers are the known totals of testdata/flights-10k.parquet.
type answers struct {
	Rows        int64 `json:"rows"`
	SumDelay    int64 `json:"sum_delay"`
	SumDistance int64 `json:"sum_distance"`
}

func loadAnswers(t *testing.T) answers {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "answers.json"))
	require.NoError(t, err)
	var all map[string]answers
	require.NoError(t, json.Unmarshal(b, &all))
	return all["flights-10k.parquet"]
}

// totals sums flights as the table scan does.
func totals(fs []flight) answers {
	var a answers
	for _, f := range fs {
		a.Rows++
		a.SumDelay += f.Delay
		a.SumDistance += f.Distance
	}
	return a
}

// env is one test's world: a kfake cluster with the topic, an srfake
// registry with the flights schema, and a catalog on bolt in a temp dir
// holding the topic's table (EnsureTable).
type env struct {
	t        *testing.T
	ctx      context.Context
	kafka    *kfake.Cluster
	reg      *srfake.Registry
	rc       *sr.Client
	cat      *catalog.Catalog
	wh       *catalog.Warehouse
	tio      *catalog.TableIO
	ident    catalog.Ident
	prod     *kgo.Client
	writer   hamba.Schema
	schemaID int
	// budget is the Deps.Budget of newPipeline; nil (unlimited) unless a
	// test sets it.
	budget *pipeline.Budget
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t, flightsSchema, nil)
}

// newEnvWith is newEnv with another value schema registered first and the
// table created from it, with cfg changed by modify (if not nil) before
// EnsureTable.
func newEnvWith(t *testing.T, schema string, modify func(*pipeline.Config)) *env {
	t.Helper()
	ctx := context.Background()
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(testPartitions, testTopic))
	require.NoError(t, err)
	t.Cleanup(kc.Close)

	reg := srfake.New()
	t.Cleanup(reg.Close)
	rc, err := sr.NewClient(sr.URLs(reg.URL()))
	require.NoError(t, err)

	cat, wh := newCatalog(t)

	prod, err := kgo.NewClient(kgo.SeedBrokers(kc.ListenAddrs()...), kgo.DefaultProduceTopic(testTopic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	t.Cleanup(prod.Close)

	e := &env{t: t, ctx: ctx, kafka: kc, reg: reg, rc: rc, cat: cat, wh: wh, tio: cat.TableIO(wh),
		ident: catalog.Ident{Namespace: catalog.Namespace{"air"}, Name: "flights"}, prod: prod}
	e.schemaID, e.writer = e.register(schema)
	cfg := e.config()
	if modify != nil {
		modify(&cfg)
	}
	created, err := pipeline.EnsureTable(ctx, cat, wh, cfg, userColumns(t, e.writer))
	require.NoError(t, err)
	require.True(t, created)
	return e
}

// newCatalog returns a catalog on bolt in a temp dir with a file://
// warehouse.
func newCatalog(t *testing.T) (*catalog.Catalog, *catalog.Warehouse) {
	t.Helper()
	cat, wh, _ := testserver.NewCatalog(t, t.TempDir(), nil)
	return cat, wh
}

// register registers an Avro schema under the topic's value subject.
func (e *env) register(text string) (int, hamba.Schema) {
	e.t.Helper()
	ss, err := e.rc.CreateSchema(e.ctx, testTopic+"-value", sr.Schema{Schema: text})
	require.NoError(e.t, err)
	sc, err := hamba.Parse(text)
	require.NoError(e.t, err)
	return ss.ID, sc
}

// config is the pipeline config of the tests: small flushes, the
// shortest lag.
func (e *env) config() pipeline.Config {
	return pipeline.Config{
		Topic: testTopic, Table: e.ident, Cluster: testCluster, Format: pipeline.FormatAvro,
		TargetLag: time.Second, TargetFileSizeBytes: 256 << 10,
	}
}

func (e *env) newPipeline(cfg pipeline.Config, tables table.CatalogIO) *pipeline.Pipeline {
	e.t.Helper()
	if tables == nil {
		tables = e.tio
	}
	p, err := pipeline.New(cfg, pipeline.Deps{Tables: tables, Registry: e.rc, OpenSource: e.openSource, Budget: e.budget,
		Logger: slog.New(slog.NewTextHandler(e.t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))})
	require.NoError(e.t, err)
	return p
}

// running is a pipeline's Run in a goroutine.
type running struct {
	cancel context.CancelFunc
	done   chan error
}

func (e *env) start(p *pipeline.Pipeline) *running {
	ctx, cancel := context.WithCancel(e.ctx)
	r := &running{cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- p.Run(ctx) }()
	e.t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(waitTimeout):
			e.t.Error("Run did not return after cancel")
		}
	})
	return r
}

// stop cancels Run and returns its result.
func (r *running) stop(t *testing.T) error {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		r.done <- err // for the cleanup
		return err
	case <-time.After(waitTimeout):
		t.Fatal("Run did not return after cancel")
		return nil
	}
}

// wait returns Run's result once it ends on its own.
func (r *running) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-r.done:
		r.done <- err
		return err
	case <-time.After(waitTimeout):
		t.Fatal("Run did not return")
		return nil
	}
}

// encode returns f in the Confluent wire format under schema id.
func (e *env) encode(id int, sc hamba.Schema, v any) []byte {
	e.t.Helper()
	b, err := new(sr.ConfluentHeader).AppendEncode(nil, id, nil)
	require.NoError(e.t, err)
	body, err := hamba.Marshal(sc, v)
	require.NoError(e.t, err)
	return append(b, body...)
}

// produceFlights produces fs, row i (counted from first) to partition
// i%3 with key "k<i>" and a header row=<i>.
func (e *env) produceFlights(fs []flight, first int) {
	e.t.Helper()
	recs := make([]*kgo.Record, len(fs))
	for j, f := range fs {
		i := first + j
		recs[j] = &kgo.Record{
			Partition: int32(i % testPartitions),
			Key:       []byte("k" + strconv.Itoa(i)),
			Value:     e.encode(e.schemaID, e.writer, f),
			Headers:   []kgo.RecordHeader{{Key: "row", Value: []byte(strconv.Itoa(i))}},
		}
	}
	e.produce(recs...)
}

func (e *env) produce(recs ...*kgo.Record) {
	e.t.Helper()
	require.NoError(e.t, e.prod.ProduceSync(e.ctx, recs...).FirstErr())
}

// endOffsets returns the high watermark of each partition.
func (e *env) endOffsets() map[int32]int64 {
	e.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.kafka.ListenAddrs()...))
	require.NoError(e.t, err)
	defer cl.Close()
	lo, err := kadm.NewClient(cl).ListEndOffsets(e.ctx, testTopic)
	require.NoError(e.t, err)
	require.NoError(e.t, lo.Error())
	out := map[int32]int64{}
	lo.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}

// head returns the table's next offsets (empty before the first commit).
func (e *env) head() map[int32]int64 {
	e.t.Helper()
	tbl, err := e.tio.LoadTable(e.ctx, table.Identifier{"air", "flights"})
	require.NoError(e.t, err)
	o, found, err := offsets.Read(tbl.Metadata())
	require.NoError(e.t, err)
	if !found {
		return map[int32]int64{}
	}
	require.Equal(e.t, testCluster, o.Cluster)
	require.Equal(e.t, testTopic, o.Topic)
	return o.Next
}

// waitHead waits until the table's offsets equal want, failing early if
// r's Run returns.
func (e *env) waitHead(r *running, want map[int32]int64) {
	e.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		got := e.head()
		if mapsEqual(got, want) {
			return
		}
		select {
		case err := <-r.done:
			r.done <- err
			e.t.Fatalf("Run returned %v before the table reached %v (at %v)", err, want, got)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("table offsets %v did not reach %v", got, want)
		}
	}
}

func mapsEqual(a, b map[int32]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// key is a row's Kafka position.
type key struct {
	P   int32
	Off int64
}

// row is what the tests read back of one table row.
type row struct {
	key
	Delay, Distance int64
	Timestamp       time.Time
	Key             []byte
	Headers         map[string]string
}

// scanned is a full scan of the table's current snapshot.
type scanned struct {
	rows []row
}

func (e *env) scan() scanned {
	e.t.Helper()
	tbl, err := e.tio.LoadTable(e.ctx, table.Identifier{"air", "flights"})
	require.NoError(e.t, err)
	if tbl.CurrentSnapshot() == nil {
		return scanned{}
	}
	res, err := tbl.Scan().ToArrowTable(e.ctx)
	require.NoError(e.t, err)
	defer res.Release()
	col := func(name string) []arrow.Array {
		idx := res.Schema().FieldIndices(name)
		require.Len(e.t, idx, 1, name)
		return res.Column(idx[0]).Data().Chunks()
	}
	delays, dists, kafka := col("delay"), col("distance"), col("_kafka")
	var out scanned
	for c := range kafka {
		dl, ds, k := delays[c].(*array.Int64), dists[c].(*array.Int64), kafka[c].(*array.Struct)
		st := k.DataType().(*arrow.StructType)
		field := func(name string) arrow.Array {
			i, ok := st.FieldIdx(name)
			require.True(e.t, ok, name)
			return k.Field(i)
		}
		ps, offs := field("partition").(*array.Int32), field("offset").(*array.Int64)
		ts, keys, hdrs := field("timestamp").(*array.Timestamp), field("key").(*array.Binary), field("headers").(*array.List)
		hst := hdrs.ListValues().(*array.Struct)
		hk, hv := hst.Field(0).(*array.String), hst.Field(1).(*array.Binary)
		for i := range k.Len() {
			r := row{key: key{ps.Value(i), offs.Value(i)}, Delay: dl.Value(i), Distance: ds.Value(i),
				Timestamp: time.UnixMicro(int64(ts.Value(i))).UTC(), Headers: map[string]string{}}
			if !keys.IsNull(i) {
				r.Key = slices.Clone(keys.Value(i))
			}
			from, to := hdrs.ValueOffsets(i)
			for j := from; j < to; j++ {
				r.Headers[hk.Value(int(j))] = string(hv.Value(int(j)))
			}
			out.rows = append(out.rows, r)
		}
	}
	return out
}

func (s scanned) totals() answers {
	var a answers
	for _, r := range s.rows {
		a.Rows++
		a.SumDelay += r.Delay
		a.SumDistance += r.Distance
	}
	return a
}

// duplicates returns the positions that occur more than once.
func (s scanned) duplicates() []key {
	seen := map[key]int{}
	var dups []key
	for _, r := range s.rows {
		seen[r.key]++
		if seen[r.key] == 2 {
			dups = append(dups, r.key)
		}
	}
	return dups
}

// offsets returns the sorted offsets of partition p.
func (s scanned) offsets(p int32) []int64 {
	var out []int64
	for _, r := range s.rows {
		if r.P == p {
			out = append(out, r.Off)
		}
	}
	slices.Sort(out)
	return out
}

// span returns [from, to).
func span(from, to int64) []int64 {
	var out []int64
	for o := from; o < to; o++ {
		out = append(out, o)
	}
	return out
}

// source is the test's Source: a direct kgo consumer of the topic with
// read_committed isolation that keeps control records, so that the
// pipeline sees transaction markers (see pipeline.Source).
type source struct {
	cl *kgo.Client
}

func (e *env) openSource(_ context.Context, start map[int32]int64) (pipeline.Source, error) {
	offsets := map[int32]kgo.Offset{}
	for p := range int32(testPartitions) {
		if o, ok := start[p]; ok {
			offsets[p] = kgo.NewOffset().At(o)
		} else {
			offsets[p] = kgo.NewOffset().AtStart()
		}
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(e.kafka.ListenAddrs()...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{testTopic: offsets}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(100*time.Millisecond),
	)
	if err != nil {
		return nil, err
	}
	return &source{cl: cl}, nil
}

func (s *source) Poll(ctx context.Context) ([]*kgo.Record, error) {
	fs := s.cl.PollFetches(ctx)
	var recs []*kgo.Record
	fs.EachRecord(func(r *kgo.Record) { recs = append(recs, r) })
	if ctx.Err() != nil {
		return recs, ctx.Err()
	}
	var err error
	fs.EachError(func(_ string, _ int32, e error) {
		if err == nil && !errors.Is(e, context.Canceled) {
			err = e
		}
	})
	return recs, err
}

func (s *source) Reseek(offsets map[int32]int64) {
	set := map[int32]kgo.EpochOffset{}
	for p, o := range offsets {
		set[p] = kgo.EpochOffset{Epoch: -1, Offset: o}
	}
	s.cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{testTopic: set})
}

func (s *source) Close() { s.cl.Close() }

// hookCatalog is a CatalogIO whose CommitTable runs before() first, as if
// another writer committed between the pipeline's plan and its commit,
// and records each commit's error. A commit right after a failed one (the
// sink's rebase of the same batch) is not hooked, so that before() runs
// once per batch.
type hookCatalog struct {
	table.CatalogIO
	before func()
	// onCommit, if set, runs first in every CommitTable (rebases
	// included) with the commit's table and updates; an error it returns
	// is the commit's, and nothing is committed.
	onCommit func(ident table.Identifier, updates []table.Update) error
	mu       sync.Mutex
	errs     []error
}

func (c *hookCatalog) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	tbl, err := c.CatalogIO.LoadTable(ctx, ident)
	if err != nil {
		return nil, err
	}
	// Rebind so that commits of this table go through the hook.
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), tbl.FS, c), nil
}

func (c *hookCatalog) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	if c.onCommit != nil {
		if err := c.onCommit(ident, updates); err != nil {
			return nil, "", err
		}
	}
	c.mu.Lock()
	rebase := len(c.errs) > 0 && c.errs[len(c.errs)-1] != nil
	c.mu.Unlock()
	if c.before != nil && !rebase {
		c.before()
	}
	md, loc, err := c.CatalogIO.CommitTable(ctx, ident, reqs, updates)
	c.mu.Lock()
	c.errs = append(c.errs, err)
	c.mu.Unlock()
	return md, loc, err
}

// failed counts commits that failed with ErrCommitFailed (each one a
// rebase or a stale verdict in the sink).
func (c *hookCatalog) failed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, err := range c.errs {
		if errors.Is(err, catalog.ErrCommitFailed) {
			n++
		}
	}
	return n
}

// userColumns maps an Avro writer schema to its Iceberg user columns.
func userColumns(t testing.TB, writer hamba.Schema) *iceberg.Schema {
	t.Helper()
	sc, err := avro.ToIceberg(writer)
	require.NoError(t, err)
	return sc
}
