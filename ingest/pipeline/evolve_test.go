package pipeline_test

import (
	"bytes"
	"encoding/json"
	"math/big"
	"slices"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tarnhq/tarn/ingest/codec"
	"github.com/tarnhq/tarn/ingest/pipeline"
)

// The evolution test's schemas, in the order they are registered. v1 has
// an int, a required struct and required columns; each later one makes
// one change DESIGN.md "Schema evolution" allows, except v5.
const (
	readingV1 = `{"type": "record", "name": "Reading", "namespace": "tarn.test", "fields": [
		{"name": "id", "type": "long"},
		{"name": "value", "type": "int"},
		{"name": "meta", "type": {"type": "record", "name": "Meta", "fields": [{"name": "source", "type": "string"}]}}]}`
	// v2 adds an optional top-level field.
	readingV2 = `{"type": "record", "name": "Reading", "namespace": "tarn.test", "fields": [
		{"name": "id", "type": "long"},
		{"name": "value", "type": "int"},
		{"name": "meta", "type": {"type": "record", "name": "Meta", "fields": [{"name": "source", "type": "string"}]}},
		{"name": "unit", "type": ["null", "string"], "default": null}]}`
	// v3 adds a field inside the struct, and a required top-level one
	// (an optional column all the same).
	readingV3 = `{"type": "record", "name": "Reading", "namespace": "tarn.test", "fields": [
		{"name": "id", "type": "long"},
		{"name": "value", "type": "int"},
		{"name": "meta", "type": {"type": "record", "name": "Meta", "fields": [
			{"name": "source", "type": "string"}, {"name": "version", "type": ["null", "int"], "default": null}]}},
		{"name": "unit", "type": ["null", "string"], "default": null},
		{"name": "site", "type": "string"}]}`
	// v4 widens value from int to long.
	readingV4 = `{"type": "record", "name": "Reading", "namespace": "tarn.test", "fields": [
		{"name": "id", "type": "long"},
		{"name": "value", "type": "long"},
		{"name": "meta", "type": {"type": "record", "name": "Meta", "fields": [
			{"name": "source", "type": "string"}, {"name": "version", "type": ["null", "int"], "default": null}]}},
		{"name": "unit", "type": ["null", "string"], "default": null},
		{"name": "site", "type": "string"}]}`
	// v5 changes value from long to string: not allowed.
	readingV5 = `{"type": "record", "name": "Reading", "namespace": "tarn.test", "fields": [
		{"name": "id", "type": "long"},
		{"name": "value", "type": "string"},
		{"name": "meta", "type": {"type": "record", "name": "Meta", "fields": [
			{"name": "source", "type": "string"}, {"name": "version", "type": ["null", "int"], "default": null}]}},
		{"name": "unit", "type": ["null", "string"], "default": null},
		{"name": "site", "type": "string"}]}`
	// v6 is v4 without id: the required id column becomes optional.
	readingV6 = `{"type": "record", "name": "Reading", "namespace": "tarn.test", "fields": [
		{"name": "value", "type": "long"},
		{"name": "meta", "type": {"type": "record", "name": "Meta", "fields": [
			{"name": "source", "type": "string"}, {"name": "version", "type": ["null", "int"], "default": null}]}},
		{"name": "unit", "type": ["null", "string"], "default": null},
		{"name": "site", "type": "string"}]}`
)

// produceReadings produces n values of schema (id, parsed) to partition
// 0, each made by mk(i) for i counted from first.
func (e *env) produceAvro(part int32, text string, from, to int, mk func(i int) map[string]any) {
	e.t.Helper()
	id, sc := e.register(text)
	var recs []*kgo.Record
	for i := from; i < to; i++ {
		recs = append(recs, &kgo.Record{Partition: part, Value: e.encode(id, sc, mk(i))})
	}
	e.produce(recs...)
}

