package source_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/ingest/source"
	"github.com/tarnhq/tarn/internal/testenv"
	"github.com/tarnhq/tarn/internal/testkafka"
)

// TestE2E runs against a real Kafka 4.4 broker (internal/testkafka):
// read_committed with committed, aborted and open transactions (the
// broker's transaction markers land a moment after EndTransaction), gaps
// from DeleteRecords at Open and after a Reseek, and exact lag.
func TestE2E(t *testing.T) {
	testenv.E2E(t, "a real Kafka broker (internal/testkafka)")
	b := testkafka.StartBroker(t)
	k := newKafka(t, []string{b.Bootstrap}, nil)
	created, err := k.adm.CreateTopic(ctxT(t), 3, 1, nil, testTopic)
	require.NoError(t, err)
	require.NoError(t, created.Err)

	x := k.txnProducer("tx-e2e")
	// Partition 0: plain, committed, aborted, plain.
	k.produce(rec{p: 0, v: "plain0"})                             // 0
	x.run(true, rec{p: 0, v: "commit0"}, rec{p: 0, v: "commit1"}) // 1, 2, marker 3
	k.waitHighWatermark(0, 4)
	x.run(false, rec{p: 0, v: "abort0"}) // 4, marker 5
	k.waitHighWatermark(0, 6)
	k.produce(rec{p: 0, v: "plain1"}) // 6
	// Partition 1: ten records, the first six deleted.
	k.values(1, "b", 10)
	k.deleteRecords(1, 6)
	// Partition 2: an open transaction, then a plain record after it.
	x.begin(rec{p: 2, v: "open0"})        // 0
	k.produce(rec{p: 2, v: "after-open"}) // 1

	// The table is at 2 for partition 1: 2..5 are gone.
	s, logs := k.open(map[int32]int64{0: 0, 1: 2})
	require.Equal(t, []source.Gap{{Partition: 1, FirstMissing: 2, LastMissing: 5, Cause: source.GapRetention}}, gapsOf(s))
	require.Contains(t, logs.String(), `"first_missing_offset":2,"last_missing_offset":5`)

	recs := pollN(t, s, 4+4)
	require.Equal(t, map[int32][]got{
		0: {{0, "plain0"}, {1, "commit0"}, {2, "commit1"}, {6, "plain1"}},
		1: seq("b", 6, 6, 10),
	}, byPartition(recs))
	pollNone(t, s, time.Second) // partition 2 waits for its transaction

	next := map[int32]int64{0: 7, 1: 10, 2: 0}
	lag, err := s.Lag(ctxT(t), next)
	require.NoError(t, err)
	require.Equal(t, map[int32]source.PartitionLag{
		0: {LastStable: 7, Next: 7},
		1: {LastStable: 10, Next: 10},
		2: {LastStable: 0, Next: 0}, // stable up to the open transaction
	}, lag)

	x.end(true) // marker at 2
	recs = pollN(t, s, 2)
	require.Equal(t, map[int32][]got{2: {{0, "open0"}, {1, "after-open"}}}, byPartition(recs))
	next[2] = 2
	// The marker is counted by the last stable offset.
	eventually(t, "partition 2's last stable offset passes the marker", func() bool {
		lag, err = s.Lag(ctxT(t), next)
		require.NoError(t, err)
		return lag[2].LastStable == 3
	})
	require.Equal(t, source.PartitionLag{LastStable: 3, Next: 2, Records: 1}, lag[2])

	// While consuming: the table goes back to 7 on partition 1, but
	// 7 and 8 were deleted meanwhile.
	k.deleteRecords(1, 9)
	s.Reseek(map[int32]int64{1: 7})
	recs = pollN(t, s, 1)
	require.Equal(t, map[int32][]got{1: {{9, "b9"}}}, byPartition(recs))
	require.Equal(t, []source.Gap{
		{Partition: 1, FirstMissing: 2, LastMissing: 5, Cause: source.GapRetention},
		{Partition: 1, FirstMissing: 7, LastMissing: 8, Cause: source.GapRetention},
	}, gapsOf(s))
	pollNone(t, s, time.Second)
}
