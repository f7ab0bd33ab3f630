package topics_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/iceberg-go"
	hamba "github.com/hamba/avro/v2"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/topics"
	"github.com/tarnhq/tarn/internal/demo"
	"github.com/tarnhq/tarn/spec"
)

// TestEnableMaterializes: an enabled topic's records become the table's
// rows; Get and List report real numbers (rows equal those produced, lag
// 0 after catch-up), and so do the metrics.
func TestEnableMaterializes(t *testing.T) {
	e := newEnv(t)
	st := e.enable(nil)
	assert.Equal(t, testTopic, st.Topic)
	assert.Equal(t, testTable, st.Table)
	assert.Equal(t, "avro", st.Config.Format, "format auto resolves from the registry")
	assert.Equal(t, "suspend", st.Config.ErrorMode)
	assert.Equal(t, []string{"day(_kafka.timestamp)"}, st.Config.PartitionSpec)
	assert.EqualValues(t, 134217728, st.Config.TargetFileSizeBytes)
	assert.Equal(t, "earliest", st.Config.Start)
	assert.Equal(t, "test-cluster", st.Cluster)
	assert.Equal(t, map[int32]int64{0: 0, 1: 0, 2: 0}, st.StartOffsets)

	produced := e.produce(300)
	e.waitRows(int64(produced))
	e.eventually("lag 0", func() bool {
		st, err := e.m.Get(e.ctx, testTopic)
		require.NoError(t, err)
		return st.LagRecords != nil && *st.LagRecords == 0 && st.Rows == int64(produced)
	})
	st, err := e.m.Get(e.ctx, testTopic)
	require.NoError(t, err)
	assert.Equal(t, topics.StateSyncing, st.State)
	assert.EqualValues(t, produced, st.Rows)
	assert.Positive(t, st.Commits)
	assert.Positive(t, st.Files)
	assert.Positive(t, st.Bytes)
	assert.NotNil(t, st.LastCommit)
	require.NotNil(t, st.LagSeconds, "caught up: the lag's age is known")
	assert.Zero(t, *st.LagSeconds)
	assert.Empty(t, st.Errors)
	assert.Empty(t, st.Gaps)
	assert.Equal(t, map[int32]int64{0: 100, 1: 100, 2: 100}, st.Offsets)

	all := e.m.List(e.ctx)
	require.Len(t, all, 1)
	assert.Equal(t, st.Rows, all[0].Rows)

	// JSON is kebab-case.
	b, err := json.Marshal(st)
	require.NoError(t, err)
	for _, k := range []string{`"lag-records":0`, `"lag-seconds":0`, `"last-commit":`, `"commit-conflicts":`, `"target-lag-ms":1000`, `"partition-spec":["day(_kafka.timestamp)"]`} {
		assert.Contains(t, string(b), k)
	}

	// Metrics.
	n, err := testutil.GatherAndCount(e.reg, "tarn_topic_rows_total")
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	mfs, err := e.reg.Gather()
	require.NoError(t, err)
	values := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "state" {
					labels = l.GetValue()
				}
			}
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
			values[mf.GetName()+"/"+labels] = v
		}
	}
	assert.EqualValues(t, produced, values["tarn_topic_rows_total/"])
	assert.EqualValues(t, 1, values["tarn_topic_state/syncing"])
	assert.EqualValues(t, 0, values["tarn_topic_state/suspended"])
	// Commits, files and bytes are the table's own: one snapshot per
	// commit, the head's data files and their size.
	tbl := e.loadTable()
	head := tbl.CurrentSnapshot()
	require.NotNil(t, head)
	assert.Len(t, tbl.Metadata().Snapshots(), int(st.Commits), "Status.Commits")
	assert.Equal(t, head.Summary.Properties["total-data-files"], strconv.FormatInt(st.Files, 10), "Status.Files")
	assert.Equal(t, head.Summary.Properties["total-files-size"], strconv.FormatInt(st.Bytes, 10), "Status.Bytes")
	assert.EqualValues(t, st.Commits, values["tarn_topic_commits_total/"])
	assert.EqualValues(t, st.Files, values["tarn_topic_files_total/"])
	assert.EqualValues(t, st.Bytes, values["tarn_topic_bytes_total/"])
	// Caught up, alone on the table: no lag, no conflict.
	for _, series := range []string{"tarn_topic_lag_records/", "tarn_topic_lag_seconds/", "tarn_topic_commit_conflicts_total/", "tarn_topic_gap_offsets_total/"} {
		require.Contains(t, values, series)
		assert.Zero(t, values[series], series)
	}
	assert.InDelta(t, float64(st.LastCommit.UnixNano())/1e9, values["tarn_topic_last_commit_timestamp_seconds/"], 1e-3)
}

