package source_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tarnhq/tarn/ingest/pipeline"
	"github.com/tarnhq/tarn/ingest/source"
)

// The pipeline (written beside this package) consumes a Source through
// its own interface.
var _ pipeline.Source = (*source.Source)(nil)

func TestOpenStartsAtGivenOffsets(t *testing.T) {
	k := newFake(t, 3)
	k.values(0, "a", 10)
	k.values(1, "b", 10)
	k.values(2, "c", 4)

	// Partition 2 is not in start: it begins at its earliest offset.
	s, _ := k.open(map[int32]int64{0: 3, 1: 10})
	recs := pollN(t, s, 7+4)
	require.Equal(t, map[int32][]got{
		0: seq("a", 3, 3, 10),
		2: seq("c", 0, 0, 4),
	}, byPartition(recs))
	pollNone(t, s, 300*time.Millisecond)

	// Partition 1 started at its end: it returns only what comes next.
	k.values(1, "new", 2)
	recs = pollN(t, s, 2)
	require.Equal(t, map[int32][]got{1: seq("new", 10, 0, 2)}, byPartition(recs))
	require.Empty(t, s.Gaps())
}

func TestReadCommitted(t *testing.T) {
	// kfake implements transactions and read_committed (LSO, aborted
	// transaction index, control batches); the same is checked against
	// a real broker in TestE2E.
	k := newFake(t, 3)
	x := k.txnProducer("tx-1")
	k.produce(rec{p: 0, v: "plain0"})                             // 0
	x.run(true, rec{p: 0, v: "commit0"}, rec{p: 0, v: "commit1"}) // 1, 2, marker 3
	x.run(false, rec{p: 0, v: "abort0"}, rec{p: 1, v: "abort1"})  // p0: 4, marker 5; p1: 0, marker 1
	k.produce(rec{p: 0, v: "plain1"}, rec{p: 1, v: "plain2"})     // p0: 6; p1: 2

	s, _ := k.open(nil)
	recs := pollN(t, s, 5)
	require.Equal(t, map[int32][]got{
		0: {{0, "plain0"}, {1, "commit0"}, {2, "commit1"}, {6, "plain1"}},
		1: {{2, "plain2"}},
	}, byPartition(recs))

	// An open transaction holds back everything after it (the last
	// stable offset stops at its first record) until it ends.
	x.begin(rec{p: 2, v: "open0"})        // p2: 0
	k.produce(rec{p: 2, v: "after-open"}) // p2: 1
	pollNone(t, s, 500*time.Millisecond)
	x.end(true) // marker at 2
	recs = pollN(t, s, 2)
	require.Equal(t, map[int32][]got{2: {{0, "open0"}, {1, "after-open"}}}, byPartition(recs))
	pollNone(t, s, 300*time.Millisecond)
	require.Empty(t, s.Gaps())
}

func TestReseekDropsBufferedRecords(t *testing.T) {
	k := newFake(t, 3)
	k.values(0, "a", 10)
	k.values(1, "b", 10)
	s, _ := k.open(nil)
	recs := pollN(t, s, 20)
	require.Equal(t, map[int32][]got{0: seq("a", 0, 0, 10), 1: seq("b", 0, 0, 10)}, byPartition(recs))

	// More records arrive and the client buffers them before the next
	// Poll; then the sink reports a stale batch for partition 0.
	more := make([]rec, 0, 25)
	for i := range 20 {
		more = append(more, rec{p: 0, v: fmt.Sprintf("a%d", i)})
	}
	for i := range 5 {
		more = append(more, rec{p: 1, v: fmt.Sprintf("c%d", i)})
	}
	k.produce(more...)
	eventually(t, "client buffered the new records", func() bool { return s.BufferedRecords() >= 20 })
	s.Reseek(map[int32]int64{0: 4})

	// Partition 0 continues at 4, without first returning the buffered
	// 10.. records; partition 1's buffered records are not lost.
	all := seq("a", 0, 0, 10)
	all = append(all, seq("a", 10, 0, 20)...)
	recs = pollN(t, s, 26+5)
	require.Equal(t, map[int32][]got{0: all[4:], 1: seq("c", 10, 0, 5)}, byPartition(recs))
	pollNone(t, s, 300*time.Millisecond)

	// Back on partition 1 too: 12.. again.
	s.Reseek(map[int32]int64{1: 12})
	recs = pollN(t, s, 3)
	require.Equal(t, map[int32][]got{1: seq("c", 12, 2, 5)}, byPartition(recs))

	// A Reseek forward skips records (another writer committed them)
	// without a gap.
	k.values(1, "d", 4) // 15..18
	eventually(t, "client buffered the new records", func() bool { return s.BufferedRecords() == 4 })
	s.Reseek(map[int32]int64{1: 17})
	recs = pollN(t, s, 2)
	require.Equal(t, map[int32][]got{1: seq("d", 17, 2, 4)}, byPartition(recs))
	pollNone(t, s, 300*time.Millisecond)
	require.Empty(t, s.Gaps())
}

