package server_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/internal/testserver"
)

// Shape of the concurrency tests: writers × appends per writer.
const (
	concWriters          = 8
	concAppendsPerWriter = 5
	// concDeadline guards against a hang; a run takes ~2 s (~25 s with -race).
	concDeadline = 90 * time.Second
)

// concSchema tags every row with the writer and the append (seq) that wrote
// it, and its position inside that append.
var concSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "writer", Type: iceberg.PrimitiveTypes.Int32, Required: true},
	iceberg.NestedField{ID: 2, Name: "seq", Type: iceberg.PrimitiveTypes.Int32, Required: true},
	iceberg.NestedField{ID: 3, Name: "row", Type: iceberg.PrimitiveTypes.Int32, Required: true},
)

// concRows is the number of rows append (w, seq) writes: 1..4, varied so a
// lost or doubled append changes the total.
func concRows(w, seq int) int { return 1 + (w*7+seq*3)%4 }

// concConflicts counts 409 answers to table commits (POST
// .../tables/{table}), i.e. the CommitFailedExceptions clients saw.
type concConflicts struct{ conflicts atomic.Int64 }

// newConcClient returns a fresh iceberg-go REST client (own connection
// pool) whose commit conflicts are counted in cc.
func newConcClient(t *testing.T, srv *testserver.Server, cc *concConflicts) *rest.Catalog {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	count := concRoundTrip(func(r *http.Request) (*http.Response, error) {
		resp, err := tr.RoundTrip(r)
		if err == nil && resp.StatusCode == http.StatusConflict && r.Method == http.MethodPost && strings.Contains(r.URL.Path, "/tables/") {
			cc.conflicts.Add(1)
		}
		return resp, err
	})
	cat, err := rest.NewCatalog(context.Background(), "tarn", srv.URL, rest.WithCustomTransport(count))
	require.NoError(t, err)
	return cat
}

type concRoundTrip func(*http.Request) (*http.Response, error)

func (f concRoundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// concBatch builds the Arrow record of append (w, seq).
func concBatch(t *testing.T, w, seq int) arrow.RecordBatch {
	t.Helper()
	sc, err := table.SchemaToArrowSchema(concSchema, nil, false, false)
	require.NoError(t, err)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for r := range concRows(w, seq) {
		b.Field(0).(*array.Int32Builder).Append(int32(w))
		b.Field(1).(*array.Int32Builder).Append(int32(seq))
		b.Field(2).(*array.Int32Builder).Append(int32(r))
	}
	return b.NewRecordBatch()
}

// concAppend appends batch (w, seq) to the table named id through cat,
// the way a real client does: on CommitFailedException (409) it reloads the
// table, rebuilds the append on the new head and tries again, after a short
// jittered backoff. It returns how many 409s it got. Any other error fails
// the test: a 5xx would leave the outcome unknown. The backoff only spaces
// retries out; nothing is asserted on timing.
func concAppend(ctx context.Context, t *testing.T, cat *rest.Catalog, id table.Identifier, w, seq int) int {
	conflicts := 0
	for {
		tbl, err := cat.LoadTable(ctx, id)
		if err != nil {
			t.Errorf("writer %d seq %d: load: %v", w, seq, err)
			return conflicts
		}
		rec := concBatch(t, w, seq)
		rdr, err := array.NewRecordReader(rec.Schema(), []arrow.RecordBatch{rec})
		rec.Release()
		if err != nil {
			t.Errorf("writer %d seq %d: reader: %v", w, seq, err)
			return conflicts
		}
		_, err = tbl.Append(ctx, rdr, iceberg.Properties{"tarn.test.tag": fmt.Sprintf("%d/%d", w, seq)})
		rdr.Release()
		switch {
		case err == nil:
			return conflicts
		case errors.Is(err, rest.ErrCommitFailed) && errors.Is(err, table.ErrCommitFailed):
			conflicts++
			if ctx.Err() != nil {
				t.Errorf("writer %d seq %d: gave up after %d conflicts: %v", w, seq, conflicts, err)
				return conflicts
			}
			// Full-jitter exponential backoff, 4 ms doubling up to 128 ms.
			time.Sleep(time.Duration(rand.Int64N(int64(4*time.Millisecond) << min(conflicts-1, 5))))
		default:
			t.Errorf("writer %d seq %d: append: %v", w, seq, err)
			return conflicts
		}
	}
}

type concTag struct{ writer, seq, row int32 }

// concScan reads every row of the table's current snapshot.
func concScan(ctx context.Context, t *testing.T, cat *rest.Catalog, id table.Identifier) (*table.Table, map[concTag]int) {
	t.Helper()
	tbl, err := cat.LoadTable(ctx, id)
	require.NoError(t, err)
	at, err := tbl.Scan().ToArrowTable(ctx)
	require.NoError(t, err)
	defer at.Release()
	tags := map[concTag]int{}
	tr := array.NewTableReader(at, 1024)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		ws := rec.Column(0).(*array.Int32)
		ss := rec.Column(1).(*array.Int32)
		rs := rec.Column(2).(*array.Int32)
		for i := range int(rec.NumRows()) {
			tags[concTag{ws.Value(i), ss.Value(i), rs.Value(i)}]++
		}
	}
	require.NoError(t, tr.Err())
	return tbl, tags
}

