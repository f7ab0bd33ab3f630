package pipeline_test

import (
	"encoding/base64"
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/pipeline"
	"github.com/tarnhq/tarn/offsets"
)

// badCase is one bad record of the error-mode tests.
type badCase struct {
	kind  pipeline.ErrorKind
	part  int32
	off   int64
	value []byte
	// schemaID is the id the dlq row carries; -1 for null.
	schemaID int
}

// badRecords returns one bad record of every record-level kind, after
// fs[:30] (offsets 0..9 of each partition): a bad magic byte, a
// truncated payload, an unknown schema id, a string that is not UTF-8 (a
// value that does not fit its column) and a tombstone.
func (e *env) badRecords(fs []flight) []badCase {
	good := e.encode(e.schemaID, e.writer, fs[300])
	notUTF8 := fs[301]
	notUTF8.Origin = "\xff\xfe"
	return []badCase{
		{kind: pipeline.KindBadHeader, part: 1, off: 10, value: append([]byte{1}, good[1:]...), schemaID: -1},
		{kind: pipeline.KindMalformed, part: 2, off: 10, value: good[:len(good)-3], schemaID: e.schemaID},
		{kind: pipeline.KindUnknownSchema, part: 0, off: 10, value: e.encode(9999, e.writer, fs[300]), schemaID: 9999},
		{kind: pipeline.KindOutOfRange, part: 1, off: 11, value: e.encode(e.schemaID, e.writer, notUTF8), schemaID: e.schemaID},
		{kind: pipeline.KindNoValue, part: 0, off: 11, value: nil, schemaID: -1},
	}
}

func (e *env) produceBad(bad ...badCase) {
	e.t.Helper()
	for _, b := range bad {
		e.produce(&kgo.Record{Partition: b.part, Key: []byte("bad-" + string(b.kind)), Value: b.value,
			Headers: []kgo.RecordHeader{{Key: "why", Value: []byte(b.kind)}}})
	}
}

func (e *env) dlqTable() (*table.Table, bool) {
	e.t.Helper()
	tbl, err := e.tio.LoadTable(e.ctx, table.Identifier{"air", "flights_dlq"})
	if errors.Is(err, catalog.ErrNoSuchTable) {
		return nil, false
	}
	require.NoError(e.t, err)
	return tbl, true
}

// TestErrorModes: every record-level kind of bad record in each error
// mode. suspend stops at the record (one subtest per kind) with
// everything before it in the table; skip counts each kind and commits
// the good rows, without a dead letter table; dlq does the same and
// writes each bad record, raw, to air.flights_dlq with its kind, error,
// schema id and _kafka column.
func TestErrorModes(t *testing.T) {
	fs := loadFlights(t)
	for _, kind := range []pipeline.ErrorKind{pipeline.KindBadHeader, pipeline.KindMalformed, pipeline.KindUnknownSchema,
		pipeline.KindOutOfRange, pipeline.KindNoValue} {
		t.Run("suspend/"+string(kind), func(t *testing.T) {
			e := newEnv(t)
			i := slices.IndexFunc(e.badRecords(fs), func(b badCase) bool { return b.kind == kind })
			b := e.badRecords(fs)[i]
			b.off = 10
			e.budget = pipeline.NewBudget(1 << 20)
			e.produceFlights(fs[:30], 0)
			e.produceBad(b)
			e.produceFlights(fs[30:60], 30)

			p := e.newPipeline(e.config(), nil)
			var se *pipeline.SuspendedError
			require.ErrorAs(t, e.start(p).wait(t), &se)
			assert.Equal(t, kind, se.Kind)
			assert.Equal(t, b.part, se.Partition)
			assert.Equal(t, int64(10), se.Offset)
			assert.Contains(t, se.Reason, "switch the error mode to skip or dlq")
			assert.Equal(t, int64(10), e.head()[b.part])
			s := e.scan()
			assert.Equal(t, span(0, 10), s.offsets(b.part))
			assert.Empty(t, s.duplicates())
			assert.Equal(t, map[pipeline.ErrorKind]int64{kind: 1}, p.Status().Errors)
			_, exists := e.dlqTable()
			assert.False(t, exists)
			assert.Zero(t, e.budget.Used(), "the reservation of the record suspended at is returned")
		})
	}

	for _, mode := range []pipeline.ErrorMode{pipeline.ErrorModeSkip, pipeline.ErrorModeDLQ} {
		t.Run(string(mode), func(t *testing.T) {
			e := newEnv(t)
			e.budget = pipeline.NewBudget(1 << 20)
			bad := e.badRecords(fs)
			e.produceFlights(fs[:30], 0)
			e.produceBad(bad...)
			e.produceFlights(fs[30:60], 30)

			cfg := e.config()
			cfg.ErrorMode = mode
			p := e.newPipeline(cfg, nil)
			r := e.start(p)
			e.waitHead(r, e.endOffsets())
			require.NoError(t, r.stop(t))

			s := e.scan()
			assert.Equal(t, totals(fs[:60]), s.totals())
			assert.Empty(t, s.duplicates())
			st := p.Status()
			want := map[pipeline.ErrorKind]int64{}
			for _, b := range bad {
				want[b.kind]++
			}
			assert.Equal(t, want, st.Errors)
			assert.Zero(t, e.budget.Used(), "every reservation returned")

			dlq, exists := e.dlqTable()
			if mode == pipeline.ErrorModeSkip {
				assert.False(t, exists, "skip mode never creates the dead letter table")
				assert.Zero(t, st.DLQRows)
				return
			}
			require.True(t, exists, "created on first use")
			assert.Equal(t, int64(len(bad)), st.DLQRows)
			checkDLQ(t, dlq, bad)
			assert.Len(t, dlq.Metadata().Snapshots(), 1, "one batch with bad records, one dlq commit")
		})
	}
}

