package maintenance_test

import (
	"context"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/sink"
	"github.com/tarnhq/tarn/internal/testserver"
	"github.com/tarnhq/tarn/maintenance"
	"github.com/tarnhq/tarn/offsets"
	"github.com/tarnhq/tarn/spec"
)

const (
	testCluster = "cluster-1"
	testTopic   = "flights"
)

// testSchema mirrors a materialized topic: part of _kafka, then user
// columns origin and distance.
var testSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "_kafka", Required: true, Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
		{ID: 2, Name: "partition", Type: iceberg.PrimitiveTypes.Int32, Required: true},
		{ID: 3, Name: "offset", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	}}},
	iceberg.NestedField{ID: 4, Name: "origin", Type: iceberg.PrimitiveTypes.String, Required: true},
	iceberg.NestedField{ID: 5, Name: "distance", Type: iceberg.PrimitiveTypes.Int64, Required: true},
)

var tableIdent = catalog.Ident{Namespace: catalog.Namespace{"air"}, Name: "flights"}

// harness is a catalog on bolt with the table air.flights (identity
// partitioned by origin), a sink writing it as a topic's pipeline would,
// and a maintenance scheduler over the catalog that treats it as owned.
type harness struct {
	t     testing.TB
	ctx   context.Context
	cat   *catalog.Catalog
	store catalog.Store
	wh    *catalog.Warehouse
	tio   *catalog.TableIO
	ident table.Identifier
	sink  *sink.Sink
	sched *maintenance.Scheduler
	reg   *prometheus.Registry
	// next offset of Kafka partition 0, and the sum of distance written.
	next int64
	sum  int64
}

func newHarness(t testing.TB, props map[string]string) *harness {
	t.Helper()
	return newHarnessOn(t, props, nil)
}

// newHarnessOn is newHarness with the catalog over wrap(store) (see
// testserver.NewCatalog).
func newHarnessOn(t testing.TB, props map[string]string, wrap func(catalog.Store) catalog.Store) *harness {
	t.Helper()
	return newHarnessAt(t, props, wrap, "")
}

// newHarnessAt is newHarnessOver with the table at dir, a directory
// below the warehouse's (Tarn's own choice when "").
func newHarnessAt(t testing.TB, props map[string]string, wrap func(catalog.Store) catalog.Store, dir string) *harness {
	t.Helper()
	ctx := context.Background()
	cat, wh, store := testserver.NewCatalog(t, t.TempDir(), wrap)
	require.NoError(t, cat.CreateNamespace(ctx, tableIdent.Namespace, nil))
	ps := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{4}, FieldID: 1000, Name: "origin", Transform: iceberg.IdentityTransform{}})
	loc := ""
	if dir != "" {
		loc = wh.Location + "/" + dir
	}
	_, err := cat.CreateTable(ctx, wh, tableIdent.Namespace, spec.CreateTableRequest{Name: tableIdent.Name, Schema: testSchema,
		PartitionSpec: &iceberg.UnboundPartitionSpec{PartitionSpec: ps}, Properties: props, Location: loc})
	require.NoError(t, err)
	h := &harness{t: t, ctx: ctx, cat: cat, store: store, wh: wh, tio: cat.TableIO(wh), ident: table.Identifier{"air", "flights"},
		reg: prometheus.NewRegistry()}
	h.sink, err = sink.Open(ctx, h.tio, sink.Config{Table: h.ident, Cluster: testCluster, Topic: testTopic})
	require.NoError(t, err)
	h.sched, err = maintenance.New(maintenance.Config{}, maintenance.Deps{Catalog: cat, Metrics: h.reg,
		Owned: func(id catalog.Ident) bool { return id.Equal(tableIdent) }})
	require.NoError(t, err)
	return h
}

// batch plans n rows of Kafka partition 0 from the sink's head: origins
// alternate A and B, distance is the offset.
func (h *harness) batch(n int) sink.Batch {
	h.t.Helper()
	return h.batchOn(0, n)
}

// batchOn is batch for Kafka partition p.
func (h *harness) batchOn(p int32, n int) sink.Batch {
	h.t.Helper()
	head, err := h.sink.Head(h.ctx)
	require.NoError(h.t, err)
	start := head.Next[p]
	rec := h.records(p, start, n, func(off int64) string { return []string{"A", "B"}[off%2] })
	return sink.Batch{Records: []arrow.RecordBatch{rec}, Ranges: map[int32]sink.Range{p: {Start: start, End: start + int64(n)}}}
}

// records are n rows of Kafka partition p from offset start, distance
// the offset, origin what origin gives for it; released with the test.
func (h *harness) records(p int32, start int64, n int, origin func(off int64) string) arrow.RecordBatch {
	h.t.Helper()
	sc, err := table.SchemaToArrowSchema(testSchema, nil, true, false)
	require.NoError(h.t, err)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	kb := b.Field(0).(*array.StructBuilder)
	for off := start; off < start+int64(n); off++ {
		kb.Append(true)
		kb.FieldBuilder(0).(*array.Int32Builder).Append(p)
		kb.FieldBuilder(1).(*array.Int64Builder).Append(off)
		b.Field(1).(*array.StringBuilder).Append(origin(off))
		b.Field(2).(*array.Int64Builder).Append(off)
	}
	rec := b.NewRecordBatch()
	h.t.Cleanup(rec.Release)
	return rec
}

