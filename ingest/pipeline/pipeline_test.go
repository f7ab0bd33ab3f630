package pipeline_test

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tarnhq/tarn/ingest/avro"
	"github.com/tarnhq/tarn/ingest/pipeline"
	"github.com/tarnhq/tarn/offsets"
)

// TestMaterializesFlights: 10,000 real flights rows produced as Avro over
// three partitions end up in the table exactly once, with the known
// totals, their Kafka metadata in _kafka, in several commits (size
// flushes at 256 KiB) whose last offsets are the high watermarks.
func TestMaterializesFlights(t *testing.T) {
	e := newEnv(t)
	fs := loadFlights(t)
	before := time.Now()
	e.produceFlights(fs, 0)
	hwm := e.endOffsets()
	require.Equal(t, map[int32]int64{0: 3334, 1: 3333, 2: 3333}, hwm)

	p := e.newPipeline(e.config(), nil)
	assert.Equal(t, pipeline.StatePending, p.Status().State)
	r := e.start(p)
	e.waitHead(r, hwm)
	require.NoError(t, r.stop(t))

	s := e.scan()
	assert.Equal(t, loadAnswers(t), s.totals())
	assert.Empty(t, s.duplicates())
	for part, n := range hwm {
		assert.Equal(t, span(0, n), s.offsets(part), "partition %d", part)
	}
	for _, row := range s.rows {
		i := row.Off*testPartitions + int64(row.P) // produceFlights' row number
		require.Equal(t, "k"+strconv.FormatInt(i, 10), string(row.Key))
		require.Equal(t, map[string]string{"row": strconv.FormatInt(i, 10)}, row.Headers)
		require.Equal(t, fs[i].Distance, row.Distance)
		require.False(t, row.Timestamp.Before(before.Truncate(time.Millisecond)), "timestamp %v", row.Timestamp)
	}

	st := p.Status()
	assert.Equal(t, pipeline.StatePending, st.State)
	assert.Equal(t, int64(10000), st.Rows)
	assert.Greater(t, st.Commits, int64(1), "256 KiB flushes")
	snaps := snapshots(t, e)
	assert.Equal(t, st.Commits, int64(len(snaps)))
	// Files and bytes are the table's: its head's data files and their size.
	head := snaps[len(snaps)-1].Summary.Properties
	assert.Equal(t, head["total-data-files"], strconv.FormatInt(st.Files, 10))
	assert.Equal(t, head["total-files-size"], strconv.FormatInt(st.Bytes, 10))
	assert.GreaterOrEqual(t, st.Files, st.Commits)
	assert.Equal(t, hwm, st.Next)
	assert.Empty(t, st.Errors)
	assert.False(t, st.LastCommit.IsZero())
}

func snapshots(t *testing.T, e *env) []table.Snapshot {
	t.Helper()
	tbl, err := e.tio.LoadTable(e.ctx, table.Identifier{"air", "flights"})
	require.NoError(t, err)
	return tbl.Metadata().Snapshots()
}

// TestRestartContinues: a new pipeline on the same catalog resumes from the
// table's offsets: it reads only what the first did not commit, and the
// table holds every row once.
func TestRestartContinues(t *testing.T) {
	e := newEnv(t)
	fs := loadFlights(t)
	e.produceFlights(fs[:4000], 0)

	first := e.newPipeline(e.config(), nil)
	r := e.start(first)
	e.waitHead(r, e.endOffsets())
	require.NoError(t, r.stop(t))
	assert.Equal(t, totals(fs[:4000]), e.scan().totals())

	e.produceFlights(fs[4000:], 4000)
	second := e.newPipeline(e.config(), nil)
	r = e.start(second)
	e.waitHead(r, e.endOffsets())
	require.NoError(t, r.stop(t))

	s := e.scan()
	assert.Equal(t, loadAnswers(t), s.totals())
	assert.Empty(t, s.duplicates())
	assert.Equal(t, int64(6000), second.Status().Rows, "the second pipeline read only the new records")
}

