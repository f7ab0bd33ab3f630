package pipeline_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tarnhq/tarn/ingest/pipeline"
	"github.com/tarnhq/tarn/internal/arrowtest"
)

// The samples in testdata/debezium are the change events Debezium 3.6.1's
// Postgres connector wrote to a real broker in
// internal/testconnect.TestDebeziumPostgresE2E (captured with its
// -capture flag), one file per topic: <prefix>.public.items and
// <prefix>.public.items_full, for the prefixes avro (the envelope in Avro
// through the registry), json (the envelope, JsonConverter with schemas),
// flat (ExtractNewRecordState, Avro) and flatjson (ExtractNewRecordState,
// JsonConverter with schemas); schemas.json holds the registry schemas
// the Avro records name by id. The source tables after the test's
// changes: items (id int primary key, name text, body text, REPLICA
// IDENTITY DEFAULT) holds capturedItems, items_full (REPLICA IDENTITY
// FULL) capturedItemsFull.
var (
	capturedItems     = map[int64][2]any{1: {"one-v2", capturedBig}, 3: {"three-v2", nil}, 10: {"two", nil}}
	capturedItemsFull = map[int64][2]any{1: {"one-v2", capturedBig}}
)

// capturedBig is the TOASTed body of row 1 (internal/testconnect's big):
// 9,600 hex digits of a SHA-256 chain of "tarn".
var capturedBig = func() string {
	var b strings.Builder
	h := sha256.Sum256([]byte("tarn"))
	for range 150 {
		b.WriteString(hex.EncodeToString(h[:]))
		h = sha256.Sum256(h[:])
	}
	return b.String()
}()