// TestRestartResumesWithoutDuplicates: a new Manager over the same store
// picks the topic up and continues from the table: every row once.
func TestRestartResumesWithoutDuplicates(t *testing.T) {
	e := newEnv(t)
	e.enable(nil)
	e.waitRows(int64(e.produce(200)))
	e.stop()
	produced := e.produce(150)

	e.start()
	e.waitRows(int64(produced))
	// Status follows the commit a moment after the table has it: wait
	// until it counts the new rows, then require exactly them.
	var st topics.Status
	e.eventually("status counts the rows", func() bool {
		var err error
		st, err = e.m.Get(e.ctx, testTopic)
		require.NoError(t, err)
		return st.Rows >= 150
	})
	assert.Equal(t, testTable, st.Table)
	assert.EqualValues(t, 150, st.Rows, "the new manager's counters start at its start")
	assert.ErrorIs(t, e.externalCommit(), catalog.ErrTableOwnedForbidden, "ownership survives the restart")

	// Stop while rows are buffered: they are committed on the way out.
	lag := int64(60000)
	_, err := e.m.Update(e.ctx, testTopic, topics.Patch{TargetLagMs: &lag})
	require.NoError(t, err)
	produced = e.produce(30)
	e.eventually("30 rows buffered", func() bool {
		st, err := e.m.Get(e.ctx, testTopic)
		require.NoError(t, err)
		return st.BufferedRows == 30
	})
	e.stop()
	assert.EqualValues(t, produced, e.tableRows())
}

// TestUpdatePartitionSpec: a new partition spec is a spec evolution (the
// table gains a spec, the old data keeps its own), and the restarted
// pipeline writes with it.
func TestUpdatePartitionSpec(t *testing.T) {
	e := newEnv(t)
	e.enable(nil)
	e.waitRows(int64(e.produce(90)))
	before := e.loadTable().Metadata()
	require.Len(t, before.PartitionSpecs(), 1)

	spec := []string{"day(_kafka.timestamp)", "identity(origin)"}
	lag := int64(2000)
	st, err := e.m.Update(e.ctx, testTopic, topics.Patch{PartitionSpec: &spec, TargetLagMs: &lag})
	require.NoError(t, err)
	assert.Equal(t, spec, st.Config.PartitionSpec)
	assert.EqualValues(t, 2000, st.Config.TargetLagMs)
	// The restarted pipeline has not loaded the table's head yet: the
	// status keeps the last known offsets (they were {} in the trial).
	assert.Equal(t, map[int32]int64{0: 30, 1: 30, 2: 30}, st.Offsets)

	md := e.loadTable().Metadata()
	require.Len(t, md.PartitionSpecs(), 2)
	ps := md.PartitionSpec()
	require.Equal(t, 2, ps.NumFields())
	assert.Equal(t, "_kafka_timestamp_day", ps.Field(0).Name)
	oldSpec := before.PartitionSpec()
	assert.Equal(t, oldSpec.Field(0).FieldID, ps.Field(0).FieldID, "the kept field keeps its id")
	assert.Equal(t, "origin", ps.Field(1).Name)

	produced := e.produce(60)
	e.waitRows(int64(produced))
	st = e.waitCounted(int64(produced))
	assert.EqualValues(t, produced, st.Rows, "counters carry over the restart")

	// The same spec again changes nothing; a field over a missing column
	// is refused.
	_, err = e.m.Update(e.ctx, testTopic, topics.Patch{PartitionSpec: &spec})
	require.NoError(t, err)
	assert.Len(t, e.loadTable().Metadata().PartitionSpecs(), 2)
	bad := []string{"identity(nope)"}
	_, err = e.m.Update(e.ctx, testTopic, topics.Patch{PartitionSpec: &bad})
	require.ErrorIs(t, err, topics.ErrInvalid)
	assert.Len(t, e.loadTable().Metadata().PartitionSpecs(), 2)
	st, err = e.m.Get(e.ctx, testTopic)
	require.NoError(t, err)
	assert.Equal(t, spec, st.Config.PartitionSpec)
}

