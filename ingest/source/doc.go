// Package source is the Kafka side of one topic's pipeline: it consumes
// every partition of the topic from offsets the caller takes from the
// table, and knows nothing of decoding or Iceberg (DESIGN.md "Exactly
// once"; issue 3, point 4).
//
// # Positions come from the table
//
// By default Open assigns every partition directly
// (kgo.ConsumePartitions) at the offsets of the table's head snapshot
// (sink.Head().Next): one Tarn process owns the topic (the bbolt store).
// With Config.Group (replicas sharing a PostgreSQL store) the Source is a
// consumer-group member instead (group.go): the group coordinator assigns
// partitions (cooperative-sticky), and each assigned partition starts at
// its claim (Group.Claim: the table's head offset, claimed in the store
// with a new epoch), never at the group's committed offsets. Nothing is
// committed to Kafka either way. After the sink reports a stale batch the
// pipeline calls Reseek with the new head's offsets.
//
// # Offsets are not contiguous
//
// Fetching uses read_committed isolation: records of aborted transactions
// and control records (transaction markers) are never returned, and they
// occupy offsets. So after Poll returns records 10, 11, 12 of a partition
// the next offset may be 14 (13 was a commit marker). The next offset to
// commit for a partition (sink Range.End) is therefore the offset of the
// last record returned plus 1, never a start plus a count; a Range.Start
// is the offset the partition was (re-)seeked to. Poll returns each
// partition's records in increasing offset order and never returns an
// offset twice, nor one below the position set by Open or Reseek.
//
// # Gaps
//
// A gap is a range of offsets skipped without being read; it is never
// hidden: Gaps lists it and it is logged at error level.
//
//   - Retention (or DeleteRecords) removed records before they were read.
//     At Open a start below the log start is found from ListOffsets;
//     while consuming, franz-go answers OffsetOutOfRange below the log
//     start by resuming at the log start without reporting it (only a
//     log line; kgo.ErrDataLoss is not used for this case), so the source
//     compares its position with the log start offset every fetch
//     response carries. The position counts control records (the source
//     has franz-go hand them over and drops them itself), so retention
//     removing a commit marker the source already passed is no gap.
//   - The broker lost data (unclean leader election): franz-go reports
//     *kgo.ErrDataLoss and the source records the range it will not read.
//
// # Partitions added at run time
//
// Every Config.PartitionRefresh the source lists the topic's partitions
// and assigns new ones from their log start (kgo AddConsumePartitions),
// or from a Reseek offset given for them earlier.
//
// # Concurrency
//
// Poll is called by one goroutine (the pipeline's); Reseek, Lag, Gaps
// and Close may be called from others. One goroutine per Source runs the
// partition refresh. Lock order: Source.mu, then franz-go's internal
// locks (SetOffsets and AddConsumePartitions are called under Source.mu,
// PollFetches and admin requests without it). The one race that matters,
// a Reseek while PollFetches is draining records, is walked through on
// (*Source).take.
//
// File map:
//
//   - config.go: [Config], defaults, Validate.
//   - source.go: [Source]: Open, Poll (record filtering, fetch errors),
//     Reseek, Close.
//   - partitions.go: listing offsets, assigning partitions, the refresh.
//   - gaps.go: [Gap], detection at log start and on data loss.
//   - lag.go: [PartitionLag], Lag.
//   - errors.go: sentinels and [RecordError].
//   - logger.go: franz-go's log to slog.
//   - pool.go: the pool of fetched records' slices (kgo.WithPools).
package source