func TestReseekWhilePollBlocks(t *testing.T) {
	// Poll is blocked in the client when the Reseek lands: records the
	// client hands over afterwards may predate it, so that Poll drops
	// them and re-seeks; what it returns starts at the Reseek offset.
	k := newFake(t, 1)
	k.values(0, "a", 10)
	s, _ := k.open(nil)
	pollN(t, s, 10)

	type result struct {
		recs []*kgo.Record
		err  error
	}
	done := make(chan result, 1)
	go func() {
		recs, err := s.Poll(ctxT(t))
		done <- result{recs, err}
	}()
	time.Sleep(100 * time.Millisecond) // let Poll block in the client
	s.Reseek(map[int32]int64{0: 7})
	r := <-done
	require.NoError(t, r.err)
	require.Equal(t, map[int32][]got{0: seq("a", 7, 7, 10)}, byPartition(r.recs))
	pollNone(t, s, 300*time.Millisecond)
}

func TestReseekRace(t *testing.T) {
	// Reseeks from another goroutine while Poll runs: every run of
	// records Poll returns for the partition continues from the previous
	// record or from the latest Reseek offset, never from a stale fetch.
	k := newFake(t, 1)
	k.values(0, "a", 200)
	s, _ := k.open(nil)

	var mu sync.Mutex
	targets := map[int64]bool{0: true}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 50 {
			off := int64((i * 37) % 200)
			mu.Lock()
			targets[off] = true
			mu.Unlock()
			s.Reseek(map[int32]int64{0: off})
			time.Sleep(2 * time.Millisecond)
		}
		cancel()
	}()
	last := int64(-1)
	for {
		recs, err := s.Poll(ctx)
		if errors.Is(err, context.Canceled) {
			break
		}
		require.NoError(t, err)
		for _, r := range recs {
			if r.Offset != last+1 {
				mu.Lock()
				ok := targets[r.Offset]
				mu.Unlock()
				require.True(t, ok, "offset %d after %d is neither the next one nor a reseek target", r.Offset, last)
			}
			last = r.Offset
		}
	}
	wg.Wait()
	// After a last Reseek, with no race, the partition reads on from
	// there to the end.
	s.Reseek(map[int32]int64{0: 13})
	var tail []int64
	for len(tail) == 0 || tail[len(tail)-1] != 199 {
		recs, err := s.Poll(ctxT(t))
		require.NoError(t, err)
		for _, r := range recs {
			tail = append(tail, r.Offset)
		}
	}
	require.Equal(t, int64(13), tail[0])
	for i := 1; i < len(tail); i++ {
		require.Equal(t, tail[i-1]+1, tail[i])
	}
}

func TestNewPartitionsFromEarliest(t *testing.T) {
	k := newFake(t, 3)
	k.values(0, "a", 2)
	s, _ := k.open(map[int32]int64{0: 2})

	k.createPartitions(2)
	// Produced before the source can have noticed: read from offset 0.
	k.values(3, "new", 3)
	k.values(4, "newer", 1)
	recs := pollN(t, s, 4)
	require.Equal(t, map[int32][]got{3: seq("new", 0, 0, 3), 4: seq("newer", 0, 0, 1)}, byPartition(recs))
	pollNone(t, s, 300*time.Millisecond)
}

