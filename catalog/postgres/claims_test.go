package postgres_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
)

// testClaimsFence pins the fencing of ingest commits across replicas: a
// replica that lost a partition's claim (a zombie whose group session
// expired while it kept reading) must not commit the batch it read, and
// its refused commit must leave the table's pointer where it was; the
// claim's progress moves only with a commit that lands. Without the check
// in CommitPointers the zombie's commit lands (its version still
// matches: nobody else committed yet), and its records are in the table
// and read again by the new owner.
func testClaimsFence(t *testing.T, d *db) {
	ctx := t.Context()
	url := d.schema(t)
	a, b := open(t, url), open(t, url) // two replicas' pools
	tbl := catalog.Ident{Namespace: catalog.Namespace{"k"}, Name: "t"}
	require.NoError(t, a.CreateNamespace(ctx, tbl.Namespace, nil))
	require.NoError(t, a.CommitPointers(ctx, []catalog.PointerChange{{Ident: tbl, Kind: catalog.KindTable,
		MetadataLocation: "file:///w/k/t/metadata/1.json", Locations: []string{"file:///w/k/t"}}}))
	const uuid = "0b0e2f8c-7c0a-4f43-9d59-6d1f1b8f1a01"
	swap := func(st catalog.Store, version int64, loc string, f catalog.Fence) error {
		return st.CommitPointers(catalog.WithFence(ctx, f), []catalog.PointerChange{{Ident: tbl, Kind: catalog.KindTable,
			ExpectedVersion: version, MetadataLocation: loc}})
	}

	// A claims partitions 0 and 1 from the table's head (0: at 10, 1: new).
	ca, err := a.ClaimPartitions(ctx, uuid, "orders", "replica-a", map[int32]int64{0: 10, 1: 0})
	require.NoError(t, err)
	assert.Equal(t, map[int32]catalog.PartitionClaim{0: {Epoch: 1, Next: 10}, 1: {Epoch: 1, Next: 0}}, ca)
	// A commits p0 [10, 20): the claim advances with the pointer.
	require.NoError(t, swap(a, 1, "file:///w/k/t/metadata/2.json", catalog.Fence{Table: uuid, Owner: "replica-a",
		Partitions: map[int32]catalog.FencedRange{0: {Epoch: 1, Start: 10, End: 20}}}))

	// B claims p0 (a rebalance) from a stale head (10): it keeps 20.
	cb, err := b.ClaimPartitions(ctx, uuid, "orders", "replica-b", map[int32]int64{0: 10})
	require.NoError(t, err)
	assert.Equal(t, map[int32]catalog.PartitionClaim{0: {Epoch: 2, Next: 20}}, cb)

	// A, now a zombie, commits p0 [20, 30) on the current version: refused,
	// nothing moves.
	err = swap(a, 2, "file:///w/k/t/metadata/3-zombie.json", catalog.Fence{Table: uuid, Owner: "replica-a",
		Partitions: map[int32]catalog.FencedRange{0: {Epoch: 1, Start: 20, End: 30}, 1: {Epoch: 1, Start: 0, End: 5}}})
	require.ErrorIs(t, err, catalog.ErrFenced)
	p, err := b.LoadPointer(ctx, tbl, catalog.KindTable)
	require.NoError(t, err)
	assert.Equal(t, int64(2), p.Version)
	assert.Equal(t, "file:///w/k/t/metadata/2.json", p.MetadataLocation)

	// B's batch must start where the claim's progress is.
	err = swap(b, 2, "file:///w/k/t/metadata/3-gap.json", catalog.Fence{Table: uuid, Owner: "replica-b",
		Partitions: map[int32]catalog.FencedRange{0: {Epoch: 2, Start: 25, End: 30}}})
	require.ErrorIs(t, err, catalog.ErrFenced)
	// A partition nobody claimed is refused too.
	err = swap(b, 2, "file:///w/k/t/metadata/3-unclaimed.json", catalog.Fence{Table: uuid, Owner: "replica-b",
		Partitions: map[int32]catalog.FencedRange{7: {Epoch: 1, Start: 0, End: 1}}})
	require.ErrorIs(t, err, catalog.ErrFenced)
	// A fence on another table's claims is refused (claims are per table).
	err = swap(b, 2, "file:///w/k/t/metadata/3-other.json", catalog.Fence{Table: "another", Owner: "replica-b",
		Partitions: map[int32]catalog.FencedRange{0: {Epoch: 2, Start: 20, End: 30}}})
	require.ErrorIs(t, err, catalog.ErrFenced)

	// B's contiguous batch lands; A's p1 claim still holds for A.
	require.NoError(t, swap(b, 2, "file:///w/k/t/metadata/3.json", catalog.Fence{Table: uuid, Owner: "replica-b",
		Partitions: map[int32]catalog.FencedRange{0: {Epoch: 2, Start: 20, End: 30}}}))
	require.NoError(t, swap(a, 3, "file:///w/k/t/metadata/4.json", catalog.Fence{Table: uuid, Owner: "replica-a",
		Partitions: map[int32]catalog.FencedRange{1: {Epoch: 1, Start: 0, End: 5}}}))
	// A re-claims p0 later: epoch 3, at B's progress.
	ca, err = a.ClaimPartitions(ctx, uuid, "orders", "replica-a", map[int32]int64{0: 0})
	require.NoError(t, err)
	assert.Equal(t, map[int32]catalog.PartitionClaim{0: {Epoch: 3, Next: 30}}, ca)

	// Bad input is an error, not a claim.
	_, err = a.ClaimPartitions(ctx, uuid, "orders", "", map[int32]int64{0: 0})
	require.ErrorIs(t, err, catalog.ErrInvalidArgument)
	_, err = a.ClaimPartitions(ctx, uuid, "orders", "replica-a", map[int32]int64{-1: 0})
	require.ErrorIs(t, err, catalog.ErrInvalidArgument)
}