// TestDisableAndRelease: a disabled topic's table stays Tarn's (external
// commits 403, through a restart), release makes it an ordinary table.
func TestDisableAndRelease(t *testing.T) {
	e := newEnv(t)
	e.enable(nil)
	e.waitRows(int64(e.produce(30)))
	require.NoError(t, e.m.Disable(e.ctx, testTopic, false))
	st, err := e.m.Get(e.ctx, testTopic)
	require.NoError(t, err)
	assert.Equal(t, topics.StateDisabled, st.State)
	e.produce(30)
	assert.ErrorIs(t, e.externalCommit(), catalog.ErrTableOwnedForbidden)

	e.stop()
	e.start()
	st = e.waitState(topics.StateDisabled)
	assert.ErrorIs(t, e.externalCommit(), catalog.ErrTableOwnedForbidden)
	assert.EqualValues(t, 30, e.tableRows(), "a disabled topic is not read")

	require.NoError(t, e.m.Disable(e.ctx, testTopic, true))
	_, err = e.m.Get(e.ctx, testTopic)
	require.ErrorIs(t, err, topics.ErrNoSuchTopic)
	require.NoError(t, e.externalCommit())
	assert.Equal(t, "yes", e.loadTable().Properties()["external"])

	// Released for good: a restart does not bring it back.
	e.stop()
	e.start()
	assert.Empty(t, e.m.List(e.ctx))
	require.NoError(t, e.externalCommit())

	// The released table is not Tarn's: enabling the topic into it again
	// is refused.
	_, err = e.m.Enable(e.ctx, topics.TopicConfig{Topic: testTopic, Table: testTable})
	require.ErrorIs(t, err, topics.ErrTableTaken)
}

// TestReenableDisabled: enabling a disabled topic with its table resumes
// into the table where it stopped.
func TestReenableDisabled(t *testing.T) {
	e := newEnv(t)
	e.enable(nil)
	e.waitRows(int64(e.produce(30)))
	require.NoError(t, e.m.Disable(e.ctx, testTopic, false))
	produced := e.produce(30)
	_, err := e.m.Enable(e.ctx, topics.TopicConfig{Topic: testTopic, Table: "air.other"})
	require.ErrorIs(t, err, topics.ErrAlreadyEnabled)
	st := e.enable(nil)
	assert.NotEqual(t, topics.StateDisabled, st.State)
	e.waitRows(int64(produced))
}

// TestDropOwnedTable: dropping the table of an enabled topic is refused
// with 409 (ErrTableOwned); once the topic is disabled the drop goes
// through and takes the topic's record with it.
func TestDropOwnedTable(t *testing.T) {
	e := newEnv(t)
	e.enable(nil)
	e.waitRows(int64(e.produce(30)))
	err := e.cat.DropTable(e.ctx, e.wh, tableIdent, false)
	require.ErrorIs(t, err, catalog.ErrTableOwned)
	assert.EqualValues(t, 30, e.tableRows(), "nothing dropped")

	require.NoError(t, e.m.Disable(e.ctx, testTopic, false))
	require.NoError(t, e.cat.DropTable(e.ctx, e.wh, tableIdent, true))
	_, err = e.m.Get(e.ctx, testTopic)
	require.ErrorIs(t, err, topics.ErrNoSuchTopic)
	e.stop()
	e.start()
	assert.Empty(t, e.m.List(e.ctx), "the record went with the table")
}