func TestPartitionRefreshFailureIsRetried(t *testing.T) {
	k := newFake(t, 1)
	s, logs := k.open(nil)
	k.failRequests(kmsg.ListOffsets, 2, kerr.ClusterAuthorizationFailed)
	eventually(t, "a refresh failed", func() bool { return strings.Contains(logs.String(), "kafka partition refresh failed") })
	k.createPartitions(1)
	k.values(1, "x", 2)
	recs := pollN(t, s, 2)
	require.Equal(t, map[int32][]got{1: seq("x", 0, 0, 2)}, byPartition(recs))
}

func TestReseekOfUndiscoveredPartitionPastItsEnd(t *testing.T) {
	// As at Open, an offset past the high watermark fails closed, here
	// through Poll.
	k := newFake(t, 1)
	s, _ := k.open(nil)
	s.Reseek(map[int32]int64{1: 10})
	k.createPartitions(1)
	k.values(1, "x", 2)
	_, err := s.Poll(ctxT(t))
	require.ErrorIs(t, err, source.ErrOffsetBeyondEnd)
	// The refresh may find partition 1 before or after its two records
	// land, so the bound it reports is 0 or 2; either is below 10.
	require.Regexp(t, `partition 1: offset 10, high watermark [02],`, err.Error())
}

func TestReseekOfUndiscoveredPartition(t *testing.T) {
	// Another replica's commit can name a partition this source has not
	// found yet; the Reseek offset is where it starts when found.
	k := newFake(t, 1)
	s, _ := k.open(nil)
	k.createPartitions(1)
	k.values(1, "x", 5)
	s.Reseek(map[int32]int64{1: 3})
	recs := pollN(t, s, 2)
	// The refresh may have found partition 1 before the Reseek; either
	// way it starts at 3.
	require.Equal(t, map[int32][]got{1: seq("x", 3, 3, 5)}, byPartition(recs))
}

func TestFetchErrors(t *testing.T) {
	t.Run("retried", func(t *testing.T) {
		k := newFake(t, 3)
		k.values(0, "a", 3)
		k.failRequests(kmsg.Fetch, 3, kerr.NotLeaderForPartition)
		k.failRequests(kmsg.Fetch, 1, nil) // a dropped connection
		s, _ := k.open(nil, kgo.DisableFetchSessions())
		recs := pollN(t, s, 3)
		require.Equal(t, map[int32][]got{0: seq("a", 0, 0, 3)}, byPartition(recs))
	})
	t.Run("fatal", func(t *testing.T) {
		k := newFake(t, 3)
		k.values(1, "a", 3)
		s, _ := k.open(nil, kgo.DisableFetchSessions())
		recs := pollN(t, s, 3)
		require.Equal(t, map[int32][]got{1: seq("a", 0, 0, 3)}, byPartition(recs))

		k.failFetchOf(2, 1, kerr.TopicAuthorizationFailed)
		_, err := s.Poll(ctxT(t))
		require.ErrorIs(t, err, source.ErrFetch)
		require.ErrorIs(t, err, kerr.TopicAuthorizationFailed)
		require.ErrorContains(t, err, "partition 2")
	})
}

func TestOpenErrors(t *testing.T) {
	k := newFake(t, 3)
	k.values(0, "a", 5)
	for _, tc := range []struct {
		name  string
		cfg   func(*source.Config)
		start map[int32]int64
		want  error
	}{
		{"unknown topic", func(c *source.Config) { c.Topic = "nope" }, nil, source.ErrUnknownTopic},
		{"start past the end", nil, map[int32]int64{0: 6}, source.ErrOffsetBeyondEnd},
		{"negative offset", nil, map[int32]int64{0: -1}, source.ErrInvalidStart},
		{"negative partition", nil, map[int32]int64{-1: 0}, source.ErrInvalidStart},
		{"no brokers", func(c *source.Config) { c.Brokers = nil }, nil, source.ErrInvalidConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := source.Config{Brokers: k.brokers, Topic: testTopic}
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			s, err := source.Open(ctxT(t), cfg, tc.start)
			require.ErrorIs(t, err, tc.want)
			require.Nil(t, s)
		})
	}
	t.Run("listing fails", func(t *testing.T) {
		k.failRequests(kmsg.ListOffsets, 1, kerr.ClusterAuthorizationFailed)
		_, _, err := k.tryOpen(nil)
		require.ErrorIs(t, err, kerr.ClusterAuthorizationFailed)
	})
	t.Run("start at the end", func(t *testing.T) {
		s, _ := k.open(map[int32]int64{0: 5})
		pollNone(t, s, 300*time.Millisecond)
	})
}

