package catalog

import (
	"context"

	"github.com/tarnhq/tarn/internal/errclass"
)

// ErrFenced: an ingest commit was refused because the replica no longer
// holds the claim on one of the batch's Kafka partitions (another replica
// claimed it since, with a higher epoch), or the batch does not start
// where the partition's claimed progress ends. Nothing was committed: the
// batch is dropped, never retried as is.
var ErrFenced = errclass.New(ErrConflict, "partition claim fenced")

// PartitionClaims is the capability of a Store shared by several
// replicas (catalog/postgres has it; catalog/bolt, one process, has not)
// to share a topic's Kafka partitions between the replicas safely. The
// consumer group decides which replica reads a partition; the claim
// makes that decision binding for commits: every claim of a partition
// bumps its epoch, and a commit carrying a Fence (WithFence) is applied
// only if, in the same store transaction as the pointer swap, each of
// its partitions is still claimed by the fence's owner at the fence's
// epoch and its progress ends where the batch starts. A replica that
// lost a partition (a zombie: paused past its group session, partitioned
// from the broker) therefore cannot commit what it read, whatever it
// believes.
//
// The claim's progress (next offset) moves only with the commit that
// moves the table's tarn.kafka.offsets for the partition, in the same
// transaction, so it never runs ahead of the table; the table's offsets
// stay the source of truth and the claim never replaces them.
type PartitionClaims interface {
	// ClaimPartitions claims partitions of a table's topic for owner and
	// returns each one's claim. next holds, per partition to claim, the
	// offset the caller would start from (the table's head offset, or
	// the topic's start); a partition claimed before keeps the larger of
	// its recorded progress and next (a commit landed after the caller
	// read the head). The epoch is one more than the partition's last.
	// Errors: ErrInvalidArgument; the store's.
	ClaimPartitions(ctx context.Context, table, topic, owner string, next map[int32]int64) (map[int32]PartitionClaim, error)
}

// PartitionClaim is one partition's claim as ClaimPartitions returned
// it: the epoch it holds and the next offset to read.
type PartitionClaim struct {
	Epoch int64
	Next  int64
}

// Fence is the condition an ingest commit of a batch is applied under
// (see PartitionClaims). Table is the table's UUID (metadata table-uuid),
// which names the claims: a dropped and re-created table starts anew.
type Fence struct {
	Table string
	Owner string
	// Partitions are the batch's partitions, each with the epoch of the
	// claim its records were read under and the offsets it covers.
	Partitions map[int32]FencedRange
}

// FencedRange is one partition of a fenced batch: read under claim
// Epoch, covering offsets [Start, End).
type FencedRange struct {
	Epoch, Start, End int64
}

type fenceKey struct{}

// WithFence returns ctx carrying f: a table commit made with the context
// (through Catalog.TableIO) checks and advances the claims in the same
// store transaction, or fails with ErrFenced. A store without
// PartitionClaims fails such a commit with ErrFenced too: it cannot
// check.
func WithFence(ctx context.Context, f Fence) context.Context {
	return context.WithValue(ctx, fenceKey{}, f)
}

// FenceOf returns the fence ctx carries, if any (for Store backends).
func FenceOf(ctx context.Context) (Fence, bool) {
	f, ok := ctx.Value(fenceKey{}).(Fence)
	return f, ok
}
