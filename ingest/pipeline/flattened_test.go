package pipeline_test

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/pipeline"
)

// The flattened form of table t's events, as Debezium's
// ExtractNewRecordState transform writes them with
// add.fields=op,source.ts_ms and delete.tombstone.handling.mode=rewrite-with-tombstone
// (internal/testconnect.ExtractNewRecordState): the row, then __op,
// __source_ts_ms and __deleted.
const dbzFlatSchema = `{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"},{"type":"string","optional":true,"field":"name"},` +
	`{"type":"string","optional":true,"field":"__op"},{"type":"int64","optional":true,"field":"__source_ts_ms"},{"type":"string","optional":true,"field":"__deleted"}],"optional":false,"name":"s.public.t.Value"}`

// flatRecord is e flattened: a delete is its before row (the key only)
// with __deleted "true"; a tombstone stays one. noOp leaves __op out
// (add.fields without op), as delete.handling.mode=rewrite alone writes it.
func (e dbzEvent) flatRecord(topic string, schemas, noOp bool) *kgo.Record {
	r := e.record(topic, schemas)
	if e.op == "" {
		return r
	}
	name, deleted := "null", "false"
	switch {
	case e.op == "d":
		deleted = "true"
	case e.name != nil:
		name = fmt.Sprintf("%q", e.name)
	}
	op := fmt.Sprintf(`"__op":%q,`, e.op)
	if noOp {
		op = ""
	}
	row := fmt.Sprintf(`{"id":%d,"name":%s,%s"__source_ts_ms":1700000000000,"__deleted":%q}`, e.id, name, op, deleted)
	if schemas {
		row = `{"schema":` + dbzFlatSchema + `,"payload":` + row + `}`
	}
	r.Value = []byte(row)
	return r
}

// TestDebeziumFlattened runs a change stream flattened by
// ExtractNewRecordState through mode debezium with envelope flattened,
// in connect-json and in json (the columns declared), across a restart:
// rows with __deleted "true" (with or without __op) delete their key, the
// tombstone after a delete is a no-op, a delete of an absent key too, and
// every other row upserts its key. __op, __source_ts_ms and __deleted are
// columns of the table like the row's own.
func TestDebeziumFlattened(t *testing.T) {
	round1 := []dbzEvent{
		{"r", 1, "a"}, {"r", 2, "b"}, {"c", 3, "c"},
		{"u", 1, "a2"}, {"d", 2, nil}, {"", 2, nil}, {"d", 99, nil},
		{"c", 4, nil}, {"u", 4, "d"},
	}
	round2 := []dbzEvent{{"c", 5, "e"}, {"u", 3, "c2"}, {"d", 4, nil}, {"", 4, nil}, {"d", 1, nil}}
	for _, schemas := range []bool{true, false} {
		name := "flat-plain"
		if schemas {
			name = "flat-schemas"
		}
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, name)
			cfg := w.config(name, pipeline.FormatConnectJSON)
			if !schemas {
				cfg = w.config(name, pipeline.FormatJSON)
				cfg.Schema = declared(t, `{"type":"struct","fields":[{"id":1,"name":"id","type":"long","required":true},{"id":2,"name":"name","type":"string","required":false},{"id":3,"name":"__op","type":"string","required":false}]}`)
			}
			cfg.Mode, cfg.Envelope = pipeline.ModeDebezium, pipeline.EnvelopeFlattened
			produce := func(events []dbzEvent, noOp bool) {
				recs := make([]*kgo.Record, len(events))
				for i, e := range events {
					recs[i] = e.flatRecord(name, schemas, noOp)
				}
				require.NoError(t, w.prod.ProduceSync(w.ctx, recs...).FirstErr())
			}
			produce(round1, false)
			p, stop := w.start(cfg)
			st := w.waitNext(p, int64(len(round1)))
			require.NoError(t, stop())
			require.Empty(t, st.Errors)
			assert.Equal(t, map[int64]any{1: "a2", 3: "c", 4: "d"}, w.dbzRows(name))
			assert.EqualValues(t, 6, st.Upserts)
			assert.EqualValues(t, 3, st.Deletes, "two deletes and a tombstone")
			assert.EqualValues(t, 2, st.NoopDeletes, "the tombstone after the delete of 2, and 99")

			produce(round2, true) // __deleted alone marks the deletes
			p, stop = w.start(cfg)
			st = w.waitNext(p, int64(len(round1)+len(round2)))
			require.NoError(t, stop())
			require.Empty(t, st.Errors)
			assert.Equal(t, map[int64]any{3: "c2", 5: "e"}, w.dbzRows(name))
			assert.EqualValues(t, 2, st.IndexKeys)
		})
	}
}

