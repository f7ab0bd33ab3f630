package pipeline_test

import (
	"fmt"
	"testing"

	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tarnhq/tarn/ingest/connect"
	"github.com/tarnhq/tarn/ingest/pipeline"
	"github.com/tarnhq/tarn/internal/arrowtest"
)

// The Debezium change events of these tests, as the Postgres connector
// writes them for a table t (id int primary key, name text).
const (
	dbzKeySchema   = `{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"}],"optional":false,"name":"s.public.t.Key"}`
	dbzRowSchema   = `{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"},{"type":"string","optional":true,"field":"name"}],"optional":true,"name":"s.public.t.Value","field":"%s"}`
	dbzValueSchema = `{"type":"struct","fields":[` + dbzRowSchema + `,` + dbzRowSchema + `,` +
		`{"type":"struct","fields":[{"type":"string","optional":false,"field":"connector"},{"type":"int64","optional":false,"field":"ts_ms"},{"type":"int64","optional":true,"field":"lsn"}],"optional":false,"name":"io.debezium.connector.postgresql.Source","field":"source"},` +
		`{"type":"string","optional":false,"field":"op"},{"type":"int64","optional":true,"field":"ts_ms"}],"optional":false,"name":"s.public.t.Envelope","version":2}`
)

// dbzEvent is one change event of table t: op on row id (name, nil for
// null), or a tombstone (op "").
type dbzEvent struct {
	op   string
	id   int
	name any
}

// record is e as Kafka Connect writes it: with JsonConverter's schemas
// (schemas true, format connect-json) or without (format json). A
// truncate has no key, a tombstone no value.
func (e dbzEvent) record(topic string, schemas bool) *kgo.Record {
	key := fmt.Appendf(nil, `{"id":%d}`, e.id)
	if schemas {
		key = fmt.Appendf(nil, `{"schema":%s,"payload":{"id":%d}}`, dbzKeySchema, e.id)
	}
	r := &kgo.Record{Topic: topic, Key: key}
	row := func(name any) string {
		if name == nil {
			return fmt.Sprintf(`{"id":%d,"name":null}`, e.id)
		}
		return fmt.Sprintf(`{"id":%d,"name":%q}`, e.id, name)
	}
	before, after := "null", "null"
	switch e.op {
	case "":
		return r
	case "t":
		r.Key = nil
	case "d":
		before = fmt.Sprintf(`{"id":%d,"name":null}`, e.id) // REPLICA IDENTITY DEFAULT: the key only
	default:
		after = row(e.name)
	}
	payload := fmt.Sprintf(`{"before":%s,"after":%s,"source":{"connector":"postgresql","ts_ms":1700000000000,"lsn":%d},"op":%q,"ts_ms":1700000000123}`,
		before, after, 1000+e.id, e.op)
	if schemas {
		payload = fmt.Sprintf(`{"schema":`+dbzValueSchema+`,"payload":%s}`, "before", "after", payload)
	}
	r.Value = []byte(payload)
	return r
}

// dbzRows reads table ns.<name> back through iceberg-go's scan (which
// applies the position deletes): id → name, failing on a duplicate id.
func (w *world) dbzRows(name string) map[int64]any {
	w.t.Helper()
	tbl, err := w.cat.TableIO(w.wh).LoadTable(w.ctx, table.Identifier{"ns", name})
	require.NoError(w.t, err)
	out := map[int64]any{}
	if tbl.CurrentSnapshot() == nil {
		return out
	}
	_, recs, err := tbl.Scan(table.WithSelectedFields("id", "name")).ToArrowRecords(w.ctx)
	require.NoError(w.t, err)
	for rec, err := range recs {
		require.NoError(w.t, err)
		names := arrowtest.Column(rec, "name")
		for i, id := range arrowtest.Column(rec, "id") {
			var k int64
			switch id := id.(type) {
			case int32:
				k = int64(id)
			case int64:
				k = id
			}
			_, dup := out[k]
			require.False(w.t, dup, "key %d has two live rows", k)
			out[k] = names[i]
		}
		rec.Release()
	}
	return out
}

