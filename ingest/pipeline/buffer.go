package pipeline

import (
	"fmt"
	"maps"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tarnhq/tarn/ingest/connect"
	"github.com/tarnhq/tarn/ingest/sink"
	"github.com/tarnhq/tarn/ingest/upsert"
)

const (
	// maxRowsPerRecord cuts the buffer into Arrow records of at most this
	// many rows, so that no single array approaches the 2 GiB limit of
	// 32-bit offsets (small types, as the decoder builds them) and memory
	// is handed over in pieces.
	maxRowsPerRecord = 64 << 10
	// kafkaRowOverheadBytes is the estimated Arrow size of a row's _kafka
	// column besides key and header bytes: partition, offset, timestamp,
	// validity and offsets buffers.
	kafkaRowOverheadBytes = 40
)

// buffer accumulates the rows of the next batch: decoded values plus the
// _kafka column, and per partition the offsets they cover.
type buffer struct {
	b     *array.RecordBuilder
	kafka kafkaAppender
	// meta fills the _debezium column when the table has one.
	meta *metaAppender
	// recs are the full Arrow records cut so far; b holds the rest.
	recs []arrow.RecordBatch
	// ranges are the offsets covered: Start from the planned head, End
	// after the last record taken (row, control record or skipped record).
	ranges map[int32]sink.Range
	rows   int
	// bytes estimates the buffered size (see Config.TargetFileSizeBytes).
	bytes int64
	// first is when the first record of the batch was taken; zero when the
	// buffer covers nothing.
	first time.Time
	// bad are the bad records held for the dead letter table (error mode
	// dlq), in the order read.
	bad []badRecord
	// changes are, in upsert mode, the keyed changes in the order read:
	// one per row, and one per tombstone.
	changes []upsert.Change
	// moves are, in mode debezium, the primary-key changes among changes
	// (Debezium's headers; noteMove).
	moves pkMoves
}

// newBuffer returns an empty buffer building records of schema sc, which
// must have a _kafka column of DESIGN.md's shape.
func newBuffer(sc *arrow.Schema) (*buffer, error) {
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	ka, err := newKafkaAppender(b)
	if err != nil {
		b.Release()
		return nil, err
	}
	meta, err := newMetaAppender(b)
	if err != nil {
		b.Release()
		return nil, err
	}
	return &buffer{b: b, kafka: ka, meta: meta, ranges: map[int32]sink.Range{}}, nil
}

// empty reports whether the buffer covers no offsets at all.
func (u *buffer) empty() bool { return len(u.ranges) == 0 }

// cover extends the partition's range to include offset off. planned is
// the head's next offset per partition; a partition the head lacks starts
// at off (the sink accepts any Start for a partition the head lacks).
func (u *buffer) cover(p int32, off int64, planned map[int32]int64) {
	r, ok := u.ranges[p]
	if !ok {
		start, known := planned[p]
		if !known {
			start = off
		}
		r = sink.Range{Start: start}
	}
	r.End = off + 1
	u.ranges[p] = r
	if u.first.IsZero() {
		// Once per batch: a clock read per record costs ~4% of ingest CPU.
		u.first = time.Now()
	}
}

// addKafka appends rec's _kafka value (and, when the table has the
// column, _debezium's from ch; nil: null) to the row the decoder just
// appended, and accounts for the row (recordBytes).
func (u *buffer) addKafka(rec *kgo.Record, ch *connect.Change) {
	if u.meta != nil {
		u.meta.append(ch)
	}
	u.kafka.append(rec)
	u.bytes += recordBytes(rec)
	u.rows++
	if u.b.Field(0).Len() >= maxRowsPerRecord {
		u.recs = append(u.recs, u.b.NewRecordBatch())
	}
}

// addBad holds rec, a bad record, for the dead letter table, and accounts
// for its size. The caller covers its offset.
func (u *buffer) addBad(rec *kgo.Record, rerr *RecordError) {
	u.bad = append(u.bad, badRecord{rec: rec, kind: rerr.Kind, err: rerr.Err.Error(), schemaID: rerr.SchemaID})
	u.bytes += recordBytes(rec)
}

// holds reports whether the buffer keeps a reference to rec: a bad
// record held for the dead letter table is added last, so only the last
// one can be rec.
func (u *buffer) holds(rec *kgo.Record) bool {
	return len(u.bad) > 0 && u.bad[len(u.bad)-1].rec == rec
}

// take returns the batch and its bad records, and empties the buffer. The
// caller releases the batch's records.
func (u *buffer) take() (sink.Batch, []badRecord) {
	if u.b.Field(0).Len() > 0 {
		u.recs = append(u.recs, u.b.NewRecordBatch())
	}
	batch, bad := sink.Batch{Records: u.recs, Ranges: maps.Clone(u.ranges)}, u.bad
	u.recs, u.rows, u.bytes, u.first, u.bad, u.changes, u.moves = nil, 0, 0, time.Time{}, nil, nil, pkMoves{}
	clear(u.ranges)
	return batch, bad
}

// drop empties the buffer, discarding its rows.
func (u *buffer) drop() {
	batch, _ := u.take()
	release(batch.Records)
}

func (u *buffer) release() {
	u.drop()
	u.b.Release()
}

