package pipeline_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/pipeline"
	"github.com/tarnhq/tarn/maintenance"
)

// upsertSchema is the value of the upsert tests' records: the key's id
// again, and a version.
const upsertSchema = `{"type":"record","name":"kv","fields":[{"name":"id","type":"long"},{"name":"v","type":"long"}]}`

func newUpsertEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t, upsertSchema, func(c *pipeline.Config) { c.Mode = pipeline.ModeUpsert })
}

func (e *env) upsertConfig() pipeline.Config {
	cfg := e.config()
	cfg.Mode = pipeline.ModeUpsert
	// A few dozen records per batch: many batches, many files.
	cfg.TargetFileSizeBytes = 2 << 10
	return cfg
}

// upsertRecord is a change of key id (partition id%3, as Kafka's key
// hashing would keep one key in one partition): a row with version v, or
// a tombstone when del.
func (e *env) upsertRecord(id int, v int64, del bool) *kgo.Record {
	r := &kgo.Record{Partition: int32(id % testPartitions), Key: fmt.Appendf(nil, `{"id": %d}`, id)}
	if !del {
		r.Value = e.encode(e.schemaID, e.writer, map[string]any{"id": int64(id), "v": v})
	}
	return r
}

// upsertRows reads the table back through iceberg-go's scan (which
// applies position deletes): id → v, failing on a duplicate id.
func (e *env) upsertRows() map[int64]int64 {
	e.t.Helper()
	tbl, err := e.tio.LoadTable(e.ctx, table.Identifier{"air", "flights"})
	require.NoError(e.t, err)
	out := map[int64]int64{}
	if tbl.CurrentSnapshot() == nil {
		return out
	}
	res, err := tbl.Scan(table.WithSelectedFields("id", "v")).ToArrowTable(e.ctx)
	require.NoError(e.t, err)
	defer res.Release()
	ids, vs := res.Column(0).Data().Chunks(), res.Column(1).Data().Chunks()
	for c := range ids {
		id, v := ids[c].(*array.Int64), vs[c].(*array.Int64)
		for i := range id.Len() {
			_, dup := out[id.Value(i)]
			require.False(e.t, dup, "key %d has two live rows", id.Value(i))
			out[id.Value(i)] = v.Value(i)
		}
	}
	return out
}

// TestUpsertModel holds an upsert table to an in-memory map through
// random upserts and tombstones on random keys (deletes of absent keys,
// many changes of one key in one batch), with the pipeline restarted at
// random moments and compaction (the maintenance job, committing
// between the pipeline's batches) run at random: after every round the table, read by iceberg-go's scan,
// equals the map exactly, with one row per key. TARN_UPSERT_ROUNDS runs
// longer (docs/upsert.md).
func TestUpsertModel(t *testing.T) {
	seed := time.Now().UnixNano()
	if s := envInt("TARN_UPSERT_SEED"); s != 0 {
		seed = int64(s)
	}
	rounds := 6
	if n := envInt("TARN_UPSERT_ROUNDS"); n > 0 {
		rounds = n
	}
	t.Logf("seed %d (TARN_UPSERT_SEED), %d rounds", seed, rounds)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))

	e := newUpsertEnv(t)
	sched, err := maintenance.New(maintenance.Config{Disabled: true}, maintenance.Deps{Catalog: e.cat,
		Owned: func(catalog.Ident) bool { return true }})
	require.NoError(t, err)
	var compactions, compacted int
	model := map[int64]int64{}
	var version int64
	p := e.newPipeline(e.upsertConfig(), nil)
	r := e.start(p)
	for round := range rounds {
		keys := 10 + rng.IntN(60)
		n := 50 + rng.IntN(250)
		recs := make([]*kgo.Record, n)
		for i := range recs {
			id := rng.IntN(keys)
			version++
			del := rng.IntN(3) == 0
			recs[i] = e.upsertRecord(id, version, del)
			if del {
				delete(model, int64(id))
			} else {
				model[int64(id)] = version
			}
		}
		// Produce in a few chunks, restarting the pipeline in between at
		// random: a restart rebuilds the key index from the table.
		for len(recs) > 0 {
			k := min(len(recs), 1+rng.IntN(len(recs)))
			e.produce(recs[:k]...)
			recs = recs[k:]
			if rng.IntN(3) == 0 {
				// While the pipeline runs: its next commit finds main
				// moved and re-reads on a fresh key index.
				res, err := sched.RunJobs(e.ctx, e.ident, []string{maintenance.JobCompact})
				require.NoError(t, err)
				compactions++
				if res[0].Skipped == "" {
					compacted++
				}
			}
			if rng.IntN(3) == 0 {
				time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
				require.NoError(t, r.stop(t))
				p = e.newPipeline(e.upsertConfig(), nil)
				r = e.start(p)
			}
		}
		e.waitHead(r, e.nonEmptyEnds())
		require.Equal(t, model, e.upsertRows(), "round %d (seed %d)", round, seed)
		// The status follows the commit the table already shows.
		require.Eventually(t, func() bool { return p.Status().IndexKeys == int64(len(model)) }, waitTimeout, 10*time.Millisecond,
			"round %d: index keys %d, want %d", round, p.Status().IndexKeys, len(model))
	}
	require.NoError(t, r.stop(t))
	t.Logf("%d compactions, %d of them rewrote files", compactions, compacted)

	// The table's format is what every engine reads: v2, position
	// deletes only, each scoped to one data file.
	tbl, err := e.tio.LoadTable(e.ctx, table.Identifier{"air", "flights"})
	require.NoError(t, err)
	require.Equal(t, 2, tbl.Metadata().Version())
	tasks, err := tbl.Scan().PlanFiles(e.ctx)
	require.NoError(t, err)
	var deletes int
	for _, task := range tasks {
		for _, d := range task.DeleteFiles {
			require.Equal(t, iceberg.EntryContentPosDeletes, d.ContentType())
			deletes++
		}
	}
	require.Positive(t, deletes, "no position deletes were written")
}