// replayCaptured produces the captured records of topic (a file of
// testdata/debezium) to topic, in order, and returns how many; with
// keyless, every record that has a value is produced without its key (a
// tombstone keeps it). The Avro
// ones' schemas are registered in w's registry under <topic>-key and
// <topic>-value, and their headers rewritten to the new ids.
func (w *world) replayCaptured(topic string, keyless bool) int64 {
	w.t.Helper()
	dir := filepath.Join("testdata", "debezium")
	var schemas map[int]string
	text, err := os.ReadFile(filepath.Join(dir, "schemas.json"))
	require.NoError(w.t, err)
	require.NoError(w.t, json.Unmarshal(text, &schemas))
	ids := map[int]int{}
	reframe := func(raw []byte, subject string) []byte {
		var h sr.ConfluentHeader
		id, body, err := h.DecodeID(raw)
		if err != nil {
			return raw
		}
		to, ok := ids[id]
		if !ok {
			s, found := schemas[id]
			require.True(w.t, found, "schema id %d of %s is not in schemas.json", id, subject)
			ss, err := w.rc.CreateSchema(w.ctx, subject, sr.Schema{Schema: s})
			require.NoError(w.t, err)
			to, ids[id] = ss.ID, ss.ID
		}
		return confluent(w.t, to, nil, body)
	}
	f, err := os.Open(filepath.Join(dir, topic+".jsonl"))
	require.NoError(w.t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	avro := strings.HasPrefix(topic, "avro.") || strings.HasPrefix(topic, "flat.")
	var recs []*kgo.Record
	for sc.Scan() {
		var c struct{ Key, Value []byte }
		require.NoError(w.t, json.Unmarshal(sc.Bytes(), &c))
		if avro {
			c.Key = reframe(c.Key, topic+"-key")
			if c.Value != nil {
				c.Value = reframe(c.Value, topic+"-value")
			}
		}
		if keyless && c.Value != nil {
			c.Key = nil
		}
		recs = append(recs, &kgo.Record{Topic: topic, Key: c.Key, Value: c.Value})
	}
	require.NoError(w.t, sc.Err())
	require.NoError(w.t, w.prod.ProduceSync(w.ctx, recs...).FirstErr())
	return int64(len(recs))
}

// itemRows reads table ns.<name> (a captured items table) back through
// iceberg-go's scan: id → (name, body), failing on a duplicate id.
func (w *world) itemRows(name string) map[int64][2]any {
	w.t.Helper()
	tbl, err := w.cat.TableIO(w.wh).LoadTable(w.ctx, table.Identifier{"ns", name})
	require.NoError(w.t, err)
	out := map[int64][2]any{}
	_, recs, err := tbl.Scan(table.WithSelectedFields("id", "name", "body")).ToArrowRecords(w.ctx)
	require.NoError(w.t, err)
	for rec, err := range recs {
		require.NoError(w.t, err)
		names, bodies := arrowtest.Column(rec, "name"), arrowtest.Column(rec, "body")
		for i, id := range arrowtest.Column(rec, "id") {
			k := int64(id.(int32))
			_, dup := out[k]
			require.False(w.t, dup, "key %d has two live rows", k)
			out[k] = [2]any{names[i], bodies[i]}
		}
		rec.Release()
	}
	return out
}

// identifierFields names the identifier-field-ids of table ns.<name>'s
// current schema, read back from its metadata file, failing on one that
// is not a required column (Iceberg spec "Identifier Field IDs").
func (w *world) identifierFields(name string) []string {
	w.t.Helper()
	tbl, err := w.cat.TableIO(w.wh).LoadTable(w.ctx, table.Identifier{"ns", name})
	require.NoError(w.t, err)
	sc := tbl.Metadata().CurrentSchema()
	var names []string
	for _, id := range sc.IdentifierFieldIDs {
		f, ok := sc.FindFieldByID(id)
		require.True(w.t, ok, "identifier field id %d is no column", id)
		require.True(w.t, f.Required, "identifier field %s is optional", f.Name)
		names = append(names, f.Name)
	}
	return names
}

// metaRows reads the _debezium column of table ns.<name>: id → its
// fields (op, source_ts, ts).
func (w *world) metaRows(name string) map[int64]map[string]any {
	w.t.Helper()
	tbl, err := w.cat.TableIO(w.wh).LoadTable(w.ctx, table.Identifier{"ns", name})
	require.NoError(w.t, err)
	_, recs, err := tbl.Scan(table.WithSelectedFields("id", pipeline.DebeziumColumn)).ToArrowRecords(w.ctx)
	require.NoError(w.t, err)
	out := map[int64]map[string]any{}
	for rec, err := range recs {
		require.NoError(w.t, err)
		metas := arrowtest.Column(rec, pipeline.DebeziumColumn)
		for i, id := range arrowtest.Column(rec, "id") {
			var k int64
			switch id := id.(type) {
			case int32:
				k = int64(id)
			case int64:
				k = id
			}
			out[k], _ = metas[i].(map[string]any)
		}
		rec.Release()
	}
	return out
}

// TestDebeziumCaptured materializes the captured change events of real
// Debezium (testdata/debezium) in every form Tarn reads, and checks each
// table equals its source table after the changes: the snapshot reads,
// the update that left a TOASTed body alone (its placeholder replaced by
// the committed value), the primary-key change, the multi-row transaction
// and the deletes with their tombstones. With key-fields id, the same
// without the records' Kafka keys: a d finds its key in before, a
// flattened delete in its row, a tombstone in its Kafka key; and in
// Avro with key-fields id, rows keyed by their decoded id, deletes by
// their Kafka keys. Without
// key-fields the tables have metadata-columns: each row's _debezium
// holds its last change's op and source.ts_ms (and, from the full
// envelope, ts_ms).
func TestDebeziumCaptured(t *testing.T) {
	cases := []struct {
		prefix   string
		format   pipeline.Format
		envelope pipeline.Envelope
		// keyFields: the events are produced without their Kafka keys
		// (tombstones keep theirs), the rows keyed by column id.
		keyFields bool
	}{
		{"avro", pipeline.FormatAvro, pipeline.EnvelopeFull, false},
		{"flat", pipeline.FormatAvro, pipeline.EnvelopeFlattened, false},
		{"json", pipeline.FormatConnectJSON, pipeline.EnvelopeFull, false},
		{"flatjson", pipeline.FormatConnectJSON, pipeline.EnvelopeFlattened, false},
		{"json", pipeline.FormatConnectJSON, pipeline.EnvelopeFull, true},
		{"flatjson", pipeline.FormatConnectJSON, pipeline.EnvelopeFlattened, true},
		// In Avro the rows' keys come from the decoded rows, the
		// deletes' from their Kafka keys, which are kept.
		{"avro", pipeline.FormatAvro, pipeline.EnvelopeFull, true},
		{"flat", pipeline.FormatAvro, pipeline.EnvelopeFlattened, true},
	}
	for _, c := range cases {
		for table, want := range map[string]map[int64][2]any{"items": capturedItems, "items_full": capturedItemsFull} {
			topic := c.prefix + ".public." + table
			name := topic
			if c.keyFields {
				name += "/key-fields"
			}
			t.Run(name, func(t *testing.T) {
				w := newWorld(t, topic)
				n := w.replayCaptured(topic, c.keyFields && c.format != pipeline.FormatAvro)
				cfg := w.config(topic, c.format)
				cfg.Mode, cfg.Envelope = pipeline.ModeDebezium, c.envelope
				if c.keyFields {
					cfg.KeyFields = []string{"id"}
				} else {
					cfg.MetadataColumns = true
				}
				p, stop := w.start(cfg)
				st := w.waitNext(p, n)
				require.NoError(t, stop())
				require.Empty(t, st.Errors)
				assert.Equal(t, want, w.itemRows(topic))
				// The key columns (the Kafka key's, Debezium's key
				// struct, or key-fields) are the identifier-field-ids.
				assert.Equal(t, []string{"id"}, w.identifierFields(topic), "identifier-field-ids")
				if !c.keyFields {
					// Each row's last change: the snapshot read of
					// items_full's row 1 and items' 10 (the new key of
					// the primary-key change) came before their update
					// and create.
					ops := map[string]map[int64]any{
						"items": {1: "u", 3: "u", 10: "c"}, "items_full": {1: "u"},
					}[table]
					got := map[int64]any{}
					for id, m := range w.metaRows(topic) {
						got[id] = m["op"]
						assert.NotNil(t, m["source_ts"], "row %d: source.ts_ms", id)
						if c.envelope == pipeline.EnvelopeFull {
							assert.NotNil(t, m["ts"], "row %d: ts_ms", id)
						}
					}
					assert.Equal(t, ops, got, "_debezium.op")
				}
			})
		}
	}
}
