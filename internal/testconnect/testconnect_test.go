package testconnect_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tarnhq/tarn/internal/testconnect"
	"github.com/tarnhq/tarn/internal/testkafka"
	"github.com/tarnhq/tarn/internal/testpg"
)

// unavailable is Debezium's placeholder for a TOASTed column that an
// update did not change, under REPLICA IDENTITY DEFAULT (pgoutput sends
// no value for it); unavailable.value.placeholder's default.
const unavailable = "__debezium_unavailable_value"

// big is the TOASTed column's value: 9,600 hex digits of a SHA-256 chain,
// which pglz cannot shrink (it has no repeats to find) under the 2 kB
// TOAST threshold, so it is stored out of line (checked in the test) and
// an update that leaves it alone does not send it.
var big = func() string {
	var b strings.Builder
	h := sha256.Sum256([]byte("tarn"))
	for range 150 {
		b.WriteString(hex.EncodeToString(h[:]))
		h = sha256.Sum256(h[:])
	}
	return b.String()
}()

// TestDebeziumPostgresE2E runs the real chain of issue 15: PostgreSQL →
// Debezium's Postgres connector in Kafka Connect → Kafka (+ the registry),
// with the three tested connector configurations on one worker: the
// envelope in Avro through the registry (Confluent wire format), the
// envelope with JsonConverter schemas, and the ExtractNewRecordState form
// in Avro. A snapshot of existing rows, an update leaving a TOASTed column
// alone, a primary-key change, a multi-row transaction and deletes must
// arrive as the expected change events (op r/c/u/d, before/after, source,
// ts_ms, tombstones), with keys decodable (Avro keys under subject
// <topic>-key). Runs only with TARN_E2E=1
// (TARN_E2E=1 go test ./internal/testconnect).
func TestDebeziumPostgresE2E(t *testing.T) {
	if os.Getenv("TARN_E2E") != "1" {
		t.Skip("set TARN_E2E=1 to start PostgreSQL, Kafka, a schema registry and Kafka Connect")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	t0 := time.Now()
	lap := func(what string) { t.Logf("%s: %.1fs", what, time.Since(t0).Seconds()); t0 = time.Now() }

	pg := testpg.StartPostgres(t)
	b := testkafka.StartBroker(t)
	r := testkafka.StartRegistry(t)
	lap("postgres, kafka, registry started")
	w := testconnect.StartConnect(t, b, r)
	lap("kafka connect started")

	pg.Exec(t, `CREATE TABLE items (id int PRIMARY KEY, name text, body text);
		CREATE TABLE items_full (id int PRIMARY KEY, name text, body text);
		ALTER TABLE items_full REPLICA IDENTITY FULL`)
	pg.Exec(t, `INSERT INTO items VALUES (1, 'one', $1), (2, 'two', NULL), (3, 'three', NULL)`, big)
	pg.Exec(t, `INSERT INTO items_full VALUES (1, 'one', $1)`, big)
	var toastBytes int64
	if err := pg.Connect(t).QueryRow(ctx,
		`SELECT pg_relation_size(reltoastrelid) FROM pg_class WHERE relname = 'items'`).Scan(&toastBytes); err != nil || toastBytes == 0 {
		t.Fatalf("items' TOAST table has %d bytes (%v): the body is not stored out of line", toastBytes, err)
	}

	connectors := variants(pg, r.URL)
	t.Cleanup(func() { // before the worker stops
		if t.Failed() {
			for name := range connectors {
				s, _ := w.Status(t, name)
				t.Logf("status of %s: %+v", name, s)
			}
			t.Logf("errors in the worker's log:\n%s", w.LogErrors(t))
		}
	})
	for name, cfg := range connectors {
		w.CreateConnector(t, name, cfg)
	}
	for name := range connectors {
		w.AwaitStreaming(t, name, 3*time.Minute)
	}
	lap("three connectors snapshotted and streaming")

	pg.Exec(t, `UPDATE items SET name = 'one-v2' WHERE id = 1`) // body untouched
	pg.Exec(t, `UPDATE items_full SET name = 'one-v2' WHERE id = 1`)
	pg.Exec(t, `UPDATE items SET id = 10 WHERE id = 2`) // primary-key change
	pg.Exec(t, `BEGIN;
		INSERT INTO items VALUES (4, 'four', NULL), (5, 'five', NULL);
		UPDATE items SET name = 'three-v2' WHERE id = 3;
		DELETE FROM items WHERE id = 5;
		COMMIT`)
	pg.Exec(t, `DELETE FROM items WHERE id = 4`)

	// What each topic must hold, in offset order (the snapshot reads of a
	// table in any order). before=- is a null before: under REPLICA
	// IDENTITY DEFAULT an update has none and a delete's holds only the key.
	envelope := map[string][]string{
		"public.items": {
			"1: r before=- after={1 one <big>}",
			"2: r before=- after={2 two null}",
			"3: r before=- after={3 three null}",
			"1: u before=- after={1 one-v2 <unavailable>}",
			"2: d before={2 null null} after=-",
			"2: tombstone",
			"10: c before=- after={10 two null}",
			"4: c before=- after={4 four null}",
			"5: c before=- after={5 five null}",
			"3: u before=- after={3 three-v2 null}",
			"5: d before={5 null null} after=-",
			"5: tombstone",
			"4: d before={4 null null} after=-",
			"4: tombstone",
		},
		// REPLICA IDENTITY FULL: the whole old row, and the TOASTed value.
		"public.items_full": {
			"1: r before=- after={1 one <big>}",
			"1: u before={1 one <big>} after={1 one-v2 <big>}",
		},
	}
	flat := map[string][]string{
		"public.items": {
			"1: r {1 one <big>} deleted=false",
			"2: r {2 two null} deleted=false",
			"3: r {3 three null} deleted=false",
			"1: u {1 one-v2 <unavailable>} deleted=false",
			"2: d {2 null null} deleted=true",
			"2: tombstone",
			"10: c {10 two null} deleted=false",
			"4: c {4 four null} deleted=false",
			"5: c {5 five null} deleted=false",
			"3: u {3 three-v2 null} deleted=false",
			"5: d {5 null null} deleted=true",
			"5: tombstone",
			"4: d {4 null null} deleted=true",
			"4: tombstone",
		},
		"public.items_full": {
			"1: r {1 one <big>} deleted=false",
			"1: u {1 one-v2 <big>} deleted=false",
		},
	}
	want := map[string][]string{}
	for table, events := range envelope {
		want["avro."+table] = events
		want["json."+table] = events
	}
	for table, events := range flat {
		want["flat."+table] = events
		want["flatjson."+table] = events
	}
	records := consume(t, ctx, b.Bootstrap, want)
	lap("change events consumed")

	rcl := r.Client(t)
	if *capture != "" {
		writeCapture(t, ctx, rcl, *capture, records)
	}
	d := &decoder{t: t, ctx: ctx, reg: rcl, schemas: map[int]avro.Schema{}}
	for topic, events := range want {
		var got []string
		txIDs := map[string]string{}
		for _, rec := range records[topic] {
			var c change
			switch {
			case strings.HasPrefix(topic, "avro."):
				c = d.avroEnvelope(topic, rec)
			case strings.HasPrefix(topic, "json."):
				c = d.jsonEnvelope(topic, rec)
			case strings.HasPrefix(topic, "flatjson."):
				c = d.jsonFlat(topic, rec)
			default:
				c = d.avroFlat(topic, rec)
			}
			got = append(got, c.String())
			if !c.tombstone {
				d.checkSource(topic, c)
				txIDs[c.String()] = fmt.Sprint(c.source["txId"])
			}
		}
		reads := 0 // the snapshot reads come first, in any order
		for reads < len(got) && strings.Contains(got[reads], ": r ") {
			reads++
		}
		slices.Sort(got[:reads])
		if !slices.Equal(got, events) {
			t.Errorf("%s:\n got  %s\n want %s", topic, strings.Join(got, "\n      "), strings.Join(events, "\n      "))
			continue
		}
		if strings.HasSuffix(topic, ".public.items") && !strings.HasPrefix(topic, "flat") {
			// The multi-row transaction's four events carry one txId, not
			// the one of the update before it (the flat form has no source
			// block).
			tx := txIDs[events[7]]
			for _, e := range events[8:11] {
				if txIDs[e] != tx {
					t.Errorf("%s: %q in transaction %s, want %s (that of %q)", topic, e, txIDs[e], tx, events[7])
				}
			}
			if txIDs[events[3]] == tx {
				t.Errorf("%s: %q and the transaction after it share txId %s", topic, events[3], tx)
			}
		}
	}

	// dereference-schema=true registered every value schema whole: no
	// subject for Debezium's source block of its own.
	subjects, err := rcl.Subjects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range subjects {
		if !strings.HasSuffix(s, "-key") && !strings.HasSuffix(s, "-value") {
			t.Errorf("subject %q: a schema registered as a reference, not inline (subjects %v)", s, subjects)
		}
	}
	lap("decoded and checked")
}

// consume reads each topic of want from its start until it holds
// len(want[topic]) records.
func consume(t *testing.T, ctx context.Context, bootstrap string, want map[string][]string) map[string][]*kgo.Record {
	t.Helper()
	var topics []string
	for topic := range want {
		topics = append(topics, topic)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[string][]*kgo.Record{}
	done := func() bool {
		for topic, events := range want {
			if len(got[topic]) < len(events) {
				return false
			}
		}
		return true
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for !done() {
		fs := cl.PollFetches(pctx)
		if pctx.Err() != nil {
			counts := map[string]string{}
			for topic, events := range want {
				counts[topic] = fmt.Sprintf("%d of %d", len(got[topic]), len(events))
			}
			t.Fatalf("change events still missing after 2 minutes: %v", counts)
		}
		fs.EachError(func(topic string, p int32, err error) {
			// A topic the connector has not created yet.
			t.Logf("fetch %s[%d]: %v", topic, p, err)
		})
		fs.EachRecord(func(rec *kgo.Record) { got[rec.Topic] = append(got[rec.Topic], rec) })
	}
	return got
}

// change is one decoded record of a change topic, in a common form for
// the three converter configurations.
type change struct {
	key           int
	tombstone     bool
	op            string
	before, after *row   // envelope
	flat          *row   // ExtractNewRecordState: the row, and __deleted
	deleted       string // "true" / "false"
	source        map[string]any
	tsMillis      int64 // ts_ms, or __source_ts_ms of the flat form
}

// row is a row of items as both converters write it (nullable columns are
// ["null", "string"] unions in Avro, null in JSON).
type row struct {
	ID   int32   `avro:"id" json:"id"`
	Name *string `avro:"name" json:"name"`
	Body *string `avro:"body" json:"body"`
}

// String renders a row with its body: <big> for the test's long value,
// <unavailable> for Debezium's TOAST placeholder.
func (r *row) String() string {
	if r == nil {
		return "-"
	}
	s := func(p *string) string {
		switch {
		case p == nil:
			return "null"
		case *p == big:
			return "<big>"
		case *p == unavailable:
			return "<unavailable>"
		}
		return *p
	}
	return fmt.Sprintf("{%d %s %s}", r.ID, s(r.Name), s(r.Body))
}

func (c change) String() string {
	switch {
	case c.tombstone:
		return fmt.Sprintf("%d: tombstone", c.key)
	case c.flat != nil:
		return fmt.Sprintf("%d: %s %v deleted=%s", c.key, c.op, c.flat, c.deleted)
	}
	return fmt.Sprintf("%d: %s before=%v after=%v", c.key, c.op, c.before, c.after)
}

type decoder struct {
	t       *testing.T
	ctx     context.Context
	reg     *sr.Client
	schemas map[int]avro.Schema
}

// avro decodes a Confluent-framed Avro body into v, checking that its
// schema id is the latest version of subject.
func (d *decoder) avro(subject string, b []byte, v any) {
	d.t.Helper()
	var h sr.ConfluentHeader
	id, body, err := h.DecodeID(b)
	if err != nil {
		d.t.Fatalf("%s: not in the Confluent wire format: %v (% x)", subject, err, b[:min(len(b), 8)])
	}
	sch, ok := d.schemas[id]
	if !ok {
		ss, err := d.reg.SchemaByID(d.ctx, id)
		if err != nil {
			d.t.Fatalf("%s: schema %d: %v", subject, id, err)
		}
		if sch, err = avro.Parse(ss.Schema); err != nil {
			d.t.Fatalf("%s: schema %d: %v", subject, id, err)
		}
		latest, err := d.reg.SchemaByVersion(d.ctx, subject, -1)
		if err != nil || latest.ID != id {
			d.t.Fatalf("schema id %d is not the latest of subject %s (%+v, %v)", id, subject, latest, err)
		}
		d.schemas[id] = sch
	}
	if err := avro.Unmarshal(sch, body, v); err != nil {
		d.t.Fatalf("%s: decode with schema %d: %v", subject, id, err)
	}
}

func (d *decoder) avroKey(topic string, rec *kgo.Record) int {
	d.t.Helper()
	var k struct {
		ID int32 `avro:"id"`
	}
	d.avro(topic+"-key", rec.Key, &k)
	return int(k.ID)
}

func (d *decoder) avroEnvelope(topic string, rec *kgo.Record) change {
	d.t.Helper()
	c := change{key: d.avroKey(topic, rec), tombstone: rec.Value == nil}
	if c.tombstone {
		return c
	}
	var e struct {
		Before *row           `avro:"before"`
		After  *row           `avro:"after"`
		Source map[string]any `avro:"source"`
		Op     string         `avro:"op"`
		TsMs   *int64         `avro:"ts_ms"`
	}
	d.avro(topic+"-value", rec.Value, &e)
	c.op, c.before, c.after, c.source = e.Op, e.Before, e.After, e.Source
	if e.TsMs != nil {
		c.tsMillis = *e.TsMs
	}
	return c
}

func (d *decoder) avroFlat(topic string, rec *kgo.Record) change {
	d.t.Helper()
	c := change{key: d.avroKey(topic, rec), tombstone: rec.Value == nil}
	if c.tombstone {
		return c
	}
	var v struct {
		ID         int32   `avro:"id"`
		Name       *string `avro:"name"`
		Body       *string `avro:"body"`
		Op         *string `avro:"__op"`
		SourceTsMs *int64  `avro:"__source_ts_ms"`
		Deleted    *string `avro:"__deleted"`
	}
	d.avro(topic+"-value", rec.Value, &v)
	if v.Op == nil || v.SourceTsMs == nil || v.Deleted == nil {
		d.t.Fatalf("%s: flattened value without __op, __source_ts_ms or __deleted: %+v", topic, v)
	}
	c.op, c.flat, c.deleted, c.tsMillis = *v.Op, &row{ID: v.ID, Name: v.Name, Body: v.Body}, *v.Deleted, *v.SourceTsMs
	return c
}

// jsonMessage is what JsonConverter writes with schemas.enable=true.
type jsonMessage[T any] struct {
	Schema struct {
		Type   string `json:"type"`
		Name   string `json:"name"`
		Fields []struct {
			Field string `json:"field"`
		} `json:"fields"`
	} `json:"schema"`
	Payload T `json:"payload"`
}

func (d *decoder) jsonEnvelope(topic string, rec *kgo.Record) change {
	d.t.Helper()
	var k jsonMessage[struct {
		ID int32 `json:"id"`
	}]
	if err := json.Unmarshal(rec.Key, &k); err != nil || k.Schema.Name != topic+".Key" || k.Schema.Type != "struct" {
		d.t.Fatalf("%s: key %s: %v (want a struct schema named %s.Key)", topic, rec.Key, err, topic)
	}
	c := change{key: int(k.Payload.ID), tombstone: rec.Value == nil}
	if c.tombstone {
		return c
	}
	var e jsonMessage[struct {
		Before *row           `json:"before"`
		After  *row           `json:"after"`
		Source map[string]any `json:"source"`
		Op     string         `json:"op"`
		TsMs   int64          `json:"ts_ms"`
	}]
	if err := json.Unmarshal(rec.Value, &e); err != nil {
		d.t.Fatalf("%s: value %s: %v", topic, rec.Value, err)
	}
	var fields []string
	for _, f := range e.Schema.Fields {
		fields = append(fields, f.Field)
	}
	for _, f := range []string{"before", "after", "source", "op", "ts_ms"} {
		if !slices.Contains(fields, f) {
			d.t.Fatalf("%s: value schema %s has no field %s: %v", topic, e.Schema.Name, f, fields)
		}
	}
	if e.Schema.Name != topic+".Envelope" {
		d.t.Fatalf("%s: value schema named %q, want %s.Envelope", topic, e.Schema.Name, topic)
	}
	p := e.Payload
	c.op, c.before, c.after, c.source, c.tsMillis = p.Op, p.Before, p.After, p.Source, p.TsMs
	return c
}

func (d *decoder) jsonFlat(topic string, rec *kgo.Record) change {
	d.t.Helper()
	var k jsonMessage[struct {
		ID int32 `json:"id"`
	}]
	if err := json.Unmarshal(rec.Key, &k); err != nil || k.Schema.Name != topic+".Key" {
		d.t.Fatalf("%s: key %s: %v (want a struct schema named %s.Key)", topic, rec.Key, err, topic)
	}
	c := change{key: int(k.Payload.ID), tombstone: rec.Value == nil}
	if c.tombstone {
		return c
	}
	var v jsonMessage[struct {
		ID         int32   `json:"id"`
		Name       *string `json:"name"`
		Body       *string `json:"body"`
		Op         *string `json:"__op"`
		SourceTsMs *int64  `json:"__source_ts_ms"`
		Deleted    *string `json:"__deleted"`
	}]
	if err := json.Unmarshal(rec.Value, &v); err != nil {
		d.t.Fatalf("%s: value %s: %v", topic, rec.Value, err)
	}
	if v.Schema.Name != topic+".Value" {
		d.t.Fatalf("%s: value schema named %q, want %s.Value (the row's, not the envelope's)", topic, v.Schema.Name, topic)
	}
	p := v.Payload
	if p.Op == nil || p.SourceTsMs == nil || p.Deleted == nil {
		d.t.Fatalf("%s: flattened value without __op, __source_ts_ms or __deleted: %s", topic, rec.Value)
	}
	c.op, c.flat, c.deleted, c.tsMillis = *p.Op, &row{ID: p.ID, Name: p.Name, Body: p.Body}, *p.Deleted, *p.SourceTsMs
	return c
}

// checkSource checks ts_ms, the source block of the envelope (where the
// change came from; snapshot "false" once streaming) and the row's key.
func (d *decoder) checkSource(topic string, c change) {
	d.t.Helper()
	if c.tsMillis < time.Now().Add(-time.Hour).UnixMilli() || c.tsMillis > time.Now().Add(time.Minute).UnixMilli() {
		d.t.Errorf("%s: %v: ts_ms %d is not a recent time", topic, c, c.tsMillis)
	}
	r := c.after
	if c.flat != nil {
		r = c.flat
	} else if c.op == "d" {
		r = c.before
	}
	if r == nil || int(r.ID) != c.key {
		d.t.Errorf("%s: %v: the row's id differs from the key", topic, c)
	}
	if c.flat != nil {
		return // no source block
	}
	table := topic[strings.LastIndex(topic, ".")+1:]
	for k, v := range map[string]string{"connector": "postgresql", "db": "tarn", "schema": "public", "table": table} {
		if fmt.Sprint(c.source[k]) != v {
			d.t.Errorf("%s: %v: source.%s = %v, want %s (source %v)", topic, c, k, c.source[k], v, c.source)
		}
	}
	snapshot := fmt.Sprint(c.source["snapshot"])
	if (c.op == "r") != (snapshot != "false") {
		d.t.Errorf("%s: %v: source.snapshot = %s", topic, c, snapshot)
	}
}
