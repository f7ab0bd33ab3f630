package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/sink"
	"github.com/tarnhq/tarn/offsets"
)

// DLQ table (DESIGN.md "Bad records", error mode dlq).
const (
	// DLQSuffix is appended to a topic's table name to name its dead
	// letter table, in the same namespace.
	DLQSuffix = "_dlq"
	// DLQKindColumn holds the ErrorKind of a bad record.
	DLQKindColumn = "error_kind"
	// DLQErrorColumn holds the error message.
	DLQErrorColumn = "error"
	// DLQSchemaIDColumn holds the record's schema id; null when it has
	// none (a bad header, a tombstone, a schemaless format).
	DLQSchemaIDColumn = "schema_id"
	// DLQValueColumn holds the raw record value, as read from Kafka; null
	// for a tombstone.
	DLQValueColumn = "value"
)

// maxDLQAttempts bounds the commits of one dlq batch that find the dlq
// table's head moved (another pipeline of the topic committed to it):
// each retry re-filters the rows against the new head.
const maxDLQAttempts = 4

// DLQTable is the dead letter table of table t: t's name plus DLQSuffix,
// in t's namespace.
func DLQTable(t catalog.Ident) catalog.Ident {
	return catalog.Ident{Namespace: t.Namespace, Name: t.Name + DLQSuffix}
}

// DLQTableSchema is the schema of a dead letter table: error_kind string,
// error string, schema_id int (optional), _kafka (as in every
// materialized table: partition, offset, timestamp, key, headers) and
// value binary (optional), with ids assigned depth-first from 1.
func DLQTableSchema() *iceberg.Schema {
	sc, err := iceberg.AssignFreshSchemaIDs(iceberg.NewSchema(0,
		iceberg.NestedField{Name: DLQKindColumn, Type: iceberg.PrimitiveTypes.String, Required: true,
			Doc: "why the record is here: bad_header, no_value, unknown_schema, malformed, out_of_range, incompatible_schema, unsupported_schema"},
		iceberg.NestedField{Name: DLQErrorColumn, Type: iceberg.PrimitiveTypes.String, Required: true, Doc: "the error message"},
		iceberg.NestedField{Name: DLQSchemaIDColumn, Type: iceberg.PrimitiveTypes.Int32, Doc: "the record's schema id; null when it has none"},
		kafkaField(),
		iceberg.NestedField{Name: DLQValueColumn, Type: iceberg.PrimitiveTypes.Binary, Doc: "the raw record value; null for a tombstone"},
	), nil)
	if err != nil {
		// Static schema with no ids to clash.
		panic(err)
	}
	return sc
}

// EnsureDLQTable creates the dead letter table of cfg's table
// (DLQTable(cfg.Table), DLQTableSchema, partitioned by
// day(_kafka.timestamp), unsorted, zstd) through tables if it does not
// exist; the namespace must exist. created reports whether this call
// created it. The pipeline calls it on first use; EnsureTable calls it
// when the error mode is dlq; the management plane may call it when the
// error mode is switched to dlq.
//
// Errors: ErrInvalidConfig; ErrTableShape when an existing table of that
// name does not have the dlq columns; those of the catalog.
func EnsureDLQTable(ctx context.Context, tables table.CatalogIO, cfg Config) (created bool, err error) {
	if err := cfg.Validate(); err != nil {
		return false, err
	}
	ident := icebergIdent(DLQTable(cfg.Table))
	if tbl, err := tables.LoadTable(ctx, ident); err == nil {
		return false, checkDLQSchema(tbl.Schema())
	} else if !errors.Is(err, catalog.ErrNoSuchTable) {
		return false, fmt.Errorf("load table %s: %w", DLQTable(cfg.Table), err)
	}
	sc := DLQTableSchema()
	ps, err := partitionSpec(sc, []string{DefaultPartitionSpec})
	if err != nil {
		return false, err
	}
	// A create as a commit with assert-create (the second half of a
	// staged create in the REST spec), so that it needs only the
	// CatalogIO the pipeline writes through.
	_, _, err = tables.CommitTable(ctx, ident, []table.Requirement{table.AssertCreate()}, []table.Update{
		table.NewAddSchemaUpdate(sc),
		table.NewSetCurrentSchemaUpdate(-1),
		table.NewAddPartitionSpecUpdate(&ps, true),
		table.NewSetDefaultSpecUpdate(-1),
		table.NewAddSortOrderUpdate(&table.UnsortedSortOrder),
		table.NewSetDefaultSortOrderUpdate(-1),
		table.NewSetPropertiesUpdate(tableProperties()),
	})
	if err == nil {
		return true, nil
	}
	// Created concurrently (the other replica, or a retried enable)?
	if tbl, lerr := tables.LoadTable(ctx, ident); lerr == nil {
		return false, checkDLQSchema(tbl.Schema())
	}
	return false, fmt.Errorf("create table %s: %w", DLQTable(cfg.Table), err)
}

func icebergIdent(id catalog.Ident) table.Identifier {
	ident := append(table.Identifier{}, id.Namespace...)
	return append(ident, id.Name)
}

// checkDLQSchema checks that sc has the dlq columns with their types
// (other columns are fine if optional: they get nulls).
func checkDLQSchema(sc *iceberg.Schema) error {
	if err := checkKafkaColumn(sc); err != nil {
		return err
	}
	for _, f := range DLQTableSchema().Fields() {
		if f.Name == KafkaColumn {
			continue
		}
		got, ok := sc.FindFieldByName(f.Name)
		if !ok || !got.Type.Equals(f.Type) {
			return fmt.Errorf("%w: dead letter table needs column %s %s", ErrTableShape, f.Name, f.Type)
		}
	}
	for _, f := range sc.Fields() {
		if _, ok := DLQTableSchema().FindFieldByName(f.Name); !ok && f.Required {
			return fmt.Errorf("%w: dead letter table has a required column %s Tarn does not fill", ErrTableShape, f.Name)
		}
	}
	return nil
}