// TestResumeSuspended: a bad record in suspend mode suspends the topic
// with everything before it committed; switching the error mode to skip
// and resuming continues past it, counted once.
func TestResumeSuspended(t *testing.T) {
	e := newEnv(t)
	e.enable(nil)
	for range 5 {
		e.produceRaw(0, e.values[0])
	}
	e.produceRaw(0, []byte("not avro"))
	for range 5 {
		e.produceRaw(0, e.values[1])
	}
	st := e.waitState(topics.StateSuspended)
	assert.Contains(t, st.Reason, "bad_header")
	assert.EqualValues(t, 1, st.Errors["bad_header"])
	e.waitRows(5)

	_, err := e.m.Resume(e.ctx, "nope")
	require.ErrorIs(t, err, topics.ErrNoSuchTopic)
	skip := "skip"
	st, err = e.m.Update(e.ctx, testTopic, topics.Patch{ErrorMode: &skip})
	require.NoError(t, err)
	assert.Equal(t, topics.StateSuspended, st.State, "an update does not resume")
	assert.Equal(t, "skip", st.Config.ErrorMode)

	_, err = e.m.Resume(e.ctx, testTopic)
	require.NoError(t, err)
	e.waitRows(10)
	st = e.waitCounted(10)
	assert.EqualValues(t, 1, st.Errors["bad_header"], "the bad record counts once")
	assert.EqualValues(t, 10, st.Rows)

	_, err = e.m.Resume(e.ctx, testTopic)
	require.ErrorIs(t, err, topics.ErrNotSuspended)
	require.ErrorIs(t, err, catalog.ErrConflict)
}

// TestStartLatest: start latest skips the records produced before the
// enable, for good (the offsets are stored, so a restart does not read
// them either).
func TestStartLatest(t *testing.T) {
	e := newEnv(t)
	e.produce(60)
	st := e.enable(func(c *topics.TopicConfig) { c.Start = "latest" })
	assert.Equal(t, map[int32]int64{0: 20, 1: 20, 2: 20}, st.StartOffsets)
	e.stop()
	e.start()
	e.produce(15)
	e.waitRows(15)
	e.eventually("lag 0", func() bool {
		st, err := e.m.Get(e.ctx, testTopic)
		require.NoError(t, err)
		return st.LagRecords != nil && *st.LagRecords == 0
	})
}

