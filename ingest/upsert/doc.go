// Package upsert turns a batch of keyed changes into the current row of
// each key (DESIGN.md, room ingest/upsert): it folds a batch's changes per
// key (the last change in offset order wins), keeps the key index key →
// (data file, row position) of the table's committed snapshot, and writes
// the position deletes that retire a key's previous row.
//
// # Encoding
//
// An upsert table is an ordinary Iceberg v2 table: data files hold the
// rows, and every update or delete of a committed row is a file-scoped
// position delete (Iceberg spec, "Position Delete Files", with
// referenced_data_file set) committed in the same snapshot as the rows
// that replace it, through iceberg-go's RowDelta. Equality deletes are
// never written: pyiceberg, Snowflake and Databricks cannot read them.
// Rows deleted or replaced inside one batch are never written at all, so
// a batch leaves at most one row per key.
//
// # Key identity
//
// A key is the canonical encoding of the decoded Kafka record key (see
// the pipeline's key decoding), never its raw bytes: the Confluent wire
// format embeds a schema id, and two ids can carry the same key. The index
// stores keys whole, so two different keys can never share an entry and a
// delete can never retire another key's row.
//
// # Recovery
//
// The index describes exactly one snapshot (Index.SnapshotID). Rebuild
// derives it from a snapshot's files: each data file's keys (re-decoded
// from the _kafka.key column, with the caller's key function) at their row
// positions, minus the positions the snapshot's position deletes remove.
// The pipeline rebuilds whenever the sink's base snapshot is not the one
// the index describes — on start, after a failed or dropped commit, after
// another writer committed — so a crash or restart loses nothing and
// never duplicates a key.
//
// File map:
//
//   - fold.go: [Change], [Fold], [Plan]: a batch's changes folded per key.
//   - index.go: [Index], [Delta]: the key index and one batch's effect on it.
//   - deletes.go: [WritePositionDeletes]: Parquet position delete files.
//   - rebuild.go: [Rebuild]: the index of a snapshot, read from its files.
package upsert
