package sink_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/sink"
	"github.com/tarnhq/tarn/internal/testserver"
	"github.com/tarnhq/tarn/offsets"
	"github.com/tarnhq/tarn/spec"
)

const (
	testCluster = "cluster-1"
	testTopic   = "orders"
)

// testSchema mirrors a materialized topic: the _kafka struct (only the
// fields the sink's tests need) and one user column.
var testSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "_kafka", Required: true, Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
		{ID: 2, Name: "partition", Type: iceberg.PrimitiveTypes.Int32, Required: true},
		{ID: 3, Name: "offset", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	}}},
	iceberg.NestedField{ID: 4, Name: "v", Type: iceberg.PrimitiveTypes.String},
)

// key identifies a row: its Kafka partition and offset.
type key struct {
	P   int32
	Off int64
}

type harness struct {
	t     *testing.T
	ctx   context.Context
	cat   *catalog.Catalog
	wh    *catalog.Warehouse
	tio   *catalog.TableIO
	ident table.Identifier
}

// newHarness creates a catalog on bolt in a temp dir and the table
// ns.orders with testSchema, partitioned by spec when not nil.
func newHarness(t *testing.T, partitionSpec *iceberg.PartitionSpec) *harness {
	t.Helper()
	ctx := context.Background()
	cat, wh, _ := testserver.NewCatalog(t, t.TempDir(), nil)
	require.NoError(t, cat.CreateNamespace(ctx, catalog.Namespace{"ns"}, nil))
	req := spec.CreateTableRequest{Name: "orders", Schema: testSchema}
	if partitionSpec != nil {
		req.PartitionSpec = &iceberg.UnboundPartitionSpec{PartitionSpec: *partitionSpec}
	}
	_, err := cat.CreateTable(ctx, wh, catalog.Namespace{"ns"}, req)
	require.NoError(t, err)
	return &harness{t: t, ctx: ctx, cat: cat, wh: wh, tio: cat.TableIO(wh), ident: table.Identifier{"ns", "orders"}}
}

func (h *harness) config() sink.Config {
	return sink.Config{Table: h.ident, Cluster: testCluster, Topic: testTopic}
}

// open opens a sink over cat (h.tio when nil).
func (h *harness) open(cat table.CatalogIO) *sink.Sink {
	h.t.Helper()
	if cat == nil {
		cat = h.tio
	}
	s, err := sink.Open(h.ctx, cat, h.config())
	require.NoError(h.t, err)
	return s
}

func (h *harness) load() *table.Table {
	h.t.Helper()
	tbl, err := h.tio.LoadTable(h.ctx, h.ident)
	require.NoError(h.t, err)
	return tbl
}

// plan builds the batch a pipeline would after reading count records of
// each partition from head, as one Arrow record per perRecord rows
// (partitions interleaved row by row, as a consumer would see them).
func (h *harness) plan(head offsets.Offsets, counts map[int32]int, perRecord int) sink.Batch {
	h.t.Helper()
	b := sink.Batch{Ranges: map[int32]sink.Range{}}
	next := map[int32]int64{}
	for p, n := range counts {
		start := head.Next[p]
		next[p] = start
		b.Ranges[p] = sink.Range{Start: start, End: start + int64(n)}
	}
	var keys []key
	for more := true; more; {
		more = false
		for _, p := range slices.Sorted(maps.Keys(counts)) {
			if next[p] < b.Ranges[p].End {
				keys = append(keys, key{p, next[p]})
				next[p]++
				more = true
			}
		}
	}
	for len(keys) > 0 {
		n := min(perRecord, len(keys))
		b.Records = append(b.Records, h.records(keys[:n]))
		keys = keys[n:]
	}
	h.t.Cleanup(func() {
		for _, r := range b.Records {
			r.Release()
		}
	})
	return b
}

// records builds one Arrow record of the table's schema holding keys.
func (h *harness) records(keys []key) arrow.RecordBatch {
	h.t.Helper()
	sc, err := table.SchemaToArrowSchema(testSchema, nil, true, false)
	require.NoError(h.t, err)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	kb := b.Field(0).(*array.StructBuilder)
	vb := b.Field(1).(*array.StringBuilder)
	for _, k := range keys {
		kb.Append(true)
		kb.FieldBuilder(0).(*array.Int32Builder).Append(k.P)
		kb.FieldBuilder(1).(*array.Int64Builder).Append(k.Off)
		vb.Append(fmt.Sprintf("p%d-o%d", k.P, k.Off))
	}
	return b.NewRecordBatch()
}

// expect returns the keys of offsets [0, next) of each partition.
func expect(next map[int32]int64) []key {
	var keys []key
	for p, n := range next {
		for off := range n {
			keys = append(keys, key{p, off})
		}
	}
	sortKeys(keys)
	return keys
}

func sortKeys(keys []key) {
	slices.SortFunc(keys, func(a, b key) int {
		if a.P != b.P {
			return int(a.P - b.P)
		}
		return int(a.Off - b.Off)
	})
}

// scan reads every row of the table's current snapshot and returns the
// keys, sorted, duplicates kept (so a duplicate fails an equality check).
func (h *harness) scan() []key {
	h.t.Helper()
	tbl := h.load()
	if tbl.CurrentSnapshot() == nil {
		return nil
	}
	res, err := tbl.Scan().ToArrowTable(h.ctx)
	require.NoError(h.t, err)
	defer res.Release()
	keys := keysOf(res.Column(0).Data().Chunks())
	sortKeys(keys)
	return keys
}

// keysOf reads the _kafka partition and offset of struct arrays.
func keysOf(chunks []arrow.Array) []key {
	var keys []key
	for _, c := range chunks {
		st := c.(*array.Struct)
		ps, offs := st.Field(0).(*array.Int32), st.Field(1).(*array.Int64)
		for i := range st.Len() {
			keys = append(keys, key{ps.Value(i), offs.Value(i)})
		}
	}
	return keys
}

// headProperty returns the offsets.Property of the head snapshot itself
// (no lineage walk), or "" without one.
func (h *harness) headProperty() string {
	h.t.Helper()
	snap := h.load().CurrentSnapshot()
	if snap == nil || snap.Summary == nil {
		return ""
	}
	return snap.Summary.Properties[offsets.Property]
}

// spyCatalog is a CatalogIO that records the requirements of every commit
// and, when loseReply is set, commits and then reports a transport error,
// as a client whose connection dropped after the server applied the
// commit would see it.
type spyCatalog struct {
	table.CatalogIO
	mu        sync.Mutex
	reqs      [][]table.Requirement
	errs      []error // each commit's result
	loseReply bool
}

var errLostReply = errors.New("read tcp: connection reset by peer")

func (c *spyCatalog) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	tbl, err := c.CatalogIO.LoadTable(ctx, ident)
	if err != nil {
		return nil, err
	}
	// Rebind so that commits of this table go through the spy.
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), tbl.FS, c), nil
}

func (c *spyCatalog) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	md, loc, err := c.CatalogIO.CommitTable(ctx, ident, reqs, updates)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reqs = append(c.reqs, reqs)
	c.errs = append(c.errs, err)
	if err == nil && c.loseReply {
		return nil, "", errLostReply
	}
	return md, loc, err
}