// TestEnableRefusals: bad input, a missing Kafka topic, a second enable
// and a table that is not Tarn's are refused, and leave no record and no
// table behind.
func TestEnableRefusals(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, e.cat.CreateNamespace(e.ctx, catalog.Namespace{"other"}, nil))
	_, err := e.cat.CreateTable(e.ctx, e.wh, catalog.Namespace{"other"}, spec.CreateTableRequest{Name: "taken", Schema: e.loadSchema(t)})
	require.NoError(t, err)
	adm := kadm.NewClient(e.prod)
	_, err = adm.CreateTopic(e.ctx, 1, 1, nil, "empty")
	require.NoError(t, err)

	cases := []struct {
		name string
		cfg  topics.TopicConfig
		want error
		msg  string
	}{
		{"no topic", topics.TopicConfig{Table: testTable}, topics.ErrInvalid, "topic is required"},
		{"no table", topics.TopicConfig{Topic: testTopic}, topics.ErrInvalid, "table is required"},
		// Kafka would answer INVALID_TOPIC_EXCEPTION (it was a 502).
		{"topic with a space", topics.TopicConfig{Topic: "bad topic!", Table: testTable}, topics.ErrInvalid, `topic "bad topic!": a Kafka topic name may hold only`},
		{"topic dot", topics.TopicConfig{Topic: ".", Table: testTable}, topics.ErrInvalid, "cannot be . or .."},
		{"topic dot dot", topics.TopicConfig{Topic: "..", Table: testTable}, topics.ErrInvalid, "cannot be . or .."},
		{"topic too long", topics.TopicConfig{Topic: strings.Repeat("t", 250), Table: testTable}, topics.ErrInvalid, "1 to 249 characters"},
		{"table without namespace", topics.TopicConfig{Topic: testTopic, Table: "flights"}, topics.ErrInvalid, "namespace.name"},
		{"lag too small", topics.TopicConfig{Topic: testTopic, Table: testTable, TargetLagMs: 249}, topics.ErrInvalid, "minimum 250"},
		{"negative file size", topics.TopicConfig{Topic: testTopic, Table: testTable, TargetFileSizeBytes: -1}, topics.ErrInvalid, "negative"},
		{"bad format", topics.TopicConfig{Topic: testTopic, Table: testTable, Format: "xml"}, topics.ErrInvalid, "unknown format"},
		{"bad error mode", topics.TopicConfig{Topic: testTopic, Table: testTable, ErrorMode: "ignore"}, topics.ErrInvalid, "error mode"},
		{"bad start", topics.TopicConfig{Topic: testTopic, Table: testTable, Start: "middle"}, topics.ErrInvalid, "earliest or latest"},
		{"bad partition field", topics.TopicConfig{Topic: testTopic, Table: testTable, PartitionSpec: []string{"day("}}, topics.ErrInvalid, "partition field"},
		{"partition over a missing column", topics.TopicConfig{Topic: testTopic, Table: testTable, PartitionSpec: []string{"nope"}}, topics.ErrInvalid, "nope"},
		{"schema for avro", topics.TopicConfig{Topic: testTopic, Table: testTable, Format: "avro", Schema: json.RawMessage(`{"type":"struct","fields":[]}`)}, topics.ErrInvalid, "only for format json"},
		{"json without schema", topics.TopicConfig{Topic: testTopic, Table: testTable, Format: "json"}, topics.ErrInvalid, "schema"},
		{"timestamp unit for avro", topics.TopicConfig{Topic: testTopic, Table: testTable, Format: "avro", TimestampUnit: "us"}, topics.ErrInvalid, "timestamp-unit is for format json only"},
		{"field name matching for auto", topics.TopicConfig{Topic: testTopic, Table: testTable, FieldNameMatching: "case-insensitive"}, topics.ErrInvalid, "field-name-matching is for format json only"},
		{"bad timestamp unit", topics.TopicConfig{Topic: testTopic, Table: testTable, Format: "json", TimestampUnit: "minutes",
			Schema: json.RawMessage(`{"type":"struct","fields":[{"id":1,"name":"a","required":false,"type":"timestamptz"}]}`)}, topics.ErrInvalid, `unknown timestamp-unit "minutes"`},
		{"bad field name matching", topics.TopicConfig{Topic: testTopic, Table: testTable, Format: "json", FieldNameMatching: "fuzzy",
			Schema: json.RawMessage(`{"type":"struct","fields":[{"id":1,"name":"a","required":false,"type":"string"}]}`)}, topics.ErrInvalid, `unknown field-name-matching "fuzzy"`},
		{"no schema in the registry", topics.TopicConfig{Topic: "empty", Table: "air.empty"}, topics.ErrInvalid, "empty-value"},
		{"missing Kafka topic", topics.TopicConfig{Topic: "absent", Table: "air.absent"}, topics.ErrNoSuchKafkaTopic, "absent"},
		{"table not Tarn's", topics.TopicConfig{Topic: testTopic, Table: "other.taken"}, topics.ErrTableTaken, "other.taken"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.m.Enable(e.ctx, tt.cfg)
			require.ErrorIs(t, err, tt.want)
			assert.Contains(t, err.Error(), tt.msg)
			assert.Empty(t, e.m.List(e.ctx))
			records, lerr := e.store.ListRecords(e.ctx, "topics")
			require.NoError(t, lerr)
			assert.Empty(t, records)
			for _, name := range []string{"flights", "empty", "absent"} {
				ok, terr := e.cat.TableExists(e.ctx, catalog.Ident{Namespace: catalog.Namespace{"air"}, Name: name})
				require.NoError(t, terr)
				assert.False(t, ok, "table air.%s created", name)
			}
		})
	}

	e.enable(nil)
	_, err = e.m.Enable(e.ctx, topics.TopicConfig{Topic: testTopic, Table: "air.again"})
	require.ErrorIs(t, err, topics.ErrAlreadyEnabled)
	_, err = e.m.Update(e.ctx, "nope", topics.Patch{})
	require.ErrorIs(t, err, topics.ErrInvalid, "an empty patch is refused first")
	lag := int64(10)
	_, err = e.m.Update(e.ctx, testTopic, topics.Patch{TargetLagMs: &lag})
	require.ErrorIs(t, err, topics.ErrInvalid)
	require.ErrorIs(t, e.m.Disable(e.ctx, "nope", false), topics.ErrNoSuchTopic)
}