// concCommitCounters reads tarn_catalog_commit_retries_total and
// tarn_catalog_commit_conflicts_total from the server's /metrics (its own
// registry); callers compare before and after their own setup.
func concCommitCounters(t *testing.T, srv *testserver.Server) (retries, conflicts float64) {
	t.Helper()
	m := scrapeMetrics(t, srv.URL)
	return m["tarn_catalog_commit_retries_total"], m["tarn_catalog_commit_conflicts_total"]
}

// concAssertAppends checks that the table named id holds exactly the appends
// listed in want (writer -> seqs), each row once, and one snapshot per append.
func concAssertAppends(ctx context.Context, t *testing.T, cat *rest.Catalog, id table.Identifier, want map[int][]int) {
	t.Helper()
	tbl, tags := concScan(ctx, t, cat, id)
	wantRows, wantAppends := 0, 0
	for w, seqs := range want {
		for _, seq := range seqs {
			wantAppends++
			for r := range concRows(w, seq) {
				wantRows++
				assert.Equal(t, 1, tags[concTag{int32(w), int32(seq), int32(r)}], "table %v: row %d of append writer=%d seq=%d", id, r, w, seq)
			}
		}
	}
	gotRows := 0
	for _, n := range tags {
		gotRows += n
	}
	assert.Equal(t, wantRows, gotRows, "table %v: row count", id)
	assert.Len(t, tags, wantRows, "table %v: distinct (writer, seq, row) tags", id)
	assert.Len(t, tbl.Metadata().Snapshots(), wantAppends, "table %v: one snapshot per append", id)

	// The snapshots form one chain, each append's summary tag once.
	seen := map[string]bool{}
	n := 0
	for snap := tbl.CurrentSnapshot(); snap != nil; n++ {
		tagv := snap.Summary.Properties["tarn.test.tag"]
		assert.False(t, seen[tagv], "table %v: append %s committed twice", id, tagv)
		seen[tagv] = true
		if snap.ParentSnapshotID == nil {
			break
		}
		snap = tbl.SnapshotByID(*snap.ParentSnapshotID)
		require.NotNil(t, snap, "table %v: parent snapshot missing", id)
	}
	assert.Equal(t, wantAppends, n+1, "table %v: snapshots on the main branch's chain", id)
}