// TestSchemaEvolution follows a topic through six value schemas on
// partition 0 (25 records each): v2 adds an optional column, v3 a field
// inside a struct and a required field (both optional columns), v4
// widens int to long. Each is committed as a schema update before the
// rows that need it; earlier rows read back null in the new columns
// (their files were written before the columns existed; matching is by
// field id, which stays the same for every existing column). v5 changes
// value from long to string: the topic suspends at its first record,
// naming the field. Switching to skip (or dlq) and resuming past v5's
// schema id counts v5's records (or writes them to the dead letter
// table) and continues with v6, which lacks id: the required id column
// becomes optional, and nothing after v5 is lost.
func TestSchemaEvolution(t *testing.T) {
	for _, mode := range []pipeline.ErrorMode{pipeline.ErrorModeSkip, pipeline.ErrorModeDLQ} {
		t.Run("resume in "+string(mode), func(t *testing.T) { testSchemaEvolution(t, mode) })
	}
}

func testSchemaEvolution(t *testing.T, resumeMode pipeline.ErrorMode) {
	e := newEnvWith(t, readingV1, func(c *pipeline.Config) { c.PartitionSpec = []string{} })
	e.budget = pipeline.NewBudget(1 << 20)
	const n = 25
	meta := func(i int) map[string]any { return map[string]any{"source": "s" + itoa(i)} }
	e.produceAvro(0, readingV1, 0, n, func(i int) map[string]any {
		return map[string]any{"id": int64(i), "value": int32(i * 10), "meta": meta(i)}
	})
	e.produceAvro(0, readingV2, n, 2*n, func(i int) map[string]any {
		return map[string]any{"id": int64(i), "value": int32(i * 10), "meta": meta(i), "unit": map[string]any{"string": "kg"}}
	})
	e.produceAvro(0, readingV3, 2*n, 3*n, func(i int) map[string]any {
		return map[string]any{"id": int64(i), "value": int32(i * 10), "unit": nil, "site": "north",
			"meta": map[string]any{"source": "s" + itoa(i), "version": map[string]any{"int": int32(3)}}}
	})
	big := int64(1) << 40
	e.produceAvro(0, readingV4, 3*n, 4*n, func(i int) map[string]any {
		return map[string]any{"id": int64(i), "value": big + int64(i), "unit": nil, "site": "south",
			"meta": map[string]any{"source": "s" + itoa(i), "version": nil}}
	})
	v5ID, _ := e.register(readingV5)
	e.produceAvro(0, readingV5, 4*n, 5*n, func(i int) map[string]any {
		return map[string]any{"id": int64(i), "value": "lots", "unit": nil, "site": "x",
			"meta": map[string]any{"source": "s", "version": nil}}
	})
	e.produceAvro(0, readingV6, 5*n, 6*n, func(i int) map[string]any {
		return map[string]any{"value": int64(i * 10), "unit": nil, "site": "east",
			"meta": map[string]any{"source": "s" + itoa(i), "version": nil}}
	})
	v1 := e.table().Schema()

	p := e.newPipeline(e.config(), nil)
	err := e.start(p).wait(t)
	var se *pipeline.SuspendedError
	require.ErrorAs(t, err, &se)
	assert.ErrorIs(t, err, codec.ErrIncompatible)
	assert.Equal(t, pipeline.KindIncompatibleSchema, se.Kind)
	assert.Equal(t, int32(0), se.Partition)
	assert.Equal(t, int64(4*n), se.Offset)
	assert.Equal(t, v5ID, se.SchemaID)
	for _, want := range []string{"column value would change from long to string", "register a compatible schema", "switch error-mode to skip or dlq and resume"} {
		assert.Contains(t, se.Reason, want)
	}
	st := p.Status()
	assert.Equal(t, pipeline.StateSuspended, st.State)
	assert.Equal(t, int64(3), st.SchemaUpdates, "v2, v3 and v4 each evolved the table once")
	assert.Equal(t, map[int32]int64{0: 4 * n}, e.head())
	assert.Zero(t, e.budget.Used(), "every reservation returned, through evolutions and the suspension")

	sc := e.table().Schema()
	requireField(t, sc, "id", iceberg.PrimitiveTypes.Int64, true)
	requireField(t, sc, "value", iceberg.PrimitiveTypes.Int64, true)
	requireField(t, sc, "unit", iceberg.PrimitiveTypes.String, false)
	requireField(t, sc, "site", iceberg.PrimitiveTypes.String, false)
	requireField(t, sc, "meta.source", iceberg.PrimitiveTypes.String, true)
	requireField(t, sc, "meta.version", iceberg.PrimitiveTypes.Int32, false)
	for _, name := range []string{"id", "value", "meta", "meta.source", "_kafka", "_kafka.offset"} {
		before, _ := v1.FindFieldByName(name)
		after, _ := sc.FindFieldByName(name)
		assert.Equal(t, before.ID, after.ID, "field %s keeps its id", name)
	}

	rows := e.scanRows()
	require.Len(t, rows, 4*n)
	for _, r := range rows {
		i := int(num(t, r["_kafka"].(map[string]any)["offset"]))
		m := r["meta"].(map[string]any)
		assert.Equal(t, int64(i), num(t, r["id"]))
		assert.Equal(t, "s"+itoa(i), m["source"])
		switch {
		case i < n:
			assert.Equal(t, int64(i*10), num(t, r["value"]), "an int written before the widening, read as long")
			assert.Nil(t, r["unit"], "row %d predates unit", i)
			assert.Nil(t, r["site"])
			assert.Nil(t, m["version"])
		case i < 2*n:
			assert.Equal(t, "kg", r["unit"])
			assert.Nil(t, r["site"], "row %d predates site", i)
			assert.Nil(t, m["version"], "row %d predates meta.version", i)
		case i < 3*n:
			assert.Equal(t, int64(i*10), num(t, r["value"]))
			assert.Equal(t, "north", r["site"])
			assert.Equal(t, int64(3), num(t, m["version"]))
		default:
			assert.Equal(t, big+int64(i), num(t, r["value"]), "a value only a long holds")
			assert.Equal(t, "south", r["site"])
		}
	}

	// A resume in suspend mode suspends again at the same record.
	again := e.newPipeline(e.config(), nil)
	require.ErrorAs(t, e.start(again).wait(t), &se)
	assert.Equal(t, int64(4*n), se.Offset)

	// Switch the error mode and resume past v5's schema id.
	cfg := e.config()
	cfg.ErrorMode = resumeMode
	cfg.BadSchemaIDs = []int{se.SchemaID}
	resumed := e.newPipeline(cfg, nil)
	r := e.start(resumed)
	e.waitHead(r, map[int32]int64{0: 6 * n})
	require.NoError(t, r.stop(t))
	st = resumed.Status()
	assert.Equal(t, map[pipeline.ErrorKind]int64{pipeline.KindIncompatibleSchema: n}, st.Errors)
	assert.Equal(t, int64(1), st.SchemaUpdates, "v6 made id optional")
	// One evolution attempt for v5's schema id, not one flush per record:
	// the v5 records, then v6's schema change and rows, in a few commits.
	assert.LessOrEqual(t, st.Commits, int64(4), "commits %d for %d records", st.Commits, 2*n)
	requireField(t, e.table().Schema(), "id", iceberg.PrimitiveTypes.Int64, false)
	dlq, exists := e.dlqTable()
	if resumeMode == pipeline.ErrorModeDLQ {
		require.True(t, exists)
		var offs []int64
		for _, r := range scanTableRows(t, dlq) {
			assert.Equal(t, string(pipeline.KindIncompatibleSchema), r["error_kind"])
			assert.Equal(t, int64(v5ID), num(t, r["schema_id"]))
			assert.Contains(t, r["error"], "column value would change from long to string")
			offs = append(offs, num(t, r["_kafka"].(map[string]any)["offset"]))
		}
		slices.Sort(offs)
		assert.Equal(t, span(4*n, 5*n), offs, "every v5 record, once")
	} else {
		assert.False(t, exists)
	}

	rows = e.scanRows()
	require.Len(t, rows, 5*n)
	var v6 []int64
	for _, r := range rows {
		off := num(t, r["_kafka"].(map[string]any)["offset"])
		if off >= 5*n {
			v6 = append(v6, off)
			assert.Nil(t, r["id"])
			assert.Equal(t, off*10, num(t, r["value"]))
			assert.Equal(t, "east", r["site"])
		}
	}
	slices.Sort(v6)
	assert.Equal(t, span(5*n, 6*n), v6, "every record after v5's is in the table")
}