// TestUpsertBatchFolding pins the semantics inside one batch: many
// changes of one key leave its last, a delete of an absent key is a
// no-op, a key deleted in the batch writes no row at all.
func TestUpsertBatchFolding(t *testing.T) {
	e := newUpsertEnv(t)
	e.produce(
		e.upsertRecord(1, 1, false), e.upsertRecord(1, 2, false), e.upsertRecord(1, 3, false),
		e.upsertRecord(4, 1, false), e.upsertRecord(4, 0, true),
		e.upsertRecord(7, 0, true),
	)
	p := e.newPipeline(e.upsertConfig(), nil)
	r := e.start(p)
	e.waitHead(r, e.nonEmptyEnds())
	require.Equal(t, map[int64]int64{1: 3}, e.upsertRows())
	// The status follows the commit the table already shows.
	require.Eventually(t, func() bool { return p.Status().Commits == 1 }, waitTimeout, 10*time.Millisecond)
	st := p.Status()
	require.Equal(t, int64(4), st.Upserts)
	require.Equal(t, int64(2), st.Deletes)
	require.Equal(t, int64(2), st.NoopDeletes, "key 4 never committed, key 7 never existed")
	require.Equal(t, int64(1), st.Rows, "only the last change of key 1 is written")
	require.Equal(t, int64(0), st.RowsDeleted)

	// A second batch replaces key 1's committed row and deletes it again.
	e.produce(e.upsertRecord(1, 9, false))
	e.waitHead(r, e.nonEmptyEnds())
	require.Equal(t, map[int64]int64{1: 9}, e.upsertRows())
	e.produce(e.upsertRecord(1, 0, true))
	e.waitHead(r, e.nonEmptyEnds())
	require.Empty(t, e.upsertRows())
	require.Eventually(t, func() bool { return p.Status().Commits == 3 }, waitTimeout, 10*time.Millisecond)
	st = p.Status()
	require.Equal(t, int64(2), st.RowsDeleted)
	require.Equal(t, int64(0), st.IndexKeys)
	require.NoError(t, r.stop(t))
}

// nonEmptyEnds are endOffsets without the partitions nothing was
// produced to, which the table's offsets do not list.
func (e *env) nonEmptyEnds() map[int32]int64 {
	ends := e.endOffsets()
	for p, o := range ends {
		if o == 0 {
			delete(ends, p)
		}
	}
	return ends
}

func envInt(name string) int {
	n, _ := strconv.Atoi(os.Getenv(name))
	return n
}