// checkDLQ asserts that the dead letter table holds exactly bad, raw.
func checkDLQ(t *testing.T, dlq *table.Table, bad []badCase) {
	t.Helper()
	rows := scanTableRows(t, dlq)
	require.Len(t, rows, len(bad))
	for _, b := range bad {
		i := slices.IndexFunc(rows, func(r map[string]any) bool {
			k := r["_kafka"].(map[string]any)
			return num(t, k["partition"]) == int64(b.part) && num(t, k["offset"]) == b.off
		})
		require.GreaterOrEqual(t, i, 0, "no dlq row for %s at %d/%d", b.kind, b.part, b.off)
		r := rows[i]
		assert.Equal(t, string(b.kind), r["error_kind"])
		assert.NotEmpty(t, r["error"])
		if b.schemaID < 0 {
			assert.Nil(t, r["schema_id"], b.kind)
		} else {
			assert.Equal(t, int64(b.schemaID), num(t, r["schema_id"]), b.kind)
		}
		if b.value == nil {
			assert.Nil(t, r["value"], "a tombstone's value is null")
		} else {
			assert.Equal(t, b.value, unbase64(t, r["value"]), "the raw value of %s", b.kind)
		}
		k := r["_kafka"].(map[string]any)
		assert.Equal(t, []byte("bad-"+string(b.kind)), unbase64(t, k["key"]))
		hs := k["headers"].([]any)
		require.Len(t, hs, 1)
		h := hs[0].(map[string]any)
		assert.Equal(t, "why", h["key"])
		assert.Equal(t, []byte(b.kind), unbase64(t, h["value"]))
	}
}

func unbase64(t *testing.T, v any) []byte {
	t.Helper()
	s, ok := v.(string)
	require.True(t, ok, "%v (%T)", v, v)
	b, err := base64.StdEncoding.DecodeString(s)
	require.NoError(t, err)
	return b
}

// TestDLQCreatedAtEnsureTable: in error mode dlq EnsureTable creates the
// dead letter table beside the topic's (and is idempotent), with the dlq
// columns, partitioned by day(_kafka.timestamp).
func TestDLQCreatedAtEnsureTable(t *testing.T) {
	e := newEnvWith(t, flightsSchema, func(c *pipeline.Config) { c.ErrorMode = pipeline.ErrorModeDLQ })
	dlq, exists := e.dlqTable()
	require.True(t, exists)
	assert.True(t, pipeline.DLQTableSchema().Equals(dlq.Schema()), "%s", dlq.Schema())
	requireField(t, dlq.Schema(), "schema_id", iceberg.PrimitiveTypes.Int32, false)
	requireField(t, dlq.Schema(), "value", iceberg.PrimitiveTypes.Binary, false)
	ps := dlq.Spec()
	require.Equal(t, 1, ps.NumFields())
	assert.Equal(t, iceberg.DayTransform{}, ps.Field(0).Transform)
	assert.Equal(t, "zstd", dlq.Properties()[pipeline.CompressionProperty])

	cfg := e.config()
	cfg.ErrorMode = pipeline.ErrorModeDLQ
	created, err := pipeline.EnsureDLQTable(e.ctx, e.tio, cfg)
	require.NoError(t, err)
	assert.False(t, created)
}

