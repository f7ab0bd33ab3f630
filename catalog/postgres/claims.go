package postgres

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/tarnhq/tarn/catalog"
)

var _ catalog.PartitionClaims = (*Store)(nil)

// ClaimPartitions claims the partitions of next for owner in one
// transaction (table tarn_ingest_claims, migration 0002): a partition
// never claimed starts at next[p] with epoch 1; one claimed before gets
// epoch+1, owner, and the larger of its next_offset and next[p]. Rows are
// written in partition order, so two replicas claiming overlapping sets
// at once cannot deadlock; the later claim wins (a higher epoch), which
// is what a rebalance means.
//
// Errors: catalog.ErrInvalidArgument for an empty table, topic or owner,
// or a negative partition or offset; pgx's.
func (s *Store) ClaimPartitions(ctx context.Context, table, topic, owner string, next map[int32]int64) (map[int32]catalog.PartitionClaim, error) {
	if table == "" || topic == "" || owner == "" {
		return nil, catalog.Errorf(catalog.ErrInvalidArgument, "claim of partitions: table, topic and owner are required")
	}
	parts := slices.Sorted(maps.Keys(next))
	for _, p := range parts {
		if p < 0 || next[p] < 0 {
			return nil, catalog.Errorf(catalog.ErrInvalidArgument, "claim of partition %d at offset %d", p, next[p])
		}
	}
	out := make(map[int32]catalog.PartitionClaim, len(parts))
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		for _, p := range parts {
			var c catalog.PartitionClaim
			err := tx.QueryRow(ctx, `INSERT INTO tarn_ingest_claims (table_uuid, kafka_partition, topic, owner, epoch, next_offset)
				VALUES ($1, $2, $3, $4, 1, $5)
				ON CONFLICT (table_uuid, kafka_partition) DO UPDATE SET
					topic = EXCLUDED.topic, owner = EXCLUDED.owner,
					epoch = tarn_ingest_claims.epoch + 1,
					next_offset = GREATEST(tarn_ingest_claims.next_offset, EXCLUDED.next_offset),
					claimed_at = now()
				RETURNING epoch, next_offset`, table, p, topic, owner, next[p]).Scan(&c.Epoch, &c.Next)
			if err != nil {
				return fmt.Errorf("postgres: claim partition %d of %s: %w", p, topic, err)
			}
			out[p] = c
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// checkFence runs in CommitPointers' transaction when the commit carries
// a catalog.Fence: each of its partitions must be claimed by the fence's
// owner at the fence's epoch, with next_offset at the range's Start;
// then next_offset moves to End. The rows are locked in partition order
// (FOR UPDATE), so a claim racing the commit waits for it, or the commit
// sees the claim. Errors: catalog.ErrFenced (the transaction rolls back:
// nothing is committed); pgx's.
func checkFence(ctx context.Context, tx pgx.Tx, f catalog.Fence) error {
	if f.Table == "" || f.Owner == "" || len(f.Partitions) == 0 {
		return catalog.Errorf(catalog.ErrFenced, "fence without table, owner or partitions")
	}
	parts := slices.SortedFunc(maps.Keys(f.Partitions), cmp.Compare[int32])
	for _, p := range parts {
		r := f.Partitions[p]
		var (
			owner       string
			epoch, next int64
		)
		err := tx.QueryRow(ctx, `SELECT owner, epoch, next_offset FROM tarn_ingest_claims
			WHERE table_uuid = $1 AND kafka_partition = $2 FOR UPDATE`, f.Table, p).Scan(&owner, &epoch, &next)
		switch {
		case err == pgx.ErrNoRows:
			return catalog.Errorf(catalog.ErrFenced, "partition %d of table %s was never claimed", p, f.Table)
		case err != nil:
			return fmt.Errorf("postgres: read claim of partition %d: %w", p, err)
		case owner != f.Owner || epoch != r.Epoch:
			return catalog.Errorf(catalog.ErrFenced, "partition %d is claimed by %s at epoch %d, not by %s at epoch %d",
				p, owner, epoch, f.Owner, r.Epoch)
		case next != r.Start:
			return catalog.Errorf(catalog.ErrFenced, "partition %d: the batch starts at offset %d but the claimed progress is at %d",
				p, r.Start, next)
		case r.End < r.Start:
			return catalog.Errorf(catalog.ErrFenced, "partition %d: range [%d, %d)", p, r.Start, r.End)
		}
		if _, err := tx.Exec(ctx, `UPDATE tarn_ingest_claims SET next_offset = $3
			WHERE table_uuid = $1 AND kafka_partition = $2`, f.Table, p, r.End); err != nil {
			return fmt.Errorf("postgres: advance claim of partition %d: %w", p, err)
		}
	}
	return nil
}