// TestConcurrentCommitsBetweenFlushes: before every commit of the
// pipeline another writer commits to the table. A property change leaves
// main alone, so the pipeline's commit applies as is; a snapshot that
// carries the head's offsets (as maintenance's do) moves main, so the
// sink rebases the batch onto it. Either way every row lands once.
func TestConcurrentCommitsBetweenFlushes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		meddle   func(e *env, n int)
		rebases  bool
		moreSnap bool
	}{
		{name: "property change", meddle: func(e *env, n int) {
			_, _, err := e.tio.CommitTable(e.ctx, table.Identifier{"air", "flights"}, nil,
				[]table.Update{table.NewSetPropertiesUpdate(map[string]string{"meddler": strconv.Itoa(n)})})
			require.NoError(e.t, err)
		}},
		{name: "maintenance snapshot", rebases: true, moreSnap: true, meddle: func(e *env, _ int) {
			tbl, err := e.tio.LoadTable(e.ctx, table.Identifier{"air", "flights"})
			require.NoError(e.t, err)
			o, found, err := offsets.Read(tbl.Metadata())
			require.NoError(e.t, err)
			if !found {
				o = offsets.Offsets{Cluster: testCluster, Topic: testTopic, Next: map[int32]int64{}}
			}
			txn := tbl.NewTransaction()
			require.NoError(e.t, txn.AddFiles(e.ctx, nil, o.Properties(), true))
			_, err = txn.Commit(e.ctx)
			require.NoError(e.t, err)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			fs := loadFlights(t)
			e.produceFlights(fs[:3000], 0)
			var meddled atomic.Int32
			hook := &hookCatalog{CatalogIO: e.tio}
			hook.before = func() { tc.meddle(e, int(meddled.Add(1))) }

			cfg := e.config()
			cfg.TargetFileSizeBytes = 32 << 10 // many flushes
			p := e.newPipeline(cfg, hook)
			r := e.start(p)
			e.waitHead(r, e.endOffsets())
			require.NoError(t, r.stop(t))

			s := e.scan()
			assert.Equal(t, totals(fs[:3000]), s.totals())
			assert.Empty(t, s.duplicates())
			st := p.Status()
			require.Greater(t, st.Commits, int64(2))
			assert.Equal(t, int64(meddled.Load()), st.Commits, "one foreign commit before each batch")
			assert.Zero(t, st.StaleBatches)
			if tc.rebases {
				assert.Equal(t, int64(hook.failed()), st.Commits, "every batch found main moved and was rebased once")
			} else {
				assert.Zero(t, hook.failed())
			}
			if tc.moreSnap {
				assert.Equal(t, 2*st.Commits, int64(len(snapshots(t, e))))
			}
		})
	}
}

// TestStaleBatchReseeks: a second pipeline commits the same records while
// the first holds them in a batch. The first pipeline's commit is stale
// (the head moved its partitions past the batch's start): it drops the
// batch, re-seeks to the head's offsets and continues with what the
// second did not read. Every row lands once.
func TestStaleBatchReseeks(t *testing.T) {
	e := newEnv(t)
	fs := loadFlights(t)
	e.produceFlights(fs[:3000], 0)
	hwm := e.endOffsets()

	var once atomic.Bool
	var other *pipeline.Pipeline
	hook := &hookCatalog{CatalogIO: e.tio}
	hook.before = func() {
		if !once.CompareAndSwap(false, true) {
			return
		}
		// Before A's first commit: B reads and commits the same records.
		other = e.newPipeline(e.config(), nil)
		r := e.start(other)
		e.waitHead(r, hwm)
		require.NoError(t, r.stop(t))
	}
	cfg := e.config()
	cfg.TargetFileSizeBytes = 1 << 30 // flush on lag only: one batch of all 3,000
	p := e.newPipeline(cfg, hook)
	r := e.start(p)
	// A's first flush runs B, fails as stale and re-seeks to B's offsets;
	// the records produced next are A's to commit.
	require.Eventually(t, func() bool { return p.Status().StaleBatches == 1 }, waitTimeout, 10*time.Millisecond)
	e.produceFlights(fs[3000:5000], 3000)
	e.waitHead(r, e.endOffsets())
	require.NoError(t, r.stop(t))

	s := e.scan()
	assert.Equal(t, totals(fs[:5000]), s.totals())
	assert.Empty(t, s.duplicates())
	assert.Equal(t, int64(3000), other.Status().Rows)
	assert.Equal(t, int64(2000), p.Status().Rows, "A committed only what B had not")
	assert.Equal(t, int64(1), p.Status().StaleBatches)
}

