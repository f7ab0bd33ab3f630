package source_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tarnhq/tarn/ingest/source"
)

// gapsOf returns s.Gaps() without detection times.
func gapsOf(s *source.Source) []source.Gap {
	gs := s.Gaps()
	for i := range gs {
		gs[i].Detected = time.Time{}
	}
	return gs
}

func TestGapAtOpen(t *testing.T) {
	k := newFake(t, 3)
	k.values(0, "a", 3)
	k.values(1, "b", 10)
	k.deleteRecords(1, 6)

	// The table is at 2 for partition 1, but retention removed 2..5.
	s, logs := k.open(map[int32]int64{0: 1, 1: 2})
	require.Equal(t, []source.Gap{{Partition: 1, FirstMissing: 2, LastMissing: 5, Cause: source.GapRetention}}, gapsOf(s))
	require.Equal(t, int64(4), s.Gaps()[0].Offsets())
	require.Contains(t, logs.String(), `"first_missing_offset":2,"last_missing_offset":5`)

	// Consumption continues at the log start.
	recs := pollN(t, s, 2+4)
	require.Equal(t, map[int32][]got{0: seq("a", 1, 1, 3), 1: seq("b", 6, 6, 10)}, byPartition(recs))
	pollNone(t, s, 300*time.Millisecond)
	require.Len(t, s.Gaps(), 1)
}

func TestGapWhileConsuming(t *testing.T) {
	// The source is behind; retention deletes records before they are
	// fetched. kgo answers OffsetOutOfRange by resuming at the log start
	// without reporting data loss; the source must still record the gap.
	k := newFake(t, 2)
	k.values(0, "a", 10)
	k.values(1, "b", 5)

	// Hold every fetch until the deletion is done.
	release := make(chan struct{})
	var held atomic.Bool
	k.fake.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		k.fake.KeepControl()
		held.Store(true)
		k.fake.SleepControl(func() { <-release })
		return nil, nil, false
	})
	s, logs := k.open(map[int32]int64{0: 2, 1: 0})
	eventually(t, "a fetch is held", held.Load)
	k.deleteRecords(0, 7)
	close(release)

	recs := pollN(t, s, 3+5)
	require.Equal(t, map[int32][]got{0: seq("a", 7, 7, 10), 1: seq("b", 0, 0, 5)}, byPartition(recs))
	require.Equal(t, []source.Gap{{Partition: 0, FirstMissing: 2, LastMissing: 6, Cause: source.GapRetention}}, gapsOf(s))
	require.Contains(t, logs.String(), `"first_missing_offset":2,"last_missing_offset":6`)
}

func TestGapAfterReseekBelowLogStart(t *testing.T) {
	k := newFake(t, 1)
	k.values(0, "a", 10)
	s, _ := k.open(nil)
	pollN(t, s, 10)
	k.values(0, "a", 15) // 10..24
	k.deleteRecords(0, 20)
	// The table is at 3 (another replica's commit was lost? the table
	// rolled back): the records 3..19 are gone.
	s.Reseek(map[int32]int64{0: 3})
	recs := pollN(t, s, 5)
	require.Equal(t, map[int32][]got{0: seq("a", 20, 10, 15)}, byPartition(recs))
	require.Equal(t, []source.Gap{{Partition: 0, FirstMissing: 3, LastMissing: 19, Cause: source.GapRetention}}, gapsOf(s))
}

func TestGapNotForTransactionHoles(t *testing.T) {
	// Offsets skipped by read_committed (markers, aborted records) are
	// not gaps, also when retention moved the log start into them.
	k := newFake(t, 1)
	x := k.txnProducer("tx-gap")
	k.produce(rec{p: 0, v: "p0"})                        // 0
	x.run(false, rec{p: 0, v: "x0"}, rec{p: 0, v: "x1"}) // 1, 2, marker 3
	x.run(true, rec{p: 0, v: "c0"})                      // 4, marker 5
	k.produce(rec{p: 0, v: "p1"})                        // 6
	s, _ := k.open(map[int32]int64{0: 1})
	recs := pollN(t, s, 2)
	require.Equal(t, map[int32][]got{0: {{4, "c0"}, {6, "p1"}}}, byPartition(recs))

	k.deleteRecords(0, 2)
	s.Reseek(map[int32]int64{0: 2})
	recs = pollN(t, s, 2)
	require.Equal(t, map[int32][]got{0: {{4, "c0"}, {6, "p1"}}}, byPartition(recs))
	require.Empty(t, s.Gaps())
}

func TestGapFromDataLoss(t *testing.T) {
	// The broker answers OffsetOutOfRange for an offset the source
	// already read up to (as after an unclean leader election); kgo
	// cannot place the loss, rewinds per ConsumeResetOffset (the log
	// start) and reports *kgo.ErrDataLoss. The source keeps the table's
	// position: the records now at 0..9 are not returned again, and that
	// range is recorded as a gap.
	k := newFake(t, 1)
	k.values(0, "a", 10)
	s, logs := k.open(nil, kgo.DisableFetchSessions())
	pollN(t, s, 10)
	k.failFetchOf(0, 1, kerr.OffsetOutOfRange)
	k.values(0, "b", 3)
	recs := pollN(t, s, 3)
	require.Equal(t, map[int32][]got{0: seq("b", 10, 0, 3)}, byPartition(recs))
	require.Equal(t, []source.Gap{{Partition: 0, FirstMissing: 0, LastMissing: 9, Cause: source.GapDataLoss}}, gapsOf(s))
	require.True(t, strings.Contains(logs.String(), "kafka broker lost data"), logs.String())
	pollNone(t, s, 300*time.Millisecond)
}

func TestNoGapForDeletedMarker(t *testing.T) {
	// Regression: the source's position used to be the offset after the
	// last record returned, so a partition whose last write was a
	// transaction stood on the commit marker it had already passed. When
	// retention then removed the marker (idle topic, time retention),
	// the next fetch's log start was past that position and a one-offset
	// gap was reported although nothing was missed.
	k := newFake(t, 1)
	x := k.txnProducer("tx-idle")
	x.run(true, rec{p: 0, v: "c0"}) // 0, marker 1
	s, _ := k.open(nil)
	recs := pollN(t, s, 1)
	require.Equal(t, map[int32][]got{0: {{0, "c0"}}}, byPartition(recs))
	pollNone(t, s, 300*time.Millisecond) // the marker is fetched too
	k.deleteRecords(0, 2)
	k.produce(rec{p: 0, v: "p0"}) // 2
	recs = pollN(t, s, 1)
	require.Equal(t, map[int32][]got{0: {{2, "p0"}}}, byPartition(recs))
	require.Empty(t, s.Gaps())
}
