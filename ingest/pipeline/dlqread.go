package pipeline

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"
)

// DeadLetter is one record of a dead letter table as a reader shows it:
// why it is there and where it was in Kafka (the raw key, value and
// headers stay in the table).
type DeadLetter struct {
	// Kind is the record's ErrorKind (error_kind).
	Kind string `json:"error-kind"`
	// Error is the error message (error).
	Error string `json:"error"`
	// SchemaID is the record's schema id; nil when it has none.
	SchemaID *int32 `json:"schema-id,omitempty"`
	// Partition, Offset and Timestamp are the record's (_kafka).
	Partition int32     `json:"partition"`
	Offset    int64     `json:"offset"`
	Timestamp time.Time `json:"timestamp"`
}

// RecentDeadLetters reads the dead letter table tbl (DLQTableSchema) like
// any reader (an iceberg-go scan of its current snapshot) and returns its
// n newest records, newest first: by Kafka timestamp, then partition and
// offset descending. It reads only the columns it returns and holds at
// most n records plus one Arrow batch, however large the table. Errors:
// the scan's; a table missing a DLQ column.
func RecentDeadLetters(ctx context.Context, tbl *table.Table, n int) ([]DeadLetter, error) {
	if n <= 0 {
		return nil, nil
	}
	scan := tbl.Scan(table.WithSelectedFields(DLQKindColumn, DLQErrorColumn, DLQSchemaIDColumn,
		KafkaColumn+".partition", KafkaColumn+".offset", KafkaColumn+".timestamp"))
	_, batches, err := scan.ToArrowRecords(ctx)
	if err != nil {
		return nil, fmt.Errorf("scan %s: %w", tbl.Identifier(), err)
	}
	var out []DeadLetter
	for b, err := range batches {
		if err != nil {
			return nil, fmt.Errorf("scan %s: %w", tbl.Identifier(), err)
		}
		rows, err := deadLetters(b)
		b.Release()
		if err != nil {
			return nil, fmt.Errorf("scan %s: %w", tbl.Identifier(), err)
		}
		out = append(out, rows...)
		slices.SortFunc(out, newerFirst)
		if len(out) > n {
			out = out[:n]
		}
	}
	return out, nil
}

func newerFirst(a, b DeadLetter) int {
	return cmp.Or(b.Timestamp.Compare(a.Timestamp), cmp.Compare(b.Partition, a.Partition), cmp.Compare(b.Offset, a.Offset))
}

// deadLetters decodes one batch of the scan's projection.
func deadLetters(b arrow.RecordBatch) ([]DeadLetter, error) {
	col := func(name string) arrow.Array {
		if ix := b.Schema().FieldIndices(name); len(ix) == 1 {
			return b.Column(ix[0])
		}
		return nil
	}
	kind, _ := col(DLQKindColumn).(*array.String)
	msg, _ := col(DLQErrorColumn).(*array.String)
	sid, _ := col(DLQSchemaIDColumn).(*array.Int32)
	k, _ := col(KafkaColumn).(*array.Struct)
	if kind == nil || msg == nil || k == nil {
		return nil, fmt.Errorf("%w: not a dead letter table (columns %s)", ErrTableShape, b.Schema())
	}
	st := k.DataType().(*arrow.StructType)
	field := func(name string) arrow.Array {
		if i, ok := st.FieldIdx(name); ok {
			return k.Field(i)
		}
		return nil
	}
	part, _ := field("partition").(*array.Int32)
	off, _ := field("offset").(*array.Int64)
	ts, _ := field("timestamp").(*array.Timestamp)
	if part == nil || off == nil || ts == nil {
		return nil, fmt.Errorf("%w: not a dead letter table (%s is %s)", ErrTableShape, KafkaColumn, st)
	}
	unit := ts.DataType().(*arrow.TimestampType).Unit
	out := make([]DeadLetter, b.NumRows())
	for i := range out {
		d := DeadLetter{Kind: kind.Value(i), Error: msg.Value(i), Partition: part.Value(i), Offset: off.Value(i),
			Timestamp: ts.Value(i).ToTime(unit).UTC()}
		if sid != nil && sid.IsValid(i) {
			v := sid.Value(i)
			d.SchemaID = &v
		}
		out[i] = d
	}
	return out, nil
}
