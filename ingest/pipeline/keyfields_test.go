package pipeline_test

import (
	"testing"

	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tarnhq/tarn/ingest/pipeline"
	"github.com/tarnhq/tarn/internal/arrowtest"
)

// TestUpsertKeyFields: in mode upsert with key-fields, rows are keyed by
// their value columns (here (region, id), given in that order, sorted for
// the identity), not by the Kafka key, which these records lack or which
// differs per record: the last row of each (region, id) wins, a
// tombstone deletes the key its Kafka key's columns name, a row without a
// key column is a bad record (bad_key), and after a restart (the key
// index rebuilt from the table's key columns, not from _kafka.key) an
// update still replaces the committed row. The key columns are required,
// so they are the table's identifier-field-ids.
func TestUpsertKeyFields(t *testing.T) {
	const name = "keyfields"
	w := newWorld(t, name)
	cfg := w.config(name, pipeline.FormatJSON)
	cfg.Mode, cfg.ErrorMode, cfg.KeyFields = pipeline.ModeUpsert, pipeline.ErrorModeSkip, []string{"region", "id"}
	cfg.Schema = declared(t, `{"type":"struct","fields":[{"id":1,"name":"id","type":"long","required":true},{"id":2,"name":"region","type":"string","required":true},{"id":3,"name":"name","type":"string","required":false}]}`)
	rec := func(key, value string) *kgo.Record {
		r := &kgo.Record{Topic: name}
		if key != "" {
			r.Key = []byte(key)
		}
		if value != "" {
			r.Value = []byte(value)
		}
		return r
	}
	round1 := []*kgo.Record{
		rec("", `{"id":1,"region":"eu","name":"a"}`),
		rec("x", `{"id":1,"region":"us","name":"b"}`),
		rec("y", `{"region":"eu","id":1,"name":"a2"}`), // same key, other member order and Kafka key
		rec("", `{"id":2,"region":"eu","name":"c"}`),
		rec(`{"id":2,"region":"eu"}`, ""), // a tombstone: its Kafka key names the columns
		rec("", `{"id":3,"name":"no region"}`),
		rec("", `{"id":4,"region":"eu","name":"d"}`),
	}
	require.NoError(t, w.prod.ProduceSync(w.ctx, round1...).FirstErr())
	p, stop := w.start(cfg)
	st := w.waitNext(p, int64(len(round1)))
	require.NoError(t, stop())
	assert.Equal(t, map[pipeline.ErrorKind]int64{pipeline.KindBadKey: 1}, st.Errors, "the row without region")
	assert.Equal(t, map[string]any{"eu/1": "a2", "us/1": "b", "eu/4": "d"}, w.regionRows(name))
	assert.EqualValues(t, 3, st.IndexKeys)

	tbl, err := w.cat.TableIO(w.wh).LoadTable(w.ctx, table.Identifier{"ns", name})
	require.NoError(t, err)
	var ids []string
	for _, id := range tbl.Schema().IdentifierFieldIDs {
		f, _ := tbl.Schema().FindFieldByID(id)
		ids = append(ids, f.Name)
	}
	assert.ElementsMatch(t, []string{"region", "id"}, ids, "identifier-field-ids")

	round2 := []*kgo.Record{
		rec("", `{"id":4,"region":"eu","name":"d2"}`),
		rec(`{"region":"us","id":1}`, ""),
	}
	require.NoError(t, w.prod.ProduceSync(w.ctx, round2...).FirstErr())
	p, stop = w.start(cfg) // a new pipeline: the index is rebuilt from the key columns
	st = w.waitNext(p, int64(len(round1)+len(round2)))
	require.NoError(t, stop())
	assert.Empty(t, st.Errors)
	assert.Equal(t, map[string]any{"eu/1": "a2", "eu/4": "d2"}, w.regionRows(name))
	assert.EqualValues(t, 2, st.RowsDeleted)
}

// regionRows reads TestUpsertKeyFields' table: region/id → name, failing
// on a duplicate key.
func (w *world) regionRows(name string) map[string]any {
	w.t.Helper()
	tbl, err := w.cat.TableIO(w.wh).LoadTable(w.ctx, table.Identifier{"ns", name})
	require.NoError(w.t, err)
	_, recs, err := tbl.Scan(table.WithSelectedFields("id", "region", "name")).ToArrowRecords(w.ctx)
	require.NoError(w.t, err)
	out := map[string]any{}
	for rec, err := range recs {
		require.NoError(w.t, err)
		ids, regions, names := arrowtest.Column(rec, "id"), arrowtest.Column(rec, "region"), arrowtest.Column(rec, "name")
		for i := range ids {
			k := regions[i].(string) + "/" + itoa(int(ids[i].(int64)))
			_, dup := out[k]
			require.False(w.t, dup, "key %s has two live rows", k)
			out[k] = names[i]
		}
		rec.Release()
	}
	return out
}