// TestSkipModeCountsBadRecords: in skip mode, a record with a bad magic
// byte, a truncated payload, an unknown schema id and a tombstone are
// counted by kind and skipped; their offsets still advance, and every
// good record is in the table.
func TestSkipModeCountsBadRecords(t *testing.T) {
	e := newEnv(t)
	fs := loadFlights(t)
	e.produceFlights(fs[:300], 0)
	good := e.encode(e.schemaID, e.writer, fs[300])
	badMagic := append([]byte{1}, good[1:]...)
	truncated := good[:len(good)-3]
	unknownID := e.encode(9999, e.writer, fs[300])
	e.produce(
		&kgo.Record{Partition: 1, Value: badMagic},
		&kgo.Record{Partition: 2, Value: truncated},
		&kgo.Record{Partition: 0, Value: unknownID},
		&kgo.Record{Partition: 0, Value: nil},
	)
	e.produceFlights(fs[301:600], 301)

	cfg := e.config()
	cfg.ErrorMode = pipeline.ErrorModeSkip
	p := e.newPipeline(cfg, nil)
	r := e.start(p)
	e.waitHead(r, e.endOffsets())
	require.NoError(t, r.stop(t))

	s := e.scan()
	want := totals(append(fs[:300:300], fs[301:600]...))
	assert.Equal(t, want, s.totals())
	assert.Empty(t, s.duplicates())
	for _, row := range s.rows {
		require.NotEqual(t, key{1, 100}, row.key, "the bad-magic record")
	}
	assert.Equal(t, map[pipeline.ErrorKind]int64{
		pipeline.KindBadHeader: 1, pipeline.KindMalformed: 1, pipeline.KindUnknownSchema: 1, pipeline.KindNoValue: 1,
	}, p.Status().Errors)
}

// TestSuspendModeStopsAtBadRecord: in suspend mode Run returns a
// SuspendedError naming the bad record's partition and offset; the table
// holds exactly the records before it in that partition (and a prefix of
// each other partition), with its offset as the partition's next. A new
// pipeline suspends at the same record without adding anything; one in
// skip mode continues past it.
func TestSuspendModeStopsAtBadRecord(t *testing.T) {
	e := newEnv(t)
	fs := loadFlights(t)
	e.produceFlights(fs[:120], 0) // 40 per partition
	good := e.encode(e.schemaID, e.writer, fs[120])
	e.produce(&kgo.Record{Partition: 1, Value: append([]byte{7}, good[1:]...)}) // partition 1 offset 40
	e.produceFlights(fs[121:151], 121)

	check := func(p *pipeline.Pipeline) {
		t.Helper()
		r := e.start(p)
		err := r.wait(t)
		var se *pipeline.SuspendedError
		require.ErrorAs(t, err, &se)
		assert.ErrorIs(t, err, pipeline.ErrSuspended)
		assert.ErrorIs(t, err, sr.ErrBadHeader)
		assert.Equal(t, int32(1), se.Partition)
		assert.Equal(t, int64(40), se.Offset)
		assert.Equal(t, pipeline.KindBadHeader, se.Kind)

		head := e.head()
		assert.Equal(t, int64(40), head[1])
		s := e.scan()
		assert.Empty(t, s.duplicates())
		assert.Equal(t, span(0, 40), s.offsets(1))
		for _, part := range []int32{0, 2} {
			assert.Equal(t, span(0, head[part]), s.offsets(part), "partition %d: a prefix", part)
		}
		st := p.Status()
		assert.Equal(t, pipeline.StateSuspended, st.State)
		assert.Contains(t, st.Reason, "bad_header")
		assert.Equal(t, int64(1), st.Errors[pipeline.KindBadHeader])
	}
	check(e.newPipeline(e.config(), nil))
	rows := len(e.scan().rows)
	check(e.newPipeline(e.config(), nil))
	assert.Len(t, e.scan().rows, rows, "suspending again adds nothing")

	cfg := e.config()
	cfg.ErrorMode = pipeline.ErrorModeSkip
	p := e.newPipeline(cfg, nil)
	r := e.start(p)
	e.waitHead(r, e.endOffsets())
	require.NoError(t, r.stop(t))
	s := e.scan()
	assert.Equal(t, totals(append(fs[:120:120], fs[121:151]...)), s.totals())
	assert.Empty(t, s.duplicates())
}