// TestEvolutionRefusals: changes DESIGN.md "Schema evolution" does not
// allow suspend the topic (even in skip mode) with the field and the
// change in the reason, and leave the table's schema alone.
func TestEvolutionRefusals(t *testing.T) {
	base := `{"type": "record", "name": "R", "fields": [
		{"name": "n", "type": "long"},
		{"name": "t", "type": "string"},
		{"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
		{"name": "s", "type": {"type": "record", "name": "S", "fields": [{"name": "a", "type": "int"}]}}]}`
	for _, tc := range []struct {
		name, schema, want string
	}{
		{name: "long to string", want: "column n would change from long to string", schema: `{"type": "record", "name": "R", "fields": [
			{"name": "n", "type": "string"}]}`},
		{name: "string to int", want: "column t would change from string to int", schema: `{"type": "record", "name": "R", "fields": [
			{"name": "t", "type": "int"}]}`},
		{name: "decimal scale", want: "column d would change from decimal(10, 2) to decimal(12, 3)", schema: `{"type": "record", "name": "R", "fields": [
			{"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 3}}]}`},
		{name: "struct to primitive", want: "column s would change from struct", schema: `{"type": "record", "name": "R", "fields": [
			{"name": "s", "type": "string"}]}`},
		{name: "nested int to string", want: "column s.a would change from int to string", schema: `{"type": "record", "name": "R", "fields": [
			{"name": "s", "type": {"type": "record", "name": "S", "fields": [{"name": "a", "type": "string"}]}}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnvWith(t, base, nil)
			before := e.table().Schema()
			id, sc := e.register(tc.schema)
			rec := map[string]any{}
			switch tc.name {
			case "long to string":
				rec["n"] = "1"
			case "string to int":
				rec["t"] = int32(1)
			case "decimal scale":
				rec["d"] = mustRat("1.5")
			case "struct to primitive":
				rec["s"] = "x"
			default:
				rec["s"] = map[string]any{"a": "x"}
			}
			e.produce(&kgo.Record{Partition: 1, Value: e.encode(id, sc, rec)})
			cfg := e.config()
			cfg.ErrorMode = pipeline.ErrorModeSkip
			p := e.newPipeline(cfg, nil)
			var se *pipeline.SuspendedError
			require.ErrorAs(t, e.start(p).wait(t), &se)
			assert.Equal(t, pipeline.KindIncompatibleSchema, se.Kind)
			assert.Contains(t, se.Reason, tc.want)
			assert.Zero(t, p.Status().SchemaUpdates)
			assert.True(t, before.Equals(e.table().Schema()), "the table's schema is unchanged")
		})
	}
}

// TestEvolutionRetriesConcurrentSchemaChange: another writer changes the
// table's schema between the pipeline's load and its schema commit; the
// commit's assert-current-schema-id fails, the pipeline reloads and
// unions again, keeping the other writer's column.
func TestEvolutionRetriesConcurrentSchemaChange(t *testing.T) {
	e := newEnv(t)
	fs := loadFlights(t)
	e.produceFlights(fs[:30], 0)
	wideID, wide := e.register(`{"type": "record", "name": "Flight", "namespace": "tarn.test", "fields": [
		{"name": "date", "type": {"type": "long", "logicalType": "timestamp-micros"}},
		{"name": "delay", "type": "long"}, {"name": "distance", "type": "long"},
		{"name": "origin", "type": "string"}, {"name": "destination", "type": "string"},
		{"name": "seats", "type": ["null", "int"], "default": null}]}`)
	type wideFlight struct {
		flight
		Seats *int `avro:"seats"`
	}
	seats := 180
	e.produce(&kgo.Record{Partition: 0, Value: e.encode(wideID, wide, wideFlight{flight: fs[30], Seats: &seats})})

	var meddled bool
	hook := &hookCatalog{CatalogIO: e.tio}
	hook.onCommit = func(_ table.Identifier, updates []table.Update) error {
		if meddled || !slices.ContainsFunc(updates, func(u table.Update) bool { return u.Action() == table.UpdateAddSchema }) {
			return nil
		}
		meddled = true
		tbl := e.table()
		u := table.NewUpdateSchema(tbl.NewTransaction(), true, false).
			AddColumn([]string{"gate"}, iceberg.PrimitiveTypes.String, "", false, nil)
		updates, reqs, err := u.BuildUpdates()
		require.NoError(t, err)
		_, _, err = e.tio.CommitTable(e.ctx, table.Identifier{"air", "flights"}, reqs, updates)
		require.NoError(t, err)
		return nil
	}
	p := e.newPipeline(e.config(), hook)
	r := e.start(p)
	e.waitHead(r, e.endOffsets())
	require.NoError(t, r.stop(t))

	sc := e.table().Schema()
	requireField(t, sc, "gate", iceberg.PrimitiveTypes.String, false)
	requireField(t, sc, "seats", iceberg.PrimitiveTypes.Int32, false)
	assert.Equal(t, int64(1), p.Status().SchemaUpdates)
	assert.Equal(t, 1, hook.failed(), "the first schema commit failed its assert-current-schema-id")
	var got []int64
	for _, r := range e.scanRows() {
		if r["seats"] != nil {
			got = append(got, num(t, r["seats"]))
		}
	}
	assert.Equal(t, []int64{180}, got)
	assert.Len(t, e.scanRows(), 31)
}

func requireField(t *testing.T, sc *iceberg.Schema, name string, typ iceberg.Type, required bool) {
	t.Helper()
	f, ok := sc.FindFieldByName(name)
	require.True(t, ok, "no column %s in %s", name, sc)
	assert.True(t, typ.Equals(f.Type), "column %s is %s, want %s", name, f.Type, typ)
	assert.Equal(t, required, f.Required, "column %s required", name)
}

func (e *env) table() *table.Table {
	e.t.Helper()
	tbl, err := e.tio.LoadTable(e.ctx, table.Identifier{"air", "flights"})
	require.NoError(e.t, err)
	return tbl
}

// scanRows returns every row of the table's current snapshot as JSON
// values (numbers as json.Number, structs as maps, binary as base64).
func (e *env) scanRows() []map[string]any {
	e.t.Helper()
	return scanTableRows(e.t, e.table())
}

func scanTableRows(t *testing.T, tbl *table.Table) []map[string]any {
	t.Helper()
	if tbl.CurrentSnapshot() == nil {
		return nil
	}
	res, err := tbl.Scan().ToArrowTable(t.Context())
	require.NoError(t, err)
	defer res.Release()
	tr := array.NewTableReader(res, 1024)
	defer tr.Release()
	var buf bytes.Buffer
	for tr.Next() {
		require.NoError(t, array.RecordToJSON(tr.RecordBatch(), &buf))
	}
	dec := json.NewDecoder(&buf)
	dec.UseNumber()
	var out []map[string]any
	for dec.More() {
		var r map[string]any
		require.NoError(t, dec.Decode(&r))
		out = append(out, r)
	}
	return out
}

func num(t *testing.T, v any) int64 {
	t.Helper()
	n, ok := v.(json.Number)
	require.True(t, ok, "%v (%T) is not a number", v, v)
	i, err := n.Int64()
	require.NoError(t, err)
	return i
}

func itoa(i int) string { return strconv.Itoa(i) }

func mustRat(s string) *big.Rat {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		panic(s)
	}
	return r
}