// TestDebeziumFlattenedRefusesTheEnvelope: a topic of flattened events
// enabled with the default envelope (full) is no silent success: a
// flattened row is no envelope, a bad record whose message names the
// setting.
func TestDebeziumFlattenedRefusesTheEnvelope(t *testing.T) {
	const name = "flat-wrong"
	w := newWorld(t, name)
	cfg := w.config(name, pipeline.FormatJSON)
	cfg.Schema = declared(t, `{"type":"struct","fields":[{"id":1,"name":"id","type":"long","required":true},{"id":2,"name":"name","type":"string","required":false}]}`)
	cfg.Mode = pipeline.ModeDebezium
	require.NoError(t, w.prod.ProduceSync(w.ctx, dbzEvent{"c", 1, "a"}.flatRecord(name, false, false)).FirstErr())
	p, stop := w.start(cfg)
	st := w.waitNext(p, 1)
	assert.Equal(t, pipeline.StateSuspended, st.State)
	require.ErrorContains(t, stop(), "envelope to flattened")
}

// TestDebeziumMetadataColumns: with metadata-columns, each row's
// _debezium holds the op of its key's last change and the event's
// source.ts_ms and ts_ms as timestamps (microseconds since the epoch),
// from the envelope and from the flattened form (__op, __source_ts_ms;
// no __ts_ms there: null). The setting is refused outside mode debezium.
func TestDebeziumMetadataColumns(t *testing.T) {
	events := []dbzEvent{{"r", 1, "a"}, {"c", 2, "b"}, {"u", 1, "a2"}, {"d", 2, nil}, {"c", 3, "c"}}
	for _, flat := range []bool{false, true} {
		name := "meta-envelope"
		if flat {
			name = "meta-flat"
		}
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, name)
			cfg := w.config(name, pipeline.FormatConnectJSON)
			cfg.Mode, cfg.MetadataColumns = pipeline.ModeDebezium, true
			if flat {
				cfg.Envelope = pipeline.EnvelopeFlattened
			}
			recs := make([]*kgo.Record, len(events))
			for i, e := range events {
				recs[i] = e.record(name, true)
				if flat {
					recs[i] = e.flatRecord(name, true, false)
				}
			}
			require.NoError(t, w.prod.ProduceSync(w.ctx, recs...).FirstErr())
			p, stop := w.start(cfg)
			st := w.waitNext(p, int64(len(events)))
			require.NoError(t, stop())
			require.Empty(t, st.Errors)
			var ts any = arrow.Timestamp(1700000000123000)
			if flat {
				ts = nil
			}
			source := arrow.Timestamp(1700000000000000)
			assert.Equal(t, map[int64]map[string]any{
				1: {"op": "u", "source_ts": source, "ts": ts},
				3: {"op": "c", "source_ts": source, "ts": ts},
			}, w.metaRows(name))
		})
	}
	cfg := pipeline.Config{Topic: "t", Cluster: "c", Table: catalog.Ident{Namespace: catalog.Namespace{"ns"}, Name: "t"},
		Format: pipeline.FormatConnectJSON, Mode: pipeline.ModeUpsert, MetadataColumns: true}
	require.ErrorIs(t, cfg.Validate(), pipeline.ErrInvalidConfig)
}