// TestGracefulShutdownCommitsBuffer: with a long lag and a large target
// size nothing is due, so the rows stay buffered; cancelling Run's
// context commits them before Run returns nil.
func TestGracefulShutdownCommitsBuffer(t *testing.T) {
	e := newEnv(t)
	fs := loadFlights(t)
	e.produceFlights(fs[:1000], 0)

	cfg := e.config()
	cfg.TargetLag = time.Hour
	cfg.TargetFileSizeBytes = 0 // default 128 MiB
	p := e.newPipeline(cfg, nil)
	r := e.start(p)
	require.Eventually(t, func() bool { return p.Status().BufferedRows == 1000 }, waitTimeout, 10*time.Millisecond)
	assert.Empty(t, snapshots(t, e), "nothing committed before the shutdown")

	require.NoError(t, r.stop(t))
	assert.Equal(t, e.endOffsets(), e.head())
	s := e.scan()
	assert.Equal(t, totals(fs[:1000]), s.totals())
	assert.Empty(t, s.duplicates())
	st := p.Status()
	assert.Equal(t, int64(1), st.Commits)
	assert.Zero(t, st.BufferedRows)
	assert.Equal(t, pipeline.StatePending, st.State)
}

// TestNewSchemaIDs: a new schema id whose writer schema fits the table
// (here: the same fields with docs, so a different text and id) is decoded
// into the table's schema without a schema update; one that changes a
// column's type in a way schema evolution does not allow (delay: long →
// string) suspends the topic, even in skip mode, naming the field.
func TestNewSchemaIDs(t *testing.T) {
	e := newEnv(t)
	fs := loadFlights(t)
	e.produceFlights(fs[:30], 0)

	sameID, same := e.register(`{"type": "record", "name": "Flight", "namespace": "tarn.test", "doc": "v2", "fields": [
		{"name": "date", "type": {"type": "long", "logicalType": "timestamp-micros"}, "doc": "departure"},
		{"name": "delay", "type": "long"}, {"name": "distance", "type": "long"},
		{"name": "origin", "type": "string"}, {"name": "destination", "type": "string"}]}`)
	require.NotEqual(t, e.schemaID, sameID)
	for i, f := range fs[30:60] {
		e.produce(&kgo.Record{Partition: int32((30 + i) % testPartitions), Value: e.encode(sameID, same, f)})
	}
	changedID, changed := e.register(`{"type": "record", "name": "Flight", "namespace": "tarn.test", "fields": [
		{"name": "date", "type": {"type": "long", "logicalType": "timestamp-micros"}},
		{"name": "delay", "type": "string"}, {"name": "distance", "type": "long"},
		{"name": "origin", "type": "string"}, {"name": "destination", "type": "string"}]}`)
	changedRec := map[string]any{"date": fs[60].Date, "delay": "late", "distance": fs[60].Distance, "origin": "A", "destination": "B"}
	e.produce(&kgo.Record{Partition: 0, Value: e.encode(changedID, changed, changedRec)}) // partition 0 offset 20

	cfg := e.config()
	cfg.ErrorMode = pipeline.ErrorModeSkip
	p := e.newPipeline(cfg, nil)
	r := e.start(p)
	err := r.wait(t)
	var se *pipeline.SuspendedError
	require.ErrorAs(t, err, &se)
	assert.ErrorIs(t, err, avro.ErrIncompatible)
	assert.Equal(t, pipeline.KindIncompatibleSchema, se.Kind)
	assert.Equal(t, int32(0), se.Partition)
	assert.Equal(t, int64(20), se.Offset)
	assert.Contains(t, se.Reason, "column delay would change from long to string")
	assert.Contains(t, p.Status().Reason, "delay")
	assert.Zero(t, p.Status().SchemaUpdates)

	// Partition 0 holds rows of both schema ids (offsets 10..19 are
	// sameID's) up to the wide record; the others hold a prefix of what
	// the poll returned before it.
	s := e.scan()
	assert.Empty(t, s.duplicates())
	assert.Equal(t, span(0, 20), s.offsets(0))
	head := e.head()
	for _, part := range []int32{1, 2} {
		assert.Equal(t, span(0, head[part]), s.offsets(part), "partition %d", part)
	}
	for _, row := range s.rows {
		require.Equal(t, fs[row.Off*testPartitions+int64(row.P)].Distance, row.Distance, "row %v", row.key)
	}
}