// TestDebeziumChanges runs one Debezium change stream through mode
// debezium in both of JsonConverter's forms (format connect-json with
// schemas, format json without, the after columns declared), restarting
// the pipeline between two rounds, and checks the table after each: a
// snapshot read (r), an insert (c) and an update (u) upsert after; a
// delete (d) removes the key and the tombstone after it is a no-op, as is
// a delete of an absent key; an event without an op is a bad record
// (skipped here); a truncate (t, no key) removes every row before it,
// committed or in its batch, and the changes after it apply.
func TestDebeziumChanges(t *testing.T) {
	round1 := []dbzEvent{
		{"r", 1, "a"}, {"r", 2, "b"}, {"c", 3, "c"},
		{"u", 1, "a2"}, {"d", 2, nil}, {"", 2, nil}, {"d", 99, nil},
		{"c", 4, nil}, {"u", 4, "d"},
	}
	round2 := []dbzEvent{
		{"c", 6, "f"}, {"t", 0, nil}, {"c", 5, "e"}, {"u", 3, "c2"}, {"d", 4, nil}, {"", 4, nil},
	}
	for _, schemas := range []bool{true, false} {
		name := "dbz-plain"
		if schemas {
			name = "dbz-schemas"
		}
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, name)
			cfg := w.config(name, pipeline.FormatConnectJSON)
			if !schemas {
				cfg = w.config(name, pipeline.FormatJSON)
				cfg.Schema = declared(t, `{"type":"struct","fields":[{"id":1,"name":"id","type":"long","required":true},{"id":2,"name":"name","type":"string","required":false}]}`)
			}
			cfg.Mode, cfg.ErrorMode = pipeline.ModeDebezium, pipeline.ErrorModeSkip
			produce := func(events []dbzEvent) {
				recs := make([]*kgo.Record, len(events))
				for i, e := range events {
					recs[i] = e.record(name, schemas)
				}
				require.NoError(t, w.prod.ProduceSync(w.ctx, recs...).FirstErr())
			}

			produce(round1)
			bad := dbzEvent{"c", 7, "g"}.record(name, schemas)
			bad.Value = []byte(`{"schema":` + fmt.Sprintf(dbzValueSchema, "before", "after") + `,"payload":{"before":null,"after":{"id":7,"name":"g"}}}`)
			if !schemas {
				bad.Value = []byte(`{"before":null,"after":{"id":7,"name":"g"}}`)
			}
			require.NoError(t, w.prod.ProduceSync(w.ctx, bad).FirstErr())
			p, stop := w.start(cfg)
			st := w.waitNext(p, int64(len(round1)+1))
			require.NoError(t, stop())
			assert.Equal(t, map[pipeline.ErrorKind]int64{pipeline.KindMalformed: 1}, st.Errors, "the event without an op")
			assert.Equal(t, map[int64]any{1: "a2", 3: "c", 4: "d"}, w.dbzRows(name))
			assert.EqualValues(t, 6, st.Upserts)
			assert.EqualValues(t, 3, st.Deletes, "two deletes and a tombstone")
			assert.EqualValues(t, 2, st.NoopDeletes, "the tombstone after the delete of 2, and 99")
			assert.EqualValues(t, 3, st.IndexKeys)

			produce(round2)
			p, stop = w.start(cfg) // a new pipeline: the key index is rebuilt from the table
			st = w.waitNext(p, int64(len(round1)+1+len(round2)))
			require.NoError(t, stop())
			assert.Empty(t, st.Errors)
			assert.Equal(t, map[int64]any{3: "c2", 5: "e"}, w.dbzRows(name))
			assert.EqualValues(t, 1, st.Truncates)
			assert.EqualValues(t, 3, st.RowsDeleted, "the truncate retired the three committed rows")
			assert.EqualValues(t, 2, st.IndexKeys)
		})
	}
}

// TestDebeziumUnavailableValue: an update that carries Debezium's TOAST
// placeholder for a column keeps the column's previous value, wherever
// that is — the key's committed row (read from its data file), an
// earlier version in the same batch (also one that had the placeholder
// itself), or none (a key deleted or truncated before, or never
// written: null) — so the placeholder never reaches the table.
func TestDebeziumUnavailableValue(t *testing.T) {
	const ph = connect.UnavailableValue
	rounds := [][]dbzEvent{
		{{"c", 1, "x"}, {"c", 5, "five"}},
		{{"u", 1, ph}, {"c", 2, "y"}, {"u", 2, ph}, {"u", 2, ph}, {"r", 3, "z"}, {"d", 3, nil}, {"c", 3, ph}, {"c", 4, ph}},
		{{"u", 5, "five2"}, {"t", 0, nil}, {"c", 5, ph}, {"u", 1, "x2"}, {"u", 1, ph}},
	}
	want := []map[int64]any{
		{1: "x", 5: "five"},
		{1: "x", 2: "y", 3: nil, 4: nil, 5: "five"},
		{1: "x2", 5: nil},
	}
	const name = "dbz-toast"
	w := newWorld(t, name)
	cfg := w.config(name, pipeline.FormatConnectJSON)
	cfg.Mode = pipeline.ModeDebezium
	n := 0
	for i, events := range rounds {
		recs := make([]*kgo.Record, len(events))
		for j, e := range events {
			recs[j] = e.record(name, true)
		}
		require.NoError(t, w.prod.ProduceSync(w.ctx, recs...).FirstErr())
		n += len(events)
		p, stop := w.start(cfg)
		st := w.waitNext(p, int64(n))
		require.NoError(t, stop())
		require.Empty(t, st.Errors)
		assert.Equal(t, want[i], w.dbzRows(name), "round %d", i+1)
	}
}

