package source_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tarnhq/tarn/ingest/source"
)

func TestLag(t *testing.T) {
	k := newFake(t, 3)
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	ts := func(p int32, i int) time.Time {
		return base.Add(time.Duration(p)*time.Minute + time.Duration(i)*time.Second)
	}
	for i := range 10 {
		k.produce(rec{p: 0, v: "a", ts: ts(0, i)})
	}
	for i := range 5 {
		k.produce(rec{p: 1, v: "b", ts: ts(1, i)})
	}

	s, _ := k.open(map[int32]int64{0: 2})
	pollN(t, s, 8+5)

	lag, err := s.Lag(ctxT(t), map[int32]int64{0: 2})
	require.NoError(t, err)
	requireAges(t, lag)
	require.Equal(t, map[int32]source.PartitionLag{
		// next passed: the oldest unconsumed record is 2.
		0: {LastStable: 10, Next: 2, Records: 8, Oldest: ts(0, 2)},
		// Not passed: counted from where the source started it.
		1: {LastStable: 5, Next: 0, Records: 5, Oldest: ts(1, 0)},
		// Empty.
		2: {LastStable: 0, Next: 0, Records: 0},
	}, lag)

	lag, err = s.Lag(ctxT(t), map[int32]int64{0: 10, 1: 5})
	require.NoError(t, err)
	require.Equal(t, map[int32]source.PartitionLag{
		0: {LastStable: 10, Next: 10},
		1: {LastStable: 5, Next: 5},
		2: {LastStable: 0, Next: 0},
	}, lag)

	// Records not fetched yet have no known age.
	k.produce(rec{p: 2, v: "c", ts: ts(2, 0)})
	lag, err = s.Lag(ctxT(t), map[int32]int64{0: 10, 1: 5})
	require.NoError(t, err)
	require.Equal(t, source.PartitionLag{LastStable: 1, Next: 0, Records: 1}, lag[2])
}

func TestLagCountsTransactionMarkers(t *testing.T) {
	// The last stable offset counts the commit marker after the last
	// record: a partition written transactionally shows lag 1 when all of
	// its records were consumed (documented on PartitionLag.Records).
	k := newFake(t, 1)
	x := k.txnProducer("tx-lag")
	x.run(true, rec{p: 0, v: "c0"}, rec{p: 0, v: "c1"}) // 0, 1, marker 2
	s, _ := k.open(nil)
	recs := pollN(t, s, 2)
	next := recs[1].Offset + 1
	lag, err := s.Lag(ctxT(t), map[int32]int64{0: next})
	require.NoError(t, err)
	require.Equal(t, source.PartitionLag{LastStable: 3, Next: 2, Records: 1}, lag[0])

	// An open transaction: its records are not stable yet.
	x.begin(rec{p: 0, v: "open"}) // 3
	lag, err = s.Lag(ctxT(t), map[int32]int64{0: next})
	require.NoError(t, err)
	require.Equal(t, int64(3), lag[0].LastStable)
	x.end(false)
	lag, err = s.Lag(ctxT(t), map[int32]int64{0: next})
	require.NoError(t, err)
	require.Equal(t, source.PartitionLag{LastStable: 5, Next: 2, Records: 3}, lag[0])
}

func TestLagAfterReseek(t *testing.T) {
	k := newFake(t, 1)
	k.values(0, "a", 6)
	s, _ := k.open(nil)
	pollN(t, s, 6)
	s.Reseek(map[int32]int64{0: 4})
	lag, err := s.Lag(ctxT(t), nil)
	require.NoError(t, err)
	require.Equal(t, int64(4), lag[0].Next)
	require.Equal(t, int64(2), lag[0].Records)
}

func TestLagListingFails(t *testing.T) {
	k := newFake(t, 1)
	s, _ := k.open(nil)
	k.failRequests(kmsg.ListOffsets, 1, kerr.ClusterAuthorizationFailed)
	_, err := s.Lag(ctxT(t), nil)
	require.ErrorIs(t, err, kerr.ClusterAuthorizationFailed)
}

// requireAges checks each Age against its Oldest and clears it, so that
// the rest can be compared exactly.
func requireAges(t *testing.T, lag map[int32]source.PartitionLag) {
	t.Helper()
	for p, l := range lag {
		if l.Oldest.IsZero() {
			require.Zero(t, l.Age, "partition %d", p)
			continue
		}
		want := time.Since(l.Oldest)
		require.InDelta(t, want.Seconds(), l.Age.Seconds(), 5, "partition %d", p)
		l.Age = 0
		lag[p] = l
	}
}

func TestLagOfUnassignedPartitions(t *testing.T) {
	// Partitions the refresh has not found yet are reported too: from a
	// pending Reseek offset, else from their log start.
	k := newFake(t, 1)
	s, _, err := k.tryOpenConfig(func(c *source.Config) { c.PartitionRefresh = time.Hour }, nil)
	require.NoError(t, err)
	k.createPartitions(2)
	k.values(1, "x", 3)
	k.values(2, "y", 4)
	k.deleteRecords(2, 1)
	s.Reseek(map[int32]int64{1: 1})
	// The client caches metadata for a few seconds (kgo MetadataMinAge).
	var lag map[int32]source.PartitionLag
	eventually(t, "Lag lists the new partitions", func() bool {
		lag, err = s.Lag(ctxT(t), nil)
		require.NoError(t, err)
		return len(lag) == 3
	})
	require.Equal(t, map[int32]source.PartitionLag{
		0: {LastStable: 0, Next: 0},
		1: {LastStable: 3, Next: 1, Records: 2},
		2: {LastStable: 4, Next: 1, Records: 3},
	}, lag)
}