// loadSchema is a small schema for a table that is not Tarn's.
func (e *env) loadSchema(t *testing.T) *iceberg.Schema {
	t.Helper()
	return iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
}

// TestResumePastIncompatibleSchema: a record whose schema cannot evolve
// into the table suspends the topic even in error mode skip; resuming
// moves past that schema id for good (stored, so a restart does not
// suspend again): its records are counted as bad, the rest continues.
func TestResumePastIncompatibleSchema(t *testing.T) {
	e := newEnv(t)
	e.enable(func(c *topics.TopicConfig) { c.ErrorMode = "skip" })
	e.produce(6)
	e.waitRows(6)

	bad := strings.Replace(demo.Schema, `{"name": "delay", "type": "long"}`, `{"name": "delay", "type": "string"}`, 1)
	require.NotEqual(t, demo.Schema, bad)
	ss, err := e.rc.CreateSchema(e.ctx, demo.Subject+"-other", sr.Schema{Schema: bad})
	require.NoError(t, err)
	sc, err := hamba.Parse(bad)
	require.NoError(t, err)
	body, err := hamba.Marshal(sc, map[string]any{"date": int64(0), "delay": "late", "distance": int64(1), "origin": "A", "destination": "B"})
	require.NoError(t, err)
	var h sr.ConfluentHeader
	v, err := h.AppendEncode(nil, ss.ID, nil)
	require.NoError(t, err)
	e.produceRaw(0, append(v, body...))
	st := e.waitState(topics.StateSuspended)
	assert.Contains(t, st.Reason, "incompatible")

	_, err = e.m.Resume(e.ctx, testTopic)
	require.NoError(t, err)
	e.produce(3)
	e.waitRows(9)
	e.produceRaw(1, append(v, body...))
	e.produce(3)
	e.waitRows(12)
	st = e.waitState(topics.StateSyncing)
	assert.EqualValues(t, 2, st.Errors["incompatible_schema"], "the suspension's record once, and the later one")

	e.stop()
	e.start()
	e.produceRaw(2, append(v, body...))
	e.produce(3)
	e.waitRows(15)
	st = e.waitState(topics.StateSyncing)
	assert.EqualValues(t, 1, st.Errors["incompatible_schema"])
}

