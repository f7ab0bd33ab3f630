// Package sink commits batches of Kafka records to one Iceberg table
// exactly once (DESIGN.md "Exactly once"). Consuming and decoding happen
// before it: a Batch arrives as Arrow records in the table's schema plus,
// per partition, the offsets it covers.
//
// # Protocol
//
// The table is the only record of progress. Every snapshot Tarn writes
// carries the snapshot summary property tarn.kafka.offsets: per partition,
// the next offset to read, for all partitions ever committed (cumulative).
// Kafka consumer-group offsets are at most a monitoring hint.
//
//  1. On start (and partition assignment) the pipeline calls Head and seeks
//     each partition to Head().Next[p], or to its configured start when
//     the table does not have p yet.
//  2. It reads a batch; for each partition, Range.Start is where it
//     seeked (the head's offset) and Range.End the offset after the last
//     record read.
//  3. Write writes the rows as Parquet data files; nothing is visible yet.
//  4. CommitWritten appends the files in one snapshot whose offsets are the
//     head's map with the batch's partitions moved to their Ends, and
//     asserts that main is still the snapshot those offsets were read from
//     (assert-ref-snapshot-id, checked by the catalog under its
//     compare-and-swap). Commit is Write then CommitWritten.
//  5. If main moved, the commit fails with ErrCommitFailed and the sink
//     reloads the head. If the head still has each of the batch's
//     partitions at the batch's Start, whoever moved main did not consume
//     these records: the same files are committed on the new head (a
//     rebase; the data is not rewritten). Otherwise the batch is stale:
//     *StaleBatchError, nothing committed, its files deleted; the pipeline
//     drops the batch and re-seeks from StaleBatchError.Head.
//
// A batch is all or nothing: its rows and its offsets land in the same
// snapshot, so the table never holds a row whose offset it does not also
// count as read, nor counts as read an offset whose row it lacks.
//
// # Interleavings
//
// Compaction between plan and commit (rebase):
//
//	ingest: Head → S1 {p0: 10}; reads p0 10..19; writes files F
//	maint:  loads S1; rewrites small files; commits S2 {p0: 10} (S1's map carried)
//	ingest: commit F on S1 → ErrCommitFailed (main is S2)
//	ingest: reload: S2 has p0 at 10 = Start → commit F on S2 → S3 {p0: 20}
//
// Two pipelines on one partition (a zombie after a rebalance, a second
// replica):
//
//	A, B:   Head → S1 {p0: 10}; both read p0 10..19
//	A:      commit on S1 → S2 {p0: 20}
//	B:      commit on S1 → ErrCommitFailed; reload: S2 has p0 at 20 ≠ 10
//	B:      StaleBatchError{Head: {p0: 20}}; B deletes its files, re-seeks p0 to 20
//
// Records 10..19 are in the table once, from A. Had B read p0 10..24, the
// batch would be stale just the same: a batch is never trimmed and
// committed in part.
//
// When replicas share a topic through a consumer group, a commit also
// carries the claims its records were read under (catalog.Fence in the
// context): the store checks, in the transaction that swaps the pointer,
// that each partition is still this replica's at that epoch and that the
// batch starts at the claimed progress, and refuses it with
// catalog.ErrFenced otherwise. CommitWritten then drops the batch (the
// outcome is certain: nothing landed). This stops a zombie whose
// partition was handed to another replica before the other committed,
// which the offsets check alone lets through.
//
// Commit outcome unknown (the reply is lost, the process is killed during
// the commit, the context ends):
//
//	ingest: commit on S1 {p0: 10} → error that is not ErrCommitFailed
//	ingest: (restart, or the caller handling the error) Head:
//	          landed:     S2 {p0: 20} → seek 20, nothing re-read
//	          not landed: S1 {p0: 10} → seek 10, records re-read, committed once
//
// Committing the same Written again after such an error is safe too: if
// the first commit landed, the offsets check fails it with
// StaleBatchError (and its files, which are live, are kept).
//
// A delete by another writer between plan and commit (a position or
// equality delete file, or a data file rewritten without the rows) needs
// only the rebase: the batch appends rows no delete can name, and a
// delete committed before it (a lower sequence number) does not apply to
// them, so the delete stays as it was. The rebase decision reads only
// tarn.kafka.offsets, Tarn's own property, never the summary totals the
// spec makes optional (DuckDB 1.4 writes only "operation"); a writer that
// can replace or delete rows (maintenance's compaction) reads what the
// snapshots since its plan did from their manifests instead
// (maintenance/concurrent.go).
//
// A property change (or any metadata change that leaves main alone)
// between plan and commit needs no rebase: the assertion on main still
// holds and the catalog applies the commit over the new metadata.
//
// A snapshot without offsets on top of main (an external writer's, on a
// table released from Tarn) consumed nothing from Kafka: offsets.Read takes
// the offsets of the nearest ancestor that has them, and the sink's next
// snapshot carries the full map again. If expiry removed every ancestor
// with offsets, Head fails with offsets.ErrLost rather than start over.
// Rolling main back to an older snapshot rolls the offsets back with the
// rows; the pipeline re-reads from there.
//
// iceberg-go's Transaction.Commit would itself refresh and replay an
// append onto a moved main when the catalog reports table.ErrCommitFailed;
// that would re-apply records another writer committed, so the sink pins
// the assertion on main (Transaction.AssertRefSnapshotID) and decides by
// the offsets instead.
//
// Other Tarn writers (maintenance) must do the same: carry the offsets of
// the head they planned on (offsets.Read, offsets.Offsets.Properties) and commit
// conditional on that head, never replayed onto a newer one, or an older
// map lands on top of newer rows:
//
//	maint:  loads S1 {p0: 10}; plans a rewrite
//	ingest: commits S2 {p0: 20}
//	maint:  replayed onto S2 with S1's map → S3 {p0: 10}, rows up to 19
//	ingest: restarts from S3: reads p0 10..19 again → duplicates
//
// # Files
//
// Data files are written by iceberg-go (table.WriteRecords): Parquet with
// Iceberg field IDs and column statistics, compressed with the table's
// write.parquet.compression-codec (iceberg-go's default, zstd), split by
// the table's partition spec and rolled at the target file size. For a
// day(timestamp) spec the sink splits the batch by day itself and has
// iceberg-go write each day as if unpartitioned into that partition's
// directory (partition.go): the same files, without iceberg-go's per-row
// partition values. Files of
// a failed write and of a stale batch are deleted; files of a batch whose
// commit outcome is unknown or that kept conflicting, and manifests of
// failed commit attempts, stay as orphans for maintenance to remove.
// From Write until its CommitWritten commits or drops it, a batch's files
// are held in the catalog (catalog.Catalog.HoldFiles, when the CatalogIO
// offers it), and maintenance's orphan removal skips held files whatever
// their age; a batch abandoned after an unknown outcome stays held until
// the process ends.
//
// # Row positions
//
// Position deletes (the planned upsert tables) name a row by data file and
// position: its 0-based index among the file's rows. The sink writes so
// that positions follow from the batch: taking the batch's rows in order
// (Records concatenated), each partition value's rows fill that value's
// files in the order Written.Files lists them, each file holding a
// consecutive run; for an unpartitioned table, file i thus holds rows
// [n, n+Count_i) of the batch, n the sum of the counts before it. This
// rests on iceberg-go's writer with one fanout worker (a stable per-value
// split of each record, handed to the value's rolling writer in order) and
// on the table being unsorted (Write refuses a sort order, ErrSortedTable,
// since the writer sorts each record). An index therefore learns a row's
// (file, position) from its partition value and its rank within the
// batch; TestRowPositionsFollowBatchOrder reads files back to pin it.
//
// # Concurrency
//
// A Sink is used by one goroutine. Sinks of different tables, and sinks
// and other writers of the same table, coordinate only through the
// catalog's compare-and-swap, so the protocol holds across processes.
//
// File map:
//
//   - sink.go: [Sink], [Batch], [Written]: Head, Write, CommitWritten;
//     the head's offsets are package offsets' (its JSON codec and the
//     lineage walk), shared with maintenance.
//   - partition.go: day partitioning done by Write itself for Tarn's
//     default spec (dayPartitioner), instead of iceberg-go's per row.
//   - errors.go: sentinels and [StaleBatchError].
package sink