// TestRegistryOutageFails: when the registry cannot be asked about a new
// schema id (after retries), Run fails (not suspends: nothing is wrong with
// the record) after committing what came before the record; a later Run
// of the same pipeline continues once the registry answers.
func TestRegistryOutageFails(t *testing.T) {
	e := newEnv(t)
	fs := loadFlights(t)
	e.produceFlights(fs[:30], 0)
	otherID, other := e.register(`{"type": "record", "name": "Flight", "namespace": "tarn.test", "doc": "v2", "fields": [
		{"name": "date", "type": {"type": "long", "logicalType": "timestamp-micros"}},
		{"name": "delay", "type": "long"}, {"name": "distance", "type": "long"},
		{"name": "origin", "type": "string"}, {"name": "destination", "type": "string"}]}`)
	e.produce(&kgo.Record{Partition: 0, Value: e.encode(otherID, other, fs[30])}) // partition 0 offset 10
	var down atomic.Bool
	down.Store(true)
	e.reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if down.Load() && strings.HasSuffix(r.URL.Path, "/schemas/ids/"+strconv.Itoa(otherID)) {
			w.WriteHeader(http.StatusServiceUnavailable)
			return true
		}
		return false
	})

	p := e.newPipeline(e.config(), nil)
	err := e.start(p).wait(t)
	// The registry's own 503 is the cause, not a bad record.
	var re *sr.ResponseError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, http.StatusServiceUnavailable, re.StatusCode)
	assert.NotErrorIs(t, err, pipeline.ErrSuspended)
	st := p.Status()
	assert.Equal(t, pipeline.StateFailed, st.State)
	assert.Contains(t, st.Reason, "schema registry")
	assert.Empty(t, st.Errors, "not a bad record")
	s := e.scan()
	assert.Equal(t, span(0, 10), s.offsets(0))
	assert.Empty(t, s.duplicates())

	down.Store(false)
	r := e.start(p)
	e.waitHead(r, e.endOffsets())
	require.NoError(t, r.stop(t))
	s = e.scan()
	assert.Equal(t, totals(fs[:31]), s.totals())
	assert.Empty(t, s.duplicates())
}

// TestTransactionMarkersAdvanceOffsets: records of an aborted transaction
// never appear, and the offsets move past every transaction marker, so
// the table's offsets reach the high watermarks.
func TestTransactionMarkersAdvanceOffsets(t *testing.T) {
	e := newEnv(t)
	fs := loadFlights(t)
	tx, err := kgo.NewClient(kgo.SeedBrokers(e.kafka.ListenAddrs()...), kgo.DefaultProduceTopic(testTopic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionalID("tarn-test"))
	require.NoError(t, err)
	defer tx.Close()
	txn := func(from, to int, commit bool) {
		t.Helper()
		require.NoError(t, tx.BeginTransaction())
		for i := from; i < to; i++ {
			rec := &kgo.Record{Partition: int32(i % testPartitions), Value: e.encode(e.schemaID, e.writer, fs[i])}
			require.NoError(t, tx.ProduceSync(e.ctx, rec).FirstErr())
		}
		require.NoError(t, tx.EndTransaction(e.ctx, kgo.TransactionEndTry(commit)))
	}
	txn(0, 90, true)
	txn(90, 150, false)
	txn(150, 240, true)

	hwm := e.endOffsets()
	p := e.newPipeline(e.config(), nil)
	r := e.start(p)
	e.waitHead(r, hwm)
	require.NoError(t, r.stop(t))

	s := e.scan()
	assert.Equal(t, totals(append(fs[:90:90], fs[150:240]...)), s.totals())
	assert.Empty(t, s.duplicates())
	assert.Empty(t, p.Status().Errors)
}

// TestRunTwiceConcurrently: a second Run of the same pipeline while the
// first is going returns ErrRunning and leaves the first alone.
func TestRunTwiceConcurrently(t *testing.T) {
	e := newEnv(t)
	p := e.newPipeline(e.config(), nil)
	r := e.start(p)
	require.Eventually(t, func() bool { return p.Status().State == pipeline.StateSyncing }, waitTimeout, 10*time.Millisecond)
	assert.True(t, errors.Is(p.Run(e.ctx), pipeline.ErrRunning))
	assert.Equal(t, pipeline.StateSyncing, p.Status().State)
	require.NoError(t, r.stop(t))
}