// TestDLQTableOwned: a topic also owns its table's dead letter table:
// external writes are refused, and dropping it (once the topic is
// disabled) does not forget the topic.
func TestDLQTableOwned(t *testing.T) {
	e := newEnv(t)
	e.enable(func(c *topics.TopicConfig) { c.ErrorMode = "dlq" })
	dlq := catalog.Ident{Namespace: tableIdent.Namespace, Name: tableIdent.Name + "_dlq"}
	topic, enabled, ok := e.m.Owner(dlq)
	assert.True(t, ok)
	assert.True(t, enabled)
	assert.Equal(t, testTopic, topic)
	require.ErrorIs(t, e.cat.DropTable(e.ctx, e.wh, dlq, false), catalog.ErrTableOwned)
	require.NoError(t, e.m.Disable(e.ctx, testTopic, false))
	require.NoError(t, e.cat.DropTable(e.ctx, e.wh, dlq, false))
	_, err := e.m.Get(e.ctx, testTopic)
	require.NoError(t, err, "the topic stays")
	_, _, ok = e.m.Owner(catalog.Ident{Namespace: tableIdent.Namespace, Name: "_dlq"})
	assert.False(t, ok)
}

// TestFailedTopicRestarts: when the registry fails under a running
// topic, the topic is failed with the reason and restarted with backoff,
// and recovers once the registry answers again, with nothing lost.
func TestFailedTopicRestarts(t *testing.T) {
	e := newEnv(t)
	// The manager reaches the registry through a proxy the test can break.
	var broken atomic.Bool
	target, err := url.Parse(e.regURL)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if broken.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	e.stop()
	e.rc, err = sr.NewClient(sr.URLs(hs.URL))
	require.NoError(t, err)
	e.start()

	broken.Store(true)
	st, err := e.m.Enable(e.ctx, topics.TopicConfig{Topic: testTopic, Table: testTable, Format: "avro", TargetLagMs: 1000})
	require.ErrorIs(t, err, topics.ErrUpstream, "an enable needs the registry")
	assert.Empty(t, st.Topic)
	broken.Store(false)
	e.enable(nil)
	e.waitState(topics.StateSyncing)

	broken.Store(true)
	e.produce(9) // their schema id is new to the pipeline: it must ask the registry
	st = e.waitState(topics.StateFailed)
	assert.Contains(t, st.Reason, "schema")
	broken.Store(false)
	e.waitRows(9)
	e.waitState(topics.StateSyncing)
}

// TestDisabledStatusAfterRestart pins a trial failure: a disabled
// topic's status showed its table's offsets and lag 0, but after a
// restart offsets {} and lag-records the whole topic (no pipeline had
// read the table's head). The head is loaded at Start now.
func TestDisabledStatusAfterRestart(t *testing.T) {
	e := newEnv(t)
	e.enable(nil)
	e.waitRows(int64(e.produce(30)))
	e.eventually("lag 0", func() bool {
		st, err := e.m.Get(e.ctx, testTopic)
		require.NoError(t, err)
		return st.LagRecords != nil && *st.LagRecords == 0
	})
	require.NoError(t, e.m.Disable(e.ctx, testTopic, false))
	before, err := e.m.Get(e.ctx, testTopic)
	require.NoError(t, err)
	assert.Equal(t, map[int32]int64{0: 10, 1: 10, 2: 10}, before.Offsets)
	require.NotNil(t, before.LagRecords)
	assert.Zero(t, *before.LagRecords)

	e.stop()
	e.start()
	st, err := e.m.Get(e.ctx, testTopic)
	require.NoError(t, err)
	assert.Equal(t, topics.StateDisabled, st.State)
	assert.Equal(t, map[int32]int64{0: 10, 1: 10, 2: 10}, st.Offsets)
	require.NotNil(t, st.LagRecords)
	assert.Zero(t, *st.LagRecords)

	// Records produced while disabled are its lag.
	e.produce(6)
	st, err = e.m.Get(e.ctx, testTopic)
	require.NoError(t, err)
	require.NotNil(t, st.LagRecords)
	assert.EqualValues(t, 6, *st.LagRecords)
	assert.Equal(t, map[int32]int64{0: 10, 1: 10, 2: 10}, st.Offsets)
}
