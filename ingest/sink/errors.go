package sink

import (
	"fmt"

	"github.com/tarnhq/tarn/internal/errclass"
	"github.com/tarnhq/tarn/offsets"
)

// Sentinels. Errors of this package wrap one of them (or a catalog /
// iceberg-go error, or offsets.ErrInvalid and offsets.ErrLost for the
// head's offsets) with %w.
var (
	// ErrInvalidConfig: a Config field is missing or out of range.
	ErrInvalidConfig = errclass.New(errclass.Internal, "invalid sink config")
	// ErrInvalidBatch: a Batch is malformed (no partitions, a negative
	// partition or offset, End before Start, records of differing schemas).
	// A programming error in the caller, not a data problem.
	ErrInvalidBatch = errclass.New(errclass.Internal, "invalid batch")
	// ErrForeignOffsets (an offsets.ErrInvalid): the table's offsets
	// belong to another Kafka cluster or topic than the sink's Config
	// names.
	ErrForeignOffsets = fmt.Errorf("%w: offsets of another cluster or topic", offsets.ErrInvalid)
	// ErrTopicRecreated: the table's offsets were recorded for a topic of
	// the same name but another Kafka topic id: the topic was deleted and
	// recreated, and its offsets now count different records. Resuming
	// would skip the new topic's first records silently.
	ErrTopicRecreated = fmt.Errorf("%w: the topic was deleted and recreated", ErrForeignOffsets)
	// ErrSortedTable: the table has a sort order. iceberg-go sorts each
	// batch before writing it, so rows would not keep the batch's order and
	// row positions (see the package doc) would not be known.
	ErrSortedTable = errclass.New(errclass.Internal, "table has a sort order; the sink writes unsorted tables only")
	// ErrWrittenDone: CommitWritten was called with a Written that was
	// already committed or dropped.
	ErrWrittenDone = errclass.New(errclass.Internal, "written batch already committed or dropped")
	// ErrMainMoved: with Config.NoRebase, main moved between the batch's
	// planning and its commit; the batch was dropped and is to be read
	// again from the head.
	ErrMainMoved = errclass.New(errclass.Internal, "main moved since the batch was planned")
	// ErrStaleBatch: the batch no longer applies to the table's head; see
	// StaleBatchError.
	ErrStaleBatch = errclass.New(errclass.Internal, "stale batch")
)

// StaleBatchError is returned by Commit and CommitWritten when the table's
// head has moved a partition of the batch away from the offset the batch
// was planned from: another writer (a second replica, a zombie pipeline)
// committed those records, or the batch was planned from a wrong offset.
// Nothing was committed. The caller drops the batch and re-seeks every
// partition to Head.Next (partitions absent from it to their configured
// start). It matches ErrStaleBatch with errors.Is.
type StaleBatchError struct {
	// Head is the table's offsets at the time of the verdict.
	Head offsets.Offsets
	// Partition is the lowest partition that moved.
	Partition int32
	// Start is the offset the batch planned Partition from.
	Start int64
	// Next is the head's next offset for Partition.
	Next int64
}

func (e *StaleBatchError) Error() string {
	return fmt.Sprintf("stale batch: %s partition %d was planned from offset %d but the table is at %d; drop the batch and re-seek from the table",
		e.Head.Topic, e.Partition, e.Start, e.Next)
}

func (e *StaleBatchError) Unwrap() error { return ErrStaleBatch }
