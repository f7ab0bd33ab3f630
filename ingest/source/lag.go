package source

import (
	"context"
	"fmt"
	"time"
)

// maxSpans bounds the spans kept per partition when Lag is not called:
// past it the two oldest are merged, which only makes ages of offsets in
// them older (never younger) than exact.
const maxSpans = 1024

// span is one Poll's run of returned records of a partition: offsets
// first..last and the timestamp of the record at first.
type span struct {
	first, last int64
	ts          time.Time
}

// addSpanLocked remembers a Poll's run of records; s.mu is held.
func (ps *partState) addSpanLocked(first, last int64, ts time.Time) {
	if ts.UnixMilli() <= 0 {
		// No usable timestamp (-1 in old message formats): the run
		// still counts as returned, with an unknown age.
		ts = time.Time{}
	}
	ps.spans = append(ps.spans, span{first: first, last: last, ts: ts})
	if len(ps.spans) > maxSpans {
		a, b := ps.spans[0], ps.spans[1]
		merged := span{first: a.first, last: b.last, ts: a.ts}
		if a.ts.IsZero() || (!b.ts.IsZero() && b.ts.Before(a.ts)) {
			merged.ts = b.ts
		}
		ps.spans = append([]span{merged}, ps.spans[2:]...)
	}
}

// PartitionLag is how far a partition's consumer is behind.
type PartitionLag struct {
	// LastStable is the partition's last stable offset: the offset up to
	// which every transaction is decided and read_committed consumers may
	// read (the high watermark when no transaction is open).
	LastStable int64
	// Next is the next offset the caller has consumed to (as passed to
	// Lag; or where the source started the partition, or last re-seeked
	// it, if not passed).
	Next int64
	// Records is LastStable - Next, at least 0. It counts offsets: with
	// transactions, control records (one commit or abort marker per
	// transaction per partition) and aborted records are counted though
	// they are never returned, so a partition whose last write was a
	// transaction shows 1 even when everything was read.
	Records int64
	// Oldest is the timestamp of the oldest unconsumed record (the first
	// one at or after Next) when the source has returned it; zero when it
	// is not known (nothing unconsumed, or not fetched yet). It is exact
	// when the caller consumes whole Poll results; when Next falls inside
	// the records of one Poll it is that Poll's first record's timestamp
	// (older, never younger, than exact).
	Oldest time.Time
	// Age is the time since Oldest when Lag was called; zero when Oldest
	// is unknown.
	Age time.Duration
}

// Lag reports, for every partition of the topic, the last stable offset
// minus next[p], the next offset the caller has consumed to (for a sink,
// the offsets it committed). A partition missing from next counts from
// where the source started it (or last re-seeked it); one the source has
// not assigned yet counts from its pending start or its log start.
//
// Lag lists offsets from the brokers (ListOffsets with read_committed
// isolation) and may be called concurrently with Poll. It forgets what it
// knows about records below next, so next should only grow between calls
// (as committed offsets do). Errors are Kafka errors of the listing.
func (s *Source) Lag(ctx context.Context, next map[int32]int64) (map[int32]PartitionLag, error) {
	lso, err := s.adm.ListCommittedOffsets(ctx, s.cfg.Topic)
	if err != nil {
		return nil, fmt.Errorf("list last stable offsets of %s: %w", s.cfg.Topic, err)
	}
	if err := listedErr(s.cfg.Topic, lso); err != nil {
		return nil, err
	}
	from := make(map[int32]int64, len(lso[s.cfg.Topic]))
	var unassigned bool
	s.mu.Lock()
	for p := range lso[s.cfg.Topic] {
		if s.group != nil && s.parts[p] == nil {
			// Another replica's partition: its lag is reported there.
			continue
		}
		if n, ok := next[p]; ok {
			from[p] = n
		} else if ps := s.parts[p]; ps != nil {
			from[p] = ps.base
		} else if n, ok := s.pending[p]; ok {
			from[p] = n
		} else {
			unassigned = true
		}
	}
	s.mu.Unlock()
	if unassigned {
		starts, err := s.adm.ListStartOffsets(ctx, s.cfg.Topic)
		if err != nil {
			return nil, fmt.Errorf("list start offsets of %s: %w", s.cfg.Topic, err)
		}
		if err := listedErr(s.cfg.Topic, starts); err != nil {
			return nil, err
		}
		for p, lo := range starts[s.cfg.Topic] {
			if _, ok := from[p]; !ok {
				from[p] = lo.Offset
			}
		}
	}

	now := time.Now()
	out := make(map[int32]PartitionLag, len(from))
	s.mu.Lock()
	defer s.mu.Unlock()
	for p, n := range from {
		listed, ok := lso[s.cfg.Topic][p]
		if !ok {
			continue
		}
		l := PartitionLag{LastStable: listed.Offset, Next: n, Records: max(0, listed.Offset-n)}
		if ps := s.parts[p]; ps != nil {
			i := 0
			for i < len(ps.spans) && ps.spans[i].last < n {
				i++
			}
			ps.spans = ps.spans[i:]
			if l.Records > 0 && len(ps.spans) > 0 && !ps.spans[0].ts.IsZero() {
				l.Oldest = ps.spans[0].ts
				l.Age = max(0, now.Sub(l.Oldest))
			}
		}
		out[p] = l
	}
	return out, nil
}