// TestConcurrentAppendsOneTable: eight clients append to one table at once,
// retrying on 409 as real clients do; every acknowledged append lands
// exactly once and nothing else does.
func TestConcurrentAppendsOneTable(t *testing.T) {
	// Not parallel: eight clients against a deadline (concDeadline)
	// already load the machine on their own.
	ctx, cancel := context.WithTimeout(context.Background(), concDeadline)
	defer cancel()
	srv := testserver.Start(t)
	admin := newRESTCatalog(t, srv)
	require.NoError(t, admin.CreateNamespace(ctx, table.Identifier{"conc"}, nil))
	id := table.Identifier{"conc", "events"}
	_, err := admin.CreateTable(ctx, id, concSchema)
	require.NoError(t, err)
	retries0, conflicts0 := concCommitCounters(t, srv)

	var cc concConflicts
	var mu sync.Mutex
	acked := map[int][]int{}
	var wg sync.WaitGroup
	for w := range concWriters {
		cat := newConcClient(t, srv, &cc)
		wg.Go(func() {
			for seq := range concAppendsPerWriter {
				concAppend(ctx, t, cat, id, w, seq)
				if t.Failed() {
					return
				}
				mu.Lock()
				acked[w] = append(acked[w], seq)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.False(t, t.Failed())
	require.Len(t, acked, concWriters)

	concAssertAppends(ctx, t, admin, id, acked)
	retries1, conflicts1 := concCommitCounters(t, srv)
	t.Logf("%d appends from %d writers: clients got %d 409s; server rebased %v commits and rejected %v with CommitFailed",
		concWriters*concAppendsPerWriter, concWriters, cc.conflicts.Load(), retries1-retries0, conflicts1-conflicts0)
	// Each 409 a client saw is a commit the server counted as a conflict,
	// and the server counted no other (the counter is the test server's
	// own).
	assert.Equal(t, float64(cc.conflicts.Load()), conflicts1-conflicts0)
}

// TestConcurrentAppendsManyTables: eight clients append to eight tables at
// once, each append going to a table picked round-robin, so commits to one
// table come from several clients; every table ends with exactly its
// acknowledged appends.
func TestConcurrentAppendsManyTables(t *testing.T) {
	// Not parallel: eight clients against a deadline (concDeadline)
	// already load the machine on their own.
	const tables = 8
	ctx, cancel := context.WithTimeout(context.Background(), concDeadline)
	defer cancel()
	srv := testserver.Start(t)
	admin := newRESTCatalog(t, srv)
	require.NoError(t, admin.CreateNamespace(ctx, table.Identifier{"conc"}, nil))
	ids := make([]table.Identifier, tables)
	for i := range ids {
		ids[i] = table.Identifier{"conc", fmt.Sprintf("t%d", i)}
		_, err := admin.CreateTable(ctx, ids[i], concSchema)
		require.NoError(t, err)
	}
	retries0, conflicts0 := concCommitCounters(t, srv)

	var cc concConflicts
	var mu sync.Mutex
	acked := make([]map[int][]int, tables)
	for i := range acked {
		acked[i] = map[int][]int{}
	}
	var wg sync.WaitGroup
	for w := range concWriters {
		cat := newConcClient(t, srv, &cc)
		wg.Go(func() {
			for seq := range concAppendsPerWriter {
				ti := (w + seq) % tables
				concAppend(ctx, t, cat, ids[ti], w, seq)
				if t.Failed() {
					return
				}
				mu.Lock()
				acked[ti][w] = append(acked[ti][w], seq)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.False(t, t.Failed())

	total := 0
	for i, id := range ids {
		concAssertAppends(ctx, t, admin, id, acked[i])
		for _, seqs := range acked[i] {
			total += len(seqs)
		}
	}
	assert.Equal(t, concWriters*concAppendsPerWriter, total)
	retries1, conflicts1 := concCommitCounters(t, srv)
	t.Logf("%d appends over %d tables: clients got %d 409s; server rebased %v commits and rejected %v with CommitFailed",
		total, tables, cc.conflicts.Load(), retries1-retries0, conflicts1-conflicts0)
	assert.Equal(t, float64(cc.conflicts.Load()), conflicts1-conflicts0, "a 409 per counted conflict")
}

// TestConcurrentPropertyCommitsOneTable: eight clients set properties on
// one table at once. iceberg-go sends these with only assert-table-uuid,
// which still holds after another commit, so the server rebases a commit
// that lost the pointer swap instead of answering 409; every acknowledged
// property is in the final metadata.
func TestConcurrentPropertyCommitsOneTable(t *testing.T) {
	// Not parallel, as TestConcurrentAppendsOneTable.
	ctx, cancel := context.WithTimeout(context.Background(), concDeadline)
	defer cancel()
	srv := testserver.Start(t)
	admin := newRESTCatalog(t, srv)
	require.NoError(t, admin.CreateNamespace(ctx, table.Identifier{"conc"}, nil))
	id := table.Identifier{"conc", "props"}
	_, err := admin.CreateTable(ctx, id, concSchema)
	require.NoError(t, err)
	retries0, conflicts0 := concCommitCounters(t, srv)

	var cc concConflicts
	var acked sync.Map
	var wg sync.WaitGroup
	for w := range concWriters {
		cat := newConcClient(t, srv, &cc)
		wg.Go(func() {
			for seq := range concAppendsPerWriter {
				k, v := fmt.Sprintf("w%d.s%d", w, seq), fmt.Sprint(w*100+seq)
				for {
					tbl, err := cat.LoadTable(ctx, id)
					if err != nil {
						t.Errorf("load: %v", err)
						return
					}
					txn := tbl.NewTransaction()
					if err := txn.SetProperties(iceberg.Properties{k: v}); err != nil {
						t.Errorf("set properties: %v", err)
						return
					}
					_, err = txn.Commit(ctx)
					if err == nil {
						acked.Store(k, v)
						break
					}
					if !errors.Is(err, table.ErrCommitFailed) || ctx.Err() != nil {
						t.Errorf("commit %s: %v", k, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	require.False(t, t.Failed())

	tbl, err := admin.LoadTable(ctx, id)
	require.NoError(t, err)
	n := 0
	acked.Range(func(k, v any) bool {
		n++
		assert.Equal(t, v, tbl.Properties()[k.(string)], "property %s", k)
		return true
	})
	assert.Equal(t, concWriters*concAppendsPerWriter, n)
	assert.Empty(t, tbl.Metadata().Snapshots(), "property commits add no snapshot")
	retries1, conflicts1 := concCommitCounters(t, srv)
	t.Logf("%d property commits from %d writers: clients got %d 409s; server rebased %v commits and rejected %v with CommitFailed",
		n, concWriters, cc.conflicts.Load(), retries1-retries0, conflicts1-conflicts0)
	assert.Equal(t, float64(cc.conflicts.Load()), conflicts1-conflicts0, "a 409 per counted conflict")
}