// TestDebeziumTruncateIgnore: with truncate ignore, a truncate event
// leaves the rows committed and buffered before it.
func TestDebeziumTruncateIgnore(t *testing.T) {
	const name = "dbz-ignore"
	w := newWorld(t, name)
	cfg := w.config(name, pipeline.FormatConnectJSON)
	cfg.Mode, cfg.Truncate = pipeline.ModeDebezium, pipeline.TruncateIgnore
	events := []dbzEvent{{"c", 1, "a"}, {"t", 0, nil}, {"c", 2, "b"}}
	recs := make([]*kgo.Record, len(events))
	for i, e := range events {
		recs[i] = e.record(name, true)
	}
	require.NoError(t, w.prod.ProduceSync(w.ctx, recs...).FirstErr())
	p, stop := w.start(cfg)
	st := w.waitNext(p, int64(len(events)))
	require.NoError(t, stop())
	require.Empty(t, st.Errors)
	assert.EqualValues(t, 0, st.Truncates)
	assert.Equal(t, map[int64]any{1: "a", 2: "b"}, w.dbzRows(name))
}

// TestDebeziumPrimaryKeyChangeUnavailable pins the TOAST placeholder of a
// primary-key change: Debezium sends an UPDATE of the key columns as a
// delete of the old key (header __debezium.newkey) and a create of the
// new key (header __debezium.oldkey, the old key's JSON as Kafka
// Connect's SimpleHeaderConverter writes it) whose TOASTed columns the
// UPDATE left alone hold the placeholder. The new key had no earlier
// version, so the column was stored as null; it takes the old key's
// value instead — the old key's committed row (10 from 1), its version
// earlier in the batch (40 from 4), or, when the delete committed in an
// earlier batch than the create, the values carried from that batch (20
// from 2). A create without the header has no earlier version: null.
func TestDebeziumPrimaryKeyChangeUnavailable(t *testing.T) {
	const ph = connect.UnavailableValue
	const name = "dbz-pk-toast"
	w := newWorld(t, name)
	cfg := w.config(name, pipeline.FormatConnectJSON)
	cfg.Mode = pipeline.ModeDebezium
	move := func(from, to int) (del, create *kgo.Record) {
		del = dbzEvent{"d", from, nil}.record(name, true)
		del.Headers = []kgo.RecordHeader{{Key: "__debezium.newkey", Value: fmt.Appendf(nil, `{"id":%d}`, to)}}
		create = dbzEvent{"c", to, ph}.record(name, true)
		create.Headers = []kgo.RecordHeader{{Key: "__debezium.oldkey", Value: fmt.Appendf(nil, `{"id":%d}`, from)}}
		return del, create
	}
	p, stop := w.start(cfg)
	n := 0
	produce := func(recs ...*kgo.Record) {
		t.Helper()
		require.NoError(t, w.prod.ProduceSync(w.ctx, recs...).FirstErr())
		n += len(recs)
		st := w.waitNext(p, int64(n))
		require.Empty(t, st.Errors)
	}
	produce(dbzEvent{"c", 1, "big1"}.record(name, true), dbzEvent{"c", 2, "big2"}.record(name, true), dbzEvent{"c", 3, "big3"}.record(name, true))

	d1, c10 := move(1, 10)
	d4, c40 := move(4, 40)
	produce(d1, dbzEvent{"", 1, nil}.record(name, true), c10,
		dbzEvent{"c", 4, "four"}.record(name, true), d4, c40,
		dbzEvent{"c", 30, ph}.record(name, true))
	assert.Equal(t, map[int64]any{2: "big2", 3: "big3", 10: "big1", 40: "four", 30: nil}, w.dbzRows(name))

	d2, c20 := move(2, 20)
	produce(d2, dbzEvent{"", 2, nil}.record(name, true)) // committed before the create comes
	produce(c20)
	require.NoError(t, stop())
	assert.Equal(t, map[int64]any{3: "big3", 10: "big1", 40: "four", 30: nil, 20: "big2"}, w.dbzRows(name))
}