// badRecord is a bad record held for the dlq until its batch is flushed.
type badRecord struct {
	rec      *kgo.Record
	kind     ErrorKind
	err      string
	schemaID int
}

// dlqWriter commits bad records to the dead letter table, exactly once,
// through a sink of its own: the dlq table carries the topic's offsets
// like the main table (tarn.kafka.offsets), and its head says which bad
// records it already has.
//
// Protocol (the main table's flush): the dlq batch of a main batch is
// committed first, covering the same partitions (from the dlq head's
// offsets to the main batch's ends). Only then is the main batch
// committed. If the process dies between the two, the main table re-reads
// those records; their dlq rows are below the dlq head's next offset for
// their partition and are dropped (filter), so neither table holds a
// record twice, and every bad record below the main table's head is in
// the dlq table. A main batch without bad records does not touch the dlq
// table.
type dlqWriter struct {
	p    *Pipeline
	sink *sink.Sink
}

// commit writes rows (bad records of a main batch covering ranges) to the
// dlq table, minus those its head already has, and returns how many it
// committed. Errors: those of EnsureDLQTable and the sink (a
// *sink.StaleBatchError only after maxDLQAttempts): the main batch must
// not be committed then.
func (d *dlqWriter) commit(ctx context.Context, ranges map[int32]sink.Range, rows []badRecord) (int, error) {
	if d.sink == nil {
		cfg := d.p.cfg
		if _, err := EnsureDLQTable(ctx, d.p.deps.Tables, cfg); err != nil {
			return 0, err
		}
		s, err := sink.Open(ctx, d.p.deps.Tables, sink.Config{
			Table: icebergIdent(DLQTable(cfg.Table)), Cluster: cfg.Cluster, Topic: cfg.Topic,
			TargetFileSizeBytes: cfg.TargetFileSizeBytes,
		})
		if err != nil {
			return 0, err
		}
		d.sink = s
	}
	var err error
	for range maxDLQAttempts {
		var head offsets.Offsets
		if head, err = d.sink.Head(ctx); err != nil {
			return 0, err
		}
		keep := make([]badRecord, 0, len(rows))
		for _, r := range rows {
			if next, ok := head.Next[r.rec.Partition]; !ok || r.rec.Offset >= next {
				keep = append(keep, r)
			}
		}
		if len(keep) == 0 {
			return 0, nil
		}
		dr := make(map[int32]sink.Range, len(ranges))
		for part, r := range ranges {
			if next, ok := head.Next[part]; ok {
				r.Start = next
			}
			r.End = max(r.Start, r.End)
			dr[part] = r
		}
		if err := checkDLQSchema(d.sink.Table().Schema()); err != nil {
			return 0, fmt.Errorf("table %s: %w", DLQTable(d.p.cfg.Table), err)
		}
		rec, berr := dlqRecord(d.sink.Table().Schema(), keep)
		if berr != nil {
			return 0, berr
		}
		err = d.sink.Commit(ctx, sink.Batch{Records: []arrow.RecordBatch{rec}, Ranges: dr})
		rec.Release()
		var stale *sink.StaleBatchError
		switch {
		case err == nil:
			return len(keep), nil
		case errors.As(err, &stale):
			continue
		default:
			return 0, err
		}
	}
	// Not wrapped: the caller must not take the dlq head for the main
	// table's.
	return 0, fmt.Errorf("dead letter table %s: still stale after %d attempts: %v", DLQTable(d.p.cfg.Table), maxDLQAttempts, err)
}

// dlqRecord builds one Arrow record of rows in schema sc (the dlq table's).
func dlqRecord(sc *iceberg.Schema, rows []badRecord) (arrow.RecordBatch, error) {
	asc, err := table.SchemaToArrowSchema(sc, nil, true, false)
	if err != nil {
		return nil, fmt.Errorf("dead letter table: arrow schema: %w", err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, asc)
	defer b.Release()
	ka, err := newKafkaAppender(b)
	if err != nil {
		return nil, err
	}
	cols := map[string]int{}
	for i, f := range asc.Fields() {
		cols[f.Name] = i
	}
	kind, _ := b.Field(cols[DLQKindColumn]).(*array.StringBuilder)
	msg, _ := b.Field(cols[DLQErrorColumn]).(*array.StringBuilder)
	sid, _ := b.Field(cols[DLQSchemaIDColumn]).(*array.Int32Builder)
	val, _ := b.Field(cols[DLQValueColumn]).(*array.BinaryBuilder)
	if kind == nil || msg == nil || sid == nil || val == nil {
		return nil, fmt.Errorf("%w: dead letter table columns are %s", ErrTableShape, asc)
	}
	known := map[int]bool{cols[DLQKindColumn]: true, cols[DLQErrorColumn]: true, cols[DLQSchemaIDColumn]: true,
		cols[DLQValueColumn]: true, cols[KafkaColumn]: true}
	for _, r := range rows {
		kind.Append(string(r.kind))
		msg.Append(r.err)
		if r.schemaID < 0 {
			sid.AppendNull()
		} else {
			sid.Append(int32(r.schemaID))
		}
		if r.rec.Value == nil {
			val.AppendNull()
		} else {
			val.Append(r.rec.Value)
		}
		ka.append(r.rec)
		for i := range asc.NumFields() {
			if !known[i] {
				b.Field(i).AppendNull()
			}
		}
	}
	return b.NewRecordBatch(), nil
}
