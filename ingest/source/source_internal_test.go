package source

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTakeRecordsAndFatalError: one PollFetches result can carry records
// of one partition and a fatal error of another (two brokers' fetches
// drained together). The records have moved the client's cursors, so
// they must be returned, and the error with them; Poll keeps the error
// for its next call.
func TestTakeRecordsAndFatalError(t *testing.T) {
	s := &Source{
		cfg:   Config{Topic: "orders"},
		log:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		parts: map[int32]*partState{0: {partition: 0, next: 5, base: 5}, 1: {partition: 1}},
	}
	r := func(off int64) *kgo.Record { return &kgo.Record{Topic: "orders", Partition: 0, Offset: off} }
	fetches := kgo.Fetches{
		{Topics: []kgo.FetchTopic{{Topic: "orders", Partitions: []kgo.FetchPartition{
			// 4 was returned before; 5 and 7 are new (6 a marker).
			{Partition: 0, LogStartOffset: 0, Records: []*kgo.Record{r(4), r(5), r(7)}},
		}}}},
		{Topics: []kgo.FetchTopic{{Topic: "orders", Partitions: []kgo.FetchPartition{
			{Partition: 1, Err: kerr.TopicAuthorizationFailed},
		}}}},
	}
	recs, err := s.take(fetches, 0)
	require.Equal(t, []*kgo.Record{r(5), r(7)}, recs)
	require.ErrorIs(t, err, ErrFetch)
	require.ErrorIs(t, err, kerr.TopicAuthorizationFailed)
	require.Equal(t, int64(8), s.parts[0].next)
}

func TestSpansMerge(t *testing.T) {
	ps := &partState{}
	base := time.UnixMilli(1_700_000_000_000)
	for i := range maxSpans + 10 {
		ps.addSpanLocked(int64(i), int64(i), base.Add(time.Duration(i)*time.Second))
	}
	require.Len(t, ps.spans, maxSpans)
	// The oldest spans were merged, keeping the oldest timestamp: an
	// offset inside them reads as older, never younger.
	require.Equal(t, span{first: 0, last: 10, ts: base}, ps.spans[0])
	require.Equal(t, span{first: 11, last: 11, ts: base.Add(11 * time.Second)}, ps.spans[1])

	// A record without a timestamp has an unknown age.
	ps = &partState{}
	ps.addSpanLocked(0, 0, time.UnixMilli(-1))
	require.True(t, ps.spans[0].ts.IsZero())
}