func release(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

// kafkaAppender appends the _kafka struct of one record.
type kafkaAppender struct {
	col       *array.StructBuilder
	partition *array.Int32Builder
	offset    *array.Int64Builder
	timestamp *array.TimestampBuilder
	key       *array.BinaryBuilder
	headers   *array.ListBuilder
	header    *array.StructBuilder
	hkey      *array.StringBuilder
	hvalue    *array.BinaryBuilder
}

// newKafkaAppender finds the _kafka column's builders in b. The Arrow
// types are those iceberg-go's SchemaToArrowSchema gives kafkaField
// (small types, timestamptz as timestamp[us, UTC]).
func newKafkaAppender(b *array.RecordBuilder) (kafkaAppender, error) {
	sc := b.Schema()
	idx := sc.FieldIndices(KafkaColumn)
	if len(idx) != 1 {
		return kafkaAppender{}, fmt.Errorf("%w: no %s column", ErrTableShape, KafkaColumn)
	}
	var a kafkaAppender
	ok := true
	field := func(sb *array.StructBuilder, name string) array.Builder {
		st := sb.Type().(*arrow.StructType)
		i, found := st.FieldIdx(name)
		if !found {
			ok = false
			return nil
		}
		return sb.FieldBuilder(i)
	}
	a.col, ok = b.Field(idx[0]).(*array.StructBuilder)
	if !ok {
		return kafkaAppender{}, fmt.Errorf("%w: column %s is %s, not a struct", ErrTableShape, KafkaColumn, sc.Field(idx[0]).Type)
	}
	a.partition, _ = field(a.col, "partition").(*array.Int32Builder)
	a.offset, _ = field(a.col, "offset").(*array.Int64Builder)
	a.timestamp, _ = field(a.col, "timestamp").(*array.TimestampBuilder)
	a.key, _ = field(a.col, "key").(*array.BinaryBuilder)
	a.headers, _ = field(a.col, "headers").(*array.ListBuilder)
	if a.headers != nil {
		a.header, _ = a.headers.ValueBuilder().(*array.StructBuilder)
	}
	if a.header != nil {
		a.hkey, _ = field(a.header, "key").(*array.StringBuilder)
		a.hvalue, _ = field(a.header, "value").(*array.BinaryBuilder)
	}
	if !ok || a.partition == nil || a.offset == nil || a.timestamp == nil || a.key == nil || a.hkey == nil || a.hvalue == nil {
		return kafkaAppender{}, fmt.Errorf("%w: column %s is %s", ErrTableShape, KafkaColumn, sc.Field(idx[0]).Type)
	}
	if ts := a.timestamp.Type().(*arrow.TimestampType); ts.Unit != arrow.Microsecond {
		return kafkaAppender{}, fmt.Errorf("%w: %s.timestamp is %s, want microseconds", ErrTableShape, KafkaColumn, ts)
	}
	return a, nil
}

// recordBytes is the estimated buffered size of rec (see
// Config.TargetFileSizeBytes): its value, key and headers as read from
// Kafka, plus the fixed per-row overhead of the _kafka column.
func recordBytes(rec *kgo.Record) int64 {
	n := int64(kafkaRowOverheadBytes + len(rec.Key) + len(rec.Value))
	for _, h := range rec.Headers {
		n += int64(len(h.Key) + len(h.Value) + 8)
	}
	return n
}

// append appends rec's metadata. A nil key or header value is null; an
// empty one is empty.
func (a *kafkaAppender) append(rec *kgo.Record) {
	a.col.Append(true)
	a.partition.Append(rec.Partition)
	a.offset.Append(rec.Offset)
	a.timestamp.Append(arrow.Timestamp(rec.Timestamp.UnixMicro()))
	if rec.Key == nil {
		a.key.AppendNull()
	} else {
		a.key.Append(rec.Key)
	}
	a.headers.Append(true)
	for _, h := range rec.Headers {
		a.header.Append(true)
		a.hkey.Append(h.Key)
		if h.Value == nil {
			a.hvalue.AppendNull()
		} else {
			a.hvalue.Append(h.Value)
		}
	}
}

// metaAppender appends the _debezium struct of one change event
// (debeziumField).
type metaAppender struct {
	col                 *array.StructBuilder
	op                  *array.StringBuilder
	sourceTs, processed *array.TimestampBuilder
}

// newMetaAppender finds the _debezium column's builders in b; nil when
// b has no such column.
func newMetaAppender(b *array.RecordBuilder) (*metaAppender, error) {
	idx := b.Schema().FieldIndices(DebeziumColumn)
	if len(idx) != 1 {
		return nil, nil
	}
	m := &metaAppender{}
	col, ok := b.Field(idx[0]).(*array.StructBuilder)
	if ok && col.NumField() == 3 {
		m.col = col
		m.op, _ = col.FieldBuilder(0).(*array.StringBuilder)
		m.sourceTs, _ = col.FieldBuilder(1).(*array.TimestampBuilder)
		m.processed, _ = col.FieldBuilder(2).(*array.TimestampBuilder)
	}
	if m.col == nil || m.op == nil || m.sourceTs == nil || m.processed == nil {
		return nil, fmt.Errorf("%w: column %s is %s", ErrTableShape, DebeziumColumn, b.Schema().Field(idx[0]).Type)
	}
	for _, tb := range []*array.TimestampBuilder{m.sourceTs, m.processed} {
		if ts := tb.Type().(*arrow.TimestampType); ts.Unit != arrow.Microsecond {
			return nil, fmt.Errorf("%w: %s's timestamps are %s, want microseconds", ErrTableShape, DebeziumColumn, ts)
		}
	}
	return m, nil
}

func (m *metaAppender) append(ch *connect.Change) {
	if ch == nil {
		m.col.AppendNull()
		return
	}
	m.col.Append(true)
	if ch.Op == 0 {
		m.op.AppendNull()
	} else {
		m.op.Append(string(rune(ch.Op)))
	}
	for _, f := range []struct {
		b  *array.TimestampBuilder
		ms int64
	}{{m.sourceTs, ch.SourceTsMillis}, {m.processed, ch.TsMillis}} {
		if f.ms < 0 {
			f.b.AppendNull()
		} else {
			f.b.Append(arrow.Timestamp(f.ms * 1000))
		}
	}
}
