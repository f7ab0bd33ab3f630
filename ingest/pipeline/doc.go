// Package pipeline materializes one Kafka topic into one Iceberg table,
// exactly once (DESIGN.md "Exactly once", "Commit cadence", "Bad
// records"): records in the Confluent wire format with Avro values,
// resolved through a Confluent-compatible schema registry, become rows of
// the table's user columns plus the _kafka column, and are committed in
// batches through ingest/sink.
//
// # Table
//
// EnsureTable creates the table for a topic: the columns of
// avro.ToIceberg(writer schema), then _kafka = {partition int, offset
// long, timestamp timestamptz, key binary, headers list<struct<key string,
// value binary>>} (key and header values optional, since Kafka allows
// null ones), partitioned by day(_kafka.timestamp) unless configured
// otherwise, unsorted, zstd Parquet.
//
// # Run
//
//  1. The table's head snapshot gives the next offset of every partition
//     it has (sink.Head); the source is opened there, other partitions at
//     the configured start.
//  2. Each polled record is parsed: magic byte 0 and a 4-byte big-endian
//     schema id (sr.ConfluentHeader), the id resolved once through the
//     registry to a decoder into the table's current schema
//     (avro.NewDecoder with _kafka as a caller column), the value decoded
//     into the Arrow builders and the _kafka struct appended for the same
//     row. Control records (transaction markers) add no row but move the
//     partition's offset, as do skipped bad records. The other registry
//     formats (Protobuf, JSON Schema) go the same way; json and raw
//     values have one decoder; connect-json values carry their Connect
//     schema (ingest/connect), whose text is the cache key and whose
//     fingerprint is the schema id.
//  3. The buffer is flushed when its estimated size reaches
//     TargetFileSizeBytes or TargetLag has passed since its first record,
//     whichever is first, and when Run's context ends. A flush is one
//     sink commit: the rows, and per partition the range from the offset
//     the head had (Start) to one past the last record read (End). A batch
//     with no rows (only markers or skipped records) still commits, so
//     that offsets move.
//  4. A *sink.StaleBatchError (another writer committed these offsets)
//     drops the batch and re-seeks the source to the head's offsets; so
//     does a commit whose outcome is unknown, after reloading the head.
//     The sink already rebases over commits that did not consume the
//     batch's partitions (a property change, maintenance).
//
// A record delivered again below the expected offset of its partition
// (after a re-seek) is ignored. After a flush that re-seeked, the rest of
// the poll is dropped: it was fetched from the old positions.
//
// # Bad records
//
// A record that cannot become a row (no value, bad magic byte or short
// header, unknown schema id, malformed payload, a value that does not fit
// its column) follows Config.ErrorMode: skip counts it by kind in Status
// and commits its offset; suspend commits everything before it, nothing
// from it on, and Run returns *SuspendedError naming the partition, the
// offset and the reason; dlq counts it too and writes it to the dead
// letter table.
//
// # Dead letter table
//
// In error mode dlq a bad record becomes a row of <table>_dlq, in the
// table's namespace (DLQTable, DLQTableSchema): error_kind, error,
// schema_id (null when the record has none), the same _kafka column as
// the topic's table, and value, the raw record value (null for a
// tombstone); partitioned by day(_kafka.timestamp). The table is created
// by EnsureTable when the mode is dlq, or on first use (a commit with
// assert-create through Deps.Tables), since the mode may be switched
// later. It is committed through a sink of its own, with the topic's
// offsets like the main table, exactly once:
//
//  1. A batch's bad records are committed to the dlq table first, minus
//     those below the dlq head's next offset of their partition, with
//     ranges from the dlq head's offsets to the main batch's ends.
//  2. Then the batch is committed to the main table.
//
// A failure between the two (a crash, a failed main commit) makes the
// main table re-read the records; the dlq head is already past their bad
// ones, which are dropped, so neither table holds a record twice, and
// every bad record below the main table's head is in the dlq table. A
// failed dlq commit fails the flush before the main commit (the records
// are re-read). A batch without bad records does not touch the dlq
// table. Records that are bad in one Run and good in the next (a schema
// registered meanwhile, a mode switched between a dlq commit and its main
// commit) may appear in the dlq table and the main table, or only in the
// dlq table.
//
// # Schema evolution
//
// A schema id seen for the first time is accepted as it is when its
// writer schema fits the table's current schema (codec.Fits: the same
// columns, fewer optional ones, or values a column holds through a
// promotion, such as an int into a long column). Otherwise the pipeline
// commits what it buffered, then evolves the table (evolve.go, DESIGN.md
// "Schema evolution"): the union of the table's schema and the writer by
// name path (iceberg-go's UpdateSchema.UnionByNameWith), so existing
// columns keep their field ids and old data files read null in new
// columns, restricted to:
//
//   - new writer fields, at any depth, become optional columns (even when
//     the writer requires them);
//   - a required column the writer lacks becomes optional (never deleted);
//   - int → long, float → double, decimal precision widening at equal
//     scale;
//   - required → optional.
//
// The new schema is its own catalog commit (add-schema,
// set-current-schema, asserting the current schema id and the last
// assigned field id) through Deps.Tables, with no snapshot, so the
// offsets do not move; a concurrent schema change is reloaded and the
// union retried (up to 4 attempts). The record is then decoded into the
// new schema. _kafka is never touched.
//
// Any other change (a narrowing the column cannot hold, string → int, a
// struct becoming a primitive, a decimal scale change, a map key change)
// suspends the topic whatever the error mode, with the field path and
// the change in the reason. The records of such a schema stay in the
// topic, so a plain resume suspends again. Two ways on: register a
// compatible schema and produce with it (the records already written
// with the bad one still need the next way), or switch the error mode to
// skip or dlq and resume with the schema id in Config.BadSchemaIDs
// (SuspendedError.SchemaID): the records of that id whose schema cannot
// be evolved are then bad records like the others, counted or written to
// the dlq, and nothing after them is lost. A writer schema that is not
// of the topic's format or cannot be mapped (KindUnsupportedSchema) is
// handled the same way.
//
// # Memory budget
//
// Pipelines of one process share a Budget (Deps.Budget; DefaultMemoryBytes,
// cmd/tarn's --ingest-memory-bytes) for their buffered records, estimated
// as for Config.TargetFileSizeBytes. Each record's bytes are reserved
// before it is buffered and returned when its batch is taken for a
// commit. A pipeline whose next record does not fit commits its own
// buffer early (Status.BudgetFlushes); if the rest of the budget is held
// by others it waits, and they commit theirs at their next step (a
// waiting reservation wakes them from Poll). So the process never buffers
// more than the budget, except for one record larger than the whole
// budget, admitted when nothing else is buffered.
//
// # Status
//
// Status has the counters, the state and its reason, the buffered rows
// and bytes, and, for a Source with the optional methods of
// ingest/source's Source, its gaps (GapReporter: offsets Kafka no longer
// had, over all Runs) and the topic's lag in records and seconds
// (LagReporter, asked at most every 5 s from Run's goroutine against the
// table's offsets; an idle Run wakes up for it).
//
// # Shutdown
//
// Only Poll watches Run's context. Records already polled are processed,
// and batches committed, on a context that cancellation does not reach,
// so a commit is never cut short; the buffer is committed before Run
// returns nil. If that last commit fails, nothing is lost: the next start
// reads from the table's head.
//
// # Concurrency
//
// Run is one goroutine; a second concurrent Run of the same Pipeline
// returns ErrRunning. Status may be called from any goroutine: the status
// is the only state shared with Run, under Pipeline.mu, which is never
// held while calling anything else. Pipelines of the same table
// (replicas, a zombie after a rebalance) coordinate only through the
// catalog's compare-and-swap and the offsets in the table (see
// ingest/sink), and, when the topic is shared among replicas
// (Deps.Owner, group.go), through the partition claims every commit is
// fenced by (catalog.PartitionClaims): a batch read under a claim that
// another replica has since taken is refused by the store and dropped.
//
// Pipelines of one process also share the Budget, under Budget.mu, which
// is taken alone (never with Pipeline.mu held, and nothing is called
// while it is held). A reservation waiting on it holds no lock. While its
// buffer holds records, Run starts one goroutine per Poll that only
// cancels that Poll when the budget comes under pressure.
//
// File map:
//
//   - config.go: [Config], defaults, [Config.Validate].
//   - table.go: [EnsureTable], [TableSchema], the _kafka column, partition
//     spec parsing.
//   - source.go: [Source] and [Registry], the interfaces the pipeline
//     consumes (ingest/source's Source and *sr.Client satisfy them), and
//     the optional [GapReporter] and [LagReporter].
//   - schemas.go: schema id → decoder resolution and cache, references,
//     registry retries.
//   - evolve.go: schema evolution: the allowed changes, committed as a
//     schema update.
//   - dlq.go: the dead letter table: [EnsureDLQTable], its schema, its
//     exactly-once commit.
//   - buffer.go: the batch being built: Arrow builders, _kafka appending,
//     ranges, size estimate.
//   - pipeline.go: [Pipeline], [New], [Pipeline.Run]: the poll, decode,
//     flush loop.
//   - status.go: [Status], [State], the gaps and lag refresh.
//   - budget.go: [Budget], the process-wide memory budget.
//   - errors.go: sentinels, [ErrorKind], [RecordError], [SuspendedError].
package pipeline