func TestClose(t *testing.T) {
	k := newFake(t, 1)
	s, _ := k.open(nil)
	errc := make(chan error, 1)
	go func() {
		_, err := s.Poll(context.Background())
		errc <- err
	}()
	time.Sleep(50 * time.Millisecond)
	s.Close()
	require.ErrorIs(t, <-errc, source.ErrClosed)
	_, err := s.Poll(context.Background())
	require.ErrorIs(t, err, source.ErrClosed)
	s.Close()
	s.Reseek(map[int32]int64{0: 0}) // no effect, no panic
}

func TestRecordError(t *testing.T) {
	cause := errors.New("unknown schema id 7")
	err := error(source.NewRecordError(&kgo.Record{Topic: "orders", Partition: 2, Offset: 41}, cause))
	require.ErrorIs(t, err, cause)
	var re *source.RecordError
	require.ErrorAs(t, err, &re)
	require.Equal(t, source.RecordError{Topic: "orders", Partition: 2, Offset: 41, Err: cause}, *re)
	require.Equal(t, "topic orders partition 2 offset 41: unknown schema id 7", err.Error())
}

func TestControlRecordsOption(t *testing.T) {
	// With ControlRecords the markers come back too, so the caller's next
	// offset passes the last transaction's marker and lag reaches 0.
	k := newFake(t, 1)
	x := k.txnProducer("tx-control")
	x.run(true, rec{p: 0, v: "c0"})  // 0, marker 1
	x.run(false, rec{p: 0, v: "x0"}) // 2, marker 3
	s, _, err := k.tryOpenConfig(func(c *source.Config) { c.ControlRecords = true }, nil)
	require.NoError(t, err)
	recs := pollN(t, s, 3)
	var offs []int64
	var control []bool
	for _, r := range recs {
		offs = append(offs, r.Offset)
		control = append(control, r.Attrs.IsControl())
	}
	require.Equal(t, []int64{0, 1, 3}, offs)
	require.Equal(t, []bool{false, true, true}, control)
	require.Equal(t, "c0", string(recs[0].Value))
	lag, err := s.Lag(ctxT(t), map[int32]int64{0: recs[2].Offset + 1})
	require.NoError(t, err)
	require.Equal(t, source.PartitionLag{LastStable: 4, Next: 4}, lag[0])
}

// TestDeletedTopic: a topic deleted under a running source makes Poll
// fail with ErrUnknownTopic once the broker has not known it for
// MissingTopicTimeout (instead of retrying forever, logging each retry);
// the retry warning is logged at most once per partition and error. A
// topic recreated under the same name has a new TopicID.
func TestDeletedTopic(t *testing.T) {
	k := newFake(t, 1)
	k.values(0, "a", 3)
	s, logs, err := k.tryOpenConfig(func(c *source.Config) { c.MissingTopicTimeout = time.Second }, nil)
	require.NoError(t, err)
	before := s.TopicID()
	require.NotEmpty(t, before)
	pollN(t, s, 3)

	_, err = k.adm.DeleteTopics(ctxT(t), testTopic)
	require.NoError(t, err)
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	var perr error
	for perr == nil {
		_, perr = s.Poll(ctx)
	}
	require.ErrorIs(t, perr, source.ErrUnknownTopic)
	assert.GreaterOrEqual(t, time.Since(began), time.Second)
	assert.Contains(t, perr.Error(), "deleted or recreated")
	assert.LessOrEqual(t, strings.Count(logs.String(), "kafka fetch error; retrying"), 2, logs.String())
	s.Close()

	_, err = k.adm.CreateTopic(ctxT(t), 1, 1, nil, testTopic)
	require.NoError(t, err)
	s2, _, err := k.tryOpen(nil)
	require.NoError(t, err)
	defer s2.Close()
	assert.NotEqual(t, before, s2.TopicID(), "a recreated topic has a new id")
	assert.NotEmpty(t, s2.TopicID())
}