// TestDLQCrashBetweenCommits: the dead letter rows of a batch are
// committed before the batch; a failure between the two (the main
// commit fails after the dlq commit, as if the process died there) makes
// the pipeline re-read the records. The dlq table's head is already past
// the bad ones, so they are not written again; the main table gets each
// good row once. "once": one failed main commit, recovered in the same
// Run. "restart": every main commit fails until Run gives up; a new
// pipeline then continues from both tables.
func TestDLQCrashBetweenCommits(t *testing.T) {
	for _, restart := range []bool{false, true} {
		name := "once"
		if restart {
			name = "restart"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			fs := loadFlights(t)
			bad := e.badRecords(fs)
			e.produceFlights(fs[:30], 0)
			e.produceBad(bad...)
			e.produceFlights(fs[30:60], 30)

			var dlqCommits, failedMain atomic.Int32
			var down atomic.Bool
			down.Store(true)
			hook := &hookCatalog{CatalogIO: e.tio}
			hook.onCommit = func(ident table.Identifier, updates []table.Update) error {
				if !slices.ContainsFunc(updates, func(u table.Update) bool { return u.Action() == table.UpdateAddSnapshot }) {
					return nil
				}
				if ident[len(ident)-1] == "flights_dlq" {
					dlqCommits.Add(1)
					return nil
				}
				if down.Load() && dlqCommits.Load() > 0 {
					if !restart {
						down.Store(false)
					}
					failedMain.Add(1)
					return errors.New("simulated crash: the main commit never happened")
				}
				return nil
			}
			cfg := e.config()
			cfg.ErrorMode = pipeline.ErrorModeDLQ
			cfg.TargetFileSizeBytes = 1 << 30 // one batch
			p := e.newPipeline(cfg, hook)
			r := e.start(p)
			if restart {
				err := r.wait(t)
				require.Error(t, err)
				assert.Contains(t, err.Error(), "flushes in a row failed")
				assert.Greater(t, failedMain.Load(), int32(1))
				assert.Empty(t, snapshots(t, e), "nothing reached the main table")
				down.Store(false)
				p = e.newPipeline(cfg, hook)
				r = e.start(p)
			}
			e.waitHead(r, e.endOffsets())
			require.NoError(t, r.stop(t))

			assert.Equal(t, int32(1), dlqCommits.Load(), "the re-read bad records were already in the dlq table")
			s := e.scan()
			assert.Equal(t, totals(fs[:60]), s.totals())
			assert.Empty(t, s.duplicates())
			dlq, ok := e.dlqTable()
			require.True(t, ok)
			checkDLQ(t, dlq, bad)
			if restart {
				assert.Zero(t, p.Status().DLQRows, "the new pipeline wrote no dlq row: its bad records were in the table already")
			} else {
				assert.Equal(t, int32(1), failedMain.Load())
				assert.Equal(t, int64(len(bad)), p.Status().DLQRows)
			}
		})
	}
}

// TestDLQModeSwitched: a topic that ran in skip mode (no dead letter
// table) is switched to dlq: the table is created on the first bad
// record, and only bad records read in dlq mode land in it.
func TestDLQModeSwitched(t *testing.T) {
	e := newEnv(t)
	fs := loadFlights(t)
	bad := e.badRecords(fs)
	e.produceFlights(fs[:30], 0)
	e.produceBad(bad[:2]...) // partitions 1 and 2, offset 10

	cfg := e.config()
	cfg.ErrorMode = pipeline.ErrorModeSkip
	p := e.newPipeline(cfg, nil)
	r := e.start(p)
	e.waitHead(r, e.endOffsets())
	require.NoError(t, r.stop(t))
	_, exists := e.dlqTable()
	require.False(t, exists)

	e.produceBad(bad[2:]...)
	cfg.ErrorMode = pipeline.ErrorModeDLQ
	p = e.newPipeline(cfg, nil)
	r = e.start(p)
	e.waitHead(r, e.endOffsets())
	require.NoError(t, r.stop(t))
	dlq, exists := e.dlqTable()
	require.True(t, exists)
	checkDLQ(t, dlq, bad[2:])
	assert.Equal(t, totals(fs[:30]), e.scan().totals())
	o, found, err := offsets.Read(dlq.Metadata())
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, map[int32]int64{0: 12, 1: 12}, o.Next, "the dlq table's offsets: the partitions of the batch it was committed with")
}
