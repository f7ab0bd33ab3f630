package catalog_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/internal/testserver"
	"github.com/tarnhq/tarn/spec"
)

// timedStore adds up the time spent in CommitPointers (the bbolt
// transaction and its fsync), so a commit benchmark can report it apart
// from staging and the metadata file write.
type timedStore struct {
	catalog.Store
	nanos atomic.Int64
}

func (s *timedStore) CommitPointers(ctx context.Context, changes []catalog.PointerChange) error {
	t0 := time.Now()
	err := s.Store.CommitPointers(ctx, changes)
	s.nanos.Add(int64(time.Since(t0)))
	return err
}

// benchAppend is what bench/catalog's client sends for an append of one
// data file: load the table, then add-snapshot (parent = main, next
// sequence number) and set-snapshot-ref main, asserting main's snapshot.
// It reports whether the commit lost to another writer (409).
func benchAppend(ctx context.Context, cat *catalog.Catalog, wh *catalog.Warehouse, id catalog.Ident) (bool, error) {
	l, err := cat.LoadTable(ctx, wh, id)
	if err != nil {
		return false, err
	}
	// Only the fields an appender needs, as bench/catalog's client reads
	// them: the benchmark measures the server's side.
	var md struct {
		Location        string `json:"location"`
		LastSequence    int64  `json:"last-sequence-number"`
		CurrentSchemaID int    `json:"current-schema-id"`
		Refs            map[string]struct {
			SnapshotID int64 `json:"snapshot-id"`
		} `json:"refs"`
	}
	if err := json.Unmarshal(l.MetadataJSON, &md); err != nil {
		return false, err
	}
	snapID := rand.Int64()
	snap := table.Snapshot{
		SnapshotID:     snapID,
		SequenceNumber: md.LastSequence + 1,
		TimestampMs:    time.Now().UnixMilli(),
		ManifestList:   fmt.Sprintf("%s/metadata/snap-%d-1-bench.avro", md.Location, snapID),
		Summary: &table.Summary{Operation: table.OpAppend, Properties: iceberg.Properties{
			"added-data-files": "1", "added-records": "1000", "added-files-size": "20000"}},
		SchemaID: &md.CurrentSchemaID,
	}
	var cur *int64
	if ref, ok := md.Refs["main"]; ok {
		snap.ParentSnapshotID = &ref.SnapshotID
		cur = &ref.SnapshotID
	}
	_, err = cat.CommitTable(ctx, wh, catalog.TableCommit{
		Ident:        id,
		Requirements: []table.Requirement{table.AssertRefSnapshotID("main", cur)},
		Updates: []table.Update{table.NewAddSnapshotUpdate(&snap),
			table.NewSetSnapshotRefUpdate("main", snapID, table.BranchRef, -1, -1, -1)},
	})
	if errors.Is(err, catalog.ErrCommitFailed) {
		return true, nil
	}
	return false, err
}

// cpuTime is the process's user + system CPU time: on a shared machine
// it moves less with the load than wall time does.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCommitHotTable measures appends to one table on the default
// store (bbolt, local warehouse, every commit durable), as bench/catalog's
// commit-hot does over HTTP: b.N successful commits, by 1 or 8 committers
// that reload and retry after a 409. It reports commits/s, the share of
// each commit spent in the store's CommitPointers (store-ms/op) and the
// 409s per commit.
func BenchmarkCommitHotTable(b *testing.B) {
	for _, committers := range []int{1, 8} {
		b.Run(fmt.Sprintf("committers=%d", committers), func(b *testing.B) {
			ctx := context.Background()
			var ts *timedStore
			cat, wh, _ := testserver.NewCatalog(b, b.TempDir(), func(s catalog.Store) catalog.Store {
				ts = &timedStore{Store: s}
				return ts
			})
			if err := cat.CreateNamespace(ctx, catalog.Namespace{"bench"}, nil); err != nil {
				b.Fatal(err)
			}
			if _, err := cat.CreateTable(ctx, wh, catalog.Namespace{"bench"}, spec.CreateTableRequest{
				Name:   "hot",
				Schema: iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true}),
			}); err != nil {
				b.Fatal(err)
			}
			id := catalog.Ident{Namespace: catalog.Namespace{"bench"}, Name: "hot"}
			ts.nanos.Store(0)
			var left atomic.Int64
			left.Store(int64(b.N))
			var conflicts atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			t0, cpu0 := time.Now(), cpuTime()
			for range committers {
				wg.Go(func() {
					for left.Add(-1) >= 0 {
						for {
							lost, err := benchAppend(ctx, cat, wh, id)
							if err != nil {
								b.Error(err)
								return
							}
							if !lost {
								break
							}
							conflicts.Add(1)
						}
					}
				})
			}
			wg.Wait()
			el := time.Since(t0)
			b.StopTimer()
			b.ReportMetric(float64(cpuTime()-cpu0)/1e6/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(b.N)/el.Seconds(), "commits/s")
			b.ReportMetric(float64(ts.nanos.Load())/1e6/float64(b.N), "store-ms/op")
			b.ReportMetric(float64(conflicts.Load())/float64(b.N), "409/op")
		})
	}
}
