package source_test

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/ingest/source"
)

// claimBook is an in-memory stand-in for the store's partition claims
// (catalog.PartitionClaims): every claim bumps the partition's epoch and
// keeps the larger of its progress and the caller's offset.
type claimBook struct {
	mu     sync.Mutex
	claims map[int32]source.Claim
	owners map[int32]string
}

func (b *claimBook) claimFor(owner string) func(context.Context, map[int32]int64) (map[int32]source.Claim, error) {
	return func(_ context.Context, fallback map[int32]int64) (map[int32]source.Claim, error) {
		b.mu.Lock()
		defer b.mu.Unlock()
		out := map[int32]source.Claim{}
		for p, off := range fallback {
			c := b.claims[p]
			c.Epoch++
			c.Next = max(c.Next, off)
			b.claims[p], b.owners[p] = c, owner
			out[p] = c
		}
		return out, nil
	}
}

// applyAssignments applies a source's reported assignment changes to
// held: partition -> the epoch of its claim.
func applyAssignments(held map[int32]int64, as []source.Assignment) {
	for _, a := range as {
		if a.Revoked {
			delete(held, a.Partition)
		} else {
			held[a.Partition] = a.Claim.Epoch
		}
	}
}

// TestGroupSharesPartitions: grouped sources split a topic's partitions
// between them through the consumer group (cooperative-sticky), each
// partition starting at its claim (not at the group's offsets, which are
// never committed, nor at Open's start when the claim is ahead); a
// source that closes (a SIGTERM drain) leaves the group, and its
// partitions move to the other under new epochs.
func TestGroupSharesPartitions(t *testing.T) {
	k := newFake(t, 4)
	for p := range int32(4) {
		k.values(p, "v", 10)
	}
	book := &claimBook{claims: map[int32]source.Claim{}, owners: map[int32]string{}}
	for p := range int32(4) {
		book.claims[p] = source.Claim{Next: 3} // progress committed earlier
	}
	open := func(owner string) *source.Source {
		s, _, err := k.tryOpenConfig(func(c *source.Config) {
			c.Group = &source.Group{ID: "tarn-test", Claim: book.claimFor(owner)}
		}, map[int32]int64{0: 0, 1: 0, 2: 0, 3: 0})
		require.NoError(t, err)
		return s
	}

	a := open("a")
	recs := pollN(t, a, 4*7)
	for p, got := range byPartition(recs) {
		assert.Equal(t, seq("v", 3, 3, 10), got, "partition %d starts at its claim", p)
	}
	heldA := map[int32]int64{}
	applyAssignments(heldA, a.TakeAssignments())
	assert.Equal(t, map[int32]int64{0: 1, 1: 1, 2: 1, 3: 1}, heldA)

	// B joins: the group moves some partitions to it, A keeps the rest.
	b := open("b")
	heldB := map[int32]int64{}
	eventually(t, "the partitions split between a and b", func() bool {
		applyAssignments(heldA, a.TakeAssignments())
		applyAssignments(heldB, b.TakeAssignments())
		return len(heldA) > 0 && len(heldB) > 0 && len(heldA)+len(heldB) == 4
	})
	for p, e := range heldB {
		assert.NotContains(t, heldA, p)
		assert.Equal(t, int64(2), e, "partition %d: a claim moved to b bumps the epoch", p)
	}
	// B reads its partitions from their claims: records 3..9 again (A
	// committed nothing in this test).
	got := byPartition(pollN(t, b, 7*len(heldB)))
	assert.ElementsMatch(t, slices.Collect(maps.Keys(heldB)), slices.Collect(maps.Keys(got)))

	// B drains: it leaves the group, and A claims its partitions again.
	moved := slices.Collect(maps.Keys(heldB))
	b.Close()
	eventually(t, "a holds every partition again", func() bool {
		applyAssignments(heldA, a.TakeAssignments())
		return len(heldA) == 4
	})
	book.mu.Lock()
	for _, p := range moved {
		assert.Equal(t, int64(3), heldA[p], "partition %d claimed a third time", p)
		assert.Equal(t, "a", book.owners[p])
	}
	book.mu.Unlock()
	// The group's offsets were never committed.
	offs, err := k.adm.FetchOffsets(ctxT(t), "tarn-test")
	require.NoError(t, err)
	assert.Empty(t, offs.Offsets(), "committed group offsets")
}