// ingest commits batches of n rows through the sink, one snapshot each.
func (h *harness) ingest(batches, n int) {
	h.t.Helper()
	for range batches {
		b := h.batch(n)
		require.NoError(h.t, h.sink.Commit(h.ctx, b))
		h.account(b)
	}
}

// account adds a committed batch to the expected totals.
func (h *harness) account(b sink.Batch) {
	r := b.Ranges[0]
	for off := r.Start; off < r.End; off++ {
		h.sum += off
	}
	h.next = r.End
}

func (h *harness) load() *table.Table {
	h.t.Helper()
	tbl, err := h.tio.LoadTable(h.ctx, h.ident)
	require.NoError(h.t, err)
	return tbl
}

// check scans snapshot snap (main's head when nil) and requires offsets
// 0..want-1 of partition 0 exactly once, and their distance sum.
func (h *harness) check(tbl *table.Table, snap *table.Snapshot, want int64) {
	h.t.Helper()
	var opts []table.ScanOption
	if snap != nil {
		opts = append(opts, table.WithSnapshotID(snap.SnapshotID))
	}
	res, err := tbl.Scan(opts...).ToArrowTable(h.ctx)
	require.NoError(h.t, err)
	defer res.Release()
	var offs []int64
	var sum int64
	for _, c := range res.Column(0).Data().Chunks() {
		o := c.(*array.Struct).Field(1).(*array.Int64)
		for i := range o.Len() {
			offs = append(offs, o.Value(i))
		}
	}
	for _, c := range res.Column(2).Data().Chunks() {
		d := c.(*array.Int64)
		for i := range d.Len() {
			sum += d.Value(i)
		}
	}
	slices.Sort(offs)
	require.Len(h.t, offs, int(want), "rows")
	for i, o := range offs {
		require.Equal(h.t, int64(i), o, "offset %d missing or duplicated", i)
	}
	require.Equal(h.t, want*(want-1)/2, sum, "sum(distance)")
}

// headOffsets is the offsets property of main's head snapshot itself.
func (h *harness) headOffsets() string {
	h.t.Helper()
	s := h.load().CurrentSnapshot()
	require.NotNil(h.t, s)
	return s.Summary.Properties[offsets.Property]
}

// run runs one job on air.flights.
func (h *harness) run(job string) maintenance.Result {
	h.t.Helper()
	rs, err := h.sched.RunJobs(h.ctx, tableIdent, []string{job})
	require.NoError(h.t, err)
	require.Len(h.t, rs, 1)
	return rs[0]
}

// tableDir is the table's directory on disk.
func (h *harness) tableDir() string {
	return strings.TrimPrefix(h.load().Location(), "file://")
}

// files lists the files under the table's dir (relative, sorted).
func (h *harness) files(sub string) []string {
	h.t.Helper()
	var out []string
	root := filepath.Join(h.tableDir(), sub)
	require.NoError(h.t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			out = append(out, p)
		}
		return nil
	}))
	return out
}

// age sets the modification time of paths to d ago.
func age(t *testing.T, d time.Duration, paths ...string) {
	t.Helper()
	when := time.Now().Add(-d)
	for _, p := range paths {
		require.NoError(t, os.Chtimes(strings.TrimPrefix(p, "file://"), when, when))
	}
}

// exists reports whether the file at p (a path, or a file:// location
// as written, percent-encoded or not) exists.
func exists(p string) bool {
	if u, err := url.Parse(p); err == nil && u.Scheme == "file" {
		p = u.Path
	}
	_, err := os.Stat(p)
	return err == nil
}

// dataFiles returns the data file paths of snapshot s.
func dataFiles(t *testing.T, tbl *table.Table, s *table.Snapshot) []string {
	t.Helper()
	tasks, err := tbl.Scan(table.WithSnapshotID(s.SnapshotID)).PlanFiles(context.Background())
	require.NoError(t, err)
	var out []string
	for _, task := range tasks {
		out = append(out, task.File.FilePath())
	}
	slices.Sort(out)
	return out
}

// counter is the value of counter name whose label is value (0 before
// the first increment).
func counter(t *testing.T, g prometheus.Gatherer, name, label, value string) float64 {
	t.Helper()
	v, _ := metricWith(t, g, name, label, value)
	return v
}

// metricWith is the value of the counter or gauge name whose label is
// value (case-insensitively), and whether there is one.
func metricWith(t *testing.T, g prometheus.Gatherer, name, label, value string) (float64, bool) {
	t.Helper()
	mfs, err := g.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && strings.EqualFold(l.GetValue(), value) {
					return m.GetCounter().GetValue() + m.GetGauge().GetValue(), true
				}
			}
		}
	}
	return 0, false
}
